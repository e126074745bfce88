"""Compressed keys (`compress`, DeepSeek-V4's compressed attention): entries pooled from X, one
per m tokens, appended to every head's keys and values. Checked against tests/naive_dsv4.py's
numpy record of what DeepSeek-V4's layers compute (its pool, norm, turn, visibility rule and
sink softmax, held against transformers by tests/test_extract_dsv4.py), on random problems in
DeepSeek-V4's own column layout (the rotary columns last), which the problem takes in qkvcalc's
order (rotary first) as extract gives it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import qkvcalc
from tests.conftest import one_message, run_qkvcalc
from tests.naive_dsv4 import plain, pool, rms, softmax_sink, turn, visible

EPS = 1e-6
MISTAKE_IDS = {"comp_bias_missing", "comp_softmax_axis"}


def layout(nope: int, rope: int, halves: int = 1) -> np.ndarray:
    """DeepSeek-V4's columns (rotary last) in qkvcalc's order (rotary first), per half."""
    d = nope + rope
    one = np.r_[nope:d, 0:nope]
    return np.concatenate([one + k * d for k in range(halves)])


def problem(seed: int, n: int = 9, m: int = 2, overlap: bool = False, heads: int = 2,
            nope: int = 2, rope: int = 2, window: int = 3) -> tuple[dict, dict]:  # fmt: skip
    """A random layer: the document qkvcalc reads, and its weights in DeepSeek-V4's layout."""
    rng = np.random.default_rng(seed)
    d_model, r_q, d = 6, 3, nope + rope
    cols = 2 * d if overlap else d
    w = {
        "x": rng.standard_normal((n, d_model)),
        "wq_a": rng.standard_normal((d_model, r_q)),
        "q_a_norm": 1 + 0.2 * rng.standard_normal(r_q),
        "wq_b": rng.standard_normal((r_q, heads * d)),
        "wkv": rng.standard_normal((d_model, d)),
        "kv_norm": 1 + 0.2 * rng.standard_normal(d),
        "sinks": 0.3 * rng.standard_normal(heads),
        "wo": rng.standard_normal((heads * d, 3)),
        "c_wkv": rng.standard_normal((d_model, cols)),
        "c_wgate": rng.standard_normal((d_model, cols)),
        "c_bias": rng.standard_normal((m, cols)),
        "c_norm": 1 + 0.2 * rng.standard_normal(d),
    }
    order, halves = layout(nope, rope), layout(nope, rope, 2 if overlap else 1)
    heads_order = np.concatenate([order + h * d for h in range(heads)])
    doc = {
        "x": w["x"].tolist(),
        "heads": heads,
        "mla": {
            "wq_a": w["wq_a"].tolist(),
            "q_a_norm": w["q_a_norm"].tolist(),
            "wq_b": w["wq_b"].tolist(),
            "wkv_a": w["wkv"].tolist(),
            "kv_a_norm": w["kv_norm"].tolist(),
            "rope_dims": rope,
            "eps": EPS,
            "shared_kv": True,
        },
        "q_norm": [1.0] * d,
        "norm_eps": EPS,
        "rope": {"theta": 30, "style": "pairs", "dims": rope},
        "vo_rope": True,
        "sinks": w["sinks"].tolist(),
        "mask": "causal",
        "window": window,
        "compress": {
            "m": m,
            "wkv": w["c_wkv"][:, halves].tolist(),
            "wgate": w["c_wgate"][:, halves].tolist(),
            "bias": w["c_bias"][:, halves].tolist(),
            "norm": w["c_norm"][order].tolist(),
            "eps": EPS,
            "overlap": overlap,
        },
        "wo": w["wo"][heads_order].tolist(),
    }
    w.update(heads=heads, d=d, rope=rope, m=m, overlap=overlap, window=window)
    return doc, w


