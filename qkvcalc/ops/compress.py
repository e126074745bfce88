"""Compressed keys (DeepSeek-V4's compressed attention): beside the tokens' keys, one entry per
m tokens, pooled from X channel by channel, is appended to every head's keys AND values (K = V
for the entries, as DeepSeek-V4's one key/value head is both), and query i reads entry w only
once the entry's whole window is behind it: w < ⌊(i + 1)/m⌋.

    "compress": {"m": m, "wkv": W_C [d_model, d_k], "wgate": W_CG [d_model, d_k],
                 "bias": B [m, d_k], "norm": w [d_k], "eps": ε (default 1e-6),
                 "overlap": false}

    C_E = X·W_C,  Z = X·W_CG                                         stages `comp_kv`, `comp_gate`
    T = ⌊n/m⌋ entries; entry w pools window w's tokens (w·m ≤ t < (w + 1)·m), channel c apart:
    P[t, c] = e^(Z[t, c] + B[t − w·m, c]) / Σ over the window's t of the same     `comp_weights`
    E[w, c] = Σ_t P[t, c]·C_E[t, c]                                              `comp_pooled`
    E = RMSNorm(E) ⊙ w                                                           `comp_norm`
    the rotary columns of entry w turned at position w·m (the problem's `rope`)  `comp_rot`
    head h:  K = [K_rot ; E],  V = [V_rot ; E]                            `k_more`, `v_more`

and each head's scores gain the entries' T columns, the mask keeps entry w for query i when
w < ⌊(pos_i + 1)/m⌋, the softmax (with a sink, when given) runs over tokens and entries, and
A·V reads the entries' rows of V. With "overlap": true (the compressed sparse kind), W_C, W_CG
and B are 2·d_k wide, [Ca | Cb], and entry w pools 2m slots: window w − 1's Ca half (its gates
Za + B[:, :d_k]; none for w = 0) and window w's Cb half (Zb + B[:, d_k:]), one softmax over
the 2m slots per channel; `comp_weights` shows each token's weight in the entry its half feeds
(Ca: the next window's entry; a last window's Ca feeds no entry and is 0).

The weights are in qkvcalc's column order (each head's rotary columns first, as `rope` turns
them); `qkvcalc extract` reorders DeepSeek-V4's (rotary last). Every head reads the same
entries. --backward: each head's rows of the entries in dK' and dV' (the stack's plan_back)
summed, back through the turn, the norm (dw_E) and the pool (dP, dC, dZ, dB) to dW_C, dW_CG and
X's share; the indexer's top-k a constant mask, its weights no gradient; `train` steps W_C,
W_CG, B and w_E. Not with --decode, --tiles or --dtype yet (one message each).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix, positive, to_matrix, to_vector
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops import indexer as dsa  # noqa: F401  (its index_rope, index_score, top_k ops)
from qkvcalc.ops import (
    mla,
    qk_norm,  # noqa: F401  (its rmsnorm op, which comp_norm is)
)
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.ops.hooks import Learns
from qkvcalc.ops.op import Back, Feeds, Op, Params, Shapes
from qkvcalc.ops.projection import Learned
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Const, Ref, Spec, d, dim_labels
from qkvcalc.records import NamedTuple

KEYS = ("m", "wkv", "wgate", "bias", "norm", "eps", "overlap", "index")
# the lightning indexer over the entries (DeepSeek-V4's compressed sparse layers)
INDEX_KEYS = ("wkv", "wgate", "bias", "norm", "wq", "weights", "heads", "top_k")
REQUIRED = ("m", "wkv", "wgate", "bias", "norm")


class Compress(NamedTuple):
    """The compressor's weights, in the rows layout (y = x·W) and qkvcalc's column order."""

    m: int  # tokens per entry
    wkv: Matrix  # [d_model, d_k] (overlap: [d_model, 2·d_k], [Ca | Cb])
    wgate: Matrix  # the same shape
    bias: np.ndarray  # [m, d_k] (overlap: [m, 2·d_k])
    norm: np.ndarray  # [d_k]
    eps: float
    overlap: bool
    layout: str  # as given (echoed in the rows layout)
    scorer: Index | None = None  # the indexer that keeps each query's top-k entries (`index`)

    @property
    def width(self) -> int:
        return int(self.norm.size)


class Index(NamedTuple):
    """The lightning indexer over the entries: its own overlapping pool at width D, its queries
    from mla's query latent C_Q (H_I heads of D), its per-head weights from X, its top-k."""

    wkv: Matrix  # [d_model, 2·D]
    wgate: Matrix
    bias: np.ndarray  # [m, 2·D]
    norm: np.ndarray  # [D]
    wq: Matrix  # [r_q, H_I·D]
    weights: Matrix  # [d_model, H_I]
    heads: int
    top_k: int

    @property
    def dim(self) -> int:
        return int(self.norm.size)


# ---- reading the key --------------------------------------------------------------------------


def _field(key: str) -> str:
    """How a message names a field of the object: compress.bias."""
    return "compress." + key


def _fail(rule: str, /, **params: Any) -> QkvcalcError:
    return QkvcalcError(f"compress.{rule}", **params)


def _matrix(raw: Any, key: str, sizes: Sizes, cols: int, rows: int | None = None) -> Matrix:
    m = to_matrix(raw, _field(key), exact=sizes.exact)
    if sizes.layout == "torch":  # nn.Linear's [out, in]
        exact_t = tuple(zip(*m.exact, strict=True)) if m.exact else None
        m = Matrix(m.values.T.copy(), exact_t)
    d_model = int(sizes.d_model or 0) if rows is None else rows  # _read refused no X before
    if m.values.shape != (d_model, cols):
        given = m.values.shape[::-1] if sizes.layout == "torch" else m.values.shape
        want = (cols, d_model) if sizes.layout == "torch" else (d_model, cols)
        raise _fail("shape", field=_field(key), shape=shape_text(given),
                    want=shape_text(want))  # fmt: skip
    return m


