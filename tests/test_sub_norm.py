"""The norm over the joined heads (BitNet's attn_sub_norm), the op module qkvcalc/ops/sub_norm.py:
each token's row of all the heads' outputs side by side divided by its root mean square, times
a learned weight, before W_O. Checked against a naive loop written here, against PyTorch
written as transformers' BitNetAttention and BitNetRMSNorm write it with autograd for every
gradient, in every format and both languages, in the quiz (its named mistake), under --exact
and --dtype, and as bad input."""

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

MISTAKE_IDS = {"sub_norm_per_head"}

RNG = np.random.default_rng(11)
N, D_MODEL, H, D_K, D_V = 4, 3, 2, 2, 3
EPS = 1e-5
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, H * D_V)).tolist(),
    "wo": RNG.standard_normal((H * D_V, 2)).tolist(),
    "heads": H,
    "sub_norm": (1 + 0.3 * RNG.standard_normal(H * D_V)).tolist(),
    "mask": "causal",
}


def naive(doc: dict, eps: float = EPS) -> np.ndarray:
    """Loops, as on paper: each head's softmax attention, the heads' outputs side by side, each
    row divided by √(Σ squares / (H·d_v) + ε) and times the weight, then concat·W_O."""
    x, wq, wk, wv, wo = (np.asarray(doc[k], float) for k in ("x", "wq", "wk", "wv", "wo"))
    w = [float(c) for c in doc["sub_norm"]]
    heads = doc["heads"]
    n, d_k, d_v = x.shape[0], wq.shape[1] // heads, wv.shape[1] // heads
    joined = [[0.0] * (heads * d_v) for _ in range(n)]
    for h in range(heads):
        q = x @ wq[:, h * d_k : (h + 1) * d_k]
        k = x @ wk[:, h * d_k : (h + 1) * d_k]
        v = x @ wv[:, h * d_v : (h + 1) * d_v]
        for i in range(n):
            scores = [float(q[i] @ k[j]) / math.sqrt(d_k) for j in range(i + 1)]
            top = max(scores)
            e = [math.exp(s - top) for s in scores]
            for c in range(d_v):
                joined[i][h * d_v + c] = sum(e[j] / sum(e) * v[j, c] for j in range(i + 1))
    normed = np.zeros((n, heads * d_v))
    for i in range(n):
        root = math.sqrt(sum(c * c for c in joined[i]) / len(joined[i]) + eps)
        for c in range(heads * d_v):
            normed[i, c] = joined[i][c] / root * w[c]
    return normed @ wo


def test_the_norm_equals_a_naive_loop():
    trace = qkvcalc.explain(**DOC)
    assert np.allclose(trace.output, naive(DOC), atol=1e-12)
    outs = np.hstack([trace.stage("output", h).value for h in (1, 2)])
    r = trace.stage("sub_rms").value
    assert np.allclose(r, np.sqrt((outs**2).mean(axis=1, keepdims=True) + EPS), atol=1e-14)
    concat = trace.stage("concat").value
    assert np.array_equal(concat, np.hstack([trace.stage("sub_normed", h).value for h in (1, 2)]))
    eps = qkvcalc.explain(**DOC, sub_norm_eps=0.5)  # ε given: it is the one used
    assert np.allclose(eps.output, naive(DOC, 0.5), atol=1e-12)


def test_one_head_without_w_o_is_joined_by_a_concat():
    doc = {k: v for k, v in DOC.items() if k != "wo"} | {"heads": 1}
    doc["wq"] = np.asarray(DOC["wq"])[:, :2].tolist()
    doc["wk"] = np.asarray(DOC["wk"])[:, :2].tolist()
    doc["wv"] = np.asarray(DOC["wv"])[:, :3].tolist()
    doc["sub_norm"] = DOC["sub_norm"][:3]
    trace = qkvcalc.explain(**doc)
    assert ("concat", None) in [(s.id, s.head) for s in trace.stages]
    assert np.array_equal(trace.output, trace.stage("sub_normed", 1).value)


torch = pytest.importorskip("torch", reason="the PyTorch oracle needs torch (pip install torch)")


