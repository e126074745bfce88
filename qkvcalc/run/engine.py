"""The engine: executes the plan of an attention run with numpy, one recorded stage at a time.

    output = softmax(Q·Kᵀ · scale + M) · V,   Q = X·W_Q + b_Q,  K = S·W_K + b_K,  V = S·W_V + b_V

with S = X (self-attention) or the source (cross-attention). The plan (qkvcalc.plan) says
which stages there are and what each reads; the operations (qkvcalc.run.ops) say how each is
computed. `run` returns a Trace whose stages a renderer shows. numpy only: no printing, no
rich, no typer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input import exact_budget
from qkvcalc.input.problem import Problem
from qkvcalc.labels import safe
from qkvcalc.plan.masks import allowed_keys
from qkvcalc.plan.schedule import plan
from qkvcalc.plan.specs import (
    Const,
    Ref,
    Spec,
    dim_labels,
)
from qkvcalc.run.ops import OPS, apply_mask, normalise, project, shifted_exp, softmax_parts
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

    def execute(self, spec: Spec) -> None:
        op = OPS[spec.op]
        operands = [self.operand(o) for o in spec.operands]
        value = op.compute(operands, spec.params, None)
        if op.overflow(spec.params):
            _check_finite(value, spec)
        details: dict[str, Any] = op.details(operands, spec.params) if op.details else {}
        if op.divisor is not None:
            self.warn_dead_rows(spec, op.divisor(operands))
        data: Data = self.recipe(spec) if spec.lazy and op.rowwise else value
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
                notes=spec.notes + (spec.remarks(self.operand) if spec.remarks else ()),
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

    def release(self, done: int, last: dict[Ref, int]) -> None:
        """Let go of the whole values no later stage reads (a recipe keeps the lazy ones)."""
        for ref in [r for r in self.values if last.get(r, -1) <= done]:
            del self.values[ref]


# Overflow is not a warning here: the stages that can overflow are checked (_check_finite)
# and an overflow becomes one QkvcalcError, so numpy's RuntimeWarnings would only repeat it.
@np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")
def run(p: Problem) -> Trace:
    """Compute attention for a validated Problem and record every stage (with the exact
    fractions of the rational stages when the problem was read in exact mode)."""
    specs = plan(p)
    last = _last_uses(specs)
    execution = _Run(p)
    for k, spec in enumerate(specs):
        execution.execute(spec)
        execution.release(k, last)
    trace = Trace(p, tuple(execution.stages), tuple(execution.warnings), execution.cache)
    return _with_exact(trace)


def _with_exact(trace: Trace) -> Trace:
    """--exact: the rational stages as fractions too (qkvcalc.run.exact, loaded only when asked)."""
    p = trace.problem
    if (
        p.exact_refused is not None
    ):  # qkvcalc.input.exact_budget gave up before any fraction was made
        return exact_budget.skipped(trace, p.exact_refused)
    first = p.x if p.x is not None else p.q
    if first is None or first.exact is None:
        return trace
    from qkvcalc.run.exact import attach_exact

    return attach_exact(trace)
