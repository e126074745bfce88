"""The engine: executes the plan of an attention run with numpy, one recorded stage at a time.

    output = softmax(Q·Kᵀ · scale + M) · V,   Q = X·W_Q + b_Q,  K = S·W_K + b_K,  V = S·W_V + b_V

with S = X (self-attention) or the source (cross-attention). The plan (qkvcalc.plan) says
which stages there are and what each reads; the operations (qkvcalc.ops) say how each is
computed. `run` returns a Trace whose stages a renderer shows. numpy only: no printing, no
rich, no typer.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.labels import safe
from qkvcalc.ops.mask import apply_mask
from qkvcalc.ops.projection import project
from qkvcalc.ops.softmax import normalise, shifted_exp, softmax_parts
from qkvcalc.ops.table import OPS
from qkvcalc.plan.ids import OUTPUT
from qkvcalc.plan.masks import allowed_keys
from qkvcalc.plan.schedule import plan
from qkvcalc.plan.specs import (
    Const,
    Ref,
    Spec,
    dim_labels,
)
from qkvcalc.run.exact import ExactRun, settle, too_big
from qkvcalc.trace import Cache, Data, Recipe, Stage, Trace, resolve

__all__ = [
    "allowed_keys",
    "apply_mask",
    "dim_labels",
    "normalise",
    "project",
    "run",
    "shifted_exp",
    "softmax_parts",
]


def _check_finite(value: np.ndarray, spec: Spec) -> None:
    ok = np.isfinite(value)
    if not ok.all():
        i, j = (int(t) + 1 for t in np.argwhere(~ok)[0])
        raise QkvcalcError("overflow", stage=spec.formula, row=i, col=j, head=spec.head or 1)


def _last_uses(specs: tuple[Spec, ...]) -> dict[Ref, int]:
    """The position of the last stage that reads each stage: after it, a lazy value's array
    can be let go (the trace keeps its recipe)."""
    last: dict[Ref, int] = {}
    for k, spec in enumerate(specs):
        for operand in spec.operands:
            if not isinstance(operand, Const):
                last[operand] = k
    return last


def _feeding_output(specs: tuple[Spec, ...]) -> tuple[Spec, ...]:
    """The stages the final output (the last stage with id output and no head) is computed
    from, itself included, in the plan's order."""
    final = next(
        k for k in range(len(specs) - 1, -1, -1) if specs[k].id == OUTPUT and specs[k].head is None
    )
    needed = {specs[final].ref}
    for spec in reversed(specs[: final + 1]):
        if spec.ref in needed:
            needed.update(o for o in spec.operands if not isinstance(o, Const))
    return tuple(spec for spec in specs[: final + 1] if spec.ref in needed)


