"""`qkvcalc train` through a whole Gated DeltaNet layer and a whole Kimi Delta Attention layer
(issue 37): beside W_Q, W_K, W_V, W_O it steps the convolution's taps (w_conv), the gates'
weights of X (W_a, W_b; W_fa, W_fb or W_f, W_b), each head's A_log and dt_bias (one per Key
channel in KDA), and the gated norm's W_z (or W_ga, W_gb) and weight, each by W ← W − η·∂L/∂W
from `explain --backward`'s gradients. Checked against N steps of plain SGD with autograd in
float64 on the whole layer written in torch (tests/test_gated_delta_backward.py's and
tests/test_kimi_delta_backward.py's, as transformers' Qwen3NextGatedDeltaNet and
KimiDeltaAttention compute it): the same weights to 1e-10 and the same losses, on random whole
layers (rows and torch layouts, OLMo-Hybrid's β = 2·σ(b), Ling 3.0's f_proj / g_proj in one and
bounded decay) and on layers `qkvcalc extract` wrote from tiny Qwen3-Next, OLMo-Hybrid and Kimi
Linear models; each weight keeps its shape (A_log and dt_bias vectors stay vectors); --freeze
of the new names; what the command says in every format in both languages; the trained
problem runs again through explain (and its backward)."""

from __future__ import annotations

import json
import tempfile

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.json_doc import input_json
from qkvcalc.run.engine import run
from qkvcalc.run.train import train
from tests.conftest import in_process
from tests.test_train_linear import PLAIN, _sgd  # one SGD loop for both files

torch = pytest.importorskip("torch")


GDN_OWN = ("conv", "wa", "wb", "a_log", "dt_bias", "wz", "norm")  # train's names = the keys
KDA_OWN = {  # train's names -> kimi_delta's keys
    "conv": "conv",
    "wfa": "wf_a",
    "wfb": "wf_b",
    "wf": "wf",
    "a_log": "a_log",
    "dt_bias": "dt_bias",
    "wb": "wb",
    "wga": "wg_a",
    "wgb": "wg_b",
    "wz": "wz",
    "norm": "norm",
}


def _key(doc: dict) -> str:
    return "gated_delta" if "gated_delta" in doc else "kimi_delta"


def _own(doc: dict) -> dict[str, str]:
    """The layer's own learned weights this problem has: train's name -> the layer's key."""
    spec = doc[_key(doc)]
    names = {n: n for n in GDN_OWN} if _key(doc) == "gated_delta" else KDA_OWN
    return {name: key for name, key in names.items() if key in spec}


def _torch_sgd(doc: dict, steps: int, lr: float, frozen=()) -> tuple[dict, list[float]]:
    """Plain SGD in torch on the whole layer as `doc` writes it (its layout): every weight a
    leaf (X not stepped), the loss ½·Σ(O − T)²; the weights after, by train's names."""
    from tests.test_gated_delta_backward import _layer
    from tests.test_kimi_delta_backward import _whole_layer

    turned = doc.get("layout") == "torch"
    spec = doc[_key(doc)]
    leaves = {
        name: torch.tensor(np.asarray(doc[name], dtype=np.float64), requires_grad=True)
        for name in ("x", *PLAIN)
        if name in doc
    }
    own = _own(doc)
    for key in own.values():
        leaves[key] = torch.tensor(np.asarray(spec[key], dtype=np.float64), requires_grad=True)
    target = torch.tensor(doc["target"], dtype=torch.float64)
    layer = _layer if _key(doc) == "gated_delta" else _whole_layer
    stepped = {k: t for k, t in leaves.items() if k != "x"}

    def loss():
        read = {k: (t.T if turned and k.startswith("w") else t) for k, t in leaves.items()}
        return 0.5 * ((layer(doc, read) - target) ** 2).sum()

    keys = {own.get(name, name) for name in frozen}
    losses = _sgd(stepped, loss, steps, lr, keys)
    back = {key: name for name, key in own.items()}
    return {back.get(k, k): t.detach().numpy() for k, t in stepped.items()}, losses


