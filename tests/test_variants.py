"""Modern attention: positions, windows, position encodings, q/k norm, RoPE, ALiBi, score
biases and softcapping — each checked against a plain re-derivation written here (loops over
cells, no qkvcalc code), against the properties that make each one what it is, and through
the real command line for the messages that teach.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.presets import load
from qkvcalc.input.variants import sinusoidal
from qkvcalc.ops.score_bias import alibi_slopes
from tests.conftest import in_process

RNG = np.random.default_rng(11)


def _doc(n=4, d=4, heads=1, kv_heads=None, **extra):
    rng = np.random.default_rng(n * 100 + d)
    kv = kv_heads or heads
    d_k = d // heads
    doc = {
        "x": rng.standard_normal((n, d)).round(3).tolist(),
        "wq": rng.standard_normal((d, heads * d_k)).round(3).tolist(),
        "wk": rng.standard_normal((d, kv * d_k)).round(3).tolist(),
        "wv": rng.standard_normal((d, kv * d_k)).round(3).tolist(),
        "heads": heads,
        "kv_heads": kv,
    }
    doc.update(extra)
    return doc


# ---- a plain re-derivation, cell by cell ----------------------------------------------------


def _rotate_loop(vec, pos, inv_freq, style, dims, factor=1.0):
    out = list(vec)
    for k, w in enumerate(inv_freq):
        a_i, b_i = (k, k + dims // 2) if style == "half" else (2 * k, 2 * k + 1)
        t = pos * w
        a, b = vec[a_i], vec[b_i]
        out[a_i] = factor * (a * math.cos(t) - b * math.sin(t))
        out[b_i] = factor * (b * math.cos(t) + a * math.sin(t))
    return out


def _reference(doc):
    """softmax(c·tanh((q̃·k̃ᵀ·scale + B)/c) + M)·V, head by head, with loops."""
    x = np.array(doc["x"], dtype=float)
    n, d = x.shape
    if doc.get("positional") == "sinusoidal":
        for pos in range(n):
            for c in range(d):
                angle = pos / 10000 ** (2 * (c // 2) / d)
                x[pos, c] += math.sin(angle) if c % 2 == 0 else math.cos(angle)
    heads, kv = doc["heads"], doc["kv_heads"]
    wq, wk, wv = (np.array(doc[k], dtype=float) for k in ("wq", "wk", "wv"))
    d_k = wq.shape[1] // heads
    positions = doc.get("positions", list(range(n)))
    rope = doc.get("rope")
    outs, weights = [], []
    for h in range(heads):
        g = (h * kv) // heads
        q = x @ wq[:, h * d_k : (h + 1) * d_k]
        k = x @ wk[:, g * d_k : (g + 1) * d_k]
        v = x @ wv[:, g * d_k : (g + 1) * d_k]
        for name, mat in (("q_norm", q), ("k_norm", k)):
            if name in doc:
                for i in range(n):
                    rms = math.sqrt(sum(c * c for c in mat[i]) / d_k + doc.get("norm_eps", 1e-6))
                    mat[i] = [mat[i][c] / rms * doc[name][c] for c in range(d_k)]
        if rope is not None:
            dims = rope.get("dims", d_k)
            inv = [rope.get("theta", 10000) ** (-2 * t / dims) for t in range(dims // 2)]
            style = rope.get("style", "half")
            q = np.array([_rotate_loop(q[i], positions[i], inv, style, dims) for i in range(n)])
            k = np.array([_rotate_loop(k[i], positions[i], inv, style, dims) for i in range(n)])
        s = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                s[i, j] = sum(q[i, c] * k[j, c] for c in range(d_k)) / math.sqrt(d_k)
                if doc.get("alibi"):
                    slope = alibi_slopes(heads)[0][h]
                    s[i, j] -= slope * abs(positions[i] - positions[j])
                if "softcap" in doc:
                    c = doc["softcap"]
                    s[i, j] = c * math.tanh(s[i, j] / c)
                causal = doc.get("mask") == "causal"
                if causal and positions[j] > positions[i]:
                    s[i, j] = -math.inf
                if "window" in doc and positions[i] - positions[j] >= doc["window"]:
                    s[i, j] = -math.inf
                size = doc.get("chunk_size")
                if size and positions[i] // size != positions[j] // size:
                    s[i, j] = -math.inf
        a = np.zeros_like(s)
        for i in range(n):
            top = max(s[i])
            e = [math.exp(t - top) for t in s[i]]
            a[i] = [t / sum(e) for t in e]
        weights.append(a)
        outs.append(a @ v)
    return np.stack(weights), np.hstack(outs)


CASES = {
    "rope half": {"rope": {"theta": 10000}, "mask": "causal"},
    "rope pairs": {"rope": {"theta": 500, "style": "pairs"}},
    "rope partial": {"rope": {"theta": 10000, "dims": 2}, "mask": "causal"},
    "window": {"mask": "causal", "window": 2},
    "chunk": {"mask": "causal", "chunk_size": 3},
    "chunk at positions": {
        "positions": [1, 2, 4, 5],
        "mask": "causal",
        "chunk_size": 2,
        "rope": {},
    },
    "alibi": {"alibi": True, "mask": "causal"},
    "softcap": {"softcap": 0.7},
    "q/k norm": {"q_norm": [1, 0.5, 2, 1], "k_norm": [0.5, 1, 1, 1]},
    "sinusoidal": {"positional": "sinusoidal", "mask": "causal"},
    "positions": {"positions": [3, 5, 6, 10], "mask": "causal", "window": 4, "rope": {}},
    "everything": {
        "positional": "sinusoidal",
        "q_norm": [1, 0.5, 2, 1],
        "k_norm": [0.5, 1, 1, 1],
        "rope": {"theta": 100, "style": "pairs"},
        "alibi": True,
        "softcap": 2,
        "mask": "causal",
        "window": 3,
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_variant_matches_a_cell_by_cell_rederivation(case):
    doc = _doc(n=4, d=4, **CASES[case])
    trace = qkvcalc.explain(**doc)
    weights, output = _reference(doc)
    np.testing.assert_allclose(trace.stage("weights").value, weights[0], atol=1e-12)
    np.testing.assert_allclose(trace.output, output, atol=1e-12)


@pytest.mark.parametrize("case", ["rope half", "alibi", "everything"])
def test_variants_with_grouped_query_heads(case):
    extra = dict(CASES[case])
    for key in ("q_norm", "k_norm"):
        if key in extra:
            extra[key] = extra[key][:2]
    doc = _doc(n=5, d=8, heads=4, kv_heads=2, **extra)
    doc["wq"] = np.array(doc["wq"])[:, :8].tolist()
    doc["wk"] = np.array(doc["wk"])[:, :4].tolist()
    doc["wv"] = np.array(doc["wv"])[:, :4].tolist()
    trace = qkvcalc.explain(**doc)
    weights, output = _reference(doc)
    np.testing.assert_allclose(trace.weights, weights, atol=1e-12)
    np.testing.assert_allclose(trace.output, output, atol=1e-12)


# ---- what makes each one what it is ------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    shift=st.integers(-50, 50),
    style=st.sampled_from(["half", "pairs"]),
    theta=st.sampled_from([100.0, 10000.0, 500000.0]),
)
def test_rope_scores_depend_only_on_the_distance(shift, style, theta):
    """Moving every token by the same offset leaves every RoPE score unchanged."""
    doc = _doc(n=4, d=4, rope={"theta": theta, "style": style})
    base = qkvcalc.explain(**doc, positions=[0, 1, 2, 3]).stage("scores").value
    moved = [p + shift + 60 for p in range(4)]
    shifted = qkvcalc.explain(**doc, positions=moved).stage("scores").value
    np.testing.assert_allclose(shifted, base, atol=1e-9)


def test_rope_keeps_each_vector_length():
    trace = qkvcalc.explain(**_doc(rope={"theta": 10000}))
    q, q_rot = trace.stage("q").value, trace.stage("q_rot").value
    np.testing.assert_allclose(np.linalg.norm(q_rot, axis=1), np.linalg.norm(q, axis=1))


def test_partial_rope_leaves_the_other_dimensions_alone():
    doc = _doc(n=3, d=8, rope={"dims": 4})
    trace = qkvcalc.explain(**doc)
    np.testing.assert_array_equal(trace.stage("q_rot").value[:, 4:], trace.stage("q").value[:, 4:])
    assert not np.allclose(trace.stage("q_rot").value[1:, :4], trace.stage("q").value[1:, :4])


def test_rope_inv_freq_and_attention_factor():
    inv = [1.0, 0.25]
    plain = qkvcalc.explain(**_doc(rope={"inv_freq": inv}))
    scaled = qkvcalc.explain(**_doc(rope={"inv_freq": inv, "attention_factor": 2}))
    np.testing.assert_allclose(scaled.stage("q_rot").value, 2 * plain.stage("q_rot").value)
    assert plain.stage("q_rot").params["angles"][3].tolist() == [3.0, 0.75]


def test_the_shift_note_shows_equal_scores():
    trace = qkvcalc.explain(**load("rope"))
    note = next(n for n in trace.stage("scores").notes if n.key == "note.rope_shift")
    assert note.params["score"] == note.params["moved"]


@pytest.mark.parametrize(
    ("heads", "expected"),
    [
        (8, [2.0**-k for k in range(1, 9)]),
        (1, [2.0**-8]),
        # not a power of two: the 4-head slopes, then the odd ones of the 8-head series
        (6, [2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3]),
        (
            12,
            [2.0**-1 * 2.0 ** (-k) for k in range(8)] + [2.0**-0.5 * 2.0**-k for k in (0, 1, 2, 3)],
        ),
    ],
)
def test_alibi_slopes_follow_the_paper(heads, expected):
    slopes, exact = alibi_slopes(heads)
    np.testing.assert_allclose(slopes, expected)
    for value, fraction in zip(slopes, exact, strict=True):
        assert fraction is None or float(fraction) == value


def test_bloom_style_bias_gives_the_same_weights_under_a_causal_mask():
    """What the ALiBi note says: +slope·j differs from −slope·|i − j| by a constant per row."""
    doc = _doc(n=5, d=4, mask="causal", alibi=True)
    ours = qkvcalc.explain(**doc)
    slope = alibi_slopes(1)[0][0]
    bloom = np.tile(slope * np.arange(5.0), (5, 1))
    theirs = qkvcalc.explain(**{k: v for k, v in doc.items() if k != "alibi"}, score_bias=bloom)
    np.testing.assert_allclose(theirs.weights, ours.weights, atol=1e-12)
    assert not np.allclose(theirs.stage("biased").value, ours.stage("biased").value)


def test_score_bias_per_head_and_shared():
    doc = _doc(n=3, d=4, heads=2)
    bias = RNG.standard_normal((2, 3, 3))
    per_head = qkvcalc.explain(**doc, score_bias=bias.tolist())
    for h in (1, 2):
        scaled = per_head.stage("scaled", h).value
        np.testing.assert_allclose(per_head.stage("biased", h).value, scaled + bias[h - 1])
    shared = qkvcalc.explain(**doc, score_bias=bias[0].tolist())
    np.testing.assert_allclose(shared.stage("score_bias", 2).value, bias[0])


def test_softcap_bounds_every_score_and_comes_before_the_mask():
    doc = _doc(n=4, mask="causal", softcap=0.5, scale=3)
    trace = qkvcalc.explain(**doc)
    capped, biased = trace.stage("capped").value, trace.stage("scaled").value
    assert np.all(np.abs(capped) <= 0.5) and np.all(np.abs(capped) < np.abs(biased))
    assert trace.stage("masked").reads[0] == ("capped", None)


def test_window_keeps_the_w_most_recent_positions_including_the_query():
    trace = qkvcalc.explain(**_doc(n=6, mask="causal", window=3))
    allowed = trace.stage("masked").allowed
    for i in range(6):
        assert [j for j in range(6) if allowed[i, j]] == list(range(max(0, i - 2), i + 1))


def test_chunks_keep_the_keys_of_the_querys_own_chunk_up_to_itself():
    """Llama 4's chunked layers: with C = 3, positions 0–2 are one chunk and 3–5 the next, so
    query 3 sees itself alone (a window of 3 would let it see 1, 2 and 3), and query 5 sees 3–5."""
    trace = qkvcalc.explain(**_doc(n=6, mask="causal", chunk_size=3))
    allowed = trace.stage("masked").allowed
    for i in range(6):
        assert [j for j in range(6) if allowed[i, j]] == list(range(i - i % 3, i + 1))
    window = qkvcalc.explain(**_doc(n=6, mask="causal", window=3)).stage("masked").allowed
    assert window[3].sum() == 3 and allowed[3].sum() == 1


def test_the_chunk_note_is_true_of_its_mask():
    """What the note says (chunks of C from position 0, a chunk's first query sees nothing
    before it) holds of the mask shown, in both languages."""
    trace = qkvcalc.explain(**_doc(n=5, mask="causal", chunk_size=2))
    masked = trace.stage("masked")
    notes = [m for m in masked.notes if getattr(m, "key", "") == "note.chunk"]
    assert len(notes) == 1 and notes[0].params == {"chunk": 2, "last": 1}
    for i in (0, 2, 4):  # the first position of each chunk: no key before it
        assert not masked.allowed[i, :i].any() and masked.allowed[i, i]
    for lang in ("en", "ko"):
        assert "0…1" in notes[0].text(lang) and "C = 2" in notes[0].text(lang)


def test_bottom_right_alignment_and_explicit_positions():
    doc = {
        "q": [[1, 0], [0, 1]],
        "k": [[1, 0], [0, 1], [1, 1], [1, -1]],
        "v": [[1, 0], [0, 1], [1, 1], [2, 2]],
        "mask": "causal",
    }
    top = qkvcalc.explain(**doc).stage("masked").allowed
    bottom = qkvcalc.explain(**doc, causal_align="bottom-right").stage("masked").allowed
    assert top.tolist() == [[True, False, False, False], [True, True, False, False]]
    assert bottom.tolist() == [[True, True, True, False], [True, True, True, True]]
    same = qkvcalc.explain(**doc, positions=[2, 3]).stage("masked").allowed
    assert same.tolist() == bottom.tolist()


def test_sinusoidal_encoding_interleaves_sine_and_cosine():
    pe = sinusoidal(np.arange(3), 4)
    assert pe[0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert pe[2, 0] == pytest.approx(math.sin(2)) and pe[2, 1] == pytest.approx(math.cos(2))
    assert pe[2, 2] == pytest.approx(math.sin(2 / 100)) and pe[2, 3] == pytest.approx(
        math.cos(0.02)
    )


def test_without_positions_shuffling_tokens_only_shuffles_outputs_and_with_rope_it_does_not():
    doc = _doc(n=4, d=4)
    order = [2, 0, 3, 1]
    shuffled = dict(doc, x=[doc["x"][i] for i in order])
    plain = qkvcalc.explain(**doc).output
    np.testing.assert_allclose(qkvcalc.explain(**shuffled).output, plain[order], atol=1e-12)
    with_rope = qkvcalc.explain(**doc, rope={}).output
    assert not np.allclose(qkvcalc.explain(**shuffled, rope={}).output, with_rope[order])


def test_qk_norm_rows_have_unit_rms_before_the_weight():
    trace = qkvcalc.explain(**_doc(q_norm=[1, 1, 1, 1], k_norm=[2, 2, 2, 2], norm_eps=1e-12))
    q = trace.stage("q_norm").value
    np.testing.assert_allclose(np.sqrt((q**2).mean(axis=1)), 1)
    k = trace.stage("k_norm").value
    np.testing.assert_allclose(np.sqrt((k**2).mean(axis=1)), 2)


def test_the_per_head_order_of_stages():
    trace = qkvcalc.explain(**_doc(**CASES["everything"]))
    ids = [s.id for s in trace.stages]
    assert ids == [
        "x", "pe", "x_pe", "q", "k", "v", "q_norm", "k_norm", "q_rot", "k_rot", "kt",
        "scores", "scaled", "score_bias", "biased", "capped", "masked", "exp", "weights",
        "output",
    ]  # fmt: skip


# ---- exact mode, the quiz, the arithmetic ---------------------------------------------------


def test_alibi_with_rational_slopes_stays_exact_until_softmax():
    trace = qkvcalc.explain(**load("alibi"), exact=True)
    bias = trace.stage("score_bias", 1).exact
    assert str(bias[3][0]) == "-3/2"
    biased = trace.stage("biased", 1).exact
    assert biased is not None and biased[1][0] is not None  # d_k = 1: rational scores
    assert any(n.key == "note.exact_stops" for n in trace.stage("exp", 1).notes)


def test_rope_says_why_exactness_stops():
    trace = qkvcalc.explain(**load("rope"), exact=True)
    assert trace.stage("q_rot").exact is None
    assert any(n.key == "note.exact_stops_rope" for n in trace.stage("q_rot").notes)


def test_the_quiz_asks_and_grades_the_new_stages():
    from qkvcalc.quiz.grade import grade_sheet, select_keys

    trace = qkvcalc.explain(**load("llama"))
    keys = select_keys(trace, ["q_rot", "k_rot"])
    assert keys == ["1/q_rot", "1/k_rot", "2/q_rot", "2/k_rot"]
    sheet = {key: trace.stage(*reversed_key(key)).value for key in keys}
    sheet["1/q_rot"] = sheet["1/q_rot"] + 1
    report = grade_sheet(trace, sheet, keys, precision=4)
    assert [g.status for g in report.stages] == ["wrong", "right", "right", "right"]
    assert report.stages[0].cells[0].ref.label == "Q_rot[1,1]"


def reversed_key(key):
    head, _, sid = key.partition("/")
    return sid, int(head)


def test_rope_arithmetic_shows_the_angle():
    text = in_process("explain", "--preset", "rope").stdout
    # the second token (position 1) turned by φ = 1 × ω, ω = 1 for the only pair
    assert "[2,1]: 1×cos(1) − 1×sin(1) = -0.3012   (φ = 1×1)" in text
    assert "[4,2]: 1×cos(3) + 1×sin(3) = -0.8489   (φ = 3×1)" in text


# ---- the command line and the messages that teach -------------------------------------------


def test_inline_options_reach_every_variant():
    proc = in_process(
        "explain",
        "--preset",
        "sentence",
        "--mask",
        "causal",
        "--rope",
        "100",
        "--rope-style",
        "pairs",
        "--window",
        "2",
        "--alibi",
        "--softcap",
        "30",
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    import json

    ids = [s["id"] for s in json.loads(proc.stdout)["stages"]]
    for sid in ("q_rot", "k_rot", "score_bias", "biased", "capped", "masked"):
        assert sid in ids


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"window": 0}, ["window", "greater than 0"]),
        ({"window": 2}, ["window = 2", "causal"]),
        ({"chunk_size": 0}, ["chunk_size", "greater than 0"]),
        ({"chunk_size": 2}, ["chunk_size = 2", "causal"]),
        ({"chunk_size": 1.5, "mask": "causal"}, ["chunk_size", "whole number"]),
        ({"rope": {"dims": 3}}, ["rope.dims = 3", "even", "d_k = 4"]),
        ({"rope": {"style": "zigzag"}}, ["rope.style", "half", "pairs", '"zigzag"']),
        ({"rope": {"thetaa": 1}}, ["rope", "thetaa", "theta"]),
        ({"alibi": [1, 2]}, ["alibi", "length 2", "heads = 1"]),
        ({"score_bias": [[1, 2]]}, ["score_bias", "1×2", "4×4"]),
        ({"softcap": -1}, ["softcap", "greater than 0"]),
        ({"q_norm": [1, 2]}, ["q_norm", "2 numbers", "4 (d_k)"]),
        ({"positions": [0, 1]}, ["positions", "2 entries", "4"]),
        ({"positions": [0, 1, 2, "x"]}, ["positions[4]", "whole number"]),
        ({"causal_align": "middle"}, ["causal_align", "bottom-right"]),
        ({"positional": [[1, 2]]}, ["positional", "1×2", "4×4"]),
    ],
)
def test_bad_variants_are_one_message_naming_the_rule(extra, words, tmp_path):
    import json

    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_doc(n=4, d=4, **extra)))
    proc = in_process("explain", str(path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


def test_the_korean_messages_for_variants():
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**_doc(window=2))
    assert "인과 마스크" in err.value.message("ko")


def test_positional_needs_x():
    with pytest.raises(QkvcalcError, match="no X"):
        qkvcalc.explain(q=[[1, 0]], k=[[1, 0]], v=[[1, 0]], positional="sinusoidal")


@pytest.mark.parametrize("case", ["everything", "positions"])
def test_a_json_trace_of_modern_attention_runs_again_the_same(case, tmp_path):
    """The trace's "input" carries the variants, so `qkvcalc explain trace.json` reruns them."""
    import json

    path = tmp_path / "problem.json"
    path.write_text(json.dumps(_doc(n=4, d=4, **CASES[case])))
    first = in_process("explain", str(path), "--format", "json")
    assert first.returncode == 0, first.stderr
    trace = tmp_path / "trace.json"
    trace.write_text(first.stdout)
    again = in_process("explain", str(trace), "--format", "json")
    assert again.returncode == 0, again.stderr
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert a["output"] == b["output"]
    assert [s["id"] for s in a["stages"]] == [s["id"] for s in b["stages"]]
