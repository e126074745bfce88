"""--backward and `qkvcalc train` through DeepSeek-V4's compressed entries (`compress`, issue 37)
against PyTorch's autograd in float64: the layer written here from the problem's own keys as
DeepSeek-V4 computes it (mla's one key/value head, tests/test_mla_shared_kv_backward.py's
`layer`, with the pooled entries appended to its keys and values: the compressor as its module
writes it, windows as a view, softmax over dim 1, RMSNorm, turned at w·m), and autograd's
gradient of every weight (the entries' W_C, W_CG, B and norm weight among them) and of X equal
to qkvcalc's to 1e-10 relative: HCA with m = 1, 2, 4; the overlap; the indexer's top-k (the
kept entries a constant mask, as torch.topk's indices carry no gradient); with and without
rope, vo_rope, sinks, a window; one head and three; both losses; `train` N steps equal to SGD."""

from __future__ import annotations

import math

import numpy as np
import pytest

import qkvcalc
from tests.test_compress import naive_chosen, problem, sparse
from tests.test_mla_shared_kv_backward import _rms, _turn_last, leaves_of, qkvcalc_grads

torch = pytest.importorskip("torch")

EPS = 1e-6
COMP = {"wkv": "c_wkv", "wgate": "c_wgate", "bias": "c_bias", "norm": "c_norm"}


def doc_of(seed: int, m: int = 2, overlap: bool = False, heads: int = 2, n: int = 9,
           plain: bool = False, index: bool = False) -> dict:  # fmt: skip
    """A random compressed layer (tests/test_compress.py's), with a target; `plain`: without
    rope, vo_rope, sinks and window; `index`: the indexer's top-k of the entries."""
    if index:
        doc, w = sparse(seed, n=n, m=m)
        doc["keep"] = naive_chosen(w).tolist()  # the indexer's choice, from the numpy record
    else:
        doc, _ = problem(seed, n=n, m=m, overlap=overlap, heads=heads)
    if plain:
        for key in ("rope", "vo_rope", "sinks", "window"):
            doc.pop(key)
    rng = np.random.default_rng(50 + seed)
    doc["target"] = rng.standard_normal((len(doc["x"]), len(doc["wo"][0]))).tolist()
    return doc


def leaves(doc: dict) -> dict:
    """mla's leaves and the entries' own weights (in the problem's column order), by key."""
    out = leaves_of(doc)
    for key, name in COMP.items():
        out[name] = torch.tensor(np.asarray(doc["compress"][key], dtype=float), requires_grad=True)
    return out


def _pool(kv, gate, bias, m: int, overlap: bool):
    """DeepSeek-V4's compressor before its norm (a view of windows, softmax over dim 1)."""
    count = kv.shape[0] // m
    v = kv[: count * m].view(count, m, -1)
    z = gate[: count * m].view(count, m, -1) + bias
    if overlap:
        d = v.shape[-1] // 2
        first = torch.zeros(1, m, d, dtype=torch.float64)
        v = torch.cat([torch.cat([first, v[:-1, :, :d]]), v[..., d:]], dim=1)
        z = torch.cat([torch.cat([first - torch.inf, z[:-1, :, :d]]), z[..., d:]], dim=1)
    return (v * z.softmax(dim=1)).sum(dim=1)


