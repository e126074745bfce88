"""The LLaMA family — LLaMA, Mistral, Qwen2, Qwen3, Gemma 2 and 3, Phi-3, Phi, StableLM,
StarCoder2, Mixtral, Qwen2-MoE, SmolLM3, EXAONE 4, gpt-oss, Cohere and Cohere 2, OLMo 2, HunYuan,
Llama 4's text layers (NoPE layers with the attention temperature), OLMo 3, Apertus, Seed-OSS,
GLM-4 and GLM-4.5, Qwen3-MoE, ERNIE 4.5 (dense and MoE), Granite and Granite MoE, Granite SWA
and Granite MoE SWA (sliding layers, sinks, a RoPE base per layer: rotary_module), the attention
layers of the hybrids (Qwen3-Next and Qwen3.5 with the output gate in q_proj, Bamba, Jamba,
Granite 4, LFM2, LFM3 with its gate of one logit per head, OLMo-Hybrid, Falcon-H1 with its
key_multiplier, Nemotron-H's attention
blocks: NEMOTRON_H;
hybrid.py says which layers are attention; Qwen3-Next's and Qwen3.5's Gated DeltaNet layers
are gdn.py's), and the other LLaMA-like model types FAMILY.names lists (OLMo, Gemma, GLM,
Helium, Ministral, dots.llm1 …): the attention
module's input is x (after input_layernorm in the pre-norm ones); separate q/k/v_proj linears
(biases in Qwen2, StarCoder2, gpt-oss, Phi, StableLM, Seed-OSS, GLM, ERNIE 4.5 and Granite when
their config says so) or Phi-3's fused qkv_proj, o_proj (Phi: dense); grouped-query attention
with kv_heads K/V heads; head_dim from the config, not always hidden/heads; RoPE in the "half"
style (rotate_half; Cohere's, GLM-4's and ERNIE 4.5's rotations are interleaved: "pairs"; GLM-4
and GLM-4.5 rotate the first partial_rotary_factor of each head, a half by default; NanoChat
turns by −θ: negative inv_freq). Per layer,
read from the loaded model: the scale (Gemma: query_pre_attn_scalar^−½; Granite:
attention_multiplier), the mask and window the layer was given in the run (so each model's own
rule for which layers slide is the one that counts), the rotary frequencies of the layer's type
(Gemma 3: local and global bases and scaling), whether the layer rotates at all (NoPE layers:
SmolLM3's no_rope_layers, the global layers of EXAONE 4 and MoE, Kolibri 1 and Cohere 2), the
softcap (Gemma 2), the q/k norm, gpt-oss's sinks, AFMoE's output gate (wg) and DiffLlama's
differential attention (λ, λ_init, the group norm's ε: differential). The
mixture-of-experts MLPs (Mixtral, Qwen2-MoE, gpt-oss, GLM-4.5, Qwen3-MoE, ERNIE 4.5 MoE, Granite
MoE …) only run before layer L's attention. The q/k norms: RMSNorm of each head (Qwen3, EXAONE 4,
Apertus, GLM-4.5, Gemma 3 with 1 + w), of the whole projection (OLMo 2 and 3, OLMoE, MiniMax-M2:
weights of H·d_k), after RoPE (HunYuan's query_layernorm and key_layernorm); LayerNorm with one
weight row per head (Cohere's use_qk_norm, StableLM's qk_layernorm) or one vector and a bias
(Phi's qk_layernorm)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from qkvcalc.extract import gdn
from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    base_keys,
    bias,
    decoder,
    default_scale,
    float64,
    mask_keys,
    rows,
    split_columns,
    with_optional,
)
from qkvcalc.extract.rope import buffer, frequencies, scaling
from qkvcalc.extract.rope import layer_type as rope_layer_type
from qkvcalc.i18n import Msg


def rope(
    layer: Layer, head_dim: int, style: str = "half", mirrored: bool = False
) -> dict[str, Any]:
    """The rotary keys of layer L (of its layer type when the model has several): theta (and
    dims when partial) for the default frequencies; for a scaled variant (linear, NTK, llama3,
    YaRN, longrope) the frequencies themselves (inv_freq) and attention_factor, for this run's
    length — computed in float64 from the config when the run is float64 (rope.py), the
    module's own numbers otherwise."""
    rotary = rotary_module(layer)
    kind = rope_layer_type(rotary, rotary.config, layer.index)  # the text model's config
    params = rotary.config.rope_parameters
    params = params if kind is None else params[kind]
    dims = 2 * int(buffer(rotary, kind).shape[-1])
    out: dict[str, Any] = {"theta": float(params["rope_theta"]), "style": style}
    if dims != head_dim:
        out["dims"] = dims
    found = frequencies(rotary, kind, layer.n) if float64(layer.attention) else None
    inv_freq, factor = found or (array(buffer(rotary, kind)).reshape(-1), scaling(rotary, kind))
    if params.get("rope_type", "default") != "default":
        out["inv_freq"] = inv_freq
    if mirrored:  # NanoChat turns the other way: by −θ, the same as frequencies of −1 times
        out["inv_freq"] = -inv_freq
    if factor != 1.0:
        out["attention_factor"] = factor
    return out


