"""Attention temperature (Llama 4's NoPE layers, "temperature tuning"): each query row is
multiplied by a factor τᵢ that grows with its position, so that the scores of a far query do
not flatten out over many keys. After the norm and the rotation, before the scores.

    "attn_temperature": [τ_1, …, τ_n]                  one factor per query row, or
    "attn_temperature": {"floor_scale": F, "attn_scale": a}
        τᵢ = log(1 + ⌊(positions[i] + 1) / F⌋) · a + 1      (Llama 4: attn_scale, floor_scale)

    Q_temp[i, :] = τᵢ · Q[i, :]                            stage `q_temp`
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive, to_vector
from qkvcalc.labels import shown
from qkvcalc.ops.base import Feature, Sizes, Turn
from qkvcalc.ops.op import Op, Params
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan.specs import Spec, dim_labels
from qkvcalc.records import NamedTuple

SETTINGS = ("floor_scale", "attn_scale")


class Temperature(NamedTuple):
    factors: np.ndarray | None  # [n]: given one per query row
    floor_scale: float = 0.0  # or made from the positions (Llama 4)
    attn_scale: float = 0.0

    def of(self, positions: np.ndarray) -> np.ndarray:
        """τ of the query rows at these positions (the factors given: every row's)."""
        if self.factors is not None:
            return self.factors
        floors = np.floor((positions.astype(np.float64) + 1.0) / self.floor_scale)
        return np.log1p(floors) * self.attn_scale + 1.0


def _read(raw: Any, sizes: Sizes) -> Temperature:
    if isinstance(raw, dict):
        for key in raw:
            if key not in SETTINGS:
                raise QkvcalcError(
                    "attn_temperature.unknown_key", key=shown(key), known=", ".join(SETTINGS)
                )
        if "floor_scale" not in raw or "attn_scale" not in raw:
            raise QkvcalcError("attn_temperature.needs_both")
        floor = positive(raw["floor_scale"], "attn_temperature.floor_scale").value
        scale = to_vector([raw["attn_scale"]], "attn_temperature.attn_scale").values[0, 0]
        return Temperature(None, float(floor), float(scale))
    if not isinstance(raw, list | tuple | np.ndarray):
        raise QkvcalcError("attn_temperature.kind", value=shown(raw))
    factors = to_vector(raw, "attn_temperature").values[0]
    if factors.size != sizes.n:
        raise QkvcalcError("attn_temperature.count", count=int(factors.size), n=sizes.n)
    return Temperature(factors)


def _echo(t: Temperature) -> Any:
    if t.factors is not None:
        return t.factors
    return {"floor_scale": t.floor_scale, "attn_scale": t.attn_scale}


def _compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    factors = params["factors"] if rows is None else params["factors"][rows]
    return ops[0] * factors[:, None]


def _backward(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    return (g * params["factors"][:, None],)  # ∂(τᵢ·xᵢⱼ)/∂xᵢⱼ = τᵢ


def _work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 1.5 × 1.0693 = 1.604: the cell times its row's τ."""
    (x,) = stage.operands
    tau = float(stage.params["factors"][i])
    cell = f"{style.num(float(x[i, j]))} {style.times} {style.factor(tau)}"
    shown = style.shown(float(x[i, j])) * style.shown(tau)
    return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, float(stage.value[i, j]), result)


def _grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 1.0693 × 0.25 = 0.2673: the gradient coming in times the row's τ."""
    g = stage.operands[-1]
    tau = float(stage.params["of"]["factors"][i])
    cell = f"{style.num(tau)} {style.times} {style.factor(float(g[i, j]))}"
    shown = style.shown(tau) * style.shown(float(g[i, j]))
    return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, float(stage.value[i, j]), result)


def _factors_text(rows: tuple[str, ...], factors: np.ndarray, limit: int = 12) -> str:
    said = [f"{t} {f:.4g}" for t, f in zip(rows, factors.tolist(), strict=True)]
    return ", ".join(said[:limit]) + (" …" if len(said) > limit else "")


def _turn(p: Any, t: Temperature, at: Turn) -> Spec | None:
    if at.side != "Q":
        return None
    if at.step is not None and t.factors is not None:
        raise QkvcalcError("attn_temperature.decode_list")
    factors = t.of(at.positions)
    notes = [Msg("note.attn_temperature", factors=_factors_text(at.rows, factors))]
    if t.factors is None:
        notes.append(
            Msg(
                "note.attn_temperature_llama4",
                floor_scale=f"{t.floor_scale:g}",
                attn_scale=f"{t.attn_scale:g}",
            )
        )
    return Spec(
        "q_temp",
        at.h,
        "row_scale",
        (at.ref,),
        f"Q_temp = τ ⊙ {at.symbol}",
        at.rows,
        dim_labels(p.d_k),
        params={"factors": factors},
        notes=tuple(notes),
        hint=("hint.attn_temperature", {"src": at.symbol}),
        symbol="Q_temp",
        letters=at.letters,
    )


def _torch(
    p: Any, t: Temperature, literal: Callable[[Any], str], num: Callable[[float], str]
) -> list[str]:
    factors = t.of(p.variants.positions)
    return [
        "# Attention temperature: each query row times its factor tau_i (Llama 4's NoPE layers)",
        f"q = q * t({literal(factors)})[None, None, :, None]",
    ]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp(ops: Any, params: Params, r: Rounding) -> Out:
    # Llama 4: (q * attn_scales).to(q.dtype), the factors a float32 tensor: the product in
    # float32, rounded to the dtype once; naive: the factors in the dtype too
    factors = np.asarray(params["factors"], dtype=np.float64)[:, None]
    if r.policy == "naive":
        factors = r.to(factors)
    said = "precision.temperature_naive" if r.policy == "naive" else "precision.temperature"
    note = Msg(said, dtype=r.kept or str(r.dtype))
    return Out(r.keep(r.work(ops[0]) * r.work(factors)), r.kept, notes=(note,))


FEATURE = Feature(
    name="attn_temperature",
    read=_read,
    ops=(
        Op(
            "row_scale",
            _compute,
            lambda i, j, shapes, params: iter(((0, i, j),)),
            rowwise=True,
            exact_stops="note.exact_stops_temperature",
            backward=_backward,
            grad_formula=lambda into, out, x, params: f"τ ⊙ {out}",
            grad_work=_grad_work,
            work=_work,
            lowp=_lowp,
            torch=lambda params, names, lit: (
                f"{names[0]} * {lit.array(params['factors'])}[:, None]"
            ),
        ),
    ),
    turn=_turn,
    late_turn=lambda t: True,
    elements=lambda t, n, m, d_k: n * d_k,
    header=lambda t: [("ui.variant.attn_temperature", {})],
    echo=_echo,
    worksheet_notes=("note.attn_temperature_llama4",),
    torch_qk=_torch,
    torch_module_gap="it has no factor on each query row before Q·Kᵀ",
)
