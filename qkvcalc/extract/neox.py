"""GPT-NeoX: pre-norm (x is after input_layernorm); a fused query_key_value linear whose
output is interleaved per head, (heads, 3, head_dim); dense is the output projection; RoPE in
the "half" style on the first rotary_pct of each head's dimensions (partial rotary)."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import Family, Layer, base_keys, base_model, split_fused
from qkvcalc.extract.llama import rope


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPTNeoXAttention
    heads = layer.config.num_attention_heads
    parts = split_fused(attn.query_key_value, heads, attn.head_size)
    keys = base_keys(parts, attn.dense, heads)
    if attn.scaling != attn.head_size**-0.5:
        keys["scale"] = attn.scaling
    keys["mask"] = "causal"
    keys["rope"] = rope(layer, attn.head_size)
    return keys


FAMILY = Family(
    names={"gpt_neox": "GPT-NeoX"},
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.attention,
    output=lambda block: block.attention.dense,
    keys=keys,
)