def _torch_layer(doc: dict):
    """BitNet's attention in torch (float64): the heads joined, BitNetRMSNorm, o_proj."""
    t = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in ("x", "wq", "wk", "wv", "wo", "sub_norm")
    }
    n, heads = len(doc["x"]), doc["heads"]
    q = (t["x"] @ t["wq"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    k = (t["x"] @ t["wk"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    v = (t["x"] @ t["wv"]).view(n, heads, -1).transpose(0, 1).unsqueeze(0)
    attn_output = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    attn_output = attn_output[0].transpose(0, 1).reshape(n, -1)
    variance = attn_output.pow(2).mean(-1, keepdim=True)  # BitNetRMSNorm's lines
    attn_output = t["sub_norm"] * (attn_output * torch.rsqrt(variance + EPS))
    return attn_output @ t["wo"], t


def test_the_norm_and_its_gradients_equal_pytorch_and_autograd():
    target = RNG.standard_normal((N, 2))
    out, leaves = _torch_layer(DOC)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**DOC, target=target.tolist(), backward=True)
    assert np.allclose(trace.output, out.detach().numpy(), atol=1e-12)
    for sid, leaf in (
        ("grad_wq", "wq"),
        ("grad_wk", "wk"),
        ("grad_wv", "wv"),
        ("grad_wo", "wo"),
        ("grad_x", "x"),
    ):
        want = leaves[leaf].grad.numpy()
        assert np.allclose(trace.stage(sid).value, want, atol=1e-12), sid
    got = trace.stage("grad_sub_norm").value[0]
    assert np.allclose(got, leaves["sub_norm"].grad.numpy(), atol=1e-12)


def test_the_torch_script_checks_the_norm_and_its_gradient(tmp_path):
    from tests.inprocess import run_script

    path = tmp_path / "check.py"
    text = render(
        qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True),
        "torch",
        RenderOptions(width=100, color=False),
    )
    assert "attn_sub_norm" in text
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "dw_sub:" in result["stdout"]
    assert "OK: PyTorch agrees" in result["stdout"]


def test_the_dtype_rounds_as_bitnet_rms_norm_does():
    """--dtype bfloat16 (eager): the norm as BitNetRMSNorm computes it in torch, from the same
    bfloat16 head outputs: in float32, cast to bfloat16, the weight times it in bfloat16."""
    trace = qkvcalc.explain(**DOC, dtype="bfloat16")
    outs = np.hstack([trace.stage("output", h).value for h in (1, 2)])
    joined = torch.tensor(outs).to(torch.bfloat16)
    assert np.array_equal(joined.double().numpy(), outs)  # the outputs are bfloat16's
    w = torch.tensor(DOC["sub_norm"]).to(torch.bfloat16)
    hidden = joined.to(torch.float32)
    hidden = hidden * torch.rsqrt(hidden.pow(2).mean(-1, keepdim=True) + EPS)
    want = (w * hidden.to(torch.bfloat16)).double().numpy()
    got = np.hstack([trace.stage("sub_normed", h).value for h in (1, 2)])
    assert np.array_equal(got, want)
    text = render(trace, "txt", RenderOptions(width=100, color=False))
    assert "BitNetRMSNorm" in text


def test_exact_stops_at_the_root():
    """--exact runs through the norm; the root ends exact fractions (its op says so, and a
    softmax before it has ended them already: no stage after the weights claims a fraction)."""
    from qkvcalc.ops.sub_norm import FEATURE

    doc = {
        "x": [[1, 2], [0, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "heads": 2,
        "sub_norm": [1, "1/2"],
    }
    trace = qkvcalc.explain(**doc, exact=True)
    assert trace.stage("v", 1).exact is not None
    assert trace.stage("sub_rms").exact is None and trace.stage("sub_normed", 1).exact is None
    assert {op.name: op.exact_stops for op in FEATURE.ops}["sub_rms"] == "note.exact_stops_root"
    text = render(trace, "txt", RenderOptions(width=100, color=False, exact=True))
    assert "sub_normed" in text or "out_N" in text


def test_every_format_shows_the_norm_stages():
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 2)).tolist(), backward=True)
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    ids = [(s["id"], s["head"]) for s in data["stages"]]
    assert ("sub_rms", None) in ids and ("grad_sub_rms", None) in ids
    assert ("grad_sub_norm", None) in ids
    for sid in ("sub_normed", "grad_sub_normed"):
        assert (sid, 1) in ids and (sid, 2) in ids, sid
    assert data["input"]["sub_norm"] == pytest.approx(DOC["sub_norm"])
    for fmt in ("table", "txt", "markdown", "latex", "html", "svg"):
        for lang in ("en", "ko"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert "out_N" in text or "out_{N}" in text, (fmt, lang)
            plain = text.replace("\\_\\allowbreak{}", "_")  # LaTeX's breakable underscores
            assert "attn_sub_norm" in plain or fmt == "svg", (fmt, lang)


def test_the_root_arithmetic_holds_for_the_numbers_shown():
    trace = qkvcalc.explain(**DOC)
    text = render(trace, "txt", RenderOptions(width=200, color=False))
    lines = [line.strip() for line in text.splitlines() if "]: √((" in line]
    assert len(lines) >= N
    for line in lines:  # [1,1]: √((0.25² + 1² + …) / 6 + 1e-05) = 0.7906
        inner = line.split("√((")[1].split(")")[0]
        squares = [float(c.strip().rstrip("²").replace("−", "-")) for c in inner.split(" + ")]
        sign = "≈" if "≈" in line.rsplit(")", 1)[1] else "="
        shown = float(line.rsplit(sign, 1)[1].replace("−", "-"))
        redone = math.sqrt(sum(c * c for c in squares) / len(squares) + EPS)
        assert (abs(redone - shown) <= 0.5e-4 + 1e-12) == (sign == "="), line


def test_the_quiz_names_the_norm_taken_per_head():
    trace = run(Problem.from_mapping(DOC))
    out = trace.stage("output", 2).value
    w = np.asarray(DOC["sub_norm"])[D_V:]
    wrong = out / np.sqrt((out**2).mean(axis=1, keepdims=True) + EPS) * w
    found = recognise(trace, "2/sub_normed", np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == "sub_norm_per_head"
    assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    truth = trace.stage("sub_normed", 2).value
    assert recognise(trace, "2/sub_normed", np.round(truth, 4), {}, 4) is None


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"sub_norm": [1, 2]}, ("sub_norm has 2 numbers", "H·d_v = 2×3 = 6")),
        ({"sub_norm_eps": 0}, ("sub_norm_eps must be a number greater than 0",)),
        ({"sub_norm": None, "sub_norm_eps": 0.1}, ("without sub_norm",)),
        ({"wg": np.ones((D_MODEL, H * D_V)).tolist()}, ("output gate (wg)",)),
        ({"differential": {"lambda": 0.5, "lambda_init": 0.2}}, ("differential attention",)),
    ],
)
def test_bad_norm_input_is_one_message(tmp_path, change, fragments):
    doc = {k: v for k, v in (DOC | change).items() if v is not None}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), *fragments)


