"""Kᵀ: the keys turned on their side, so that the inner dimensions of Q·Kᵀ meet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Asked, Candidate, Op, Params
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan import ids


def _exact_transpose(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.transpose(ops[0]), ()


def _transpose(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [m, d_k] -> [d_k, m]: the inner dimensions of Q·Kᵀ must meet
    return ops[0].T if rows is None else ops[0].T[rows]


# ---- the named mistakes the quiz looks for at its stages ----


def _kt_mistakes(asked: Asked) -> list[Candidate]:
    """K copied as it is, not turned (it fits only where K is square)."""
    msg = Msg("mistake.kt_not_transposed")
    return [("kt_not_transposed", msg, k) for k in asked.versions(ids.K)]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_transpose(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(ops[0].T.copy())  # the same numbers turned: nothing to round


OPS: tuple[Op, ...] = (
    Op(
        "transpose",
        _transpose,
        lambda i, j, s, p: iter([(0, j, i)]),
        _exact_transpose,
        overflow=lambda params: False,
        backward=lambda ops, params, out, g: (g.T,),
        turns=True,
        mistake_ids=("kt_not_transposed",),
        mistakes=_kt_mistakes,
        lowp=_lowp_transpose,
        # Q·K: K used as it is, not turned (it runs only when d_k = m); qkvcalc check's step
        in_code={"kt_missing": {"kt": lambda k: k}},
        torch=lambda params, names, lit: f"{names[0]}.T",
    ),
)