def _frequencies(rope: dict) -> list[float]:
    if "inv_freq" in rope:
        return [float(w) for w in rope["inv_freq"]]
    dims = rope["dims"]
    return [rope["theta"] ** (-2.0 * k / dims) for k in range(dims // 2)]


def layer(doc: dict, lv: dict):
    """The attention output, DeepSeek-V4's way (its layout: rotary columns last), and each
    head's weights over [tokens, entries]."""
    mla, comp = doc["mla"], doc["compress"]
    x, rope = lv["x"], int(mla["rope_dims"])
    n, heads, m = x.shape[0], doc["heads"], int(comp["m"])
    d = lv["wkv_a"].shape[1]
    nope = d - rope
    order = np.r_[nope:d, 0:nope]  # the problem's column k is DeepSeek-V4's order[k]
    back = np.argsort(order)
    pos = list(range(n))
    turning = "rope" in doc
    inv = _frequencies(doc["rope"]) if turning else []
    eps = float(mla.get("eps", EPS))
    q_all = _rms(x @ lv["wq_a"], lv["q_a_norm"], eps) @ lv["wq_b"]
    kv = _rms(x @ lv["wkv_a"], lv["kv_a_norm"], eps)
    raw = _pool(
        x @ lv["c_wkv"], x @ lv["c_wgate"], lv["c_bias"], m, bool(comp.get("overlap", False))
    )
    entries = _rms(raw, lv["c_norm"], float(comp.get("eps", EPS)))[:, back]
    count = raw.shape[0]
    if turning:
        kv = _turn_last(kv, pos, rope, inv)
        entries = _turn_last(entries, [w * m for w in range(count)], rope, inv)
    keys = torch.cat([kv, entries])
    values = keys if doc.get("vo_rope") or not turning else torch.cat([_rms(
        x @ lv["wkv_a"], lv["kv_a_norm"], eps), entries])  # fmt: skip
    allowed = torch.tril(torch.ones(n, n, dtype=torch.bool))
    if "window" in doc:
        allowed &= ~torch.tril(torch.ones(n, n, dtype=torch.bool), -doc["window"])
    seen = torch.arange(count)[None, :] < ((torch.arange(n) + 1) // m)[:, None]
    if "keep" in doc:  # the indexer's top-k: a constant, no gradient through the choice
        seen &= torch.tensor(doc["keep"])
    allowed = torch.hstack([allowed, seen])
    outs, weights = [], []
    for h in range(heads):
        q = q_all[:, h * d : (h + 1) * d]
        if "q_norm" in doc:
            q = _rms(q, None, float(doc.get("norm_eps", EPS)))
        if turning:
            q = _turn_last(q, pos, rope, inv)
        s = (q @ keys.T / math.sqrt(d)).masked_fill(~allowed, float("-inf"))
        if "sinks" in lv:
            sink = lv["sinks"][h].expand(n, 1)
            a = torch.softmax(torch.cat([s, sink], -1), -1)[:, :-1]
        else:
            a = torch.softmax(s, -1)
        weights.append(a)
        o = a @ values
        if doc.get("vo_rope"):
            o = _turn_last(o, [-i for i in pos], rope, inv)
        outs.append(torch.cat([o[:, nope:], o[:, :nope]], -1))  # qkvcalc's W_O rows
    return torch.cat(outs, -1) @ lv["wo"], weights


def autograd(doc: dict, loss: str = "target") -> dict[str, np.ndarray]:
    lv = leaves(doc)
    out, weights = layer(doc, lv)
    if loss == "target":
        (0.5 * ((out - torch.tensor(doc["target"], dtype=torch.float64)) ** 2).sum()).backward()
    else:
        total = sum(-torch.log(a[i, t - 1]) for a in weights for i, t in enumerate(doc["attend"]))
        total.backward()
    return {k: t.grad.numpy() for k, t in lv.items() if t.grad is not None}


def ours(doc: dict, loss: str = "target") -> dict[str, np.ndarray]:
    """qkvcalc's gradients by the same keys (the entries' in the problem's order, as given)."""
    given = {k: v for k, v in doc.items() if k != "keep"}
    if loss != "target":
        given.pop("target")
    trace = qkvcalc.explain(**given, backward=True)
    if "keep" in doc:
        assert np.array_equal(trace.stage("idx_topk").value > 0, np.asarray(doc["keep"]))
    out = qkvcalc_grads(trace, doc)
    out |= {
        "c_wkv": trace.stage("grad_wc").value,
        "c_wgate": trace.stage("grad_wcg").value,
        "c_bias": trace.stage("grad_comp_bias").value,
        "c_norm": trace.stage("grad_comp_norm_weight").value[0],
    }
    return out


def same(got: dict, want: dict) -> None:
    assert set(got) == set(want), (sorted(got), sorted(want))
    for key, w in want.items():
        assert got[key].shape == w.shape, key
        scale = max(1.0, float(np.max(np.abs(w))))
        assert np.max(np.abs(got[key] - w)) < 1e-10 * scale, (key, np.max(np.abs(got[key] - w)))


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("m", [1, 2, 4])
def test_the_heavily_compressed_layers_gradients_equal_autograd(seed, m):
    doc = doc_of(seed, m=m, n=9 + seed)
    same(ours(doc), autograd(doc))
    assert np.max(np.abs(autograd(doc)["c_bias"])) > 1e-6 or m == 1  # the entries reach the loss


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_overlapping_pools_gradients_equal_autograd(seed):
    doc = doc_of(seed, m=2, overlap=True, n=9 + seed)
    same(ours(doc), autograd(doc))


@pytest.mark.parametrize(("seed", "m"), [(0, 2), (1, 2), (2, 3)])
def test_with_the_indexers_top_k_the_gradients_equal_autograd(seed, m):
    doc = doc_of(seed, m=m, index=True, n=11)
    same(ours(doc), autograd(doc))


@pytest.mark.parametrize("overlap", [False, True])
def test_without_rope_sinks_or_window_the_gradients_equal_autograd(overlap):
    doc = doc_of(3, m=2, overlap=overlap, plain=True)
    same(ours(doc), autograd(doc))


@pytest.mark.parametrize("heads", [1, 3])
def test_one_head_and_three_equal_autograd(heads):
    doc = doc_of(4, m=2, heads=heads)
    same(ours(doc), autograd(doc))


def test_attend_reaches_the_entries_by_the_keys_alone():
    doc = doc_of(5, m=2)
    doc["attend"] = list(range(1, len(doc["x"]) + 1))  # each query's own token
    want = autograd(doc, "attend")
    same(ours(doc, "attend"), want)
    assert np.max(np.abs(want["c_wkv"])) > 1e-6  # the entries' keys reach this loss


def test_the_entries_gradient_sums_every_heads_rows_of_dk_and_dv():
    doc = doc_of(6, m=2, heads=3)
    trace = qkvcalc.explain(**doc, backward=True)
    n = len(doc["x"])
    want = sum(trace.stage(f"grad_{s}_more", h).value[n:] for h in (1, 2, 3) for s in ("k", "v"))
    assert np.array_equal(trace.stage("grad_comp_rot").value, want)
    assert "grad_comp_rot" in {s.id for s in trace.stages if s.op == "grad_sum"}


def test_the_torch_script_with_backward_agrees_with_autograd(tmp_path):
    from qkvcalc.render import RenderOptions, render
    from tests.inprocess import run_script

    for kw in ({}, {"index": True, "n": 11}, {"plain": True, "overlap": True}, {"heads": 1}):
        doc = doc_of(7, **kw)
        doc.pop("keep", None)
        path = tmp_path / "check.py"
        text = render(qkvcalc.explain(**doc, backward=True), "torch", RenderOptions(width=100))
        path.write_text(text, encoding="utf-8")
        result = run_script(str(path))
        assert result["returncode"] == 0, result["stderr"]
        assert "MISMATCH" not in result["stdout"] and "OK: PyTorch agrees" in result["stdout"]
        for name in ("dW_C:", "dW_CG:", "dB:", "dw_E:"):
            assert name in result["stdout"], (kw, name)


@pytest.mark.parametrize("fmt", ["txt", "markdown", "json", "latex", "html"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_format_and_language_renders_it(tmp_path, fmt, lang):
    import json

    from tests.conftest import in_process

    doc = doc_of(8, index=True, n=11)
    doc.pop("keep")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    proc = in_process("explain", str(path), "--backward", "--format", fmt, "--lang", lang)
    assert proc.returncode == 0, proc.stderr
    plain = proc.stdout.replace("\\_\\allowbreak{}", "_")  # LaTeX's breakable underscore
    assert "dW_CG" in plain and "W_CG" in plain
    if fmt == "txt":
        said = {"en": ("Backward: gradient of the entries", "the indexer's choice of entries"),
                "ko": ("역전파: 항목들의 기울기", "인덱서가 고른 항목들")}[lang]  # fmt: skip
        assert all(s in proc.stdout for s in said), said
        assert "dE_rot = Σₕ (d(K')ₕ + d(V')ₕ)[12–16, :]" in proc.stdout


@pytest.mark.parametrize("option", [[], ["--exact"]], ids=str)
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("overlap", [False, True])
def test_every_equals_of_its_backward_holds(tmp_path, option, lang, overlap):
    """Each gradient cell's arithmetic (the entries' sum over the heads' rows, the norm, the
    shares, the windows' softmax, dB, dw_E, dW_C, dW_CG, dX) re-evaluated by
    tests/test_arith_invariant.py's checker."""
    import json

    from tests.conftest import in_process
    from tests.test_arith_invariant import arithmetic_lines, check_line

    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc_of(9, m=2, overlap=overlap, n=6)), encoding="utf-8")
    proc = in_process(
        "explain", str(path), "--backward", "--no-color", "--detail", "full", "--lang", lang,
        *option, env={"COLUMNS": "4000"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = arithmetic_lines(proc.stdout)
    for symbol in ("dE_rot[", "dB[", "dw_E[", "dW_C[", "dW_CG[", "dX["):
        assert any(symbol in line for line in lines), symbol
    checked, wrong = 0, []
    for line in lines:
        n, failure = check_line(line, 4)
        checked += n
        if failure:
            wrong.append(failure)
    assert checked and not wrong, "\n".join(wrong[:20])


# ---- qkvcalc train: N steps of SGD, as autograd's ---------------------------------------------

# train's names by the leaves' keys (mla's, tests/test_mla_shared_kv_backward.py's, then the
# entries' own)
NAMES = {"wq_a": "wdq", "q_a_norm": "wcq", "wq_b": "wuq", "wkv_a": "wdkv", "kv_a_norm": "wckv",
         "wo": "wo", "c_wkv": "wc", "c_wgate": "wcg", "c_bias": "cb", "c_norm": "cw"}  # fmt: skip


def trained(p) -> dict[str, np.ndarray]:
    """A problem's learned weights by train's names, each as the input holds it."""
    from tests.test_mla_shared_kv_backward import trained_weights

    c = p.variants.features["compress"]
    entries = {"wc": c.wkv.values, "wcg": c.wgate.values, "cb": c.bias, "cw": c.norm}
    return trained_weights(p) | entries


def torch_sgd(doc: dict, steps: int, lr: float, frozen=(), w: dict | None = None):
    """Plain SGD in torch on every weight train steps (X and the sinks held, as train holds
    them), the loss ½·Σ(O − T)²; with the indexer (`w`: its weights, tests/test_compress.py's
    `sparse`), its top-k chosen again at every step from the query latent's weights then, its
    own as given. The weights after, by train's names, and the losses."""
    from tests.test_train_linear import _sgd

    lv = leaves(doc)
    target = torch.tensor(doc["target"], dtype=torch.float64)
    stepped = {NAMES[k]: t for k, t in lv.items() if k in NAMES}

    def loss():
        given = doc
        if w is not None:  # the choice again, from C_Q as it is now: a constant of the step
            now = w | {"wq_a": lv["wq_a"].detach().numpy(), "q_a_norm": lv["q_a_norm"].detach()
                       .numpy()}  # fmt: skip
            given = doc | {"keep": naive_chosen(now).tolist()}
        return 0.5 * ((layer(given, lv)[0] - target) ** 2).sum()

    losses = _sgd(stepped, loss, steps, lr, frozen)
    return {k: t.detach().numpy() for k, t in stepped.items()}, losses


def _trains(doc: dict, w: dict | None = None, steps: int = 4, freeze=None, frozen=()):
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.train import train

    given = {k: v for k, v in doc.items() if k != "keep"}
    training = train(Problem.from_mapping(given), steps=steps, lr=0.02, freeze=freeze)
    want, losses = torch_sgd(given, steps, 0.02, frozen, w)
    got, start = trained(training.problem), trained(Problem.from_mapping(given))
    same(got, want)
    assert np.allclose(training.losses, losses, rtol=1e-10, atol=0)
    assert losses[-1] < losses[0]
    return training, got, start


@pytest.mark.parametrize("case", ["hca", "overlap", "plain"])
def test_training_equals_sgd_in_torch(case):
    doc = doc_of(11, m=2, overlap=case == "overlap", plain=case == "plain")
    training, got, start = _trains(doc)
    assert set(training.learned) == set(NAMES.values())
    for name in training.learned:  # every weight said learned moved
        assert not np.array_equal(got[name], start[name]), name


def test_training_with_the_indexer_equals_sgd_with_its_choice_made_again(tmp_path):
    import json

    from qkvcalc.i18n import translate
    from tests.conftest import in_process

    doc, w = sparse(12, n=11, m=2)
    doc["target"] = np.random.default_rng(3).standard_normal((11, 3)).tolist()
    _trains(doc, w)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    for lang in ("en", "ko"):
        proc = in_process("train", str(path), "--steps", "2", "--format", "json", "--lang", lang)
        assert proc.returncode == 0, proc.stderr
        assert translate("train.comp_index_fixed", lang) in json.loads(proc.stdout)["notes"]
    del doc["compress"]["index"]  # no indexer: no sentence of it
    path.write_text(json.dumps(doc), encoding="utf-8")
    proc = in_process("train", str(path), "--steps", "2", "--format", "json")
    assert translate("train.comp_index_fixed", "en") not in json.loads(proc.stdout)["notes"]


def test_freeze_takes_the_names_learned_shows_and_they_stay():
    doc = doc_of(13, m=2)
    for freeze in ("W_C,B,w_E", "wkv bias cw"):
        training, got, start = _trains(doc, steps=3, freeze=freeze, frozen=("wc", "cb", "cw"))
        assert training.frozen == ("wc", "cb", "cw")
        for name in ("wc", "cb", "cw"):
            assert np.array_equal(got[name], start[name]), name
        assert not np.array_equal(got["wcg"], start["wcg"])
