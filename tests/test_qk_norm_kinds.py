"""The q/k norm's kinds (issue 22, item 3): one weight vector for every head or one row per head,
RMSNorm or LayerNorm with a bias, over each head or over the whole projection (OLMo 2), before
or after RoPE (HunYuan). The engine against tests/naive_modern.py (written from DESIGN's words),
the order of the stages, the JSON trace's "input" run again, and the messages of wrong input."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions, render
from qkvcalc.render.json_doc import trace_json
from qkvcalc.run.engine import run
from tests.naive_modern import attention

N, D, H, G, DK = 5, 6, 4, 2, 4


def problem(seed: int, **extra: Any) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    doc: dict[str, Any] = {
        "x": rng.normal(size=(N, D)).tolist(),
        "wq": rng.normal(size=(D, H * DK)).tolist(),
        "wk": rng.normal(size=(D, G * DK)).tolist(),
        "wv": rng.normal(size=(D, G * 3)).tolist(),
        "bq": rng.normal(size=H * DK).tolist(),
        "wo": rng.normal(size=(H * 3, D)).tolist(),
        "heads": H,
        "kv_heads": G,
        "mask": "causal",
        "rope": {"theta": 50},
        "norm_eps": 1e-5,
    }
    return {**doc, **extra}


def weights(seed: int, *shape: int) -> list[Any]:
    return np.random.default_rng(seed).normal(1, 0.5, size=shape).tolist()


CASES = {
    "one vector, rms": {"q_norm": weights(1, DK), "k_norm": weights(2, DK)},
    "per head, rms": {"q_norm": weights(3, H, DK), "k_norm": weights(4, G, DK)},
    "per head, layer, a bias": {
        "q_norm": weights(5, H, DK),
        "k_norm": weights(6, G, DK),
        "qk_norm": {"kind": "layer", "bias": {"q": weights(7, H, DK), "k": weights(8, G, DK)}},
    },
    "one vector, layer, no bias": {
        "q_norm": weights(9, DK),
        "k_norm": weights(10, DK),
        "qk_norm": {"kind": "layer"},
    },
    "over the projection, rms (OLMo 2)": {
        "q_norm": weights(11, H * DK),
        "k_norm": weights(12, G * DK),
        "qk_norm": {"over": "projection"},
    },
    "over the projection, layer": {
        "q_norm": weights(13, H * DK),
        "k_norm": weights(14, G * DK),
        "qk_norm": {"over": "projection", "kind": "layer", "bias": {"k": weights(15, G * DK)}},
    },
    "after RoPE (HunYuan)": {
        "q_norm": weights(16, DK),
        "k_norm": weights(17, DK),
        "qk_norm": {"after_rope": True},
    },
    "k only, per head, after RoPE": {"k_norm": weights(18, G, DK), "qk_norm": {"after_rope": True}},
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_kind_equals_the_naive_reference(name):
    doc = problem(len(name), **CASES[name])
    trace = qkvcalc.explain(**doc)
    expected_weights, expected = attention(doc)
    np.testing.assert_allclose(trace.output, expected, rtol=0, atol=1e-12)
    for h in range(1, H + 1):
        np.testing.assert_allclose(
            trace.stage("weights", head=h).value, expected_weights[h - 1], atol=1e-12
        )
    # the norms are really there: without them the output differs
    bare = {k: v for k, v in doc.items() if k not in ("q_norm", "k_norm", "qk_norm")}
    assert not np.allclose(qkvcalc.explain(**bare).output, trace.output, atol=1e-6)


def test_the_norm_goes_before_or_after_the_rotation():
    def order(doc: dict[str, Any]) -> list[str]:
        ids = [s.id for s in qkvcalc.explain(**doc).stages if s.head == 1]
        return [i for i in ids if i in ("q_norm", "k_norm", "q_rot", "k_rot")]

    before = problem(0, **CASES["one vector, rms"])
    after = problem(0, **CASES["after RoPE (HunYuan)"])
    assert order(before) == ["q_norm", "k_norm", "q_rot", "k_rot"]
    assert order(after) == ["q_rot", "k_rot", "q_norm", "k_norm"]


def test_over_the_projection_one_row_divides_every_head():
    """OLMo 2: with weights 1 each head's part of a row is divided by the same RMS, the whole
    row's, so the heads of one token keep their proportions."""
    doc = problem(3, q_norm=[1.0] * (H * DK), qk_norm={"over": "projection"})
    trace = qkvcalc.explain(**doc)
    q_all = np.hstack([trace.stage("q", head=h).value for h in range(1, H + 1)])
    normed = np.hstack([trace.stage("q_norm", head=h).value for h in range(1, H + 1)])
    rms = np.sqrt(np.mean(q_all**2, axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(normed, q_all / rms, atol=1e-13)
    np.testing.assert_allclose(np.mean(normed**2, axis=1), 1, atol=1e-4)
    per_head = np.mean(trace.stage("q_norm", head=1).value ** 2, axis=1)
    assert not np.allclose(per_head, 1, atol=1e-3)  # one head alone is not at RMS 1


@pytest.mark.parametrize("name", list(CASES))
def test_the_json_input_runs_again(name):
    trace = run(Problem.from_mapping(problem(1, **CASES[name])))
    given = json.loads(json.dumps(trace_json(trace, RenderOptions())["input"]))
    again = qkvcalc.explain(**given)
    np.testing.assert_allclose(again.output, trace.output, atol=1e-12)


def test_the_header_says_which_norm():
    doc = problem(2, **CASES["per head, layer, a bias"])
    text = render(qkvcalc.explain(**doc), "txt", detail="brief")
    assert "q/k LayerNorm" in text and "q/k norm weights per head" in text
    doc = problem(2, **CASES["over the projection, rms (OLMo 2)"])
    text = render(qkvcalc.explain(**doc), "txt", detail="brief")
    assert "the q/k norm over the whole projection" in text


def test_a_layernorm_cell_shows_its_mean_and_sigma():
    doc = {
        "x": [[1, 2], [0, 3]],
        "wq": [[1, 0, 1], [0, 1, 1]],
        "wk": [[1, 0, 0], [0, 1, 0]],
        "wv": [[1, 0], [0, 1]],
        "q_norm": [1, 2, 1],
        "qk_norm": {"kind": "layer", "bias": {"q": [0, 0, 0.5]}},
        "norm_eps": 1e-6,
    }
    text = render(qkvcalc.explain(**doc), "txt")
    # q row 1 = [1, 2, 3]: μ = 2, σ = √(2/3 + ε) = 0.8165
    assert "[1,3]: (3 − 2) / 0.8165 × 1 + 0.5000 = 1.7247" in text


def test_per_head_weights_need_the_heads_of_their_side():
    doc = problem(0, q_norm=weights(0, H, DK), k_norm=weights(1, H, DK))  # k needs G rows
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**doc)
    text = e.value.message("en")
    assert "k_norm is 4×4" in text and "G×d_k = 2×4" in text and "d_k = 4 numbers" in text
    assert "k_norm" in e.value.message("ko")


def test_projection_weights_need_the_whole_width():
    doc = problem(0, q_norm=weights(0, DK), qk_norm={"over": "projection"})
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**doc)
    assert "q_norm is 1×4" in e.value.message("en") and "16 numbers" in e.value.message("en")


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"kind": "layernorm"}, 'qk_norm.kind must be "rms"'),
        ({"over": "heads"}, 'qk_norm.over must be "head"'),
        ({"after": True}, "qk_norm has no key"),
        ({"after_rope": "yes"}, "qk_norm.after_rope must be true"),
        ({"bias": {"q": [0] * DK}}, "RMSNorm has no bias"),
        ({"kind": "layer", "bias": [0] * DK}, 'object {"q": […], "k": […]}'),
        ({"kind": "layer", "bias": {"k": [0] * DK}}, "without k_norm"),
        ("layer", "qk_norm must be an object"),
    ],
)
def test_wrong_settings_are_one_message(settings, words):
    doc = problem(0, q_norm=weights(0, DK), qk_norm=settings)
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**doc)
    assert words in e.value.message("en")
    assert "{" not in e.value.message("ko").replace('{"', "").replace("{{", "")


