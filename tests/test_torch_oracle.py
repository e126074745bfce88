"""PyTorch as the oracle: qkvcalc's numbers against F.scaled_dot_product_attention and
nn.MultiheadAttention, in float64, on generated problems.

The problems are drawn by hypothesis (derandomized, so CI sees the same ones every run): sizes
1–8, one to eight heads, grouped-query K/V heads, cross-attention, Q/K/V given directly, biases,
W_O (with b_O), both weight layouts, every mask kind (none, causal, a 0/1 matrix, key_padding
and their combinations), a custom scale, and rows whose every key is masked.

PyTorch is computed from the *input document*, not from qkvcalc's Problem: torch-layout weights
go through F.linear (x·Wᵀ + b) as PyTorch itself would use them, row-layout weights through
x @ W + b, so a transposition bug in qkvcalc cannot cancel out in the comparison.

What PyTorch does with a query row whose every key is masked (torch 2.13, checked below):
- F.scaled_dot_product_attention returns 0 for that row (boolean or additive −∞ mask alike).
- nn.MultiheadAttention with need_weights=True (the default) returns NaN weights and a NaN
  output row: it runs its own softmax, and softmax of a row of −∞ is 0/0.
- nn.MultiheadAttention with need_weights=False goes through SDPA: in training mode the row is
  0 before out_proj (so the output row is out_proj's bias); the eval/no_grad "fast path"
  (the fused native kernel) returns NaN again.
qkvcalc follows DESIGN.md: weights 0 and output 0 (SDPA's answer), plus a warning.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run

torch = pytest.importorskip("torch", reason="PyTorch is the oracle; pip install torch==2.13.0")
F = torch.nn.functional
# Tiny tensors: one thread computes them as fast, and on two busy cores (pytest -n 2) torch's own
# thread pool made each call about 5x slower. The same numbers either way.
torch.set_num_threads(1)

TOL = 1e-9
ORACLE = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---- generated problems ------------------------------------------------------------------


def _values(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> list[Any]:
    """Small integers (ties, exact sums) or real numbers, as a JSON-like nested list."""
    if kind == "int":
        return rng.integers(-3, 4, size=shape).astype(float).tolist()  # type: ignore[no-any-return]
    return (rng.standard_normal(shape) * 1.5).tolist()  # type: ignore[no-any-return]


@st.composite
def problems(draw: st.DrawFn, *, mha: bool = False, dead_rows: bool = False) -> dict[str, Any]:
    """An input document. mha=True: only problems nn.MultiheadAttention can represent
    (projected, G = H, H·d_k = H·d_v = d_model, W_O square or absent, default scale)."""
    heads = draw(st.sampled_from([1, 1, 2, 2, 3, 4, 8]))
    kv_heads = heads if mha else draw(st.sampled_from([g for g in (1, 2, 4, 8) if heads % g == 0]))
    d_k = draw(st.integers(1, 3 if heads <= 2 else 2 if heads <= 4 else 1))
    d_v = d_k if mha else draw(st.integers(1, 3 if heads <= 2 else 2 if heads <= 4 else 1))
    n = draw(st.integers(1, 8))
    cross = draw(st.booleans())
    m = draw(st.integers(1, 8)) if cross else n
    direct = False if mha else draw(st.sampled_from([False, False, False, True]))
    d_model = heads * d_k if mha else draw(st.integers(1, 8))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["int", "float"]))
    doc: dict[str, Any] = {"heads": heads}
    if kv_heads != heads:
        doc["kv_heads"] = kv_heads
    if direct:
        doc["q"] = _values(rng, kind, (n, heads * d_k))
        doc["k"] = _values(rng, kind, (m, kv_heads * d_k))
        doc["v"] = _values(rng, kind, (m, kv_heads * d_v))
    else:
        layout = draw(st.sampled_from(["rows", "torch"]))
        doc["layout"] = layout
        doc["x"] = _values(rng, kind, (n, d_model))
        if cross:
            doc["source"] = _values(rng, kind, (m, d_model))
        widths = {"wq": heads * d_k, "wk": kv_heads * d_k, "wv": kv_heads * d_v}
        for name, out in widths.items():
            w = _values(rng, kind, (d_model, out))
            doc[name] = np.array(w).T.tolist() if layout == "torch" else w
        for bias, name in (("bq", "wq"), ("bk", "wk"), ("bv", "wv")):
            if draw(st.booleans()):
                doc[bias] = _values(rng, kind, (widths[name],))
    if (heads > 1 or draw(st.booleans())) and draw(st.booleans()) and not direct:
        d_in = heads * d_v
        d_out = d_in if mha else draw(st.integers(1, 8))
        wo = _values(rng, kind, (d_in, d_out))
        doc["wo"] = np.array(wo).T.tolist() if doc.get("layout") == "torch" else wo
        if draw(st.booleans()):
            doc["bo"] = _values(rng, kind, (d_out,))
    elif direct and heads > 1 and draw(st.booleans()):
        doc["wo"] = _values(rng, kind, (heads * d_v, draw(st.integers(1, 8))))

    mask = draw(st.sampled_from(["none", "causal", "custom"]))
    if mask == "custom" or dead_rows:
        density = draw(st.sampled_from([0.3, 0.6, 0.9]))
        matrix = rng.random((n, m)) < density
        if dead_rows:
            matrix[draw(st.integers(0, n - 1))] = False
        doc["mask"] = matrix.astype(int).tolist()
    else:
        doc["mask"] = mask
    if draw(st.booleans()):
        doc["key_padding"] = (rng.random(m) < 0.75).astype(int).tolist()
    if not mha and draw(st.booleans()):
        doc["scale"] = draw(st.sampled_from([0.5, 1.0, 0.125, 2.0, "1/sqrt(3)"]))
    return doc


# ---- PyTorch from the document -------------------------------------------------------------


def t64(values: Any) -> Any:
    return torch.tensor(values, dtype=torch.float64)


def _project(doc: dict[str, Any], inputs: Any, w: str, b: str) -> Any:
    """X·W + b as PyTorch computes it: F.linear for torch-layout weights (out×in)."""
    bias = t64(doc[b]) if b in doc else None
    if doc.get("layout") == "torch":
        return F.linear(inputs, t64(doc[w]), bias)
    out = inputs @ t64(doc[w])
    return out if bias is None else out + bias


def _qkv(doc: dict[str, Any]) -> tuple[Any, Any, Any]:
    if "q" in doc:
        return t64(doc["q"]), t64(doc["k"]), t64(doc["v"])
    x = t64(doc["x"])
    s = t64(doc["source"]) if "source" in doc else x
    return _project(doc, x, "wq", "bq"), _project(doc, s, "wk", "bk"), _project(doc, s, "wv", "bv")


def _allowed(doc: dict[str, Any], n: int, m: int) -> Any:
    """[n, m] bool, True = may attend (SDPA's convention), or None when nothing is masked."""
    allowed = None
    if doc["mask"] == "causal":
        allowed = torch.ones(n, m, dtype=torch.bool).tril()  # top-left, as is_causal
    elif isinstance(doc["mask"], list):
        allowed = torch.tensor(doc["mask"], dtype=torch.bool)
    if "key_padding" in doc:
        keep = torch.tensor(doc["key_padding"], dtype=torch.bool).expand(n, m)
        allowed = keep if allowed is None else allowed & keep
    return allowed


def _scale(doc: dict[str, Any]) -> float | None:
    scale = doc.get("scale")
    if scale == "1/sqrt(3)":
        return 1 / math.sqrt(3)
    return scale


def sdpa_reference(doc: dict[str, Any]) -> dict[str, Any]:
    """Per-head weights [H, n, m], per-head outputs [H, n, d_v], final output, from SDPA."""
    heads = doc["heads"]
    kv_heads = doc.get("kv_heads", heads)
    q, k, v = _qkv(doc)
    n, m = q.shape[0], k.shape[0]
    # [n, H·d_k] -> [1, H, n, d_k]; K, V likewise with G heads
    qh = q.reshape(n, heads, -1).transpose(0, 1)[None]
    kh = k.reshape(m, kv_heads, -1).transpose(0, 1)[None]
    vh = v.reshape(m, kv_heads, -1).transpose(0, 1)[None]
    common: dict[str, Any] = {"scale": _scale(doc), "enable_gqa": kv_heads != heads}
    if doc["mask"] == "causal" and "key_padding" not in doc:
        common["is_causal"] = True  # SDPA builds the top-left triangle itself
    else:
        common["attn_mask"] = _allowed(doc, n, m)
    out = F.scaled_dot_product_attention(qh, kh, vh, **common)[0]  # [H, n, d_v]
    # SDPA does not return its weights; with V = I (m×m) its output *is* the weight matrix.
    eye = torch.eye(m, dtype=torch.float64).expand(1, kv_heads, m, m)
    weights = F.scaled_dot_product_attention(qh, kh, eye, **common)[0]  # [H, n, m]
    final = out.transpose(0, 1).reshape(n, -1)  # concat: [n, H·d_v]
    if "wo" in doc:
        final = _project(doc, final, "wo", "bo")
    return {"weights": weights.numpy(), "heads": out.numpy(), "output": final.numpy()}


def mha_reference(doc: dict[str, Any]) -> tuple[Any, Any]:
    """nn.MultiheadAttention with its weights set from the document: (output [n, E],
    weights [H, n, m]). Its in_proj and out_proj weights are out×in, and its boolean masks
    mean True = blocked, the opposite of SDPA's."""
    heads = doc["heads"]
    x = t64(doc["x"])
    s = t64(doc["source"]) if "source" in doc else x
    n, e = x.shape
    m = s.shape[0]
    mha = torch.nn.MultiheadAttention(
        e, heads, bias=True, batch_first=True, kdim=e, vdim=e, dtype=torch.float64
    )

    def weight(name: str) -> Any:  # as nn.Linear stores it: [out, in]
        w = t64(doc[name])
        return w if doc.get("layout") == "torch" else w.T

    def bias(name: str, size: int) -> Any:
        return t64(doc[name]) if name in doc else torch.zeros(size, dtype=torch.float64)

    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([weight("wq"), weight("wk"), weight("wv")]))
        mha.in_proj_bias.copy_(torch.cat([bias("bq", e), bias("bk", e), bias("bv", e)]))
        mha.out_proj.weight.copy_(weight("wo") if "wo" in doc else torch.eye(e))
        mha.out_proj.bias.copy_(bias("bo", e))
    allowed = _allowed(doc, n, m)
    out, weights = mha(
        x[None],
        s[None],
        s[None],
        attn_mask=None if allowed is None else ~allowed,  # True = blocked
        need_weights=True,
        average_attn_weights=False,
    )
    return out[0].detach().numpy(), weights[0].detach().numpy()


