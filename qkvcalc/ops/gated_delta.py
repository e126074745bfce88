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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import to_matrix
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes
from qkvcalc.ops.op import Feeds, Op, Params, Shapes
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels, ref

EPS = 1e-6  # transformers' l2norm: x·rsqrt(Σx² + 1e-6)
CHUNK = 64  # transformers' chunk_size
SETTINGS = ("g", "beta", "chunk")
MISTAKE_IDS = ("gdn_decay_missing", "gdn_delta_missing")  # the quiz's, at weights and output


class GatedDelta(NamedTuple):
    g: np.ndarray  # [n, H]: each token's decay in log space, per head
    beta: np.ndarray  # [n, H]: each token's write strength, per head
    chunk: int  # the chunked form's chunk size
    chunk_given: bool
    d_v: int


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
    the diagonal. Walks back from q_t: u ← A_s·u after reading token s. delta=False: the delta
    rule's read-back left out (A_r = e^(g_r)·I, gated linear attention; a quiz mistake)."""
    n = q.shape[0]
    w = np.zeros((n, n))
    for t in range(n):
        u = q[t].copy()
        for s in range(t, -1, -1):
            w[t, s] = beta[s] * (k[s] @ u)
            kept = u - beta[s] * k[s] * (k[s] @ u) if delta else u
            u = float(np.exp(g[s])) * kept
    return w


def chunked(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, g: np.ndarray, beta: np.ndarray, size: int
) -> np.ndarray:
    """The chunked form (the DeltaNet paper's UT transform, as transformers computes it): within
    a chunk, the delta rule's updates solved at once from a unit lower-triangular system; the
    state carried from chunk to chunk. [n, d_v]."""
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
        system = np.eye(length) + np.tril((bc[:, None] * kc) @ kc.T * decay, -1)
        new_values = np.linalg.solve(system, bc[:, None] * vc)
        k_decayed = np.linalg.solve(system, bc[:, None] * kc * np.exp(cum)[:, None])
        fresh = new_values - k_decayed @ state
        out[part] = (qc * np.exp(cum)[:, None]) @ state + ((qc @ kc.T) * decay) @ fresh
        state = state * float(np.exp(cum[-1])) + (kc * np.exp(cum[-1] - cum)[:, None]).T @ fresh
    return out


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


def _read(raw: Any, sizes: Sizes) -> GatedDelta:
    if not isinstance(raw, dict):
        raise QkvcalcError("gated_delta.not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            raise QkvcalcError("gated_delta.unknown_key", key=shown(key), known=", ".join(SETTINGS))
    if "g" not in raw or "beta" not in raw:
        raise QkvcalcError("gated_delta.needs")
    if sizes.mask_kind != "causal":
        raise QkvcalcError("gated_delta.mask", mask=sizes.mask_kind)
    if sizes.n != sizes.m:
        raise QkvcalcError("gated_delta.cross", n=sizes.n, m=sizes.m)
    if sizes.kv_heads != sizes.heads:
        raise QkvcalcError("gated_delta.kv_heads", heads=sizes.heads, kv_heads=sizes.kv_heads)
    chunk = raw.get("chunk", CHUNK)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise QkvcalcError("gated_delta.chunk", value=shown(chunk))
    g, beta = _per_head(raw["g"], "g", sizes), _per_head(raw["beta"], "beta", sizes)
    if (g > 0).any():  # the decay e^g is at most 1, as the layer makes it (transformers says so)
        t, h = np.argwhere(g > 0)[0]
        raise QkvcalcError("gated_delta.g_positive", token=int(t) + 1, head=int(h) + 1)
    return GatedDelta(g, beta, chunk, "chunk" in raw, sizes.d_v)


def _echo(value: GatedDelta) -> dict[str, Any]:
    out: dict[str, Any] = {"g": value.g.tolist(), "beta": value.beta.tolist()}
    if value.chunk_given:
        out["chunk"] = value.chunk
    return out


# ---- the stages ---------------------------------------------------------------------------------


def _mixer(p: Any, value: GatedDelta, h: int | None, qkv: list[Spec]) -> list[tuple[int, Spec]]:
    """Head h's stages after its q, k, v, each with its step (0: none): the normed q and k,
    the given g and β, the state token by token, the implicit weights, the chunked form and
    the output read from the states."""
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
            notes=(Msg("note.gdn_l2norm"),),
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
        (Const(np.column_stack([value.g[:, col], value.beta[:, col]])),),
        "g, β",
        rows,
        ("g", "β"),
        symbol="g,β",
        letters="n×2",
    )
    out: list[tuple[int, Spec]] = [(0, s) for s in (*norms, gates)]
    zero = Const(np.zeros((p.d_k, p.d_v)))
    for t in range(1, n + 1):
        prev: Any = zero if t == 1 else ref("state", h, t - 1)
        state = Spec(
            "state",
            h,
            "delta_step",
            (prev, ref("k_l2", h), v, ref("gates", h)),
            f"S_{t} = e^(g_{t})·S_{t - 1} + k̂_{t}·(β_{t}·(v_{t} − m_{t}))ᵀ",
            dim_labels(p.d_k),
            dim_labels(p.d_v),
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
        topic="gdn_output",
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
            notes.append(Msg(equal if diff <= tolerance else far, diff=f"{diff:.1e}"))
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
    for q, k, v, gates in _slips(versions, ("q_l2", "k_l2", "v", "gates")):
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


def _torch(p: Any, value: GatedDelta, literal: Any, num: Any) -> list[str]:
    return [
        "# Gated DeltaNet (Qwen3-Next's torch_recurrent_gated_delta_rule, in float64): q and k",
        "# L2-normed, q scaled, then the state S [d_k, d_v] of each head updated token by token.",
        f"g = t({literal(value.g)}).T.unsqueeze(0)  # [1, H, n]: the decay in log space",
        f"beta = t({literal(value.beta)}).T.unsqueeze(0)  # [1, H, n]",
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
    return [("ui.variant.gated_delta", {"chunk": value.chunk})]


def _elements(value: GatedDelta, n: int, m: int, d_k: int) -> int:
    # the states (n of d_k × d_v), the weights, the normed q and k, the chunked output
    return n * d_k * value.d_v + n * m + 2 * n * d_k + n * value.d_v + 2 * n


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
        ),
        Op("delta_step", _step, _step_feeds, work=_step_work),
        Op("gdn_weights", _weights, _weights_feeds, work=_weights_work),
        Op("gdn_chunked", _chunked, _chunked_feeds),
        Op("state_read", _read_states, _read_feeds, work=_read_work),
    ),
    mistakes=(
        Mistakes("gdn_weights", MISTAKE_IDS, _weights_mistakes),
        Mistakes("state_read", MISTAKE_IDS, _output_mistakes),
    ),
    elements=_elements,
    header=_header,
    echo=_echo,
    mixer=_mixer,
    torch_layer=_torch,
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
    no_train="gated_delta.train",
    no_backward="gated_delta.backward",
    no_dtype="gated_delta.dtype",
)
