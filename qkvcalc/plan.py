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
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.problem import Matrix, Problem

Ref = tuple[str, int | None]  # (stage id, head): an earlier stage of the same plan


class Const(NamedTuple):
    """A constant operand: numbers from the problem (a weight, or one head's slice of it),
    with their exact fractions in exact mode."""

    value: np.ndarray
    exact: tuple[tuple[Any, ...], ...] | None = None


Operand = Ref | Const


@dataclass(frozen=True, eq=False)
class Spec:
    """One stage to compute: what it is, what it reads, and how it is labelled and named."""

    id: str
    head: int | None
    op: str  # a key of qkvcalc.ops.OPS
    operands: tuple[Operand, ...]
    formula: str  # plain text with the paper's names: "Q = X·W_Q"
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the operands' names, as in the formula: ("X", "W_Q")
    inner: tuple[str, ...] = ()  # a product: labels of the dimension summed over
    cell: str = ""  # how a cell is named in its arithmetic: "q_{i}·k_{j}", "Q[{i},{j}]"
    notes: tuple[Msg, ...] = ()
    topic: str = ""  # catalog key of title and why, when it differs from the id
    lazy: bool = False  # recomputed from its operands when shown (the n×m stages)

    @property
    def ref(self) -> Ref:
        return (self.id, self.head)


def dim_labels(count: int) -> tuple[str, ...]:
    """The labels of a dimension's columns: '1', '2', … (1-based, as a teacher counts)."""
    return tuple(str(j + 1) for j in range(count))


def span(first: int, count: int) -> str:
    """1-based inclusive column range: columns 3–4 (or just 3)."""
    return f"{first + 1}" if count == 1 else f"{first + 1}–{first + count}"


def _cols(m: Matrix, cols: slice) -> Const:
    exact = None if m.exact is None else tuple(tuple(row[cols]) for row in m.exact)
    return Const(m.values[:, cols], exact)


def _bias(m: Matrix | None, cols: slice | None = None) -> dict[str, Any]:
    """The params of a bias added after a product: the row vector and its exact fractions."""
    if m is None:
        return {}
    cols = cols or slice(None)
    exact = None if m.exact is None else tuple(m.exact[0][cols])
    return {"bias": m.values[0, cols], "bias_exact": exact}


def allowed_keys(p: Problem) -> np.ndarray | None:
    """[n, m] bool, True where query i may attend to key j; None when nothing is masked."""
    allowed = None
    if p.mask_kind == "causal":  # lower-triangular, aligned top-left (as is_causal=True)
        allowed = np.tril(np.ones((p.n, p.m), dtype=bool))
    elif p.mask is not None:
        allowed = p.mask.copy()
    if p.key_padding is not None:  # [m] -> broadcast over every query row
        allowed = (
            np.broadcast_to(p.key_padding, (p.n, p.m)).copy()
            if allowed is None
            else (allowed & p.key_padding)
        )
    return allowed


class _Slices(NamedTuple):
    q: slice
    k: slice
    v: slice
    g: int


def head_slices(p: Problem, head: int) -> _Slices:
    """The columns query head h reads of W_Q (or Q), and of W_K, W_V (or K, V): K/V head g's."""
    g = p.kv_head_of(head)
    return _Slices(
        slice((head - 1) * p.d_k, head * p.d_k),
        slice((g - 1) * p.d_k, g * p.d_k),
        slice((g - 1) * p.d_v, g * p.d_v),
        g,
    )


# ---- the plan ---------------------------------------------------------------------------------


def plan(p: Problem) -> tuple[Spec, ...]:
    """Every stage of the calculation, in the order a teacher writes them."""
    specs: list[Spec] = []
    if p.x is not None:
        specs.append(_input("x", "X", p.x, p.tokens))
    if p.source is not None:
        specs.append(_input("source", "source", p.source, p.source_tokens))
    allowed = allowed_keys(p)
    if not p.multihead:
        specs += _head(p, None, allowed)
        return tuple(specs)
    specs.append(_split(p))
    for h in range(1, p.heads + 1):
        specs += _head(p, h, allowed)
    specs += _combine(p)
    return tuple(specs)


def _input(sid: str, name: str, m: Matrix, rows: tuple[str, ...]) -> Spec:
    return Spec(
        sid, None, "input", (Const(m.values, m.exact),), name, rows, dim_labels(m.values.shape[1])
    )


