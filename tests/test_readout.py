"""qkvcalc.plan.readout: facts, not wording. The spread of a dot product grows like d_k and scaling
by 1/√d_k brings it back to 1; weights are never negative and masked ones are exactly 0; the
reading line's percentages add up to 100; q·k = |q||k|cos θ; the bundled presets tell the
stories their references claim."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qkvcalc
from qkvcalc.i18n import Msg, translate
from qkvcalc.input.problem import Problem
from qkvcalc.plan.readout import (
    _key_parts,
    aligned_and_strongest,
    alignment_msg,
    dot_product_spread,
    geometry_msg,
    reading_msg,
    reading_msgs,
    scale_comparison,
    scale_shown_msg,
    score_geometry,
    softmax_row,
    strongest_keys,
    whole_percentages,
)
from qkvcalc.run.engine import run
from qkvcalc.trace import Trace
from tests.conftest import ROOT


def _preset(name: str) -> dict:
    return json.loads((ROOT / "presets" / f"{name}.json").read_text(encoding="utf-8"))


def _trace(name: str) -> Trace:
    return run(Problem.from_mapping(_preset(name)))


def _stage(trace, sid, head=None):
    return next(s for s in trace.stages if s.id == sid and s.head == head)


# ---- why √d_k: the variance of a dot product ---------------------------------------------------


@pytest.mark.parametrize("d_k", [1, 4, 16, 64, 256])
def test_a_dot_product_of_unit_variance_components_has_variance_d_k(d_k):
    raw, scaled = dot_product_spread(d_k, samples=40000, seed=d_k)
    # the sample variance of 40000 draws is within a few percent of the truth
    assert raw == pytest.approx(d_k, rel=0.06)
    assert scaled == pytest.approx(1.0, rel=0.06)


def test_the_spread_check_is_independent_of_the_helper():
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((2, 50000, 64))
    dots = (q * k).sum(axis=1)
    assert dots.mean() == pytest.approx(0.0, abs=0.15)
    assert dots.var() == pytest.approx(64, rel=0.05)
    assert (dots / 8).var() == pytest.approx(1.0, rel=0.05)
    # dividing by d_k instead of √d_k would shrink the spread to 1/d_k: the square root is what
    # makes it 1
    assert (dots / 64).var() == pytest.approx(1 / 64, rel=0.05)


def test_softmax_ignores_a_constant_shift_but_not_a_larger_spread():
    row = np.array([1.0, 0.5, -0.25, 2.0])
    assert np.allclose(softmax_row(row), softmax_row(row + 100.0))
    assert softmax_row(row * 8).max() > softmax_row(row).max()


# ---- weights: non-negative, masked exactly 0 -------------------------------------------------

rows = st.lists(st.floats(-50, 50), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), row=rows)
def test_weights_are_non_negative_sum_to_one_and_masked_ones_are_exactly_zero(data, row):
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=len(row), max_size=len(row))))
    w = softmax_row(row, allowed)
    assert (w >= 0).all()
    assert (w[~allowed] == 0.0).all()
    if allowed.any():
        assert w.sum() == pytest.approx(1.0)
    else:
        assert (w == 0).all()


def test_the_scale_sharpens_or_flattens_like_a_temperature():
    scores = np.array([7.0, 2.0, 5.0])
    default = scale_comparison(scores, d_k=2)
    assert default.scale == pytest.approx(1 / math.sqrt(2))
    assert default.temperature == pytest.approx(math.sqrt(2))
    assert default.peak_unscaled > default.peak_scaled  # without 1/√d_k: sharper
    hot = scale_comparison(scores, d_k=2, scale=0.1)
    cold = scale_comparison(scores, d_k=2, scale=3.0)
    assert hot.peak_scaled < default.peak_scaled < cold.peak_scaled
    # masked keys stay exactly 0 on both sides
    masked = scale_comparison(scores, 2, allowed_row=[True, False, True])
    assert masked.scaled[1] == 0.0 and masked.unscaled[1] == 0.0


def test_the_realistic_preset_makes_the_difference_dramatic():
    """dk64: random unit-variance q and k with d_k = 64. Unscaled, every query puts more than
    99% of its weight on one key; scaled by 1/8, no query puts more than two thirds on one."""
    doc = _preset("dk64")
    q, k = np.array(doc["q"]), np.array(doc["k"])
    assert q.shape[1] == k.shape[1] == 64
    scores = q @ k.T
    assert 3 < scores.std() < 16  # typical size ≈ √64 = 8
    for row in scores:
        c = scale_comparison(row, d_k=64)
        assert c.peak_unscaled > 0.99
        assert c.peak_scaled < 2 / 3
    # and the engine agrees with the scaled side
    weights = _stage(_trace("dk64"), "weights").value
    for i, row in enumerate(scores):
        assert np.allclose(weights[i], scale_comparison(row, 64).scaled)


def test_the_realistic_preset_is_what_its_reference_says():
    """The reference gives the script that made the numbers: running it gives them back."""
    doc = _preset("dk64")
    assert "default_rng(64)" in doc["reference"]
    rng = np.random.default_rng(64)
    q = rng.standard_normal((4, 64)).round(2)
    k = rng.standard_normal((4, 64)).round(2)
    v = rng.integers(-3, 4, (4, 2))
    assert np.array_equal(np.array(doc["q"]), q)
    assert np.array_equal(np.array(doc["k"]), k)
    assert np.array_equal(np.array(doc["v"]), v)


# ---- the reading line ---------------------------------------------------------------------------


def test_percentages_add_up_to_100_and_equal_weights_get_equal_ones():
    for weights in ([0.6200, 0.0743, 0.3057], [0.5, 0.5], [1.0], [0.995, 0.005]):
        assert whole_percentages(np.array(weights)).sum() == 100
    assert whole_percentages(np.zeros(3)).sum() == 0
    # equal weights never read as different: the cross preset's 'le' row, and thirds
    assert whole_percentages(np.array([0.7112, 0.0963, 0.0963, 0.0963])).tolist() == [71, 9, 9, 9]
    assert whole_percentages(np.array([1 / 3] * 3)).tolist() == [33, 33, 33]
    assert whole_percentages(np.array([0.4458, 0.4458, 0.1084])).tolist() == [44, 44, 11]
    # equal remainders of different weights: the earlier key first, as before
    assert whole_percentages(np.array([0.105, 0.205, 0.69])).tolist() == [11, 20, 69]


def _percentages_key_by_key(weights: np.ndarray) -> list[int]:
    """The largest-remainder rule as its docstring says it, one group of equal weights at a
    time: what whole_percentages' vectorised path for rows without ties must agree with."""
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if w.size == 0 or total <= 0:
        return [0] * w.size
    groups: list[list[int]] = []
    for j in sorted(range(w.size), key=lambda j: -w[j]):
        if groups and math.isclose(w[j], w[groups[-1][0]], rel_tol=1e-12, abs_tol=0.0):
            groups[-1].append(j)
        else:
            groups.append([j])
    exact = [0.0] * w.size
    for keys in groups:
        for j in keys:
            exact[j] = float(w[keys[0]]) / total * 100.0
    out = [math.floor(e) for e in exact]
    missing = 100 - sum(out)
    for keys in sorted(groups, key=lambda keys: (-(exact[keys[0]] - out[keys[0]]), keys[0])):
        if len(keys) > missing:
            break
        for j in keys:
            out[j] += 1
        missing -= len(keys)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(0, 1, allow_nan=False),
            st.sampled_from([0.0, 0.25, 1 / 3, 0.1 + 0.2, 0.3, 1e-300, 5e-324]),
        ),
        min_size=1,
        max_size=40,
    ),
    st.booleans(),
)
@example([1 / 3, math.nextafter(1 / 3, 1), math.nextafter(1 / 3, 0)], False)  # noise: one group
@example([1.0, 1.0 + 2.5e-12, 0.5], False)  # just past the noise: two groups
def test_percentages_agree_with_the_rule_key_by_key(values, softmaxed):
    """Rows with and without (near-)equal weights, raw or as a softmax makes them (a real
    layer's rows have no ties and take the vectorised path; the others the grouped one)."""
    w = np.array(values)
    if softmaxed:
        w = np.exp(w * 30 - (w * 30).max())
        w = w / w.sum()
    assert whole_percentages(w).tolist() == _percentages_key_by_key(w)


