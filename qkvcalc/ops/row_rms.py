"""Each row over its root mean square, with no weight: x / √(mean(x²) + ε) — the forward,
backward and cell arithmetic that a norm without a learned weight shares (the norm on the
values of Gemma 3n and Gemma 4, the group norm of a pair of heads in DiffLlama). Each feature
declares its own Op with these, under its own name, notes and mistakes, and its own words for
how the rule `lowp` rounds it in a low-precision dtype (--dtype).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Literals, Params
from qkvcalc.ops.rounding import Out, Rounding, Rule


def rms(x: np.ndarray, eps: float) -> np.ndarray:
    """Each row's √(mean(x²) + ε): [n, d] -> [n, 1]."""
    return np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)


def forward(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d] / [n, 1] -> [n, d]
    return ops[0] / rms(ops[0], params["eps"])


def backward(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # y = x·ρ, ρ = (mean(x²) + ε)^(−½): dx = ρ·dy − x·ρ³·mean(x ⊙ dy)
    x = ops[0]
    rho = 1 / rms(x, params["eps"])
    return (rho * g - x * rho**3 * np.mean(x * g, axis=1, keepdims=True),)


def work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 2 / 1.5811 = 1.2649: the cell over its row's root mean square."""
    x = stage.operands[0]
    below = float(rms(x[i : i + 1], stage.params["eps"])[0, 0])
    left = f"{style.at(i + 1, j + 1)}{style.divided(style.num(float(x[i, j])), style.num(below))}"
    shown_below = style.shown(below)  # shown as 0 at a low precision: the line can only say ≈
    value = style.shown(float(x[i, j])) / shown_below if shown_below else float("inf")
    return style.line(left, value, float(stage.value[i, j]), result)


def grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.7845×0.5 − 1.5×0.4828×0.2 = 0.2474: ρ = 1/√(mean(x²) + ε) of the row and
    mean(x ⊙ dy), the part of the gradient that would change the row's length."""
    x, g = stage.operands[0], stage.operands[-1]
    rho = float(1 / rms(x[i : i + 1], stage.params["of"]["eps"])[0, 0])
    m = float(np.mean(x[i] * g[i]))
    t, gij, xij, n = style.times, float(g[i, j]), float(x[i, j]), style.shown
    first = f"{style.num(rho)}{t}{style.factor(gij)}"
    second = f"{style.factor(xij)}{t}{style.num(rho**3)}{t}{style.factor(m)}"
    value = n(rho) * n(gij) - n(xij) * n(rho**3) * n(m)
    left = f"{style.at(i + 1, j + 1)}{first} {style.minus} {second}"
    return style.line(left, value, float(stage.value[i, j]), result)


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def lowp(eager: str, naive: str) -> Rule:
    """The rule, with the catalog keys of its note under eager (and sdpa) and under naive.

    eager and sdpa: the row in float32, mean(x²), 1/√(mean + ε) and x times it in float32,
    rounded to the dtype once: torch's F.rms_norm without a weight (DiffLlama's group norm,
    nn.RMSNorm), Gemma 3n's and Gemma 4's RMSNorm(with_scale=False) (its pow(·, −0.5) is
    torch's 1/√ in float32, bit for bit). naive, x / √(mean(x²) + ε) written by hand: x², the
    mean (summed in float32), the mean + ε (ε in the dtype: torch adds a Python number to a
    tensor so), the square root and the division each rounded to the dtype."""

    def rule(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
        x, eps = ops[0], params["eps"]
        if r.policy == "naive":
            mean = r.to(r.work(r.to(x * x)).mean(axis=1, keepdims=True))
            # torch adds a Python number to a tensor in the dtype as the dtype's number
            value = r.to(x / r.to(np.sqrt(r.to(mean + r.to(np.float64(eps))))))
            return Out(value, notes=(Msg(naive, dtype=str(r.dtype)),))
        wide = r.work(x)
        mean = r.f32(np.mean(wide * wide, axis=1, keepdims=True))
        inverse = r.f32(1 / np.sqrt(r.work(r.f32(r.work(mean) + r.work(eps)))))
        value = r.keep(wide * r.work(inverse))
        return Out(value, r.kept, notes=(Msg(eager, dtype=r.kept or str(r.dtype)),))

    return rule


def torch_rms(params: Params, names: Sequence[str], lit: Literals) -> str:
    """--format torch: each row over √(mean(x²) + ε)."""
    x = names[0]
    return f"{x} / torch.sqrt(({x} * {x}).mean(dim=1, keepdim=True) + {lit.num(params['eps'])})"
