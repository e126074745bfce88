"""Right: multi-head attention written with loops over heads, queries and keys (numpy arrays
read cell by cell), grouped-query heads and a causal flag."""

import math

import numpy as np


def attention(x, wq, wk, wv, wo=None, num_heads=1, kv_heads=None, causal=False):
    kv_heads = kv_heads or num_heads
    q, k, v = x @ wq, x @ wk, x @ wv
    n = len(x)
    d_k = q.shape[1] // num_heads
    d_v = v.shape[1] // kv_heads
    out = np.zeros((n, num_heads * d_v))
    for h in range(num_heads):
        g = h * kv_heads // num_heads
        for i in range(n):
            seen = [j for j in range(n) if not causal or j <= i]
            scores = {
                j: sum(q[i, h * d_k + c] * k[j, g * d_k + c] for c in range(d_k)) / math.sqrt(d_k)
                for j in seen
            }
            top = max(scores.values())
            e = {j: math.exp(s - top) for j, s in scores.items()}
            total = sum(e.values())
            for c in range(d_v):
                out[i, h * d_v + c] = sum(e[j] / total * v[j, g * d_v + c] for j in seen)
    return out if wo is None else out @ wo
