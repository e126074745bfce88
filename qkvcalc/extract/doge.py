"""Doge: LLaMA's attention (q/k norm per head, RoPE "half", grouped-query) with its dynamic mask,
a learned bias on each key that the layer adds to the scaled scores before the softmax:

    b[g, j] = exp(A_g · softplus(v_j · W_dt + b_dt)_g)       (A: one number per K/V head g)

v_j = x_j·W_V + b_V being key j's value row (all K/V heads side by side), so the bias
depends on the key only, the same for every query row, and head h takes its K/V head's
(h // (H/G)). It is added where the causal (or sliding) mask lets a key through, the dtype's
minimum elsewhere: the problem gives it as score_bias (H × n × n, the bias of every (i, j)) and
keeps the mask of the run. Past keep_window_size keys in a row the layer keeps only that many
keys of largest bias, per head and row — no one mask of the problem can say that — so a run
where some row sees more keys than that is refused (extract.doge_window).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract import llama
from qkvcalc.extract.common import Family, Layer, array, decoder, model_name


def dynamic_bias(attn: Any, hidden: Any) -> np.ndarray:
    """[G, m]: exp(A · softplus(dt_proj(v))) as DogeAttention computes it, in the module's own
    dtype (float64 in a float64 run), from the attention's input `hidden` [1, m, d_model]."""
    import torch.nn.functional as functional

    hidden = hidden.to(attn.v_proj.weight.dtype)
    value = attn.v_proj(hidden)  # [1, m, G·d_v]: the value rows as dt_proj reads them
    dt = attn.dt_proj(value)  # [1, m, G]
    return array(functional.softplus(dt).mul(attn.A).exp()[0].transpose(0, 1))


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # DogeAttention
    out = llama.keys(layer)
    hidden = (layer.given or {}).get("hidden_states")
    if hidden is None:  # its decoder layer passes hidden_states by name: a changed call
        raise AttributeError(name="hidden_states")
    allowed = layer.allowed
    seen = layer.n if allowed is None else int(allowed.sum(axis=1).max())
    if seen > attn.keep_window_size:
        raise QkvcalcError(
            "extract.doge_window",
            model=model_name(layer),
            layer=layer.index,
            keys=seen,
            keep=int(attn.keep_window_size),
        )
    per_kv = dynamic_bias(attn, hidden)  # [G, m]
    per_head = np.repeat(per_kv, attn.num_key_value_groups, axis=0)  # [H, m]: repeat_kv's order
    n = layer.n
    out["score_bias"] = np.ascontiguousarray(
        np.broadcast_to(per_head[:, None, :], (per_head.shape[0], n, per_head.shape[1]))
    )
    return out


FAMILY = Family(
    names={"doge": "Doge"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_proj,
    keys=keys,
)
