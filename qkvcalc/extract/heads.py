"""`qkvcalc heads`: every layer's every head at a glance, from one run of a model.

    >>> from qkvcalc.extract.heads import attention_maps, head_problem
    >>> run = attention_maps("path/to/checkpoint", text="The cat sat on the mat.")
    >>> run.weights[0].shape            # layer 0: heads × n × n, float64
    >>> problem = head_problem("path/to/checkpoint", layer=0, head=3, text="…")

The model is loaded as `qkvcalc extract` loads it (the same checks, messages and refusals:
trust_remote_code=False, a checkpoint that names code of its own in auto_map refused, weights
never unpickled), run once with transformers' own output_attentions (eager attention; in a
float64 model with the float32 steps lifted, as extract does), and every layer's attention
probabilities are kept as they come (not where they leave out a learned sink: SINKS_AFTER).
With `problems=True` the same run also records each layer's attention input x, and each layer
becomes its problem (as extract writes it), from which `split_head` takes one head: the head's
query, key and value columns, its K/V head under grouped-query attention, its own slice of every
per-head key, and no output projection.

`to_json(run)` is the `qkvcalc.heads/1` document. Layers are counted from 0 (as transformers
and `extract --layer` count), heads from 1 (as qkvcalc's stages and `explain --head` count).
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract import deepseek_v4, hybrid, refused, runner
from qkvcalc.extract.check import layout
from qkvcalc.extract.common import Family, Layer
from qkvcalc.i18n import Msg

SCHEMA = "qkvcalc.heads/1"


@dataclass(frozen=True)
class HeadsRun:
    """One run of a model: every layer's attention probabilities, heads × n × n, float64."""

    model: str  # the model as shown to users (a folder's name, a hub name)
    source: str  # the model as it was given (the folder's path): for a command to run again
    arch: str
    dtype: str  # the dtype the model ran in
    ids: list[int]
    tokens: list[str]
    weights: list[np.ndarray]  # one per attention layer, heads × n × n
    problems: list[dict[str, Any]] = field(default_factory=list)  # per layer, when asked
    # a hybrid's attention layers (from 0), one per entry of weights; empty: every layer is
    numbers: list[int] = field(default_factory=list)
    others: list[Msg] = field(default_factory=list)  # a hybrid's other layers (hybrid.others)
    notes: list[Msg] = field(default_factory=list)  # what else the page says of the maps
    # a hybrid's linear-attention layers whose entries are the matrices their heads compute
    # without forming them (signed; rows need not sum to 1), each with its kind in words
    implicit: dict[int, Msg] = field(default_factory=dict)

    @property
    def heads(self) -> int:
        """The heads of a softmax-attention layer (of the first, when a linear one differs)."""
        found = [
            w for i, w in zip(self.layers, self.weights, strict=True) if i not in self.implicit
        ]
        return int((found or self.weights or [np.zeros((0,))])[0].shape[0])

    @property
    def linear_heads(self) -> int:
        """The heads of a linear-attention layer whose implicit matrices are drawn (0: none)."""
        found = [w for i, w in zip(self.layers, self.weights, strict=True) if i in self.implicit]
        return int(found[0].shape[0]) if found else 0

    @property
    def layers(self) -> list[int]:
        """The layer (from 0) of each entry of weights (and problems)."""
        return self.numbers or list(range(len(self.weights)))


@dataclass(frozen=True)
class _Opened:
    source: str
    model: Any
    tokenizer: Any
    shown: str
    family: Family
    ids: list[int]


