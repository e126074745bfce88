"""--backward through Kimi Delta Attention's core (qkvcalc/ops/kimi_delta.py, g and β given):
Gated DeltaNet's backward (tests/test_gated_delta_backward.py) with one decay per Key channel:
dS_t = q̂_t·do_tᵀ + Diag(e^(g_(t+1)))·(I − β_(t+1)·k̂_(t+1)·k̂_(t+1)ᵀ)·dS_(t+1), and d(g) one
number per channel, dg_t[c] = ⟨row c of (I − β_t·k̂_t·k̂_tᵀ)·dS_t, row c of S'_t⟩. Every
gradient against autograd in float64 to 1e-12: on the layer written here in torch as
transformers' recurrent_kimi_delta_attention computes it, on that function itself (its float32
lifted), on the preset and random problems (extract's shapes among them); central finite
differences; every format in both languages; the torch script; train. The whole layer (issue
37): the convolution, g and β made from X (W_fa·W_fb or W_f, Ling 3.0's bounded decay, W_b,
A_log, dt_bias), the gated norm with σ (W_ga·W_gb or W_z, its weight), against autograd on the
layer written here in torch as KimiDeltaAttention computes it, on random whole layers and on
one extract wrote from a tiny Kimi Linear; train of a whole layer refused in one message."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import RenderOptions, render
from tests.conftest import ROOT, run_qkvcalc
from tests.test_kimi_delta import DOC, _transformers_kernels

torch = pytest.importorskip("torch")

TOL = 1e-12


def _core(q, k, v, g, beta):
    """One head, as recurrent_kimi_delta_attention: [n, d_k] q, k, g; [n, d_v] v; [n] β."""
    q = q * torch.rsqrt((q * q).sum(-1, keepdim=True) + 1e-6) / q.shape[-1] ** 0.5
    k = k * torch.rsqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    state = torch.zeros(k.shape[1], v.shape[1], dtype=torch.float64)
    rows = []
    for i in range(q.shape[0]):
        state = state * g[i].exp()[:, None]  # row c times e^(g[c])
        kv_mem = (state * k[i, :, None]).sum(0)
        delta = (v[i] - kv_mem) * beta[i]
        state = state + k[i, :, None] * delta[None, :]
        rows.append((state * q[i, :, None]).sum(0))
    return torch.stack(rows)


def _run(doc: dict, target: np.ndarray) -> tuple[dict, torch.Tensor]:
    """The layer under autograd from the document's leaves: their gradients, and the output."""
    turned = doc.get("layout") == "torch"
    heads, n = doc.get("heads", 1), len(doc["x"])
    given = {
        name: torch.tensor(doc[name], dtype=torch.float64, requires_grad=True)
        for name in ("x", "wq", "wk", "wv", "wo")
        if name in doc
    }
    read = {k: (t.T if turned and k.startswith("w") else t) for k, t in given.items()}
    x = read["x"]
    q, k, v = x @ read["wq"], x @ read["wk"], x @ read["wv"]
    d_k, d_v = q.shape[1] // heads, v.shape[1] // heads
    g = torch.tensor(
        np.asarray(doc["kimi_delta"]["g"], float).reshape(n, heads, d_k), requires_grad=True
    )
    beta = torch.tensor(
        np.asarray(doc["kimi_delta"]["beta"], float).reshape(n, heads), requires_grad=True
    )
    cols_k = [slice(h * d_k, (h + 1) * d_k) for h in range(heads)]
    cols_v = [slice(h * d_v, (h + 1) * d_v) for h in range(heads)]
    out = torch.cat(
        [
            _core(q[:, ck], k[:, ck], v[:, cv], g[:, h], beta[:, h])
            for h, (ck, cv) in enumerate(zip(cols_k, cols_v, strict=True))
        ],
        dim=1,
    )
    if "wo" in read:
        out = out @ read["wo"]
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    grads = {name: t.grad.numpy() for name, t in given.items()}
    grads["g"], grads["beta"] = g.grad.numpy(), beta.grad.numpy()
    return grads, out.detach()


