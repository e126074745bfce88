"""The output gate with "gate_act": "softplus" (Laguna's gate, qkvcalc/ops/gate.py): each head's
output times softplus(X·W_G + b_G) = ln(1 + e^(X·W_G + b_G)) in its own columns. Checked against
a naive loop written here, against PyTorch written as Laguna writes it (`attn_output *
F.softplus(gate)`) with autograd for every gradient, under --dtype against Laguna's casts, in
every format and both languages, in the quiz (its named mistakes), with --exact and as bad
input. The sigmoid gate's own tests are tests/test_gate.py."""

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
from tests.test_gate import DOC as SIGMOID_DOC
from tests.test_gate import N, naive

DOC = {**SIGMOID_DOC, "gate_act": "softplus"}
MISTAKE_IDS = {"gate_missing", "gate_not_squashed", "gate_sigmoid"}  # test_feature_mistakes


def naive_softplus(doc: dict) -> np.ndarray:
    """tests/test_gate.py's loop with each output cell times ln(1 + e^z) instead of σ(z): the
    concat is divided back by σ(z) cell by cell (the same z as its loop makes), then times
    ln(1 + e^z) written here with math.log1p/math.exp."""
    x, wg, wo = (np.asarray(doc[k], float) for k in ("x", "wg", "wo"))
    z = x @ wg + np.asarray(doc.get("bg", np.zeros(wg.shape[1])), float)
    plain = dict(doc)
    plain.pop("gate_act", None)
    concat = naive({**plain, "wo": np.eye(wg.shape[1]).tolist()})
    out = np.zeros_like(concat)
    for i in range(concat.shape[0]):
        for c in range(concat.shape[1]):
            sig = 1 / (1 + math.exp(-z[i, c]))
            out[i, c] = concat[i, c] / sig * math.log1p(math.exp(z[i, c]))
    return out @ wo


def test_the_softplus_gate_equals_a_naive_loop():
    trace = qkvcalc.explain(**DOC)
    assert np.allclose(trace.output, naive_softplus(DOC), rtol=0, atol=1e-12)
    assert trace.stage("gate", 1).op == "softplus"
    z = trace.stage("gate_logits", 1).value
    assert np.allclose(trace.stage("gate", 1).value, np.log1p(np.exp(z)), atol=1e-12)
    # not the sigmoid gate's output: the key changes what is computed
    assert np.abs(trace.output - qkvcalc.explain(**SIGMOID_DOC).output).max() > 1e-3