def _open(
    model_or_path: Any,
    input_ids: Sequence[int] | None,
    text: str | None,
    dtype: str,
    tokenizer: Any,
    progress: runner.Progress | None,
) -> _Opened:
    """The model loaded (or taken) and the tokens checked, as extract does it: every check the
    config allows before a large checkpoint spends minutes loading."""
    runner.require_models("heads")
    import torch

    if dtype not in runner.DTYPES:
        raise QkvcalcError("extract.dtype", dtype=dtype)
    if isinstance(model_or_path, (str, os.PathLike)):
        name = str(model_or_path)
        here = Path(name).expanduser().exists()
        shown = (Path(name).name or name) if here else name
        with contextlib.nullcontext() if here else runner._offline_unless_reachable():
            config = runner._config(name)
            deepseek_v4.check(config, None, shown)
            refused.check_config(config, shown)  # BitNet's quantized checkpoints (BitLinear)
            runner._family(config.model_type, name)
            if (input_ids is None) == (text is None):
                raise QkvcalcError("extract.input_choice")
            runner._check_config(config, shown, dtype)
            if input_ids is not None:
                ids = runner._as_ids(input_ids)
                runner._check_ids(ids, getattr(config, "vocab_size", None), shown)
                runner._check_length(len(ids), config, config.model_type, shown)
                sizes = _config_sizes(config)
                if sizes is not None:
                    _check_size(shown, len(ids), *sizes)  # before a long load
            model, own_tokenizer = runner.load(name, config, dtype, progress)
        tokenizer = tokenizer if tokenizer is not None else own_tokenizer
    elif isinstance(model_or_path, torch.nn.Module) and hasattr(model_or_path, "config"):
        model = model_or_path
        shown = str(getattr(model.config, "_name_or_path", "") or type(model).__name__)
        own = next(model.parameters()).dtype
        if dtype != "auto" and runner._torch_dtype(dtype) != own:
            raise QkvcalcError("extract.dtype_loaded", dtype=dtype, own=str(own).split(".")[-1])
    else:
        raise QkvcalcError("extract.not_a_model", kind=type(model_or_path).__name__)
    deepseek_v4.check(model.config, None, shown)
    refused.check_config(model.config, shown)
    family = runner._family(model.config.model_type, shown)
    ids = runner._token_ids(model, shown, input_ids, text, tokenizer)
    runner._check_length(len(ids), model.config, model.config.model_type, shown)
    source = str(model_or_path) if isinstance(model_or_path, (str, os.PathLike)) else shown
    return _Opened(source, model, tokenizer, shown, family, ids)


@contextlib.contextmanager
def _output_attentions(model: Any) -> Any:
    """transformers returns the attention probabilities when its config says so: every config
    the model's modules hold (T5's encoder keeps a copy of its own) says so for this run. Only
    the eager attention returns them: a model given loaded with another (sdpa) runs eager for
    this run, and gets its own back afterwards."""
    own = getattr(model.config, "_attn_implementation", "eager")
    configs: dict[int, Any] = {}
    saved: dict[int, bool] = {}
    try:  # the model gets its own attention and configs back whatever fails, from here on
        if own != "eager":
            model.set_attn_implementation("eager")
        for m in model.modules():
            if (c := getattr(m, "config", None)) is not None and id(c) not in configs:
                configs[id(c)], saved[id(c)] = c, getattr(c, "output_attentions", False)
        for c in configs.values():
            c.output_attentions = True
        yield
    finally:
        for key, c in configs.items():
            c.output_attentions = saved[key]
        if own != "eager":
            model.set_attn_implementation(own)


Seen = tuple[np.ndarray, dict[str, Any], "np.ndarray | None"]


