"""mla's one key/value head (`"shared_kv": true`, DeepSeek-V4): the query latent as DeepSeek-V3's,
and one key/value vector per token, C_KV = RMSNorm(X·W_DKV) ⊙ w with W_DKV's last d_R columns
(the rotary ones) taken first, that is both the key and the value of every head. With q_norm
(q_b_norm), rope on the d_R columns and vo_rope it is a DeepSeek-V4 sliding layer
(tests/test_extract_dsv4.py holds it against transformers). Checked here against loops written
from the weights, in the torch script, and as bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import RenderOptions, render
from tests.conftest import one_message, run_qkvcalc

RNG = np.random.default_rng(4)
N, D_MODEL, H, R_Q, NOPE, ROPE = 5, 6, 2, 3, 2, 2
D = NOPE + ROPE
EPS = 1e-6
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "heads": H,
    "mla": {
        "wq_a": RNG.standard_normal((D_MODEL, R_Q)).tolist(),
        "q_a_norm": (1 + 0.2 * RNG.standard_normal(R_Q)).tolist(),
        "wq_b": RNG.standard_normal((R_Q, H * D)).tolist(),
        "wkv_a": RNG.standard_normal((D_MODEL, D)).tolist(),
        "kv_a_norm": (1 + 0.2 * RNG.standard_normal(D)).tolist(),
        "rope_dims": ROPE,
        "shared_kv": True,
    },
    "q_norm": [1.0] * D,
    "rope": {"theta": 30, "style": "pairs", "dims": ROPE},
    "vo_rope": True,
    "sinks": [0.2, -0.1],
    "mask": "causal",
    "window": 3,
    "wo": RNG.standard_normal((H * D, 3)).tolist(),
}


def rms(x, w=None):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)
    return y if w is None else y * w


def turn_last(x, pos):
    """DeepSeek-V4's turn: the LAST ROPE columns of each row, pairs (2i, 2i + 1)."""
    out = x.copy()
    for i in range(x.shape[0]):
        for k in range(ROPE // 2):
            phi = pos[i] * 30 ** (-2 * k / ROPE)
            a, b = x[i, NOPE + 2 * k], x[i, NOPE + 2 * k + 1]
            out[i, NOPE + 2 * k] = a * math.cos(phi) - b * math.sin(phi)
            out[i, NOPE + 2 * k + 1] = b * math.cos(phi) + a * math.sin(phi)
    return out


def naive(doc):
    """DeepSeek-V4's layout, as its module computes it: each head [nope | rope], the last
    ROPE columns turned, V = the turned KV, the output's rope columns turned back by −i."""
    m = {k: np.asarray(v, dtype=float) for k, v in doc["mla"].items()}
    x, wo = np.asarray(doc["x"]), np.asarray(doc["wo"])
    pos = np.arange(N, dtype=float)
    c_q = rms(x @ m["wq_a"], m["q_a_norm"])
    kv = turn_last(rms(x @ m["wkv_a"], m["kv_a_norm"]), pos)
    heads = []
    for h in range(H):
        q = turn_last(rms(c_q @ m["wq_b"][:, h * D : (h + 1) * D]), pos)
        a = np.zeros((N, N))
        for i in range(N):
            seen = [j for j in range(N) if i - doc["window"] < j <= i]
            s = np.array([q[i] @ kv[j] / math.sqrt(D) for j in seen])
            top = max(s.max(), doc["sinks"][h])
            e = np.exp(s - top)
            a[i, seen] = e / (e.sum() + math.exp(doc["sinks"][h] - top))
        heads.append(turn_last(a @ kv, -pos))
    # qkvcalc's W_O rows are in its column order (each head's rotary columns first)
    joined = np.hstack([np.hstack([o[:, NOPE:], o[:, :NOPE]]) for o in heads])
    return joined @ wo


def test_the_one_key_value_head_equals_loops_written_here():
    trace = qkvcalc.explain(**DOC)
    assert np.allclose(trace.output, naive(DOC), atol=1e-12)
    kv = trace.stage("c_kv_norm").value
    for h in (1, 2):
        assert np.array_equal(trace.stage("k", h).value, kv)
        assert np.array_equal(trace.stage("v", h).value, kv)
        assert np.array_equal(trace.stage("v_rot", h).value, trace.stage("k_rot", h).value)
    # c_KV's columns: W_DKV's last d_R first
    wkv = np.asarray(DOC["mla"]["wkv_a"])
    x = np.asarray(DOC["x"])
    assert np.allclose(trace.stage("c_kv").value, x @ np.hstack([wkv[:, NOPE:], wkv[:, :NOPE]]))


def test_every_format_says_k_equals_v_in_both_languages():
    trace = qkvcalc.explain(**DOC)
    for lang, said in (("en", "Value: the same vector as the key"), ("ko", "Key와 같은 벡터")):
        text = render(trace, "table", RenderOptions(width=100, color=False, lang=lang))
        assert said in text
    echo = json.loads(render(trace, "json", RenderOptions()))["input"]["mla"]
    assert echo["shared_kv"] is True and "wkv_b" not in echo


def test_the_torch_script_computes_the_layer(tmp_path):
    pytest.importorskip("torch")
    from tests.inprocess import run_script

    text = render(qkvcalc.explain(**DOC), "torch", RenderOptions(width=100))
    assert "K = C_KV.repeat(1, H_)" in text
    path = tmp_path / "check.py"
    path.write_text(text, encoding="utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]


@pytest.mark.parametrize(
    ("change", "fragments", "extra"),
    [
        ({"shared_kv": 1}, ("mla.shared_kv must be true",), ()),
        ({"wkv_b": [[1.0] * 8] * 4}, ("mla.wkv_b cannot be given with mla.shared_kv",), ()),
        ({"wkv_a": [[1.0] * 3] * D_MODEL}, ("mla.wkv_a has 3 columns", "= 4 columns"), ()),
        ({"kv_a_norm": [1.0] * 3}, ("mla.kv_a_norm has 3 numbers",), ()),
    ],
)
def test_bad_input_is_one_message(tmp_path, change, fragments, extra):
    doc = DOC | {"mla": DOC["mla"] | change}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path), *extra), *fragments)


