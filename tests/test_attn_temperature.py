"""Attention temperature (issue 22, item 3.2): each query row times τᵢ, given one per row or by
Llama 4's rule τᵢ = log(1 + ⌊(positions[i] + 1) / floor_scale⌋) · attn_scale + 1, after the
norm and the rotation. The engine against tests/naive_modern.py and against the formula of
transformers' Llama 4 attention written out here, the stage order, the JSON echo, a decode run,
and the messages of wrong input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions, render
from qkvcalc.render.json_doc import trace_json
from qkvcalc.run.engine import run
from tests.naive_modern import attention

N = 7


def problem(**extra):
    rng = np.random.default_rng(22)
    doc = {
        "x": rng.normal(size=(N, 6)).tolist(),
        "wq": rng.normal(size=(6, 8)).tolist(),
        "wk": rng.normal(size=(6, 4)).tolist(),
        "wv": rng.normal(size=(6, 4)).tolist(),
        "heads": 2,
        "kv_heads": 1,
        "mask": "causal",
    }
    return {**doc, **extra}


RULE = {"floor_scale": 3, "attn_scale": 0.4}


@pytest.mark.parametrize(
    "extra",
    [
        {"attn_temperature": RULE},
        {"attn_temperature": [1, 1.5, 0.5, 2, 1, 3, 0.25]},
        {"attn_temperature": RULE, "q_norm": [1, 2, 0.5, 1], "rope": {"theta": 10}},
        {"attn_temperature": RULE, "positions": [4, 5, 6, 7, 8, 9, 10]},
    ],
)
def test_it_equals_the_naive_reference(extra):
    doc = problem(**extra)
    trace = qkvcalc.explain(**doc)
    weights, output = attention(doc)
    np.testing.assert_allclose(trace.output, output, atol=1e-12)
    np.testing.assert_allclose(trace.stage("weights", head=2).value, weights[1], atol=1e-12)
    plain = {k: v for k, v in doc.items() if k != "attn_temperature"}
    assert not np.allclose(qkvcalc.explain(**plain).output, trace.output, atol=1e-6)


def test_the_rule_is_llama4s():
    """transformers' Llama4TextAttention: log1p(floor((positions + 1) / floor_scale)) ·
    attn_scale + 1, positions 0…n−1, on q after the rotation and the norm."""
    trace = qkvcalc.explain(**problem(attn_temperature=RULE))
    q, temp = trace.stage("q", head=1).value, trace.stage("q_temp", head=1).value
    tau = [math.log1p(math.floor((i + 1.0) / 3)) * 0.4 + 1 for i in range(N)]
    assert tau[:2] == [1, 1] and tau[2] > 1  # 1 until position floor_scale − 1
    np.testing.assert_allclose(temp, q * np.array(tau)[:, None], rtol=1e-15, atol=1e-14)


def test_it_comes_after_the_norm_and_the_rotation():
    for qk_norm in ({}, {"after_rope": True}):
        doc = problem(attn_temperature=RULE, q_norm=[1, 2, 0.5, 1], rope={"theta": 10})
        if qk_norm:
            doc["qk_norm"] = qk_norm
        ids = [s.id for s in qkvcalc.explain(**doc).stages if s.head == 1]
        assert ids.index("q_temp") > max(ids.index("q_norm"), ids.index("q_rot"))
        assert ids.index("q_temp") < ids.index("scores")


@pytest.mark.parametrize("value", [RULE, [1, 1.5, 0.5, 2, 1, 3, 0.25]])
def test_the_json_input_runs_again(value):
    trace = run(Problem.from_mapping(problem(attn_temperature=value)))
    given = json.loads(json.dumps(trace_json(trace, RenderOptions())["input"]))
    assert given["attn_temperature"] == (
        value if isinstance(value, dict) else given["attn_temperature"]
    )
    np.testing.assert_allclose(qkvcalc.explain(**given).output, trace.output, atol=1e-12)


def test_a_decode_run_takes_the_rule():
    doc = problem(attn_temperature=RULE)
    decoded = qkvcalc.explain(**{**doc, "decode": 3})
    np.testing.assert_allclose(decoded.output, attention(doc)[1], atol=1e-12)
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**{**doc, "attn_temperature": [1] * N, "decode": 3})
    assert "not a list" in e.value.message("en")


def test_the_cells_and_the_notes():
    text = render(qkvcalc.explain(**problem(attn_temperature=RULE)), "txt")
    tau = math.log1p(1) * 0.4 + 1  # position 2: ⌊3 / 3⌋ = 1
    assert f"× {tau:.4f} = " in text
    assert "τᵢ = log(1 + ⌊(positions[i] + 1) / 3⌋) · 0.4 + 1" in text
    assert "with attention temperature" in text


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([1, 2], "gives 2 factors, but there are 7 queries"),
        ({"floor_scale": 3}, "needs both floor_scale and attn_scale"),
        ({"floor_scale": 3, "attn_scale": 1, "beta": 2}, "has no key"),
        ("llama4", "must be a list of one factor per query row"),
        ({"floor_scale": 0, "attn_scale": 1}, "greater than 0"),
    ],
)
def test_wrong_values_are_one_message(value, words):
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**problem(attn_temperature=value))
    assert words in e.value.message("en")
    assert e.value.message("ko") != e.value.message("en")
