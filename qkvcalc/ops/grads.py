"""The operations of the backward pass (--backward): each gradient stage's value, in a few numpy
lines with the paper's shapes, and which cells of its operands one cell reads.

The products are the forward's products turned around (∂(A·B)/∂A = g·Bᵀ, ∂/∂B = Aᵀ·g), so two
of them read an operand transposed: `matmul_tn` is Aᵀ·B (dV = Aᵀ·dO), `matmul_nt` is A·Bᵀ
(dA = dO·Vᵀ). The stages between the scores and the softmax go back through each forward op's
own backward (`Op.backward`, beside its forward): the op `back` runs the backward of the stage
it names, so a feature brings its gradient with its operation.

    loss_grad     dO = O − T                    (L = ½·Σ(O − T)²)
    attend_grad   dA[i, tᵢ] = −1 / A[i, tᵢ]      (L = −Σᵢ log A[i, tᵢ]), 0 elsewhere
    rowdot        rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ                 [n, 1]
    softmax_back  dS = A ⊙ (dA − r)
    weight_grad   dW = Xᵀ·[dQ_1 … dQ_H]          the heads' columns side by side (summed where
                                                 query heads share a key/value head)
    bias_grad     db = Σᵢ dQᵢ                     the column sums
    input_grad    dX = Σ_paths dP·W_Pᵀ            the chain rule's paths summed

--exact: the stages that stay rational have an exact form too (qkvcalc.run.exact attaches it):
with `grad_output` given, dO and its heads' cuts, d(concat) = dO·W_Oᵀ, db_O = Σᵢ dOᵢ and
dA = dO·Vᵀ are fractions; whatever reads the weights A (an exponential's quotient) is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Feeds, Op, Params, Shapes, same_cell

# ---- the math -------------------------------------------------------------------------------


def softmax_backward(a: np.ndarray, da: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The softmax's backward from its weights: (r, dS) with rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ and
    dS = A ⊙ (dA − r). A masked cell (A = 0) gets exactly 0."""
    # [n, m], [n, m] -> [n, 1], [n, m]
    r = (a * da).sum(axis=1, keepdims=True)
    return r, a * (da - r)


def _cut(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, H·d_v] -> [n, d_v]: one head's columns of a gradient
    return ops[0][:, params["cols"]]


def _cut_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, params["cols"].start + j


def _tn(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, a]ᵀ @ [n, b] -> [a, b]
    return ops[0].T @ ops[1]


def _tn_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # column i of A times column j of B
    yield from ((0, t, i) for t in range(shapes[0][0]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _nt(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d] @ [m, d]ᵀ -> [n, m]
    return ops[0] @ ops[1].T


def _nt_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of A times row j of B
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, j, t) for t in range(shapes[1][1]))


