"""The sparse-attention indexer beside multi-head latent attention (the `indexer` key;
DeepSeek-V3.2, GLM-MoE-DSA): its stages against an independent naive implementation written
here with loops (the selection), the attention after it against the oracle of
tests/naive_modern.py given that selection as a 0/1 mask, invariants (top_k ≥ n is plain MLA,
each row keeps min(top_k, allowed) keys, the heads mask what M_I masks), one message per bad
field, the refusals, the torch script run, the quiz's named mistakes, both languages."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.run.engine import run
from tests.conftest import in_process, one_message
from tests.inprocess import run_script
from tests.naive_modern import attention, layer_norm, rms_norm
from tests.naive_modern import rotate as naive_rotate

H, D_MODEL, R_Q, R_KV, D_R, D_C, D_V, N = 2, 5, 3, 4, 4, 2, 3, 7
H_I, D_I = 3, 6


def integers(rng, rows, cols):
    return rng.integers(-2, 3, (rows, cols)).astype(float).tolist()


def normals(rng, rows, cols):
    return np.round(rng.normal(0, 1, (rows, cols)), 3).tolist()


def dsa_problem(seed=0, lora=True, style="half", top_k=3, **more):
    """A small MLA problem (as tests/test_mla.py's) of n = 7 tokens with an indexer of three
    index heads of D = 6 (its first d_R = 4 turn), its weights of three decimals."""
    rng = np.random.default_rng(seed)
    mla = {
        "wkv_a": integers(rng, D_MODEL, R_KV + D_R),
        "kv_a_norm": [1, 2, 0.5, 1],
        "wkv_b": integers(rng, R_KV, H * (D_C + D_V)),
        "rope_dims": D_R,
    }
    if lora:
        mla |= {
            "wq_a": integers(rng, D_MODEL, R_Q),
            "q_a_norm": [0.5, 1, 2],
            "wq_b": integers(rng, R_Q, H * (D_C + D_R)),
        }
    else:
        mla["wq"] = integers(rng, D_MODEL, H * (D_C + D_R))
    indexer = {
        "wq": normals(rng, R_Q if lora else D_MODEL, H_I * D_I),
        "wk": normals(rng, D_MODEL, D_I),
        "k_norm": np.round(rng.uniform(0.5, 1.5, D_I), 2).tolist(),
        "k_norm_bias": np.round(rng.normal(0, 0.1, D_I), 2).tolist(),
        "weights": normals(rng, D_MODEL, H_I),
        "heads": H_I,
        "rope_style": style,
        "top_k": top_k,
    }
    return {
        "tokens": list("abcdefg"),
        "x": normals(rng, N, D_MODEL),
        "heads": H,
        "mla": mla,
        "indexer": indexer,
        "rope": {"theta": 10, "dims": D_R, "style": "pairs"},
        "mask": "causal",
        "wo": integers(rng, H * D_V, D_MODEL),
        **more,
    }


def naive_index(problem):
    """The index scores [n, m] and the keys kept [n, m] (0/1), with loops: C_Q (or X) times
    W_IQ, LayerNorm(X·W_IK), each index head's and the key's first d_R turned, the weights
    X·W_w, I[i,j] = Σ_h w[i,h]/√H_I · max(0, q_h·k_j/√D), and each query's top_k allowed keys
    by (larger score, then the earlier key)."""
    x = np.array(problem["x"], dtype=float)
    mla, ix = problem["mla"], problem["indexer"]
    if "wq_a" in mla:
        c_q = rms_norm(x @ np.array(mla["wq_a"]), np.array(mla["q_a_norm"]), 1e-6)
    else:
        c_q = x
    heads, top_k = ix["heads"], ix["top_k"]
    q_all = c_q @ np.array(ix["wq"])
    dim = q_all.shape[1] // heads
    k = layer_norm(x @ np.array(ix["wk"]), np.array(ix["k_norm"]), np.array(ix["k_norm_bias"]),
                   1e-6)  # fmt: skip
    rope = {**problem["rope"], "style": ix.get("rope_style", "half")}
    positions = list(range(len(x)))
    k = naive_rotate(k, positions, rope, dim)
    qs = [naive_rotate(q_all[:, h * dim : (h + 1) * dim], positions, rope, dim)
          for h in range(heads)]  # fmt: skip
    w = x @ np.array(ix["weights"])
    n = len(x)
    scores = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            total = 0.0
            for h in range(heads):
                dot = sum(qs[h][i, d] * k[j, d] for d in range(dim)) / math.sqrt(dim)
                total += w[i, h] / math.sqrt(heads) * max(dot, 0.0)
            scores[i, j] = total
    kept = np.zeros((n, n))
    for i in range(n):
        order = sorted(range(i + 1), key=lambda j: (-scores[i, j], j))
        for j in order[:top_k]:
            kept[i, j] = 1
    return scores, kept


def with_mask(problem, kept):
    """The problem without its indexer, its mask the keys kept (what the oracle runs)."""
    out = {key: value for key, value in problem.items() if key != "indexer"}
    out["mask"] = kept.astype(int).tolist()
    return out


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b)))


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
@pytest.mark.parametrize("style", ["half", "pairs"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_equals_the_naive_indexer_and_the_oracle(lora, style, seed):
    problem = dsa_problem(seed, lora, style)
    scores, kept = naive_index(problem)
    trace = run(Problem.from_mapping(problem))
    assert relative(trace.stage("index_scores").value, scores) < 1e-12
    assert np.array_equal(trace.stage("index_topk").value, kept)
    weights, output = attention(with_mask(problem, kept))
    assert relative(trace.weights, weights) < 1e-12
    assert relative(trace.output, output) < 1e-12
    # not vacuous: the plain MLA run (no indexer) differs
    plain = {key: value for key, value in problem.items() if key != "indexer"}
    assert relative(run(Problem.from_mapping(plain)).output, output) > 1e-3


def test_the_other_pairing_chooses_otherwise():
    """The indexer's own pairing is read: 'half' and 'pairs' give other index scores."""
    half = run(Problem.from_mapping(dsa_problem(0, style="half"))).stage("index_scores").value
    pairs = run(Problem.from_mapping(dsa_problem(0, style="pairs"))).stage("index_scores").value
    assert relative(half, pairs) > 1e-3


@pytest.mark.parametrize("top_k", [N, N + 5])
def test_a_top_k_of_every_key_is_plain_mla(top_k):
    problem = dsa_problem(3, top_k=top_k)
    plain = {key: value for key, value in problem.items() if key != "indexer"}
    a, b = run(Problem.from_mapping(problem)), run(Problem.from_mapping(plain))
    assert np.array_equal(a.output, b.output)
    assert np.array_equal(a.stage("index_topk").value, np.tril(np.ones((N, N))))


@pytest.mark.parametrize("top_k", [1, 2, 4])
def test_each_query_keeps_its_top_k_and_every_head_masks_the_rest(top_k):
    trace = run(Problem.from_mapping(dsa_problem(4, top_k=top_k)))
    kept = trace.stage("index_topk").value
    assert list(kept.sum(axis=1)) == [min(top_k, i + 1) for i in range(N)]
    assert np.all(np.triu(kept, 1) == 0)  # never a key in the future
    mask = trace.stage("index_mask").value
    assert np.array_equal(np.isfinite(mask), kept > 0)
    for h in (1, 2):
        masked = trace.stage("masked", h).value
        assert np.array_equal(np.isfinite(masked), kept > 0)
        weights = trace.stage("weights", h).value
        assert np.all(weights[kept == 0] == 0)
        assert np.allclose(weights.sum(axis=1), 1)


def test_the_torch_layout_is_the_same_layer():
    problem = dsa_problem()
    turned = json.loads(json.dumps(problem))
    for key in ("wkv_a", "wkv_b", "wq_a", "wq_b"):
        turned["mla"][key] = np.array(problem["mla"][key]).T.tolist()
    for key in ("wq", "wk", "weights"):
        turned["indexer"][key] = np.array(problem["indexer"][key]).T.tolist()
    turned["wo"] = np.array(problem["wo"]).T.tolist()
    turned["layout"] = "torch"
    a, b = run(Problem.from_mapping(problem)), run(Problem.from_mapping(turned))
    assert relative(b.output, a.output) < 1e-15


def test_tiles_give_the_same_output():
    problem = dsa_problem()
    plain = run(Problem.from_mapping(problem)).output
    tiled = run(Problem.from_mapping({**problem, "tiles": 3})).output
    assert np.max(np.abs(tiled - plain)) < 1e-12


def test_exact_up_to_the_norms():
    """X·W_IK and X·W_w are fractions; the LayerNorm's square root (and C_Q's) ends them."""
    trace = run(Problem.from_mapping(dsa_problem(), exact=True))
    assert trace.stage("index_k").exact is not None
    assert trace.stage("index_weights").exact is not None
    assert trace.stage("index_k_norm").exact is None
    assert np.array_equal(trace.stage("index_topk").value, naive_index(dsa_problem())[1])


BAD = {
    "without mla": ({"no_mla": True}, ["indexer chooses keys", "beside mla"]),
    "not an object": ({"indexer": [1, 2]}, ["indexer must be an object", "[1, 2]"]),
    "unknown key": ({"more": {"topk": 2}}, ['indexer has no key "topk"', "top_k"]),
    "missing": ({"drop": "weights"}, ["indexer needs weights"]),
    "top_k 0": ({"more": {"top_k": 0}}, ["indexer.top_k", "greater than 0"]),
    "top_k not whole": ({"more": {"top_k": 1.5}}, ["indexer.top_k", "1.5"]),
    "heads": ({"more": {"heads": 4}}, ["indexer.wq has 18 columns", "H_I = heads = 4"]),
    "too narrow": ({"more": {"heads": 6}}, ["indexer.wq has 18 columns", "d_R = 4"]),
    "q rows": ({"more": {"wq": [[1] * 18] * 5}}, ["indexer.wq is 5×18", "C_Q", "3 × …"]),
    "k shape": ({"more": {"wk": [[1] * 5] * 5}}, ["indexer.wk is 5×5", "5 × 6", "D = 6"]),
    "weights shape": ({"more": {"weights": [[1] * 2] * 5}}, ["indexer.weights is 5×2", "5 × 3"]),
    "norm length": ({"more": {"k_norm": [1, 1]}}, ["indexer.k_norm has 2", "D = 6"]),
    "rope style": ({"more": {"rope_style": "interleaved"}}, ["rope_style", "interleaved"]),
}


def bad_problem(change):
    problem = dsa_problem()
    for key, value in change.items():
        if key == "drop":
            del problem["indexer"][value]
        elif key == "more":
            problem["indexer"] |= value
        elif key == "no_mla":
            problem = {
                "x": problem["x"], "wq": [[1, 0]] * D_MODEL, "wk": [[1, 0]] * D_MODEL,
                "wv": [[1, 0]] * D_MODEL, "indexer": problem["indexer"],
            }  # fmt: skip
        else:
            problem[key] = value
    return problem


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_one_message_per_wrong_field(case):
    change, fragments = BAD[case]
    with pytest.raises(QkvcalcError) as caught:
        Problem.from_mapping(bad_problem(change))
    english = caught.value.message("en")
    for fragment in fragments:
        assert fragment in english, (fragment, english)
    korean = caught.value.message("ko")
    assert korean != english and re.search(r"\{[a-z_]+\}", korean) is None  # all filled in


def test_the_command_line_refuses_once(tmp_path):
    """A wrong shape and --decode: one line each, exit 2, no traceback (--backward runs, the
    indexer's choice held fixed: tests/test_train_mla.py; so does --dtype:
    tests/test_precision_indexer.py)."""
    cases = [
        (bad_problem(BAD["k shape"][0]), [], "indexer.wk is 5×5"),
        (dsa_problem(), ["--decode", "2"], "--decode"),
    ]
    for k, (problem, args, words) in enumerate(cases):
        path = tmp_path / f"p{k}.json"
        path.write_text(json.dumps(problem))
        proc = in_process("explain", str(path), *args)
        one_message(proc, words)


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
def test_the_torch_script_agrees(tmp_path, lora):
    pytest.importorskip("torch", reason="the script checks against PyTorch")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(dsa_problem(lora=lora)))
    proc = in_process("explain", str(path), "--format", "torch")
    assert proc.returncode == 0, proc.stderr
    assert "top_k" in proc.stdout and "allowed = allowed & kept" in proc.stdout
    script = tmp_path / "s.py"
    script.write_text(proc.stdout)
    ran = run_script(str(script))
    assert ran["returncode"] == 0, ran["stdout"] + ran["stderr"]
    assert "OK: PyTorch agrees" in ran["stdout"]