def _read(raw: Any, sizes: Sizes) -> Compress:
    if not isinstance(raw, dict):
        raise _fail("not_object", value=shown(raw))
    for key in raw:
        if key not in KEYS:
            raise _fail("unknown_key", key=shown(key), known=", ".join(KEYS))
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise _fail("missing", missing=", ".join(missing))
    if sizes.d_model is None:
        raise _fail("needs_x")
    d_v = sizes.d_v or sizes.d_k
    if d_v != sizes.d_k:
        raise _fail("widths", d_k=sizes.d_k, d_v=d_v)
    overlap = raw.get("overlap", False)
    if overlap is not True and overlap is not False:
        raise _fail("overlap", value=shown(overlap))
    m = int(positive(raw["m"], _field("m"), integer=True).value)
    if m > sizes.n:
        raise _fail("m_long", m=m, n=sizes.n)
    cols = sizes.d_k * (2 if overlap else 1)
    wkv = _matrix(raw["wkv"], "wkv", sizes, cols)
    wgate = _matrix(raw["wgate"], "wgate", sizes, cols)
    bias = to_matrix(raw["bias"], _field("bias")).values
    if bias.shape != (m, cols):
        raise _fail("shape", field=_field("bias"), shape=shape_text(bias.shape),
                    want=shape_text((m, cols)))  # fmt: skip
    norm = to_vector(raw["norm"], _field("norm")).values[0]
    if norm.size != sizes.d_k:
        raise _fail("shape", field=_field("norm"), shape=shape_text((norm.size,)),
                    want=shape_text((sizes.d_k,)))  # fmt: skip
    eps = float(positive(raw["eps"], _field("eps")).value) if "eps" in raw else 1e-6
    index = _read_index(raw["index"], sizes, m) if "index" in raw else None
    if index is not None and not overlap:
        raise _fail("index_overlap")
    return Compress(m, wkv, wgate, bias, norm, eps, overlap, sizes.layout, index)


def _read_index(raw: Any, sizes: Sizes, m: int) -> Index:
    """compress.index: the lightning indexer's keys, checked against X, mla's query latent and
    the problem's rotation."""
    if not isinstance(raw, dict):
        raise _fail("index_object", value=shown(raw))
    for key in raw:
        if key not in INDEX_KEYS:
            raise _fail("unknown_key", key=shown(f"index.{key}"), known=", ".join(INDEX_KEYS))
    missing = [key for key in INDEX_KEYS if key not in raw]
    if missing:
        raise _fail("missing", missing=", ".join(f"index.{key}" for key in missing))
    latent = sizes.stood
    rank = getattr(latent, "q_norm", None)
    if rank is None:
        raise _fail("index_latent")
    norm = to_vector(raw["norm"], _field("index.norm")).values[0]
    dim = int(norm.size)
    heads = int(positive(raw["heads"], _field("index.heads"), integer=True).value)
    top_k = int(positive(raw["top_k"], _field("index.top_k"), integer=True).value)
    wkv = _matrix(raw["wkv"], "index.wkv", sizes, 2 * dim)
    wgate = _matrix(raw["wgate"], "index.wgate", sizes, 2 * dim)
    bias = to_matrix(raw["bias"], _field("index.bias")).values
    if bias.shape != (m, 2 * dim):
        raise _fail("shape", field=_field("index.bias"), shape=shape_text(bias.shape),
                    want=shape_text((m, 2 * dim)))  # fmt: skip
    wq = _matrix(raw["wq"], "index.wq", sizes, heads * dim, rows=int(rank.size))
    weights = _matrix(raw["weights"], "index.weights", sizes, heads)
    return Index(wkv, wgate, bias, norm, wq, weights, heads, top_k)


def _echo(c: Compress) -> dict[str, Any]:
    return {
        "m": c.m,
        "wkv": c.wkv.values.tolist(),
        "wgate": c.wgate.values.tolist(),
        "bias": c.bias.tolist(),
        "norm": c.norm.tolist(),
        "eps": c.eps,
        "overlap": c.overlap,
        **({} if c.scorer is None else {"index": _echo_index(c.scorer)}),
    }


def _echo_index(ix: Index) -> dict[str, Any]:
    return {
        "wkv": ix.wkv.values.tolist(),
        "wgate": ix.wgate.values.tolist(),
        "bias": ix.bias.tolist(),
        "norm": ix.norm.tolist(),
        "wq": ix.wq.values.tolist(),
        "weights": ix.weights.values.tolist(),
        "heads": ix.heads,
        "top_k": ix.top_k,
    }


# ---- the pool: which slots each entry reads ----------------------------------------------------


def slots(w: int, m: int, width: int, overlap: bool) -> list[tuple[slice, slice]]:
    """Entry w's slots: (rows, columns) blocks of the [T·m, cols] tables, one softmax over
    them per channel (the overlap's Ca block of window w − 1 first)."""
    now = slice(w * m, (w + 1) * m)
    if not overlap:
        return [(now, slice(0, width))]
    out = [(now, slice(width, 2 * width))]
    if w > 0:
        out.insert(0, (slice((w - 1) * m, w * m), slice(0, width)))
    return out


def _entries(n: int, m: int) -> int:
    return n // m


def pool_weights(gate: np.ndarray, bias: np.ndarray, m: int, overlap: bool) -> np.ndarray:
    """[n, cols] gates → [T·m, cols]: each slot's share of its entry, channel by channel."""
    count = _entries(gate.shape[0], m)
    width = gate.shape[1] // (2 if overlap else 1)
    logits = gate[: count * m] + np.tile(bias, (count, 1))
    out = np.zeros_like(logits)
    for w in range(count):
        blocks = slots(w, m, width, overlap)
        joined = np.vstack([logits[r, c] for r, c in blocks])
        e = np.exp(joined - joined.max(axis=0, keepdims=True))
        shares = e / e.sum(axis=0, keepdims=True)
        start = 0
        for r, c in blocks:
            out[r, c] = shares[start : start + m]
            start += m
    return out


def pool_sum(weights: np.ndarray, values: np.ndarray, m: int, overlap: bool) -> np.ndarray:
    """[T·m, cols] shares and [n, cols] values → [T, width]: each entry's weighted sum."""
    count = _entries(weights.shape[0], m)
    width = weights.shape[1] // (2 if overlap else 1)
    prod = weights * values[: count * m]
    return np.stack(
        [sum(prod[r, c].sum(axis=0) for r, c in slots(w, m, width, overlap)) for w in range(count)]
    ).reshape(count, width)