def _check(doc: dict, target: np.ndarray) -> None:
    grads, out = _run(doc, target)
    trace = qkvcalc.explain(**doc, target=target.tolist(), backward=True)
    assert np.abs(trace.output - out.numpy()).max() <= TOL * max(1.0, float(out.abs().max()))
    for name, sid in (("x", "grad_x"), ("wq", "grad_wq"), ("wk", "grad_wk"), ("wv", "grad_wv"),
                      ("wo", "grad_wo")):  # fmt: skip
        if name in grads:
            want = grads[name]
            got = trace.stage(sid).value
            assert np.abs(got - want).max() <= TOL * max(1.0, np.abs(want).max()), sid
    heads = doc.get("heads", 1)
    hs: list[int | None] = list(range(1, heads + 1)) if heads > 1 or "wo" in doc else [None]
    both = np.stack([trace.stage("grad_gates", h).value for h in hs], axis=1)  # [n, H, d_k+1]
    for got, want in ((both[..., :-1], grads["g"]), (both[..., -1], grads["beta"])):
        assert np.abs(got - want).max() <= TOL * max(1.0, np.abs(want).max())


def _target(doc: dict, rng: np.random.Generator) -> np.ndarray:
    turned = doc.get("layout") == "torch"
    w = np.asarray(doc.get("wo", doc["wv"]))
    return rng.standard_normal((len(doc["x"]), w.shape[0] if turned else w.shape[1]))


def _preset() -> dict:
    doc = json.loads((ROOT / "presets" / "kda.json").read_text(encoding="utf-8"))
    return {k: v for k, v in doc.items() if k not in ("name", "description", "reference")}


def _random(rng: np.random.Generator, layout: str = "rows", **sizes: int) -> dict:
    n = sizes.get("n", int(rng.integers(1, 7)))
    heads = sizes.get("heads", int(rng.integers(1, 4)))
    d_k = sizes.get("d_k", int(rng.integers(1, 4)))
    d_v = sizes.get("d_v", int(rng.integers(1, 4)))
    d_model = sizes.get("d_model", int(rng.integers(1, 5)))

    def weight(cols: int) -> list:
        w = rng.standard_normal((d_model, cols))
        return (w.T if layout == "torch" else w).tolist()

    doc = {
        "x": rng.standard_normal((n, d_model)).tolist(),
        "wq": weight(heads * d_k),
        "wk": weight(heads * d_k),
        "wv": weight(heads * d_v),
        "heads": heads,
        "mask": "causal",
        "layout": layout,
        "kimi_delta": {
            "g": (-rng.uniform(0, 2, (n, heads, d_k))).tolist(),
            "beta": rng.uniform(0, 1, (n, heads)).tolist(),
            "chunk": int(rng.integers(1, 5)),
        },
    }
    if rng.random() < 0.5 or sizes:
        wo = rng.standard_normal((heads * d_v, d_model))
        doc["wo"] = (wo.T if layout == "torch" else wo).tolist()
    return doc


@pytest.mark.parametrize("case", ["preset", "doc"])
def test_every_gradient_equals_autograd(case):
    rng = np.random.default_rng(6)
    doc = _preset() if case == "preset" else DOC
    _check(doc, _target(doc, rng))


def test_random_problems_and_extracts_shapes_equal_autograd():
    rng = np.random.default_rng(2038)
    for _ in range(25):
        doc = _random(rng, "torch" if rng.random() < 0.3 else "rows")
        _check(doc, _target(doc, rng))
    # what extract writes of a Kimi Linear layer (tests/test_extract_kda.py), g and β given
    doc = _random(rng, "torch", n=10, heads=4, d_k=8, d_v=8, d_model=16)
    _check(doc, _target(doc, rng))