# ---- the schedules: tiles, decode, train --------------------------------------------------------


@pytest.mark.parametrize("tiles", [1, 2, 3])
def test_tiles_equal_the_whole_run_and_so_do_their_gradients(tiles):
    """--tiles: each head's online softmax, then the same norm over the joined heads; the output
    and every gradient (FlashAttention-2's per head, the walk back through the norm before it)
    equal the untiled run's to 1e-12."""
    target = RNG.standard_normal((N, 2)).tolist()
    whole = qkvcalc.explain(**DOC, target=target, backward=True)
    tiled = qkvcalc.explain(**DOC, target=target, backward=True, tiles=tiles)
    assert any(s.block for s in tiled.stages) and not any(s.block for s in whole.stages)
    assert np.allclose(tiled.output, whole.output, rtol=0, atol=1e-12)
    for sid in ("sub_rms", "grad_sub_norm", "grad_wq", "grad_wk", "grad_wv", "grad_wo", "grad_x"):
        assert np.allclose(tiled.stage(sid).value, whole.stage(sid).value, rtol=0, atol=1e-12), sid
    for h in (1, 2):
        got, want = tiled.stage("sub_normed", h).value, whole.stage("sub_normed", h).value
        assert np.allclose(got, want, rtol=0, atol=1e-12)
    out, leaves = _torch_layer(DOC)  # and autograd's, as untiled
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    got = tiled.stage("grad_sub_norm").value[0]
    assert np.allclose(got, leaves["sub_norm"].grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("prefill", [0, 1, 3])
def test_decode_steps_equal_the_whole_run_and_the_norm_follows_the_stacked_rows(prefill):
    """--decode P: each step's output rows (each head's) equal the whole run's rows to 1e-12;
    the norm over the joined heads then runs once over the stacked rows, as the concat and W_O
    do, and equals the whole run's (and the naive loop's output)."""
    whole = qkvcalc.explain(**DOC)
    decoded = qkvcalc.explain(**DOC, decode=prefill)
    for h in (1, 2):
        start = 0
        outputs = [s for s in decoded.stages if s.id == "output" and s.head == h]
        steps = sorted({s.step for s in outputs} - {None})
        for step in steps:
            rows = decoded.stage("output", h, step=step).value
            want = whole.stage("output", h).value[start : start + len(rows)]
            assert np.allclose(rows, want, rtol=0, atol=1e-12), (h, step)
            start += len(rows)
        assert start == N
        got, want = decoded.stage("sub_normed", h).value, whole.stage("sub_normed", h).value
        assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert np.allclose(decoded.output, naive(DOC), rtol=0, atol=1e-12)
    one = {k: v for k, v in DOC.items() if k != "wo"}
    one |= {"heads": 1, "sub_norm": DOC["sub_norm"][:3]}
    one |= {k: np.asarray(DOC[k])[:, : 3 if k == "wv" else 2].tolist() for k in ("wq", "wk", "wv")}
    assert np.allclose(
        qkvcalc.explain(**one, decode=prefill).output, qkvcalc.explain(**one).output, atol=1e-12
    )


def test_decode_and_tiles_in_every_format_and_both_languages():
    for options in ({"decode": 1}, {"tiles": 2}):
        trace = qkvcalc.explain(**DOC, **options)
        for fmt in ("table", "markdown", "json"):
            for lang in ("en", "ko"):
                text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
                assert "out_N" in text, (options, fmt, lang)


@pytest.mark.parametrize("options", [{"decode": 1}, {"tiles": 2}])
def test_the_torch_script_checks_decode_and_tiles_with_the_norm(tmp_path, options):
    """--format torch of a decode run checks its own KV-cache loop, the norm applied to the
    stacked rows before W_O; of a tiled run, every stage against the plan in torch."""
    from tests.inprocess import run_script

    path = tmp_path / "check.py"
    text = render(qkvcalc.explain(**DOC, **options), "torch", RenderOptions(width=100))
    assert "KV-cache decoding" in text or "decode" not in options
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "OK: PyTorch agrees" in result["stdout"] and "MISMATCH" not in result["stdout"]


def _sgd_torch(doc: dict, steps: int, lr: float, frozen=()) -> tuple[dict, list[float]]:
    """`steps` updates p ← p − η·∂L/∂p of W_Q, W_K, W_V, W_O and the norm's weight, autograd's
    gradients of ½·Σ(out − T)² through BitNet's attention (float64)."""
    leaves = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in ("wq", "wk", "wv", "wo", "sub_norm")
    }
    x, target = (torch.tensor(doc[k], dtype=torch.float64) for k in ("x", "target"))
    n, heads = x.shape[0], doc["heads"]

    def heads_of(w):
        return (x @ w).view(n, heads, -1).transpose(0, 1).unsqueeze(0)

    losses = []
    for step in range(steps + 1):
        for leaf in leaves.values():
            leaf.grad = None
        q, k, v = (heads_of(leaves[w]) for w in ("wq", "wk", "wv"))
        joined = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        joined = joined[0].transpose(0, 1).reshape(n, -1)
        normed = leaves["sub_norm"] * (
            joined * torch.rsqrt(joined.pow(2).mean(-1, keepdim=True) + EPS)
        )
        loss = 0.5 * ((normed @ leaves["wo"] - target) ** 2).sum()
        losses.append(float(loss.detach()))
        if step == steps:
            break
        loss.backward()
        with torch.no_grad():
            for key, leaf in leaves.items():
                if key not in frozen:
                    leaf -= lr * leaf.grad
    return {k: t.detach().numpy() for k, t in leaves.items()}, losses


