"""Falcon: x is the attention module's input (after input_layernorm, or ln_attn in the new
decoder architecture); one fused query_key_value linear in one of three layouts — the new
decoder architecture's groups (per K/V head: its H/G query heads, then its key and its value),
multi-query ([Q heads | K | V], one K/V head), or interleaved per head like GPT-NeoX's; dense
is the output projection. Causal. RoPE ("half"), or ALiBi.

Falcon's eager ALiBi is not the paper's −slope·|i − j|: the bias is slopes in bfloat16, times
the key's index, rounded to bfloat16. transformers 5.23–5.24 add it to Q·Kᵀ before the 1/√d_k
scaling and a second time through the mask (alibi/√d_k), so the slopes are in effect 2·s/√d_k;
since 5.25 only the mask carries it (alibi/√d_k, per head), so they are s/√d_k. Either way the
problem carries the bias as the model computed it, per head: score_bias = the alibi the layer
was given (times 1/√d_k) + the mask's own bias (0 where a key is masked, which the causal mask
hides)."""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    base_keys,
    base_model,
    bias,
    mask_keys,
    rows,
    split_columns,
    split_fused,
)
from qkvcalc.extract.llama import rope


def grouped(linear: Any, heads: int, kv_heads: int, head_dim: int) -> list[np.ndarray | None]:
    """The new decoder architecture's layout: (G, H/G + 2, head_dim) along the output."""
    per = heads // kv_heads
    weight = rows(linear).reshape(-1, kv_heads, per + 2, head_dim)  # d × G × (H/G + 2) × hd
    found = bias(linear)
    b = None if found is None else found.reshape(kv_heads, per + 2, head_dim)
    parts = (slice(0, per), slice(per, per + 1), slice(per + 1, per + 2))  # Q, K, V
    weights = [np.ascontiguousarray(weight[:, :, s].reshape(weight.shape[0], -1)) for s in parts]
    biases = [None if b is None else b[:, s].reshape(-1) for s in parts]
    return [*weights, *biases]


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # FalconAttention
    heads, head_dim = attn.num_heads, attn.head_dim
    if attn.new_decoder_architecture:
        kv_heads = layer.config.num_kv_heads
        parts = grouped(attn.query_key_value, heads, kv_heads, head_dim)
    elif attn.multi_query:
        kv_heads = 1
        parts = split_columns(attn.query_key_value, [heads * head_dim, head_dim, head_dim])
    else:
        kv_heads = heads
        parts = split_fused(attn.query_key_value, heads, head_dim)
    keys = {**base_keys(parts, attn.dense, heads, kv_heads), **mask_keys(layer)}
    given = layer.given or {}
    alibi = given.get("alibi")
    if alibi is None and not getattr(layer.config, "alibi", False):
        keys["rope"] = rope(layer, head_dim)
    else:
        n = layer.n
        # 5.23–5.24 pass the alibi tensor too and add it before the scaling; since 5.25 the
        # mask alone carries the bias (alibi/√d_k, once)
        added = 0.0
        if alibi is not None:
            added = array(alibi).reshape(-1, heads, 1, n)[0] * attn.inv_norm_factor
        mask = array(given["attention_mask"])[0] if "attention_mask" in given else 0.0
        mask = np.broadcast_to(mask, (heads, n, n))
        visible = layer.allowed if layer.allowed is not None else np.ones((n, n), dtype=bool)
        keys["score_bias"] = np.where(visible, added + mask, 0.0)
    return keys


FAMILY = Family(
    names={"falcon": "Falcon"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.self_attention,
    output=lambda block: block.self_attention.dense,
    keys=keys,
)