def test_both_languages_render_it(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(dsa_problem()))
    for lang, words in (("en", "Indexer: the top-k keys"), ("ko", "인덱서: Query마다 top-k Key")):
        for fmt in ("markdown", "json", "txt"):
            proc = in_process("explain", str(path), "--lang", lang, "--format", fmt)
            assert proc.returncode == 0, proc.stderr
            assert words in proc.stdout, (lang, fmt)


# ---- the quiz's mistakes ------------------------------------------------------------------


def wrong_matrices(trace, problem):
    """(stage key, the wrong matrix, the mistake's id, words of its English and Korean
    sentences), each worked out with loops from the true earlier stages."""
    q, k = trace.stage("index_q_rot").value, trace.stage("index_k_rot").value
    w = trace.stage("index_weights").value
    n, top_k = len(q), problem["indexer"]["top_k"]

    def head_score(i, j, h):
        return sum(q[i, h * D_I + d] * k[j, d] for d in range(D_I)) / math.sqrt(D_I)

    unweighted, no_relu = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            unweighted[i, j] = sum(max(head_score(i, j, h), 0) for h in range(H_I))
            no_relu[i, j] = sum(w[i, h] / math.sqrt(H_I) * head_score(i, j, h) for h in range(H_I))
    everything, per_head = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            everything[i, j] = 1
        for h in range(H_I):
            score = {
                j: w[i, h] / math.sqrt(H_I) * max(head_score(i, j, h), 0) for j in range(i + 1)
            }
            for j in sorted(score, key=lambda j: (-score[j], j))[:top_k]:
                per_head[i, j] = 1
    return [
        ("index_scores", unweighted, "index_weights_missing", "equal weights", "같은 가중치"),
        ("index_scores", no_relu, "index_relu_missing", "leave out the ReLU", "ReLU를 빠뜨렸"),
        ("index_topk", everything, "index_topk_ignored", "keeps every key", "모두 남깁니다"),
        ("index_topk", per_head, "index_topk_per_head", "a top-k per index head", "헤드마다"),
    ]


