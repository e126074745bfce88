"""MiniMax's lightning attention as the problem, the op module qkvcalc/ops/lightning.py: each
head's state decayed by e^(−λ) and added to (k·vᵀ) token by token, the output read from the
states, the n×n `weights` the layer computes without forming them, MiniMax's blocked form; and
around that core, silu on q, k and v, the RMSNorm over the joined heads and the output gate.
Checked against a naive recurrence written here, against transformers' own
MiniMaxLightningAttention (its float32 norm and its float32 decay buffers made float64),
blocked = recurrent and weights·V = output to 1e-12, in every format in both languages, the
quiz's two named mistakes, and as bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import ROOT, one_message, run_qkvcalc

MISTAKE_IDS = {"lightning_decay_missing", "lightning_decay_by_position"}  # test_feature_mistakes

RNG = np.random.default_rng(41)
N, D_MODEL, H, D = 7, 6, 2, 3
SLOPES = [0.35, 0.12]
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, H * D)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, H * D)).tolist(),
    "heads": H,
    "mask": "causal",
    "lightning": {"slope": SLOPES, "block": 3},
}
FULL = DOC | {
    "wo": RNG.standard_normal((H * D, D_MODEL)).tolist(),
    "lightning": DOC["lightning"]
    | {
        "act": "silu",
        "norm": (1 + 0.3 * RNG.standard_normal(H * D)).tolist(),
        "gate": RNG.standard_normal((D_MODEL, H * D)).tolist(),
    },
}


def _heads(doc: dict) -> list[tuple[np.ndarray, ...]]:
    """Each head's (q, k, v, λ), silu applied when the document asks."""
    x, wq, wk, wv = (np.asarray(doc[key], float) for key in ("x", "wq", "wk", "wv"))
    heads = doc.get("heads", 1)
    d = wq.shape[1] // heads
    q, k, v = x @ wq, x @ wk, x @ wv
    if doc["lightning"].get("act") == "silu":
        q, k, v = (m / (1 + np.exp(-m)) for m in (q, k, v))
    cols = [slice(h * d, (h + 1) * d) for h in range(heads)]
    return [(q[:, c], k[:, c], v[:, c], doc["lightning"]["slope"][h]) for h, c in enumerate(cols)]


def naive(q, k, v, slope, decay="distance") -> tuple[np.ndarray, np.ndarray]:
    """Loops over cells, as on paper: the output [n, d_v] and the last state [d_k, d_v].
    decay="none": never multiplied by e^(−λ); decay="position": token s's write decayed by
    e^(−λ·s) and never again (the quiz's two named mistakes)."""
    n, d_k = k.shape
    d_v = v.shape[1]
    state = [[0.0] * d_v for _ in range(d_k)]
    out = np.zeros((n, d_v))
    for t in range(n):
        factor = math.exp(-slope) if decay == "distance" else 1.0
        write = math.exp(-slope * (t + 1)) if decay == "position" else 1.0
        for i in range(d_k):
            for j in range(d_v):
                state[i][j] = factor * state[i][j] + write * k[t][i] * v[t][j]
        for j in range(d_v):
            out[t, j] = sum(q[t][i] * state[i][j] for i in range(d_k))
    return out, np.array(state)


def test_each_head_equals_a_naive_recurrence():
    trace = run(Problem.from_mapping(DOC))
    for h, parts in enumerate(_heads(DOC), start=1):
        out, last = naive(*parts)
        np.testing.assert_allclose(trace.stage("output", h).value, out, rtol=0, atol=1e-12)
        np.testing.assert_allclose(trace.stage("state", h, step=N).value, last, atol=1e-12)
    assert trace.output.shape == (N, H * D)


def _module(doc: dict, block: int):
    """transformers' MiniMaxLightningAttention with the document's weights, in float64: its
    norm computed in float64 (its own casts to float32) and its decay buffers rebuilt in
    float64 from the slopes the document gives."""
    torch = pytest.importorskip("torch")
    from transformers import MiniMaxConfig
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    config = MiniMaxConfig(
        hidden_size=D_MODEL,
        num_attention_heads=H,
        head_dim=D,
        num_hidden_layers=2,
        block_size=block,
        layer_types=["linear_attention", "full_attention"],
    )
    module = MiniMaxLightningAttention(config, 0).to(torch.float64).eval()
    spec = doc["lightning"]
    with torch.no_grad():
        for name, key in (("wq", 0), ("wk", 1), ("wv", 2)):
            # [out, in], each head's rows of q, k and v one after another
            w = torch.tensor(doc[name], dtype=torch.float64).T.reshape(H, D, D_MODEL)
            module.qkv_proj.weight.view(H, 3, D, D_MODEL)[:, key] = w
        module.out_proj.weight.copy_(torch.tensor(doc["wo"], dtype=torch.float64).T)
        module.output_gate.weight.copy_(torch.tensor(spec["gate"], dtype=torch.float64).T)
        module.norm.weight.copy_(torch.tensor(spec["norm"], dtype=torch.float64))
        slope = torch.tensor(spec["slope"], dtype=torch.float64)[:, None, None]
        decays = module.decay_factors(slope)
        module.slope_rate = slope
        module.query_decay, module.key_decay, module.diagonal_decay = decays
    norm = module.norm

    def float64_norm(hidden):
        rms = torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
        return norm.weight * hidden * rms

    norm.forward = float64_norm
    return torch, module


