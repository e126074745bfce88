"""The rotary frequencies a layer uses, in float64, from the config's rope parameters.

transformers builds them in float32 (`dtype=torch.float`), and the dynamic variants rebuild
them in the forward (`@dynamic_rope_update`) once the sequence is longer than a threshold:
dynamic NTK past `max_position_embeddings`, longrope past `original_max_position_embeddings`
(its long factors instead of the short ones). `frequencies(rotary, layer_type, seq_len)` gives
the frequencies and the cos/sin factor that a fresh model uses for a sequence of seq_len
positions, computed here in float64 with transformers' formulas for each rope type (default,
linear, dynamic, yarn, longrope, llama3, Gemma 4's proportional), per layer type when the model
has several (Gemma 3, ModernBERT: `rope_parameters[layer_type]`, buffers
`{layer_type}_inv_freq`). A rope type this module does not know keeps the module's own numbers
(None).

A float64 run (islands.py) rotates with these, and the extracted problem carries them as
`inv_freq` and `attention_factor`, so the two agree to the last bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def layer_type(rotary: Any, config: Any, index: int) -> str | None:
    """Layer `index`'s type when the rotary module keeps frequencies per layer type."""
    if isinstance(getattr(rotary, "rope_type", None), dict):
        return str(config.layer_types[index])
    return None


def buffer(rotary: Any, kind: str | None) -> Any:
    """The rotary module's inv_freq buffer (of this layer type)."""
    return getattr(rotary, "inv_freq" if kind is None else f"{kind}_inv_freq")


def scaling(rotary: Any, kind: str | None) -> float:
    """The module's own cos/sin factor (of this layer type)."""
    name = "attention_scaling" if kind is None else f"{kind}_attention_scaling"
    return float(getattr(rotary, name, 1.0))


def frequencies(rotary: Any, kind: str | None, seq_len: int) -> tuple[np.ndarray, float] | None:
    """inv_freq (float64) and the cos/sin factor for a run over positions 0 … seq_len − 1."""
    config = rotary.config
    params = config.rope_parameters if kind is None else config.rope_parameters[kind]
    rope_type = params.get("rope_type", "default")
    dims = 2 * int(buffer(rotary, kind).shape[-1])
    base = float(params["rope_theta"])
    exponents = np.arange(0, dims, 2, dtype=np.float64) / dims
    plain = 1.0 / base**exponents
    if rope_type == "default":
        return plain, scaling(rotary, kind)
    if rope_type == "linear":
        return plain / float(params["factor"]), 1.0
    if rope_type == "dynamic":
        return _dynamic(config, params, base, dims, exponents, seq_len), 1.0
    if rope_type == "longrope":
        return _longrope(config, params, plain, seq_len)
    if rope_type == "yarn":
        return _yarn(config, params, base, dims)
    if rope_type == "llama3":
        return _llama3(params, plain), 1.0
    if rope_type == "proportional":  # Gemma 4's full layers: the first R/2 pairs turn, no more
        turned = int(params.get("partial_rotary_factor", 1.0) * dims // 2)
        return np.where(np.arange(dims // 2) < turned, plain, 0.0) / params.get("factor", 1.0), 1.0
    return None


def _dynamic(
    config: Any, params: Any, base: float, dims: int, exponents: np.ndarray, seq_len: int
) -> np.ndarray:
    """NTK-aware: the base grows with the sequence once it passes max_position_embeddings."""
    factor = float(params["factor"])
    most = config.max_position_embeddings
    length = max(seq_len, most)
    grown = base * ((factor * length / most) - (factor - 1)) ** (dims / (dims - 2))
    return 1.0 / grown**exponents


def _longrope(
    config: Any, params: Any, plain: np.ndarray, seq_len: int
) -> tuple[np.ndarray, float]:
    """The long factors past original_max_position_embeddings, the short ones up to it."""
    original = params["original_max_position_embeddings"]
    factor = params.get("factor")
    if factor is None:
        factor = config.max_position_embeddings / original
    attention = params.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    chosen = params["long_factor"] if seq_len > original else params["short_factor"]
    return plain / np.asarray(chosen, dtype=np.float64), float(attention)


def _yarn(config: Any, params: Any, base: float, dims: int) -> tuple[np.ndarray, float]:
    factor = params["factor"]
    original = params["original_max_position_embeddings"]
    if factor is None:
        factor = config.max_position_embeddings / original

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention = params.get("attention_factor")
    if attention is None:
        if params.get("mscale") and params.get("mscale_all_dim"):
            attention = mscale(factor, params["mscale"]) / mscale(factor, params["mscale_all_dim"])
        else:
            attention = mscale(factor)
    beta_fast = params.get("beta_fast") or 32
    beta_slow = params.get("beta_slow") or 1

    def correction(rotations: float) -> float:
        return (dims * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction(beta_fast), correction(beta_slow)
    if config.rope_parameters.get("truncate", True):  # transformers reads the top level here
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dims - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dims // 2, dtype=np.float64) - low) / (high - low), 0, 1)
    extrapolation = 1 - ramp
    pos_freqs = base ** (np.arange(0, dims, 2, dtype=np.float64) / dims)
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation) + (
        1.0 / pos_freqs
    ) * extrapolation
    return inv_freq, float(attention)


def _llama3(params: Any, plain: np.ndarray) -> np.ndarray:
    factor = params["factor"]
    low_factor, high_factor = params["low_freq_factor"], params["high_freq_factor"]
    old = params["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low_factor, old / high_factor
    wavelen = 2 * math.pi / plain
    scaled = np.where(wavelen > low_wavelen, plain / factor, plain)
    smooth = (old / wavelen - low_factor) / (high_factor - low_factor)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled)
