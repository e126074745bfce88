"""Numbers are correctly rounded (issue 25, item 3): a rational stage's decimal is its exact
value rounded half away from zero, as a student rounds by hand, on every machine.

Two causes made a shown digit depend on the platform: a sum's last bits depend on the order the
BLAS library adds its terms in (4.8492 / 8 = 0.60615 came out as 0.606149… or 0.606150…), and
Python's `f"{x:.4f}"` rounds the binary value half to even. The engine now records each
rational cell as the double nearest its exact value (qkvcalc.run.exact), and every number is
rounded from its shortest decimal half away from zero (qkvcalc.labels.rounded). The golden
renders are checked again with every matrix product summed in the opposite order.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Context, Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.labels import rounded
from qkvcalc.ops import projection as ops
from qkvcalc.render.text import fmt
from qkvcalc.run.engine import run
from tests.conftest import GOLDEN
from tests.test_golden import PRESETS, normalise


def summed_backwards(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """x @ w (+ b) with every sum taken from its last term to its first: another platform's
    BLAS, as far as the order of its additions goes."""
    out = np.zeros((x.shape[0], w.shape[1]))
    for t in reversed(range(x.shape[1])):
        out = out + x[:, t, None] * w[None, t, :]
    return out if b is None else out + b


@pytest.mark.parametrize(
    ("value", "places", "shown"),
    [
        (0.60615, 4, "0.6062"),  # the dk64 preset's 4.8492 / 8, a tie at 4 places
        (-0.60615, 4, "-0.6062"),  # away from zero, not up
        (0.79415, 4, "0.7942"),
        (0.125, 2, "0.13"),  # f"{0.125:.2f}" is '0.12' (half to even)
        (2.5, 0, "3"),
        (0.1 + 0.2, 4, "0.3000"),  # 0.30000000000000004: not a tie
        (-0.00004, 4, "0.0000"),  # no '-0.0000'
        (1e-7, 4, "0.0000"),
        (float("inf"), 4, "inf"),  # as f"{x:.4f}" writes it (a read-out of an overflowed |q|)
        (float("-inf"), 2, "-inf"),
        (float("nan"), 4, "nan"),
    ],
)
def test_a_number_is_rounded_half_away_from_zero(value, places, shown):
    assert rounded(value, places) == shown


@pytest.mark.parametrize(
    ("value", "places", "shown"),
    [
        (7.000000000000001, 4, "7"),  # floating-point noise around a whole number
        (-3.0000000000000004, 4, "-3"),
        (2.0000000004, 10, "2.0000000004"),  # a digit shown: not noise at 10 decimals
        (2.0000000004, 9, "2"),  # rounds to 2.000000000 there: the whole number
        (1e12 + 0.5, 1, "1000000000000.5"),  # half a unit is not noise, however large
    ],
)
def test_a_whole_number_takes_only_noise_below_the_last_digit_shown(value, places, shown):
    assert fmt(value, places) == shown


@settings(max_examples=300, deadline=None)
@given(
    digits=st.integers(min_value=-(10**9), max_value=10**9),
    scale=st.integers(min_value=0, max_value=9),
    places=st.integers(min_value=0, max_value=6),
)
def test_a_typed_decimal_is_rounded_as_by_hand(digits, scale, places):
    """Any decimal of up to ten digits, read as a double and rounded: the same digits as the
    decimal itself rounded half away from zero (what a student writes)."""
    decimal = Decimal(digits).scaleb(-scale)
    by_hand = decimal.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    expected = f"{by_hand:f}"
    if expected.startswith("-") and by_hand == 0:
        expected = expected[1:]
    assert rounded(float(decimal), places) == expected


def _by_hand(value: float, places: int) -> str:
    """The shortest decimal of the double, rounded half away from zero with Decimal alone."""
    unit = Decimal(1).scaleb(-places)
    text = f"{Decimal(repr(value)).quantize(unit, ROUND_HALF_UP, Context(prec=1200)):f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


@settings(max_examples=2000, deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(min_value=-1e6, max_value=1e6),
        # ties of the grid, k·10^-p, and their neighbours one unit in the last place away
        st.builds(
            lambda k, p, ulps: float(np.nextafter(k / 10**p, np.inf * ulps) if ulps else k / 10**p),
            st.integers(-(10**7), 10**7),
            st.integers(0, 9),
            st.sampled_from([-1, 0, 1]),
        ),
        st.builds(
            lambda k, p: (2 * k + 1) / (2 * 10**p), st.integers(-(10**6), 10**6), st.integers(0, 8)
        ),
    ),
    places=st.integers(min_value=0, max_value=15),  # --precision's range
)
def test_the_quick_rounding_is_the_decimal_rounding(value, places):
    """labels.rounded takes Python's own rounding of the double where it provably agrees with
    rounding its shortest decimal (nearly always), and the Decimal elsewhere: every double, at
    every precision a table uses, comes out as the Decimal alone would write it."""
    assert rounded(value, places) == _by_hand(value, places)


def test_the_scaled_score_of_the_dk64_preset_is_its_exact_value_rounded():
    """4.8492 / 8 = 0.60615 exactly: shown 0.6062, and recorded as the double nearest 0.60615
    whichever order the products were summed in."""
    problem = Problem.from_mapping(presets.load("dk64"))
    exact = Fraction(48492, 10000) / 8
    for project in (ops.project, summed_backwards):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ops, "project", project)
            scaled = run(problem).stage("scaled", None).value
        assert fmt(float(scaled[1, 2])) == "0.6062"
        assert float(scaled[1, 2]) == float(exact)  # the nearest double, bit for bit


def test_every_rational_cell_is_the_double_nearest_its_exact_value():
    """Q, K, V, Q·Kᵀ and the scaled scores of the doc and sentence presets, against fractions
    worked out here from the decimals as typed."""
    for name in ("sentence", "dk64"):
        doc = presets.load(name)
        trace = run(Problem.from_mapping(doc, exact=True))
        for stage in trace.stages:
            if stage.exact is None:
                continue
            for i, row in enumerate(stage.exact):
                for j, cell in enumerate(row):
                    if isinstance(cell, Fraction):
                        assert float(stage.value[i, j]) == float(cell), (name, stage.id, i, j)


def test_without_exact_no_fraction_is_kept_or_said():
    """The exact values only round the decimals: without --exact no stage carries fractions,
    no note about them is added, and the JSON has no "exact" key."""
    trace = run(Problem.from_mapping(presets.load("dk64")))
    assert not trace.exact
    assert all(stage.exact is None and not stage.operands_exact for stage in trace.stages)
    assert not any(n.key.startswith("note.exact") for s in trace.stages for n in s.notes)


def test_an_irrational_input_keeps_the_decimals_numpy_gives():
    """A cell that depends on sqrt(2) has no exact value: it is numpy's double, as before."""
    doc = {"q": [["sqrt(2)", "1"]], "k": [["1", "1"], ["0.5", "0"]], "v": [[1], [2]]}
    trace = run(Problem.from_mapping(doc))
    scores = trace.stage("scores", None).value
    assert scores[0, 0] == np.sqrt(2) + 1
    assert scores[0, 1] == np.sqrt(2) * 0.5


@pytest.mark.parametrize("name", PRESETS)
def test_the_golden_renders_do_not_depend_on_the_order_of_summation(cli, name, monkeypatch):
    """Every preset's golden render again, with every matrix product summed backwards."""
    monkeypatch.setattr(ops, "project", summed_backwards)
    result = cli("explain", "--preset", name)
    assert result.exit_code == 0, result.stderr
    assert normalise(result.stdout) == (GOLDEN / f"{name}.table.txt").read_text(encoding="utf-8")