@pytest.mark.parametrize("block", [1, 3, 4, 256])
def test_it_equals_transformers_lightning_attention_in_float64(block):
    """The whole layer (silu, the blocked core, the norm, the gate, out_proj): the module's
    output; and each head's blocked form, the module's core before its norm."""
    doc = FULL | {"lightning": FULL["lightning"] | {"block": block}}
    torch, module = _module(doc, block)
    seen = {}
    module.norm.register_forward_pre_hook(lambda m, args: seen.update(core=args[0][0].clone()))
    with torch.no_grad():
        x = torch.tensor(doc["x"], dtype=torch.float64)[None]
        expected = module(x, None, None)[0][0].numpy()
    trace = run(Problem.from_mapping(doc))
    assert np.abs(trace.output - expected).max() <= 1e-12 * np.abs(expected).max()
    core = seen["core"].numpy()
    for h in range(1, H + 1):
        cols = slice((h - 1) * D, h * D)
        np.testing.assert_allclose(trace.stage("chunked", h).value, core[:, cols], atol=1e-12)
        np.testing.assert_allclose(trace.stage("output", h).value, core[:, cols], atol=1e-12)


def test_the_slopes_minimax_makes_depend_on_the_layer():
    """MiniMax's get_slope_rate, in float64, against the formula written here: the slopes the
    extracted problems carry."""
    torch = pytest.importorskip("torch")
    from transformers import MiniMaxConfig
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    config = MiniMaxConfig(hidden_size=8, num_attention_heads=4, head_dim=2, num_hidden_layers=3)
    for layer in range(3):
        module = MiniMaxLightningAttention(config, layer)
        rate = module.get_slope_rate().reshape(-1).to(torch.float64).numpy()
        ours = [
            (1 / 2 ** (8 / 4)) ** (h + 1) * (1 - layer / (3 - 1 + 1e-5) + 1e-5) for h in range(4)
        ]
        np.testing.assert_allclose(rate, ours, rtol=1e-6)  # float32's rounding


@pytest.mark.parametrize("block", [1, 2, 3, 4, 7, 256])
@pytest.mark.parametrize("doc", [DOC, FULL], ids=["core", "full"])
def test_blocked_equals_recurrent_and_weights_times_v_equals_the_output(block, doc):
    doc = doc | {"lightning": doc["lightning"] | {"block": block}}
    trace = run(Problem.from_mapping(doc))
    v_id = "v_silu" if "act" in doc["lightning"] else "v"
    for h in range(1, H + 1):
        out = trace.stage("output", h).value
        weights = trace.stage("weights", h).value
        assert np.abs(trace.stage("chunked", h).value - out).max() <= 1e-12
        assert np.abs(weights @ trace.stage(v_id, h).value - out).max() <= 1e-12
        assert np.all(np.triu(weights, 1) == 0)
        notes = [n.text("en") for n in trace.stage("output", h).notes]
        v_name = "V'" if "act" in doc["lightning"] else "V"
        assert any(n.startswith(f"W·{v_name} equals this output up to rounding") for n in notes)
        assert any(n.startswith("The blocked form gives the same output") for n in notes)


def test_one_head_with_a_norm_and_no_w_o_still_joins_its_head():
    """The norm comes after the heads are joined: with one head and no W_O the problem still has
    the head's stages, the norm and the concat, and its output is the normed, gated head."""
    doc = {
        "x": DOC["x"],
        "wq": np.asarray(DOC["wq"])[:, :D].tolist(),
        "wk": np.asarray(DOC["wk"])[:, :D].tolist(),
        "wv": np.asarray(DOC["wv"])[:, :D].tolist(),
        "mask": "causal",
        "lightning": {"slope": [0.3], "norm": [1.0, 2.0, 0.5], "norm_eps": 1e-5},
    }
    trace = run(Problem.from_mapping(doc))
    ((q, k, v, slope),) = _heads(doc)
    out, _ = naive(q, k, v, slope)
    normed = out / np.sqrt((out * out).mean(axis=1, keepdims=True) + 1e-5) * [1.0, 2.0, 0.5]
    np.testing.assert_allclose(trace.output, normed, atol=1e-12)
    assert trace.stage("o_norm", 1) is not None


