"""A Kimi Delta Attention layer of Kimi Linear (its "linear_attention" layers,
KimiLinearDeltaAttention) as a problem of the input format's `kimi_delta` key with the whole
layer: KimiLinearDeltaAttention.forward, step by step.

    q_proj, k_proj, v_proj        W_Q, W_K, W_V (H·d columns each, d = linear_head_dim)
    conv1d                        its taps over the channels q | k | v ([channels, 1, K], turned
                                  to K × channels), then the activation (hidden_act: SiLU)
    forget_gate                   f_a_proj (W_fa, d_model → d), f_b_proj (W_fb, d → H·d),
                                  A_log (one per head, stored [1, 1, H, 1]), dt_bias (H·d)
    b_proj                        W_b: β = σ(X·W_b)
    g_a_proj, g_b_proj            W_ga, W_gb: the output gate σ(X·W_ga·W_gb)
    o_norm                        the gated RMSNorm's weight and eps (the config's rms_norm_eps)
    o_proj                        W_O

Its q and k are L2-normed inside the core (use_qk_l2norm_in_kernel), q scaled by d^−½: the
kimi_delta key's own q_l2 and k_l2. Every head has its own q, k and v (no grouping)."""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract.common import SILU, Layer, array, model_name, rows, stored
from qkvcalc.extract.islands import class_name

# The hybrids whose Kimi Delta Attention layers are read here (hybrid.py asks)
READ = ("kimi_linear",)


def is_layer(module: Any) -> bool:
    """Whether a block's mixer is a Kimi Delta Attention layer (KimiLinearDeltaAttention)."""
    return class_name(module).endswith("DeltaAttention")


def keys(layer: Layer) -> dict[str, Any]:
    kda = layer.attention
    heads = int(kda.num_heads)
    act = str(getattr(kda, "activation", "silu"))
    gate = str(getattr(kda.o_norm, "activation", "sigmoid"))
    if act not in SILU or gate != "sigmoid":
        raise QkvcalcError(
            "extract.kda_activation", model=model_name(layer), layer=layer.index, act=act, gate=gate
        )
    forget = kda.forget_gate
    taps = array(stored(kda.conv1d, "weight"))[:, 0, :].T  # [K, channels]
    return {
        "wq": rows(kda.q_proj),
        "wk": rows(kda.k_proj),
        "wv": rows(kda.v_proj),
        "wo": rows(kda.o_proj),
        "heads": heads,
        "mask": "causal",
        "kimi_delta": {
            "conv": np.ascontiguousarray(taps),
            "wf_a": rows(forget.f_a_proj),
            "wf_b": rows(forget.f_b_proj),
            "a_log": array(stored(forget, "A_log")).reshape(-1),
            "dt_bias": array(stored(forget, "dt_bias")).reshape(-1),
            "wb": rows(kda.b_proj),
            "wg_a": rows(kda.g_a_proj),
            "wg_b": rows(kda.g_b_proj),
            "norm": array(stored(kda.o_norm, "weight")),
            "norm_eps": float(kda.o_norm.variance_epsilon),
        },
    }