def _run(
    opened: _Opened, keep: list[int], numbers: list[int]
) -> tuple[list[np.ndarray], dict[int, Seen]]:
    """One forward: every attention layer's (`numbers`) attention probabilities, and for each
    layer of `keep` (attention or linear attention) its x with the tensors its attention was
    called with (its mask: extract reads the window from it) and its output projection's own
    output (None if it never ran: check.py)."""
    import torch

    from qkvcalc.extract.islands import float64_islands

    model, family = opened.model, opened.family
    stack = family.stack(model)
    xs: dict[int, np.ndarray] = {}
    givens: dict[int, dict[str, Any]] = {}
    outs: dict[int, np.ndarray] = {}
    handles: list[Any] = []
    was_training = model.training
    try:  # the hooks come off and the mode comes back whatever fails, from here on
        for index in keep:
            block = stack[index]

            def pre_hook(module: Any, args: Any, kwargs: Any, index: int = index) -> None:
                hidden = args[0] if args else kwargs["hidden_states"]
                xs.setdefault(
                    index, hidden.detach()[0].to(dtype=torch.float64, device="cpu").numpy()
                )
                tensors = {k: v.detach() for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
                givens.setdefault(index, tensors)

            def out_hook(module: Any, args: Any, output: Any, index: int = index) -> None:
                if index in xs:
                    outs.setdefault(index, runner.first_row(output))

            attention = family.attention(block)
            handles.append(attention.register_forward_pre_hook(pre_hook, with_kwargs=True))
            handles.append(family.output(block).register_forward_hook(out_hook))
        model.eval()
        device = next(model.parameters()).device
        float64 = next(model.parameters()).dtype == torch.float64
        with torch.no_grad(), _output_attentions(model):
            islands = float64_islands(model) if float64 else contextlib.nullcontext()
            with islands:
                out = family.run(model, torch.tensor([opened.ids], device=device))
    except (MemoryError, QkvcalcError, AttributeError):
        raise  # AttributeError: a renamed attribute, named by check.layout
    except Exception as err:  # transformers' own forward failed: one message, as extract's
        if runner._out_of_memory(err):
            raise
        # the hooks run in the layers' order: the first kept layer not reached is where it
        # stopped; past every kept one, the last attention map was never returned
        unread = [i for i in keep if i not in xs]
        raise QkvcalcError(
            "extract.model_failed",
            model_type=model.config.model_type,
            layer=unread[0] if unread else max([*numbers, *keep], default=0),
            error=f"{type(err).__name__}: {runner._first_line(err)}",
        ) from None
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    found = getattr(out, "attentions", None)
    if found is not None and len(found) == len(stack) != len(numbers):
        # a hybrid that returns something for each layer (MiniMax: a lightning layer's state)
        found = [found[i] for i in numbers]
    if found is None or len(found) != len(numbers):  # not something a user can fix
        raise RuntimeError("the model did not return one attention map per attention layer")
    weights = [layer[0].detach().to(dtype=torch.float64, device="cpu").numpy() for layer in found]
    for index in givens:  # KV sharing: the earlier layer's x makes this one's K and V
        if (earlier := family.shares(model, index)) is not None:
            givens[index]["kv_source"] = xs[earlier]
    return weights, {i: (xs[i], givens[i], outs.get(i)) for i in keep}


def _layer_problem(opened: _Opened, layer: int, seen: Seen, lang: str) -> dict[str, Any]:
    """Layer `layer` as extract writes it, from the x (and the mask) this run recorded,
    checked against the layer's own output as extract checks it."""
    import torch

    model, family = opened.model, opened.family
    refused.check_layer(model.config, layer, opened.shown)  # MiniMax-M3's block-sparse layers
    block = family.stack(model)[layer]
    attention = family.attention(block)
    x, given, out = seen
    allowed = runner._allowed(given.get("attention_mask"))
    n = len(opened.ids)
    with torch.no_grad():
        keys = family.keys(Layer(model, model.config, block, attention, layer, n, allowed, given))
    runner._check_finite({"x": x, **keys}, opened.shown, layer)
    dtype = str(next(model.parameters()).dtype).split(".")[-1]
    problem = {
        "name": Msg("extract.name", model=opened.shown, layer=layer).text(lang),
        "description": runner.describe(family, model, layer, opened.shown, n, dtype, lang),
        "tokens": runner._tokens(opened.ids, opened.tokenizer),
        "x": x,
        **keys,
    }
    model_type = model.config.model_type
    runner.check_problem(problem, out, opened.shown, model_type, layer, dtype)
    return problem


# Every head's explanation is embedded in the page up to this many heads in all (a 6-layer,
# 12-head encoder has 72; each is some 40 kB of HTML and a tenth of a second to explain).
MAX_EXPLAINED = 144

# The models whose eager attention applies each head's learned sink after the softmax (its
# output times σ(logsumexp(scores) − s)): their output_attentions are the probabilities before
# the sink, rows summing to 1, where qkvcalc's weights (`sinks`) hold the sink's share. Their
# maps are taken from the layers' problems, or said to be before the sink when there are none.
SINKS_AFTER = frozenset({"granite_swa", "granitemoe_swa"})

# Every weight of every head is shown and kept in memory (float64): at most this many in all,
# 150 MB (a 12-layer, 12-head model on 400 tokens; 6 × 12 heads on 560).
MAX_WEIGHTS = 20_000_000


def _check_size(
    model: str, n: int, layer_heads: list[int], linear: int = 0, linear_heads: int = 0
) -> None:
    """At most MAX_WEIGHTS weights: the attention layers' heads (`layer_heads`, one count a
    layer), and (a hybrid's) `linear` linear-attention layers of `linear_heads` heads whose
    implicit matrices are drawn."""
    heads = sum(max(h, 1) for h in layer_heads)
    count = (heads + linear * linear_heads) * n * n
    if count <= MAX_WEIGHTS:
        return
    layers = len(layer_heads)
    if len(set(layer_heads)) > 1:  # each layer its own count (Laguna)
        raise QkvcalcError(
            "heads.too_many_weights_per_layer",
            n=n,
            model=model,
            heads=heads + linear * linear_heads,
            count=count,
            limit=MAX_WEIGHTS,
        )
    key = "heads.too_many_weights_implicit" if linear else "heads.too_many_weights"
    raise QkvcalcError(
        key,
        n=n,
        model=model,
        layers=layers,
        heads=max(layer_heads, default=1),
        linear=linear,
        linear_heads=linear_heads,
        count=count,
        limit=MAX_WEIGHTS,
    )


def _layer_heads(config: Any, numbers: list[int]) -> list[int]:
    """The query heads of each attention layer in `numbers`: the config's one count, or each
    layer's own where it lists them (Laguna's num_attention_heads_per_layer)."""
    text = hybrid.text_config(config)
    own = getattr(text, "num_attention_heads_per_layer", None)
    if isinstance(own, list | tuple) and all(i < len(own) for i in numbers):
        return [int(own[i]) for i in numbers]
    return [int(getattr(text, "num_attention_heads", 0) or 0)] * len(numbers)


def attention_maps(
    model_or_path: Any,
    *,
    input_ids: Sequence[int] | None = None,
    text: str | None = None,
    dtype: str = "auto",
    tokenizer: Any = None,
    problems: bool = False,
    lang: str = "en",
    progress: runner.Progress | None = None,
) -> HeadsRun:
    """Every layer's every head's attention probabilities from one run of the model.

    Takes the model and the tokens as `qkvcalc.extract` does. With `problems=True`, the run
    also records each layer's attention input, and `HeadsRun.problems` holds every layer as
    extract's problem (for split_head), every layer's weights in float64: for a model of at
    most MAX_EXPLAINED heads in all (else the list stays empty). At most MAX_WEIGHTS weights
    in all (layers × heads × n²): more is a QkvcalcError, said before the run.

    A model of SINKS_AFTER has its maps from its layers' problems (qkvcalc's weights, the sink's
    share in them, as in each head's explanation) when it has at most MAX_EXPLAINED heads in
    all; else they are transformers' and the run's notes say they are before the sink."""
    opened = _open(model_or_path, input_ids, text, dtype, tokenizer, progress)
    config = opened.model.config
    with layout(opened.shown, config.model_type):
        count = len(opened.family.stack(opened.model))
    attention = hybrid.attention_layers(config)
    numbers = list(range(count)) if attention is None else attention
    linear = [i for i in hybrid.implicit_layers(config) if i < count]
    layer_heads = _layer_heads(config, numbers)
    per_linear = _linear_heads(config) if linear else 0
    _check_size(opened.shown, len(opened.ids), layer_heads, len(linear), per_linear)
    if progress:
        progress(Msg("heads.running", model=opened.shown))
    after = config.model_type in SINKS_AFTER
    total = sum(layer_heads) + len(linear) * per_linear
    keep = total <= MAX_EXPLAINED and (problems or after)
    with layout(opened.shown, config.model_type):
        weights, seen = _run(opened, sorted([*(numbers if keep else []), *linear]), numbers)
        made = {i: _layer_problem(opened, i, x, lang) for i, x in seen.items()}
    found = [made[i] for i in numbers if i in made]
    notes: list[Msg] = []
    if after and found:
        weights = [_weights(problem) for problem in found]
    elif after:
        notes.append(Msg("heads.before_sinks", arch=opened.family.names[config.model_type]))
    # the linear-attention layers' implicit matrices: each head's `weights` stage of its problem
    drawn = {**dict(zip(numbers, weights, strict=True)), **{i: _weights(made[i]) for i in linear}}
    shown = sorted(drawn)
    return HeadsRun(
        model=opened.shown,
        source=opened.source,
        arch=opened.family.names[config.model_type],
        dtype=str(next(opened.model.parameters()).dtype).split(".")[-1],
        ids=opened.ids,
        tokens=runner._tokens(opened.ids, opened.tokenizer),
        weights=[drawn[i] for i in shown],
        problems=[made[i] for i in shown] if problems and keep else [],
        numbers=[] if attention is None else shown,
        others=[] if attention is None else hybrid.others(config, count, linear),
        notes=notes,
        implicit={i: hybrid.kind(config, i) for i in linear},
    )


def _config_sizes(config: Any) -> tuple[list[int], int, int] | None:
    """What a config says heads would draw: its attention layers and their heads, and (a
    hybrid's) its linear-attention layers drawn by their implicit matrices and their heads;
    None where the config does not say its layers and heads."""
    text = hybrid.text_config(config)
    layers = getattr(text, "num_hidden_layers", None)
    heads = getattr(text, "num_attention_heads", None)
    if not isinstance(layers, int) or not isinstance(heads, int):
        return None
    attention = hybrid.attention_layers(config)
    shown = list(range(layers)) if attention is None else [i for i in attention if i < layers]
    linear = len([i for i in hybrid.implicit_layers(config) if i < layers])
    return _layer_heads(config, shown), linear, _linear_heads(config) if linear else 0


def _linear_heads(config: Any) -> int:
    """The heads of a hybrid's linear-attention layer, from its config: Gated DeltaNet's value
    heads, Kimi Delta Attention's heads, MiniMax's (its attention's)."""
    text = hybrid.text_config(config)
    for name in ("linear_num_value_heads", "linear_num_heads", "num_attention_heads"):
        found = getattr(text, name, None)
        if isinstance(found, int) and found > 0:
            return found
    return 0


def _weights(problem: dict[str, Any]) -> np.ndarray:
    """A layer's attention weights as qkvcalc computes them from its problem, heads × n × n (a
    linear-attention layer's: each head's `weights` stage, the matrix it computes without
    forming it)."""
    from qkvcalc import explain
    from qkvcalc.extract.check import NO_LIMIT

    weights = np.asarray(explain(**problem, max_elements=NO_LIMIT).weights, dtype=np.float64)
    return weights if weights.ndim == 3 else weights[None]


def head_problem(
    model_or_path: Any,
    layer: int,
    head: int,
    *,
    input_ids: Sequence[int] | None = None,
    text: str | None = None,
    dtype: str = "auto",
    tokenizer: Any = None,
    lang: str = "en",
    progress: runner.Progress | None = None,
) -> dict[str, Any]:
    """Head `head` (1-based) of layer `layer` (0-based) as a single-head problem: extract's
    problem of that layer, cut to the head (split_head)."""
    problem = runner.extract(
        model_or_path,
        layer,
        input_ids=input_ids,
        text=text,
        dtype=dtype,
        tokenizer=tokenizer,
        lang=lang,
        progress=progress,
    )
    return split_head(problem, head, lang=lang)


# ---- one head of a layer's problem --------------------------------------------------------

# Keys every head of a layer shares: they pass to the head's problem as they are.
SHARED = {
    "tokens",
    "x",
    "scale",
    "mask",
    "key_padding",
    "positions",
    "key_positions",
    "causal_align",
    "positional",
    "rope",
    "window",
    "softcap",
    "norm_eps",
    "layout",
    "source",  # every head's keys and values read it (cross-attention, KV sharing)
    "v_norm",
    "gate_act",  # the output gate's activation, every head's (Laguna's softplus)
}
# Keys of the whole layer that a single head has no part in.
# what comes after the heads are joined: W_O, and BitNet's norm over the joined heads (its root
# reads every head's row: a head's own output is the one before it, as its part before W_O)
DROPPED = {"heads", "kv_heads", "wo", "bo", "sub_norm", "sub_norm_eps"}


def _whole_head(head: Any, count: int) -> int:
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 1 <= head <= count:
        raise QkvcalcError("heads.head", head=head, count=count)
    return int(head)


def split_head(problem: dict[str, Any], head: int, *, lang: str = "en") -> dict[str, Any]:
    """Query head `head` (1…H) of a layer's problem as a problem of one head: W_Q's (and b_Q's)
    columns of that head, W_K's and W_V's of the K/V head it reads (⌈h·G/H⌉), that head's own
    slope, bias, sink or norm weights where the layer has one per head, and no W_O (a head's
    output is its part of the concatenation). A key this function does not know how to cut is
    refused by name, never passed on whole."""
    heads = int(problem.get("heads", 1))
    h = _whole_head(head, heads)
    kv_heads = int(problem.get("kv_heads", heads))
    g = math.ceil(h * kv_heads / heads)
    if "mla" in problem:  # the latents are every head's at once (c_KV, k_R): not one head's
        raise QkvcalcError("heads.cannot_split", key="mla")
    d_k = np.asarray(problem["wq"]).shape[1] // heads
    d_v = np.asarray(problem["wv"]).shape[1] // kv_heads
    q_cols = slice((h - 1) * d_k, h * d_k)
    k_cols = slice((g - 1) * d_k, g * d_k)
    v_cols = slice((g - 1) * d_v, g * d_v)
    out: dict[str, Any] = {}
    for key, value in problem.items():
        if key in ("name", "description") or key in DROPPED:
            continue
        if key in SHARED:
            out[key] = value
        elif key in ("wq", "wk", "wv"):
            cols = {"wq": q_cols, "wk": k_cols, "wv": v_cols}[key]
            out[key] = np.ascontiguousarray(np.asarray(value)[:, cols])
        elif key in ("bq", "bk", "bv"):
            cols = {"bq": q_cols, "bk": k_cols, "bv": v_cols}[key]
            out[key] = np.asarray(value)[cols]
        elif key in ("wg", "bg"):  # the output gate: the columns of this head's output
            gate_cols = slice((h - 1) * d_v, h * d_v)
            found = np.asarray(value)
            found = found[:, gate_cols] if key == "wg" else found[gate_cols]
            out[key] = np.ascontiguousarray(found)
        elif key in ("q_norm", "k_norm"):
            weight = np.asarray(value)
            # one vector for all heads, or one row per head (query heads; K/V heads for k)
            out[key] = weight if weight.ndim == 1 else weight[(h if key == "q_norm" else g) - 1]
        elif key == "qk_norm":
            how = dict(value)
            if how.get("over") == "projection":  # a head's norm reads every head's row
                raise QkvcalcError("heads.cannot_split", key=key)
            rows = {"q": h, "k": g}
            how["bias"] = {
                side: (b if b.ndim == 1 else b[rows[side] - 1])
                for side, b in ((s, np.asarray(b)) for s, b in how.get("bias", {}).items())
            }
            out[key] = {k: v for k, v in how.items() if k != "bias" or v}
        elif key == "alibi":
            if value is True:
                from qkvcalc.ops.score_bias import alibi_slopes

                out[key] = [alibi_slopes(heads)[0][h - 1]]
            elif value is not False and value is not None:
                out[key] = [float(np.asarray(value).reshape(-1)[h - 1])]
        elif key == "score_bias":
            bias = np.asarray(value)
            out[key] = bias[h - 1] if bias.ndim == 3 else bias
        elif key == "sinks":
            out[key] = [float(np.asarray(value).reshape(-1)[h - 1])]
        elif key in LINEAR:
            out[key] = LINEAR[key](dict(value), h, heads, d_k, d_v)
        else:
            raise QkvcalcError("heads.cannot_split", key=key)
    model = problem.get("name", "")
    shown = Msg("heads.head_name", name=model, head=h).text(lang)
    key = "heads.head_description_lightning" if "lightning" in problem else "heads.head_description"
    return {
        "name": shown,
        "description": Msg(key, name=model, head=h, heads=heads, kv_head=g).text(lang),
        **out,
    }


# ---- one head of a linear-attention layer (gated_delta, kimi_delta, lightning) ---------------


def _columns(value: Any, cols: slice, axis: int = 1) -> np.ndarray:
    found = np.asarray(value)
    return np.ascontiguousarray(found[:, cols] if axis == 1 else found[cols])


def _conv(taps: Any, h: int, heads: int, d_k: int, d_v: int) -> np.ndarray:
    """The convolution's taps over q | k | v (K × (2·H·d_k + H·d_v)): head h's channels."""
    found = np.asarray(taps)
    width = heads * d_k
    cols = [
        np.arange((h - 1) * d_k, h * d_k),
        width + np.arange((h - 1) * d_k, h * d_k),
        2 * width + np.arange((h - 1) * d_v, h * d_v),
    ]
    return np.ascontiguousarray(found[:, np.concatenate(cols)])


def _per_token(value: Any, h: int, heads: int, width: int) -> Any:
    """g or β given per token: n × H (n × H·width, or n × H × width): head h's part; a flat list
    of n numbers (one head) as it is."""
    found = np.asarray(value, dtype=float)
    if found.ndim == 3:
        return found[:, h - 1 : h, :]
    if found.ndim == 2 and found.shape[1] == heads * width:
        return found[:, (h - 1) * width : h * width]
    return found if found.ndim == 1 else found[:, h - 1 : h]


def _gated_delta(how: dict[str, Any], h: int, heads: int, d_k: int, d_v: int) -> dict[str, Any]:
    v_cols, one = slice((h - 1) * d_v, h * d_v), slice(h - 1, h)
    out = dict(how)
    for key, value in how.items():
        if key == "conv":
            out[key] = _conv(value, h, heads, d_k, d_v)
        elif key in ("g", "beta"):
            out[key] = _per_token(value, h, heads, 1)
        elif key in ("wa", "wb"):
            out[key] = _columns(value, one)
        elif key in ("a_log", "dt_bias"):
            out[key] = _columns(value, one, axis=0)
        elif key == "wz":
            out[key] = _columns(value, v_cols)
    return out


def _kimi_delta(how: dict[str, Any], h: int, heads: int, d_k: int, d_v: int) -> dict[str, Any]:
    k_cols, v_cols, one = (
        slice((h - 1) * d_k, h * d_k),
        slice((h - 1) * d_v, h * d_v),
        slice(h - 1, h),
    )
    out = dict(how)
    for key, value in how.items():
        if key == "conv":
            out[key] = _conv(value, h, heads, d_k, d_v)
        elif key == "g":
            out[key] = _per_token(value, h, heads, d_k)
        elif key == "beta":
            out[key] = _per_token(value, h, heads, 1)
        elif key == "wb":
            out[key] = _columns(value, one)
        elif key == "a_log":
            out[key] = _columns(value, one, axis=0)
        elif key == "dt_bias":
            out[key] = _columns(value, k_cols, axis=0)
        elif key in ("wf_b", "wf"):  # wf: Ling 3.0's f_proj, the projection in one
            out[key] = _columns(value, k_cols)
        elif key in ("wg_b", "wz"):  # wz: Ling 3.0's g_proj
            out[key] = _columns(value, v_cols)
    return out


def _lightning(how: dict[str, Any], h: int, heads: int, d_k: int, d_v: int) -> dict[str, Any]:
    """The head's decay rate; the RMSNorm over every head's output side by side and the gate
    after it left out (a head's output alone is its core's, W·V: the description says so)."""
    out = {key: value for key, value in how.items() if key not in ("norm", "norm_eps", "gate")}
    out["slope"] = [float(np.asarray(how["slope"], dtype=float).reshape(-1)[h - 1])]
    return out


# A linear-attention layer's key: how head h of H (d_k, d_v each) takes its part of it
LINEAR = {"gated_delta": _gated_delta, "kimi_delta": _kimi_delta, "lightning": _lightning}


# ---- the JSON document --------------------------------------------------------------------


def _number(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def to_json(run: HeadsRun) -> dict[str, Any]:
    """The qkvcalc.heads/1 document: the tokens, and per layer (from 0) per head (from 1) its
    attention probabilities, rows the queries and columns the keys; a hybrid's linear-attention
    layer drawn by its implicit matrices (HeadsRun.implicit) has `"implicit": true` after its
    number, its heads' weights that matrix (signed, rows need not sum to 1). Non-finite numbers
    are the strings "nan", "inf", "-inf", as in qkvcalc's other JSON."""
    return {
        "schema": SCHEMA,
        "tokens": list(run.tokens),
        "layers": [
            {
                "layer": number,
                # a linear-attention layer's matrices, computed without being formed: signed
                **({"implicit": True} if number in run.implicit else {}),
                "heads": [
                    {"head": h + 1, "weights": [[_number(w) for w in row] for row in grid.tolist()]}
                    for h, grid in enumerate(layer)
                ],
            }
            for number, layer in zip(run.layers, run.weights, strict=True)
        ],
    }


# ---- the page -----------------------------------------------------------------------------


def page(run: HeadsRun, lang: str = "en") -> str:
    """The HTML page of the grid, every head's explanation embedded in its section when the
    run holds the layers' problems (attention_maps(problems=True)) and the model has at most
    MAX_EXPLAINED heads in all."""
    from qkvcalc import explain
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.heads import heads_html
    from qkvcalc.render.html import render_html

    count = sum(len(layer) for layer in run.weights)
    found: dict[tuple[int, int], str] = {}
    refused: dict[tuple[int, int], str] = {}
    if run.problems and count <= MAX_EXPLAINED:
        options = RenderOptions(lang=lang, color=False)
        for index, problem in zip(run.layers, run.problems, strict=False):
            for h in range(1, int(problem.get("heads", 1)) + 1):
                try:  # a key split_head cannot cut costs that head's explanation, not the page
                    trace = explain(**split_head(problem, h, lang=lang))
                except QkvcalcError as err:
                    refused[(index, h)] = err.message(lang)
                    continue
                found[(index, h)] = render_html(trace, options, standalone=False, styled=False)
    return heads_html(run, lang, found, MAX_EXPLAINED, refused)
