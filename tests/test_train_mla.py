"""`qkvcalc train` of multi-head latent attention (`mla`): it steps the weights the problem has —
W_DQ, the query latent's norm weight w_CQ, W_UQ (or W_Q), W_DKV, W_KR, w_CKV, W_UK, W_UV, W_O —
and with the sparse-attention indexer beside it, those same weights while the indexer's stay as
given. Checked against N steps of plain SGD with autograd in float64 on the same layer written
here in torch, DeepSeek-V3's way (its own column order), the indexer run under torch.no_grad()
at every step as transformers' DeepseekV32Indexer is: the same weights to 1e-10 and the same
losses; what the command says (what moved, what the loss does not reach, the indexer's weights
left alone) in both languages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.run.train import train
from tests.conftest import in_process
from tests.test_indexer import dsa_problem
from tests.test_mla import latent_problem

torch = pytest.importorskip("torch")

MLA_KEYS = ("wq_a", "q_a_norm", "wq_b", "wq", "wkv_a", "kv_a_norm", "wkv_b")


def _rotate(x, style, theta, positions):
    """RoPE on the last axis of x [n, d], by each row's position (half: i with i + d/2)."""
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


class Layer:
    """The layer in torch, DeepSeek-V3's way (rows layout: c = X @ W; each head's rotary
    columns last; wkv_b per head [W_UK | W_UV]), its weights leaves that SGD steps."""

    def __init__(self, doc: dict) -> None:
        self.doc = doc
        mla = doc["mla"]
        self.leaves = {
            key: torch.tensor(np.array(mla[key], dtype=float), requires_grad=True)
            for key in MLA_KEYS
            if key in mla
        }
        if "wo" in doc:
            self.leaves["wo"] = torch.tensor(np.array(doc["wo"], dtype=float), requires_grad=True)
        self.x = torch.tensor(np.array(doc["x"], dtype=float), requires_grad=True)  # dX: read
        self.eps = float(mla.get("eps", 1e-6))
        self.heads, self.d_r = doc["heads"], int(mla["rope_dims"])
        self.r_kv = len(mla["kv_a_norm"])
        q_cols = np.array(mla.get("wq", mla.get("wq_b"))).shape[1]
        self.d_c = q_cols // self.heads - self.d_r
        self.d_v = np.array(mla["wkv_b"]).shape[1] // self.heads - self.d_c

    def c_q(self):
        w = self.leaves
        return _rms(self.x @ w["wq_a"], w["q_a_norm"], self.eps) if "wq_a" in w else None

    def kept(self):
        """Each query's keys: the causal mask, narrowed by the indexer's top-k when there is
        one, computed under torch.no_grad() (transformers' DeepseekV32Indexer.forward)."""
        n = len(self.x)
        allowed = torch.tril(torch.ones(n, n, dtype=torch.bool))
        ix = self.doc.get("indexer")
        if ix is None:
            return allowed
        with torch.no_grad():
            c_q = self.c_q()
            source = c_q if c_q is not None else self.x
            q_all = source @ torch.tensor(ix["wq"], dtype=torch.float64)
            dim = q_all.shape[1] // ix["heads"]
            k = self.x @ torch.tensor(ix["wk"], dtype=torch.float64)
            k = torch.nn.functional.layer_norm(
                k, (dim,), torch.tensor(ix["k_norm"], dtype=torch.float64),
                torch.tensor(ix["k_norm_bias"], dtype=torch.float64), 1e-6,
            )  # fmt: skip
            theta, style, d_r = self.doc["rope"]["theta"], ix["rope_style"], self.d_r
            positions = list(range(n))

            def turned(t):
                return torch.cat([_rotate(t[:, :d_r], style, theta, positions), t[:, d_r:]], -1)

            k = turned(k)
            weights = self.x @ torch.tensor(ix["weights"], dtype=torch.float64)
            scores = torch.zeros(n, n, dtype=torch.float64)
            for h in range(ix["heads"]):
                q = turned(q_all[:, h * dim : (h + 1) * dim])
                scores += (
                    weights[:, h : h + 1]
                    * ix["heads"] ** -0.5
                    * torch.relu(q @ k.T / math.sqrt(dim))
                )
            scores = scores.masked_fill(~allowed, float("-inf"))
            top = scores.topk(min(ix["top_k"], n), dim=-1).indices
            chosen = torch.zeros(n, n, dtype=torch.bool).scatter(-1, top, True)
        return allowed & chosen

    def forward(self):
        """The output [n, d_out] and each head's attention weights."""
        w, n, heads = self.leaves, len(self.x), self.heads
        d_c, d_r, d_v = self.d_c, self.d_r, self.d_v
        c_q = self.c_q()
        q_all = c_q @ w["wq_b"] if c_q is not None else self.x @ w["wq"]
        kv_a = self.x @ w["wkv_a"]
        c_kv, k_pe = kv_a[:, : self.r_kv], kv_a[:, self.r_kv :]
        kv = (_rms(c_kv, w["kv_a_norm"], self.eps) @ w["wkv_b"]).view(n, heads, d_c + d_v)
        rope, positions = self.doc["rope"], list(range(n))
        k_pe = _rotate(k_pe, rope["style"], rope["theta"], positions)
        q = q_all.view(n, heads, d_c + d_r)
        allowed = self.kept()
        outputs, weights = [], []
        for h in range(heads):
            q_pe = _rotate(q[:, h, d_c:], rope["style"], rope["theta"], positions)
            scores = (q[:, h, :d_c] @ kv[:, h, :d_c].T + q_pe @ k_pe.T) / math.sqrt(d_c + d_r)
            a = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
            weights.append(a)
            outputs.append(a @ kv[:, h, d_c:])
        out = torch.cat(outputs, -1)
        return (out @ w["wo"] if "wo" in w else out), weights

    def loss(self):
        out, weights = self.forward()
        if "target" in self.doc:
            t = torch.tensor(self.doc["target"], dtype=torch.float64)
            return 0.5 * ((out - t) ** 2).sum()
        targets = self.doc["attend"]  # 1-based
        return sum(
            -weights[h][i, t - 1].log() for h in range(self.heads) for i, t in enumerate(targets)
        )

    def sgd(self, steps: int, lr: float, frozen: dict | None = None) -> list[float]:
        """`steps` updates p ← p − η·∂L/∂p of every leaf; the losses 0 … steps. `frozen`: the
        leaves kept (None) or their columns kept (an index), by key."""
        frozen = frozen or {}
        losses = []
        for k in range(steps + 1):
            for leaf in self.leaves.values():
                leaf.grad = None
            loss = self.loss()
            losses.append(float(loss.detach()))
            if k == steps:
                break
            loss.backward()
            with torch.no_grad():
                for key, leaf in self.leaves.items():
                    if leaf.grad is None or (key in frozen and frozen[key] is None):
                        continue
                    grad = leaf.grad.clone()
                    if key in frozen:
                        grad[:, frozen[key]] = 0
                    leaf -= lr * grad
        return losses


