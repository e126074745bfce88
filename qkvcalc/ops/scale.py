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


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _scale_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 7 / √2 = 4.9497, or 7 × 0.5 = 3.5 for a scale given."""
    at = style.at(i + 1, j + 1)
    score = float(stage.operands[0][i, j])
    assert stage.scale is not None
    cell = scale_cell = None  # the exact score and scale, where --exact writes them
    if exact is not None and stage.operands_exact:
        cell, scale_cell = style.exact_cell(stage.operands_exact[0], i, j), stage.scale_exact
    s = style.num(score) if cell is None else style.exact_factor(cell, score)
    shown, value = style.shown(score, cell), float(stage.value[i, j])
    if stage.scale_text:
        left = f"{at}{style.divided(s, style.root(stage.scale_text))}"
        return style.line(left, shown / style.root_value(stage.scale_text), value, result)
    scale = (
        style.num(stage.scale)
        if scale_cell is None
        else style.exact_factor(scale_cell, stage.scale)
    )
    left = f"{at}{s} {style.times} {scale}"
    return style.line(left, shown * style.shown(stage.scale, scale_cell), value, result)


def _scale_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 1.1047 / √2 = 0.7812, or 1.1047 × 0.5 for a scale given."""
    grad = float(stage.operands[-1][i, j])
    g, value = style.num(grad), float(stage.value[i, j])
    params = stage.params["of"]
    if params.get("scale_text"):
        cell = style.divided(g, style.root(params["scale_text"]))
        shown = style.shown(grad) / style.root_value(params["scale_text"])
        return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, value, result)
    left = f"{style.at(i + 1, j + 1)}{g} {style.times} {style.num(params['scale'])}"
    return style.line(left, style.shown(grad) * style.shown(params["scale"]), value, result)


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
        work=_scale_work,
        grad_work=_scale_back_work,
    ),
)
