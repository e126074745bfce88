"""BLOOM: pre-norm (x is after input_layernorm); a fused query_key_value interleaved per head
like GPT-NeoX's; dense is the output projection (the attention module then adds the residual
itself); ALiBi with the paper's slopes, causal.

BLOOM adds +slope·j (the key's index) where qkvcalc adds −slope·|i − j|: under the causal mask
the two differ by slope·i, the same for every key of a row, so the weights are the same (the
biased scores are not).

MPT (MPT): pre-norm (x is after norm_1); a fused Wqkv holding [Q | K | V] one after another;
out_proj; softmax_scale (1/√d_k by default); ALiBi with its own recipe for the slopes,
2^(−8k/H′) for k = 1 … H′ (H′ the power of two at or above H; for H not a power of two the
even k first, then the odd ones, the first H), given as the list of H slopes; its bias
(j − (n − 1))·slope differs from −slope·|i − j| by the same number for every key of a row under
the causal mask, as BLOOM's does. With clip_qkv, a layer where the clamp changed a number is
refused by extract's check (check.py)."""

from __future__ import annotations

import math
from dataclasses import replace
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


def mpt_slopes(heads: int, most: float = 8.0) -> list[float]:
    """MPT's ALiBi slopes (build_mpt_alibi_tensor with alibi_bias_max 8, as MptModel calls
    it), in float64."""
    power = 2 ** math.ceil(math.log2(heads))
    slopes = [1.0 / 2 ** (k * (most / power)) for k in range(1, power + 1)]
    if power != heads:
        slopes = (slopes[1::2] + slopes[::2])[:heads]
    return slopes


def mpt_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # MptAttention
    heads, width = attn.n_heads, attn.hidden_size
    keys = base_keys(split_columns(attn.Wqkv, [width] * 3), attn.out_proj, heads)
    if not default_scale(attn.softmax_scale, attn.head_dim):
        keys["scale"] = float(attn.softmax_scale)
    # MPT's boolean mask is True where a key is hidden (masked_fill): the other way round
    hidden = layer.allowed
    keys.update(mask_keys(layer if hidden is None else replace(layer, allowed=~hidden)))
    keys["alibi"] = mpt_slopes(heads)
    return keys


MPT = Family(
    names={"mpt": "MPT"},
    stack=lambda model: base_model(model).blocks,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.out_proj,
    keys=mpt_keys,
)