def test_transformers_own_kernel_gives_the_same_core_gradients(monkeypatch):
    _, module = _transformers_kernels(monkeypatch)
    heads, n = DOC["heads"], len(DOC["x"])
    x = np.asarray(DOC["x"])
    leaves = [
        torch.tensor((x @ np.asarray(DOC[w])).reshape(n, heads, -1)[None], requires_grad=True)
        for w in ("wq", "wk", "wv")
    ]
    leaves.append(torch.tensor(np.asarray(DOC["kimi_delta"]["g"], float)[None], requires_grad=True))
    leaves.append(
        torch.tensor(np.asarray(DOC["kimi_delta"]["beta"], float)[None], requires_grad=True)
    )
    out, _ = module.recurrent_kimi_delta_attention(
        *leaves, None, False, use_qk_l2norm_in_kernel=True
    )
    target = np.random.default_rng(10).standard_normal(out.shape)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**DOC, target=target[0].reshape(n, -1).tolist(), backward=True)
    for h in range(1, heads + 1):
        for sid, leaf in (("grad_q", 0), ("grad_k", 1), ("grad_v", 2)):
            want = leaves[leaf].grad[0, :, h - 1].numpy()
            assert np.abs(trace.stage(sid, h).value - want).max() <= TOL, (sid, h)
        got = trace.stage("grad_gates", h).value
        assert np.abs(got[:, :-1] - leaves[3].grad[0, :, h - 1].numpy()).max() <= TOL
        assert np.abs(got[:, -1] - leaves[4].grad[0, :, h - 1].numpy()).max() <= TOL


def test_central_finite_differences_agree():
    rng = np.random.default_rng(13)
    target = _target(DOC, rng)
    trace = qkvcalc.explain(**DOC, target=target.tolist(), backward=True)

    def loss(doc: dict) -> float:
        return 0.5 * float(((qkvcalc.explain(**doc).output - target) ** 2).sum())

    step = 1e-6
    for key, cell in (("wk", (1, 2)), ("g", (3, 1, 2)), ("beta", (5, 0))):
        moved = []
        for sign in (1, -1):
            copy = json.loads(json.dumps(DOC))
            holder = copy if key == "wk" else copy["kimi_delta"]
            m = np.asarray(holder[key], float)
            m[cell] += sign * step
            holder[key] = m.tolist()
            moved.append(loss(copy))
        numeric = (moved[0] - moved[1]) / (2 * step)
        if key == "wk":
            ours = trace.stage("grad_wk").value[cell]
        elif key == "g":
            ours = trace.stage("grad_gates", cell[1] + 1).value[cell[0], cell[2]]
        else:
            ours = trace.stage("grad_gates", cell[1] + 1).value[cell[0], -1]
        assert abs(numeric - ours) <= 1e-6 * max(1.0, abs(ours)), key


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "markdown", "latex", "html", "svg", "json"])
def test_every_format_in_both_languages(fmt, lang):
    trace = qkvcalc.explain(**_preset(), target=np.zeros((3, 2)).tolist(), backward=True)
    text = render(trace, fmt, RenderOptions(lang=lang, color=False))
    assert "dS_1" in text and "dS_3" in text
    ids = {s.id for s in trace.stages}
    assert {"grad_state", "grad_q_l2", "grad_k_l2", "grad_v", "grad_gates", "grad_q"} <= ids


def test_the_arithmetic_redoes_every_backward_cell():
    from qkvcalc.render.arith import Style, stage_work
    from tests.test_arith_invariant import check_line, evaluate

    trace = qkvcalc.explain(**DOC, target=np.zeros((len(DOC["x"]), 4)).tolist(), backward=True)
    seen = set()
    for stage in trace.stages:
        if not stage.id.startswith("grad_") or stage.op in ("weight_grad", "input_grad"):
            continue
        for line in stage_work(stage, Style(precision=12)):
            assert check_line(line, 12)[1] is None, line
            cell = line[line.index("[") + 1 : line.index("]")].split(",")
            i, j = int(cell[0]) - 1, int(cell[1]) - 1
            left = line.split(": ", 1)[1].split(" = ")[0].split(" ≈ ")[0]
            assert evaluate(left) == pytest.approx(stage.value[i, j], rel=1e-9, abs=1e-9), line
            seen.add(stage.op)
    assert {"gdn_grad_state", "gdn_grad_k", "gdn_grad_gates", "back"} <= seen, seen


