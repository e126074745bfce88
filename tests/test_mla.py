"""Multi-head latent attention (the `mla` key; DeepSeek-V2/V3, Kimi): qkvcalc's stages against
the independent oracle (tests/naive_modern.py, in DeepSeek's own column order), the stages each
mechanism adds and what they hold, exactness up to the latent's RMSNorm, one message per wrong
shape or key, the torch script run, and the quiz's named mistakes, in both languages."""

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
from tests.naive_modern import attention

H, D_MODEL, R_Q, R_KV, D_R, D_C, D_V = 2, 5, 3, 4, 4, 4, 3


def integers(rng, rows, cols):
    return rng.integers(-2, 3, (rows, cols)).astype(float).tolist()


def latent_problem(seed=0, lora=True, style="half", **more):
    """A small MLA problem of integers: d_R = d_C = 4 (so RoPE's two pairings differ and the
    two parts of a key are as wide), r_q = 3, r_kv = 4, d_v = 3, two heads, W_O."""
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
    return {
        "tokens": ["a", "b", "c", "d"],
        "x": integers(rng, 4, D_MODEL),
        "heads": H,
        "mla": mla,
        "rope": {"theta": 10, "dims": D_R, "style": style},
        "mask": "causal",
        "wo": integers(rng, H * D_V, D_MODEL),
        **more,
    }


def relative(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b)))


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
@pytest.mark.parametrize("style", ["half", "pairs"])
@pytest.mark.parametrize("seed", [0, 1])
def test_it_equals_the_oracle(lora, style, seed):
    problem = latent_problem(seed, lora, style)
    weights, output = attention(problem)
    trace = run(Problem.from_mapping(problem))
    assert relative(trace.weights, weights) < 1e-12
    assert relative(trace.output, output) < 1e-12
    # not vacuous: the oracle without the latent's norm (weights of 1, no division) differs
    bare = json.loads(json.dumps(problem))
    bare["mla"]["kv_a_norm"] = [1, 1, 1, 1]
    assert relative(attention(bare)[1], output) > 1e-3


def test_the_torch_layout_is_the_same_layer():
    problem = latent_problem()
    turned = json.loads(json.dumps(problem))
    for key in ("wkv_a", "wkv_b", "wq_a", "wq_b"):
        turned["mla"][key] = np.array(problem["mla"][key]).T.tolist()
    turned["wo"] = np.array(problem["wo"]).T.tolist()
    turned["layout"] = "torch"
    a, b = run(Problem.from_mapping(problem)), run(Problem.from_mapping(turned))
    assert relative(b.output, a.output) < 1e-15


def rms(rows, weight, eps=1e-6):
    """RMSNorm of each row with plain loops: x / √(mean(x²) + ε) · w."""
    out = np.zeros((len(rows), len(weight)))
    for i, r in enumerate(rows):
        root = math.sqrt(sum(u * u for u in r) / len(r) + eps)
        for j, v in enumerate(r):
            out[i, j] = v / root * weight[j]
    return out


def test_the_stages_and_what_they_hold():
    problem = latent_problem()
    trace = run(Problem.from_mapping(problem))
    x = np.array(problem["x"])
    mla = {k: np.array(v) for k, v in problem["mla"].items()}
    c_q = x @ mla["wq_a"]
    c_kv = x @ mla["wkv_a"][:, :R_KV]
    k_rope = x @ mla["wkv_a"][:, R_KV:]
    assert np.allclose(trace.stage("c_q").value, c_q)
    assert np.allclose(trace.stage("c_q_norm").value, rms(c_q, mla["q_a_norm"]))
    assert np.allclose(trace.stage("c_kv").value, c_kv)
    assert np.allclose(trace.stage("c_kv_norm").value, rms(c_kv, mla["kv_a_norm"]))
    assert np.allclose(trace.stage("k_rope").value, k_rope)
    for h in (1, 2):
        k = trace.stage("k", h).value
        assert np.array_equal(k[:, :D_R], k_rope)  # the one rotary key, in every head
        assert np.array_equal(k[:, D_R:], trace.stage("k_nope", h).value)
        w = mla["wkv_b"][:, (h - 1) * (D_C + D_V) : h * (D_C + D_V)]
        c = rms(c_kv, mla["kv_a_norm"])
        assert np.allclose(trace.stage("k_nope", h).value, c @ w[:, :D_C])
        assert np.allclose(trace.stage("v", h).value, c @ w[:, D_C:])
        wq = mla["wq_b"][:, (h - 1) * (D_C + D_R) : h * (D_C + D_R)]
        q = rms(c_q, mla["q_a_norm"]) @ wq
        # qkvcalc's order: the head's rotary columns (DeepSeek's last d_R) first
        assert np.allclose(trace.stage("q", h).value, np.hstack([q[:, D_C:], q[:, :D_C]]))
    assert trace.find("split") is None  # the latents' heads say their own columns
    assert trace.problem.d_k == D_C + D_R and trace.problem.d_v == D_V
    assert trace.stage("scaled", 1).params["scale"] == (D_C + D_R) ** -0.5


