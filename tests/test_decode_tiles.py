"""Decoding with a KV cache and attention in tiles, against references written here with loops.

The references share nothing with qkvcalc but the input format: a decode loop that keeps its
cache in Python lists and appends one row per token, and FlashAttention's online softmax over
Python floats (running max, correction, running sum, unnormalised output). Every stage the
engine records for a step or a block is compared with them, and the stacked decode output
and the tiled output with the ordinary run, to 1e-12.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.presets import load
from qkvcalc.input.problem import Problem
from qkvcalc.ops.table import OPS
from qkvcalc.quiz.grade import grade_sheet, select_keys, stage_key
from qkvcalc.run.engine import run
from tests.conftest import in_process
from tests.naive import matmul, transpose

TOL = 1e-12


def _problem(seed: int, n: int, d: int, heads: int = 1, kv_heads: int | None = None) -> dict:
    rng = np.random.default_rng(seed)
    kv = kv_heads or heads
    d_k = d
    return {
        "x": rng.normal(size=(n, 3)).round(3).tolist(),
        "wq": rng.normal(size=(3, heads * d_k)).round(3).tolist(),
        "wk": rng.normal(size=(3, kv * d_k)).round(3).tolist(),
        "wv": rng.normal(size=(3, kv * d_k)).round(3).tolist(),
        "heads": heads,
        "kv_heads": kv,
    }


def _head_cols(doc: dict, h: int) -> tuple[list, list, list]:
    """Head h's (1-based) columns of W_Q, and of W_K, W_V of its K/V head."""
    heads, kv = doc["heads"], doc["kv_heads"]
    d_k = len(doc["wq"][0]) // heads
    g = -(-h * kv // heads)
    q = [row[(h - 1) * d_k : h * d_k] for row in doc["wq"]]
    k = [row[(g - 1) * d_k : g * d_k] for row in doc["wk"]]
    v = [row[(g - 1) * d_k : g * d_k] for row in doc["wv"]]
    return q, k, v


def _softmax_row(row: list[float]) -> list[float]:
    top = max(row)
    if top == -math.inf:
        return [0.0] * len(row)
    e = [math.exp(s - top) for s in row]
    total = sum(e)
    return [v / total for v in e]


# ---- the decode reference: a loop with a cache in lists ------------------------------------


def decode_reference(doc: dict, prefill: int, h: int) -> dict:
    """Per step s: q, k_cache, v_cache, weights and output of head h, by a generation loop."""
    wq, wk, wv = _head_cols(doc, h)
    x = doc["x"]
    n = len(x)
    d_k = len(wq[0])
    scale = 1 / math.sqrt(d_k)
    k_cache: list[list[float]] = []
    v_cache: list[list[float]] = []
    groups = ([(0, list(range(prefill)))] if prefill else []) + [
        (t - prefill + 1, [t]) for t in range(prefill, n)
    ]
    out = {}
    for step, rows in groups:
        for t in rows:  # only the new tokens are projected
            k_cache.append(matmul([x[t]], wk)[0])
            v_cache.append(matmul([x[t]], wv)[0])
        q = matmul([x[t] for t in rows], wq)
        weights, output = [], []
        for r, t in zip(rows, range(len(rows)), strict=True):
            scores = [
                sum(a * b for a, b in zip(q[t], key, strict=True)) * scale if j <= r else -math.inf
                for j, key in enumerate(k_cache)
            ]
            w = _softmax_row(scores)
            weights.append(w)
            output.append([sum(w[j] * v_cache[j][c] for j in range(len(w))) for c in range(d_k)])
        out[step] = {
            "q": q,
            "k_cache": [r[:] for r in k_cache],
            "v_cache": [r[:] for r in v_cache],
            "weights": weights,
            "output": output,
        }
    return out


def _plain(doc: dict, mask: str) -> np.ndarray:
    return run(Problem.from_mapping({**doc, "mask": mask})).output


@pytest.mark.parametrize("seed", range(6))
def test_every_decode_step_equals_a_generation_loop_with_its_cache(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 7))
    heads = int(rng.choice([1, 2, 4]))
    kv = int(rng.choice([g for g in (1, 2, 4) if heads % g == 0]))
    doc = _problem(seed, n, int(rng.integers(1, 4)), heads, kv)
    for prefill in sorted({0, n - 1, int(rng.integers(0, n))}):
        trace = run(Problem.from_mapping({**doc, "decode": prefill}))
        for h in range(1, heads + 1):
            head = h if heads > 1 else None
            for step, want in decode_reference(doc, prefill, h).items():
                for sid, value in want.items():
                    got = trace.stage(sid, head, step=step).value
                    np.testing.assert_allclose(got, np.array(value), atol=TOL, err_msg=sid)
        np.testing.assert_allclose(trace.output, _plain(doc, "causal"), atol=TOL, rtol=0)