def test_the_torch_script_compares_every_gradient(tmp_path):
    from tests.inprocess import run_script

    trace = qkvcalc.explain(**DOC, target=_target(DOC, np.random.default_rng(3)).tolist(),
                            backward=True)  # fmt: skip
    script = tmp_path / "grads.py"
    script.write_text(render(trace, "torch"), encoding="utf-8")
    proc = run_script(str(script))
    assert proc["returncode"] == 0, proc["stderr"]
    for name in ("dQ", "dK", "dV", "dW_Q", "dX", "dg", "dbeta"):
        assert f"{name}: max |autograd - qkvcalc|" in proc["stdout"], name


def test_train_learns_through_the_core():
    from qkvcalc.run.train import train

    training = train(_preset() | {"target": [[1, 0.5], [0.5, 0.5], [0.5, 0.5]]}, steps=3)
    assert all(b < a for a, b in itertools.pairwise(training.losses))
    assert set(training.learned) == {"wq", "wk", "wv"}


def test_train_moves_the_whole_layers_pieces_backward_takes(tmp_path):
    """--backward goes through the whole layer's pieces, and train moves them (refused in one
    message until issue 37; tests/test_train_whole_linear.py checks every step against torch)."""
    doc = DOC | {"kimi_delta": DOC["kimi_delta"] | {"conv": np.ones((2, 16)).tolist()}}
    doc["target"] = np.zeros((len(doc["x"]), 4)).tolist()
    path = tmp_path / "kda.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert run_qkvcalc("explain", str(path), "--backward").returncode == 0
    proc = run_qkvcalc("train", str(path), "--steps", "2", "--lr", "0.01")
    assert proc.returncode == 0, proc.stderr
    assert "Learned: W_Q, W_K, W_V, w_conv." in " ".join(proc.stdout.split())


def test_train_steps_lings_pieces_without_the_convolution_too(tmp_path):
    """Ling 3.0's form (wf, wz), even without conv: train steps its own pieces as it steps
    Kimi Linear's (once, it trained W_Q … W_O and silently left them as given)."""
    from tests.test_precision_linear import ling_problem

    doc = ling_problem(0)
    doc["kimi_delta"].pop("conv")
    doc["wo"] = np.eye(4).tolist()
    doc["target"] = np.zeros((len(doc["x"]), 4)).tolist()
    path = tmp_path / "ling.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert run_qkvcalc("explain", str(path), "--backward").returncode == 0
    proc = run_qkvcalc("train", str(path), "--steps", "2", "--lr", "0.01")
    assert proc.returncode == 0, proc.stderr
    learned = " ".join(proc.stdout.split())
    assert "Learned: W_Q, W_K, W_V, W_O, W_f, A_log, dt_bias, W_b, W_z, w_norm." in learned


# ---- the whole layer (issue 37): the convolution, g and β made from X, the gated norm with σ ----

WHOLE_WEIGHTS = ("wf_a", "wf_b", "wf", "wb", "wg_a", "wg_b", "wz")