def _weights(p: Problem, doc: dict) -> dict[str, np.ndarray]:
    """The trained problem's weights, as `doc`'s layout writes them (the layer's keys held in
    the rows layout, turned back like the torch leaves)."""
    turned = doc.get("layout") == "torch"
    value = p.variants.features[_key(doc)]
    out = {k: getattr(p, k).values for k in PLAIN if getattr(p, k) is not None}
    if turned:
        out = {k: w.T for k, w in out.items()}
    for name, key in _own(doc).items():
        held = np.asarray(getattr(value, key))
        out[name] = held.T if turned and key.startswith("w") else held
    return out


def _check(doc: dict, steps: int, lr: float, frozen=(), falls: bool = True) -> object:
    """Train `doc` and plain SGD in torch: the same weights (each in its own shape) to 1e-10
    and the same losses; the loss went down (`falls`: a random layer's sharp curvature may
    take a step too long); every weight said learned moved."""
    training = train(Problem.from_mapping(doc), steps=steps, lr=lr, freeze=",".join(frozen))
    want, losses = _torch_sgd(doc, steps, lr, frozen)
    got = _weights(training.problem, doc)
    start = _weights(Problem.from_mapping(doc), doc)
    assert set(got) == set(want)
    for name, w in want.items():
        assert got[name].shape == w.shape == start[name].shape, name  # a vector stays a vector
        scale = max(1.0, float(np.max(np.abs(w))))
        assert np.max(np.abs(got[name] - w)) < 1e-10 * scale, name
    assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0] or not falls  # it learned: not a comparison of unmoved weights
    for name in training.learned:
        assert not np.array_equal(got[name], start[name]), name
    for name in frozen:
        assert np.array_equal(got[name], start[name]), name
    return training


def _with_target(doc: dict, rng: np.random.Generator) -> dict:
    from tests.test_gated_delta_backward import _target

    return doc | {"target": _target(doc, rng).tolist()}


# ---- Gated DeltaNet ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["GDN_LAYER", "OLMO_LAYER"])
def test_a_whole_gated_delta_layer_trains_as_sgd_in_torch(name):
    """tests/test_arith_invariant.py's whole layer (and OLMo-Hybrid's β = 2·σ(b)): every weight
    of the layer learned, equal to torch's."""
    from tests import test_arith_invariant as layers

    doc = _with_target(json.loads(json.dumps(getattr(layers, name))), np.random.default_rng(3))
    training = _check(doc, steps=4, lr=0.02)
    assert set(training.learned) == {*PLAIN, *_own(doc)}
    assert not training.unmoved


def test_random_whole_gated_delta_layers_train_as_sgd_in_torch():
    from tests.test_gated_delta_backward import _random, _whole

    rng = np.random.default_rng(1037)
    for _ in range(8):
        layout = "torch" if rng.random() < 0.4 else "rows"
        doc = _whole(rng, _random(rng, layout, n=int(rng.integers(2, 6))))
        doc = _with_target(doc, rng)
        training = _check(doc, steps=3, lr=0.005, falls=False)
        assert {"conv", "wa", "wb", "a_log", "dt_bias"} <= set(training.learned)


def test_frozen_taps_and_decay_stay_and_the_rest_equal_torch():
    """--freeze w_conv,A_log,dt_bias (the names "Learned:" shows; conv and a_log too)."""
    from tests import test_arith_invariant as layers

    doc = _with_target(json.loads(json.dumps(layers.GDN_LAYER)), np.random.default_rng(5))
    for freeze in ("w_conv,A_log,dt_bias", "conv a_log dtbias"):
        words = freeze.replace(",", " ").split()
        training = train(Problem.from_mapping(doc), steps=3, lr=0.02, freeze=freeze)
        assert training.frozen == ("conv", "a_log", "dt_bias"), words
    _check(doc, steps=3, lr=0.02, frozen=("conv", "a_log", "dt_bias"))
    _check(doc, steps=3, lr=0.02, frozen=("wa", "wb", "wq"))


