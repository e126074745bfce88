"""--backward through MiniMax's lightning attention (qkvcalc/ops/lightning.py): the states walked
in reverse (dS_t = q_t·do_tᵀ + e^(−λ)·dS_(t+1)), dQ, dK, dV from them, back through silu, the
norm over the joined heads (its weight too) and the output gate, to dW_Q, dW_K, dW_V, dW_G,
dW_O and dX. Every gradient against autograd in float64 to 1e-12: on a layer written here in
torch as transformers' MiniMaxLightningAttention computes it (its recurrent form: the state
times exp(−slope) plus kᵀ·v, the output q·S; RMSNorm over the joined heads, sigmoid(output_gate(x))
times it, out_proj), on transformers' module itself, on the preset and on random problems (the
shapes extract writes among them); central finite differences for one case; every format in
both languages; `qkvcalc train` learning through it."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import RenderOptions, render
from tests.conftest import ROOT, run_qkvcalc
from tests.test_lightning import DOC, FULL, _module

torch = pytest.importorskip("torch")

TOL = 1e-12


def _layer(doc: dict, leaves: dict) -> torch.Tensor:
    """The layer in torch, as MiniMaxLightningAttention computes it (its recurrent form), from
    the leaves (float64 tensors that require grad), in the problem's row layout."""
    x = leaves["x"]
    spec = doc["lightning"]
    heads = doc.get("heads", 1)
    q, k, v = x @ leaves["wq"], x @ leaves["wk"], x @ leaves["wv"]
    if spec.get("act") == "silu":  # MiniMax: self.act_fn(self.qkv_proj(hidden_states))
        q, k, v = (
            torch.nn.functional.silu(q),
            torch.nn.functional.silu(k),
            torch.nn.functional.silu(v),
        )
    n, d_k, d_v = x.shape[0], q.shape[1] // heads, v.shape[1] // heads
    q, k = q.view(n, heads, d_k).transpose(0, 1), k.view(n, heads, d_k).transpose(0, 1)
    v = v.view(n, heads, d_v).transpose(0, 1)
    slope = torch.tensor(spec["slope"], dtype=torch.float64)[:, None, None]
    ratio = torch.exp(-slope)  # MiniMax's decode path: ratio * kv + kᵀ·v, then q·kv
    kv = torch.zeros(heads, d_k, d_v, dtype=torch.float64)
    rows = []
    for i in range(n):
        kv = ratio * kv + k[:, i, :, None] * v[:, i, None, :]
        rows.append(torch.einsum("hd,hde->he", q[:, i], kv))
    out = torch.stack(rows, dim=1).transpose(0, 1).reshape(n, heads * d_v)
    if "norm" in spec:  # MiniMaxRMSNorm over the joined heads
        eps = spec.get("norm_eps", 1e-6)
        out = leaves["norm"] * out * torch.rsqrt(out.pow(2).mean(-1, keepdim=True) + eps)
    if "gate" in spec:
        out = torch.sigmoid(x @ leaves["gate"]) * out
    return out @ leaves["wo"] if "wo" in doc else out


def _leaves(doc: dict) -> dict:
    names = ["x", "wq", "wk", "wv", *(["wo"] if "wo" in doc else [])]
    leaves = {
        name: torch.tensor(doc[name], dtype=torch.float64, requires_grad=True) for name in names
    }
    layout_torch = doc.get("layout") == "torch"
    if layout_torch:  # [out, in] given: the layer reads them turned
        given = dict(leaves)
        leaves = {name: (t if name == "x" else t.T) for name, t in given.items()}
        leaves["_given"] = given
    for name in ("norm", "gate"):
        if name in doc["lightning"]:
            t = torch.tensor(doc["lightning"][name], dtype=torch.float64, requires_grad=True)
            leaves[f"_{name}"] = t
            leaves[name] = t.T if (layout_torch and name == "gate") else t
    return leaves


def _autograd(doc: dict, target: np.ndarray) -> dict[str, np.ndarray]:
    leaves = _leaves(doc)
    out = _layer(doc, leaves)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    given = leaves.get("_given", leaves)
    grads = {
        name: given[name].grad.numpy() for name in ("x", "wq", "wk", "wv", "wo") if name in given
    }
    for name in ("norm", "gate"):
        if f"_{name}" in leaves:
            grads[name] = leaves[f"_{name}"].grad.numpy()
    grads["output"] = out.detach().numpy()
    return grads