def rotary_module(layer: Layer) -> Any:
    """Layer L's rotary module: the model's one (LFM2-MoE's pos_emb), Granite SWA's of the
    layer's own base (layer_rope_theta: one module per base, in rotary_embs), or the attention's
    own (RecurrentGemma's)."""
    own = getattr(layer.attention, "rotary_emb", None)
    if own is not None:
        return own
    stack = decoder(layer.model)
    bases = getattr(layer.config, "layer_rope_theta", None)
    if bases is not None and hasattr(stack, "rotary_embs"):
        base = bases[layer.index]
        return next(r for r in stack.rotary_embs if r.config.rope_parameters["rope_theta"] == base)
    return stack.rotary_emb if hasattr(stack, "rotary_emb") else stack.pos_emb


# The layers that do not rotate (NoPE): SmolLM3's no_rope_layers, EXAONE 4's and Cohere 2's
# global layers; every other layer of the family rotates.
ROTATES: dict[str, Callable[[Any], bool]] = {
    "smollm3": lambda attn: bool(attn.use_rope),
    "exaone4": lambda attn: attn.sliding_window is None or attn.is_sliding,
    "exaone_moe": lambda attn: attn.sliding_window is None or attn.is_sliding,
    "kolibri1": lambda attn: attn.sliding_window is None or attn.is_sliding,
    "cohere2": lambda attn: attn.sliding_window is not None,
    # and its dense prefix layers with prefix_dense_sliding_window_pattern 1 (force_rope)
    "cohere2_moe": lambda attn: attn.sliding_window is not None or bool(attn.force_rope),
    "llama4_text": lambda attn: bool(attn.use_rope),
    "afmoe": lambda attn: bool(attn.is_local_attention),
    "flint": lambda attn: attn.sliding_window is not None,
    "jamba": lambda attn: False,  # no positions in its attention: the Mamba layers order tokens
    "granitemoehybrid": lambda attn: attn.config.position_embedding_type == "rope",
    "nemotron_h": lambda attn: False,  # no positions in its attention, as Jamba's
    "zamba": lambda attn: False,  # its shared attention has no positions (zamba.py)
    "zamba2": lambda attn: bool(attn.config.use_mem_rope),
    # its released checkpoints have no rope_theta, and then no rotation
    "olmo_hybrid": lambda attn: bool((attn.config.rope_parameters or {}).get("rope_theta")),
    # a base of 0 in layer_rope_theta: no rotation
    "granite_swa": lambda attn: bool(attn.config.layer_rope_theta[attn.layer_idx]),
    "granitemoe_swa": lambda attn: bool(attn.config.layer_rope_theta[attn.layer_idx]),
    # no rope parameters for a layer type (its full layers): NoPE, with SSMax's factor on q
    "beam": lambda attn: bool(attn.config.rope_parameters[attn.config.layer_types[attn.layer_idx]]),
    "cohere_compass_text": lambda attn: bool(
        attn.config.rope_parameters[attn.config.layer_types[attn.layer_idx]]
    ),
}
# rotate_half as cat(x₂, −x₁), not cat(−x₂, x₁): a rotation by −θ
MIRRORED = ("nanochat",)
# Model types whose layers have query heads of their own (Laguna: num_attention_heads_per_layer)
OWN_HEADS = ("laguna",)
# Model types whose layers have K/V heads of their own (MiMo-V2-Flash: twice the config's on
# its sliding layers): H / the module's num_key_value_groups
OWN_KV_HEADS = ("mimo_v2_flash",)
# The output gate σ(x·W_G + b_G) on each head's output before o_proj, from its own projection
GATES = {
    "afmoe": lambda attn: attn.gate_proj,
    "beam": lambda attn: attn.gate_proj,
    "lfm3": lambda attn: attn.g_proj,  # one logit per head (HEAD_GATES)
    "laguna": lambda attn: attn.g_proj,  # softplus (GATE_ACTS); per head or per element
}
# Gates of one logit per head, σ(x·w_h) on each of the head's d_v outputs: W_G is w_h repeated
# d_v times (Laguna's with `gating` true or "per-head", its default; "per-element": one each)
HEAD_GATES: dict[str, Callable[[Any], bool]] = {
    "lfm3": lambda attn: True,
    "laguna": lambda attn: bool(attn.gate_per_head),
}
# The gates that are not σ: gate_act (Laguna: F.softplus(g_proj(x)))
GATE_ACTS = {"laguna": "softplus"}
# Qwen3-Next's and Qwen3.5's full-attention layers: q_proj holds each head's query and its output
# gate side by side, [q_h | gate_h] (head_dim each); the gate is σ(gate_h) on head h's output
QUERY_GATES = ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")
STYLE = {
    "cohere": "pairs",
    "cohere2": "pairs",
    "cohere2_moe": "pairs",
    "llama4_text": "pairs",  # view_as_complex of (2i, 2i+1)
    "glm": "pairs",
    "glm4": "pairs",
    "helium": "pairs",  # the first R dims (partial_rotary_factor), 2i with 2i+1
    "ernie4_5": "pairs",
    "ernie4_5_moe": "pairs",
}  # Cohere's rotary tables are interleaved: 2i with 2i+1 (GLM-4, ERNIE 4.5: the same pairs)