# ---- qkvcalc's side ---------------------------------------------------------------------


def qkvcalc_result(doc: dict[str, Any]) -> dict[str, Any]:
    trace = run(Problem.from_mapping(doc))
    p = trace.problem
    per = [h if p.multihead else None for h in range(1, p.heads + 1)]
    return {
        "trace": trace,
        "weights": np.stack([trace.stage("weights", h).value for h in per]),
        "heads": np.stack([trace.stage("output", h).value for h in per]),
        "output": trace.output,
    }


def dead_rows_of(doc: dict[str, Any], n: int, m: int) -> np.ndarray:
    allowed = _allowed(doc, n, m)
    if allowed is None:
        return np.zeros(n, dtype=bool)
    return ~allowed.numpy().any(axis=1)


# ---- the comparisons ----------------------------------------------------------------------


@settings(ORACLE, max_examples=700)
@given(problems())
def test_every_head_matches_sdpa(doc):
    ours = qkvcalc_result(doc)
    ref = sdpa_reference(doc)
    for part in ("weights", "heads", "output"):
        assert ours[part].shape == ref[part].shape, part
        np.testing.assert_allclose(ours[part], ref[part], rtol=TOL, atol=TOL, err_msg=part)


@settings(ORACLE, max_examples=300)
@given(problems(mha=True))
def test_multihead_attention_module_matches(doc):
    ours = qkvcalc_result(doc)
    out, weights = mha_reference(doc)
    dead = dead_rows_of(doc, *ours["weights"].shape[1:])
    live = ~dead
    np.testing.assert_allclose(ours["output"][live], out[live], rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours["weights"][:, live], weights[:, live], rtol=TOL, atol=TOL)
    # Fully masked rows: MHA's own softmax gives 0/0 = NaN; qkvcalc gives 0 (DESIGN.md).
    assert np.isnan(out[dead]).all() and np.isnan(weights[:, dead]).all()
    assert (ours["weights"][:, dead] == 0).all() and (ours["heads"][:, dead] == 0).all()


