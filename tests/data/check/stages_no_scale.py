"""Wrong: returns its stages as a dict, and leaves the scores unscaled (no_scale)."""

import numpy as np


def attention(q, k, v):
    scores = q @ k.T
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return {"scores": scores, "scaled": scores, "weights": weights, "output": weights @ v}