def _split(p: Problem) -> Spec:
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
        notes=(Msg("note.split", heads=p.heads, kv_heads=p.kv_heads, d_k=p.d_k, d_v=p.d_v),),
    )


def _projections(p: Problem, h: int | None, s: _Slices, shared: tuple[Msg, ...]) -> list[Spec]:
    """Q, K, V of one head: X (or the source) times its slice of the weights, plus the bias."""
    full = h is None
    src_ref: Ref = ("source", None) if p.cross else ("x", None)
    src = "source" if p.cross else "X"
    out = []
    for sid, operand, name, cols, rows in (
        ("q", ("x", None), "X", s.q, p.tokens),
        ("k", src_ref, src, s.k, p.source_tokens),
        ("v", src_ref, src, s.v, p.source_tokens),
    ):
        weight = getattr(p, f"w{sid}")
        bias = getattr(p, f"b{sid}")
        cut = "" if full else f"[:, {span(cols.start, cols.stop - cols.start)}]"
        formula = f"{sid.upper()} = {name}·W_{sid.upper()}{cut}"
        if bias is not None:
            formula += f" + b_{sid.upper()}" + (
                "" if full else f"[{span(cols.start, cols.stop - cols.start)}]"
            )
        w = _cols(weight, cols)
        out.append(
            Spec(
                sid,
                h,
                "project",
                (operand, w),
                formula,
                rows,
                dim_labels(w.value.shape[1]),
                params=_bias(bias, cols),
                names=(name, f"W_{sid.upper()}{cut}"),
                inner=dim_labels(w.value.shape[0]),
                cell=sid.upper() + "[{i},{j}]",
                notes=shared if sid != "q" else (),
            )
        )
    return out


def _given(p: Problem, h: int | None, s: _Slices, shared: tuple[Msg, ...]) -> list[Spec]:
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


def _head(p: Problem, h: int | None, allowed: np.ndarray | None) -> list[Spec]:
    """One head's stages, from Q, K, V to its output."""
    s = head_slices(p, h or 1)
    shared: tuple[Msg, ...] = ()
    if p.kv_heads < p.heads:
        first, last = p.query_heads_of(s.g)
        shared = (Msg("note.kv_shared", kv_head=s.g, first=first, last=last),)
    specs = (_projections if p.projected else _given)(p, h, s, shared)
    n, m = p.tokens, p.source_tokens
    keys = dim_labels(p.d_k)
    specs.append(Spec("kt", h, "transpose", (("k", h),), "Kᵀ", keys, m))
    specs.append(
        Spec(
            "scores",
            h,
            "matmul",
            (("q", h), ("kt", h)),
            "Q·Kᵀ",
            n,
            m,
            names=("Q", "Kᵀ"),
            inner=keys,
            cell="q_{i}·k_{j}",
            notes=(Msg("note.cross_axes", n=p.n, m=p.m),) if p.cross else (),
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
            notes=(note,),
            lazy=True,
        )
    )
    logits: Ref = ("scaled", h)
    if allowed is not None:
        notes = [Msg("note.mask_convention")]
        if p.mask_kind == "causal" and p.n != p.m:
            notes.append(Msg("note.causal_topleft", n=p.n, m=p.m))
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
                notes=tuple(notes),
                lazy=True,
            )
        )
        logits = ("masked", h)
    specs.append(Spec("exp", h, "exp", (logits,), "e^(s − max)", n, m, lazy=True))
    softmax = "A = softmax(" + formula + (" + M)" if allowed is not None else ")")
    specs.append(Spec("weights", h, "softmax", (("exp", h),), softmax, n, m, lazy=True))
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
        )
    )
    return specs


def _combine(p: Problem) -> list[Spec]:
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
        )
    else:
        # [n, H·d_v] @ [H·d_v, d_out] + [d_out] -> [n, d_out]
        final = Spec(
            "output",
            None,
            "project",
            (("concat", None), Const(p.wo.values, p.wo.exact)),
            "output = concat·W_O" + (" + b_O" if p.bo is not None else ""),
            p.tokens,
            dim_labels(p.wo.values.shape[1]),
            params=_bias(p.bo),
            names=("concat", "W_O"),
            inner=dim_labels(width),
            cell="out[{i},{j}]",
            topic="output.final",
        )
    return [concat, final]
