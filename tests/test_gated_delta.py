"""Gated DeltaNet (Qwen3-Next, Qwen3.5) as the problem, the op module qkvcalc/ops/gated_delta.py:
each head's q and k L2-normed, the state updated token by token with the decay and the delta
rule, the output read from the states, the n×n `weights` the layer computes without forming
them, and the chunked form. Checked against a naive recurrence written here, against
transformers' own torch_recurrent_gated_delta_rule and torch_chunk_gated_delta_rule (their
float32 casts lifted to float64), chunked = recurrent and weights·V = output to 1e-12, in every
format in both languages, and as bad input."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import ROOT, one_message, run_qkvcalc

MISTAKE_IDS = {"gdn_decay_missing", "gdn_delta_missing"}  # tests/test_feature_mistakes.py reads it

RNG = np.random.default_rng(37)
N, D_MODEL, H, D_K, D_V = 7, 4, 2, 3, 2
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, H * D_V)).tolist(),
    "heads": H,
    "mask": "causal",
    "gated_delta": {
        # as Qwen3-Next makes them: g = −e^(A_log)·softplus(a + dt_bias) < 0, β = σ(b)
        "g": (-np.exp(RNG.standard_normal(H)) * np.log1p(np.exp(RNG.standard_normal((N, H)))))
        .round(6)
        .tolist(),
        "beta": (1 / (1 + np.exp(-RNG.standard_normal((N, H))))).round(6).tolist(),
        "chunk": 3,
    },
}


def _heads(doc: dict) -> list[tuple[np.ndarray, ...]]:
    """Each head's (q, k, v, g, β) from the document, by the problem's split of the columns."""
    x, wq, wk, wv = (np.asarray(doc[key], float) for key in ("x", "wq", "wk", "wv"))
    heads = doc.get("heads", 1)
    d_k, d_v = wq.shape[1] // heads, wv.shape[1] // heads
    g, beta = (
        np.asarray(doc["gated_delta"][key], float).reshape(x.shape[0], heads)
        for key in ("g", "beta")
    )
    return [
        (
            x @ wq[:, h * d_k : (h + 1) * d_k],
            x @ wk[:, h * d_k : (h + 1) * d_k],
            x @ wv[:, h * d_v : (h + 1) * d_v],
            g[:, h],
            beta[:, h],
        )
        for h in range(heads)
    ]


def naive(q, k, v, g, beta, decay=True, delta=True) -> tuple[np.ndarray, np.ndarray]:
    """Loops over cells, as on paper: the output [n, d_v] and the last state [d_k, d_v].
    decay=False: the state never multiplied by e^g; delta=False: nothing read back (m = 0),
    the quiz's two named mistakes."""
    n, d_k = k.shape
    d_v = v.shape[1]

    def normed(row):
        length = np.sqrt(sum(c * c for c in row) + 1e-6)
        return [c / length for c in row]

    state = [[0.0] * d_v for _ in range(d_k)]
    out = np.zeros((n, d_v))
    for t in range(n):
        qt = [c / np.sqrt(d_k) for c in normed(q[t])]
        kt = normed(k[t])
        factor = np.exp(g[t]) if decay else 1.0
        state = [[factor * state[i][j] for j in range(d_v)] for i in range(d_k)]
        memory = [sum(state[i][j] * kt[i] for i in range(d_k)) * delta for j in range(d_v)]
        for i in range(d_k):
            for j in range(d_v):
                state[i][j] += kt[i] * beta[t] * (v[t][j] - memory[j])
        for j in range(d_v):
            out[t, j] = sum(qt[i] * state[i][j] for i in range(d_k))
    return out, np.array(state)


def test_each_head_equals_a_naive_recurrence():
    trace = run(Problem.from_mapping(DOC))
    for h, parts in enumerate(_heads(DOC), start=1):
        out, last = naive(*parts)
        np.testing.assert_allclose(trace.stage("output", h).value, out, rtol=0, atol=1e-12)
        state = trace.stage("state", h, step=N).value
        np.testing.assert_allclose(state, last, rtol=0, atol=1e-12)
    assert trace.output.shape == (N, H * D_V)


