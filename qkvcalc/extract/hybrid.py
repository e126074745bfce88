"""Hybrid models: softmax-attention layers between layers of another kind — Gated DeltaNet's
linear attention (Qwen3-Next, Qwen3.5), Kimi Delta Attention (Kimi Linear, whose attention
layers are MLA: deepseek.py), state-space (Mamba) layers (Nemotron-H, Bamba, Jamba,
Granite 4, Falcon-H1, Zamba, Zamba2), LFM2's short convolutions, MiniMax's lightning attention,
RecurrentGemma's RG-LRU recurrent blocks.

extract reads softmax attention, MiniMax's lightning layers (minimax.py: both kinds of its
layers are problems, BOTH_READ), the Gated DeltaNet layers of Qwen3-Next, Qwen3.5 and
OLMo-Hybrid (gdn.py: a problem of the input format's gated_delta key) and the Kimi Delta
Attention layers of Kimi Linear (kda.py: of the kimi_delta key). For the other hybrids whose
attention layers it reads (READ: llama.py, deepseek.py, zamba.py), a layer of another kind is
refused with one message that names its kind and lists the model's attention layers
(`check_layer`), and `qkvcalc heads` shows the attention layers (softmax ones only) and says
where the others are (`attention_layers`). The other hybrids are refused as a whole, naming
their kind of layer (`check_type`), before anything loads.

Which layer is which is read from the config's `layer_types` (transformers 5 names every
hybrid's layers there: "full_attention" for attention, "linear_attention" for Gated DeltaNet and
for Mamba alike; Zamba's and Zamba2's "hybrid" for a layer that calls their shared attention
block, zamba.py), so it is known before the model is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract import gdn, kda
from qkvcalc.i18n import Msg

# A hybrid whose attention layers extract reads: model_type → the kind of each of its other
# layers, by its name in layer_types (the catalog's hybrid.<kind>)
GATED_DELTANET = {"linear_attention": "gated_deltanet"}
MAMBA = {"linear_attention": "mamba"}
READ = {
    "qwen3_next": GATED_DELTANET,
    "qwen3_5": GATED_DELTANET,
    "qwen3_5_text": GATED_DELTANET,
    "qwen3_5_moe": GATED_DELTANET,
    "qwen3_5_moe_text": GATED_DELTANET,
    "bamba": MAMBA,
    "jamba": MAMBA,
    "granitemoehybrid": MAMBA,
    "nemotron_h": {**MAMBA, "mlp": "mlp", "moe": "mlp"},  # and blocks of an MLP alone
    "lfm2": {"conv": "short_conv"},
    "lfm2_moe": {"conv": "short_conv"},
    "lfm3": {"conv": "short_conv"},
    "olmo_hybrid": GATED_DELTANET,
    "kimi_linear": {"linear_attention": "kimi_delta"},  # its attention: MLA (deepseek.py)
    "bailing_hybrid": {"linear_attention": "kimi_delta"},  # Ling 3.0: the same kinds
    # each "hybrid" layer calls the shared attention block, then runs a Mamba layer (zamba.py)
    "zamba": MAMBA,
    "zamba2": MAMBA,
    "minimax": {"linear_attention": "lightning"},  # its lightning layers: minimax.py
    # layers_block_type: "linear_attention" for a recurrent (RG-LRU) block, "sliding_attention"
    "recurrent_gemma": {"linear_attention": "rg_lru"},
}
# The hybrids whose other layers extract reads as well (each as a problem of its own kind):
# none of their layers is refused; `qkvcalc heads` still shows the attention layers only
BOTH_READ = ("minimax",)
# A hybrid extract does not read yet: model_type → (its name, the kind of its other layers);
# none today (Ling 3.0, the last, is read: deepseek.py and kda.py)
NOT_READ: dict[str, tuple[str, str]] = {}
# layer_types' names of a softmax-attention layer (Zamba's "hybrid": the shared attention block
# and a Mamba layer after it)
ATTENTION = ("full_attention", "sliding_attention", "attention", "hybrid")


def text_config(config: Any) -> Any:
    """A multimodal model's text config (Qwen3.5's), else the config itself."""
    found = getattr(config, "text_config", None)
    return found if found is not None else config


def _kinds(config: Any) -> dict[str, str] | None:
    text = text_config(config)
    return READ.get(config.model_type) or READ.get(text.model_type)


def layer_types(config: Any) -> list[str]:
    return [str(kind) for kind in getattr(text_config(config), "layer_types", None) or []]


def attention_layers(config: Any) -> list[int] | None:
    """The attention layers of a hybrid extract reads, from 0; None for any other model (all
    of its layers are attention)."""
    if _kinds(config) is None:
        return None
    return [i for i, kind in enumerate(layer_types(config)) if kind in ATTENTION]


def _read_both(config: Any) -> bool:
    return config.model_type in BOTH_READ or text_config(config).model_type in BOTH_READ


def readable_layers(config: Any) -> list[int] | None:
    """The layers of a hybrid extract reads: its attention layers, and its linear-attention
    layers when they are Gated DeltaNet of Qwen3-Next, Qwen3.5 or OLMo-Hybrid (gdn.py) or Kimi
    Delta Attention of Kimi Linear (kda.py); None for any other model."""
    found = attention_layers(config)
    linear_read = (*gdn.READ, *kda.READ)
    if found is None or (
        config.model_type not in linear_read and text_config(config).model_type not in linear_read
    ):
        return found
    linear = [i for i, kind in enumerate(layer_types(config)) if kind == "linear_attention"]
    return sorted([*found, *linear])


def implicit_layers(config: Any) -> list[int]:
    """The linear-attention layers of a hybrid whose problems compute an n × n matrix without
    forming it (the `weights` stage: Gated DeltaNet, gdn.py; Kimi Delta Attention, kda.py;
    MiniMax's lightning attention, minimax.py), from 0: `qkvcalc heads` draws that matrix. Empty
    for any other model."""
    types = {config.model_type, text_config(config).model_type}
    if _kinds(config) is None or not types & {*gdn.READ, *kda.READ, *BOTH_READ}:
        return []
    return [i for i, kind in enumerate(layer_types(config)) if kind == "linear_attention"]


def kind(config: Any, layer: int) -> Msg:
    """The kind of a hybrid's layer that is not attention, in words."""
    name = layer_types(config)[layer]
    return Msg(f"hybrid.{(_kinds(config) or {}).get(name, 'other')}")


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
    if found is None or not whole or layer in (readable_layers(config) or []) or _read_both(config):
        return
    if not 0 <= layer < len(layer_types(config)):
        return  # extract.layer says so
    raise QkvcalcError(
        "extract.not_attention",
        layer=int(layer),
        model=model,
        kind=kind(config, int(layer)),
        attention=", ".join(str(i) for i in found) if found else Msg("hybrid.none"),
    )


def others(config: Any, count: int, drawn: Sequence[int] = ()) -> list[Msg]:
    """For `qkvcalc heads`: where a hybrid's other layers are, one sentence per kind (the
    linear-attention layers in `drawn`, whose implicit matrices the page draws, said so), then
    which layers are shown (no sentence when all of its `count` layers are attention)."""
    found = set(attention_layers(config) or [])
    by_kind: dict[str, list[int]] = {}
    implicit: dict[str, list[int]] = {}
    for i in range(min(count, len(layer_types(config)))):
        if i not in found:
            (implicit if i in drawn else by_kind).setdefault(kind(config, i).key, []).append(i)
    if not by_kind and not implicit:
        return []
    shown = ", ".join(str(i) for i in sorted(found)) if found else Msg("hybrid.none")

    def listed(layers: list[int]) -> str:
        return ", ".join(str(i) for i in layers)

    rows = [Msg("heads.attention_rows", layers=shown)]
    if implicit:
        rows = [
            Msg("heads.rows_and_implicit", layers=shown, linear=listed(layers), kind=Msg(key))
            for key, layers in implicit.items()
        ]
    return [
        *(
            Msg("heads.implicit_shown", layers=listed(rest), kind=Msg(key))
            for key, rest in implicit.items()
        ),
        *(Msg("heads.others", layers=listed(rest), kind=Msg(key)) for key, rest in by_kind.items()),
        *rows,
    ]
