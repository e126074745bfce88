"""`qkvcalc train` of a linear layer's own weights after its core: MiniMax's lightning attention's
norm over the joined heads (its weight w_norm) and output gate (W_G), Gated DeltaNet's gated
norm (W_z and its weight w_norm), stepped beside W_Q, W_K, W_V and W_O by the same
W ← W − η·∂L/∂W. Checked against N steps of plain SGD with autograd in float64 on the same
layer written in torch (tests/test_lightning_backward.py's and tests/test_gated_delta_backward.py's
layers): the same weights to 1e-10 and the same losses; --freeze of the new names; what the
command says in every format, in both languages; the trained problem runs again. The whole
layers' pieces before the core: tests/test_train_whole_linear.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.json_doc import input_json
from qkvcalc.run.engine import run
from qkvcalc.run.train import train
from tests.conftest import in_process

torch = pytest.importorskip("torch")

PLAIN = ("wq", "wk", "wv", "wo")


def _sgd(leaves: dict, loss_of, steps: int, lr: float, frozen=()) -> list[float]:
    """`steps` updates p ← p − η·∂L/∂p of every leaf not frozen; the losses 0 … steps."""
    losses = []
    for k in range(steps + 1):
        for leaf in leaves.values():
            leaf.grad = None
        loss = loss_of()
        losses.append(float(loss.detach()))
        if k == steps:
            break
        loss.backward()
        with torch.no_grad():
            for key, leaf in leaves.items():
                if key not in frozen and leaf.grad is not None:
                    leaf -= lr * leaf.grad
    return losses


def _assert_same(got: dict, want: dict, training, losses: list[float], start: dict) -> None:
    assert set(got) == set(want)
    for key, w in want.items():
        scale = max(1.0, float(np.max(np.abs(w))))
        assert np.max(np.abs(got[key] - w)) < 1e-10 * scale, key
    assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]  # the run learned: not a comparison of unmoved weights
    for key in training.learned:  # every weight said learned moved, in both
        assert not np.array_equal(got[key], start[key]), key


# ---- lightning attention: the norm's weight and the output gate -------------------------------


def lightning_doc(seed: int = 4, heads: int = 2, silu: bool = True) -> dict:
    """A lightning layer with MiniMax's norm over the joined heads and its output gate."""
    rng = np.random.default_rng(seed)
    n, d_model, d = 4, 3, 2

    def weight(cols: int) -> list:
        return (rng.standard_normal((d_model, cols)) * 0.7).round(3).tolist()

    spec: dict = {
        "slope": rng.uniform(0.2, 1.2, heads).round(3).tolist(),
        "block": 2,
        "norm": (1 + 0.3 * rng.standard_normal(heads * d)).round(3).tolist(),
        "gate": weight(heads * d),
    }
    if silu:
        spec["act"] = "silu"
    return {
        "x": rng.standard_normal((n, d_model)).round(3).tolist(),
        "wq": weight(heads * d),
        "wk": weight(heads * d),
        "wv": weight(heads * d),
        "wo": (rng.standard_normal((heads * d, d_model)) * 0.7).round(3).tolist(),
        "heads": heads,
        "mask": "causal",
        "lightning": spec,
        "target": rng.standard_normal((n, d_model)).round(3).tolist(),
    }


def _lightning_torch(doc: dict, steps: int, lr: float, frozen=()) -> tuple[dict, list[float]]:
    from tests.test_lightning_backward import _layer, _leaves

    leaves = _leaves({k: v for k, v in doc.items() if k != "target"})
    target = torch.tensor(doc["target"], dtype=torch.float64)
    stepped = {k: leaves[k] for k in (*PLAIN, "_norm", "_gate") if k in leaves}

    def loss():
        return 0.5 * ((_layer(doc, leaves) - target) ** 2).sum()

    losses = _sgd(stepped, loss, steps, lr, frozen)
    names = {"_norm": "norm", "_gate": "wg"}
    return {names.get(k, k): t.detach().numpy() for k, t in stepped.items()}, losses


