"""The safe number grammar: what it reads, exactly, and what it refuses (never by eval)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.numbers import parse_number

# one token, d_model = d_k = 2: the problem the tests of a single field add to
SMALL = {"x": [[1, 2]], "wq": [[1, 0], [0, 1]], "wk": [[1, 0], [0, 1]], "wv": [[1, 0], [0, 1]]}


@pytest.mark.parametrize(
    "text, value, exact",
    [
        ("3", 3, Fraction(3)),
        ("-0.5", -0.5, Fraction(-1, 2)),
        ("1/2", 0.5, Fraction(1, 2)),
        ("-3e-2", -0.03, Fraction(-3, 100)),
        (" 2 ", 2, Fraction(2)),
        ("sqrt(2)", math.sqrt(2), None),
        ("1/sqrt(2)", 1 / math.sqrt(2), None),
        ("sqrt(9/4)", 1.5, Fraction(3, 2)),
        ("7/√2", 7 / math.sqrt(2), None),
        ("√16", 4, Fraction(4)),
        ("(1/2)*sqrt(4)", 1, Fraction(1)),
        ("--1", 1, Fraction(1)),
        ("2×3÷4", 1.5, Fraction(3, 2)),
    ],
)
def test_reads(text, value, exact):
    number = parse_number(text, "x")
    assert number.value == pytest.approx(value, rel=1e-15)
    assert number.exact == exact


@pytest.mark.parametrize(
    "text, rule",
    [
        ("9**9**9", "not a number qkvcalc reads"),
        ("__import__('os')", "not a number qkvcalc reads"),
        ("1e999999999", "not a finite number"),
        ("1e400", "not a finite number"),
        ("1/0", "divides by zero"),
        ("sqrt(-1)", "square root of a negative"),
        ("", "empty"),
        ("pi", "not a number qkvcalc reads"),
        ("1" * 65, "more than 64 characters"),
        ("sqrt(" * 9 + "2" + ")" * 9, "more than 8 deep"),
        ("(" * 9 + "1" + ")" * 9, "more than 8 deep"),
        ("exp(1)", "not a number qkvcalc reads"),
    ],
)
def test_refuses_with_a_reason(text, rule):
    with pytest.raises(QkvcalcError) as err:
        parse_number(text, "W_Q[1,2]")
    assert rule in str(err.value) and "W_Q[1,2]" in str(err.value)


@given(st.fractions(max_denominator=10**6).filter(lambda f: abs(f) < 10**9))
def test_fractions_are_exact(f):
    number = parse_number(f"{f.numerator}/{f.denominator}", "x")
    assert number.exact == f
    assert number.value == pytest.approx(float(f), rel=1e-15)


@given(st.decimals(min_value=-(10**6), max_value=10**6, places=6, allow_nan=False))
def test_decimals_are_exact(d):
    assert parse_number(str(d), "x").exact == Fraction(d)


@given(st.text(max_size=30))
def test_any_text_is_a_number_or_a_clear_error(text):
    try:
        number = parse_number(text, "FIELD")
    except QkvcalcError as err:
        assert str(err).startswith("FIELD"), str(err)  # the message names the field first
    else:
        assert math.isfinite(number.value)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"q_norm": [1, 1], "norm_eps": 10**400}, "norm_eps: 10000000… (401 digits)"),
        ({"softcap": 10**400}, "softcap: 10000000… (401 digits)"),
        ({"rope": {"theta": 10**400}}, "rope.theta: 10000000… (401 digits)"),
        ({"window": 10**5000}, "window: ≈10^5000"),  # past Python's own 4,300 digits
        ({"x": [[10**5000, 2]]}, "X[1,1]: ≈10^5000"),
    ],
    ids=["norm_eps", "softcap", "rope theta", "window", "a cell"],
)
def test_an_integer_beyond_float64_is_one_message_naming_its_field(fields, named):
    """A feature's number from a Python call (JSON stops at 4,300 digits) is checked as a cell
    is: one QkvcalcError that names the field and says it is too large (hypothesis found
    norm_eps = a 400-digit integer ending in OverflowError)."""
    import qkvcalc

    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**{**SMALL, **fields})
    assert str(err.value).startswith(named)
    assert "too large" in str(err.value)


@pytest.mark.parametrize("field", ["heads", "kv_heads", "mask", "alibi", "causal_align"])
def test_an_integer_past_pythons_own_digits_is_named_in_the_message(field):
    """labels.shown could not write an integer of more than 4,300 digits (Python refuses to):
    the message of a field that takes no such number shows it as ≈10^N instead."""
    import qkvcalc

    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**SMALL, **{field: 10**5000})
    assert "≈10^5000" in str(err.value)


def test_a_negative_integer_beyond_float64_is_not_positive():
    import qkvcalc

    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**SMALL, softcap=-(10**400))
    assert str(err.value).startswith("softcap must be a number greater than 0")


def test_tokens_given_as_lists_still_name_the_rows():
    """A Problem changed by hand (dataclasses.replace) with lists for its tokens is read as
    the tuples Problem makes (the notes' token names are made once per tuple of tokens)."""
    import dataclasses

    import qkvcalc
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    edited = dataclasses.replace(Problem.from_mapping(SMALL), tokens=["cat"], source_tokens=["a"])
    assert "cat → a 100%" in qkvcalc.render(run(edited), "markdown")
