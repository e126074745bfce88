"""The fields table: every key of the input format, how each is named in messages, the
aliases a key may be written as, and the lookup that forgives case, '_' and '-' ('W_Q', 'w_q'
and 'wq' are one key). A key is named here once; the readers (qkvcalc.input.problem,
qkvcalc.input.variants) read the values."""

from __future__ import annotations

import re
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.labels import closest, shown
from qkvcalc.records import NamedTuple

# positions, windows, RoPE, ALiBi, score biases, q/k norm (read by input/variants.py), and the
# plug-in features' keys (each read by its module in qkvcalc/ops/)
VARIANT_KEYS = (
    "positions",
    "key_positions",
    "causal_align",
    "window",
    "chunk_size",
    "positional",
    "q_norm",
    "k_norm",
    "norm_eps",
    "qk_norm",
    "v_norm",
    "attn_temperature",
    "rope",
    "vo_rope",  # the values turned as the keys, the output turned back (qkvcalc/ops/vo_rope.py)
    "compress",  # entries pooled from X appended to the keys and values (qkvcalc/ops/compress.py)
    "alibi",
    "score_bias",
    "softcap",
    "sinks",
    "mla",
    "indexer",  # the sparse-attention indexer beside mla (qkvcalc/ops/indexer.py)
    "wg",  # the output gate's weight and bias
    "bg",
    "gate_act",  # the output gate's activation: "sigmoid" (the default) or "softplus"
    "differential",  # differential attention: λ, λ_init, ε (qkvcalc/ops/differential.py)
    "sub_norm",  # an RMSNorm over the joined heads before W_O (qkvcalc/ops/sub_norm.py)
    "sub_norm_eps",
    "gated_delta",  # a linear-attention layer: Gated DeltaNet (qkvcalc/ops/gated_delta.py)
    "kimi_delta",  # a linear-attention layer: Kimi Delta Attention (qkvcalc/ops/kimi_delta.py)
    "lightning",  # a linear-attention layer: MiniMax's lightning attention (ops/lightning.py)
)

# the features whose key holds learned weights in place of W_Q, W_K, W_V (a data set gives them
# once, at its top level, as it gives the weights)
STAND_INS = ("mla",)
MATRICES = ("x", "source", "wq", "wk", "wv", "wo", "q", "k", "v")
VECTORS = ("bq", "bk", "bv", "bo")
OPTIONS = (
    "tokens",
    "source_tokens",
    "heads",
    "kv_heads",
    "scale",
    "mask",
    "key_padding",
    "layout",
    "decode",
    "tiles",
    "dtype",  # the precision lab: the dtype and whose rounding (qkvcalc.run.precision)
    "policy",
)
META = ("name", "description", "reference", "edited_from")
LOSS = ("grad_output", "target", "attend")  # where --backward starts (qkvcalc.input.loss)


class FeatureOption(NamedTuple):
    """A plug-in feature's option of `qkvcalc explain`: the type of its value (bool: a flag;
    a tuple of words: a choice of them), the catalog key of its help, the option it follows in
    --help, typer's settings, and where its value goes in the input document (by default the
    key of the same name; ("rope", "theta"): that field of the object under "rope")."""

    kind: type | tuple[str, ...]
    help: str
    after: str
    settings: dict[str, Any] = {}  # noqa: RUF012  # a NamedTuple's default, never changed
    into: tuple[str, ...] = ()


# The plug-in features' options, by option name, in the order they are placed.
FEATURE_OPTIONS: dict[str, FeatureOption] = {
    "window": FeatureOption(int, "help.explain.window", "causal_align", {"min": 1}),
    "chunk_size": FeatureOption(int, "help.explain.chunk", "window", {"min": 1}),
    "rope": FeatureOption(float, "help.explain.rope", "positional", into=("rope", "theta")),
    "rope_style": FeatureOption(
        ("half", "pairs"), "help.explain.rope_style", "rope", into=("rope", "style")
    ),
    "rope_dims": FeatureOption(
        int, "help.explain.rope_dims", "rope_style", {"min": 2}, into=("rope", "dims")
    ),
    "alibi": FeatureOption(bool, "help.explain.alibi", "rope_dims"),
    "softcap": FeatureOption(float, "help.explain.softcap", "alibi"),
}
FIELDS = MATRICES + VECTORS + OPTIONS + VARIANT_KEYS + LOSS + META

