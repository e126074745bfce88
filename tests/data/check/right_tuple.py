"""Right: returns (output, weights), written with loops over the rows."""

import math


def attention(q, k, v):
    out, weights = [], []
    for qi in q:
        scores = [sum(a * b for a, b in zip(qi, kj, strict=True)) / math.sqrt(len(qi)) for kj in k]
        top = max(scores)
        e = [math.exp(s - top) for s in scores]
        w = [x / sum(e) for x in e]
        weights.append(w)
        out.append([sum(w[j] * v[j][c] for j in range(len(v))) for c in range(len(v[0]))])
    return out, weights
