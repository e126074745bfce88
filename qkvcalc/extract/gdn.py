"""A Gated DeltaNet layer of Qwen3-Next, Qwen3.5 or OLMo-Hybrid (their "linear_attention"
layers) as a problem of the input format's `gated_delta` key: Qwen3NextGatedDeltaNet.forward
(Qwen3_5GatedDeltaNet's and OlmoHybridGatedDeltaNet's are the same but for their projections
and OLMo's β), step by step.

    Qwen3-Next: in_proj_qkvz's output viewed as (num_k_heads, 2·d_k + 2·r·d_v), r = num_v_heads /
                num_k_heads: each key head's [q | k | v of its r value heads | z of them]; and
                in_proj_ba's as (num_k_heads, 2·r): [b of its r value heads | a of them]
                (fix_query_key_value_ordering)
    Qwen3.5:    in_proj_qkv ([q | k | v], as the convolution's channels), in_proj_z, in_proj_b,
                in_proj_a, each of its own
    OLMo-Hybrid: q_proj, k_proj, v_proj, g_proj (Z), b_proj, a_proj, each of its own; o_proj and
                o_norm (ε fixed at 1e-5) in place of out_proj and norm; β = 2·σ(b) when
                allow_neg_eigval (the key's beta_scale)

Then conv1d's taps over the channels q | k | v (its weight [channels, 1, K], turned to K ×
channels), A_log, dt_bias, the gated norm's weight and eps, and out_proj as W_O. A value head
reads query/key head ⌊i / r⌋ (repeat_interleave): the problem has one head per value head, and
each takes its key head's columns of W_Q, W_K and of the convolution's q and k taps, so that
qkvcalc shows every state with the query and key it reads."""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract.common import SILU, Layer, array, model_name, rows, stored
from qkvcalc.extract.islands import class_name

# The hybrids whose linear-attention layers are read here (hybrid.py asks)
READ = ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "olmo_hybrid")


def is_layer(module: Any) -> bool:
    """Whether a block's mixer is a Gated DeltaNet layer (Qwen3NextGatedDeltaNet, …)."""
    return class_name(module).endswith("GatedDeltaNet")


def mixer(block: Any) -> Any:
    """The module whose input is x: the attention, or the linear-attention layer (a layout with
    neither is named by its self_attn, as before: check.layout)."""
    if not hasattr(block, "self_attn") and hasattr(block, "linear_attn"):
        return block.linear_attn
    return block.self_attn


def _projections(gdn: Any, k_heads: int, v_heads: int, d_k: int, d_v: int) -> dict[str, Any]:
    """wq, wk (k_heads·d_k columns each), wv, wz (v_heads·d_v), wb, wa (v_heads), rows layout."""
    per = v_heads // k_heads
    if hasattr(gdn, "in_proj_qkvz"):  # Qwen3-Next: grouped by key head
        qkvz = rows(gdn.in_proj_qkvz)
        d_model = qkvz.shape[0]
        grouped = qkvz.reshape(d_model, k_heads, 2 * d_k + 2 * per * d_v)
        cuts = np.cumsum([d_k, d_k, per * d_v])
        q, k, v, z = np.split(grouped, cuts, axis=2)
        ba = rows(gdn.in_proj_ba).reshape(d_model, k_heads, 2 * per)
        b, a = np.split(ba, [per], axis=2)
        parts = {"wq": q, "wk": k, "wv": v, "wz": z, "wb": b, "wa": a}
        return {
            key: np.ascontiguousarray(found.reshape(d_model, -1)) for key, found in parts.items()
        }
    if hasattr(gdn, "g_proj"):  # OLMo-Hybrid: every projection of its own, the gate's g_proj
        return {
            "wq": rows(gdn.q_proj),
            "wk": rows(gdn.k_proj),
            "wv": rows(gdn.v_proj),
            "wz": rows(gdn.g_proj),
            "wb": rows(gdn.b_proj),
            "wa": rows(gdn.a_proj),
        }
    qkv = rows(gdn.in_proj_qkv)  # Qwen3.5: [q | k | v], each projection of its own
    q, k, v = np.split(qkv, [k_heads * d_k, 2 * k_heads * d_k], axis=1)
    return {
        "wq": np.ascontiguousarray(q),
        "wk": np.ascontiguousarray(k),
        "wv": np.ascontiguousarray(v),
        "wz": rows(gdn.in_proj_z),
        "wb": rows(gdn.in_proj_b),
        "wa": rows(gdn.in_proj_a),
    }


def keys(layer: Layer) -> dict[str, Any]:
    gdn = layer.attention
    norm = gdn.norm if hasattr(gdn, "norm") else gdn.o_norm  # OLMo-Hybrid's o_norm, ε 1e-5
    # the convolution's activation is the config's hidden_act; the gated norm's is SiLU in
    # transformers today: the gated_delta key computes SiLU for both
    act = str(getattr(gdn, "activation", "silu"))
    gate = str(getattr(norm, "activation", "silu"))
    if act not in SILU or gate not in SILU:
        raise QkvcalcError(
            "extract.gdn_activation", model=model_name(layer), layer=layer.index, act=act, gate=gate
        )
    k_heads, v_heads = int(gdn.num_k_heads), int(gdn.num_v_heads)
    d_k, d_v = int(gdn.head_k_dim), int(gdn.head_v_dim)
    found = _projections(gdn, k_heads, v_heads, d_k, d_v)
    taps = array(stored(gdn.conv1d, "weight"))[:, 0, :].T  # [K, channels]
    # value head i reads key head ⌊i / r⌋: its columns, repeated for each value head
    per = v_heads // k_heads
    cols = np.array([(i // per) * d_k + c for i in range(v_heads) for c in range(d_k)])
    width = k_heads * d_k
    conv = np.concatenate([taps[:, cols], taps[:, width + cols], taps[:, 2 * width :]], axis=1)
    made = {
        "conv": np.ascontiguousarray(conv),
        "wa": found["wa"],
        "wb": found["wb"],
        "a_log": array(stored(gdn, "A_log")),
        "dt_bias": array(stored(gdn, "dt_bias")),
        "wz": found["wz"],
        "norm": array(stored(norm, "weight")),
        "norm_eps": float(norm.variance_epsilon),
    }
    if getattr(gdn, "allow_neg_eigval", False):  # OLMo-Hybrid: β = 2·σ(b)
        made["beta_scale"] = 2.0
    return {
        "wq": np.ascontiguousarray(found["wq"][:, cols]),
        "wk": np.ascontiguousarray(found["wk"][:, cols]),
        "wv": found["wv"],
        "wo": rows(gdn.out_proj if hasattr(gdn, "out_proj") else gdn.o_proj),
        "heads": v_heads,
        "mask": "causal",
        "gated_delta": made,
    }