def trained_weights(training) -> dict[str, np.ndarray]:
    """The trained problem's weights as DeepSeek stores them (its input keys)."""
    latent = training.problem.variants.features["mla"]
    out = {"wkv_a": latent.wkv_a.values, "kv_a_norm": latent.kv_norm, "wkv_b": latent.wkv_b.values}
    if latent.wq_a is not None:
        out |= {"wq_a": latent.wq_a.values, "q_a_norm": latent.q_norm, "wq_b": latent.wq.values}
    else:
        out["wq"] = latent.wq.values
    if training.problem.wo is not None:
        out["wo"] = training.problem.wo.values
    return out


def assert_same(training, layer: Layer, losses: list[float]) -> None:
    got = trained_weights(training)
    assert set(got) == set(layer.leaves)
    for key, leaf in layer.leaves.items():
        want = leaf.detach().numpy()
        scale = max(1.0, float(np.max(np.abs(want))))
        assert np.max(np.abs(got[key] - want)) < 1e-10 * scale, key
    assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]  # the run learned: not a comparison of unmoved weights
    moved = [k for k in layer.leaves if not np.array_equal(got[k], start_of(layer.doc, k))]
    assert moved, "no weight moved: the comparison proves nothing"


def start_of(doc: dict, key: str) -> np.ndarray:
    return np.array(doc["mla"].get(key, doc.get(key)), dtype=float)


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
@pytest.mark.parametrize("loss", ["target", "attend"])
def test_training_equals_sgd_in_torch(lora, loss):
    more = {"attend": [1, 1, 2, 3]} if loss == "attend" else {
        "target": np.random.default_rng(7).normal(size=(4, 5)).round(2).tolist()
    }  # fmt: skip
    doc = latent_problem(2, lora, "pairs", **more)
    steps, lr = 4, 0.001
    training = train(Problem.from_mapping(doc), steps=steps, lr=lr)
    layer = Layer(doc)
    losses = layer.sgd(steps, lr)
    assert_same(training, layer, losses)
    every = {"wuk", "wdkv", "wkr", "wckv", *(("wdq", "wcq", "wuq") if lora else ("wq",))}
    if loss == "target":
        assert set(training.learned) == every | {"wuv", "wo"}
    else:  # the loss reads the weights A alone: V, and so W_UV and W_O, do not reach it
        assert set(training.learned) == every
        assert np.array_equal(trained_weights(training)["wo"], np.array(doc["wo"], dtype=float))