STAGE_OF = {
    "x": "grad_x", "wq": "grad_wq", "wk": "grad_wk", "wv": "grad_wv", "wo": "grad_wo",
    "gate": "grad_wg", "norm": "grad_lightning_norm",
}  # fmt: skip


def _check(doc: dict, target: np.ndarray) -> None:
    doc = {k: v for k, v in doc.items() if k != "target"}  # the preset's own: this one instead
    want = _autograd(doc, target)
    trace = qkvcalc.explain(**doc, target=target.tolist(), backward=True)
    scale = max(1.0, float(np.abs(want["output"]).max()))
    assert np.abs(trace.output - want["output"]).max() <= TOL * scale
    for name, sid in STAGE_OF.items():
        if name not in want:
            assert trace.find(sid) is None, sid
            continue
        got = trace.stage(sid).value
        expected = want[name].reshape(got.shape)
        top = max(1.0, float(np.abs(expected).max()))
        assert np.abs(got - expected).max() <= TOL * top, (sid, np.abs(got - expected).max())


def _target(doc: dict, rng: np.random.Generator) -> np.ndarray:
    n = len(doc["x"])
    width = (
        np.asarray(doc["wo"]).shape[1 if doc.get("layout") != "torch" else 0]
        if "wo" in doc
        else None
    )
    if width is None:
        width = np.asarray(doc["wv"]).shape[1 if doc.get("layout") != "torch" else 0]
    return rng.standard_normal((n, width))


def _preset() -> dict:
    return {k: v for k, v in json.loads((ROOT / "presets" / "lightning.json").read_text()).items()
            if k not in ("name", "description", "reference")}  # fmt: skip


@pytest.mark.parametrize("case", ["preset", "plain", "full", "silu", "norm", "gate", "one_head"])
def test_every_gradient_equals_autograd(case):
    rng = np.random.default_rng(3)
    light = FULL["lightning"]
    doc = {
        "preset": _preset(),
        "plain": DOC,
        "full": FULL,
        "silu": DOC | {"lightning": DOC["lightning"] | {"act": "silu"}},
        "norm": DOC | {"lightning": DOC["lightning"] | {"norm": light["norm"]}},
        "gate": FULL | {"lightning": DOC["lightning"] | {"gate": light["gate"], "act": "silu"}},
        "one_head": _one_head(rng),
    }[case]
    _check(doc, _target(doc, rng))


def _one_head(rng: np.random.Generator) -> dict:
    n, d_model, d = 4, 3, 2
    return {
        "x": rng.standard_normal((n, d_model)).tolist(),
        "wq": rng.standard_normal((d_model, d)).tolist(),
        "wk": rng.standard_normal((d_model, d)).tolist(),
        "wv": rng.standard_normal((d_model, d)).tolist(),
        "mask": "causal",
        "lightning": {"slope": [0.7], "norm": (1 + rng.standard_normal(d)).tolist()},
    }


def _random(rng: np.random.Generator, layout: str = "rows", **sizes: int) -> dict:
    n = sizes.get("n", int(rng.integers(1, 7)))
    heads = sizes.get("heads", int(rng.integers(1, 4)))
    d_k = sizes.get("d_k", int(rng.integers(1, 4)))
    d_model = sizes.get("d_model", int(rng.integers(1, 5)))
    d_v = d_k if sizes.get("d_k") else int(rng.integers(1, 4))

    def weight(cols: int) -> list:
        w = rng.standard_normal((d_model, cols)) * 0.7
        return (w.T if layout == "torch" else w).tolist()

    spec: dict = {
        "slope": rng.uniform(0, 1.5, heads).tolist(),
        "block": sizes.get("block", int(rng.integers(1, 5))),
    }
    if rng.random() < 0.5 or sizes:
        spec["act"] = "silu"
    if rng.random() < 0.5 or sizes:
        spec["norm"] = (1 + 0.3 * rng.standard_normal(heads * d_v)).tolist()
    if rng.random() < 0.5 or sizes:
        spec["gate"] = weight(heads * d_v)
    doc = {
        "x": rng.standard_normal((n, d_model)).tolist(),
        "wq": weight(heads * d_k),
        "wk": weight(heads * d_k),
        "wv": weight(heads * d_v),
        "heads": heads,
        "mask": "causal",
        "layout": layout,
        "lightning": spec,
    }
    if rng.random() < 0.5 or sizes:
        wo = rng.standard_normal((heads * d_v, d_model))
        doc["wo"] = (wo.T if layout == "torch" else wo).tolist()
    return doc


