"""DeepSeek-V4's attention module written out in numpy, from its weights (float64 throughout):
what each of its three layer kinds computes, as transformers 5.23–5.25's modeling_deepseek_v4.py
does it (tests/test_extract_dsv4.py checks it against the module to 1e-8 relative). qkvcalc
extract reads every kind (mla's shared_kv, vo_rope …; the compressed ones with `compress`,
qkvcalc/ops/compress.py, which tests/test_compress.py holds to this record to 1e-12); this is
the record of what they compute, and the test that that record is right.

Every kind (x: the attention module's input [n, d], after input_layernorm of the mHC streams
collapsed by their `pre` weights; R = qk_rope_head_dim, the last R of each head's d_h columns
turn, interleaved pairs (2i, 2i + 1), angle p·θ^(−2i/R)):

    c_Q = RMSNorm(x·W_qa) ⊙ w_qa                      the query latent  [n, r_q]
    Q_h = unit_rms(c_Q·W_qb[:, h]) then turned at i    one RMS norm per head, no weight
    KV  = RMSNorm(x·W_kv) ⊙ w_kv then turned at j      one head [n, d_h]: K = V = KV
    S_h = Q_h·KVᵀ / √d_h  (+ the compressed entries' columns, below)
    window: key j kept by query i when i − W < j ≤ i
    A_h = softmax over [S_h, s_h] (the sink's column dropped)
    O_h = A_h·KV, its last R columns turned back by −i (the query's position)
    out = [O_1 … O_H] in g groups of H/g heads; group g·W_a[g]ᵀ → [n, r_o]; joined·W_bᵀ

θ: rope_theta on sliding layers ("main"), compress_rope_theta on compressed ones ("compress",
YaRN in the released configs, attention factor 1.0: pass its frequencies as `inv`).

Heavily compressed (HCA, m = compress_rates["heavily_compressed_attention"]): T = ⌊n/m⌋ entries;
entry w pools the tokens t of window w (w·m ≤ t < (w+1)·m) channel by channel,
C_w = Σ_t softmax_t(Z_t + B_{t−w·m}) ⊙ (x·W_ckv)_t with Z = x·W_cg, then RMSNorm ⊙ w_c, then
turned at position w·m. Query i sees entry w when w < ⌊(i + 1)/m⌋.

Compressed sparse (CSA, m = compress_rates["compressed_sparse_attention"]): the projections are
2·d_h wide, [Ca | Cb]; entry w pools 2m slots: window w−1's Ca (gates Za + B[:, :d_h]; none
for w = 0) and window w's Cb (gates Zb + B[:, d_h:]). The indexer runs the same compressor at
index_head_dim (its own weights), turns its last R columns at w·m, and its queries
q_I = c_Q·W_Iqb [n, H_I, d_I] turned at i; score(i, w) = Σ_h (x·W_w)_{i,h}·H_I^−½ ·
ReLU(q_I·K_I,w)·d_I^−½; query i keeps the top index_topk of its visible entries
(w < ⌊(i + 1)/m⌋; all of them when fewer are visible).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _np(t: Any) -> np.ndarray:
    return t.detach().to("cpu").double().numpy()


def rms(x: np.ndarray, eps: float, w: np.ndarray | None = None) -> np.ndarray:
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y if w is None else y * w


def plain(theta: float, dims: int) -> np.ndarray:
    """The default rotation's frequencies θ^(−2i/dims), [dims/2]."""
    return theta ** (-np.arange(0, dims, 2) / dims)


def turn(x: np.ndarray, positions: np.ndarray, inv: np.ndarray, dims: int) -> np.ndarray:
    """The last `dims` columns of x [..., n, d] turned by position·inv[i], pairs (2i, 2i + 1)."""
    ang = positions[:, None] * inv[None, :]  # [n, dims/2]
    c, s = np.cos(ang), np.sin(ang)
    out = x.copy()
    rot = x[..., -dims:]
    a, b = rot[..., 0::2], rot[..., 1::2]
    out[..., -dims:][..., 0::2] = a * c - b * s
    out[..., -dims:][..., 1::2] = a * s + b * c
    return out


def softmax_sink(s: np.ndarray, sink: float) -> np.ndarray:
    top = np.maximum(s.max(axis=-1, keepdims=True), sink)
    e = np.exp(s - top)
    return e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))


def pool(kv: np.ndarray, gate: np.ndarray, bias: np.ndarray, m: int, overlap: bool) -> np.ndarray:
    """The compressor's entries before their norm: [T, width] (overlap: CSA's two series)."""
    t = kv.shape[0] // m
    width = kv.shape[1] // 2 if overlap else kv.shape[1]
    out = np.zeros((t, width))
    for w in range(t):
        now = slice(w * m, (w + 1) * m)
        if overlap:
            vals = [kv[now, width:]]
            gates = [gate[now, width:] + bias[:, width:]]
            if w > 0:
                before = slice((w - 1) * m, w * m)
                vals.insert(0, kv[before, :width])
                gates.insert(0, gate[before, :width] + bias[:, :width])
            v, g = np.concatenate(vals), np.concatenate(gates)
        else:
            v, g = kv[now], gate[now] + bias
        e = np.exp(g - g.max(axis=0, keepdims=True))
        out[w] = (e / e.sum(axis=0, keepdims=True) * v).sum(axis=0)
    return out