def test_frozen_weights_stay_and_the_rest_equal_torch():
    """--freeze wdq,w_UK,wckv: W_DQ and w_CKV stay, and so do wkv_b's W_UK columns while its
    W_UV columns move; torch the same with those gradients left out."""
    doc = latent_problem(3, True, "half", target=[[1, 0, 0, 1, 0]] * 4)
    training = train(Problem.from_mapping(doc), steps=3, lr=0.0005, freeze="wdq,w_UK,wckv")
    uk = np.r_[0:4, 7:11]  # each head's W_UK columns of wkv_b (d_C = 4, d_v = 3)
    layer = Layer(doc)
    losses = layer.sgd(3, 0.0005, frozen={"wq_a": None, "kv_a_norm": None, "wkv_b": uk})
    assert_same(training, layer, losses)
    got = trained_weights(training)
    assert np.array_equal(got["wq_a"], start_of(doc, "wq_a"))
    assert np.array_equal(got["kv_a_norm"], start_of(doc, "kv_a_norm"))
    assert np.array_equal(got["wkv_b"][:, uk], start_of(doc, "wkv_b")[:, uk])
    assert not np.array_equal(got["wkv_b"], start_of(doc, "wkv_b"))
    assert training.frozen == ("wdq", "wuk", "wckv")


def test_the_preset_trains_and_says_what_moved():
    proc = in_process("train", "--preset", "mla", "--steps", "2", "--lr", "0.05", "--format", "txt")
    assert proc.returncode == 0, proc.stderr
    learned = next(line for line in proc.stdout.splitlines() if line.startswith("Learned:"))
    for name in ("W_DQ", "w_CQ", "W_UQ", "W_DKV", "W_KR", "w_CKV", "W_UK", "W_UV"):
        assert name in learned, name
    assert "W_Q," not in learned and "wdq" not in proc.stdout
    korean = in_process("train", "--preset", "mla", "--steps", "2", "--lr", "0.05",
                        "--format", "txt", "--lang", "ko")  # fmt: skip
    assert korean.returncode == 0, korean.stderr
    assert "W_DKV" in korean.stdout


