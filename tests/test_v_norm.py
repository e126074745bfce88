"""The norm on V (Gemma 3n, Gemma 4), the op module qkvcalc/ops/v_norm.py: each head's value
rows divided by their root mean square, with no weight, before A·V. Checked against a naive loop
written here, against PyTorch written as Gemma 3n writes it (`Gemma3nRMSNorm(with_scale=False)`:
x · (mean(x²) + ε)^−½) with autograd for every gradient, across the schedules, in every format,
in the quiz (its named mistake) and as bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import one_message, run_qkvcalc

MISTAKE_IDS = {"v_norm_sum_not_mean"}  # tests/test_feature_mistakes.py reads it

RNG = np.random.default_rng(11)
N, D_MODEL, H, G, D_K, D_V = 4, 3, 4, 2, 2, 3
EPS = 1e-3  # large enough to show in the numbers
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, G * D_K)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, G * D_V)).tolist(),
    "wo": RNG.standard_normal((H * D_V, 2)).tolist(),
    "heads": H,
    "kv_heads": G,
    "v_norm": {"eps": EPS},
    "mask": "causal",
}


def naive(doc: dict, eps: float = EPS) -> np.ndarray:
    """Loops, as on paper: each K/V head's value row divided by √(Σ v²/d_v + ε), then each
    query head's softmax attention over its K/V head's keys, then concat·W_O."""
    x, wq, wk, wv, wo = (np.asarray(doc[k], float) for k in ("x", "wq", "wk", "wv", "wo"))
    heads, kv = doc["heads"], doc["kv_heads"]
    n, d_k, d_v = x.shape[0], wq.shape[1] // heads, wv.shape[1] // kv
    concat = np.zeros((n, heads * d_v))
    for h in range(heads):
        g = h * kv // heads
        q = x @ wq[:, h * d_k : (h + 1) * d_k]
        k = x @ wk[:, g * d_k : (g + 1) * d_k]
        v = x @ wv[:, g * d_v : (g + 1) * d_v]
        for j in range(n):
            root = math.sqrt(sum(v[j, c] ** 2 for c in range(d_v)) / d_v + eps)
            v[j] = [v[j, c] / root for c in range(d_v)]
        for i in range(n):
            scores = [float(q[i] @ k[j]) / math.sqrt(d_k) for j in range(i + 1)]
            e = [math.exp(s - max(scores)) for s in scores]
            for c in range(d_v):
                concat[i, h * d_v + c] = sum(e[j] / sum(e) * v[j, c] for j in range(i + 1))
    return concat @ wo


def test_the_norm_on_v_equals_a_naive_loop():
    trace = qkvcalc.explain(**DOC)
    assert np.allclose(trace.output, naive(DOC), atol=1e-12)
    normed = trace.stage("v_norm", 1).value
    rms = np.sqrt(np.mean(normed**2, axis=1))
    assert (rms < 1).all() and (rms > 0.9).all()  # about 1, less by ε
    assert np.array_equal(trace.stage("output", 1).operands[1], normed)  # A·V_norm


def test_true_means_epsilon_one_in_a_million():
    doc = DOC | {"v_norm": True}
    trace = qkvcalc.explain(**doc)
    assert np.allclose(trace.output, naive(doc, 1e-6), atol=1e-12)


torch = pytest.importorskip("torch", reason="the PyTorch oracle needs torch (pip install torch)")


def _torch_layer(doc: dict):
    """Gemma 3n's value path in torch (float64): v_norm = x · (mean(x²) + ε)^−½, no weight."""
    t = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in ("x", "wq", "wk", "wv", "wo")
    }
    n = len(doc["x"])
    q = (t["x"] @ t["wq"]).view(n, H, -1).transpose(0, 1).unsqueeze(0)
    k = (t["x"] @ t["wk"]).view(n, G, -1).transpose(0, 1).unsqueeze(0)
    v = (t["x"] @ t["wv"]).view(n, G, -1)
    v = v * torch.pow(v.pow(2).mean(-1, keepdim=True) + EPS, -0.5)  # Gemma3nRMSNorm._norm
    v = v.transpose(0, 1).unsqueeze(0)
    k, v = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out[0].transpose(0, 1).reshape(n, -1) @ t["wo"], t


def test_the_norm_and_its_gradients_equal_pytorch_and_autograd():
    target = RNG.standard_normal((N, 2))
    out, leaves = _torch_layer(DOC)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**DOC, target=target.tolist(), backward=True)
    assert np.allclose(trace.output, out.detach().numpy(), atol=1e-12)
    for sid, leaf in (("grad_wv", "wv"), ("grad_wq", "wq"), ("grad_wk", "wk"), ("grad_x", "x")):
        assert np.allclose(trace.stage(sid).value, leaves[leaf].grad.numpy(), atol=1e-12), sid
    assert trace.stage("grad_v_norm", 1) is not None