def _mistake_ids():
    problem = dsa_problem()
    return {case[2] for case in wrong_matrices(run(Problem.from_mapping(problem)), problem)}


MISTAKE_IDS = _mistake_ids()  # the ids these cases name (tests/test_feature_mistakes.py)


@pytest.mark.parametrize("case", range(4))
def test_a_mistake_is_named(case):
    problem = dsa_problem()
    trace = run(Problem.from_mapping(problem))
    key, wrong, mistake_id, english, korean = wrong_matrices(trace, problem)[case]
    truth = trace.stage(key).value
    assert not np.allclose(wrong, truth, atol=1e-3)  # the mistake shows in these numbers
    found = recognise(trace, key, np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake_id
    assert english in found.text("en") and korean in found.text("ko")
    assert recognise(trace, key, np.round(truth, 4), {}, 4) is None  # right: nothing named


@pytest.mark.parametrize("option", [[], ["--exact"], ["--precision", "2"]], ids=str)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_equals_holds(tmp_path, option, lang):
    from tests.test_arith_invariant import arithmetic_lines, check_line

    path = tmp_path / "p.json"
    path.write_text(json.dumps(dsa_problem()))
    proc = in_process(
        "explain", str(path), "--no-color", "--detail", "full", "--lang", lang, *option,
        env={"COLUMNS": "4000"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = arithmetic_lines(proc.stdout)
    assert any("ReLU(" in line for line in lines), "the index scores' arithmetic is said"
    checked, wrong = 0, []
    for line in lines:
        n, failure = check_line(line, 2 if option[-1:] == ["2"] else 4)
        checked += n
        if failure:
            wrong.append(failure)
    assert checked > 100 and not wrong, wrong[:5]


def test_a_tie_at_the_cut_keeps_the_earlier_keys_and_says_so():
    """Index queries of zeros: every score is ReLU(0)·w = 0, so each row's allowed keys tie;
    the earlier ones are kept, and a note names the rows where the tie straddles the cut."""
    problem = dsa_problem(top_k=2)
    problem["indexer"]["wq"] = [[0.0] * (H_I * D_I)] * R_Q
    trace = run(Problem.from_mapping(problem))
    kept = trace.stage("index_topk").value
    expected = np.zeros((N, N))
    for i in range(N):
        expected[i, : min(2, i + 1)] = 1
    assert np.array_equal(kept, expected)
    notes = [m for m in trace.stage("index_topk").notes if m.key == "note.index_tie"]
    assert len(notes) == 1 and notes[0].params["count"] == N - 2  # rows 3 … 7 (three or more)
    assert "3 (c)" in notes[0].text("en") and "{" not in notes[0].text("ko")
    untied = run(Problem.from_mapping(dsa_problem(top_k=2))).stage("index_topk").notes
    assert "note.index_tie" not in [m.key for m in untied]
