"""What every architecture family shares: the Family record the runner works from, and the
conversions of one layer's tensors to float64 numpy in qkvcalc's row layout (Q = X·W_Q).

Only layer L's tensors pass through here: the rest of the model stays in its own dtype.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Layer:
    """What a family needs to describe one layer: the loaded model and its parts."""

    model: Any  # the transformers model as given or loaded (a base model or one with a head)
    config: Any
    block: Any  # layer L of the stack
    attention: Any  # the module whose input is the attention's x
    index: int
    n: int  # tokens


@dataclass(frozen=True)
class Family:
    """One architecture family: where its layers are and how a layer becomes problem keys.

    `stack(model)` is the list of layers; `run(model, ids)` runs the model (the runner stops
    it at layer L); `attention(block)` is the module whose input is x (after the layer's norm
    in a pre-norm model); `keys(layer)` the weights and options of the input format."""

    names: dict[str, str]  # model_type → the architecture's name as people write it
    stack: Callable[[Any], Sequence[Any]]
    attention: Callable[[Any], Any]
    keys: Callable[[Layer], dict[str, Any]]
    run: Callable[[Any, Any], Any] = lambda model, ids: base_model(model)(input_ids=ids)


def base_model(model: Any) -> Any:
    """The model without its head (LlamaForCausalLM → LlamaModel); itself when it is one."""
    return getattr(model, "base_model", model)


def array(tensor: Any) -> np.ndarray:
    """A tensor of layer L as a float64 numpy array (the only float64 copy the run makes)."""
    import torch

    return tensor.detach().to(device="cpu", dtype=torch.float64).numpy()


def rows(linear: Any) -> np.ndarray:
    """nn.Linear stores out×in (y = x·Wᵀ + b); qkvcalc's rows layout is in×out."""
    return np.ascontiguousarray(array(linear.weight).T)


def bias(module: Any) -> np.ndarray | None:
    found = getattr(module, "bias", None)
    return None if found is None else array(found)


def split_fused(linear: Any, heads: int, head_dim: int) -> list[np.ndarray | None]:
    """GPT-NeoX's and BLOOM's fused, per-head interleaved query_key_value: its output is
    viewed as (heads, 3, head_dim), so head h's q, k and v are consecutive blocks. Returns
    [wq, wk, wv, bq, bk, bv] in the rows layout, the heads in order."""
    weight = array(linear.weight)  # (3·H·hd) × d
    d_model = weight.shape[1]
    grouped = weight.reshape(heads, 3, head_dim, d_model)
    found = bias(linear)
    out: list[np.ndarray | None] = [
        np.ascontiguousarray(grouped[:, part].reshape(heads * head_dim, d_model).T)
        for part in range(3)
    ]
    for part in range(3):
        out.append(
            None if found is None else found.reshape(heads, 3, head_dim)[:, part].reshape(-1)
        )
    return out


def default_scale(scale: float, head_dim: int) -> bool:
    """True when `scale` is 1/√d_k as the model computes it (then the problem leaves it out)."""
    return scale == head_dim**-0.5 or scale == 1 / np.sqrt(head_dim)


def with_optional(keys: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """`keys` plus the optional ones that are present (not None)."""
    return {**keys, **{name: value for name, value in optional.items() if value is not None}}
