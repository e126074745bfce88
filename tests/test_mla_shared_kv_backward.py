"""The backward pass of mla's one key/value head (`"shared_kv": true`, DeepSeek-V4) against
PyTorch's autograd in float64, the layer written here as DeepSeek-V4 lays it out (each head's
and the key/value head's rotary columns last, turned there; V the turned key/value head with
vo_rope, each head's output turned back): every weight's gradient (W_DQ, w_CQ, W_UQ or W_Q,
W_DKV, w_CKV, W_O, the sinks) and X's, on random problems with and without rope, q_norm,
vo_rope, sinks, a window and the query latent, under both losses, in tiles; dC_KV the sum over
every head's dK and dV; the torch script with --backward agreeing with autograd; every format
and language, every "=" of its arithmetic; and `qkvcalc train`, N steps equal to SGD with
autograd, --freeze of the names "Learned:" shows."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import RenderOptions, render
from tests.inprocess import run_script

torch = pytest.importorskip("torch")

EPS = 1e-6


def make_doc(seed: int, n: int = 5, heads: int = 2, nope: int = 2, rope: int = 2,
             **flags: bool) -> dict:  # fmt: skip
    """A random shared_kv problem: `flags` latent (the query latent, else wq), turn (rope),
    q_norm, vo_rope, sinks, window; a target for the loss."""
    rng = np.random.default_rng(seed)
    d_model, r_q, d = 6, 3, nope + rope
    mla: dict = {
        "wkv_a": rng.standard_normal((d_model, d)).tolist(),
        "kv_a_norm": (1 + 0.3 * rng.standard_normal(d)).tolist(),
        "rope_dims": rope,
        "shared_kv": True,
    }
    if flags.get("latent", True):
        mla |= {
            "wq_a": rng.standard_normal((d_model, r_q)).tolist(),
            "q_a_norm": (1 + 0.3 * rng.standard_normal(r_q)).tolist(),
            "wq_b": rng.standard_normal((r_q, heads * d)).tolist(),
        }
    else:
        mla["wq"] = rng.standard_normal((d_model, heads * d)).tolist()
    doc: dict = {
        "x": rng.standard_normal((n, d_model)).tolist(),
        "heads": heads,
        "mla": mla,
        "mask": "causal",
        "wo": (0.5 * rng.standard_normal((heads * d, 3))).tolist(),
        "target": rng.standard_normal((n, 3)).tolist(),
    }
    if flags.get("q_norm"):
        doc["q_norm"] = [1.0] * d
    if flags.get("turn"):
        doc["rope"] = {"theta": 30, "style": "pairs", "dims": rope}
    if flags.get("vo_rope"):
        doc["vo_rope"] = True
    if flags.get("sinks"):
        doc["sinks"] = rng.standard_normal(heads).tolist()
    if flags.get("window"):
        doc["window"] = 3
    return doc


def _rms(x, w=None, eps=EPS):
    y = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w


def _frequencies(doc: dict) -> list[float]:
    """The rotation's ω: given (inv_freq, as extract writes them) or θ^(−2k/d_R)."""
    rope = doc["rope"]
    if "inv_freq" in rope:
        return [float(w) for w in rope["inv_freq"]]
    dims = rope["dims"]
    return [rope["theta"] ** (-2.0 * k / dims) for k in range(dims // 2)]


def _turn_last(x, positions, rope: int, inv: list[float]):
    """DeepSeek-V4's turn: the last `rope` columns of each row, pairs (2i, 2i + 1)."""
    keep, last = x[:, : x.shape[1] - rope], x[:, x.shape[1] - rope :]
    omega = torch.tensor(inv, dtype=x.dtype)
    angles = torch.tensor(positions, dtype=x.dtype)[:, None] * omega[None, :]
    a, b = last[:, 0::2], last[:, 1::2]
    cos, sin = torch.cos(angles), torch.sin(angles)
    turned = torch.stack([a * cos - b * sin, b * cos + a * sin], -1).flatten(-2)
    return torch.cat([keep, turned], -1)


def layer(doc: dict, leaves: dict):
    """The attention output, DeepSeek-V4's way (rows layout), and each head's weights."""
    mla = doc["mla"]
    x, rope = leaves["x"], int(mla["rope_dims"])
    n, heads = x.shape[0], doc["heads"]
    d = leaves["wkv_a"].shape[1]
    nope = d - rope
    positions = list(range(n))
    turning = "rope" in doc
    inv = _frequencies(doc) if turning else []
    eps = float(mla.get("eps", EPS))
    if "wq" in leaves:
        q_all = x @ leaves["wq"]
    else:
        q_all = _rms(x @ leaves["wq_a"], leaves["q_a_norm"], eps) @ leaves["wq_b"]
    kv = _rms(x @ leaves["wkv_a"], leaves["kv_a_norm"], eps)
    k = _turn_last(kv, positions, rope, inv) if turning else kv
    v = k if doc.get("vo_rope") else kv
    allowed = torch.tril(torch.ones(n, n, dtype=torch.bool))
    if "window" in doc:
        allowed &= ~torch.tril(torch.ones(n, n, dtype=torch.bool), -doc["window"])
    outs, weights = [], []
    for h in range(heads):
        q = q_all[:, h * d : (h + 1) * d]
        if "q_norm" in doc:
            q = _rms(q, None, float(doc.get("norm_eps", EPS)))
        if turning:
            q = _turn_last(q, positions, rope, inv)
        s = (q @ k.T / math.sqrt(d)).masked_fill(~allowed, float("-inf"))
        if "sinks" in leaves:
            sink = leaves["sinks"][h].expand(n, 1)
            a = torch.softmax(torch.cat([s, sink], -1), -1)[:, :n]
        else:
            a = torch.softmax(s, -1)
        weights.append(a)
        o = a @ v
        if doc.get("vo_rope"):
            o = _turn_last(o, [-i for i in positions], rope, inv)
        outs.append(torch.cat([o[:, nope:], o[:, :nope]], -1))  # qkvcalc's W_O rows: rope first
    return torch.cat(outs, -1) @ leaves["wo"], weights


def leaves_of(doc: dict) -> dict:
    """Every learned number of `doc` and X as torch leaves, by the input's keys."""
    keys = [k for k in ("wq_a", "q_a_norm", "wq_b", "wq", "wkv_a", "kv_a_norm") if k in doc["mla"]]
    leaves = {
        k: torch.tensor(np.asarray(doc["mla"][k], dtype=float), requires_grad=True) for k in keys
    }
    for k in ("x", "wo", "sinks"):
        if k in doc:
            leaves[k] = torch.tensor(np.asarray(doc[k], dtype=float), requires_grad=True)
    return leaves


def autograd(doc: dict, loss: str = "target") -> dict[str, np.ndarray]:
    """Autograd's gradient of every leaf, by the input's keys."""
    leaves = leaves_of(doc)
    out, weights = layer(doc, leaves)
    if loss == "target":
        target = torch.tensor(doc["target"], dtype=torch.float64)
        (0.5 * ((out - target) ** 2).sum()).backward()
    else:  # attend: L = −Σ over the heads and queries of log A[i, tᵢ]
        total = sum(-torch.log(a[i, t - 1]) for a in weights for i, t in enumerate(doc["attend"]))
        total.backward()
    return {k: t.grad.numpy() for k, t in leaves.items() if t.grad is not None}


def qkvcalc_grads(trace, doc: dict) -> dict[str, np.ndarray]:
    """qkvcalc's gradient stages in the input's layout: the key/value head's columns (rotary
    first in the stages) set back where wkv_a holds them, W_UQ's per head too."""
    mla = doc["mla"]
    d = len(mla["kv_a_norm"])
    rope = int(mla["rope_dims"])
    nope = d - rope
    order = np.r_[nope:d, 0:nope]
    out: dict[str, np.ndarray] = {"x": trace.stage("grad_x").value}
    kv = np.zeros((len(doc["x"][0]), d))
    kv[:, order] = trace.stage("grad_wdkv").value
    out["wkv_a"] = kv
    w = np.zeros(d)
    w[order] = trace.stage("grad_kv_a_norm").value[0]
    out["kv_a_norm"] = w
    q_id, q_key = ("grad_wuq", "wq_b") if "wq_b" in mla else ("grad_wq", "wq")
    dq = trace.stage(q_id).value
    full = np.zeros_like(dq)
    for h in range(doc["heads"]):
        full[:, h * d + order] = dq[:, h * d : (h + 1) * d]
    out[q_key] = full
    if "wq_a" in mla:
        out["wq_a"] = trace.stage("grad_wdq").value
        out["q_a_norm"] = trace.stage("grad_q_a_norm").value[0]
    if trace.find("grad_wo") is not None:
        out["wo"] = trace.stage("grad_wo").value
    if "sinks" in doc:
        out["sinks"] = trace.stage("grad_sinks").value[0]
    return out


def _same(got: dict, want: dict) -> None:
    assert set(got) == set(want), (sorted(got), sorted(want))
    for key, w in want.items():
        assert got[key].shape == w.shape, key
        assert np.max(np.abs(got[key] - w)) < 1e-10 * max(1.0, float(np.max(np.abs(w)))), key


FLAGS = ("latent", "turn", "q_norm", "vo_rope", "sinks", "window")
CASES = [
    dict.fromkeys(FLAGS, True),
    {"latent": True},
    {"latent": False},
    {"latent": True, "turn": True},
    {"latent": False, "turn": True, "vo_rope": True},
    {"latent": True, "q_norm": True, "sinks": True},
    {"latent": True, "turn": True, "window": True, "sinks": True},
    {"latent": False, "turn": True, "q_norm": True, "vo_rope": True, "window": True},
]


@pytest.mark.parametrize("flags", CASES, ids=lambda f: "+".join(k for k in FLAGS if f.get(k)))
@pytest.mark.parametrize("seed", [1, 2])
def test_every_gradient_equals_autograd(flags, seed):
    doc = make_doc(seed, **flags)
    trace = qkvcalc.explain(**doc, backward=True)
    _same(qkvcalc_grads(trace, doc), autograd(doc))


@pytest.mark.parametrize("heads", [1, 3])
def test_one_head_and_three_equal_autograd(heads):
    doc = make_doc(7, heads=heads, **dict.fromkeys(FLAGS, True))
    _same(qkvcalc_grads(qkvcalc.explain(**doc, backward=True), doc), autograd(doc))


def test_the_key_value_head_sums_every_heads_dk_and_dv():
    doc = make_doc(3, heads=3, **dict.fromkeys(FLAGS, True))
    trace = qkvcalc.explain(**doc, backward=True)
    summed = trace.stage("grad_c_kv_norm")
    want = sum(trace.stage(f"grad_{s}", h).value for h in (1, 2, 3) for s in ("k", "v"))
    assert np.allclose(summed.value, want, rtol=0, atol=1e-13)
    assert len(summed.operands) == 6


def test_attend_reaches_the_head_by_the_keys_alone():
    doc = make_doc(5, **dict.fromkeys(FLAGS, True))
    doc.pop("target")
    doc["attend"] = [1, 1, 2, 3, 3]
    trace = qkvcalc.explain(**doc, backward=True)
    want = autograd(doc, "attend")
    got = qkvcalc_grads(trace, doc)
    _same({k: got[k] for k in want}, want)
    assert trace.find("grad_v", 1) is None


@pytest.mark.parametrize("loss", ["target", "attend"])
@pytest.mark.parametrize("flags", [CASES[1], CASES[2], CASES[6]], ids=["latent", "wq", "rope"])
def test_tiles_equal_autograd(flags, loss):
    """--tiles 2: FlashAttention-2's blocks to each head's dQ, dK, dV, then each head's dK and
    dV handed back as shares of dC_KV (vo_rope is refused in tiles with --backward)."""
    doc = make_doc(9, **flags)
    if loss == "attend":
        doc.pop("target")
        doc["attend"] = [1, 1, 2, 3, 3]
    trace = qkvcalc.explain(**doc, backward=True, tiles=2)
    want = autograd(doc, loss)
    got = qkvcalc_grads(trace, doc)
    _same({k: got[k] for k in want}, want)


def test_the_torch_script_with_backward_agrees_with_autograd(tmp_path):
    doc = make_doc(4, **dict.fromkeys(FLAGS, True))
    text = render(qkvcalc.explain(**doc, backward=True), "torch", RenderOptions(width=100))
    path = tmp_path / "check.py"
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "MISMATCH" not in result["stdout"]
    assert "dW_DKV" in result["stdout"] and "dw_CKV" in result["stdout"]


@pytest.mark.parametrize("fmt", ["txt", "markdown", "json", "latex", "html"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_format_and_language_renders_it(tmp_path, fmt, lang):
    from tests.conftest import in_process

    path = tmp_path / "p.json"
    path.write_text(json.dumps(make_doc(6, **dict.fromkeys(FLAGS, True))), encoding="utf-8")
    proc = in_process("explain", str(path), "--backward", "--format", fmt, "--lang", lang)
    assert proc.returncode == 0, proc.stderr
    assert "dW_DKV" in proc.stdout and "dC_KV" in proc.stdout and "dw_CKV" in proc.stdout
    if fmt == "txt":
        said = {"en": "Backward: gradient of the one key/value head C_KV",
                "ko": "역전파: 하나뿐인 Key/Value 헤드 C_KV의 기울기"}[lang]  # fmt: skip
        assert said in proc.stdout and "dC_KV = Σₕ (dKₕ + dVₕ)" in proc.stdout


@pytest.mark.parametrize("option", [[], ["--exact"]], ids=str)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_equals_of_its_backward_holds(tmp_path, option, lang):
    """Each gradient cell's arithmetic (dC_KV's sum over the heads' dK and dV, the norm's
    weight, dW_DKV, dX) re-evaluated by tests/test_arith_invariant.py's checker."""
    from tests.conftest import in_process
    from tests.test_arith_invariant import arithmetic_lines, check_line

    path = tmp_path / "p.json"
    path.write_text(json.dumps(make_doc(8, **dict.fromkeys(FLAGS, True))), encoding="utf-8")
    proc = in_process(
        "explain", str(path), "--backward", "--no-color", "--detail", "full", "--lang", lang,
        *option, env={"COLUMNS": "4000"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = arithmetic_lines(proc.stdout)
    for symbol in ("dC_KV[", "dw_CKV[", "dW_DKV[", "dX["):
        assert any(symbol in line for line in lines), symbol
    summed = next(line for line in lines if "dC_KV[" in line and "=" in line)
    assert summed.split("=")[1].count("+") >= 3  # 2 heads: dK₁ + dV₁ + dK₂ + dV₂
    checked, wrong = 0, []
    for line in lines:
        n, failure = check_line(line, 4)
        checked += n
        if failure:
            wrong.append(failure)
    assert checked and not wrong, "\n".join(wrong[:20])


# ---- qkvcalc train: N steps of SGD, as autograd's ---------------------------------------------

# train's names for the latents' weights, by the input's keys (W_O is Problem's own)
NAMES = {"wq_a": "wdq", "q_a_norm": "wcq", "wq_b": "wuq", "wq": "wq", "wkv_a": "wdkv",
         "kv_a_norm": "wckv", "wo": "wo"}  # fmt: skip


def trained_weights(p) -> dict[str, np.ndarray]:
    """A problem's learned weights by train's names, each as the input holds it."""
    latent = p.variants.features["mla"]
    out = {"wo": p.wo.values, "wdkv": latent.wkv_a.values, "wckv": latent.kv_norm}
    if latent.wq_a is not None:
        out |= {"wdq": latent.wq_a.values, "wcq": latent.q_norm, "wuq": latent.wq.values}
    else:
        out["wq"] = latent.wq.values
    return out


def torch_sgd(doc: dict, steps: int, lr: float, frozen=()) -> tuple[dict, list[float]]:
    """Plain SGD in torch: every weight train steps a leaf (X and the sinks held, as train
    holds them), the loss ½·Σ(O − T)²; the weights after, by train's names."""
    from tests.test_train_linear import _sgd

    leaves = leaves_of(doc)
    target = torch.tensor(doc["target"], dtype=torch.float64)
    stepped = {NAMES[k]: t for k, t in leaves.items() if k in NAMES}

    def loss():
        return 0.5 * ((layer(doc, leaves)[0] - target) ** 2).sum()

    losses = _sgd(stepped, loss, steps, lr, frozen)
    return {k: t.detach().numpy() for k, t in stepped.items()}, losses


@pytest.mark.parametrize("flags", CASES[:3] + CASES[-1:], ids=["all", "latent", "wq", "no-latent"])
def test_training_equals_sgd_in_torch(flags):
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.train import train

    doc = make_doc(11, **flags)
    training = train(Problem.from_mapping(doc), steps=4, lr=0.02)
    want, losses = torch_sgd(doc, 4, 0.02)
    got, start = trained_weights(training.problem), trained_weights(Problem.from_mapping(doc))
    _same(got, want)
    assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]
    assert set(training.learned) == set(want)
    for name in training.learned:
        assert not np.array_equal(got[name], start[name]), name


def test_freeze_takes_the_names_learned_shows_and_they_stay():
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.train import train

    doc = make_doc(12, **dict.fromkeys(FLAGS, True))
    start = trained_weights(Problem.from_mapping(doc))
    for freeze in ("W_DKV,w_CKV", "wdkv wckv"):
        training = train(Problem.from_mapping(doc), steps=3, lr=0.02, freeze=freeze)
        want, losses = torch_sgd(doc, 3, 0.02, frozen=("wdkv", "wckv"))
        got = trained_weights(training.problem)
        _same(got, want)
        assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
        assert training.frozen == ("wdkv", "wckv")
        assert np.array_equal(got["wdkv"], start["wdkv"])
        assert np.array_equal(got["wckv"], start["wckv"])


def test_train_says_what_it_learned_and_the_trained_problem_runs(tmp_path):
    from qkvcalc.input.problem import Problem
    from qkvcalc.render.json_doc import input_json
    from qkvcalc.run.engine import run
    from qkvcalc.run.train import train
    from tests.conftest import run_qkvcalc

    doc = make_doc(13, **dict.fromkeys(FLAGS, True))
    path = tmp_path / "train.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    proc = run_qkvcalc("train", str(path), "--steps", "2", "--format", "txt")
    assert proc.returncode == 0, proc.stderr
    assert "Learned: W_DQ, w_CQ, W_UQ, W_DKV, w_CKV, W_O." in proc.stdout
    training = train(Problem.from_mapping(doc), steps=2, lr=0.02)
    echoed = input_json(training.problem, RenderOptions())
    assert echoed["mla"]["shared_kv"] is True
    again = run(Problem.from_mapping(echoed))
    assert np.max(np.abs(again.output - run(training.problem).output)) < 1e-12
