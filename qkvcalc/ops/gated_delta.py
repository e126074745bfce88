"""A linear-attention layer as the problem: Gated DeltaNet (Qwen3-Next, Qwen3.5), the core the
layer computes between its projections and its gated norm (transformers'
`torch_recurrent_gated_delta_rule` and `torch_chunk_gated_delta_rule`).

    "gated_delta": {"g": n × H, "beta": n × H, "chunk": C (optional, 64)}
    per head h:  q_l2   Q̂ = l2norm(Q) / √d_k        l2norm(x) = x / √(Σx² + 10⁻⁶)
                 k_l2   K̂ = l2norm(K)
                 gates  the head's g_t (the decay in log space) and β_t, as given
                 state, step t = 1…n (S_0 = 0, d_k × d_v):
                        S' = e^(g_t)·S_{t−1};  m = S'ᵀ·k̂_t;  S_t = S' + k̂_t·(β_t·(v_t − m))ᵀ
                 weights  W (n × n, lower triangular): the matrix the layer computes without
                        forming it, W[t, s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t,
                        A_r = e^(g_r)·(I − β_r·k̂_r·k̂_rᵀ)
                 chunked  the output as the chunked form computes it (chunks of C tokens)
                 output   o_t = S_tᵀ·q̂_t  (= W·V: for fixed q, k, g, β the layer is linear in V)

The state is d_k × d_v, as transformers keeps it. There is no softmax, so nothing of the
softmax run's feature set applies: the layer is refused beside any other feature.

The whole layer (what `qkvcalc extract` gives of a Qwen3-Next or Qwen3.5 linear-attention
layer) adds optional keys around the core, whose stages are gdn_layer.py's:

    "conv": K × (2·H·d_k + H·d_v)   the causal depthwise convolution's taps over q | k | v, then
                                     SiLU (Q, K, V become Q_c, K_c, V_c before the core)
    "wa", "wb": d_model × H, "a_log", "dt_bias": H    in place of g and beta: [a, b] = X·[W_a,
                                     W_b], g = −e^(A_log)·softplus(a + dt_bias), β = σ(b)
    "beta_scale" (1)                 with them: β = beta_scale·σ(b) (OLMo-Hybrid's 2, β in (0, 2))
    "wz": d_model × H·d_v, "norm": d_v, "norm_eps" (1e-6)    after the core: the gated RMSNorm,
                                     out / √(mean(out²) + ε) ⊙ w ⊙ SiLU(X·W_z)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix, to_matrix, to_vector
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops import gdn_layer
from qkvcalc.ops import state_rounding as lowp
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes
from qkvcalc.ops.op import Feeds, Literals, Op, Params, Shapes
from qkvcalc.plan.gap import gap
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels, ref
from qkvcalc.records import NamedTuple

EPS = 1e-6  # transformers' l2norm: x·rsqrt(Σx² + 1e-6)
CHUNK = 64  # transformers' chunk_size
MADE = ("wa", "wb", "a_log", "dt_bias")  # the gates made from X, in place of g and beta
SETTINGS = ("g", "beta", "chunk", "conv", *MADE, "beta_scale", "wz", "norm", "norm_eps")
NORM_EPS = 1e-6  # Qwen3NextRMSNormGated's default eps
MISTAKE_IDS = ("gdn_decay_missing", "gdn_delta_missing")  # the quiz's, at weights and output


class GatedDelta(NamedTuple):
    g: np.ndarray | None  # [n, H]: each token's decay in log space, per head (None: made)
    beta: np.ndarray | None  # [n, H]: each token's write strength, per head (None: made)
    chunk: int  # the chunked form's chunk size
    chunk_given: bool
    d_v: int
    conv: np.ndarray | None = None  # [K, 2·H·d_k + H·d_v]: the taps of each channel, q | k | v
    wa: np.ndarray | None = None  # [d_model, H], in the row layout
    wb: np.ndarray | None = None  # [d_model, H]
    a_log: np.ndarray | None = None  # [H]
    dt_bias: np.ndarray | None = None  # [H]
    wz: np.ndarray | None = None  # [d_model, H·d_v]
    norm: np.ndarray | None = None  # [d_v]: the gated norm's weight w
    norm_eps: float = NORM_EPS
    layout: str = "rows"  # as the user gave W_a, W_b, W_z (their echo writes them so)
    beta_scale: float = 1.0  # β = beta_scale·σ(b) when made from X (OLMo-Hybrid: 2)


# ---- the numbers (float64 numpy; the tests compare them with transformers' own) ----------------


def l2norm(x: np.ndarray, scale: float = 1.0) -> np.ndarray:
    # [n, d] -> [n, d]: each row over √(its sum of squares + 1e-6), times `scale`
    return x / np.sqrt((x * x).sum(axis=1, keepdims=True) + EPS) * scale


def step(prev: np.ndarray, k: np.ndarray, v: np.ndarray, g: float, beta: float) -> np.ndarray:
    """One token's update: S' = e^g·S; m = S'ᵀk; S' + k·(β(v − m))ᵀ. [d_k, d_v] -> [d_k, d_v]."""
    decayed = prev * float(np.exp(g))
    memory = decayed.T @ k  # [d_v]: what the decayed state already says for this key
    return decayed + np.outer(k, beta * (v - memory))


def implicit(
    q: np.ndarray, k: np.ndarray, g: np.ndarray, beta: np.ndarray, delta: bool = True
) -> np.ndarray:
    """W [n, n]: W[t, s] = β_s·k_sᵀ·A_{s+1}⋯A_t·q_t, A_r = e^(g_r)(I − β_r k_r k_rᵀ), 0 above
    the diagonal. The layer is linear in V, so W is its output for V = I (token s's value the
    unit row e_s): the state recurrence run once with d_v = n, row t of W = q_tᵀ·S_t (n steps of
    d_k × n products, where walking every row back from q_t takes n²/2 small ones). delta=False:
    the delta rule's read-back left out (A_r = e^(g_r)·I, gated linear attention; a quiz
    mistake)."""
    n, d_k = k.shape
    state = np.zeros((d_k, n))
    w = np.zeros((n, n))
    for t in range(n):
        state *= float(np.exp(g[t]))
        written = -(state.T @ k[t]) if delta else np.zeros(n)  # −m: what the state holds
        written[t] += 1.0  # v_t = e_t
        state += np.outer(k[t], beta[t] * written)
        w[t] = q[t] @ state
    return w


def chunked(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray, size: int
) -> np.ndarray:
    """The chunked form (the DeltaNet paper's UT transform, as transformers computes it): within
    a chunk, the delta rule's updates solved at once from a unit lower-triangular system (by
    forward substitution); the state carried from chunk to chunk. [n, d_v].

    The products are einsum's own loops rather than BLAS: a chunk's are small (64 × d_k), and a
    threaded BLAS on a busy machine made them 20 to 40 times slower than the loops."""
    n, d_k = k.shape
    d_v = v.shape[1]
    state = np.zeros((d_k, d_v))
    out = np.zeros((n, d_v))
    for start in range(0, n, size):
        part = slice(start, min(start + size, n))
        qc, kc, vc, bc = q[part], k[part], v[part], beta[part]
        cum = np.cumsum(g[part])  # log of the decay from the chunk's start to each token
        length = cum.shape[0]
        lower = np.tril(np.ones((length, length), dtype=bool))
        decay = np.where(lower, np.exp(np.where(lower, cum[:, None] - cum[None, :], 0.0)), 0.0)
        strict = np.tril(_mm(bc[:, None] * kc, kc.T) * decay, -1)
        # (I + strict)·[U | K_d] = [β·V | β·K·e^cum], unit lower triangular: row by row
        rhs = np.concatenate([bc[:, None] * vc, bc[:, None] * kc * np.exp(cum)[:, None]], axis=1)
        solved = np.empty_like(rhs)
        for i in range(length):
            solved[i] = rhs[i] - strict[i, :i] @ solved[:i]
        new_values, k_decayed = solved[:, :d_v], solved[:, d_v:]
        fresh = new_values - _mm(k_decayed, state)
        out[part] = _mm(qc * np.exp(cum)[:, None], state) + _mm(_mm(qc, kc.T) * decay, fresh)
        carried = _mm((kc * np.exp(cum[-1] - cum)[:, None]).T, fresh)
        state = state * float(np.exp(cum[-1])) + carried
    return out


def _mm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,jk->ik", a, b)


# ---- reading the key ----------------------------------------------------------------------------


def _flat(raw: Any) -> bool:
    """A list of numbers (no list in it): to_matrix reads it as one row."""
    return isinstance(raw, list) and not any(isinstance(item, list | tuple) for item in raw)


def _per_head(raw: Any, name: str, sizes: Sizes) -> np.ndarray:
    values = to_matrix(raw, f"gated_delta.{name}").values
    if sizes.heads == 1 and values.shape == (1, sizes.n):  # one head: a flat list of n numbers
        values = values.T
    if values.shape != (sizes.n, sizes.heads):
        if _flat(raw):  # a list of numbers: said as such, not as one row
            raise QkvcalcError(
                "gated_delta.shape_flat", field=name, count=len(raw), n=sizes.n, heads=sizes.heads
            )
        raise QkvcalcError(
            "gated_delta.shape",
            field=name,
            shape=shape_text(values.shape),
            n=sizes.n,
            heads=sizes.heads,
        )
    return values.copy()


def check_own_causal(keys: tuple[str, str, str], sizes: Sizes) -> None:
    """What a linear-attention layer (this one, Kimi Delta Attention's, lightning attention's)
    asks of the problem: a causal mask, its own tokens as keys, one K/V head per head; each
    refused by the layer's own catalog key (`keys`: the mask's, the cross's, the K/V heads')."""
    mask, cross, kv_heads = keys
    if sizes.mask_kind != "causal":
        raise QkvcalcError(mask, mask=sizes.mask_kind)
    if sizes.n != sizes.m:
        raise QkvcalcError(cross, n=sizes.n, m=sizes.m)
    if sizes.kv_heads != sizes.heads:
        raise QkvcalcError(kv_heads, heads=sizes.heads, kv_heads=sizes.kv_heads)


def _read(raw: Any, sizes: Sizes) -> GatedDelta:
    if not isinstance(raw, dict):
        raise QkvcalcError("gated_delta.not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            raise QkvcalcError("gated_delta.unknown_key", key=shown(key), known=", ".join(SETTINGS))
    made = [key for key in MADE if key in raw]
    if made and ("g" in raw or "beta" in raw):
        raise QkvcalcError("gated_delta.both_gates", made=", ".join(made))
    if made and len(made) < len(MADE):
        missing = ", ".join(key for key in MADE if key not in raw)
        raise QkvcalcError("gated_delta.made_needs", missing=missing)
    if not made and ("g" not in raw or "beta" not in raw):
        raise QkvcalcError("gated_delta.needs")
    check_own_causal(("gated_delta.mask", "gated_delta.cross", "gated_delta.kv_heads"), sizes)
    chunk = raw.get("chunk", CHUNK)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise QkvcalcError("gated_delta.chunk", value=shown(chunk))
    g = beta = None
    if not made:
        g, beta = _per_head(raw["g"], "g", sizes), _per_head(raw["beta"], "beta", sizes)
        if (g > 0).any():  # the decay e^g is at most 1, as the layer makes it (transformers too)
            t, h = np.argwhere(g > 0)[0]
            raise QkvcalcError("gated_delta.g_positive", token=int(t) + 1, head=int(h) + 1)
    return GatedDelta(
        g, beta, chunk, "chunk" in raw, sizes.d_v, **_layer(raw, sizes), layout=sizes.layout
    )


def _layer(raw: dict[str, Any], sizes: Sizes) -> dict[str, Any]:
    """The optional keys of the layer around the core, each checked against the sizes."""
    out: dict[str, Any] = {}
    needs_x = [key for key in (*MADE, "wz") if key in raw]
    if needs_x and sizes.d_model is None:
        raise QkvcalcError("gated_delta.needs_x", field=needs_x[0])
    heads, d_v = sizes.heads, sizes.d_v
    if "conv" in raw:
        out["conv"] = _conv(raw["conv"], sizes)
    if "wa" in raw:
        out["wa"], out["wb"] = (_weight(raw, key, heads, sizes) for key in ("wa", "wb"))
        out["a_log"], out["dt_bias"] = (_vector(raw, key, heads) for key in ("a_log", "dt_bias"))
    if "beta_scale" in raw:
        scale = raw["beta_scale"]
        number = isinstance(scale, int | float) and not isinstance(scale, bool)
        if "wa" not in raw or not number or not 0 < scale <= 2:
            raise QkvcalcError("gated_delta.beta_scale", value=shown(scale))
        out["beta_scale"] = float(scale)
    if ("wz" in raw) != ("norm" in raw):
        raise QkvcalcError("gated_delta.norm_pair", given="wz" if "wz" in raw else "norm")
    if "wz" in raw:
        out["wz"] = _weight(raw, "wz", heads * d_v, sizes)
        out["norm"] = _vector(raw, "norm", d_v)
    if "norm_eps" in raw:
        if "wz" not in raw:
            raise QkvcalcError("gated_delta.norm_pair", given="norm_eps")
        out["norm_eps"] = _eps(raw["norm_eps"])
    return out


# The messages of the layer keys' rules, of this key and of kimi_delta (which reads its layer's
# keys with the same helpers), written out whole
MESSAGES = {
    "gated_delta": {
        "conv": "gated_delta.conv",
        "weight_shape": "gated_delta.weight_shape",
        "vector": "gated_delta.vector",
        "norm_eps": "gated_delta.norm_eps",
    },
    "kimi_delta": {
        "conv": "kimi_delta.conv",
        "weight_shape": "kimi_delta.weight_shape",
        "vector": "kimi_delta.vector",
        "norm_eps": "kimi_delta.norm_eps",
    },
}


def _conv(raw: Any, sizes: Sizes, prefix: str = "gated_delta") -> np.ndarray:
    """The convolution's taps, K × (2·H·d_k + H·d_v): one column per channel of q | k | v
    (`prefix`: the key whose messages say so, gated_delta or kimi_delta)."""
    kernel = to_matrix(raw, f"{prefix}.conv").values
    heads, d_k, d_v = sizes.heads, sizes.d_k, sizes.d_v
    channels = 2 * heads * d_k + heads * d_v
    if kernel.shape[1] != channels:
        raise QkvcalcError(
            MESSAGES[prefix]["conv"],
            shape=shape_text(kernel.shape),
            channels=channels,
            heads=heads,
            d_k=d_k,
            d_v=d_v,
        )
    return kernel.copy()


def _eps(eps: Any, prefix: str = "gated_delta") -> float:
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < 1:
        raise QkvcalcError(MESSAGES[prefix]["norm_eps"], value=shown(eps))
    return float(eps)


def _weight(
    raw: dict[str, Any],
    key: str,
    cols: int,
    sizes: Sizes,
    prefix: str = "gated_delta",
    rows: int | None = None,
) -> np.ndarray:
    """A weight of X (d_model × cols in the row layout, cols × d_model in the torch one; `rows`
    in place of d_model for a weight of a smaller input, as Kimi's low-rank W_fb), as the row
    layout's."""
    w = to_matrix(raw[key], f"{prefix}.{key}").values
    rows = (sizes.d_model or 0) if rows is None else rows
    want = (cols, rows) if sizes.layout == "torch" else (rows, cols)
    if w.shape != want:
        raise QkvcalcError(
            MESSAGES[prefix]["weight_shape"],
            field=key,
            shape=shape_text(w.shape),
            want=shape_text(want),
            layout=sizes.layout,
        )
    return (w.T if sizes.layout == "torch" else w).copy()


def _vector(raw: dict[str, Any], key: str, length: int, prefix: str = "gated_delta") -> np.ndarray:
    found: Matrix = to_vector(raw[key], f"{prefix}.{key}")
    if found.values.shape[1] != length:
        raise QkvcalcError(
            MESSAGES[prefix]["vector"], field=key, length=found.values.shape[1], want=length
        )
    return found.values[0].copy()


def _echo(value: GatedDelta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if value.g is not None and value.beta is not None:
        out.update({"g": value.g.tolist(), "beta": value.beta.tolist()})
    if value.chunk_given:
        out["chunk"] = value.chunk
    for key in ("conv", *MADE, "wz", "norm"):  # held, and echoed, in the rows layout
        found = getattr(value, key)
        if found is not None:
            out[key] = found.tolist()
    if value.wz is not None and value.norm_eps != NORM_EPS:
        out["norm_eps"] = value.norm_eps
    if value.beta_scale != 1.0:
        out["beta_scale"] = value.beta_scale
    return out


# ---- the stages ---------------------------------------------------------------------------------


def _mixer(p: Any, value: GatedDelta, h: int | None, qkv: list[Spec]) -> list[tuple[int, Spec]]:
    """Head h's stages after its q, k, v, each with its step (0: none): the convolution (when
    given), the normed q and k, g and β (given, or made from X), the state token by token, the
    implicit weights, the chunked form, the output read from the states, and the gated norm
    (when given)."""
    before: list[Spec] = []
    if value.conv is not None:
        before = gdn_layer.conv_stages(p, value.conv, h)
    q, k, v = (ref(f"{sid}_conv" if before else sid, h) for sid in ("q", "k", "v"))
    out = [(0, s) for s in before] + _core(p, value, h, q, k, v)
    if value.wz is not None:
        out += [(0, s) for s in gdn_layer.norm_stages(p, value, h, ref("output", h))]
    return out


def _gates(p: Any, value: GatedDelta, h: int | None) -> list[Spec]:
    """g and β of head h: given (one stage of its numbers), or made from X (two)."""
    if value.g is None or value.beta is None:
        return gdn_layer.gate_stages(p, value, h)
    col = (h or 1) - 1
    return [
        Spec(
            "gates",
            h,
            "input",
            (Const(np.column_stack([value.g[:, col], value.beta[:, col]])),),
            "g, β",
            p.tokens,
            ("g", "β"),
            symbol="g,β",
            letters="n×2",
        )
    ]


def _core(
    p: Any, value: GatedDelta, h: int | None, q: Ref, k: Ref, v: Ref
) -> list[tuple[int, Spec]]:
    """The core from head h's q, k, v (projected, or through the convolution)."""
    rows, n = p.tokens, len(p.tokens)
    scaled = p.scale_given is None
    q_formula = f"Q̂ = l2norm(Q) / √{p.d_k}" if scaled else f"Q̂ = l2norm(Q) × {p.scale:g}"
    norms = [
        Spec(
            sid,
            h,
            "l2norm",
            (src,),
            formula,
            rows,
            dim_labels(p.d_k),
            params={"scale": scale},
            notes=(Msg("note.gdn_l2norm"),),
            symbol=symbol,
            letters="n×d_k",
        )
        for sid, src, formula, scale, symbol in (
            ("q_l2", q, q_formula, p.scale, "Q̂"),
            ("k_l2", k, "K̂ = l2norm(K)", 1.0, "K̂"),
        )
    ]
    out: list[tuple[int, Spec]] = [(0, s) for s in (*norms, *_gates(p, value, h))]
    zero = Const(np.zeros((p.d_k, p.d_v)))
    labels_k, labels_v = dim_labels(p.d_k), dim_labels(p.d_v)  # once: n states share them
    for t in range(1, n + 1):
        prev: Any = zero if t == 1 else ref("state", h, t - 1)
        state = Spec(
            "state",
            h,
            "delta_step",
            (prev, ref("k_l2", h), v, ref("gates", h)),
            f"S_{t} = e^(g_{t})·S_{t - 1} + k̂_{t}·(β_{t}·(v_{t} − m_{t}))ᵀ",
            labels_k,
            labels_v,
            params={"t": t - 1, "step_key": "ui.token_step"},
            notes=(Msg("note.gdn_state", t=t, token=rows[t - 1]),) if t == 1 else (),
            symbol=f"S_{t}",
            letters="d_k×d_v",
        )
        out.append((t, state))
    states = tuple(ref("state", h, t) for t in range(1, n + 1))
    weights = Spec(
        "weights",
        h,
        "gdn_weights",
        (ref("q_l2", h), ref("k_l2", h), ref("gates", h)),
        "W[t,s] = β_s·k̂_sᵀ·A_(s+1)⋯A_t·q̂_t",
        rows,
        p.source_tokens,
        notes=(Msg("note.gdn_weights"), Msg("note.gdn_weights_work")),
        topic="gdn_weights",
        symbol="W",
        letters="n×n",
    )
    chunk = Spec(
        "chunked",
        h,
        "gdn_chunked",
        (ref("q_l2", h), ref("k_l2", h), v, ref("gates", h)),
        f"O_chunk = chunked(Q̂, K̂, V, g, β; C = {value.chunk})",
        rows,
        dim_labels(p.d_v),
        params={"chunk": value.chunk},
        symbol="O_chunk",
        letters="n×d_v",
    )
    output = Spec(
        "output",
        h,
        "state_read",
        (ref("q_l2", h), *states),
        "o_t = S_tᵀ·q̂_t",
        rows,
        dim_labels(p.d_v),
        params={"v": v[0]},  # which stage is V (the quiz's mistakes read it)
        topic="gdn_output" if value.wz is None else "gdn_output_normed",
        symbol="out",
        letters="n×d_v",
        remarks=_agreement(h, v),
    )
    return [*out, (0, weights), (0, chunk), (0, output)]


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
                "note.gdn_linear_in_v",
                "note.gdn_linear_in_v_far",
            ),
            (value_of(ref("chunked", h)), "note.gdn_chunked_equal", "note.gdn_chunked_far"),
        ):
            diff = float(np.abs(other - out).max(initial=0.0))
            notes.append(Msg(equal if diff <= tolerance else far, diff=gap(other, out)))
        return tuple(notes)

    return remark