@settings(ORACLE, max_examples=150)
@given(problems(dead_rows=True))
def test_fully_masked_rows_are_zero_with_a_warning_as_sdpa(doc):
    ours = qkvcalc_result(doc)
    ref = sdpa_reference(doc)
    dead = dead_rows_of(doc, *ours["weights"].shape[1:])
    assert dead.any()  # the strategy masks a whole row
    assert (ref["heads"][:, dead] == 0).all()  # SDPA: output 0 for a row with no key
    assert (ours["weights"][:, dead] == 0).all() and (ours["heads"][:, dead] == 0).all()
    np.testing.assert_allclose(ours["heads"], ref["heads"], rtol=TOL, atol=TOL)
    np.testing.assert_allclose(ours["output"], ref["output"], rtol=TOL, atol=TOL)
    warnings = ours["trace"].warnings
    assert warnings and all(w.key.startswith("warn.fully_masked") for w in warnings)
    heads = doc["heads"]
    assert len(warnings) == (heads if heads > 1 or "wo" in doc else 1)  # one per head


# ---- what each PyTorch entry point does with a fully masked row ---------------------------


def _fully_masked_case() -> dict[str, Any]:
    """Two heads, three tokens, the first query may attend to no key."""
    rng = np.random.default_rng(7)
    return {
        "heads": 2,
        "x": rng.standard_normal((3, 4)).tolist(),
        "wq": rng.standard_normal((4, 4)).tolist(),
        "wk": rng.standard_normal((4, 4)).tolist(),
        "wv": rng.standard_normal((4, 4)).tolist(),
        "wo": rng.standard_normal((4, 4)).tolist(),
        "bo": [1.0, 2.0, 3.0, 4.0],
        "mask": [[0, 0, 0], [1, 1, 0], [1, 1, 1]],
    }


