"""The operations a stage can be: one table, read by the engine, exact mode, the grader and
the cell arithmetic alike.

Each operation is plain numpy on its operands (picoGPT's style, with the paper's shapes), an
exact version where the result stays rational (Fractions and surds, qkvcalc.exact), and the
rule that says which operand cells one output cell is computed from (what the quiz needs to
follow a mistake carried from an earlier stage). Nothing here knows a stage's id: the plan
(qkvcalc.plan) says which operation each stage is and what it reads.

    compute(operands, params, rows)  the value, or only the rows `rows` for a row-wise op
                                     (its operands are then those rows of a row-wise input)
    feeds(i, j, shapes, params)      (operand, a, b) for each operand cell that cell (i, j) reads
    exact(operands, params)          exact values and notes, or None when the op leaves the
                                     rationals (e^x)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

Params = dict[str, Any]
Shapes = Sequence[tuple[int, int]]
Feeds = Iterator[tuple[int, int, int]]

# ---- the math, as on the board --------------------------------------------------------------


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return x @ w if b is None else x @ w + b


def row_max(s: np.ndarray) -> np.ndarray:
    """The maximum of each row, 0 for a row whose every entry is −∞ (all keys masked)."""
    # [n, m] -> [n]
    top = np.max(s, axis=1, initial=-np.inf)
    top[np.isneginf(top)] = 0.0
    return top


def shifted_exp(s: np.ndarray, top: np.ndarray) -> np.ndarray:
    # [n, m] - [n, 1] -> [n, m]: each ≤ 1, so e^s cannot overflow; e^(−∞) = 0
    return np.exp(s - top[:, None])


def normalise(e: np.ndarray, row_sum: np.ndarray) -> np.ndarray:
    # [n, m] / [n, 1] -> [n, m]; a row that sums to 0 (every key masked) stays 0
    if row_sum.all():
        return e / row_sum[:, None]
    return np.divide(e, row_sum[:, None], out=np.zeros_like(e), where=row_sum[:, None] != 0)


def softmax_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stable softmax over each row, with its parts: (row max, e^(s − max), row sum, weights).

    A row whose every entry is −∞ (all keys masked) gets max 0, exponentials 0, sum 0 and
    weights 0 (what PyTorch's SDPA returns) instead of 0/0 = NaN."""
    top = row_max(s)
    e = shifted_exp(s, top)
    total = e.sum(axis=1)
    return top, e, total, normalise(e, total)


