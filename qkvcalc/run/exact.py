"""Exact values for --exact: the stages whose numbers stay rational, as fractions.

Rational inputs give rational projections (biases included), Kᵀ and Q·Kᵀ. The scaled scores
stay rational when the scale does (d_k a perfect square, or a rational scale given); with the
default 1/√d_k and d_k not a square, a scaled score is a rational over a square root, kept
symbolically as a Surd and written `7/√2`. Softmax exponentiates, and e^x of a rational x ≠ 0
is irrational (Lindemann), so the exponentials, the weights and everything after stay decimal;
so does a cell that depends on an irrational input such as sqrt(2) (its exact value is None).

The exact values are worked out whether or not --exact is asked, for every problem under the
exact budget (input/exact_budget.py, and MAX_PRODUCTS here): the engine (qkvcalc.run.engine)
runs an ExactRun beside numpy and records each rational cell as the double nearest its exact
value, so the decimal shown is the exact value rounded half away from zero (render/text.fmt)
on every machine, whatever order its BLAS sums in. --exact keeps the fractions on the stages
(Stage.exact) for the writers to show. Pure Python fractions, no numpy in the arithmetic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.ops.rational import ExactMatrix, Surd
from qkvcalc.plan.specs import Const
from qkvcalc.records import NamedTuple

# Exact mode is for problems a person could work by hand: past this many multiplications of
# fractions the exact stages are left out (with a note) rather than keep the user waiting.
MAX_PRODUCTS = 100_000

# ---- the exact values, stage by stage beside numpy's --------------------------------------------


def in_exact_mode(p: Problem) -> bool:
    """True when the problem's matrices carry their fractions (read under the exact budget)."""
    first = p.x if p.x is not None else p.q
    return first is not None and first.exact is not None


def products_needed(p: Problem) -> int:
    """How many multiplications of fractions the exact stages take (the measure of the limit)."""
    projections = 0
    if p.projected and p.widths is not None:  # the latents stand in for W_Q, W_K, W_V (a bound)
        assert p.x is not None
        projections = p.x.values.shape[1] * p.n * p.heads * (2 * p.d_k + p.d_v)
    elif p.projected:
        assert p.x is not None and p.wq is not None and p.wk is not None and p.wv is not None
        d_model = p.x.values.shape[1]
        projections = d_model * (
            p.n * p.wq.values.shape[1] + p.m * (p.wk.values.shape[1] + p.wv.values.shape[1])
        )
    return projections + p.heads * p.n * p.m * (p.d_k + 1) + backward_products(p)


def backward_products(p: Problem) -> int:
    """The backward's multiplications of fractions (--backward with `grad_output` given: its
    rational stages are d(concat) = dO·W_Oᵀ and each head's dA = dO·Vᵀ; from a target or
    `attend` the gradient starts from the weights, and no backward stage is rational)."""
    if not p.backward or p.loss is None or p.loss.kind in ("attend", "target"):
        return 0
    d_out = p.loss.matrix.values.shape[1] if p.loss.matrix is not None else 0
    concat = p.n * d_out * p.heads * p.d_v if p.wo is not None else 0
    return concat + p.heads * p.n * p.m * p.d_v


class Exact(NamedTuple):
    """A stage's exact side: its value, its operands' (what its arithmetic writes as fractions)
    and the notes on where exactness ends (said only when --exact shows the fractions)."""

    value: ExactMatrix | None
    operands: tuple[ExactMatrix | None, ...]
    notes: tuple[Msg, ...]


class ExactRun:
    """The exact values of a run's rational stages, worked out as the engine goes, each by its
    operation's exact version (qkvcalc.ops): a stage is exact when its operation has one and
    its operands are exact. The engine records, for such a stage, the double nearest its exact
    value (`settle`), so a decimal shown is the exact value rounded, whatever order the
    platform's BLAS summed in; with --exact the fractions are shown too."""

    def __init__(self) -> None:
        self.values: dict[Any, ExactMatrix | None] = {}

    @classmethod
    def of(cls, p: Problem) -> ExactRun | None:
        """The exact side of a run of p, or None: p's numbers carry no fractions (read past the
        exact budget), or the stages would take more than MAX_PRODUCTS multiplications."""
        if not in_exact_mode(p) or products_needed(p) > MAX_PRODUCTS:
            return None
        return cls()

    def work(self, spec: Any) -> Exact:
        """The exact value of the stage `spec` (None where it is not rational)."""
        from qkvcalc.ops.table import OPS

        op = OPS[spec.op]
        operands = tuple(
            o.exact if isinstance(o, Const) else self.values.get(o) for o in spec.operands
        )
        value: ExactMatrix | None = None
        notes: tuple[Msg, ...] = ()
        if op.exact is not None and all(o is not None for o in operands):
            value, notes = op.exact(operands, spec.params)
        elif op.exact_stops and any(o is not None for o in operands):
            notes = (Msg(op.exact_stops),)
        self.values[spec.ref] = value
        if value is not None and any(cell is None for row in value for cell in row):
            notes += (Msg("note.exact_partial"),)
        return Exact(value, operands if value is not None else (), notes)


def settle(value: np.ndarray, exact: ExactMatrix) -> np.ndarray:
    """`value` with each cell that has an exact value replaced by the double nearest it (a
    Fraction converts correctly rounded; a surd as its coefficient over a correctly rounded
    square root; −∞ stays; past the largest double, ±∞). Cells without one (an irrational
    input) keep numpy's."""
    settled = value.copy()
    for i, row in enumerate(exact):
        for j, cell in enumerate(row):
            if cell is not None:
                settled[i, j] = _nearest(cell)
    return settled


def _nearest(cell: Any) -> float:
    """The double nearest an exact cell; ±∞ past the largest double (the engine then says the
    stage overflows, as it does for numpy's ∞)."""
    try:
        return float(cell)
    except OverflowError:
        sign = cell.coef if isinstance(cell, Surd) else cell
        return math.inf if sign > 0 else -math.inf


def too_big(p: Problem) -> Msg | None:
    """With --exact, the note saying the problem is too big to work exactly, or None."""
    needed = products_needed(p)
    if p.exact and in_exact_mode(p) and needed > MAX_PRODUCTS:
        return Msg("note.exact_skipped", count=needed, limit=MAX_PRODUCTS)
    return None