def test_random_problems_equal_autograd():
    rng = np.random.default_rng(2026)
    for _ in range(25):
        doc = _random(rng, "torch" if rng.random() < 0.3 else "rows")
        _check(doc, _target(doc, rng))


def test_the_shapes_extract_writes_equal_autograd():
    """What extract writes of a MiniMax lightning layer (tests/test_extract_minimax.py): the
    torch layout, head_dim 8, silu, the norm, the gate and out_proj, blocks of 4 over 10 tokens."""
    rng = np.random.default_rng(37)
    doc = _random(rng, "torch", n=10, heads=4, d_k=8, d_model=16, block=4)
    _check(doc, _target(doc, rng))


def test_transformers_module_gives_the_same_gradients():
    """transformers' MiniMaxLightningAttention itself (float64, its norm in float64): the
    gradients of its qkv_proj, output_gate, norm and out_proj weights and of its input."""
    _, module = _module(FULL, FULL["lightning"]["block"])
    x = torch.tensor(FULL["x"], dtype=torch.float64)[None].requires_grad_()
    out = module(x, None, None)[0][0]
    target = np.random.default_rng(5).standard_normal(tuple(out.shape))
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**FULL, target=target.tolist(), backward=True)
    h, d = FULL["heads"], len(FULL["wq"][0]) // FULL["heads"]
    qkv = module.qkv_proj.weight.grad.view(h, 3, d, -1)
    for key, sid in enumerate(("grad_wq", "grad_wk", "grad_wv")):
        want = qkv[:, key].reshape(h * d, -1).T.numpy()
        assert np.abs(trace.stage(sid).value - want).max() <= TOL * np.abs(want).max(), sid
    for sid, want in (
        ("grad_wg", module.output_gate.weight.grad.T),
        ("grad_wo", module.out_proj.weight.grad.T),
        ("grad_lightning_norm", module.norm.weight.grad[None]),
        ("grad_x", x.grad[0]),
    ):
        w = want.numpy()
        assert np.abs(trace.stage(sid).value - w).max() <= TOL * np.abs(w).max(), sid


def _loss(doc: dict, target: np.ndarray) -> float:
    out = qkvcalc.explain(**doc).output
    return 0.5 * float(((out - target) ** 2).sum())


def test_central_finite_differences_agree():
    rng = np.random.default_rng(11)
    doc = FULL
    target = _target(doc, rng)
    trace = qkvcalc.explain(**doc, target=target.tolist(), backward=True)
    step = 1e-6
    for name, sid, path in (
        ("wq", "grad_wq", ("wq",)),
        ("wv", "grad_wv", ("wv",)),
        ("x", "grad_x", ("x",)),
        ("gate", "grad_wg", ("lightning", "gate")),
        ("norm", "grad_lightning_norm", ("lightning", "norm")),
    ):
        grad = trace.stage(sid).value
        for cell in [(0, 0), (1, 2)] if name != "norm" else [(0,), (4,)]:
            moved = []
            for sign in (1, -1):
                copy = json.loads(json.dumps(doc))
                holder = copy
                for key in path[:-1]:
                    holder = holder[key]
                m = np.asarray(holder[path[-1]], float)
                m[cell] += sign * step
                holder[path[-1]] = m.tolist()
                moved.append(_loss(copy, target))
            numeric = (moved[0] - moved[1]) / (2 * step)
            at = (0, cell[0]) if name == "norm" else cell
            assert abs(numeric - grad[at]) <= 1e-6 * max(1.0, abs(grad[at])), (name, cell)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "markdown", "latex", "html", "svg", "json"])
def test_every_format_in_both_languages(fmt, lang):
    target = np.zeros((len(FULL["x"]), len(FULL["wo"][0])))
    trace = qkvcalc.explain(**FULL, target=target.tolist(), backward=True)
    text = render(trace, fmt, RenderOptions(lang=lang, color=False))
    for symbol in ("dS_1", "dw"):
        assert symbol in text, symbol
    ids = {(s.id, s.head) for s in trace.stages}
    for sid in ("grad_state", "grad_q_silu", "grad_o_norm", "grad_gate", "grad_output"):
        assert (sid, 1) in ids and (sid, 2) in ids, sid
    assert ("grad_o_rms", None) in ids and ("grad_lightning_norm", None) in ids