def test_a_real_layers_rows_agree_with_the_rule_key_by_key():
    rng = np.random.default_rng(7)
    s = rng.standard_normal((64, 1024)) * 3
    w = np.exp(s - s.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    for row in w:
        assert whole_percentages(row).tolist() == _percentages_key_by_key(row)


def test_a_row_that_misses_100_for_its_equal_weights_says_so():
    trace = _trace("cross")
    text = qkvcalc.render(trace, "table", width=100)
    assert "le → the 71%, cat 9%, is 9%, sleeping 9%" in text
    assert "so a query whose equal weights cannot all take the" in text
    assert "Equal weights" not in qkvcalc.render(_trace("sentence"), "table", width=100)


@settings(max_examples=200, deadline=None)
@given(
    weights=st.lists(st.floats(0, 1), min_size=1, max_size=20),
    k=st.integers(1, 5),
    data=st.data(),
)
def test_a_reading_line_adds_up_and_never_lists_a_masked_key(weights, k, data):
    w = np.array(weights)
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=w.size, max_size=w.size)))
    w = np.where(allowed, w, 0.0)
    tokens = [f"t{j}" for j in range(w.size)]
    reading = strongest_keys(w, allowed, tokens, k)
    listed = {s.token for s in reading.top}
    assert not listed & set(reading.masked)
    assert set(reading.masked) >= {tokens[j] for j in np.flatnonzero(~allowed)}
    # k keys, or k + 1 when "the others" would be a single key (it is named instead)
    assert len(reading.top) <= k or (len(reading.top) == k + 1 and reading.rest_count == 0)
    assert reading.rest_count != 1
    if reading.rest_count and reading.rest == 0:  # positive weights left: "<1%", never "0%"
        said = "ui.reading_rest_small" if reading.rest_weight else "ui.reading_rest"
        assert _key_parts(reading)[-1].key == said
    if reading.all_masked:
        assert reading.total == 0
    else:
        # 100, unless equal weights could not all take the last points: then fewer points
        # are missing than the keys of one weight
        open_weights = w[allowed]
        tied = max(int(np.isclose(open_weights, x, rtol=1e-12, atol=0).sum()) for x in open_weights)
        assert 100 - tied < reading.total <= 100
        # the strongest first, equal weights equal, each within a point of the exact share
        shares = [s.weight for s in reading.top]
        assert shares == sorted(shares, reverse=True)
        for a, b in zip(reading.top, reading.top[1:], strict=False):
            equal = np.isclose(a.weight, b.weight, rtol=1e-12, atol=0)
            assert a.percent == b.percent or not equal
        total = w[allowed].sum()
        for s in reading.top:
            assert abs(s.percent - 100 * s.weight / total) < 1


