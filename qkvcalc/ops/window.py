"""A sliding window (Mistral; Hugging Face's `sliding_window`): the causal mask narrowed to the W
most recent positions, the query's own included, so each token attends to a fixed span however
long the text grows: key j is allowed for query i iff 0 ≤ pos_i − pos_j < W.

    "window": W   (a whole number ≥ 1; needs "mask": "causal")   the stage `masked`
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive
from qkvcalc.ops.base import Feature, Sizes


def _read(raw: Any, sizes: Sizes) -> int:
    width = int(positive(raw, "window", integer=True).value)
    if sizes.mask_kind != "causal":  # a two-sided window is a 0/1 mask
        raise QkvcalcError("window.needs_causal", window=width, mask=sizes.mask_kind)
    return width


def _narrow(width: int, distance: np.ndarray) -> np.ndarray:
    # [n, m] of pos_i − pos_j -> [n, m] bool: the W most recent positions
    return distance < width


FEATURE = Feature(
    name="window",
    read=_read,
    causal=lambda width, distance, positions, key_positions: _narrow(width, distance),
    mask_notes=lambda width: (Msg("note.window", window=width, before=width - 1),),
    header=lambda width: [("ui.variant.window", {"window": width})],
    worksheet_notes=("note.window",),
    torch_mask=lambda width: [
        f"causal = causal & (distance < {int(width)})  # a sliding window of W keys"
    ],
)