def _whole_layer(doc: dict, leaves: dict) -> torch.Tensor:
    """KimiDeltaAttention's forward written in torch: conv1d over q | k | v (groups = channels,
    padded by K − 1 on the left) then SiLU; each Key channel's g = −e^(A_log)·softplus(F + dt_bias)
    (F = X·W_fa·W_fb, or X·W_f), or Ling 3.0's b·σ(e^(A_log)·(F + dt_bias)); β = σ(X·W_b); the
    core; then RMSNorm times w times σ(Z), Z = X·W_ga·W_gb (or X·W_z)."""
    from tests.test_gated_delta_backward import _convolved

    spec, heads = doc["kimi_delta"], doc.get("heads", 1)
    x = leaves["x"]
    q, k, v = _convolved(doc, leaves, x @ leaves["wq"], x @ leaves["wk"], x @ leaves["wv"])
    d_k, d_v, n = q.shape[1] // heads, v.shape[1] // heads, x.shape[0]
    f = x @ leaves["wf"] if "wf" in leaves else x @ leaves["wf_a"] @ leaves["wf_b"]
    f = (f + leaves["dt_bias"]).reshape(n, heads, d_k)
    rate = leaves["a_log"].exp()[None, :, None]
    if spec.get("lower_bound") is None:
        g = -rate * torch.nn.functional.softplus(f)
    else:
        g = spec["lower_bound"] * torch.sigmoid(rate * f)
    beta = torch.sigmoid(x @ leaves["wb"])
    outs = []
    for h in range(heads):
        ck, cv = slice(h * d_k, (h + 1) * d_k), slice(h * d_v, (h + 1) * d_v)
        outs.append(_core(q[:, ck], k[:, ck], v[:, cv], g[:, h], beta[:, h]))
    if "norm" in leaves:
        z = x @ leaves["wz"] if "wz" in leaves else x @ leaves["wg_a"] @ leaves["wg_b"]
        eps = spec.get("norm_eps", 1e-6)
        for h in range(heads):
            o = outs[h] * torch.rsqrt(outs[h].pow(2).mean(-1, keepdim=True) + eps)
            outs[h] = leaves["norm"] * o * torch.sigmoid(z[:, h * d_v : (h + 1) * d_v])
    out = torch.cat(outs, dim=1)
    return out @ leaves["wo"] if "wo" in leaves else out


def _check_whole(doc: dict, target: np.ndarray) -> None:
    """Every gradient of a whole layer against autograd: the weights (W_fa, W_fb or W_f, W_b,
    W_ga, W_gb or W_z gathered), the norm's weight, the convolution's taps, each head's A_log
    and dt_bias, dX."""
    from tests.test_gated_delta_backward import _taps

    turned = doc.get("layout") == "torch"
    spec = doc["kimi_delta"]
    given = {
        name: torch.tensor(doc[name], dtype=torch.float64, requires_grad=True)
        for name in ("x", "wq", "wk", "wv", "wo")
        if name in doc
    }
    for name in (*WHOLE_WEIGHTS, "conv", "norm", "a_log", "dt_bias"):
        if spec.get(name) is not None:
            raw = np.asarray(spec[name], dtype=np.float64)
            given[name] = torch.tensor(raw, requires_grad=True)
    read = {k: (t.T if turned and k.startswith("w") else t) for k, t in given.items()}
    out = _whole_layer(doc, read)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**doc, target=target.tolist(), backward=True)
    top = max(1.0, float(out.detach().abs().max()))
    assert np.abs(trace.output - out.detach().numpy()).max() <= TOL * top
    heads = doc.get("heads", 1)
    hs: list[int | None] = list(range(1, heads + 1))
    if len(trace.stages) and trace.find("grad_decay", 1) is None:
        hs = [None]
    decays = np.stack([trace.stage("grad_decay", h).value[0] for h in hs])  # [H, 1 + d_k]
    mine = {
        "conv": _taps(trace, hs) if "conv" in given else None,
        "a_log": decays[:, 0],
        "dt_bias": decays[:, 1:].reshape(-1),
        "norm": trace.stage("grad_norm").value[0] if "norm" in given else None,
    }
    for name, tensor in given.items():
        want = tensor.grad.numpy()
        got = mine.get(name)
        if got is None:
            got = trace.stage(f"grad_{name.replace('_', '')}").value
        assert np.abs(got.reshape(want.shape) - want).max() <= TOL * max(1.0, np.abs(want).max()), (
            name
        )


