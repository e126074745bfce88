"""Multi-head latent attention (DeepSeek-V2 and V3, Kimi K2): the queries and the keys and values
come through low-rank latents with an RMSNorm inside, and one rotary key is shared by every head.
It stands in for W_Q, W_K and W_V (a problem gives `mla` instead of them).

    "mla": {"wq_a": W_DQ [d_model, r_q], "q_a_norm": [r_q],  "wq_b": W_UQ [r_q, H·(d_C + d_R)]
            (or "wq": [d_model, H·(d_C + d_R)] without a query latent),
            "wkv_a": [d_model, r_kv + d_R] = [W_DKV | W_KR], "kv_a_norm": [r_kv],
            "wkv_b": [r_kv, H·(d_C + d_v)] = per head [W_UK | W_UV],
            "rope_dims": d_R, "eps": ε (default 1e-6)}

    c_Q  = X·W_DQ,   C_Q = RMSNorm(c_Q)            stages `c_q`, `c_q_norm` (before the heads)
    c_KV = X·W_DKV,  C_KV = RMSNorm(c_KV)          stages `c_kv`, `c_kv_norm`
    k_R  = X·W_KR                                  stage `k_rope`: one key for every head
    head h:  Q = C_Q·W_UQ[h]  (its d_R rotary columns first, then its d_C others)   `q`
             K_C = C_KV·W_UK[h],  K = [k_R | K_C]                        `k_nope`, `k`
             V = C_KV·W_UV[h]                                                     `v`

DeepSeek-V4's one key/value head, "shared_kv": true (no "wkv_b"): "wkv_a" is W_DKV [d_model,
d_C + d_R] alone (no W_KR) and "kv_a_norm" its weight, and K = V = C_KV for every head, its d_R
rotary columns (the last of W_DKV's, as DeepSeek-V4 lays them out) taken first:

    c_KV = X·W_DKV (its rotary columns first),  C_KV = RMSNorm(c_KV)   stages `c_kv`, `c_kv_norm`
    head h:  Q = C_Q·W_UQ[h]   `q`;   K = C_KV   `k`;   V = C_KV   `v`

The key's rotary columns are then normed with the others (no shared k_R of their own), and each
head's q may have the q/k norm's `q_norm` (DeepSeek-V4's q_b_norm: weight ones). Its backward:
every head's K and V are C_KV whole (op `mla_kv_head`), so each hands dK and dV back as a share
of dC_KV and the walk adds them, dC_KV = Σₕ (dKₕ + dVₕ) (`grad_c_kv_norm`), then back through
the norm (`grad_c_kv`) to dW_DKV (`grad_wdkv`, the stages' column order) and dw_CKV; `train`
steps W_DKV and the norm's weight by them. A decode run caches C_KV once for every head (d_k
numbers a token; with a rotation also its d_R rotary columns turned once at their own position,
`k_rope_cache`, which the keys read and the values do not: d_k + d_R; with vo_rope too, C_KV
itself turned, K = V = the cache, and vo_rope's turn back after each head's stacked rows).

The weights are laid out as transformers' DeepSeek-V3 stores them (per head: the d_C columns,
then the d_R rotary ones); qkvcalc puts each head's rotary columns first, so that the `rope` key
(with "dims": d_R) turns them: Q·Kᵀ sums over the columns and is the same in either order.
d_k = d_C + d_R per head, so the default scale is 1/√(d_C + d_R). A decode run caches C_KV and the
rotated k_R (r_kv + d_R numbers a token) instead of every head's K and V (H·(d_k + d_v)).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace as dataclass_replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix, positive, to_matrix, to_vector
from qkvcalc.input.limits import MAX_ELEMENTS
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops.base import Candidate, Feature, Learns, Mistakes, Turn
from qkvcalc.ops.op import Back, Feeds, Op, Params, Part, Shapes, same_cell
from qkvcalc.ops.projection import Learned
from qkvcalc.ops.rounding import Out, Rounding, moved
from qkvcalc.plan.specs import Const, Ref, Spec, d, dim_labels, ref, span
from qkvcalc.records import NamedTuple

SETTINGS = (
    "wq_a",
    "q_a_norm",
    "wq_b",
    "wq",
    "wkv_a",
    "kv_a_norm",
    "wkv_b",
    "rope_dims",
    "eps",
    "shared_kv",
)
REQUIRED = ("wkv_a", "kv_a_norm", "wkv_b", "rope_dims")
# the keys a problem with `mla` may not give: the latents stand in for them
REPLACED = ("wq", "wk", "wv", "bq", "bk", "bv", "q", "k", "v", "source")


class Latent(NamedTuple):
    """The weights of multi-head latent attention, in the rows layout (Q = X·W)."""

    wq_a: Matrix | None  # W_DQ [d_model, r_q], or None: Q = X·wq
    q_norm: np.ndarray | None  # [r_q]
    wq: Matrix  # W_UQ [r_q, H·(d_C + d_R)] (or W_Q [d_model, …]): per head d_C, then d_R
    wkv_a: Matrix  # [d_model, r_kv + d_R]: W_DKV, then W_KR
    kv_norm: np.ndarray  # [r_kv]
    wkv_b: Matrix | None  # [r_kv, H·(d_C + d_v)]: per head W_UK (d_C), then W_UV (d_v)
    heads: int
    rope: int  # d_R
    nope: int  # d_C
    d_v: int
    eps: float
    shared: bool = False  # DeepSeek-V4: one key/value head K = V = C_KV, no W_KR, no wkv_b
    turns: bool = False  # the problem's rotation turns the d_R columns (a decode step's cache)
    turns_v: bool = False  # vo_rope: the values turned as the keys (the cache holds C_KV turned)

    @property
    def kv_b(self) -> Matrix:
        """wkv_b, [W_UK | W_UV] per head (a shared key/value head has none: its paths never
        ask for it)."""
        assert self.wkv_b is not None
        return self.wkv_b

    @property
    def kv_order(self) -> np.ndarray:
        """W_DKV's columns as a shared head takes them: its last d_R (the rotary ones) first."""
        k = self.nope + self.rope
        return np.concatenate([np.arange(self.nope, k), np.arange(self.nope)])

    @property
    def rank(self) -> int:
        """r_kv: the width of the cached latent."""
        return int(self.kv_norm.size)

    @property
    def widths(self) -> tuple[int, int, int]:
        """The columns the heads split, as W_Q, W_K, W_V would have them."""
        d_k = self.nope + self.rope
        return self.heads * d_k, self.heads * d_k, self.heads * self.d_v

    def q_columns(self, h: int) -> np.ndarray:
        """Head h's columns of wq in qkvcalc's order: its d_R rotary ones, then its d_C."""
        start = (h - 1) * (self.nope + self.rope)
        rope = np.arange(start + self.nope, start + self.nope + self.rope)
        return np.concatenate([rope, np.arange(start, start + self.nope)])

    def learned(self, part: str, h: int = 1) -> Learned:
        """What a stage's weight is a slice of, for the backward's gather (ops/projection.py):
        the down-projections whole (DQ, DKV, KR: wkv_a's two parts apart); the
        up-projections as the heads read them, head 1's columns first, each head's columns
        side by side: W_UQ (or W_Q) with each head's d_R rotary columns first (qkvcalc's
        order), W_UK and W_UV taken apart from wkv_b's [W_UK | W_UV] per head."""
        rank, heads = self.rank, range(1, self.heads + 1)
        if part == "DKV" and self.shared:  # the one key/value head: its rotary columns first
            taken = self.wkv_a.values[:, self.kv_order]
            said = Msg("note.mla_grad_shared_order", rope=self.rope, nope=self.nope)
            return Learned(part, taken, slice(0, taken.shape[1]), notes=(said,),
                           topic="grad_x.mla_shared")  # fmt: skip
        if part in ("DQ", "DKV", "KR"):
            whole = {"DQ": self.wq_a, "DKV": self.wkv_a, "KR": self.wkv_a}[part]
            assert whole is not None
            cols = {"DQ": slice(None), "DKV": slice(0, rank), "KR": slice(rank, None)}[part]
            taken = whole.values[:, cols]
            return Learned(part, taken, slice(0, taken.shape[1]), topic="grad_x.mla")
        if part in ("UQ", "Q"):
            order = np.concatenate([self.q_columns(k) for k in heads])
            width = self.nope + self.rope
            said = Msg("note.mla_grad_q_order", rope=self.rope, nope=self.nope,
                       key="wq_b" if part == "UQ" else "wq")  # fmt: skip
            cols = slice((h - 1) * width, h * width)
            return Learned(part, self.wq.values[:, order], cols, notes=(said,))
        side = 0 if part == "UK" else 1
        order = np.concatenate([self.kv_columns(k)[side] for k in heads])
        width = self.nope if part == "UK" else self.d_v
        said = Msg("note.mla_grad_kv_b", nope=self.nope, d_v=self.d_v)
        cols = slice((h - 1) * width, h * width)
        return Learned(part, self.kv_b.values[:, order], cols, notes=(said,))

    def kv_columns(self, h: int) -> tuple[np.ndarray, np.ndarray]:
        """Head h's columns of wkv_b: its W_UK (d_C) and its W_UV (d_v)."""
        start = (h - 1) * (self.nope + self.d_v)
        return (
            np.arange(start, start + self.nope),
            np.arange(start + self.nope, start + self.nope + self.d_v),
        )


