"""A matrix product, as on the board: Q = X·W_Q + b_Q (a projection, `project`) and the
products that are not projections (`matmul`: the weighted sum A·V, the output projection).
Each cell is one row times one column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Feeds, Op, Params, Shapes, rows_of


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return x @ w if b is None else x @ w + b


def _row_times_column(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of A times column j of B
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _exact_matmul(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.matmul(ops[0], ops[1], params.get("bias_exact")), ()


def _project(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return project(rows_of(ops[0], rows), ops[1], params.get("bias"))


def _product_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = A·B (+ b): ∂A = g·Bᵀ, ∂B = Aᵀ·g (the bias's ∂b = the column sums of g)
    a, b = ops
    return g @ b.T, a.T @ g


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _product_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """One row times one column: q₁·k₂ = 1×1 + 2×0 = 1 (plus the bias, when there is one)."""
    a, b = stage.operands
    n = len(a[i])
    ea = eb = None
    if exact is not None and len(stage.operands_exact) == 2:
        ea, eb = stage.operands_exact
    rows = [style.exact_cell(ea, i, t) for t in range(n)]
    cols = [style.exact_cell(eb, t, j) for t in range(n)]
    terms, total = style.products(a[i], b[:, j], rows, cols)
    if stage.bias is not None:
        bias = stage.bias_exact[j] if exact is not None and stage.bias_exact else None
        terms += f" + {style.exact_factor(bias, float(stage.bias[j]))}"
        total += style.shown(float(stage.bias[j]), bias)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    return style.line(left, total, float(stage.value[i, j]), result)


OPS: tuple[Op, ...] = (
    Op(
        "project",
        _project,
        _row_times_column,
        _exact_matmul,
        product=True,
        backward=_product_back,
        work=_product_work,
    ),
    Op(
        "matmul",
        _project,
        _row_times_column,
        _exact_matmul,
        product=True,
        backward=_product_back,
        work=_product_work,
    ),
)