@pytest.mark.parametrize("bounded", [False, True])
def test_a_whole_layer_equals_autograd(bounded):
    """tests/test_arith_invariant.py's whole layer (low-rank W_fa·W_fb and W_ga·W_gb), and Ling
    3.0's form (W_f, W_z in one, the bounded decay)."""
    from tests.test_arith_invariant import KDA_LAYER

    doc = json.loads(json.dumps(KDA_LAYER))
    if bounded:
        spec = doc["kimi_delta"]
        rng = np.random.default_rng(5)
        spec["wf"] = (np.asarray(spec.pop("wf_a")) @ np.asarray(spec.pop("wf_b"))).tolist()
        spec["wz"] = rng.standard_normal((3, 4)).tolist()
        del spec["wg_a"], spec["wg_b"]
        spec["lower_bound"] = -5.0
    _check_whole(doc, _target(doc, np.random.default_rng(8)))


def test_an_extracted_whole_layer_equals_autograd():
    """A layer qkvcalc extract wrote from a tiny Kimi Linear (its KDA layer 0): every gradient
    of the problem as written, against autograd on the layer in torch here."""
    import tempfile

    from tests.test_extract import build_from
    from tests.test_extract_hybrid import EAGER
    from tests.test_extract_kda import CASES
    from tests.test_extract_more import ids
    from tests.test_extract_new import kept_float32

    model = build_from(
        "KimiLinearConfig", CASES["kimi_linear"][0], "KimiLinearForCausalLM", **EAGER
    )
    kept_float32(model)
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        problem = qkvcalc.extract(folder, layer=0, input_ids=ids(), dtype="float64")
    assert {"conv", "wf_a", "wf_b", "wb", "wg_a", "wg_b", "norm"} <= set(problem["kimi_delta"])
    _check_whole(problem, _target(problem, np.random.default_rng(44)))


def _whole_random(rng: np.random.Generator) -> dict:
    """A random whole layer: the convolution, F low-rank or in one (then now and then the
    bounded decay), the gated norm low-rank or in one; rows or torch layout."""
    layout = "torch" if rng.random() < 0.3 else "rows"
    doc = _random(rng, layout)
    heads, d_model = doc.get("heads", 1), len(doc["x"][0])
    turned = layout == "torch"
    d_k = (len(doc["wq"]) if turned else len(doc["wq"][0])) // heads
    d_v = (len(doc["wv"]) if turned else len(doc["wv"][0])) // heads

    def weight(rows: int, cols: int) -> list:
        w = rng.standard_normal((rows, cols))
        return (w.T if turned else w).tolist()

    rank = int(rng.integers(1, 4))
    spec = {"chunk": doc["kimi_delta"]["chunk"]}
    spec["conv"] = rng.standard_normal((int(rng.integers(1, 4)), heads * (2 * d_k + d_v))).tolist()
    if rng.random() < 0.5:
        spec |= {"wf_a": weight(d_model, rank), "wf_b": weight(rank, heads * d_k)}
    else:
        spec["wf"] = weight(d_model, heads * d_k)
        if rng.random() < 0.5:
            spec["lower_bound"] = -float(rng.uniform(1, 6))
    spec["wb"] = weight(d_model, heads)
    spec["a_log"] = rng.uniform(-1.5, 1, heads).tolist()
    spec["dt_bias"] = rng.uniform(-1, 1.5, heads * d_k).tolist()
    if rng.random() < 0.5:
        spec |= {"wg_a": weight(d_model, rank), "wg_b": weight(rank, heads * d_v)}
    else:
        spec["wz"] = weight(d_model, heads * d_v)
    spec["norm"] = (1 + 0.3 * rng.standard_normal(d_v)).tolist()
    return doc | {"kimi_delta": spec}


def test_random_whole_layers_equal_autograd():
    rng = np.random.default_rng(4037)
    for _ in range(15):
        doc = _whole_random(rng)
        _check_whole(doc, _target(doc, rng))


KDA_OPS = {"conv_back", "conv_taps_back", "kda_gates_back_f", "gates_back_b", "kda_decay_grads"}


