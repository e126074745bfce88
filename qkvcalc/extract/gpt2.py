"""GPT-2: pre-norm (x is after ln_1); one fused Conv1D c_attn stored in×out — qkvcalc's rows
layout already — holding [Q | K | V] along its columns; c_proj is the output projection.
Causal. The scale is the module's own: 1/√d_k, divided by (layer + 1) when the config says
scale_attn_by_inverse_layer_idx, or 1 without scale_attn_weights.

OpenAI GPT (`openai-gpt`, GPT-1) has the same fused c_attn and c_proj, and is post-norm: x is
the block's input (ln_1 comes after the residual sum). Its mask sets a hidden score to −10⁴
rather than −∞ (w·b − 10⁴·(1 − b)), which the softmax makes an exact 0 in float64 and float32
alike while the scores are within a few hundred of each other; extract's check says so if
not."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from qkvcalc.extract.common import Family, Layer, array, base_model, default_scale


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPT2Attention
    return fused_keys(attn, attn.embed_dim, attn.num_heads, attn.scaling, attn.head_dim)


def openai_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # OpenAIGPT's Attention: 1/√d_k when `scale`, else none
    d, heads = attn.split_size, attn.n_head
    return fused_keys(attn, d, heads, (d // heads) ** -0.5 if attn.scale else 1.0, d // heads)


def fused_keys(attn: Any, d: int, heads: int, scale: float, head_dim: int) -> dict[str, Any]:
    """c_attn (Conv1D, in×out) split into [Q | K | V], c_proj, causal, the scale when not
    1/√d_k."""
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
        "heads": heads,
        "mask": "causal",
    }
    if not default_scale(scale, head_dim):
        keys["scale"] = scale
    return keys


FAMILY = Family(
    names={"gpt2": "GPT-2"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.c_proj,
    keys=keys,
)

# GPT-SW3's checkpoints say "gpt-sw3" and are GPT-2 (transformers builds GPT2Config for them)
GPT_SW3 = replace(FAMILY, names={"gpt-sw3": "GPT-SW3"})

OPENAI_GPT = Family(
    names={"openai-gpt": "OpenAI GPT"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.c_proj,
    keys=openai_keys,
)