# How each field is named in messages: the paper's names, not the JSON keys.
DISPLAY = {
    "x": "X",
    "source": "source",
    "wq": "W_Q",
    "wk": "W_K",
    "wv": "W_V",
    "wo": "W_O",
    "q": "Q",
    "k": "K",
    "v": "V",
    "bq": "b_Q",
    "bk": "b_K",
    "bv": "b_V",
    "bo": "b_O",
    "wg": "W_G",
    "bg": "b_G",
    # multi-head latent attention's weights as qkvcalc train names them (--freeze wdq)
    "wdq": "W_DQ",
    "wcq": "w_CQ",
    "wuq": "W_UQ",
    "wdkv": "W_DKV",
    "wkr": "W_KR",
    "wckv": "w_CKV",
    "wuk": "W_UK",
    "wuv": "W_UV",
    # a linear layer's own weights after its core (lightning's norm and gate, Gated DeltaNet's)
    "norm": "w_norm",
    "wz": "W_z",
    # … and before it: a whole Gated DeltaNet or Kimi Delta Attention layer's convolution taps,
    # the gates' weights of X (W_a, W_b; W_fa, W_fb or W_f), each head's A_log and dt_bias, and
    # the gated norm's low-rank W_ga, W_gb
    "conv": "w_conv",
    "wa": "W_a",
    "wb": "W_b",
    "wfa": "W_fa",
    "wfb": "W_fb",
    "wf": "W_f",
    "a_log": "A_log",
    "dt_bias": "dt_bias",
    "wga": "W_ga",
    "wgb": "W_gb",
    "wsub": "w_sub",  # the norm's weight over the joined heads (BitNet's)
    # DeepSeek-V4's compressed entries' own weights: the values', the gates', the position
    # bias, the entries' norm weight
    "wc": "W_C",
    "wcg": "W_CG",
    "cb": "B",
    "cw": "w_E",
    "grad_output": "grad_output (dL/dO)",
    "target": "target T",
}

_ALIASES = {
    "numheads": "heads",
    "nheads": "heads",
    "numkvheads": "kv_heads",
    "nkvheads": "kv_heads",
    "sourcetokens": "source_tokens",
    "keypadding": "key_padding",
    "kvheads": "kv_heads",
    "slidingwindow": "window",
    "attentionchunksize": "chunk_size",
    "logitsoftcap": "softcap",
    "qnormweight": "q_norm",
    "knormweight": "k_norm",
}


def _norm(key: str) -> str:
    return re.sub(r"[\s_\-]", "", key.lower())


_CANONICAL = {_norm(name): name for name in FIELDS} | _ALIASES


def known_key(key: object) -> str | None:
    """The field a key means ('W_Q', 'w_q', 'num_heads' …), or None if it is not one."""
    return _CANONICAL.get(_norm(key)) if isinstance(key, str) else None


def canonical_key(key: object) -> str:
    """'W_Q', 'w_q' and 'WQ' all mean 'wq'. Unknown keys are an error that suggests a known one."""
    if not isinstance(key, str):
        raise QkvcalcError("key.not_string", key=shown(key))
    found = known_key(key)
    if found is None:
        key = key if len(key) <= 40 else key[:39] + "…"  # a 1,000-character key, abbreviated
        close = closest(_norm(key), list(_CANONICAL), cutoff=0.5)
        if close is not None:
            raise QkvcalcError("key.unknown_suggest", key=key, suggestion=_CANONICAL[close])
        raise QkvcalcError("key.unknown", key=key, known=", ".join(FIELDS))
    return found
