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
    allowed: np.ndarray | None = None  # the layer's own mask, n × n, True = may attend
    # the tensors the attention was called with (by name); "kv_source": the attention input of
    # the earlier layer whose K and V this one reuses (Family.shares)
    given: dict[str, Any] | None = None


# The activations a linear-attention layer's convolution (and its gated norm) may have: SiLU,
# as the gated_delta and kimi_delta keys compute it (transformers' ACT2FN names it both ways)
SILU = ("silu", "swish")


def mask_keys(layer: Layer, causal: bool = True) -> dict[str, Any]:
    """`mask` and `window` or `chunk_size` from the mask the layer was given in the run (so a
    layer's own rule for sliding — Qwen2-MoE's, Gemma 3's, SmolLM3's — is the model's, not read
    from config): none, causal, causal within the last W positions, causal within chunks of C
    positions (Llama 4), or else the 0/1 matrix itself. Without a
    captured mask, `causal` decides."""
    allowed = layer.allowed
    if allowed is None:
        return {"mask": "causal" if causal else "none"}
    n, m = allowed.shape
    i = np.arange(n)[:, None] + (m - n)
    j = np.arange(m)[None, :]
    if allowed.all():
        return {"mask": "none"}
    lower = j <= i
    if not (allowed & ~lower).any():
        if (allowed == lower).all():
            return {"mask": "causal"}
        window = int(allowed.sum(axis=1).max())
        if (allowed == (lower & (i - j < window))).all():
            return {"mask": "causal", "window": window}
        chunk = int(allowed[:, 0].sum())  # the first chunk's queries: all that see key 1
        if (allowed == (lower & (i // chunk == j // chunk))).all():  # Llama 4's chunked layers
            return {"mask": "causal", "chunk_size": chunk}
    return {"mask": allowed.astype(np.int64)}


@dataclass(frozen=True)
class Family:
    """One architecture family: where its layers are and how a layer becomes problem keys.

    `stack(model)` is the list of layers; `run(model, ids)` runs the model (the runner stops
    it at layer L); `attention(block)` is the module whose input is x (after the layer's norm
    in a pre-norm model); `keys(layer)` the weights and options of the input format;
    `output(block)` the output projection (o_proj, dense …), whose own output the problem's
    output must reproduce (check.py)."""

    names: dict[str, str]  # model_type → the architecture's name as people write it
    stack: Callable[[Any], Sequence[Any]]
    attention: Callable[[Any], Any]
    keys: Callable[[Layer], dict[str, Any]]
    output: Callable[[Any], Any]
    run: Callable[[Any, Any], Any] = lambda model, ids: base_model(model)(input_ids=ids)
    # the earlier layer whose K and V layer L reuses (Gemma 3n's, Gemma 4's KV sharing), or None
    shares: Callable[[Any, int], int | None] = lambda model, index: None
    # sentences the problem's description adds about layer L's weights (Zamba's shared block)
    notes: Callable[[Any, int], list[Any]] = lambda model, index: []


def model_name(layer: Layer) -> str:
    """The model as messages name it: its folder's (or hub) name, else its class."""
    path = str(getattr(layer.config, "_name_or_path", "") or "")
    return path.rstrip("/").split("/")[-1] or type(layer.model).__name__


def base_model(model: Any) -> Any:
    """The model without its head (LlamaForCausalLM → LlamaModel); itself when it is one."""
    return getattr(model, "base_model", model)


def decoder(model: Any) -> Any:
    """The decoder stack's model: the base model, or a multimodal model's language_model (Gemma
    3's Gemma3Model holds its Gemma3TextModel there; Llama 4's Llama4ForConditionalGeneration
    its Llama4ForCausalLM, whose model holds the layers)."""
    found = base_model(model)
    found = getattr(found, "language_model", found)
    inner = getattr(found, "model", None)
    return inner if not hasattr(found, "layers") and hasattr(inner, "layers") else found


def array(tensor: Any) -> np.ndarray:
    """A tensor of layer L as a float64 numpy array (the only float64 copy the run makes)."""
    import torch

    return tensor.detach().to(device="cpu", dtype=torch.float64).numpy()


def stored(module: Any, name: str) -> Any:
    """The module's tensor `name` as it is stored: in a streamed run (stream.py) a weight reads
    as a float64 copy, and this is the tensor that copy is made from."""
    found = getattr(module, "parametrizations", None)
    if found is not None and name in found:
        return found[name].original
    return getattr(module, name)


def float64(module: Any) -> bool:
    """Whether the module's weights (and so this run) are float64: the first weight as it
    reads (in a streamed run, stream.py, a weight stored in bf16 reads as float64)."""
    for sub in module.modules():
        names = [*sub._parameters, *getattr(sub, "parametrizations", {})]
        for name in names:
            found = getattr(sub, name)
            if found is not None:
                return str(found.dtype) == "torch.float64"
    return False


def rows(linear: Any) -> np.ndarray:
    """nn.Linear stores out×in (y = x·Wᵀ + b); qkvcalc's rows layout is in×out: the transpose
    converted to float64 in one copy (a 4096 × 4096 weight is 134 MB of float64)."""
    import torch

    weight = stored(linear, "weight").detach()
    out = torch.empty(weight.shape[::-1], dtype=torch.float64)
    out.copy_(weight.T)
    return out.numpy()


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


def split_columns(linear: Any, widths: Sequence[int]) -> list[np.ndarray | None]:
    """A fused projection holding [Q | K | V] one after another along its output (Phi-3's
    qkv_proj, GPT-BigCode's multi-query c_attn): [wq, wk, wv, bq, bk, bv] in the rows layout,
    the three parts `widths` columns wide."""
    cuts = list(np.cumsum(widths)[:-1])
    out: list[np.ndarray | None] = [
        np.ascontiguousarray(w) for w in np.split(rows(linear), cuts, 1)
    ]
    found = bias(linear)
    return out + (list(np.split(found, cuts)) if found is not None else [None] * len(widths))


def base_keys(
    parts: Sequence[np.ndarray | None], out: Any, heads: int, kv_heads: int | None = None
) -> dict[str, Any]:
    """The keys every problem has from its weights: wq, wk, wv (and the biases bq, bk, bv that
    are there) from `parts` = [wq, wk, wv, bq, bk, bv], wo and bo from the output projection
    `out` (an nn.Linear), heads, and kv_heads when it differs from heads."""
    wq, wk, wv, bq, bk, bv = parts
    keys: dict[str, Any] = {"wq": wq, "wk": wk, "wv": wv, "wo": rows(out), "heads": heads}
    if kv_heads is not None and kv_heads != heads:
        keys["kv_heads"] = kv_heads
    return with_optional(keys, bq=bq, bk=bk, bv=bv, bo=bias(out))


def default_scale(scale: float, head_dim: int) -> bool:
    """True when `scale` is 1/√d_k as the model computes it (then the problem leaves it out)."""
    return scale == head_dim**-0.5 or scale == 1 / np.sqrt(head_dim)


def with_optional(keys: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """`keys` plus the optional ones that are present (not None)."""
    return {**keys, **{name: value for name, value in optional.items() if value is not None}}