def _torch_layer(doc: dict):
    import torch

    t = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in doc
        if k[0] in "wxb"
    }
    n, heads = len(doc["x"]), doc["heads"]
    q = (t["x"] @ t["wq"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    k = (t["x"] @ t["wk"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    v = (t["x"] @ t["wv"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    attn_output = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    attn_output = attn_output[0].transpose(0, 1).reshape(n, -1)
    gate = torch.nn.functional.softplus(t["x"] @ t["wg"] + t["bg"])  # Laguna's line
    return (attn_output * gate) @ t["wo"], t


def test_the_softplus_gate_and_its_gradients_equal_pytorch_and_autograd():
    import torch

    target = np.random.default_rng(11).standard_normal((N, 2))
    out, leaves = _torch_layer(DOC)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**DOC, target=target.tolist(), backward=True)
    assert np.allclose(trace.output, out.detach().numpy(), rtol=0, atol=1e-12)
    for sid, leaf in (
        ("grad_wg", "wg"),
        ("grad_wq", "wq"),
        ("grad_wk", "wk"),
        ("grad_wv", "wv"),
        ("grad_wo", "wo"),
        ("grad_x", "x"),
    ):
        assert np.allclose(trace.stage(sid).value, leaves[leaf].grad.numpy(), atol=1e-12), sid
    assert np.allclose(trace.stage("grad_bg").value[0], leaves["bg"].grad.numpy(), atol=1e-12)
    back = trace.stage("grad_gate_logits", 1)
    assert back.op == "softplus_back" and back.formula == "dZ_G = dG ⊙ σ(Z_G)"


def test_the_torch_script_checks_the_softplus_gate(tmp_path):
    from tests.inprocess import run_script

    path = tmp_path / "check.py"
    text = render(
        qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True),
        "torch",
        RenderOptions(width=100, color=False),
    )
    assert "softplus(" in text and "torch.sigmoid" not in text
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "dW_G:" in result["stdout"] and "OK: PyTorch agrees" in result["stdout"]


def test_a_softplus_gate_at_large_logits_does_not_overflow():
    doc = {**DOC, "bg": [800.0, -800.0, 0.0, 30.0, -30.0, 1.0]}
    trace = qkvcalc.explain(**doc)
    g = trace.stage("gate", 1).value
    assert np.isfinite(trace.output).all()
    assert np.allclose(g[:, 0], trace.stage("gate_logits", 1).value[:, 0], rtol=1e-15)
    assert (g[:, 1] >= 0).all() and (g[:, 1] < 1e-300).all()


def test_every_format_in_both_languages_says_softplus():
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True)
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    ids = [(s["id"], s["head"]) for s in data["stages"]]
    for sid in ("gate_logits", "gate", "gated", "grad_gated", "grad_gate", "grad_gate_logits"):
        assert (sid, 1) in ids and (sid, 2) in ids, sid
    assert data["input"]["gate_act"] == "softplus"
    for fmt in ("table", "txt", "markdown", "latex", "html", "svg"):
        for lang in ("en", "ko"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert "W_G" in text and "softplus" in text, (fmt, lang)
            assert "Qwen3-Next" not in text, (fmt, lang)  # the sigmoid gate's sentences


def test_the_echo_runs_again_to_the_same_numbers(tmp_path):
    trace = qkvcalc.explain(**DOC)
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    again = qkvcalc.explain(**data["input"])
    assert np.allclose(again.output, trace.output, atol=1e-12)


def test_the_softplus_arithmetic_holds_for_the_numbers_shown():
    trace = qkvcalc.explain(**DOC)
    text = render(trace, "txt", RenderOptions(width=100, color=False))
    lines = [line.strip() for line in text.splitlines() if "softplus(" in line and "]:" in line]
    assert lines
    signs = set()
    for line in lines:  # [1,2]: softplus(0.5000) = ln(1 + e^(0.5000)) = 0.9741
        z = float(line.split("softplus(")[1].split(")")[0].replace("−", "-"))
        sign = "≈" if "≈" in line else "="
        shown = float(line.rsplit(sign, 1)[1].replace("−", "-"))
        holds = abs(math.log1p(math.exp(z)) - shown) <= 0.5e-4 + 1e-12
        assert holds == (sign == "="), line
        signs.add(sign)
    assert "=" in signs


def test_exact_keeps_the_gate_logits_and_stops_at_the_softplus():
    doc = {
        "x": [[1, 2], [0, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "wg": [["1/2", -1], [1, "1/4"]],
        "gate_act": "softplus",
    }
    trace = qkvcalc.explain(**doc, exact=True)
    assert str(trace.stage("gate_logits", 1).exact[0][0]) == "5/2"
    assert trace.stage("gate", 1).exact is None
    text = render(trace, "txt", RenderOptions(width=100, color=False, exact=True))
    assert "softplus(z) = ln(1 + e^z) is irrational" in text


@pytest.mark.parametrize("mistake", sorted(MISTAKE_IDS))
def test_the_quiz_names_a_softplus_gate_mistake(mistake):
    trace = run(Problem.from_mapping(DOC))
    out = trace.stage("output", 2).value
    z = trace.stage("gate_logits", 2).value
    wrong = {
        "gate_missing": out,
        "gate_not_squashed": out * z,
        "gate_sigmoid": out / (1 + np.exp(-z)),
    }[mistake]
    found = recognise(trace, "2/gated", np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake
    assert "softplus" in found.text("en") and "softplus" in found.text("ko")
    assert recognise(trace, "2/gated", np.round(trace.stage("gated", 2).value, 4), {}, 4) is None


def test_the_sigmoid_gate_names_no_softplus_mistake():
    trace = run(Problem.from_mapping(SIGMOID_DOC))
    found = recognise(trace, "2/gated", np.round(trace.stage("output", 2).value, 4), {}, 4)
    assert found is not None and found.id == "gate_missing" and "softplus" not in found.text()


def test_dtype_rounds_the_softplus_as_laguna_does():
    """Laguna: g_proj in the dtype, F.softplus of it in float32, back to the dtype; then the
    head's output (in the dtype) times that gate, rounded."""
    import torch

    trace = qkvcalc.explain(**DOC, dtype="bfloat16")
    z = torch.tensor(trace.stage("gate_logits", 1).value, dtype=torch.bfloat16)
    want = torch.nn.functional.softplus(z.float()).to(torch.bfloat16).double().numpy()
    assert np.array_equal(trace.stage("gate", 1).value, want)
    out = torch.tensor(trace.stage("output", 1).value, dtype=torch.bfloat16)
    gated = (out * torch.tensor(want, dtype=torch.bfloat16)).double().numpy()
    assert np.array_equal(trace.stage("gated", 1).value, gated)


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"gate_act": "relu"}, ('gate_act is "relu"', "sigmoid, softplus")),
        ({"gate_act": 2}, ("gate_act is 2", "sigmoid, softplus")),
        ({"wg": None, "bg": None}, ("gate_act is given without W_G",)),
    ],
)
def test_bad_gate_act_is_one_message(tmp_path, change, fragments):
    doc = {k: v for k, v in (DOC | change).items() if v is not None}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), *fragments)


def test_the_backward_arithmetic_through_the_softplus_holds():
    """[1,1]: 0.0879×σ(-0.2660) ≈ 0.0382: dG times σ(Z_G), redone from the numbers shown."""
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True)
    text = render(trace, "txt", RenderOptions(width=100, color=False))
    lines = [line.strip() for line in text.splitlines() if "×σ(" in line and "]:" in line]
    assert len(lines) == 2 * N * 3
    for line in lines:
        d = float(line.split("]: ")[1].split("×σ(")[0].strip("()").replace("−", "-"))
        z = float(line.split("σ(")[1].split(")")[0].replace("−", "-"))
        sign = "≈" if "≈" in line else "="
        shown = float(line.rsplit(sign, 1)[1].replace("−", "-"))
        holds = abs(d / (1 + math.exp(-z)) - shown) <= 0.5e-4 + 1e-12
        assert holds == (sign == "="), line
