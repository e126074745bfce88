"""The norm on V (Gemma 3n, Gemma 4): each head's value rows rescaled to a root mean square of
about 1 before the weights mix them, with no learned weight (transformers'
`Gemma3nRMSNorm(head_dim, with_scale=False)`, `Gemma4RMSNorm(…, with_scale=False)`), so that no
token's value can be louder than another's.

    "v_norm": true (ε = 1e-6) or {"eps": ε}

    V_norm = V / √(mean(V²) + ε), row by row over the head's d_v numbers     stage `v_norm`

The output A·V_norm reads it. The q/k norm (q_norm, k_norm) is a separate feature with weights
of its own; Gemma 3n and Gemma 4 have both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive
from qkvcalc.labels import shown
from qkvcalc.ops import row_rms
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.ops.op import Op, whole_row
from qkvcalc.plan.specs import Spec, dim_labels
from qkvcalc.records import NamedTuple


class VNorm(NamedTuple):
    eps: float


def _read(raw: Any, sizes: Sizes) -> VNorm | None:
    if raw is False:
        return None
    if raw is True:
        return VNorm(1e-6)
    if not isinstance(raw, dict) or not set(raw) <= {"eps"}:
        raise QkvcalcError("v_norm.value", value=shown(raw))
    return VNorm(positive(raw.get("eps", 1e-6), "v_norm.eps").value)


# ---- the op -------------------------------------------------------------------------------------


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The root of the sum of the squares (the row's length) instead of their mean."""
    eps = stage.params["eps"]
    found: list[Candidate] = []
    for v in versions(stage.reads[0][0]):
        length = v / np.sqrt(np.sum(v * v, axis=1, keepdims=True) + eps)
        found.append(
            ("v_norm_sum_not_mean", Msg("mistake.v_norm_sum_not_mean", d_v=v.shape[1]), length)
        )
    return found


# ---- the stage ----------------------------------------------------------------------------------


def _turn(p: Any, norm: VNorm, at: Turn) -> Spec:
    """V_norm = V / √(mean(V²) + ε), the head's value rows (its K/V head's)."""
    if p.tiles is not None and p.backward:
        raise QkvcalcError("v_norm.tiles_backward")
    return Spec(
        "v_norm",
        at.h,
        "v_rmsnorm",
        (at.ref,),
        f"V_norm = RMSNorm({at.symbol})",
        at.rows,
        dim_labels(p.d_v),
        params={"eps": norm.eps},
        notes=(Msg("note.v_norm", eps=f"{norm.eps:g}"),),
        hint=("hint.v_norm", {"src": at.symbol}),
        symbol="V_norm",
        letters=at.letters,
    )


def _torch(p: Any, norm: VNorm, literal: Any, num: Callable[[float], str]) -> list[str]:
    return [
        "# The norm on V (Gemma 3n, Gemma 4): v / sqrt(mean(v^2) + eps), no weight",
        f"v = v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + {num(norm.eps)})",
    ]


FEATURE = Feature(
    name="v_norm",
    read=_read,
    ops=(
        Op(
            "v_rmsnorm",
            row_rms.forward,
            whole_row,
            exact_stops="note.exact_stops_root",
            rowwise=True,
            grad_reads=True,
            backward=row_rms.backward,
            grad_formula=lambda into, out, x, params: f"ρ·{out} − {x}·ρ³·mean({x} ⊙ {out})",
            grad_work=row_rms.grad_work,
            work=row_rms.work,
            lowp=row_rms.lowp("precision.v_norm_eager", "precision.v_norm_naive"),
            torch=row_rms.torch_rms,
        ),
    ),
    turn_v=_turn,
    mistakes=(Mistakes("v_rmsnorm", ("v_norm_sum_not_mean",), _mistakes),),
    elements=lambda norm, n, m, d_k: m * d_k,
    header=lambda norm: [("ui.variant.v_norm", {"eps": f"{norm.eps:g}"})],
    echo=lambda norm: {"eps": norm.eps},
    words=("RMSNorm",),
    worksheet_notes=("note.v_norm",),
    torch_qk=_torch,
    torch_module_gap="it has no norm on V",
    no_decode="v_norm.decode",
)
