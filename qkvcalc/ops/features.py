"""The features of attention as plug-ins: one module each, listed here in pipeline order.

A feature module (qkvcalc.ops.base.Feature) holds everything about one mechanism: its
input key and how it is checked, the stage it adds to each head, its operations, its cell
arithmetic, its header line, its worksheet policy, its PyTorch lines and its JSON echo. The
layers ask this registry; none of them names a feature. Adding one is a module and a line here,
its key in the fields table (qkvcalc.input.fields, with FEATURE_OPTIONS for a command-line
option), its sentences in both catalogs, its docs and its tests.

A feature's module is imported the first time it is asked for: when a problem's document gives
one of its keys (`read`, `stand_in`), when a problem uses it (`active`), or when something needs
every feature (`every`: the op table's whole list, the quiz's mistakes, LaTeX's words). A run
that uses none loads none of them (tests/test_startup.py checks it).
"""

from __future__ import annotations

import sys
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

from qkvcalc.ops.hooks import JoinWords, Logits, Mistakes, Reading, Sizes, Turn

if TYPE_CHECKING:
    from collections.abc import Mapping

    from qkvcalc.input.problem import Problem
    from qkvcalc.ops.base import Feature
    from qkvcalc.ops.op import Op
    from qkvcalc.plan.specs import Ref, Spec

__all__ = [
    "TABLE",
    "JoinWords",
    "Logits",
    "Mistakes",
    "Sizes",
    "Turn",
    "active",
    "every",
    "load",
    "ops",
]

# The registry, in pipeline order: each feature's name (its key in the input format, as the
# fields table lists it), its module in qkvcalc/ops/ (which declares FEATURE), and its keys when
# it has more than one (Feature.keys; `name` is then one of them).
TABLE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("mla", "mla", ()),  # in place of W_Q, W_K, W_V: the latents, before every other stage
    ("indexer", "indexer", ()),  # beside mla: each query's top-k keys, before the heads
    ("qk_norm", "qk_norm", ("q_norm", "k_norm", "norm_eps", "qk_norm")),
    ("v_norm", "v_norm", ()),  # on each head's values, beside the q/k norm
    ("rope", "rope", ()),
    # beside rope: each head's values turned as its keys, its output turned back (DeepSeek-V4)
    ("vo_rope", "vo_rope", ()),
    # after the turns: entries pooled from X appended to every head's keys and values, their
    # columns in the mask (DeepSeek-V4's compressed attention)
    ("compress", "compress", ()),
    # after the norm and the rotation, whatever their order (a late turn)
    ("attn_temperature", "temperature", ()),
    ("score_bias", "score_bias", ("alibi", "score_bias")),
    ("softcap", "softcap", ()),
    ("window", "window", ()),
    ("chunk_size", "chunk", ()),  # Llama 4's chunked layers: a mask of positions, as the window
    ("sinks", "sinks", ()),
    ("wg", "gate", ("wg", "bg", "gate_act")),  # after each head's output, before the concat
    ("differential", "differential", ()),  # after every head: pairs of heads, before the concat
    # after every head: an RMSNorm over the heads joined, before W_O (BitNet's attn_sub_norm)
    ("sub_norm", "sub_norm", ("sub_norm", "sub_norm_eps")),
    ("gated_delta", "gated_delta", ()),  # a linear-attention layer in place of the softmax (alone)
    ("kimi_delta", "kimi_delta", ()),  # the same with one decay per Key channel (alone)
    ("lightning", "lightning", ()),  # MiniMax's lightning attention, a linear layer (alone)
)

_MODULES = {name: module for name, module, _ in TABLE}
_loaded: dict[str, Feature] = {}  # by name, as their modules are imported


def load(name: str) -> Feature:
    """The feature of this name, its module imported on first use."""
    found = _loaded.get(name)
    if found is None:
        found = _loaded[name] = import_module(f"qkvcalc.ops.{_MODULES[name]}").FEATURE
    return found


