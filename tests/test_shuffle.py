"""--shuffle: the demonstration that attention by itself does not see order.

Checked against the independent naive implementation on the permuted problem written out by
hand (the rows of X, the tokens, key_padding and a 0/1 mask's rows and columns moved; the
causal mask staying with the places), and for the claim itself: with nothing that carries
order, row i of the shuffled output is row order[i] of the original, for every problem
hypothesis draws."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.problem import Problem
from qkvcalc.plan.shuffle import explain_shuffled, parse_order, shuffled
from tests.naive import naive
from tests.strategies import problems


def permuted_by_hand(doc: dict, order: list[int]) -> dict:
    """The shuffled problem in the input format: what --shuffle means, written independently."""
    out = dict(doc)
    out["x"] = [doc["x"][i] for i in order]
    self_attention = "source" not in doc
    if isinstance(doc.get("mask"), list):
        rows = [doc["mask"][i] for i in order]
        out["mask"] = [[row[j] for j in order] for row in rows] if self_attention else rows
    if "key_padding" in doc and self_attention:
        out["key_padding"] = [doc["key_padding"][j] for j in order]
    return out


@settings(max_examples=80, deadline=None)
@given(problems(), st.data())
def test_the_shuffled_run_is_the_naive_run_of_the_permuted_problem(doc, data):
    order = data.draw(st.permutations(range(len(doc["x"]))))
    trace = explain_shuffled(Problem.from_mapping(doc), order)
    expected = naive(permuted_by_hand(doc, list(order)))
    assert np.allclose(trace.output, expected[("output", None)], atol=1e-9)


@settings(max_examples=80, deadline=None)
@given(problems(), st.data())
def test_without_order_only_the_rows_move(doc, data):
    """No causal mask and no positions: output row i of the shuffled run is the original's row
    order[i], and the note says so; with the causal mask the note names it when rows change."""
    order = data.draw(st.permutations(range(len(doc["x"]))))
    original = qkvcalc.explain(**doc)
    trace = explain_shuffled(Problem.from_mapping(doc), order)
    note = trace.stages[-1].notes[-1]
    if doc["mask"] != "causal":
        assert np.allclose(trace.output, np.asarray(original.output)[list(order)], atol=1e-9)
        assert note.key == "note.shuffle_demo"
    elif note.key == "note.shuffle_changed":
        assert [m.key for m in note.params["reasons"]] == ["shuffle.by_causal"]
        moved = np.asarray(original.output)[list(order)]
        size = max(float(np.max(np.abs(moved), initial=0.0)), 1.0)
        # changed beyond the note's own bound (1e-12 of the size), however small relatively
        assert not np.allclose(trace.output, moved, rtol=0, atol=1e-12 * size)


def test_what_moves_and_what_stays():
    p = Problem.from_mapping(
        {
            "tokens": ["a", "b", "c"],
            "x": [[1, 0], [0, 1], [1, 1]],
            "wq": [[1, 0], [0, 1]],
            "wk": [[1, 0], [0, 1]],
            "wv": [[1, 0], [0, 1]],
            "key_padding": [1, 1, 0],
            "positions": [5, 6, 7],
            "rope": True,
        }
    )
    s = shuffled(p, (2, 0, 1))
    assert s.tokens == ("c", "a", "b")
    assert s.x is not None and s.x.values.tolist() == [[1, 1], [1, 0], [0, 1]]
    assert s.key_padding is not None and s.key_padding.tolist() == [False, True, True]
    assert s.variants.positions.tolist() == [5, 6, 7]  # places keep their positions
    note = explain_shuffled(p, (2, 0, 1)).stages[-1].notes[-1]
    assert note.key == "note.shuffle_changed"
    assert [m.key for m in note.params["reasons"]] == ["shuffle.by_rope"]


def test_q_k_v_of_one_sequence_move_together():
    """Q, K, V given directly for one sequence (as many keys as queries) are self-attention:
    the keys move with the tokens, and only the rows of the output move."""
    rng = np.random.default_rng(3)
    doc = {name: rng.normal(size=(4, 2)).tolist() for name in ("q", "k", "v")}
    p = Problem.from_mapping(doc)
    trace = explain_shuffled(p, (3, 1, 0, 2))
    assert np.allclose(trace.output, np.asarray(qkvcalc.explain(**doc).output)[[3, 1, 0, 2]])
    assert trace.stages[-1].notes[-1].key == "note.shuffle_demo"
    cross = Problem.from_mapping({**doc, "k": doc["k"][:3], "v": doc["v"][:3]})
    assert shuffled(cross, (3, 1, 0, 2)).k.values.tolist() == cross.k.values.tolist()


def test_a_shuffled_preset_is_no_longer_announced_as_the_preset():
    from qkvcalc.input import presets

    p = Problem.from_mapping(presets.load("sentence"))
    assert p.meta["name"] == "sentence"
    assert "name" not in shuffled(p, (1, 0, 2)).meta


@pytest.mark.parametrize(
    ("text", "n", "order"),
    [("3 1 2", 3, (2, 0, 1)), ("2,1", 2, (1, 0)), (" 1 ", 1, (0,))],
)
def test_orders_are_read(text, n, order):
    assert parse_order(text, n) == order


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("3 1 1", "shuffle.not_a_permutation"),
        ("1 2", "shuffle.not_a_permutation"),
        ("0 1 2", "shuffle.not_a_permutation"),
        ("3 x 1", "shuffle.not_a_number"),
        ("² 1 2", "shuffle.not_a_number"),
        ("-1 2 3", "shuffle.not_a_number"),
        ("9" * 5000, "shuffle.not_a_number"),
    ],
)
def test_bad_orders_are_refused(text, key):
    with pytest.raises(QkvcalcError) as err:
        parse_order(text, 3)
    assert err.value.msg.key == key


def test_the_cli_shows_the_comparison(qkvcalc_proc):
    proc = qkvcalc_proc("explain", "--preset", "multihead", "--shuffle", "3 1 2", "--format", "txt")
    assert proc.returncode == 0, proc.stderr
    flat = " ".join(proc.stdout.split())
    assert "Tokens shuffled to cats I love: each token's output row is the same" in flat
    assert "preset multihead" not in flat
    proc = qkvcalc_proc("explain", "--preset", "sentence", "--shuffle", "3 1 2", "--lang", "ko")
    assert proc.returncode == 0, proc.stderr
    assert "인과 마스크" in " ".join(proc.stdout.split())


def test_the_unshuffled_run_suggests_the_demonstration(qkvcalc_proc):
    proc = qkvcalc_proc("explain", "--preset", "multihead", "--format", "txt")
    assert 'add --shuffle "2 1 3"' in " ".join(proc.stdout.split())


@pytest.mark.parametrize("order", ["3 1 1", "1 2", "a b c"])
def test_a_bad_order_is_one_message(qkvcalc_proc, order):
    proc = qkvcalc_proc("explain", "--preset", "sentence", "--shuffle", order)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: --shuffle") and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr


def test_the_json_of_a_shuffled_run_reruns_to_the_same_output(qkvcalc_proc):
    proc = qkvcalc_proc("explain", "--preset", "padding", "--shuffle", "4 3 2 1", "-f", "json")
    trace = json.loads(proc.stdout)
    again = qkvcalc.explain(**trace["input"])
    assert np.allclose(again.output, np.asarray(trace["output"], dtype=float))
    assert (
        trace["problem"]["tokens"][0]
        == json.loads(qkvcalc_proc("explain", "--preset", "padding", "-f", "json").stdout)[
            "problem"
        ]["tokens"][3]
    )