def _group(t: int, c: int, m: int, count: int, width: int, overlap: bool) -> tuple[int, int]:
    """(entry, the column of the entry) that slot (t, c) feeds; entry −1: none."""
    w = t // m
    if overlap and c < width:
        return (w + 1 if w + 1 < count else -1), c
    return w, c - width if overlap else c


def _weights_compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None
                     ) -> np.ndarray:  # fmt: skip
    return pool_weights(ops[0], params["bias"], params["m"], params["overlap"])


def _weights_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    m, overlap = params["m"], params["overlap"]
    cols = shapes[0][1]
    width = cols // (2 if overlap else 1)
    w, c = _group(i, j, m, shapes[0][0] // m, width, overlap)
    if w < 0:
        return
    for r, cc in slots(w, m, width, overlap):
        for t in range(r.start, r.stop):
            yield 0, t, cc.start + c


def _sum_compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None
                 ) -> np.ndarray:  # fmt: skip
    return pool_sum(ops[0], ops[1], params["m"], params["overlap"])


def _sum_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    m, overlap = params["m"], params["overlap"]
    width = shapes[0][1] // (2 if overlap else 1)
    for r, c in slots(i, m, width, overlap):
        for t in range(r.start, r.stop):
            yield 0, t, c.start + j
            yield 1, t, c.start + j


# ---- the backward: each head's dK' and dV' rows of the entries, summed (the walk, at the
# entries' stage), back through the turn, the norm and the pool to dW_C, dW_CG, dB, dw_E and
# X's share --------------------------------------------------------------------------------------


def pool_weights_back(
    gate: np.ndarray, bias: np.ndarray, m: int, overlap: bool, shares: np.ndarray, g: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """∂L/∂Z [n, cols] and ∂L/∂B [m, cols] from ∂L/∂P: each entry's softmax over its slots, per
    channel, dZ = P ⊙ (dP − Σ_slots P·dP); a token in no whole window gets 0; B's row is each
    slot's place in its window, summed over the windows."""
    count = shares.shape[0] // m
    width = shares.shape[1] // (2 if overlap else 1)
    dz = np.zeros_like(gate)
    for w in range(count):
        blocks = slots(w, m, width, overlap)
        inner = sum((shares[r, c] * g[r, c]).sum(axis=0) for r, c in blocks)
        for r, c in blocks:
            dz[r, c] = shares[r, c] * (g[r, c] - inner)
    db = dz[: count * m].reshape(count, m, -1).sum(axis=0)
    return dz, db


def pool_sum_back(shares: np.ndarray, values: np.ndarray, m: int, overlap: bool,
                  g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """∂L/∂P [T·m, cols] and ∂L/∂C [n, cols] from ∂L/∂E [T, width]: each slot's share gets its
    entry's gradient times the slot's value, each value its entry's gradient times its share."""
    count = shares.shape[0] // m
    width = shares.shape[1] // (2 if overlap else 1)
    spread = np.zeros_like(shares)
    for w in range(count):
        for r, c in slots(w, m, width, overlap):
            spread[r, c] = g[w]
    dv = np.zeros_like(values)
    dv[: count * m] = spread * shares
    return spread * values[: count * m], dv


def _weights_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[3,1]: e^(z + b − top) / Σ: the slot's gate plus its position's bias, over its entry's."""
    p = stage.params
    (gate,) = stage.operands
    m, overlap = p["m"], p["overlap"]
    width = gate.shape[1] // (2 if overlap else 1)
    count = stage.value.shape[0] // m
    w, c = _group(i, j, m, count, width, overlap)
    if w < 0:
        return None
    cells = [
        (t, cc.start + c) for r, cc in slots(w, m, width, overlap) for t in range(r.start, r.stop)
    ]
    logits = np.array([float(gate[t, col]) + float(p["bias"][t % m, col]) for t, col in cells])
    top = float(logits.max())
    z, b = float(gate[i, j]), float(p["bias"][i % m, j])
    total = float(np.exp(logits - top).sum())
    left = style.divided(
        style.exp(f"{style.num(z)} + {style.factor(b)} {style.minus} {style.factor(top)}"),
        style.num(total),
    )
    shown = math.exp(style.shown(z) + style.shown(b) - style.shown(top)) / style.shown(total)
    return style.line(f"{style.at(i + 1, j + 1)}{left}", shown, float(stage.value[i, j]), result)


def _sum_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.3×1.2 + 0.7×(−0.5) = −0.02: the entry's shares times its slots' values."""
    p = stage.params
    weights, values = stage.operands
    width = weights.shape[1] // (2 if p["overlap"] else 1)
    cells = [(t, c.start + j) for r, c in slots(i, p["m"], width, p["overlap"])
             for t in range(r.start, r.stop)]  # fmt: skip
    a = np.array([weights[t, c] for t, c in cells])
    b = np.array([values[t, c] for t, c in cells])
    terms, total = style.products(a, b)
    return style.line(f"{style.at(i + 1, j + 1)}{terms}", total, float(stage.value[i, j]), result)


def _softmax_grad_formula(into: str, out: str, before: str, params: Params) -> str:
    return f"P ⊙ ({out} − Σ_slots P ⊙ {out})"


def _softmax_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str
                       ) -> str | None:  # fmt: skip
    """dZ[3,1] = 0.4×(0.2 − (0.4×0.2 + 0.6×(−0.1))): the slot's share times its gradient less
    the shares' average of their gradients, over its entry's slots in the channel."""
    gate, shares, g = stage.operands[0], stage.operands[-2], stage.operands[-1]
    p = stage.params["of"]
    m, overlap = p["m"], p["overlap"]
    width = gate.shape[1] // (2 if overlap else 1)
    count = shares.shape[0] // m
    if i >= count * m:
        return None
    w, c = _group(i, j, m, count, width, overlap)
    if w < 0:
        return None
    cells = [(t, cc.start + c) for r, cc in slots(w, m, width, overlap)
             for t in range(r.start, r.stop)]  # fmt: skip
    terms, inner = style.products(np.array([shares[t, k] for t, k in cells]),
                                  np.array([g[t, k] for t, k in cells]))  # fmt: skip
    a, b = float(shares[i, j]), float(g[i, j])
    left = f"{style.factor(a)}{style.times}({style.factor(b)} {style.minus} ({terms}))"
    shown = style.shown(a) * (style.shown(b) - inner)
    return style.line(f"{style.at(i + 1, j + 1)}{left}", shown, float(stage.value[i, j]), result)


def _sum_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """E = Σ_t P ⊙ C_E over each entry's slots: dP = dE (spread to its slots) ⊙ C_E and
    dC_E = dE (spread) ⊙ P, each slot its entry's gradient."""
    shares, values = (back.by[r] for r in at.operands)
    grad = back.by[g].symbol
    said = {"m": at.params["m"]}
    return [
        Spec(
            f"grad_{read.id}", None, "pool_sum_grad", (*at.operands, g),
            f"{d(read.symbol)} = {grad}[w(t)] ⊙ {other.symbol}", read.rows, read.cols,
            params={**at.params, "index": k}, symbol=d(read.symbol), letters=read.letters,
            notes=(Msg("note.comp_grad_spread", **said),),
            hint=("hint.comp_grad_spread", {"src": grad, "other": other.symbol}),
        )
        for k, (read, other) in enumerate(((shares, values), (values, shares)))
    ]  # fmt: skip


def _sum_grad_compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None
                      ) -> np.ndarray:  # fmt: skip
    return pool_sum_back(ops[0], ops[1], params["m"], params["overlap"], ops[2])[params["index"]]


def _sum_grad_cell(i: int, j: int, shape: tuple[int, ...], params: Params) -> tuple[int, int]:
    """(entry, its column) whose gradient slot (i, j) gets; entry −1: none."""
    m, overlap = params["m"], params["overlap"]
    count = shape[0] // m
    width = shape[1] // (2 if overlap else 1)
    return _group(i, j, m, count, width, overlap) if i < count * m else (-1, 0)


def _sum_grad_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    w, c = _sum_grad_cell(i, j, shapes[0], params)
    if w >= 0:
        yield 2, w, c
        yield 1 - params["index"], i, j


def _sum_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str
                   ) -> str | None:  # fmt: skip
    """dP[3,1] = 0.5×1.2: the entry's gradient in the slot's channel times the slot's value
    (dC: times its share)."""
    w, c = _sum_grad_cell(i, j, stage.operands[0].shape, stage.params)
    if w < 0:
        return None
    other = stage.operands[1 - stage.params["index"]]
    terms, total = style.products(np.array([stage.operands[2][w, c]]), np.array([other[i, j]]))
    return style.line(f"{style.at(i + 1, j + 1)}{terms}", total, float(stage.value[i, j]), result)