def test_the_sentence_preset_reads_as_the_issue_says():
    trace = _trace("sentence")
    weights = _stage(trace, "weights").value
    allowed = _stage(trace, "masked").allowed
    tokens = ["I", "love", "cats"]
    cats = strongest_keys(weights[2], allowed[2], tokens)
    assert cats.items() == [("I", 62), ("cats", 31), ("love", 7)]
    line = reading_msg("cats", cats).text("en")  # "cats → I 62%, cats 31%, love 7%"
    spots = [line.index(part) for part in ("cats", "I 62%", "cats 31%", "love 7%")]
    assert spots == sorted(spots)
    first = strongest_keys(weights[0], allowed[0], tokens)
    # masked keys are marked masked, not shown as a weight of 0
    assert first.items() == [("I", 100), ("love", None), ("cats", None)]
    line = reading_msg("I", first).text("en")
    assert not re.search(r"\b0(\.0+)?%?(?!\d)", line.split("→")[1]), line
    assert "love" in line and "cats" in line


def test_a_small_weight_is_shown_as_below_one_percent_not_as_zero():
    reading = strongest_keys([0.996, 0.004], None, ["a", "b"])
    assert reading.items() == [("a", 100), ("b", 0)]
    assert reading.top[1].small
    assert "<1%" in reading_msg("a", reading).text("en")