def _transformers_kernels(monkeypatch):
    """transformers' two kernels, their float32 casts lifted: the module's `torch` seen through
    a stand-in whose float32 is float64 (a plain call computes in float32)."""
    torch = pytest.importorskip("torch")
    module = pytest.importorskip("transformers.models.qwen3_next.modeling_qwen3_next")

    class Lifted:
        float32 = torch.float64

        def __getattr__(self, name):
            return getattr(torch, name)

    monkeypatch.setattr(module, "torch", Lifted())
    return torch, module


@pytest.mark.parametrize("chunk", [2, 3, 64])
def test_it_equals_transformers_recurrent_and_chunked_kernels_in_float64(monkeypatch, chunk):
    torch, module = _transformers_kernels(monkeypatch)
    doc = DOC | {"gated_delta": DOC["gated_delta"] | {"chunk": chunk}}
    trace = run(Problem.from_mapping(doc))
    parts = _heads(doc)

    def stacked(index):  # [1, n, H, d] (q, k, v) or [1, n, H] (g, β)
        return torch.tensor(np.stack([p[index] for p in parts], axis=1))[None]

    q, k, v, g, beta = (stacked(i) for i in range(5))
    recurrent, state = module.torch_recurrent_gated_delta_rule(
        q, k, v, g, beta, output_final_state=True, use_qk_l2norm_in_kernel=True
    )
    chunked, _ = module.torch_chunk_gated_delta_rule(
        q, k, v, g, beta, chunk_size=chunk, use_qk_l2norm_in_kernel=True
    )
    assert recurrent.dtype == torch.float64 and chunked.dtype == torch.float64
    for h in range(1, H + 1):
        ours = trace.stage("output", h).value
        np.testing.assert_allclose(recurrent[0, :, h - 1].numpy(), ours, rtol=0, atol=1e-12)
        np.testing.assert_allclose(chunked[0, :, h - 1].numpy(), ours, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            trace.stage("chunked", h).value, chunked[0, :, h - 1].numpy(), rtol=0, atol=1e-12
        )
        np.testing.assert_allclose(
            state[0, h - 1].numpy(), trace.stage("state", h, step=N).value, rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 7, 64])
def test_chunked_equals_recurrent_and_weights_times_v_equals_the_output(chunk):
    doc = DOC | {"gated_delta": DOC["gated_delta"] | {"chunk": chunk}}
    trace = run(Problem.from_mapping(doc))
    for h in range(1, H + 1):
        out = trace.stage("output", h).value
        weights = trace.stage("weights", h).value
        assert np.abs(trace.stage("chunked", h).value - out).max() <= 1e-12
        assert np.abs(weights @ trace.stage("v", h).value - out).max() <= 1e-12
        assert np.all(np.triu(weights, 1) == 0)  # causal: nothing above the diagonal
        notes = [n.text("en") for n in trace.stage("output", h).notes]
        assert any(n.startswith("W·V equals this output up to rounding") for n in notes)
        assert any(n.startswith("The chunked form gives the same output") for n in notes)


def test_weights_are_the_layer_run_on_one_value_per_token():
    """W is what the layer gives with V = the identity (column s: token s's value alone): the
    recurrence is linear in V for fixed q, k, g and β."""
    trace = run(Problem.from_mapping(DOC))
    for h, (q, k, _, g, beta) in enumerate(_heads(DOC), start=1):
        by_identity, _ = naive(q, k, np.eye(N), g, beta)
        np.testing.assert_allclose(trace.stage("weights", h).value, by_identity, atol=1e-12)


def test_the_state_arithmetic_redoes_its_cells():
    """Every line of a state's cell arithmetic: '=' when its shown numbers give the result."""
    small = {
        "x": [[1, 0], [0, 1], [1, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 2]],
        "mask": "causal",
        "gated_delta": {"g": [-0.1, -0.5, -0.2], "beta": [0.5, 0.9, 0.3]},
    }
    trace = run(Problem.from_mapping(small))
    text = render(trace, "markdown", RenderOptions(color=False))
    state = trace.stage("state", None, step=2).value
    assert f"[2,1]: 0.6065×0.3536 + 1.0000×0.9000×(1 − 0.2144) ≈ {state[1, 0]:.4f}" in text
    assert "[2,2]: 0.6065×0 + 1.0000×0.9000×(2 − 0) = 1.8000" in text
    assert "token 3" in render(trace, "txt", RenderOptions(color=False))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "json", "markdown", "latex", "html", "svg", "torch"])
