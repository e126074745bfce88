"""GPT-NeoX: pre-norm (x is after input_layernorm); a fused query_key_value linear whose
output is interleaved per head, (heads, 3, head_dim); dense is the output projection; RoPE in
the "half" style on the first rotary_pct of each head's dimensions (partial rotary).

Persimmon (PERSIMMON): the same fused, per-head interleaved query_key_value and dense, with a
LayerNorm (weight and bias, one per head's dims, the same for every head) on each head's q and
k with qk_layernorm, before the rotation of the first partial_rotary_factor of each head.

GPT-NeoX Japanese (JAPANESE): GPT-NeoX's fused query_key_value (no bias) and dense, RoPE on the
first partial_rotary_factor of each head, after input_layernorm; the last layer's dense_bias is
added outside its attention (with the residual), so dense's own output has none."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    base_keys,
    base_model,
    bias,
    default_scale,
    mask_keys,
    split_fused,
)
from qkvcalc.extract.llama import layer_norm_keys, rope


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


def persimmon_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # PersimmonAttention
    heads = attn.num_heads
    keys = base_keys(split_fused(attn.query_key_value, heads, attn.head_dim), attn.dense, heads)
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    keys.update(mask_keys(layer))
    keys["rope"] = rope(layer, attn.head_dim)
    if attn.qk_layernorm:
        q, k = attn.q_layernorm, attn.k_layernorm
        eps = float(q.eps)
        keys.update(layer_norm_keys(array(q.weight), array(k.weight), bias(q), bias(k), eps))
    return keys


PERSIMMON = Family(
    names={"persimmon": "Persimmon"},
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.dense,
    keys=persimmon_keys,
)


def japanese_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPTNeoXJapaneseAttention
    heads, head_dim = attn.num_attention_heads, attn.head_size
    keys = base_keys(split_fused(attn.query_key_value, heads, head_dim), attn.dense, heads)
    scale = 1.0 / attn.norm_factor  # baddbmm's alpha
    if not default_scale(scale, head_dim):
        keys["scale"] = scale
    keys.update(mask_keys(layer))
    keys["rope"] = rope(layer, head_dim)
    return keys


JAPANESE = Family(
    names={"gpt_neox_japanese": "GPT-NeoX Japanese"},
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.attention,
    output=lambda block: block.attention.dense,
    keys=japanese_keys,
)
