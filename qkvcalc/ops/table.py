"""The op table: every operation a stage can be, by name, merged from the modules that declare
them — the core of attention, the backward pass, FlashAttention-2's backward in tiles, then each
feature's own. The engine, exact mode, the grader, the page and the cell arithmetic all read it;
nothing here knows a stage's id (the plan says which operation each stage is and what it reads).

    compute(operands, params, rows)  the value, or only the rows `rows` for a row-wise op
                                     (its operands are then those rows of a row-wise input)
    feeds(i, j, shapes, params)      (operand, a, b) for each operand cell that cell (i, j) reads
    exact(operands, params)          exact values and notes, or None when the op leaves the
                                     rationals (e^x)
"""

from __future__ import annotations

from qkvcalc.ops import (
    add,
    cache,
    concat,
    features,
    flash_grads,
    given,
    grads,
    mask,
    projection,
    scale,
    softmax,
    tiles,
    transpose,
)
from qkvcalc.ops.op import Op

_CORE = (given, projection, transpose, scale, mask, softmax, concat, add, cache, tiles)

OPS: dict[str, Op] = {
    **{op.name: op for module in _CORE for op in module.OPS},
    **grads.OPS,
    **flash_grads.OPS,
    **features.ops(),
}
