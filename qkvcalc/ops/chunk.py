"""Chunked attention (Llama 4's chunked layers; Hugging Face's `attention_chunk_size`): the
positions are cut into chunks of C — 0…C−1, C…2C−1, … — and the causal mask keeps, for each
query, only the keys of its own chunk: key j is allowed for query i iff pos_j ≤ pos_i and
⌊pos_j / C⌋ = ⌊pos_i / C⌋. Unlike a sliding window, a query at the start of a chunk sees no
key before it, however long the text.

    "chunk_size": C   (a whole number ≥ 1; needs "mask": "causal")   the stage `masked`
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive
from qkvcalc.ops.base import Feature, Sizes


def _read(raw: Any, sizes: Sizes) -> int:
    size = int(positive(raw, "chunk_size", integer=True).value)
    if sizes.mask_kind != "causal":  # chunks of a text read left to right: causal within
        raise QkvcalcError("chunk.needs_causal", chunk=size, mask=sizes.mask_kind)
    return size


def _same_chunk(size: int, positions: np.ndarray, key_positions: np.ndarray) -> np.ndarray:
    # [n] and [m] positions -> [n, m] bool: the key's chunk is the query's
    return (positions[:, None] // size) == (key_positions[None, :] // size)


FEATURE = Feature(
    name="chunk_size",
    read=_read,
    causal=lambda size, distance, positions, key_positions: _same_chunk(
        size, positions, key_positions
    ),
    mask_notes=lambda size: (Msg("note.chunk", chunk=size, last=size - 1),),
    header=lambda size: [("ui.variant.chunk", {"chunk": size})],
    worksheet_notes=("note.chunk",),
    torch_mask=lambda size: [
        f"causal = causal & (positions[:, None] // {int(size)} == key_positions[None, :] "
        f"// {int(size)})  # chunks of C positions"
    ],
)