@pytest.mark.parametrize("case", ["qwen3_next", "qwen3_next-grouped", "olmo_hybrid"])
def test_a_layer_extract_wrote_trains_as_sgd_in_torch(case):
    """A layer qkvcalc extract wrote from a tiny Qwen3-Next (its grouped value heads too: each
    repeated column steps as written) and OLMo-Hybrid: every weight of the problem learned."""
    from tests.test_extract import build_from
    from tests.test_extract_gdn import CASES, LAYER
    from tests.test_extract_hybrid import EAGER, as_loaded
    from tests.test_extract_more import ids

    config, fields, model_name, _path = CASES[case]
    model = build_from(config, fields, model_name, **EAGER)
    as_loaded(model, case)
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        problem = qkvcalc.extract(folder, layer=LAYER, input_ids=ids(), dtype="float64")
    assert set(GDN_OWN) <= set(problem["gated_delta"])
    doc = _with_target(problem, np.random.default_rng(45))
    training = _check(doc, steps=3, lr=0.001)
    assert set(training.learned) == {*PLAIN, *GDN_OWN}


# ---- Kimi Delta Attention ----------------------------------------------------------------------


def _kda_layer(form: str) -> dict:
    """tests/test_arith_invariant.py's whole KDA layer (low-rank W_fa·W_fb and W_ga·W_gb), or
    Ling 3.0's (W_f and W_z in one, the bounded decay)."""
    from tests.test_arith_invariant import KDA_LAYER

    doc = json.loads(json.dumps(KDA_LAYER))
    if form == "ling":
        spec = doc["kimi_delta"]
        rng = np.random.default_rng(5)
        spec["wf"] = (np.asarray(spec.pop("wf_a")) @ np.asarray(spec.pop("wf_b"))).tolist()
        spec["wz"] = rng.standard_normal((3, 4)).tolist()
        del spec["wg_a"], spec["wg_b"]
        spec["lower_bound"] = -5.0
    return _with_target(doc, np.random.default_rng(9))


@pytest.mark.parametrize("form", ["low-rank", "ling"])
def test_a_whole_kda_layer_trains_as_sgd_in_torch(form):
    doc = _kda_layer(form)
    training = _check(doc, steps=4, lr=0.02)
    assert set(training.learned) == {*PLAIN, *_own(doc)}
    assert not training.unmoved
    value = training.problem.variants.features["kimi_delta"]
    assert value.lower_bound == doc["kimi_delta"].get("lower_bound")  # a setting, not learned
    assert value.dt_bias.shape == (len(doc["kimi_delta"]["dt_bias"]),)  # one per Key channel


def test_random_whole_kda_layers_train_as_sgd_in_torch():
    from tests.test_kimi_delta_backward import _whole_random

    rng = np.random.default_rng(2037)
    for _ in range(8):
        doc = _with_target(_whole_random(rng), rng)
        training = _check(doc, steps=3, lr=0.005, falls=False)
        assert {"conv", "a_log", "dt_bias", "wb", "norm"} <= set(training.learned)


def test_a_kimi_linear_layer_extract_wrote_trains_as_sgd_in_torch():
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
    doc = _with_target(problem, np.random.default_rng(46))
    training = _check(doc, steps=3, lr=0.001)
    assert set(training.learned) == {*PLAIN, *_own(doc)}
    assert {"conv", "wfa", "wfb", "a_log", "dt_bias", "wb", "wga", "wgb", "norm"} <= set(
        training.learned
    )


# ---- what the command says, and the trained problem ----------------------------------------------


def _layer_doc(kind: str) -> dict:
    from tests import test_arith_invariant as layers

    if kind == "kda":
        return _kda_layer("low-rank")
    return _with_target(json.loads(json.dumps(layers.GDN_LAYER)), np.random.default_rng(3))


SAID = {
    "gdn": "W_Q, W_K, W_V, W_O, w_conv, W_a, W_b, A_log, dt_bias, W_z, w_norm",
    "kda": "W_Q, W_K, W_V, W_O, w_conv, W_fa, W_fb, A_log, dt_bias, W_b, W_ga, W_gb, w_norm",
}


