"""The output gate (Qwen3-Next, Qwen3.5), the op module qkvcalc/ops/gate.py: each head's output
times σ(X·W_G + b_G) in its own columns, before the concat. Checked against a naive loop
written here, against PyTorch written as Qwen3-Next writes it (`attn_output *
torch.sigmoid(gate)`) with autograd for every gradient, across the schedules (tiles equal the
whole run), in every format, in the quiz (its two named mistakes) and as bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import one_message, run_qkvcalc

MISTAKE_IDS = {"gate_missing", "gate_not_squashed"}  # tests/test_feature_mistakes.py reads it

RNG = np.random.default_rng(7)
N, D_MODEL, H, D_K, D_V = 4, 3, 2, 2, 3
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, H * D_V)).tolist(),
    "wo": RNG.standard_normal((H * D_V, 2)).tolist(),
    "heads": H,
    "wg": RNG.standard_normal((D_MODEL, H * D_V)).tolist(),
    "bg": RNG.standard_normal(H * D_V).tolist(),
    "mask": "causal",
}


def naive(doc: dict) -> np.ndarray:
    """Loops, as on paper: each head's softmax attention, each of its output cells times
    1 / (1 + e^(−z)) for z = (X·W_G + b_G) at that token and column, then concat·W_O."""
    x, wq, wk, wv, wo, wg = (np.asarray(doc[k], float) for k in ("x", "wq", "wk", "wv", "wo", "wg"))
    bg = np.asarray(doc.get("bg", np.zeros(wg.shape[1])), float)
    heads = doc["heads"]
    n, d_k, d_v = x.shape[0], wq.shape[1] // heads, wv.shape[1] // heads
    concat = np.zeros((n, heads * d_v))
    for h in range(heads):
        q = x @ wq[:, h * d_k : (h + 1) * d_k]
        k = x @ wk[:, h * d_k : (h + 1) * d_k]
        v = x @ wv[:, h * d_v : (h + 1) * d_v]
        for i in range(n):
            scores = [float(q[i] @ k[j]) / np.sqrt(d_k) for j in range(i + 1)]
            top = max(scores)
            e = [np.exp(s - top) for s in scores]
            for c in range(d_v):
                out = sum(e[j] / sum(e) * v[j, c] for j in range(i + 1))
                col = h * d_v + c
                z = float(x[i] @ wg[:, col]) + bg[col]
                concat[i, col] = out * (1 / (1 + np.exp(-z)))
    return concat @ wo


def test_the_gate_equals_a_naive_loop():
    trace = qkvcalc.explain(**DOC)
    assert np.allclose(trace.output, naive(DOC), atol=1e-12)
    for h in (1, 2):
        gated, out, gate = (trace.stage(s, h).value for s in ("gated", "output", "gate"))
        assert np.array_equal(gated, out * gate)
        assert ((gate > 0) & (gate < 1)).all()
    # the concat reads the gated outputs, head 1's columns first
    concat = trace.stage("concat").value
    assert np.array_equal(concat, np.hstack([trace.stage("gated", h).value for h in (1, 2)]))


def test_one_head_without_w_o_is_joined_by_a_concat():
    """The gate comes after each head's output: one head gets per-head stages and a concat."""
    doc = {k: v for k, v in DOC.items() if k not in ("wo", "heads")} | {"heads": 1}
    doc["wq"] = np.asarray(DOC["wq"])[:, :2].tolist()
    doc["wk"] = np.asarray(DOC["wk"])[:, :2].tolist()
    doc["wv"] = np.asarray(DOC["wv"])[:, :3].tolist()
    doc["wg"] = np.asarray(DOC["wg"])[:, :3].tolist()
    doc["bg"] = DOC["bg"][:3]
    trace = qkvcalc.explain(**doc)
    ids = [(s.id, s.head) for s in trace.stages]
    assert ("gated", 1) in ids and ("concat", None) in ids
    assert np.array_equal(trace.output, trace.stage("gated", 1).value)


torch = pytest.importorskip("torch", reason="the PyTorch oracle needs torch (pip install torch)")


