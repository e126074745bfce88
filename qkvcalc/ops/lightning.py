"""A linear-attention layer as the problem: MiniMax's lightning attention (transformers'
`MiniMaxLightningAttention`), linear attention with a fixed decay per head and no delta rule.

    "lightning": {"slope": [λ per head], "block": B (optional, 256),
                  "act": "silu" (optional), "norm": [H·d_v] (optional), "norm_eps": ε (1e-6),
                  "gate": d_model × H·d_v (optional, in the problem's layout)}
    per head h:  q_silu, k_silu, v_silu  silu(Q), silu(K), silu(V) when "act" is "silu"
                 state, step t = 1…n (S_0 = 0, d_k × d_v):  S_t = e^(−λ)·S_(t−1) + k_t·v_tᵀ
                 weights  W (n × n, lower triangular), never formed by the layer:
                        W[t, s] = e^(−λ·(t − s))·q_t·k_s
                 chunked  the output as MiniMax computes it, blocks of B tokens: within a block
                        ((Q·Kᵀ) ⊙ D)·V with D[i, j] = e^(−λ·(i − j)), plus the state carried
                        from the blocks before, read by q_i·e^(−λ·(i + 1))
                 output   o_t = S_tᵀ·q_t  (= W·V)
    after every head (when "norm" or "gate" is given; MiniMax gives both):
                 o_rms    each row's root mean square over all the heads' outputs side by side
                 o_norm   head h's output / that root × its columns of the norm's weight
                 gate_logits, gate, gated  the output gate of qkvcalc/ops/gate.py: σ(X·W_G)
    then the concat and W_O (MiniMax's out_proj) as for any layer.

q is not scaled: the layer has no 1/√d_k. There is no softmax, so nothing of the softmax run's
feature set applies: the layer is refused beside any other feature.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix, to_matrix
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops import gate as output_gate
from qkvcalc.ops import gated_delta, gdn_layer, state_rounding
from qkvcalc.ops import rounding as lowp
from qkvcalc.ops.base import Candidate, Feature, Learns, Mistakes, Sizes
from qkvcalc.ops.gated_delta import _read_feeds, _read_states, _read_work, check_own_causal
from qkvcalc.ops.op import Back, Feeds, Literals, Op, Params, Part, Shapes, same_cell
from qkvcalc.plan.gap import gap
from qkvcalc.plan.specs import Const, Ref, Spec, d, dim_labels, ref, stamped
from qkvcalc.records import NamedTuple

BLOCK = 256  # MiniMax's block_size
EPS = 1e-6  # MiniMaxRMSNorm's default: the lightning layer's norm is built without an eps
SETTINGS = ("slope", "block", "act", "norm", "norm_eps", "gate")
MISTAKE_IDS = ("lightning_decay_missing", "lightning_decay_by_position")


class Lightning(NamedTuple):
    slope: np.ndarray  # [H]: each head's decay rate λ (the state is multiplied by e^(−λ))
    block: int
    block_given: bool
    act: str | None  # "silu": q, k and v each silu(X·W)
    norm: np.ndarray | None  # [H·d_v]: the RMSNorm's weight over the joined heads
    eps: float
    gate: Matrix | None  # [d_model, H·d_v], in the row layout
    layout: str
    d_v: int
    heads: int


# ---- the numbers (float64 numpy; the tests compare them with transformers' own) ----------------


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def step(prev: np.ndarray, k: np.ndarray, v: np.ndarray, decay: float) -> np.ndarray:
    """One token's update: S = e^(−λ)·S + k·vᵀ. [d_k, d_v] -> [d_k, d_v]."""
    return decay * prev + np.outer(k, v)


def distances(n: int) -> np.ndarray:
    """[n, n]: t − s on and below the diagonal, 0 above it."""
    index = np.arange(n)
    return np.tril(index[:, None] - index[None, :])


def implicit(q: np.ndarray, k: np.ndarray, slope: float, by: str = "distance") -> np.ndarray:
    """W [n, n]: W[t, s] = e^(−λ·(t − s))·q_t·k_s for s ≤ t, 0 above. by="none": the decay left
    out; by="position": e^(−λ·s) with s the key's position (1, 2, …), the quiz's mistakes."""
    n = q.shape[0]
    if by == "distance":
        decay = np.exp(-slope * distances(n))
    elif by == "position":
        decay = np.exp(-slope * np.arange(1, n + 1, dtype=float))[None, :] * np.ones((n, 1))
    else:
        decay = np.ones((n, n))
    return np.tril((q @ k.T) * decay)


def blocked(q: np.ndarray, k: np.ndarray, v: np.ndarray, slope: float, size: int) -> np.ndarray:
    """MiniMax's blocked form: per block, intra ((Q·Kᵀ) ⊙ D)·V with D[i, j] = e^(−λ(i − j)) for
    i ≥ j, inter (Q ⊙ e^(−λ(i + 1)))·S, then S = e^(−λ·b)·S + (K ⊙ e^(−λ(b − 1 − j)))ᵀ·V for
    a block of b tokens. [n, d_v]."""
    n, d_k = k.shape
    state = np.zeros((d_k, v.shape[1]))
    out = np.zeros((n, v.shape[1]))
    for start in range(0, n, size):
        part = slice(start, min(start + size, n))
        qb, kb, vb = q[part], k[part], v[part]
        b = qb.shape[0]
        at = np.arange(b, dtype=float)
        inside = np.tril(np.exp(-slope * np.tril(at[:, None] - at[None, :])))
        intra = ((qb @ kb.T) * inside) @ vb
        inter = (qb * np.exp(-slope * (at + 1))[:, None]) @ state
        out[part] = inter + intra
        state = math.exp(-slope * b) * state + (kb * np.exp(-slope * (b - 1 - at))[:, None]).T @ vb
    return out


# ---- reading the key ----------------------------------------------------------------------------


def _numbers(raw: Any, name: str, length: int) -> np.ndarray:
    values = to_matrix(raw, f"lightning.{name}").values
    if values.shape == (length, 1):
        values = values.T
    if values.shape != (1, length):
        raise QkvcalcError(
            "lightning.length", field=name, shape=shape_text(values.shape), length=length
        )
    return values[0].copy()


