"""The LLaMA family — LLaMA, Mistral, Qwen2, Qwen3, Gemma 2: pre-norm (x is after
input_layernorm); separate q/k/v/o_proj linears (biases in Qwen2); grouped-query attention
with kv_heads K/V heads; head_dim from the config, not always hidden/heads; RoPE in the
"half" style (rotate_half). Per layer, read from the loaded attention module: the scale
(Gemma 2: query_pre_attn_scalar^−½), the sliding window (Mistral: every layer; Qwen: only
with use_sliding_window; Gemma 2: the sliding layers), the softcap (Gemma 2) and the per-head
q/k RMSNorm (Qwen3)."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    base_model,
    bias,
    default_scale,
    rows,
    with_optional,
)

_MISSING = object()


def rope(model: Any, config: Any, head_dim: int) -> dict[str, Any]:
    """The rotary keys of the model's rotary embedding: theta (and dims when partial) for the
    default frequencies; the frequencies themselves (inv_freq) and attention_factor for a
    scaled variant (linear, NTK, llama3, YaRN), as the model holds them."""
    rotary = base_model(model).rotary_emb
    params = config.rope_parameters
    dims = 2 * int(rotary.inv_freq.shape[-1])
    out: dict[str, Any] = {"theta": float(params["rope_theta"]), "style": "half"}
    if dims != head_dim:
        out["dims"] = dims
    if params.get("rope_type", "default") != "default":
        out["inv_freq"] = array(rotary.inv_freq).reshape(-1)
    factor = float(getattr(rotary, "attention_scaling", 1.0))
    if factor != 1.0:
        out["attention_factor"] = factor
    return out


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention
    config = layer.config
    heads = config.num_attention_heads
    kv_heads = config.num_key_value_heads
    window: Any = getattr(attn, "sliding_window", _MISSING)  # Qwen2/3 and Gemma 2: per layer
    if window is _MISSING:
        window = getattr(config, "sliding_window", None)  # Mistral: every layer
    causal = getattr(attn, "is_causal", True)
    keys: dict[str, Any] = {
        "wq": rows(attn.q_proj),
        "wk": rows(attn.k_proj),
        "wv": rows(attn.v_proj),
        "wo": rows(attn.o_proj),
        "heads": heads,
    }
    if kv_heads != heads:
        keys["kv_heads"] = kv_heads
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    keys["mask"] = "causal" if causal else "none"
    keys["rope"] = rope(layer.model, config, attn.head_dim)
    q_norm = getattr(attn, "q_norm", None)
    k_norm = getattr(attn, "k_norm", None)
    return with_optional(
        keys,
        bq=bias(attn.q_proj),
        bk=bias(attn.k_proj),
        bv=bias(attn.v_proj),
        bo=bias(attn.o_proj),
        window=int(window) if window is not None and causal else None,
        softcap=getattr(attn, "attn_logit_softcapping", None),
        q_norm=None if q_norm is None else array(q_norm.weight),
        k_norm=None if k_norm is None else array(k_norm.weight),
        norm_eps=None if q_norm is None else float(q_norm.variance_epsilon),
    )


FAMILY = Family(
    names={
        "llama": "LLaMA",
        "mistral": "Mistral",
        "qwen2": "Qwen2",
        "qwen3": "Qwen3",
        "gemma2": "Gemma 2",
    },
    stack=lambda model: base_model(model).layers,
    attention=lambda block: block.self_attn,
    keys=keys,
)