def apply_mask(s: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    # [n, m] where allowed, else −∞
    return np.where(allowed, s, -np.inf)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm of each row (Qwen3's q/k norm): x / √(mean(x²) + ε) · w."""
    # [n, d_k] / [n, 1] * [d_k] -> [n, d_k]
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight


def partner(j: int, dims: int, style: str) -> int:
    """The dimension that rotates with dimension j (0-based): j ± dims/2 ("half", as
    rotate_half), or its neighbour j ^ 1 ("pairs", 2i with 2i + 1). Beyond dims: itself."""
    if j >= dims:
        return j
    if style == "pairs":
        return j ^ 1
    half = dims // 2
    return j + half if j < half else j - half


def pair_index(j: int, dims: int, style: str) -> int:
    """Which frequency (0-based) dimension j rotates with."""
    return j // 2 if style == "pairs" else j % (dims // 2)


def rotate(x: np.ndarray, angles: np.ndarray, style: str, dims: int, factor: float) -> np.ndarray:
    """RoPE: each pair (a, b) of the first `dims` dimensions turned by its angle θ,
    a' = a·cos θ − b·sin θ, b' = b·cos θ + a·sin θ (times the attention factor); the other
    dimensions pass through."""
    # [n, d_k], [n, dims/2] -> [n, d_k]
    cos, sin = factor * np.cos(angles), factor * np.sin(angles)
    out = x.copy()
    if style == "half":
        first, second = slice(0, dims // 2), slice(dims // 2, dims)
    else:
        first, second = slice(0, dims, 2), slice(1, dims, 2)
    a, b = x[:, first], x[:, second]
    out[:, first] = a * cos - b * sin
    out[:, second] = b * cos + a * sin
    return out


def softcap(s: np.ndarray, cap: float) -> np.ndarray:
    # [n, m] -> [n, m], each within (−c, c); −∞ stays −∞
    return cap * np.tanh(s / cap)


# ---- the operations ----------------------------------------------------------------------------


def _rows(matrix: np.ndarray | None, rows: np.ndarray | None) -> Any:
    return matrix if matrix is None or rows is None else matrix[rows]


def _same_cell(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j


def _allowed_cell(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # a masked cell is −∞ whatever its score was
    if params["allowed"][i, j]:
        yield 0, i, j


def _whole_row(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # the row max and the row sum read every cell of the row
    yield from ((0, i, t) for t in range(shapes[0][1]))


def _row_times_column(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of A times column j of B
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _nothing(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ()


def _exact_input(ops: Sequence[Any], params: Params) -> Any:
    return ops[0], ()


def _exact_columns(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc import exact

    return exact.columns(ops[0], params["cols"]), ()


def _exact_matmul(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc import exact

    return exact.matmul(ops[0], ops[1], params.get("bias_exact")), ()


def _exact_transpose(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc import exact

    return exact.transpose(ops[0]), ()


def _exact_scale(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc import exact

    return exact.scaled(ops[0], params)


def _exact_mask(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc import exact

    return exact.masked(ops[0], params["allowed"]), ()


def _exact_add(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc import exact

    return exact.add(ops[0], ops[1]), ()


@dataclass(frozen=True)
class Op:
    """One kind of stage: how its value is computed, exactly and in floats, and what it reads.

    `rowwise`: row i of the value depends only on row i of the first operand (and on whole
    other operands), so a table that shows twelve rows computes twelve rows.
    `overflow`: whether finite operands can give a non-finite value (the engine checks those).
    `product`: the stage is a matrix product shown as A·B = C with each cell's sum of products.
    `exact_stops`: an op that leaves the rationals: the note that says why exactness ends.
    `details`: what the arithmetic shows beside each row, from the operands (the maximum the
    scores were shifted by, the sum the exponentials are divided by).
    """

    name: str
    compute: Callable[[Sequence[np.ndarray], Params, np.ndarray | None], np.ndarray]
    feeds: Callable[[int, int, Shapes, Params], Feeds] = _nothing
    exact: Callable[[Sequence[Any], Params], Any] | None = None
    rowwise: bool = False
    overflow: Callable[[Params], bool] = lambda params: True
    product: bool = False
    exact_stops: str = ""  # the catalog key of the note that says why exactness ends here
    details: Callable[[Sequence[np.ndarray]], dict[str, np.ndarray]] | None = None
    given: bool = False  # the numbers are the problem's own: nothing to work out or to ask
    heat: bool = False  # a table of weights, shaded by size where colour is on
    in_words: bool = False  # shown as sentences (one per row) instead of a table


def _input(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return _rows(ops[0], rows)


def _columns(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d] -> [n, d_k]: one head's slice of columns
    return _rows(ops[0], rows)[:, params["cols"]]


def _project(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return project(_rows(ops[0], rows), ops[1], params.get("bias"))


def _transpose(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [m, d_k] -> [d_k, m]: the inner dimensions of Q·Kᵀ must meet
    return ops[0].T if rows is None else ops[0].T[rows]


def _scale(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] * scalar -> [n, m]
    return ops[0] * params["scale"]


def _mask(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] where allowed, else −∞
    return apply_mask(ops[0], _rows(params["allowed"], rows))


def _exp(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # e^(s − row max): [n, m]
    return shifted_exp(ops[0], row_max(ops[0]))


def _softmax(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] / [n, 1]: each exponential over its row's sum
    return normalise(ops[0], ops[0].sum(axis=1))


def _concat(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # H × [n, d_v] -> [n, H·d_v]
    return np.hstack([_rows(o, rows) for o in ops])


def _concat_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    d_v = shapes[0][1]
    yield j // d_v, i, j % d_v


def _table(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return _rows(params["table"], rows)


def _add(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] + [n, m] -> [n, m] (the first operand already cut to `rows`)
    return ops[0] + _rows(ops[1], rows)


def _two_cells(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j


def _norm(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d_k] -> [n, d_k]
    return rms_norm(ops[0], params["weight"], params["eps"])


def _rope(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d_k] -> [n, d_k], row i turned by the angles of position i
    angles = _rows(params["angles"], rows)
    return rotate(ops[0], angles, params["style"], params["dims"], params["factor"])


def _rope_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    other = partner(j, params["dims"], params["style"])
    if other != j:
        yield 0, i, other


def _alibi(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # −slope · |pos_i − pos_j|: [n, 1] − [1, m] -> [n, m]
    positions = _rows(params["positions"], rows)
    distance = np.abs(positions[:, None] - params["key_positions"][None, :])
    return -params["slope"] * distance.astype(np.float64)


def _exact_alibi(ops: Sequence[Any], params: Params) -> Any:
    slope = params.get("slope_exact")
    if slope is None:
        return None, ()
    distance = np.abs(params["positions"][:, None] - params["key_positions"][None, :])
    return tuple(tuple(-slope * int(d) for d in row) for row in distance.tolist()), ()


def _exact_table(ops: Sequence[Any], params: Params) -> Any:
    return params.get("table_exact"), ()


def _cap(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return softcap(ops[0], params["cap"])


def _scale_overflows(params: Params) -> bool:
    return bool(abs(params["scale"]) > 1)


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("input", _input, _same_cell, _exact_input, given=True),
        Op("slice", _columns, _nothing, _exact_columns, given=True),
        Op("project", _project, _row_times_column, _exact_matmul, product=True),
        Op("matmul", _project, _row_times_column, _exact_matmul, product=True),
        Op(
            "transpose",
            _transpose,
            lambda i, j, s, p: iter([(0, j, i)]),
            _exact_transpose,
            overflow=lambda params: False,
        ),
        Op("scale", _scale, _same_cell, _exact_scale, rowwise=True, overflow=_scale_overflows),
        Op("mask", _mask, _allowed_cell, _exact_mask, rowwise=True, overflow=lambda p: False),
        Op(
            "exp",
            _exp,
            _whole_row,
            rowwise=True,
            overflow=lambda p: False,
            exact_stops="note.exact_stops",
            details=lambda ops: {"row_max": row_max(ops[0])},
        ),
        Op(
            "softmax",
            _softmax,
            _whole_row,
            rowwise=True,
            overflow=lambda p: False,
            details=lambda ops: {"row_sum": ops[0].sum(axis=1)},
            heat=True,
        ),
        Op("concat", _concat, _concat_feeds),
        Op("copy", _input, _same_cell, _exact_input),
        Op("split", _table, overflow=lambda params: False, given=True, in_words=True),
        Op("add", _add, _two_cells, _exact_add, rowwise=True),
        Op("table", _table, _nothing, _exact_table, given=True),
        Op("rmsnorm", _norm, _whole_row, exact_stops="note.exact_stops_root", rowwise=True),
        Op("rope", _rope, _rope_feeds, exact_stops="note.exact_stops_rope", rowwise=True),
        Op("alibi", _alibi, _nothing, _exact_alibi, rowwise=True),
        Op(
            "softcap",
            _cap,
            _same_cell,
            rowwise=True,
            overflow=lambda p: False,
            exact_stops="note.exact_stops_tanh",
        ),
    )
}
