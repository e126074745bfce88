"""The operations of the backward pass (--backward): each gradient stage's value, in a few numpy
lines with the paper's shapes, and which cells of its operands one cell reads.

The products are the forward's products turned around (∂(A·B)/∂A = g·Bᵀ, ∂/∂B = Aᵀ·g), so two
of them read an operand transposed: `matmul_tn` is Aᵀ·B (dV = Aᵀ·dO), `matmul_nt` is A·Bᵀ
(dA = dO·Vᵀ). The stages between the scores and the softmax go back through each forward op's
own backward (`Op.backward`, beside its forward): the op `back` runs the backward of the stage
it names, so a feature brings its gradient with its operation. Where the gradient starts (the
loss's) is its own op module, qkvcalc.ops.loss.

    rowdot        rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ                 [n, 1]
    softmax_back  dS = A ⊙ (dA − r)
    weight_grad   dW = Xᵀ·[dQ_1 … dQ_H]          the heads' columns side by side (summed where
                                                 query heads share a key/value head)
    bias_grad     db = Σᵢ dQᵢ                     the column sums
    input_grad    dX = Σ_paths dP·W_Pᵀ            the chain rule's paths summed
    grad_sum      dk_R = Σₕ dKₕ[:, 1–d_R]         a stage read by several: their shares added

--exact: the stages that stay rational have an exact form too (qkvcalc.run.exact attaches it):
with `grad_output` given, dO and its heads' cuts, d(concat) = dO·W_Oᵀ, db_O = Σᵢ dOᵢ and
dA = dO·Vᵀ are fractions; whatever reads the weights A (an exponential's quotient) is not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Asked, Candidate, Feeds, Op, Params, Shapes, turned
from qkvcalc.plan import ids

# ---- the math -------------------------------------------------------------------------------


def softmax_backward(a: np.ndarray, da: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The softmax's backward from its weights: (r, dS) with rᵢ = Σⱼ Aᵢⱼ·dAᵢⱼ and
    dS = A ⊙ (dA − r). A masked cell (A = 0) gets exactly 0."""
    # [n, m], [n, m] -> [n, 1], [n, m]
    r = (a * da).sum(axis=1, keepdims=True)
    return r, a * (da - r)


def _cut(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, H·d_v] -> [n, d_v]: one head's columns of a gradient (or some of its rows)
    return ops[0][params.get("rows", slice(None)), params["cols"]]


def _cut_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, (params.get("rows", slice(None)).start or 0) + i, params["cols"].start + j