def projections(attn: Any, heads: int, kv_heads: int) -> list[np.ndarray | None]:
    """[wq, wk, wv, bq, bk, bv]: separate q/k/v_proj, or Phi-3's fused qkv_proj holding
    [Q | K | V] along its output."""
    fused = getattr(attn, "qkv_proj", None)
    if fused is None:
        parts = [attn.q_proj, attn.k_proj, attn.v_proj]
        return [rows(part) for part in parts] + [bias(part) for part in parts]
    return split_columns(fused, [heads * attn.head_dim, *[kv_heads * attn.head_dim] * 2])


# The RMSNorms that multiply by (1 + w), by their class's name
ONE_PLUS = (
    "Gemma",
    "Qwen3NextRMSNorm",
    "Qwen3_5RMSNorm",
    "Qwen3_5MoeRMSNorm",
    "MiniMaxM3VLRMSNorm",
)


def norm_weight(norm: Any) -> np.ndarray:
    """An RMSNorm's weight as x / √(mean(x²) + eps) · w reads it: Gemma's, Qwen3-Next's and
    Qwen3.5's norms multiply by (1 + w)."""
    weight = array(norm.weight)
    return 1.0 + weight if any(name in type(norm).__name__ for name in ONE_PLUS) else weight


def query_gate(weight: Any, found: Any, heads: int, head_dim: int) -> list[Any]:
    """[wq, bq, wg, bg] from a q_proj that holds [q_h | gate_h] per head (QUERY_GATES): its
    columns (weight, bias `found`) viewed as (heads, 2, head_dim), the first of each pair the
    query, the second the gate."""
    d_model = weight.shape[0]
    paired = weight.reshape(d_model, heads, 2, head_dim)
    cols = [np.ascontiguousarray(paired[:, :, i].reshape(d_model, -1)) for i in (0, 1)]
    if found is None:
        return [cols[0], None, cols[1], None]
    halves = found.reshape(heads, 2, head_dim)
    return [cols[0], halves[:, 0].reshape(-1), cols[1], halves[:, 1].reshape(-1)]


def out_projection(attn: Any) -> Any:
    """o_proj (Phi: dense; LFM2: out_proj)."""
    if hasattr(attn, "out_proj"):
        return attn.out_proj
    return attn.o_proj if hasattr(attn, "o_proj") else attn.dense