def test_prefill_zero_has_no_step_zero_and_steps_count_every_token():
    doc = _problem(1, 4, 2)
    trace = run(Problem.from_mapping({**doc, "decode": 0}))
    assert sorted({s.step for s in trace.stages if s.step is not None}) == [1, 2, 3, 4]
    trace = run(Problem.from_mapping({**doc, "decode": 3}))
    assert sorted({s.step for s in trace.stages if s.step is not None}) == [0, 1]
    assert trace.stage("k_cache", step=0).shape == (3, 2)
    assert trace.stage("k_cache", step=1).shape == (4, 2)


def test_cached_rows_are_read_from_the_previous_cache_not_computed_again():
    trace = run(Problem.from_mapping({**_problem(2, 4, 2), "decode": 1}))
    cache = trace.stage("k_cache", step=2)
    assert cache.reads[0] == ("k_cache", None, 1, None)
    feeds = set(OPS[cache.op].feeds(0, 1, [np.shape(o) for o in cache.operands], cache.params))
    assert feeds == {(0, 0, 1)}  # an old row reads the cache only
    notes = " ".join(n.text("en") for n in cache.notes)
    assert "never computed again" in notes


def test_the_stacked_output_says_it_equals_the_causal_run():
    trace = run(Problem.from_mapping({**_problem(3, 5, 2), "decode": 2}))
    note = trace.stage("output").notes[-1].text("en")
    assert "equal the ordinary causal run" in note
    # a difference of rounding alone is said as its bound, the same on every machine
    assert note.endswith("(largest difference below 1e-12).")
    np.testing.assert_allclose(trace.output, _plain(_problem(3, 5, 2), "causal"), atol=TOL, rtol=0)


def test_decode_with_key_padding_and_a_window_equals_the_masked_run():
    doc = {**_problem(4, 5, 2), "key_padding": [1, 0, 1, 1, 1], "window": 3}
    trace = run(Problem.from_mapping({**doc, "decode": 1}))
    np.testing.assert_allclose(trace.output, _plain(doc, "causal"), atol=TOL, rtol=0)


@pytest.mark.parametrize("key", ["decode", "tiles"])
def test_chunks_decoded_or_in_tiles_equal_the_masked_run(key):
    """Llama 4's chunks of 2 positions: a decode step (prefill 1) and tiles of 2 keys give the
    whole run's output, and the chunk changes it (not the plain causal run)."""
    doc = {**_problem(7, 5, 2, heads=2, kv_heads=1), "chunk_size": 2}
    chunked = _plain(doc, "causal")
    trace = run(Problem.from_mapping({**doc, "mask": "causal", key: 1 if key == "decode" else 2}))
    np.testing.assert_allclose(trace.output, chunked, atol=TOL, rtol=0)
    assert np.abs(chunked - _plain(_problem(7, 5, 2, heads=2, kv_heads=1), "causal")).max() > 1e-3


def test_decode_cache_memory_and_gqa_notes():
    trace = run(Problem.from_mapping({**_problem(5, 3, 2, heads=4, kv_heads=2), "decode": 1}))
    notes = [n.text("en") for n in trace.stage("k_cache", 1, step=0).notes]
    assert any("2 × layers × kv_heads × d_k" in n and "= 8" in n for n in notes)
    assert any("2 times fewer" in n for n in notes)
    mask = " ".join(n.text("en") for n in trace.stage("masked", 1, step=1).notes)
    assert "bottom-right" in mask


def test_decode_step_mask_is_bottom_right():
    trace = run(Problem.from_mapping({**_problem(6, 4, 2), "decode": 2}))
    allowed = trace.stage("masked", step=1).allowed
    assert allowed is not None and allowed.tolist() == [[True, True, True]]


# ---- the tiles reference: the online softmax over Python floats ----------------------------