def test_sdpa_returns_zero_for_a_fully_masked_row_with_bool_or_additive_mask():
    q = k = v = torch.ones(1, 1, 2, 2, dtype=torch.float64)
    allowed = torch.tensor([[False, False], [True, True]])
    additive = torch.zeros(2, 2, dtype=torch.float64).masked_fill(~allowed, -math.inf)
    for mask in (allowed, additive):
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)[0, 0]
        assert out[0].tolist() == [0.0, 0.0]
        assert out[1].tolist() == [1.0, 1.0]


def test_multihead_attention_returns_nan_for_a_fully_masked_row():
    doc = _fully_masked_case()
    out, weights = mha_reference(doc)  # need_weights=True: MHA's own softmax
    assert np.isnan(out[0]).all() and np.isnan(weights[:, 0]).all()
    assert np.isfinite(out[1:]).all()
    ours = qkvcalc_result(doc)
    assert (ours["weights"][:, 0] == 0).all() and (ours["heads"][:, 0] == 0).all()
    assert ours["output"][0].tolist() == doc["bo"]  # 0·W_O + b_O
    np.testing.assert_allclose(ours["output"][1:], out[1:], rtol=TOL, atol=TOL)


def test_multihead_attention_without_weights_goes_through_sdpa_in_training_mode():
    doc = _fully_masked_case()
    e = 4
    mha = torch.nn.MultiheadAttention(e, 2, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.out_proj.bias.copy_(t64(doc["bo"]))
    x = t64(doc["x"])[None]
    blocked = ~torch.tensor(doc["mask"], dtype=torch.bool)
    out, weights = mha(x, x, x, attn_mask=blocked, need_weights=False)
    assert weights is None
    assert out[0, 0].tolist() == doc["bo"]  # the row is 0 before out_proj, as SDPA returns
    mha.eval()
    with torch.no_grad():  # the fused fast path: NaN again
        fast, _ = mha(x, x, x, attn_mask=blocked, need_weights=False)
    assert torch.isnan(fast[0, 0]).all()