class _Run:
    """One execution of a plan: the values computed so far, and the stages recorded."""

    def __init__(self, p: Problem) -> None:
        self.p = p
        self.cache = Cache()
        self.data: dict[Ref, Data] = {}  # what the trace keeps: arrays, or recipes
        self.values: dict[Ref, np.ndarray] = {}  # whole values still needed by a later stage
        self.specs: dict[Ref, Spec] = {}
        self.stages: list[Stage] = []
        self.warnings: list[Msg] = []
        self.exact = ExactRun.of(p)  # the rational stages' exact values, None past the budget

    def operand(self, operand: Ref | Const) -> np.ndarray:
        if isinstance(operand, Const):
            return operand.value
        if operand in self.values:
            return self.values[operand]
        return resolve(self.data[operand])

    def rows_of(self, operand: Ref | Const, rows: np.ndarray | None) -> np.ndarray:
        """Rows of an operand, computing only those rows when it is a recipe."""
        if isinstance(operand, Const):
            return operand.value if rows is None else operand.value[rows]
        return resolve(self.data[operand], rows)

    def recipe(self, spec: Spec) -> Recipe:
        """Compute a lazy stage again from its operands: row by row for a row-wise op."""
        op = OPS[spec.op]

        def compute(rows: np.ndarray | None) -> np.ndarray:
            first, *rest = spec.operands
            operands = [self.rows_of(first, rows), *(self.rows_of(o, None) for o in rest)]
            return op.compute(operands, spec.params, rows)

        return Recipe(compute, self.cache)

    def execute(self, spec: Spec, remarks: bool = True) -> None:
        op = OPS[spec.op]
        operands = [self.operand(o) for o in spec.operands]
        value = op.compute(operands, spec.params, None)
        exact = self.exact.work(spec) if self.exact is not None else None
        if exact is not None and exact.value is not None:
            value = settle(value, exact.value)  # the double nearest each exact value
        if op.overflow(spec.params):
            _check_finite(value, spec)
        details: dict[str, Any] = op.details(operands, spec.params) if op.details else {}
        if op.divisor is not None:
            self.warn_dead_rows(spec, op.divisor(operands))
        lazy = spec.lazy and op.rowwise and (exact is None or exact.value is None)
        data: Data = self.recipe(spec) if lazy else value
        shown = exact if exact is not None and self.p.exact else None  # --exact: the fractions
        self.data[spec.ref] = data
        self.values[spec.ref] = value
        self.specs[spec.ref] = spec
        self.stages.append(
            Stage(
                spec,
                data,
                inputs=tuple(
                    o.value if isinstance(o, Const) else self.data[o] for o in spec.operands
                ),
                notes=spec.notes
                + (spec.remarks(self.operand) if spec.remarks and remarks else ())
                + (shown.notes if shown is not None else ()),
                exact=shown.value if shown is not None else None,
                operands_exact=shown.operands if shown is not None else (),
                bias_exact=(
                    spec.params.get("bias_exact")
                    if shown is not None and shown.value is not None
                    else None
                ),
                scale_exact=spec.params.get("scale_exact") if shown is not None else None,
                **details,
            )
        )

    def warn_dead_rows(self, spec: Spec, row_sum: np.ndarray) -> None:
        """A query whose every key is masked: weights 0 and output 0, said once per head."""
        dead = np.flatnonzero(row_sum == 0)
        if not dead.size:
            return
        names = ", ".join(safe(spec.rows[i], 40) for i in dead[:10])
        names += " …" if dead.size > 10 else ""
        key = "warn.fully_masked_head" if spec.head else "warn.fully_masked"
        self.warnings.append(Msg(key, rows=names, head=spec.head or 1, count=int(dead.size)))

    def release(self, done: int, spec: Spec, last: dict[Ref, int]) -> None:
        """Let go of the whole values no later stage reads (a recipe keeps the lazy ones): the
        ones stage `done` (`spec`) read last, and its own when nothing reads it. Any other
        value held is read later (it was kept at its last reader), so only these can go."""
        for ref in (spec.ref, *(o for o in spec.operands if not isinstance(o, Const))):
            if ref in self.values and last.get(ref, -1) <= done:
                del self.values[ref]


# Overflow is not a warning here: the stages that can overflow are checked (_check_finite)
# and an overflow becomes one QkvcalcError, so numpy's RuntimeWarnings would only repeat it.
@np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")
def run(p: Problem, output_only: bool = False) -> Trace:
    """Compute attention for a validated Problem and record every stage (each rational cell as
    the double nearest its exact value; with --exact, the fractions too).

    output_only: only the stages the final output is computed from, each as in the whole run,
    without the notes that compare stages (extract's check, which reads the output alone:
    a linear-attention layer's implicit weights and chunked form are left out)."""
    specs = plan(p)
    if output_only:
        specs = _feeding_output(specs)
    last = _last_uses(specs)
    execution = _Run(p)
    for k, spec in enumerate(specs):
        execution.execute(spec, remarks=not output_only)
        execution.release(k, spec, last)
    stages = execution.stages
    note = p.exact_refused or too_big(p)  # --exact given up: the decimals are all there
    if note is not None:
        stages[0] = replace(stages[0], notes=(*stages[0].notes, note))
    return Trace(p, tuple(stages), tuple(execution.warnings), execution.cache)