def _bias_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dB [m, cols]: each window's dZ rows added, row by row (a slot's place in its window)
    m = params["m"]
    count = params["count"]
    return ops[0][: count * m].reshape(count, m, -1).sum(axis=0)


def _bias_grad_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, w * params["m"] + i, j) for w in range(params["count"]))


def _bias_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dB[1,2] = 0.1 + (−0.3): the gate gradients of every window's slot at that place."""
    m = stage.params["m"]
    cells = [float(stage.operands[0][w * m + i, j]) for w in range(stage.params["count"])]
    left = f"{style.label(stage.cell, i + 1, j + 1)} = " + " + ".join(map(style.factor, cells))
    return style.line(left, sum(map(style.shown, cells)), float(stage.value[i, j]), result)


def _grads(p: Any, c: Compress, softmaxes: Any) -> list[Spec]:
    """The entries' own numbers that no projection holds: the position bias B (dB = each
    window's dZ rows added) and the norm's weight w_E (dw_E = Σ_w dE_norm ⊙ E·ρ)."""
    count = _entries(p.n, c.m)
    if not count:
        return []
    cols = dim_labels(c.bias.shape[1])
    return [
        Spec(
            "grad_comp_bias", None, "pool_bias_grad", (("grad_comp_gate", None),),
            "dB = Σ_w dZ[w·m + i]", tuple(f"{k + 1}" for k in range(c.m)), cols,
            params={"m": c.m, "count": count}, symbol="dB", letters="m×d_c",
            notes=(Msg("note.comp_grad_bias", m=c.m, count=count),),
        ),
        Spec(
            "grad_comp_norm_weight", None, "mla_norm_weight",
            (("comp_pooled", None), ("grad_comp_norm", None)), "dw_E = Σ_w dE_norm[w] ⊙ E[w]·ρ_w",
            ("",), dim_labels(c.width), params={"eps": c.eps}, symbol="dw_E",
            cell="dw_E[{j}]", inner=(), letters="1×d_c",
        ),
    ]  # fmt: skip


# the entries' gradient stages the walk names (plan/backward.py: grad_ + the forward stage's id)
_GRAD_ROT, _GRAD_NORM, _GRAD_WC = "grad_comp_rot", "grad_comp_norm", "grad_wc"


def _back_notes(p: Any, c: Compress, specs: list[Spec]) -> list[Spec]:
    """The entries' gradient stages with their own words (their sum over the heads; dX, which
    the compressor's projections also reach); with the indexer, the note that its top-k is held
    fixed, on the first gradient that goes back through a head's mask (the entries it keeps
    are in that mask)."""
    made = {s.id for s in specs}
    # the heads' sum of the entries' rows: dE_rot, or dE_norm when the entries are not turned
    summed = _GRAD_ROT if _GRAD_ROT in made else _GRAD_NORM
    topics = {summed: "grad_comp_entries"}
    if _GRAD_WC in made:  # the compressor's projections reach X too
        topics[ids.GRAD_X] = "grad_x.comp"
    out = [mla.replace_spec(s, topic=topics[s.id]) if s.id in topics else s for s in specs]
    if c.scorer is None:
        return out
    said = Msg("note.comp_grad_topk", top_k=c.scorer.top_k)
    at = next((k for k, s in enumerate(out) if s.params.get("op") == "mask"), 0)
    out[at] = mla.replace_spec(out[at], notes=(*out[at].notes, said))
    return out


