"""An elementwise sum: the scaled scores plus a score bias (or any two matrices of one shape)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Feeds, Op, Params, Shapes, rows_of
from qkvcalc.ops.rounding import Out, Rounding


def _add(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] + [n, m] -> [n, m] (the first operand already cut to `rows`)
    return ops[0] + rows_of(ops[1], rows)


def _two_cells(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j


def _exact_add(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.add(ops[0], ops[1]), ()


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _add_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 3.5355 + (−0.5) = 3.0355"""
    a, b = (float(m[i, j]) for m in stage.operands)
    left = f"{style.at(i + 1, j + 1)}{style.num(a)} + {style.factor(b)}"
    return style.line(left, style.shown(a) + style.shown(b), float(stage.value[i, j]), result)


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_add(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # in float32, rounded (the bias added is the problem's own: rounded to the dtype first);
    # inside sdpa's kernel (a score bias given as a float attn_mask) kept in float32
    total = r.work(ops[0]) + r.work(r.to(ops[1]))
    if r.inside:
        return Out(r.f32(total), "float32")
    return Out(r.keep(total), r.kept)


OPS: tuple[Op, ...] = (
    Op(
        "add",
        _add,
        _two_cells,
        _exact_add,
        rowwise=True,
        backward=lambda o, p, v, g: (g, g),
        grad_formula=lambda into, out, x, params: out,  # what is added is a constant
        work=_add_work,
        lowp=_lowp_add,
        torch=lambda params, names, lit: f"{names[0]} + {names[1]}",
    ),
)
