"""The heads' outputs side by side: head 1's columns first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops import features
from qkvcalc.ops.op import Back, Feeds, Op, Params, Shapes, rows_of
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Ref, Spec, d, span


def _concat(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # H × [n, d_v] -> [n, H·d_v]
    return np.hstack([rows_of(o, rows) for o in ops])


def _concat_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    d_v = shapes[0][1]
    yield j // d_v, i, j % d_v


def _concat_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # the heads side by side: each gets its own columns back
    edges = np.cumsum([o.shape[1] for o in ops])[:-1]
    return tuple(np.split(g, edges, axis=1))


def _concat_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """Each head's columns of d(concat), head 1's first: the gradient of what the concat read
    of it (its output, or the last stage a feature put after it), then back from there to the
    head's own output through the stages a feature put after it, each by its own op (the
    walk, from what the concat read to the head's output), head by head."""
    p, whole = back.problem, back.by[g].symbol
    specs: list[Spec] = []
    start = 0
    for h, read in enumerate(at.operands, start=1):
        out = back.by[read]
        width = len(out.cols)  # d_v, unless a feature joins the heads otherwise
        symbol = "dO" if out.id == ids.OUTPUT else d(out.symbol)
        cut = Spec(
            f"grad_{out.id}",
            h,
            "cut",
            (g,),
            f"{symbol}_{h} = {whole}[:, {span(start, width)}]",
            out.rows,
            out.cols,
            params={"cols": slice(start, start + width)},
            topic=features.join_words(p).back_topic,
            symbol=symbol,
            letters=out.letters,
        )
        specs.append(cut)
        start += width
        # back to the head's own output (pairs a feature joins are walked after the concat)
        if out.id != ids.OUTPUT and not features.joins(p):
            walked, _ = back.walk([out], {read: cut.ref}, specs, {(ids.OUTPUT, h)})
            specs += walked
    return specs


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_concat(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(np.hstack(list(ops)))  # the heads' numbers side by side: nothing to round


def _interleaved(outputs: list[np.ndarray]) -> np.ndarray:
    # a person's code (qkvcalc check): the heads' outputs interleaved column by column (column
    # j·H + h) instead of laid side by side
    return np.stack(outputs, axis=2).reshape(outputs[0].shape[0], -1)


OPS: tuple[Op, ...] = (
    Op(
        "concat",
        _concat,
        _concat_feeds,
        backward=_concat_back,
        lowp=_lowp_concat,
        plan_back=_concat_grads,
        in_code={"heads_concat": {"concat": _interleaved}},
        torch=lambda params, names, lit: f"torch.hstack([{', '.join(names)}])",
    ),
)
