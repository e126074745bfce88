"""The operations of FlashAttention-2's backward (--tiles B --backward): the stages that are not
already a product of the plain backward (qkvcalc.run.grad_ops), with which operand cells one
cell reads.

    lse           L = m + log ℓ                  [n, 1], from the forward's last m and ℓ
                                                 (−∞ for a row whose every key is masked)
    block_p       P_b = e^(S_b − L)              the block's weights recomputed; a masked cell 0
    attend_rowdot D = A[i, tᵢ]·(−1 / A[i, tᵢ])   `attend`: the softmax's row term, from the target
                                                 key's weight e^(S[i, tᵢ] − L) (0 without one)
    block_nt      dP_b = dO·V_bᵀ                 V's rows of the block
    block_back    the block's columns back through one elementwise forward stage (its op's
                  own backward, as the op `back`, on the block's columns alone)
    grad_q_acc    dQ_b = dQ_{b−1} + dS_b·K_b      K's rows of the block

The block's dV rows (P_bᵀ·dO) and dK rows (dS_bᵀ·Q) are `matmul_tn`, dS_b is `softmax_back`,
D = rowsum(dO ⊙ O) is `rowdot`: the plain backward's own ops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qkvcalc.run.grad_ops import back_of
from qkvcalc.run.op import Feeds, Op, Params, Shapes


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
    # e^(S_b − L): [n, B] − [n, 1] -> [n, B]; a masked score (−∞) gives exactly 0
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


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("lse", _lse, _pairwise, overflow=lambda p: False),
        Op("block_p", _block_p, _block_p_feeds, overflow=lambda p: False),
        Op("attend_rowdot", _attend_rowdot, _attend_rowdot_feeds),
        Op("block_nt", _block_nt, _block_nt_feeds),
        Op("block_back", _block_back, _block_back_feeds),
        Op("grad_q_acc", _grad_q_acc, _grad_q_acc_feeds),
    )
}