def test_exact_up_to_the_latent_norm():
    trace = run(Problem.from_mapping(latent_problem(), exact=True))
    for sid in ("c_q", "c_kv", "k_rope"):
        assert trace.stage(sid).exact is not None, sid
    for sid in ("c_q_norm", "c_kv_norm"):
        stage = trace.stage(sid)
        assert stage.exact is None
        assert "note.exact_stops_root" in [note.key for note in stage.notes]


BAD = {
    "not an object": ({"mla": [1, 2]}, ["mla must be an object", "[1, 2]"]),
    "unknown key": ({"mla": {"wkv": 1}}, ['mla has no key "wkv"', "wkv_a"]),
    "with wq": ({"wq": [[1]]}, ["wq cannot be given with mla", "W_Q, W_K, W_V"]),
    "missing": ({"drop": "wkv_b"}, ["mla needs wkv_b"]),
    "two queries": ({"mla_more": {"wq": [[1] * 16] * 5}}, ["either wq", "not both"]),
    "kv_heads": ({"kv_heads": 1}, ["kv_heads is 1", "2 heads"]),
    "odd rope": ({"mla_more": {"rope_dims": 3}}, ["rope_dims is 3", "even"]),
    "rows": ({"mla_more": {"wkv_b": [[1] * 14] * 3}}, ["mla.wkv_b is 3×14", "c_KV", "4 rows"]),
    "norm length": ({"mla_more": {"kv_a_norm": [1, 1]}}, ["mla.kv_a_norm has 2", "makes 4"]),
    "q width": ({"mla_more": {"wq_b": [[1] * 7] * 3}}, ["mla.wq_b has 7 columns", "H = 2"]),
    "kv_b width": ({"mla_more": {"wkv_b": [[1] * 7] * 4}}, ["mla.wkv_b has 7 columns", "d_C"]),
    "rope dims": ({"rope": {"dims": 8}}, ["rope.dims is 8", '"dims": 4']),
    "rope of all d_k": ({"rope": 10000}, ["rope.dims is d_k", '"dims": 4']),
    "too many numbers": (
        {"mla_more": {"wkv_b": [[0] * 10**6] + [[0]] * 99}},
        ["mla.wkv_b", "100×1000000"],
    ),
    "q norm": ({"q_norm": [1, 1]}, ["q_norm cannot be given with mla", "q_a_norm"]),
}


def bad_problem(change):
    problem = latent_problem()
    for key, value in change.items():
        if key == "drop":
            del problem["mla"][value]
        elif key == "mla_more":
            problem["mla"] |= value
        elif key == "mla":
            problem["mla"] = value
        else:
            problem[key] = value
    return problem


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_one_message_per_wrong_key(case):
    change, fragments = BAD[case]
    with pytest.raises(QkvcalcError) as caught:
        Problem.from_mapping(bad_problem(change))
    english = caught.value.message("en")
    for fragment in fragments:
        assert fragment in english, (fragment, english)
    korean = caught.value.message("ko")
    assert korean != english and re.search(r"\{[a-z_]+\}", korean) is None  # all filled in


def test_tiles_give_the_same_output():
    problem = latent_problem()
    plain = run(Problem.from_mapping(problem)).output
    tiled = run(Problem.from_mapping({**problem, "tiles": 2})).output
    assert np.max(np.abs(tiled - plain)) < 1e-12


