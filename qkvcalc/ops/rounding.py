"""How an op rounds in a low-precision dtype (`--dtype`, `--policy`): the words its rule is
written in. Each op module gives its `Op` a `lowp` rule, `lowp(operands, params, r) -> Out`:
the stage computed from operands that already hold the dtype's numbers (float64 arrays), the
dtype's numbers again, rounded where the backend `r.policy` names rounds them:

    eager  transformers' eager_attention_forward: products accumulated in float32 and rounded
           once; elementwise ops in float32, rounded; the softmax in float32 (upcast).
    naive  a hand-written layer, every op in the dtype, with no upcast.

The same rule run with `r.exact()` (nothing rounded: float64 throughout) is the op applied
exactly to its own rounded operands: what a stage's *added* error is measured from. The
interpreter that runs the rules is qkvcalc.run.precision (with qkvcalc.run.lowp).

numpy only; ml_dtypes is imported where a dtype's constant is read (only ever with --dtype).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

Params = dict[str, Any]


class Rounding:
    """Where a stage's numbers are rounded: to the dtype (`to`), to float32 (`f32`, the
    accumulators and the upcast softmax); or, `exact()`, nowhere (float64 throughout, the
    dtype's constants such as its most negative number kept)."""

    def __init__(self, dtype: np.dtype[Any], policy: str, rounds: bool = True) -> None:
        self.dtype = dtype
        self.policy = policy
        self.rounds = rounds

    def exact(self) -> Rounding:
        return Rounding(self.dtype, self.policy, rounds=False)

    def to(self, a: Any) -> np.ndarray:
        """The dtype's number nearest each (round to nearest even), as float64."""
        a = np.asarray(a, dtype=np.float64)
        return a.astype(self.dtype).astype(np.float64) if self.rounds else a

    def f32(self, a: Any) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        return a.astype(np.float32).astype(np.float64) if self.rounds else a

    def work(self, a: Any) -> np.ndarray:
        """An operand as the float32 accumulator holds it (float64 when exact)."""
        return np.asarray(a, dtype=np.float32 if self.rounds else np.float64)

    def finfo_min(self) -> float:
        """The dtype's most negative finite number (what transformers adds where masked)."""
        import ml_dtypes

        return float(ml_dtypes.finfo(self.dtype).min)


class Out(NamedTuple):
    """A rule's result: the value (the dtype's numbers, or float32 where `stored` says so)
    and what a renderer shows beside the rows (the row max, the row sum)."""

    value: np.ndarray
    stored: str = ""  # "" = the dtype; "float32": a stage the kernel keeps in float32
    details: dict[str, np.ndarray] | None = None


# (operands, params, rounding) -> the stage in the dtype
Rule = Callable[[Sequence[np.ndarray], Params, Rounding], Out]


def product(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, r: Rounding) -> np.ndarray:
    """[n, d] @ [d, e] (+ [e]) accumulated in float32, rounded once."""
    acc = r.work(a) @ r.work(b)
    if bias is not None:
        acc = acc + r.work(r.to(bias))
    return r.to(acc)


def rounded(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """A stage that only moves or copies its operand's numbers: the dtype's numbers as given
    (rounded when they are the problem's own)."""
    return Out(r.to(ops[0]))


def moved(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """A stage that moves numbers already in the dtype (a copy): nothing to round."""
    return Out(ops[0].copy())
