"""OPT, GPT-Neo and GPT-J: separate q/k/v_proj and out_proj linears, causal; x is the attention
module's input (after self_attn_layer_norm / ln_1 in the pre-norm layers). OPT and GPT-Neo
learn their positions (added to the embeddings before layer 0, so x already holds them).

OPT multiplies q by 1/√d_k right after its projection and runs the attention with scale 1: the
same scores as scaling Q·Kᵀ, so the problem keeps the weights and says the scale.
GPT-Neo has no 1/√d_k at all (scale 1); its local layers see the last window_size positions,
through a causal table of its own (the module's `bias` buffer) rather than the mask it is
given: both are read.
GPT-J rotates the first rotary_dim dimensions of each head in pairs (2i with 2i+1), with
θ_i = 10000^(−2i/rotary_dim) (a fixed base, not a config field).
CodeGen is GPT-J's attention (after ln_1; pairs on the first rotary_dim of each head, base
10000) with one fused qkv_proj laid out for the 4 shards it was trained on: its output is
4 × [q | v | k] blocks of d_model/4 columns each, shard s holding columns s·d_model/4 onward of
Q, V and K.
XGLM is OPT's attention (q times 1/√d_k after its projection) after self_attn_layer_norm; its
sinusoidal positions are added to the embeddings before layer 0 (islands.py makes their table
float64 in a float64 run).
BioGPT's layers are XGLM's (q/k/v_proj and out_proj with biases, 1/√d_k, after
self_attn_layer_norm); its learned positions are added to the embeddings before layer 0.
CTRL: Wq, Wk, Wv and dense (biases), 1/√d_k, causal, after layernorm1; its sinusoidal positions
(a table made in float32) are added to the scaled embeddings before layer 0, so x holds them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    base_keys,
    base_model,
    bias,
    default_scale,
    mask_keys,
    rows,
)


def projections(attn: Any, heads: int) -> dict[str, Any]:
    parts = [attn.q_proj, attn.k_proj, attn.v_proj]
    return base_keys([rows(p) for p in parts] + [bias(p) for p in parts], attn.out_proj, heads)


def opt_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # OPTAttention
    keys: dict[str, Any] = projections(attn, attn.num_heads)
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    return {**keys, **mask_keys(layer)}


def ctrl_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # CTRL's MultiHeadAttention
    parts = [attn.Wq, attn.Wk, attn.Wv]
    keys = base_keys(
        [rows(p) for p in parts] + [bias(p) for p in parts], attn.dense, attn.num_heads
    )
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    return {**keys, **mask_keys(layer)}


def neo_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPTNeoSelfAttention
    n = layer.n
    own = array(attn.bias[0, 0, :n, :n]).astype(bool)  # its causal (or local) table
    given = layer.allowed
    allowed = own if given is None else own & given
    keys: dict[str, Any] = {**projections(attn, attn.num_heads), "scale": 1.0}
    return {**keys, **mask_keys(replace(layer, allowed=allowed))}


def codegen_projections(attn: Any) -> dict[str, Any]:
    """wq, wk, wv from CodeGen's qkv_proj: its columns viewed as (4 shards, [q, v, k], d/4)."""
    weight = rows(attn.qkv_proj)  # d × 3d
    d_model = weight.shape[0]
    shards = 4  # CodeGen's mp_num, a constant of its modeling code
    blocks = weight.reshape(d_model, shards, 3, -1)
    wq, wv, wk = (np.ascontiguousarray(blocks[:, :, i].reshape(d_model, -1)) for i in range(3))
    return base_keys([wq, wk, wv, None, None, None], attn.out_proj, attn.num_attention_heads)


def gptj_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # GPTJAttention or CodeGenAttention
    if hasattr(attn, "qkv_proj"):  # CodeGen
        keys: dict[str, Any] = codegen_projections(attn)
    else:
        keys = projections(attn, attn.num_attention_heads)
    # transformers 5.23–5.24 divide by scale_attn = √d_k; since 5.25 multiply by scaling
    scale = attn.scaling if hasattr(attn, "scaling") else 1 / float(attn.scale_attn)
    if not default_scale(scale, attn.head_dim):
        keys["scale"] = scale
    keys.update(mask_keys(layer))
    dims = attn.rotary_dim or attn.head_dim
    keys["rope"] = {"theta": 10000.0, "style": "pairs"}
    if dims != attn.head_dim:
        keys["rope"]["dims"] = dims
    return keys


OPT = Family(
    names={"opt": "OPT"},
    stack=lambda model: base_model(model).decoder.layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.out_proj,
    keys=opt_keys,
)

XGLM = Family(
    names={"xglm": "XGLM", "biogpt": "BioGPT"},
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.out_proj,
    keys=opt_keys,
)

GPT_NEO = Family(
    names={"gpt_neo": "GPT-Neo"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn.attention,
    output=lambda block: block.attn.attention.out_proj,
    keys=neo_keys,
)

GPTJ = Family(
    names={"gptj": "GPT-J"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.out_proj,
    keys=gptj_keys,
)

CODEGEN = Family(
    names={"codegen": "CodeGen"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.attn,
    output=lambda block: block.attn.out_proj,
    keys=gptj_keys,
)

CTRL = Family(
    names={"ctrl": "CTRL"},
    stack=lambda model: base_model(model).h,
    attention=lambda block: block.multi_head_attention,
    output=lambda block: block.multi_head_attention.dense,
    keys=ctrl_keys,
)