def test_every_format_in_both_languages(fmt, lang):
    trace = run(Problem.from_mapping(DOC))
    text = render(trace, fmt, RenderOptions(lang=lang, color=False))
    assert "softmax(Q·Kᵀ" not in text  # the header says the layer's own formula
    if fmt == "json":
        doc = json.loads(text)
        steps = [s["step"] for s in doc["stages"] if s["id"] == "state" and s["head"] == 1]
        assert steps == list(range(1, N + 1))
        assert doc["input"]["gated_delta"]["g"] == DOC["gated_delta"]["g"]


def test_the_torch_script_agrees(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "gdn.py"
    script.write_text(render(run(Problem.from_mapping(DOC)), "torch", RenderOptions(color=False)))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "OK: PyTorch agrees" in done.stdout, done.stderr


@pytest.mark.parametrize(
    ("change", "args", "fragments"),
    [
        (
            {"gated_delta": DOC["gated_delta"] | {"g": [1, 2]}},
            (),
            ("gated_delta's g is a flat list of 2 numbers", "7×2"),
        ),
        ({"gated_delta": DOC["gated_delta"] | {"g": [[-1, -1]]}}, (), ("g is 1×2", "7×2")),
        ({"gated_delta": DOC["gated_delta"] | {"chunk": 0}}, (), ("chunk",)),
        ({"gated_delta": DOC["gated_delta"] | {"eps": 1}}, (), ("has no key",)),
        ({"gated_delta": {"g": DOC["gated_delta"]["g"]}}, (), ("needs both g",)),
        ({"mask": "none"}, (), ('give mask "causal"',)),
        # no mask key at all: the message says where the "none" it names comes from
        ({"mask": None}, (), ('give mask "causal"', 'without a "mask" key has none')),
        (
            {"gated_delta": DOC["gated_delta"] | {"g": [[-1, 0.5]] * N}},
            (),
            ("above 0 at token 1, head 2",),
        ),
        ({"kv_heads": 1}, (), ("kv_heads = 1",)),
        ({"softcap": 30}, (), ("other features", "leave out softcap.")),
        ({}, ("--decode", "2"), ("leave out --decode",)),
        ({}, ("--tiles", "2"), ("leave out --tiles",)),
        ({}, ("--dtype", "bfloat16", "--policy", "sdpa"), ("--policy sdpa does not apply",)),
        ({"attend": [1] * N}, ("--backward",), ("attend puts the loss on softmax weights",)),
    ],
)
def test_what_it_does_not_support_is_one_message(tmp_path, change, args, fragments):
    path = tmp_path / "bad.json"
    doc = {k: v for k, v in (DOC | change).items() if v is not None}  # None: the key left out
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path), *args), *fragments)


def test_exact_fractions_end_at_the_l2_norm_and_the_quiz_grades_its_stages(tmp_path):
    """--exact keeps the projections' fractions and says where they end (the norm's root); the
    quiz grades the implicit weights and the output cell by cell like any stage."""
    trace = run(Problem.from_mapping(DOC, exact=True))
    assert trace.stage("q", 1).exact is not None
    notes = [n.text("en") for n in trace.stage("q_l2", 1).notes]
    assert any(n.startswith("No exact fractions from here on: the L2 norm") for n in notes)
    plain = run(Problem.from_mapping(DOC))
    weights = np.round(plain.stage("weights", 1).value, 4)
    weights[-1, 0] += 1  # one wrong cell
    answers = {
        "1/weights": weights.tolist(),
        "1/output": np.round(plain.stage("output", 1).value, 4).tolist(),
    }
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    problem = tmp_path / "gdn.json"
    problem.write_text(json.dumps(DOC), encoding="utf-8")
    done = run_qkvcalc("quiz", str(problem), "--answers", str(path), "--no-color")
    assert done.returncode == 1, done.stderr
    assert f"W[{N},1]" in done.stdout and f"Cells right: {N * N - 1 + N * D_V} of" in done.stdout