def _grad_sum(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # the shares of a stage read by several, added: Σₖ gₖ[rowsₖ, colsₖ] -> [n, width]
    taken = _rows(params, len(ops))
    return np.sum([g[r, c] for g, r, c in zip(ops, taken, params["cols"], strict=True)], axis=0)


def _rows(params: Params, count: int) -> tuple[slice, ...]:
    """Each share's rows (all of them, but for keys stacked under others)."""
    return tuple(params.get("rows") or (slice(None),) * count)


def _grad_sum_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    rows = _rows(params, len(params["cols"]))
    yield from ((k, (rows[k].start or 0) + i, cols.start + j)
                for k, cols in enumerate(params["cols"]))  # fmt: skip


def _exact_grad_sum(ops: Sequence[Any], params: Params) -> Any:
    from fractions import Fraction

    rows = _rows(params, len(ops))
    parts = [[row[c] for row in g[r]] for g, r, c in zip(ops, rows, params["cols"], strict=True)]
    out = []
    for i in range(len(parts[0])):
        row: list[Fraction | None] = []
        for j in range(len(parts[0][i])):
            cells = [part[i][j] for part in parts]
            whole = all(isinstance(c, Fraction) for c in cells)
            row.append(sum(cells, Fraction(0)) if whole else None)
        out.append(tuple(row))
    return tuple(out), ()


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

    return exact.columns(ops[0][params.get("rows", slice(None))], params["cols"]), ()


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


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _tn_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dV[1,2] = A₁₁×dO₁₂ + A₂₁×dO₂₂ + … : column i of A against column j of B (Aᵀ·B)."""
    a, b = stage.operands
    pairs = [(float(x), float(y)) for x, y in zip(a[:, i], b[:, j], strict=True)]
    exact_pairs = style.exact_pairs(stage, exact, len(pairs), lambda t: (t, i), lambda t: (t, j))
    return style.sum_of_products(stage, i, j, pairs, result, exact_pairs)


def _nt_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dA[1,2] = dO₁₁×V₂₁ + dO₁₂×V₂₂: row i of A against row j of B (A·Bᵀ)."""
    a, b = stage.operands
    pairs = [(float(x), float(y)) for x, y in zip(a[i], b[j], strict=True)]
    exact_pairs = style.exact_pairs(stage, exact, len(pairs), lambda t: (i, t), lambda t: (j, t))
    return style.sum_of_products(stage, i, j, pairs, result, exact_pairs)


def _weight_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dW[2,1] = X₁₂×dQ₁₁ + X₂₂×dQ₂₁ + …: a column of X against a column of the gradient of the
    head (or heads, summed, under GQA) that read this column of W."""
    x, *grads = stage.operands
    params = stage.params
    a, c = (j, i) if params["torch"] else (i, j)
    pairs = [
        (float(x[t, a]), float(g[t, c - cols.start]))
        for g, cols in zip(grads, params["cols"], strict=True)
        if cols.start <= c < cols.stop
        for t in range(x.shape[0])
    ]
    return style.sum_of_products(stage, i, j, pairs, result)


def _rowdot_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """r[2] = 0.8044×11.4354 + 0.1956×4.4133 + … (a masked key's 0 weight left out)."""
    a, da = stage.operands
    pairs = [(float(x), float(y)) for x, y in zip(a[i], da[i], strict=True) if x != 0]
    if not pairs:
        return f"{style.at(i + 1, j + 1)}0"
    return style.sum_of_products(stage, i, j, pairs, result)


def _softmax_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.8044×(11.4354 − 10.0621) = 1.1047; a masked key: 0×(0.5 − 1.2) = 0."""
    a, da, r = (float(m[i, j if k < 2 else 0]) for k, m in enumerate(stage.operands))
    shown = style.shown(a) * (style.shown(da) - style.shown(r))
    inner = f"{style.num(da)} {style.minus} {style.factor(r)}"
    left = f"{style.at(i + 1, j + 1)}{style.num(a)}{style.times}({inner})"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _bias_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """db[2] = 0.78 + (−0.26) + (−0.52) = 0: the column of the gradient summed over the rows."""
    cells = [
        float(v)
        for g, cols in zip(stage.operands, stage.params["cols"], strict=True)
        if cols.start <= j < cols.stop
        for v in g[:, j - cols.start]
    ]
    terms = " + ".join(style.factor(v) for v in cells)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    shown = sum(style.shown(v) for v in cells)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _input_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dX[1,2] = (dQ·W_Qᵀ)[1,2] + (dK·W_Kᵀ)[1,2] + (dV·W_Vᵀ)[1,2] = 0.5 + 1.2 + 3 = 4.7: the
    chain rule's paths, each its own product (summed over the heads), added."""
    parts = [float(m[i, j]) for m in paths(stage.operands, stage.params)]
    grads = stage.params.get("grads") or tuple(f"d{letter}" for letter in stage.names)
    named = " + ".join(
        f"({grad}·W_{letter}ᵀ){style.label('[{i},{j}]', i + 1, j + 1)}"
        for grad, letter in zip(grads, stage.names, strict=True)
    )
    numbers = " + ".join(style.factor(v) for v in parts)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {named} = {numbers}"
    shown = sum(style.shown(v) for v in parts)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _grad_sum_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dk_R[1,2] = 0.5 + (−0.2) = 0.3: each reader's share of the cell, added."""
    rows = _rows(stage.params, len(stage.operands))
    cells = [
        float(g[(r.start or 0) + i, cols.start + j])
        for g, r, cols in zip(stage.operands, rows, stage.params["cols"], strict=True)
    ]
    terms = " + ".join(style.factor(v) for v in cells)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    shown = sum(style.shown(v) for v in cells)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """A stage that goes back through one forward stage: that op's own backward arithmetic."""
    work = back_of(stage.params).grad_work
    return None if work is None else work(stage, i, j, style, exact, result)


# ---- the named mistakes the quiz looks for at its stages ----


def _tn_mistakes(asked: Asked) -> list[Candidate]:
    """dV = Aᵀ·dO; the mistake: A·dO, the weights not turned (it fits only when n = m); and dK
    without the scale (ops.scale)."""
    from qkvcalc.ops.scale import grad_scale_missing

    if asked.stage.id != ids.GRAD_V:
        return grad_scale_missing(asked)
    msg = Msg("mistake.grad_v_not_transposed")
    return [
        ("grad_v_not_transposed", msg, a @ g)
        for a in asked.versions(ids.WEIGHTS)
        for g in asked.versions(ids.GRAD_OUTPUT)
        if a.shape[1] == g.shape[0] and turned(a @ g, a.T @ g)
    ]


def _softmax_back_mistakes(asked: Asked) -> list[Candidate]:
    """dS = A ⊙ (dA − r); the mistake: A ⊙ dA, as if each weight moved alone."""
    msg = Msg("mistake.softmax_back_no_row_term")
    return [
        ("softmax_back_no_row_term", msg, a * da)
        for a in asked.versions(ids.WEIGHTS)
        for da in asked.versions(ids.GRAD_WEIGHTS)
    ]


def _path_forgotten(asked: Asked) -> list[Candidate]:
    """dX = Σ over the paths dP·W_Pᵀ; the mistake: one path left out (from the student's own
    dQ, dK, dV where the sheet gives them, and from the true ones)."""
    stage = asked.stage
    letters = stage.names
    if len(letters) < 2:
        return []
    true = list(stage.operands)
    keys = [ref[0] if ref[1] is None else f"{ref[1]}/{ref[0]}" for ref in stage.reads]
    mine = [asked.own.get(k) for k in keys]
    versions = [true]
    if any(m is not None for m in mine):
        pairs = zip(mine, true, strict=True)
        versions.insert(0, [t if m is None else np.asarray(m, dtype=np.float64) for m, t in pairs])
    x = stage.symbol[1:]  # dX: X; dsource: source
    grads = stage.params.get("grads") or tuple(f"d{letter}" for letter in letters)
    found: list[Candidate] = []
    for ops in versions:
        parts = paths(ops, stage.params)
        total = np.sum(parts, axis=0)
        for grad, letter, part in zip(grads, letters, parts, strict=True):
            msg = Msg("mistake.grad_path_forgotten", path=f"{grad}·W_{letter}ᵀ", x=x)
            found.append(("grad_path_forgotten", msg, total - part))
    return found


OPS: dict[str, Op] = {
    op.name: op
    for op in (
        Op("cut", _cut, _cut_feeds, _exact_cut, overflow=lambda p: False),
        Op("grad_sum", _grad_sum, _grad_sum_feeds, _exact_grad_sum, work=_grad_sum_work),
        Op(
            "matmul_tn",
            _tn,
            _tn_feeds,
            _exact_tn,
            work=_tn_work,
            mistake_ids=("grad_v_not_transposed", "grad_scale_missing"),
            mistakes=_tn_mistakes,
        ),
        Op("matmul_nt", _nt, _nt_feeds, _exact_nt, work=_nt_work),
        Op("rowdot", _rowdot, _row_pairs, work=_rowdot_work),
        Op(
            "softmax_back",
            _softmax_back,
            _softmax_back_feeds,
            work=_softmax_back_work,
            mistake_ids=("softmax_back_no_row_term",),
            mistakes=_softmax_back_mistakes,
        ),
        Op("back", _back, _back_feeds, work=_back_work),
        Op("weight_grad", _weight_grad, _weight_feeds, work=_weight_grad_work),
        Op("bias_grad", _bias_grad, _bias_feeds, _exact_bias_grad, work=_bias_grad_work),
        Op(
            "input_grad",
            _input_grad,
            _input_feeds,
            work=_input_grad_work,
            mistake_ids=("grad_path_forgotten",),
            mistakes=_path_forgotten,
        ),
    )
}