def _gate(raw: Any, sizes: Sizes) -> Matrix:
    if sizes.d_model is None:
        raise QkvcalcError("lightning.gate_needs_x")
    w = to_matrix(raw, f"lightning.{SETTINGS[-1]}")  # the gate
    rows, cols = sizes.d_model, sizes.heads * sizes.d_v
    want = (cols, rows) if sizes.layout == "torch" else (rows, cols)
    if w.values.shape != want:
        raise QkvcalcError(
            "lightning.gate_shape",
            shape=shape_text(w.values.shape),
            want=shape_text(want),
            layout=sizes.layout,
        )
    return Matrix(w.values.T.copy() if sizes.layout == "torch" else w.values, None)


def _read(raw: Any, sizes: Sizes) -> Lightning:
    if not isinstance(raw, dict):
        raise QkvcalcError("lightning.not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            raise QkvcalcError("lightning.unknown_key", key=shown(key), known=", ".join(SETTINGS))
    if "slope" not in raw:
        raise QkvcalcError("lightning.needs")
    check_own_causal(("lightning.mask", "lightning.cross", "lightning.kv_heads"), sizes)
    block = raw.get("block", BLOCK)
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise QkvcalcError("lightning.block", value=shown(block))
    act = raw.get("act")
    if act not in (None, "silu"):
        raise QkvcalcError("lightning.act", value=shown(act))
    slope = _numbers(raw["slope"], "slope", sizes.heads)
    if not np.all(np.isfinite(slope)) or (slope < 0).any():
        raise QkvcalcError("lightning.slope", value=shown(raw["slope"]))
    norm = None if "norm" not in raw else _numbers(raw["norm"], "norm", sizes.heads * sizes.d_v)
    eps = raw.get("norm_eps", EPS)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        raise QkvcalcError("lightning.norm_eps", value=shown(eps))
    gate = None if "gate" not in raw else _gate(raw["gate"], sizes)
    return Lightning(
        slope, block, "block" in raw, act, norm, float(eps), gate, sizes.layout, sizes.d_v,
        sizes.heads,
    )  # fmt: skip


def _echo(value: Lightning) -> dict[str, Any]:
    out: dict[str, Any] = {"slope": value.slope.tolist()}
    if value.block_given:
        out["block"] = value.block
    if value.act is not None:
        out["act"] = value.act
    if value.norm is not None:
        out["norm"] = value.norm.tolist()
        out["norm_eps"] = value.eps
    if value.gate is not None:
        out["gate"] = value.gate.values.tolist()  # in the rows layout, as held
    return out


def _joins(value: Lightning) -> bool:
    return value.norm is not None or value.gate is not None


# ---- what `qkvcalc train` steps of the layer's own (Feature.learns) ----------------------------

TRAIN_NAMES = ("norm", "wg")  # the norm's weight w_norm (1 × H·d_v), the gate's W_G


def _train_weights(value: Lightning) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    if value.norm is not None:
        out["norm"] = value.norm[None, :]
    if value.gate is not None:
        out["wg"] = value.gate.values  # the rows layout, as held
    return out


def _trained(value: Lightning, weights: dict[str, np.ndarray]) -> Lightning:
    """The layer with the norm's weight and W_G of `weights` in place of its own (plain floats)."""
    norm, gate = value.norm, value.gate
    if "norm" in weights:
        norm = np.array(weights["norm"], dtype=float).reshape(-1)
    if "wg" in weights:
        gate = Matrix(np.array(weights["wg"], dtype=float), None)
    return value._replace(norm=norm, gate=gate)


LEARNS = Learns(
    TRAIN_NAMES,
    _train_weights,
    lambda value: {"norm": "grad_lightning_norm", "wg": "grad_wg"},
    lambda value, name, grad: grad,  # both already in their matrix's layout (rows)
    _trained,
    also=(("gate", "wg"),),  # --freeze gate: the input's key for W_G
)


# ---- the stages ---------------------------------------------------------------------------------


def _activated(p: Any, h: int | None) -> list[Spec]:
    """silu(Q), silu(K), silu(V) of head h: MiniMax's act_fn on qkv_proj's output."""
    return [
        Spec(
            f"{side}_silu",
            h,
            "silu",
            (ref(side, h),),
            f"{side.upper()}' = silu({side.upper()}) = {side.upper()}·σ({side.upper()})",
            p.tokens,
            dim_labels(p.d_v if side == "v" else p.d_k),
            notes=(Msg("note.lightning_silu"),) if side == "q" else (),
            symbol=f"{side.upper()}'",
            letters="n×d_v" if side == "v" else "n×d_k",
        )
        for side in ("q", "k", "v")
    ]


def _mixer(p: Any, value: Lightning, h: int | None, qkv: list[Spec]) -> list[tuple[int, Spec]]:
    """Head h's stages after its q, k, v: silu of each (when asked), the state token by token,
    the implicit weights, the blocked form and the output read from the states."""
    if p.scale_given is not None:
        raise QkvcalcError("lightning.scale")
    slope = float(value.slope[(h or 1) - 1])
    decay = math.exp(-slope)
    rows, n = p.tokens, len(p.tokens)
    out: list[tuple[int, Spec]] = []
    q, k, v = (ref(sid, h) for sid in ("q", "k", "v"))
    if value.act == "silu":
        acts = _activated(p, h)
        out += [(0, s) for s in acts]
        q, k, v = (s.ref for s in acts)
    sides = (q[0], k[0], v[0])  # the stage ids the quiz's mistakes work from
    qkv_names = "Q', K', V'" if value.act == "silu" else "Q, K, V"
    zero = Const(np.zeros((p.d_k, p.d_v)))
    lam = f"{slope:g}"
    for t in range(1, n + 1):
        prev: Any = zero if t == 1 else ref("state", h, t - 1)
        state = Spec(
            "state",
            h,
            "lightning_step",
            (prev, k, v),
            f"S_{t} = e^(−{lam})·S_{t - 1} + k_{t}·v_{t}ᵀ",
            dim_labels(p.d_k),
            dim_labels(p.d_v),
            params={"t": t - 1, "decay": decay, "slope": slope, "step_key": "ui.token_step"},
            notes=(
                (Msg("note.lightning_state", slope=lam, decay=f"{decay:.6g}"),) if t == 1 else ()
            ),
            topic="lightning_state",
            symbol=f"S_{t}",
            letters="d_k×d_v",
        )
        out.append((t, state))
    states = tuple(ref("state", h, t) for t in range(1, n + 1))
    weights = Spec(
        "weights",
        h,
        "lightning_weights",
        (q, k),
        f"W[t,s] = e^(−{lam}·(t − s))·q_t·k_s",
        rows,
        p.source_tokens,
        params={"slope": slope, "sides": sides},
        notes=(Msg("note.lightning_weights"),),
        topic="lightning_weights",
        symbol="W",
        letters="n×n",
    )
    chunk = Spec(
        "chunked",
        h,
        "lightning_blocked",
        (q, k, v),
        f"O_block = blocked({qkv_names}, λ = {lam}; B = {value.block})",
        rows,
        dim_labels(p.d_v),
        params={"slope": slope, "block": value.block},
        topic="lightning_chunked",
        symbol="O_block",
        letters="n×d_v",
    )
    output = Spec(
        "output",
        h,
        "lightning_read",
        (q, *states),
        "o_t = S_tᵀ·q_t",
        rows,
        dim_labels(p.d_v),
        params={"slope": slope, "sides": sides},
        topic="lightning_output",
        symbol="out",
        letters="n×d_v",
        remarks=_agreement(h, v),
    )
    return [*out, (0, weights), (0, chunk), (0, output)]


def _agreement(h: int | None, v: Ref) -> Any:
    """Under the output: W·V equals it (the layer is linear in V: V' = silu(V) when the layer
    takes silu first), and so does the blocked form; each with the largest difference."""
    name = "V'" if v[0] == "v_silu" else "V"

    def remark(value_of: Any) -> tuple[Msg, ...]:
        out = value_of(ref("output", h))
        tolerance = 1e-9 * max(1.0, float(np.abs(out).max(initial=0.0)))
        notes = []
        for other, equal, far in (
            (
                value_of(ref("weights", h)) @ value_of(v),
                "note.lightning_linear_in_v",
                "note.lightning_linear_in_v_far",
            ),
            (
                value_of(ref("chunked", h)),
                "note.lightning_blocked_equal",
                "note.lightning_blocked_far",
            ),
        ):
            diff = float(np.abs(other - out).max(initial=0.0))
            notes.append(Msg(equal if diff <= tolerance else far, diff=gap(other, out), v=name))
        return tuple(notes)

    return remark


def _rms(p: Any, value: Lightning, heads: list[Ref]) -> Spec:
    """Each row's root mean square over every head's output side by side: [n, 1]."""
    return Spec(
        "o_rms",
        None,
        "joint_rms",
        tuple(heads),
        "r = √(mean(concat(out_1, …, out_H)²) + ε)",
        p.tokens,
        ("r",),
        params={"eps": value.eps},
        notes=(Msg("note.lightning_rms", eps=f"{value.eps:g}", width=p.heads * p.d_v),),
        symbol="r",
        letters="n×1",
    )


def _joined(p: Any, value: Lightning, heads: list[Ref]) -> tuple[list[Spec], list[Ref]]:
    """After every head: the root of the RMSNorm over the heads side by side (one per row),
    then each head's columns normalized (times theirs of the weight) and gated."""
    if not _joins(value):
        return [], heads
    specs: list[Spec] = []
    rms = None
    if value.norm is not None:
        rms = _rms(p, value, heads)
        specs.append(rms)
    gate = None if value.gate is None else output_gate.Gate(value.gate, None, p.heads, "rows")
    reads: list[Ref] = []
    for h, head in enumerate(heads, start=1):
        # what comes next reads the head's output (not a stage of its own here)
        last = Spec("output", h, "copy", (head,), "", p.tokens, dim_labels(p.d_v), symbol="out")
        if rms is not None and value.norm is not None:
            cols = slice((h - 1) * p.d_v, h * p.d_v)
            last = Spec(
                "o_norm",
                h,
                "rms_apply",
                (head, rms.ref),
                f"out_N = out / r ⊙ w[{cols.start + 1}–{cols.stop}]",
                p.tokens,
                dim_labels(p.d_v),
                params={"weight": value.norm[cols]},
                symbol="out_N",
                letters="n×d_v",
            )
            specs.append(last)
        if gate is not None:
            logits, squashed, gated = output_gate._stages(p, gate, h, last)
            last = replace(gated, topic="lightning_gated", letters="n×d_v")
            specs += [logits, squashed, last]
        reads.append(last.ref)
    return specs, reads


# ---- the operations -----------------------------------------------------------------------------


def _silu(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return silu(ops[0])


def _step(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    prev, k, v = ops
    t = params["t"]
    return step(prev, k[t], v[t], params["decay"])


def _weights(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return implicit(ops[0], ops[1], params["slope"])


def _blocked(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, k, v = ops
    return blocked(q, k, v, params["slope"], params["block"])


def _joint_rms(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    joined = np.hstack(list(ops))  # [n, H·d_v] -> [n, 1]
    return np.sqrt((joined * joined).mean(axis=1, keepdims=True) + params["eps"])


def _rms_apply(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return ops[0] / ops[1] * params["weight"]


def _step_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    t = params["t"]
    yield 0, i, j
    yield 1, t, i
    yield 2, t, j


def _weights_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    if j > i:
        return
    yield from ((0, i, c) for c in range(shapes[0][1]))
    yield from ((1, j, c) for c in range(shapes[1][1]))


def _blocked_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, c) for c in range(shapes[0][1]))
    for r in range(i + 1):
        yield from ((1, r, c) for c in range(shapes[1][1]))
        yield 2, r, j


def _rms_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for index, shape in enumerate(shapes):
        yield from ((index, i, c) for c in range(shape[1]))


def _apply_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, 0


def _silu_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5 / (1 + e^(−0.5)) = 0.3112"""
    x = float(stage.operands[0][i, j])
    s = style.shown
    left = f"{style.at(i + 1, j + 1)}{style.num(x)} / (1 + {style.exp(style.num(-x))})"
    return style.line(left, s(x) / (1.0 + math.exp(-s(x))), float(stage.value[i, j]), result)


def _step_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.9048×0.5 + 1×2 = 2.4524 (e^(−λ)·S_(t−1)[i,j] + k_t[i]·v_t[j])"""
    prev, k, v = stage.operands
    t, decay = stage.params["t"], float(stage.params["decay"])
    f, s = style.factor, style.shown
    a, b, c = float(prev[i, j]), float(k[t, i]), float(v[t, j])
    left = f"{style.at(i + 1, j + 1)}{f(decay)}{style.times}{f(a)} + {f(b)}{style.times}{f(c)}"
    return style.line(left, s(decay) * s(a) + s(b) * s(c), float(stage.value[i, j]), result)


def _weights_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[3,1]: e^(−0.5×2)×(1×0.5 + 2×0.25) = 0.3679 (the decay over the distance t − s, times
    q_t·k_s); none above the diagonal."""
    if j > i:
        return None
    q, k = stage.operands
    slope = float(stage.params["slope"])
    f, s, x = style.factor, style.shown, style.times
    pairs = [(float(q[i, c]), float(k[j, c])) for c in range(q.shape[1])]
    dot = " + ".join(f"{f(a)}{x}{f(b)}" for a, b in pairs)
    worked = sum(s(a) * s(b) for a, b in pairs)
    if i == j:
        left = f"{style.at(i + 1, j + 1)}{dot}"
        return style.line(left, worked, float(stage.value[i, j]), result)
    power = style.exp(f"{style.minus}{style.num(slope)}{x}{i - j}")
    left = f"{style.at(i + 1, j + 1)}{power}{x}({dot})"
    shown_value = math.exp(-s(slope) * (i - j)) * worked
    return style.line(left, shown_value, float(stage.value[i, j]), result)


def _rms_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: √((0.25 + 1 + …) / 4 + 1e-06) = 0.7906"""
    cells = [float(c) for part in stage.operands for c in part[i]]
    eps = float(stage.params["eps"])
    s = style.shown
    inner = " + ".join(f"{style.num(c)}²" for c in cells)
    left = f"{style.at(i + 1, j + 1)}√(({inner}) / {len(cells)} + {eps:g})"
    worked = math.sqrt(sum(s(c) ** 2 for c in cells) / len(cells) + eps)
    return style.line(left, worked, float(stage.value[i, j]), result)


def _apply_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5 / 0.7906 × 1.1 = 0.6957"""
    x, r = float(stage.operands[0][i, j]), float(stage.operands[1][i, 0])
    w = float(stage.params["weight"][j])
    s = style.shown
    left = f"{style.at(i + 1, j + 1)}{style.divided(style.num(x), style.num(r))} {style.times} "
    left += style.factor(w)
    worked = s(x) / s(r) * s(w) if s(r) else float("inf")
    return style.line(left, worked, float(stage.value[i, j]), result)


# ---- the backward pass (--backward) -------------------------------------------------------------
#
# From dO (each row do_t, the gradient of o_t = S_tᵀ·q_t), the states walked in reverse: S_t is
# read by o_t and by S_(t+1) = e^(−λ)·S_t + …, so
#     dS_t = q_t·do_tᵀ + e^(−λ)·dS_(t+1)        (dS_(n+1) = 0), t = n … 1
# and then each token's q, k, v from what it touched:
#     dq_t = S_t·do_t,  dk_t = dS_t·v_t,  dv_t = dS_tᵀ·k_t


def _read_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """o_t = S_tᵀ·q_t (the head's output, `at`), from dO (`g`): every state's gradient, t = n
    down to 1, then dQ, dK and dV (of Q', K', V' under silu). The states hand nothing on: their
    operands (the state before, k, v) all have their gradients from here."""
    q_ref, *states = at.operands
    first = back.by[states[0]]  # S_1 = e^(−λ)·0 + k_1·v_1ᵀ: it names k and v
    k_ref, v_ref = first.operands[1], first.operands[2]
    q, k, v = back.by[q_ref], back.by[k_ref], back.by[v_ref]
    h, decay, n = at.head, float(first.params["decay"]), len(states)
    lam = f"{at.params['slope']:g}"
    made: list[Spec] = []
    for t in range(n, 0, -1):
        later: Any = Const(np.zeros((len(first.rows), len(first.cols))))
        if t < n:
            later = made[-1].ref
        rule = f"dS_{t} = q_{t}·do_{t}ᵀ" + (f" + e^(−{lam})·dS_{t + 1}" if t < n else "")
        spec = Spec(
            "grad_state",
            h,
            "lightning_grad_state",
            (q_ref, g, later),
            rule,
            first.rows,
            first.cols,
            params={
                "t": t - 1,
                "decay": decay,
                "last": t == n,
                "step_key": "ui.token_step",
                "brief_note": "note.brief_grad_steps",
            },
            notes=(Msg("note.lightning_grad_state", slope=lam, decay=f"{decay:.6g}"),)
            if t == n
            else (),
            topic="lightning_grad_state",
            hint=("hint.lightning_grad_state", {"t": t, "next": t + 1}),
            symbol=f"dS_{t}",
            letters="d_k×d_v",
        )
        made += stamped([spec], step=t)
    grads = tuple(s.ref for s in reversed(made))  # dS_1 … dS_n
    sides = (
        (q, "lightning_grad_q", (g, *states), "dq_t = S_t·do_t", "dO"),
        (k, "lightning_grad_k", (v_ref, *grads), "dk_t = dS_t·v_t", v.symbol),
        (v, "lightning_grad_v", (k_ref, *grads), "dv_t = dS_tᵀ·k_t", k.symbol),
    )
    for side, op, reads, rule, other in sides:
        made.append(
            Spec(
                f"grad_{side.id}",
                h,
                op,
                reads,
                rule,
                side.rows,
                side.cols,
                topic=op,
                hint=(f"hint.{op}", {"other": other}),
                symbol=d(side.symbol),
                letters=side.letters,
            )
        )
    return made


def _rms_apply_grads(back: Back, at: Spec, g: Ref) -> list[Any]:
    """out_N = out / r ⊙ w (head h's columns), from d(out_N) (`g`): the head's share of dr,
    drₕ = −Σⱼ d(out_N)ⱼ·wⱼ·outⱼ / r² (every head's share is added when the walk reaches r);
    the head's output gets its gradient from r's op, which reads this d(out_N) too."""
    out_ref, rms_ref = at.operands
    rms = back.by[rms_ref]
    share = Spec(
        f"grad_{rms.id}",
        at.head,
        "rms_share",
        (g, out_ref, rms_ref),
        "drₕ = −Σⱼ d(out_N)ⱼ·wⱼ·outⱼ / r²",
        rms.rows,
        rms.cols,
        params={"weight": at.params["weight"]},
        topic="lightning_rms_share",
        symbol="drₕ",
        letters="n×1",
    )
    return [share, Part(rms_ref, share.ref, slice(0, 1), "dr")]


def _joint_rms_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """r = √(mean(concat(out_1, …, out_H)²) + ε), from dr (`g`): each head's output, from its
    own d(out_N) through the division and from dr through r:
    d(out) = d(out_N) ⊙ w / r + dr ⊙ out / (D·r), D the joined width."""
    width = sum(len(back.by[o].cols) for o in at.operands)
    named = at.params.get("normed", "o_norm")  # the stage that applies r (BitNet's: its own)
    specs: list[Spec] = []
    for out_ref in at.operands:
        out = back.by[out_ref]
        h = out.head
        normed = back.by[(f"grad_{named}", h)]
        specs.append(
            Spec(
                f"grad_{out.id}",
                h,
                "rms_back",
                (normed.ref, out_ref, at.ref, g),
                f"dO = d(out_N) ⊙ w / r + dr ⊙ out / ({width}·r)",
                out.rows,
                out.cols,
                params={"weight": back.by[(named, h)].params["weight"], "width": width},
                topic="lightning_rms_back",
                symbol="dO",
                letters=out.letters,
            )
        )
    return specs


def _grad_state(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    q, g, later = ops  # [n, d_k], [n, d_v], [d_k, d_v]
    t = params["t"]
    return np.outer(q[t], g[t]) + (0.0 if params["last"] else params["decay"]) * later


def _grad_q(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    g, *states = ops  # dq_t = S_t·do_t
    return np.stack([s @ g[t] for t, s in enumerate(states)])


def _grad_k(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    v, *grads = ops  # dk_t = dS_t·v_t
    return np.stack([ds @ v[t] for t, ds in enumerate(grads)])


def _grad_v(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    k, *grads = ops  # dv_t = dS_tᵀ·k_t
    return np.stack([ds.T @ k[t] for t, ds in enumerate(grads)])


def _rms_share(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    g, x, r = ops  # [n, d_v], [n, d_v], [n, 1] -> [n, 1]
    return -(g * params["weight"] * x).sum(axis=1, keepdims=True) / (r * r)


def _rms_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    g, x, r, dr = ops
    return g * params["weight"] / r + dr * x / (params["width"] * r)


def _silu_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # y = x·σ(x): dy/dx = σ(x)·(1 + x·(1 − σ(x)))
    x = ops[0]
    sig = 1.0 / (1.0 + np.exp(-x))
    return (g * sig * (1.0 + x * (1.0 - sig)),)


def _grad_state_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    t = params["t"]
    yield 0, t, i
    yield 1, t, j
    if not params["last"]:
        yield 2, i, j


def _grad_q_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, c) for c in range(shapes[0][1]))  # do_t
    yield from ((1 + i, j, c) for c in range(shapes[1 + i][1]))  # row j of S_t


def _grad_k_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, c) for c in range(shapes[0][1]))  # v_t
    yield from ((1 + i, j, c) for c in range(shapes[1 + i][1]))  # row j of dS_t


def _grad_v_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, c) for c in range(shapes[0][1]))  # k_t
    yield from ((1 + i, c, j) for c in range(shapes[1 + i][0]))  # column j of dS_t


def _rms_share_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for c in range(shapes[0][1]):
        yield 0, i, c
        yield 1, i, c
    yield 2, i, 0


def _rms_back_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j
    yield 2, i, 0
    yield 3, i, 0


def _grad_state_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 1×0.5 + 0.6065×0.25 = 0.6516 (q_t[i]·do_t[j] + e^(−λ)·dS_(t+1)[i,j])"""
    q, g, later = stage.operands
    t, decay = stage.params["t"], float(stage.params["decay"])
    f, s, x = style.factor, style.shown, style.times
    a, b = float(q[t, i]), float(g[t, j])
    left = f"{style.at(i + 1, j + 1)}{f(a)}{x}{f(b)}"
    worked = s(a) * s(b)
    if not stage.params["last"]:
        c = float(later[i, j])
        left += f" + {f(decay)}{x}{f(c)}"
        worked += s(decay) * s(c)
    return style.line(left, worked, float(stage.value[i, j]), result)


def _row_dot_work(pairs: list[tuple[float, float]], stage: Any, i: int, j: int, style: Any,
                  result: str) -> str:  # fmt: skip
    f, s, x = style.factor, style.shown, style.times
    left = style.at(i + 1, j + 1) + " + ".join(f"{f(a)}{x}{f(b)}" for a, b in pairs)
    worked = sum(s(a) * s(b) for a, b in pairs)
    return style.line(left, worked, float(stage.value[i, j]), result)


def _grad_q_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 1.2×0.5 + 0.3×1 = 0.9 (row j of S_t times do_t)"""
    g, states = stage.operands[0], stage.operands[1:]
    pairs = [(float(states[i][j, c]), float(g[i, c])) for c in range(g.shape[1])]
    return _row_dot_work(pairs, stage, i, j, style, result)


def _grad_k_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: row j of dS_t times v_t"""
    v, grads = stage.operands[0], stage.operands[1:]
    pairs = [(float(grads[i][j, c]), float(v[i, c])) for c in range(v.shape[1])]
    return _row_dot_work(pairs, stage, i, j, style, result)


def _grad_v_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: column j of dS_t times k_t"""
    k, grads = stage.operands[0], stage.operands[1:]
    pairs = [(float(grads[i][c, j]), float(k[i, c])) for c in range(k.shape[1])]
    return _row_dot_work(pairs, stage, i, j, style, result)


def _rms_share_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: −(0.5×1.1×0.3 + …) / (0.7906×0.7906) = −0.264"""
    g, x, r = stage.operands
    w = stage.params["weight"]
    f, s, t = style.factor, style.shown, style.times
    cells = [(float(g[i, c]), float(w[c]), float(x[i, c])) for c in range(g.shape[1])]
    terms = " + ".join(f"{f(a)}{t}{f(b)}{t}{f(c)}" for a, b, c in cells)
    below = float(r[i, 0])
    r_shown = style.num(below)
    left = f"{style.at(i + 1, j + 1)}{style.minus}({terms}) / ({r_shown}{t}{r_shown})"
    total = sum(s(a) * s(b) * s(c) for a, b, c in cells)
    worked = -total / s(below) ** 2 if s(below) else float("inf")
    return style.line(left, worked, float(stage.value[i, j]), result)


def _rms_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5×1.1 / 0.7906 + (−0.264)×0.3 / (4×0.7906) = 0.6706"""
    g, x, r, dr = (float(o[i, min(j, o.shape[1] - 1)]) for o in stage.operands)
    w, width = float(stage.params["weight"][j]), stage.params["width"]
    f, s, t = style.factor, style.shown, style.times
    left = (
        f"{style.at(i + 1, j + 1)}{f(g)}{t}{f(w)} / {style.num(r)} + "
        f"{f(dr)}{t}{f(x)} / ({width}{t}{style.num(r)})"
    )
    worked = (s(g) * s(w) + s(dr) * s(x) / width) / s(r) if s(r) else float("inf")
    return style.line(left, worked, float(stage.value[i, j]), result)


def _silu_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.3×0.6225×(1 + 0.5×(1 − 0.6225)) = 0.2220 (dy·σ(x)·(1 + x·(1 − σ(x))))"""
    x, g = float(stage.operands[0][i, j]), float(stage.operands[-1][i, j])
    f, s, t = style.factor, style.shown, style.times
    sig = 1.0 / (1.0 + math.exp(-x))
    left = (
        f"{style.at(i + 1, j + 1)}{f(g)}{t}{style.num(sig)}{t}"
        f"(1 + {f(x)}{t}(1 {style.minus} {style.num(sig)}))"
    )
    worked = s(g) * s(sig) * (1 + s(x) * (1 - s(sig)))
    return style.line(left, worked, float(stage.value[i, j]), result)


def _grads(p: Any, value: Lightning, softmaxes: list[tuple[Ref, Ref]]) -> list[Spec]:
    """The norm's learned weight over the joined heads: dw = Σᵢ d(out_N)ᵢ ⊙ outᵢ / rᵢ, each
    head's columns from its own stages, side by side."""
    if value.norm is None:
        return []
    heads: list[int | None] = list(range(1, p.heads + 1))
    reads = [r for h in heads for r in (ref("grad_o_norm", h), ref("output", h))]
    return [
        Spec(
            "grad_lightning_norm",
            None,
            "norm_weight_grad",
            (ref("o_rms"), *reads),
            "dw = Σᵢ d(out_N)ᵢ ⊙ outᵢ / rᵢ",
            ("dw",),
            dim_labels(len(value.norm)),
            symbol="dw",
            cell="dw[{j}]",
            letters="1×H·d_v",
        )
    ]


def _norm_weight_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    r, *pairs = ops  # [n, 1], then each head's (d(out_N), out) -> [1, H·d_v]
    parts = [g * x / r for g, x in zip(pairs[::2], pairs[1::2], strict=True)]
    return np.hstack(parts).sum(axis=0, keepdims=True)


def _norm_weight_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    width = shapes[1][1]
    h, c = divmod(j, width)
    for row in range(shapes[0][0]):
        yield 0, row, 0
        yield 1 + 2 * h, row, c
        yield 2 + 2 * h, row, c


def _norm_weight_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dw[3] = 0.5×1.2 / 0.79 + …: each token's d(out_N)·out / r in that column, added."""
    r, *pairs = stage.operands
    width = pairs[0].shape[1]
    h, c = divmod(j, width)
    g, x = pairs[2 * h], pairs[2 * h + 1]
    f, s, t = style.factor, style.shown, style.times
    cells = [(float(g[row, c]), float(x[row, c]), float(r[row, 0])) for row in range(len(r))]
    terms = " + ".join(f"{f(a)}{t}{f(b)} / {style.num(e)}" for a, b, e in cells)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    worked = sum(s(a) * s(b) / s(e) if s(e) else float("inf") for a, b, e in cells)
    return style.line(left, worked, float(stage.value[i, j]), result)


# ---- the quiz's named mistakes ------------------------------------------------------------------


def _versions(versions: Callable[[str], list[np.ndarray]], names: tuple[str, ...]) -> list[Any]:
    combos: list[tuple[np.ndarray, ...]] = [()]
    for sid in names:
        combos = [(*c, x) for c in combos for x in versions(sid)]
    return combos


def _wrong(q: np.ndarray, k: np.ndarray, slope: float) -> list[Candidate]:
    return [
        (
            "lightning_decay_missing",
            Msg("mistake.lightning_decay_missing"),
            implicit(q, k, slope, by="none"),
        ),
        (
            "lightning_decay_by_position",
            Msg("mistake.lightning_decay_by_position"),
            implicit(q, k, slope, by="position"),
        ),
    ]


def _weights_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """W without the decay, or with the decay by the key's position instead of the distance."""
    slope = float(stage.params["slope"])
    sides = stage.params["sides"][:2]
    return [c for q, k in _versions(versions, sides) for c in _wrong(q, k, slope)]


def _output_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The output those weights give: W·V of the weights the two mistakes make."""
    slope = float(stage.params["slope"])
    found: list[Candidate] = []
    for q, k, v in _versions(versions, stage.params["sides"]):
        found += [(key, msg, w @ v) for key, msg, w in _wrong(q, k, slope)]
    return found


def _torch(p: Any, value: Lightning, literal: Any, num: Any) -> list[str]:
    lines = [
        "# MiniMax's lightning attention (MiniMaxLightningAttention, in float64): each head's",
        "# state S [d_k, d_v] multiplied by exp(-slope) and k v^T added, token by token.",
        f"slope = t({literal(value.slope)})[None, :, None, None]  # [1, H, 1, 1]",
    ]
    if value.act == "silu":
        lines.append("q, k, v = F.silu(q), F.silu(k), F.silu(v)")
    lines += [
        "S = torch.zeros(1, H, d_k, d_v, dtype=torch.float64)",
        "heads = torch.zeros(1, H, n, d_v, dtype=torch.float64)",
        "for i in range(n):",
        "    S = torch.exp(-slope) * S + k[:, :, i, :, None] * v[:, :, i, None, :]",
        "    heads[:, :, i] = (S * q[:, :, i, :, None]).sum(dim=-2)",
    ]
    if value.norm is not None:
        lines += [
            f"w_norm = t({literal(value.norm)})  # [H*d_v]: the norm over the joined heads",
            "joined = heads[0].transpose(0, 1).reshape(n, H * d_v)",
            f"eps = {num(value.eps)}",
            "joined = joined * torch.rsqrt(joined.pow(2).mean(-1, keepdim=True) + eps)",
            "heads = (joined * w_norm).reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
        ]
    if value.gate is not None:
        lines += [
            f"W_gate = t({literal(value.gate.values)})  # [d_model, H*d_v]",
            "gate = torch.sigmoid(X @ W_gate)  # [n, H*d_v]",
            "heads = heads * gate.reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
        ]
    return lines


def _compared(p: Any, value: Lightning, find: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    """--format torch --backward: the gate's and the norm's weights, as the script holds them
    ([d_model, H*d_v] and [H*d_v])."""
    out: list[tuple[str, str, Any]] = []
    gate = find("grad_wg")
    if gate is not None:
        out.append(("dW_gate", "W_gate", gate.value.T if p.layout == "torch" else gate.value))
    norm = find("grad_lightning_norm")
    if norm is not None:
        out.append(("dw_norm", "w_norm", norm.value[0]))
    return out


def _header(value: Lightning) -> list[tuple[str, dict[str, Any]]]:
    slopes = ", ".join(f"{s:.6g}" for s in value.slope)
    return [("ui.variant.lightning", {"slopes": slopes, "block": value.block})]


def _elements(value: Lightning, n: int, m: int, d_k: int) -> int:
    # the states (n of d_k × d_v), the weights, the blocked output, silu's, the norm and gate
    extra = (value.act is not None) * (2 * n * d_k + n * value.d_v)
    extra += (value.norm is not None) * (n + n * value.d_v)
    extra += (value.gate is not None) * 3 * n * value.d_v
    return n * d_k * value.d_v + n * m + n * value.d_v + extra


# ---- in PyTorch (--format torch): the same steps as the numpy above ----

_TORCH_DEFS = """\
def lightning_implicit(q, k, slope):
    \"\"\"W [n, n]: e^(-slope (t - s)) q_t . k_s for s <= t, 0 above.\"\"\"
    index = torch.arange(q.shape[0])
    distance = torch.tril(index[:, None] - index[None, :]).to(torch.float64)
    return torch.tril((q @ k.T) * torch.exp(-slope * distance))


def lightning_blocked(q, k, v, slope, size):
    \"\"\"MiniMax's blocked form: intra-block products and the state carried between blocks.\"\"\"
    n, d_k = k.shape
    state = torch.zeros(d_k, v.shape[1], dtype=torch.float64)
    out = torch.zeros(n, v.shape[1], dtype=torch.float64)
    for start in range(0, n, size):
        part = slice(start, min(start + size, n))
        qb, kb, vb = q[part], k[part], v[part]
        b = qb.shape[0]
        at = torch.arange(b, dtype=torch.float64)
        inside = torch.tril(torch.exp(-slope * torch.tril(at[:, None] - at[None, :])))
        intra = ((qb @ kb.T) * inside) @ vb
        inter = (qb * torch.exp(-slope * (at + 1))[:, None]) @ state
        out[part] = inter + intra
        carried = (kb * torch.exp(-slope * (b - 1 - at))[:, None]).T @ vb
        state = math.exp(-slope * b) * state + carried
    return out
"""


def _torch_step(params: Params, names: Sequence[str], lit: Literals) -> str:
    prev, k, v = names
    t = params["t"]
    return f"{lit.num(params['decay'])} * {prev} + torch.outer({k}[{t}], {v}[{t}])"


def _torch_joint_rms(params: Params, names: Sequence[str], lit: Literals) -> str:
    joined = f"torch.hstack([{', '.join(names)}])"
    return f"torch.sqrt(({joined} ** 2).mean(dim=1, keepdim=True) + {lit.num(params['eps'])})"


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----------------------
# MiniMax's layer casts nothing to float32: its state and every product are in the model's dtype
# (eager as transformers runs it; naive, a hand-written layer, the same but for SiLU and the norm)


def _lowp_silu(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """act_fn on the dtype's projection: SiLU in float32 inside, rounded (naive: x / (1 + e^(−x))
    by hand, each op rounded)."""
    x = ops[0]
    if r.policy == "naive":
        value = r.to(x / r.to(1.0 + r.to(np.exp(r.to(-x)))))
        return lowp.Out(value, notes=(Msg("precision.silu_naive", dtype=str(r.dtype)),))
    return lowp.Out(r.keep(silu(x)), r.kept)


def _ratio(slope: float, r: lowp.Rounding) -> np.ndarray:
    # torch.exp(−slope_rate), the slope a buffer in the dtype: rounded, its e^ rounded
    return r.keep(np.exp(-r.to(np.float64(slope))))


def _lowp_step(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """S_t = ratio·S_(t−1) + k_tᵀ·v_t as MiniMax's recurrent path writes it, in the dtype: the
    ratio, k_t·v_tᵀ (one product a cell), ratio·S and the sum each rounded."""
    prev, k, v = ops
    t = params["t"]
    ratio = _ratio(params["slope"], r)
    value = r.keep(r.keep(ratio * prev) + r.keep(np.outer(k[t], v[t])))
    note = Msg("precision.lightning_state", dtype=str(r.dtype), ratio=_num(float(ratio)))
    # scaled float8 keeps it in float32, as every computed stage (the interpreter says so)
    return lowp.Out(value, r.kept, notes=() if r.scaled else (note,))


def _lowp_read(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """o_t = q_t·S_t (torch.matmul in the dtype: summed in float32, rounded once)."""
    q, states = ops[0], ops[1:]
    value = r.keep(np.stack([q[t] @ s for t, s in enumerate(states)]))
    note = Msg("precision.lightning_read", dtype=r.kept or str(r.dtype))
    return lowp.Out(value, r.kept, notes=(note,), drops=_DROPS)


# the output's notes that compare it in float64 with W·V and the blocked form
_DROPS = (
    "note.lightning_linear_in_v",
    "note.lightning_linear_in_v_far",
    "note.lightning_blocked_equal",
    "note.lightning_blocked_far",
)


def _lowp_blocked(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """MiniMax's blocked form as its forward computes a prompt, in the dtype: the decays made in
    float32 from the slope and stored in the dtype (its buffers), block_decay = e^(−λ_dtype·b)
    rounded; each matmul summed in float32 and rounded, each product and sum rounded."""
    q, k, v = ops
    slope, size = float(params["slope"]), params["block"]
    n, d_k = k.shape
    state = np.zeros((d_k, v.shape[1]))
    out = np.zeros((n, v.shape[1]))
    lam = r.f32(np.float64(slope))
    for start in range(0, n, size):
        part = slice(start, min(start + size, n))
        qb, kb, vb = q[part], k[part], v[part]
        b = qb.shape[0]
        at = np.arange(1, b + 1, dtype=float)
        q_decay = r.keep(np.exp(r.f32(-lam * at)))[:, None]
        k_decay = r.keep(np.exp(r.f32(-lam * (size - np.arange(size - b + 1, size + 1)))))
        gap = at[:, None] - at[None, :]
        diagonal = np.where(gap >= 0, r.keep(np.exp(r.f32(-lam * np.abs(gap)))), 0.0)
        intra = r.keep(r.keep(r.keep(qb @ kb.T) * diagonal) @ vb)
        inter = r.keep(r.keep(qb * q_decay) @ state)
        out[part] = r.keep(inter + intra)
        block_decay = r.keep(np.exp(r.keep(-r.to(np.float64(slope)) * b)))
        moved = r.keep(r.keep(kb * k_decay[:, None]).T @ vb)
        state = r.keep(r.keep(state * block_decay) + moved)
    note = Msg("precision.lightning_blocked", dtype=r.kept or str(r.dtype))
    return lowp.Out(out, r.kept, notes=(note,))


def _lowp_rms(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """√(mean(x²) + ε) over the heads side by side: MiniMaxRMSNorm in float32 (the layer then
    multiplies by its reciprocal); naive every op in the dtype."""
    joined, eps = np.hstack(list(ops)), params["eps"]
    if r.policy == "naive":
        mean = r.to(np.mean(r.to(joined * joined), axis=1, keepdims=True))
        value = r.to(np.sqrt(r.to(mean + eps)))
        return lowp.Out(value, notes=(Msg("precision.lightning_rms_naive", dtype=str(r.dtype)),))
    mean = r.f32(np.mean(r.f32(joined * joined), axis=1, keepdims=True))
    value = r.f32(np.sqrt(r.f32(mean + eps)))
    note = Msg("precision.lightning_rms_eager", dtype=r.kept or str(r.dtype))
    return lowp.Out(value, lowp.SAID, notes=(note,))


def _lowp_apply(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """out / r ⊙ w: eager (MiniMaxRMSNorm) out times 1/r in float32, cast to the dtype, then the
    weight (in the dtype) times it, rounded; naive the division and the product rounded."""
    o, rms = ops
    w = r.to(np.asarray(params["weight"], dtype=np.float64))
    if r.policy == "naive":
        value = r.to(r.to(o / rms) * w)
        return lowp.Out(value, notes=(Msg("precision.lightning_apply_naive", dtype=str(r.dtype)),))
    value = r.keep(w * r.keep(r.f32(o * r.f32(1 / rms))))
    note = Msg("precision.lightning_apply_eager", dtype=r.kept or str(r.dtype))
    return lowp.Out(value, r.kept, notes=(note,))


def _num(x: float) -> str:
    """The ratio said exactly ("= x": a low-precision number has a short decimal), else "≈ x"."""
    from decimal import Decimal

    written = repr(x)
    return f"= {written}" if Decimal(written) == Decimal(x) else f"≈ {written}"


FEATURE = Feature(
    name="lightning",
    read=_read,
    words=("blocked", "silu"),
    ops=(
        Op(
            "silu",
            _silu,
            same_cell,
            rowwise=True,
            overflow=lambda params: False,
            exact_stops="note.exact_stops_silu",
            work=_silu_work,
            torch=lambda params, names, lit: f"silu({names[0]})",
            torch_defs=gdn_layer.TORCH_ACTS,
            backward=_silu_back,
            grad_formula=lambda into, out, x, params: f"{out} ⊙ σ({x})·(1 + {x}·(1 − σ({x})))",
            grad_work=_silu_grad_work,
            grad_reads=True,
            lowp=_lowp_silu,
        ),
        Op(
            "lightning_step",
            _step,
            _step_feeds,
            exact_stops="note.exact_stops_lightning",
            work=_step_work,
            torch=_torch_step,
            lowp=_lowp_step,
        ),
        Op(
            "lightning_weights",
            _weights,
            _weights_feeds,
            work=_weights_work,
            torch=lambda params, names, lit: (
                f"lightning_implicit({names[0]}, {names[1]}, {lit.num(params['slope'])})"
            ),
            torch_defs=_TORCH_DEFS,
            lowp=state_rounding.shown(
                lambda ops, params: _weights(ops, params, None), "precision.lightning_weights_shown"
            ),
        ),
        Op(
            "lightning_blocked",
            _blocked,
            _blocked_feeds,
            torch=lambda params, names, lit: (
                f"lightning_blocked({', '.join(names)}, "
                + f"{lit.num(params['slope'])}, {params['block']})"
            ),
            torch_defs=_TORCH_DEFS,
            lowp=_lowp_blocked,
        ),
        Op(
            "lightning_read",
            _read_states,
            _read_feeds,
            work=_read_work,
            torch=gated_delta.torch_read,
            torch_defs=gated_delta.TORCH_READ,
            plan_back=_read_grads,
            lowp=_lowp_read,
        ),
        Op(
            "joint_rms",
            _joint_rms,
            _rms_feeds,
            rowwise=True,
            work=_rms_work,
            torch=_torch_joint_rms,
            plan_back=_joint_rms_grads,
            lowp=_lowp_rms,
        ),
        Op(
            "rms_apply",
            _rms_apply,
            _apply_feeds,
            rowwise=True,
            work=_apply_work,
            torch=lambda params, names, lit: (
                f"{names[0]} / {names[1]} * {lit.array(params['weight'])}"
            ),
            plan_back=_rms_apply_grads,
            lowp=_lowp_apply,
        ),
        Op("lightning_grad_state", _grad_state, _grad_state_feeds, work=_grad_state_work),
        Op("lightning_grad_q", _grad_q, _grad_q_feeds, work=_grad_q_work),
        Op("lightning_grad_k", _grad_k, _grad_k_feeds, work=_grad_k_work),
        Op("lightning_grad_v", _grad_v, _grad_v_feeds, work=_grad_v_work),
        Op("rms_share", _rms_share, _rms_share_feeds, work=_rms_share_work),
        Op("rms_back", _rms_back, _rms_back_feeds, work=_rms_back_work),
        Op("norm_weight_grad", _norm_weight_grad, _norm_weight_feeds, work=_norm_weight_work),
    ),
    mistakes=(
        Mistakes("lightning_weights", MISTAKE_IDS, _weights_mistakes),
        Mistakes("lightning_read", MISTAKE_IDS, _output_mistakes),
    ),
    elements=_elements,
    header=_header,
    echo=_echo,
    mixer=_mixer,
    joined=_joined,
    joins=_joins,
    grads=_grads,
    learns=LEARNS,
    torch_layer=_torch,
    torch_compared=_compared,
    torch_module_gap="it computes softmax attention, not a lightning-attention layer's state",
    formula=(
        "S_t = e^(−λ)·S_(t−1) + k_t·v_tᵀ,  o_t = S_tᵀ·q_t",
        r"S_t = e^{-\lambda} S_{t-1} + k_t v_t^\top,\quad o_t = S_t^\top q_t",
    ),
    alone="lightning.alone",
    no_decode="lightning.decode",
    no_tiles="lightning.tiles",
    no_sdpa="precision.sdpa_linear",
    lowp_policy=(
        ("eager", "precision.policy.lightning.eager"),
        ("eager_fp8", "precision.policy.lightning.eager_fp8"),
        ("naive", "precision.policy.lightning.naive"),
    ),
)
