"""`--dtype float64` without converting the whole model: the checkpoint is loaded in its own
dtype (safetensors memory-mapped, so the weights of layers past L are never read), and only
what layer L needs runs in float64, a tensor at a time, as a script that streams the layers
would do it:

- every floating-point weight of layers 0…L reads as float64 (a parametrization: each read of
  `linear.weight` converts the stored tensor when it is used, and the copy is dropped after
  the operation), so at most a weight or two is float64 at once, never a whole layer or model;
  their buffers (small) are converted for the run;
- outside the stack, a plain embedding table stays as stored and its output is widened to
  float64 (a lookup then a widening is the widening then the lookup: exact); every other module
  there (norms, rotary tables, Gemma's scaled embedding) is converted once.

The numbers are those of a model loaded in float64: widening a bf16, float16 or float32
number to float64 is exact, and every step of layers 0…L runs on float64 weights and float64
activations, as in a whole float64 model (the float32 islands are lifted as before). The
stored tensors are the model's again when the block ends (the very tensors: a mapped weight
stays mapped).

`need(config, tokens)` estimates the memory of such a run from the config alone, so a run that
cannot fit is refused before anything loads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any


def _convert(
    module: Any, saved: list[tuple[dict[str, Any], str, Any]] | None, params: bool
) -> None:
    """The module's own floating-point buffers (and with `params` its parameters; not its
    children's) in float64; with `saved`, what each was, to give back."""
    import torch

    tables = (module._parameters, module._buffers) if params else (module._buffers,)
    for table in tables:
        for name, tensor in table.items():
            if tensor is None or not tensor.is_floating_point() or tensor.dtype == torch.float64:
                continue
            if isinstance(tensor, torch.nn.Parameter):
                tensor.data = tensor.data.to(torch.float64)
            else:
                if saved is not None:
                    saved.append((table, name, tensor))
                table[name] = tensor.to(torch.float64)


def _float64_module() -> Any:
    import torch

    class Float64(torch.nn.Module):
        """A weight as float64 when it is read (the stored tensor is left as it is)."""

        def forward(self, tensor: Any) -> Any:
            return tensor.to(torch.float64)

    return Float64()


def _widen(module: Any, args: Any, output: Any) -> Any:
    import torch

    return output.to(torch.float64) if output.is_floating_point() else output


@contextlib.contextmanager
def float64_layers(model: Any, stack: Sequence[Any], layer: int) -> Iterator[None]:
    """While the block runs, layers 0…`layer` of the model compute in float64."""
    import torch
    from torch.nn.utils import parametrize

    inside = {id(m) for block in stack for m in block.modules()}
    handles = []
    for module in model.modules():
        if id(module) in inside:
            continue
        if type(module) is torch.nn.Embedding:
            handles.append(module.register_forward_hook(_widen))
        else:
            _convert(module, None, params=True)  # norms and tables outside the stack: small
    saved: list[tuple[dict[str, Any], str, Any]] = []
    lazy: list[tuple[Any, str]] = []
    float64 = _float64_module()
    narrow_types = (torch.bfloat16, torch.float16, torch.float32)
    try:
        for block in stack[: layer + 1]:
            for module in list(block.modules()):
                _convert(module, saved, params=False)
                for name, param in list(module._parameters.items()):
                    narrow = param is not None and param.dtype in narrow_types
                    if narrow:
                        parametrize.register_parametrization(module, name, float64, unsafe=True)
                        lazy.append((module, name))
        yield
    finally:
        for handle in handles:
            handle.remove()
        for module, name in reversed(lazy):
            parametrize.remove_parametrizations(module, name, leave_parametrized=False)
        while saved:
            table, name, original = saved.pop()
            table[name] = original


# Bytes of Python, torch and transformers themselves, and of the activations of a run of at
# most MAX_TOKENS tokens (runner), counted on top of the weights.
BASE = 600_000_000


def need(config: Any, tokens: int) -> int:
    """The bytes a float64 run up to any layer takes, from the config: the modules outside the
    stack in float64 (the embedding table: vocab × d), one layer in float64 (12·d² for its
    attention and MLP, or from intermediate_size), layer L's attention weights twice more as
    the problem's float64 arrays (and a transposed copy while they are made), and the
    activations (tokens × d, a few copies, and the n × n weights of every head). Zamba's
    attention is attention_hidden_size (2·d) wide: W_Q, W_K, W_V of that width squared."""
    d = int(getattr(config, "hidden_size", 0) or 0)
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    inner = getattr(config, "intermediate_size", None)
    mlp = 3 * d * int(inner) if isinstance(inner, int) and inner > 0 else 8 * d * d
    heads = int(getattr(config, "num_attention_heads", 1) or 1)
    wide = getattr(config, "attention_hidden_size", None)
    wide = int(wide) if isinstance(wide, int) and wide > 0 else d
    attention = 3 * wide * wide + wide * d
    outside = vocab * d + 4 * d
    activations = 16 * tokens * d + 4 * heads * tokens * tokens
    return BASE + 8 * (outside + attention + mlp + 2 * attention + activations)


def available() -> int | None:
    """The bytes the machine can give now without swapping (/proc/meminfo's MemAvailable),
    or None where there is no such file."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
