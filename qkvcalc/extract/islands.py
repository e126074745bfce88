"""transformers keeps some steps in float32 even in a float64 model: the softmax
(softmax(..., dtype=torch.float32)), RMSNorm and T5's layer norm (x.to(torch.float32)), the
rotary tables (inv_freq built in float32, angles in float32), BLOOM's ALiBi slopes and Gemma's
embedding scale √d_model (a float32 buffer in a model built in float32 and converted). With
those, x at layer L is off by ~2e-7 relative. `float64_islands(model)` lifts them for one run:
the softmax keeps its input's float64, the norms and rotary embeddings of this model compute in
float64 (their instance's forward replaced), BLOOM's slopes are float64, and GPT-2's
reorder_and_upcast_attn path (float32 by design) is switched to the ordinary one, which is the
same math. Everything is restored when the block ends, also on an error.

Scaled RoPE variants (linear, NTK, llama3, YaRN …) keep the frequencies transformers computed
(float32 numbers, now multiplied by positions in float64); the problem carries those same
numbers as inv_freq, so qkvcalc and the run agree.
"""

from __future__ import annotations

import contextlib
import math
import types
from collections.abc import Iterator
from typing import Any

_STANDARD_RMS = ("LlamaRMSNorm", "MistralRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm", "T5LayerNorm")
_GEMMA_RMS = ("Gemma2RMSNorm",)  # x·rsqrt(mean(x²) + eps)·(1 + w)


def _rms(module: Any, hidden: Any) -> Any:
    eps = getattr(module, "variance_epsilon", getattr(module, "eps", 1e-6))
    normed = hidden * (hidden.pow(2).mean(-1, keepdim=True) + eps).rsqrt()
    if type(module).__name__ in _GEMMA_RMS:
        return normed * (1.0 + module.weight)
    return module.weight * normed


def _rotary_forward(inv_freq: Any) -> Any:
    def forward(module: Any, x: Any, position_ids: Any) -> Any:
        import torch

        angles = position_ids[..., None].to(torch.float64) * inv_freq.to(x.device)
        emb = torch.cat((angles, angles), dim=-1)
        scaling = float(getattr(module, "attention_scaling", 1.0))
        return (emb.cos() * scaling).to(x.dtype), (emb.sin() * scaling).to(x.dtype)

    return forward


def default_inv_freq(theta: float, dims: int) -> Any:
    """θ_i = theta^(−2i/R), i = 0 … R/2 − 1, in float64."""
    import torch

    return torch.tensor([theta ** (-2.0 * i / dims) for i in range(dims // 2)], dtype=torch.float64)


def _alibi_slopes(num_heads: int, device: Any) -> Any:
    """BLOOM's _get_alibi_slopes (the ALiBi paper's recipe), in float64."""
    import torch

    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2 ** (-(2 ** -(math.log2(closest) - 3)))
    slopes = [base**power for power in range(1, 1 + closest)]
    if closest != num_heads:
        extra = 2 ** (-(2 ** -(math.log2(2 * closest) - 3)))
        remaining = min(closest, num_heads - closest)
        slopes += [extra**power for power in range(1, 1 + 2 * remaining, 2)]
    return torch.tensor(slopes, dtype=torch.float64, device=device)


@contextlib.contextmanager
def float64_islands(model: Any) -> Iterator[None]:
    import torch
    import torch.nn.functional as functional

    restore: list[Any] = []
    softmax = functional.softmax

    def float64_softmax(input: Any, dim: Any = None, _stacklevel: int = 3, dtype: Any = None):
        if dtype == torch.float32 and input.dtype == torch.float64:
            dtype = None
        return softmax(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)

    try:
        functional.softmax = float64_softmax
        restore.append(lambda: setattr(functional, "softmax", softmax))
        for module in model.modules():
            kind = type(module).__name__
            if kind in _STANDARD_RMS + _GEMMA_RMS:
                module.forward = types.MethodType(_rms, module)
            elif kind.endswith("RotaryEmbedding") and hasattr(module, "inv_freq"):
                params = module.config.rope_parameters
                if params.get("rope_type", "default") == "default":
                    inv_freq = default_inv_freq(
                        float(params["rope_theta"]), 2 * int(module.inv_freq.shape[-1])
                    )
                else:
                    inv_freq = module.inv_freq.to(torch.float64)
                module.forward = types.MethodType(_rotary_forward(inv_freq), module)
            elif hasattr(module, "scalar_embed_scale") and hasattr(module, "embed_scale"):
                # Gemma's √d_model, a buffer made with torch.tensor(float): float32 in a model
                # built in float32 and converted after
                scale = module.embed_scale
                module.embed_scale = torch.tensor(
                    float(module.scalar_embed_scale), dtype=torch.float64, device=scale.device
                )
                restore.append(lambda m=module, s=scale: setattr(m, "embed_scale", s))
                continue
            elif kind == "GPT2Attention" and module.reorder_and_upcast_attn:
                module.reorder_and_upcast_attn = False
                restore.append(lambda m=module: setattr(m, "reorder_and_upcast_attn", True))
                continue
            else:
                continue
            restore.append(lambda m=module: delattr(m, "forward"))
        if type(model).__module__.startswith("transformers.models.bloom"):
            from transformers.models.bloom import modeling_bloom

            slopes = modeling_bloom._get_alibi_slopes
            modeling_bloom._get_alibi_slopes = _alibi_slopes
            restore.append(lambda: setattr(modeling_bloom, "_get_alibi_slopes", slopes))
        yield
    finally:
        for undo in reversed(restore):
            undo()
