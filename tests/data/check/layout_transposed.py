"""Attention with one mistake put in: layout_transposed (x and the weights; numpy)."""

import numpy as np


def softmax(s):
    top = s.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def attention(
    x,
    wq,
    wk,
    wv,
    wo=None,
    bq=None,
    bk=None,
    bv=None,
    bo=None,
    heads=1,
    kv_heads=None,
    mask=None,
    causal=False,
):
    kv_heads = kv_heads or heads

    def project(w, b):
        y = x @ w.T
        return y if b is None else y + b

    q, k, v = project(wq, bq), project(wk, bk), project(wv, bv)
    n = x.shape[0]
    d_k, d_v = q.shape[1] // heads, v.shape[1] // kv_heads
    allowed = np.ones((n, n), dtype=bool)
    if mask is not None:
        allowed &= mask.astype(bool)
    if causal:
        allowed &= np.tril(np.ones((n, n), dtype=bool))
    outs = []
    for h in range(heads):
        g = h // (heads // kv_heads)
        qh = q[:, h * d_k : (h + 1) * d_k]
        kh = k[:, g * d_k : (g + 1) * d_k]
        vh = v[:, g * d_v : (g + 1) * d_v]
        s = np.where(allowed, qh @ kh.T / np.sqrt(d_k), -np.inf)
        outs.append(softmax(s) @ vh)
    out = np.concatenate(outs, axis=1)
    if wo is not None:
        out = out @ wo.T
        if bo is not None:
            out = out + bo
    return out