def test_a_row_with_every_key_masked_reads_as_such():
    reading = strongest_keys([0.0, 0.0], [False, False], ["a", "b"])
    assert reading.all_masked and reading.total == 0
    assert reading_msg("q", reading).key == "note.reading_all_masked"


def test_the_rest_is_summed_when_keys_are_left_out():
    reading = strongest_keys([0.1, 0.2, 0.3, 0.4], None, list("abcd"), k=2)
    assert [s.token for s in reading.top] == ["d", "c"]
    assert reading.rest == 30 and reading.rest_count == 2


# ---- a score as geometry ---------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    pair=st.integers(1, 8).flatmap(
        lambda d: st.tuples(
            st.lists(st.floats(-100, 100), min_size=d, max_size=d),
            st.lists(st.floats(-100, 100), min_size=d, max_size=d),
        )
    )
)
def test_a_dot_product_is_lengths_times_the_cosine(pair):
    q, k = pair
    g = score_geometry(q, k)
    assert g.dot == pytest.approx(float(np.dot(q, k)), abs=1e-9)
    if g.cos is None:
        assert g.q_norm == 0 or g.k_norm == 0
    else:
        assert -1 <= g.cos <= 1
        assert g.product == pytest.approx(g.dot, rel=1e-9, abs=1e-6)


def test_the_sentence_presets_lesson_length_beats_direction():
    """The query of 'love' points exactly along its own key, yet gives 80% of its weight to
    'I', whose key is longer."""
    trace = _trace("sentence")
    q, k = _stage(trace, "q").value, _stage(trace, "k").value
    allowed = _stage(trace, "masked").allowed
    own = score_geometry(q[1], k[1])
    assert own.cos == pytest.approx(1.0)
    to_i = score_geometry(q[1], k[0])
    assert to_i.cos < 1 and to_i.k_norm > own.k_norm and to_i.dot > own.dot
    assert to_i.agrees and own.agrees
    a = aligned_and_strongest(q[1], k, allowed[1])
    assert a is not None and a.differ and (a.aligned, a.strongest) == (1, 0)
    text = alignment_msg("love", ["I", "love", "cats"], a).text("en")
    assert "love" in text and "I" in text
    assert _stage(trace, "weights").value[1, 0] == pytest.approx(0.8044, abs=1e-4)
    # 1 × 3.1623 × 0.9487 is 3.0001 as shown: the read-out says ≈ (issue 25: every "=" holds)
    assert geometry_msg("love", "I", to_i).text("en").endswith("≈ 3.")


small_ints = st.integers(-3, 3).map(float)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda d: st.tuples(
            st.lists(small_ints, min_size=d, max_size=d),
            st.lists(st.lists(small_ints, min_size=d, max_size=d), min_size=1, max_size=6),
        )
    ),
    st.data(),
)
def test_the_best_aligned_and_strongest_keys_are_those_found_one_key_at_a_time(qk, data):
    """All keys at once picks what score_geometry, key by key, picks: the first key of the
    largest cos θ (a zero key never) and the first of the largest q·k, among the allowed."""
    q, k = np.array(qk[0]), np.array(qk[1])
    allowed = data.draw(st.lists(st.booleans(), min_size=len(k), max_size=len(k)))
    found = aligned_and_strongest(q, k, allowed)
    candidates = [j for j in range(len(k)) if allowed[j]]
    if not candidates or not q.any():
        assert found is None
        return
    geos = {j: score_geometry(q, k[j]) for j in candidates}
    cos = {j: -math.inf if g.cos is None else g.cos for j, g in geos.items()}
    assert found is not None
    assert found.aligned == max(candidates, key=lambda j: (cos[j], -j))
    assert found.strongest == max(candidates, key=lambda j: (geos[j].dot, -j))
    assert found.aligned_geometry == geos[found.aligned]
    assert found.strongest_geometry == geos[found.strongest]