def test_settings_without_weights_are_one_message():
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**problem(0, qk_norm={"kind": "layer"}))
    assert "neither q_norm nor k_norm" in e.value.message("en")


def test_over_the_projection_refuses_the_backward_pass_and_the_cache():
    doc = problem(0, **CASES["over the projection, rms (OLMo 2)"])
    target = np.zeros((N, D)).tolist()
    with pytest.raises(QkvcalcError) as e:
        run(replace(Problem.from_mapping({**doc, "target": target}), backward=True))
    assert "every head's row" in e.value.message("en")
    with pytest.raises(QkvcalcError) as e:
        qkvcalc.explain(**{**doc, "decode": 2})
    assert "KV cache" in e.value.message("en")


@pytest.mark.parametrize("name", ["per head, layer, a bias", "after RoPE (HunYuan)"])
def test_a_decode_run_keeps_the_norm(name):
    """Per head (and after RoPE) the norm reads each row alone: decoding one token at a time
    with a cache gives the whole run's output."""
    doc = problem(4, **CASES[name])
    whole = qkvcalc.explain(**doc).output
    decoded = qkvcalc.explain(**{**doc, "decode": 2})
    _, expected = attention(doc)
    np.testing.assert_allclose(whole, expected, atol=1e-12)
    np.testing.assert_allclose(decoded.output, expected, atol=1e-12)


def test_one_head_of_a_layer_keeps_its_own_norm_rows():
    """qkvcalc heads' split: head h's problem carries row h of q_norm and of its bias, row g of
    k_norm, and gives head h's weights; over the projection a head cannot stand alone."""
    from qkvcalc.extract.heads import split_head

    doc = problem(6, **CASES["per head, layer, a bias"])
    layer = qkvcalc.explain(**doc)
    for h in (1, 3, 4):
        alone = qkvcalc.explain(**split_head(doc, h))
        np.testing.assert_allclose(
            alone.stage("weights").value, layer.stage("weights", head=h).value, atol=1e-12
        )
    with pytest.raises(QkvcalcError) as e:
        split_head(problem(6, **CASES["over the projection, rms (OLMo 2)"]), 1)
    assert "qk_norm" in e.value.message("en")