# ---- what `qkvcalc train` steps of it (Feature.learns): W_C, W_CG, B and the entries' norm
# weight w_E (1 × d_k); the indexer's weights stay as given (its top-k passes no gradient) ------

TRAIN_NAMES = ("wc", "wcg", "cb", "cw")


def _moved(c: Compress, weights: dict[str, np.ndarray]) -> Compress:
    """The compressor with the numbers of `weights` in place of its own (plain floats)."""
    now = {**_train_weights(c), **weights}
    return c._replace(
        wkv=Matrix(np.array(now["wc"], dtype=float)),
        wgate=Matrix(np.array(now["wcg"], dtype=float)),
        bias=np.array(now["cb"], dtype=float),
        norm=np.array(now["cw"], dtype=float).reshape(-1),
    )


def _train_weights(c: Compress) -> dict[str, np.ndarray]:
    return {"wc": c.wkv.values, "wcg": c.wgate.values, "cb": c.bias, "cw": c.norm[None, :]}


LEARNS = Learns(
    TRAIN_NAMES,
    _train_weights,
    lambda c: {
        "wc": "grad_wc",
        "wcg": "grad_wcg",
        "cb": "grad_comp_bias",
        "cw": "grad_comp_norm_weight",
    },
    lambda c, name, grad: grad,  # each already in its matrix's layout (the rows layout)
    _moved,
    also=(("wkv", "wc"), ("wgate", "wcg"), ("bias", "cb")),  # the input's keys
)


# ---- the stages -------------------------------------------------------------------------------


def _project(sid: str, x_ref: Ref, x_name: str, weight: Matrix, w_name: str, symbol: str,
             rows: tuple[str, ...], note: Msg, letter: str = "") -> Spec:  # fmt: skip
    """A projection of X (or of C_Q); with `letter`, a learned weight the backward gathers
    (dW_C, dW_CG; the indexer's weights are not: its top-k passes the loss no gradient)."""
    learn = Learned(letter, weight.values, slice(0, weight.values.shape[1])) if letter else None
    return Spec(
        sid,
        None,
        "project",
        (x_ref, Const(weight.values, weight.exact)),
        f"{symbol} = {x_name}·{w_name}",
        rows,
        dim_labels(weight.values.shape[1]),
        names=(x_name, w_name),
        inner=dim_labels(weight.values.shape[0]),
        cell=symbol + "[{i},{j}]",
        symbol=symbol,
        notes=(note,),
        hint=("hint.proj", {"x": x_name, "w": w_name, "b": ""}),
        letters="n×d_c",
        params={"learned": learn} if learn is not None else {},
    )


def labels(p: Any, c: Compress) -> tuple[str, ...]:
    """The entries' labels: C1 … CT."""
    return tuple(f"C{w + 1}" for w in range(_entries(p.n, c.m)))


def _positions(p: Any, c: Compress) -> np.ndarray:
    return np.arange(_entries(p.n, c.m), dtype=np.float64) * c.m


class Pool(NamedTuple):
    """One compressor's numbers and names: the entries' (comp_…) or the indexer's (idx_…)."""

    prefix: str
    wkv: Matrix
    wgate: Matrix
    bias: np.ndarray
    norm: np.ndarray
    names: tuple[str, ...]  # W_C, W_CG, then the letters of C, Z, P, B and the entries


def _pool(p: Any, c: Compress, pool: Pool, x_ref: Ref, x_name: str) -> list[Spec]:
    """A compressor's stages: the two projections, the shares, the pooled entries, their norm
    and (with `rope`) their turn at w·m."""
    count, width = _entries(p.n, c.m), int(pool.norm.size)
    said = {"m": c.m, "count": count, "n": p.n, "width": width}
    entries = labels(p, c)
    w_c, w_g, c_, z, p_, b, e = pool.names
    sid = (pool.prefix + "_{}").format
    learned = pool.prefix == "comp"  # the entries' own weights; the indexer's get no gradient
    specs = [
        _project(sid("kv"), x_ref, x_name, pool.wkv, w_c, c_, p.tokens,
                 Msg("note.comp_kv_overlap" if c.overlap else "note.comp_kv", **said),
                 "C" if learned else ""),
        _project(sid("gate"), x_ref, x_name, pool.wgate, w_g, z, p.tokens,
                 Msg("note.comp_gate", **said), "CG" if learned else ""),
        Spec(
            sid("weights"), None, "pool_softmax", ((sid("gate"), None),),
            f"{p_} = softmax_window({z} + {b})", p.tokens[: count * c.m],
            dim_labels(pool.wkv.values.shape[1]),
            params={"bias": pool.bias, "m": c.m, "overlap": c.overlap},
            notes=(Msg("note.comp_weights_overlap" if c.overlap else "note.comp_weights", **said),),
            symbol=p_, letters="T·m×d_c", hint=("hint.comp_weights", {}),
        ),
        Spec(
            sid("pooled"), None, "pool_sum", ((sid("weights"), None), (sid("kv"), None)),
            f"{e}_w = Σ_t {p_} ⊙ {c_}", entries, dim_labels(width),
            params={"m": c.m, "overlap": c.overlap},
            notes=(Msg("note.comp_pooled", **said),), symbol=e, letters="T×d_c",
            hint=("hint.comp_pooled", {}),
        ),
        Spec(
            sid("norm"), None, "rmsnorm", ((sid("pooled"), None),), f"{e}_norm = RMSNorm({e})",
            entries, dim_labels(width),
            params={"weight": pool.norm, "eps": c.eps, "back_topic": "comp_norm"},
            notes=(Msg("note.rmsnorm", eps=f"{c.eps:g}"),), symbol=f"{e}_norm",
            letters="T×d_c", hint=("hint.rmsnorm", {"src": e}),
        ),
    ]  # fmt: skip
    turn = p.variants.features.get("rope")
    if turn is not None and count:
        positions = _positions(p, c)
        specs.append(
            Spec(
                sid("rot"), None, "rope", ((sid("norm"), None),),
                f"{e}_rot = RoPE({e}_norm, w·m)", entries, dim_labels(width),
                params={"style": turn.style, "dims": turn.dims, "factor": turn.attention_factor,
                        "angles": turn.angles(positions), "positions": positions,
                        "inv_freq": turn.inv_freq,
                        "theta": None if turn.inv_freq_given else turn.theta},
                notes=(Msg("note.comp_rot", dims=turn.dims, m=c.m),), symbol=f"{e}_rot",
                letters="T×d_c", hint=("hint.rope", {"src": f"{e}_norm"}),
            )
        )  # fmt: skip
    return specs


