"""Decoding with a KV cache: a step's new tokens projected alone (`step_project`: the template's
projection over the rows the step takes), each new query against every cached key (`qk`), and
rows stacked under others (`stack`: the new keys and values under the cache, every step's
output rows back into the whole output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Back, Feeds, Literals, Op, Params, Part, Shapes, rows_of
from qkvcalc.ops.projection import project
from qkvcalc.ops.rounding import Out, Rounding, product


def _take(matrix: np.ndarray, params: Params) -> np.ndarray:
    # [n, d] -> [t, d]: the rows of this decode step's tokens
    return matrix[params["take"]]


def _step_project(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [t, d_model] @ [d_model, d_k] + [d_k] -> [t, d_k]: the new tokens' rows only
    return rows_of(project(_take(ops[0], params), ops[1], params.get("bias")), rows)


def _step_project_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    row = int(params["take"][i])
    yield from ((0, row, t) for t in range(shapes[0][1]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _exact_step_project(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    taken = [ops[0][int(r)] for r in params["take"]]
    return exact.matmul(taken, ops[1], params.get("bias_exact")), ()


def _qk(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [t, d_k] @ [m_t, d_k]ᵀ -> [t, m_t]: each query against every cached key (a row-wise
    # op: for `rows`, the first operand is already those rows)
    return project(ops[0], ops[1].T, None)


def _qk_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, j, t) for t in range(shapes[1][1]))


def _exact_qk(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.matmul(ops[0], exact.transpose(ops[1])), ()  # type: ignore[arg-type]


def _stack(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # the steps' rows one under another: [t_0 + 1 + 1 + …, d_v] = [n, d_v]
    return rows_of(np.vstack(list(ops)), rows)


def _stack_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for k, (count, _) in enumerate(shapes):
        if i < count:
            yield k, i, j
            return
        i -= count


def _exact_stack(ops: Sequence[Any], params: Params) -> Any:
    return tuple(row for o in ops for row in o), ()


def _stack_grads(back: Back, at: Any, g: Any) -> list[Any]:
    """K' = [K ; E] (keys of a feature's own under a head's): each operand's rows of the
    gradient; one only it reads (a head's dK) cut out, one several read (E, before the
    heads, under every head's keys and values) handed back as a share (a Part: the walk adds
    every reader's when it reaches it)."""
    from qkvcalc.plan.specs import Const, Spec, d, span

    def reads(spec: Any, ref: Any) -> bool:
        return spec.id[:5] != "grad_" and any(
            o == ref for o in spec.operands if not isinstance(o, Const)
        )

    out: list[Any] = []
    start, grad = 0, back.by[g].symbol
    for ref in at.operands:
        read = back.by[ref]
        rows = slice(start, start + len(read.rows))
        start = rows.stop
        width = slice(0, len(read.cols))
        if sum(reads(s, ref) for s in back.by.values()) > 1:
            out.append(Part(ref, g, width, grad, rows))
            continue
        into = d(read.symbol)
        out.append(
            Spec(f"grad_{read.id}", at.head, "cut", (g,),
                 f"{into} = {grad}[{span(rows.start, rows.stop - rows.start)}, :]", read.rows,
                 read.cols, params={"cols": width, "rows": rows}, symbol=into,
                 letters=read.letters, topic="grad_stack_rows")
        )  # fmt: skip
    return out


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _step_project_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 1×0 + 2×1 = 2: this step's token's row of X times a column of W."""
    terms, total = style.row_of_product(stage, 0, int(stage.params["take"][i]), j, exact)
    return style.line(f"{style.at(i + 1, j + 1)}{terms}", total, float(stage.value[i, j]), result)


def _qk_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """q₃·k₂ = 1×1 + 2×0 = 1: a query row (named by its token) against a cached key row."""
    q, k = stage.operands
    eq = ek = None
    if exact is not None and len(stage.operands_exact) == 2 and None not in stage.operands_exact:
        eq, ek = stage.operands_exact[0][i], stage.operands_exact[1][j]
    row = int(stage.params["take"][i]) + 1  # the query's token, counted in the whole sequence
    terms, total = style.products(q[i], k[j], eq, ek)
    left = f"{style.label('q_{i}·k_{j}', row, j + 1)} = {terms}"
    return style.line(left, total, float(stage.value[i, j]), result)


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_step_project(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # the step's rows of X times W (+ b): accumulated in float32, rounded once, as a projection
    return product(_take(ops[0], params), ops[1], params.get("bias"), r)


def _lowp_qk(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # the step's queries against the cached keys (already the dtype's numbers): Q·Kᵀ as the
    # whole run takes it; under sdpa the kernel's float32 accumulator, never rounded
    return product(ops[0], ops[1].T, None, r.within() if r.policy == "sdpa" else r)


def _lowp_stack(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # rows moved under others (the cache holds them as they were computed): nothing rounded
    return Out(np.vstack(list(ops)), r.kept)


# ---- in PyTorch (--format torch) ----


def _torch_step_project(params: Params, names: Sequence[str], lit: Literals) -> str:
    bias = params.get("bias")
    taken = f"{names[0]}[{lit.index(params['take'])}] @ {names[1]}"
    return taken + ("" if bias is None else f" + {lit.array(bias)}")


OPS: tuple[Op, ...] = (
    Op(
        "step_project",
        _step_project,
        _step_project_feeds,
        _exact_step_project,
        work=_step_project_work,
        lowp=_lowp_step_project,
        torch=_torch_step_project,
    ),
    Op(
        "qk",
        _qk,
        _qk_feeds,
        _exact_qk,
        rowwise=True,
        work=_qk_work,
        lowp=_lowp_qk,
        torch=lambda params, names, lit: f"{names[0]} @ {names[1]}.T",
    ),
    Op(
        "stack",
        _stack,
        _stack_feeds,
        _exact_stack,
        overflow=lambda p: False,
        lowp=_lowp_stack,
        plan_back=_stack_grads,
        torch=lambda params, names, lit: f"torch.vstack([{', '.join(names)}])",
    ),
)
