"""MiniMax (MiniMax-Text-01): a hybrid whose layers are each softmax attention (MiniMaxAttention:
LLaMA's, read by llama.py) or lightning attention (MiniMaxLightningAttention), both of which
extract reads: a lightning layer becomes a problem with the `lightning` key
(qkvcalc/ops/lightning.py).

A lightning layer: qkv_proj fused per head ([q_h | k_h | v_h], head_dim each, as GPT-NeoX's),
silu on all of it (act_fn), each head's state decayed by e^(−λ_h) and added to, an RMSNorm over
all the heads side by side (its eps the class default 1e-6), times σ(output_gate(x)), then
out_proj. The decay rates λ_h depend on the head and on the layer's place in the stack:
λ_h = (2^(−8/H))^(h+1)·(1 − L/(N − 1 + 10⁻⁵) + 10⁻⁵), and the module keeps them (and the
decays made from them) as buffers computed in float32, which a checkpoint saves as they are;
here they are computed again in float64 (`slopes`), and a float64 run uses those
(islands.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract import llama
from qkvcalc.extract.common import Family, Layer, array, decoder, rows, split_fused
from qkvcalc.extract.islands import class_name, lightning_slopes

LIGHTNING = "MiniMaxLightningAttention"


def slopes(heads: int, layer: int, layers: int) -> np.ndarray:
    """MiniMaxLightningAttention.get_slope_rate in float64: [H]."""
    return np.asarray(lightning_slopes(heads, layer, layers), dtype=float)


def lightning_keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention
    config = layer.config
    if config.hidden_act != "silu":  # act_fn: the one activation the problem has
        raise QkvcalcError("extract.minimax_act", act=repr(config.hidden_act))
    heads, head_dim = attn.num_attention_heads, attn.head_dim
    wq, wk, wv, *_ = split_fused(attn.qkv_proj, heads, head_dim)
    return {
        "wq": wq,
        "wk": wk,
        "wv": wv,
        "wo": rows(attn.out_proj),
        "heads": heads,
        "mask": "causal",
        "lightning": {
            "slope": slopes(heads, attn.layer_idx, attn.num_hidden_layers),
            "block": int(attn.block_size),
            "act": "silu",
            "norm": array(attn.norm.weight),
            "norm_eps": float(attn.norm.variance_epsilon),
            "gate": rows(attn.output_gate),
        },
    }


def keys(layer: Layer) -> dict[str, Any]:
    if class_name(layer.attention) == LIGHTNING:
        return lightning_keys(layer)
    return llama.keys(layer)


def output(block: Any) -> Any:
    attn = block.self_attn
    return attn.out_proj if class_name(attn) == LIGHTNING else attn.o_proj


FAMILY = Family(
    names={"minimax": "MiniMax"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=output,
    keys=keys,
)
