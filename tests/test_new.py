"""`qkvcalc new`: guided entry through a real pseudo-terminal (a mistyped row is asked again),
and the saved JSON explains to the same numbers as the typed matrices (tests/naive.py, which
shares nothing with the engine, is the reference)."""

from __future__ import annotations

import io
import json
from fractions import Fraction

import numpy as np
import pexpect
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from qkvcalc.input.numbers import parse_number
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.new import Entry, json_number
from qkvcalc.run.engine import run
from tests.conftest import interrupt_at_prompt, run_qkvcalc
from tests.conftest import spawn_qkvcalc as spawn
from tests.naive import naive

# The sentence problem, as a student types it (with "1/2" in W_V to keep a fraction exact).
TYPED = {
    "tokens": ["I", "love", "cats"],
    "x": [[1, 2], [0, 1], [1, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [["1/2", 0], [1, 1]],
}


def send(child, prompt, text):
    child.expect_exact(prompt)
    child.sendline(text)


def type_rows(child, name, rows):
    for i, row in enumerate(rows, start=1):
        send(child, f"{name} row {i} of {len(rows)}", " ".join(str(v) for v in row))


def numbers(matrix):
    return [[parse_number(str(v), "t").value for v in row] for row in matrix]


def assert_explains_like_naive(doc):
    """The saved document, through Problem and the engine, against the naive reference."""
    trace = run(Problem.from_mapping(doc))
    given = [k for k in ("x", "wq", "wk", "wv", "wo") if k in doc]
    ref = naive({**doc, **{k: numbers(doc[k]) for k in given}})
    for (sid, head), value in ref.items():
        assert np.allclose(trace.stage(sid, head).value, value), sid


def test_new_at_a_terminal_with_a_mistyped_row(tmp_path):
    target = tmp_path / "mine.json"
    child = spawn("new", str(target))
    send(child, "Number of tokens n:", "3")
    send(child, "Names of the tokens (n = 3)", "I love")  # two names for three tokens
    child.expect_exact("The number of names is 2, but n = 3: give one name per token")
    send(child, "Names of the tokens (n = 3)", "I love cats")
    send(child, "d_model", "2")
    send(child, "d_k", "2")
    send(child, "d_v", "")  # Enter: d_v = d_k
    send(child, "Number of heads H [1]:", "")
    child.expect_exact("X is n×d_model = 3×2")
    send(child, "X row 1 of 3", "1 2")
    send(child, "X row 2 of 3", "0 1 1")  # one number too many
    child.expect_exact("X row 2 is 3 long, but X is n×d_model = 3×2: every row needs 2.")
    send(child, "X row 2 of 3", "0 one")  # not a number
    child.expect_exact("'one' is not a number qkvcalc reads")
    send(child, "X row 2 of 3", "0 1")
    send(child, "X row 3 of 3", "1, 1")  # commas work too
    type_rows(child, "W_Q", TYPED["wq"])
    type_rows(child, "W_K", TYPED["wk"])
    type_rows(child, "W_V", TYPED["wv"])
    send(child, "Mask:", "matrix")
    send(child, "mask row 1 of 3", "1 1")
    child.expect_exact("mask row 1 needs one entry per key (m = 3)")
    send(child, "mask row 1 of 3", "1 0 0")
    send(child, "mask row 2 of 3", "1 1 0")
    send(child, "mask row 3 of 3", "1 1 1")
    child.expect_exact(f"Saved to {target}.")
    send(child, "Explain it now? [Y/n]", "n")
    child.expect_exact(f"qkvcalc explain {target}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    doc = json.loads(target.read_text())
    assert doc == {**TYPED, "mask": [[1, 0, 0], [1, 1, 0], [1, 1, 1]]}
    assert_explains_like_naive(doc)
    # the fraction stayed a fraction: --exact still sees 1/2
    exact = Problem.from_mapping(doc, exact=True)
    assert exact.wv.exact[0][0] == Fraction(1, 2)
    # and the command line explains the file
    result = run_qkvcalc("explain", str(target), "--format", "json")
    assert result.returncode == 0, result.stderr
    ref = naive({**doc, "wv": numbers(doc["wv"])})
    assert np.allclose(json.loads(result.stdout)["output"], ref[("output", None)])


def test_new_prints_the_json_and_explains_at_once():
    child = spawn("new")
    for prompt, text in [
        ("tokens n:", "1"),
        ("Names", "x"),
        ("d_model", "2"),
        ("d_k", "2"),
        ("d_v", ""),
        ("heads", ""),
    ]:
        send(child, prompt, text)
    type_rows(child, "X", [[1, 2]])
    type_rows(child, "W_Q", [[1, 0], [0, 1]])
    type_rows(child, "W_K", [[1, 1], [0, 1]])
    type_rows(child, "W_V", [[1, 0], [1, 1]])
    send(child, "Mask:", "")
    child.expect_exact('"x": [[1, 2]]')
    send(child, "Explain it now? [Y/n]", "")
    child.expect_exact("q₁·k₁ = 1×1 + 2×3 = 7")  # the doc example, explained
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_two_heads_ask_for_h_times_d_k_columns():
    child = spawn("new")
    for prompt, text in [
        ("tokens n:", "2"),
        ("Names", ""),
        ("d_model", "2"),
        ("d_k", "1"),
        ("d_v", "1"),
        ("heads", "2"),
        ("key/value heads G", ""),  # Enter: G = H
    ]:
        send(child, prompt, text)
    child.expect_exact("X is n×d_model = 2×2")
    type_rows(child, "X", [[1, 2], [0, 1]])
    child.expect_exact("W_Q is d_model×H·d_k = 2×2")
    send(child, "W_Q row 1 of 2", "1")
    child.expect_exact("W_Q row 1 is 1 long, but W_Q is d_model×H·d_k = 2×2")
    interrupt_at_prompt(child)  # Ctrl-C: quits without saving, quietly
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in child.before


def test_grouped_heads_and_w_o_at_a_terminal(tmp_path):
    target = tmp_path / "gqa.json"
    child = spawn("new", str(target))
    for prompt, text in [
        ("tokens n:", "2"),
        ("Names", "a b"),
        ("d_model", "2"),
        ("d_k", "1"),
        ("d_v", "1"),
        ("heads", "4"),
    ]:
        send(child, prompt, text)
    send(child, "Number of key/value heads G; it divides H = 4", "3")
    child.expect_exact("3 does not divide H = 4: G is one of 1, 2, 4.")
    send(child, "Number of key/value heads G", "2")
    type_rows(child, "X", [[1, 2], [0, 1]])
    child.expect_exact("W_Q is d_model×H·d_k = 2×4")
    type_rows(child, "W_Q", [[1, 0, 1, -1], [0, 1, 1, 1]])
    child.expect_exact("W_K is d_model×G·d_k = 2×2")
    type_rows(child, "W_K", [[1, 0], [0, 1]])
    child.expect_exact("W_V is d_model×G·d_v = 2×2")
    send(child, "W_V row 1 of 2", "1 x")
    child.expect_exact("W_V[1,2]: 'x' is not a number qkvcalc reads")  # named as elsewhere
    type_rows(child, "W_V", [[1, 0], [1, 1]])
    send(child, "W_O, the output projection applied after the heads are joined: give it?", "")
    child.expect_exact("W_O is H·d_v×d_model = 4×2")
    type_rows(child, "W_O", [[1, 0], [0, 1], [1, 0], [0, 1]])
    send(child, "Mask:", "causal")
    send(child, "Explain it now? [Y/n]", "n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    doc = json.loads(target.read_text())
    assert doc["heads"] == 4 and doc["kv_heads"] == 2
    assert doc["wo"] == [[1, 0], [0, 1], [1, 0], [0, 1]]
    assert_explains_like_naive(doc)


def test_w_o_may_be_left_out_and_g_defaults_to_h():
    lines = "2\n\n2\n1\n1\n2\n\n1 2\n0 1\n1 0\n0 1\n1 1\n0 1\n1 0\n1 1\nn\nnone\n"
    result = run_qkvcalc("new", input=lines)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["heads"] == 2 and "kv_heads" not in doc and "wo" not in doc
    assert_explains_like_naive(doc)


def test_a_bad_cell_is_named_like_the_rest_of_the_tool():
    feed = iter(["1 2/0", "1 2"])
    out = io.StringIO()
    entry = Entry(Console(file=out, width=200), lambda prompt: next(feed), "en")
    assert entry.row("W_V", 1, 2, 2, "d_model×d_v") == [1, 2]
    assert "W_V[1,2]: '2/0' divides by zero" in out.getvalue()


def test_piped_new_writes_only_json_to_stdout():
    lines = "3\nI love cats\n2\n2\n\n\n1 2\n0 1\n1 1\n1 0\n0 1\n1 1\n0 1\n1/2 0\n1 1\ncausal\n"
    result = run_qkvcalc("new", input=lines)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)  # nothing but the document
    assert doc == {**TYPED, "mask": "causal"}
    assert "Number of tokens" in result.stderr  # the questions went to stderr
    assert "Explain it now" not in result.stderr + result.stdout  # not into a pipe
    assert_explains_like_naive(doc)


def test_input_ending_early_saves_nothing(tmp_path):
    result = run_qkvcalc("new", str(tmp_path / "p.json"), input="3\nI love cats\n2\n")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "nothing was saved" in result.stderr
    assert not (tmp_path / "p.json").exists()


def test_a_file_that_cannot_be_written_is_said_before_the_questions(tmp_path):
    """Typing a whole problem in only to hear the file cannot be written would lose it."""
    lines = "3\nI love cats\n2\n2\n\n\n1 2\n0 1\n1 1\n1 0\n0 1\n1 1\n0 1\n1/2 0\n1 1\ncausal\n"
    for target in (tmp_path / "no" / "such" / "folder" / "p.json", tmp_path):
        result = run_qkvcalc("new", str(target), input=lines)
        assert result.returncode == 2 and result.stdout == ""
        assert f"cannot write {target}" in result.stderr, result.stderr
        assert "Number of tokens" not in result.stderr  # nothing was asked


def test_an_existing_file_is_kept_unless_confirmed(tmp_path):
    target = tmp_path / "p.json"
    target.write_text("keep me")
    child = spawn("new", str(target))
    send(child, f"{target} exists. Replace it? [y/N]", "")
    child.expect_exact("Nothing written.")
    child.expect(pexpect.EOF)
    child.close()
    assert target.read_text() == "keep me"


# ---- in-process, many shapes: what is typed is what is saved (hypothesis) ----------------------

cells = st.one_of(
    st.integers(-9, 9).map(str),
    st.sampled_from(["0.5", "-1.25", "1/2", "-3/4", "sqrt(2)", "1/sqrt(2)", "2e-1"]),
)


@st.composite
def typed_problems(draw):
    n, d_model, d_k, d_v = (draw(st.integers(1, 3)) for _ in range(4))
    heads = draw(st.sampled_from([1, 2, 4]))
    kv_heads = draw(st.sampled_from([g for g in (1, 2, 4) if heads % g == 0]))
    with_wo = heads > 1 and draw(st.booleans())

    def matrix(rows, cols):
        return [[draw(cells) for _ in range(cols)] for _ in range(rows)]

    return {
        "n": n,
        "d_model": d_model,
        "d_k": d_k,
        "d_v": d_v,
        "heads": heads,
        "kv_heads": kv_heads,
        "x": matrix(n, d_model),
        "wq": matrix(d_model, heads * d_k),
        "wk": matrix(d_model, kv_heads * d_k),
        "wv": matrix(d_model, kv_heads * d_v),
        "wo": matrix(heads * d_v, d_model) if with_wo else None,
        "mask": draw(st.sampled_from(["none", "causal"])),
    }


@settings(max_examples=40, deadline=None)
@given(typed=typed_problems())
def test_typed_rows_become_the_problem(typed):
    lines = [
        str(typed["n"]),
        "",
        str(typed["d_model"]),
        str(typed["d_k"]),
        str(typed["d_v"]),
        str(typed["heads"]),
    ]
    if typed["heads"] > 1:
        lines.append(str(typed["kv_heads"]))
    for name in ("x", "wq", "wk", "wv"):
        lines += [" ".join(row) for row in typed[name]]
    if typed["heads"] > 1:
        lines.append("y" if typed["wo"] else "n")
        lines += [" ".join(row) for row in typed["wo"] or []]
    lines.append(typed["mask"])
    feed = iter(lines)
    entry = Entry(Console(file=io.StringIO()), lambda prompt: next(feed), "en")
    doc = entry.run()
    assert next(feed, None) is None  # every line was asked for, no more
    problem = Problem.from_mapping(doc)
    for name in ("x", "wq", "wk", "wv"):
        assert getattr(problem, name).values.tolist() == numbers(typed[name])
    assert problem.heads == typed["heads"] and problem.mask_kind == typed["mask"]
    assert problem.kv_heads == (typed["kv_heads"] if typed["heads"] > 1 else 1)
    if typed["wo"]:
        assert problem.wo.values.tolist() == numbers(typed["wo"])
    assert problem.tokens == tuple(f"t{i + 1}" for i in range(typed["n"]))
    assert_explains_like_naive(doc)


@pytest.mark.parametrize(
    ("text", "saved"),
    [("3", 3), ("-0.5", -0.5), ("1/2", "1/2"), ("sqrt(2)", "sqrt(2)"), ("2e-1", 0.2)],
)
def test_numbers_are_saved_as_typed(text, saved):
    assert json_number(text) == saved
    assert type(json_number(text)) is type(saved)
