"""The scaling: each score times the scale, 1/√d_k unless the problem gives one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Asked, Candidate, Op, Params, same_cell
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan import ids


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


# ---- the named mistakes the quiz looks for at its stages ----


def root_text(value: int) -> str:
    """√4 is '2'; √8 stays '√8'."""
    root = math.isqrt(value)
    return str(root) if root * root == value else f"√{value}"


def _scaled_mistakes(asked: Asked) -> list[Candidate]:
    """/ √d_model, / d_k, not scaled, · √d_k (or, for a scale given, not scaled)."""
    if asked.stage.id != ids.SCALED:
        return []
    p = asked.problem
    d_k = p.d_k
    found: list[Candidate] = []
    for s in asked.versions(ids.SCORES):
        if p.scale_given is not None:
            scale = f"{p.scale:.6g}"
            found.append(("scale_missing", Msg("mistake.scale_missing_given", scale=scale), s))
            continue
        root = root_text(d_k)
        if p.d_model is not None and p.d_model != d_k:
            msg = Msg(
                "mistake.scale_sqrt_d_model",
                d_model=p.d_model,
                model_root=root_text(p.d_model),
                d_k=d_k,
                root=root,
            )
            found.append(("scale_sqrt_d_model", msg, s / math.sqrt(p.d_model)))
        found.append(("scale_d_k", Msg("mistake.scale_d_k", d_k=d_k, root=root), s / d_k))
        found.append(("scale_missing", Msg("mistake.scale_missing", d_k=d_k, root=root), s))
        found.append(
            ("scale_multiplied", Msg("mistake.scale_multiplied", d_k=d_k, root=root), s * d_k**0.5)
        )
    return found


def grad_scale_missing(asked: Asked) -> list[Candidate]:
    """dQ = d(Q·Kᵀ)·K with d(Q·Kᵀ) = scale · (the scaled scores' gradient); the mistake: the
    scaled scores' gradient itself (dK: its transpose times Q). The products of the scores'
    backward (matmul for dQ, matmul_tn for dK) ask it."""
    stage = asked.stage
    q_side = stage.topic == ids.TOPIC_GRAD_Q_SIDE
    if not q_side and stage.topic != ids.TOPIC_GRAD_K_SIDE:
        return []
    scores = asked.find(ids.GRAD_SCORES, stage.head)
    if scores is None or scores.topic != ids.TOPIC_GRAD_BACK_SCALE:  # back through the scaling
        return []
    before = scores.reads[-1][0]  # the gradient of the scaled scores
    other = stage.reads[1][0]  # K (for dQ), Q (for dK)
    said = scores.params["of"].get("scale_text")  # "√2": the scaling divides by it
    scale = f"1/{said}" if said else f"{asked.problem.scale:.6g}"
    msg = Msg("mistake.grad_scale_missing", grad=stage.symbol, scale=scale)
    return [
        ("grad_scale_missing", msg, ds @ m if q_side else ds.T @ m)
        for ds in asked.versions(before)
        for m in asked.versions(other)
    ]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_scale(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # scores × scale: both in float32 (the scale a Python float, as transformers passes it)
    if r.policy == "sdpa":  # inside the kernel: kept in float32
        return Out(r.f32(r.work(ops[0]) * r.work(params["scale"])), "float32")
    return Out(r.keep(r.work(ops[0]) * r.work(params["scale"])), r.kept)


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
        mistake_ids=("scale_sqrt_d_model", "scale_d_k", "scale_missing", "scale_multiplied"),
        mistakes=_scaled_mistakes,
        lowp=_lowp_scale,
        in_code={  # a person's code (qkvcalc check): its pipeline's steps, replaced
            # Q·Kᵀ not scaled at all
            "no_scale": {"factor": lambda given, d_k: 1.0},
            # divided by d_k instead of √d_k
            "scale_dk": {"factor": lambda given, d_k: 1 / d_k if given is None else given},
            # the factor applied twice
            "scale_twice": {"scale": lambda s, f: s * f * f},
            # the weights multiplied by the factor, after a softmax of the unscaled scores
            "scale_after_softmax": {
                "scale": lambda s, f: s,
                "after": lambda w, f, allowed: w * f,
            },
        },
        torch=lambda params, names, lit: f"{names[0]} * {lit.num(params['scale'])}",
    ),
)
