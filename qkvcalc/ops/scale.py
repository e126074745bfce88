"""The scaling: each score times the scale, 1/√d_k unless the problem gives one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Op, Params, same_cell


def _exact_scale(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.scaled(ops[0], params)


def _scale(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] * scalar -> [n, m]
    return ops[0] * params["scale"]


def _scaled_back(into: str, out: str, x: str, params: Params) -> str:
    # the scaling's gradient: the incoming one times the same factor
    if params.get("scale_text"):
        return f"{out} / {params['scale_text']}"
    return f"{out} × {params['scale']:g}"


def _scale_overflows(params: Params) -> bool:
    return bool(abs(params["scale"]) > 1)


OPS: tuple[Op, ...] = (
    Op(
        "scale",
        _scale,
        same_cell,
        _exact_scale,
        rowwise=True,
        overflow=_scale_overflows,
        backward=lambda ops, params, out, g: (g * params["scale"],),
        grad_formula=_scaled_back,
    ),
)
