"""Softcapping (Gemma 2): each logit squashed into (−c, c) as c·tanh(s/c), after the scaling and
the score bias and before the mask, so that no score can run away however large q·k grows.
Near 0 it changes little (tanh(x) ≈ x), near ±c it flattens.

    "softcap": c   (c > 0)     stage `capped`: S_cap = c·tanh(S / c)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive
from qkvcalc.ops.base import Candidate, Feature, Logits, Mistakes, Sizes
from qkvcalc.ops.op import Op, Params, same_cell
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan.specs import Spec


def softcap(s: np.ndarray, cap: float) -> np.ndarray:
    # [n, m] -> [n, m], each within (−c, c); −∞ stays −∞
    return cap * np.tanh(s / cap)


def _read(raw: Any, sizes: Sizes) -> float:
    return positive(raw, "softcap").value


def _compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return softcap(ops[0], params["cap"])


def _stage(p: Any, cap: float, at: Logits) -> list[Spec]:
    said = f"{cap:g}"
    capped = Spec(
        "capped",
        at.h,
        "softcap",
        (at.ref,),
        f"{said}·tanh(({at.formula}) / {said})",
        at.rows,
        at.cols,
        params={"cap": cap},
        notes=(Msg("note.softcap", cap=said),),
        symbol="S_cap",
        letters=at.letters,
        hint=("hint.capped", {"src": at.symbol, "cap": said}),
    )
    return [capped]


def _work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 50×tanh(3.5355 / 50) = 3.5296"""
    (s,) = stage.operands
    cap = style.num(stage.params["cap"])
    tanh = r"\tanh" if style.latex else "tanh"
    score, c = float(s[i, j]), stage.params["cap"]
    inner = style.divided(style.num(score), cap)
    # a cap shown as 0 (a low precision): nothing to redo, so the line says ≈
    shown = (
        style.shown(c) * math.tanh(style.shown(score) / style.shown(c))
        if style.shown(c)
        else math.inf
    )
    left = f"{style.at(i + 1, j + 1)}{cap}{style.times}{tanh}({inner})"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.5 × (1 − tanh²(3.5355 / 50)) = 0.4975"""
    s, _, g = stage.operands
    cap = style.num(stage.params["of"]["cap"])
    tanh = r"\tanh^2" if style.latex else "tanh²"
    score, c, gij = float(s[i, j]), stage.params["of"]["cap"], float(g[i, j])
    inner = style.divided(style.num(score), cap)
    slope = f"(1 {style.minus} {tanh}({inner}))"
    n = style.shown
    shown = n(gij) * (1 - math.tanh(n(score) / n(c)) ** 2) if n(c) else math.inf
    left = f"{style.at(i + 1, j + 1)}{style.num(gij)}{style.times}{slope}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The cap's two halves forgotten: c·tanh(S) (no division inside), tanh(S / c) (no c)."""
    cap = stage.params["cap"]
    said = f"{cap:g}"
    found: list[Candidate] = []
    for s in versions(stage.reads[0][0]):
        inner = Msg("mistake.softcap_inner_missing", cap=said)
        found.append(("softcap_inner_missing", inner, cap * np.tanh(s)))
        outer = Msg("mistake.softcap_outer_missing", cap=said)
        found.append(("softcap_outer_missing", outer, np.tanh(s / cap)))
    return found


def _torch(cap: float, num: Callable[[float], str]) -> list[str]:
    return [f"scores = {num(cap)} * torch.tanh(scores / {num(cap)})"]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # Gemma 2's eager attention: S / c, tanh of it, times c: each in float32 and rounded (torch
    # computes a bfloat16 tanh in float32); --policy sdpa has no softcap (qkvcalc.run.precision)
    c = r.work(params["cap"])
    inner = r.keep(r.work(ops[0]) / c)
    capped = r.keep(np.tanh(r.work(inner)))
    said = {"cap": f"{params['cap']:g}", "dtype": r.kept or str(r.dtype)}
    value = r.keep(r.work(capped) * c)
    reached = int((np.abs(value) >= params["cap"]).sum())
    if not reached:
        return Out(value, r.kept, notes=(Msg("precision.softcap", **said),))
    # tanh rounded to ±1: the cap is reached, so "strictly between −c and c" no longer holds
    notes = (
        Msg("precision.softcap", **said),
        Msg("precision.softcap_reached", count=reached, **said),
    )
    return Out(value, r.kept, notes=notes, drops=("note.softcap",))


FEATURE = Feature(
    name="softcap",
    read=_read,
    ops=(
        Op(
            "softcap",
            _compute,
            same_cell,
            rowwise=True,
            overflow=lambda params: False,
            exact_stops="note.exact_stops_tanh",
            # c·tanh(s/c)' = 1 − tanh²(s/c) (a masked −∞ never reaches the cap: it comes after)
            grad_reads=True,
            backward=lambda ops, params, out, g: (g * (1 - np.tanh(ops[0] / params["cap"]) ** 2),),
            grad_formula=lambda into, out, x, params: (
                f"{out} ⊙ (1 − tanh²({x} / {params['cap']:g}))"
            ),
            grad_work=_grad_work,
            work=_work,
            lowp=_lowp,
            torch=lambda params, names, lit: (
                f"{lit.num(params['cap'])} * torch.tanh({names[0]} / {lit.num(params['cap'])})"
            ),
        ),
    ),
    logits=_stage,
    mistakes=(Mistakes("softcap", ("softcap_inner_missing", "softcap_outer_missing"), _mistakes),),
    lazy_stages=1,
    header=lambda cap: [("ui.variant.softcap", {"cap": f"{cap:g}"})],
    worksheet_notes=("note.softcap",),
    torch_logits=_torch,
    torch_module_gap="it has no softcap: its softmax reads the scores as they are",
    no_sdpa=True,
)
