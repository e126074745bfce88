"""An independent, deliberately naive attention: nested loops over Python floats, no numpy.

It shares nothing with qkvcalc.run.engine but the input format, so when the two agree on every
stage, both are likely right. Written from DESIGN.md's conventions: row vectors, Q = X·W_Q + b,
heads split columns in order, query head h reads K/V head ceil(h·G/H), 1 = may attend, causal
aligned top-left, a row with every key masked gets weights 0 and output 0.
"""

from __future__ import annotations

import math


def matmul(a, b):
    return [
        [sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def add_bias(a, bias):
    return a if bias is None else [[v + bias[j] for j, v in enumerate(row)] for row in a]


def columns(a, first, count):
    return [row[first : first + count] for row in a]


def transpose(a):
    return [list(col) for col in zip(*a, strict=True)]


def naive(doc: dict) -> dict:
    """Every stage of the problem `doc` (row layout, numbers as floats), keyed (id, head)."""
    x = doc["x"]
    src = doc.get("source", x)
    wq, wk, wv = doc["wq"], doc["wk"], doc["wv"]
    heads = doc.get("heads", 1)
    kv_heads = doc.get("kv_heads", heads)
    d_k = len(wq[0]) // heads
    d_v = len(wv[0]) // kv_heads
    n, m = len(x), len(src)
    scale = doc.get("scale", 1 / math.sqrt(d_k))
    mask = doc.get("mask", "none")
    padding = doc.get("key_padding")

    def allowed(i, j):
        ok = True
        if mask == "causal":
            ok = j <= i
        elif isinstance(mask, list):
            ok = bool(mask[i][j])
        if padding is not None:
            ok = ok and bool(padding[j])
        return ok

    any_mask = mask != "none" or padding is not None
    multi = heads > 1 or "wo" in doc
    out: dict = {}
    head_outputs = []
    for h in range(1, heads + 1):
        g = math.ceil(h * kv_heads / heads)
        key = h if multi else None
        bq, bk, bv = (doc.get(b) for b in ("bq", "bk", "bv"))
        q = add_bias(matmul(x, columns(wq, (h - 1) * d_k, d_k)), bq and bq[(h - 1) * d_k : h * d_k])
        k = add_bias(
            matmul(src, columns(wk, (g - 1) * d_k, d_k)), bk and bk[(g - 1) * d_k : g * d_k]
        )
        v = add_bias(
            matmul(src, columns(wv, (g - 1) * d_v, d_v)), bv and bv[(g - 1) * d_v : g * d_v]
        )
        scores = [[sum(q[i][t] * k[j][t] for t in range(d_k)) for j in range(m)] for i in range(n)]
        scaled = [[s * scale for s in row] for row in scores]
        masked = [
            [scaled[i][j] if allowed(i, j) else -math.inf for j in range(m)] for i in range(n)
        ]
        exps, weights = [], []
        for row in masked:
            live = [s for s in row if s != -math.inf]
            if not live:
                exps.append([0.0] * m)
                weights.append([0.0] * m)
                continue
            top = max(live)
            e = [math.exp(s - top) if s != -math.inf else 0.0 for s in row]
            total = sum(e)
            exps.append(e)
            weights.append([t / total for t in e])
        o = [[sum(weights[i][j] * v[j][c] for j in range(m)) for c in range(d_v)] for i in range(n)]
        out.update(
            {
                ("q", key): q,
                ("k", key): k,
                ("v", key): v,
                ("kt", key): transpose(k),
                ("scores", key): scores,
                ("scaled", key): scaled,
                ("exp", key): exps,
                ("weights", key): weights,
                ("output", key): o,
            }
        )
        if any_mask:
            out[("masked", key)] = masked
        head_outputs.append(o)
    if multi:
        concat = [[v for ho in head_outputs for v in ho[i]] for i in range(n)]
        out[("concat", None)] = concat
        final = concat
        if "wo" in doc:
            final = add_bias(matmul(concat, doc["wo"]), doc.get("bo"))
        out[("output", None)] = final
    return out
