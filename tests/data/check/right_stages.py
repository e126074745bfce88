"""Right: returns its stages as a dict by stage id (scores, weights, output)."""

import numpy as np


def attention(q, k, v, causal=False):
    scores = q @ k.T
    scaled = scores / np.sqrt(q.shape[1])
    if causal:
        scaled = np.where(np.tril(np.ones(scaled.shape, dtype=bool)), scaled, -np.inf)
    e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return {"scores": scores, "weights": weights, "output": weights @ v}
