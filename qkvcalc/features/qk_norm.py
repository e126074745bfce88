"""q/k norm (Qwen3, Gemma 3, OLMo): each head's q and k rows scaled to a root mean square of 1
and by a learned weight per dimension, before the rotation and the scores, so that no query or
key can grow the logits without bound.

    "q_norm": [w…] (d_k numbers), "k_norm": [w…], "norm_eps": ε (default 1e-6)

    RMSNorm(x) = x / √(mean(x²) + ε) · w                  stages `q_norm`, `k_norm`
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.features.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive, to_vector
from qkvcalc.plan.specs import Spec, dim_labels
from qkvcalc.run.op import Op, Params, whole_row


class Norms(NamedTuple):
    q: np.ndarray | None  # [d_k]
    k: np.ndarray | None  # [d_k]
    eps: float


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm of each row (Qwen3's q/k norm): x / √(mean(x²) + ε) · w."""
    # [n, d_k] / [n, 1] * [d_k] -> [n, d_k]
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight


def _weights(raw: Any, field: str, d_k: int) -> np.ndarray:
    vector = to_vector(raw, field).values[0]
    if vector.size != d_k:
        raise QkvcalcError("variant.length", field=field, length=vector.size, count=d_k, what="d_k")
    return vector


def _read(given: dict[str, Any], sizes: Sizes) -> Norms | None:
    eps = positive(given["norm_eps"], "norm_eps").value if "norm_eps" in given else 1e-6
    q = _weights(given["q_norm"], "q_norm", sizes.d_k) if "q_norm" in given else None
    k = _weights(given["k_norm"], "k_norm", sizes.d_k) if "k_norm" in given else None
    return None if q is None and k is None else Norms(q, k, eps)


def _echo(norms: Norms) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if norms.q is not None:
        out["q_norm"] = norms.q
    if norms.k is not None:
        out["k_norm"] = norms.k
    return {**out, "norm_eps": norms.eps}


def _compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return rms_norm(ops[0], params["weight"], params["eps"])


def _backward(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # y = x·ρ·w with ρ = 1/√(mean(x²) + ε): ∂x = ρ·(w ⊙ g) − x·ρ³·mean(x ⊙ w ⊙ g)
    (x,) = ops
    wg = g * params["weight"]
    rho = 1 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + params["eps"])
    return (rho * wg - x * rho**3 * np.mean(x * wg, axis=1, keepdims=True),)


def _grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.6325×1×0.5 − 2×0.253×0.1 = 0.1: ρ = 1/√(mean(x²) + ε) of the row, and
    m = mean(x ⊙ w ⊙ g), the part of the gradient that moves the row's length."""
    x, _, g = stage.operands
    weight, eps = stage.params["of"]["weight"], stage.params["of"]["eps"]
    rho = float(1 / np.sqrt(np.mean(x[i] * x[i]) + eps))
    m = float(np.mean(x[i] * weight * g[i]))
    t, w, gij, xij = style.times, float(weight[j]), float(g[i, j]), float(x[i, j])
    first = f"{style.num(rho)}{t}{style.factor(w)}{t}{style.factor(gij)}"
    second = f"{style.factor(xij)}{t}{style.num(rho**3)}{t}{style.factor(m)}"
    n = style.shown
    shown = n(rho) * n(w) * n(gij) - n(xij) * n(rho**3) * n(m)
    left = f"{style.at(i + 1, j + 1)}{first} {style.minus} {second}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 2 / 1.5811 × 1 = 1.2649: the cell over its row's root mean square, times w."""
    (x,) = stage.operands
    row = x[i]
    rms = float(np.sqrt(np.mean(row * row) + stage.params["eps"]))
    weight = float(stage.params["weight"][j])
    cell = style.divided(style.num(float(row[j])), style.num(rms))
    left = f"{style.at(i + 1, j + 1)}{cell} {style.times} {style.factor(weight)}"
    shown = style.shown(float(row[j])) / style.shown(rms) * style.shown(weight)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The weight forgotten (x / RMS(x)), and the root of the sum instead of the mean."""
    weight, eps = stage.params["weight"], stage.params["eps"]
    found: list[Candidate] = []
    for x in versions(stage.reads[0][0]):
        bare = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)
        found.append(("norm_weight_missing", Msg("mistake.norm_weight_missing"), bare))
        length = x / np.sqrt(np.sum(x * x, axis=1, keepdims=True) + eps) * weight
        msg = Msg("mistake.norm_sum_not_mean", d_k=x.shape[1])
        found.append(("norm_sum_not_mean", msg, length))
    return found


def _turn(p: Any, norms: Norms, at: Turn) -> Spec | None:
    weight = norms.q if at.side == "Q" else norms.k
    if weight is None:
        return None
    return Spec(
        f"{at.side.lower()}_norm",
        at.h,
        "rmsnorm",
        (at.ref,),
        f"{at.side}_norm = RMSNorm({at.side})",
        at.rows,
        dim_labels(p.d_k),
        params={"weight": weight, "eps": norms.eps},
        notes=(Msg("note.rmsnorm", eps=f"{norms.eps:g}"),),
        hint=("hint.rmsnorm", {"src": at.symbol}),
        symbol=f"{at.side}_norm",
        letters=at.letters,
        step=at.step,
    )


def _torch(
    p: Any, norms: Norms, literal: Callable[[Any], str], num: Callable[[float], str]
) -> list[str]:
    out = []
    for name, weight in (("q", norms.q), ("k", norms.k)):
        if weight is not None:
            out.append(f"# RMSNorm of each head's {name}: x / sqrt(mean(x^2) + eps) * w")
            out.append(
                f"{name} = {name} / torch.sqrt({name}.pow(2).mean(-1, keepdim=True) + "
                f"{num(norms.eps)}) * t({literal(weight)})"
            )
    return out


FEATURE = Feature(
    name="qk_norm",
    keys=("q_norm", "k_norm", "norm_eps"),
    read=_read,
    ops=(
        Op(
            "rmsnorm",
            _compute,
            whole_row,
            exact_stops="note.exact_stops_root",
            rowwise=True,
            grad_reads=True,
            backward=_backward,
            grad_formula=lambda into, out, x, params: (
                f"ρ·(w ⊙ {out}) − {x}·ρ³·mean({x} ⊙ w ⊙ {out})"
            ),
            grad_work=_grad_work,
        ),
    ),
    turn=_turn,
    work={"rmsnorm": _work},
    mistakes=(Mistakes("rmsnorm", ("norm_weight_missing", "norm_sum_not_mean"), _mistakes),),
    elements=lambda norms, n, m, d_k: (
        (norms.q is not None) * n * d_k + (norms.k is not None) * m * d_k
    ),
    header=lambda norms: [("ui.variant.qk_norm", {})],
    echo=_echo,
    words=("RMSNorm",),
    worksheet_notes=("note.rmsnorm", "note.exact_stops_root"),
    torch_qk=_torch,
    torch_module_gap="it has no q/k norm between its projections and Q·Kᵀ",
)