def test_the_arithmetic_redoes_every_backward_cell_of_a_whole_layer():
    from qkvcalc.render.arith import Style, stage_work
    from tests.test_arith_invariant import KDA_LAYER, check_line, evaluate

    spec = KDA_LAYER["kimi_delta"]
    bounded = {k: v for k, v in spec.items() if k not in ("wf_a", "wf_b")}
    bounded |= {"wf": (np.asarray(spec["wf_a"]) @ np.asarray(spec["wf_b"])).tolist()}
    seen = set()
    for kda in (spec, bounded | {"lower_bound": -3.0}):
        doc = KDA_LAYER | {"kimi_delta": kda}
        target = np.random.default_rng(24).standard_normal((len(doc["x"]), 3))
        trace = qkvcalc.explain(**doc, target=target.tolist(), backward=True)
        for stage in trace.stages:
            if stage.op not in KDA_OPS:
                continue
            lines = list(stage_work(stage, Style(precision=12)))
            assert len(lines) == stage.value.size, stage.id
            for line in lines:
                assert check_line(line, 12)[1] is None, line
                cell = line[line.index("[") + 1 : line.index("]")].split(",")
                i, j = int(cell[0]) - 1, int(cell[1]) - 1
                left = line.split(": ", 1)[1].split(" = ")[0].split(" ≈ ")[0]
                assert evaluate(left) == pytest.approx(stage.value[i, j], rel=1e-9, abs=1e-9), line
                seen.add(stage.op)
    assert seen == KDA_OPS


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "markdown", "latex", "html", "svg", "json"])
def test_every_format_of_a_whole_layer_in_both_languages(fmt, lang):
    import html

    from qkvcalc.i18n import translate
    from tests.test_arith_invariant import KDA_LAYER

    target = np.zeros((len(KDA_LAYER["x"]), 3)).tolist()
    trace = qkvcalc.explain(**KDA_LAYER, target=target, backward=True)
    text = render(trace, fmt, RenderOptions(lang=lang, color=False))
    ids = {s.id for s in trace.stages}
    assert {"grad_f", "grad_decay", "grad_wfa", "grad_wfb", "grad_f_a", "grad_wgb"} <= ids
    plain = html.unescape(text).replace("\\_\\allowbreak{}", "_").replace("\\_", "_")
    for key in ("stage.kda_grad_f.title", "stage.grad_wfa.title", "stage.grad_f_a.title"):
        title = translate(key, lang)  # an SVG draws each word in spans of its own; LaTeX
        assert (title if fmt not in ("svg", "latex") else title.split()[-1]) in plain, key


def test_the_torch_script_of_a_whole_layer_compares_every_gradient(tmp_path):
    from tests.inprocess import run_script
    from tests.test_arith_invariant import KDA_LAYER

    rng = np.random.default_rng(16)
    wf = KDA_LAYER["kimi_delta"] | {"lower_bound": -4.0, "wz": rng.standard_normal((3, 4)).tolist()}
    wf = {k: v for k, v in wf.items() if k not in ("wf_a", "wf_b", "wg_a", "wg_b")}
    wf["wf"] = rng.standard_normal((3, 4)).tolist()
    for doc, names in (
        (KDA_LAYER, ("dW_fa", "dW_fb", "dW_ga", "dW_gb")),
        (KDA_LAYER | {"kimi_delta": wf}, ("dW_f", "dW_z")),
    ):
        trace = qkvcalc.explain(**doc, target=_target(doc, rng).tolist(), backward=True)
        script = tmp_path / "grads.py"
        script.write_text(render(trace, "torch"), encoding="utf-8")
        proc = run_script(str(script))
        assert proc["returncode"] == 0, proc["stderr"] + proc["stdout"][-2000:]
        for name in (*names, "dQ", "dX", "dconv_w", "dW_b", "dA_log", "ddt_bias", "dw_norm"):
            assert f"{name}: max |autograd - qkvcalc|" in proc["stdout"], name
        assert "OK" in proc["stdout"]
