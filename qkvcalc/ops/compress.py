"""Compressed keys (DeepSeek-V4's compressed attention): beside the tokens' keys, one entry per
m tokens, pooled from X channel by channel, is appended to every head's keys AND values (K = V
for the entries, as DeepSeek-V4's one key/value head is both), and query i reads entry w only
once the entry's whole window is behind it: w < ⌊(i + 1)/m⌋.

    "compress": {"m": m, "wkv": W_C [d_model, d_k], "wgate": W_G [d_model, d_k],
                 "bias": B [m, d_k], "norm": w [d_k], "eps": ε (default 1e-6),
                 "overlap": false}

    C_KV = X·W_C,  Z = X·W_G                                         stages `comp_kv`, `comp_gate`
    T = ⌊n/m⌋ entries; entry w pools window w's tokens (w·m ≤ t < (w + 1)·m), channel c apart:
    P[t, c] = e^(Z[t, c] + B[t − w·m, c]) / Σ over the window's t of the same     `comp_weights`
    E[w, c] = Σ_t P[t, c]·C_KV[t, c]                                             `comp_pooled`
    E = RMSNorm(E) ⊙ w                                                           `comp_norm`
    the rotary columns of entry w turned at position w·m (the problem's `rope`)  `comp_rot`
    head h:  K = [K_rot ; E],  V = [V_rot ; E]                            `k_more`, `v_more`

and each head's scores gain the entries' T columns, the mask keeps entry w for query i when
w < ⌊(pos_i + 1)/m⌋, the softmax (with a sink, when given) runs over tokens and entries, and
A·V reads the entries' rows of V. With "overlap": true (the compressed sparse kind), W_C, W_G
and B are 2·d_k wide, [Ca | Cb], and entry w pools 2m slots: window w − 1's Ca half (its gates
Za + B[:, :d_k]; none for w = 0) and window w's Cb half (Zb + B[:, d_k:]), one softmax over
the 2m slots per channel; `comp_weights` shows each token's weight in the entry its half feeds
(Ca: the next window's entry; a last window's Ca feeds no entry and is 0).

The weights are in qkvcalc's column order (each head's rotary columns first, as `rope` turns
them); `qkvcalc extract` reorders DeepSeek-V4's (rotary last). Every head reads the same
entries. Not with --decode, --tiles, --backward, train or --dtype yet (one message each).
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
from qkvcalc.ops import qk_norm  # noqa: F401  (its rmsnorm op, which comp_norm is)
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.ops.op import Feeds, Op, Params, Shapes
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels
from qkvcalc.records import NamedTuple

KEYS = ("m", "wkv", "wgate", "bias", "norm", "eps", "overlap")
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

    @property
    def width(self) -> int:
        return int(self.norm.size)


# ---- reading the key --------------------------------------------------------------------------


def _field(key: str) -> str:
    """How a message names a field of the object: compress.bias."""
    return "compress." + key


def _fail(rule: str, /, **params: Any) -> QkvcalcError:
    return QkvcalcError(f"compress.{rule}", **params)


def _matrix(raw: Any, key: str, sizes: Sizes, cols: int) -> Matrix:
    m = to_matrix(raw, _field(key), exact=sizes.exact)
    if sizes.layout == "torch":  # nn.Linear's [out, in]
        exact_t = tuple(zip(*m.exact, strict=True)) if m.exact else None
        m = Matrix(m.values.T.copy(), exact_t)
    d_model = int(sizes.d_model or 0)  # given: _read refused a problem without X before
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
    return Compress(m, wkv, wgate, bias, norm, eps, overlap, sizes.layout)


def _echo(c: Compress) -> dict[str, Any]:
    return {
        "m": c.m,
        "wkv": c.wkv.values.tolist(),
        "wgate": c.wgate.values.tolist(),
        "bias": c.bias.tolist(),
        "norm": c.norm.tolist(),
        "eps": c.eps,
        "overlap": c.overlap,
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


# ---- the stages -------------------------------------------------------------------------------


def _project(sid: str, x_ref: Ref, x_name: str, weight: Matrix, w_name: str, symbol: str,
             rows: tuple[str, ...], note: Msg) -> Spec:  # fmt: skip
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
    )


def labels(p: Any, c: Compress) -> tuple[str, ...]:
    """The entries' labels: C1 … CT."""
    return tuple(f"C{w + 1}" for w in range(_entries(p.n, c.m)))


def _positions(p: Any, c: Compress) -> np.ndarray:
    return np.arange(_entries(p.n, c.m), dtype=np.float64) * c.m


