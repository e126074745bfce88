"""ModernBERT: an encoder (bidirectional); x is the attention module's input (after attn_norm,
which is the identity in layer 0); one fused Wqkv linear holding [Q | K | V] along its output;
Wo is the output projection; RoPE ("half") with the layer type's own base (global and local
layers). The local layers see the keys within sliding_window positions on either side: a
two-sided window, written as the 0/1 mask the layer is given."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import (
    Family,
    Layer,
    base_keys,
    base_model,
    mask_keys,
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
