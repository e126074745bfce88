"""The precision lab's interpreter side: the dtypes and policies `--dtype` and `--policy` take,
and where each op's rounding rule is read.

Each op says, in its own module (qkvcalc/ops/), how it rounds under each policy: its `Op.lowp`
rule (qkvcalc.ops.rounding), which computes the stage from operands that already hold the
dtype's numbers (as float64 arrays) and returns the dtype's numbers again, rounding where the
named backend rounds:

    eager  transformers' eager_attention_forward: products accumulated in float32 and rounded
           once (a projection's bias added before that rounding); scores × scale in float32,
           rounded; a masked cell gets the dtype's most negative finite number added (in
           float32, rounded); softmax in float32 from the dtype's logits (e^(s − max) kept in
           float32: the kernel never stores it in the dtype), the weights rounded.
    naive  a hand-written layer, every op in the dtype: the mask is torch.where(mask, s, −1e9)
           (−1e9 rounded to the dtype); s − max, e^(s − max), the row sum (accumulated in
           float32) and the division each rounded to the dtype. No upcast: why the upcast exists.

The same rule run with `Rounding.exact()` (nothing rounded: float64 throughout) is the op
applied exactly to its own rounded operands: what the stage's *added* error is measured from.

An op without a rule is refused (qkvcalc.run.precision) rather than computed in float64 and
shown as if it were the dtype's.

ml_dtypes gives numpy the bfloat16 and float8 dtypes; it is imported only here and in the
rules' constants, and this module only with --dtype (start-up never loads it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.ops.rounding import ACCUMULATOR, INSIDE, SAID, SHOWN, Out, Rounding, Rule
from qkvcalc.ops.table import OPS

__all__ = [
    "ACCUMULATOR",
    "INSIDE",
    "SAID",
    "SHOWN",
    "Out",
    "Rounding",
    "Rule",
    "numpy_dtype",
    "rule",
    "ulp",
]

DTYPES = ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
POLICIES = ("eager", "sdpa", "naive")
# The ops the interpreter says more about (a mask's fill, the weights' dead rows, the split's
# words), by their names in the op table
MASK, SOFTMAX, SPLIT = "mask", "softmax", "split"
SOFTMAX_OPS = ("exp", SOFTMAX)  # the two ops of a softmax: where a −∞ row turns NaN


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype of a --dtype name (ml_dtypes for bfloat16 and the float8 formats)."""
    if name in ("float32", "float16"):
        return np.dtype(name)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


def rule(op: str) -> Rule | None:
    """How the op `op` rounds in a low-precision dtype: its module's rule (None: it has none,
    and --dtype refuses it)."""
    return OPS[op].lowp


def ulp(x: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
    """The dtype's unit in the last place at each |x| (its spacing there; the smallest
    subnormal at 0). inf and NaN give a meaningless unit: callers leave those cells out.

    Read from float64's exponent bits (integer work: a million cells in a few ms): |x| lies in
    the binade 2^b, and the dtype's spacing there is 2^(max(b, its min exponent) − its mantissa
    bits), which float64 holds as a normal number for every dtype here."""
    import ml_dtypes

    info = ml_dtypes.finfo(dtype)
    out = np.abs(np.asarray(x, dtype=np.float64))  # one array, worked on in place
    bits = out.view(np.int64)
    bits >>= 52  # the biased exponent
    bits -= 1023
    np.maximum(bits, info.minexp, out=bits)
    bits += 1023 - info.nmant
    bits <<= 52
    return out