def every() -> list[Feature]:
    """Every feature, in pipeline order (each module imported)."""
    return [load(name) for name, _, _ in TABLE]


def among(used: Mapping[str, Any]) -> list[Feature]:
    """The features named in `used` (a problem's values by name), in pipeline order."""
    return [load(name) for name, _, _ in TABLE if name in used]


def read(doc: dict[str, Any], sizes: Sizes) -> dict[str, Any]:
    """The values of the features a problem's document uses, by name, each read and checked
    by its module (a feature whose keys are absent, or say "not used", is left out)."""
    out = {}
    for name, _, keys in TABLE:
        if keys:
            given: Any = {key: doc[key] for key in keys if doc.get(key) is not None} or None
        else:
            given = doc.get(name)
        if given is None:
            continue
        f = load(name)
        if f.projects is not None:  # read with the weights (Problem), not here
            continue
        value = f.read(given, sizes)
        if value is not None:
            out[name] = value
    return out


def stand_in(doc: dict[str, Any]) -> Feature | None:
    """The feature that stands in for W_Q, W_K and W_V in this document (its key given)."""
    for name, _, _ in TABLE:
        if doc.get(name) is not None and load(name).projects is not None:
            return load(name)
    return None


def projecting(p: Problem) -> tuple[Feature, Any] | None:
    """The feature this problem's projections are (multi-head latent attention), with its value."""
    for f, value in active(p):
        if f.projects is not None:
            return f, value
    return None


def mixing(p: Problem) -> tuple[Feature, Any] | None:
    """The feature that is this problem's layer in place of softmax attention, with its value."""
    for f, value in active(p):
        if f.mixer is not None:
            return f, value
    return None


# softmax attention's formula in a page's header (plain text, TeX)
SOFTMAX = (
    "softmax(Q·Kᵀ/√d_k + M)·V",
    "\\mathrm{softmax}\\left(\\frac{Q K^\\top}{\\sqrt{d_k}} + M\\right) V",
)


def formula(p: Problem) -> tuple[str, str]:
    """The layer's formula in a page's header: softmax attention's, or a mixer's own."""
    mixer = mixing(p)
    return mixer[0].formula if mixer is not None and mixer[0].formula is not None else SOFTMAX


def active(p: Problem) -> list[tuple[Feature, Any]]:
    """The features this problem uses, in pipeline order, each with its value."""
    used = p.variants.features
    return [(f, used[f.name]) for f in among(used)]


def turning(p: Problem) -> list[tuple[Feature, Any]]:
    """The features that turn a head's q and k, in the order they do: the registry's, except
    that one whose value says so (a norm after the rotation) turns after the others."""
    turns = [(f, value) for f, value in active(p) if f.turn is not None or f.torch_qk is not None]
    return sorted(turns, key=lambda fv: bool(fv[0].late_turn and fv[0].late_turn(fv[1])))


def around_softmax(p: Problem, exp: Spec, weights: Spec, reading: Reading) -> tuple[Spec, Spec]:
    """A head's exp and weights stages as the features this problem uses make them."""
    for feature, value in active(p):
        if feature.softmax is not None:
            exp, weights = feature.softmax(p, value, exp, weights, reading)
    return exp, weights


def tiles_start(p: Problem, h: int | None) -> tuple[float, float]:
    """Where head h's online softmax starts: (m₀, ℓ₀) = (−∞, 0) unless a feature says."""
    start = (float("-inf"), 0.0)
    for feature, value in active(p):
        if feature.tiles_start is not None:
            start = feature.tiles_start(value, h)
    return start


def key_labels(p: Problem) -> tuple[str, ...]:
    """The labels of a head's keys: the tokens', then any a feature appends (its entries)."""
    labels = tuple(p.source_tokens)
    for feature, value in active(p):
        if feature.key_labels is not None:
            labels += feature.key_labels(p, value)
    return labels