MISTAKES = [
    ("gdn_decay_missing", {"decay": False}, "never multiplied by e^(g_t)", "감쇠를 뺐습니다"),
    ("gdn_delta_missing", {"delta": False}, "gated linear attention", "델타 규칙은 없음"),
]


@pytest.mark.parametrize("stage", ["weights", "output"])
@pytest.mark.parametrize("case", range(2))
def test_a_named_mistake_at_the_weights_and_the_output(stage, case):
    """The weights or the output worked out (loops, here) with the decay or the delta rule's
    read-back left out: the quiz names that mistake, in both languages; the truth names none."""
    mistake_id, flags, words, _ = MISTAKES[case]
    trace = run(Problem.from_mapping(DOC))
    for h, (q, k, v, g, beta) in enumerate(_heads(DOC), start=1):
        wrong = naive(q, k, np.eye(N) if stage == "weights" else v, g, beta, **flags)[0]
        truth = trace.stage(stage, h).value
        assert not np.allclose(wrong, truth, atol=1e-3)  # the mistake shows in these numbers
        found = recognise(trace, f"{h}/{stage}", np.round(wrong, 4), {}, 4)
        assert found is not None and found.id == mistake_id
        assert words in found.text("en")
        assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
        assert recognise(trace, f"{h}/{stage}", np.round(truth, 4), {}, 4) is None


@pytest.mark.parametrize("case", range(2))
def test_a_real_quiz_of_the_preset_names_the_mistake(tmp_path, case):
    """`qkvcalc quiz --preset deltanet --answers`, JSON, both languages: an output worked out
    with the mistake is named at `output`."""
    mistake_id, flags, words, korean = MISTAKES[case]
    doc = json.loads((ROOT / "presets" / "deltanet.json").read_text(encoding="utf-8"))
    ((q, k, v, g, beta),) = _heads(doc)
    wrong = naive(q, k, v, g, beta, **flags)[0]
    (tmp_path / "a.json").write_text(json.dumps({"output": np.round(wrong, 4).tolist()}))
    for lang, text in (("en", words), ("ko", korean)):
        args = ("--answers", str(tmp_path / "a.json"), "--format", "json", "--lang", lang)
        proc = run_qkvcalc("quiz", "--preset", "deltanet", *args)
        assert proc.returncode == 1, proc.stderr
        stages = {s["key"]: s for s in json.loads(proc.stdout)["stages"]}
        assert stages["output"]["mistake"] == mistake_id
        assert text in stages["output"]["mistake_text"]


@pytest.mark.parametrize("precision", [2, 4, 12])
def test_the_weights_arithmetic_redoes_its_cells(precision):
    """A line per cell on or below the diagonal, none above; each '=' holds for the numbers
    shown (tests/test_arith_invariant.py's evaluator), and at 12 decimals the left side gives
    the cell to 1e-9 (the unrolled formula is W itself, not an approximation of it)."""
    from qkvcalc.render.arith import Style, stage_work
    from tests.test_arith_invariant import check_line, evaluate

    trace = run(Problem.from_mapping(DOC))
    for h in range(1, H + 1):
        weights = trace.stage("weights", h).value
        lines = list(stage_work(trace.stage("weights", h), Style(precision=precision)))
        assert len(lines) == N * (N + 1) // 2
        cells = [(t, s) for t in range(N) for s in range(t + 1)]
        for (t, s), line in zip(cells, lines, strict=True):
            assert line.startswith(f"[{t + 1},{s + 1}]: ")
            assert check_line(line, precision)[1] is None, line
            if precision == 12:
                left = line.split(": ", 1)[1].split(" = ")[0].split(" ≈ ")[0]
                assert evaluate(left) == pytest.approx(weights[t, s], abs=1e-9), line