def _from_zero(p: Any) -> None:
    """The windows are rows counted from the first token and the entries turn at w·m: refuse
    positions (and key positions) other than 0 … n − 1, which would let a query read an entry
    whose window is after it."""
    v, n = p.variants, p.n
    if not (np.array_equal(v.positions, np.arange(n))
            and np.array_equal(v.key_positions, np.arange(len(v.key_positions)))):  # fmt: skip
        raise _fail("positions", last=n - 1)


def _before_heads(p: Any, c: Compress, x_ref: Ref, x_name: str, allowed: Any) -> list[Spec]:
    if p.x is None:
        raise _fail("needs_x")
    _from_zero(p)
    names = ("W_C", "W_CG", "C_E", "Z", "P", "B", "E")
    specs = _pool(p, c, Pool("comp", c.wkv, c.wgate, c.bias, c.norm, names), x_ref, x_name)
    if c.scorer is not None:
        specs += _index(p, c, c.scorer, x_ref, x_name)
    return specs


def _index(p: Any, c: Compress, ix: Index, x_ref: Ref, x_name: str) -> list[Spec]:
    """The lightning indexer over the entries: its own pool (K_I), its queries from C_Q turned
    at i, its per-head weights from X, each query's scores of the entries, the visible ones,
    and the top-k it keeps."""
    pool = Pool(
        "idx",
        ix.wkv,
        ix.wgate,
        ix.bias,
        ix.norm,
        ("W_IC", "W_IG", "C_I", "Z_I", "P_I", "B_I", "K_I"),
    )
    specs = _pool(p, c, pool, x_ref, x_name)
    k_ref = specs[-1].ref
    entries = labels(p, c)
    of = {"heads": ix.heads, "dim": ix.dim, "scale": ix.dim**-0.5,
          "weight_scale": ix.heads**-0.5}  # fmt: skip
    q = _project("idx_q", ("c_q_norm", None), "C_Q", ix.wq, "W_IQ", "q_I", p.tokens,
                 Msg("note.idx_q", heads=ix.heads, dim=ix.dim))  # fmt: skip
    specs.append(q)
    q_ref = q.ref
    turn = p.variants.features.get("rope")
    if turn is not None:
        positions = p.variants.positions
        specs.append(
            Spec(
                "idx_q_rot", None, "index_rope", (q.ref,), "q_I_rot = RoPE(q_I, pos)", p.tokens,
                dim_labels(ix.heads * ix.dim),
                params={"style": turn.style, "dims": turn.dims, "width": ix.dim,
                        "factor": turn.attention_factor, "angles": turn.angles(positions),
                        "positions": positions, "inv_freq": turn.inv_freq},
                notes=(Msg("note.idx_q_rot", dims=turn.dims, dim=ix.dim),), symbol="q_I_rot",
                letters="n×H_I·D", hint=("hint.index_rope", {"src": "q_I"}),
            )
        )  # fmt: skip
        q_ref = specs[-1].ref
    w = _project("idx_w", x_ref, x_name, ix.weights, "W_w", "w", p.tokens,
                 Msg("note.index_weights", heads=ix.heads))  # fmt: skip
    seen = visible(p.variants.positions, _entries(p.n, c.m), c.m)
    specs += [
        w,
        Spec(
            "idx_scores", None, "index_score", (q_ref, k_ref, w.ref),
            "I = Σ_h (w_h/√H_I)·ReLU(q_h·K_Iᵀ/√D)", p.tokens, entries, params=of,
            notes=(Msg("note.idx_scores", heads=ix.heads, dim=ix.dim),), symbol="I",
            letters="n×T", hint=("hint.index_scores", {}),
        ),
        Spec(
            "idx_masked", None, "mask", (("idx_scores", None),), "I + M", p.tokens, entries,
            params={"allowed": seen, "wide": True},
            notes=(Msg("note.idx_visible", m=c.m),), symbol="I+M", letters="n×T",
            hint=("hint.masked", {"src": "I"}),
        ),
        Spec(
            "idx_topk", None, "top_k", (("idx_masked", None),), f"top-{ix.top_k}(I+M)",
            p.tokens, entries, params={"top_k": ix.top_k, "before": seen},
            notes=(Msg("note.idx_topk", top_k=ix.top_k),), symbol="keep", letters="n×T",
            hint=("hint.index_topk", {"top_k": ix.top_k, "src": "I+M"}),
        ),
    ]  # fmt: skip
    return specs


def _chosen(p: Any, c: Compress) -> np.ndarray:
    """[n, T]: the entries the indexer keeps, its stages run with their ops at plan time."""
    from qkvcalc.ops.table import OPS

    assert p.x is not None and c.scorer is not None
    x_ref: Ref = ("x_pe", None) if p.variants.pe is not None else ("x", None)
    values: dict[Any, np.ndarray] = {("x", None): p.x.values}
    if p.variants.pe is not None:
        values[("x_pe", None)] = p.x.values + p.variants.pe
    latent = p.variants.features["mla"]
    for spec in (*mla.shared(p, latent, x_ref, "X"), *_index(p, c, c.scorer, x_ref, "X")):
        operands = [o.value if isinstance(o, Const) else values[o] for o in spec.operands]
        values[spec.ref] = OPS[spec.op].compute(operands, spec.params, None)
    return values[("idx_topk", None)] > 0


def _entries_ref(p: Any) -> Ref:
    return (
        ("comp_rot", None) if p.variants.features.get("rope") is not None else ("comp_norm", None)
    )