def test_the_torch_script_checks_the_norm_and_its_gradients(tmp_path):
    from tests.inprocess import run_script

    path = tmp_path / "check.py"
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True)
    text = render(trace, "torch", RenderOptions(width=100, color=False))
    assert "v = v / torch.sqrt(v.pow(2).mean(-1, keepdim=True)" in text
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "OK: PyTorch agrees" in result["stdout"]


def test_tiles_give_the_same_output():
    whole = qkvcalc.explain(**DOC)
    tiled = qkvcalc.explain(**DOC, tiles=2)
    assert np.allclose(tiled.output, whole.output, atol=1e-12)


def test_exact_stops_at_the_root():
    doc = {"x": [[1, 2], [0, 1]], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]]}
    trace = qkvcalc.explain(**doc, wv=[[1, 0], [1, 1]], v_norm=True, exact=True)
    assert trace.stage("v").exact is not None
    assert trace.stage("v_norm").exact is None
    text = render(trace, "txt", RenderOptions(width=100, color=False, exact=True))
    assert "V_norm = RMSNorm(V)" in text


def test_every_format_shows_the_norm_in_both_languages():
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True)
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    ids = [(s["id"], s["head"]) for s in data["stages"]]
    for h in range(1, H + 1):
        assert ("v_norm", h) in ids and ("grad_v_norm", h) in ids
    assert data["input"]["v_norm"] == {"eps": EPS}
    assert np.allclose(qkvcalc.explain(**{**DOC, **data["input"]}).output, trace.output)
    for fmt in ("table", "txt", "markdown", "latex", "html", "svg"):
        for lang in ("en", "ko"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert "V_norm" in text or "V_{norm}" in text or "V\\_norm" in text, (fmt, lang)


def test_the_arithmetic_holds_for_the_numbers_shown():
    trace = qkvcalc.explain(**DOC)
    text = render(trace, "txt", RenderOptions(width=100, color=False, precision=4))
    start = text.index("V_norm = RMSNorm(V)")
    lines = [ln.strip() for ln in text[start:].splitlines() if ln.strip().startswith("[")][:6]
    assert len(lines) == 6
    for line in lines:  # [1,1]: 0.5000 / 1.1180 = 0.4472
        _, _, rest = line.partition(": ")
        top, _, right = rest.partition(" / ")
        below, sign, shown = right.partition(" = ") if " = " in right else right.partition(" ≈ ")
        redone = float(top.replace("−", "-")) / float(below)
        holds = abs(redone - float(shown.replace("−", "-"))) <= 0.5e-4 + 1e-12
        assert holds == (sign.strip() == "="), line


def test_the_quiz_names_the_sum_for_the_mean():
    trace = run(Problem.from_mapping(DOC))
    v = trace.stage("v", 2).value
    wrong = v / np.sqrt(np.sum(v * v, axis=1, keepdims=True) + EPS)
    found = recognise(trace, "2/v_norm", np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == "v_norm_sum_not_mean"
    assert "d_v = 3" in found.text("en")
    assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    truth = trace.stage("v_norm", 2).value
    assert recognise(trace, "2/v_norm", np.round(truth, 4), {}, 4) is None


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"v_norm": 2}, ("v_norm must be true", "2")),
        ({"v_norm": {"epsilon": 1}}, ("v_norm must be true",)),
        ({"v_norm": {"eps": -1}}, ("v_norm.eps",)),
        ({"decode": 1}, ("not computed step by step",)),
        ({"tiles": 2, "target": np.zeros((N, 2)).tolist()}, ("--tiles",)),
    ],
)
def test_bad_v_norm_input_is_one_message(tmp_path, change, fragments):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(DOC | change), encoding="utf-8")
    args = ["--backward"] if "target" in change else []
    one_message(run_qkvcalc("explain", str(path), *args), *fragments)


def test_what_the_page_says_of_the_norm_holds_for_a_row_tiny_next_to_epsilon():
    """The page said every token passes on a value of root mean square about 1: a row of zeros
    stays 0, and a row tiny next to ε comes out far under 1. Rows well above ε come out just
    under 1, and the page now says when that fails."""
    doc = {
        "x": [[1, 2], [0, 0], [0.001, 0]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "v_norm": {"eps": 1e-6},
    }
    trace = qkvcalc.explain(**doc)
    rms = np.sqrt(np.mean(trace.stage("v_norm").value ** 2, axis=1))
    assert 0.999 < rms[0] < 1 and rms[1] == 0 and rms[2] < 0.6
    for lang, words in (("en", "unless its row is tiny next to ε"), ("ko", "ε에 비해 아주 작으면")):
        text = " ".join(
            render(trace, "txt", RenderOptions(width=100, color=False, lang=lang)).split()
        )
        assert words in text, lang
