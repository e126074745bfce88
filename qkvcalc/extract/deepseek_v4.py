"""DeepSeek-V4 (model_type "deepseek_v4"): refused, every layer, with one message that names the
layer's kind and says what qkvcalc's input format cannot express. Its config's `layer_types`
name each layer's kind before anything loads, so the refusal comes before the weights are read.

What each kind computes (transformers 5.23–5.25, modeling_deepseek_v4.py; tests/naive_dsv4.py
writes it out in numpy and tests/test_extract_dsv4.py checks that to 1e-8 relative against the
module). The attention's input x is the decoder layer's input_layernorm of the mHC streams
collapsed by their `pre` weights (DeepseekV4HyperConnection: the hyper-connections live outside
the attention); its output is o_b_proj's.

- Every kind: a query latent c_Q = RMSNorm(x·W_qa) ⊙ w (q_a_proj, q_a_norm), each head's query
  c_Q·W_qb (q_b_proj) over its own RMS with no weight (q_b_norm); ONE key/value head
  KV = RMSNorm(x·W_kv) ⊙ w (kv_proj, kv_norm) that is both K and V for every query head; the last
  qk_rope_head_dim columns of q and of KV turned (interleaved pairs) at the token's position —
  so V is turned too —; scale head_dim^−½; a sliding window of `sliding_window` keys; a learned
  sink per head in the softmax (gpt-oss's); each head's output's last qk_rope_head_dim columns
  turned BACK by the query's position (−i); then the grouped output projection: the joined
  heads in o_groups groups, each through its own block of o_a_proj to o_lora_rank, the groups
  joined through o_b_proj (one linear map, W_O = blockdiag(W_a)·W_b, had nothing else been new).
- sliding_attention: that alone, with the "main" rotation (rope_theta).
- compressed_sparse_attention (CSA, m = compress_rates[...], 4 in the released models): more
  keys, one per m tokens, each a channel-wise softmax-weighted pool of 2m tokens' projections
  (the window and the one before it, DeepseekV4CSACompressor) with learned position biases,
  normed and turned at w·m; a lightning indexer (its own compressor at index_head_dim, ReLU
  scores weighted per head) keeps index_topk of them per query; a query i sees entry w only
  when w < ⌊(i + 1)/m⌋. The "compress" rotation (compress_rope_theta, YaRN) on every turn.
- heavily_compressed_attention (HCA, m = 128 in the released models): the same without the
  overlap and without the indexer: every visible entry is a key.

For whoever reads these layers one day, the float32 in a float64 model: the RMSNorms compute in
float32 (their weights multiplied there too), q_b_norm its rsqrt, the rotary tables and the
rotation itself (`rope.float() * cos`) are float32, the compressors' softmax is
`dtype=torch.float32` and the indexer's scorer `.float()`: a plain `.double()` run is ~6e-8 from a
truly float64 one on a tiny model. And transformers 5.25 (not 5.23) lists sinks, position_bias,
q_a_norm, kv_norm, input_layernorm and the mHC weights in `_keep_in_fp32_modules_strict`: a
`from_pretrained(dtype=torch.float64)` leaves them float32, rounding what the checkpoint holds.

None of it is a key of the input format: K = V from one head that is turned, and the turn back
of the output by the query's position, are in every kind; the compressed keys in two of them.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg

MODEL_TYPE = "deepseek_v4"
# layer_types' names → the catalog's dsv4.<kind>
KINDS = {
    "sliding_attention": "sliding",
    "compressed_sparse_attention": "csa",
    "heavily_compressed_attention": "hca",
}


def _kind(config: Any, name: str) -> Msg:
    """A layer kind in words, with its numbers (the window, m, the indexer's top-k)."""
    rates = getattr(config, "compress_rates", None) or {}
    return Msg(
        f"dsv4.{KINDS.get(name, 'other')}",
        window=getattr(config, "sliding_window", "?"),
        m=rates.get(name, "?"),
        top_k=getattr(config, "index_topk", "?"),
        name=name,
    )


def _layers(config: Any) -> str | Msg:
    """Which layers are of which kind: "0, 3: … ; 1: …", in the order the kinds first come."""
    by_kind: dict[str, list[int]] = {}
    for i, name in enumerate(getattr(config, "layer_types", None) or []):
        by_kind.setdefault(str(name), []).append(i)
    if not by_kind:
        return Msg("hybrid.none")
    parts = [
        Msg("dsv4.layers", layers=", ".join(map(str, found)), kind=_kind(config, name))
        for name, found in by_kind.items()
    ]
    said = parts[-1]
    for part in reversed(parts[:-1]):  # "…; …": the lists of layers hold commas of their own
        said = Msg("dsv4.join", first=part, rest=said)
    return said


def check(config: Any, layer: Any, model: str) -> None:
    """A DeepSeek-V4 model refused: layer `layer`'s kind named when it is one of its layers
    (else the model as a whole), with what qkvcalc cannot express and every layer's kind."""
    if getattr(config, "model_type", None) != MODEL_TYPE:
        return
    types = [str(name) for name in getattr(config, "layer_types", None) or []]
    whole = isinstance(layer, Integral) and not isinstance(layer, bool)
    if not whole or not 0 <= int(layer) < len(types):
        raise QkvcalcError("extract.dsv4", model=model, layers=_layers(config))
    name = types[int(layer)]
    pooled = name in KINDS and name != "sliding_attention"  # a compressed kind
    why = Msg("dsv4.why_compressed" if pooled else "dsv4.why")
    raise QkvcalcError(
        "extract.dsv4_layer",
        layer=int(layer),
        model=model,
        kind=_kind(config, name),
        why=why,
        layers=_layers(config),
    )