def more_keys(p: Problem, h: int | None, k: Turn, v: Turn) -> tuple[list[Spec], Turn, Turn]:
    """The stages of head h that append a feature's own rows to its keys and values, and the
    keys and values they end at (those given when no feature appends any)."""
    out: list[Spec] = []
    for feature, value in active(p):
        if feature.more_keys is not None:
            added = feature.more_keys(p, value, h, k, v)
            out += added
            k = k._replace(ref=added[-2].ref, symbol=added[-2].symbol)
            v = v._replace(ref=added[-1].ref, symbol=added[-1].symbol)
    return out, k, v


def after_output(p: Problem, h: int | None, output: Spec) -> list[Spec]:
    """The features' stages after head h's output, each reading the one before."""
    out: list[Spec] = []
    for feature, value in active(p):
        if feature.after_output is not None:
            out += feature.after_output(p, value, h, out[-1] if out else output)
    return out


def joined(p: Problem, reads: list[Ref]) -> tuple[list[Spec], list[Ref]]:
    """The features' stages after every head, and what the concat reads then (`reads`: each
    head's last stage, unless a feature joins the heads otherwise)."""
    out: list[Spec] = []
    for feature, value in active(p):
        if feature.joined is not None:
            more, reads = feature.joined(p, value, reads)
            out += more
    return out, reads


def joins(p: Problem) -> bool:
    """Whether a feature joins the heads' stages after every head (the backward walks them)."""
    return any(f.joined is not None for f, _ in active(p))


# the concat of the heads themselves
HEADS = JoinWords(
    "concat(head_1, …, head_H)",
    "",
    "note.concat_columns",
    "ui.concat_span",
    "hint.concat",
    "grad_output.head",
    "output.final",
    "output.concat",
)


def join_words(p: Problem) -> JoinWords:
    """How the concat names its parts: the heads, or what a feature joined after them."""
    for f, _ in active(p):
        if f.joined is not None and f.joined_words is not None:
            return f.joined_words
    return HEADS


def after_heads(p: Problem) -> bool:
    """Whether a feature adds stages after each head's output: the heads are then joined by a
    concat even when there is one."""
    return any(
        f.after_output is not None or (f.joins is not None and f.joins(value))
        for f, value in active(p)
    )


def ops() -> dict[str, Op]:
    """Every feature's operations, by name (the op table merges them)."""
    return {op.name: op for f in every() for op in f.ops}


def loaded_ops() -> dict[str, Op]:
    """The operations of the features loaded so far, by name: those a problem uses, and those
    whose modules another one imported to reuse their ops (the backward of a norm borrowed
    from another feature finds that feature's ops without every module loaded)."""
    for name, module, _ in TABLE:
        if name not in _loaded and f"qkvcalc.ops.{module}" in sys.modules:
            load(name)  # imported already: its Feature costs nothing more
    return {op.name: op for f in list(_loaded.values()) for op in f.ops}


@cache
def worksheet_notes() -> frozenset[str]:
    """The notes of the features that tell no result: a worksheet keeps them."""
    return frozenset(key for f in every() for key in f.worksheet_notes)


def words() -> tuple[str, ...]:
    """The words the features' formulas set upright (LaTeX writes them as text: RoPE)."""
    return tuple(word for f in every() for word in f.words)


def order_reasons(p: Problem) -> list[str]:
    """The catalog keys of the features of `p` that read the tokens' positions."""
    return [f.order_reason for f, _ in active(p) if f.order_reason]


def elements(p: Problem) -> int:
    """The numbers the features' kept stages add to one head (the size budget counts them)."""
    return sum(f.elements(value, p.n, p.m, p.d_k) for f, value in active(p) if f.elements)


def mistakes() -> list[Mistakes]:
    """Every feature's classic mistakes (the quiz names them), in the registry's order."""
    return [m for f in every() for m in f.mistakes]