def compressed(comp: Any, x: np.ndarray, m: int, overlap: bool, eps: float, inv: np.ndarray,
               dims: int) -> np.ndarray:  # fmt: skip
    """A compressor's entries [T, width], normed and turned at w·m."""
    raw = pool(x @ _np(comp.kv_proj.weight).T, x @ _np(comp.gate_proj.weight).T,
               _np(comp.position_bias), m, overlap)  # fmt: skip
    normed = rms(raw, eps, _np(comp.kv_norm.weight))
    return turn(normed, np.arange(raw.shape[0]) * float(m), inv, dims)


def visible(n: int, t: int, m: int) -> np.ndarray:
    """[n, T]: query i sees entry w when w < ⌊(i + 1)/m⌋."""
    return np.arange(t)[None, :] < ((np.arange(n) + 1) // m)[:, None]


def chosen(indexer: Any, x: np.ndarray, c_q: np.ndarray, config: Any, inv: Any) -> np.ndarray:
    """[n, T]: the entries the indexer keeps for each query."""
    m, dims = config.compress_rates["compressed_sparse_attention"], config.qk_rope_head_dim
    n = x.shape[0]
    k_i = compressed(indexer, x, m, True, config.rms_norm_eps, inv, dims)
    heads, d_i = config.index_n_heads, config.index_head_dim
    q_i = (c_q @ _np(indexer.q_b_proj.weight).T).reshape(n, heads, d_i).transpose(1, 0, 2)
    q_i = turn(q_i, np.arange(n, dtype=float), inv, dims)  # [H_I, n, d_I]
    relu = np.maximum(q_i @ k_i.T, 0.0) * d_i**-0.5  # [H_I, n, T]
    weights = x @ _np(indexer.scorer.weights_proj.weight).T * heads**-0.5  # [n, H_I]
    score = np.einsum("hnt,nh->nt", relu, weights)
    seen = visible(n, k_i.shape[0], m)
    score = np.where(seen, score, -np.inf)
    keep = np.zeros_like(seen)
    top = min(config.index_topk, k_i.shape[0])
    for i in range(n):
        for w in np.argsort(-score[i], kind="stable")[:top]:
            keep[i, w] = seen[i, w]
    return keep


def attention(attn: Any, x: np.ndarray, config: Any, select: bool = True,
              derotate: bool = True, inv: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """The module's output (o_b_proj's) for its input x [n, d]. `select` False: every visible
    compressed entry (no indexer); `derotate` False: the output's turn back left out; `inv`:
    the rotation's frequencies (default: θ^(−2i/R) of the layer's rope_theta)."""
    n, eps = x.shape[0], config.rms_norm_eps
    kind = config.layer_types[attn.layer_idx]
    heads, d_h, dims = config.num_attention_heads, config.head_dim, config.qk_rope_head_dim
    rope = config.rope_parameters
    base = rope["main" if kind == "sliding_attention" else "compress"]["rope_theta"]
    freq = plain(base, dims) if inv is None else inv  # the frequencies, [R/2]
    pos = np.arange(n, dtype=float)
    c_q = rms(x @ _np(attn.q_a_proj.weight).T, eps, _np(attn.q_a_norm.weight))
    q = (c_q @ _np(attn.q_b_proj.weight).T).reshape(n, heads, d_h).transpose(1, 0, 2)
    q = turn(rms(q, eps), pos, freq, dims)  # [H, n, d_h]
    kv = turn(rms(x @ _np(attn.kv_proj.weight).T, eps, _np(attn.kv_norm.weight)), pos, freq, dims)
    j, i = np.arange(n)[None, :], np.arange(n)[:, None]
    allowed = (j <= i) & (j > i - config.sliding_window)
    keys = kv
    if kind != "sliding_attention":
        csa = kind == "compressed_sparse_attention"
        m = config.compress_rates[kind]
        entries = compressed(attn.compressor, x, m, csa, eps, freq, dims)
        extra = visible(n, entries.shape[0], m)
        if csa and select:
            extra = extra & chosen(attn.compressor.indexer, x, c_q, config, freq)
        keys = np.concatenate([kv, entries])
        allowed = np.concatenate([allowed, extra], axis=1)
    scores = np.where(allowed, q @ keys.T * d_h**-0.5, -np.inf)
    sinks = _np(attn.sinks)
    out = np.stack([softmax_sink(scores[h], sinks[h]) @ keys for h in range(heads)])
    if derotate:
        out = turn(out, -pos, freq, dims)
    joined = out.transpose(1, 0, 2).reshape(n, heads * d_h)
    groups = config.o_groups
    w_a = _np(attn.o_a_proj.weight).reshape(groups, -1, heads * d_h // groups)
    parts = joined.reshape(n, groups, -1)
    mid = np.concatenate([parts[:, g] @ w_a[g].T for g in range(groups)], axis=1)
    return mid @ _np(attn.o_b_proj.weight).T
