"""How each operation rounds in a low-precision dtype, under each policy (`--dtype`, `--policy`).

One table, keyed by op name (the names of qkvcalc.run.ops.OPS): an entry computes the stage
from operands that already hold the dtype's numbers (as float64 arrays) and returns the
dtype's numbers again, rounding where the named backend rounds:

    eager  transformers' eager_attention_forward: products accumulated in float32 and rounded
           once (a projection's bias added before that rounding); scores × scale in float32,
           rounded; a masked cell gets the dtype's most negative finite number added (in
           float32, rounded); softmax in float32 from the dtype's logits (e^(s − max) kept in
           float32: the kernel never stores it in the dtype), the weights rounded.
    naive  a hand-written layer, every op in the dtype: the mask is torch.where(mask, s, −1e9)
           (−1e9 rounded to the dtype); s − max, e^(s − max), the row sum (accumulated in
           float32) and the division each rounded to the dtype. No upcast: why the upcast exists.

The same entry run with `Rounding.exact()` (nothing rounded: float64 throughout) is the op
applied exactly to its own rounded operands: what the stage's *added* error is measured from.

An op without an entry here is refused (qkvcalc.run.precision) rather than computed in
float64 and shown as if it were the dtype's. Each entry moves into its op's own module once
the qkvcalc.ops package lands (one module per op); the table then reads them from there.

ml_dtypes gives numpy the bfloat16 and float8 dtypes; it is imported only here, and this
module only with --dtype (start-up never loads it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from qkvcalc.ops.op import Params

DTYPES = ("float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
POLICIES = ("eager", "sdpa", "naive")
# what is computed today; the rest are refused with a message naming the option
COMPUTED_DTYPES = ("float32", "bfloat16", "float16")
COMPUTED_POLICIES = ("eager", "naive")
# The ops the interpreter says more about (a mask's fill, the weights' dead rows, the split's
# words): named here, in the op table, as the plan names its stages (they move with their ops)
MASK, SOFTMAX, SPLIT = "mask", "softmax", "split"
SOFTMAX_OPS = ("exp", SOFTMAX)  # the two ops of a softmax: where a −∞ row turns NaN
NAIVE_FILL = -1e9  # the Annotated Transformer's −1e9 (masked_fill refuses it in float16)


def numpy_dtype(name: str) -> np.dtype[Any]:
    """The numpy dtype of a --dtype name (ml_dtypes for bfloat16 and the float8 formats)."""
    if name in ("float32", "float16"):
        return np.dtype(name)
    import ml_dtypes

    return np.dtype(getattr(ml_dtypes, name))


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
    """An entry's result: the value (the dtype's numbers, or float32 where `stored` says so)
    and what a renderer shows beside the rows (the row max, the row sum)."""

    value: np.ndarray
    stored: str = ""  # "" = the dtype; "float32": a stage the kernel keeps in float32
    details: dict[str, np.ndarray] | None = None


Entry = Callable[[Sequence[np.ndarray], Params, Rounding], Out]


def _product(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, r: Rounding) -> np.ndarray:
    # [n, d] @ [d, e] (+ [e]) accumulated in float32, rounded once
    acc = r.work(a) @ r.work(b)
    if bias is not None:
        acc = acc + r.work(r.to(bias))
    return r.to(acc)


def _given(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(r.to(ops[0]))


def _columns(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(r.to(ops[0][:, params["cols"]]))


def _split(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(np.asarray(params["table"]))  # which columns each head reads: no numbers


def _project(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(_product(ops[0], ops[1], params.get("bias"), r))


def _transpose(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(ops[0].T.copy())


def _scale(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # scores × scale: both in float32 (the scale a Python float, as transformers passes it)
    return Out(r.to(r.work(ops[0]) * r.work(params["scale"])))


def _mask(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    s, allowed = ops[0], params["allowed"]
    if r.policy == "naive":  # torch.where(mask, s, −1e9): the fill itself, in the dtype
        return Out(np.where(allowed, s, r.to(NAIVE_FILL)))
    fill = r.finfo_min()
    return Out(np.where(allowed, s, r.to(r.work(s) + r.work(fill))))


def _row_max(s: np.ndarray) -> np.ndarray:
    # the row max as torch takes it: −∞ for a row of −∞ (then e^(−∞ − (−∞)) is NaN)
    return np.max(s, axis=1)


def _exp(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    s = ops[0]
    top = _row_max(s)
    if r.policy == "naive":  # s − max rounded, e^ rounded: each op in the dtype
        e = r.to(np.exp(r.to(s - top[:, None])))
        return Out(e, details={"row_max": top})
    # softmax(dtype=float32): s − max in float32, e^ of it rounded to float32
    e = r.f32(np.exp(np.asarray(r.work(s) - r.work(top)[:, None], dtype=np.float64)))
    return Out(e, "float32", {"row_max": top})


def _softmax(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    e = ops[0]
    if r.policy == "naive":  # the row sum accumulated in float32 and rounded, then divided
        total = r.to(r.work(e).sum(axis=1))
        return Out(r.to(e / total[:, None]), details={"row_sum": total})
    total = r.f32(r.work(e).sum(axis=1))
    inverse = r.f32(1 / total) if r.rounds else 1 / total  # torch multiplies by 1/Σ
    return Out(r.to(r.f32(r.work(e) * r.work(inverse)[:, None])), details={"row_sum": total})


def _concat(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(np.hstack(list(ops)))


def _copy(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(ops[0].copy())


def _add(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(r.to(r.work(ops[0]) + r.work(r.to(ops[1]))))


# op name -> policy -> entry (both policies share an entry where they round alike)
LOWP: dict[str, dict[str, Entry]] = {
    name: {policy: entry for policy in COMPUTED_POLICIES}
    for name, entry in (
        ("input", _given),
        ("slice", _columns),
        ("split", _split),
        ("project", _project),
        ("matmul", _project),
        ("transpose", _transpose),
        ("scale", _scale),
        ("mask", _mask),
        ("exp", _exp),
        ("softmax", _softmax),
        ("concat", _concat),
        ("copy", _copy),
        ("add", _add),
    )
}


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
