"""The T5 encoder: pre-norm (x is after the self-attention's T5LayerNorm); q/k/v/o linears
without biases; no 1/√d_k (scale 1); a bucketed relative position bias that block 0 computes
from its own embedding and every later block reuses, given as score_bias (heads × n × n).
Bidirectional: no mask. Only the encoder runs (a T5 checkpoint's decoder is never loaded)."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import Family, Layer, array, rows


def encoder(model: Any) -> Any:
    return model.encoder if hasattr(model, "encoder") else model


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # T5Attention
    first = encoder(layer.model).block[0].layer[0].SelfAttention  # holds the shared bias
    position_bias = first.compute_bias(layer.n, layer.n)  # 1 × H × n × n, a lookup: exact
    return {
        "wq": rows(attn.q),
        "wk": rows(attn.k),
        "wv": rows(attn.v),
        "wo": rows(attn.o),
        "heads": attn.n_heads,
        "scale": float(attn.scaling),
        "mask": "none",
        "score_bias": array(position_bias[0]),
    }


FAMILY = Family(
    names={"t5": "T5 encoder"},
    stack=lambda model: encoder(model).block,
    attention=lambda block: block.layer[0].SelfAttention,
    output=lambda block: block.layer[0].SelfAttention.o,
    keys=keys,
    run=lambda model, ids: encoder(model)(input_ids=ids),
)
