"""Kᵀ: the keys turned on their side, so that the inner dimensions of Q·Kᵀ meet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Op, Params


def _exact_transpose(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.transpose(ops[0]), ()


def _transpose(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [m, d_k] -> [d_k, m]: the inner dimensions of Q·Kᵀ must meet
    return ops[0].T if rows is None else ops[0].T[rows]


OPS: tuple[Op, ...] = (
    Op(
        "transpose",
        _transpose,
        lambda i, j, s, p: iter([(0, j, i)]),
        _exact_transpose,
        overflow=lambda params: False,
        backward=lambda ops, params, out, g: (g.T,),
    ),
)
