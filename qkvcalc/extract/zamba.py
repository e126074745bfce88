"""Zamba and Zamba2: Mamba layers, and hybrid layers that call one shared attention block.

Each layer of the stack is a Mamba layer or a hybrid layer (layers_block_type "hybrid"): a
hybrid layer runs a shared transformer block, then a linear, then its own Mamba layer. The
shared block's input is the residual stream h concatenated with the original embeddings e, so
its RMSNorm and its attention are 2·d_model wide: x = RMSNorm([h | e]), the attention module's
input. Zamba shares one block among all its hybrid layers; Zamba2 has num_mem_blocks blocks
taken in turn, and its attention is called with the hybrid layer's index (layer_idx) and adds
that invocation's own adapters to Q, K and V: q = x·W_Qᵀ + B_i(A_i(x)) with two bias-free
linears A_i (2d → rank) and B_i (rank → 2d), no scaling — folded here into one weight,
W_Q + (B_i·A_i) (rows layout: W_Qᵀ + A_iᵀ·B_iᵀ), the same for K and V.

A layer's number is its index in the stack (the layer_idx the shared attention is called with,
the index in layers_block_type); the hybrid layers are the attention layers (hybrid.py), and
extract reads the attention of that invocation. Its head size is 2·d_model / H, its scale
(d_k / 2)^−½ (the problem's `scale`), RoPE when Zamba2's use_mem_rope says so, causal; the
output is o_proj's, the attention module's own output, before the hybrid layer's linear.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.extract import hybrid, llama
from qkvcalc.extract.common import Family, Layer, decoder, rows, stored
from qkvcalc.i18n import Msg

PARTS = ("q", "k", "v")


def shared_attention(block: Any) -> Any:
    """The attention module a hybrid layer calls: its shared block's (Zamba2: shared_transformer,
    Zamba: shared_transf)."""
    shared = getattr(block, "shared_transformer", None)
    return (shared if shared is not None else block.shared_transf).self_attn


def adapter(module: Any, width: int) -> np.ndarray:
    """An adapter as one matrix in the rows layout (y = x·M): nn.Sequential(A, B) of two
    bias-free linears is A's rows times B's, x·Aᵀ·Bᵀ (d × rank times rank × d); an
    nn.Identity (a slot of another block, never called by a model transformers built) adds x
    itself."""
    import torch

    if isinstance(module, torch.nn.Identity):
        return np.eye(width)
    first, *rest = (rows(linear) for linear in module)
    for found in rest:
        first = first @ found
    return first


def adapters(attn: Any, layer: int) -> dict[str, np.ndarray]:
    """Zamba2's adapters of the invocation at layer `layer`, as terms of wq, wk and wv; none
    when the config has none (use_shared_attention_adapter false; Zamba never has them)."""
    if not getattr(attn.config, "use_shared_attention_adapter", False):
        return {}
    slot = attn.layer_dic[layer]
    width = int(attn.attention_hidden_size)
    return {
        f"w{part}": adapter(getattr(attn, f"linear_{part}_adapter_list")[slot], width)
        for part in PARTS
    }


def keys(layer: Layer) -> dict[str, Any]:
    """As LLaMA's (q/k/v/o_proj, kv_heads, the scale, the mask, RoPE), the invocation's
    adapters folded into W_Q, W_K and W_V."""
    found = llama.keys(layer)
    for name, term in adapters(layer.attention, layer.index).items():
        found[name] += term  # in place: W is a fresh float64 copy of the layer's weight
    return found


def notes(model: Any, index: int) -> list[Msg]:
    """What the description says of layer `index`'s weights: the layers that call the same
    block (whose weights are one tensor in the loaded model), and Zamba2's adapters folded in."""
    stack = decoder(model).layers
    kinds = hybrid.layer_types(model.config)
    if index >= len(kinds) or kinds[index] != "hybrid":
        return []
    mine = stored(shared_attention(stack[index]).q_proj, "weight")
    shared = [
        i
        for i, kind in enumerate(kinds[: len(stack)])
        if kind == "hybrid" and stored(shared_attention(stack[i]).q_proj, "weight") is mine
    ]
    found = []
    if len(shared) > 1:
        found.append(Msg("extract.shared_block", layers=", ".join(map(str, shared))))
    if getattr(model.config, "use_shared_attention_adapter", False):
        found.append(Msg("extract.adapters_folded"))
    return found


FAMILY = Family(
    names={"zamba": "Zamba", "zamba2": "Zamba2"},
    stack=lambda model: decoder(model).layers,
    attention=shared_attention,
    output=lambda block: shared_attention(block).o_proj,
    keys=keys,
    notes=notes,
)
