"""Attention in tiles (FlashAttention's online softmax): a block's scores, its maximum, the
running maximum, the correction e^(m_old − m_new), the block's exponentials, the running sum,
the unnormalised output and the final division. No stage holds a whole row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Feeds, Op, Params, Shapes, rows_of, whole_row
from qkvcalc.ops.softmax import normalise


def _block(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] -> [n, B]: the scores of this block's keys
    return ops[0][:, params["cols"]]


def _block_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, params["cols"].start + j


def _exact_columns_of_block(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.columns(ops[0], params["cols"]), ()


def _max_keep_inf(s: np.ndarray) -> np.ndarray:
    # [n, B] -> [n, 1]: −∞ when every key of the row is masked (so far)
    return np.max(s, axis=1, initial=-np.inf, keepdims=True)


def _block_max(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return _max_keep_inf(ops[0])


NEG_INF = float("-inf")


def _exact_max(values: Sequence[Any]) -> Any:
    from fractions import Fraction

    cells = list(values)
    if not all(isinstance(c, Fraction) or c == NEG_INF for c in cells):
        return None
    return max(cells, default=NEG_INF)


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
    return np.exp(ops[0] - _finite(rows_of(ops[1], rows)))


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


OPS: tuple[Op, ...] = (
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
