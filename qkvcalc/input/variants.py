"""The attention of today's models, read and checked: positions, causal alignment and position
encodings; the plug-in features (qkvcalc.ops.features) read their own keys here too.

Every key here is optional; a problem without them is the attention of the paper. Like the
rest of the input layer, each rule that can be broken is a QkvcalcError naming the field,
the shapes and the rule. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.labels import shown
from qkvcalc.ops import features
from qkvcalc.ops.features import Sizes

MAX_POSITION = 10**9  # positions beyond this are not a sentence anyone will read


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
    # the plug-in features' values, by name (qkvcalc.ops.features: only those the problem uses)
    features: dict[str, Any] = field(default_factory=dict)


def sinusoidal(positions: np.ndarray, d_model: int) -> np.ndarray:
    """The paper's encoding: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] =
    cos(the same angle); the sines and cosines of one frequency sit side by side."""
    # [n] -> [n, d_model]
    i = np.arange(d_model) // 2
    angle = positions.astype(np.float64)[:, None] / 10000.0 ** (2 * i / d_model)[None, :]
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))


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


def read_variants(
    doc: dict[str, Any],
    *,
    n: int,
    m: int,
    heads: int,
    kv_heads: int,
    d_k: int,
    d_model: int | None,
    d_v: int = 0,
    layout: str = "rows",
    self_attention: bool,
    mask_kind: str,
    exact: bool,
    stood: Any = None,
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

    sizes = Sizes(n, m, heads, d_k, exact, mask_kind, kv_heads, d_model, d_v, layout, stood)
    used = features.read(doc, sizes)

    return Variants(
        positions=positions,
        key_positions=key_positions,
        positions_given="positions" in doc or "key_positions" in doc,
        causal_align=align,
        positional=positional,
        pe=pe,
        pe_exact=pe_exact,
        features=used,
    )


def plain(n: int, m: int) -> Variants:
    """No variant at all: positions 0…n−1 (and 0…m−1 for the keys)."""
    return Variants(np.arange(n, dtype=np.int64), np.arange(m, dtype=np.int64))
