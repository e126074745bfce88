"""DBRX: x is the attention's input after norm_attn_norm.norm_1; a fused Wqkv holding
[Q | K | V] one after another (kv_n_heads K/V heads: grouped-query), out_proj, RoPE ("half") of
the rope_theta in attn_config, causal. Its clip_qkv clamps q, k and v: a layer where the clamp
changed a number is refused by extract's check (check.py), as OLMo's is."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import (
    Family,
    Layer,
    base_keys,
    base_model,
    default_scale,
    mask_keys,
    split_columns,
)
from qkvcalc.extract.llama import rope


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # DbrxAttention
    heads, kv_heads, head_dim = attn.num_heads, attn.num_key_value_heads, attn.head_dim
    widths = [heads * head_dim, kv_heads * head_dim, kv_heads * head_dim]
    keys = base_keys(split_columns(attn.Wqkv, widths), attn.out_proj, heads, kv_heads)
    if not default_scale(attn.scaling, head_dim):
        keys["scale"] = attn.scaling
    keys.update(mask_keys(layer))
    keys["rope"] = rope(layer, head_dim)
    return keys


FAMILY = Family(
    names={"dbrx": "DBRX"},
    stack=lambda model: base_model(model).blocks,
    attention=lambda block: block.norm_attn_norm.attn,
    output=lambda block: block.norm_attn_norm.attn.out_proj,
    keys=keys,
)