def _torch_layer(doc: dict):
    """Qwen3-Next's gated attention, in torch (float64), returning (output, leaves)."""
    t = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in doc
        if k in ("x", "wq", "wk", "wv", "wo", "wg", "bg")
    }
    n, heads = len(doc["x"]), doc["heads"]
    q = (t["x"] @ t["wq"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    k = (t["x"] @ t["wk"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    v = (t["x"] @ t["wv"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    attn_output = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    attn_output = attn_output[0].transpose(0, 1).reshape(n, -1)
    gate = t["x"] @ t["wg"] + t["bg"]
    attn_output = attn_output * torch.sigmoid(gate)  # Qwen3-Next's line
    return attn_output @ t["wo"], t


def test_the_gate_and_its_gradients_equal_pytorch_and_autograd():
    target = RNG.standard_normal((N, 2))
    out, leaves = _torch_layer(DOC)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**DOC, target=target.tolist(), backward=True)
    assert np.allclose(trace.output, out.detach().numpy(), atol=1e-12)
    for sid, leaf in (
        ("grad_wg", "wg"),
        ("grad_wq", "wq"),
        ("grad_wk", "wk"),
        ("grad_wv", "wv"),
        ("grad_wo", "wo"),
        ("grad_x", "x"),
    ):
        want = leaves[leaf].grad.numpy()
        assert np.allclose(trace.stage(sid).value, want, atol=1e-12), sid
    assert np.allclose(trace.stage("grad_bg").value[0], leaves["bg"].grad.numpy(), atol=1e-12)


def test_the_torch_script_checks_the_gate_and_its_gradients(tmp_path):
    from tests.inprocess import run_script

    path = tmp_path / "check.py"
    text = render(
        qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True),
        "torch",
        RenderOptions(width=100, color=False),
    )
    assert "torch.sigmoid" in text
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "dW_G:" in result["stdout"] and "db_G:" in result["stdout"]
    assert "OK: PyTorch agrees" in result["stdout"]


def test_tiles_give_the_same_gated_output():
    whole = qkvcalc.explain(**DOC)
    tiled = qkvcalc.explain(**DOC, tiles=2)
    assert np.allclose(tiled.output, whole.output, atol=1e-12)
    assert tiled.stage("gated", 2) is not None


def test_the_torch_layout_reads_w_g_turned():
    doc = DOC | {"layout": "torch"}
    for key in ("wq", "wk", "wv", "wo", "wg"):
        doc[key] = np.asarray(DOC[key]).T.tolist()
    assert np.allclose(qkvcalc.explain(**doc).output, naive(DOC), atol=1e-12)


def test_exact_keeps_the_gate_logits_and_stops_at_the_sigmoid():
    doc = {
        "x": [[1, 2], [0, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "wg": [["1/2", -1], [1, "1/4"]],
    }
    trace = qkvcalc.explain(**doc, exact=True)
    logits = trace.stage("gate_logits", 1)
    assert logits.exact is not None and str(logits.exact[0][0]) == "5/2"
    assert trace.stage("gate", 1).exact is None
    text = render(trace, "txt", RenderOptions(width=100, color=False, exact=True))
    assert "σ(z) = 1 / (1 + e^(−z)) is irrational" in text


def test_every_format_shows_the_gate_stages():
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True)
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    ids = [(s["id"], s["head"]) for s in data["stages"]]
    for sid in ("gate_logits", "gate", "gated", "grad_gated", "grad_gate", "grad_gate_logits"):
        assert (sid, 1) in ids and (sid, 2) in ids, sid
    assert ("grad_wg", None) in ids and ("grad_bg", None) in ids
    assert data["problem"]["heads"] == H
    for fmt in ("table", "txt", "markdown", "latex", "html", "svg"):
        for lang in ("en", "ko"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert "W_G" in text, (fmt, lang)


def test_the_sigmoid_arithmetic_holds_for_the_numbers_shown():
    trace = qkvcalc.explain(**DOC)
    text = render(trace, "txt", RenderOptions(width=100, color=False))
    lines = [line.strip() for line in text.splitlines() if "σ(" in line and "]:" in line]
    assert lines
    signs = set()
    for line in lines:  # [1,2]: σ(0.5000) = 1 / (1 + e^(−0.5000)) = 0.6225 (≈ where it fails)
        z = float(line.split("σ(")[1].split(")")[0])
        sign = "≈" if "≈" in line else "="
        shown = float(line.rsplit(sign, 1)[1].replace("−", "-"))
        redone = 1 / (1 + np.exp(-z))  # from the numbers shown
        holds = abs(redone - shown) <= 0.5e-4 + 1e-12
        assert holds == (sign == "="), line
        signs.add(sign)
    assert "=" in signs


@pytest.mark.parametrize("mistake", sorted(MISTAKE_IDS))
def test_the_quiz_names_a_gate_mistake(mistake):
    trace = run(Problem.from_mapping(DOC))
    out = trace.stage("output", 2).value
    wrong = out if mistake == "gate_missing" else out * trace.stage("gate_logits", 2).value
    found = recognise(trace, "2/gated", np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake
    assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    truth = trace.stage("gated", 2).value
    assert recognise(trace, "2/gated", np.round(truth, 4), {}, 4) is None


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"wg": [[1, 2]]}, ("W_G (wg) is 1×2", "3×6", "rows layout")),
        ({"bg": [1, 2]}, ("b_G (bg) has length 2", "H·d_v = 6")),
        ({"wg": None, "bg": [1] * 6}, ("given without W_G",)),
        ({"decode": 1}, ("not computed step by step",)),
    ],
)
def test_bad_gate_input_is_one_message(tmp_path, change, fragments):
    doc = {k: v for k, v in (DOC | change).items() if v is not None}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), *fragments)


def test_train_refuses_a_gate_it_cannot_learn(tmp_path):
    """train would move W_Q, W_K, W_V, W_O around a gate it leaves as given, and say
    'Learned: W_Q, W_K, W_V' as if that were the layer learning: one message instead."""
    path = tmp_path / "gated.json"
    path.write_text(json.dumps(DOC | {"target": np.zeros((N, 2)).tolist()}), encoding="utf-8")
    one_message(run_qkvcalc("train", str(path)), "does not learn the output gate")
