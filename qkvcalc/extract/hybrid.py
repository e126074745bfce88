"""Hybrid models: softmax-attention layers between layers of another kind — Gated DeltaNet's
linear attention (Qwen3-Next, Qwen3.5), state-space (Mamba) layers (Nemotron-H, Bamba, Jamba,
Granite 4, Falcon-H1, Zamba2), LFM2's short convolutions.

extract reads softmax attention only. For the hybrids whose attention layers it reads (the
Qwen ones, in llama.py), a layer of the other kind is refused with one message that names its
kind and lists the model's attention layers (`check_layer`), and `qkvcalc heads` shows the
attention layers and says where the others are (`attention_layers`). The other hybrids are
refused as a whole, naming their kind of layer (`check_type`), before anything loads.

Which layer is which is read from the config's `layer_types` (transformers 5 names every
hybrid's layers there: "full_attention" for attention, "linear_attention" for Gated DeltaNet and
for Mamba alike), so it is known before the model is built.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg

# A hybrid whose attention layers extract reads: model_type → the kind of its other layers
# (the catalog's hybrid.<kind>)
READ = {
    "qwen3_next": "gated_deltanet",
    "qwen3_5": "gated_deltanet",
    "qwen3_5_text": "gated_deltanet",
    "qwen3_5_moe": "gated_deltanet",
    "qwen3_5_moe_text": "gated_deltanet",
}
# A hybrid extract does not read yet: model_type → (its name, the kind of its other layers)
NOT_READ = {
    "nemotron_h": ("Nemotron-H", "mamba"),
    "bamba": ("Bamba", "mamba"),
    "jamba": ("Jamba", "mamba"),
    "granitemoehybrid": ("Granite 4 (hybrid)", "mamba"),
    "falcon_h1": ("Falcon-H1", "mamba"),
    "zamba": ("Zamba", "mamba"),
    "zamba2": ("Zamba2", "mamba"),
    "lfm2": ("LFM2", "short_conv"),
    "lfm2_moe": ("LFM2-MoE", "short_conv"),
    "olmo_hybrid": ("OLMo-Hybrid", "gated_deltanet"),
    "kimi_linear": ("Kimi Linear", "kimi_delta"),
    "minimax": ("MiniMax", "lightning"),
}
# layer_types' names of a softmax-attention layer
ATTENTION = ("full_attention", "sliding_attention", "attention")


def text_config(config: Any) -> Any:
    """A multimodal model's text config (Qwen3.5's), else the config itself."""
    found = getattr(config, "text_config", None)
    return found if found is not None else config


def attention_layers(config: Any) -> list[int] | None:
    """The attention layers of a hybrid extract reads, from 0; None for any other model (all
    of its layers are attention)."""
    text = text_config(config)
    if config.model_type not in READ and text.model_type not in READ:
        return None
    types = list(getattr(text, "layer_types", None) or [])
    return [i for i, kind in enumerate(types) if kind in ATTENTION]


def kind(config: Any) -> Msg:
    """The kind of a hybrid's other layers, in words."""
    found = READ.get(config.model_type) or READ.get(text_config(config).model_type, "")
    return Msg(f"hybrid.{found}")


def check_type(model_type: str, model: str) -> None:
    """A hybrid extract does not read, refused as a whole, naming it and its other layers."""
    if model_type in NOT_READ:
        name, other = NOT_READ[model_type]
        raise QkvcalcError(
            "extract.hybrid",
            model=model,
            arch=name,
            model_type=model_type,
            kind=Msg(f"hybrid.{other}"),
        )


def check_layer(config: Any, layer: int, model: str) -> None:
    """Layer `layer` of a hybrid that is not one of its attention layers, refused: its kind,
    and the layers that are attention."""
    found = attention_layers(config)
    whole = isinstance(layer, Integral) and not isinstance(layer, bool)
    if found is None or not whole or layer in found:
        return
    if not 0 <= layer < len(text_config(config).layer_types):
        return  # extract.layer says so
    raise QkvcalcError(
        "extract.not_attention",
        layer=layer,
        model=model,
        kind=kind(config),
        attention=", ".join(str(i) for i in found) if found else Msg("hybrid.none"),
    )


def others(config: Any, count: int) -> Msg | None:
    """For `qkvcalc heads`: where a hybrid's other layers are, and their kind (None when all of
    its `count` layers are attention)."""
    found = set(attention_layers(config) or [])
    rest = [i for i in range(count) if i not in found]
    if not rest:
        return None
    return Msg("heads.others", layers=", ".join(str(i) for i in rest), kind=kind(config))