@pytest.mark.parametrize("fmt", ["table", "txt", "json", "html"])
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kind", ["gdn", "kda"])
def test_train_of_a_whole_layer_in_every_format_in_both_languages(tmp_path, kind, fmt, lang):
    from html import escape

    from qkvcalc.i18n import translate

    doc = _layer_doc(kind)
    names = [n for n in ("wq", "wk", "wv", "wo") if n in doc] + list(_own(doc))
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    args = ("train", str(path), "--steps", "2", "--lr", "0.02", "--format", fmt, "--lang", lang)
    proc = in_process(*args)
    assert proc.returncode == 0, proc.stderr
    said = translate("train.learned", lang, names=SAID[kind])
    if fmt == "json":
        out = json.loads(proc.stdout)
        assert out["learned"] == names
        last = out["steps"][-1]["weights"]
        assert np.shape(last["a_log"]) == (1, len(doc[_key(doc)]["a_log"]))
        trained = tmp_path / "t.json"
        trained.write_text(json.dumps(out["problem"]))
        for extra in ((), ("--backward",)):
            again = in_process("explain", str(trained), "--lang", lang, *extra)
            assert again.returncode == 0, again.stderr
        spec = out["problem"][_key(doc)]
        for key in ("conv", "a_log", "dt_bias"):
            assert np.shape(spec[key]) == np.shape(doc[_key(doc)][key]), key
            assert not np.allclose(spec[key], doc[_key(doc)][key]), key  # written back moved
    else:
        text = escape(said) if fmt == "html" else said
        assert " ".join(text.split()) in " ".join(proc.stdout.split())


@pytest.mark.parametrize("kind", ["gdn", "kda"])
def test_the_trained_problem_runs_again_and_equals_its_own_run(kind):
    """input_json of the trained problem (the rows layout) read again gives the same output."""
    doc = _layer_doc(kind)
    for layout in ("rows", "torch"):
        start = doc
        if layout == "torch":
            start = json.loads(json.dumps(doc))
            for key in PLAIN:
                if key in start:
                    start[key] = np.asarray(doc[key]).T.tolist()
            spec = start[_key(doc)]
            for key in spec:
                if key.startswith("w"):
                    spec[key] = np.asarray(spec[key]).T.tolist()
            start["layout"] = "torch"
        training = train(Problem.from_mapping(start), steps=2, lr=0.02)
        echoed = input_json(training.problem, RenderOptions())
        again = run(Problem.from_mapping(echoed))
        assert np.max(np.abs(again.output - run(training.problem).output)) < 1e-12


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_each_update_says_every_weight_moves_by_the_rule(lang):
    """--step's page of one update: its rule names a learned weight, not a matrix (A_log and
    dt_bias are vectors, one number per head), and shows each one's Δ, these among them."""
    from qkvcalc.i18n import translate
    from qkvcalc.render.train import update_lines

    training = train(Problem.from_mapping(_layer_doc("gdn")), steps=1, lr=0.02)
    lines = update_lines(training, 1, RenderOptions(lang=lang, width=200, color=False))
    text = "\n".join(line.plain for line in lines)
    rule = translate("train.update_rule", lang, lr="0.02")
    assert rule in text and "ΔW = −η·∂L/∂W" in rule
    assert "matrix" not in translate("train.update_rule", "en", lr="0.02")
    for shown in ("Δw_conv", "ΔA_log", "Δdt_bias", "ΔW_a"):
        assert shown in text, shown


@pytest.mark.parametrize("kind", ["gdn", "kda"])
def test_a_step_too_long_is_one_message_never_a_traceback(tmp_path, kind):
    """A large η grows the weights (A_log among them: e^(A_log) past float64 was a traceback of
    math.exp) until a number is no longer finite: one message that asks for a smaller --lr. (A
    saturated layer may also end finite: then it trains to the end.)"""
    from tests.conftest import one_message

    path = tmp_path / "p.json"
    path.write_text(json.dumps(_layer_doc(kind)))
    refused = 0
    for lr in ("5", "50", "5000", "1e6"):
        proc = in_process("train", str(path), "--lr", lr, "--steps", "200", "--format", "json")
        if proc.returncode == 2:
            one_message(proc, "smaller --lr")
            refused += 1
        else:
            assert proc.returncode == 0, proc.stderr
    assert refused


@pytest.mark.parametrize("key", ["gated_delta", "kimi_delta"])
def test_an_a_log_past_float64_is_one_message_in_explain(tmp_path, key):
    """e^(A_log) beyond float64 (A_log = 800) makes g −∞: the overflow's one message, where
    math.exp raised before."""
    from tests import test_arith_invariant as layers
    from tests.conftest import one_message

    doc = json.loads(json.dumps(layers.GDN_LAYER if key == "gated_delta" else layers.KDA_LAYER))
    doc[key]["a_log"] = [800.0, 0.1]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    one_message(in_process("explain", str(path)), "overflow float64", "e^(800)")