def test_a_zero_vector_has_no_angle():
    g = score_geometry([0.0, 0.0], [1.0, 2.0])
    assert g.cos is None and g.dot == 0 and g.agrees
    assert geometry_msg("q", "k", g).key == "note.geometry_zero"


# ---- the story preset --------------------------------------------------------------------------


def test_the_pronoun_preset_lands_it_on_cat():
    doc = _preset("pronoun")
    tokens = doc["tokens"]
    trace = _trace("pronoun")
    weights = _stage(trace, "weights").value
    allowed = _stage(trace, "masked").allowed
    it = tokens.index("it")
    reading = strongest_keys(weights[it], allowed[it], tokens)
    assert reading.top[0].token == "cat"
    assert f"{reading.top[0].percent}%" in doc["reference"]  # the reference quotes the number
    assert reading.top[0].percent > 50
    # 'it' cannot see the words after it (causal), and its output is mostly cat's value
    assert set(reading.masked) == {"was", "tired"}
    v = _stage(trace, "v").value
    out = _stage(trace, "output").value[it]
    nearest = np.argmin(np.linalg.norm(v[: it + 1] - out, axis=1))
    assert tokens[nearest] == "cat"
    # the caveat is there, in both languages
    assert "rarely this clean" in doc["reference"]
    assert "드물" in translate("preset.pronoun.reference", "ko")


# ---- messages ------------------------------------------------------------------------------


def test_every_readout_message_exists_in_both_languages():
    reading = strongest_keys([0.5, 0.3, 0.2, 0.0], [True, True, True, False], list("abcd"), 2)
    comparison = scale_comparison(np.array([7.0, 2.0, 5.0, 1.0]), 2, [True, True, True, False])
    msgs: list[Msg] = [
        reading_msg("a", reading),
        scale_shown_msg("a", list("abcd"), comparison, [True, True, True, False]),
        geometry_msg("a", "b", score_geometry([1, 2], [1, 3])),
    ]
    for msg in msgs:
        for lang in ("en", "ko"):
            text = msg.text(lang)
            assert "{" not in text and "a" in text
    ko = msgs[0].text("ko")
    assert "마스킹" in ko and "d" in ko


def test_every_query_gets_a_reading_line():
    trace = _trace("pronoun")
    tokens = _preset("pronoun")["tokens"]
    weights = _stage(trace, "weights").value
    lines = reading_msgs(weights, _stage(trace, "masked").allowed, tokens, tokens)
    assert len(lines) == len(tokens)
    assert lines[tokens.index("it")].text("en").startswith("it → cat 81%")
    assert lines[0].text("ko").startswith("the → the 100%; 마스킹됨:")