def _exact_tn(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.matmul(exact.transpose(ops[0]), ops[1]), ()  # type: ignore[arg-type]


def _exact_nt(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.matmul(ops[0], exact.transpose(ops[1])), ()  # type: ignore[arg-type]


def _exact_cut(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.columns(ops[0], params["cols"]), ()


def _exact_bias_grad(ops: Sequence[Any], params: Params) -> Any:
    # the column sums of each head's gradient, in its columns: [1, width]
    from fractions import Fraction

    out: list[Fraction | None] = [Fraction(0)] * params["width"]
    for g, cols in zip(ops, params["cols"], strict=True):
        for j, c in enumerate(range(*cols.indices(params["width"]))):
            column = [row[j] for row in g]
            total = out[c]
            for cell in column:
                total = None if total is None or not isinstance(cell, Fraction) else total + cell
            out[c] = total
    return (tuple(out),), ()


def _loss_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dO = O − T: [n, d_out]
    return ops[0] - params["target"]


def _attend_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # −log A[i, tᵢ] differentiated: −1/A[i, tᵢ] at the target key of each query, 0 elsewhere
    a = ops[0]
    out = np.zeros_like(a)
    for i, t in params["targets"]:
        out[i, t] = -1.0 / a[i, t]
    return out


def _attend_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    if (i, j) in params["targets"]:
        yield 0, i, j


def _rowdot(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return softmax_backward(ops[0], ops[1])[0]


def _row_pairs(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for t in range(shapes[0][1]):
        yield 0, i, t
        yield 1, i, t


def _softmax_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dS = A ⊙ (dA − r): [n, m], [n, m], [n, 1]
    a, da, r = ops
    return a * (da - r) + 0.0  # + 0.0: a masked cell (A = 0) is 0, never −0


def _softmax_back_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j
    yield 2, i, 0


def back_of(params: Params) -> Op:
    """The forward op whose backward a `back` stage runs (the plan puts it in its params)."""
    op: Op = params["forward"]
    return op


def _back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # the operands: the forward stage's own, its value, then ∂L/∂(its value)
    *inputs, value, grad = ops
    backward = back_of(params).backward
    assert backward is not None, params["op"]
    out = backward(inputs, params["of"], value, grad)[params["index"]]
    assert out is not None
    return out


def _back_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # the incoming gradient's cells where the forward op's cell (i, j) went (a rotation: the
    # partner dimension too; a norm: the whole row), and, when its backward reads them
    # (Op.grad_reads: a norm, a cap), the forward operand's cells as well
    grad = len(shapes) - 1
    forward = back_of(params)
    first = [(a, b) for k, a, b in forward.feeds(i, j, shapes[:-2], params["of"]) if k == 0]
    cells = list(dict.fromkeys([(i, j), *first]))
    yield from ((grad, a, b) for a, b in cells)
    if forward.grad_reads:
        yield from ((0, a, b) for a, b in cells)


def _weight_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dW[:, cols_h] += Xᵀ·dP_h for each head's gradient dP_h: [d_in, width]
    x, *grads = ops
    out = np.zeros((x.shape[1], params["width"]))
    for g, cols in zip(grads, params["cols"], strict=True):
        out[:, cols] += x.T @ g
    return out.T if params["torch"] else out


def _weight_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    if params["torch"]:
        i, j = j, i
    for k, cols in enumerate(params["cols"], start=1):
        if cols.start <= j < cols.stop:
            for t in range(shapes[0][0]):
                yield 0, t, i
                yield k, t, j - cols.start


def _bias_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # db[cols_h] += the column sums of dP_h: [1, width]
    out = np.zeros((1, params["width"]))
    for g, cols in zip(ops, params["cols"], strict=True):
        out[0, cols] += g.sum(axis=0)
    return out


def _bias_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for k, cols in enumerate(params["cols"]):
        if cols.start <= j < cols.stop:
            yield from ((k, t, j - cols.start) for t in range(shapes[k][0]))


def paths(ops: Sequence[np.ndarray], params: Params) -> list[np.ndarray]:
    """dX's paths, each summed over the heads: dQ·W_Qᵀ, dK·W_Kᵀ, dV·W_Vᵀ (those it has)."""
    out = []
    k = 0
    for weight, cols in params["paths"]:
        total = np.zeros((ops[0].shape[0], weight.shape[0]))
        for c in cols:
            total += ops[k] @ weight[:, c].T
            k += 1
        out.append(total)
    return out


def _input_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ: [n, d_model]
    return np.sum(paths(ops, params), axis=0)


def _input_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for k, (_rows, cols) in enumerate(shapes):
        yield from ((k, i, t) for t in range(cols))


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("cut", _cut, _cut_feeds, _exact_cut, overflow=lambda p: False),
        Op("matmul_tn", _tn, _tn_feeds, _exact_tn),
        Op("matmul_nt", _nt, _nt_feeds, _exact_nt),
        Op("loss_grad", _loss_grad, same_cell),
        Op("attend_grad", _attend_grad, _attend_feeds),
        Op("rowdot", _rowdot, _row_pairs),
        Op("softmax_back", _softmax_back, _softmax_back_feeds),
        Op("back", _back, _back_feeds),
        Op("weight_grad", _weight_grad, _weight_feeds),
        Op("bias_grad", _bias_grad, _bias_feeds, _exact_bias_grad),
        Op("input_grad", _input_grad, _input_feeds),
    )
}
