"""The attention of today's models, read and checked: positions, causal alignment, position
encodings, q/k norms, rotary embeddings (RoPE), ALiBi and other score
biases; the plug-in features (qkvcalc.features) read their own keys here too.

Every key here is optional; a problem without them is the attention of the paper. Like the
rest of the input layer, each rule that can be broken is a QkvcalcError naming the field,
the shapes and the rule. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.features import REGISTRY, Sizes
from qkvcalc.input.cells import positive
from qkvcalc.labels import shown

ROPE_KEYS = ("theta", "style", "dims", "inv_freq", "attention_factor")
MAX_POSITION = 10**9  # positions beyond this are not a sentence anyone will read


@dataclass(frozen=True)
class Rope:
    """Rotary position embedding of each head's q and k: the first `dims` dimensions rotate
    in pairs (style "half": i with i + dims/2; "pairs": 2i with 2i + 1) by position × inv_freq."""

    theta: float
    style: str
    dims: int
    inv_freq: np.ndarray  # [dims/2]: the frequency of each pair
    attention_factor: float
    inv_freq_given: bool

    def angles(self, positions: np.ndarray) -> np.ndarray:
        # [n] × [dims/2] -> [n, dims/2], in float64
        return positions.astype(np.float64)[:, None] * self.inv_freq[None, :]


@dataclass(frozen=True, eq=False)
class Variants:
    """The optional keys of today's attention, validated (None / defaults: not used)."""

    positions: np.ndarray  # [n] int: each query's position
    key_positions: np.ndarray  # [m] int: each key's position
    positions_given: bool = False
    causal_align: str = "top-left"
    positional: str | None = None  # "sinusoidal", "given" (pe holds it) or None
    pe: np.ndarray | None = None  # [n, d_model]: the position encoding added to X
    pe_exact: tuple[tuple[Any, ...], ...] | None = None
    q_norm: np.ndarray | None = None  # [d_k]
    k_norm: np.ndarray | None = None  # [d_k]
    norm_eps: float = 1e-6
    rope: Rope | None = None
    alibi: np.ndarray | None = None  # [H] slopes
    alibi_exact: tuple[Fraction | None, ...] | None = None
    alibi_given: bool = False
    score_bias: np.ndarray | None = None  # [H, n, m] (one matrix repeated when given n×m)
    score_bias_exact: tuple[Any, ...] | None = None  # per head: exact rows, or None
    # the plug-in features' values, by name (qkvcalc.features: only those the problem uses)
    features: dict[str, Any] = field(default_factory=dict)

    @property
    def biased(self) -> bool:
        return self.alibi is not None or self.score_bias is not None


def sinusoidal(positions: np.ndarray, d_model: int) -> np.ndarray:
    """The paper's encoding: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] =
    cos(the same angle); the sines and cosines of one frequency sit side by side."""
    # [n] -> [n, d_model]
    i = np.arange(d_model) // 2
    angle = positions.astype(np.float64)[:, None] / 10000.0 ** (2 * i / d_model)[None, :]
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))


def alibi_slopes(heads: int) -> tuple[list[float], list[Fraction | None]]:
    """The ALiBi paper's slopes for H heads: for H a power of two, 2^(−8/H), 2^(−16/H), …;
    otherwise those of the nearest smaller power of two, then every other slope of twice
    that many (the odd ones), as BLOOM and the paper's code do. Exact where rational."""
    closest = 1 << (heads.bit_length() - 1)  # the largest power of two ≤ H

    def series(count: int, step: int) -> list[tuple[float, Fraction | None]]:
        # slopes 2^(−8k/count) for k in `step`-spaced exponents
        out = []
        for k in range(1, step * count + 1, step):
            power = Fraction(8 * k, count)
            exact = Fraction(1, 2**power.numerator) if power.denominator == 1 else None
            out.append((2.0 ** (-float(power)), exact))
        return out

    slopes = series(closest, 1)
    if closest != heads:
        slopes += series(2 * closest, 2)[: heads - closest]
    return [s for s, _ in slopes], [e for _, e in slopes]