def naive(w: dict, keep: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """The layer's output and each head's weights over [tokens, entries], tests/naive_dsv4.py's
    way (DeepSeek-V4's layout): every visible entry a key and a value (`keep`: those the
    indexer keeps of them)."""
    x, d, rope, m, heads = w["x"], w["d"], w["rope"], w["m"], w["heads"]
    n = x.shape[0]
    inv = plain(30.0, rope)
    pos = np.arange(n, dtype=float)
    c_q = rms(x @ w["wq_a"], EPS, w["q_a_norm"])
    kv = turn(rms(x @ w["wkv"], EPS, w["kv_norm"]), pos, inv, rope)
    raw = pool(x @ w["c_wkv"], x @ w["c_wgate"], w["c_bias"], m, w["overlap"])
    entries = turn(rms(raw, EPS, w["c_norm"]), np.arange(raw.shape[0]) * float(m), inv, rope)
    j, i = np.arange(n)[None, :], np.arange(n)[:, None]
    seen = visible(n, raw.shape[0], m) if keep is None else visible(n, raw.shape[0], m) & keep
    allowed = np.hstack([(j <= i) & (j > i - w["window"]), seen])
    keys = np.concatenate([kv, entries])
    outs, maps = [], []
    for h in range(heads):
        q = turn(rms(c_q @ w["wq_b"][:, h * d : (h + 1) * d], EPS), pos, inv, rope)
        s = np.where(allowed, q @ keys.T * d**-0.5, -np.inf)
        a = softmax_sink(s, w["sinks"][h])
        maps.append(a)
        outs.append(turn(a @ keys, -pos, inv, rope))
    return np.concatenate(outs, axis=1) @ w["wo"], maps


def _run(doc: dict):
    return qkvcalc.explain(**doc)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("m", [1, 2, 4])
def test_the_pooled_entries_equal_the_written_out_layer(seed, m):
    doc, w = problem(seed, m=m, n=9 + seed % 3)
    trace = _run(doc)
    want, maps = naive(w)
    assert np.max(np.abs(trace.output - want)) < 1e-12 * max(1.0, np.abs(want).max())
    for h in range(w["heads"]):
        got = trace.stage("weights", h + 1).value
        assert got.shape == maps[h].shape
        assert np.max(np.abs(got - maps[h])) < 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_the_overlapping_pool_equals_the_written_out_layer(seed):
    doc, w = problem(seed, m=2, overlap=True, n=10)
    want, _ = naive(w)
    assert np.max(np.abs(_run(doc).output - want)) < 1e-12 * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("kind", ["heavy", "overlap", "sparse"])
def test_the_torch_script_computes_the_layer(tmp_path, kind):
    """The script's own path (the pool written with a view of windows, as DeepSeek-V4's
    compressor does; the indexer's scores and top-k) and its plan in torch both equal
    qkvcalc's."""
    pytest.importorskip("torch")
    from qkvcalc.render import RenderOptions, render
    from tests.inprocess import run_script

    if kind == "sparse":
        doc, _ = sparse(3, m=2, top_k=1)
    else:
        doc, _ = problem(3, m=2, overlap=kind == "overlap", n=7)
    text = render(_run(doc), "torch", RenderOptions(width=100))
    assert "gate.softmax(dim=1)" in text
    assert ("torch.sort(-index" in text) == (kind == "sparse")
    path = tmp_path / "check.py"
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "OK: PyTorch agrees with qkvcalc" in result["stdout"]


def test_the_pages_say_the_entries_in_both_languages():
    doc, _ = problem(2, m=3, n=7)
    trace = _run(doc)
    from qkvcalc.render import RenderOptions, render

    en = render(trace, "txt", RenderOptions(width=100))
    ko = render(trace, "txt", RenderOptions(width=100, lang="ko"))
    assert "Compressed entries: each token's share" in en and "entries: ⌊7/3⌋ = 2" in en
    assert "압축 항목: 토큰마다의 몫" in ko and "항목 수: ⌊7/3⌋ = 2" in ko
    scores = trace.stage("scores", 1)
    assert scores.cols[-2:] == ("C1", "C2") and scores.value.shape == (7, 9)


@pytest.mark.parametrize(
    ("change", "fragments", "extra"),
    [
        ({"m": 0}, ("compress.m",), ()),
        ({"m": 20}, ("compress.m = 20 is longer than the sequence (n = 9)",), ()),
        ({"bias": [[0.0] * 4]}, ("compress.bias has shape 1×4; it must be 2×4",), ()),
        ({"norm": [1.0] * 3}, ("compress.norm has shape 3; it must be 4",), ()),
        ({"wkv": [[1.0] * 3] * 6}, ("compress.wkv has shape 6×3; it must be 6×4",), ()),
        ({"overlap": 1}, ("compress.overlap must be true",), ()),
        ({"size": 1}, ('compress has no key "size"',), ()),
        ({}, ("not computed step by step",), ("--decode", "2")),
    ],
)
def test_bad_input_is_one_message(tmp_path, change, fragments, extra):
    doc, _ = problem(0)
    doc["compress"] = doc["compress"] | change
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path), *extra), *fragments)


