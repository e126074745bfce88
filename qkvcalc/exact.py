"""Exact values for --exact: the stages whose numbers stay rational, as fractions.

Rational inputs give rational projections (biases included), Kᵀ and Q·Kᵀ. The scaled scores
stay rational when the scale does (d_k a perfect square, or a rational scale given); with the
default 1/√d_k and d_k not a square, a scaled score is a rational over a square root, kept
symbolically as a Surd and written `7/√2`. Softmax exponentiates, and e^x of a rational x ≠ 0
is irrational (Lindemann), so the exponentials, the weights and everything after stay decimal;
so does a cell that depends on an irrational input such as sqrt(2) (its exact value is None).

Pure Python fractions, no numpy in the arithmetic. `attach_exact(trace)` fills in Stage.exact
(and the exact operands the arithmetic shows); engine.run calls it when the problem was read
in exact mode. Big problems are skipped with a note instead of hanging: see MAX_PRODUCTS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.problem import Problem
from qkvcalc.trace import Trace

# Exact mode is for problems a person could work by hand: past this many multiplications of
# fractions the exact stages are left out (with a note) rather than keep the user waiting.
MAX_PRODUCTS = 100_000

NEG_INF = float("-inf")  # a masked score: the same -inf the decimals carry ("-inf" in JSON)


@dataclass(frozen=True)
class Surd:
    """coef / √root with root square-free and > 1: a scaled score when √d_k is irrational.

    Written in one canonical form, an integer over the square root of an integer, with the
    smallest such root: 7/√2, -3/√8 (= -3/(2√2)), 1/√18 (= (1/3)/√2). The form reads like the
    formula (score / √d_k) and goes back to the same number.
    """

    coef: Fraction
    root: int

    def __str__(self) -> str:
        # (p/q)/√s = p/√(q²·s); with p/q in lowest terms and s square-free, q²·s is minimal
        p, q = self.coef.numerator, self.coef.denominator
        return f"{p}/√{q * q * self.root}"

    def __float__(self) -> float:
        return float(self.coef) / math.sqrt(self.root)


ExactCell = Fraction | Surd | float | None  # float: only NEG_INF, a masked score
ExactMatrix = tuple[tuple[ExactCell, ...], ...]
Rational = Fraction | None  # None: irrational (it depends on a square root in the input)


def split_square(d: int) -> tuple[int, int]:
    """d = r²·s with s square-free: (r, s). 8 -> (2, 2); 4 -> (2, 1); 6 -> (1, 6)."""
    r, s = 1, d
    f = 2
    while f * f <= s:
        while s % (f * f) == 0:
            s //= f * f
            r *= f
        f += 1
    return r, s


def over_root(value: Fraction, d: int) -> Fraction | Surd:
    """value / √d, exactly: a Fraction when √d is rational (or value is 0), else a Surd."""
    r, s = split_square(d)
    coef = value / r
    return coef if s == 1 or coef == 0 else Surd(coef, s)


# ---- matrices of fractions, as on the board ---------------------------------------------------


def _times(a: Rational, b: Rational) -> Rational:
    """a·b; a known zero times anything (even an irrational) is exactly 0."""
    if a is None or b is None:
        return Fraction(0) if a == 0 or b == 0 else None
    return a * b


def matmul(
    a: Sequence[Sequence[Rational]],
    b: Sequence[Sequence[Rational]],
    bias: Sequence[Rational] | None = None,
) -> tuple[tuple[Rational, ...], ...]:
    """A·B (+ bias on every row); a cell with any irrational term is None."""
    # [n, k] @ [k, m] (+ [m]) -> [n, m]
    out = []
    for row in a:
        cells: list[Rational] = []
        for j in range(len(b[0])):
            terms = [_times(x, b[t][j]) for t, x in enumerate(row)]
            if bias is not None:
                terms.append(bias[j])
            total: Rational = Fraction(0)
            for term in terms:
                total = None if total is None or term is None else total + term
            cells.append(total)
        out.append(tuple(cells))
    return tuple(out)


def transpose(a: Sequence[Sequence[ExactCell]]) -> ExactMatrix:
    # [m, d_k] -> [d_k, m]
    return tuple(zip(*a, strict=True))


def columns(a: Sequence[Sequence[ExactCell]], cols: slice) -> ExactMatrix:
    return tuple(tuple(row[cols]) for row in a)


def scaled(scores: Sequence[Sequence[Rational]], params: dict) -> tuple[ExactMatrix | None, tuple]:
    """Q·Kᵀ times the scale: exact for 1/√d_k (a surd when √d_k is irrational) and for a
    rational scale given; None otherwise. Also the note that says how they are written."""
    if "d_k" in params:  # the default, 1/√d_k
        out = tuple(
            tuple(None if s is None else over_root(s, params["d_k"]) for s in row) for row in scores
        )
        surd = any(isinstance(cell, Surd) for row in out for cell in row)
        return out, (Msg("note.exact_surd", d_k=params["d_k"]),) if surd else ()
    factor = params.get("scale_exact")
    if factor is None:
        return None, (Msg("note.exact_scale_irrational", scale=f"{params['scale']:g}"),)
    return tuple(tuple(None if s is None else s * factor for s in row) for row in scores), ()


def masked(scaled: ExactMatrix, allowed: np.ndarray) -> ExactMatrix:
    """The scaled scores where a key may be attended, −∞ where it is masked."""
    return tuple(
        tuple(cell if ok else NEG_INF for cell, ok in zip(row, keep, strict=True))
        for row, keep in zip(scaled, allowed.tolist(), strict=True)
    )


def add(a: ExactMatrix, b: ExactMatrix) -> ExactMatrix:
    """A + B cell by cell; None where either is unknown (or a surd meets a fraction)."""

    def plus(x: ExactCell, y: ExactCell) -> ExactCell:
        if x is None or y is None or isinstance(x, Surd) or isinstance(y, Surd):
            return None
        return x + y

    return tuple(
        tuple(plus(x, y) for x, y in zip(ra, rb, strict=True)) for ra, rb in zip(a, b, strict=True)
    )


# ---- attaching the exact values to a trace ---------------------------------------------------


def in_exact_mode(p: Problem) -> bool:
    """True when the problem was read with exact=True (its matrices carry their fractions)."""
    first = p.x if p.x is not None else p.q
    return first is not None and first.exact is not None


def products_needed(p: Problem) -> int:
    """How many multiplications of fractions the exact stages take (the measure of the limit)."""
    projections = 0
    if p.projected:
        assert p.x is not None and p.wq is not None and p.wk is not None and p.wv is not None
        d_model = p.x.values.shape[1]
        projections = d_model * (
            p.n * p.wq.values.shape[1] + p.m * (p.wk.values.shape[1] + p.wv.values.shape[1])
        )
    return projections + p.heads * p.n * p.m * (p.d_k + 1)


def attach_exact(trace: Trace) -> Trace:
    """The trace with Stage.exact set on its rational stages, and notes on where exactness ends.

    Runs the trace's own plan again with each operation's exact version (qkvcalc.ops): a stage
    is exact when its operation has one and its operands are exact. Unchanged when the problem
    was not read in exact mode. A problem too big to work exactly (more than MAX_PRODUCTS
    multiplications) gets a note on its first stage and no exact values.
    """
    from qkvcalc.ops import OPS
    from qkvcalc.plan import Const

    p = trace.problem
    if not in_exact_mode(p):
        return trace
    needed = products_needed(p)
    if needed > MAX_PRODUCTS:
        first, *rest = trace.stages
        note = Msg("note.exact_skipped", count=needed, limit=MAX_PRODUCTS)
        return replace(trace, stages=(replace(first, notes=(*first.notes, note)), *rest))

    exact: dict[tuple[Any, ...], ExactMatrix | None] = {}
    stages = []
    for stage in trace.stages:
        op = OPS[stage.op]
        operands = tuple(o.exact if isinstance(o, Const) else exact.get(o) for o in stage.reads)
        value: ExactMatrix | None = None
        notes: tuple[Msg, ...] = ()
        if op.exact is not None and all(o is not None for o in operands):
            value, notes = op.exact(operands, stage.params)
        elif op.exact_stops and any(o is not None for o in operands):
            notes = (Msg(op.exact_stops),)
        exact[stage.ref] = value
        if value is not None and any(cell is None for row in value for cell in row):
            notes += (Msg("note.exact_partial"),)
        stage = replace(
            stage,
            exact=value,
            operands_exact=operands if value is not None else (),
            bias_exact=stage.params.get("bias_exact") if value is not None else None,
            scale_exact=stage.params.get("scale_exact"),
            notes=(*stage.notes, *notes),
        )
        stages.append(stage)
    return replace(trace, stages=tuple(stages))