# ---- reading ----------------------------------------------------------------------------------


def _integers(raw: Any, field: str, length: int, what: str) -> np.ndarray:
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if not isinstance(raw, list | tuple):
        raise QkvcalcError("positions.not_list", field=field, count=length, what=what)
    if len(raw) != length:
        raise QkvcalcError(
            "positions.length", field=field, length=len(raw), count=length, what=what
        )
    out = []
    for k, value in enumerate(raw):
        if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 12:
            value = int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise QkvcalcError("positions.not_integer", field=f"{field}[{k + 1}]")
        if abs(int(value)) > MAX_POSITION:
            raise QkvcalcError("positions.too_large", field=f"{field}[{k + 1}]", limit=MAX_POSITION)
        out.append(int(value))
    return np.array(out, dtype=np.int64)


def _floats(raw: Any, field: str, length: int, what: str) -> np.ndarray:
    from qkvcalc.input.cells import to_vector

    vector = to_vector(raw, field).values[0]
    if vector.size != length:
        raise QkvcalcError(
            "variant.length", field=field, length=vector.size, count=length, what=what
        )
    return vector


def _rope(raw: Any, d_k: int) -> Rope:
    if raw is True:
        raw = {}
    elif isinstance(raw, int | float | str) and not isinstance(raw, bool):
        raw = {"theta": raw}
    if not isinstance(raw, dict):
        raise QkvcalcError("rope.not_object", value=shown(raw))
    for key in raw:
        if key not in ROPE_KEYS:
            raise QkvcalcError("rope.unknown_key", key=str(key), known=", ".join(ROPE_KEYS))
    theta = positive(raw.get("theta", 10000), "rope.theta").value
    style = raw.get("style", "half")
    if style not in ("half", "pairs"):
        raise QkvcalcError("rope.style", value=shown(style))
    dims = int(positive(raw.get("dims", d_k), "rope.dims", integer=True).value)
    if dims % 2 or dims > d_k:
        raise QkvcalcError("rope.dims", dims=dims, d_k=d_k)
    if "inv_freq" in raw:
        inv_freq = _floats(raw["inv_freq"], "rope.inv_freq", dims // 2, "dims/2")
        given = True
    else:
        inv_freq = theta ** (-np.arange(0, dims, 2, dtype=np.float64) / dims)
        given = False
    factor = positive(raw.get("attention_factor", 1), "rope.attention_factor").value
    return Rope(theta, style, dims, inv_freq, factor, given)


def _alibi(raw: Any, heads: int) -> tuple[np.ndarray, tuple[Fraction | None, ...], bool] | None:
    if raw is False or raw is None:
        return None
    if raw is True:
        slopes, exact = alibi_slopes(heads)
        return np.array(slopes), tuple(exact), False
    if isinstance(raw, list | tuple | np.ndarray):
        from qkvcalc.input.cells import to_vector

        vector = to_vector(
            list(raw) if not isinstance(raw, np.ndarray) else raw, "alibi", exact=True
        )
        values = vector.values[0]
        if values.size != heads:
            raise QkvcalcError("alibi.count", count=values.size, heads=heads)
        assert vector.exact is not None
        return values, tuple(vector.exact[0]), True
    raise QkvcalcError("alibi.kind", value=shown(raw))


def _score_bias(
    raw: Any, heads: int, n: int, m: int, exact: bool
) -> tuple[np.ndarray, tuple[Any, ...] | None]:
    from qkvcalc.input.cells import to_matrix
    from qkvcalc.labels import shape_text

    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    three = (
        isinstance(raw, list | tuple)
        and raw
        and isinstance(raw[0], list | tuple)
        and raw[0]
        and isinstance(raw[0][0], list | tuple)
    )
    matrices = [to_matrix(b, "score_bias", exact=exact) for b in (raw if three else [raw])]
    shapes = {mat.values.shape for mat in matrices}
    if shapes != {(n, m)} or (three and len(matrices) != heads):
        got = (len(matrices), *matrices[0].values.shape) if three else matrices[0].values.shape
        raise QkvcalcError("score_bias.shape", shape=shape_text(got), n=n, m=m, heads=heads)
    values = np.stack([mat.values for mat in matrices])
    exact_values = tuple(mat.exact for mat in matrices) if exact else None
    if not three:
        values = np.broadcast_to(values, (heads, n, m))
        exact_values = None if exact_values is None else exact_values * heads
    return values, exact_values


def read_variants(
    doc: dict[str, Any],
    *,
    n: int,
    m: int,
    heads: int,
    d_k: int,
    d_model: int | None,
    self_attention: bool,
    mask_kind: str,
    exact: bool,
) -> Variants:
    """The optional keys of today's attention, checked against the problem's sizes."""
    align = doc.get("causal_align", "top-left")
    if align not in ("top-left", "bottom-right"):
        raise QkvcalcError("causal_align.unknown", value=shown(align))
    if "positions" in doc:
        positions = _integers(doc["positions"], "positions", n, "n")
    else:
        start = m - n if align == "bottom-right" and m >= n else 0
        positions = np.arange(start, start + n, dtype=np.int64)
    if "key_positions" in doc:
        key_positions = _integers(doc["key_positions"], "key_positions", m, "m")
    elif self_attention:
        key_positions = positions.copy()
    else:
        key_positions = np.arange(m, dtype=np.int64)

    positional, pe, pe_exact = None, None, None
    if "positional" in doc and doc["positional"] is not None:
        raw = doc["positional"]
        if d_model is None:
            raise QkvcalcError("positional.needs_x")
        if isinstance(raw, str) and raw.strip().lower() == "sinusoidal":
            positional, pe = "sinusoidal", sinusoidal(positions, d_model)
        else:
            from qkvcalc.input.cells import to_matrix
            from qkvcalc.labels import shape_text

            if isinstance(raw, str):
                raise QkvcalcError("positional.unknown", value=shown(raw))
            given = to_matrix(raw, "positional", exact=exact)
            if given.values.shape != (n, d_model):
                raise QkvcalcError(
                    "positional.shape", shape=shape_text(given.values.shape), n=n, d=d_model
                )
            positional, pe, pe_exact = "given", given.values, given.exact

    norm_eps = 1e-6
    if "norm_eps" in doc:
        norm_eps = positive(doc["norm_eps"], "norm_eps").value
    q_norm = _floats(doc["q_norm"], "q_norm", d_k, "d_k") if "q_norm" in doc else None
    k_norm = _floats(doc["k_norm"], "k_norm", d_k, "d_k") if "k_norm" in doc else None

    rope = None
    if doc.get("rope") not in (None, False):
        rope = _rope(doc["rope"], d_k)

    alibi = _alibi(doc.get("alibi"), heads)
    score_bias = None
    if doc.get("score_bias") is not None:
        score_bias = _score_bias(doc["score_bias"], heads, n, m, exact)

    sizes = Sizes(n, m, heads, d_k, exact, mask_kind)
    features = {f.name: f.read(doc[f.name], sizes) for f in REGISTRY if doc.get(f.name) is not None}

    return Variants(
        positions=positions,
        key_positions=key_positions,
        positions_given="positions" in doc or "key_positions" in doc,
        causal_align=align,
        positional=positional,
        pe=pe,
        pe_exact=pe_exact,
        q_norm=q_norm,
        k_norm=k_norm,
        norm_eps=norm_eps,
        rope=rope,
        alibi=None if alibi is None else alibi[0],
        alibi_exact=None if alibi is None else alibi[1],
        alibi_given=bool(alibi and alibi[2]),
        score_bias=None if score_bias is None else score_bias[0],
        score_bias_exact=None if score_bias is None else score_bias[1],
        features=features,
    )


def plain(n: int, m: int) -> Variants:
    """No variant at all: positions 0…n−1 (and 0…m−1 for the keys)."""
    return Variants(np.arange(n, dtype=np.int64), np.arange(m, dtype=np.int64))
