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

Row c of the state (Key channel c) decays by e^(g_t[c]); with every channel's g equal the layer
is Gated DeltaNet's. Kimi's l2norm divides by the root (x / √(Σx² + ε), as FLA's kernel), as
`gated_delta.l2norm` does; the `l2norm` op is Gated DeltaNet's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, NoReturn

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import to_matrix
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes
from qkvcalc.ops.gated_delta import (
    CHUNK,
    _flat,
    _read_feeds,
    _read_states,
    _read_work,
    _slips,
    check_own_causal,
)
from qkvcalc.ops.op import Feeds, Op, Params, Shapes
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels, ref

SETTINGS = ("g", "beta", "chunk")
MISTAKE_IDS = ("kda_decay_scalar",)  # the quiz's, at weights and output


class KimiDelta(NamedTuple):
    g: np.ndarray  # [n, H, d_k]: each token's decay in log space, per head and Key channel
    beta: np.ndarray  # [n, H]: each token's write strength, per head
    chunk: int  # the chunked form's chunk size
    chunk_given: bool
    d_v: int
    given_g: Any  # g as it was given (a JSON trace echoes it so)


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
    if "g" not in raw or "beta" not in raw:
        raise QkvcalcError("kimi_delta.needs")
    check_own_causal(("kimi_delta.mask", "kimi_delta.cross", "kimi_delta.kv_heads"), sizes)
    chunk = raw.get("chunk", CHUNK)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise QkvcalcError("kimi_delta.chunk", value=shown(chunk))
    (g, given), beta = _gates(raw["g"], sizes), _beta(raw["beta"], sizes)
    if (g > 0).any():  # each channel's decay e^g is at most 1, as the layer makes it
        t, h, c = np.argwhere(g > 0)[0]
        raise QkvcalcError(
            "kimi_delta.g_positive", token=int(t) + 1, head=int(h) + 1, channel=int(c) + 1
        )
    return KimiDelta(g.copy(), beta, chunk, "chunk" in raw, sizes.d_v, given)


def _echo(value: KimiDelta) -> dict[str, Any]:
    given = value.given_g
    g = given.tolist() if isinstance(given, np.ndarray) else given
    out: dict[str, Any] = {"g": g, "beta": value.beta.tolist()}
    if value.chunk_given:
        out["chunk"] = value.chunk
    return out


# ---- the stages ---------------------------------------------------------------------------------


def _mixer(p: Any, value: KimiDelta, h: int | None, qkv: list[Spec]) -> list[tuple[int, Spec]]:
    """Head h's stages after its q, k, v, each with its step (0: none): the normed q and k,
    the given g (d_k per token) and β, the state token by token, the implicit weights, the
    chunked form and the output read from the states."""
    col = (h or 1) - 1
    rows, n = p.tokens, len(p.tokens)
    q, k, v = (ref(sid, h) for sid in ("q", "k", "v"))
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
    gates = Spec(
        "gates",
        h,
        "input",
        (Const(np.column_stack([value.g[:, col, :], value.beta[:, col]])),),
        "g, β",
        rows,
        (*(f"g_{c}" for c in range(1, p.d_k + 1)), "β"),
        topic="kda_gates",
        symbol="g,β",
        letters="n×(d_k+1)",
    )
    out: list[tuple[int, Spec]] = [(0, s) for s in (*norms, gates)]
    zero = Const(np.zeros((p.d_k, p.d_v)))
    for t in range(1, n + 1):
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
    return [*out, *((0, s) for s in _after_states(p, value, h, v))]


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
        topic="kda_output",
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
            notes.append(Msg(equal if diff <= tolerance else far, diff=f"{diff:.1e}"))
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
    """The output read from states decayed by one number per token: W·V of that mistake's W."""
    return [
        (
            "kda_decay_scalar",
            Msg("mistake.kda_decay_scalar"),
            implicit(q, k, scalar(gates[:, :-1]), gates[:, -1]) @ v,
        )
        for q, k, v, gates in _slips(versions, ("q_l2", "k_l2", "v", "gates"))
    ]


def _torch(p: Any, value: KimiDelta, literal: Any, num: Any) -> list[str]:
    return [
        "# Kimi Delta Attention (Kimi Linear's recurrent_kimi_delta_attention, in float64):",
        "# q and k L2-normed, q scaled, then the state S [d_k, d_v] of each head decayed row by",
        "# row (one decay per Key channel) and updated token by token.",
        f"g = t({literal(value.g.transpose(1, 0, 2))}).unsqueeze(0)  # [1, H, n, d_k]: log decays",
        f"beta = t({literal(value.beta)}).T.unsqueeze(0)  # [1, H, n]",
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


def _header(value: KimiDelta) -> list[tuple[str, dict[str, Any]]]:
    return [("ui.variant.kimi_delta", {"chunk": value.chunk})]


def _elements(value: KimiDelta, n: int, m: int, d_k: int) -> int:
    # the states (n of d_k × d_v), the weights, the normed q and k, the chunked output, the gates
    return n * d_k * value.d_v + n * m + 2 * n * d_k + n * value.d_v + n * (d_k + 1)


FEATURE = Feature(
    name="kimi_delta",
    read=_read,
    ops=(
        Op("kda_step", _step, _step_feeds, work=_step_work),
        Op("kda_weights", _weights, _weights_feeds, work=_weights_work),
        Op("kda_chunked", _chunked, _chunked_feeds),
        Op("kda_read", _read_states, _read_feeds, work=_read_work),
    ),
    mistakes=(
        Mistakes("kda_weights", MISTAKE_IDS, _weights_mistakes),
        Mistakes("kda_read", MISTAKE_IDS, _output_mistakes),
    ),
    elements=_elements,
    header=_header,
    echo=_echo,
    mixer=_mixer,
    torch_layer=_torch,
    torch_module_gap="it computes softmax attention, not a Kimi Delta Attention layer's state",
    words=("Diag", "l2norm", "chunked"),
    formula=(
        "S_t = Diag(e^(g_t))·S_(t−1) + k̂_t·(β_t·(v_t − m_t))ᵀ,  o_t = S_tᵀ·q̂_t",
        r"S_t = \mathrm{Diag}(e^{g_t})\, S_{t-1} + \hat{k}_t \left(\beta_t (v_t - m_t)\right)^\top,"
        r"\quad o_t = S_t^\top \hat{q}_t",
    ),
    alone="kimi_delta.alone",
    no_decode="kimi_delta.decode",
    no_tiles="kimi_delta.tiles",
    no_train="kimi_delta.train",
    no_backward="kimi_delta.backward",
    no_dtype="kimi_delta.dtype",
)