def test_the_state_and_weights_arithmetic_redo_their_cells():
    from qkvcalc.render.arith import Style, stage_work
    from tests.test_arith_invariant import check_line, evaluate

    trace = run(Problem.from_mapping(FULL))
    for sid, step in (("state", 3), ("weights", None), ("q_silu", None), ("o_norm", None)):
        stage = trace.stage(sid, 1, step=step) if step else trace.stage(sid, 1)
        for line in stage_work(stage, Style(precision=12)):
            assert check_line(line, 12)[1] is None, line
            left = line.split(": ", 1)[1].split(" = ")[0].split(" ≈ ")[0]
            i, j = (int(c) - 1 for c in line[1 : line.index("]")].split(","))
            assert evaluate(left) == pytest.approx(stage.value[i, j], abs=1e-9), line
    rms = list(stage_work(trace.stage("o_rms"), Style(precision=12)))
    assert len(rms) == N and rms[0].startswith("[1,1]: √((")


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "json", "markdown", "latex", "html", "svg", "torch"])
def test_every_format_in_both_languages(fmt, lang):
    trace = run(Problem.from_mapping(FULL))
    text = render(trace, fmt, RenderOptions(lang=lang, color=False))
    assert "softmax(Q·Kᵀ" not in text
    if fmt == "json":
        doc = json.loads(text)
        steps = [s["step"] for s in doc["stages"] if s["id"] == "state" and s["head"] == 1]
        assert steps == list(range(1, N + 1))
        assert doc["input"]["lightning"]["slope"] == SLOPES
        assert doc["input"]["lightning"]["act"] == "silu"


@pytest.mark.parametrize("doc", [DOC, FULL], ids=["core", "full"])
def test_the_torch_script_agrees(tmp_path, doc):
    pytest.importorskip("torch")
    script = tmp_path / "lightning.py"
    script.write_text(render(run(Problem.from_mapping(doc)), "torch", RenderOptions(color=False)))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "OK: PyTorch agrees" in done.stdout, done.stderr


def test_the_torch_layout_reads_the_gate_as_out_by_in():
    turned = FULL | {
        "layout": "torch",
        **{key: np.asarray(FULL[key]).T.tolist() for key in ("wq", "wk", "wv", "wo")},
        "lightning": FULL["lightning"] | {"gate": np.asarray(FULL["lightning"]["gate"]).T.tolist()},
    }
    same = run(Problem.from_mapping(turned)).output
    np.testing.assert_allclose(same, run(Problem.from_mapping(FULL)).output, atol=1e-12)


BAD = [
    ({"lightning": {"slope": [0.1]}}, (), ("lightning's slope is 1×1", "2 numbers")),
    ({"lightning": {"slope": SLOPES, "block": 0}}, (), ("block",)),
    ({"lightning": {"slope": SLOPES, "decay": 1}}, (), ("has no key",)),
    ({"lightning": {"block": 3}}, (), ("needs slope",)),
    ({"lightning": [0.1, 0.2]}, (), ("must be an object",)),
    ({"lightning": {"slope": [-0.1, 0.2]}}, (), ("at least 0",)),
    ({"lightning": {"slope": SLOPES, "act": "gelu"}}, (), ('"silu" or left out',)),
    ({"lightning": {"slope": SLOPES, "norm": [1, 2]}}, (), ("norm is 1×2", "6 numbers")),
    ({"lightning": {"slope": SLOPES, "norm_eps": 0}}, (), ("norm_eps",)),
    ({"lightning": {"slope": SLOPES, "gate": [[1, 2]]}}, (), ("lightning's gate is 1×2", "6×6")),
    ({"mask": "none"}, (), ('give mask "causal"',)),
    ({"mask": None}, (), ('give mask "causal"', 'without a "mask" key has none')),
    ({"kv_heads": 1}, (), ("kv_heads = 1",)),
    ({"scale": 0.5}, (), ("leave out scale",)),
    ({"softcap": 30}, (), ("other features",)),
    ({}, ("--decode", "2"), ("leave out --decode",)),
    ({}, ("--tiles", "2"), ("leave out --tiles",)),
    ({}, ("--dtype", "bfloat16", "--policy", "sdpa"), ("--policy sdpa does not apply",)),
    ({"attend": [1] * N}, ("--backward",), ("attend puts the loss on softmax weights",)),
]


