"""A linear-attention layer as the problem: Kimi Delta Attention (KDA, Kimi Linear), the core the
layer computes between its projections and its gated output norm (transformers'
`recurrent_kimi_delta_attention` and `chunk_kimi_delta_attention`). It is Gated DeltaNet
(`ops/gated_delta.py`) with one decay per Key channel instead of one per head.

    "kimi_delta": {"g": n × H × d_k (or n × H·d_k), "beta": n × H, "chunk": C (optional, 64)}
    per head h:  q_l2   Q̂ = l2norm(Q) / √d_k        l2norm(x) = x / √(Σx² + 10⁻⁶)
                 k_l2   K̂ = l2norm(K)
                 gates  the head's g_t (d_k decays in log space, one per Key channel) and β_t
                 state, step t = 1…n (S_0 = 0, d_k × d_v):
                        S' = Diag(e^(g_t))·S_{t−1};  m = S'ᵀ·k̂_t;  S_t = S' + k̂_t·(β_t·(v_t − m))ᵀ
                 weights  W (n × n, lower triangular): the matrix the layer computes without
                        forming it, W[t, s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t,
                        A_r = Diag(e^(g_r))·(I − β_r·k̂_r·k̂_rᵀ)
                 chunked  the output as the chunked form computes it (chunks of C tokens)
                 output   o_t = S_tᵀ·q̂_t  (= W·V: for fixed q, k, g, β the layer is linear in V)

The whole layer (what `qkvcalc extract` gives of a Kimi Linear KDA layer) adds optional keys
around the core, whose stages are gdn_layer.py's and kda_layer.py's:

    "conv": K × (2·H·d_k + H·d_v)   the causal depthwise convolution's taps over q | k | v, then
                                     SiLU (as gated_delta's)
    "wf_a": d_model × r, "wf_b": r × H·d_k, "a_log": H, "dt_bias": H·d_k, "wb": d_model × H
                                     in place of g and beta: g = −e^(A_log)·softplus(X·W_fa·W_fb
                                     + dt_bias) per channel, β = σ(X·W_b)
    "wf": d_model × H·d_k            in place of wf_a and wf_b: the decay's projection in one
                                     (Ling 3.0's f_proj), g = −e^(A_log)·softplus(X·W_f + dt_bias)
    "lower_bound": b < 0             with the gates made from X: the bounded decay (Ling 3.0's
                                     kda_safe_gate) g = b·σ(e^(A_log)·(F + dt_bias)), in (b, 0)
    "wg_a": d_model × r, "wg_b": r × H·d_v, "norm": d_v, "norm_eps" (1e-6)
                                     after the core: out / √(mean(out²) + ε) ⊙ w ⊙ σ(X·W_ga·W_gb)
    "wz": d_model × H·d_v            in place of wg_a and wg_b: the output gate's projection in
                                     one (Ling 3.0's g_proj; gated_delta's wz), ⊙ σ(X·W_z)

Row c of the state (Key channel c) decays by e^(g_t[c]); with every channel's g equal the layer
is Gated DeltaNet's. Kimi's l2norm divides by the root (x / √(Σx² + ε), as FLA's kernel), as
`gated_delta.l2norm` does; the `l2norm` op is Gated DeltaNet's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import to_matrix
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops import gated_delta, gdn_layer, kda_layer
from qkvcalc.ops import state_rounding as lowp
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes
from qkvcalc.ops.gated_delta import (
    CHUNK,
    CHUNKED_SHOWN,
    WEIGHTS_SHOWN,
    _conv,
    _eps,
    _flat,
    _read_feeds,
    _read_states,
    _read_work,
    _slips,
    _torch_conv,
    _vector,
    _weight,
    check_own_causal,
    state_read_grads,
)
from qkvcalc.ops.op import Feeds, Literals, Op, Params, Shapes
from qkvcalc.plan.gap import gap
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels, ref
from qkvcalc.records import NamedTuple

MADE = ("wf_a", "wf_b", "a_log", "dt_bias", "wb")  # the gates made from X, in place of g, beta
MADE_WHOLE = ("wf", "a_log", "dt_bias", "wb")  # the same with the decay's projection in one
NORMED = ("wg_a", "wg_b", "norm")  # the gated norm after the core (norm_eps with them)
NORMED_WHOLE = ("wz", "norm")  # the same with the gate's projection in one
SETTINGS = ("g", "beta", "chunk", "conv", *MADE, "wf", "lower_bound", *NORMED, "wz", "norm_eps")
NORM_EPS = 1e-6  # KimiLinearRMSNormGated's default eps
TURNED = ("wf_a", "wf_b", "wf", "wb", "wg_a", "wg_b", "wz")  # given out × in in the torch layout
MISTAKE_IDS = ("kda_decay_scalar",)  # the quiz's, at weights and output
# what `qkvcalc train` names each learned weight of the layer (as its gradient stage grad_<name>
# and --freeze do) -> the key that holds it, in the order shown
TRAINED = {
    "conv": "conv",
    "wfa": "wf_a",
    "wfb": "wf_b",
    "wf": "wf",
    "a_log": "a_log",
    "dt_bias": "dt_bias",
    "wb": "wb",
    "wga": "wg_a",
    "wgb": "wg_b",
    "wz": "wz",
    "norm": "norm",
}


class KimiDelta(NamedTuple):
    g: np.ndarray | None  # [n, H, d_k]: each token's decay in log space, per head and channel
    beta: np.ndarray | None  # [n, H]: each token's write strength, per head (None: made)
    chunk: int  # the chunked form's chunk size
    chunk_given: bool
    d_v: int
    given_g: Any  # g as it was given (a JSON trace echoes it so)
    conv: np.ndarray | None = None  # [K, 2·H·d_k + H·d_v]: the taps of each channel, q | k | v
    wf_a: np.ndarray | None = None  # [d_model, r], in the row layout
    wf_b: np.ndarray | None = None  # [r, H·d_k]
    a_log: np.ndarray | None = None  # [H]
    dt_bias: np.ndarray | None = None  # [H·d_k]
    wb: np.ndarray | None = None  # [d_model, H]
    wg_a: np.ndarray | None = None  # [d_model, r]
    wg_b: np.ndarray | None = None  # [r, H·d_v]
    norm: np.ndarray | None = None  # [d_v]: the gated norm's weight w
    norm_eps: float = NORM_EPS
    layout: str = "rows"  # as the user gave the weights (their echo writes them so)
    wf: np.ndarray | None = None  # [d_model, H·d_k]: the decay's projection in one
    wz: np.ndarray | None = None  # [d_model, H·d_v]: the output gate's projection in one
    lower_bound: float | None = None  # the bounded decay's b: g = b·σ(e^(A_log)·(F + dt_bias))

    @property
    def made(self) -> bool:
        """Whether g and β are made from X (the forget gate's weights given)."""
        return self.wf_a is not None or self.wf is not None

    @property
    def kept_float32(self) -> bool:
        """Whether --dtype follows Ling 3.0's model, the layer whose decay's projection is in
        one (wf): its checkpoint keeps conv1d, A_log and dt_bias in float32
        (_keep_in_fp32_modules_strict), and its forget gate casts g back to the dtype."""
        return self.wf is not None


# ---- the numbers (float64 numpy; the tests compare them with transformers' own) ----------------


def step(prev: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: float) -> np.ndarray:
    """One token's update: S' = Diag(e^g)·S (row c times e^(g[c])); m = S'ᵀk; S' + k·(β(v − m))ᵀ.
    [d_k, d_v] -> [d_k, d_v]."""
    decayed = prev * np.exp(g)[:, None]
    memory = decayed.T @ k  # [d_v]: what the decayed state already says for this key
    return decayed + np.outer(k, beta * (v - memory))


def implicit(q: np.ndarray, k: np.ndarray, g: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """W [n, n]: W[t, s] = β_s·k_sᵀ·A_{s+1}⋯A_t·q_t, A_r = Diag(e^(g_r))·(I − β_r k_r k_rᵀ), 0
    above the diagonal (g: [n, d_k]). Walks back from q_t: u ← A_s·u after reading token s."""
    n = q.shape[0]
    w = np.zeros((n, n))
    for t in range(n):
        u = q[t].copy()
        for s in range(t, -1, -1):
            w[t, s] = beta[s] * (k[s] @ u)
            u = np.exp(g[s]) * (u - k[s] * w[t, s])
    return w


def _decays(cum: np.ndarray) -> np.ndarray:
    # [L, L, d_k]: e^(G_i − G_j) channel by channel for j ≤ i (G: the chunk's cumulative g), else 0
    lower = np.tril(np.ones((cum.shape[0],) * 2, dtype=bool))[:, :, None]
    return np.where(lower, np.exp(np.where(lower, cum[:, None, :] - cum[None, :, :], 0.0)), 0.0)


def chunked(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray, size: int
) -> np.ndarray:
    """The chunked form, as transformers' chunk_kimi_delta_attention computes it: within a chunk,
    the delta rule's updates solved at once from a unit lower-triangular system whose entries
    decay channel by channel; the state carried from chunk to chunk. [n, d_v]."""
    n, d_k = k.shape
    state = np.zeros((d_k, v.shape[1]))
    out = np.zeros((n, v.shape[1]))
    for start in range(0, n, size):
        part = slice(start, start + size)
        qc, kc, vc, bc = q[part], k[part], v[part], beta[part]
        cum = np.cumsum(g[part], axis=0)  # [L, d_k]: log of each channel's decay so far
        decay = _decays(cum)
        system = np.eye(len(kc)) + np.tril(
            bc[:, None] * np.einsum("ic,jc,ijc->ij", kc, kc, decay), -1
        )
        new_values = np.linalg.solve(system, bc[:, None] * vc)
        k_decayed = np.linalg.solve(system, bc[:, None] * kc * np.exp(cum))
        fresh = new_values - k_decayed @ state
        intra = np.einsum("ic,jc,ijc->ij", qc, kc, decay)
        out[part] = (qc * np.exp(cum)) @ state + intra @ fresh
        state = state * np.exp(cum[-1])[:, None] + (kc * np.exp(cum[-1] - cum)).T @ fresh
    return out


# ---- reading the key ----------------------------------------------------------------------------


def _gates(raw: Any, sizes: Sizes) -> tuple[np.ndarray, Any]:
    """g as [n, H, d_k], from n × H × d_k (one H × d_k matrix per token) or n × H·d_k (head 1's
    channels first; n × d_k with one head); and g as given, for the echo."""
    want = (sizes.n, sizes.heads, sizes.d_k)
    if isinstance(raw, np.ndarray) and raw.ndim == 3:
        raw = raw.tolist()
    nested = isinstance(raw, list | tuple) and raw and isinstance(raw[0], list | tuple) and raw[0]
    if nested and isinstance(raw[0][0], list | tuple):  # one matrix per token
        # a bad number is named by its token, then its [head, channel]: kimi_delta.g[2][1,3]
        tokens = [to_matrix(row, f"kimi_delta.g[{t}]").values for t, row in enumerate(raw, 1)]
        for t, matrix in enumerate(tokens, start=1):
            if matrix.shape != want[1:]:
                raise QkvcalcError(
                    "kimi_delta.g_token",
                    token=t,
                    shape=shape_text(matrix.shape),
                    heads=sizes.heads,
                    d_k=sizes.d_k,
                )
        if len(tokens) != sizes.n:
            _bad_g(shape_text((len(tokens), *want[1:])), sizes)
        return np.stack(tokens), raw
    flat = to_matrix(raw, "kimi_delta.g").values
    if sizes.heads * sizes.d_k == 1 and flat.shape == (1, sizes.n):  # a flat list of n numbers
        flat = flat.T
    if flat.shape != (sizes.n, sizes.heads * sizes.d_k):
        _bad_g(shape_text(flat.shape), sizes, count=len(raw) if _flat(raw) else None)
    return flat.reshape(want), raw


def _bad_g(shape: str, sizes: Sizes, count: int | None = None) -> NoReturn:
    """g of the wrong shape; `count`: given as a flat list of that many numbers."""
    raise QkvcalcError(
        "kimi_delta.g_shape" if count is None else "kimi_delta.g_flat",
        count=count,
        shape=shape,
        n=sizes.n,
        heads=sizes.heads,
        d_k=sizes.d_k,
        width=sizes.heads * sizes.d_k,
    )


def _beta(raw: Any, sizes: Sizes) -> np.ndarray:
    values = to_matrix(raw, "kimi_delta.beta").values
    if sizes.heads == 1 and values.shape == (1, sizes.n):  # one head: a flat list of n numbers
        values = values.T
    if values.shape != (sizes.n, sizes.heads):
        if _flat(raw):  # a list of numbers: said as such, not as one row
            raise QkvcalcError("kimi_delta.beta_flat", count=len(raw), n=sizes.n, heads=sizes.heads)
        raise QkvcalcError(
            "kimi_delta.beta_shape", shape=shape_text(values.shape), n=sizes.n, heads=sizes.heads
        )
    return values.copy()


def _read(raw: Any, sizes: Sizes) -> KimiDelta:
    if not isinstance(raw, dict):
        raise QkvcalcError("kimi_delta.not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            raise QkvcalcError("kimi_delta.unknown_key", key=shown(key), known=", ".join(SETTINGS))
    made = [key for key in (*MADE, "wf", "lower_bound") if key in raw]
    if made and ("g" in raw or "beta" in raw):
        raise QkvcalcError("kimi_delta.both_gates", made=", ".join(made))
    _one_form(raw, "wf", ("wf_a", "wf_b"))
    need = MADE_WHOLE if "wf" in raw else MADE
    if made and any(key not in raw for key in need):
        missing = ", ".join(key for key in need if key not in raw)
        raise QkvcalcError("kimi_delta.made_needs", missing=missing)
    if not made and ("g" not in raw or "beta" not in raw):
        raise QkvcalcError("kimi_delta.needs")
    check_own_causal(("kimi_delta.mask", "kimi_delta.cross", "kimi_delta.kv_heads"), sizes)
    chunk = raw.get("chunk", CHUNK)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise QkvcalcError("kimi_delta.chunk", value=shown(chunk))
    g = beta = given = None
    if not made:
        (g, given), beta = _gates(raw["g"], sizes), _beta(raw["beta"], sizes)
        if (g > 0).any():  # each channel's decay e^g is at most 1, as the layer makes it
            t, h, c = np.argwhere(g > 0)[0]
            raise QkvcalcError(
                "kimi_delta.g_positive", token=int(t) + 1, head=int(h) + 1, channel=int(c) + 1
            )
        g = g.copy()
    layer = _layer(raw, sizes)
    return KimiDelta(g, beta, chunk, "chunk" in raw, sizes.d_v, given, **layer, layout=sizes.layout)


def _one_form(raw: dict[str, Any], whole: str, parts: tuple[str, str]) -> None:
    """A projection given in one (`whole`) or as its two low-rank factors (`parts`), not both."""
    if whole in raw and any(part in raw for part in parts):
        raise QkvcalcError("kimi_delta.both_forms", whole=whole, parts=", ".join(parts))


def _layer(raw: dict[str, Any], sizes: Sizes) -> dict[str, Any]:
    """The optional keys of the layer around the core, each checked against the sizes (with
    gated_delta's helpers and kimi_delta's messages)."""
    out: dict[str, Any] = {}
    needs_x = [key for key in ("wf_a", "wf", "wb", "wg_a", "wz") if key in raw]
    if needs_x and sizes.d_model is None:
        raise QkvcalcError("kimi_delta.needs_x", field=needs_x[0])
    heads, d_k, own = sizes.heads, sizes.d_k, "kimi_delta"
    if "conv" in raw:
        out["conv"] = _conv(raw["conv"], sizes, own)
    if "wf_a" in raw:
        out["wf_a"] = _weight(raw, "wf_a", _rank(raw, "wf_a", sizes), sizes, own)
        rank = out["wf_a"].shape[1]
        out["wf_b"] = _weight(raw, "wf_b", heads * d_k, sizes, own, rows=rank)
    if "wf" in raw:
        out["wf"] = _weight(raw, "wf", heads * d_k, sizes, own)
    if "wf_a" in raw or "wf" in raw:
        out["a_log"] = _vector(raw, "a_log", heads, own)
        out["dt_bias"] = _vector(raw, "dt_bias", heads * d_k, own)
        out["wb"] = _weight(raw, "wb", heads, sizes, own)
    if "lower_bound" in raw:
        out["lower_bound"] = _lower_bound(raw["lower_bound"])
    out.update(_norm_keys(raw, sizes))
    return out


def _lower_bound(value: Any) -> float:
    """The bounded decay's b: a negative number (g = b·σ(…) lies in (b, 0))."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not -math.inf < value < 0:
        raise QkvcalcError("kimi_delta.lower_bound", value=shown(value))
    return float(value)


def _norm_keys(raw: dict[str, Any], sizes: Sizes) -> dict[str, Any]:
    """The gated norm after the core: its gate's weights (in two, or in one), w and ε."""
    out: dict[str, Any] = {}
    heads, d_v, own = sizes.heads, sizes.d_v, "kimi_delta"
    _one_form(raw, "wz", ("wg_a", "wg_b"))
    need = NORMED_WHOLE if "wz" in raw else NORMED
    given = [key for key in (*NORMED, "wz", "norm_eps") if key in raw]
    if given and any(key not in raw for key in need):
        missing = ", ".join(key for key in need if key not in raw)
        raise QkvcalcError("kimi_delta.norm_needs", given=", ".join(given), missing=missing)
    if "wg_a" in raw:
        out["wg_a"] = _weight(raw, "wg_a", _rank(raw, "wg_a", sizes), sizes, own)
        out["wg_b"] = _weight(raw, "wg_b", heads * d_v, sizes, own, rows=out["wg_a"].shape[1])
    if "wz" in raw:
        out["wz"] = _weight(raw, "wz", heads * d_v, sizes, own)
    if given:
        out["norm"] = _vector(raw, "norm", d_v, own)
    if "norm_eps" in raw:
        out["norm_eps"] = _eps(raw["norm_eps"], own)
    return out


def _rank(raw: dict[str, Any], key: str, sizes: Sizes) -> int:
    """The width r of a low-rank weight of X (its columns; its rows when given out × in): the
    layer's own choice, which W_fb's or W_gb's rows must then match."""
    found = to_matrix(raw[key], f"kimi_delta.{key}").values.shape
    return int(found[0] if sizes.layout == "torch" else found[1])


def _echo(value: KimiDelta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if value.g is not None and value.beta is not None:
        given = value.given_g
        out["g"] = given.tolist() if isinstance(given, np.ndarray) else given
        out["beta"] = value.beta.tolist()
    if value.chunk_given:
        out["chunk"] = value.chunk
    for key in ("conv", *MADE, "wf", *NORMED, "wz"):  # held, and echoed, in the rows layout
        found = getattr(value, key)
        if found is not None:
            out[key] = found.tolist()
    if value.lower_bound is not None:
        out["lower_bound"] = value.lower_bound
    if value.norm is not None and value.norm_eps != NORM_EPS:
        out["norm_eps"] = value.norm_eps
    return out


# ---- the stages ---------------------------------------------------------------------------------


def _mixer(p: Any, value: KimiDelta, h: int | None, qkv: list[Spec]) -> list[tuple[int, Spec]]:
    """Head h's stages after its q, k, v, each with its step (0: none): the convolution (when
    given), the normed q and k, g (d_k per token) and β (given, or made from X), the state
    token by token, the implicit weights, the chunked form, the output read from the states,
    and the gated norm (when given)."""
    before: list[Spec] = []
    if value.conv is not None:
        before = gdn_layer.conv_stages(p, value.conv, h, "kda_conv", value.kept_float32)
    q, k, v = (ref(f"{sid}_conv" if before else sid, h) for sid in ("q", "k", "v"))
    out = [(0, s) for s in (*before, *_norms(p, h, q, k), *_gate_stages(p, value, h))]
    out += _states(p, h, v)
    out += [(0, s) for s in _after_states(p, value, h, v)]
    if value.norm is not None:
        out += [(0, s) for s in kda_layer.norm_stages(p, value, h, ref("output", h))]
    return out


def _norms(p: Any, h: int | None, q: Ref, k: Ref) -> list[Spec]:
    """Q̂ = l2norm(Q) / √d_k and K̂ = l2norm(K) of head h."""
    scaled = p.scale_given is None
    q_formula = f"Q̂ = l2norm(Q) / √{p.d_k}" if scaled else f"Q̂ = l2norm(Q) × {p.scale:g}"
    return [
        Spec(
            sid,
            h,
            "l2norm",
            (src,),
            formula,
            p.tokens,
            dim_labels(p.d_k),
            params={"scale": scale},
            notes=(Msg("note.kda_l2norm"),),
            topic=f"kda_{sid}",
            symbol=symbol,
            letters="n×d_k",
        )
        for sid, src, formula, scale, symbol in (
            ("q_l2", q, q_formula, p.scale, "Q̂"),
            ("k_l2", k, "K̂ = l2norm(K)", 1.0, "K̂"),
        )
    ]


def _gate_stages(p: Any, value: KimiDelta, h: int | None) -> list[Spec]:
    """g and β of head h: given (one stage of its numbers), or made from X (kda_layer.py)."""
    if value.g is None or value.beta is None:
        return kda_layer.gate_stages(p, value, h)
    col = (h or 1) - 1
    return [
        Spec(
            "gates",
            h,
            "input",
            (Const(np.column_stack([value.g[:, col, :], value.beta[:, col]])),),
            "g, β",
            p.tokens,
            (*(f"g_{c}" for c in range(1, p.d_k + 1)), "β"),
            topic="kda_gates",
            symbol="g,β",
            letters="n×(d_k+1)",
        )
    ]


def _states(p: Any, h: int | None, v: Ref) -> list[tuple[int, Spec]]:
    """S_1 … S_n of head h, each at its token's step."""
    rows, out = p.tokens, []
    zero = Const(np.zeros((p.d_k, p.d_v)))
    for t in range(1, len(rows) + 1):
        prev: Any = zero if t == 1 else ref("state", h, t - 1)
        state = Spec(
            "state",
            h,
            "kda_step",
            (prev, ref("k_l2", h), v, ref("gates", h)),
            f"S_{t} = Diag(e^(g_{t}))·S_{t - 1} + k̂_{t}·(β_{t}·(v_{t} − m_{t}))ᵀ",
            dim_labels(p.d_k),
            dim_labels(p.d_v),
            params={"t": t - 1, "step_key": "ui.token_step"},
            notes=(Msg("note.kda_state", t=t, token=rows[t - 1]),) if t == 1 else (),
            topic="kda_state",
            symbol=f"S_{t}",
            letters="d_k×d_v",
        )
        out.append((t, state))
    return out


def _after_states(p: Any, value: KimiDelta, h: int | None, v: Ref) -> list[Spec]:
    rows, n = p.tokens, len(p.tokens)
    states = tuple(ref("state", h, t) for t in range(1, n + 1))
    weights = Spec(
        "weights",
        h,
        "kda_weights",
        (ref("q_l2", h), ref("k_l2", h), ref("gates", h)),
        "W[t,s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t",
        rows,
        p.source_tokens,
        notes=(Msg("note.kda_weights"), Msg("note.kda_weights_work")),
        topic="kda_weights",
        symbol="W",
        letters="n×n",
    )
    chunk = Spec(
        "chunked",
        h,
        "kda_chunked",
        (ref("q_l2", h), ref("k_l2", h), v, ref("gates", h)),
        f"O_chunk = chunked(Q̂, K̂, V, g, β; C = {value.chunk})",
        rows,
        dim_labels(p.d_v),
        params={"chunk": value.chunk},
        topic="kda_chunked",
        symbol="O_chunk",
        letters="n×d_v",
    )
    output = Spec(
        "output",
        h,
        "kda_read",
        (ref("q_l2", h), *states),
        "o_t = S_tᵀ·q̂_t",
        rows,
        dim_labels(p.d_v),
        params={"v": v[0]},  # which stage is V (the quiz's mistakes read it)
        topic="kda_output" if value.norm is None else "kda_output_normed",
        symbol="out",
        letters="n×d_v",
        remarks=_agreement(h, v),
    )
    return [weights, chunk, output]


def _agreement(h: int | None, v: Ref) -> Any:
    """Under the output: W·V equals it (the layer is linear in V), and so does the chunked
    form; each with the largest difference."""

    def remark(value_of: Any) -> tuple[Msg, ...]:
        out = value_of(ref("output", h))
        tolerance = 1e-9 * max(1.0, float(np.abs(out).max(initial=0.0)))
        notes = []
        for other, equal, far in (
            (
                value_of(ref("weights", h)) @ value_of(v),
                "note.kda_linear_in_v",
                "note.kda_linear_in_v_far",
            ),
            (value_of(ref("chunked", h)), "note.kda_chunked_equal", "note.kda_chunked_far"),
        ):
            diff = float(np.abs(other - out).max(initial=0.0))
            notes.append(Msg(equal if diff <= tolerance else far, diff=gap(other, out)))
        return tuple(notes)

    return remark


# ---- the operations -----------------------------------------------------------------------------


def _step(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    prev, k, v, gates = ops
    t = params["t"]
    return step(prev, k[t], v[t], gates[t, :-1], float(gates[t, -1]))


def _weights(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, k, gates = ops
    return implicit(q, k, gates[:, :-1], gates[:, -1])


def _chunked(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, k, v, gates = ops
    return chunked(q, k, v, gates[:, :-1], gates[:, -1], params["chunk"])


def _step_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # S_t[i, j] reads column j of S_(t−1), k̂_t, v_t[j], and every channel's decay (m_t[j]) and β_t
    t = params["t"]
    yield from ((0, r, j) for r in range(shapes[0][0]))
    yield from ((1, t, r) for r in range(shapes[1][1]))
    yield 2, t, j
    yield from ((3, t, c) for c in range(shapes[3][1]))


def _weights_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # W[t, s] reads q̂_t, and k̂, g, β of the tokens s … t (0 above the diagonal: nothing)
    yield from ((0, i, c) for c in range(shapes[0][1]))
    for r in range(j, i + 1):
        yield from ((1, r, c) for c in range(shapes[1][1]))
        yield from ((2, r, c) for c in range(shapes[2][1]))


def _chunked_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # token i's output, column j: its q̂, and k̂, v (column j), g and β of the tokens up to it
    yield from ((0, i, c) for c in range(shapes[0][1]))
    for r in range(i + 1):
        yield from ((1, r, c) for c in range(shapes[1][1]))
        yield 2, r, j
        yield from ((3, r, c) for c in range(shapes[3][1]))


def _step_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.9048×0.5 + 0.6×0.5×(1 − 0.2714) = 0.6712: row i decays by e^(g_t[i]), and
    m_j = Σ_r e^(g_t[r])·S[r, j]·k̂_t[r] (the decayed state read with the Key)."""
    prev, k, v, gates = stage.operands
    t = stage.params["t"]
    g, beta = gates[t, :-1], float(gates[t, -1])
    decays = np.exp(g)
    decay = float(decays[i])
    memory = float((decays * prev[:, j]) @ k[t])
    f, s = style.factor, style.shown
    left = (
        f"{style.at(i + 1, j + 1)}{f(decay)}{style.times}{f(float(prev[i, j]))} + "
        f"{f(float(k[t, i]))}{style.times}{f(beta)}{style.times}"
        f"({style.num(float(v[t, j]))} {style.minus} {style.num(memory)})"
    )
    worked = s(decay) * s(float(prev[i, j])) + s(float(k[t, i])) * s(beta) * (
        s(float(v[t, j])) - s(memory)
    )
    return style.line(left, worked, float(stage.value[i, j]), result)


def decayed_dot(a: np.ndarray, b: np.ndarray, g: np.ndarray) -> float:
    """Σ_c e^(g[c])·a[c]·b[c]: a dot product whose channels decay by their summed g."""
    return float((np.exp(g) * a) @ b)


def _weights_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[3,1]: 0.5×(0.6123 − 0.2358×0.8012 − 0.2012×0.7140) ≈ 0.1040: W[t,s] = β_s·(⟨k̂_s, q̂_t⟩
    decayed over s+1…t − Σ_(r>s) W[t,r]·⟨k̂_s, k̂_r⟩ decayed over s+1…r), each ⟨a, b⟩ decayed
    over a span = Σ_c e^(the span's g[c] summed)·a[c]·b[c]; 0 above the diagonal."""
    if j > i:
        return None
    q, k, gates = stage.operands
    g, beta = gates[:, :-1], gates[:, -1]
    f, s, x = style.factor, style.shown, style.times

    def span(r: int) -> np.ndarray:  # each channel's g summed over the tokens j+1 … r
        return g[j + 1 : r + 1].sum(axis=0)

    first = decayed_dot(k[j], q[i], span(i))
    terms, worked = [f(first)], s(first)
    for r in range(j + 1, i + 1):
        w, overlap = float(stage.value[i, r]), decayed_dot(k[j], k[r], span(r))
        terms.append(f"{f(w)}{x}{f(overlap)}")
        worked -= s(w) * s(overlap)
    inner = f" {style.minus} ".join(terms)
    left = f"{style.at(i + 1, j + 1)}{f(float(beta[j]))}{x}"
    left += f"({inner})" if len(terms) > 1 else inner
    return style.line(left, s(float(beta[j])) * worked, float(stage.value[i, j]), result)


# ---- the quiz's named mistake -------------------------------------------------------------------


def scalar(g: np.ndarray) -> np.ndarray:
    """The mistake's decay: each token's g averaged over the channels, one number for all of them
    (as Gated DeltaNet's one per head). [n, d_k] -> [n, d_k]."""
    return np.repeat(g.mean(axis=1, keepdims=True), g.shape[1], axis=1)


def _weights_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """W with the decay as one number per token (the channels' mean) instead of one per channel."""
    return [
        (
            "kda_decay_scalar",
            Msg("mistake.kda_decay_scalar"),
            implicit(q, k, scalar(gates[:, :-1]), gates[:, -1]),
        )
        for q, k, gates in _slips(versions, ("q_l2", "k_l2", "gates"))
    ]


def _output_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The output read from states decayed by one number per token: W·V of that mistake's W
    (V: the convolved one when the layer has its convolution)."""
    v_id = stage.params.get("v", "v") if getattr(stage, "params", None) else "v"
    return [
        (
            "kda_decay_scalar",
            Msg("mistake.kda_decay_scalar"),
            implicit(q, k, scalar(gates[:, :-1]), gates[:, -1]) @ v,
        )
        for q, k, v, gates in _slips(versions, ("q_l2", "k_l2", v_id, "gates"))
    ]


def _torch(p: Any, value: KimiDelta, literal: Any, num: Any) -> list[str]:
    lines = [*_torch_conv(value, literal)]  # gated_delta's: the same convolution over q | k | v
    lines += [
        "# Kimi Delta Attention (Kimi Linear's recurrent_kimi_delta_attention, in float64):",
        "# q and k L2-normed, q scaled, then the state S [d_k, d_v] of each head decayed row by",
        "# row (one decay per Key channel) and updated token by token.",
    ]
    if value.g is None or value.beta is None:
        lines += kda_layer.torch_gates(value, literal, num)
    else:
        lines += [
            f"g = t({literal(value.g.transpose(1, 0, 2))}).unsqueeze(0)  # [1, H, n, d_k]",
            f"beta = t({literal(value.beta)}).T.unsqueeze(0)  # [1, H, n]",
        ]
    lines += [
        "def l2norm(x):",
        "    return x / torch.sqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6)",
        f"q_hat, k_hat = l2norm(q) * {num(p.scale)}, l2norm(k)",
        "S = torch.zeros(1, H, d_k, d_v, dtype=torch.float64)",
        "heads = torch.zeros(1, H, n, d_v, dtype=torch.float64)",
        "for i in range(n):",
        "    S = S * g[:, :, i].exp().unsqueeze(-1)  # row c of S times e^(g[c])",
        "    kv_mem = (S * k_hat[:, :, i].unsqueeze(-1)).sum(dim=-2)",
        "    delta = (v[:, :, i] - kv_mem) * beta[:, :, i].unsqueeze(-1)",
        "    S = S + k_hat[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)",
        "    heads[:, :, i] = (S * q_hat[:, :, i].unsqueeze(-1)).sum(dim=-2)",
    ]
    return lines + (kda_layer.torch_norm(value, literal, num) if value.norm is not None else [])


def _whole_compared(
    p: Any, value: KimiDelta, find: Callable[..., Any], heads: list[int | None]
) -> list[tuple[str, str, Any]]:
    """--format torch --backward of the whole layer's pieces: d(conv_w), the weights of the
    gates and of the gated norm (in the script's [in, out]), dA_log, d(dt_bias) and the norm's
    weight, as the script names them."""
    out = gated_delta.conv_compared(p, value, find, heads)
    for sid, tensor in (("grad_wfa", "W_fa"), ("grad_wfb", "W_fb"), ("grad_wf", "W_f"),
                        ("grad_wb", "W_b"), ("grad_wga", "W_ga"), ("grad_wgb", "W_gb"),
                        ("grad_wz", "W_z")):  # fmt: skip
        found = find(sid)
        if found is not None:
            out.append(
                (f"d{tensor}", tensor, found.value.T if p.layout == "torch" else found.value)
            )
    decays = [find("grad_decay", h) for h in heads]
    if decays and all(d is not None for d in decays):
        rows = np.stack([d.value[0] for d in decays])  # [H, 1 + d_k]
        out += [("dA_log", "A_log", rows[:, 0]), ("ddt_bias", "dt_bias", rows[:, 1:].reshape(-1))]
    norm = find("grad_norm")
    if norm is not None:
        out.append(("dw_norm", "w_norm", norm.value[0]))
    return out


def _compared(p: Any, value: KimiDelta, find: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    """--format torch --backward: d(g) (g[0]: [H, n, d_k]) and d(β) ([1, H, n]) of every head, as
    the script holds g and beta, when they are given; the whole layer's pieces' gradients."""
    heads: list[int | None] = list(range(1, p.heads + 1)) if p.multihead else [None]
    if value.g is None:
        return _whole_compared(p, value, find, heads)
    found = [find("grad_gates", h) for h in heads]
    if any(f is None for f in found):
        return []
    both = np.stack([f.value for f in found])  # [H, n, d_k + 1]
    given = [("dg", "g[0]", both[:, :, :-1]), ("dbeta", "beta", both[None, :, :, -1])]
    return given + _whole_compared(p, value, find, heads)


def _header(value: KimiDelta) -> list[tuple[str, dict[str, Any]]]:
    lines: list[tuple[str, dict[str, Any]]] = [("ui.variant.kimi_delta", {"chunk": value.chunk})]
    if value.conv is not None:
        lines.append(("ui.variant.gdn_conv", {"taps": value.conv.shape[0]}))
    if value.made:
        key = "ui.variant.kda_gates" if value.wf is None else "ui.variant.kda_gates_whole"
        lines.append((key, {}))
    if value.lower_bound is not None:
        lines.append(("ui.variant.kda_bounded", {"bound": kda_layer.bound_text(value.lower_bound)}))
    if value.norm is not None:
        key = "ui.variant.kda_norm" if value.wz is None else "ui.variant.kda_norm_whole"
        lines.append((key, {}))
    return lines


def _elements(value: KimiDelta, n: int, m: int, d_k: int) -> int:
    # the states (n of d_k × d_v), the weights, the normed q and k, the chunked output, the gates;
    # the convolved q, k, v, the products before the gates, and those of the gated norm
    d_v = value.d_v
    core = n * d_k * d_v + n * m + 2 * n * d_k + n * d_v + n * (d_k + 1)
    conv = (2 * d_k + d_v) * n if value.conv is not None else 0
    rank_f = value.wf_a.shape[1] if value.wf_a is not None else 0
    rank_g = value.wg_a.shape[1] if value.wg_a is not None else 0
    made = n * (rank_f + d_k + 1) if value.made else 0
    norm = n * (rank_g + 3 * d_v) if value.norm is not None else 0
    return core + conv + made + norm


def _joins(value: Any) -> bool:
    """The gated norm comes after each head's core output: the heads are then joined by a
    concat, one head too, so the final output is the gated one (not the core's)."""
    return value.norm is not None


# ---- in PyTorch (--format torch): the same steps as the numpy above ----

_TORCH_DEFS = """\
def kda_step(prev, k, v, g, beta):
    \"\"\"S' = Diag(e^g) S; m = S'^T k; S' + k (beta (v - m))^T.\"\"\"
    decayed = prev * torch.exp(g)[:, None]
    memory = decayed.T @ k
    return decayed + torch.outer(k, beta * (v - memory))


def kda_implicit(q, k, g, beta):
    \"\"\"W [n, n], walking back from q_t: u <- A_s u after reading token s.\"\"\"
    n = q.shape[0]
    w = torch.zeros(n, n, dtype=torch.float64)
    for t in range(n):
        u = q[t].clone()
        for s in range(t, -1, -1):
            w[t, s] = beta[s] * (k[s] @ u)
            u = torch.exp(g[s]) * (u - k[s] * w[t, s])
    return w


def kda_decays(cum):
    \"\"\"[L, L, d_k]: e^(G_i - G_j) channel by channel for j <= i, else 0.\"\"\"
    lower = torch.ones(len(cum), len(cum), dtype=torch.bool).tril()[:, :, None]
    gaps = torch.where(lower, cum[:, None, :] - cum[None, :, :], 0.0)
    return torch.where(lower, torch.exp(gaps), 0.0)


def kda_chunked(q, k, v, g, beta, size):
    \"\"\"The chunked form: a unit lower-triangular system per chunk, the state carried on.\"\"\"
    n, d_k = k.shape
    state = torch.zeros(d_k, v.shape[1], dtype=torch.float64)
    out = torch.zeros(n, v.shape[1], dtype=torch.float64)
    for start in range(0, n, size):
        part = slice(start, start + size)
        qc, kc, vc, bc = q[part], k[part], v[part], beta[part]
        cum = torch.cumsum(g[part], dim=0)
        decay = kda_decays(cum)
        inner = torch.einsum("ic,jc,ijc->ij", kc, kc, decay)
        system = torch.eye(len(kc), dtype=torch.float64) + torch.tril(bc[:, None] * inner, -1)
        new_values = torch.linalg.solve(system, bc[:, None] * vc)
        k_decayed = torch.linalg.solve(system, bc[:, None] * kc * torch.exp(cum))
        fresh = new_values - k_decayed @ state
        intra = torch.einsum("ic,jc,ijc->ij", qc, kc, decay)
        out[part] = (qc * torch.exp(cum)) @ state + intra @ fresh
        carried = (kc * torch.exp(cum[-1] - cum)).T @ fresh
        state = state * torch.exp(cum[-1])[:, None] + carried
    return out
"""


def _torch_step(params: Params, names: Sequence[str], lit: Literals) -> str:
    prev, k, v, gates = names
    t = params["t"]
    return f"kda_step({prev}, {k}[{t}], {v}[{t}], {gates}[{t}, :-1], {gates}[{t}, -1])"


# o_t = S_tᵀ·q̂_t as Gated DeltaNet's (in float32, cast once); its float64 agreement notes left out
_lowp_read = lowp.read_rule(
    True,
    "precision.read_eager",
    "precision.read_naive",
    (
        "note.kda_linear_in_v",
        "note.kda_linear_in_v_far",
        "note.kda_chunked_equal",
        "note.kda_chunked_far",
    ),
)
# one token's state as recurrent_kimi_delta_attention writes it: each Key channel its own decay
_lowp_step = lowp.step_rule(
    lambda gates, t: (gates[t, :-1], float(gates[t, -1])),
    True,
    "precision.state_eager",
    "precision.state_naive",
)


FEATURE = Feature(
    name="kimi_delta",
    read=_read,
    ops=(
        Op(
            "kda_step",
            _step,
            _step_feeds,
            work=_step_work,
            torch=_torch_step,
            torch_defs=_TORCH_DEFS,
            lowp=_lowp_step,
        ),
        Op(
            "kda_weights",
            _weights,
            _weights_feeds,
            work=_weights_work,
            torch=lambda params, names, lit: (
                "kda_implicit({0}, {1}, {2}[:, :-1], {2}[:, -1])".format(*names)
            ),
            torch_defs=_TORCH_DEFS,
            lowp=lowp.shown(lambda ops, params: _weights(ops, params, None), WEIGHTS_SHOWN),
        ),
        Op(
            "kda_chunked",
            _chunked,
            _chunked_feeds,
            torch=lambda params, names, lit: (
                "kda_chunked({0}, {1}, {2}, {3}[:, :-1], {3}[:, -1], ".format(*names)
                + f"{params['chunk']})"
            ),
            torch_defs=_TORCH_DEFS,
            lowp=lowp.shown(lambda ops, params: _chunked(ops, params, None), CHUNKED_SHOWN),
        ),
        Op(
            "kda_read",
            _read_states,
            _read_feeds,
            work=_read_work,
            torch=gated_delta.torch_read,
            torch_defs=gated_delta.TORCH_READ,
            plan_back=lambda back, at, g: state_read_grads(back, at, g, "kda", "Diag(e^(g_{t}))"),
            lowp=_lowp_read,
        ),
        *kda_layer.OPS,
    ),
    mistakes=(
        Mistakes("kda_weights", MISTAKE_IDS, _weights_mistakes),
        Mistakes("kda_read", MISTAKE_IDS, _output_mistakes),
    ),
    elements=_elements,
    header=_header,
    echo=_echo,
    mixer=_mixer,
    joins=_joins,
    torch_layer=_torch,
    torch_compared=_compared,
    torch_module_gap="it computes softmax attention, not a Kimi Delta Attention layer's state",
    words=("Diag", "l2norm", "chunked", "softplus"),
    formula=(
        "S_t = Diag(e^(g_t))·S_(t−1) + k̂_t·(β_t·(v_t − m_t))ᵀ,  o_t = S_tᵀ·q̂_t",
        r"S_t = \mathrm{Diag}(e^{g_t})\, S_{t-1} + \hat{k}_t \left(\beta_t (v_t - m_t)\right)^\top,"
        r"\quad o_t = S_t^\top \hat{q}_t",
    ),
    alone="kimi_delta.alone",
    no_decode="kimi_delta.decode",
    no_tiles="kimi_delta.tiles",
    # what `qkvcalc train` steps of the layer's own: the convolution's taps, the gates' weights
    # (low-rank or in one), A_log, dt_bias, W_b, the gated norm's weights (low-rank or in one)
    learns=gdn_layer.learns(TRAINED),
    before_heads=lambda p, value, x_ref, x_name, keys: kda_layer.shared_stages(p, value),
    grads=lambda p, value, softmaxes: (
        [gdn_layer.norm_weight_grad(p, value.norm_eps)] if value.norm is not None else []
    ),
    no_sdpa="precision.sdpa_linear",
    lowp_policy=(
        ("eager", "precision.policy.kimi_delta.eager"),
        ("eager_fp8", "precision.policy.kimi_delta.eager_fp8"),
        ("naive", "precision.policy.kimi_delta.naive"),
    ),
)
