"""Problem: the validated numbers and options of one attention calculation.

Everything that can be wrong with an input is found here, before any math runs, and reported
as a QkvcalcError that names the field, the shapes involved and the rule they break.
Weights are stored in the row layout (Q = X·W_Q) whatever layout they were given in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input import dataset
from qkvcalc.input.arrays import as_input
from qkvcalc.input.cells import Matrix, cell, to_matrix, to_vector
from qkvcalc.input.exact_budget import refusal
from qkvcalc.input.fields import DISPLAY, MATRICES, META, VECTORS, canonical_key
from qkvcalc.input.limits import MAX_ELEMENTS
from qkvcalc.input.loss import Loss, read_loss
from qkvcalc.input.numbers import Number, parse_number
from qkvcalc.input.variants import Variants, read_variants
from qkvcalc.labels import closest, json_kind, shape_text, shown
from qkvcalc.ops import features
from qkvcalc.records import NamedTuple

if TYPE_CHECKING:
    from qkvcalc.ops.base import Feature

MAX_HEADS = 1024


def _to_int(raw: Any, field_name: str) -> int:
    text = raw.strip() if isinstance(raw, str) else ""
    if text.isascii() and text.isdigit() and len(text) <= 9:  # not "²", nor 5,000 digits
        raw = int(text)
    if isinstance(raw, bool) or not isinstance(raw, int | np.integer) or not 1 <= raw <= MAX_HEADS:
        raise QkvcalcError(
            "heads.not_positive", field=field_name, value=shown(raw), limit=MAX_HEADS
        )
    return int(raw)


def _to_tokens(raw: Any, field_name: str, count: int, rows: str) -> tuple[str, ...]:
    """One name per row: the count is checked before any name is (10 million names for 3 rows
    are refused at once)."""
    if isinstance(raw, str):
        raw = raw.split()
    if isinstance(raw, list | tuple):
        _check(
            len(raw) == count, "tokens.count", field=field_name, count=len(raw), n=count, rows=rows
        )
    if not isinstance(raw, list | tuple) or not all(
        isinstance(t, str | int | float) and not isinstance(t, bool) for t in raw
    ):
        raise QkvcalcError("tokens.not_strings", field=field_name)
    return tuple(str(t) for t in raw)


def _to_flags(raw: Any, field_name: str, row: int | None = None) -> list[bool]:
    """A list of 0/1 flags: row `row` (1-based) of a mask, or the whole key_padding. A cell is
    named as every message names one: mask[2,3], key_padding[3]."""
    where = "" if row is None else f"[{row}]"
    if not isinstance(raw, list | tuple):
        raise QkvcalcError("mask.not_flags", field=field_name, where=where, value=shown(raw))
    flags = []
    for j, value in enumerate(raw):
        if isinstance(value, str) and value.strip() in ("0", "1"):
            value = int(value)
        if value not in (0, 1) or (isinstance(value, float) and value not in (0.0, 1.0)):
            raise QkvcalcError(
                "mask.not_flag",
                field=field_name,
                where=f"[{j + 1}]" if row is None else f"[{row},{j + 1}]",
                value=shown(value),
            )
        flags.append(bool(value))
    return flags


@dataclass(frozen=True, eq=False)  # it holds arrays: a Problem equals only itself
class Problem:
    """One attention problem, validated. Build it with Problem.from_mapping.

    Shapes (docs/input-format.md): X [n, d_model]; source [m, d_model]; W_Q [d_model, H·d_k];
    W_K [d_model, G·d_k]; W_V [d_model, G·d_v]; W_O [H·d_v, d_out]; or Q, K, V given directly.
    """

    heads: int
    kv_heads: int
    tokens: tuple[str, ...]
    source_tokens: tuple[str, ...]
    x: Matrix | None = None
    source: Matrix | None = None
    wq: Matrix | None = None
    wk: Matrix | None = None
    wv: Matrix | None = None
    wo: Matrix | None = None
    bq: Matrix | None = None
    bk: Matrix | None = None
    bv: Matrix | None = None
    bo: Matrix | None = None
    q: Matrix | None = None
    k: Matrix | None = None
    v: Matrix | None = None
    scale_given: Number | None = None
    mask_kind: str = "none"  # "none" | "causal" | "custom"
    mask: np.ndarray | None = None  # [n, m] bool, True = may attend (custom masks)
    key_padding: np.ndarray | None = None  # [m] bool, True = a real token
    layout: str = "rows"
    meta: dict[str, str] = field(default_factory=dict)
    # positions, the position encoding, the features' values (input/variants.py)
    variants: Variants = field(default_factory=lambda: Variants(np.zeros(0), np.zeros(0)))
    # --exact: the rational stages shown as fractions. Under the exact budget a problem keeps
    # its numbers' fractions either way: every shown decimal of a rational stage is its exact
    # value rounded half away from zero (qkvcalc.run.exact), whatever the platform's BLAS sums
    exact: bool = False
    # --exact given up before any fraction was made (input/exact_budget.py): the note saying why
    exact_refused: Msg | None = None
    decode: int | None = None  # P: a prefill of P tokens, then one decode step per token
    tiles: int | None = None  # B: the softmax over blocks of B keys (FlashAttention)
    loss: Loss | None = None  # where the backward pass starts: grad_output, target or attend
    backward: bool = False  # --backward: the gradient stages after the forward ones
    # (d_k, d_v) when a feature stands in for W_Q, W_K, W_V (multi-head latent attention)
    widths: tuple[int, int] | None = None
    # --dtype, --policy: computed as the hardware does in that dtype (qkvcalc.run.precision,
    # which checks the names); None: float64, the plain run
    dtype: str | None = None
    policy: str | None = None

    # ---- derived sizes -------------------------------------------------------------------
    @property
    def preset(self) -> str | None:
        """The bundled preset this problem is (its `name`, when that names one), else None: a
        name of one's own, such as an extracted layer's, is not a preset's."""
        from qkvcalc.input import presets

        name = self.meta.get("name")
        return name if name is not None and name in presets.names() else None

    @property
    def projected(self) -> bool:
        return self.q is None

    @property
    def cross(self) -> bool:
        return self.source is not None

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def m(self) -> int:
        return len(self.source_tokens) if self.cross or not self.projected else self.n

    @property
    def d_model(self) -> int | None:
        return self.x.values.shape[1] if self.x is not None else None

    @property
    def d_k(self) -> int:
        if self.widths is not None:
            return self.widths[0]
        wq = self.wq if self.projected else self.q
        assert wq is not None
        return int(wq.values.shape[1]) // self.heads

    @property
    def d_v(self) -> int:
        if self.widths is not None:
            return self.widths[1]
        wv = self.wv if self.projected else self.v
        assert wv is not None
        return int(wv.values.shape[1]) // self.kv_heads

    @property
    def scale(self) -> float:
        return self.scale_given.value if self.scale_given else self.d_k**-0.5

    @property
    def multihead(self) -> bool:
        """Per-head stages, a concat and a final output: several heads, W_O given, or a feature
        with stages after each head's output."""
        return self.heads > 1 or self.wo is not None or features.after_heads(self)

    def kv_head_of(self, head: int) -> int:
        """Query head h (1-based) reads K/V head ⌈h·G/H⌉ (repeat_interleave, as enable_gqa)."""
        return -(-head * self.kv_heads // self.heads)

    def query_heads_of(self, kv_head: int) -> tuple[int, int]:
        """The first and last query heads (1-based) that read K/V head g: kv_head_of's inverse."""
        per = self.heads // self.kv_heads
        return (kv_head - 1) * per + 1, kv_head * per

    # ---- construction --------------------------------------------------------------------
    @classmethod
    def from_mapping(
        cls, raw: Mapping[Any, Any], *, exact: bool = False, max_elements: int = MAX_ELEMENTS
    ) -> Problem:
        """Validate a document of the input format (keys matched case-insensitively).

        `max_elements` bounds the numbers the problem may hold, its inputs and the stages the
        engine will record; both are checked from the shapes before anything is allocated.
        """
        if not isinstance(raw, Mapping):
            raise QkvcalcError("input.not_object", kind=json_kind(raw))
        raw = dataset.first_example(raw)  # a data set (qkvcalc train) reads as its first example
        doc: dict[str, Any] = {}
        for key, value in raw.items():
            name = canonical_key(key)
            if name in doc:
                raise QkvcalcError("key.duplicate", key=key, canonical=name)
            doc[name] = as_input(
                value, name
            )  # numpy arrays, torch tensors … (qkvcalc.input.arrays)
        _check_claimed_size(doc, max_elements)
        # can the exact stages finish? decided before any number becomes a fraction; they are
        # worked out with --exact or without (the decimals shown are rounded from them)
        refused = refusal(doc)
        problem = _build(doc, refused is None)
        _check_stage_size(problem, max_elements)
        return replace(problem, exact=exact, exact_refused=refused if exact else None)


def _claimed(value: Any) -> tuple[int, int]:
    """The rows and columns a matrix field claims by its first row (before it is checked)."""
    if isinstance(value, np.ndarray):
        rows = value.shape[0] if value.ndim and value.shape[0] else 1
        return rows, value.size // rows
    if not isinstance(value, list | tuple) or not value:
        return 0, 0
    first = value[0]
    return len(value), len(first) if isinstance(first, list | tuple) and first else 1


def _check_claimed_size(doc: dict[str, Any], limit: int) -> None:
    """Refuse an input whose matrices, by their row counts and first rows, hold too many numbers
    (a short file can claim a billion: 100,000 rows after a first row of 10,000)."""
    total = 0
    for name in (*MATRICES, *VECTORS, "mask", "key_padding", "grad_output", "target", "attend"):
        rows, cols = _claimed(doc.get(name))
        total += rows * cols
        if total > limit:
            raise QkvcalcError(
                "limits.input_elements",
                field=DISPLAY.get(name, name),
                rows=rows,
                cols=cols,
                count=total,
                limit=limit,
            )


def stage_elements(p: Problem) -> int:
    """The numbers the engine's stages of `p` hold: per head Q, K, V, Kᵀ, its n×m scores and
    its output (and the features' stages: q/k norms, rotations, a score bias); the n×m
    stages derived from the scores (scaled, biased, masked, exp, weights …) of one head
    at a time (they are recomputed when shown: trace.Recipe); the position encoding; then the
    concat and the output. An upper bound, computed from the shapes alone."""
    n, m, d_k, d_v = p.n, p.m, p.d_k, p.d_v
    v = p.variants
    per_head = n * d_k + 2 * m * d_k + m * d_v + n * m + n * d_v
    per_head += features.elements(p)  # the q/k norms, the rotations, a score bias …
    d_out = p.wo.values.shape[1] if p.wo is not None else p.heads * d_v
    pe = 2 * n * (p.d_model or 0) if v.pe is not None else 0
    # scaled, the features' stages on the logits (biased, capped …), masked, exp, A
    lazy = 4 + sum(f.lazy_stages for f, _ in features.active(p))
    if p.decode is not None:  # every step's cache (t rows at step t) and its scores
        cached = n * (n + 1) // 2
        per_head += cached * (d_k + d_v) + 2 * cached + n * (d_k + d_v)
    if p.tiles is not None:  # per block: its scores and exponentials, four columns, the acc
        blocks = -(-m // p.tiles)
        per_head += 2 * n * m + blocks * n * (4 + d_v) + n * d_v
    return p.heads * per_head + lazy * n * m + 2 * n * p.heads * d_v + n * d_out + pe


def _check_stage_size(p: Problem, limit: int) -> None:
    count = stage_elements(p)
    _check(
        count <= limit,
        "limits.stage_elements",
        count=count,
        heads=p.heads,
        n=p.n,
        m=p.m,
        limit=limit,
        gigabytes=f"{count * 8 / 1e9:.1f}",
    )


def _check_mask_shape(raw_mask: list[Any] | tuple[Any, ...], n: int, m: int) -> None:
    """A 0/1 mask must be n×m: its rows are counted before any entry is read. (A row that is
    not a list is _to_flags's to name.)"""
    lists = [row for row in raw_mask if isinstance(row, list | tuple)]
    fits = len(raw_mask) == n and all(len(row) == m for row in lists)
    width = len(lists[0]) if lists else 0
    _check(fits, "mask.shape", shape=shape_text((len(raw_mask), width)), n=n, m=m)


def _step_count(
    raw: Any, field_name: str, low: int, high: int | None, key: str, **params: Any
) -> int:
    """A whole number from `low` to `high` (None: no upper bound), or the message `key`."""
    text = raw.strip() if isinstance(raw, str) else ""
    # ASCII digits only, and few enough for int() (it refuses 4,300 digits, with a traceback)
    if text.isascii() and text.lstrip("-").isdigit() and len(text) <= 18:
        raw = int(text)
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    ok = not isinstance(raw, bool) and isinstance(raw, int | np.integer)
    if not ok or raw < low or (high is not None and raw > high):
        raise QkvcalcError(key, field=field_name, value=shown(raw), **params)
    return int(raw)


MAX_BLOCKS = 256  # blocks of keys a tiled run shows, per head


def _decode_and_tiles(
    doc: dict[str, Any], *, n: int, m: int, cross: bool
) -> tuple[int | None, int | None]:
    """`decode` = P (0 ≤ P < n: a prefill of P tokens, then one step per later token) and
    `tiles` = B (B ≥ 1 keys a block), checked against the sizes; one of them at a time."""
    decode = tiles = None
    if doc.get("decode") is not None:
        _check(not cross, "decode.cross", n=n, m=m)
        decode = _step_count(doc["decode"], "decode", 0, n - 1, "decode.range", n=n, last=n - 1)
    if doc.get("tiles") is not None:
        tiles = _step_count(doc["tiles"], "tiles", 1, None, "tiles.range", m=m)
        _check(decode is None, "tiles.with_decode", decode=decode, tiles=tiles)
        # decided from the sizes, as exact mode is: each block is seven stages of n rows, and
        # --tiles 1 on 2,000 keys (14,000 stages) took half a minute to write out
        blocks = -(-m // tiles)
        least = -(-m // MAX_BLOCKS)
        _check(blocks <= MAX_BLOCKS, "tiles.too_many_blocks", tiles=tiles, m=m, blocks=blocks,
               limit=MAX_BLOCKS, least=least)  # fmt: skip
    return decode, tiles


def _check(cond: bool, key: str, **params: Any) -> None:
    if not cond:
        raise QkvcalcError(key, **params)


def _weight(doc: dict[str, Any], name: str, layout: str, exact: bool) -> Matrix | None:
    if name not in doc:
        return None
    matrix = to_matrix(doc[name], name, exact=exact)
    if layout == "torch":  # PyTorch stores nn.Linear.weight as [out, in]
        exact_t = tuple(zip(*matrix.exact, strict=True)) if matrix.exact else None
        matrix = Matrix(matrix.values.T.copy(), exact_t)
    return matrix


def _check_weight_rows(w: Matrix | None, name: str, rows: int, what: str, layout: str) -> None:
    if w is None:
        return
    r, c = w.values.shape
    if r == rows:
        return
    shape = (c, r) if layout == "torch" else (r, c)  # as the user wrote it
    hint = ""
    if c == rows:
        hint = "torch" if layout == "rows" else "rows"
    raise QkvcalcError(
        "shape.weight_rows" + (f"_hint_{hint}" if hint else ""),
        field=DISPLAY[name],
        shape=shape_text(shape),
        rows=rows,
        what=what,
        layout=layout,
    )


def same_numbers(a: Any, b: Any) -> bool:
    """Whether two problems compute the same: every matrix and option equal as float64,
    whatever was written (1 or 1.0, a default left out or written, slopes given or derived).
    What a problem says about itself (meta, whether --exact shows fractions, what exact mode
    gave up) is not compared."""
    if isinstance(a, Matrix) and isinstance(b, Matrix):
        return same_numbers(a.values, b.values)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    fields = getattr(a, "__dataclass_fields__", None) or getattr(a, "_fields", None)
    if fields is not None and type(a) is type(b):  # a dataclass or a NamedTuple (a feature's)
        return all(
            same_numbers(getattr(a, name), getattr(b, name))
            for name in fields
            if name not in ("meta", "exact", "exact_refused")
            and not name.endswith(("_exact", "_given"))
        )
    if isinstance(a, dict) and isinstance(b, dict):  # the features' values, by name
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same_numbers(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class _Widths(NamedTuple):
    """What the matrices fix: n queries, m keys, X's width, and the columns of the three
    projections (W_Q, W_K, W_V, or Q, K, V given directly), with the names to blame."""

    n: int
    m: int
    d_model: int | None
    cols: tuple[int, int, int]
    who: tuple[str, str, str]


def _read_stand_in(
    doc: dict[str, Any],
    mats: dict[str, Matrix | None],
    feature: Feature,
    heads: int,
    layout: str,
    exact: bool,
) -> tuple[_Widths, Any]:
    """X and the feature that stands in for W_Q, W_K, W_V (its own checks name its fields)."""
    _check("x" in doc, "input.missing", missing="X")
    x = to_matrix(doc["x"], "x", exact=exact)
    mats["x"] = x
    n, d_model = x.values.shape
    assert feature.projects is not None
    value = feature.projects(doc[feature.name], doc, d_model, heads, layout, exact)
    return _Widths(n, n, d_model, value.widths, (feature.name,) * 3), value


def _input_mode(doc: dict[str, Any]) -> bool:
    """True when Q, K, V are given directly; checks the two modes are not mixed or partial."""
    direct = [k for k in ("q", "k", "v") if k in doc]
    projecting = [k for k in ("x", "wq", "wk", "wv", "source", "bq", "bk", "bv") if k in doc]
    if direct and projecting:
        raise QkvcalcError(
            "input.mixed", direct=", ".join(direct), projecting=", ".join(projecting)
        )
    if direct:
        missing = [k.upper() for k in ("q", "k", "v") if k not in doc]
        _check(not missing, "input.missing_direct", missing=", ".join(missing))
    else:
        missing = [DISPLAY[k] for k in ("x", "wq", "wk", "wv") if k not in doc]
        _check(not missing, "input.missing", missing=", ".join(missing))
    return bool(direct)


def _read_direct(doc: dict[str, Any], mats: dict[str, Matrix | None], exact: bool) -> _Widths:
    """Q, K, V given directly: K and V have a row per key."""
    for name in ("q", "k", "v"):
        mats[name] = to_matrix(doc[name], name, exact=exact)
    q, k, v = (mats[name].values for name in ("q", "k", "v"))  # type: ignore[union-attr]
    _check(v.shape[0] == k.shape[0], "shape.kv_rows", k=shape_text(k.shape), v=shape_text(v.shape))
    cols = (q.shape[1], k.shape[1], v.shape[1])
    return _Widths(q.shape[0], k.shape[0], None, cols, ("Q", "K", "V"))


def _read_projected(
    doc: dict[str, Any], mats: dict[str, Matrix | None], layout: str, exact: bool
) -> _Widths:
    """X (and a source), and W_Q, W_K, W_V with a row per column of what each projects."""
    _check_claimed_width(doc, layout, exact)
    x = to_matrix(doc["x"], "x", exact=exact)
    mats["x"] = x
    n, d_model = x.values.shape
    m = n
    if "source" in doc:
        source = to_matrix(doc["source"], "source", exact=exact)
        mats["source"] = source
        m, d_src = source.values.shape
        _check(
            d_src == d_model,
            "shape.source_width",
            x=shape_text(x.values.shape),
            source=shape_text(source.values.shape),
        )
    keys_from = "source" if "source" in doc else "X"
    for name, what in (("wq", "X"), ("wk", keys_from), ("wv", keys_from)):
        mats[name] = _weight(doc, name, layout, exact)
        _check_weight_rows(mats[name], name, d_model, what, layout)
    qcols, kcols, vcols = (mats[w].values.shape[1] for w in ("wq", "wk", "wv"))  # type: ignore[union-attr]
    return _Widths(n, m, d_model, (qcols, kcols, vcols), ("W_Q", "W_K", "W_V"))


# An X of this many entries (by its first row) is checked against W_Q's rows before its entries
# are read; a smaller one is read first, so that its own mistakes are named first.
CLAIMED_CHECK = 100_000


def _check_claimed_width(doc: dict[str, Any], layout: str, exact: bool) -> None:
    """X's width by its first row against W_Q's rows, before X's entries are read: an X of
    40 million columns for a 1×1 W_Q converted every entry first (7 s, 300 MB)."""
    x, wq = doc["x"], doc.get("wq")
    if not isinstance(x, list) or not x or not isinstance(x[0], list) or wq is None:
        return
    width = len(x[0])
    if len(x) * width < CLAIMED_CHECK or isinstance(x[0][0], list):
        return  # small, or not a matrix: X's own message first, as its entries are read
    rows, cols = _claimed(wq)
    if (cols if layout == "torch" else rows) not in (0, width):
        _check_weight_rows(_weight(doc, "wq", layout, exact), "wq", width, "X", layout)


def _head_widths(w: _Widths, heads: int, kv_heads: int) -> tuple[int, int]:
    """d_k and d_v: heads split columns, W_Q into H slices of d_k, W_K into G slices of d_k,
    W_V into G slices of d_v."""
    qcols, kcols, vcols = w.cols
    who = w.who
    _check(
        qcols % heads == 0,
        "shape.heads_divide",
        field=who[0],
        cols=qcols,
        heads=heads,
        what="heads",
    )
    d_k = qcols // heads
    _check(
        kcols % kv_heads == 0,
        "shape.heads_divide",
        field=who[1],
        cols=kcols,
        heads=kv_heads,
        what="kv_heads",
    )
    _check(
        kcols // kv_heads == d_k,
        "shape.dk_mismatch",
        q=who[0],
        k=who[1],
        qcols=qcols,
        kcols=kcols,
        heads=heads,
        kv_heads=kv_heads,
        d_k=d_k,
        dk2=kcols // kv_heads,
    )
    _check(
        vcols % kv_heads == 0,
        "shape.heads_divide",
        field=who[2],
        cols=vcols,
        heads=kv_heads,
        what="kv_heads",
    )
    return d_k, vcols // kv_heads


def _read_biases(
    doc: dict[str, Any], mats: dict[str, Matrix | None], w: _Widths, exact: bool
) -> None:
    """b_Q, b_K, b_V: one number per column of their projection."""
    for (bias, weight), cols in zip(
        (("bq", "wq"), ("bk", "wk"), ("bv", "wv")), w.cols, strict=True
    ):
        if bias in doc:
            mats[bias] = to_vector(doc[bias], bias, exact=exact)
            length = mats[bias].values.shape[1]  # type: ignore[union-attr]
            _check(
                length == cols,
                "shape.bias",
                field=DISPLAY[bias],
                length=length,
                weight=DISPLAY[weight],
                cols=cols,
            )


def _read_output_projection(
    doc: dict[str, Any], mats: dict[str, Matrix | None], rows: int, layout: str, exact: bool
) -> None:
    """W_O, with a row per column of the heads' concatenation (H·d_v), and its b_O."""
    if "wo" not in doc:
        _check("bo" not in doc, "input.bo_without_wo")
        return
    wo = _weight(doc, "wo", layout, exact)
    mats["wo"] = wo
    _check_weight_rows(wo, "wo", rows, "concat", layout)
    if "bo" in doc:
        bo = to_vector(doc["bo"], "bo", exact=exact)
        mats["bo"] = bo
        cols = wo.values.shape[1]  # type: ignore[union-attr]
        _check(
            bo.values.shape[1] == cols,
            "shape.bias",
            field="b_O",
            length=bo.values.shape[1],
            weight="W_O",
            cols=cols,
        )


def _read_tokens(
    doc: dict[str, Any], n: int, m: int, direct: bool, cross: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names of the queries and of the keys (t1…, s1… when not given)."""
    tokens = (
        _to_tokens(doc["tokens"], "tokens", n, "Q" if direct else "X")
        if "tokens" in doc
        else tuple(f"t{i + 1}" for i in range(n))
    )
    _check(
        len(tokens) == n,
        "tokens.count",
        field="tokens",
        count=len(tokens),
        n=n,
        rows="Q" if direct else "X",
    )
    if "source_tokens" in doc:
        _check(cross, "tokens.source_without_source")
        source_tokens = _to_tokens(
            doc["source_tokens"], "source_tokens", m, "K" if direct else "source"
        )
        _check(
            len(source_tokens) == m,
            "tokens.count",
            field="source_tokens",
            count=len(source_tokens),
            n=m,
            rows="K" if direct else "source",
        )
    elif direct and m == n:
        source_tokens = tokens  # Q, K, V of one sequence: keys are the same tokens
    else:
        source_tokens = tuple(f"s{j + 1}" for j in range(m)) if cross else tokens
    return tokens, source_tokens


def _read_scale(doc: dict[str, Any]) -> Number | None:
    if "scale" not in doc:
        return None
    raw_scale = doc["scale"]
    if isinstance(raw_scale, bool) or not isinstance(raw_scale, int | float | str):
        raise QkvcalcError("scale.not_number", value=shown(raw_scale))
    if isinstance(raw_scale, str):
        return parse_number(raw_scale, "scale")
    return cell(raw_scale, "scale", "", True)


def _read_mask(doc: dict[str, Any], n: int, m: int) -> tuple[str, np.ndarray | None]:
    """The mask's kind ("none", "causal", "custom") and, for a 0/1 matrix, its [n, m] flags."""
    # a decode run is causal: without a mask given, the mask is the causal one
    raw_mask = doc.get("mask", "causal" if doc.get("decode") is not None else "none")
    if isinstance(raw_mask, str) and raw_mask.strip().lower() in ("none", "causal"):
        return raw_mask.strip().lower(), None
    if not isinstance(raw_mask, list | tuple):
        if isinstance(raw_mask, str):  # a typo of a kind: 'causl' means 'causal'
            close = closest(raw_mask.strip().lower(), ["none", "causal"])
            if close is not None:
                raise QkvcalcError("mask.unknown_suggest", value=shown(raw_mask), kind=close)
        raise QkvcalcError("mask.unknown", value=shown(raw_mask))
    if raw_mask and not isinstance(raw_mask[0], list | tuple):
        raw_mask = [raw_mask]
    _check_mask_shape(raw_mask, n, m)  # before any entry is read: a row may be 25 M long
    rows = [_to_flags(row, "mask", i + 1) for i, row in enumerate(raw_mask)]
    shape = (len(rows), len(rows[0]) if rows else 0)
    _check(
        len(rows) == n and all(len(r) == m for r in rows),
        "mask.shape",
        shape=shape_text(shape),
        n=n,
        m=m,
    )
    return "custom", np.array(rows, dtype=bool)


def _read_key_padding(doc: dict[str, Any], m: int) -> np.ndarray | None:
    if "key_padding" not in doc:
        return None
    raw_kp = doc["key_padding"]
    if isinstance(raw_kp, list | tuple) and len(raw_kp) == 1 and isinstance(raw_kp[0], list):
        raw_kp = raw_kp[0]
    if isinstance(raw_kp, list | tuple):  # the length first: 25 M entries for one key
        _check(len(raw_kp) == m, "mask.padding_length", length=len(raw_kp), m=m)
    return np.array(_to_flags(raw_kp, "key_padding"), dtype=bool)


def _read_precision(doc: dict[str, Any]) -> tuple[str | None, str | None]:
    """`dtype` and `policy` as words (which words: qkvcalc.run.precision.check); a policy
    says how a dtype rounds, so it needs one."""
    dtype, policy = doc.get("dtype"), doc.get("policy")
    if dtype is not None and not isinstance(dtype, str):
        raise QkvcalcError("precision.dtype_unknown", value=shown(dtype), known="float32, …")
    if policy is not None and not isinstance(policy, str):
        raise QkvcalcError("precision.policy_unknown", value=shown(policy), known="eager, …")
    _check(policy is None or dtype is not None, "precision.policy_without_dtype", policy=policy)
    return dtype, policy


def _alone(used: dict[str, Any], dtype: bool) -> None:
    """A feature that is a layer of its own (a linear-attention layer): refused beside another
    feature or with --dtype, when it says so (--backward: qkvcalc.plan.schedule); a feature
    refused beside a particular other one, when it names it (Feature.refuses), or without one
    it needs (Feature.needs)."""
    for feature in features.among(used):
        others = ", ".join(name for name in used if name != feature.name)
        _check(not feature.alone or len(used) == 1, feature.alone, others=others)
        for other, key in feature.refuses:
            _check(other not in used, key)
        for other, key in feature.needs:
            _check(other in used, key)
        _check(not feature.no_dtype or not dtype, feature.no_dtype)


def _build(doc: dict[str, Any], exact: bool) -> Problem:
    """Read each group of fields in turn, each checked against what the earlier ones fixed."""
    layout = doc.get("layout", "rows")
    _check(layout in ("rows", "torch"), "layout.unknown", value=shown(layout))
    meta = {k: str(doc[k]) for k in META if k in doc}
    heads = _to_int(doc.get("heads", 1), "heads")
    kv_heads = _to_int(doc.get("kv_heads", heads), "kv_heads")
    _check(heads % kv_heads == 0, "heads.kv_divide", heads=heads, kv_heads=kv_heads)

    mats: dict[str, Matrix | None] = {}
    stand_in = features.stand_in(doc)
    if stand_in is not None:  # multi-head latent attention: no W_Q, W_K, W_V of its own
        direct = False
        w, stood = _read_stand_in(doc, mats, stand_in, heads, layout, exact)
    else:
        direct = _input_mode(doc)
        w = _read_direct(doc, mats, exact) if direct else _read_projected(doc, mats, layout, exact)
    n, m = w.n, w.m
    d_k, d_v = _head_widths(w, heads, kv_heads)
    _read_biases(doc, mats, w, exact)
    _read_output_projection(doc, mats, heads * d_v, layout, exact)
    cross = "source" in doc or direct
    tokens, source_tokens = _read_tokens(doc, n, m, direct, cross)
    scale = _read_scale(doc)
    mask_kind, mask = _read_mask(doc, n, m)
    key_padding = _read_key_padding(doc, m)

    variants = read_variants(
        doc,
        n=n,
        m=m,
        heads=heads,
        kv_heads=kv_heads,
        d_k=d_k,
        d_model=w.d_model,
        d_v=d_v,
        layout=layout,
        self_attention=not cross or (direct and m == n),
        mask_kind=mask_kind,
        exact=exact,
        stood=stood if stand_in is not None else None,
    )
    if stand_in is not None:
        variants = replace(variants, features={stand_in.name: stood, **variants.features})
    decode, tiles = _decode_and_tiles(doc, n=n, m=m, cross=cross and not (direct and m == n))
    wo = mats.get("wo")
    d_out = wo.values.shape[1] if wo is not None else heads * d_v
    loss = read_loss(doc, n, m, d_out, exact)
    if decode is not None:
        covers = stand_in.decode_covers if stand_in is not None else None
        covered = covers(stood) if covers is not None else ()
        for feature in features.among(variants.features):
            _check(not feature.no_decode or feature.name in covered, feature.no_decode)
        _check(not direct, "decode.needs_x")
        _check(mask_kind == "causal", "decode.mask", mask=mask_kind)
    if tiles is not None:
        for feature in features.among(variants.features):
            _check(not feature.no_tiles, feature.no_tiles)
    dtype, policy = _read_precision(doc)
    _alone(variants.features, dtype is not None)
    return Problem(
        dtype=dtype,
        policy=policy,
        loss=loss,
        widths=(d_k, d_v) if stand_in is not None else None,
        decode=decode,
        tiles=tiles,
        variants=variants,
        heads=heads,
        kv_heads=kv_heads,
        tokens=tokens,
        source_tokens=source_tokens,
        scale_given=scale,
        mask_kind=mask_kind,
        mask=mask,
        key_padding=key_padding,
        layout=layout,
        meta=meta,
        **mats,  # type: ignore[arg-type]  # (matrices only; mypy sees every field)
    )