def test_the_arithmetic_redoes_every_backward_cell():
    """Each backward cell's arithmetic line, redone from the numbers it shows (at 12 digits),
    gives the cell: the states' gradients, dQ, dK, dV, silu's, the norm's and the gate's."""
    from qkvcalc.render.arith import Style, stage_work
    from tests.test_arith_invariant import check_line, evaluate

    target = np.zeros((len(FULL["x"]), len(FULL["wo"][0])))
    trace = qkvcalc.explain(**FULL, target=target.tolist(), backward=True)
    seen = set()
    for stage in trace.stages:
        if not stage.id.startswith("grad_") or stage.op in ("weight_grad", "input_grad"):
            continue
        for line in stage_work(stage, Style(precision=12)):
            assert check_line(line, 12)[1] is None, line
            cell = line[line.index("[") + 1 : line.index("]")].split(",")
            i, j = (int(cell[0]) - 1, int(cell[1]) - 1) if len(cell) == 2 else (0, int(cell[0]) - 1)
            left = line.split(": ", 1)[1] if line.startswith("[") else line.split(" = ", 1)[1]
            left = left.split(" = ")[0].split(" ≈ ")[0]
            assert evaluate(left) == pytest.approx(stage.value[i, j], rel=1e-9, abs=1e-9), line
            seen.add(stage.op)
    want = {"lightning_grad_state", "lightning_grad_q", "lightning_grad_k", "lightning_grad_v"}
    assert want | {"back", "rms_share", "rms_back", "norm_weight_grad"} <= seen, seen


def test_the_preset_backward_in_the_terminal():
    result = run_qkvcalc(
        "explain",
        "--preset",
        "lightning",
        "--target",
        "0 0; 0 0; 0 0",
        "--backward",
        "--format",
        "txt",
    )
    assert result.returncode == 0, result.stderr
    assert "dS_3 = q_3·do_3ᵀ" in result.stdout
    assert "dS_1 = q_1·do_1ᵀ + e^(−0.5)·dS_2" in result.stdout


def test_the_torch_script_compares_every_gradient(tmp_path):
    """--format torch --backward: autograd on the script's own layer against qkvcalc's dQ, dK,
    dV, dW_Q, dW_K, dW_V, dW_O, dX and the gate's and the norm's weights (no dA: the layer
    forms no weights), in both layouts."""
    from tests.inprocess import run_script

    rng = np.random.default_rng(8)
    for doc in (FULL, _random(rng, "torch", n=5, heads=2, d_k=3, d_model=4, block=2)):
        trace = qkvcalc.explain(**doc, target=_target(doc, rng).tolist(), backward=True)
        script = tmp_path / "grads.py"
        script.write_text(render(trace, "torch"), encoding="utf-8")
        proc = run_script(str(script))
        assert proc["returncode"] == 0, proc["stderr"]
        for name in ("dQ", "dK", "dV", "dW_Q", "dW_O", "dX", "dW_gate", "dw_norm"):
            assert f"{name}: max |autograd - qkvcalc|" in proc["stdout"], name
        assert "dA" not in proc["stdout"]


def test_brief_keeps_the_first_two_and_the_last_state_gradients():
    """--detail brief lays out of a long head's state gradients (walked from token n down) the
    first two and the last, with a note that says which are left out, as it does the states."""
    from qkvcalc.select import brief_steps

    rng = np.random.default_rng(15)
    doc = _random(rng, "rows", n=15, heads=1, d_k=2, d_model=3, block=4)
    trace = qkvcalc.explain(**doc, target=np.zeros((15, len(doc["wo"][0]))).tolist(), backward=True)
    kept = [s for s in brief_steps(trace, 12).stages if s.id == "grad_state"]
    assert [s.step for s in kept] == [15, 14, 1]
    note = kept[-1].notes[-1]
    assert note.key == "note.brief_grad_steps"
    assert "dS_13 … dS_2" in note.text("en") and "13 down to 2" in note.text("en")
    assert "dS_13 … dS_2" in note.text("ko")