def tiles_reference(s: list[list[float]], v: list[list[float]], b: int) -> dict:
    """FlashAttention's forward for one head: per block, m, c, ℓ and O by the recurrence."""
    n, m = len(s), len(s[0])
    run_max = [-math.inf] * n
    total = [0.0] * n
    acc = [[0.0] * len(v[0]) for _ in range(n)]
    out: dict = {}
    for block, start in enumerate(range(0, m, b), start=1):
        keys = range(start, min(start + b, m))
        for i in range(n):
            new = max([run_max[i], *(s[i][j] for j in keys)])
            fix = (
                1.0
                if new == run_max[i]
                else 0.0
                if run_max[i] == -math.inf
                else math.exp(run_max[i] - new)
            )
            if block == 1:
                fix = 0.0
            shift = 0.0 if new == -math.inf else new
            e = [math.exp(s[i][j] - shift) for j in keys]
            total[i] = total[i] * fix + sum(e)
            acc[i] = [
                acc[i][c] * fix + sum(e[t] * v[j][c] for t, j in enumerate(keys))
                for c in range(len(v[0]))
            ]
            run_max[i] = new
            out.setdefault(block, {"running_max": [], "running_sum": [], "acc": []})
            out[block]["running_max"].append([new])
            out[block]["running_sum"].append([total[i]])
            out[block]["acc"].append(acc[i][:])
    out["output"] = [[a / total[i] if total[i] else 0.0 for a in acc[i]] for i in range(n)]
    return out


def _logits_and_v(trace, head):
    logits = trace.find("masked", head) or trace.stage("scaled", head)
    return logits.value.tolist(), trace.stage("v", head).value.tolist()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mask", ["none", "causal"])
def test_every_block_equals_the_online_softmax_by_hand(seed, mask):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(1, 7))
    heads = int(rng.choice([1, 2]))
    doc = {**_problem(seed, n, 2, heads), "mask": mask}
    plain = _plain(doc, mask)
    for b in sorted({1, n, n + 3, max(1, n - 1), 2}):  # B = 1, B ≥ m, B not dividing m
        trace = run(Problem.from_mapping({**doc, "tiles": b}))
        np.testing.assert_allclose(trace.output, plain, atol=TOL, rtol=0)
        for h in range(1, heads + 1):
            head = h if heads > 1 else None
            s, v = _logits_and_v(trace, head)
            want = tiles_reference(s, v, b)
            for block in range(1, -(-n // b) + 1):
                for sid in ("running_max", "running_sum", "acc"):
                    got = trace.stage(sid, head, block=block).value
                    np.testing.assert_allclose(got, np.array(want[block][sid]), atol=TOL)
            np.testing.assert_allclose(trace.stage("output", head).value, want["output"], atol=TOL)


def test_tiles_with_a_query_whose_keys_are_all_masked_gives_zero():
    doc = {**_problem(7, 3, 2), "mask": [[0, 0, 0], [1, 1, 0], [1, 1, 1]]}
    trace = run(Problem.from_mapping({**doc, "tiles": 2}))
    np.testing.assert_allclose(trace.output, _plain(doc, doc["mask"]), atol=TOL, rtol=0)
    assert trace.stage("output").value[0].tolist() == [0.0, 0.0]
    plain = run(Problem.from_mapping(doc))
    assert [w.key for w in trace.warnings] == [w.key for w in plain.warnings]  # said, as plainly
    assert trace.warnings[0].params["rows"] == "t1"


def test_the_correction_is_below_one_exactly_where_the_maximum_grew():
    trace = run(Problem.from_mapping(load("tiles")))
    for block in (2, 3):
        old = trace.stage("running_max", block=block - 1).value
        new = trace.stage("running_max", block=block).value
        c = trace.stage("correction", block=block).value
        assert ((c < 1) == (new > old)).all()
    assert (trace.stage("correction", block=2).value < 1).any()  # the preset shows a rescale


def test_the_tiled_output_note_says_why_it_equals_softmax():
    trace = run(Problem.from_mapping(load("tiles")))
    note = trace.stage("output").notes[-1].text("en")
    assert "as if the final maximum had been subtracted all along" in note
    ko = trace.stage("output").notes[-1].text("ko")
    assert "최종 최댓값" in ko


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 6),
    b=st.integers(1, 8),
    prefill=st.integers(0, 5),
    seed=st.integers(0, 10_000),
    causal=st.booleans(),
)
def test_tiles_and_decode_equal_the_plain_run_for_any_size(n, b, prefill, seed, causal):
    doc = _problem(seed, n, 2)
    mask = "causal" if causal else "none"
    tiled = run(Problem.from_mapping({**doc, "mask": mask, "tiles": b})).output
    np.testing.assert_allclose(tiled, _plain(doc, mask), atol=TOL, rtol=0)
    decoded = run(Problem.from_mapping({**doc, "decode": min(prefill, n - 1)})).output
    np.testing.assert_allclose(decoded, _plain(doc, "causal"), atol=TOL, rtol=0)


