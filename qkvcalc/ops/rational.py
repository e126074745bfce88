"""Rational arithmetic for --exact: fractions, and a fraction over a square root (a Surd,
written `7/√2`), with the matrix operations the exact stages need. Pure Python, no numpy in the
arithmetic; qkvcalc.run.exact applies them to a trace, and each operation's exact form
(qkvcalc.ops) calls them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from qkvcalc.i18n import Msg

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