@pytest.mark.parametrize("prefill", [0, 1, 3])
@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
def test_a_decode_run_caches_the_latents(prefill, lora):
    """--decode P: each step appends its tokens' C_KV and k_R, turned once at their own
    positions, to the cache; every head makes its K and V from the cache again; the stacked
    steps are the ordinary causal run (and the oracle's)."""
    problem = latent_problem(lora=lora, style="pairs")
    plain = run(Problem.from_mapping(problem))
    trace = run(Problem.from_mapping({**problem, "decode": prefill}))
    assert relative(trace.output, attention(problem)[1]) < 1e-12
    assert relative(trace.output, plain.output) < 1e-12
    last = 4 - prefill  # the steps: 0 (the prefill) when P > 0, then one per later token
    c_kv = trace.stage("c_kv_cache", step=last).value
    assert np.allclose(c_kv, plain.stage("c_kv_norm").value)  # every token's C_KV
    k_rope = trace.stage("k_rope_cache", step=last).value
    for h in (1, 2):  # the rotated k_R: the first d_R columns of every head's rotated keys
        assert np.allclose(k_rope, plain.stage("k_rot", h).value[:, :D_R])
        k = trace.stage("k", h, step=last).value
        assert np.allclose(k, plain.stage("k_rot", h).value)  # the cache's keys, turned once
    assert trace.find("k_rot", step=last) is not None
    cache = [m for m in trace.stage("c_kv_cache", step=0 if prefill else 1).notes]
    assert [m.params["per_token"] for m in cache if m.key == "note.mla_cache"] == [R_KV + D_R]


def test_the_command_line_says_it_once(tmp_path):
    """A wrong shape, and the backward pass with a KV cache: one line each, exit 2, no
    traceback (the backward pass itself: tests/test_mla_backward.py)."""
    cases = [
        (bad_problem(BAD["rows"][0]), [], "mla.wkv_b is 3×14"),
        (latent_problem(target=[[0] * D_MODEL] * 4), ["--backward", "--decode", "1"], "decode"),
    ]
    for k, (problem, args, words) in enumerate(cases):
        path = tmp_path / f"p{k}.json"
        path.write_text(json.dumps(problem))
        proc = in_process("explain", str(path), *args)
        one_message(proc, words)


def test_the_torch_script_agrees(tmp_path):
    pytest.importorskip("torch", reason="the script checks against PyTorch")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem(style="pairs")))
    proc = in_process("explain", str(path), "--format", "torch")
    assert proc.returncode == 0, proc.stderr
    assert "W_KVb" in proc.stdout and "cannot represent" in proc.stdout
    script = tmp_path / "s.py"
    script.write_text(proc.stdout)
    ran = run_script(str(script))  # in this process: torch is imported once (tests/inprocess.py)
    assert ran["returncode"] == 0, ran["stdout"] + ran["stderr"]
    assert "OK: PyTorch agrees" in ran["stdout"]


def test_both_languages_render_it(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem()))
    for lang, words in (("en", "The shared rotary key"), ("ko", "공유 회전 Key")):
        proc = in_process("explain", str(path), "--lang", lang, "--format", "markdown")
        assert proc.returncode == 0, proc.stderr
        assert words in proc.stdout
        assert "multi-head latent attention" in proc.stdout or "멀티헤드 잠재 어텐션" in proc.stdout


# ---- the quiz's mistakes ------------------------------------------------------------------


def wrong_matrices(trace, problem):
    """(stage key, the wrong matrix, the mistake's id, words of its English and Korean
    sentences), each worked out with loops from the true earlier stages."""
    c_kv = trace.stage("c_kv").value  # the latent before its norm
    w_uv = np.array(problem["mla"]["wkv_b"])[:, D_C : D_C + D_V]  # head 1's W_UV
    unnormed = np.zeros((4, D_V))
    for i in range(4):
        for j in range(D_V):
            unnormed[i, j] = sum(c_kv[i, t] * w_uv[t, j] for t in range(R_KV))
    k_rope, k_nope = trace.stage("k_rope").value, trace.stage("k_nope", 2).value
    swapped = np.array([list(k_nope[i]) + list(k_rope[i]) for i in range(4)])
    c_q = trace.stage("c_q").value
    length = np.zeros_like(c_q)  # c_Q over the root of its sum of squares, times w
    for i, row in enumerate(c_q):
        root = math.sqrt(sum(v * v for v in row) + 1e-6)
        for j, v in enumerate(row):
            length[i, j] = v / root * problem["mla"]["q_a_norm"][j]
    return [
        ("1/v", unnormed, "mla_latent_unnormed", "c_KV before its RMSNorm", "RMSNorm 전의 c_KV"),
        ("c_q_norm", length, "norm_sum_not_mean", "the latent's r_q = 3", "잠재 벡터의 r_q = 3"),
        ("2/k", swapped, "mla_join_order", "K_C before k_R", "K_C를 k_R 앞에"),
    ]


