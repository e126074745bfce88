"""RoPE written with its pairs interleaved, (2i, 2i + 1) as GPT-J and Meta's first code do,
for a model whose checkpoint rotates half-split pairs (i, i + d/2, rotate_half): the stages of
one causal head, by stage id, for `qkvcalc check --stages`. A function gets no RoPE from
`qkvcalc check FILE.py:FUNCTION`, so this mistake is checked from the stages it writes."""

import numpy as np


def attention(x, wq, wk, wv, theta=10000.0):
    q, k, v = x @ wq, x @ wk, x @ wv
    n, d = q.shape

    def rope(m):
        out = m.copy()
        for pos in range(n):
            for i in range(d // 2):
                angle = pos * theta ** (-2 * i / d)
                a, b = m[pos, 2 * i], m[pos, 2 * i + 1]  # neighbours: the mistake
                out[pos, 2 * i] = a * np.cos(angle) - b * np.sin(angle)
                out[pos, 2 * i + 1] = b * np.cos(angle) + a * np.sin(angle)
        return out

    q_rot, k_rot = rope(q), rope(k)
    scores = q_rot @ k_rot.T
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), scores / np.sqrt(d), -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return {"q_rot": q_rot, "k_rot": k_rot, "scores": scores, "weights": w, "output": w @ v}
