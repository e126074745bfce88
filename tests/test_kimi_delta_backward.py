"""--backward through Kimi Delta Attention's core (qkvcalc/ops/kimi_delta.py, g and β given):
Gated DeltaNet's backward (tests/test_gated_delta_backward.py) with one decay per Key channel:
dS_t = q̂_t·do_tᵀ + Diag(e^(g_(t+1)))·(I − β_(t+1)·k̂_(t+1)·k̂_(t+1)ᵀ)·dS_(t+1), and d(g) one
number per channel, dg_t[c] = ⟨row c of (I − β_t·k̂_t·k̂_tᵀ)·dS_t, row c of S'_t⟩. Every
gradient against autograd in float64 to 1e-12: on the layer written here in torch as
transformers' recurrent_kimi_delta_attention computes it, on that function itself (its float32
lifted), on the preset and random problems (extract's shapes among them); central finite
differences; every format in both languages; the torch script; train; the whole layer's own
pieces refused in one message."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import RenderOptions, render
from tests.conftest import ROOT, one_message, run_qkvcalc
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


def test_the_whole_layers_pieces_are_one_message(tmp_path):
    doc = DOC | {"kimi_delta": DOC["kimi_delta"] | {"conv": np.ones((2, 16)).tolist()}}
    doc["target"] = np.zeros((len(doc["x"]), 4)).tolist()
    path = tmp_path / "kda.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path), "--backward"), "not yet through the whole layer")
    one_message(run_qkvcalc("train", str(path)), "not yet through the whole layer")