def _mistake_ids():
    problem = latent_problem()
    found = {case[2] for case in wrong_matrices(run(Problem.from_mapping(problem)), problem)}
    return found - {"norm_sum_not_mean"}  # the q/k norm's own, tested there


MISTAKE_IDS = _mistake_ids()  # the ids these cases name (tests/test_feature_mistakes.py)


@pytest.mark.parametrize("case", range(3))
def test_a_mistake_is_named(case):
    problem = latent_problem()
    trace = run(Problem.from_mapping(problem))
    key, wrong, mistake_id, english, korean = wrong_matrices(trace, problem)[case]
    head, _, sid = key.rpartition("/")
    truth = trace.stage(sid, int(head) if head else None).value
    assert not np.allclose(wrong, truth, atol=1e-3)  # the mistake shows in these numbers
    found = recognise(trace, key, np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake_id
    assert english in found.text("en") and korean in found.text("ko")
    assert recognise(trace, key, np.round(truth, 4), {}, 4) is None  # right: nothing named


def test_a_quiz_process_names_the_unnormed_latent(tmp_path):
    """Through `qkvcalc quiz --answers`, in JSON."""
    problem = latent_problem()
    trace = run(Problem.from_mapping(problem))
    key, wrong, mistake_id, english, _ = wrong_matrices(trace, problem)[0]
    (tmp_path / "p.json").write_text(json.dumps(problem))
    (tmp_path / "a.json").write_text(json.dumps({key: np.round(wrong, 4).tolist()}))
    proc = in_process(
        "quiz", str(tmp_path / "p.json"), "--answers", str(tmp_path / "a.json"), "--format",
        "json",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    stages = {s["key"]: s for s in json.loads(proc.stdout)["stages"]}
    assert stages[key]["mistake"] == mistake_id
    assert english in stages[key]["mistake_text"]


# ---- every "=" of its arithmetic holds (tests/test_arith_invariant.py's checker) -----------


@pytest.mark.parametrize(
    "option", [[], ["--exact"], ["--precision", "2"], ["--decode", "2"]], ids=str
)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_equals_holds(tmp_path, option, lang):
    from tests.test_arith_invariant import arithmetic_lines, check_line

    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem(style="pairs")))
    proc = in_process(
        "explain", str(path), "--no-color", "--detail", "full", "--lang", lang, *option,
        env={"COLUMNS": "4000"},  # the table follows COLUMNS (txt is 100 columns)
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = arithmetic_lines(proc.stdout)
    joins = [line for line in lines if "k_R[" in line or "K_C[" in line]
    assert joins, "the key's columns are said"
    checked, wrong = 0, []
    for line in lines:
        n, failure = check_line(line, 2 if option[-1:] == ["2"] else 4)
        checked += n
        if failure:
            wrong.append(failure)
    assert checked and not wrong, "\n".join(wrong[:20])


def test_a_korean_run_has_no_english(tmp_path):
    from tests.test_i18n import english_in

    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem()))
    proc = in_process("explain", str(path), "--lang", "ko", "--detail", "full")
    assert proc.returncode == 0, proc.stderr
    assert english_in(proc.stdout) == set()


def test_the_quiz_shows_the_latents_weights():
    """A student works from X and the latents' weights (the problem has no W_Q, W_K, W_V)."""
    from rich.console import Console

    from qkvcalc.quiz.session import problem_view
    from qkvcalc.render import RenderOptions

    trace = run(Problem.from_mapping(latent_problem()))
    console = Console(width=200, record=True)
    console.print(problem_view(trace, RenderOptions()))
    text = console.export_text()
    for name in ("W_DQ", "W_UQ", "[W_DKV | W_KR]", "[W_UK | W_UV]", "w (c_KV)"):
        assert name in text, name
