"""Fuzzing the way in: whatever bytes or JSON arrive, the only failure is a QkvcalcError.

Three generators, from blind to clever: raw bytes; arbitrary JSON values under the input
format's keys; and valid problems (tests/strategies.py) with one or two fields corrupted — the
inputs that get furthest before they go wrong. The loader (parse.load_json, then
Problem.from_mapping, then the engine and the JSON renderer) may only raise QkvcalcError; the
CLI (typer's CliRunner, piped input) may only exit 0, or 2 with one message on stderr and
nothing on stdout.
"""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from qkvcalc.cli import app
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.fields import FIELDS
from qkvcalc.input.parse import load_json
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.json_doc import render_json
from qkvcalc.run.engine import run
from tests.conftest import PINNED_ENV
from tests.strategies import problems

FUZZ = settings(
    max_examples=300,
    deadline=None,  # a loaded CI machine is not a failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Strings a person (or an attacker) might put where a number belongs.
NUMBER_TEXTS = st.sampled_from(
    [
        "1/2",
        "sqrt(2)",
        "1/sqrt(2)",
        "-3e-2",
        "(1/2)*sqrt(3)",
        "√2",
        "9**9**9",
        "1e400",
        "1e999999999",
        "nan",
        "inf",
        "-inf",
        "1/0",
        "sqrt(-1)",
        "",
        " ",
        "0x10",
        "1_000",
        "__import__('os')",
        "[1]",
        "sqrt(" * 9 + "2" + ")" * 9,
        "١٢",
        "２",
        "\x1b[31m1",
        "1" * 70,
        "--1",
        "+-+1",
        "2e",
        "e2",
        ".",
        "1..2",
        "((1)",
        "1)",
        "sqrt",
        "sqrt()",
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**400), max_value=10**400),
    st.floats(),  # NaN and ±inf included
    st.text(max_size=12),
    NUMBER_TEXTS,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=24,
)
KEYS = st.one_of(
    st.sampled_from(FIELDS),
    st.sampled_from(["W_Q", "w_q", "WQ", "Heads", "num_heads", "KV-Heads", "X", "mask ", "xx"]),
    st.text(max_size=8),
)
MATRIX_LIKE = st.lists(
    st.lists(st.one_of(st.integers(-3, 3), st.floats(-4, 4), NUMBER_TEXTS), max_size=4),
    max_size=4,
) | st.lists(st.integers(-3, 3), max_size=4)


@st.composite
def corrupted_problems(draw) -> dict:
    """A valid problem with one to three fields replaced, added or removed."""
    doc = draw(problems(max_n=4, max_d=3))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["replace", "add", "remove", "cell"]))
        if action == "remove" and doc:
            doc.pop(draw(st.sampled_from(sorted(doc))))
        elif action == "cell" and isinstance(doc.get("x"), list) and doc["x"]:
            row = doc["x"][draw(st.integers(0, len(doc["x"]) - 1))]
            if isinstance(row, list) and row:
                row[draw(st.integers(0, len(row) - 1))] = draw(SCALARS)
        else:
            key = draw(st.sampled_from(sorted(doc))) if action == "replace" and doc else draw(KEYS)
            doc[key] = draw(st.one_of(MATRIX_LIKE, JSON_VALUES))
    return doc


DOCUMENTS = st.one_of(
    corrupted_problems(),
    st.dictionaries(KEYS, st.one_of(MATRIX_LIKE, JSON_VALUES), max_size=6),
    JSON_VALUES,
)


def load_and_run(data: bytes) -> None:
    """The whole way in, as the CLI takes it; only QkvcalcError may come out."""
    doc = load_json(data)
    trace = run(Problem.from_mapping(doc))
    text = render_json(trace, RenderOptions(color=False))
    out = json.loads(text)  # strict JSON (no NaN): the renderer's promise
    assert all(math.isfinite(v) for row in out["output"] for v in row)


def only_qkvcalc_errors(data: bytes) -> None:
    try:
        load_and_run(data)
    except QkvcalcError as err:
        assert str(err)  # a message, in English by default


@FUZZ
@given(st.binary(max_size=200))
def test_loader_takes_any_bytes(data):
    only_qkvcalc_errors(data)


@FUZZ
@given(DOCUMENTS)
def test_loader_takes_any_json(doc):
    with np.errstate(all="raise"):  # the engine guards its math; nothing reaches numpy's default
        only_qkvcalc_errors(json.dumps(doc).encode())


@FUZZ
@given(corrupted_problems(), st.data())
def test_loader_takes_mangled_text(doc, data):
    """The JSON text of a near-valid problem with characters cut, doubled or swapped."""
    text = json.dumps(doc)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, max(0, len(text) - 1)))
        kind = data.draw(st.sampled_from(["cut", "double", "insert"]))
        if kind == "cut":
            text = text[:i] + text[i + 1 :]
        elif kind == "double":
            text = text[:i] + text[i : i + 1] * 2 + text[i + 1 :]
        else:
            text = text[:i] + data.draw(st.sampled_from(list('[]{},:"0e-.\\ '))) + text[i:]
    only_qkvcalc_errors(text.encode())


@settings(FUZZ, max_examples=150)
@given(DOCUMENTS, st.sampled_from(["table", "json"]))
def test_cli_exits_0_or_2_with_one_message(doc, fmt):
    runner = CliRunner()
    result = runner.invoke(
        app,
        ["explain", "--format", fmt],
        input=json.dumps(doc),
        env=PINNED_ENV,
        catch_exceptions=True,
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 2), (result.exit_code, result.stderr)
    if result.exit_code == 2:
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    else:
        assert result.stdout and "Traceback" not in result.stderr
