"""GPT-2: pre-norm (x is after ln_1); one fused Conv1D c_attn stored in×out — qkvcalc's rows
layout already — holding [Q | K | V] along its columns; c_proj is the output projection.
Causal. The scale is the module's own: 1/√d_k, divided by (layer + 1) when the config says
scale_attn_by_inverse_layer_idx, or 1 without scale_attn_weights."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import Family, Layer, array, base_model, default_scale


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPT2Attention
    d = attn.embed_dim
    weight = array(attn.c_attn.weight)  # Conv1D: d × 3d, in×out
    fused_bias = array(attn.c_attn.bias)
    keys: dict[str, Any] = {
        "wq": weight[:, :d],
        "wk": weight[:, d : 2 * d],
        "wv": weight[:, 2 * d :],
        "wo": array(attn.c_proj.weight),
        "bq": fused_bias[:d],
        "bk": fused_bias[d : 2 * d],
        "bv": fused_bias[2 * d :],
        "bo": array(attn.c_proj.bias),
        "heads": attn.num_heads,
        "mask": "causal",
    }
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    return keys


FAMILY = Family(
    names={"gpt2": "GPT-2"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.c_proj,
    keys=keys,
)