def test_the_quiz_asks_the_state_gradients_and_carries_a_wrong_cell():
    """quiz --backward --stages grad_state,…: each state's gradient asked by its step; a wrong
    cell of dS_3 makes the cell of dS_2 it feeds (e^(−λ)·dS_3) carried, not wrong; hints in
    both languages."""
    from qkvcalc.i18n import translate
    from qkvcalc.quiz.grade import CARRIED, RIGHT, WRONG, grade_sheet
    from qkvcalc.quiz.session import hint

    trace = qkvcalc.explain(**_preset(), backward=True)
    s3, s2 = trace.stage("grad_state", None, step=3), trace.stage("grad_state", None, step=2)
    wrong3 = s3.value.copy()
    wrong3[0, 1] += 1.0
    carried2 = s2.value.copy()
    carried2[0, 1] += math_exp(-0.5) * 1.0
    sheet = {"grad_state@s3": wrong3, "grad_state@s2": carried2}
    report = grade_sheet(trace, sheet, list(sheet), 4)
    grades = {g.key: g for g in report.stages}
    assert grades["grad_state@s3"].count(WRONG) == 1
    cells = {(c.ref.i, c.ref.j): c.verdict for c in grades["grad_state@s2"].cells}
    assert cells[(0, 1)] == CARRIED and cells[(1, 1)] == RIGHT
    for sid, step in (("grad_state", 2), ("grad_q", None), ("grad_k", None), ("grad_v", None)):
        stage = trace.stage(sid, None, step=step) if step else trace.stage(sid)
        msg = hint(trace, stage, 1, 0)
        for lang in ("en", "ko"):
            text = translate(msg.key, lang, **msg.params)
            assert "{" not in text and stage.symbol in text, (sid, text)


def math_exp(x: float) -> float:
    import math

    return math.exp(x)


def test_train_learns_through_the_preset():
    """`qkvcalc train --preset lightning --steps 3` runs (its target is the preset's); at a
    learning rate small enough for its large numbers the loss falls at every step; the
    "Learned:" sentence names exactly the weights that moved."""
    result = run_qkvcalc("train", "--preset", "lightning", "--steps", "3")
    assert result.returncode == 0, result.stderr
    assert "Learned: W_Q, W_K, W_V." in result.stdout
    assert "√d_k" not in result.stdout  # the layer has no scaling: no sentence about one
    from qkvcalc.run.train import train

    doc = _preset()
    training = train(doc, steps=3, lr=0.0005)
    losses = training.losses
    assert all(b < a for a, b in itertools.pairwise(losses))
    assert set(training.learned) == {"wq", "wk", "wv"} and not training.unmoved
    small = run_qkvcalc("train", "--preset", "lightning", "--steps", "3", "--lr", "0.0005")
    assert small.returncode == 0 and "Learned: W_Q, W_K, W_V." in small.stdout
    assert "rose" not in small.stdout


def test_compare_scale_on_a_linear_layer_is_one_message():
    from tests.conftest import one_message

    one_message(
        run_qkvcalc("train", "--preset", "lightning", "--compare-scale"),
        "forms no scores to rescale",
    )


@pytest.mark.parametrize("layer", ["lightning", "gated_delta", "kimi_delta"])
def test_no_gradient_cell_reads_a_cell_its_feeds_leave_out(layer):
    """The feeds of the linear layers' backward ops (the quiz's carried mistakes, the page's lit
    cells) hold every operand cell whose change moves a gradient cell, on a small problem of
    each layer (tests/test_backward_feeds.py's check)."""
    from qkvcalc.ops.table import OPS
    from qkvcalc.plan.specs import Const
    from tests import test_gated_delta_backward as gdn
    from tests import test_kimi_delta_backward as kda
    from tests.test_backward_feeds import backward_stages, influence

    rng = np.random.default_rng(21)
    make = {"lightning": _random, "gated_delta": gdn._random, "kimi_delta": kda._random}[layer]
    doc = make(
        rng,
        "rows",
        n=4,
        heads=2,
        d_k=2,
        d_model=3,
        **({"d_v": 2} if layer != "lightning" else {"block": 2}),
    )
    if layer == "gated_delta":  # with the gated norm after the core
        doc["gated_delta"] |= {"wz": rng.standard_normal((3, 4)).tolist(), "norm": [1.1, 0.8]}
    trace = qkvcalc.explain(**doc, target=_target(doc, rng).tolist(), backward=True)
    for stage in backward_stages(trace):
        op = OPS[stage.op]
        shapes = [np.shape(o) for o in stage.operands]
        # a constant (the gated norm's weight) is no stage: no carried mistake comes from it
        constant = {k for k, o in enumerate(stage.spec.operands) if isinstance(o, Const)}
        rows, cols = stage.shape
        for i in range(rows):
            for j in range(cols):
                feeds = set(op.feeds(i, j, shapes, stage.params))
                missing = {c for c in influence(stage, i, j) - feeds if c[0] not in constant}
                assert not missing, (stage.id, stage.head, (i, j), sorted(missing)[:4])
