"""What an extracted layer's x is, said in the problem's description: the block's input h (the
residual stream) through the norm the block applies before its attention — a LayerNorm or an
RMSNorm, in a pre-norm model (GPT-2, Llama) — or h itself, where no norm comes before the
attention (post-norm, as BERT: its norms come after the attention and the residual).

Found from the run, not from a table per family: the block's norm modules (outside the
attention) are applied to h, and the one whose output is x is x's norm; it is a LayerNorm if
adding a constant to every row leaves its output as it was (the mean is subtracted), else an
RMSNorm. Nothing is said where neither holds (a family whose x is something else)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg


def _norms(block: Any, attention: Any) -> list[tuple[str, Any]]:
    """The block's norm modules (by their class's name), those inside the attention left out
    (a query or key norm)."""
    inside = {id(module) for module in attention.modules()}
    return [
        (name, module)
        for name, module in block.named_modules()
        if name and "Norm" in type(module).__name__ and id(module) not in inside
    ]


def _close(a: np.ndarray, b: np.ndarray, relative: float) -> bool:
    scale = max(float(np.max(np.abs(b), initial=0.0)), 1e-30)
    return a.shape == b.shape and float(np.max(np.abs(a - b), initial=0.0)) <= relative * scale


def _first(output: Any) -> np.ndarray | None:
    """A module's output for the first sequence as float64, or None if it is not one tensor."""
    import torch

    tensor = output[0] if isinstance(output, tuple) else output
    if not isinstance(tensor, torch.Tensor) or tensor.dim() != 3:
        return None
    return np.asarray(tensor.detach()[0].to(dtype=torch.float64, device="cpu").numpy())


def _subtracts_mean(module: Any, hidden: Any) -> bool:
    """Whether the norm subtracts each row's mean (a LayerNorm): its output is unchanged by a
    constant added to every row. Run in float64 on a copy, the model's own module untouched."""
    import torch

    twin = copy.deepcopy(module).to(torch.float64)
    h = hidden.detach().to(device="cpu", dtype=torch.float64)
    plain, shifted = _first(twin(h)), _first(twin(h + 1.0))
    return plain is not None and shifted is not None and _close(shifted, plain, 1e-4)


def _eps(module: Any) -> str:
    for name in ("eps", "variance_epsilon", "epsilon"):
        value = getattr(module, name, None)
        if isinstance(value, (int, float)):
            return f"{value:g}"
    return "?"


def x_origin(block: Any, attention: Any, hidden: Any, x: np.ndarray, layer: int) -> Msg | None:
    """The sentence that says what x is: `hidden` is the block's input as the run gave it (a
    torch tensor, batch first), `x` the attention's input (float64, first sequence)."""
    import torch

    norms = _norms(block, attention)
    h = _first(hidden)
    if h is not None and _close(h, x, 1e-12):
        if not norms:
            return Msg("extract.x_block_input", layer=layer)
        key = "extract.x_post_first" if layer == 0 else "extract.x_post"
        return Msg(key, layer=layer, previous=layer - 1)
    for name, module in norms:
        try:
            with torch.no_grad():
                found = _first(module(hidden))
        except Exception:  # a norm that takes other arguments: not the one before the attention
            continue
        if found is None or not _close(found, x, 1e-5):
            continue
        try:
            with torch.no_grad():
                mean = _subtracts_mean(module, hidden)
        except Exception:  # a norm that cannot be copied (weights not in memory): say nothing
            return None
        if not mean:
            return Msg("extract.x_rmsnorm", layer=layer, norm=name, eps=_eps(module))
        shifted = getattr(module, "bias", None) is not None
        key = "extract.x_layernorm" if shifted else "extract.x_layernorm_no_bias"
        return Msg(key, layer=layer, norm=name, eps=_eps(module))
    return None
