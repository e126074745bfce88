"""The plan of an attention run: from a Problem, the ordered list of stages to compute.

Parse → plan → execute, as einops does. A Spec says what one stage is: its id and head, the
operation (qkvcalc.run.ops), the operands it reads (earlier stages by reference, or constants
such as one head's slice of W_Q), the operation's parameters, the labels of its rows and
columns, its formula and notes, and whether its value is kept or recomputed when shown.
The engine executes a plan with numpy, exact mode with fractions, the quiz with a student's
own answers; none of them needs to know what a stage id means. Adding a stage is adding an
entry here (and an operation in qkvcalc.run.ops if it is a new kind), plus its catalog text.

Head slices are computed here, once: head h reads columns (h−1)·d_k … h·d_k − 1 of W_Q and
the columns of K/V head g = ⌈h·G/H⌉ of W_K and W_V.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc import features
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.input.problem import Problem
from qkvcalc.labels import safe
from qkvcalc.plan import notes as facts
from qkvcalc.plan.masks import allowed_keys
from qkvcalc.plan.specs import (
    Const,
    Ref,
    Slices,
    Spec,
    bias_params,
    columns_of,
    dim_labels,
    head_slices,
    span,
    together,
)

# ---- the plan ---------------------------------------------------------------------------------


def inputs(p: Problem) -> list[Spec]:
    """The stages every schedule starts from: X (and its position encoding), the source."""
    specs: list[Spec] = []
    if p.x is not None:
        specs.append(input_spec("x", "X", p.x, p.tokens, facts.input_facts(p)))
        specs += positional(p)
    if p.source is not None:
        specs.append(input_spec("source", "source", p.source, p.source_tokens))
    return specs


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
    rows = tuple(f"{t} @{pos}" for t, pos in zip(p.tokens, v.positions.tolist(), strict=True))
    pe = Spec(
        "pe",
        None,
        "table",
        (),
        "PE",
        p.tokens,
        labels,
        params={"table": v.pe, "table_exact": v.pe_exact, "positions": v.positions},
        notes=(*notes, Msg("note.positions", positions=_positions_text(rows))),
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


def _positions_text(rows: tuple[str, ...], limit: int = 12) -> str:
    shown = ", ".join(rows[:limit])
    return shown + (" …" if len(rows) > limit else "")


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


def _projections(p: Problem, h: int | None, s: Slices, shared: tuple[Msg, ...]) -> list[Spec]:
    """Q, K, V of one head: X (or the source) times its slice of the weights, plus the bias."""
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
        formula = f"{sid.upper()} = {name}·{label}{cut}"
        if bias is not None:
            formula += f" + b_{sid.upper()}" + (
                "" if full else f"[{span(cols.start, cols.stop - cols.start)}]"
            )
        w = columns_of(weight, cols)
        out.append(
            Spec(
                sid,
                h,
                "project",
                (operand, w),
                formula,
                rows,
                dim_labels(w.value.shape[1]),
                params=bias_params(bias, cols),
                names=(name, f"{label}{cut}"),
                inner=dim_labels(w.value.shape[0]),
                cell=sid.upper() + "[{i},{j}]",
                notes=_projection_notes(p, h, sid, shared) + _layout_note(p, h, f"W_{sid.upper()}"),
                symbol=sid.upper(),
                letters=("n" if sid == "q" else "m") + ("×d_v" if sid == "v" else "×d_k"),
                hint=(
                    "hint.proj_bias" if bias is not None else "hint.proj",
                    {"x": name, "w": f"W_{sid.upper()}{cut}", "b": f"b_{sid.upper()}"},
                ),
            )
        )
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
        )
        return "Q·Kᵀ / √d_k", f"√{p.d_k}", note, {"scale": p.scale, "d_k": p.d_k}
    note = Msg("note.scale_given", scale=f"{p.scale:g}", d_k=p.d_k)
    params = {"scale": p.scale, "scale_exact": p.scale_given.exact, "given": True}
    return f"Q·Kᵀ × {p.scale_given.value:g}", "", note, params


def head(p: Problem, h: int | None, allowed: np.ndarray | None) -> list[Spec]:
    """One head's stages, from Q, K, V to its output, in the order of DESIGN's per-head
    stages: q, k, v → q_norm, k_norm → q_rot, k_rot → kt → scores → scaled → score_bias,
    biased → capped → masked → exp → weights → output. A stage that does not apply is absent."""
    s = head_slices(p, h or 1)
    shared: tuple[Msg, ...] = ()
    if p.kv_heads < p.heads:
        first, last = p.query_heads_of(s.g)
        shared = (Msg("note.kv_shared", kv_head=s.g, first=first, last=last),)
    specs = (_projections if p.projected else _given)(p, h, s, shared)
    q_ref, k_ref = _queries_and_keys(p, h, specs)
    n, m = p.tokens, p.source_tokens
    keys = dim_labels(p.d_k)
    specs.append(
        Spec(
            "kt",
            h,
            "transpose",
            (k_ref,),
            "Kᵀ",
            keys,
            m,
            symbol="Kᵀ",
            letters="d_k×m",
            hint=("hint.kt", {}),
        )
    )
    score_notes: list[Msg] = []
    if p.cross:
        score_notes.append(Msg("note.cross_axes", n=p.n, m=p.m))
    if p.variants.rope is not None:
        score_notes.append(Msg("note.rope_scores"))
    specs.append(
        Spec(
            "scores",
            h,
            "matmul",
            (q_ref, ("kt", h)),
            "Q·Kᵀ",
            n,
            m,
            names=("Q", "Kᵀ"),
            inner=keys,
            cell="q_{i}·k_{j}",
            notes=tuple(score_notes),
            symbol="Q·Kᵀ",
            letters="n×m",
            hint=("hint.scores", {}),
            remarks=together(
                facts.geometry(p, allowed, q_ref, k_ref),
                _rope_shift(p, h, q_ref, k_ref) if p.variants.rope is not None else None,
            ),
        )
    )
    formula, said, note, params = _scaling(p)
    specs.append(
        Spec(
            "scaled",
            h,
            "scale",
            (("scores", h),),
            formula,
            n,
            m,
            params={**params, "scale_text": said},
            notes=(note, *facts.scaling_facts(p)),
            remarks=facts.why_scale(p, allowed, h, specs),
            lazy=True,
            symbol="S",
            letters="n×m",
            hint=("hint.scaled", {"op": f"/ {said}" if said else f"× {p.scale:g}"}),
        )
    )
    logits: Ref = ("scaled", h)
    if p.variants.biased:
        specs += _score_bias(p, h, formula)
        logits, formula = ("biased", h), formula + " + B"
    symbol = "S+B" if p.variants.biased else "S"
    for feature, value in features.active(p):
        if feature.logits is not None:
            at = features.Logits(h, logits, symbol, formula, n, m, None, "n×m")
            stage = feature.logits(p, value, at)
            specs.append(stage)
            logits, symbol, formula = stage.ref, stage.symbol, stage.formula
    if allowed is not None:
        specs.append(
            Spec(
                "masked",
                h,
                "mask",
                (logits,),
                formula + " + M",
                n,
                m,
                params={"allowed": allowed},
                notes=(*_mask_notes(p), *facts.mask_facts(p)),
                lazy=True,
                symbol="S+M",
                letters="n×m",
                hint=("hint.masked", {"src": symbol}),
            )
        )
        logits, symbol = ("masked", h), "S+M"
    if p.tiles is not None:  # the softmax and A·V one block of keys at a time
        from qkvcalc.plan.tiles import tile_stages

        return specs + tile_stages(p, h, logits, ("v", h), lambda: plain_head(p, h))
    softmax = "A = softmax(" + formula + (" + M)" if allowed is not None else ")")
    exp = Spec(
        "exp",
        h,
        "exp",
        (logits,),
        "e^(s − max)",
        n,
        m,
        lazy=True,
        symbol="E",
        letters="n×m",
        hint=("hint.exp", {"src": symbol}),
    )
    weights = Spec(
        "weights",
        h,
        "softmax",
        (("exp", h),),
        softmax,
        n,
        m,
        lazy=True,
        symbol="A",
        letters="n×m",
        remarks=facts.reading(p, allowed, ("weights", h)),
        hint=("hint.weights", {}),
    )
    specs += features.around_softmax(
        p, exp, weights, lambda ref, extra: facts.reading(p, allowed, ref, extra)
    )
    specs.append(
        Spec(
            "output",
            h,
            "matmul",
            (("weights", h), ("v", h)),
            "A·V",
            n,
            dim_labels(p.d_v),
            names=("A", "V"),
            inner=m,
            cell="out[{i},{j}]",
            symbol="out",
            letters="n×d_v",
            hint=("hint.output", {}),
        )
    )
    return specs


def _queries_and_keys(p: Problem, h: int | None, specs: list[Spec]) -> tuple[Ref, Ref]:
    """The q/k norms and the rotation, each a stage after the projections (q_norm, k_norm,
    then q_rot, k_rot); returns the stages the scores read."""
    v = p.variants
    q_ref: Ref = ("q", h)
    k_ref: Ref = ("k", h)
    keys = dim_labels(p.d_k)
    for sid, weight, name, rows in (
        ("q_norm", v.q_norm, "Q", p.tokens),
        ("k_norm", v.k_norm, "K", p.source_tokens),
    ):
        if weight is None:
            continue
        ref = q_ref if name == "Q" else k_ref
        specs.append(
            Spec(
                sid,
                h,
                "rmsnorm",
                (ref,),
                f"{name}_norm = RMSNorm({name})",
                rows,
                keys,
                params={"weight": weight, "eps": v.norm_eps},
                notes=(Msg("note.rmsnorm", eps=f"{v.norm_eps:g}"),),
                hint=("hint.rmsnorm", {"src": name}),
                symbol=f"{name}_norm",
                letters=("n" if name == "Q" else "m") + "×d_k",
            )
        )
        if name == "Q":
            q_ref = (sid, h)
        else:
            k_ref = (sid, h)
    if v.rope is None:
        return q_ref, k_ref
    rope = v.rope
    base = {"style": rope.style, "dims": rope.dims, "factor": rope.attention_factor}
    for sid, ref, name, rows, positions in (
        ("q_rot", q_ref, "Q", p.tokens, v.positions),
        ("k_rot", k_ref, "K", p.source_tokens, v.key_positions),
    ):
        specs.append(
            Spec(
                sid,
                h,
                "rope",
                (ref,),
                f"{name}_rot = RoPE({name}, pos)",
                rows,
                keys,
                params={
                    **base,
                    "angles": rope.angles(positions),
                    "positions": positions,
                    "inv_freq": rope.inv_freq,
                },
                notes=_rope_notes(p, positions, rows)
                if name == "Q"
                else (Msg("note.rope_keys", positions=_positions_text(_at(rows, positions))),),
                symbol=f"{name}_rot",
                hint=("hint.rope", {"src": name + ("_norm" if ref[0].endswith("_norm") else "")}),
                letters=("n" if name == "Q" else "m") + "×d_k",
            )
        )
    return ("q_rot", h), ("k_rot", h)


def _at(rows: tuple[str, ...], positions: np.ndarray) -> tuple[str, ...]:
    return tuple(f"{t} @{pos}" for t, pos in zip(rows, positions.tolist(), strict=True))


def _rope_notes(p: Problem, positions: np.ndarray, rows: tuple[str, ...]) -> tuple[Msg, ...]:
    """How the rotation pairs the dimensions, the frequency of each pair, and the positions."""
    rope = p.variants.rope
    assert rope is not None
    pairs = [
        f"({j + 1},{partner_of(j, rope.dims, rope.style) + 1}) ω={rope.inv_freq[k]:.4g}"
        for k, j in enumerate(_pair_starts(rope.dims, rope.style))
    ]
    notes = [
        Msg(
            "note.rope_pairs_" + rope.style,
            dims=rope.dims,
            half=rope.dims // 2,
            d_k=p.d_k,
            pairs=", ".join(pairs[:8]) + (" …" if len(pairs) > 8 else ""),
        ),
        Msg("note.rope_angle", positions=_positions_text(_at(rows, positions))),
    ]
    if rope.dims < p.d_k:
        notes.append(Msg("note.rope_partial", dims=rope.dims, d_k=p.d_k, first=rope.dims + 1))
    if rope.attention_factor != 1:
        notes.append(Msg("note.rope_factor", factor=f"{rope.attention_factor:g}"))
    return tuple(notes)


def _pair_starts(dims: int, style: str) -> list[int]:
    return list(range(0, dims, 2)) if style == "pairs" else list(range(dims // 2))


def partner_of(j: int, dims: int, style: str) -> int:
    from qkvcalc.run.ops import partner

    return partner(j, dims, style)


def _rope_shift(p: Problem, h: int | None, q_ref: Ref, k_ref: Ref) -> Any:
    """A note that shows RoPE's point: the score of a query and a key moved by the same
    offset stays the same (it depends only on the distance between their positions)."""
    from qkvcalc.run.ops import rotate

    rope = p.variants.rope
    assert rope is not None
    before_q = ("q_norm", h) if p.variants.q_norm is not None else ("q", h)
    before_k = ("k_norm", h) if p.variants.k_norm is not None else ("k", h)
    i, j = p.n - 1, 0
    pos_i, pos_j = int(p.variants.positions[i]), int(p.variants.key_positions[j])
    offset = 5

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        q, k = value_of(before_q)[i : i + 1], value_of(before_k)[j : j + 1]

        def score(a: int, b: int) -> float:
            turned_q = rotate(
                q, rope.angles(np.array([a])), rope.style, rope.dims, rope.attention_factor
            )
            turned_k = rotate(
                k, rope.angles(np.array([b])), rope.style, rope.dims, rope.attention_factor
            )
            return float(turned_q[0] @ turned_k[0])

        here, moved = score(pos_i, pos_j), score(pos_i + offset, pos_j + offset)
        return (
            Msg(
                "note.rope_shift",
                query=safe(p.tokens[i]),
                key=safe(p.source_tokens[j]),
                pos_q=pos_i,
                pos_k=pos_j,
                offset=offset,
                moved_q=pos_i + offset,
                moved_k=pos_j + offset,
                score=f"{here:.6g}",
                moved=f"{moved:.6g}",
                distance=pos_i - pos_j,
            ),
        )

    return remark


def _score_bias(p: Problem, h: int | None, formula: str) -> list[Spec]:
    """ALiBi's −slope·|i − j| (or a bias given: T5's relative position bias), then the scaled
    scores plus that bias."""
    v = p.variants
    hh = (h or 1) - 1
    n, m = p.tokens, p.source_tokens
    if v.alibi is not None:
        slope = float(v.alibi[hh])
        exact = v.alibi_exact[hh] if v.alibi_exact is not None else None
        bias = Spec(
            "score_bias",
            h,
            "alibi",
            (),
            f"B = -{slope:.6g}·|i − j|",
            n,
            m,
            params={
                "slope": slope,
                "slope_exact": exact,
                "positions": v.positions,
                "key_positions": v.key_positions,
            },
            notes=(
                Msg(
                    "note.alibi_given" if v.alibi_given else "note.alibi_recipe",
                    slope=f"{slope:.6g}",
                    heads=p.heads,
                ),
                Msg("note.alibi_bloom"),
            ),
            symbol="B",
            letters="n×m",
            hint=("hint.alibi", {}),
        )
        if v.score_bias is not None:  # both: ALiBi plus the bias given, as one B
            bias = Spec(
                "score_bias",
                h,
                "table",
                (),
                "B",
                n,
                m,
                params={"table": v.score_bias[hh] + _alibi_table(p, slope)},
                notes=(Msg("note.alibi_and_bias", slope=f"{slope:.6g}"),),
                symbol="B",
                letters="n×m",
            )
    else:
        assert v.score_bias is not None
        table_exact = v.score_bias_exact[hh] if v.score_bias_exact is not None else None
        bias = Spec(
            "score_bias",
            h,
            "table",
            (),
            "B",
            n,
            m,
            params={"table": v.score_bias[hh], "table_exact": table_exact},
            notes=(Msg("note.score_bias"),),
            symbol="B",
            letters="n×m",
        )
    biased = Spec(
        "biased",
        h,
        "add",
        (("scaled", h), ("score_bias", h)),
        formula + " + B",
        n,
        m,
        lazy=True,
        symbol="S+B",
        letters="n×m",
        hint=("hint.biased", {}),
    )
    return [bias, biased]


def _alibi_table(p: Problem, slope: float) -> np.ndarray:
    v = p.variants
    distance = np.abs(v.positions[:, None] - v.key_positions[None, :])
    return -slope * distance.astype(np.float64)


def bias_table(p: Problem, h: int | None) -> np.ndarray:
    """The whole run's score bias B of head h, [n, m]: ALiBi's −slope·|i − j|, a bias given,
    or both added (what the stage score_bias holds; a decode step holds its rows of it)."""
    v = p.variants
    hh = (h or 1) - 1
    table = np.zeros((p.n, p.m))
    if v.alibi is not None:
        table = table + _alibi_table(p, float(v.alibi[hh]))
    if v.score_bias is not None:
        table = table + v.score_bias[hh]
    return table


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


def combine(p: Problem) -> list[Spec]:
    """The heads joined side by side, then W_O (and b_O) when given."""
    width = p.heads * p.d_v
    concat = Spec(
        "concat",
        None,
        "concat",
        tuple(("output", h) for h in range(1, p.heads + 1)),
        "concat(head_1, …, head_H)",
        p.tokens,
        dim_labels(width),
        symbol="concat",
        letters="n×H·d_v",
        hint=("hint.concat", {"d_v": p.d_v}),
        notes=(
            Msg(
                "note.concat_columns",
                spans=[
                    Msg("ui.concat_span", head=h, cols=span((h - 1) * p.d_v, p.d_v))
                    for h in range(1, p.heads + 1)
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
            topic="output.concat",
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
            topic="output.final",
            notes=_layout_note(p, None, "W_O"),
            symbol="out",
            letters="n×d_out",
            hint=("hint.final", {}),
        )
    return [concat, final]
