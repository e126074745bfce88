"""Gemma 3n (`gemma3n_text`), Gemma 4 (`gemma4_text`, and a `gemma4` checkpoint's text
layers; a multimodal `gemma3n` checkpoint is not taken: its vision tower is timm's) and Gemma 4
Unified's text model (`gemma4_unified_text`, and a `gemma4_unified` checkpoint's text layers:
Gemma 4's attention, line for line): LLaMA-like
attention with four differences that the problem says in its own keys.

- The q/k norms multiply by their plain weight w (Gemma3nRMSNorm, Gemma4RMSNorm; Gemma 2 and 3
  multiply by 1 + w), and V has a norm of its own without a weight: `v_norm` with its ε.
- The scale is 1.0 (`scale`): the q/k norms keep the logits in range instead of 1/√d_k.
- Gemma 4's full-attention layers have their own head_dim and K/V head count (read from the
  layer's modules: config.num_key_value_heads is the sliding layers'), and with
  attention_k_eq_v no v_proj: V is the keys' projection before k_norm and the rotation, so the
  problem's wv is wk (and bv bk), normed by v_norm alone. Their "proportional" RoPE turns pair
  i (i with i + d/2, the whole head_dim) by θ^(−2i/d) for i < R/2 and not at all beyond
  (rope.py: inv_freq with zeros).
- KV sharing: the last num_kv_shared_layers layers have no K and V of their own; each reuses
  the K and V of the last earlier layer of its type (sliding or full), made from that layer's
  attention input. The problem says so as cross-attention: `source` is that earlier layer's x,
  and wk, wv, k_norm are its weights; the queries are this layer's x·W_Q. The runner records
  that x in the same run (Family.shares).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    base_keys,
    bias,
    decoder,
    default_scale,
    mask_keys,
    rows,
)
from qkvcalc.extract.llama import norm_eps, rope


def shares(model: Any, index: int) -> int | None:
    """The earlier layer whose K and V layer `index` reuses (KV sharing), or None: the last
    layer before the shared ones of the same type (transformers' kv_sharing_modes "store")."""
    attention = decoder(model).layers[index].self_attn
    if not getattr(attention, "is_kv_shared_layer", False):
        return None
    config = attention.config
    modes, kinds = config.kv_sharing_modes, config.layer_types
    return max(i for i in range(index) if modes[i] == "store" and kinds[i] == kinds[index])


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention
    config = attn.config  # the text model's
    earlier = shares(layer.model, layer.index)
    kv = attn if earlier is None else decoder(layer.model).layers[earlier].self_attn
    values = getattr(kv, "v_proj", None)
    values = kv.k_proj if values is None else values  # Gemma 4's full layers: K = V
    parts: list[np.ndarray | None] = [rows(attn.q_proj), rows(kv.k_proj), rows(values)]
    parts += [bias(attn.q_proj), bias(kv.k_proj), bias(values)]
    kv_heads = kv.k_proj.out_features // attn.head_dim
    out = base_keys(parts, attn.o_proj, config.num_attention_heads, kv_heads)
    if not default_scale(attn.scaling, attn.head_dim):
        out["scale"] = float(attn.scaling)
    out.update(mask_keys(layer, getattr(attn, "is_causal", True)))
    out["rope"] = rope(layer, attn.head_dim)
    out["q_norm"] = array(attn.q_norm.weight)  # x / √(mean(x²) + ε) · w: the plain weight
    out["k_norm"] = array(kv.k_norm.weight)
    out["norm_eps"] = norm_eps(attn.q_norm)
    out["v_norm"] = {"eps": norm_eps(kv.v_norm)}
    if earlier is not None:
        assert layer.given is not None
        out["source"] = np.asarray(layer.given["kv_source"])
    return out


FAMILY = Family(
    names={
        "gemma3n_text": "Gemma 3n",
        "gemma4_text": "Gemma 4",
        "gemma4": "Gemma 4",
        "gemma4_unified_text": "Gemma 4 Unified",  # Gemma 4's text attention, the same keys
        "gemma4_unified": "Gemma 4 Unified",  # a multimodal checkpoint's text layers
    },
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=keys,
    shares=shares,
)