def _trained(p: Problem) -> dict[str, np.ndarray]:
    out = {k: getattr(p, k).values for k in ("wq", "wk", "wv", "wo")}
    return out | {"sub_norm": p.variants.features["sub_norm"].weight}


@pytest.mark.parametrize("freeze", [None, "w_sub", "sub_norm", "wq,wsub"])
def test_train_steps_the_norm_weight_as_sgd_with_autograd(freeze):
    """train steps the norm's weight (w_sub) beside W_Q, W_K, W_V and W_O by W ← W − η·∂L/∂W:
    the same weights as plain SGD with autograd in float64 to 1e-10, the same losses; --freeze
    w_sub (or the input's key sub_norm) leaves it as given."""
    from qkvcalc.run.train import train

    doc = DOC | {"target": (0.5 * RNG.standard_normal((N, 2))).tolist()}
    steps, lr = 5, 0.05
    training = train(Problem.from_mapping(doc), steps=steps, lr=lr, freeze=freeze)
    frozen = {"w_sub": ("sub_norm",), "sub_norm": ("sub_norm",)}.get(freeze or "", ())
    frozen = ("wq", "sub_norm") if freeze == "wq,wsub" else frozen
    want, losses = _sgd_torch(doc, steps, lr, frozen)
    got, start = _trained(training.problem), _trained(Problem.from_mapping(doc))
    for key, w in want.items():
        assert np.max(np.abs(got[key] - w)) < 1e-10 * max(1.0, float(np.max(np.abs(w)))), key
    assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]
    moved = not np.array_equal(got["sub_norm"], start["sub_norm"])
    assert moved == ("sub_norm" not in frozen)
    assert ("wsub" in training.learned) == moved


def test_train_in_every_format_names_the_norm_weight(tmp_path):
    path = tmp_path / "normed.json"
    path.write_text(json.dumps(DOC | {"target": np.zeros((N, 2)).tolist()}), encoding="utf-8")
    for lang in ("en", "ko"):
        result = run_qkvcalc("train", str(path), "--steps", "2", "--lang", lang)
        assert result.returncode == 0, result.stderr
        assert "w_sub" in result.stdout
    result = run_qkvcalc("train", str(path), "--steps", "2", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "wsub" in result.stdout or "w_sub" in result.stdout