def lightning_weights(p: Problem) -> dict[str, np.ndarray]:
    value = p.variants.features["lightning"]
    out = {k: getattr(p, k).values for k in PLAIN if getattr(p, k) is not None}
    if value.norm is not None:
        out["norm"] = value.norm
    if value.gate is not None:
        out["wg"] = value.gate.values
    return out


@pytest.mark.parametrize("case", ["both", "norm", "gate", "one-head"])
def test_lightning_training_equals_sgd_in_torch(case):
    doc = lightning_doc(heads=1 if case == "one-head" else 2, silu=case != "gate")
    if case in ("norm", "gate"):  # the other one left out
        doc["lightning"].pop("gate" if case == "norm" else "norm")
    steps, lr = 4, 0.002
    training = train(Problem.from_mapping(doc), steps=steps, lr=lr)
    want, losses = _lightning_torch(doc, steps, lr)
    start = lightning_weights(Problem.from_mapping(doc))
    _assert_same(lightning_weights(training.problem), want, training, losses, start)
    own = {"norm", "wg"} & set(want)
    assert set(training.learned) == {*PLAIN, *own} and not training.unmoved


def test_lightning_frozen_norm_and_gate_stay_and_the_rest_equal_torch():
    """--freeze w_norm,W_G (the names "Learned:" shows; norm and wg, and the input's key gate,
    too): both stay."""
    doc = lightning_doc(seed=9)
    for freeze in ("w_norm,W_G", "norm wg", "norm,gate"):
        training = train(Problem.from_mapping(doc), steps=3, lr=0.01, freeze=freeze)
        want, losses = _lightning_torch(doc, 3, 0.01, frozen=("_norm", "_gate"))
        start = lightning_weights(Problem.from_mapping(doc))
        got = lightning_weights(training.problem)
        _assert_same(got, want, training, losses, start)
        assert training.frozen == ("norm", "wg") and set(training.learned) == set(PLAIN)
        assert np.array_equal(got["norm"], start["norm"]) and np.array_equal(got["wg"], start["wg"])


def test_freeze_of_a_name_the_problem_lacks_is_one_message(tmp_path):
    """--freeze gate without a gate names what the problem has; a plain problem knows no norm."""
    from tests.conftest import one_message

    doc = lightning_doc()
    doc["lightning"].pop("gate")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    one_message(in_process("train", str(path), "--freeze", "gate"), "this problem has no wg")
    one_message(in_process("train", "--preset", "learn", "--freeze", "norm"), "norm is not one of")


def test_a_torch_layout_lightning_problem_trains_alike_and_its_trained_problem_runs():
    doc = lightning_doc(seed=5)
    turned = json.loads(json.dumps(doc))
    for key in PLAIN:
        turned[key] = np.array(doc[key]).T.tolist()
    turned["lightning"]["gate"] = np.array(doc["lightning"]["gate"]).T.tolist()
    turned["layout"] = "torch"
    rows = train(Problem.from_mapping(doc), steps=3, lr=0.01)
    torch_layout = train(Problem.from_mapping(turned), steps=3, lr=0.01)
    assert np.allclose(rows.losses, torch_layout.losses, rtol=1e-12)
    for training in (rows, torch_layout):
        echoed = input_json(training.problem, RenderOptions())
        again = run(Problem.from_mapping(echoed))
        assert np.max(np.abs(again.output - run(training.problem).output)) < 1e-12
        assert echoed["lightning"]["norm"] != doc["lightning"]["norm"]  # written back moved
        assert not np.allclose(echoed["lightning"]["gate"], doc["lightning"]["gate"])