# ---- exact mode, the quiz, messages that teach ---------------------------------------------


def test_exact_decode_keeps_the_rational_stages():
    doc = load("decode")
    trace = run(Problem.from_mapping(doc, exact=True))
    cache = trace.stage("k_cache", step=1)
    assert cache.exact is not None
    np.testing.assert_array_equal(np.array(cache.exact, dtype=float), cache.value)
    scores = trace.stage("scores", step=1)
    assert scores.exact is not None
    assert trace.stage("exp", step=1).exact is None


def test_exact_tiles_keep_the_block_maxima_when_the_scores_are_rational():
    doc = {**load("tiles"), "scale": "1/2"}
    trace = run(Problem.from_mapping(doc, exact=True))
    m = trace.stage("running_max", block=2)
    assert m.exact is not None
    np.testing.assert_array_equal(np.array(m.exact, dtype=float), m.value)
    assert trace.stage("correction", block=2).exact is None


def test_the_quiz_asks_the_running_max_and_sum():
    trace = run(Problem.from_mapping(load("tiles")))
    keys = select_keys(trace, ["running_max", "running_sum@b2"])
    assert keys == [
        "running_max@b1",
        "running_max@b2",
        "running_sum@b2",
        "running_max@b3",
    ]
    sheet = {k: trace.stage(*_id(k), block=int(k.partition("@b")[2])).value.copy() for k in keys}
    wrong = sheet["running_sum@b2"].copy()
    wrong[0, 0] += 1
    report = grade_sheet(trace, {**sheet, "running_sum@b2": wrong}, keys, 4)
    statuses = {g.key: g.status for g in report.stages}
    assert statuses["running_sum@b2"] == "wrong" and statuses["running_max@b3"] == "right"
    assert all(stage_key(s) for s in trace.stages)


def _id(key: str):
    return key.partition("@")[0], None


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"decode": 3}, "from 0 to 2"),
        ({"decode": -1}, "from 0 to 2"),
        ({"decode": "two"}, "prefill length"),
        ({"tiles": 0}, "at least 1"),
        ({"decode": 1, "mask": "none"}, "needs the causal mask"),
        ({"decode": 1, "mask": [[1, 1, 1]] * 3}, "needs the causal mask"),
        ({"decode": 1, "tiles": 2}, "choose one"),
        ({"decode": 1, "source": [[1, 0, 0]]}, "computed once and reused at every step"),
    ],
)
def test_messages_that_teach(extra, words):
    with pytest.raises(QkvcalcError) as err:
        Problem.from_mapping({**_problem(8, 3, 2), **extra})
    assert words in err.value.msg.text("en")
    assert err.value.msg.text("ko")


# ---- the command line (in this process) -----------------------------------------------------


