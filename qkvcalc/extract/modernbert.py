"""ModernBERT: an encoder (bidirectional); x is the attention module's input (after attn_norm,
which is the identity in layer 0); one fused Wqkv linear holding [Q | K | V] along its output;
Wo is the output projection; RoPE ("half") with the layer type's own base (global and local
layers). The local layers see the keys within sliding_window positions on either side: a
two-sided window, written as the 0/1 mask the layer is given.

ModernBERT's decoder (DECODER, `modernbert-decoder`): separate q/k/v_proj and Wo (biases with
attention_bias), RoPE with the layer type's own base, causal; its sliding layers see the last
sliding_window positions (the mask the layer is given, read as a window)."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import (
    Family,
    Layer,
    base_keys,
    base_model,
    bias,
    default_scale,
    mask_keys,
    rows,
    split_columns,
)
from qkvcalc.extract.llama import rope


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # ModernBertAttention
    heads = layer.config.num_attention_heads
    width = heads * attn.head_dim
    keys = base_keys(split_columns(attn.Wqkv, [width, width, width]), attn.Wo, heads)
    return {**keys, **mask_keys(layer, causal=False), "rope": rope(layer, attn.head_dim)}


FAMILY = Family(
    names={"modernbert": "ModernBERT"},
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.Wo,
    keys=keys,
)


def decoder_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # ModernBertDecoderAttention
    parts = [attn.q_proj, attn.k_proj, attn.v_proj]
    keys = base_keys([rows(p) for p in parts] + [bias(p) for p in parts], attn.Wo, attn.num_heads)
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    return {**keys, **mask_keys(layer), "rope": rope(layer, attn.head_dim)}


DECODER = Family(
    names={"modernbert-decoder": "ModernBERT decoder"},
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.Wo,
    keys=decoder_keys,
)
