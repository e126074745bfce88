"""Kimi Delta Attention (KDA, Kimi Linear) as the problem, the op module qkvcalc/ops/kimi_delta.py:
Gated DeltaNet with one decay per Key channel. Each head's q and k L2-normed, the state decayed
row by row and updated by the delta rule token by token, the output read from the states, the
n×n `weights` the layer computes without forming them, and the chunked form. Checked against a
naive recurrence written here, against transformers' own recurrent_kimi_delta_attention and
chunk_kimi_delta_attention (their float32 casts lifted to float64) and the core of a real
KimiLinearDeltaAttention layer built from a tiny config, chunked = recurrent and
weights·V = output to 1e-12, against Gated DeltaNet when every channel decays alike, in every
format in both languages, and as bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import ROOT, one_message, run_qkvcalc

MISTAKE_IDS = {"kda_decay_scalar"}  # tests/test_feature_mistakes.py reads it

RNG = np.random.default_rng(38)
N, D_MODEL, H, D_K, D_V = 7, 4, 2, 3, 2


def _kimi_g(shape: tuple[int, ...]) -> np.ndarray:
    # as Kimi Linear makes it: g = −e^(A_log)·softplus(f_b(f_a(x)) + dt_bias) < 0, A_log per head
    a_log = RNG.standard_normal(H)[None, :, None]
    return (-np.exp(a_log) * np.log1p(np.exp(RNG.standard_normal(shape)))).round(6)


DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, H * D_V)).tolist(),
    "heads": H,
    "mask": "causal",
    "kimi_delta": {
        "g": _kimi_g((N, H, D_K)).tolist(),  # n × H × d_k
        "beta": (1 / (1 + np.exp(-RNG.standard_normal((N, H))))).round(6).tolist(),
        "chunk": 3,
    },
}


def _heads(doc: dict) -> list[tuple[np.ndarray, ...]]:
    """Each head's (q, k, v, g [n, d_k], β) from the document, by the problem's split of the
    columns (g given n × H × d_k or n × H·d_k)."""
    x, wq, wk, wv = (np.asarray(doc[key], float) for key in ("x", "wq", "wk", "wv"))
    heads = doc.get("heads", 1)
    d_k, d_v = wq.shape[1] // heads, wv.shape[1] // heads
    n = x.shape[0]
    g = np.asarray(doc["kimi_delta"]["g"], float).reshape(n, heads, d_k)
    beta = np.asarray(doc["kimi_delta"]["beta"], float).reshape(n, heads)
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


def naive(q, k, v, g, beta, scalar=False) -> tuple[np.ndarray, np.ndarray]:
    """Loops over cells, as on paper: the output [n, d_v] and the last state [d_k, d_v]. Row i
    of the state decays by e^(g_t[i]); scalar=True: every row by e^(the mean of g_t), the quiz's
    named mistake."""
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
        mean = sum(g[t]) / d_k
        factors = [np.exp(mean if scalar else g[t][i]) for i in range(d_k)]
        state = [[factors[i] * state[i][j] for j in range(d_v)] for i in range(d_k)]
        memory = [sum(state[i][j] * kt[i] for i in range(d_k)) for j in range(d_v)]
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
    """transformers' two KDA functions, their float32 casts lifted: the module's `torch` seen
    through a stand-in whose float32 is float64, and Tensor.float() made a float64 cast (the
    chunked form's decay mask calls it; a plain call computes in float32)."""
    torch = pytest.importorskip("torch")
    module = pytest.importorskip("transformers.models.kimi_linear.modeling_kimi_linear")

    class Lifted:
        float32 = torch.float64

        def __getattr__(self, name):
            return getattr(torch, name)

    monkeypatch.setattr(module, "torch", Lifted())
    monkeypatch.setattr(torch.Tensor, "float", lambda self, *a, **kw: self.to(torch.float64))
    return torch, module


@pytest.mark.parametrize("chunk", [2, 3, 64])
def test_it_equals_transformers_recurrent_and_chunked_kernels_in_float64(monkeypatch, chunk):
    torch, module = _transformers_kernels(monkeypatch)
    doc = DOC | {"kimi_delta": DOC["kimi_delta"] | {"chunk": chunk}}
    trace = run(Problem.from_mapping(doc))
    parts = _heads(doc)

    def stacked(index):  # [1, n, H, d] (q, k, v, g) or [1, n, H] (β)
        return torch.tensor(np.stack([p[index] for p in parts], axis=1))[None]

    q, k, v, g, beta = (stacked(i) for i in range(5))
    recurrent, state = module.recurrent_kimi_delta_attention(
        q, k, v, g, beta, None, True, use_qk_l2norm_in_kernel=True
    )
    chunked, _ = module.chunk_kimi_delta_attention(
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


def test_it_equals_the_core_of_a_real_kimi_linear_layer(monkeypatch):
    """A KimiLinearDeltaAttention layer built from a tiny config (random weights, float64, its
    float32 casts lifted): the q, k, v (after its short convolutions), g and β it hands its core,
    given to qkvcalc as they come (g as [n, H, d_k]), give the core's output to 1e-12."""
    torch, module = _transformers_kernels(monkeypatch)
    from transformers import KimiLinearConfig

    n, heads, d = 6, 2, 4
    config = KimiLinearConfig(
        hidden_size=16,
        linear_num_heads=heads,
        linear_head_dim=d,
        num_hidden_layers=1,
        layer_types=["linear_attention"],
        mlp_layer_types=["dense"],
        vocab_size=32,
        intermediate_size=16,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    torch.manual_seed(38)
    layer = module.KimiLinearDeltaAttention(config, 0).double()
    with torch.no_grad():
        for weight in layer.parameters():  # A_log and dt_bias are left empty by the layer
            weight.normal_(0, 0.5)
    seen: dict = {}
    core = module.chunk_kimi_delta_attention

    def spy(q, k, v, g, beta, **kwargs):
        out = core(q, k, v, g=g, beta=beta, **kwargs)
        seen.update(q=q, k=k, v=v, g=g, beta=beta, out=out[0])
        return out

    monkeypatch.setattr(module, "chunk_kimi_delta_attention", spy)
    layer(torch.randn(1, n, 16, dtype=torch.float64))
    assert seen["g"].shape == (1, n, heads, d) and seen["beta"].shape == (1, n, heads)
    got = {key: value[0].detach().numpy() for key, value in seen.items()}
    doc = {key: got[key].reshape(n, heads * d).tolist() for key in ("q", "k", "v")}
    doc |= {"heads": heads, "mask": "causal"}
    doc["kimi_delta"] = {"g": got["g"].tolist(), "beta": got["beta"].tolist()}
    trace = run(Problem.from_mapping(doc))
    for h in range(1, heads + 1):
        np.testing.assert_allclose(
            trace.stage("output", h).value, got["out"][:, h - 1], rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 7, 64])
def test_chunked_equals_recurrent_and_weights_times_v_equals_the_output(chunk):
    doc = DOC | {"kimi_delta": DOC["kimi_delta"] | {"chunk": chunk}}
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


def test_every_channel_decaying_alike_is_gated_deltanet():
    """With g_t the same in every channel, Diag(e^(g_t)) is e^(g_t)·I: every stage of the layer
    equals Gated DeltaNet's (qkvcalc/ops/gated_delta.py) given that one g per token and head."""
    scalar = np.asarray(DOC["kimi_delta"]["g"])[:, :, 0]  # [n, H]
    kda = DOC | {"kimi_delta": DOC["kimi_delta"] | {"g": np.repeat(scalar[:, :, None], D_K, 2)}}
    gdn = {key: value for key, value in DOC.items() if key != "kimi_delta"}
    gdn["gated_delta"] = {"g": scalar.tolist(), "beta": DOC["kimi_delta"]["beta"], "chunk": 3}
    ours, theirs = run(Problem.from_mapping(kda)), run(Problem.from_mapping(gdn))
    for h in range(1, H + 1):
        for sid in ("q_l2", "k_l2", "weights", "chunked", "output"):
            np.testing.assert_allclose(
                ours.stage(sid, h).value, theirs.stage(sid, h).value, rtol=0, atol=1e-12
            )
        for t in range(1, N + 1):
            np.testing.assert_allclose(
                ours.stage("state", h, step=t).value,
                theirs.stage("state", h, step=t).value,
                rtol=0,
                atol=1e-12,
            )
    np.testing.assert_allclose(ours.output, theirs.output, rtol=0, atol=1e-12)
    # and with the channels apart, it is not Gated DeltaNet's with any one of them
    apart = run(Problem.from_mapping(DOC)).stage("output", 1).value
    assert np.abs(apart - theirs.stage("output", 1).value).max() > 1e-3


def test_g_may_be_given_flat_with_head_1s_channels_first():
    g = np.asarray(DOC["kimi_delta"]["g"])
    flat = DOC | {"kimi_delta": DOC["kimi_delta"] | {"g": g.reshape(N, H * D_K).tolist()}}
    a, b = run(Problem.from_mapping(DOC)), run(Problem.from_mapping(flat))
    np.testing.assert_array_equal(a.output, b.output)
    for h in range(1, H + 1):
        np.testing.assert_array_equal(a.stage("gates", h).value[:, :D_K], g[:, h - 1])
        np.testing.assert_array_equal(
            a.stage("gates", h).value[:, D_K], np.asarray(DOC["kimi_delta"]["beta"])[:, h - 1]
        )


def test_with_one_head_and_one_channel_g_may_be_a_flat_list():
    """d_k = 1 and one head: g and β each a list of n numbers; the layer is then Gated DeltaNet's
    (one channel is one decay per head)."""
    doc = {"x": [[1], [2], [-1]], "wq": [[2]], "wk": [[1]], "wv": [[3, 1]], "mask": "causal"}
    kda = doc | {"kimi_delta": {"g": [-0.5, -1, -0.2], "beta": [0.5, 1, 0.3]}}
    gdn = doc | {"gated_delta": {"g": [-0.5, -1, -0.2], "beta": [0.5, 1, 0.3]}}
    ours, theirs = run(Problem.from_mapping(kda)), run(Problem.from_mapping(gdn))
    np.testing.assert_allclose(ours.output, theirs.output, rtol=0, atol=1e-15)


SMALL = {
    "x": [[1, 0], [0, 1], [1, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [[1, 0], [1, 2]],
    "mask": "causal",
    "kimi_delta": {"g": [[-0.1, -0.7], [-0.5, -0.05], [-0.2, -1]], "beta": [0.5, 0.9, 0.3]},
}


def test_the_state_arithmetic_decays_each_row_by_its_own_channel():
    """A state cell's line: row i's own decay e^(g_t[i]) times the cell before, plus the write
    with m_j read through every channel's decay."""
    trace = run(Problem.from_mapping(SMALL))
    text = render(trace, "markdown", RenderOptions(color=False))
    prev = trace.stage("state", None, step=1).value
    state = trace.stage("state", None, step=2).value
    k2 = trace.stage("k_l2", None).value[1]
    m = (np.exp([-0.5, -0.05]) * prev[:, 0]) @ k2
    first = f"[1,1]: 0.6065×{prev[0, 0]:.4f} + 0×0.9000×(1 − {m:.4f})"
    second = f"[2,1]: 0.9512×{prev[1, 0]:.4f} + 1.0000×0.9000×(1 − {m:.4f})"
    assert first in text and f"{state[0, 0]:.4f}" in text
    assert second in text
    assert "token 3" in render(trace, "txt", RenderOptions(color=False))


@pytest.mark.parametrize("precision", [2, 4, 12])
@pytest.mark.parametrize("sid", ["state", "weights"])
def test_the_arithmetic_redoes_its_cells(precision, sid):
    """A line per cell (the weights: on or below the diagonal, none above); each '=' holds for
    the numbers shown (tests/test_arith_invariant.py's evaluator), and at 12 decimals the left
    side gives the cell to 1e-9 (the unrolled formula is W itself, not an approximation)."""
    from qkvcalc.render.arith import Style, stage_work
    from tests.test_arith_invariant import check_line, evaluate

    trace = run(Problem.from_mapping(DOC))
    for h in range(1, H + 1):
        stages = (
            [trace.stage("weights", h)]
            if sid == "weights"
            else [trace.stage("state", h, step=t) for t in range(1, N + 1)]
        )
        for stage in stages:
            lines = list(stage_work(stage, Style(precision=precision)))
            rows, cols = stage.value.shape
            cells = [(i, j) for i in range(rows) for j in range(cols) if sid == "state" or j <= i]
            assert len(lines) == len(cells)
            for (i, j), line in zip(cells, lines, strict=True):
                assert line.startswith(f"[{i + 1},{j + 1}]: ")
                assert check_line(line, precision)[1] is None, line
                if precision == 12:
                    left = line.split(": ", 1)[1].split(" = ")[0].split(" ≈ ")[0]
                    assert evaluate(left) == pytest.approx(stage.value[i, j], abs=1e-9), line


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "json", "markdown", "latex", "html", "svg", "torch"])
def test_every_format_in_both_languages(fmt, lang):
    trace = run(Problem.from_mapping(DOC))
    text = render(trace, fmt, RenderOptions(lang=lang, color=False))
    assert "softmax(Q·Kᵀ" not in text  # the header says the layer's own formula
    assert "Gated DeltaNet:" not in text  # every title is the layer's own
    if fmt == "json":
        doc = json.loads(text)
        steps = [s["step"] for s in doc["stages"] if s["id"] == "state" and s["head"] == 1]
        assert steps == list(range(1, N + 1))
        assert doc["input"]["kimi_delta"]["g"] == DOC["kimi_delta"]["g"]
        again = run(Problem.from_mapping(doc["input"]))  # the echo reads back as the same problem
        np.testing.assert_array_equal(again.output, trace.output)


def test_the_torch_script_agrees(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "kda.py"
    script.write_text(render(run(Problem.from_mapping(DOC)), "torch", RenderOptions(color=False)))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "OK: PyTorch agrees" in done.stdout, done.stderr


KDA = DOC["kimi_delta"]


@pytest.mark.parametrize(
    ("change", "args", "fragments"),
    [
        (
            {"kimi_delta": KDA | {"g": [1, 2]}},
            (),
            ("g is a flat list of 2 numbers", "7×2×3", "7×6"),
        ),
        ({"kimi_delta": KDA | {"g": [[-1, -1]]}}, (), ("kimi_delta's g is 1×2", "7×2×3", "7×6")),
        ({"kimi_delta": KDA | {"beta": [1, 1]}}, (), ("beta is a flat list of 2 numbers", "7×2")),
        ({"kimi_delta": KDA | {"g": KDA["g"][:5]}}, (), ("kimi_delta's g is 5×2×3", "7×2×3")),
        (
            {"kimi_delta": KDA | {"g": [*KDA["g"][:2], [[-1, -1], [-1, -1]], *KDA["g"][3:]]}},
            (),
            ("token 3 a 2×2 matrix", "H×d_k = 2×3"),
        ),
        (
            {"kimi_delta": KDA | {"beta": [0.5] * N}},
            (),
            ("kimi_delta's beta is a flat list of 7 numbers", "7×2"),
        ),
        (
            {
                "kimi_delta": KDA
                | {"g": [*KDA["g"][:1], [[-1, -1, -1], [-1, "NaN", -1]], *KDA["g"][2:]]}
            },
            (),
            ("kimi_delta.g[2][2,2]: 'NaN' is not a number",),
        ),
        ({"kimi_delta": KDA | {"g": [[-1] * (H * D_K + 1)] * N}}, (), ("7×7", "7×6")),
        ({"kimi_delta": KDA | {"chunk": 0}}, (), ("chunk",)),
        ({"kimi_delta": KDA | {"eps": 1}}, (), ("has no key",)),
        ({"kimi_delta": {"g": KDA["g"]}}, (), ("needs both g",)),
        ({"kimi_delta": [1, 2]}, (), ("must be an object",)),
        ({"mask": "none"}, (), ('give mask "causal"',)),
        ({"mask": None}, (), ('give mask "causal"', 'without a "mask" key has none')),
        (
            {"kimi_delta": KDA | {"g": [[[-1, -1, -1], [-1, 0.5, -1]]] * N}},
            (),
            ("above 0 at token 1, head 2, channel 2",),
        ),
        ({"kv_heads": 1}, (), ("kv_heads = 1",)),
        ({"softcap": 30}, (), ("other features", "leave out softcap.")),
        (
            {"gated_delta": {"g": [[-1, -1]] * N, "beta": [[1, 1]] * N}},
            (),
            ("other features", "leave out kimi_delta."),
        ),
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


def test_a_bad_shape_is_one_message_in_korean_too(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(DOC | {"kimi_delta": KDA | {"g": [1, 2]}}), encoding="utf-8")
    one_message(
        run_qkvcalc("explain", str(path), "--lang", "ko"), "kimi_delta의 g에 수 2개의 1차원 목록이"
    )


def test_the_quiz_grades_its_stages(tmp_path):
    """The quiz grades the implicit weights and the output cell by cell like any stage."""
    plain = run(Problem.from_mapping(DOC))
    weights = np.round(plain.stage("weights", 1).value, 4)
    weights[-1, 0] += 1  # one wrong cell
    answers = {
        "1/weights": weights.tolist(),
        "1/output": np.round(plain.stage("output", 1).value, 4).tolist(),
    }
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    problem = tmp_path / "kda.json"
    problem.write_text(json.dumps(DOC), encoding="utf-8")
    done = run_qkvcalc("quiz", str(problem), "--answers", str(path), "--no-color")
    assert done.returncode == 1, done.stderr
    assert f"W[{N},1]" in done.stdout and f"Cells right: {N * N - 1 + N * D_V} of" in done.stdout


@pytest.mark.parametrize("stage", ["weights", "output"])
def test_the_decay_as_one_number_per_token_is_a_named_mistake(stage):
    """The weights or the output worked out (loops, here) with every row of the state decayed
    by e^(the channels' mean g): the quiz names that mistake, in both languages; the truth
    names none."""
    trace = run(Problem.from_mapping(DOC))
    for h, (q, k, v, g, beta) in enumerate(_heads(DOC), start=1):
        wrong = naive(q, k, np.eye(N) if stage == "weights" else v, g, beta, scalar=True)[0]
        truth = trace.stage(stage, h).value
        assert not np.allclose(wrong, truth, atol=1e-3)  # the mistake shows in these numbers
        found = recognise(trace, f"{h}/{stage}", np.round(wrong, 4), {}, 4)
        assert found is not None and found.id == "kda_decay_scalar"
        assert "one number per token" in found.text("en")
        assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
        assert recognise(trace, f"{h}/{stage}", np.round(truth, 4), {}, 4) is None


def test_a_real_quiz_of_the_preset_names_the_mistake(tmp_path):
    """`qkvcalc quiz --preset kda --answers`, JSON, both languages: an output worked out with
    one decay per token is named at `output`."""
    doc = json.loads((ROOT / "presets" / "kda.json").read_text(encoding="utf-8"))
    ((q, k, v, g, beta),) = _heads(doc)
    wrong = naive(q, k, v, g, beta, scalar=True)[0]
    (tmp_path / "a.json").write_text(json.dumps({"output": np.round(wrong, 4).tolist()}))
    for lang, text in (("en", "one number per token"), ("ko", "토큰마다 수 하나")):
        args = ("--answers", str(tmp_path / "a.json"), "--format", "json", "--lang", lang)
        proc = run_qkvcalc("quiz", "--preset", "kda", *args)
        assert proc.returncode == 1, proc.stderr
        stages = {s["key"]: s for s in json.loads(proc.stdout)["stages"]}
        assert stages["output"]["mistake"] == "kda_decay_scalar"
        assert text in stages["output"]["mistake_text"]


@pytest.mark.parametrize(("lang", "says"), [("en", "the same row"), ("ko", "같은 행")])
def test_the_weights_note_says_what_each_number_of_a_line_is(lang, says):
    """Below the diagonal a line is β_s×(d_0 − W[t,r]×d_r − …): the first number inside the
    parentheses and each product's second factor are the decayed dot products (recomputed here
    from K̂, Q̂ and g), each product's first factor is a weight W[t,r] to the right in the row.
    The note says so (it said every number in the brackets was a dot product)."""
    from qkvcalc.render.arith import Style, stage_work

    doc = json.loads((ROOT / "presets" / "kda.json").read_text(encoding="utf-8"))
    trace = run(Problem.from_mapping(doc))
    w, q, k = (trace.stage(sid, None).value for sid in ("weights", "q_l2", "k_l2"))
    g = np.asarray(doc["kimi_delta"]["g"], float)

    def dot(a, b, first, last):  # ⟨a, b⟩ over tokens first … last (1-based), decayed
        return float(np.sum(np.exp(g[first - 1 : last].sum(axis=0)) * a * b))

    lines = list(stage_work(trace.stage("weights", None), Style(precision=4)))
    checked = 0
    for line in lines:
        t, s = (int(i) for i in line[1 : line.index("]")].split(","))
        if s == t:
            continue
        inner = line.split("×(", 1)[1].rsplit(")", 1)[0]
        first, *products = inner.split(" − ")
        assert float(first) == pytest.approx(dot(k[s - 1], q[t - 1], s + 1, t), abs=5e-5)
        for r, product in zip(range(s + 1, t + 1), products, strict=True):
            weight, overlap = (float(x) for x in product.split("×"))
            assert weight == pytest.approx(w[t - 1, r - 1], abs=5e-5), line
            assert overlap == pytest.approx(dot(k[s - 1], k[r - 1], s + 1, r), abs=5e-5), line
            checked += 1
    assert checked == 4  # W[2,1], W[3,1] (two), W[3,2]
    text = render(trace, "txt", RenderOptions(lang=lang, color=False))
    note = text[text.index("⟨a, b⟩") :].split("\n\n")[0]
    assert says in note and "numbers in brackets" not in note and "괄호 안의 수가" not in note