def keys(layer: Layer) -> dict[str, Any]:
    if gdn.is_layer(layer.attention):  # a Qwen3-Next or Qwen3.5 linear-attention layer
        return gdn.keys(layer)
    attn = layer.attention
    config = getattr(attn, "config", layer.config)  # a multimodal model's: its text config
    heads = config.num_attention_heads
    if config.model_type in OWN_HEADS:  # the layer's own
        heads = int(attn.num_heads)
    kv_heads = config.num_key_value_heads
    if config.model_type in OWN_KV_HEADS:  # the layer's own, not the config's
        kv_heads = heads // attn.num_key_value_groups
    out = out_projection(attn)
    parts = projections(attn, heads, kv_heads)
    gated = None
    if config.model_type in QUERY_GATES:
        parts[0], parts[3], *gated = query_gate(parts[0], parts[3], heads, attn.head_dim)
    keys = base_keys(parts, out, heads, kv_heads)
    value_scale = getattr(attn, "v_scale", 1.0)  # MiMo-V2-Flash: V = (x·W_V + b_V) · v_scale
    if value_scale != 1.0:
        keys.update({k: keys[k] * value_scale for k in ("wv", "bv") if k in keys})
    multiplier = getattr(attn, "key_multiplier", None)  # Falcon-H1: K = x·W_K, times it
    if multiplier is not None and multiplier != 1:
        keys.update({k: keys[k] * multiplier for k in ("wk", "bk") if k in keys})
    if not default_scale(attn.scaling, attn.head_dim):
        keys["scale"] = attn.scaling
    keys.update(mask_keys(layer, getattr(attn, "is_causal", True)))
    if config.model_type == "beam" and not ROTATES["beam"](attn):
        keys["attn_temperature"] = beam_temperature(layer.n)
    if ROTATES.get(config.model_type, lambda attn: True)(attn):
        style = STYLE.get(config.model_type, "half")
        keys["rope"] = rope(layer, attn.head_dim, style, config.model_type in MIRRORED)
    sinks = getattr(attn, "sinks", None)
    gate = GATES[config.model_type](attn) if config.model_type in GATES else None
    wg = None if gate is None else rows(gate)
    if wg is not None and HEAD_GATES.get(config.model_type, lambda attn: False)(attn):
        wg = np.repeat(wg, attn.head_dim, axis=1)
    if wg is not None and config.model_type in GATE_ACTS:
        keys["gate_act"] = GATE_ACTS[config.model_type]
    if gated is not None:
        keys.update(with_optional({}, wg=gated[0], bg=gated[1]))
    if getattr(attn, "attn_temperature_tuning", False) and not attn.use_rope:  # Llama 4's NoPE
        keys["attn_temperature"] = {
            "floor_scale": float(attn.floor_scale),
            "attn_scale": float(attn.attn_scale),
        }
    if hasattr(attn, "lambda_init"):  # DiffLlama: head i pairs with head i + H/2
        keys["differential"] = differential_keys(attn)
    return with_optional(
        {**keys, **qk_norm_keys(attn)},
        softcap=getattr(attn, "attn_logit_softcapping", None),
        sinks=None if sinks is None else array(sinks),
        wg=wg,
        bg=None if gate is None else gate_bias(attn, gate),
    )


def gate_bias(attn: Any, gate: Any) -> np.ndarray | None:
    """The output gate's b_G: the gate projection's bias, or Beam's gate_bias of one number per
    head, added to each of the head's d_v logits (repeated d_v times)."""
    per_head = getattr(attn, "gate_bias", None)
    if per_head is None:
        return bias(gate)
    return np.repeat(array(per_head), attn.head_dim)


def beam_temperature(n: int) -> list[float]:
    """Beam's factor on q in its layers without RoPE (compute_attention_scaling, "scalable
    softmax"): (1 + (i + 1)/2048)^0.1 at position i, as exp(0.1·log1p((i + 1)/2048))."""
    positions = np.arange(n, dtype=np.float64)
    return [float(t) for t in np.exp(0.1 * np.log1p((positions + 1) / 2048))]


def differential_keys(attn: Any) -> dict[str, Any]:
    """DiffLlama's λ as its forward makes it: each e^(Σ λ_q·λ_k) summed in float32 (the
    module's dtype=torch.float32; in a float64 run lifted to float64, as islands.py lifts the
    run's own sums), back in the query's dtype, then λ₁ − λ₂ + λ_init; λ_init and the group
    norm's ε as the module holds them."""
    import torch

    dtype = attn.q_proj.weight.dtype
    summed = torch.float64 if float64(attn) else torch.float32
    with torch.no_grad():
        one, two = (
            torch.exp(torch.sum(q * k, dim=-1, dtype=summed)).to(dtype)
            for q, k in ((attn.lambda_q1, attn.lambda_k1), (attn.lambda_q2, attn.lambda_k2))
        )
        lam = one - two + attn.lambda_init
    return {
        "lambda": float(lam),
        "lambda_init": float(attn.lambda_init),
        "eps": float(attn.groupnorm.eps),
    }


# Llama 4's weightless q/k norm, by its class's name in transformers 5.23–5.24 and since 5.25
# (eps, then variance_epsilon)
WEIGHTLESS_NORMS = ("Llama4TextL2Norm", "Llama4TextWeightlessRMSNorm", "NanoChatRMSNorm")