def _why_scale(trace: Trace, head: int | None = None) -> Msg | None:
    scaled = trace.stage("scaled", head=head)
    found = [n for n in scaled.notes if n.key.startswith("note.why_scale_shown")]
    return found[0] if found else None


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    alibi=st.booleans(),
    softcap=st.sampled_from([None, 0.7, 3.0]),
    scale=st.sampled_from([None, 0.25, 2.0]),
    causal=st.booleans(),
    tiles=st.sampled_from([None, 2]),
)
# found by CI: a saturated cap makes every weight of the last row equal, said as equal
@example(seed=77, alibi=False, softcap=0.7, scale=2.0, causal=False, tiles=None)
def test_why_scale_with_it_is_the_last_row_of_the_weights_table(
    seed, alibi, softcap, scale, causal, tiles
):
    """'Why scale, shown' runs the head's own stages again (bias, ALiBi, softcap, mask, a given
    scale included): its "with it" reading is the weights table's last row, in every run, and
    its "without" is those stages with the scale 1. It is left out where nothing changes."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 5)), 2
    doc = {
        "x": rng.normal(0, 2, (n, d)).round(2).tolist(),
        "wq": rng.normal(0, 1, (d, d)).round(2).tolist(),
        "wk": rng.normal(0, 1, (d, d)).round(2).tolist(),
        "wv": rng.normal(0, 1, (d, d)).round(2).tolist(),
        "mask": "causal" if causal else "none",
    }
    doc |= {"alibi": [0.5]} if alibi else {}
    doc |= {"softcap": softcap} if softcap else {}
    doc |= {"scale": scale} if scale else {}
    doc |= {"tiles": tiles} if tiles else {}
    trace = run(Problem.from_mapping(doc))
    p = trace.problem
    note = _why_scale(trace)
    weights = (
        trace.weights[-1]
        if tiles is None
        else softmax_row(*_last_logits(trace))  # tiles hold no weights table: their softmax
    )
    allowed = None if not causal else np.arange(n) <= n - 1
    expected = reading_msg(p.tokens[-1], strongest_keys(weights, allowed, p.source_tokens))
    if note is None:  # only where the scale changes nothing on that row (a saturated cap …)
        unscaled = run(Problem.from_mapping(doc | {"scale": 1.0, "tiles": None}))
        assert np.allclose(unscaled.weights[-1], weights, rtol=0, atol=1e-12)
        return
    if expected.key.startswith("note.reading_equal"):  # equal weights, said to be equal
        assert note.params["scaled"] == Msg("ui.reading_equal", count=expected.params["count"])
        return
    assert note.params["scaled"] == expected.params["keys"]
    assert note.key == ("note.why_scale_shown_given" if scale else "note.why_scale_shown")


def _last_logits(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    last = [s for s in trace.stages if s.id in ("scaled", "biased", "capped", "masked")][-1]
    row = last.value[-1]
    return row, np.isfinite(row)


def test_why_scale_is_left_out_where_the_scale_is_one():
    """d_k = 1 and no scale given: the scale is 1, so "without" and "with" would be the same."""
    doc = {"x": [[1], [2], [3]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}
    assert _why_scale(run(Problem.from_mapping(doc))) is None


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), causal=st.booleans(), sink=st.sampled_from([-2.0, 0.5, 3]))
def test_why_scale_with_a_sink_reads_as_the_weights_reading_line(seed, causal, sink):
    """With a sink the shares of a row include the sink's: "with it" is the very reading line
    printed under the weights (which names σ), not a softmax of the weights again."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    doc = {
        "x": rng.normal(0, 2, (n, 2)).round(2).tolist(),
        "wq": rng.normal(0, 1, (2, 2)).round(2).tolist(),
        "wk": rng.normal(0, 1, (2, 2)).round(2).tolist(),
        "wv": rng.normal(0, 1, (2, 2)).round(2).tolist(),
        "mask": "causal" if causal else "none",
        "sinks": [sink],
    }
    trace = run(Problem.from_mapping(doc))
    note = _why_scale(trace)
    last = trace.problem.tokens[-1]
    lines = [m for m in trace.stage("weights").notes if m.params.get("query") == last]
    assert len(lines) == 1
    if note is not None:
        assert note.params["scaled"] == lines[0].params["keys"]


def test_equal_weights_are_said_to_be_equal_not_34_33_33():
    trace = run(
        Problem.from_mapping(
            {
                "x": [[1, 0], [1, 0], [1, 0]],
                "wq": [[1, 0], [0, 1]],
                "wk": [[0, 0], [0, 0]],
                "wv": [[1, 0], [0, 1]],
            }
        )
    )
    notes = [n for n in trace.find("weights", None).notes if n.key.startswith("note.reading")]
    assert [n.key for n in notes[1:4]] == ["note.reading_equal"] * 3
    assert "1/3 each" in notes[1].text("en") and "34%" not in notes[1].text("en")


def test_a_positive_rest_is_never_said_as_0_percent():
    w = np.array([0.996, 0.001, 0.001, 0.001, 0.001])
    reading = strongest_keys(w, None, [f"t{j}" for j in range(5)], k=3)
    assert reading.rest == 0 and reading.rest_count == 2
    assert translate("ui.reading_rest_small", "en") in reading_msg("q", reading).text("en")


def test_a_repeated_token_is_named_by_its_position():
    trace = _trace("rope")  # "cat sat cat sat"
    lines = [n.text("en") for n in trace.find("weights", None).notes]
    assert any(line.startswith("cat (3) →") for line in lines)
    assert not any(line.startswith("cat →") for line in lines)
