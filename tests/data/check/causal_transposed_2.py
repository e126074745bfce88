"""Attention with one mistake put in: causal_transposed (query, key, value; einsum)."""

import numpy as np


def sdpa(query, key, value, attn_mask=None, is_causal=False, scale=None):
    d_k = query.shape[-1]
    scale = scale if scale is not None else d_k**-0.5
    logits = np.einsum("id,jd->ij", query, key) * scale
    keep = np.ones(logits.shape, dtype=bool)
    if is_causal:
        keep = np.triu(keep)
    if attn_mask is not None:
        keep = keep & attn_mask
    masked = np.where(keep, logits, -np.inf)
    peak = np.max(masked, axis=-1, keepdims=True)
    peak[~np.isfinite(peak)] = 0.0
    p = np.exp(masked - peak)
    z = np.sum(p, axis=-1, keepdims=True)
    p = np.where(z > 0, p / np.where(z > 0, z, 1.0), 0.0)
    return np.einsum("ij,jd->id", p, value)
