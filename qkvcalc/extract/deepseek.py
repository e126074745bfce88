"""DeepSeek-V3 (and Kimi K2, which is a deepseek_v3 model): multi-head latent attention. The
attention module's input is x after input_layernorm; its weights become the `mla` key (q_a_proj,
q_a_layernorm and q_b_proj, or q_proj when q_lora_rank is None; kv_a_proj_with_mqa, whose last
qk_rope_head_dim columns are the shared rotary key; kv_a_layernorm; kv_b_proj), o_proj is W_O.
The rotation turns the qk_rope_head_dim columns only: "pairs" when rope_interleave (DeepSeek's
interleaved layout), else "half"; its frequencies are the layer's own (YaRN's too, with their
attention factor), and the scale is the module's (qk_head_dim^−½, times mscale² under YaRN).
The layers before first_k_dense_replace have a dense MLP, the others experts: their attention
is the same. Kimi Linear's MLA layers (KIMI_LINEAR) are these without a rotation; its Kimi Delta
Attention layers are kda.py's.

DeepSeek-V3.2 (DEEPSEEK_V32) and GLM-MoE-DSA (GLM_DSA, GLM-5) are DeepSeek-V3's MLA, always with
the interleaved layout ("pairs"), and a sparse-attention indexer (DSA) whose top-k keys per query
are folded into the mask: its weights become the `indexer` key (wq_b from the query latent, wk,
k_norm's LayerNorm weight, bias and ε, weights_proj, index_n_heads, index_topk), its rotation
"half" (DeepSeek-V3.2's indexer rotates half-split) or "pairs" (GLM-MoE-DSA's). transformers'
indexer computes its scores in float32 (`.float()`) even in a float64 model: only its choice of
keys reaches the output, and that differs from float64's only where two scores tie to float32's
precision. A GLM-MoE-DSA layer that reuses an earlier layer's top-k ("shared" in
indexer_types) is refused: its keys were chosen from another layer's input.

The same module in DeepSeek-V2, MiniCPM3, GLM-4.7-Flash (glm4_moe_lite), Youtu-LLM and A.X K1
(axk1, always with a query latent): DeepSeek-V2
turns view_as_complex of (2i, 2i+1) ("pairs") whatever its config says, MiniCPM3 rotate_half
("half"), the others as rope_interleave says (STYLE)."""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract import kda
from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    decoder,
    default_scale,
    mask_keys,
    model_name,
    rows,
)
from qkvcalc.extract.llama import norm_eps, rope


def keys(layer: Layer, rotates: bool = True, interleave: bool | None = None) -> dict[str, Any]:
    """The `mla` keys; `rotates` False: no `rope` (Kimi Linear's NoPE layers, whose d_R shared
    key columns stay as they are); `interleave`: the layout when the model fixes it (None: the
    model type's own, STYLE, else the config's rope_interleave)."""
    attn = layer.attention
    config = attn.config
    if getattr(config, "attention_bias", False):
        raise QkvcalcError("extract.mla_bias", model=model_name(layer), layer=layer.index)
    head_dim = attn.qk_head_dim
    mla: dict[str, Any] = {}
    if getattr(attn, "q_lora_rank", None) is None:  # Ling 3.0 before transformers 5.25: none
        mla["wq"] = rows(attn.q_proj)
    else:
        mla["wq_a"] = rows(attn.q_a_proj)
        mla["q_a_norm"] = array(attn.q_a_layernorm.weight)
        mla["wq_b"] = rows(attn.q_b_proj)
    mla["wkv_a"] = rows(attn.kv_a_proj_with_mqa)
    mla["kv_a_norm"] = array(attn.kv_a_layernorm.weight)
    mla["wkv_b"] = rows(attn.kv_b_proj)
    mla["rope_dims"] = int(attn.qk_rope_head_dim)
    mla["eps"] = norm_eps(attn.kv_a_layernorm)
    out: dict[str, Any] = {"mla": mla, "wo": rows(attn.o_proj), "heads": attn.num_heads}
    if not default_scale(attn.scaling, head_dim):
        out["scale"] = float(attn.scaling)
    out.update(mask_keys(layer, True))
    if not rotates:
        return out
    if interleave is None:  # the model type's own style, else its config's rope_interleave
        turn = rope(layer, head_dim, style(config))
    else:
        turn = rope(layer, head_dim, "pairs" if interleave else "half")
    turn["dims"] = int(attn.qk_rope_head_dim)
    out["rope"] = turn
    return out


