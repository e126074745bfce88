"""How far an answer may be from the true value and still be right at the precision asked:
half a unit of the last decimal, relative from |value| = 10 up (the grader and the mistakes
it names use the same rule)."""

from __future__ import annotations

import math


def tolerance(expected: float, precision: int) -> float:
    """How far an answer may be from `expected` and still be right at `precision` decimals."""
    half_unit = 0.5 * 10.0**-precision
    # a hair of slack, so that a value rounded to `precision` decimals is never refused
    return half_unit * max(1.0, abs(expected) / 10.0) * (1 + 1e-9) + 1e-12


def agrees(answer: float, expected: float, precision: int) -> bool:
    if not (math.isfinite(answer) and math.isfinite(expected)):
        return answer == expected
    return abs(answer - expected) <= tolerance(expected, precision)