def test_the_quiz_names_the_bias_left_out_and_the_softmax_along_the_row():
    """The shares worked out here with loops: without B, and over a row's channels."""
    from qkvcalc.quiz.mistakes import recognise

    doc, w = problem(5, m=3, n=7)
    trace = _run(doc)
    order = layout(2, 2)
    gate = w["x"] @ w["c_wgate"][:, order]
    bias = w["c_bias"][:, order]
    no_bias, along = np.zeros((6, 4)), np.zeros((6, 4))
    for t in range(6):
        window = range(3 * (t // 3), 3 * (t // 3) + 3)
        for c in range(4):
            no_bias[t, c] = np.exp(gate[t, c]) / sum(np.exp(gate[s, c]) for s in window)
            z = gate[t] + bias[t % 3]
            along[t, c] = np.exp(z[c]) / np.exp(z).sum()
    for wrong, said in ((no_bias, "comp_bias_missing"), (along, "comp_softmax_axis")):
        found = recognise(trace, "comp_weights", np.round(wrong, 4), {}, 4)
        assert found is not None and found.id == said
        assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    truth = trace.stage("comp_weights").value
    assert recognise(trace, "comp_weights", np.round(truth, 4), {}, 4) is None


def sparse(seed: int, n: int = 11, m: int = 2, top_k: int = 2) -> tuple[dict, dict]:
    """A compressed sparse layer: the overlapping pool and the indexer's top-k of the entries
    (index heads 2 of D = 4; its weights in DeepSeek-V4's layout in `w`, qkvcalc's in the
    document)."""
    doc, w = problem(seed, m=m, overlap=True, n=n)
    rng = np.random.default_rng(100 + seed)
    heads, dim, rope = 2, 4, w["rope"]
    d_model, r_q = w["x"].shape[1], w["wq_a"].shape[1]
    ix = {
        "wkv": rng.standard_normal((d_model, 2 * dim)),
        "wgate": rng.standard_normal((d_model, 2 * dim)),
        "bias": rng.standard_normal((m, 2 * dim)),
        "norm": 1 + 0.2 * rng.standard_normal(dim),
        "wq": rng.standard_normal((r_q, heads * dim)),
        "weights": rng.standard_normal((d_model, heads)),
    }
    one = layout(dim - rope, rope)
    both = layout(dim - rope, rope, 2)
    per_head = np.concatenate([one + h * dim for h in range(heads)])
    doc["compress"]["index"] = {
        "wkv": ix["wkv"][:, both].tolist(),
        "wgate": ix["wgate"][:, both].tolist(),
        "bias": ix["bias"][:, both].tolist(),
        "norm": ix["norm"][one].tolist(),
        "wq": ix["wq"][:, per_head].tolist(),
        "weights": ix["weights"].tolist(),
        "heads": heads,
        "top_k": top_k,
    }
    w.update(ix=ix, index_heads=heads, index_dim=dim, top_k=top_k)
    return doc, w


def naive_chosen(w: dict) -> np.ndarray:
    """tests/naive_dsv4.py's `chosen`, handed the indexer's weights as the module holds them."""
    from types import SimpleNamespace as NS

    torch = pytest.importorskip("torch")
    from tests.naive_dsv4 import chosen

    def lin(a):  # [in, out] -> nn.Linear's weight [out, in]
        return NS(weight=torch.tensor(np.asarray(a).T.copy()))

    ix = w["ix"]
    module = NS(
        kv_proj=lin(ix["wkv"]),
        gate_proj=lin(ix["wgate"]),
        position_bias=torch.tensor(ix["bias"]),
        kv_norm=NS(weight=torch.tensor(ix["norm"])),
        q_b_proj=lin(ix["wq"]),
        scorer=NS(weights_proj=lin(ix["weights"])),
    )
    config = NS(
        compress_rates={"compressed_sparse_attention": w["m"]},
        qk_rope_head_dim=w["rope"],
        rms_norm_eps=EPS,
        index_n_heads=w["index_heads"],
        index_head_dim=w["index_dim"],
        index_topk=w["top_k"],
    )
    c_q = rms(w["x"] @ w["wq_a"], EPS, w["q_a_norm"])
    return chosen(module, w["x"], c_q, config, plain(30.0, w["rope"]))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("m", "top_k"), [(2, 2), (2, 1), (3, 2)])
def test_the_indexers_top_k_of_the_entries_equals_the_written_out_layer(seed, m, top_k):
    doc, w = sparse(seed, m=m, top_k=top_k)
    keep = naive_chosen(w)
    trace = _run(doc)
    assert np.array_equal(trace.stage("idx_topk").value > 0, keep)
    want, maps = naive(w, keep)
    assert np.max(np.abs(trace.output - want)) < 1e-12 * max(1.0, np.abs(want).max())
    for h in range(w["heads"]):
        assert np.max(np.abs(trace.stage("weights", h + 1).value - maps[h])) < 1e-12
    # the choice matters: every visible entry kept is another layer
    all_seen, _ = naive(w)
    assert np.max(np.abs(all_seen - want)) > 1e-6


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize(("n", "m"), [(7, 2), (9, 3), (8, 4)])
def test_the_pools_backward_equals_autograd(overlap, n, m):
    """The pool's own backward (qkvcalc/ops/compress.py: pool_weights_back, pool_sum_back, the
    ops' `backward`) against PyTorch's autograd through DeepSeek-V4's compressor as its module
    writes it (a view of windows, softmax over dim 1), to 1e-10: ∂L/∂C, ∂L/∂Z, ∂L/∂B."""
    torch = pytest.importorskip("torch")
    from qkvcalc.ops.compress import OPS, pool_sum_back, pool_weights, pool_weights_back

    rng = np.random.default_rng(n * 10 + m + overlap)
    d = 3
    cols = 2 * d if overlap else d
    kv, gate = rng.standard_normal((n, cols)), rng.standard_normal((n, cols))
    bias, upstream = rng.standard_normal((m, cols)), rng.standard_normal((n // m, d))
    t_kv, t_gate, t_bias = (torch.tensor(a, requires_grad=True) for a in (kv, gate, bias))
    count = n // m
    v = t_kv[: count * m].view(count, m, -1)
    z = t_gate[: count * m].view(count, m, -1) + t_bias
    if overlap:
        first = torch.zeros(1, m, d, dtype=torch.float64)
        v = torch.cat([torch.cat([first, v[:-1, :, :d]]), v[..., d:]], dim=1)
        z = torch.cat([torch.cat([first - torch.inf, z[:-1, :, :d]]), z[..., d:]], dim=1)
    entries = (v * z.softmax(dim=1)).sum(dim=1)
    (entries * torch.tensor(upstream)).sum().backward()
    shares = pool_weights(gate, bias, m, overlap)
    d_shares, d_kv = pool_sum_back(shares, kv, m, overlap, upstream)
    d_gate, d_bias = pool_weights_back(gate, bias, m, overlap, shares, d_shares)
    for ours, theirs in ((d_kv, t_kv), (d_gate, t_gate), (d_bias, t_bias)):
        assert np.max(np.abs(ours - theirs.grad.numpy())) < 1e-10
    # the ops hand back the same gradients
    softmax_op, sum_op = OPS[:2]
    params = {"bias": bias, "m": m, "overlap": overlap}
    assert softmax_op.backward is not None and sum_op.backward is not None
    got = sum_op.backward([shares, kv], params, entries.detach().numpy(), upstream)
    assert np.array_equal(got[0], d_shares) and np.array_equal(got[1], d_kv)
    (dz,) = softmax_op.backward([gate], params, shares, d_shares)
    assert np.array_equal(dz, d_gate)
    assert np.max(np.abs(d_gate)) > 1e-3  # a gradient that is there