# ---- the operations -----------------------------------------------------------------------------


def _l2norm(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return l2norm(ops[0], params["scale"])


def _step(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    prev, k, v, gates = ops
    t = params["t"]
    return step(prev, k[t], v[t], float(gates[t, 0]), float(gates[t, 1]))


def _weights(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, k, gates = ops
    return implicit(q, k, gates[:, 0], gates[:, 1])


def _chunked(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, k, v, gates = ops
    return chunked(q, k, v, gates[:, 0], gates[:, 1], params["chunk"])


def _read_states(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    # row t: S_tᵀ·q̂_t, [n, d_v]
    q, states = ops[0], ops[1:]
    return np.stack([s.T @ q[t] for t, s in enumerate(states)])


def _row_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, t) for t in range(shapes[0][1]))


def _step_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    t = params["t"]
    yield from ((0, r, j) for r in range(shapes[0][0]))
    yield from ((1, t, r) for r in range(shapes[1][1]))
    yield 2, t, j
    yield 3, t, 0
    yield 3, t, 1


def _read_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, r) for r in range(shapes[0][1]))
    yield from ((1 + i, r, j) for r in range(shapes[1 + i][0]))


def _weights_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # W[t, s] reads q̂_t, and k̂, g, β of the tokens s … t (0 above the diagonal: nothing)
    yield from ((0, i, c) for c in range(shapes[0][1]))
    for r in range(j, i + 1):
        yield from ((1, r, c) for c in range(shapes[1][1]))
        yield from ((2, r, c) for c in range(2))


def _chunked_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # token i's output, column j: its q̂, and k̂, v (column j), g and β of the tokens up to it
    yield from ((0, i, c) for c in range(shapes[0][1]))
    for r in range(i + 1):
        yield from ((1, r, c) for c in range(shapes[1][1]))
        yield 2, r, j
        yield from ((3, r, c) for c in range(2))


def _l2norm_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 2 / √5.0000 × 0.7071 = 0.6325 (the root of the row's Σx² + 10⁻⁶)"""
    (x,) = stage.operands
    scale = float(stage.params["scale"])
    radicand = float((x[i] * x[i]).sum()) + EPS
    s = style.shown
    root = style.root("√" + style.num(radicand))
    left = f"{style.at(i + 1, j + 1)}{style.num(float(x[i, j]))} / {root}"
    shown_value = s(float(x[i, j])) / math.sqrt(s(radicand)) if s(radicand) > 0 else math.nan
    if scale != 1.0:
        left += f"{style.times}{style.factor(scale)}"
        shown_value *= s(scale)
    return style.line(left, shown_value, float(stage.value[i, j]), result)


def _step_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.9048×0.5 + 0.6×0.5×(1 − 0.2714) = 0.6712 (m_j = (e^g·S)ᵀk̂ of this column)"""
    prev, k, v, gates = stage.operands
    t = stage.params["t"]
    g, beta = float(gates[t, 0]), float(gates[t, 1])
    decay = float(np.exp(g))
    memory = float(decay * (prev[:, j] @ k[t]))
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


def _weights_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[3,1]: 0.5×(e^(-0.7)×0.75 − e^(-0.5)×0.2358×0.8944 − e^(-0.7)×0.2012×0.9487) ≈ 0.0397:
    W[t,s] = β_s·(e^(g_(s+1)+…+g_t)·k̂_s·q̂_t − Σ_(r>s) e^(g_(s+1)+…+g_r)·W[t,r]·k̂_s·k̂_r), the
    row walked from its diagonal leftwards (k̂_sᵀ·A_(s+1)⋯A_t·q̂_t unrolled); 0 above it."""
    if j > i:
        return None
    q, k, gates = stage.operands
    g, beta = gates[:, 0], gates[:, 1]
    f, s, x = style.factor, style.shown, style.times

    def decayed(r: int) -> tuple[str, float]:  # e^(g_(j+1) + … + g_r): as written, as read back
        total = float(g[j + 1 : r + 1].sum())
        return style.exp(style.num(total)), math.exp(s(total))

    if j == i:
        dot = float(k[j] @ q[i])
        left = f"{style.at(i + 1, j + 1)}{f(float(beta[j]))}{x}{f(dot)}"
        return style.line(left, s(float(beta[j])) * s(dot), float(stage.value[i, j]), result)
    first, first_value = decayed(i)
    dot = float(k[j] @ q[i])
    terms, worked = [f"{first}{x}{f(dot)}"], first_value * s(dot)
    for r in range(j + 1, i + 1):
        text, value = decayed(r)
        w, overlap = float(stage.value[i, r]), float(k[j] @ k[r])
        terms.append(f"{text}{x}{f(w)}{x}{f(overlap)}")
        worked -= value * s(w) * s(overlap)
    inner = f" {style.minus} ".join(terms)
    left = f"{style.at(i + 1, j + 1)}{f(float(beta[j]))}{x}({inner})"
    return style.line(left, s(float(beta[j])) * worked, float(stage.value[i, j]), result)


def _read_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.3×0.5 + 0.1×0.2 = 0.17 (q̂_t times column j of S_t)"""
    q, state = stage.operands[0], stage.operands[1 + i]
    f, s = style.factor, style.shown
    pairs = [(float(q[i, r]), float(state[r, j])) for r in range(q.shape[1])]
    left = style.at(i + 1, j + 1) + " + ".join(f"{f(a)}{style.times}{f(b)}" for a, b in pairs)
    worked = sum(s(a) * s(b) for a, b in pairs)
    return style.line(left, worked, float(stage.value[i, j]), result)


# ---- the backward pass (--backward), the core with g and β given ---------------------------
#
# S_t = A_t·S_(t−1) + β_t·k̂_t·v_tᵀ with A_t = e^(g_t)·(I − β_t·k̂_t·k̂_tᵀ) (symmetric), read by
# o_t = S_tᵀ·q̂_t and by S_(t+1); so, from the last token back (dS_(n+1) = 0):
#     dS_t = q̂_t·do_tᵀ + e^(g_(t+1))·(I − β_(t+1)·k̂_(t+1)·k̂_(t+1)ᵀ)·dS_(t+1)
# and with S'_t = e^(g_t)·S_(t−1), m_t = S'_tᵀ·k̂_t, u_t = v_t − m_t, c_t = dS_tᵀ·k̂_t:
#     dq̂_t = S_t·do_t,  dv_t = β_t·c_t,  dk̂_t = β_t·(dS_t·u_t − S'_t·c_t),
#     dβ_t = c_t·u_t,  dg_t = ⟨(I − β_t·k̂_t·k̂_tᵀ)·dS_t, S'_t⟩


def _parts(k: np.ndarray, v: np.ndarray, gates: np.ndarray, states: Sequence[np.ndarray],
           grads: Sequence[np.ndarray], t: int) -> tuple[np.ndarray, ...]:  # fmt: skip
    """Token t's (0-based) S'_t, u_t = v_t − m_t and c_t = dS_tᵀ·k̂_t. The gates' row is
    (g, β), or (g_1 … g_(d_k), β) with one decay per Key channel (Kimi Delta Attention's:
    S'_t = Diag(e^(g_t))·S_(t−1), row c times e^(g_t[c]))."""
    before = states[t - 1] if t else np.zeros_like(states[0])
    decayed = np.exp(gates[t, :-1])[:, None] * before
    return decayed, v[t] - decayed.T @ k[t], grads[t].T @ k[t]


def _state_read_grads(back: Any, at: Spec, g: Ref) -> list[Spec]:
    """o_t = S_tᵀ·q̂_t (the head's core output, `at`), from dO (`g`): every state's gradient,
    t = n down to 1, then dQ̂, dK̂, dV and d(g, β). The states hand nothing on: their operands
    (the state before, k̂, v, the gates) all have their gradients from here."""
    return state_read_grads(back, at, g, "gdn", "e^(g_{t})")


def state_read_grads(back: Any, at: Spec, g: Ref, words: str, decay: str) -> list[Spec]:
    """The core's backward (Gated DeltaNet's, or Kimi Delta Attention's with one decay per Key
    channel): its stages' topics, notes and hints `words` + "_grad_…", each step's decay
    written `decay` (with {t})."""
    from qkvcalc.plan.specs import d, stamped

    q_ref, *states = at.operands
    first = back.by[states[0]]
    k_ref, v_ref, gates_ref = first.operands[1], first.operands[2], first.operands[3]
    k, v, gates = back.by[k_ref], back.by[v_ref], back.by[gates_ref]
    h, n = at.head, len(states)
    made: list[Spec] = []
    for t in range(n, 0, -1):
        later: Any = made[-1].ref if t < n else Const(np.zeros((len(first.rows), len(first.cols))))
        rule = f"dS_{t} = q̂_{t}·do_{t}ᵀ"
        if t < n:
            rule += f" + {decay.format(t=t + 1)}·(I − β_{t + 1}·k̂_{t + 1}·k̂_{t + 1}ᵀ)·dS_{t + 1}"
        spec = Spec(
            "grad_state",
            h,
            "gdn_grad_state",
            (q_ref, g, k_ref, gates_ref, later),
            rule,
            first.rows,
            first.cols,
            params={
                "t": t - 1,
                "last": t == n,
                "step_key": "ui.token_step",
                "brief_note": "note.brief_grad_steps",
            },
            notes=(Msg(f"note.{words}_grad_state"),) if t == n else (),
            topic=f"{words}_grad_state",
            hint=(f"hint.{words}_grad_state", {"t": t, "next": t + 1}),
            symbol=f"dS_{t}",
            letters="d_k×d_v",
        )
        made += stamped([spec], step=t)
    grads = tuple(s.ref for s in reversed(made))  # dS_1 … dS_n
    whole = (k_ref, v_ref, gates_ref, *states, *grads)
    sides = (
        (back.by[q_ref], "gdn_grad_q", (g, *states), "dq̂_t = S_t·do_t", "n×d_k"),
        (k, "gdn_grad_k", whole, "dk̂_t = β_t·(dS_t·u_t − S'_t·c_t)", "n×d_k"),
        (v, "gdn_grad_v", whole, "dv_t = β_t·dS_tᵀ·k̂_t", "n×d_v"),
        (gates, "gdn_grad_gates", whole, "dg_t = ⟨(I − β_t·k̂_t·k̂_tᵀ)·dS_t, S'_t⟩, dβ_t = c_t·u_t"
         if words == "gdn" else "dg_t[c] = ⟨row c of (I − β_t·k̂_t·k̂_tᵀ)·dS_t, of S'_t⟩, "
         "dβ_t = c_t·u_t", gates.letters),
    )  # fmt: skip
    for side, op, reads, rule, letters in sides:
        made.append(
            Spec(
                f"grad_{side.id}",
                h,
                op,
                reads,
                rule,
                side.rows,
                side.cols,
                params={"states": n},
                topic=f"{words}_grad_gates" if side is gates else op,
                symbol=d(side.symbol) if side.symbol != "g,β" else "d(g,β)",
                letters=letters,
            )
        )
    return made


def _split(ops: Sequence[np.ndarray], n: int) -> tuple[Any, ...]:
    """k̂, v, the gates, then the n states and the n states' gradients (as sequences)."""
    k, v, gates = ops[:3]
    return k, v, gates, ops[3 : 3 + n], ops[3 + n : 3 + 2 * n]


def _grad_state(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, g, k, gates, later = ops
    t = params["t"]
    out = np.outer(q[t], g[t])
    if not params["last"]:
        kn, beta = k[t + 1], float(gates[t + 1, -1])  # e^g: one, or one per Key channel (row)
        decay = np.exp(gates[t + 1, :-1])[:, None]
        out = out + decay * (later - beta * np.outer(kn, kn @ later))
    return out


def _grad_q(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    g, *states = ops  # dq̂_t = S_t·do_t
    return np.stack([s @ g[t] for t, s in enumerate(states)])


def _grad_k(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    k, v, gates, states, grads = _split(ops, params["states"])
    out = []
    for t in range(len(states)):
        decayed, u, c = _parts(k, v, gates, states, grads, t)
        out.append(float(gates[t, -1]) * (grads[t] @ u - decayed @ c))
    return np.stack(out)


def _grad_v(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    k, _v, gates, states, grads = _split(ops, params["states"])
    return np.stack([float(gates[t, -1]) * (grads[t].T @ k[t]) for t in range(len(states))])


def _grad_gates(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    k, v, gates, states, grads = _split(ops, params["states"])
    out = np.zeros(gates.shape)
    for t in range(len(states)):
        decayed, u, c = _parts(k, v, gates, states, grads, t)
        back = grads[t] - float(gates[t, -1]) * np.outer(k[t], c)
        by_row = (back * decayed).sum(axis=1)  # dg: all of it, or each Key channel's row
        out[t, :-1] = by_row if gates.shape[1] > 2 else by_row.sum()
        out[t, -1] = float(c @ u)
    return out


def _l2norm_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # y = s·x·ρ, ρ = (Σx² + ε)^(−½): dx = s·(ρ·dy − x·ρ³·Σ(x ⊙ dy))
    x = ops[0]
    rho = 1.0 / np.sqrt((x * x).sum(axis=1, keepdims=True) + EPS)
    return (params["scale"] * (rho * g - x * rho**3 * (x * g).sum(axis=1, keepdims=True)),)


def _grad_state_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    t = params["t"]
    yield 0, t, i
    yield 1, t, j
    if not params["last"]:
        yield from ((2, t + 1, r) for r in range(shapes[2][1]))
        yield from ((3, t + 1, c) for c in range(shapes[3][1]))
        yield from ((4, r, j) for r in range(shapes[4][0]))


def _grad_q_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, c) for c in range(shapes[0][1]))
    yield from ((1 + i, j, c) for c in range(shapes[1 + i][1]))


def _whole_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    n = params["states"]
    yield from ((0, i, c) for c in range(shapes[0][1]))
    yield from ((1, i, c) for c in range(shapes[1][1]))
    yield from ((2, i, c) for c in range(shapes[2][1]))  # g (one, or d_k) and β
    for at in ([3 + i - 1] if i else []) + [3 + n + i]:
        yield from ((at, r, c) for r in range(shapes[at][0]) for c in range(shapes[at][1]))


def _grad_state_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 1×0.5 + 0.9048×(0.25 − 0.6×0.7071×0.3) = 0.6611 (q̂_t[i]·do_t[j] + e^(g_(t+1))·
    (dS_(t+1)[i,j] − β_(t+1)·k̂_(t+1)[i]·c_j), c = dS_(t+1)ᵀ·k̂_(t+1))"""
    q, g, k, gates, later = stage.operands
    t = stage.params["t"]
    f, s, x = style.factor, style.shown, style.times
    a, b = float(q[t, i]), float(g[t, j])
    left, worked = f"{style.at(i + 1, j + 1)}{f(a)}{x}{f(b)}", s(a) * s(b)
    if not stage.params["last"]:
        g_col = i if gates.shape[1] > 2 else 0  # one decay per Key channel: row i's
        decay, beta = float(np.exp(gates[t + 1, g_col])), float(gates[t + 1, -1])
        kn, c = float(k[t + 1, i]), float(k[t + 1] @ later[:, j])
        cell = float(later[i, j])
        left += f" + {f(decay)}{x}({style.num(cell)} {style.minus} {f(beta)}{x}{f(kn)}{x}{f(c)})"
        worked += s(decay) * (s(cell) - s(beta) * s(kn) * s(c))
    return style.line(left, worked, float(stage.value[i, j]), result)


def _dot_line(stage: Any, i: int, j: int, style: Any, result: str, scale: float | None,
              pairs: list[tuple[float, float]], minus: list[tuple[float, float]] = ()) -> str:  # type: ignore[assignment]  # fmt: skip
    """[i,j]: β×(a×b + …) or β×(a×b + … − (c×d + …)), or a×b + … with no β."""
    f, s, x = style.factor, style.shown, style.times
    first = " + ".join(f"{f(a)}{x}{f(b)}" for a, b in pairs)
    worked = sum(s(a) * s(b) for a, b in pairs)
    if minus:
        first = f"{first} {style.minus} ({' + '.join(f'{f(a)}{x}{f(b)}' for a, b in minus)})"
        worked -= sum(s(a) * s(b) for a, b in minus)
    if scale is not None:
        first, worked = f"{f(scale)}{x}({first})", s(scale) * worked
    return style.line(f"{style.at(i + 1, j + 1)}{first}", worked, float(stage.value[i, j]), result)


def _grad_q_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 1.2×0.5 + 0.3×1 = 0.9 (row j of S_t times do_t)"""
    g, states = stage.operands[0], stage.operands[1:]
    pairs = [(float(states[i][j, c]), float(g[i, c])) for c in range(g.shape[1])]
    return _dot_line(stage, i, j, style, result, None, pairs)


def _grad_k_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.5×(dS[j,1]×u_1 + … − (S'[j,1]×c_1 + …)), u = v − m, c = dS_tᵀ·k̂_t"""
    k, v, gates, states, grads = _split(stage.operands, stage.params["states"])
    decayed, u, c = _parts(k, v, gates, states, grads, i)
    pairs = [(float(grads[i][j, r]), float(u[r])) for r in range(len(u))]
    minus = [(float(decayed[j, r]), float(c[r])) for r in range(len(c))]
    return _dot_line(stage, i, j, style, result, float(gates[i, -1]), pairs, minus)


def _grad_v_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.5×(dS[1,j]×k̂_1 + …): β_t times column j of dS_t times k̂_t"""
    k, _v, gates, _states, grads = _split(stage.operands, stage.params["states"])
    pairs = [(float(grads[i][r, j]), float(k[i, r])) for r in range(k.shape[1])]
    return _dot_line(stage, i, j, style, result, float(gates[i, -1]), pairs)


def _grad_gates_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dg: the cells of P = (I − β·k̂·k̂ᵀ)·dS_t times S'_t's, added; dβ: c·u, pair by pair"""
    k, v, gates, states, grads = _split(stage.operands, stage.params["states"])
    decayed, u, c = _parts(k, v, gates, states, grads, i)
    if j == gates.shape[1] - 1:  # dβ
        return _dot_line(
            stage, i, j, style, result, None, list(zip(c.tolist(), u.tolist(), strict=True))
        )
    back = grads[i] - float(gates[i, -1]) * np.outer(k[i], c)
    if gates.shape[1] > 2:  # one decay per Key channel: row j of each
        back, decayed = back[j], decayed[j]
    pairs = list(zip(back.ravel().tolist(), decayed.ravel().tolist(), strict=True))
    return _dot_line(stage, i, j, style, result, None, pairs)


def _l2norm_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.7071×(0.4472×0.5 − 1×0.0894×0.2) = …: s·(ρ·dy − x·ρ³·Σ(x ⊙ dy)) of the row"""
    x, g = stage.operands[0], stage.operands[-1]
    scale = float(stage.params["of"]["scale"])
    rho = float(1.0 / np.sqrt((x[i] * x[i]).sum() + EPS))
    m = float((x[i] * g[i]).sum())
    f, s, t = style.factor, style.shown, style.times
    gij, xij = float(g[i, j]), float(x[i, j])
    inner = f"{style.num(rho)}{t}{f(gij)} {style.minus} {f(xij)}{t}{style.num(rho**3)}{t}{f(m)}"
    worked = s(rho) * s(gij) - s(xij) * s(rho**3) * s(m)
    if scale != 1.0:
        inner, worked = f"{f(scale)}{t}({inner})", s(scale) * worked
    return style.line(f"{style.at(i + 1, j + 1)}{inner}", worked, float(stage.value[i, j]), result)


BACK_OPS = (
    Op("gdn_grad_state", _grad_state, _grad_state_feeds, work=_grad_state_work),
    Op("gdn_grad_q", _grad_q, _grad_q_feeds, work=_grad_q_work),
    Op("gdn_grad_k", _grad_k, _whole_feeds, work=_grad_k_work),
    Op("gdn_grad_v", _grad_v, _whole_feeds, work=_grad_v_work),
    Op("gdn_grad_gates", _grad_gates, _whole_feeds, work=_grad_gates_work),
)


# ---- what `qkvcalc train` steps of the layer's own (Feature.learns) ----------------------------

# the convolution's taps, the gates' W_a, W_b, A_log and dt_bias, the gated norm's W_z and weight
LEARNS = gdn_layer.learns(
    {name: name for name in ("conv", "wa", "wb", "a_log", "dt_bias", "wz", "norm")}
)


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.state_rounding) ----------------

WEIGHTS_SHOWN = "precision.weights_shown"  # W and the chunked form: never formed, shown in float32
CHUNKED_SHOWN = "precision.chunked_shown"
# o_t = S_tᵀ·q̂_t: in float32, cast to the dtype once; its float64 agreement notes left out
LOWP_READ = lowp.read_rule(
    True,
    "precision.read_eager",
    "precision.read_naive",
    (
        "note.gdn_linear_in_v",
        "note.gdn_linear_in_v_far",
        "note.gdn_chunked_equal",
        "note.gdn_chunked_far",
    ),
)
_lowp_step = lowp.step_rule(
    lambda gates, t: (float(gates[t, 0]), float(gates[t, 1])),
    True,
    "precision.state_eager",
    "precision.state_naive",
)


# ---- the quiz's named mistakes ------------------------------------------------------------------


def _slips(
    versions: Callable[[str], list[np.ndarray]], names: tuple[str, ...]
) -> list[tuple[np.ndarray, ...]]:
    """Every combination of the student's and the true versions of the stages `names`."""
    combos: list[tuple[np.ndarray, ...]] = [()]
    for sid in names:
        combos = [(*c, x) for c in combos for x in versions(sid)]
    return combos


def _weights_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """W without the decay (every e^(g) left out), or without the delta rule's read-back."""
    found: list[Candidate] = []
    for q, k, gates in _slips(versions, ("q_l2", "k_l2", "gates")):
        g, beta = gates[:, 0], gates[:, 1]
        found.append(
            ("gdn_decay_missing", Msg("mistake.gdn_decay_missing"), implicit(q, k, 0 * g, beta))
        )
        found.append(
            (
                "gdn_delta_missing",
                Msg("mistake.gdn_delta_missing"),
                implicit(q, k, g, beta, delta=False),
            )
        )
    return found


def _output_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The output read from states never decayed, or written without the delta rule's read-back
    (S_t = e^(g_t)·S_(t−1) + β_t·k̂_t·v_tᵀ): W·V of the weights those mistakes give."""
    found: list[Candidate] = []
    v_id = stage.params.get("v", "v") if getattr(stage, "params", None) else "v"
    for q, k, v, gates in _slips(versions, ("q_l2", "k_l2", v_id, "gates")):
        g, beta = gates[:, 0], gates[:, 1]
        found.append(
            ("gdn_decay_missing", Msg("mistake.gdn_decay_missing"), implicit(q, k, 0 * g, beta) @ v)
        )
        found.append(
            (
                "gdn_delta_missing",
                Msg("mistake.gdn_delta_missing"),
                implicit(q, k, g, beta, delta=False) @ v,
            )
        )
    return found


def _compared(p: Any, value: GatedDelta, find: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    """--format torch --backward: d(g) and d(β) of every head, as the script holds g and beta
    ([1, H, n]), when they are given."""
    out: list[tuple[str, str, Any]] = []
    wz, norm = find("grad_wz"), find("grad_norm")
    if wz is not None and norm is not None:  # the gated norm's W_z [d_model, H*d_v] and w [d_v]
        out += [("dW_z", "W_z", wz.value.T if p.layout == "torch" else wz.value)]
        out += [("dw_norm", "w_norm", norm.value[0])]
    heads: list[int | None] = list(range(1, p.heads + 1)) if p.multihead else [None]
    out += conv_compared(p, value, find, heads)
    if value.g is None:
        return out + _gates_compared(p, find, heads)
    found = [find("grad_gates", h) for h in heads]
    if any(f is None for f in found):
        return out
    both = np.stack([f.value for f in found])  # [H, n, 2]
    return [*out, ("dg", "g", both[None, :, :, 0]), ("dbeta", "beta", both[None, :, :, 1])]


def conv_compared(
    p: Any, value: Any, find: Callable[..., Any], heads: Sequence[int | None]
) -> list[tuple[str, str, Any]]:
    """--format torch --backward: d(conv_w), the heads' taps' gradients in the kernel's columns
    (q | k | v, as the layer lays its channels), when the convolution is given and reached."""
    whole = None if value.conv is None else gdn_layer.taps_grad(p, value, find, heads)
    return [] if whole is None else [("dconv_w", "conv_w", whole)]


def _gates_compared(
    p: Any, find: Callable[..., Any], heads: Sequence[int | None]
) -> list[tuple[str, str, Any]]:
    """dW_a, dW_b (in the script's [d_model, H]), dA_log and d(dt_bias) ([H]) of g and β made
    from X."""
    out: list[tuple[str, str, Any]] = []
    for letter in ("a", "b"):
        found = find(f"grad_w{letter}")
        if found is not None:
            value = found.value.T if p.layout == "torch" else found.value
            out.append((f"dW_{letter}", f"W_{letter}", value))
    decays = [find("grad_decay", h) for h in heads]
    if all(d is not None for d in decays):
        both = np.stack([d.value[0] for d in decays])  # [H, 2]
        out += [("dA_log", "A_log", both[:, 0]), ("ddt_bias", "dt_bias", both[:, 1])]
    return out


def _torch(p: Any, value: GatedDelta, literal: Any, num: Any) -> list[str]:
    return [*_torch_conv(value, literal), *_torch_core(p, value, literal, num)] + (
        _torch_norm(value, literal, num) if value.wz is not None else []
    )


def _torch_conv(value: Any, literal: Any) -> list[str]:
    """The convolution's lines (value.conv: gated_delta's, or kimi_delta's, the same)."""
    if value.conv is None:
        return []
    return [
        "# The causal depthwise convolution over q | k | v (conv1d, groups = channels), then",
        "# SiLU, as the layer's causal_conv1d_fn.",
        f"conv_w = t({literal(value.conv)})  # [K, 2*H*d_k + H*d_v]: each channel's taps",
        "mixed = torch.cat([Q, K, V], dim=1).T.unsqueeze(0)  # [1, channels, n]",
        "mixed = F.conv1d(mixed, conv_w.T.unsqueeze(1), padding=conv_w.shape[0] - 1,",
        "                 groups=mixed.shape[1])[0, :, :n].T",
        "Q_c, K_c, V_c = F.silu(mixed).split([H * d_k, H * d_k, H * d_v], dim=1)",
        "q = Q_c.reshape(n, H, d_k).transpose(0, 1).unsqueeze(0)",
        "k = K_c.reshape(m, G, d_k).transpose(0, 1).unsqueeze(0)",
        "v = V_c.reshape(m, G, d_v).transpose(0, 1).unsqueeze(0)",
    ]


def _torch_gates(value: GatedDelta, literal: Any, num: Any) -> list[str]:
    if value.g is not None and value.beta is not None:
        return [
            f"g = t({literal(value.g)}).T.unsqueeze(0)  # [1, H, n]: the decay in log space",
            f"beta = t({literal(value.beta)}).T.unsqueeze(0)  # [1, H, n]",
        ]
    return [
        "# g and beta made from X: g = -exp(A_log) * softplus(X @ W_a + dt_bias), sigmoid(X @ W_b)",
        f"W_a = t({literal(value.wa)})  # [d_model, H]",
        f"W_b = t({literal(value.wb)})  # [d_model, H]",
        f"A_log = t({literal(value.a_log)})",
        f"dt_bias = t({literal(value.dt_bias)})",
        "g = (-A_log.exp() * F.softplus(X @ W_a + dt_bias)).T.unsqueeze(0)  # [1, H, n]",
        f"beta = {num(value.beta_scale)} * torch.sigmoid(X @ W_b).T.unsqueeze(0)  # [1, H, n]"
        if value.beta_scale != 1.0
        else "beta = torch.sigmoid(X @ W_b).T.unsqueeze(0)  # [1, H, n]",
    ]


def _torch_norm(value: GatedDelta, literal: Any, num: Any) -> list[str]:
    return [
        "# The gated RMSNorm (Qwen3NextRMSNormGated): each head's output over its root mean",
        "# square, times w, times SiLU(Z), Z = X @ W_z (the head's columns).",
        f"W_z = t({literal(value.wz)})  # [d_model, H*d_v]",
        f"w_norm = t({literal(value.norm)})  # [d_v]",
        "z = (X @ W_z).reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
        f"heads = heads * torch.rsqrt(heads.pow(2).mean(-1, keepdim=True) + {num(value.norm_eps)})",
        "heads = heads * w_norm * F.silu(z)",
    ]


def _torch_core(p: Any, value: GatedDelta, literal: Any, num: Any) -> list[str]:
    return [
        "# Gated DeltaNet (Qwen3-Next's torch_recurrent_gated_delta_rule, in float64): q and k",
        "# L2-normed, q scaled, then the state S [d_k, d_v] of each head updated token by token.",
        *_torch_gates(value, literal, num),
        "def l2norm(x):",
        "    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6)",
        f"q_hat, k_hat = l2norm(q) * {num(p.scale)}, l2norm(k)",
        "S = torch.zeros(1, H, d_k, d_v, dtype=torch.float64)",
        "heads = torch.zeros(1, H, n, d_v, dtype=torch.float64)",
        "for i in range(n):",
        "    S = S * g[:, :, i].exp()[..., None, None]",
        "    kv_mem = (S * k_hat[:, :, i].unsqueeze(-1)).sum(dim=-2)",
        "    delta = (v[:, :, i] - kv_mem) * beta[:, :, i].unsqueeze(-1)",
        "    S = S + k_hat[:, :, i].unsqueeze(-1) * delta.unsqueeze(-2)",
        "    heads[:, :, i] = (S * q_hat[:, :, i].unsqueeze(-1)).sum(dim=-2)",
    ]


def _header(value: GatedDelta) -> list[tuple[str, dict[str, Any]]]:
    lines: list[tuple[str, dict[str, Any]]] = [("ui.variant.gated_delta", {"chunk": value.chunk})]
    if value.conv is not None:
        lines.append(("ui.variant.gdn_conv", {"taps": value.conv.shape[0]}))
    if value.wa is not None:
        lines.append(("ui.variant.gdn_gates", {}))
    if value.wz is not None:
        lines.append(("ui.variant.gdn_norm", {}))
    return lines


def _elements(value: GatedDelta, n: int, m: int, d_k: int) -> int:
    # the states (n of d_k × d_v), the weights, the normed q and k, the chunked output; the
    # convolved q, k, v, the [a, b] before the gates, Z, the normed and the gated output
    core = n * d_k * value.d_v + n * m + 2 * n * d_k + n * value.d_v + 2 * n
    conv = (2 * d_k + value.d_v) * n if value.conv is not None else 0
    made = 2 * n if value.wa is not None else 0
    norm = 3 * n * value.d_v if value.wz is not None else 0
    return core + conv + made + norm


def _joins(value: Any) -> bool:
    """The gated norm comes after each head's core output: the heads are then joined by a
    concat, one head too, so the final output is the gated one (not the core's)."""
    return value.norm is not None


# ---- in PyTorch (--format torch): the same steps as the numpy above ----

TORCH_READ = """\
def read_states(q, states):
    \"\"\"Row t: S_t^T . q_t.\"\"\"
    return torch.stack([s.T @ q[t] for t, s in enumerate(states)])
"""
_TORCH_DEFS = """\
def delta_step(prev, k, v, g, beta):
    \"\"\"S' = e^g * S; m = S'^T k; S' + k (beta (v - m))^T.\"\"\"
    decayed = prev * torch.exp(g)
    memory = decayed.T @ k
    return decayed + torch.outer(k, beta * (v - memory))


def gdn_implicit(q, k, g, beta):
    \"\"\"W [n, n]: the recurrence run once with V = I, row t of W = q_t^T S_t.\"\"\"
    n, d_k = k.shape
    state = torch.zeros(d_k, n, dtype=torch.float64)
    w = torch.zeros(n, n, dtype=torch.float64)
    for t in range(n):
        state = state * torch.exp(g[t])
        written = -(state.T @ k[t])
        written[t] += 1.0
        state = state + torch.outer(k[t], beta[t] * written)
        w[t] = q[t] @ state
    return w


def gdn_chunked(q, k, v, g, beta, size):
    \"\"\"The chunked form: within a chunk, the delta rule solved by forward substitution.\"\"\"
    n, d_k = k.shape
    d_v = v.shape[1]
    state = torch.zeros(d_k, d_v, dtype=torch.float64)
    out = torch.zeros(n, d_v, dtype=torch.float64)
    for start in range(0, n, size):
        part = slice(start, min(start + size, n))
        qc, kc, vc, bc = q[part], k[part], v[part], beta[part]
        cum = torch.cumsum(g[part], dim=0)
        lower = torch.ones(len(cum), len(cum), dtype=torch.bool).tril()
        gaps = torch.where(lower, cum[:, None] - cum[None, :], 0.0)
        decay = torch.where(lower, torch.exp(gaps), 0.0)
        strict = torch.tril((bc[:, None] * kc) @ kc.T * decay, -1)
        rhs = torch.cat([bc[:, None] * vc, bc[:, None] * kc * torch.exp(cum)[:, None]], dim=1)
        solved = torch.empty_like(rhs)
        for i in range(len(cum)):
            solved[i] = rhs[i] - strict[i, :i] @ solved[:i]
        fresh = solved[:, :d_v] - solved[:, d_v:] @ state
        out[part] = (qc * torch.exp(cum)[:, None]) @ state + ((qc @ kc.T) * decay) @ fresh
        carried = (kc * torch.exp(cum[-1] - cum)[:, None]).T @ fresh
        state = state * torch.exp(cum[-1]) + carried
    return out
"""


def _torch_step(params: Params, names: Sequence[str], lit: Literals) -> str:
    prev, k, v, gates = names
    t = params["t"]
    return f"delta_step({prev}, {k}[{t}], {v}[{t}], {gates}[{t}, 0], {gates}[{t}, 1])"


def torch_read(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"read_states({names[0]}, [{', '.join(names[1:])}])"


def _torch_l2norm(params: Params, names: Sequence[str], lit: Literals) -> str:
    x = names[0]
    root = f"torch.sqrt(({x} * {x}).sum(dim=1, keepdim=True) + {lit.num(EPS)})"
    return f"{x} / {root} * {lit.num(params['scale'])}"


FEATURE = Feature(
    name="gated_delta",
    read=_read,
    ops=(
        Op(
            "l2norm",
            _l2norm,
            _row_feeds,
            rowwise=True,
            overflow=lambda params: False,
            exact_stops="note.exact_stops_l2norm",
            work=_l2norm_work,
            torch=_torch_l2norm,
            backward=_l2norm_back,
            grad_formula=lambda into, out, x, params: (
                f"s·(ρ·{out} − {x}·ρ³·Σ({x} ⊙ {out})), ρ = 1/√(Σ{x}² + 10⁻⁶)"
            ),
            grad_work=_l2norm_grad_work,
            grad_reads=True,
            lowp=lowp.l2norm_rule(EPS, "precision.l2norm_eager", "precision.l2norm_naive"),
        ),
        Op(
            "delta_step",
            _step,
            _step_feeds,
            work=_step_work,
            torch=_torch_step,
            torch_defs=_TORCH_DEFS,
            lowp=_lowp_step,
        ),
        Op(
            "gdn_weights",
            _weights,
            _weights_feeds,
            work=_weights_work,
            torch=lambda params, names, lit: "gdn_implicit({0}, {1}, {2}[:, 0], {2}[:, 1])".format(
                *names
            ),
            torch_defs=_TORCH_DEFS,
            lowp=lowp.shown(lambda ops, params: _weights(ops, params, None), WEIGHTS_SHOWN),
        ),
        Op(
            "gdn_chunked",
            _chunked,
            _chunked_feeds,
            torch=lambda params, names, lit: (
                "gdn_chunked({0}, {1}, {2}, {3}[:, 0], {3}[:, 1], ".format(*names)
                + f"{params['chunk']})"
            ),
            torch_defs=_TORCH_DEFS,
            lowp=lowp.shown(lambda ops, params: _chunked(ops, params, None), CHUNKED_SHOWN),
        ),
        Op(
            "state_read",
            _read_states,
            _read_feeds,
            work=_read_work,
            torch=torch_read,
            torch_defs=TORCH_READ,
            plan_back=_state_read_grads,
            lowp=LOWP_READ,
        ),
        *BACK_OPS,
        *gdn_layer.OPS,
    ),
    mistakes=(
        Mistakes("gdn_weights", MISTAKE_IDS, _weights_mistakes),
        Mistakes("state_read", MISTAKE_IDS, _output_mistakes),
    ),
    elements=_elements,
    header=_header,
    echo=_echo,
    mixer=_mixer,
    joins=_joins,
    torch_layer=_torch,
    torch_compared=_compared,
    grads=lambda p, value, softmaxes: (
        [gdn_layer.norm_weight_grad(p, value.norm_eps)] if value.wz is not None else []
    ),
    torch_module_gap="it computes softmax attention, not a Gated DeltaNet layer's state",
    formula=(
        "S_t = e^(g_t)·S_(t−1) + k̂_t·(β_t·(v_t − m_t))ᵀ,  o_t = S_tᵀ·q̂_t",
        r"S_t = e^{g_t} S_{t-1} + \hat{k}_t \left(\beta_t (v_t - m_t)\right)^\top,"
        r"\quad o_t = S_t^\top \hat{q}_t",
    ),
    words=("l2norm", "chunked"),
    alone="gated_delta.alone",
    no_decode="gated_delta.decode",
    no_tiles="gated_delta.tiles",
    learns=LEARNS,
    no_sdpa="precision.sdpa_linear",
    lowp_policy=(
        ("eager", "precision.policy.gated_delta.eager"),
        ("eager_fp8", "precision.policy.gated_delta.eager_fp8"),
        ("naive", "precision.policy.gated_delta.naive"),
    ),
)
