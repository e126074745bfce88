"""The operations of FlashAttention-2's backward (--tiles B --backward): the stages that are not
already a product of the plain backward (qkvcalc.ops.grads), with which operand cells one
cell reads.

    lse           LSE = m + log ℓ                [n, 1], from the forward's last m and ℓ
                                                 (−∞ for a row whose every key is masked)
    block_p       P_b = e^(S_b − LSE)            the block's weights recomputed; a masked cell 0
    attend_rowdot D = A[i, tᵢ]·(−1 / A[i, tᵢ])   `attend`: the softmax's row term, from the target
                                                 key's weight e^(S[i, tᵢ] − LSE) (0 without one)
    block_nt      dP_b = dO·V_bᵀ                 V's rows of the block
    block_back    the block's columns back through one elementwise forward stage (its op's
                  own backward, as the op `back`, on the block's columns alone)
    grad_q_acc    dQ_b = dQ_{b−1} + dS_b·K_b      K's rows of the block

The block's dV rows (P_bᵀ·dO) and dK rows (dS_bᵀ·Q) are `matmul_tn`, dS_b is `softmax_back`,
D = rowsum(dO ⊙ O) is `rowdot`: the plain backward's own ops.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.grads import _back_work, back_of
from qkvcalc.ops.op import Feeds, Op, Params, Shapes
from qkvcalc.ops.tiles import _block_exp_work  # e^(S_b − LSE): the same line, shifted by LSE


def lse(m: np.ndarray, total: np.ndarray) -> np.ndarray:
    """m + log ℓ per row: [n, 1], [n, 1] -> [n, 1]; −∞ where ℓ = 0 (no key seen)."""
    with np.errstate(divide="ignore"):
        return np.where(total > 0, m + np.log(np.where(total > 0, total, 1.0)), -np.inf)


def _lse(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return lse(ops[0], ops[1])


def _pairwise(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, 0
    yield 1, i, 0


def _block_p(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # e^(S_b − LSE): [n, B] − [n, 1] -> [n, B]; a masked score (−∞) gives exactly 0
    s, top = ops
    live = ~np.isneginf(s)
    safe = np.where(live, s - np.where(np.isneginf(top), 0.0, top), 0.0)
    return np.where(live, np.exp(safe), 0.0)


def _block_p_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, 0


def _attend_rowdot(
    ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None
) -> np.ndarray:
    # D_i = A[i, t]·dA[i, t] with A[i, t] = e^(S[i, t] − L_i), dA[i, t] = −1 / A[i, t]: [n, 1]
    # A weight that underflows to 0 (a huge sink, a far-off score) gives 0·(−∞): not finite,
    # so the stage is refused as an overflow, as the plain backward's dA = −1 / A is
    s, top = ops
    out = np.zeros((s.shape[0], 1))
    for i, t in params["targets"]:
        a = np.exp(s[i, t] - top[i, 0])
        out[i, 0] = a * (np.float64(-1.0) / a)
    return out


def _attend_rowdot_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for row, t in params["targets"]:
        if row == i:
            yield 0, i, t
            yield 1, i, 0


def _block_nt(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dO·V_bᵀ: [n, d_v] @ [B, d_v]ᵀ -> [n, B]
    return ops[0] @ ops[1][params["rows"]].T


def _block_nt_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of dO times row (the block's first key + j) of V
    key = params["rows"].start + j
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, key, t) for t in range(shapes[1][1]))


def _block_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # the operands: the forward stage's own (whole), its value (whole), then ∂L/∂(the block's
    # columns of it). An elementwise op's gradient at a cell reads the incoming one at that cell
    # alone, so the block's columns are the op's backward of a gradient that is 0 elsewhere.
    *inputs, value, grad = ops
    cols = params["cols"]
    whole = np.zeros_like(value)
    whole[:, cols] = grad
    backward = back_of(params).backward
    assert backward is not None, params["op"]
    out = backward(inputs, params["of"], value, whole)[params["index"]]
    assert out is not None
    return out[:, cols] + 0.0  # + 0.0: a masked cell is 0, never −0


def _block_back_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # the incoming gradient's cell, and the forward operand's cell of the same key
    yield len(shapes) - 1, i, j
    yield 0, i, params["cols"].start + j


def _grad_q_acc(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dQ_b = dQ_{b−1} + dS_b·K_b: [n, d_k] + [n, B] @ [B, d_k]
    *before, ds, k = ops
    fresh = ds @ k[params["rows"]]
    return before[0] + fresh if before else fresh


def _grad_q_acc_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    first = 0
    if len(shapes) == 3:
        yield 0, i, j
        first = 1
    start = params["rows"].start
    for t in range(shapes[first][1]):
        yield first, i, t
        yield first + 1, start + t, j


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _lse_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """LSE[1] = 1.2 + log 2.15 = 1.9655; a row whose every key is masked: ℓ = 0, LSE = −∞."""
    top, total = (float(o[i, 0]) for o in stage.operands)
    label = style.label(stage.cell, i + 1, j + 1)
    if total <= 0:
        return f"{label} = {style.neg_inf}"
    log = r"\log" if style.latex else "log"
    kept = style.shown(total)
    shown = style.shown(top) + math.log(kept) if kept > 0 else -math.inf
    left = f"{label} = {style.num(top)} + {log} {style.num(total)}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _attend_rowdot_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """D[1] = e^(0.3 − 2.1)×(−1 / e^(0.3 − 2.1)) = −1: the target key's weight times its
    gradient, the row's one term; 0 for a query without a target."""
    label = style.label(stage.cell, i + 1, j + 1)
    s, top = stage.operands
    targets = [t for row, t in stage.params["targets"] if row == i]
    if not targets:
        return f"{label} = 0"
    weight = style.exp(
        f"{style.num(float(s[i, targets[0]]))} {style.minus} {style.factor(float(top[i, 0]))}"
    )
    grad = f"({style.minus}{style.divided('1', weight)})"
    return f"{label} = {weight}{style.times}{grad} = {result}"


