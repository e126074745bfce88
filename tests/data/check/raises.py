"""Right where it runs, but it does not handle masks yet: it raises on every masked problem."""

import numpy as np


def attention(q, k, v, mask=None):
    if mask is not None:
        raise NotImplementedError("masks are next week's homework")
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ v