def test_a_loss_on_the_weights_says_w_uv_is_not_reached(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem(1, attend=[1, 1, 2, 3])))
    proc = in_process("train", str(path), "--steps", "2", "--lr", "0.01", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "wuv" not in out["learned"] and "wo" not in out["learned"] and "wuk" in out["learned"]
    again = in_process("train", str(path), "--steps", "2", "--lr", "0.01", "--format", "txt")
    line = next(t for t in again.stdout.splitlines() if t.startswith("Not moved"))
    assert "W_UV" in line and "W_O" in line
    # the trained problem is a problem explain runs, with the moved latents
    trained = tmp_path / "t.json"
    trained.write_text(json.dumps(out["problem"]))
    assert in_process("explain", str(trained)).returncode == 0


def test_freeze_names_a_latent_weight_only_when_the_problem_has_it(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(latent_problem(1, lora=False, target=[[0] * 5] * 4)))
    proc = in_process("train", str(path), "--freeze", "wdq")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--freeze: this problem has no wdq" in proc.stderr and "wq, wdkv" in proc.stderr
    plain = in_process("train", "--preset", "learn", "--freeze", "wdq")
    assert plain.returncode == 2 and "wdq is not one of the weights (wq, wk" in plain.stderr


# ---- with the sparse-attention indexer ----------------------------------------------------------


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
def test_training_with_the_indexer_equals_torch_with_it_under_no_grad(lora):
    """The indexer picks again at every step from the moved C_Q (its own weights fixed): the
    same keys as torch's indexer under no_grad, so the same weights after every step."""
    doc = dsa_problem(1, lora, "half", top_k=3)
    doc["target"] = np.random.default_rng(3).normal(size=(7, 5)).round(2).tolist()
    steps, lr = 4, 0.0001
    training = train(Problem.from_mapping(doc), steps=steps, lr=lr)
    layer = Layer(doc)
    losses = layer.sgd(steps, lr)
    assert_same(training, layer, losses)
    ix = training.problem.variants.features["indexer"]
    assert np.array_equal(ix.wq.values, np.array(doc["indexer"]["wq"], dtype=float))
    assert np.array_equal(ix.weights.values, np.array(doc["indexer"]["weights"], dtype=float))
    # not vacuous: the indexer masks keys the causal mask alone would let through
    assert training.first.attention[0].astype(bool).sum() < 7 * 8 // 2


@pytest.mark.parametrize("fmt", ["table", "txt", "json", "html", "svg"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_training_with_the_indexer_says_its_weights_stay(fmt, lang):
    """Every format of train: the sentence in the text (and the page's), in the JSON's notes;
    the SVG is the loss curve alone."""
    from html import escape

    from qkvcalc.i18n import translate

    proc = in_process("train", "--preset", "dsa", "--steps", "2", "--lr", "0.05",
                      "--format", fmt, "--lang", lang)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    said = translate("train.indexer_fixed", lang)
    if fmt == "json":
        out = json.loads(proc.stdout)
        assert said in out["notes"] and "wdq" in out["learned"]
        assert not any(key.startswith("wi") for key in out["steps"][-1]["weights"])
    elif fmt == "svg":
        assert proc.stdout.startswith("<?xml")
    else:
        text = escape(said) if fmt == "html" else said
        assert " ".join(text.split()) in " ".join(proc.stdout.split())
    plain = in_process("train", "--preset", "mla", "--steps", "1", "--lr", "0.05", "--format",
                       "txt", "--lang", lang)  # fmt: skip
    assert " ".join(said.split()) not in " ".join(plain.stdout.split())  # only with the indexer


# ---- the backward pass with the indexer ---------------------------------------------------------


@pytest.mark.parametrize("lora", [True, False], ids=["query-latent", "wq"])
@pytest.mark.parametrize("loss", ["target", "attend"])
def test_backward_with_the_indexer_equals_autograd_with_it_under_no_grad(lora, loss):
    from qkvcalc import explain
    from tests.test_indexer import naive_index
    from tests.test_mla_backward import qkvcalc_grads

    doc = dsa_problem(2, lora, "pairs", top_k=3)
    if loss == "attend":  # each query's target: the last key its indexer kept
        doc["attend"] = [int(np.flatnonzero(row)[-1]) + 1 for row in naive_index(doc)[1]]
    else:
        doc["target"] = np.random.default_rng(5).normal(size=(7, 5)).round(2).tolist()
    trace = explain(**doc, backward=True)
    layer = Layer(doc)
    layer.loss().backward()
    got = qkvcalc_grads(trace, doc)
    want = {key: leaf.grad for key, leaf in layer.leaves.items()} | {"x": layer.x.grad}
    for key, value in got.items():
        if want[key] is None:  # attend: W_O gets none
            assert value is None, key
            continue
        w = want[key].numpy()
        assert np.max(np.abs(value - w)) < 1e-12 * max(1.0, float(np.max(np.abs(w)))), key
        assert np.max(np.abs(w)) > 1e-6, key
    # the indexer's choice matters here: plain MLA (no indexer) gives other gradients
    plain = explain(**{k: v for k, v in doc.items() if k != "indexer"}, backward=True)
    assert np.max(np.abs(plain.stage("grad_x").value - trace.stage("grad_x").value)) > 1e-6
    # and nothing of the indexer has a gradient stage
    assert not [s.id for s in trace.stages if s.id.startswith("grad_index")]


@pytest.mark.parametrize("fmt", ["table", "txt", "markdown", "json", "latex", "html", "torch"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_preset_s_backward_says_the_choice_is_held_in_every_format(tmp_path, fmt, lang):
    from qkvcalc.i18n import translate
    from tests.inprocess import run_script

    proc = in_process("explain", "--preset", "dsa", "--backward", "--format", fmt, "--lang", lang)
    assert proc.returncode == 0, proc.stderr
    if fmt == "torch":  # the script picks the indexer's keys, then autograd checks every gradient
        if lang == "en":
            script = tmp_path / "s.py"
            script.write_text(proc.stdout)
            ran = run_script(str(script))
            assert ran["returncode"] == 0, ran["stdout"] + ran["stderr"]
            assert "OK: PyTorch agrees" in ran["stdout"] and "compare('dW_DQ'" in proc.stdout
        return
    said = translate("note.indexer_grad", lang, top_k=2, reads="C_Q, X")
    text = " ".join(proc.stdout.split())
    if fmt == "json":
        notes = [n for s in json.loads(proc.stdout)["stages"] for n in s.get("notes", [])]
        assert said in notes
    elif fmt in ("table", "txt", "markdown"):
        assert " ".join(said.split()) in text
    else:  # LaTeX and HTML escape some of its characters (_ and '): a part without them
        words = {"en": "goes back through the latent attention alone", "ko": "잠재 어텐션만 거쳐"}
        assert words[lang] in said and words[lang] in text, fmt


def test_a_data_set_of_latent_attention_equals_torch_on_the_mean_loss(tmp_path):
    """Two examples sharing the latents' weights (`mla` at the top level): each step moves them
    by the mean of the examples' gradients, as torch's SGD on the mean loss; an example may not
    give weights of its own, and the trained data set keeps them at the top level alone."""
    doc = latent_problem(4, True, "pairs")
    rng = np.random.default_rng(11)
    examples = [
        {"x": rng.normal(size=(4, 5)).round(2).tolist(),
         "target": rng.normal(size=(4, 5)).round(2).tolist()}
        for _ in range(2)
    ]  # fmt: skip
    top = {k: v for k, v in doc.items() if k not in ("x",)}
    data = {**top, "examples": examples}
    steps, lr = 3, 0.001
    training = train(data, steps=steps, lr=lr)
    layers = [Layer({**top, **e}) for e in examples]
    for other in layers[1:]:
        other.leaves = layers[0].leaves
    losses = []
    for k in range(steps + 1):
        for leaf in layers[0].leaves.values():
            leaf.grad = None
        loss = sum(layer.loss() for layer in layers) / len(layers)
        losses.append(float(loss.detach()))
        if k < steps:
            loss.backward()
            with torch.no_grad():
                for leaf in layers[0].leaves.values():
                    leaf -= lr * leaf.grad
    assert_same(training, layers[0], losses)
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.train import trained_json

    said = trained_json(training, RenderOptions())
    assert "mla" in said and all("mla" not in e for e in said["examples"])
    bad = {**data, "examples": [{**examples[0], "mla": doc["mla"]}, examples[1]]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    proc = in_process("train", str(path))
    assert proc.returncode == 2 and "examples[1] gives mla" in proc.stderr


def test_a_torch_layout_problem_with_the_indexer_trains_and_its_trained_problem_runs():
    """The JSON input gives every weight in the rows layout and says so: the indexer's too
    (it echoed them as given, out × in, under "layout": "rows"), so the trained problem of a
    torch-layout problem is read again as the same layer."""
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.json_doc import input_json
    from qkvcalc.run.engine import run

    doc = dsa_problem(1, top_k=3, target=[[1, 0, 0, 1, 0]] * 7)
    turned = json.loads(json.dumps(doc))
    for key in ("wkv_a", "wkv_b", "wq_a", "wq_b"):
        turned["mla"][key] = np.array(doc["mla"][key]).T.tolist()
    for key in ("wq", "wk", "weights"):
        turned["indexer"][key] = np.array(doc["indexer"][key]).T.tolist()
    turned["wo"] = np.array(doc["wo"]).T.tolist()
    turned["layout"] = "torch"
    echoed = input_json(Problem.from_mapping(turned), RenderOptions())
    assert echoed["layout"] == "rows" and echoed["indexer"]["wq"] == doc["indexer"]["wq"]
    training = train(Problem.from_mapping(turned), steps=2, lr=0.0001)
    again = run(Problem.from_mapping(input_json(training.problem, RenderOptions())))
    assert np.max(np.abs(again.output - run(training.problem).output)) < 1e-12
    plain = train(Problem.from_mapping(doc), steps=2, lr=0.0001)
    assert np.allclose(plain.losses, training.losses, rtol=1e-12)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_target_the_indexer_stops_keeping_is_one_message_naming_the_step(lang):
    """`attend` with the indexer: the keys a query may see are chosen again from the moved
    weights, so a target kept at the start can be hidden after some update; one message names
    the update, the query and the key (the indexer's choice found by the run, not assumed)."""
    args = ("train", "--preset", "dsa", "--attend", "1 2 2 1 5", "--steps", "30", "--lr", "0.5")
    proc = in_process(*args, "--lang", lang)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") <= 1
    from qkvcalc.input.presets import load
    from qkvcalc.input.problem import Problem as P
    from qkvcalc.plan.masks import allowed_keys

    doc = {**load("dsa"), "attend": [1, 2, 2, 1, 5]}
    doc.pop("target")
    allowed = allowed_keys(P.from_mapping(doc))
    assert all(allowed[i, t - 1] for i, t in enumerate(doc["attend"]))  # every target seen at 0
    words = {"en": "After step", "ko": "단계 뒤에는"}[lang]
    assert words in proc.stderr and "attend[" in proc.stderr