def _before_heads(p: Any, c: Compress, x_ref: Ref, x_name: str, allowed: Any) -> list[Spec]:
    if p.x is None:
        raise _fail("needs_x")
    count = _entries(p.n, c.m)
    said = {"m": c.m, "count": count, "n": p.n, "width": c.width}
    slot_rows = p.tokens[: count * c.m]
    entries = labels(p, c)
    specs = [
        _project("comp_kv", x_ref, x_name, c.wkv, "W_C", "C_KV", p.tokens,
                 Msg("note.comp_kv_overlap" if c.overlap else "note.comp_kv", **said)),
        _project("comp_gate", x_ref, x_name, c.wgate, "W_G", "Z", p.tokens,
                 Msg("note.comp_gate", **said)),
        Spec(
            "comp_weights", None, "pool_softmax", (("comp_gate", None),),
            "P = softmax_window(Z + B)", slot_rows, dim_labels(c.wkv.values.shape[1]),
            params={"bias": c.bias, "m": c.m, "overlap": c.overlap},
            notes=(Msg("note.comp_weights_overlap" if c.overlap else "note.comp_weights", **said),),
            symbol="P", letters="T·m×d_c", hint=("hint.comp_weights", {}),
        ),
        Spec(
            "comp_pooled", None, "pool_sum", (("comp_weights", None), ("comp_kv", None)),
            "E_w = Σ_t P ⊙ C_KV", entries, dim_labels(c.width),
            params={"m": c.m, "overlap": c.overlap},
            notes=(Msg("note.comp_pooled", **said),), symbol="E", letters="T×d_k",
            hint=("hint.comp_pooled", {}),
        ),
        Spec(
            "comp_norm", None, "rmsnorm", (("comp_pooled", None),), "E_norm = RMSNorm(E)",
            entries, dim_labels(c.width), params={"weight": c.norm, "eps": c.eps},
            notes=(Msg("note.rmsnorm", eps=f"{c.eps:g}"),), symbol="E_norm", letters="T×d_k",
            hint=("hint.rmsnorm", {"src": "E"}),
        ),
    ]  # fmt: skip
    turn = p.variants.features.get("rope")
    if turn is not None and count:
        positions = _positions(p, c)
        specs.append(
            Spec(
                "comp_rot", None, "rope", (("comp_norm", None),), "E_rot = RoPE(E_norm, w·m)",
                entries, dim_labels(c.width),
                params={"style": turn.style, "dims": turn.dims, "factor": turn.attention_factor,
                        "angles": turn.angles(positions), "positions": positions,
                        "inv_freq": turn.inv_freq,
                        "theta": None if turn.inv_freq_given else turn.theta},
                notes=(Msg("note.comp_rot", dims=turn.dims, m=c.m),), symbol="E_rot",
                letters="T×d_k", hint=("hint.rope", {"src": "E_norm"}),
            )
        )  # fmt: skip
    return specs


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


def _torch(p: Any, c: Compress, literal: Callable[[Any], str], num: Callable[[float], str]
           ) -> list[str]:  # fmt: skip
    """Lines that append the entries to k and v ([1, heads, m, d]) and their columns to
    `allowed`, written as DeepSeek-V4's compressor writes them (windows as a view)."""
    d, count = c.width, _entries(p.n, c.m)
    out = [
        "# Compressed keys (DeepSeek-V4): one entry per m tokens, a softmax-gated pool of X's",
        "# projection over each window's positions, channel by channel; then RMSNorm, the turn",
        f"W_C, W_G = t({literal(c.wkv.values)}), t({literal(c.wgate.values)})",
        f"B_C, w_C, m_C, T_C = t({literal(c.bias)}), t({literal(c.norm)}), {c.m}, {count}",
        "kv_c = (X @ W_C)[: T_C * m_C].view(T_C, m_C, -1)",
        "gate_c = (X @ W_G)[: T_C * m_C].view(T_C, m_C, -1) + B_C",
    ]
    if c.overlap:  # window w - 1's Ca half beside window w's Cb half (none before the first)
        out += [
            f"ca, cb = kv_c[..., :{d}], kv_c[..., {d}:]",
            f"ga, gb = gate_c[..., :{d}], gate_c[..., {d}:]",
            f"kv_c = torch.cat([torch.cat([torch.zeros(1, m_C, {d}), ca[:-1]]), cb], dim=1)",
            f"gate_c = torch.cat([torch.cat([torch.full((1, m_C, {d}), -math.inf), ga[:-1]]), gb], "
            "dim=1)",
        ]
    out += [
        "E = (kv_c * gate_c.softmax(dim=1)).sum(dim=1)",
        f"E = E / torch.sqrt(E.pow(2).mean(-1, keepdim=True) + {num(c.eps)}) * w_C",
    ]
    if p.variants.features.get("rope") is not None:
        out.append("E = rope(E, torch.arange(T_C) * m_C)  # at each window's first position")
    out += [
        "k = torch.cat([k, E.expand(1, k.shape[1], T_C, -1)], dim=2)  # K = V for the entries",
        "v = torch.cat([v, E.expand(1, v.shape[1], T_C, -1)], dim=2)",
        "seen = torch.arange(T_C)[None, :] < ((positions + 1) // m_C)[:, None]",
        "allowed = torch.hstack([allowed, seen])",
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
        work=_weights_work,
        torch=_torch_weights,
        torch_defs=_TORCH_DEFS,
    ),
    Op(
        "pool_sum",
        _sum_compute,
        _sum_feeds,
        work=_sum_work,
        torch=lambda params, names, lit: (
            f"pool_sum({names[0]}, {names[1]}, {params['m']}, {params['overlap']})"
        ),
        torch_defs=_TORCH_DEFS,
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
    no_decode="compress.decode",
    no_tiles="compress.tiles",
    no_backward="compress.backward",
    no_train="compress.train",
    no_dtype="compress.dtype",
    no_sdpa="compress.dtype",
)
