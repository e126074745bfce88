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
kimi_delta key's own q_l2 and k_l2. Every head has its own q, k and v (no grouping).

Ling 3.0's (bailing_hybrid's BailingHybridDeltaAttention) is the same layer with each low-rank
pair in one matrix — forget_gate.f_proj (W_f, d_model → H·d, the key's `wf`) and g_proj (W_z,
d_model → H·d, `wz`) — and, with kda_safe_gate (its default), the bounded decay
g = kda_lower_bound·σ(e^(A_log)·(X·W_f + dt_bias)) (`lower_bound`); its A_log is stored [H].
Its conv1d, l2norm, scale, β and gated norm (eps: the config's rms_norm_eps) are Kimi's."""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract.common import SILU, Layer, array, model_name, rows, stored
from qkvcalc.extract.islands import class_name

# The hybrids whose Kimi Delta Attention layers are read here (hybrid.py asks)
READ = ("kimi_linear", "bailing_hybrid")


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
            **_forget(layer, forget),
            "a_log": array(stored(forget, "A_log")).reshape(-1),
            "dt_bias": array(stored(forget, "dt_bias")).reshape(-1),
            "wb": rows(kda.b_proj),
            **_output_gate(kda),
            "norm": array(stored(kda.o_norm, "weight")),
            "norm_eps": float(kda.o_norm.variance_epsilon),
        },
    }


def _forget(layer: Layer, forget: Any) -> dict[str, Any]:
    """The decay's projection: Kimi's two low-rank factors, or Ling 3.0's f_proj in one and,
    under its safe gate, the bound of the bounded decay (a number below 0, else refused)."""
    if not hasattr(forget, "f_proj"):
        return {"wf_a": rows(forget.f_a_proj), "wf_b": rows(forget.f_b_proj)}
    out: dict[str, Any] = {"wf": rows(forget.f_proj)}
    if getattr(forget, "safe_gate", False):
        bound = float(forget.lower_bound)
        if not bound < 0:
            raise QkvcalcError(
                "extract.kda_lower_bound", model=model_name(layer), layer=layer.index, bound=bound
            )
        out["lower_bound"] = bound
    return out


def _output_gate(kda: Any) -> dict[str, Any]:
    """The output gate's projection: Kimi's two low-rank factors, or Ling 3.0's g_proj in one."""
    if hasattr(kda, "g_proj"):
        return {"wz": rows(kda.g_proj)}
    return {"wg_a": rows(kda.g_a_proj), "wg_b": rows(kda.g_b_proj)}