@pytest.mark.parametrize("preset", sorted(p.stem for p in (ROOT / "presets").glob("*.json")))
def test_every_stage_formula_in_tex_braces_its_subscripts_and_sets_words_upright(cli, preset):
    """A_(s+1) in TeX is A with the subscript '(' and then s+1) on the line; O_chunk is O_c
    then 'hunk'; l2norm(Q) in italics reads as a product of letters. Every stage formula of
    every preset, as LaTeX writes it: no subscript in parentheses, no unbraced subscript of
    several letters, no function name of several letters in math italics."""
    result = cli("explain", "--preset", preset, "--format", "latex")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    formulas = [lines[i + 1] for i, line in enumerate(lines[:-1]) if line == "\\["]
    assert formulas
    for formula in formulas:
        assert "_(" not in formula, formula
        assert not re.search(r"_[A-Za-z]{2,}", formula), formula
        assert not re.search(r"(?<![\\{A-Za-z])[a-z][a-z0-9]{3,}\(", formula), formula


def test_beside_other_features_the_refusal_names_them_in_korean_too(tmp_path):
    """It said 'leave them out' without saying which: it names every other feature given."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(DOC | {"softcap": 30, "sinks": [1, 1]}), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path), "--lang", "ko"), "빼야 할 기능: softcap, sinks.")


@pytest.mark.parametrize("preset", ["deltanet", "kda", "lightning"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_value_stage_speaks_of_the_state_not_of_scores_or_a_v(cli, preset, lang):
    """A linear-attention layer has no scores and no A: its V stage said 'The scores only say
    how much each token matters' and 'A·V is n×d_v'. It says what V is to the state, and the
    width through the state read with a Query row (not o_t = S_tᵀ·q̂_t: lightning attention has
    no q̂); a softmax preset keeps its own sentences."""
    from qkvcalc.i18n import translate

    def value_stage(name: str) -> str:
        result = cli("explain", "--preset", name, "--lang", lang, "--no-color")
        assert result.exit_code == 0, result.stderr
        text = result.stdout
        return " ".join(text[text.index("4/") : text.index("5/")].split())  # lines unwrapped

    mine, softmax = value_stage(preset), value_stage("doc")
    scores = "The scores only" if lang == "en" else "어텐션 스코어는"
    state = "the state read with a Query row" if lang == "en" else "Query 행으로 상태를 읽은 값"
    assert scores not in mine and "A·V" not in mine and state in mine and "q̂" not in mine
    assert scores in softmax and "A·V" in softmax
    assert translate("stage.v_state.title", lang) == translate("stage.v.title", lang)


@pytest.mark.parametrize("preset", ["deltanet", "kda"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_with_a_given_scale_the_query_norm_does_not_say_it_divides_by_root_d_k(preset, lang):
    """With "scale": 0.5 the rows are multiplied by 0.5; the why said only 'then by √d_k'. It
    says the given scale replaces it (and the numbers are l2norm(Q) × 0.5)."""
    doc = json.loads((ROOT / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    trace = run(Problem.from_mapping(doc | {"scale": 0.5}))
    q = trace.stage("q", None).value
    expected = q / np.sqrt((q * q).sum(axis=1, keepdims=True) + 1e-6) * 0.5
    np.testing.assert_allclose(trace.stage("q_l2", None).value, expected, atol=1e-15)
    text = render(trace, "txt", RenderOptions(lang=lang, color=False))
    why = text[text.index("5/") : text.index("6/")]
    assert "l2norm(Q) × 0.5" in why
    assert ("times the problem's scale instead" if lang == "en" else "그 값을 곱합니다") in why


@pytest.mark.parametrize("preset", ["deltanet", "kda"])
def test_train_on_a_linear_preset_asks_for_a_loss(preset):
    """`train --preset deltanet` (or kda) learns through the layer's core: with no loss in the
    preset it asks for one. The loss's own message says 'none' in Korean words."""
    one_message(run_qkvcalc("train", "--preset", preset), "needs a loss")
    ko = run_qkvcalc("train", "--preset", "doc", "--lang", "ko")
    one_message(ko, "이 문제에 있는 것: 없음.")