def test_k_norm_is_still_refused_beside_mla(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(DOC | {"k_norm": [1.0] * D}), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), "k_norm cannot be given with mla")


# ---- --decode: the one key/value head cached once ------------------------------------------


def _decoded_doc(rope: bool, latent: bool, vo_rope: bool = False) -> dict:
    """DOC with or without rope, vo_rope (the values turned, the output turned back) and the
    query latent."""
    doc = {k: v for k, v in DOC.items() if k != "vo_rope" or (vo_rope and rope)}
    if not rope:
        doc.pop("rope")
    if not latent:
        m = dict(doc["mla"])
        for key in ("wq_a", "q_a_norm", "wq_b"):
            m.pop(key)
        m["wq"] = RNG.standard_normal((D_MODEL, H * D)).tolist()
        doc["mla"] = m
    return doc


@pytest.mark.parametrize("prefill", [0, 1, 3])
@pytest.mark.parametrize("rope", [True, False], ids=["rope", "no-rope"])
@pytest.mark.parametrize("latent", [True, False], ids=["query-latent", "wq"])
def test_each_decode_steps_rows_equal_the_whole_run(prefill, rope, latent):
    doc = _decoded_doc(rope, latent)
    _steps_equal(doc, prefill, rope, False)


@pytest.mark.parametrize("prefill", [0, 2])
@pytest.mark.parametrize("latent", [True, False], ids=["query-latent", "wq"])
def test_with_vo_rope_the_cache_holds_the_head_turned_and_each_step_equals(prefill, latent):
    """DeepSeek-V4's layer: C_KV cached once with its rotary columns turned (K = V = the
    cache, A·V_cache is A·V_rot), each head's stacked output turned back as in the whole run."""
    doc = _decoded_doc(True, latent, vo_rope=True)
    trace = _steps_equal(doc, prefill, True, True)
    whole = qkvcalc.explain(**doc)
    last = trace.stage("c_kv_cache", step=N - prefill)
    assert np.allclose(last.value, whole.stage("k_rot", 1).value, atol=1e-14)
    for h in (1, 2):
        assert np.allclose(trace.stage("out_back", h).value, whole.stage("out_back", h).value,
                           atol=1e-12)  # fmt: skip


