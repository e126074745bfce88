"""Model types whose attention the input format cannot say, refused by name with the reason,
before anything loads (rather than as an unknown architecture): each one's modeling code in
transformers 5.23–5.25 was read, and the step no key of a problem expresses is named.

- BitNet (`bitnet`): an RMSNorm over all heads' outputs joined (attn_sub_norm, H·d_v numbers
  per token) before o_proj — softmax attention has no such step (only the lightning layer's
  norm joins the heads); its checkpoints' BitLinear also rounds each projection's input to
  8 bits per token.
- JetMoE (`jetmoe`): a mixture of attention heads — each token's W_Q and its share of W_O are
  those of the experts its router picks for that token.
- Inkling (`inkling_text`, `inkling_mm_model`) and Inkling 2 (`inkling2_text`, `inkling2`): K
  and V pass through a short causal convolution over the tokens after k_proj and v_proj, so K
  is not x·W_K; Inkling 2's sinks are more, one per token and head (sink_proj).

And layers of a model extract reads otherwise (`check_layer`): MiniMax-M3's block-sparse layers
(`minimax_m3_sparse` in layer_types), whose indexer picks for each query and each K/V head group
the blocks of keys it may see — a mask of each head's own, where a problem has one mask.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg

# model_type → (the architecture's name, the catalog key of why its attention is not a problem)
REFUSED = {
    "bitnet": ("BitNet", "refused.bitnet"),
    "jetmoe": ("JetMoE", "refused.jetmoe"),
    "inkling_text": ("Inkling", "refused.inkling"),
    "inkling_mm_model": ("Inkling", "refused.inkling"),
    "inkling2_text": ("Inkling 2", "refused.inkling2"),
    "inkling2": ("Inkling 2", "refused.inkling2"),
}


def check_type(model_type: str, model: str) -> None:
    """A model type whose attention no problem can say, refused naming it and the reason."""
    if model_type in REFUSED:
        name, reason = REFUSED[model_type]
        raise QkvcalcError(
            "extract.not_expressible",
            model=model,
            arch=name,
            model_type=model_type,
            reason=Msg(reason),
        )


# model_type → the layer_types name of its layers no problem can say
SPARSE_LAYERS = {"minimax_m3_vl_text": "minimax_m3_sparse"}


def check_layer(config: Any, layer: Any, model: str) -> None:
    """Layer `layer` of a model whose layers of one kind no problem can say (SPARSE_LAYERS),
    refused before the model runs, naming the layers extract reads."""
    text = getattr(config, "text_config", None) or config
    sparse = SPARSE_LAYERS.get(text.model_type)
    kinds = [str(kind) for kind in getattr(text, "layer_types", None) or []]
    whole = isinstance(layer, Integral) and not isinstance(layer, bool)
    if sparse is None or not whole or not 0 <= layer < len(kinds) or kinds[layer] != sparse:
        return
    read = [i for i, kind in enumerate(kinds) if kind != sparse]
    raise QkvcalcError(
        "extract.block_sparse",
        model=model,
        layer=int(layer),
        layers=", ".join(str(i) for i in read) if read else Msg("hybrid.none"),
    )
