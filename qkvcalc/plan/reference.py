"""The pipeline's own reference forward: a few specs of a plan executed again with plain numpy,
on some rows, with one thing changed. The notes that compare two runs ("why scale, shown") use
it, so that what they report is the plan's own arithmetic — a score bias, every feature's
stage, the mask and a given scale included — and never a hand-written copy of part of it.

    forward(specs, given, rows=[i], changed={("scaled", h): {"scale": 1.0}})

executes `specs` in order; an operand that is not one of them is read with `given` (the values
the engine has already computed). Only row-wise operations can be run on some rows alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.table import OPS
from qkvcalc.plan.specs import Const, Ref, Spec


def nothing(ref: Ref) -> np.ndarray:
    """`given` for a run that starts from the problem's own numbers: it reads no other stage."""
    raise KeyError(ref)


def forward(
    specs: Sequence[Spec],
    given: Callable[[Ref], np.ndarray],
    rows: np.ndarray | None = None,
    changed: Mapping[Ref, Mapping[str, Any]] | None = None,
) -> dict[Ref, np.ndarray]:
    """The values of `specs` (only rows `rows` when given), each spec's params updated by
    `changed[spec.ref]`."""
    values: dict[Ref, np.ndarray] = {}
    cut: set[Ref] = set()  # the values computed on `rows` alone (the others are whole)

    def operand(o: Ref | Const, first: bool) -> np.ndarray:
        if isinstance(o, Const):
            whole = o.value
        elif o in cut:
            return values[o]
        else:
            whole = values[o] if o in values else given(o)
        return whole[rows] if first and rows is not None else whole

    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        for spec in specs:
            op = OPS[spec.op]
            params = {**spec.params, **((changed or {}).get(spec.ref, {}))}
            operands = [operand(o, k == 0) for k, o in enumerate(spec.operands)]
            if spec.operands:  # the rows of its first operand give its rows
                assert rows is None or op.rowwise, f"{spec.op} is not row-wise"
                values[spec.ref] = op.compute(operands, params, rows)
                if rows is not None:
                    cut.add(spec.ref)
            else:  # a table of its own (a bias): whole, as a later stage reads it
                values[spec.ref] = op.compute(operands, params, None)
    return values