@pytest.mark.parametrize(("change", "args", "fragments"), BAD)
def test_what_it_does_not_support_is_one_message(tmp_path, change, args, fragments):
    path = tmp_path / "bad.json"
    doc = {k: v for k, v in (DOC | change).items() if v is not None}  # None: the key left out
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path), *args), *fragments)


def test_train_moves_the_norm_and_gate_too(tmp_path):
    """train moves a lightning layer's own norm weight and gate beside W_Q, W_K, W_V and W_O
    (tests/test_train_linear.py checks every step against torch)."""
    path = tmp_path / "lightning.json"
    path.write_text(json.dumps(FULL | {"target": np.zeros((N, D_MODEL)).tolist()}), "utf-8")
    proc = run_qkvcalc("train", str(path), "--steps", "2", "--lr", "0.001", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert {"norm", "wg"} <= set(json.loads(proc.stdout)["learned"])


def test_exact_fractions_end_at_the_decay_and_the_quiz_grades_its_stages(tmp_path):
    trace = run(Problem.from_mapping(DOC, exact=True))
    assert trace.stage("q", 1).exact is not None
    notes = [n.text("en") for n in trace.stage("state", 1, step=1).notes]
    assert any(n.startswith("No exact fractions from here on: the decay") for n in notes)
    plain = run(Problem.from_mapping(DOC))
    weights = np.round(plain.stage("weights", 1).value, 4)
    weights[-1, 0] += 1  # one wrong cell
    answers = {
        "1/weights": weights.tolist(),
        "1/output": np.round(plain.stage("output", 1).value, 4).tolist(),
    }
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(answers), encoding="utf-8")
    problem = tmp_path / "lightning.json"
    problem.write_text(json.dumps(DOC), encoding="utf-8")
    done = run_qkvcalc("quiz", str(problem), "--answers", str(path), "--no-color")
    assert done.returncode == 1, done.stderr
    assert f"W[{N},1]" in done.stdout and f"Cells right: {N * N - 1 + N * D} of" in done.stdout


MISTAKES = [
    ("lightning_decay_missing", "none", "never multiplied by e^(−λ)", "감쇠를 뺐습니다"),
    ("lightning_decay_by_position", "position", "by the Key's position", "Key의 위치로"),
]


@pytest.mark.parametrize("stage", ["weights", "output"])
@pytest.mark.parametrize("case", range(2))
@pytest.mark.parametrize("doc", [DOC, FULL], ids=["core", "full"])
def test_a_named_mistake_at_the_weights_and_the_output(stage, case, doc):
    """The weights or the output worked out by the loops here with the decay left out, or
    counted from the Key's position: the quiz names that mistake in both languages; the truth
    names none."""
    mistake_id, decay, words, korean = MISTAKES[case]
    trace = run(Problem.from_mapping(doc))
    for h, (q, k, v, slope) in enumerate(_heads(doc), start=1):
        wrong = naive(q, k, np.eye(N) if stage == "weights" else v, slope, decay=decay)[0]
        truth = trace.stage(stage, h).value
        assert not np.allclose(wrong, truth, atol=1e-3)
        found = recognise(trace, f"{h}/{stage}", np.round(wrong, 4), {}, 4)
        assert found is not None and found.id == mistake_id
        assert words in found.text("en") and korean in found.text("ko")
        assert recognise(trace, f"{h}/{stage}", np.round(truth, 4), {}, 4) is None


@pytest.mark.parametrize("case", range(2))
def test_a_real_quiz_of_the_preset_names_the_mistake(tmp_path, case):
    mistake_id, decay, words, korean = MISTAKES[case]
    doc = json.loads((ROOT / "presets" / "lightning.json").read_text(encoding="utf-8"))
    ((q, k, v, slope),) = _heads(doc)
    wrong = naive(q, k, v, slope, decay=decay)[0]
    (tmp_path / "a.json").write_text(json.dumps({"output": np.round(wrong, 4).tolist()}))
    for lang, text in (("en", words), ("ko", korean)):
        args = ("--answers", str(tmp_path / "a.json"), "--format", "json", "--lang", lang)
        proc = run_qkvcalc("quiz", "--preset", "lightning", *args)
        assert proc.returncode == 1, proc.stderr
        stages = {s["key"]: s for s in json.loads(proc.stdout)["stages"]}
        assert stages["output"]["mistake"] == mistake_id
        assert text in stages["output"]["mistake_text"]