# ---- reading the key --------------------------------------------------------------------------


def _field(key: str) -> str:
    """How a message names a field of the object: mla.wkv_b."""
    return f"mla.{key}"


def _fail(rule: str, /, **params: Any) -> QkvcalcError:
    return QkvcalcError(f"mla.{rule}", **params)


def _matrix(raw: Any, key: str, layout: str, exact: bool) -> Matrix:
    m = to_matrix(raw, f"mla.{key}", exact=exact)
    if layout == "torch":  # nn.Linear's [out, in]
        exact_t = tuple(zip(*m.exact, strict=True)) if m.exact else None
        m = Matrix(m.values.T.copy(), exact_t)
    return m


def _rows(m: Matrix, key: str, rows: int, what: str, layout: str) -> None:
    """A weight's rows must be the width of what it multiplies (X, c_Q or c_KV)."""
    r, c = m.values.shape
    if r != rows:
        given = (c, r) if layout == "torch" else (r, c)
        raise _fail("rows", field=f"mla.{key}", shape=shape_text(given), rows=rows, what=what)


def read(
    raw: Any, doc: dict[str, Any], d_model: int, heads: int, layout: str, exact: bool
) -> Latent:
    """The `mla` object checked against X's width and the heads; one message per rule."""
    if not isinstance(raw, dict):
        raise _fail("not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            raise _fail("unknown_key", key=shown(key), known=", ".join(SETTINGS))
    for key in REPLACED:
        if key in doc:
            raise _fail("replaces", key=key)
    shared = raw.get("shared_kv", False)
    if shared is not True and shared is not False:
        raise _fail("shared_kv", value=shown(shared))
    if shared and "wkv_b" in raw:
        raise _fail("shared_kv_b")
    missing = [key for key in REQUIRED if key not in raw and not (shared and key == "wkv_b")]
    if "wq_b" not in raw and "wq" not in raw:
        missing.append("wq_b")
    if missing:
        raise _fail("missing", missing=", ".join(missing))
    if "wq" in raw and any(key in raw for key in ("wq_a", "wq_b", "q_a_norm")):
        raise _fail("two_queries")
    if "wq_b" in raw and ("wq_a" not in raw or "q_a_norm" not in raw):
        raise _fail("query_latent")
    for key in ("q_norm", "k_norm", "qk_norm"):
        if key in doc and not (shared and key == "q_norm"):  # DeepSeek-V4's q_b_norm
            raise _fail("qk_norm", key=key)
    _check_size(raw)
    kv_heads = doc.get("kv_heads", heads)
    if str(kv_heads).strip() != str(heads):
        raise _fail("kv_heads", kv_heads=shown(kv_heads), heads=heads)
    rope = int(positive(raw["rope_dims"], _field("rope_dims"), integer=True).value)
    if rope % 2:
        raise _fail("rope_odd", rope=rope)
    eps = positive(raw["eps"], _field("eps")).value if "eps" in raw else 1e-6

    wq_a = q_norm = None
    if "wq_b" in raw:
        wq_a = _matrix(raw["wq_a"], "wq_a", layout, exact)
        _rows(wq_a, "wq_a", d_model, "X", layout)
        rank_q = wq_a.values.shape[1]
        q_norm = to_vector(raw["q_a_norm"], _field("q_a_norm")).values[0]
        if q_norm.size != rank_q:
            raise _fail("norm_length", field=_field("q_a_norm"), length=q_norm.size, rank=rank_q,
                        weight=_field("wq_a"))  # fmt: skip
        wq = _matrix(raw["wq_b"], "wq_b", layout, exact)
        _rows(wq, "wq_b", rank_q, "c_Q", layout)
        q_key = "wq_b"
    else:
        wq = _matrix(raw["wq"], "wq", layout, exact)
        _rows(wq, "wq", d_model, "X", layout)
        q_key = "wq"
    qcols = wq.values.shape[1]
    if qcols % heads or qcols // heads <= rope:
        raise _fail("q_width", field=f"mla.{q_key}", cols=qcols, heads=heads, rope=rope)
    nope = qcols // heads - rope

    wkv_a = _matrix(raw["wkv_a"], "wkv_a", layout, exact)
    _rows(wkv_a, "wkv_a", d_model, "X", layout)
    if shared:
        latent = _read_shared(raw, wkv_a, (wq_a, q_norm, wq), heads, rope, nope, float(eps))
    else:
        latent = _read_kv(raw, wkv_a, (wq_a, q_norm, wq), heads, rope, nope, float(eps), layout,
                          exact)  # fmt: skip
    check(latent, doc)
    turns = doc.get("rope") not in (None, False)
    return latent._replace(turns=turns, turns_v=turns and doc.get("vo_rope") is True)


def _read_kv(raw: dict[str, Any], wkv_a: Matrix, query: tuple[Any, Any, Matrix], heads: int,
             rope: int, nope: int, eps: float, layout: str, exact: bool) -> Latent:  # fmt: skip
    """DeepSeek-V3's key/value side: [W_DKV | W_KR], the latent's norm, [W_UK | W_UV] per head."""
    rank = wkv_a.values.shape[1] - rope
    if rank < 1:
        raise _fail("kv_a_width", cols=wkv_a.values.shape[1], rope=rope)
    kv_norm = to_vector(raw["kv_a_norm"], _field("kv_a_norm")).values[0]
    if kv_norm.size != rank:
        raise _fail("norm_length", field=_field("kv_a_norm"), length=kv_norm.size, rank=rank,
                    weight=_field("wkv_a"))  # fmt: skip
    wkv_b = _matrix(raw["wkv_b"], "wkv_b", layout, exact)
    _rows(wkv_b, "wkv_b", rank, "c_KV", layout)
    kvcols = wkv_b.values.shape[1]
    if kvcols % heads or kvcols // heads <= nope:
        raise _fail("kv_b_width", cols=kvcols, heads=heads, nope=nope)
    d_v = kvcols // heads - nope
    return Latent(*query, wkv_a, kv_norm, wkv_b, heads, rope, nope, d_v, eps)


def _read_shared(raw: dict[str, Any], wkv_a: Matrix, query: tuple[Any, Any, Matrix], heads: int,
                 rope: int, nope: int, eps: float) -> Latent:  # fmt: skip
    """DeepSeek-V4's one key/value head: W_DKV as wide as a query head, its norm's weight."""
    d_k = nope + rope
    if wkv_a.values.shape[1] != d_k:
        raise _fail("shared_width", cols=wkv_a.values.shape[1], d_k=d_k, nope=nope, rope=rope)
    kv_norm = to_vector(raw["kv_a_norm"], _field("kv_a_norm")).values[0]
    if kv_norm.size != d_k:
        raise _fail("norm_length", field=_field("kv_a_norm"), length=kv_norm.size, rank=d_k,
                    weight=_field("wkv_a"))  # fmt: skip
    return Latent(*query, wkv_a, kv_norm, None, heads, rope, nope, d_k, eps, shared=True)


def check(latent: Latent, doc: dict[str, Any]) -> None:
    """What the rest of the problem must agree with: the rotation turns the d_R columns (a
    rotation without "dims", `true` or a base alone, would turn all d_k)."""
    rope = doc.get("rope")
    if rope is None or rope is False:
        return
    dims = rope.get("dims") if isinstance(rope, dict) else None
    if dims != latent.rope:
        said = shown(dims) if dims is not None else "d_k"  # not given: all d_k turn
        raise _fail("rope_dims", dims=said, rope=latent.rope)


def _claimed(raw: Any) -> int:
    """The numbers a matrix claims by its row count and first row (before it is read)."""
    if isinstance(raw, np.ndarray):
        return int(raw.size)
    if not isinstance(raw, list | tuple) or not raw:
        return 0
    first = raw[0]
    return len(raw) * (len(first) if isinstance(first, list | tuple) and first else 1)


def _check_size(raw: dict[str, Any]) -> None:
    """A short file can claim a billion numbers: refused from the shapes, before any is read."""
    total = 0
    for key in ("wq_a", "wq_b", "wq", "wkv_a", "wkv_b"):
        total += _claimed(raw.get(key))
        if total > MAX_ELEMENTS:
            raise QkvcalcError("limits.input_elements", field=_field(key), rows=len(raw[key]),
                               cols=_claimed(raw[key]) // max(len(raw[key]), 1), count=total,
                               limit=MAX_ELEMENTS)  # fmt: skip


def _echo(latent: Latent) -> dict[str, Any]:
    """The object again, in the rows layout, as plain lists (a JSON trace's "input")."""
    out: dict[str, Any] = {}
    if latent.wq_a is not None:
        assert latent.q_norm is not None
        out["wq_a"] = latent.wq_a.values.tolist()
        out["q_a_norm"] = latent.q_norm.tolist()
        out["wq_b"] = latent.wq.values.tolist()
    else:
        out["wq"] = latent.wq.values.tolist()
    out |= {"wkv_a": latent.wkv_a.values.tolist(), "kv_a_norm": latent.kv_norm.tolist()}
    if latent.wkv_b is not None:
        out["wkv_b"] = latent.kv_b.values.tolist()
    else:
        out["shared_kv"] = True
    return out | {"rope_dims": latent.rope, "eps": latent.eps}


# ---- the ops ----------------------------------------------------------------------------------


def _join(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [m, d_R] and [m, d_C] side by side -> [m, d_R + d_C] (the shared key first)
    parts = [o if rows is None else o[rows] for o in ops]
    return np.hstack(parts)


def _join_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Any:
    first = shapes[0][1]
    yield (0, i, j) if j < first else (1, i, j - first)


def _join_exact(ops: Sequence[Any], params: Params) -> Any:
    return tuple(tuple(a) + tuple(b) for a, b in zip(ops[0], ops[1], strict=True)), ()


def _join_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    first = ops[0].shape[1]
    return g[:, :first], g[:, first:]


def _join_grads(back: Back, at: Spec, g: Ref) -> list[Any]:
    """K = [k_R | K_C]: the head's last d_C columns of dK are dK_C, its own (a cut); its first
    d_R columns are its share of dk_R, the key every head read (a Part: the walk adds the
    heads' shares when it reaches k_R)."""
    rope_ref, nope_ref = at.operands
    k_rope, k_nope, grad = back.by[rope_ref], back.by[nope_ref], back.by[g].symbol
    first, width = len(k_rope.cols), len(k_nope.cols)
    into = d(k_nope.symbol)
    return [
        Spec(
            f"grad_{k_nope.id}",
            at.head,
            "cut",
            (g,),
            f"{into} = {grad}[:, {span(first, width)}]",
            k_nope.rows,
            k_nope.cols,
            params={"cols": slice(first, first + width)},
            symbol=into,
            letters=k_nope.letters,
        ),
        Part(rope_ref, g, slice(0, first), grad),
    ]


def _kv_head(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [m, d_k] -> [m, d_k]: the one key/value head C_KV, as this head's K (or V)
    return ops[0] if rows is None else ops[0][rows]


def _kv_head_grads(back: Back, at: Spec, g: Ref) -> list[Any]:
    """K = V = C_KV in every head: each head's dK and dV are shares of dC_KV, whole (a Part
    each: the walk adds every head's two when it reaches C_KV, micrograd's +=)."""
    width = len(back.by[at.operands[0]].cols)
    return [Part(at.operands[0], g, slice(0, width), back.by[g].symbol)]


# DeepSeek-V4's one key/value head: its gradients' words (the stages the walk and the gather
# name as for a latent: dC_KV a sum over the heads, not dK_C·W_UKᵀ + dV·W_UVᵀ)
_SHARED_TOPICS = {
    "grad_c_kv_norm": "grad_mla_shared_c_kv_norm",
    "grad_wdkv": "grad_mla_shared_wdkv",
    "grad_kv_a_norm": "grad_mla_shared_kv_a_norm",
}


def _back_notes(p: Any, latent: Latent, specs: list[Spec]) -> list[Spec]:
    """The one key/value head's gradient stages with their own words."""
    if not latent.shared:
        return specs
    return [
        replace_spec(s, topic=_SHARED_TOPICS[s.id]) if s.id in _SHARED_TOPICS else s for s in specs
    ]


def _norm_weight_grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    # y = x·ρ·w, so dw = Σᵢ gᵢ ⊙ xᵢ·ρᵢ (each token's gradient times its normalised row): [1, r]
    x, g = ops
    rho = 1 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + params["eps"])
    return (g * x * rho).sum(axis=0, keepdims=True)


def _norm_weight_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for t in range(shapes[0][0]):
        yield from ((0, t, c) for c in range(shapes[0][1]))  # the row's root mean square
        yield 1, t, j


def _norm_weight_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dw_CKV[2] = 0.5×1×0.6325 + (−1)×2×0.4472: each token's gradient times its latent's
    cell times its row's ρ = 1/√(mean(x²) + ε), added over the tokens."""
    x, g = stage.operands
    rho = 1 / np.sqrt(np.mean(x * x, axis=1) + stage.params["eps"])
    t, n = style.times, style.shown
    cells = [(float(g[r, j]), float(x[r, j]), float(rho[r])) for r in range(x.shape[0])]
    terms = " + ".join(
        f"{style.factor(a)}{t}{style.factor(b)}{t}{style.num(c)}" for a, b, c in cells
    )
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    shown = sum(n(a) * n(b) * n(c) for a, b, c in cells)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _grads(p: Any, latent: Latent, softmaxes: Any) -> list[Spec]:
    """The latents' norms' own learned weights (q_a_norm, kv_a_norm): dw = Σᵢ dCᵢ ⊙ cᵢ·ρᵢ,
    from the latent before its norm and the gradient of the normalised one."""
    specs: list[Spec] = []
    for before, key, name, letter in (
        ("c_q", "q_a_norm", "C_Q", "CQ"),
        ("c_kv", "kv_a_norm", "C_KV", "CKV"),
    ):
        weight = latent.q_norm if before == "c_q" else latent.kv_norm
        if weight is None:
            continue
        symbol = f"dw_{letter}"
        specs.append(
            Spec(
                f"grad_{key}",
                None,
                "mla_norm_weight",
                ((before, None), (f"grad_{before}_norm", None)),
                f"{symbol} = Σᵢ d{name}ᵢ ⊙ c_{name[2:]}ᵢ·ρᵢ",
                ("",),
                dim_labels(weight.size),
                params={"eps": latent.eps},
                symbol=symbol,
                cell=symbol + "[{j}]",
                inner=(),
                letters=f"1×{'r_q' if before == 'c_q' else 'r_kv'}",
            )
        )
    return specs


def _join_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,3]: K_C[2,1] = 0.5: the cell comes from the shared key or from the head's own part."""
    k_rope, k_nope = stage.operands[0], stage.operands[1]
    first = k_rope.shape[1]
    if j < first:
        source, cell = "k_R", float(k_rope[i, j])
        col = j + 1
    else:
        source, cell = "K_C", float(k_nope[i, j - first])
        col = j - first + 1
    left = f"{style.at(i + 1, j + 1)}{source}[{i + 1},{col}]"
    return style.line(left, style.shown(cell), float(stage.value[i, j]), result)


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """An up-projection from the latent before its RMSNorm (c·W_U instead of RMSNorm(c)·W_U)."""
    before = stage.params.get("latent_before")
    if before is None:
        return []
    weight = stage.operands[1]
    return [
        (
            "mla_latent_unnormed",
            Msg("mistake.mla_latent_unnormed", latent=stage.params["latent_symbol"]),
            latent @ weight,
        )
        for latent in versions(before)
        if latent.shape[1] == weight.shape[0]
    ]


def _join_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The two parts in DeepSeek's own order, [K_C | k_R] (qkvcalc puts k_R first): a matrix of
    the same shape only when d_C = d_R."""
    found: list[Candidate] = []
    if stage.operands[0].shape[1] != stage.operands[1].shape[1]:
        return found
    for nope in versions(stage.reads[1][0]):
        swapped = np.hstack([nope, stage.operands[0]])
        found.append(("mla_join_order", Msg("mistake.mla_join_order"), swapped))
    return found


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----
#
# The latents' products (`project`), their RMSNorm (`rmsnorm`: DeepSeek-V3's RMSNorm is
# LLaMA's) and the rotation of k_R (`rope`) are the ops every layer has, with their own rules.


def _lowp_join(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # DeepSeek-V3's torch.cat of the rotated and the other columns: numbers moved, nothing
    # rounded (under scaled float8 both parts are products' results, kept in float32)
    return Out(np.hstack(list(ops)), r.kept)


# ---- the stages -------------------------------------------------------------------------------


def replace_spec(spec: Spec, **changes: Any) -> Spec:
    """The spec with some of its fields changed (a step's rows, its head)."""
    return dataclass_replace(spec, **changes)


def _take(m: Matrix, cols: np.ndarray | slice) -> Const:
    values = m.values[:, cols]
    if m.exact is None:
        return Const(values)
    index = range(m.values.shape[1])[cols] if isinstance(cols, slice) else cols.tolist()
    return Const(values, tuple(tuple(row[c] for c in index) for row in m.exact))


def _project(
    sid: str, operand: Ref, name: str, weight: Const, w_name: str, rows: tuple[str, ...], **kw: Any
) -> Spec:
    symbol = kw.pop("symbol")
    return Spec(
        sid,
        kw.pop("h", None),
        "project",
        (operand, weight),
        f"{symbol} = {name}·{w_name}",
        rows,
        dim_labels(weight.value.shape[1]),
        names=(name, w_name),
        inner=dim_labels(weight.value.shape[0]),
        cell=symbol + "[{i},{j}]",
        symbol=symbol,
        hint=("hint.proj", {"x": name, "w": w_name, "b": ""}),
        **kw,
    )


def _norm(sid: str, operand: Ref, source: str, symbol: str, weight: np.ndarray, p: Any) -> Spec:
    latent: Latent = p.variants.features["mla"]
    return Spec(
        sid,
        None,
        "rmsnorm",
        (operand,),
        f"{symbol} = RMSNorm({source})",
        p.tokens,
        dim_labels(weight.size),
        params={
            "weight": weight,
            "eps": latent.eps,
            "over": "r_q" if sid == "c_q_norm" else "r_kv",
            "back_topic": "mla_norm",  # its gradient's words: the latent's norm, not q/k's
        },
        notes=(Msg("note.mla_norm", eps=f"{latent.eps:g}", latent=source),),
        hint=("hint.rmsnorm", {"src": source}),
        symbol=symbol,
        letters=f"n×{'r_q' if sid == 'c_q_norm' else 'r_kv'}",
    )


def shared(p: Any, latent: Latent, x_ref: Ref, x_name: str) -> list[Spec]:
    """The stages before the heads: the query latent, the key/value latent, the shared key (a
    decode run makes them step by step: decode_shared)."""
    if p.decode is not None:
        return []
    specs: list[Spec] = []
    rank, rope = latent.rank, latent.rope
    if latent.wq_a is not None:
        assert latent.q_norm is not None
        specs.append(
            _project("c_q", x_ref, x_name, _take(latent.wq_a, slice(None)), "W_DQ", p.tokens,
                     symbol="c_Q", letters="n×r_q", params={"learned": latent.learned("DQ")},
                     notes=(Msg("note.mla_c_q", rank=latent.q_norm.size, d_model=p.d_model),))
        )  # fmt: skip
        specs.append(_norm("c_q_norm", ("c_q", None), "c_Q", "C_Q", latent.q_norm, p))
    if latent.shared:
        return specs + _shared_kv(p, latent, x_ref, x_name)
    heads_numbers = p.heads * (p.d_k + p.d_v)
    specs.append(
        _project("c_kv", x_ref, x_name, _take(latent.wkv_a, slice(0, rank)), "W_DKV", p.tokens,
                 symbol="c_KV", letters="n×r_kv", params={"learned": latent.learned("DKV")},
                 notes=(Msg("note.mla_c_kv", rank=rank, rope=rope, cached=rank + rope,
                            full=heads_numbers, heads=p.heads, d_k=p.d_k, d_v=p.d_v),))
    )  # fmt: skip
    specs.append(_norm("c_kv_norm", ("c_kv", None), "c_KV", "C_KV", latent.kv_norm, p))
    specs.append(
        _project("k_rope", x_ref, x_name, _take(latent.wkv_a, slice(rank, rank + rope)), "W_KR",
                 p.tokens, symbol="k_R", letters="n×d_R", params={"learned": latent.learned("KR")},
                 notes=(Msg("note.mla_k_rope", rope=rope, heads=p.heads),))
    )  # fmt: skip
    return specs


def _shared_kv(p: Any, latent: Latent, x_ref: Ref, x_name: str) -> list[Spec]:
    """DeepSeek-V4's one key/value head: c_KV = X·W_DKV (its rotary columns first), normed."""
    order = latent.kv_order
    norm = _norm("c_kv_norm", ("c_kv", None), "c_KV", "C_KV", latent.kv_norm[order], p)
    return [
        _project("c_kv", x_ref, x_name, _take(latent.wkv_a, order), "W_DKV", p.tokens,
                 symbol="c_KV", letters="n×d_k", topic="mla_shared_c_kv",
                 params={"learned": latent.learned("DKV")},
                 notes=(Msg("note.mla_shared_kv", d_k=p.d_k, rope=latent.rope, heads=p.heads,
                            nope=latent.nope),)),
        replace_spec(norm, topic="mla_shared_c_kv_norm", letters="n×d_k",
                     params={**norm.params, "back_topic": "mla_shared_norm"},
                     notes=(Msg("note.mla_shared_norm", width=p.d_k, eps=f"{latent.eps:g}"),)),
    ]  # fmt: skip


def _shared_head(latent: Latent, h: int | None, keys: tuple[str, ...],
                 source: tuple[Ref, str] = (("c_kv_norm", None), "C_KV"), m: str = "m",
                 ) -> list[Spec]:  # fmt: skip
    """Head h's K and V: the one key/value head C_KV (or a decode step's cache of it), the
    same for every head (K = V)."""
    read, name = source
    return [
        Spec(
            side.lower(),
            h,
            "mla_kv_head",
            (read,),
            f"{side} = {name}",
            keys,
            dim_labels(latent.nope + latent.rope),
            notes=(Msg("note.mla_shared_head"),),
            symbol=side,
            letters=f"{m}×d_{side.lower()}",
            topic=f"mla_shared_{side.lower()}",
        )
        for side in ("K", "V")
    ]


def head_qkv(p: Any, latent: Latent, h: int | None, x_ref: Ref, x_name: str) -> list[Spec]:
    """Head h's q, its key's own part k_nope, its k = [k_R | k_nope] and its v."""
    index = h or 1
    rows = p.tokens
    mark = "" if h is None else f"[{index}]"
    specs: list[Spec] = []
    q_weight = _take(latent.wq, latent.q_columns(index))
    order = Msg("note.mla_q_order", rope=latent.rope, nope=latent.nope)
    if latent.wq_a is not None:
        specs.append(
            _project("q", ("c_q_norm", None), "C_Q", q_weight, f"W_UQ{mark}", rows, h=h,
                     symbol="Q", letters="n×d_k", notes=(order,), topic="mla_q",
                     params={"latent_before": "c_q", "latent_symbol": "c_Q",
                             "learned": latent.learned("UQ", index)})
        )  # fmt: skip
    else:
        specs.append(
            _project("q", x_ref, x_name, q_weight, f"W_Q{mark}", rows, h=h, symbol="Q",
                     letters="n×d_k", notes=(order,), topic="mla_q_full",
                     params={"learned": latent.learned("Q", index)})
        )  # fmt: skip
    if latent.shared:
        return specs + _shared_head(latent, h, p.source_tokens)
    latent_params = {"latent_before": "c_kv", "latent_symbol": "c_KV"}
    specs += head_kv(latent, h, (("c_kv_norm", None), "C_KV"), ("k_rope", None), rows, "m",
                     params=latent_params, learn=True)  # fmt: skip
    return specs


def head_kv(
    latent: Latent,
    h: int | None,
    source: tuple[Ref, str],
    rope_key: Ref,
    keys: tuple[str, ...],
    m: str,
    step: int | None = None,
    params: dict[str, Any] | None = None,
    k_nope_notes: tuple[Msg, ...] = (),
    learn: bool = False,
) -> list[Spec]:
    """Head h's key and value from the key/value latent `source` (the run's C_KV, or a decode
    step's cache of it): its own key columns K_C = C_KV·W_UK, k = [k_R | K_C] with the shared
    rotary key `rope_key`, and V = C_KV·W_UV. `m` names the keys' count in the shapes ('m', or
    'm_t' in a decode step); `params` go to the two products (what the quiz's mistakes read),
    and with `learn` what each is a slice of (the whole run's, for the backward's gather)."""
    index = h or 1
    mark = "" if h is None else f"[{index}]"
    latent_ref, latent_name = source
    uk, uv = latent.kv_columns(index)
    cached = "_cache" if step is not None else ""

    def said(part: str) -> dict[str, Any]:
        return {**(params or {}), **({"learned": latent.learned(part, index)} if learn else {})}

    return [
        _project("k_nope", latent_ref, latent_name, _take(latent.kv_b, uk), f"W_UK{mark}",
                 keys, h=h, symbol="K_C", letters=f"{m}×d_C", params=said("UK"),
                 notes=k_nope_notes),
        Spec(
            "k",
            h,
            "mla_join",
            (rope_key, ref("k_nope", h, step)),
            f"K = [k_R{cached} | K_C]",
            keys,
            dim_labels(latent.rope + latent.nope),
            notes=(Msg("note.mla_join", rope=latent.rope, nope=latent.nope),),
            symbol="K",
            letters=f"{m}×d_k",
            hint=("hint.mla_join", {}),
            topic="mla_k",
        ),
        _project("v", latent_ref, latent_name, _take(latent.kv_b, uv), f"W_UV{mark}", keys,
                 h=h, symbol="V", letters=f"{m}×d_v", params=said("UV"),
                 topic="mla_v"),
    ]  # fmt: skip


# ---- decoding with a cache of the latents --------------------------------------------------


def _step_project(
    sid: str, x_ref: Ref, x_name: str, weight: Const, w_name: str, take: Any, **kw: Any
) -> Spec:
    """The step's new rows of X times a weight (the other rows come from the cache)."""
    rows = kw.pop("rows")
    symbol = kw.pop("symbol")
    said = span(int(take[0]), len(take))
    return Spec(
        sid,
        None,
        "step_project",
        (x_ref, weight),
        f"{symbol} = {x_name}[{said}]·{w_name}",
        rows,
        dim_labels(weight.value.shape[1]),
        params={"take": take},
        symbol=symbol,
        hint=("hint.decode_q", {"rows": said}),
        **kw,
    )


def _stacked(sid: str, before: int | None, new: Ref, symbol: str, keys: Any, width: int,
             step: int, notes: tuple[Msg, ...], letters: str) -> Spec:  # fmt: skip
    """A cache after this step: the step before's, with the new rows under it."""
    old = (ref(sid, None, before),) if before is not None else ()
    return Spec(
        sid,
        None,
        "stack",
        (*old, new),
        f"{symbol} = [{symbol}; new rows]" if old else f"{symbol} = new rows",
        keys,
        dim_labels(width),
        notes=notes,
        symbol=symbol,
        letters=letters,
        topic=sid,
    )


def decode_shared(
    p: Any,
    latent: Latent,
    step: int,
    take: Any,
    before: int | None,
    x_ref: Ref,
    x_name: str,
    turn: Callable[[Any, Turn, list[Spec]], Ref],
) -> list[Spec]:
    """One step before the heads: the new tokens' c_Q (when there is a query latent), c_KV
    and k_R, k_R turned once at its own position, and the cache of C_KV and the turned k_R."""
    rows = tuple(p.tokens[int(i)] for i in take)
    end = int(take[-1]) + 1
    keys = p.tokens[:end]
    rank, rope = latent.rank, latent.rope
    specs: list[Spec] = []

    def at(sid: str) -> Ref:
        return ref(sid, None, step)

    if latent.wq_a is not None:
        assert latent.q_norm is not None
        specs.append(
            _step_project("c_q", x_ref, x_name, _take(latent.wq_a, slice(None)), "W_DQ", take,
                          rows=rows, symbol="c_Q", letters="t×r_q")
        )  # fmt: skip
        norm = _norm("c_q_norm", at("c_q"), "c_Q", "C_Q", latent.q_norm, p)
        specs.append(replace_spec(norm, rows=rows, letters="t×r_q"))
    if latent.shared:
        return specs + _decode_shared_kv(p, latent, step, take, before, (x_ref, x_name), turn)
    specs.append(
        _step_project("c_kv", x_ref, x_name, _take(latent.wkv_a, slice(0, rank)), "W_DKV", take,
                      rows=rows, symbol="c_KV", letters="t×r_kv")
    )  # fmt: skip
    norm = _norm("c_kv_norm", at("c_kv"), "c_KV", "C_KV", latent.kv_norm, p)
    specs.append(replace_spec(norm, rows=rows, letters="t×r_kv"))
    specs.append(
        _step_project("k_rope", x_ref, x_name, _take(latent.wkv_a, slice(rank, rank + rope)),
                      "W_KR", take, rows=rows, symbol="k_R", letters="t×d_R")
    )  # fmt: skip
    # the rotation of the d_R columns alone: the problem seen as heads of d_k = d_R
    narrow = dataclass_replace(p, widths=(rope, p.d_v))
    positions = p.variants.key_positions[take]
    side = Turn(None, at("k_rope"), "k_R", "K", rows, positions, step, "t×d_R")
    turned = turn(narrow, side, specs)
    per_token = rank + rope
    full = p.heads * (p.d_k + p.d_v)
    memory = Msg("note.mla_cache", rank=rank, rope=rope, per_token=per_token, tokens=p.n,
                 total=per_token * p.n, heads=p.heads, d_k=p.d_k, d_v=p.d_v, full=full,
                 full_total=full * p.n)  # fmt: skip
    first = (memory,) if before is None else ()
    specs.append(_stacked("c_kv_cache", before, at("c_kv_norm"), "C_KV_cache", keys, rank, step,
                          first, "m_t×r_kv"))  # fmt: skip
    specs.append(_stacked("k_rope_cache", before, turned, "k_R_cache", keys, rope, step, (),
                          "m_t×d_R"))  # fmt: skip
    return specs


def _decode_shared_kv(p: Any, latent: Latent, step: int, take: Any, before: int | None,
                      x: tuple[Ref, str], turn: Callable[[Any, Turn, list[Spec]], Ref],
                      ) -> list[Spec]:  # fmt: skip
    """One step of the one key/value head: the new tokens' c_KV and C_KV, cached once for
    every head; with a rotation, C_KV's first d_R columns (the rotary ones) turned once at
    their own position and cached beside it (the keys read them turned, the values not)."""
    rows = tuple(p.tokens[int(i)] for i in take)
    keys = p.tokens[: int(take[-1]) + 1]
    order, rope = latent.kv_order, latent.rope
    at = lambda sid: ref(sid, None, step)  # noqa: E731
    norm = _norm("c_kv_norm", at("c_kv"), "c_KV", "C_KV", latent.kv_norm[order], p)
    specs = [
        _step_project("c_kv", *x, _take(latent.wkv_a, order), "W_DKV", take, rows=rows,
                      symbol="c_KV", letters="t×d_k", topic="mla_shared_c_kv"),
        replace_spec(norm, rows=rows, topic="mla_shared_c_kv_norm", letters="t×d_k",
                     notes=(Msg("note.mla_shared_norm", width=p.d_k, eps=f"{latent.eps:g}"),)),
    ]  # fmt: skip
    full = p.heads * (p.d_k + p.d_v)
    apart = latent.turns and not latent.turns_v  # the keys' turned columns, the values' not
    per_token = p.d_k + (rope if apart else 0)
    key = "note.mla_shared_cache_rope" if apart else "note.mla_shared_cache"
    if latent.turns_v:
        key = "note.mla_shared_cache_turned"
    new = at("c_kv_norm")
    if latent.turns_v:  # K and V both turned: C_KV turned once, at its own position, cached so
        side = Turn(None, new, "C_KV", "K", rows, p.variants.key_positions[take], step, "t×d_k")
        new = turn(p, side, specs)
    memory = Msg(key,
                 d_k=p.d_k, rope=rope, per_token=per_token, tokens=p.n, total=per_token * p.n,
                 heads=p.heads, d_v=p.d_v, full=full, full_total=full * p.n)  # fmt: skip
    first = (memory,) if before is None else ()
    specs.append(replace_spec(_stacked("c_kv_cache", before, new, "C_KV_cache", keys,
                                       p.d_k, step, first, "m_t×d_k"),
                              topic="mla_shared_c_kv_cache"))  # fmt: skip
    if not apart:
        return specs
    specs.append(
        Spec("k_rope", None, "slice", (at("c_kv_norm"),), f"k_R = C_KV[:, {span(0, rope)}]",
             rows, dim_labels(rope), params={"cols": slice(0, rope)}, symbol="k_R",
             letters="t×d_R", topic="mla_shared_k_rope")
    )  # fmt: skip
    narrow = dataclass_replace(p, widths=(rope, p.d_v))
    side = Turn(None, at("k_rope"), "k_R", "K", rows, p.variants.key_positions[take], step,
                "t×d_R")  # fmt: skip
    turned = turn(narrow, side, specs)
    specs.append(replace_spec(_stacked("k_rope_cache", before, turned, "k_R_cache", keys, rope,
                                       step, (), "m_t×d_R"),
                              topic="mla_shared_k_rope_cache"))  # fmt: skip
    return specs


def _decode_shared_head(latent: Latent, h: int | None, step: int, keys: tuple[str, ...]
                        ) -> list[Spec]:  # fmt: skip
    """Head h's K and V of a step from the cache: V = C_KV_cache, and K = C_KV_cache too, or
    with a rotation K = [k_R_cache | C_KV_cache's other columns] (the turned rotary ones)."""
    cache = ref("c_kv_cache", None, step)
    out = _shared_head(latent, h, keys, (cache, "C_KV_cache"), "m_t")
    if not latent.turns or latent.turns_v:  # K = V = the cache (turned with vo_rope)
        return out
    rope, width = latent.rope, latent.rope + latent.nope
    k_nope = Spec("k_nope", h, "slice", (cache,), f"K_C = C_KV_cache[:, {span(rope, latent.nope)}]",
                  keys, dim_labels(latent.nope), params={"cols": slice(rope, width)},
                  symbol="K_C", letters="m_t×d_C", topic="mla_shared_k_nope")  # fmt: skip
    k = Spec("k", h, "mla_join", (ref("k_rope_cache", None, step), ref("k_nope", h, step)),
             "K = [k_R_cache | K_C]", keys, dim_labels(width),
             notes=(Msg("note.mla_shared_join", rope=rope, nope=latent.nope),), symbol="K",
             letters="m_t×d_k", topic="mla_shared_k_join")  # fmt: skip
    v = replace_spec(out[1], topic="mla_shared_v_cache", notes=(Msg("note.mla_shared_v_cache"),))
    return [k_nope, k, v]


def decode_head(
    p: Any, latent: Latent, h: int | None, step: int, take: Any, end: int, x_ref: Ref, x_name: str
) -> tuple[list[Spec], Ref, Ref]:
    """Head h's stages of one step: its new query rows, and its K and V made again from the
    cached latent (K = [k_R_cache | C_KV_cache·W_UK], V = C_KV_cache·W_UV)."""
    index = h or 1
    rows = tuple(p.tokens[int(i)] for i in take)
    keys = p.tokens[:end]
    mark = "" if h is None else f"[{index}]"
    q_weight = _take(latent.wq, latent.q_columns(index))
    specs: list[Spec] = []
    if latent.wq_a is not None:
        q = _project("q", ref("c_q_norm", None, step), "C_Q", q_weight, f"W_UQ{mark}", rows, h=h,
                     symbol="Q", letters="t×d_k", topic="mla_q")  # fmt: skip
    else:
        q = _step_project("q", x_ref, x_name, q_weight, f"W_Q{mark}", take, rows=rows,
                          symbol="Q", letters="t×d_k", topic="mla_q_full")  # fmt: skip
        q = replace_spec(q, head=h)
    specs.append(q)
    if latent.shared:
        return (
            [*specs, *_decode_shared_head(latent, h, step, keys)],
            ref("k", h, step),
            ref("v", h, step),
        )
    specs += head_kv(latent, h, (ref("c_kv_cache", None, step), "C_KV_cache"),
                     ref("k_rope_cache", None, step), keys, "m_t", step=step,
                     k_nope_notes=(Msg("note.mla_from_cache", rows=end),))  # fmt: skip
    return specs, ref("k", h, step), ref("v", h, step)


def _given(latent: Latent) -> list[tuple[str, np.ndarray]]:
    """The weights a student works from, named as the stages name them (rows layout)."""
    out: list[tuple[str, np.ndarray]] = []
    if latent.wq_a is not None:
        assert latent.q_norm is not None
        out += [("W_DQ", latent.wq_a.values), ("w (c_Q)", latent.q_norm[None, :])]
        out.append(("W_UQ", latent.wq.values))
    else:
        out.append(("W_Q", latent.wq.values))
    if latent.wkv_b is None:  # DeepSeek-V4's one key/value head, in the stages' column order
        order = latent.kv_order
        taken = latent.wkv_a.values[:, order]
        return [*out, ("W_DKV", taken), ("w (c_KV)", latent.kv_norm[None, order])]
    return [
        *out,
        ("[W_DKV | W_KR]", latent.wkv_a.values),
        ("w (c_KV)", latent.kv_norm[None, :]),
        ("[W_UK | W_UV]", latent.kv_b.values),
    ]


def _header(latent: Latent) -> list[tuple[str, dict[str, Any]]]:
    rank_q = latent.q_norm.size if latent.q_norm is not None else 0
    return [
        (
            "ui.variant.mla" if rank_q else "ui.variant.mla_full_q",
            {"rank": latent.rank, "rank_q": rank_q, "rope": latent.rope, "nope": latent.nope},
        )
    ]


def torch_projections(
    p: Any, latent: Latent, literal: Callable[[Any], str], num: Callable[[float], str]
) -> list[str]:
    """Q [n, H*d_k], K [m, H*d_k] and V [m, H*d_v] through the latents, each head's rotary
    columns first (as qkvcalc's stages): then the script goes on as for W_Q, W_K, W_V."""
    eps = num(latent.eps)
    rank, rope = latent.rank, latent.rope
    out = [
        "# Multi-head latent attention: weights in the rows layout (c = X @ W).",
        f"W_KVa = t({literal(latent.wkv_a.values)})  # [d_model, r_kv + d_R]",
        f"kv_norm = t({literal(latent.kv_norm)})",
    ]
    if latent.wkv_b is not None:
        out.append(f"W_KVb = t({literal(latent.kv_b.values)})  # [r_kv, H*(d_C + d_v)]")
    out += [
        "",
        "",
        "def rms_norm(x, w):",
        f"    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + {eps}) * w",
        "",
        "",
    ]
    if latent.wq_a is not None:
        out += [
            f"W_Qa = t({literal(latent.wq_a.values)})  # [d_model, r_q]",
            f"q_norm = t({literal(latent.q_norm)})",
            f"W_Qb = t({literal(latent.wq.values)})  # [r_q, H*(d_C + d_R)]",
            "Q_all = rms_norm(X @ W_Qa, q_norm) @ W_Qb  # [n, H*(d_C + d_R)]",
        ]
    else:
        out += [
            f"W_Qall = t({literal(latent.wq.values)})  # [d_model, H*(d_C + d_R)]",
            "Q_all = X @ W_Qall",
        ]
    nope, d_v = latent.nope, latent.d_v
    if latent.shared:
        return out + _torch_shared(p, latent)
    out += [
        f"H_, d_C, d_R, d_vh = {p.heads}, {nope}, {rope}, {d_v}",
        f"C_KV = rms_norm(X @ W_KVa[:, :{rank}], kv_norm)  # [n, r_kv]: what a cache keeps",
        f"k_R = X @ W_KVa[:, {rank}:]  # [n, d_R]: one key for every head (with C_KV, cached)",
        "KV = (C_KV @ W_KVb).view(-1, H_, d_C + d_vh)",
        "q_heads = Q_all.view(-1, H_, d_C + d_R)",
        "# each head's rotary columns first, as qkvcalc: Q.K^T is the same in either order",
        "Q = torch.cat([q_heads[..., d_C:], q_heads[..., :d_C]], -1).reshape(len(tokens), -1)",
        "K = torch.cat([k_R[:, None, :].expand(-1, H_, -1), KV[..., :d_C]], -1)",
        "K = K.reshape(len(tokens), -1)",
        "V = KV[..., d_C:].reshape(len(tokens), -1)",
    ]
    return out


def _torch_shared(p: Any, latent: Latent) -> list[str]:
    """DeepSeek-V4's one key/value head: K = V = C_KV for every head (rotary columns first)."""
    nope, rope = latent.nope, latent.rope
    return [
        f"H_, d_C, d_R = {p.heads}, {nope}, {rope}",
        "# one key/value head (DeepSeek-V4): W_DKV's last d_R columns (the rotary ones) first",
        f"order = torch.cat([torch.arange({nope}, {nope + rope}), torch.arange({nope})])",
        "C_KV = rms_norm(X @ W_KVa[:, order], kv_norm[order])  # [n, d_C + d_R]",
        "q_heads = Q_all.view(-1, H_, d_C + d_R)",
        "Q = torch.cat([q_heads[..., d_C:], q_heads[..., :d_C]], -1).reshape(len(tokens), -1)",
        "K = C_KV.repeat(1, H_)  # K = V = C_KV, the same for every head",
        "V = C_KV.repeat(1, H_)  # its own tensor: its gradient apart from K's",
    ]


def torch_compared(
    p: Any, latent: Latent, find: Callable[[str], Any]
) -> list[tuple[str, str, np.ndarray]]:
    """--format torch --backward: the latents' weights' gradients as the script's tensors hold
    them (the rows layout, DeepSeek's column order: each head's d_R rotary columns of W_UQ
    last, wkv_b per head [W_UK | W_UV]), set back from qkvcalc's stages (a layout, no
    arithmetic); a weight the loss does not reach (W_UV under attend) is 0."""

    def grad(sid: str, shape: tuple[int, int]) -> np.ndarray:
        stage = find(sid)
        if stage is None:
            return np.zeros(shape)
        return stage.value.T if p.layout == "torch" else stage.value

    heads = range(1, latent.heads + 1)
    out: list[tuple[str, str, np.ndarray]] = []
    rows_q, cols_q = latent.wq.values.shape
    dq = np.zeros((rows_q, cols_q))
    q_letter = "uq" if latent.wq_a is not None else "q"
    dq[:, np.concatenate([latent.q_columns(h) for h in heads])] = grad(
        f"grad_w{q_letter}", (rows_q, cols_q)
    )
    if latent.wq_a is not None:
        d_model, rank_q = latent.wq_a.values.shape
        out.append(("dW_DQ", "W_Qa", grad("grad_wdq", (d_model, rank_q))))
        out.append(("dw_CQ", "q_norm", find("grad_q_a_norm").value[0]))
        out.append(("dW_UQ", "W_Qb", dq))
    else:
        out.append(("dW_Q", "W_Qall", dq))
    rank, d_model = latent.rank, latent.wkv_a.values.shape[0]
    if latent.shared:  # the stages' columns (the rotary ones first) set back in W_DKV's
        kv_a, w = np.zeros((d_model, rank)), np.zeros(rank)
        kv_a[:, latent.kv_order] = grad("grad_wdkv", (d_model, rank))
        w[latent.kv_order] = find("grad_kv_a_norm").value[0]
        return [*out, ("dW_DKV", "W_KVa", kv_a), ("dw_CKV", "kv_norm", w)]
    kv_a = np.hstack([grad("grad_wdkv", (d_model, rank)), grad("grad_wkr", (d_model, latent.rope))])
    out.append(("d[W_DKV | W_KR]", "W_KVa", kv_a))
    out.append(("dw_CKV", "kv_norm", find("grad_kv_a_norm").value[0]))
    kv_b = np.zeros(latent.kv_b.values.shape)
    for side, letter, width in ((0, "uk", latent.nope), (1, "uv", latent.d_v)):
        cols = np.concatenate([latent.kv_columns(h)[side] for h in heads])
        kv_b[:, cols] = grad(f"grad_w{letter}", (rank, latent.heads * width))
    out.append(("d[W_UK | W_UV]", "W_KVb", kv_b))
    return out


# ---- qkvcalc train: the latents' weights, stepped ------------------------------------------
#
# Each learned matrix by its own name, as the problem gives it (the rows layout): W_UQ (or W_Q)
# whole, in DeepSeek's column order (each head's d_C columns, then its d_R rotary ones); wkv_a
# as W_DKV and W_KR; wkv_b as W_UK and W_UV, each head's columns side by side (as their
# gradient stages hold them); the norms' weights as 1×r.

TRAIN_NAMES = ("wdq", "wcq", "wuq", "wq", "wdkv", "wkr", "wckv", "wuk", "wuv")


def _train_stages(latent: Latent) -> dict[str, str]:
    """Each learned matrix's gradient stage, by name."""
    query = {"wdq": "grad_wdq", "wcq": "grad_q_a_norm", "wuq": "grad_wuq"}
    first = query if latent.wq_a is not None else {"wq": "grad_wq"}
    if latent.shared:  # the one key/value head: W_DKV and its norm's weight, no more
        return first | {"wdkv": "grad_wdkv", "wckv": "grad_kv_a_norm"}
    return first | {
        "wdkv": "grad_wdkv",
        "wkr": "grad_wkr",
        "wckv": "grad_kv_a_norm",
        "wuk": "grad_wuk",
        "wuv": "grad_wuv",
    }


def _kv_b_order(latent: Latent, side: int) -> np.ndarray:
    """wkv_b's columns of W_UK (side 0) or W_UV (1), head 1's first."""
    return np.concatenate([latent.kv_columns(h)[side] for h in range(1, latent.heads + 1)])


def _q_order(latent: Latent) -> np.ndarray:
    """wq's columns in qkvcalc's order (each head's rotary ones first): its gradient's."""
    return np.concatenate([latent.q_columns(h) for h in range(1, latent.heads + 1)])


def _train_weights(latent: Latent) -> dict[str, np.ndarray]:
    rank = latent.rank
    out: dict[str, np.ndarray] = {}
    if latent.wq_a is not None:
        assert latent.q_norm is not None
        out |= {"wdq": latent.wq_a.values, "wcq": latent.q_norm[None, :]}
        out["wuq"] = latent.wq.values
    else:
        out["wq"] = latent.wq.values
    if latent.shared:  # W_DKV as given (its rotary columns last)
        return out | {"wdkv": latent.wkv_a.values, "wckv": latent.kv_norm[None, :]}
    kv_a, kv_b = latent.wkv_a.values, latent.kv_b.values
    return out | {
        "wdkv": kv_a[:, :rank],
        "wkr": kv_a[:, rank:],
        "wckv": latent.kv_norm[None, :],
        "wuk": kv_b[:, _kv_b_order(latent, 0)],
        "wuv": kv_b[:, _kv_b_order(latent, 1)],
    }


def _train_grad(latent: Latent, name: str, grad: np.ndarray) -> np.ndarray:
    """A gradient stage's numbers in its matrix's layout: dW_UQ's columns (qkvcalc's order)
    set back in DeepSeek's, and the one key/value head's (its rotary columns first) in W_DKV's
    as given; the others are already."""
    if latent.shared and name in ("wdkv", "wckv"):
        back = np.zeros(grad.shape)
        back[:, latent.kv_order] = grad
        return back
    if name not in ("wuq", "wq"):
        return grad
    out = np.zeros(latent.wq.values.shape)
    out[:, _q_order(latent)] = grad
    return out


def _trained(latent: Latent, weights: dict[str, np.ndarray]) -> Latent:
    """The latents with the matrices of `weights` in place of theirs (plain floats: no
    fractions, as every trained number)."""
    now = {**_train_weights(latent), **weights}
    query: dict[str, Any] = {"wq": Matrix(np.array(now.get("wuq", now.get("wq")), dtype=float))}
    if latent.wq_a is not None:
        query |= {"wq_a": Matrix(np.array(now["wdq"], dtype=float)), "q_norm": now["wcq"][0]}
    if latent.shared:
        return latent._replace(**query, wkv_a=Matrix(np.array(now["wdkv"], dtype=float)),
                               kv_norm=np.array(now["wckv"][0], dtype=float))  # fmt: skip
    kv_b = np.zeros(latent.kv_b.values.shape)
    kv_b[:, _kv_b_order(latent, 0)] = now["wuk"]
    kv_b[:, _kv_b_order(latent, 1)] = now["wuv"]
    return latent._replace(
        **query,
        wkv_a=Matrix(np.hstack([now["wdkv"], now["wkr"]]).astype(float)),
        kv_norm=np.array(now["wckv"][0], dtype=float),
        wkv_b=Matrix(kv_b),
    )


LEARNS = Learns(TRAIN_NAMES, _train_weights, _train_stages, _train_grad, _trained)


FEATURE = Feature(
    name="mla",
    read=lambda raw, sizes: None,  # read with the weights (`projects`), before the heads
    ops=(
        Op(
            "mla_join",
            _join,
            _join_feeds,
            _join_exact,
            rowwise=True,
            overflow=lambda params: False,
            backward=_join_back,
            plan_back=_join_grads,
            work=_join_work,
            lowp=_lowp_join,
            torch=lambda params, names, lit: f"torch.hstack([{', '.join(names)}])",
        ),
        Op(
            "mla_kv_head",
            _kv_head,
            same_cell,
            lambda ops, params: (ops[0], ()),
            backward=lambda ops, params, out, g: (g,),
            plan_back=_kv_head_grads,
            lowp=moved,
            torch=lambda params, names, lit: names[0],
        ),
        Op(
            "mla_norm_weight",
            _norm_weight_grad,
            _norm_weight_feeds,
            overflow=lambda params: False,
            work=_norm_weight_work,
        ),
    ),
    mistakes=(
        Mistakes("project", ("mla_latent_unnormed",), _mistakes),
        Mistakes("mla_join", ("mla_join_order",), _join_mistakes),
    ),
    # per head K_C (m×d_C ≤ m·d_k); the latents before the heads, counted with each (a bound)
    elements=lambda latent, n, m, d_k: (
        m * d_k
        + n * (2 * latent.rank + latent.rope)
        + (2 * latent.q_norm.size * n if latent.q_norm is not None else 0)
    ),
    header=_header,
    echo=_echo,
    words=("RMSNorm",),
    worksheet_notes=(
        "note.mla_norm",
        "note.mla_shared_norm",
        "note.mla_c_q",
        "note.mla_c_kv",
        "note.mla_k_rope",
        "note.mla_q_order",
        "note.mla_join",
    ),
    torch_module_gap="it has no low-rank latents with a norm inside its projections",
    given=_given,
    decode_shared=decode_shared,
    decode_head=decode_head,
    projects=read,
    shared=shared,
    head_qkv=head_qkv,
    torch_projections=torch_projections,
    grads=_grads,
    torch_compared=torch_compared,
    learns=LEARNS,
    back_notes=_back_notes,
    # with vo_rope the one key/value head is cached turned: it is already V turned as K is, and
    # each head's output is turned back once its steps' rows are stacked
    decode_covers=lambda latent: ("vo_rope",) if latent.turns_v else (),
)