def qk_norm_keys(attn: Any) -> dict[str, Any]:
    """q_norm, k_norm, norm_eps and how the norm works (qk_norm), from the attention module's
    norms: none, RMSNorm per head or over the projection, before or after RoPE, LayerNorm."""
    if getattr(attn, "qk_layernorm", False):  # Phi: nn.LayerNorm; StableLM: one per head
        q, k = attn.q_layernorm, attn.k_layernorm
        if hasattr(q, "norms"):  # StableLmLayerNormPerHead: a LayerNorm without bias per head
            return layer_norm_keys(
                np.stack([array(n.weight) for n in q.norms]),
                np.stack([array(n.weight) for n in k.norms]),
                None,
                None,
                float(q.norms[0].eps),
            )
        return layer_norm_keys(array(q.weight), array(k.weight), bias(q), bias(k), float(q.eps))
    if getattr(attn, "use_qk_norm", False) and "LayerNorm" in type(attn.q_norm).__name__:
        # Cohere: a LayerNorm without bias, weights [H, d_k] and [G, d_k]
        q, k = attn.q_norm, attn.k_norm
        return layer_norm_keys(array(q.weight), array(k.weight), None, None, norm_eps(q))
    weightless = getattr(attn, "qk_norm", getattr(attn, "q_norm", None))
    if type(weightless).__name__ in WEIGHTLESS_NORMS:
        # Llama 4's RoPE layers and NanoChat: x / √(mean(x²) + ε) without a weight, after the
        # rotation
        ones = np.ones(attn.head_dim)
        eps = norm_eps(weightless)
        return {"q_norm": ones, "k_norm": ones, "norm_eps": eps, "qk_norm": {"after_rope": True}}
    after_rope = hasattr(attn, "query_layernorm")  # HunYuan: RMSNorm after the rotation
    q = getattr(attn, "query_layernorm", getattr(attn, "q_norm", None))
    k = getattr(attn, "key_layernorm", getattr(attn, "k_norm", None))
    if q is None and k is None:  # LFM2: q_layernorm and k_layernorm, RMSNorm per head
        q, k = getattr(attn, "q_layernorm", None), getattr(attn, "k_layernorm", None)
    if q is None and k is None:
        return {}
    out: dict[str, Any] = {}
    how: dict[str, Any] = {}
    for name, norm in (("q_norm", q), ("k_norm", k)):
        if norm is not None:
            out[name] = norm_weight(norm)
            if out[name].size != attn.head_dim:  # OLMo 2: the whole projection, H·d_k
                how["over"] = "projection"
    out["norm_eps"] = norm_eps(q if q is not None else k)
    if after_rope:
        how["after_rope"] = True
    return {**out, **({"qk_norm": how} if how else {})}


def layer_norm_keys(
    q: np.ndarray, k: np.ndarray, q_bias: Any, k_bias: Any, eps: float
) -> dict[str, Any]:
    biases = {s: b for s, b in (("q", q_bias), ("k", k_bias)) if b is not None}
    how: dict[str, Any] = {"kind": "layer", **({"bias": biases} if biases else {})}
    return {"q_norm": q, "k_norm": k, "norm_eps": eps, "qk_norm": how}


def norm_eps(norm: Any) -> float:
    return float(getattr(norm, "variance_epsilon", getattr(norm, "eps", 1e-6)))


def notes(model: Any, index: int) -> list[Msg]:
    """What the description says of layer `index`'s weights: MiMo-V2-Flash's factor on V,
    folded into W_V and b_V (keys)."""
    stack = decoder(model).layers
    attn = getattr(stack[index], "self_attn", None) if index < len(stack) else None
    scale = getattr(attn, "v_scale", 1.0)
    return [] if scale == 1.0 else [Msg("extract.value_scale_folded", scale=float(scale))]