def _steps_equal(doc: dict, prefill: int, rope: bool, turned_v: bool):
    """Each step's output rows of each head equal the whole run's; the one cache, no head's."""
    whole = qkvcalc.explain(**doc)
    trace = qkvcalc.explain(**doc, decode=prefill)
    assert np.max(np.abs(trace.output - whole.output)) < 1e-12
    first = 0 if prefill else 1
    for step in range(first, N - prefill + 1):
        take = list(range(prefill)) if step == 0 else [prefill + step - 1]
        for h in (1, 2):
            rows = trace.stage("output", h, step=step).value
            assert np.max(np.abs(rows - whole.stage("output", h).value[take])) < 1e-12
            # every head reads the one cache: K and V made from it, no cache of its own
            assert trace.find("k_cache", h, step=step) is None
            assert trace.find("v_cache", h, step=step) is None
        cache = trace.stage("c_kv_cache", step=step)
        assert cache.value.shape == (take[-1] + 1, D)
        if turned_v:  # the cache is C_KV turned: every head's K and V
            want = whole.stage("k_rot", 1).value[: take[-1] + 1]
            assert np.allclose(cache.value, want, atol=1e-14)
            assert trace.find("k_rope_cache", step=step) is None
            for h in (1, 2):
                assert np.array_equal(trace.stage("v", h, step=step).value, cache.value)
            continue
        assert np.allclose(cache.value, whole.stage("c_kv_norm").value[: take[-1] + 1], atol=1e-14)
        turned = trace.find("k_rope_cache", step=step)
        assert (turned is not None) == rope
        if rope:  # C_KV's rotary columns turned once at their own position: the keys' first
            want = whole.stage("k_rot", 1).value[: take[-1] + 1, :ROPE]
            assert turned.value.shape == (take[-1] + 1, ROPE)
            assert np.allclose(turned.value, want, atol=1e-14)
            for h in (1, 2):
                k = trace.stage("k", h, step=step).value
                assert np.allclose(k, whole.stage("k_rot", h).value[: take[-1] + 1], atol=1e-14)
                v = trace.stage("v", h, step=step).value
                assert np.allclose(v, whole.stage("v", h).value[: take[-1] + 1], atol=1e-14)
    return trace


@pytest.mark.parametrize("kind", ["rope", "no-rope", "vo_rope"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_cache_says_what_it_costs(kind, lang):
    doc = _decoded_doc(kind != "no-rope", True, vo_rope=kind == "vo_rope")
    trace = qkvcalc.explain(**doc, decode=2)
    text = " ".join(render(trace, "txt", RenderOptions(width=100, lang=lang)).split())
    rope = kind == "rope"  # the turned columns cached beside C_KV
    per_token = D + (ROPE if rope else 0)
    full = H * (D + D)
    if lang == "en":
        said = (
            f"per token d_k + d_R = {D} + {ROPE} = {per_token} numbers"
            if rope
            else (f"per token d_k = {per_token} numbers")
        )
        assert said in text
        assert f"{per_token * N} for {N} tokens" in text
        assert f"= {full} per token ({full * N})" in text
        turned = "with vo_rope the values take them turned, as the keys do"
        assert (turned in text) == (kind == "vo_rope")
    else:
        assert f"{per_token}개의 수" in text and f"{full}개 ({full * N}개)" in text
    assert "C_KV_cache" in text
