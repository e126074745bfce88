"""GPT-BigCode (StarCoder, SantaCoder): pre-norm (x is after ln_1); one nn.Linear c_attn —
with multi_query, [Q | K | V] along its output, K and V one head each (kv_heads 1); without it,
interleaved per head like GPT-NeoX's, (heads, 3, head_dim); c_proj is the output projection.
The scale is the module's own (1 without scale_attn_weights); the mask the one the layer is
given."""

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
    split_fused,
)


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPTBigCodeAttention
    heads, head_dim = attn.num_heads, attn.head_dim
    if attn.multi_query:
        parts = split_columns(attn.c_attn, [attn.embed_dim, attn.kv_dim, attn.kv_dim])
    else:
        parts = split_fused(attn.c_attn, heads, head_dim)
    keys = base_keys(parts, attn.c_proj, heads, attn.kv_heads)
    if not default_scale(attn.scaling, head_dim):
        keys["scale"] = attn.scaling
    return {**keys, **mask_keys(layer)}


FAMILY = Family(
    names={"gpt_bigcode": "GPT-BigCode"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.c_proj,
    keys=keys,
)
