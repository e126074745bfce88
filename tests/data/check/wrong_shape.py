"""Outputs of a shape no named mistake gives: bad input (exit 2), not a verdict."""

import numpy as np


def _weights(q, k):
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def attention(q, k, v):
    return _weights(q, k)  # the weights (n×m) where the output (n×d_v) belongs


def attention_stages(q, k, v):
    w = _weights(q, k)
    return {"weights": w, "output": (w @ v).T}  # the output turned: d_v×n
