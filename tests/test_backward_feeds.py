"""The backward ops' feeds (which operand cells one gradient cell is computed from: the quiz's
carried mistakes and the page's lit cells follow them) against the numbers: a cell's feeds are
exactly the operand cells whose change moves it, on random problems of every feature."""

from __future__ import annotations

import numpy as np
import pytest

from qkvcalc.ops.table import OPS
from tests.test_backward import FEATURES, LOSSES, backward_trace, make

# the problems whose numbers are generic: no mask (a masked weight of 0 hides what it reads)
# and no rotation (position 0 is not turned, so its partner dimension does not move it)
MASKED = (
    "causal",
    "custom_mask",
    "chunk",
    "padding",
    "alibi",
    "softcap",
    "sinks",
    "gqa",
    "qk_norm_after_rope",
)
UNMASKED = [f for f in FEATURES if f not in (*MASKED, "rope_half", "rope_pairs")]


def influence(stage, i: int, j: int) -> set[tuple[int, int, int]]:
    """The operand cells whose change (by a small amount) changes cell (i, j)."""
    op = OPS[stage.op]
    operands = [np.array(o, dtype=float) for o in stage.operands]
    with np.errstate(all="ignore"):  # a masked score's −∞ moved: the same −∞
        return _moved(op, stage, operands, i, j)


def _moved(op, stage, operands, i, j):
    base = op.compute(operands, stage.params, None)[i, j]
    found = set()
    for k, operand in enumerate(operands):
        for a in range(operand.shape[0]):
            for b in range(operand.shape[1]):
                moved = [o.copy() for o in operands]
                moved[k][a, b] += 1e-3 * (1 + abs(operand[a, b]))
                if abs(op.compute(moved, stage.params, None)[i, j] - base) > 1e-12:
                    found.add((k, a, b))
    return found


def backward_stages(trace):
    first = next(k for k, s in enumerate(trace.stages) if s.id.startswith("grad_"))
    return trace.stages[first:]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("feature", FEATURES)
def test_no_gradient_cell_reads_a_cell_its_feeds_leave_out(feature, loss):
    trace = backward_trace(make(feature, loss, seed=5))
    for stage in backward_stages(trace):
        op = OPS[stage.op]
        shapes = [np.shape(o) for o in stage.operands]
        rows, cols = stage.shape
        for i in range(rows):
            for j in range(cols):
                feeds = set(op.feeds(i, j, shapes, stage.params))
                missing = influence(stage, i, j) - feeds
                assert not missing, (stage.id, stage.head, (i, j), sorted(missing))


@pytest.mark.parametrize("feature", UNMASKED)
def test_a_gradient_cells_feeds_are_cells_it_reads(feature):
    trace = backward_trace(make(feature, "target", seed=5))
    for stage in backward_stages(trace):
        op = OPS[stage.op]
        shapes = [np.shape(o) for o in stage.operands]
        rows, cols = stage.shape
        for i in range(rows):
            for j in range(cols):
                extra = set(op.feeds(i, j, shapes, stage.params)) - influence(stage, i, j)
                assert not extra, (stage.id, stage.head, (i, j), sorted(extra))