@pytest.mark.parametrize("fmt", ["table", "txt", "json", "html", "svg"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_lightning_train_in_every_format_in_both_languages(tmp_path, fmt, lang):
    from html import escape

    from qkvcalc.i18n import translate

    doc = lightning_doc()
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    args = ("train", str(path), "--steps", "2", "--lr", "0.01", "--format", fmt, "--lang", lang)
    proc = in_process(*args)
    assert proc.returncode == 0, proc.stderr
    said = translate("train.learned", lang, names="W_Q, W_K, W_V, W_O, w_norm, W_G")
    if fmt == "json":
        out = json.loads(proc.stdout)
        assert out["learned"] == ["wq", "wk", "wv", "wo", "norm", "wg"]
        assert set(out["steps"][-1]["weights"]) >= {"norm", "wg"}
        trained = tmp_path / "t.json"
        trained.write_text(json.dumps(out["problem"]))
        again = in_process("explain", str(trained), "--lang", lang)
        assert again.returncode == 0, again.stderr
        assert out["problem"]["lightning"]["norm"] != doc["lightning"]["norm"]
    elif fmt == "svg":
        assert proc.stdout.startswith("<?xml")
    else:
        text = escape(said) if fmt == "html" else said
        assert " ".join(text.split()) in " ".join(proc.stdout.split())


# ---- Gated DeltaNet: the gated norm's W_z and weight ------------------------------------------


def gated_doc(seed: int = 6, heads: int = 2) -> dict:
    """A Gated DeltaNet core (g and β given) with the gated norm after it, and W_O."""
    rng = np.random.default_rng(seed)
    n, d_model, d_k, d_v = 4, 3, 2, 2

    def weight(cols: int) -> list:
        return (rng.standard_normal((d_model, cols)) * 0.7).round(3).tolist()

    return {
        "x": rng.standard_normal((n, d_model)).round(3).tolist(),
        "wq": weight(heads * d_k),
        "wk": weight(heads * d_k),
        "wv": weight(heads * d_v),
        "wo": (rng.standard_normal((heads * d_v, d_model)) * 0.7).round(3).tolist(),
        "heads": heads,
        "mask": "causal",
        "gated_delta": {
            "g": (-rng.uniform(0.05, 0.6, (n, heads))).round(3).tolist(),
            "beta": rng.uniform(0.2, 0.9, (n, heads)).round(3).tolist(),
            "chunk": 2,
            "wz": weight(heads * d_v),
            "norm": (1 + 0.3 * rng.standard_normal(d_v)).round(3).tolist(),
        },
        "target": rng.standard_normal((n, d_model)).round(3).tolist(),
    }


def _gated_torch(doc: dict, steps: int, lr: float, frozen=()) -> tuple[dict, list[float]]:
    from tests.test_gated_delta_backward import _layer, _leaves

    given, read = _leaves({k: v for k, v in doc.items() if k != "target"})
    target = torch.tensor(doc["target"], dtype=torch.float64)
    stepped = {k: given[k] for k in (*PLAIN, "wz", "norm") if k in given}

    def loss():
        return 0.5 * ((_layer(doc, read) - target) ** 2).sum()

    losses = _sgd(stepped, loss, steps, lr, frozen)
    return {k: t.detach().numpy() for k, t in stepped.items()}, losses


def gated_weights(p: Problem) -> dict[str, np.ndarray]:
    value = p.variants.features["gated_delta"]
    out = {k: getattr(p, k).values for k in PLAIN if getattr(p, k) is not None}
    return out | {"wz": value.wz, "norm": value.norm}


@pytest.mark.parametrize("heads", [1, 2])
def test_gated_delta_training_equals_sgd_in_torch(heads):
    doc = gated_doc(heads=heads)
    steps, lr = 4, 0.05
    training = train(Problem.from_mapping(doc), steps=steps, lr=lr)
    want, losses = _gated_torch(doc, steps, lr)
    start = gated_weights(Problem.from_mapping(doc))
    _assert_same(gated_weights(training.problem), want, training, losses, start)
    assert set(training.learned) == {*PLAIN, "wz", "norm"} and not training.unmoved


def test_gated_delta_frozen_w_z_and_norm_stay_and_the_rest_equal_torch():
    doc = gated_doc(seed=8)
    for freeze in ("W_z,w_norm", "wz norm"):
        training = train(Problem.from_mapping(doc), steps=3, lr=0.05, freeze=freeze)
        want, losses = _gated_torch(doc, 3, 0.05, frozen=("wz", "norm"))
        start = gated_weights(Problem.from_mapping(doc))
        got = gated_weights(training.problem)
        _assert_same(got, want, training, losses, start)
        assert training.frozen == ("wz", "norm") and set(training.learned) == set(PLAIN)
        assert np.array_equal(got["wz"], start["wz"]) and np.array_equal(got["norm"], start["norm"])


def test_a_torch_layout_gated_delta_problem_trains_alike_and_its_trained_problem_runs():
    doc = gated_doc(seed=5)
    turned = json.loads(json.dumps(doc))
    for key in PLAIN:
        turned[key] = np.array(doc[key]).T.tolist()
    turned["gated_delta"]["wz"] = np.array(doc["gated_delta"]["wz"]).T.tolist()
    turned["layout"] = "torch"
    rows = train(Problem.from_mapping(doc), steps=3, lr=0.05)
    torch_layout = train(Problem.from_mapping(turned), steps=3, lr=0.05)
    assert np.allclose(rows.losses, torch_layout.losses, rtol=1e-12)
    for training in (rows, torch_layout):
        echoed = input_json(training.problem, RenderOptions())
        again = run(Problem.from_mapping(echoed))
        assert np.max(np.abs(again.output - run(training.problem).output)) < 1e-12
        assert echoed["gated_delta"]["norm"] != doc["gated_delta"]["norm"]  # written back moved
        wz = np.array(echoed["gated_delta"]["wz"])
        start = np.array(doc["gated_delta"]["wz"])
        assert not np.allclose(wz.T if echoed.get("layout") == "torch" else wz, start)


@pytest.mark.parametrize("fmt", ["table", "txt", "json", "html", "svg"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_gated_delta_train_in_every_format_in_both_languages(tmp_path, fmt, lang):
    from html import escape

    from qkvcalc.i18n import translate

    doc = gated_doc()
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    args = ("train", str(path), "--steps", "2", "--lr", "0.05", "--format", fmt, "--lang", lang)
    proc = in_process(*args)
    assert proc.returncode == 0, proc.stderr
    said = translate("train.learned", lang, names="W_Q, W_K, W_V, W_O, W_z, w_norm")
    if fmt == "json":
        out = json.loads(proc.stdout)
        assert out["learned"] == ["wq", "wk", "wv", "wo", "wz", "norm"]
        assert set(out["steps"][-1]["weights"]) >= {"wz", "norm"}
        trained = tmp_path / "t.json"
        trained.write_text(json.dumps(out["problem"]))
        again = in_process("explain", str(trained), "--lang", lang)
        assert again.returncode == 0, again.stderr
        assert out["problem"]["gated_delta"]["norm"] != doc["gated_delta"]["norm"]
    elif fmt == "svg":
        assert proc.stdout.startswith("<?xml")
    else:
        text = escape(said) if fmt == "html" else said
        assert " ".join(text.split()) in " ".join(proc.stdout.split())


def test_the_pieces_before_the_gated_delta_core_train_too(tmp_path):
    """conv before the core was one message until issue 37: train now steps its taps beside the
    rest (tests/test_train_whole_linear.py checks every step against torch)."""
    doc = gated_doc()
    doc["gated_delta"]["conv"] = np.full((2, 12), 0.5).tolist()
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    proc = in_process("train", str(path), "--steps", "2", "--lr", "0.05", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["learned"] == ["wq", "wk", "wv", "wo", "conv", "wz", "norm"]
    moved = np.array(out["problem"]["gated_delta"]["conv"])
    assert moved.shape == (2, 12) and not np.allclose(moved, 0.5)