def test_cli_decode_json_has_step_keys_only_where_there_are_steps():
    proc = in_process("explain", "--preset", "sentence", "--decode", "1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["problem"]["decode"] == 1
    steps = [s.get("step") for s in doc["stages"]]
    assert "step" not in doc["stages"][0] and steps.count(None) >= 2
    assert {s["step"] for s in doc["stages"] if "step" in s} == {0, 1, 2}
    assert all("block" not in s for s in doc["stages"])
    plain = in_process("explain", "--preset", "sentence", "--mask", "causal", "--format", "json")
    assert np.allclose(doc["output"], json.loads(plain.stdout)["output"], atol=TOL)


def test_cli_tiles_in_korean_with_blocks():
    proc = in_process("explain", "--preset", "sentence", "--tiles", "2", "--lang", "ko")
    assert proc.returncode == 0, proc.stderr
    assert "블록 2" in proc.stdout and "누적 합 ℓ" in proc.stdout
    assert "ℓ₂[1] = ℓ₁·e^(m₁−m₂) + Σ e^(s−m₂) = " in proc.stdout


def test_cli_bad_tiles_is_one_message_and_exit_2():
    proc = in_process("explain", "--preset", "sentence", "--tiles", "0")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "at least 1" in proc.stderr


def test_cli_decode_with_a_custom_mask_says_why():
    proc = in_process("explain", "--preset", "padding", "--decode", "1", "--mask", "1 1 1 1")
    assert proc.returncode == 2 and proc.stdout == ""


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html", "svg"])
def test_every_format_shows_steps_and_blocks(fmt):
    for option in (("--preset", "decode"), ("--preset", "tiles")):
        proc = in_process("explain", *option, "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout.replace("&#160;", " ")  # the SVG's spaces
        assert ("step 1" in text) or ("block 2" in text)


def test_transpose_helper_is_the_reference_transpose():
    # the references above use tests.naive's helpers only for products
    assert transpose([[1, 2]]) == [[1], [2]]


@pytest.mark.parametrize(
    ("name", "some"),
    [("decode", ["k_cache@s1", "weights@s2", "output"]), ("tiles", ["running_sum@b3", "scaled"])],
)
def test_the_quiz_defaults_to_the_stages_the_run_has(name, some):
    proc = in_process("quiz", "--preset", name, "--template")
    assert proc.returncode == 0, proc.stderr
    sheet = json.loads(proc.stdout)
    assert all(key in sheet for key in some)


def test_step_mode_headers_say_the_step_and_the_block():
    from qkvcalc.interactive.step import stage_header

    decode = run(Problem.from_mapping(load("decode")))
    header = stage_header(decode.stage("k_cache", step=1), 12, 29, "en").plain
    assert "decode step 1" in header
    tiles = run(Problem.from_mapping(load("tiles")))
    assert "블록 2" in stage_header(tiles.stage("acc", block=2), 5, 29, "ko").plain


def test_a_decode_runs_weights_are_the_causal_runs():
    doc = _problem(9, 4, 2, heads=2)
    decoded = run(Problem.from_mapping({**doc, "decode": 1}))
    plain = run(Problem.from_mapping({**doc, "mask": "causal"}))
    np.testing.assert_allclose(decoded.weights, plain.weights, atol=TOL, rtol=0)


def test_exact_arithmetic_of_a_step_shows_the_fractions():
    doc = {"x": [[1, "1/2"], [0, 1]], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]]}
    doc |= {"wv": [[1, 0], [1, 1]], "decode": 1}
    proc = in_process("explain", "-", "--exact", "--no-color", input=json.dumps(doc))
    assert proc.returncode == 0, proc.stderr
    assert "q₁·k₁ = 1×1 + (1/2)×(3/2) = 7/4" in proc.stdout
    assert "q₂·k₁ = 0×1 + 1×(3/2) = 3/2" in proc.stdout


@pytest.mark.parametrize("style", ["half", "pairs"])
@pytest.mark.parametrize("prefill", [0, 2])
def test_decode_with_rope_and_qk_norm_caches_rotated_keys_and_equals_the_plain_run(style, prefill):
    rng = np.random.default_rng(11)
    doc = {**_problem(11, 5, 4, heads=2, kv_heads=1), "rope": {"theta": 100, "style": style}}
    doc |= {
        "q_norm": rng.uniform(0.5, 1.5, 4).tolist(),
        "k_norm": rng.uniform(0.5, 1.5, 4).tolist(),
    }
    trace = run(Problem.from_mapping({**doc, "decode": prefill}))
    np.testing.assert_allclose(trace.output, _plain(doc, "causal"), atol=TOL, rtol=0)
    plain = run(Problem.from_mapping({**doc, "mask": "causal"}))
    last = max(s.step for s in trace.stages if s.step is not None)
    # the last cache holds every key normed and rotated at its own position
    np.testing.assert_allclose(
        trace.stage("k_cache", 2, step=last).value, plain.stage("k_rot", 2).value, atol=TOL
    )
    rot = trace.stage("q_rot", 1, step=last)
    assert rot.params["positions"].tolist() == [4]


@pytest.mark.parametrize(
    "extra",
    [
        {"alibi": True},
        {"softcap": 2.0},
        {"score_bias": np.arange(25.0).reshape(5, 5).tolist()},
        {"alibi": True, "score_bias": np.ones((5, 5)).tolist(), "softcap": 3.0},
    ],
)
def test_decode_with_biases_and_a_cap_equals_the_plain_run(extra):
    doc = {**_problem(12, 5, 2, heads=2), **extra}
    for prefill in (0, 3):
        trace = run(Problem.from_mapping({**doc, "decode": prefill}))
        np.testing.assert_allclose(trace.output, _plain(doc, "causal"), atol=TOL, rtol=0)
        note = trace.stage("output", 1).notes[-1].text("en")
        assert note.endswith("(largest difference below 1e-12).")
