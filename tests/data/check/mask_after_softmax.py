"""Attention with one mistake put in: mask_after_softmax (q, k, v given; numpy)."""

import numpy as np


def attention(q, k, v, mask=None, causal=False, scale=None):
    n, m = q.shape[0], k.shape[0]
    factor = 1 / np.sqrt(q.shape[1]) if scale is None else scale
    s = (q @ k.T) * factor
    allowed = None
    if mask is not None or causal:
        allowed = np.ones((n, m), dtype=bool) if mask is None else mask.astype(bool)
        if causal:
            allowed = allowed & np.tril(np.ones((n, m), dtype=bool))
    top = s.max(axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(s - top)
    total = e.sum(axis=1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    if allowed is not None:
        w = w * allowed
    return w @ v
