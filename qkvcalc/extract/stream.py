"""`--dtype float64` without converting the whole model: the checkpoint is loaded in its own
dtype (safetensors memory-mapped, so the weights of layers past L are never read), and only
what layer L needs runs in float64. The modules outside the layer stack (the embeddings,
Gemma's embedding scale, the rotary tables, a final norm: small) are converted once; each
layer 0…L is converted when its forward starts (a forward pre-hook) and, once it has run,
given its own weights back (a forward hook), so its float64 copy is freed before the next
layer's is made. Layer L stays converted until its keys are read, then is given back too.

The numbers are those of a model loaded in float64: widening a bf16, float16 or float32
number to float64 is exact, and every step of layers 0…L runs on float64 weights and float64
activations, as in a whole float64 model (the float32 islands are lifted as before).

`fits(config, layer, …)` estimates the memory of such a run from the config alone, so a run
that cannot fit is refused before anything loads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any


def _convert(module: Any, saved: list[tuple[dict[str, Any], str, Any]] | None) -> None:
    """The module's own floating-point parameters and buffers (not its children's) in
    float64; with `saved`, what each was, to give back."""
    import torch

    for table in (module._parameters, module._buffers):
        for name, tensor in table.items():
            if tensor is None or not tensor.is_floating_point() or tensor.dtype == torch.float64:
                continue
            if isinstance(tensor, torch.nn.Parameter):
                if saved is not None:
                    saved.append((table, name, tensor.data))
                tensor.data = tensor.data.to(torch.float64)
            else:
                if saved is not None:
                    saved.append((table, name, tensor))
                table[name] = tensor.to(torch.float64)


def _give_back(saved: list[tuple[dict[str, Any], str, Any]]) -> None:
    import torch

    while saved:
        table, name, original = saved.pop()
        tensor = table[name]
        if isinstance(tensor, torch.nn.Parameter):
            tensor.data = original
        else:
            table[name] = original


@contextlib.contextmanager
def float64_layers(model: Any, stack: Sequence[Any], layer: int) -> Iterator[None]:
    """While the block runs, the model computes layers 0…`layer` in float64, one at a time."""
    inside = {id(m) for block in stack for m in block.modules()}
    for module in model.modules():
        if id(module) not in inside:
            _convert(module, None)  # the embeddings, norms and tables outside the stack
    saved: dict[int, list[tuple[dict[str, Any], str, Any]]] = {}

    def before(index: int) -> Any:
        def hook(block: Any, args: Any) -> None:
            saved[index] = []
            for module in block.modules():
                _convert(module, saved[index])

        return hook

    def after(index: int) -> Any:
        def hook(block: Any, args: Any, output: Any) -> None:
            _give_back(saved.pop(index, []))

        return hook

    handles = [stack[i].register_forward_pre_hook(before(i)) for i in range(layer + 1)]
    handles += [stack[i].register_forward_hook(after(i)) for i in range(layer)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        for index in list(saved):
            _give_back(saved.pop(index))


# Bytes of Python, torch and transformers themselves, and of the activations of a run of at
# most MAX_TOKENS tokens (runner), counted on top of the weights.
BASE = 600_000_000


def need(config: Any, tokens: int) -> int:
    """The bytes a float64 run up to any layer takes, from the config: the modules outside the
    stack in float64 (the embedding table: vocab × d), one layer in float64 (12·d² for its
    attention and MLP, or from intermediate_size), layer L's attention weights twice more as
    the problem's float64 arrays (and a transposed copy while they are made), and the
    activations (tokens × d, a few copies, and the n × n weights of every head)."""
    d = int(getattr(config, "hidden_size", 0) or 0)
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    inner = getattr(config, "intermediate_size", None)
    mlp = 3 * d * int(inner) if isinstance(inner, int) and inner > 0 else 8 * d * d
    heads = int(getattr(config, "num_attention_heads", 1) or 1)
    attention = 4 * d * d
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