def _more_keys(p: Any, c: Compress, h: int | None, k: Turn, v: Turn) -> list[Spec]:
    """Head h's keys and values with the entries' rows under the tokens' (K = V for them)."""
    rows = (*p.source_tokens, *labels(p, c))
    said = _entries(p.n, c.m)
    return [
        Spec(
            f"{side.lower()}_more", h, "stack", (at.ref, _entries_ref(p)),
            f"{side}' = [{at.symbol} ; {_entries_ref(p)[0].replace('comp_', 'E_')}]",
            rows, dim_labels(p.d_k), notes=(Msg("note.comp_more", count=said, side=side),),
            symbol=f"{side}'", letters=f"(m+T)×d_{side.lower()}",
            hint=("hint.comp_more", {"src": at.symbol}),
        )
        for side, at in (("K", k), ("V", v))
    ]  # fmt: skip


def visible(positions: np.ndarray, count: int, m: int) -> np.ndarray:
    """[n, T]: query i sees entry w when w < ⌊(pos_i + 1)/m⌋."""
    return np.arange(count)[None, :] < ((np.asarray(positions, dtype=np.int64) + 1) // m)[:, None]


def _select(p: Any, c: Compress, allowed: np.ndarray | None) -> np.ndarray:
    """The keys allowed, with the entries' columns after the tokens'."""
    tokens = np.ones((p.n, p.m), dtype=bool) if allowed is None else allowed
    seen = visible(p.variants.positions, _entries(p.n, c.m), c.m)
    if c.scorer is not None:
        seen = seen & _chosen(p, c)
    return np.hstack([tokens, seen])


# ---- the quiz's mistakes ----------------------------------------------------------------------


def _weights_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The position bias left out; the softmax taken over the channels (along a row) instead of
    over the window's positions."""
    p = stage.params
    found: list[Candidate] = []
    for gate in versions(stage.reads[0][0]):
        no_bias = pool_weights(gate, np.zeros_like(p["bias"]), p["m"], p["overlap"])
        found.append(("comp_bias_missing", Msg("mistake.comp_bias_missing"), no_bias))
        if not p["overlap"]:
            count = gate.shape[0] // p["m"]
            z = gate[: count * p["m"]] + np.tile(p["bias"], (count, 1))
            e = np.exp(z - z.max(axis=1, keepdims=True))
            found.append(("comp_softmax_axis", Msg("mistake.comp_softmax_axis"),
                          e / e.sum(axis=1, keepdims=True)))  # fmt: skip
    return found


# ---- --format torch -----------------------------------------------------------------------------

_TORCH_DEFS = """\
def pool_slots(w, m, width, overlap):
    \"\"\"Entry w's slots: (rows, columns) blocks; overlap: window w-1's Ca half, then w's Cb.\"\"\"
    now = slice(w * m, (w + 1) * m)
    if not overlap:
        return [(now, slice(0, width))]
    out = [(now, slice(width, 2 * width))]
    return ([(slice((w - 1) * m, w * m), slice(0, width))] if w > 0 else []) + out


def pool_weights(gate, bias, m, overlap):
    \"\"\"Each slot's softmax share of its entry, channel by channel, over the entry's slots.\"\"\"
    count = gate.shape[0] // m
    width = gate.shape[1] // (2 if overlap else 1)
    logits = gate[: count * m] + bias.repeat(count, 1)
    out = torch.zeros_like(logits)
    for w in range(count):
        blocks = pool_slots(w, m, width, overlap)
        shares = torch.softmax(torch.vstack([logits[r, c] for r, c in blocks]), dim=0)
        for k, (r, c) in enumerate(blocks):
            out[r, c] = shares[k * m : (k + 1) * m]
    return out


def pool_sum(weights, values, m, overlap):
    \"\"\"Each entry: its slots' shares times their values, summed over the slots.\"\"\"
    count = weights.shape[0] // m
    width = weights.shape[1] // (2 if overlap else 1)
    prod = weights * values[: count * m]
    return torch.stack([sum(prod[r, c].sum(dim=0) for r, c in pool_slots(w, m, width, overlap))
                        for w in range(count)]).reshape(count, width)
"""


_TORCH_POOL = """\
def pool_entries(W, G, B, w, m, T, overlap, eps):
    \"\"\"DeepSeek-V4's compressor: X's projection pooled over each window's positions, channel
    by channel, by a softmax of the gates plus the position bias; overlap: window w - 1's Ca
    half beside window w's Cb half (none before the first); then RMSNorm times w.\"\"\"
    kv = (X @ W)[: T * m].view(T, m, -1)
    gate = (X @ G)[: T * m].view(T, m, -1) + B
    if overlap:
        d = kv.shape[-1] // 2
        first = torch.zeros(1, m, d)
        kv = torch.cat([torch.cat([first, kv[:-1, :, :d]]), kv[..., d:]], dim=1)
        gate = torch.cat([torch.cat([first - math.inf, gate[:-1, :, :d]]), gate[..., d:]], dim=1)
    e = (kv * gate.softmax(dim=1)).sum(dim=1)
    return e / torch.sqrt(e.pow(2).mean(-1, keepdim=True) + eps) * w
"""


def _torch(p: Any, c: Compress, literal: Callable[[Any], str], num: Callable[[float], str]
           ) -> list[str]:  # fmt: skip
    """Lines that append the entries to k and v ([1, heads, m, d]) and their columns to
    `allowed`, written as DeepSeek-V4's compressor writes them (windows as a view), and the
    indexer's top-k of them."""
    turned = p.variants.features.get("rope") is not None
    torch_layout = c.layout == "torch"  # W_C and W_CG as given: nn.Linear's [out, in]
    given = ".T" if torch_layout else ""
    out = [
        "# Compressed keys (DeepSeek-V4): one entry per m tokens, pooled from X",
        *_TORCH_POOL.splitlines(),
        f"W_C = t({literal(c.wkv.values.T if torch_layout else c.wkv.values)})",
        f"W_CG = t({literal(c.wgate.values.T if torch_layout else c.wgate.values)})",
        f"B_C, w_E = t({literal(c.bias)}), t({literal(c.norm)})  # the position bias, the norm",
        f"m_C, T_C = {c.m}, {_entries(p.n, c.m)}",
        f"E = pool_entries(W_C{given}, W_CG{given}, B_C, w_E, m_C, T_C, {c.overlap}, {num(c.eps)})",
    ]
    if turned:
        out.append("E = rope(E, torch.arange(T_C) * m_C)  # at each window's first position")
    out += [
        "k = torch.cat([k, E.expand(1, k.shape[1], T_C, -1)], dim=2)  # K = V for the entries",
        "v = torch.cat([v, E.expand(1, v.shape[1], T_C, -1)], dim=2)",
        "seen = torch.arange(T_C)[None, :] < ((positions + 1) // m_C)[:, None]",
    ]
    if c.scorer is not None:
        out += _torch_index(p, c, c.scorer, literal, num)
    return [*out, "allowed = torch.hstack([allowed, seen])"]


def _torch_index(p: Any, c: Compress, ix: Index, literal: Callable[[Any], str],
                 num: Callable[[float], str]) -> list[str]:  # fmt: skip
    """The lightning indexer: its own entries K_I, its queries from C_Q turned at i, the
    weighted ReLU scores; each query keeps the top-k of its visible entries."""
    latent = p.variants.features["mla"]
    out = [
        "# The lightning indexer: its own entries K_I, queries q_I = C_Q @ W_IQ turned at i,",
        "# score = sum_h w_h / sqrt(H_I) * ReLU(q_h . K_I / sqrt(D)); top-k of the visible",
        f"K_I = pool_entries(t({literal(ix.wkv.values)}), t({literal(ix.wgate.values)}), "
        f"t({literal(ix.bias)}), t({literal(ix.norm)}), m_C, T_C, True, {num(c.eps)})",
        f"H_I, D_I = {ix.heads}, {ix.dim}",
        f"c_Q = X @ t({literal(latent.wq_a.values)})",
        f"c_Q = c_Q / torch.sqrt(c_Q.pow(2).mean(-1, keepdim=True) + {num(latent.eps)}) "
        f"* t({literal(latent.q_norm)})",
        f"q_I = (c_Q @ t({literal(ix.wq.values)})).view(n, H_I, D_I).transpose(0, 1)",
    ]
    if p.variants.features.get("rope") is not None:
        out += ["K_I = rope(K_I, torch.arange(T_C) * m_C)", "q_I = rope(q_I, positions)"]
    out += [
        f"w_I = X @ t({literal(ix.weights.values)}) * H_I**-0.5  # [n, H_I]",
        "relu = torch.relu(q_I @ K_I.T * D_I**-0.5)  # [H_I, n, T]",
        "index = torch.einsum('hnt,nh->nt', relu, w_I).masked_fill(~seen, -math.inf)",
        f"top = torch.sort(-index, dim=1, stable=True).indices[:, :{ix.top_k}]",
        "seen = seen & torch.zeros_like(seen).scatter_(1, top, True)",
    ]
    return out


def _torch_weights(params: Params, names: Sequence[str], lit: Any) -> str:
    return (f"pool_weights({names[0]}, {lit.array(params['bias'])}, {params['m']}, "
            f"{params['overlap']})")  # fmt: skip


OPS = (
    Op(
        "pool_softmax",
        _weights_compute,
        _weights_feeds,
        overflow=lambda params: False,
        exact_stops="note.exact_stops_comp",
        heat=True,
        backward=lambda ops, params, out, g: (
            pool_weights_back(ops[0], params["bias"], params["m"], params["overlap"], out, g)[0],
        ),
        grad_formula=_softmax_grad_formula,
        grad_work=_softmax_grad_work,
        work=_weights_work,
        torch=_torch_weights,
        torch_defs=_TORCH_DEFS,
    ),
    Op(
        "pool_sum",
        _sum_compute,
        _sum_feeds,
        backward=lambda ops, params, out, g: pool_sum_back(
            ops[0], ops[1], params["m"], params["overlap"], g
        ),
        plan_back=_sum_grads,
        work=_sum_work,
        torch=lambda params, names, lit: (
            f"pool_sum({names[0]}, {names[1]}, {params['m']}, {params['overlap']})"
        ),
        torch_defs=_TORCH_DEFS,
    ),
    Op(
        "pool_sum_grad",
        _sum_grad_compute,
        _sum_grad_feeds,
        overflow=lambda p: False,
        work=_sum_grad_work,
    ),
    Op(
        "pool_bias_grad",
        _bias_grad,
        _bias_grad_feeds,
        overflow=lambda p: False,
        work=_bias_grad_work,
    ),
)


FEATURE = Feature(
    name="compress",
    read=_read,
    ops=OPS,
    before_heads=_before_heads,
    more_keys=_more_keys,
    key_labels=lambda p, c: labels(p, c),
    select=_select,
    mistakes=(
        Mistakes("pool_softmax", ("comp_bias_missing", "comp_softmax_axis"), _weights_mistakes),
    ),
    elements=lambda c, n, m, d_k: 6 * n * 2 * c.width + 4 * n * (m + n // c.m),
    header=lambda c: [
        ("ui.variant.compress_overlap" if c.overlap else "ui.variant.compress", {"m": c.m})
    ],
    echo=_echo,
    words=("RMSNorm", "RoPE"),
    mask_notes=lambda c: (Msg("note.comp_visible", m=c.m),),
    worksheet_notes=("note.comp_visible",),
    torch_module_gap="it has no compressed entries among its keys",
    torch_select=_torch,
    torch_grads=(
        ("dW_C", "W_C", "grad_wc", False),
        ("dW_CG", "W_CG", "grad_wcg", False),
        ("dB", "B_C", "grad_comp_bias", False),
        ("dw_E", "w_E", "grad_comp_norm_weight", True),
    ),
    no_decode="compress.decode",
    no_tiles="compress.tiles",
    grads=_grads,
    back_notes=_back_notes,
    learns=LEARNS,
    train_note=lambda c: "train.comp_index_fixed" if c.scorer is not None else "",
    no_dtype="compress.dtype",
    no_sdpa="compress.dtype",
)