def _block_nt_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dP_2[1,1] = dO₁₁×V₃₁ + dO₁₂×V₃₂: row i of dO against the block's key row of V."""
    g, v = stage.operands
    key = stage.params["rows"].start + j
    pairs = [(float(x), float(y)) for x, y in zip(g[i], v[key], strict=True)]
    return style.sum_of_products(stage, i, j, pairs, result)


def _grad_q_acc_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dQ_2[1,1] = dQ_1[1,1] + (d(Q·Kᵀ)_2 row 1 × K's block rows, column 1) = −0.59 + (…)."""
    *before, ds, k = stage.operands
    start = stage.params["rows"].start
    pairs = [(float(ds[i, t]), float(k[start + t, j])) for t in range(ds.shape[1])]
    if not before:
        return style.sum_of_products(stage, i, j, pairs, result)
    prev = float(before[0][i, j])
    terms, total = style.products([x for x, _ in pairs], [y for _, y in pairs])
    label = style.label(stage.cell, i + 1, j + 1)
    left = f"{label} = {style.num(prev)} + ({terms})"
    return style.line(left, style.shown(prev) + total, float(stage.value[i, j]), result)


class _BlockColumns:
    """A `block_back` stage seen as the plain `back` stage of its block's columns: the forward
    operands and value cut to those columns, so that the op's own backward arithmetic
    (Op.grad_work) reads cell (i, j) of the block."""

    def __init__(self, stage: Any) -> None:
        self._stage = stage
        cols = stage.params["cols"]
        *forward, grad = stage.operands
        self.operands = (*(o[:, cols] for o in forward), grad)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stage, name)


def _block_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """The block's columns back through one elementwise stage: that op's own arithmetic."""
    return _back_work(_BlockColumns(stage), i, j, style, exact, result)


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("lse", _lse, _pairwise, overflow=lambda p: False, work=_lse_work),
        Op("block_p", _block_p, _block_p_feeds, overflow=lambda p: False, work=_block_exp_work),
        Op("attend_rowdot", _attend_rowdot, _attend_rowdot_feeds, work=_attend_rowdot_work),
        Op("block_nt", _block_nt, _block_nt_feeds, work=_block_nt_work),
        Op("block_back", _block_back, _block_back_feeds, work=_block_back_work),
        Op("grad_q_acc", _grad_q_acc, _grad_q_acc_feeds, work=_grad_q_acc_work),
    )
}
