"""BERT and the encoders built as it is (RoBERTa, XLM-RoBERTa, CamemBERT, ELECTRA, Data2Vec's
text model, ERNIE 1–3, RoCBert, and the pre-norm RoBERTa-PreLayerNorm and XLM-RoBERTa-XL): x is
the input of attention.self, which is the layer's own input in the post-norm ones and the
output of the attention's LayerNorm in the pre-norm ones; separate query/key/value linears with
biases; the output projection is attention.output.dense (before its dropout, residual and
LayerNorm). An encoder: no mask (one configured as a decoder is causal)."""

from __future__ import annotations

from typing import Any

from qkvcalc.extract.common import Family, Layer, base_model, bias, default_scale, rows


def keys(layer: Layer) -> dict[str, Any]:
    attn = layer.attention  # BertSelfAttention
    dense = layer.block.attention.output.dense
    keys: dict[str, Any] = {
        "wq": rows(attn.query),
        "wk": rows(attn.key),
        "wv": rows(attn.value),
        "wo": rows(dense),
        "bq": bias(attn.query),
        "bk": bias(attn.key),
        "bv": bias(attn.value),
        "bo": bias(dense),
        "heads": attn.num_attention_heads,
        "mask": "causal" if getattr(layer.config, "is_decoder", False) else "none",
    }
    if not default_scale(attn.scaling, attn.attention_head_size):
        keys["scale"] = attn.scaling
    return keys


FAMILY = Family(
    names={
        "bert": "BERT",
        "roberta": "RoBERTa",
        "xlm-roberta": "XLM-RoBERTa",
        "camembert": "CamemBERT",
        "electra": "ELECTRA",
        "data2vec-text": "Data2Vec (text)",
        "ernie": "ERNIE",
        "roc_bert": "RoCBert",
        "roberta-prelayernorm": "RoBERTa-PreLayerNorm",
        "xlm-roberta-xl": "XLM-RoBERTa-XL",
    },
    stack=lambda model: base_model(model).encoder.layer,
    attention=lambda block: block.attention.self,
    output=lambda block: block.attention.output.dense,
    keys=keys,
)