FAMILY = Family(
    names={
        "llama": "LLaMA",
        "mistral": "Mistral",
        "qwen2": "Qwen2",
        "qwen3": "Qwen3",
        "gemma2": "Gemma 2",
        "gemma3_text": "Gemma 3",
        "gemma3": "Gemma 3",
        "phi3": "Phi-3",
        "starcoder2": "StarCoder2",
        "mixtral": "Mixtral",
        "qwen2_moe": "Qwen2-MoE",
        "smollm3": "SmolLM3",
        "exaone4": "EXAONE 4",
        "gpt_oss": "gpt-oss",
        "cohere2": "Cohere 2",
        "phi": "Phi",
        "stablelm": "StableLM",
        "cohere": "Cohere",
        "olmo2": "OLMo 2",
        "hunyuan_v1_dense": "HunYuan",
        "llama4_text": "Llama 4",
        "llama4": "Llama 4",  # a multimodal checkpoint's text layers (language_model)
        "olmo3": "OLMo 3",
        "apertus": "Apertus",
        "seed_oss": "Seed-OSS",
        "glm4": "GLM-4",
        "glm4_moe": "GLM-4.5",
        "qwen3_moe": "Qwen3-MoE",
        "ernie4_5": "ERNIE 4.5",
        "ernie4_5_moe": "ERNIE 4.5 MoE",
        "granite": "Granite",
        "granitemoe": "Granite MoE",
        "granitemoeshared": "Granite MoE (shared experts)",
        "granite_swa": "Granite SWA",  # sliding layers, sinks, a RoPE base per layer
        "granitemoe_swa": "Granite MoE SWA",
        "olmo": "OLMo",
        "olmoe": "OLMoE",
        "flex_olmo": "FlexOlmo",
        "gemma": "Gemma",
        "vaultgemma": "VaultGemma",
        "glm": "GLM",
        "helium": "Helium",
        "arcee": "Arcee AFM",
        "ministral": "Ministral",
        "cwm": "CWM",
        "hyperclovax": "HyperCLOVA X",
        "solar_open": "Solar Open",
        "exaone_moe": "EXAONE MoE",
        "hunyuan_v1_moe": "HunYuan MoE",
        "minimax_m2": "MiniMax-M2",
        "mellum": "Mellum",
        "kolibri1": "Kolibri 1",
        "hy_v3": "Hy3",
        "phimoe": "PhiMoE",
        "jais2": "Jais 2",
        "nemotron": "Nemotron",
        "cohere2_moe": "Cohere 2 MoE",
        "ministral3": "Ministral 3",
        "afmoe": "AFMoE",
        "flint": "Flint",
        "nanochat": "NanoChat",
        "internlm3": "InternLM3",  # transformers runs these two as LLaMA
        "iquestcoder": "IQuest-Coder",
        "diffllama": "DiffLlama",  # differential attention: λ, λ_init and ε (differential)
        "qwen3_next": "Qwen3-Next",  # hybrids: their full-attention layers (hybrid.py)
        "qwen3_5": "Qwen3.5",
        "qwen3_5_text": "Qwen3.5",
        "qwen3_5_moe": "Qwen3.5 MoE",
        "qwen3_5_moe_text": "Qwen3.5 MoE",
        "bamba": "Bamba",
        "jamba": "Jamba",
        "granitemoehybrid": "Granite 4 (hybrid)",
        "lfm2": "LFM2",
        "lfm2_moe": "LFM2-MoE",
        "falcon_h1": "Falcon-H1",  # attention and Mamba side by side in every layer
        "olmo_hybrid": "OLMo-Hybrid",
        "dots1": "dots.llm1",
        "mimo_v2_flash": "MiMo-V2-Flash",
        "beam": "Beam",
        "lfm3": "LFM3",
        "cohere_compass_text": "Cohere Compass",
        "minimax_m3_vl_text": "MiniMax-M3",  # its dense-attention layers (sparse ones refused)
        "laguna": "Laguna",  # its softplus output gate (gate_act), heads per layer
        "aria_text": "Aria",  # the text model of Aria (its experts run in layers before L only)
    },
    stack=lambda model: decoder(model).layers,
    attention=gdn.mixer,  # self_attn, or a Gated DeltaNet layer's linear_attn (gdn.py)
    output=lambda block: out_projection(gdn.mixer(block)),
    keys=keys,
    notes=notes,
)

# Nemotron-H: each block holds one mixer — Mamba 2, attention (without positions), an MLP or
# an MoE (hybrid.py)
NEMOTRON_H = Family(
    names={"nemotron_h": "Nemotron-H"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.mixer,
    output=lambda block: block.mixer.o_proj,
    keys=keys,
)

# RecurrentGemma: its attention layers (local: a window) between RG-LRU recurrent layers, each
# layer's mixer its temporal_block (hybrid.py says which are attention), its rotary module its own
RECURRENT_GEMMA = Family(
    names={"recurrent_gemma": "RecurrentGemma"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.temporal_block,
    output=lambda block: block.temporal_block.o_proj,
    keys=keys,
)
