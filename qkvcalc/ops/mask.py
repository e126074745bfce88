"""The mask: a score where the key is allowed, −∞ where it is not (so its weight is 0)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Feeds, Op, Params, Shapes, rows_of


def apply_mask(s: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    # [n, m] where allowed, else −∞
    return np.where(allowed, s, -np.inf)


def _allowed_cell(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # a masked cell is −∞ whatever its score was
    if params["allowed"][i, j]:
        yield 0, i, j


def _exact_mask(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.masked(ops[0], params["allowed"]), ()


def _mask(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] where allowed, else −∞
    return apply_mask(ops[0], rows_of(params["allowed"], rows))


OPS: tuple[Op, ...] = (
    Op(
        "mask",
        _mask,
        _allowed_cell,
        _exact_mask,
        rowwise=True,
        overflow=lambda p: False,
        backward=lambda ops, params, out, g: (np.where(params["allowed"], g, 0.0),),
        # [M ≠ −∞]: 1 where the key is allowed, 0 where it is masked (an Iverson bracket)
        grad_formula=lambda into, out, x, params: f"{out} ⊙ [M ≠ −∞]",
    ),
)
