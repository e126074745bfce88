"""The engine against the naive loops (tests/naive.py), stage by stage, and its invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkvcalc import explain
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.naive import naive
from tests.strategies import problems


def trace_of(doc):
    return run(Problem.from_mapping(doc))


def assert_same(actual: np.ndarray, expected: list, what: str) -> None:
    expected_arr = np.array(expected, dtype=float)
    assert actual.shape == expected_arr.shape, what
    inf_a, inf_e = np.isneginf(actual), np.isneginf(expected_arr)
    assert (inf_a == inf_e).all(), f"{what}: masked cells differ"
    np.testing.assert_allclose(
        actual[~inf_a], expected_arr[~inf_e], rtol=1e-12, atol=1e-12, err_msg=what
    )


@settings(max_examples=300, deadline=None)
@given(problems())
def test_every_stage_matches_the_naive_loops(doc):
    trace = trace_of(doc)
    expected = naive(doc)
    recorded = {(s.id, s.head) for s in trace.stages} - {
        ("x", None),
        ("source", None),
        ("split", None),
    }
    assert recorded == set(expected), "the trace has exactly the stages DESIGN.md lists"
    for (stage_id, head), value in expected.items():
        assert_same(trace.stage(stage_id, head).value, value, f"{stage_id} head {head}")


@settings(max_examples=200, deadline=None)
@given(problems(), st.data())
def test_a_stage_computes_any_of_its_rows_alone(doc, data):
    """Stage.value_rows (what a table that shows a few rows of a big stage reads) gives the
    same numbers as those rows of the whole value, for held stages and recipes alike."""
    trace = trace_of(doc)
    for stage in trace.stages:
        n = stage.shape[0]
        rows = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n), label=stage.id)
        part, whole = stage.value_rows(rows), stage.value[rows]
        assert part.shape == (len(rows), stage.shape[1])
        assert (np.isneginf(part) == np.isneginf(whole)).all(), stage.id
        np.testing.assert_allclose(part, whole, rtol=1e-15, atol=0, err_msg=stage.id)


@settings(max_examples=200, deadline=None)
@given(problems())
def test_weights_are_a_distribution_and_masked_weights_are_zero(doc):
    trace = trace_of(doc)
    for stage in trace.stages:
        if stage.id != "weights":
            continue
        w = stage.value
        assert (w >= 0).all()
        sums = w.sum(axis=1)
        masked = trace.find("masked", stage.head)
        if masked is None:
            np.testing.assert_allclose(sums, 1, rtol=1e-12)
            continue
        blocked = np.isneginf(masked.value)
        assert (w[blocked] == 0).all()
        dead = blocked.all(axis=1)
        np.testing.assert_allclose(sums[~dead], 1, rtol=1e-12)
        assert (sums[dead] == 0).all()
        assert (trace.stage("output", stage.head).value[dead] == 0).all()


@settings(max_examples=100, deadline=None)
@given(problems(multihead=False, extras=False), st.randoms(use_true_random=False))
def test_permuting_keys_and_values_together_changes_nothing(doc, rnd):
    """Attention is a set operation over keys: reorder the source rows (and the mask's columns
    with them) and every query's output stays the same."""
    doc = {**doc, "source": doc.get("source", doc["x"])}
    if doc["mask"] == "causal":
        doc["mask"] = [
            [1 if j <= i else 0 for j in range(len(doc["source"]))] for i in range(len(doc["x"]))
        ]
    order = list(range(len(doc["source"])))
    rnd.shuffle(order)
    shuffled = {**doc, "source": [doc["source"][j] for j in order]}
    if isinstance(doc["mask"], list):
        shuffled["mask"] = [[row[j] for j in order] for row in doc["mask"]]
    np.testing.assert_allclose(
        trace_of(shuffled).output, trace_of(doc).output, rtol=1e-9, atol=1e-12
    )


@settings(max_examples=100, deadline=None)
@given(problems(multihead=False, cross=False, extras=False), st.floats(min_value=-50, max_value=50))
def test_softmax_ignores_a_shift_of_every_score_in_a_row(doc, shift):
    """exp(s − max) is why softmax is stable: adding a constant to a row changes no weight.
    Checked with the plain formula on the recorded scaled scores."""
    trace = trace_of(doc)
    scaled = trace.stage("scaled").value
    from qkvcalc.run.engine import softmax_parts

    base = softmax_parts(scaled)[3]
    shifted = softmax_parts(scaled + shift)[3]
    np.testing.assert_allclose(shifted, base, rtol=1e-9, atol=1e-12)


def test_large_scores_stay_finite():
    """Scores near 1e4 would overflow a naive e^s; the shifted softmax keeps them exact."""
    t = explain(
        x=[[100.0, 0.0], [0.0, 100.0]],
        wq=[[1, 0], [0, 1]],
        wk=[[1, 0], [0, 1]],
        wv=[[1, 0], [0, 1]],
    )
    np.testing.assert_allclose(t.stage("weights").value, np.eye(2), atol=1e-300)


def test_fully_masked_row_gives_zero_and_a_warning():
    t = explain(
        x=[[1, 2], [0, 1]],
        wq=[[1, 0], [0, 1]],
        wk=[[1, 1], [0, 1]],
        wv=[[1, 0], [1, 1]],
        mask=[[0, 0], [1, 1]],
        tokens=["a", "b"],
    )
    assert t.stage("weights").value[0].tolist() == [0, 0]
    assert t.output[0].tolist() == [0, 0]
    assert not np.isnan(t.output).any()
    assert [w.key for w in t.warnings] == ["warn.fully_masked"]
    assert "a" in t.warnings[0].text("en") and "0/0" in t.warnings[0].text("en")


def test_scale_overrides_one_over_root_dk():
    t = explain(
        x=[1, 2], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]], scale="1/2"
    )
    assert t.stage("scaled").value.tolist() == [[3.5]]
    assert t.problem.scale == 0.5


def test_default_scale_is_one_over_root_dk():
    t = explain(x=[1, 2, 3, 4], wq=np.eye(4), wk=np.eye(4), wv=np.eye(4))
    assert t.problem.scale == 0.5
    assert math.isclose(t.stage("scaled").value[0, 0], 30 * 0.5)


def test_causal_mask_is_lower_triangular_and_aligned_top_left():
    t = explain(
        x=[[1, 0]] * 2, source=[[0, 1]] * 3, wq=np.eye(2), wk=np.eye(2), wv=np.eye(2), mask="causal"
    )
    blocked = np.isneginf(t.stage("masked").value)
    assert blocked.tolist() == [[False, True, True], [False, False, True]]


def test_key_padding_masks_columns():
    t = explain(
        x=[[1, 0], [0, 1], [1, 1]], wq=np.eye(2), wk=np.eye(2), wv=np.eye(2), key_padding=[1, 1, 0]
    )
    assert (t.stage("weights").value[:, 2] == 0).all()


@pytest.mark.parametrize("value", [np.float32(1.5), np.int64(2)])
def test_numpy_scalars_and_arrays_are_accepted(value):
    t = explain(x=np.array([[value, 1.0]]), wq=np.eye(2), wk=np.eye(2), wv=np.eye(2))
    assert t.stage("q").value[0, 0] == float(value)
