"""tests/naive_modern.py, the oracle of the modern keys, checked on its own: without modern keys
it agrees with qkvcalc's engine on every preset; the parts no real model of test_extract reaches
("pairs" RoPE, bottom-right alignment, the sinusoidal encoding, a fully masked row) against
what DESIGN.md says they are."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from qkvcalc.input.dataset import first_example
from tests.conftest import ROOT
from tests.naive_modern import alibi_slopes, attention, number

# softmax attention's presets (a linear-attention layer has its own naive loop:
# test_gated_delta.py, test_kimi_delta.py, test_lightning.py; the sparse-attention indexer its
# own naive selection: test_indexer.py)
PRESETS = sorted(
    path
    for path in (ROOT / "presets").glob("*.json")
    if not {"gated_delta", "kimi_delta", "lightning", "indexer"}
    & set(json.loads(path.read_text(encoding="utf-8")))
)
RNG = np.random.default_rng(16)


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_without_modern_keys_it_agrees_with_the_engine(path):
    """The engine is checked against PyTorch elsewhere (test_torch_oracle); here the two agree
    on the presets, number strings, flat X, cross-attention and GQA included."""
    import qkvcalc

    doc = first_example(json.loads(path.read_text(encoding="utf-8")))  # a data set: its first
    # float64: a lesson preset's dtype is the precision lab's (tests/test_precision.py)
    skip = ("reference", "dtype", "policy")
    trace = qkvcalc.explain(**{k: v for k, v in doc.items() if k not in skip})
    # The oracle knows neither key: a decode run is the causal run (DESIGN.md), and tiles
    # compute the same output without ever holding the whole weights matrix.
    weights, output = attention({**doc, "mask": "causal"} if "decode" in doc else doc)
    assert np.allclose(output, trace.output, atol=1e-12)
    if "tiles" in doc:
        assert not any(stage.id == "weights" for stage in trace.stages)
        return
    if "decode" in doc:
        # The prefill's weights are the causal run's top-left corner; step s is row P + s - 1,
        # over the P + s keys cached by then.
        prefill = doc["decode"]
        assert np.allclose(trace.stage("weights", step=0).value, weights[0][:prefill, :prefill])
        for s in range(1, len(doc["x"]) - prefill + 1):
            row = prefill + s - 1
            assert np.allclose(
                trace.stage("weights", step=s).value, weights[0][row : row + 1, : row + 1]
            )
        return
    heads = doc.get("heads", 1)
    for h in range(1, heads + 1):
        stage = trace.stage("weights", head=h) if heads > 1 else trace.stage("weights")
        assert np.allclose(weights[h - 1], stage.value, atol=1e-12)


def test_number_strings():
    assert number("1/sqrt(2)") == 1 / math.sqrt(2) and number("-3e-2") == -0.03
    assert number("7/2") == 3.5 and number(" sqrt(4) ") == 2.0 and number(3) == 3.0


def problem(n=4, d=8, heads=2, **extra):
    return {
        "x": RNG.normal(size=(n, d)).tolist(),
        "wq": RNG.normal(size=(d, d)).tolist(),
        "wk": RNG.normal(size=(d, d)).tolist(),
        "wv": RNG.normal(size=(d, d)).tolist(),
        "heads": heads,
        **extra,
    }


def test_pairs_rope_is_half_rope_on_interleaved_columns():
    """Pairing 2i with 2i+1 is pairing i with i + R/2 after the columns are reordered."""
    doc = problem(mask="causal")
    d_k = 4
    order = [0, 2, 1, 3]  # per head: pairs (0,1), (2,3) → half pairs (0,2), (1,3)
    perm = [h * d_k + c for h in range(2) for c in order]
    half = {**doc, "rope": {"style": "half", "theta": 100}}
    for key in ("wq", "wk"):
        half[key] = np.array(doc[key])[:, perm].tolist()
    pairs = {**doc, "rope": {"style": "pairs", "theta": 100}}
    w_pairs, _ = attention(pairs)
    w_half, _ = attention(half)
    assert np.allclose(w_pairs, w_half, atol=1e-12)


def test_rope_makes_scores_depend_on_distance_only():
    doc = problem(n=3, heads=1, rope={"theta": 10})
    shifted = {**doc, "positions": [5, 6, 7]}
    assert np.allclose(attention(doc)[0], attention(shifted)[0], atol=1e-12)
    assert not np.allclose(attention(doc)[0], attention({**doc, "rope": None})[0])


def test_bottom_right_alignment_and_windows():
    doc = problem(n=2, heads=1)
    doc["source"] = RNG.normal(size=(4, 8)).tolist()
    weights, _ = attention({**doc, "mask": "causal", "causal_align": "bottom-right"})
    assert (weights[0][0] > 0).tolist() == [True, True, True, False]  # query at position 2
    weights, _ = attention({**doc, "mask": "causal", "causal_align": "bottom-right", "window": 2})
    assert (weights[0][0] > 0).tolist() == [False, True, True, False]


def test_a_fully_masked_row_gives_zeros():
    doc = problem(n=2, heads=1, mask=[[0, 0], [1, 1]])
    weights, output = attention(doc)
    assert weights[0][0].tolist() == [0.0, 0.0] and output[0].tolist() == [0.0] * 8


def test_sinusoidal_encoding_follows_the_paper():
    doc = problem(n=3, d=4, heads=1, positional="sinusoidal")
    pe = np.array(
        [[math.sin(p), math.cos(p), math.sin(p / 100), math.cos(p / 100)] for p in range(3)]
    )
    moved = {**doc, "x": (np.array(doc["x"]) + pe).tolist()}
    moved.pop("positional")
    assert np.allclose(attention(doc)[1], attention(moved)[1], atol=1e-12)


def test_alibi_slopes_follow_the_paper():
    assert alibi_slopes(8) == [2.0**-k for k in range(1, 9)]
    twelve = alibi_slopes(12)
    assert twelve[:8] == alibi_slopes(8)
    assert np.allclose(twelve[8:], [2 ** (-0.5 * k) for k in (1, 3, 5, 7)])


def test_softcap_and_score_bias_order():
    """softcap · tanh((scaled + bias) / softcap): the bias goes in before the cap."""
    doc = problem(n=3, heads=1)
    bias = RNG.normal(size=(3, 3)).tolist()
    weights, _ = attention({**doc, "score_bias": bias, "softcap": 1.5})
    q = np.array(doc["x"]) @ np.array(doc["wq"])
    k = np.array(doc["x"]) @ np.array(doc["wk"])
    s = 1.5 * np.tanh((q @ k.T / math.sqrt(8) + np.array(bias)) / 1.5)
    expected = np.exp(s - s.max(axis=1, keepdims=True))
    assert np.allclose(weights[0], expected / expected.sum(axis=1, keepdims=True), atol=1e-12)
