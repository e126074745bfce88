"""DeepSeek-V4 (model_type "deepseek_v4"): its three kinds of layer extract (sliding-window,
heavily compressed, compressed sparse); a layer of a kind qkvcalc does not know is refused with
one message that names it and every layer's kind (its config's `layer_types` name each layer's
kind before anything loads, so a refusal comes before the weights are read; `qkvcalc heads`
refuses such a model as a whole).

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
  joined through o_b_proj (one linear map, W_O = blockdiag(W_a)·W_b).
- sliding_attention: that alone, with the "main" rotation (rope_theta).
- compressed_sparse_attention (CSA, m = compress_rates[...], 4 in the released models): more
  keys, one per m tokens, each a channel-wise softmax-weighted pool of 2m tokens' projections
  (the window and the one before it, DeepseekV4CSACompressor) with learned position biases,
  normed and turned at w·m; a lightning indexer (its own compressor at index_head_dim, ReLU
  scores weighted per head) keeps index_topk of them per query; a query i sees entry w only
  when w < ⌊(i + 1)/m⌋. The "compress" rotation (compress_rope_theta, YaRN) on every turn.
- heavily_compressed_attention (HCA, m = 128 in the released models): the same without the
  overlap and without the indexer: every visible entry is a key.

A sliding layer's keys (`keys`): `mla` with `shared_kv` (the query latent q_a_proj, q_a_norm,
q_b_proj; kv_proj as W_DKV and kv_norm's weight, K = V = C_KV for every head; qk_rope_head_dim
as rope_dims; rms_norm_eps), `q_norm` of ones with that ε (q_b_norm), `rope` "pairs" on the
qk_rope_head_dim columns with the "main" frequencies, `vo_rope` (V turned with K, the output
turned back by −i), the window and the causal mask from the mask the layer was given, `sinks`,
and `wo` = blockdiag(o_a_proj's blocks)·o_b_proj, its rows in qkvcalc's order of each head's
columns (the d_R rotary ones first, as mla and rope take them). The fold is one linear map: the
grouped projection computes concat·blockdiag(W_a) then ·W_b, which equals concat·W_O up to the
rounding of the product W_a·W_b (float64's last place).

For whoever reads these layers, the float32 in a float64 model: the RMSNorms compute in float32
(their weights multiplied there too), q_b_norm its rsqrt, the rotary tables and the rotation
itself (`rope.float() * cos`) are float32, the compressors' softmax is `dtype=torch.float32` and
the indexer's scorer `.float()`: a plain `.double()` run is ~6e-8 from a truly float64 one on a
tiny model (extract's run lifts them: islands.py). And transformers 5.25 (not 5.23) lists sinks,
position_bias, q_a_norm, kv_norm, input_layernorm and the mHC weights in
`_keep_in_fp32_modules_strict`: a `from_pretrained(dtype=torch.float64)` leaves them float32,
rounding what the checkpoint holds.

A compressed layer's keys: the same, with the "compress" rotation's frequencies, and
`compress` (qkvcalc/ops/compress.py): m, the compressor's kv_proj as `wkv`, gate_proj as
`wgate`, position_bias as `bias`, kv_norm's weight as `norm` and its ε, each with its d_R rotary
columns (the last) first (a compressed sparse layer's two halves [Ca | Cb] each so, with
"overlap": true). A compressed sparse layer adds `index`, its lightning indexer: its own pool
(kv_proj, gate_proj, position_bias, kv_norm at index_head_dim), q_b_proj as `wq` (each index
head's rotary columns first), scorer.weights_proj as `weights`, index_n_heads and index_topk.
When the prompt is shorter than m the layer makes no entry and `compress` is left out: the layer
is then its sliding window alone, which the problem computes.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.extract.common import (
    Family,
    Layer,
    array,
    decoder,
    default_scale,
    float64,
    mask_keys,
    rows,
)
from qkvcalc.extract.llama import norm_eps
from qkvcalc.extract.rope import buffer, frequencies, scaling
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


# the kinds extract reads: every kind transformers' DeepSeek-V4 has
READ = ("sliding_attention", "heavily_compressed_attention", "compressed_sparse_attention")


def check(config: Any, layer: Any, model: str) -> None:
    """A DeepSeek-V4 layer refused when it is of a kind extract does not know (transformers'
    config validation admits none today; a config.json edited by hand might name one): layer
    `layer`'s kind named when it is one of its layers; the model as a whole (`qkvcalc heads`, a
    layer out of range) refused when any of its layers is of such a kind, with every layer's
    kind."""
    if getattr(config, "model_type", None) != MODEL_TYPE:
        return
    types = [str(name) for name in getattr(config, "layer_types", None) or []]
    if all(name in READ for name in types):
        return  # every layer is of a kind read: qkvcalc heads, or the runner's range check
    whole = isinstance(layer, Integral) and not isinstance(layer, bool)
    if not whole or not 0 <= int(layer) < len(types):
        raise QkvcalcError("extract.dsv4", model=model, layers=_layers(config))
    name = types[int(layer)]
    if name in READ:
        return
    raise QkvcalcError(
        "extract.dsv4_layer",
        layer=int(layer),
        model=model,
        kind=_kind(config, name),
        why=Msg("dsv4.why_other"),
        layers=_layers(config),
    )


def _wo(attn: Any, heads: int, head_dim: int, nope: int) -> np.ndarray:
    """W_O = blockdiag(W_a)·W_b in the rows layout, [H·d_h, hidden]: o_a_proj's group g maps
    its H·d_h/g joined columns to o_lora_rank (weight rows g·r … (g + 1)·r − 1), o_b_proj the
    groups side by side; each head's rows then in qkvcalc's column order (d_R rotary first)."""
    groups = int(attn.o_a_proj.n_groups)
    w_a = array(attn.o_a_proj.weight)  # [g·r, H·d_h/g]
    rank, width = w_a.shape[0] // groups, w_a.shape[1]
    block = np.zeros((groups * width, groups * rank))
    for g in range(groups):
        block[g * width : (g + 1) * width, g * rank : (g + 1) * rank] = w_a[
            g * rank : (g + 1) * rank
        ].T
    folded = block @ rows(attn.o_b_proj)  # [H·d_h, hidden]
    order = np.concatenate(
        [np.r_[h * head_dim + nope : (h + 1) * head_dim, h * head_dim : h * head_dim + nope]
         for h in range(heads)]
    )  # fmt: skip
    return np.ascontiguousarray(folded[order])


def keys(layer: Layer) -> dict[str, Any]:
    """A sliding-window layer's keys (the module's docstring lists them)."""
    attn = layer.attention
    config = attn.config
    heads, head_dim = int(attn.num_heads), int(attn.head_dim)
    rope_dims = int(config.qk_rope_head_dim)
    eps = norm_eps(attn.kv_norm)
    mla = {
        "wq_a": rows(attn.q_a_proj),
        "q_a_norm": array(attn.q_a_norm.weight),
        "wq_b": rows(attn.q_b_proj),
        "wkv_a": rows(attn.kv_proj),
        "kv_a_norm": array(attn.kv_norm.weight),
        "rope_dims": rope_dims,
        "eps": eps,
        "shared_kv": True,
    }
    rotary = decoder(layer.model).rotary_emb
    kind = attn.rope_layer_type  # "main" on a sliding layer
    found = frequencies(rotary, kind, layer.n) if float64(attn) else None
    inv_freq, factor = found or (array(buffer(rotary, kind)).reshape(-1), scaling(rotary, kind))
    turn: dict[str, Any] = {"style": "pairs", "dims": rope_dims, "inv_freq": inv_freq}
    if factor != 1.0:
        turn["attention_factor"] = factor
    out: dict[str, Any] = {
        "mla": mla,
        "heads": heads,
        "q_norm": np.ones(head_dim),
        "norm_eps": norm_eps(attn.q_b_norm),
        "rope": turn,
        "vo_rope": True,
        "sinks": array(attn.sinks),
        "wo": _wo(attn, heads, head_dim, head_dim - rope_dims),
    }
    compressor = getattr(attn, "compressor", None)
    if compressor is not None and layer.n >= int(compressor.compress_rate):
        out["compress"] = _compress(compressor, rope_dims)
    if not default_scale(attn.scaling, head_dim):
        out["scale"] = float(attn.scaling)
    out.update(mask_keys(layer, True))
    return out


def _order(width: int, rope: int, blocks: int = 1) -> np.ndarray:
    """Each block of `width` columns with its last `rope` (the rotary ones) first."""
    one = np.r_[width - rope : width, 0 : width - rope]
    return np.concatenate([one + k * width for k in range(blocks)])


def _compress(comp: Any, rope: int) -> dict[str, Any]:
    """A compressed layer's compressor as the `compress` key, its columns in qkvcalc's order
    (the rotary ones, the compressor's last, first): a compressed sparse layer's two halves
    [Ca | Cb] each so, and its indexer's (its own pool, its queries per index head)."""
    indexer = getattr(comp, "indexer", None)
    width = int(comp.head_dim)
    halves = 1 if indexer is None else 2
    order = _order(width, rope, halves)
    out: dict[str, Any] = {
        "m": int(comp.compress_rate),
        "wkv": rows(comp.kv_proj)[:, order],
        "wgate": rows(comp.gate_proj)[:, order],
        "bias": array(comp.position_bias)[:, order],
        "norm": array(comp.kv_norm.weight)[order[:width]],
        "eps": norm_eps(comp.kv_norm),
    }
    if indexer is not None:
        dim, heads = int(indexer.head_dim), int(indexer.num_heads)
        pooled = _order(dim, rope, 2)
        out["overlap"] = True
        out["index"] = {
            "wkv": rows(indexer.kv_proj)[:, pooled],
            "wgate": rows(indexer.gate_proj)[:, pooled],
            "bias": array(indexer.position_bias)[:, pooled],
            "norm": array(indexer.kv_norm.weight)[pooled[:dim]],
            "wq": rows(indexer.q_b_proj)[:, _order(dim, rope, heads)],
            "weights": rows(indexer.scorer.weights_proj),
            "heads": heads,
            "top_k": int(indexer.index_topk),
        }
    return out


FAMILY = Family(
    names={MODEL_TYPE: "DeepSeek-V4"},
    stack=lambda model: decoder(model).layers,
    attention=lambda block: block.self_attn,
    output=lambda block: block.self_attn.o_b_proj,
    keys=keys,
)
