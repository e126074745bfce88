"""BLOOM: pre-norm (x is after input_layernorm); a fused query_key_value interleaved per head
like GPT-NeoX's; dense is the output projection (the attention module then adds the residual
itself); ALiBi with the paper's slopes, causal.

BLOOM adds +slope·j (the key's index) where qkvcalc adds −slope·|i − j|: under the causal mask
the two differ by slope·i, the same for every key of a row, so the weights are the same (the
biased scores are not)."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import Family, Layer, base_keys, base_model, split_fused


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # BloomAttention
    heads = attn.num_heads
    keys = base_keys(split_fused(attn.query_key_value, heads, attn.head_dim), attn.dense, heads)
    if attn.inv_norm_factor != attn.head_dim**-0.5:
        keys["scale"] = attn.inv_norm_factor
    keys["mask"] = "causal"
    keys["alibi"] = True
    return keys


FAMILY = Family(
    names={"bloom": "BLOOM"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.self_attention,
    output=lambda block: block.self_attention.dense,
    keys=keys,
)
