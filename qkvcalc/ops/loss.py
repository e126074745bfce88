"""Where the backward pass starts: the loss's gradient, an op like the rest. The plan
(qkvcalc.plan.backward) asks this module for the first gradient stage and hands it the
sentences that read the run (which rows the target asks for, what the loss is here).

    loss_grad     dO = O − T                    (L = ½·Σ(O − T)², `target`)
    table         dO given                      (`grad_output`: a gradient and no loss)
    attend_grad   dA[i, tᵢ] = −1 / A[i, tᵢ]     (L = −Σᵢ log A[i, tᵢ], `attend`), 0 elsewhere

With `attend` the loss reads each head's weights alone: V (and what comes after A) does not
reach it, and every target key must be one its query may see (`check_targets`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Feeds, Op, Params, Shapes, same_cell
from qkvcalc.plan.specs import Spec

# ---- the math -------------------------------------------------------------------------------


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


# ---- the cell arithmetic ----------------------------------------------------------------------


def _loss_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 2.6089 − 1 = 1.6089 (O − T)"""
    o = float(stage.operands[0][i, j])
    t = float(stage.params["target"][i, j])
    left = f"{style.at(i + 1, j + 1)}{style.num(o)} {style.minus} {style.factor(t)}"
    return style.line(left, style.shown(o) - style.shown(t), float(stage.value[i, j]), result)


def _attend_grad_work(
    stage: Any, i: int, j: int, style: Any, exact: Any, result: str
) -> str | None:
    """[3,2]: −1 / 0.2 = −5, at a query's target key (every other cell is 0)."""
    if (i, j) not in stage.params["targets"]:
        return None
    a = float(stage.operands[0][i, j])
    cell = f"{style.minus}{style.divided('1', style.num(a))}"
    shown = -1 / style.shown(a) if style.shown(a) else math.nan
    return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, float(stage.value[i, j]), result)


# ---- the stages -------------------------------------------------------------------------------


def start(p: Any, final: Spec, notes: tuple[Msg, ...] = (), remarks: Any = None) -> Spec:
    """The first gradient stage, dO, of the loss on the output `final`: O − T (`target`, with
    the plan's `notes` and `remarks` on it), or the gradient given (`grad_output`)."""
    assert p.loss is not None and p.loss.matrix is not None
    if p.loss.kind == "target":
        t = p.loss.matrix
        return Spec(
            "grad_output",
            None,
            "loss_grad",
            (final.ref,),
            "dO = O − T",
            final.rows,
            final.cols,
            params={"target": t.values},
            topic="grad_output.target",
            notes=notes,
            remarks=remarks,
            symbol="dO",
            letters=final.letters,
        )
    return Spec(
        "grad_output",
        None,
        "table",
        (),
        "dO (given)",
        final.rows,
        final.cols,
        params={"table": p.loss.matrix.values, "table_exact": p.loss.matrix.exact},
        topic="grad_output.given",
        symbol="dO",
        letters=final.letters,
    )


def no_v(p: Any) -> Msg:
    """What `attend` leaves without a gradient: V and, of W_V, b_V, W_O, b_O, those the problem
    has (dk64 gives V, with no W_V to name)."""
    given = (("W_V", p.wv), ("b_V", p.bv), ("W_O", p.wo), ("b_O", p.bo))
    names = ["V", *(name for name, m in given if m is not None)]
    return Msg("note.grad_attend_no_v", names=", ".join(names))


def attend(
    p: Any, h: int | None, weights: Spec, notes: tuple[Msg, ...] = (), remarks: Any = None
) -> Spec:
    """`attend`: dA of head h from the targets alone (L = −Σᵢ log Aᵢ,ₜᵢ); V does not reach
    the loss (`no_v`'s note first, then the plan's `notes`)."""
    assert p.loss is not None
    return Spec(
        "grad_weights",
        h,
        "attend_grad",
        (weights.ref,),
        "dA[i, tᵢ] = −1 / A[i, tᵢ]",
        weights.rows,
        weights.cols,
        params={"targets": frozenset(p.loss.targets())},
        topic="grad_weights.attend",
        notes=(no_v(p), *notes),
        symbol="dA",
        letters=weights.letters,
        remarks=remarks,
        hint=("hint.grad_attend", {}),
    )


def check_targets(p: Any, allowed: np.ndarray | None) -> None:
    """`attend`: every target key must be one its query may see (`allowed`: the keys the
    masks allow, None: all)."""
    assert p.loss is not None
    for i, t in p.loss.targets():
        if allowed is not None and not allowed[i, t]:
            raise QkvcalcError("loss.attend_masked", row=i + 1, key=t + 1)


OPS = (
    Op("loss_grad", _loss_grad, same_cell, work=_loss_grad_work),
    Op("attend_grad", _attend_grad, _attend_feeds, work=_attend_grad_work),
)
