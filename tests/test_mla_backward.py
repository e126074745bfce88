"""The backward pass of multi-head latent attention (`mla` with --backward): every gradient of
its learned weights — the down-projections W_DQ, W_DKV and the rotary key's W_KR, the
up-projections W_UQ (or W_Q), W_UK and W_UV, the latents' norms' weights, W_O — and of X,
against PyTorch's autograd in float64, written here as DeepSeek-V3 writes the layer (its own
column order: each head's rotary columns last, wkv_b per head [W_UK | W_UV]); on random
problems, with either query path, either RoPE pairing, the torch layout, a loss on the weights
(`attend`), tiles; the explanation in every format and both languages, and the torch script
with --backward agreeing with autograd."""

from __future__ import annotations

import json
import math
from typing import NamedTuple

import numpy as np
import pytest

import qkvcalc
from tests.conftest import in_process
from tests.inprocess import run_script
from tests.test_mla import D_C, D_MODEL, D_R, D_V, H, latent_problem

torch = pytest.importorskip("torch")

N = 4  # latent_problem's tokens


def _rotate(x, style, theta, positions):
    """RoPE on the last axis of x [n, d_R] (DeepSeek's q_pe, k_pe), by each row's position."""
    dims = x.shape[-1]
    inv = torch.tensor([theta ** (-2.0 * i / dims) for i in range(dims // 2)], dtype=x.dtype)
    angles = torch.tensor(positions, dtype=x.dtype)[:, None] * inv[None, :]
    cos, sin = torch.cos(angles), torch.sin(angles)
    if style == "half":
        a, b = x[..., : dims // 2], x[..., dims // 2 :]
        return torch.cat([a * cos - b * sin, b * cos + a * sin], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], -1).flatten(-2)


def _rms(x, w, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


class Sizes(NamedTuple):
    """A problem's sizes, read from its numbers (rows layout)."""

    n: int
    heads: int
    r_q: int
    r_kv: int
    d_r: int
    d_c: int
    d_v: int


def sizes(doc: dict) -> Sizes:
    mla = doc["mla"]
    turn = doc.get("layout") == "torch"

    def cols(key):
        a = np.array(mla[key])
        return (a.T if turn else a).shape[1]

    heads, d_r, r_kv = doc.get("heads", 1), int(mla["rope_dims"]), len(mla["kv_a_norm"])
    d_c = cols("wq" if "wq" in mla else "wq_b") // heads - d_r
    r_q = len(mla.get("q_a_norm", []))
    return Sizes(len(doc["x"]), heads, r_q, r_kv, d_r, d_c, cols("wkv_b") // heads - d_c)


def autograd(doc: dict, loss: str = "target") -> dict[str, np.ndarray]:
    """The layer in torch, DeepSeek-V3's way, and autograd's gradient of every leaf (rows
    layout: c = X @ W)."""
    mla = doc["mla"]
    torch_layout = doc.get("layout") == "torch"
    n, heads, _, r_kv, d_r, d_c, d_v = sizes(doc)

    def leaf(value, turn=False):
        a = np.array(value, dtype=float)
        return torch.tensor(a.T if turn and torch_layout else a, requires_grad=True)

    leaves = {"x": leaf(doc["x"])}
    if "wo" in doc:
        leaves["wo"] = leaf(doc["wo"], True)
    for key in ("wq_a", "wq_b", "wq", "wkv_a", "wkv_b"):
        if key in mla:
            leaves[key] = leaf(mla[key], True)
    for key in ("q_a_norm", "kv_a_norm"):
        if key in mla:
            leaves[key] = leaf(mla[key])
    x, eps = leaves["x"], float(mla.get("eps", 1e-6))
    if "wq" in mla:
        q_all = x @ leaves["wq"]
    else:
        q_all = _rms(x @ leaves["wq_a"], leaves["q_a_norm"], eps) @ leaves["wq_b"]
    kv_a = x @ leaves["wkv_a"]
    c_kv, k_pe = kv_a[:, :r_kv], kv_a[:, r_kv:]
    kv = (_rms(c_kv, leaves["kv_a_norm"], eps) @ leaves["wkv_b"]).view(n, heads, d_c + d_v)
    rope = doc["rope"]
    positions = list(range(n))
    k_pe = _rotate(k_pe, rope["style"], rope["theta"], positions)
    q = q_all.view(n, heads, d_c + d_r)
    outputs, weights = [], []
    allowed = torch.tril(torch.ones(n, n, dtype=torch.bool))
    for h in range(heads):
        q_pe = _rotate(q[:, h, d_c:], rope["style"], rope["theta"], positions)
        scores = q[:, h, :d_c] @ kv[:, h, :d_c].T + q_pe @ k_pe.T
        scores = scores / math.sqrt(d_c + d_r)
        a = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
        weights.append(a)
        outputs.append(a @ kv[:, h, d_c:])
    out = torch.cat(outputs, -1)
    if "wo" in doc:
        out = out @ leaves["wo"]
    if loss == "target":
        (0.5 * ((out - torch.tensor(doc["target"], dtype=torch.float64)) ** 2).sum()).backward()
    else:  # attend: L = −Σ over the heads and queries of log A[i, tᵢ]
        targets = doc["attend"]  # 1-based, as the tables count
        total = sum(
            -weights[h][i, t - 1].log() for h in range(heads) for i, t in enumerate(targets)
        )
        total.backward()
    return {name: t.grad.numpy() if t.grad is not None else None for name, t in leaves.items()}


def qkvcalc_grads(trace, doc: dict) -> dict[str, np.ndarray]:
    """qkvcalc's gradient stages set back into the rows layout and DeepSeek's column order (a
    layout: the stages hold each head's columns side by side, W_UQ's rotary columns first;
    under --layout torch, out × in, turned back here)."""
    mla = doc["mla"]
    torch_layout = doc.get("layout") == "torch"
    _, heads, r_q, r_kv, d_r, d_c, d_v = sizes(doc)

    def stage(sid):
        found = trace.find(sid)
        return None if found is None else (found.value.T if torch_layout else found.value)

    out = {"x": trace.stage("grad_x").value}
    if "wo" in doc:
        out["wo"] = stage("grad_wo")
    width = d_c + d_r
    order = np.concatenate(  # each head's columns as qkvcalc holds them: the rotary ones first
        [
            np.r_[h * width + d_c : (h + 1) * width, h * width : h * width + d_c]
            for h in range(heads)
        ]
    )
    q_key, q_stage = ("wq", "grad_wq") if "wq" in mla else ("wq_b", "grad_wuq")
    dq = np.zeros((len(doc["x"][0]) if q_key == "wq" else r_q, heads * width))
    dq[:, order] = stage(q_stage)
    out[q_key] = dq
    if "wq_a" in mla:
        out["wq_a"] = stage("grad_wdq")
        out["q_a_norm"] = trace.stage("grad_q_a_norm").value[0]
    out["wkv_a"] = np.hstack([stage("grad_wdkv"), stage("grad_wkr")])
    out["kv_a_norm"] = trace.stage("grad_kv_a_norm").value[0]
    width = d_c + d_v
    kv_b = np.zeros((r_kv, heads * width))
    uk = np.concatenate([np.arange(h * width, h * width + d_c) for h in range(heads)])
    uv = np.concatenate([np.arange(h * width + d_c, (h + 1) * width) for h in range(heads)])
    kv_b[:, uk] = stage("grad_wuk")
    uv_grad = stage("grad_wuv")
    kv_b[:, uv] = 0 if uv_grad is None else uv_grad
    out["wkv_b"] = kv_b
    return out


def target(seed: int) -> list[list[float]]:
    return np.random.default_rng(100 + seed).normal(size=(N, D_MODEL)).round(2).tolist()


def assert_all_equal(got: dict, want: dict) -> None:
    assert set(got) == {k for k, v in want.items() if v is not None}
    for name, value in got.items():
        scale = max(1.0, float(np.max(np.abs(want[name]))))
        assert np.max(np.abs(np.asarray(value) - want[name])) < 1e-12 * scale, name
        assert np.max(np.abs(want[name])) > 1e-6, f"{name}: a gradient of 0 proves nothing"


def test_the_preset_s_gradients_equal_autograd():
    """`qkvcalc explain --preset mla --backward`: its own target, no W_O."""
    from qkvcalc.input import presets

    doc = {k: v for k, v in presets.load("mla").items() if k not in ("name", "description")}
    trace = qkvcalc.explain(**{k: v for k, v in doc.items() if k != "reference"}, backward=True)
    got, want = qkvcalc_grads(trace, doc), autograd(doc)
    assert set(got) == {"x", "wq_a", "q_a_norm", "wq_b", "wkv_a", "kv_a_norm", "wkv_b"}
    assert_all_equal(got, want)


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
@pytest.mark.parametrize("style", ["half", "pairs"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_gradient_equals_autograd(lora, style, seed):
    doc = latent_problem(seed, lora, style, target=target(seed))
    trace = qkvcalc.explain(**doc, backward=True)
    assert_all_equal(qkvcalc_grads(trace, doc), autograd(doc))


def test_the_torch_layout_gives_the_same_gradients_turned():
    doc = latent_problem(3, target=target(3))
    turned = json.loads(json.dumps(doc))
    for key in ("wkv_a", "wkv_b", "wq_a", "wq_b"):
        turned["mla"][key] = np.array(doc["mla"][key]).T.tolist()
    turned["wo"] = np.array(doc["wo"]).T.tolist()
    turned["layout"] = "torch"
    trace = qkvcalc.explain(**turned, backward=True)
    assert_all_equal(qkvcalc_grads(trace, turned), autograd(turned))


def test_a_loss_on_the_weights_reaches_no_value_weight():
    """`attend`: V does not reach the loss, so W_UV gets no gradient stage (and autograd none
    of its columns of wkv_b), and C_KV's gradient comes by W_UK alone."""
    doc = latent_problem(4, attend=[1, 1, 2, 3])
    trace = qkvcalc.explain(**doc, backward=True)
    assert trace.find("grad_wuv") is None
    want = autograd(doc, loss="attend")
    got = qkvcalc_grads(trace, doc)
    got.pop("wo")
    want["wo"] = None
    uv = np.concatenate([np.arange(h * (D_C + D_V) + D_C, (h + 1) * (D_C + D_V)) for h in range(H)])
    assert np.all(want["wkv_b"][:, uv] == 0)
    assert_all_equal(got, want)
    assert trace.stage("grad_c_kv_norm").spec.formula == "dC_KV = dK_C·W_UKᵀ"


def test_tiles_give_the_same_gradients():
    doc = latent_problem(5, target=target(5))
    plain = qkvcalc.explain(**doc, backward=True)
    tiled = qkvcalc.explain(**doc, tiles=2, backward=True)
    for sid in ("grad_x", "grad_wdq", "grad_wdkv", "grad_wkr", "grad_wuk", "grad_wuv", "grad_wuq"):
        assert np.max(np.abs(tiled.stage(sid).value - plain.stage(sid).value)) < 1e-12, sid


def test_the_shared_rotary_key_adds_every_head_s_share():
    """dk_R is read by every head's key: its gradient is the heads' first d_R columns of dK
    added (micrograd's +=), and dC_KV adds both up-projections' paths over the heads."""
    doc = latent_problem(0, target=target(0))
    trace = qkvcalc.explain(**doc, backward=True)
    k_rope = trace.stage("grad_k_rope")
    heads = sum(trace.stage("grad_k", h).value[:, :D_R] for h in (1, 2))
    assert np.allclose(k_rope.value, heads) and k_rope.spec.op == "grad_sum"
    assert trace.stage("grad_k_nope", 2).value.tolist() == (
        trace.stage("grad_k", 2).value[:, D_R:].tolist()
    )
    ckv = trace.stage("grad_c_kv_norm")
    assert ckv.spec.formula == "dC_KV = dK_C·W_UKᵀ + dV·W_UVᵀ"
    wkv_b = np.array(doc["mla"]["wkv_b"])
    want = sum(
        trace.stage("grad_k_nope", h).value @ wkv_b[:, (h - 1) * 7 : (h - 1) * 7 + D_C].T
        + trace.stage("grad_v", h).value @ wkv_b[:, (h - 1) * 7 + D_C : h * 7].T
        for h in (1, 2)
    )
    assert np.allclose(ckv.value, want)


@pytest.mark.parametrize("fmt", ["txt", "markdown", "json", "latex", "html"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_format_and_language_renders_it(tmp_path, fmt, lang):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem(target=target(0))))
    proc = in_process("explain", str(path), "--backward", "--format", fmt, "--lang", lang)
    assert proc.returncode == 0, proc.stderr
    assert "dW_UK" in proc.stdout and "dW_KR" in proc.stdout and "dC_KV" in proc.stdout
    if fmt == "json":
        ids = {s["id"] for s in json.loads(proc.stdout)["stages"]}
        assert {"grad_wdq", "grad_q_a_norm", "grad_kv_a_norm", "grad_k_rope", "grad_x"} <= ids


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
@pytest.mark.parametrize("extra", [{}, {"layout": "torch"}, {"attend": [1, 1, 2, 3]}], ids=str)
def test_the_torch_script_with_backward_agrees_with_autograd(tmp_path, lora, extra):
    doc = latent_problem(lora=lora, style="pairs")
    if "attend" not in extra:
        doc["target"] = target(0)
    if extra.get("layout") == "torch":
        for key in ("wkv_a", "wkv_b", "wq_a", "wq_b", "wq"):
            if key in doc["mla"]:
                doc["mla"][key] = np.array(doc["mla"][key]).T.tolist()
        doc["wo"] = np.array(doc["wo"]).T.tolist()
    doc |= extra
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    proc = in_process("explain", str(path), "--backward", "--format", "torch")
    assert proc.returncode == 0, proc.stderr
    for compared in ("d[W_UK | W_UV]", "d[W_DKV | W_KR]", "dw_CKV", "dX"):
        assert f"compare('{compared}'" in proc.stdout, compared
    script = tmp_path / "s.py"
    script.write_text(proc.stdout)
    ran = run_script(str(script))
    assert ran["returncode"] == 0, ran["stdout"] + ran["stderr"]
    assert "OK: PyTorch agrees" in ran["stdout"]


@pytest.mark.parametrize("option", [[], ["--exact"]], ids=str)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_equals_of_its_backward_holds(tmp_path, option, lang):
    """Each gradient cell's arithmetic (the join's cut, dk_R's sum, the norms' weights, the
    gathered weights and dX) re-evaluated by tests/test_arith_invariant.py's checker."""
    from tests.test_arith_invariant import arithmetic_lines, check_line

    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem(style="pairs", target=target(1))))
    proc = in_process(
        "explain", str(path), "--backward", "--no-color", "--detail", "full", "--lang", lang,
        *option, env={"COLUMNS": "4000"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = arithmetic_lines(proc.stdout)
    for symbol in ("dk_R[", "dw_CKV[", "dW_DKV[", "dX["):
        assert any(symbol in line for line in lines), symbol
    checked, wrong = 0, []
    for line in lines:
        n, failure = check_line(line, 4)
        checked += n
        if failure:
            wrong.append(failure)
    assert checked and not wrong, "\n".join(wrong[:20])


def test_exact_keeps_fractions_where_the_gradient_stays_rational():
    """--exact --backward from a dO given in fractions: dO and d(concat) = dO·W_Oᵀ are exact
    (checked against Fractions by loops); what reads the latents' norms or the weights A
    (dV, dA, every weight's gradient, dX) has no exact value, and none claims one."""
    from dataclasses import replace
    from fractions import Fraction

    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    doc = latent_problem(6)
    d_o = [["1/2", "-1", "0", "2", "1/3"] for _ in range(N)]
    trace = run(
        replace(Problem.from_mapping({**doc, "grad_output": d_o}, exact=True), backward=True)
    )
    wo = [[Fraction(v).limit_denominator() for v in row] for row in doc["wo"]]
    given = [[Fraction(v) for v in row] for row in d_o]
    concat = trace.stage("grad_concat")
    assert concat.exact is not None
    for i in range(N):
        for j in range(H * D_V):
            assert concat.exact[i][j] == sum(given[i][t] * wo[j][t] for t in range(D_MODEL))
    for sid in ("grad_k_rope", "grad_wuq", "grad_wdkv", "grad_x", "grad_kv_a_norm"):
        assert trace.stage(sid).exact is None, sid


def test_a_korean_backward_run_has_no_english():
    from tests.test_i18n import english_in

    proc = in_process(
        "explain", "--preset", "mla", "--backward", "--lang", "ko", "--detail", "full"
    )
    assert proc.returncode == 0, proc.stderr
    assert "dW_DKV" in proc.stdout and english_in(proc.stdout) == set()