# Model types whose rotation is fixed, not read from rope_interleave: DeepSeek-V2 turns
# view_as_complex of (2i, 2i+1) — "pairs" —, MiniCPM3 rotate_half — "half"
STYLE = {"deepseek_v2": "pairs", "minicpm3": "half"}


def style(config: Any) -> str:
    """The rotary style of the qk_rope_head_dim columns: the model type's own (STYLE), else
    "pairs" when rope_interleave (DeepSeek-V3's interleaved layout), else "half"."""
    if config.model_type in STYLE:
        return STYLE[config.model_type]
    return "pairs" if config.rope_interleave else "half"


FAMILY = Family(
    names={
        "deepseek_v3": "DeepSeek-V3",
        "deepseek_v2": "DeepSeek-V2",
        "minicpm3": "MiniCPM3",
        "glm4_moe_lite": "GLM-4.7-Flash",
        "youtu": "Youtu-LLM",
        "axk1": "A.X K1",
    },
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=keys,
)


def kimi_keys(layer: Layer) -> dict[str, Any]:
    """A Kimi Linear layer's keys: a Kimi Delta Attention layer's (kda.py), or MLA's without a
    rotation."""
    if kda.is_layer(layer.attention):
        return kda.keys(layer)
    return keys(layer, rotates=False)


# Kimi Linear: MLA layers without RoPE (NoPE: q's and the shared key's d_R columns are not
# turned, the scale is qk_head_dim^−½) between Kimi Delta Attention layers (kda.py: both are the
# block's self_attn, and both end in o_proj)
KIMI_LINEAR = Family(
    names={"kimi_linear": "Kimi Linear"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=kimi_keys,
)


def bailing_keys(layer: Layer) -> dict[str, Any]:
    """A Ling 3.0 layer's keys: a Kimi Delta Attention layer's (kda.py), or MLA's with the
    interleaved rotation and its head-wise output gate: g_proj's one logit per head, repeated
    over the head's d_v columns (`wg`: σ of it multiplies each of the head's output cells)."""
    if kda.is_layer(layer.attention):
        return kda.keys(layer)
    attn = layer.attention
    out = keys(layer, interleave=True)
    out["wg"] = np.repeat(rows(attn.g_proj), int(attn.v_head_dim), axis=1)
    return out


# Ling 3.0: MLA layers with RoPE (apply_rotary_pos_emb_interleave: "pairs" on the
# qk_rope_head_dim columns, the rotary table's head_dim being qk_rope_head_dim), a query latent
# from transformers 5.25 on (q_lora_rank; before, q_proj only), kv_a_layernorm's eps the class
# default 1e-6 (not the config's rms_norm_eps), the scale qk_head_dim^−½ (times mscale² under
# YaRN) and a sigmoid gate per head (g_proj) before o_proj; every layer_group_size-th layer,
# the others Kimi Delta Attention with f_proj and g_proj in one and the bounded decay (kda.py)
BAILING_HYBRID = Family(
    names={"bailing_hybrid": "Ling 3.0 (Bailing hybrid)"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=bailing_keys,
)


def sparse_keys(layer: Layer, style: str) -> dict[str, Any]:
    """DeepSeek-V3's keys with the interleaved layout, and the indexer's (`style`: how it pairs
    the dimensions it turns)."""
    attn = layer.attention
    indexer = getattr(attn, "indexer", None)
    if indexer is None:  # GLM-MoE-DSA: a "shared" layer reads an earlier layer's top-k
        types = list(getattr(layer.config, "indexer_types", None) or [])
        full = [i for i, kind in enumerate(types[: layer.index]) if kind == "full"]
        raise QkvcalcError("extract.dsa_shared", model=model_name(layer), layer=layer.index,
                           full=full[-1] if full else "?")  # fmt: skip
    out = keys(layer, interleave=True)
    norm = indexer.k_norm
    out["indexer"] = {
        "wq": rows(indexer.wq_b),
        "wk": rows(indexer.wk),
        "k_norm": array(norm.weight),
        "k_norm_bias": array(norm.bias),
        "eps": float(norm.eps),
        "weights": rows(indexer.weights_proj),
        "heads": int(indexer.n_heads),
        "rope_style": style,
        "top_k": int(indexer.index_topk),
    }
    return out


DEEPSEEK_V32 = Family(
    names={"deepseek_v32": "DeepSeek-V3.2"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=lambda layer: sparse_keys(layer, "half"),
)

GLM_DSA = Family(
    names={"glm_moe_dsa": "GLM-MoE-DSA"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=lambda layer: sparse_keys(layer, "pairs"),
)
