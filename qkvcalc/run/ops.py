"""The operations a stage can be: one table, read by the engine, exact mode, the grader and
the cell arithmetic alike.

Each operation is plain numpy on its operands (picoGPT's style, with the paper's shapes), an
exact version where the result stays rational (Fractions and surds, qkvcalc.run.exact), and the
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

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc import features
from qkvcalc.run import flash_grad_ops, grad_ops
from qkvcalc.run.op import Feeds, Op, Params, Shapes, nothing, same_cell, whole_row

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
    e = s - top[:, None]
    return np.exp(e, out=e)  # in the difference's own memory: one new [n, m], not two


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


# ---- the operations ----------------------------------------------------------------------------


def _rows(matrix: np.ndarray | None, rows: np.ndarray | None) -> Any:
    return matrix if matrix is None or rows is None else matrix[rows]


def _allowed_cell(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # a masked cell is −∞ whatever its score was
    if params["allowed"][i, j]:
        yield 0, i, j


def _row_times_column(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of A times column j of B
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _exact_input(ops: Sequence[Any], params: Params) -> Any:
    return ops[0], ()


def _exact_columns(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.columns(ops[0], params["cols"]), ()


def _exact_columns_of_block(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.columns(ops[0], params["cols"]), ()


def _exact_matmul(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.matmul(ops[0], ops[1], params.get("bias_exact")), ()


def _exact_transpose(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.transpose(ops[0]), ()


def _exact_scale(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.scaled(ops[0], params)


def _exact_mask(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.masked(ops[0], params["allowed"]), ()


def _exact_add(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.add(ops[0], ops[1]), ()


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


def _exact_table(ops: Sequence[Any], params: Params) -> Any:
    return params.get("table_exact"), ()


# ---- decoding with a KV cache --------------------------------------------------------------


def _take(matrix: np.ndarray, params: Params) -> np.ndarray:
    # [n, d] -> [t, d]: the rows of this decode step's tokens
    return matrix[params["take"]]


def _step_project(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [t, d_model] @ [d_model, d_k] + [d_k] -> [t, d_k]: the new tokens' rows only
    return _rows(project(_take(ops[0], params), ops[1], params.get("bias")), rows)


def _step_project_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    row = int(params["take"][i])
    yield from ((0, row, t) for t in range(shapes[0][1]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _exact_step_project(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    taken = [ops[0][int(r)] for r in params["take"]]
    return exact.matmul(taken, ops[1], params.get("bias_exact")), ()


def _append(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [t_old, d] stacked over [t_new, d] (the new tokens' X·W + b) -> [t_old + t_new, d]
    *old, x, w = ops
    new = project(_take(x, params), w, params.get("bias"))
    return np.vstack([*old, new])


def _append_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    kept = shapes[0][0] if len(shapes) == 3 else 0
    if i < kept:  # a cached row: read from the cache, never computed again
        yield 0, i, j
        return
    first = 1 if kept else 0
    row = int(params["take"][i - kept])
    yield from ((first, row, t) for t in range(shapes[first][1]))
    yield from ((first + 1, t, j) for t in range(shapes[first + 1][0]))


def _exact_append(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    *old, x, w = ops
    taken = [x[int(r)] for r in params["take"]]
    new = exact.matmul(taken, w, params.get("bias_exact"))
    return (tuple(old[0]) if old else ()) + new, ()


def _qk(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [t, d_k] @ [m_t, d_k]ᵀ -> [t, m_t]: each query against every cached key (a row-wise
    # op: for `rows`, the first operand is already those rows)
    return project(ops[0], ops[1].T, None)


def _qk_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, j, t) for t in range(shapes[1][1]))


def _exact_qk(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.run import rational as exact

    return exact.matmul(ops[0], exact.transpose(ops[1])), ()  # type: ignore[arg-type]


def _stack(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # the steps' rows one under another: [t_0 + 1 + 1 + …, d_v] = [n, d_v]
    return _rows(np.vstack(list(ops)), rows)


def _stack_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for k, (count, _) in enumerate(shapes):
        if i < count:
            yield k, i, j
            return
        i -= count


def _exact_stack(ops: Sequence[Any], params: Params) -> Any:
    return tuple(row for o in ops for row in o), ()


# ---- attention in tiles (FlashAttention's online softmax) -----------------------------------


def _block(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] -> [n, B]: the scores of this block's keys
    return ops[0][:, params["cols"]]


def _block_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, params["cols"].start + j


def _max_keep_inf(s: np.ndarray) -> np.ndarray:
    # [n, B] -> [n, 1]: −∞ when every key of the row is masked (so far)
    return np.max(s, axis=1, initial=-np.inf, keepdims=True)


def _block_max(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return _max_keep_inf(ops[0])


def _exact_max(values: Sequence[Any]) -> Any:
    from fractions import Fraction

    cells = list(values)
    if not all(isinstance(c, Fraction) or c == NEG_INF for c in cells):
        return None
    return max(cells, default=NEG_INF)


NEG_INF = float("-inf")


def _exact_block_max(ops: Sequence[Any], params: Params) -> Any:
    value = tuple((_exact_max(row),) for row in ops[0])
    return (value if all(r[0] is not None for r in value) else None), ()


def _running_max(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # m_b = max(m_{b−1}, the block's max): [n, 1]
    return ops[0].copy() if len(ops) == 1 else np.maximum(ops[0], ops[1])


def _pairwise(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((k, i, 0) for k in range(len(shapes)))


def _exact_running_max(ops: Sequence[Any], params: Params) -> Any:
    value = tuple((_exact_max([row[0] for row in rows]),) for rows in zip(*ops, strict=True))
    return (value if all(r[0] is not None for r in value) else None), ()


def correction(m_old: np.ndarray, m_new: np.ndarray) -> np.ndarray:
    """e^(m_old − m_new): what the earlier sum and output are multiplied by when the running
    maximum grows (1 when it did not; 0 before the first key, m_old = −∞)."""
    # [n, 1], each in [0, 1]; −∞ − (−∞) (no key seen yet) counts as "did not grow"
    same = m_old == m_new
    return np.where(same, 1.0, np.exp(np.where(same, 0.0, m_old - m_new)))


def _correction(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    if len(ops) == 1:  # the first block: before it m = −∞, so nothing to rescale
        return np.zeros_like(ops[0])
    return correction(ops[0], ops[1])


def _finite(m: np.ndarray) -> np.ndarray:
    # a running max of −∞ (every key masked so far) shifts by 0: e^(−∞ − 0) = 0
    return np.where(np.isneginf(m), 0.0, m)


def _block_exp(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # e^(s − m_b): [n, B] − [n, 1] -> [n, B], each ≤ 1
    return np.exp(ops[0] - _finite(_rows(ops[1], rows)))


def _block_exp_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, 0


def _running_sum(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # ℓ_b = ℓ_{b−1}·e^(m_{b−1} − m_b) + Σ e^(s − m_b): [n, 1]
    if len(ops) == 1:
        return ops[0].sum(axis=1, keepdims=True)
    total, fix, e = ops
    return total * fix + e.sum(axis=1, keepdims=True)


def _running_sum_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    if len(shapes) == 3:
        yield 0, i, 0
        yield 1, i, 0
    last = len(shapes) - 1
    yield from ((last, i, t) for t in range(shapes[last][1]))


def _acc(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # acc_b = acc_{b−1}·e^(m_{b−1} − m_b) + E_b·V_b: [n, d_v] (not yet divided by ℓ)
    *before, e, v = ops
    fresh = e @ v[params["rows"]]
    if not before:
        return fresh
    acc, fix = before
    return acc * fix + fresh


def _acc_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    first = 0
    if len(shapes) == 4:
        yield 0, i, j
        yield 1, i, 0
        first = 2
    yield from ((first, i, t) for t in range(shapes[first][1]))
    rows = params["rows"]
    yield from ((first + 1, r, j) for r in range(rows.start, rows.stop))


def _divide(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # acc / ℓ: [n, d_v] / [n, 1]; a row with every key masked (ℓ = 0) stays 0
    return normalise(ops[0], ops[1][:, 0])


def _divide_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, 0


# ---- the backward of each operation: ∂L/∂operands from ∂L/∂value (g) --------------------------


def _product_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = A·B (+ b): ∂A = g·Bᵀ, ∂B = Aᵀ·g (the bias's ∂b = the column sums of g)
    a, b = ops
    return g @ b.T, a.T @ g


def _softmax_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = e / Σe per row: ∂e_k = (g_k − Σ_j g_j·out_j) / Σe (a row of zeros: no gradient)
    total = ops[0].sum(axis=1, keepdims=True)
    rowdot = (g * out).sum(axis=1, keepdims=True)
    return (np.divide(g - rowdot, total, out=np.zeros_like(g), where=total != 0),)


def _exp_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = e^(s − max s): ∂s_k = g_k·out_k, less Σ_j g_j·out_j at the row's maximum (the shift
    # moves with it); a masked cell (out 0) gets none
    grad = g * out
    top = np.argmax(ops[0], axis=1)
    rows = np.arange(out.shape[0])
    live = np.isfinite(ops[0][rows, top])
    grad[rows[live], top[live]] -= grad[live].sum(axis=1)
    return (grad,)


def _concat_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # the heads side by side: each gets its own columns back
    edges = np.cumsum([o.shape[1] for o in ops])[:-1]
    return tuple(np.split(g, edges, axis=1))


def _scaled_back(into: str, out: str, x: str, params: Params) -> str:
    # the scaling's gradient: the incoming one times the same factor
    if params.get("scale_text"):
        return f"{out} / {params['scale_text']}"
    return f"{out} × {params['scale']:g}"


def _scale_overflows(params: Params) -> bool:
    return bool(abs(params["scale"]) > 1)


_CORE: dict[str, Op] = {
    op.name: op
    for op in (
        Op("input", _input, same_cell, _exact_input, given=True),
        Op("slice", _columns, nothing, _exact_columns, given=True),
        Op(
            "project",
            _project,
            _row_times_column,
            _exact_matmul,
            product=True,
            backward=_product_back,
        ),
        Op(
            "matmul",
            _project,
            _row_times_column,
            _exact_matmul,
            product=True,
            backward=_product_back,
        ),
        Op(
            "transpose",
            _transpose,
            lambda i, j, s, p: iter([(0, j, i)]),
            _exact_transpose,
            overflow=lambda params: False,
            backward=lambda ops, params, out, g: (g.T,),
        ),
        Op(
            "scale",
            _scale,
            same_cell,
            _exact_scale,
            rowwise=True,
            overflow=_scale_overflows,
            backward=lambda ops, params, out, g: (g * params["scale"],),
            grad_formula=_scaled_back,
        ),
        Op(
            "mask",
            _mask,
            _allowed_cell,
            _exact_mask,
            rowwise=True,
            overflow=lambda p: False,
            backward=lambda ops, params, out, g: (np.where(params["allowed"], g, 0.0),),
            # [M ≠ −∞]: 1 where the key is allowed, 0 where it is masked (an Iverson bracket)
            grad_formula=lambda into, out, x, params: f"{out} ⊙ [M ≠ −∞]",
        ),
        Op(
            "exp",
            _exp,
            whole_row,
            rowwise=True,
            overflow=lambda p: False,
            exact_stops="note.exact_stops",
            details=lambda ops, params: {"row_max": row_max(ops[0])},
            backward=_exp_back,
        ),
        Op(
            "softmax",
            _softmax,
            whole_row,
            rowwise=True,
            overflow=lambda p: False,
            details=lambda ops, params: {"row_sum": ops[0].sum(axis=1)},
            divisor=lambda ops: ops[0].sum(axis=1),
            heat=True,
            backward=_softmax_back,
        ),
        Op("concat", _concat, _concat_feeds, backward=_concat_back),
        Op("copy", _input, same_cell, _exact_input, backward=lambda ops, params, out, g: (g,)),
        Op("split", _table, overflow=lambda params: False, given=True, in_words=True),
        Op(
            "add",
            _add,
            _two_cells,
            _exact_add,
            rowwise=True,
            backward=lambda o, p, v, g: (g, g),
            grad_formula=lambda into, out, x, params: out,  # what is added is a constant
        ),
        Op("table", _table, nothing, _exact_table, given=True),
        # decoding with a KV cache
        Op("step_project", _step_project, _step_project_feeds, _exact_step_project),
        Op("append", _append, _append_feeds, _exact_append),
        Op("qk", _qk, _qk_feeds, _exact_qk, rowwise=True),
        Op("stack", _stack, _stack_feeds, _exact_stack, overflow=lambda p: False),
        # attention in tiles
        Op("block", _block, _block_feeds, _exact_columns_of_block, overflow=lambda p: False),
        Op("block_max", _block_max, whole_row, _exact_block_max, overflow=lambda p: False),
        Op("running_max", _running_max, _pairwise, _exact_running_max, overflow=lambda p: False),
        Op(
            "correction",
            _correction,
            _pairwise,
            overflow=lambda p: False,
            exact_stops="note.exact_stops",
        ),
        Op("block_exp", _block_exp, _block_exp_feeds, rowwise=True, overflow=lambda p: False),
        Op("running_sum", _running_sum, _running_sum_feeds, overflow=lambda p: False),
        Op("acc", _acc, _acc_feeds),
        Op(
            "divide",
            _divide,
            _divide_feeds,
            overflow=lambda p: False,
            divisor=lambda ops: ops[1][:, 0],  # ℓ: 0 where every key is masked
        ),
    )
}

# the core operations, the backward pass's (qkvcalc.run.grad_ops), FlashAttention-2's backward
# in tiles (qkvcalc.run.flash_grad_ops), then each feature's own
OPS: dict[str, Op] = {**_CORE, **grad_ops.OPS, **flash_grad_ops.OPS, **features.ops()}
