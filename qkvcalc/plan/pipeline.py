"""The plan of an attention run: from a Problem, the ordered list of stages to compute.

Parse → plan → execute, as einops does. A Spec says what one stage is: its id and head, the
operation (qkvcalc.ops), the operands it reads (earlier stages by reference, or constants
such as one head's slice of W_Q), the operation's parameters, the labels of its rows and
columns, its formula and notes, and whether its value is kept or recomputed when shown.
The engine executes a plan with numpy, exact mode with fractions, the quiz with a student's
own answers; none of them needs to know what a stage id means. Adding a stage is adding an
entry here (and an operation in qkvcalc.ops if it is a new kind), plus its catalog text.

Head slices are computed here, once: head h reads columns (h−1)·d_k … h·d_k − 1 of W_Q and
the columns of K/V head g = ⌈h·G/H⌉ of W_K and W_V.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.input.problem import Problem
from qkvcalc.ops import features
from qkvcalc.ops.projection import sliced
from qkvcalc.plan import notes as facts
from qkvcalc.plan.masks import allowed_keys, given_keys
from qkvcalc.plan.specs import (
    Const,
    Ref,
    Slices,
    Spec,
    bias_params,
    columns_of,
    dim_labels,
    head_slices,
    positions_text,
    ref,
    span,
    stamped,
    together,
)
from qkvcalc.records import NamedTuple

# ---- the plan ---------------------------------------------------------------------------------


def inputs(p: Problem) -> list[Spec]:
    """The stages every schedule starts from: X (and its position encoding), the source."""
    specs: list[Spec] = []
    if p.x is not None:
        specs.append(input_spec("x", "X", p.x, p.tokens, facts.input_facts(p)))
        specs += positional(p)
    if p.source is not None:
        specs.append(input_spec("source", "source", p.source, p.source_tokens))
    stand_in = features.projecting(p)
    if stand_in is not None and stand_in[0].shared is not None:  # the latents, before the heads
        specs += stand_in[0].shared(p, stand_in[1], *_x_of(p))
    for feature, value in features.active(p):  # a feature's own before the heads
        if feature.before_heads is not None:
            specs += feature.before_heads(p, value, *_x_of(p), given_keys(p))
    return specs


def _x_of(p: Problem) -> tuple[Ref, str]:
    """What the projections multiply: X, or X + PE, and how formulas name it."""
    if p.variants.pe is not None:
        return ("x_pe", None), "(X + PE)"
    return ("x", None), "X"


def plain_head(p: Problem, h: int | None) -> list[Spec]:
    """The stages of head h in the ordinary run (no KV cache, no tiles): what the notes that
    compare a schedule with it execute again (qkvcalc.plan.reference)."""
    plain = replace(p, decode=None, tiles=None)
    return inputs(plain) + head(plain, h, allowed_keys(plain))


def input_spec(
    sid: str, name: str, m: Matrix, rows: tuple[str, ...], notes: tuple[Msg, ...] = ()
) -> Spec:
    labels = dim_labels(m.values.shape[1])
    return Spec(sid, None, "input", (Const(m.values, m.exact),), name, rows, labels, notes=notes)


def positional(p: Problem) -> list[Spec]:
    """The position encoding added to X before the projections: the paper's sines and cosines,
    or a learned matrix given. Only X gets it, never the source."""
    v = p.variants
    if v.pe is None:
        return []
    assert p.x is not None
    d_model = p.x.values.shape[1]
    labels = dim_labels(d_model)
    if v.positional == "sinusoidal":
        notes: tuple[Msg, ...] = (Msg("note.pe_sinusoidal", d_model=d_model),)
    else:
        notes = (Msg("note.pe_given"),)
    pe = Spec(
        "pe",
        None,
        "table",
        (),
        "PE",
        p.tokens,
        labels,
        params={"table": v.pe, "table_exact": v.pe_exact, "positions": v.positions},
        notes=(*notes, Msg("note.positions", positions=positions_text(p.tokens, v.positions))),
        symbol="PE",
        letters="n×d_model",
    )
    x_pe = Spec(
        "x_pe",
        None,
        "add",
        (("x", None), ("pe", None)),
        "X + PE",
        p.tokens,
        labels,
        symbol="X+PE",
        letters="n×d_model",
        hint=("hint.x_pe", {}),
    )
    return [pe, x_pe]


def split(p: Problem) -> Spec:
    """Which columns of W_Q, W_K, W_V (or of Q, K, V) each head reads: the first (a) and last
    (b) column of each slice, and the K/V head g it shares. [H, 7], recorded as a table."""
    table = []
    for h in range(1, p.heads + 1):
        s = head_slices(p, h)
        table.append(
            [s.q.start + 1, s.q.stop, s.k.start + 1, s.k.stop, s.v.start + 1, s.v.stop, s.g]
        )
    names = ("W_Q", "W_K", "W_V") if p.projected else ("Q", "K", "V")
    return Spec(
        "split",
        None,
        "split",
        (),
        f"{names[0]}, {names[1]}, {names[2]} → h = 1…H",
        dim_labels(p.heads),  # rows: heads; columns: first and last column of each slice, g
        (*(f"{n} {end}" for n in names for end in "ab"), "g"),
        params={"table": np.array(table, dtype=np.float64)},
        names=names,
        notes=(
            Msg("note.split", heads=p.heads, kv_heads=p.kv_heads, d_k=p.d_k, d_v=p.d_v),
            *facts.split_facts(p),
        ),
    )


class Taken(NamedTuple):
    """The rows a schedule runs the template over (a decode step's tokens): their indices
    (0-based), their labels, how they are said ('1–3') and the step."""

    take: np.ndarray
    rows: tuple[str, ...]
    said: str
    step: int


def projections(
    p: Problem, h: int | None, s: Slices, shared: tuple[Msg, ...], taken: Taken | None = None
) -> list[Spec]:
    """Q, K, V of one head: X (or the source) times its slice of the weights, plus the bias —
    of every row, or of the rows a decode step takes (`taken`: X[rows]·W, the other rows come
    from the cache)."""
    full = h is None
    x_ref: Ref = ("x_pe", None) if p.variants.pe is not None else ("x", None)
    x_name = "(X + PE)" if p.variants.pe is not None else "X"
    src_ref: Ref = ("source", None) if p.cross else x_ref
    src = "source" if p.cross else x_name
    out = []
    for sid, operand, name, cols, rows in (
        ("q", x_ref, x_name, s.q, p.tokens),
        ("k", src_ref, src, s.k, p.source_tokens),
        ("v", src_ref, src, s.v, p.source_tokens),
    ):
        weight = getattr(p, f"w{sid}")
        bias = getattr(p, f"b{sid}")
        cut = "" if full else f"[:, {span(cols.start, cols.stop - cols.start)}]"
        # --layout torch: the user gave W (out×in); X is multiplied by Wᵀ, and is said so
        label = f"W_{sid.upper()}" + ("ᵀ" if p.layout == "torch" else "")
        said = name if taken is None else f"{name}[{taken.said}]"
        formula = f"{sid.upper()} = {said}·{label}{cut}"
        if bias is not None:
            formula += f" + b_{sid.upper()}" + (
                "" if full else f"[{span(cols.start, cols.stop - cols.start)}]"
            )
        w = columns_of(weight, cols)
        width = "×d_v" if sid == "v" else "×d_k"
        spec = Spec(
            sid,
            h,
            "project",
            (operand, w),
            formula,
            rows,
            dim_labels(w.value.shape[1]),
            params=sliced(sid.upper(), weight, bias, cols),
            names=(name, f"{label}{cut}"),
            inner=dim_labels(w.value.shape[0]),
            cell=sid.upper() + "[{i},{j}]",
            notes=_projection_notes(p, h, sid, shared) + _layout_note(p, h, f"W_{sid.upper()}"),
            # a linear-attention layer has no scores: its V is said as what the state holds
            topic="v_state" if sid == "v" and features.mixing(p) is not None else "",
            symbol=sid.upper(),
            letters=("n" if sid == "q" else "m") + width,
            hint=(
                "hint.proj_bias" if bias is not None else "hint.proj",
                {"x": name, "w": f"W_{sid.upper()}{cut}", "b": f"b_{sid.upper()}"},
            ),
        )
        if taken is not None:  # the same product, of the step's rows only
            spec = replace(
                spec,
                op="step_project",
                rows=taken.rows,
                params={"take": taken.take, **spec.params},
                notes=(),
                letters="t" + width,
                hint=("hint.decode_rows", {"rows": taken.said, "w": f"W_{sid.upper()}{cut}"}),
            )
        out.append(spec)
    return out


def _layout_note(p: Problem, h: int | None, weight: str) -> tuple[Msg, ...]:
    """--layout torch: said once (on the first head), where the turned weight is first used."""
    if p.layout != "torch" or (h or 1) != 1:
        return ()
    return (Msg("note.layout_torch", weight=weight),)


def _projection_notes(
    p: Problem, h: int | None, sid: str, shared: tuple[Msg, ...]
) -> tuple[Msg, ...]:
    if sid == "k":
        return (*shared, *facts.key_facts(p, h))
    if sid == "v":
        return (*shared, *facts.value_facts(p, h))
    return ()


def _given(p: Problem, h: int | None, s: Slices, shared: tuple[Msg, ...]) -> list[Spec]:
    """Q, K, V typed in directly: the whole matrix, or one head's columns of it."""
    full = h is None
    out = []
    for sid, cols, rows in (
        ("q", s.q, p.tokens),
        ("k", s.k, p.source_tokens),
        ("v", s.v, p.source_tokens),
    ):
        m = getattr(p, sid)
        cut = "" if full else f"[:, {span(cols.start, cols.stop - cols.start)}]"
        out.append(
            Spec(
                sid,
                h,
                "input" if full else "slice",
                (Const(m.values, m.exact),),
                f"{sid.upper()}{cut}",
                rows,
                dim_labels(cols.stop - cols.start),
                params={"cols": cols},
                notes=shared if sid != "q" else (),
                topic=f"{sid}_given",  # typed in: not a projection
                symbol=sid.upper(),
                letters=("n" if sid == "q" else "m") + ("×d_v" if sid == "v" else "×d_k"),
            )
        )
    return out


def _scaling(p: Problem) -> tuple[str, str, Msg, dict[str, Any]]:
    """The scaled stage's formula, how its factor is said ('√2'), its note and params."""
    if p.scale_given is None:
        root = math.isqrt(p.d_k)
        note = Msg(
            "note.scale_default",
            d_k=p.d_k,
            root=f"√{p.d_k}",
            value=str(root) if root * root == p.d_k else f"{math.sqrt(p.d_k):.4f}",
            eq="=" if root * root == p.d_k else "≈",  # √2 ≈ 1.4142, √4 = 2
        )
        return "Q·Kᵀ / √d_k", f"√{p.d_k}", note, {"scale": p.scale, "d_k": p.d_k}
    said = f"{p.scale:g}"  # "=" only if that is the scale typed, exactly (not 1/sqrt(8), 1/3)
    exact = p.scale_given.exact is not None and Fraction(said) == p.scale_given.exact
    note = Msg("note.scale_given", scale=said, eq="=" if exact else "≈", d_k=p.d_k)
    params = {"scale": p.scale, "scale_exact": p.scale_given.exact, "given": True}
    return f"Q·Kᵀ × {p.scale_given.value:g}", "", note, params


def head(p: Problem, h: int | None, allowed: np.ndarray | None) -> list[Spec]:
    """One head's stages, from Q, K, V to its output, in the order of DESIGN's per-head
    stages: q, k, v → the features' stages on them (q_norm, k_norm → q_rot, k_rot) → kt →
    scores → scaled → the features' stages on the logits (a bias, then the cap) → masked →
    exp → weights → output → the features' stages after it. A stage that does not apply is
    absent. One list throughout: the notes that run this head's stages again (why scale)
    read it."""
    specs = _qkv(p, h)
    mixing = features.mixing(p)
    if mixing is not None:  # a linear-attention layer: its own stages after q, k, v
        for step, spec in mixing[0].mixer(p, mixing[1], h, specs):  # type: ignore[misc]
            specs += stamped([spec], step=step) if step else [spec]
        return specs
    q_ref, k_ref, before = _turned_qk(p, h, specs)
    v_ref, v_name = _turned_v(p, h, specs)
    k_ref, v_ref, v_name = _more_keys(p, h, k_ref, v_ref, v_name, specs)
    keys = features.key_labels(p)  # the tokens, then a feature's own keys (its entries)
    specs += [_kt(p, h, k_ref, keys), _scores(p, h, allowed, q_ref, k_ref, before, keys)]
    formula, _, note, _ = _scaling(p)
    first = len(specs)  # from here to the head's output: its n×m stages
    at = Rows(h, None, p.tokens, keys, "n", "m")
    notes = (note, *facts.scaling_facts(p))
    specs.append(scaled(p, at, formula, notes, facts.why_scale(p, allowed, h, specs)))
    n, m = p.tokens, keys
    logits, symbol, formula = on_logits(
        p, features.Logits(h, ("scaled", h), "S", formula, n, m, None, "n×m"), specs
    )
    if allowed is not None:
        specs.append(
            masked(at, logits, symbol, formula, allowed, (*_mask_notes(p), *facts.mask_facts(p)))
        )
        logits, symbol = ("masked", h), "S+M"
    if p.tiles is not None:  # the softmax and A·V one block of keys at a time
        from qkvcalc.plan.tiles import tile_stages

        _computed_again(specs, first, len(specs))
        specs += tile_stages(p, h, logits, v_ref, lambda: plain_head(p, h))
    else:
        softmax = "A = softmax(" + formula + (" + M)" if allowed is not None else ")")
        reading: features.Reading = lambda ref, extra: facts.reading(p, allowed, ref, extra)  # noqa: E731
        specs += softmax_and_output(p, at, logits, symbol, softmax, v_ref, v_name, reading)
        _computed_again(specs, first, len(specs) - 1)  # the output A·V is kept
    specs += features.after_output(p, h, specs[-1])  # a feature's, after it: the concat reads it
    return specs


def _computed_again(specs: list[Spec], first: int, end: int) -> None:
    """The whole run's mark on a head's n×m stages after the scores (the scaled and masked
    scores, the features' logits, the exponentials and the weights): each is computed again
    from its operands when shown (row by row, where its op is row-wise), so that a long
    sequence does not keep several n×m matrices a head. A table given as numbers (a score bias)
    is kept as it is. In place: the notes that run this head's stages again read this list."""
    specs[first:end] = [stamped([s], lazy=True)[0] if s.operands else s for s in specs[first:end]]


def _qkv(p: Problem, h: int | None) -> list[Spec]:
    """Head h's Q, K and V: projected (or given, or made by a feature in their place)."""
    s = head_slices(p, h or 1)
    shared: tuple[Msg, ...] = ()
    if p.kv_heads < p.heads:
        first, last = p.query_heads_of(s.g)
        shared = (Msg("note.kv_shared", kv_head=s.g, first=first, last=last),)
    stand_in = features.projecting(p)
    if stand_in is not None and stand_in[0].head_qkv is not None:
        return stand_in[0].head_qkv(p, stand_in[1], h, *_x_of(p))
    return (projections if p.projected else _given)(p, h, s, shared)


def _turned_qk(
    p: Problem, h: int | None, specs: list[Spec]
) -> tuple[Ref, Ref, dict[str, list[Ref]]]:
    """The features' stages on head h's queries and keys, appended to `specs`: the refs the
    scores read, and by feature the refs as they were before its turn."""
    v = p.variants
    (q_ref, k_ref), before = turned(
        p,
        [
            features.Turn(h, ("q", h), "Q", "Q", p.tokens, v.positions, None, "n×d_k"),
            features.Turn(h, ("k", h), "K", "K", p.source_tokens, v.key_positions, None, "m×d_k"),
        ],
        specs,
    )
    return q_ref, k_ref, before


def _turned_v(p: Problem, h: int | None, specs: list[Spec]) -> tuple[Ref, str]:
    """The features' stages on head h's values (a norm on V), appended to `specs`: the ref
    the output reads and its symbol."""
    at = features.Turn(
        h, ("v", h), "V", "V", p.source_tokens, p.variants.key_positions, None, "m×d_v"
    )
    for feature, value in features.active(p):
        stage = feature.turn_v(p, value, at) if feature.turn_v is not None else None
        if stage is not None:
            specs.append(stage)
            at = at._replace(ref=stage.ref, symbol=stage.symbol)
    return at.ref, at.symbol


def _more_keys(
    p: Problem, h: int | None, k_ref: Ref, v_ref: Ref, v_name: str, specs: list[Spec]
) -> tuple[Ref, Ref, str]:
    """A feature's own rows appended to head h's keys and values (appended to `specs`): the
    refs the scores and the output then read, and the values' symbol."""
    v = p.variants
    k_name = next((s.symbol for s in specs if s.ref == k_ref and s.symbol), "K")
    k = features.Turn(h, k_ref, k_name, "K", p.source_tokens, v.key_positions, None, "m×d_k")
    val = features.Turn(h, v_ref, v_name, "V", p.source_tokens, v.key_positions, None, "m×d_v")
    added, k, val = features.more_keys(p, h, k, val)
    specs += added
    return k.ref, val.ref, val.symbol


def _kt(p: Problem, h: int | None, k_ref: Ref, keys: tuple[str, ...]) -> Spec:
    return Spec(
        "kt",
        h,
        "transpose",
        (k_ref,),
        "Kᵀ",
        dim_labels(p.d_k),
        keys,
        symbol="Kᵀ",
        letters="d_k×m",
        hint=("hint.kt", {}),
    )


def _scores(
    p: Problem,
    h: int | None,
    allowed: np.ndarray | None,
    q_ref: Ref,
    k_ref: Ref,
    before: dict[str, list[Ref]],
    keys: tuple[str, ...],
) -> Spec:
    """Q·Kᵀ, with what the features say on it (`before`: their refs before each turn)."""
    notes: list[Msg] = []
    if p.cross:
        notes.append(Msg("note.cross_axes", n=p.n, m=p.m))
    for feature, value in features.active(p):
        if feature.scores_notes is not None:
            notes += feature.scores_notes(value)
    if p.tiles is not None:  # computed whole here, though the tiled run never holds it
        notes.append(Msg("note.tiles_whole"))
    return Spec(
        "scores",
        h,
        "matmul",
        (q_ref, ("kt", h)),
        "Q·Kᵀ",
        p.tokens,
        keys,
        names=("Q", "Kᵀ"),
        inner=dim_labels(p.d_k),
        cell="q_{i}·k_{j}",
        notes=tuple(notes),
        symbol="Q·Kᵀ",
        letters="n×m",
        hint=("hint.scores", {}),
        remarks=together(
            facts.geometry(p, allowed, q_ref, k_ref),
            *(
                f.scores_remark(p, value, h, *before[f.name])
                for f, value in features.active(p)
                if f.scores_remark is not None
            ),
        ),
    )


class Rows(NamedTuple):
    """Where a head's stages after the scores stand: its head, the decode step (None outside
    one), the labels of the queries' rows and of the keys, and how the paper's letters name
    their counts ("n" and "m"; a decode step's "t" and "m_t")."""

    h: int | None
    step: int | None
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    n: str
    m: str

    def ref(self, sid: str) -> Ref:
        return ref(sid, self.h, self.step)


def scaled(p: Problem, at: Rows, formula: str, notes: tuple[Msg, ...], remarks: Any = None) -> Spec:
    """The scores times the scale (÷ √d_k, or the scale given) of a head's rows: the scaled
    stage of the whole run and of a decode step alike (`formula`: its formula, with the keys
    named as the schedule names them)."""
    _, said, _, params = _scaling(p)
    return Spec(
        "scaled",
        at.h,
        "scale",
        (at.ref("scores"),),
        formula,
        at.rows,
        at.cols,
        params={**params, "scale_text": said},
        notes=notes,
        remarks=remarks,
        symbol="S",
        letters=f"{at.n}×{at.m}",
        hint=("hint.scaled", {"op": f"/ {said}" if said else f"× {p.scale:g}"}),
    )


def masked(
    at: Rows, logits: Ref, symbol: str, formula: str, allowed: np.ndarray, notes: tuple[Msg, ...]
) -> Spec:
    """The mask on the logits: −∞ where a key is not allowed (`allowed` of these rows)."""
    return Spec(
        "masked",
        at.h,
        "mask",
        (logits,),
        formula + " + M",
        at.rows,
        at.cols,
        params={"allowed": allowed},
        notes=notes,
        symbol="S+M",
        letters=f"{at.n}×{at.m}",
        hint=("hint.masked", {"src": symbol}),
    )


def softmax_and_output(
    p: Problem,
    at: Rows,
    logits: Ref,
    symbol: str,
    formula: str,
    v: Ref,
    v_name: str,
    reading: features.Reading,
) -> list[Spec]:
    """exp, weights (as the features make them) and the output A·V of a head's rows; `reading`
    gives the reading line under the weights (None in a decode step's)."""
    letters = f"{at.n}×{at.m}"
    exp = Spec(
        "exp",
        at.h,
        "exp",
        (logits,),
        "e^(s − max)",
        at.rows,
        at.cols,
        symbol="E",
        letters=letters,
        hint=("hint.exp", {"src": symbol}),
    )
    weights = Spec(
        "weights",
        at.h,
        "softmax",
        (at.ref("exp"),),
        formula,
        at.rows,
        at.cols,
        symbol="A",
        letters=letters,
        remarks=reading(at.ref("weights"), ()),
        hint=("hint.weights", {}),
    )
    output = Spec(
        "output",
        at.h,
        "matmul",
        (at.ref("weights"), v),
        f"A·{v_name}",
        at.rows,
        dim_labels(p.d_v),
        names=("A", v_name),
        inner=at.cols,
        cell="out[{i},{j}]",
        symbol="out",
        letters=f"{at.n}×d_v",
        hint=("hint.output", {}),
    )
    return [*features.around_softmax(p, exp, weights, reading), output]


def turned(
    p: Problem, sides: list[features.Turn], specs: list[Spec]
) -> tuple[list[Ref], dict[str, list[Ref]]]:
    """The features' stages on a head's queries and keys (q/k norm, then the rotation), one
    feature after another, each on every side given (Q and K; a decode step turns its new
    query rows, and its new key rows before they are cached). Appends them to `specs`;
    returns the refs each side ends at, and by feature the refs as they were before its turn."""
    sides = list(sides)
    before: dict[str, list[Ref]] = {}
    for feature, value in features.turning(p):
        if feature.turn is None:
            continue
        before[feature.name] = [side.ref for side in sides]
        for k, side in enumerate(sides):
            stage = feature.turn(p, value, side)
            if stage is not None:
                specs.append(stage)
                sides[k] = side._replace(ref=stage.ref, symbol=stage.symbol)
    return [side.ref for side in sides], before


def on_logits(p: Problem, at: features.Logits, specs: list[Spec]) -> tuple[Ref, str, str]:
    """The features' stages on a head's scaled scores (a bias, a cap …), appended to
    `specs`; returns the stage the mask reads, its symbol and the formula so far."""
    logits, symbol, formula = at.ref, at.symbol, at.formula
    for feature, value in features.active(p):
        if feature.logits is not None:
            added = feature.logits(
                p, value, at._replace(ref=logits, symbol=symbol, formula=formula)
            )
            specs += added
            logits, symbol, formula = added[-1].ref, added[-1].symbol, added[-1].formula
    return logits, symbol, formula


def _mask_notes(p: Problem) -> tuple[Msg, ...]:
    """What the mask is: the convention of 1/true, how a causal mask compares positions
    (aligned top-left or bottom-right), and what a feature that narrows it says."""
    v = p.variants
    notes = [Msg("note.mask_convention")]
    if p.mask_kind == "causal":
        if v.positions_given:
            notes.append(Msg("note.causal_positions"))
        elif p.n != p.m and v.causal_align == "bottom-right":
            notes.append(Msg("note.causal_bottomright", n=p.n, m=p.m, first=p.m - p.n))
        elif p.n != p.m:
            notes.append(Msg("note.causal_topleft", n=p.n, m=p.m))
    for feature, value in features.active(p):
        if feature.mask_notes is not None and p.mask_kind == "causal":
            notes += feature.mask_notes(value)
    return tuple(notes)


def combine(
    p: Problem, reads: Sequence[Ref] | None = None, widths: Sequence[int] | None = None
) -> list[Spec]:
    """The heads joined side by side (`reads`: each head's last stage, its output unless a
    feature comes after it; `widths`: their columns, d_v each unless a feature says), then
    W_O (and b_O) when given."""
    width = p.heads * p.d_v
    widths = widths or [p.d_v] * p.heads
    starts = [sum(widths[:k]) for k in range(len(widths))]
    words = features.join_words(p)  # the heads, or the parts a feature joined after them
    concat = Spec(
        "concat",
        None,
        "concat",
        tuple(reads or (("output", h) for h in range(1, p.heads + 1))),
        words.formula,
        p.tokens,
        dim_labels(width),
        topic=words.topic,
        symbol="concat",
        letters="n×H·d_v",
        hint=(words.hint, {"d_v": widths[0]}),  # each part equally wide
        notes=(
            Msg(
                words.note,
                spans=[
                    Msg(words.span, head=h, cols=span(start, w))
                    for h, (start, w) in enumerate(zip(starts, widths, strict=True), start=1)
                ],
            ),
        ),
    )
    w_o = "W_Oᵀ" if p.layout == "torch" else "W_O"  # as the projections: the given W_O, turned
    if p.wo is None:
        final = Spec(
            "output",
            None,
            "copy",
            (("concat", None),),
            "output = concat",
            p.tokens,
            dim_labels(width),
            topic=words.joined_topic,
            symbol="out",
            letters="n×H·d_v",
            hint=("hint.final_concat", {}),
        )
    else:
        # [n, H·d_v] @ [H·d_v, d_out] + [d_out] -> [n, d_out]
        final = Spec(
            "output",
            None,
            "project",
            (("concat", None), Const(p.wo.values, p.wo.exact)),
            f"output = concat·{w_o}" + (" + b_O" if p.bo is not None else ""),
            p.tokens,
            dim_labels(p.wo.values.shape[1]),
            params=bias_params(p.bo),
            names=("concat", w_o),
            inner=dim_labels(width),
            cell="out[{i},{j}]",
            topic=words.final_topic,
            notes=_layout_note(p, None, "W_O"),
            symbol="out",
            letters="n×d_out",
            hint=("hint.final", {}),
        )
    return [concat, final]
