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
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.records import NamedTuple

Params = dict[str, Any]


class Rounding:
    """Where a stage's numbers are rounded: to the dtype (`to`), to float32 (`f32`, the
    accumulators and the upcast softmax); or, `exact()`, nowhere (float64 throughout, the
    dtype's constants such as its most negative number kept).

    float8 is a storage format. Under `naive` it is a plain cast (float8_e4m3fn, which has no
    ∞, saturates at ±448 as PyTorch's cast does). Under `eager` it is `scaled`, as FP8 attention
    kernels store it: a tensor t is kept as s·round(t / s), one scale s = max|t| / the format's
    largest finite number per tensor, and what is computed between two products (the scores
    through the weights, each product's result) stays in float32 (`keep`, `kept`)."""

    def __init__(
        self,
        dtype: np.dtype[Any],
        policy: str,
        rounds: bool = True,
        kernel: str = "",
        inside: bool = False,
    ) -> None:
        self.dtype = dtype
        self.policy = policy
        self.rounds = rounds
        # sdpa: the kernel torch picks ("flash" where d_k = d_v, else "math"), and whether this
        # stage is one the kernel computes inside itself (Q·Kᵀ: kept in float32, never stored)
        self.kernel = kernel
        self.inside = inside
        self.float8 = str(dtype).startswith("float8")
        self.scaled = self.float8 and policy == "eager"  # per-tensor scaling
        self.kept = "float32" if self.scaled else ""  # where a computed stage is kept
        # the last cast's result and the dtype's own array it was made from (`narrow`)
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    def exact(self) -> Rounding:
        return Rounding(self.dtype, self.policy, False, self.kernel, self.inside)

    def within(self) -> Rounding:
        """The same rounding for a stage computed inside torch's attention kernel (sdpa)."""
        return Rounding(self.dtype, self.policy, self.rounds, self.kernel, inside=True)

    def cast(self, a: np.ndarray) -> np.ndarray:
        """Each number rounded to the dtype (nearest even), no scale; float8_e4m3fn saturates.

        float32's numbers (a float32 accumulator's) go to bfloat16 and float8 straight, not by
        way of float64: ml_dtypes rounds both correctly, so the bits are the same, and the
        direct cast is several times faster. The dtype's own array is kept (`narrow`)."""
        a = np.asarray(a)
        if a.dtype != np.float32 or str(self.dtype) not in _STRAIGHT:
            a = np.asarray(a, dtype=np.float64)
        if str(self.dtype) == "float8_e4m3fn":  # no ∞: torch's cast clips to ±448 (NaN stays)
            top = self.largest()
            a = np.clip(a, -top, top)
        small = a.astype(self.dtype)
        wide = small.astype(np.float64)
        self._last = (wide, small)
        return wide

    def narrow(self, value: np.ndarray, dtype: np.dtype[Any]) -> np.ndarray:
        """`value`, which holds `dtype`'s numbers, as `dtype`: the dtype's own array of the last
        cast when `value` is what that cast gave (no second cast), else cast now (bfloat16 and
        float8 by way of float32, which holds their numbers exactly: the faster cast)."""
        last, self._last = self._last, None
        if last is not None and last[0] is value and last[1].dtype == dtype:
            return last[1]
        if value.dtype == np.float64 and str(dtype) in _STRAIGHT:
            return value.astype(np.float32).astype(dtype)
        return value.astype(dtype)

    def quantize(self, a: Any) -> tuple[np.ndarray, float]:
        """(q, s): a stored as s·q, q the dtype's numbers, s = max|a| / the dtype's largest
        finite number (in float32; 1 for a tensor of zeros). Exact: (a, 1)."""
        a = np.asarray(a, dtype=np.float64)
        if not self.rounds:
            return a, 1.0
        top = float(np.max(np.abs(a), where=np.isfinite(a), initial=0.0))
        s = float(np.float32(top / self.largest())) if top > 0 else 1.0
        return self.cast(a / s), s

    def to(self, a: Any) -> np.ndarray:
        """The dtype's number nearest each (round to nearest even), as float64; scaled float8:
        s·q, the tensor as stored."""
        if not self.rounds:
            return np.asarray(a, dtype=np.float64)
        if self.scaled:
            q, s = self.quantize(a)
            return q * s  # exact in float64 (a float32 times a float8)
        return self.cast(a)

    def keep(self, a: Any) -> np.ndarray:
        """A computed stage as it is kept: the dtype's numbers, float32's under scaled float8."""
        return self.f32(a) if self.scaled else self.to(a)

    def f32(self, a: Any) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        if not self.rounds:
            return a
        small = a.astype(np.float32)
        wide = small.astype(np.float64)
        self._last = (wide, small)  # float32's own array, for `narrow`
        return wide

    def work(self, a: Any) -> np.ndarray:
        """An operand as the float32 accumulator holds it (float64 when exact)."""
        return np.asarray(a, dtype=np.float32 if self.rounds else np.float64)

    def largest(self) -> float:
        import ml_dtypes

        return float(ml_dtypes.finfo(self.dtype).max)

    def finfo_min(self) -> float:
        """The most negative finite number of what a score is kept in (what transformers adds
        where masked): the dtype's, float32's under scaled float8."""
        import ml_dtypes

        return float(ml_dtypes.finfo(np.float32 if self.scaled else self.dtype).min)

    def stored(self, a: Any) -> Out:
        """A tensor as it is stored (the problem's own numbers): rounded, and under scaled
        float8 with its scale and a note that says it."""
        if not (self.scaled and self.rounds):
            return Out(self.to(a))
        q, s = self.quantize(a)
        note = Msg(
            "precision.fp8_stored", dtype=str(self.dtype), scale=_num(s), top=_num(self.largest())
        )
        return Out(q * s, scale=s, notes=(note,))


# the dtypes a float32 array is cast to directly (bit for bit what float64's cast gives them;
# not float16, whose NaNs would keep other payload bits)
_STRAIGHT = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def _num(x: float) -> str:
    return f"{x:.6g}".replace("-", "−")


class Out(NamedTuple):
    """A rule's result: the value (the dtype's numbers, or float32 where `stored` says so),
    what a renderer shows beside the rows (the row max, the row sum), the per-tensor scale the
    value is stored with (scaled float8; its units in the last place are s × the dtype's) and
    notes that say how it was rounded."""

    value: np.ndarray
    stored: str = ""  # "" = the dtype; "float32": a stage the kernel keeps in float32
    details: dict[str, np.ndarray] | None = None
    scale: float = 1.0
    notes: tuple[Msg, ...] = ()
    # parameters as the dtype held them, for the cell arithmetic (positions rounded, say)
    params: dict[str, Any] | None = None
    # the keys of the stage's own notes that the dtype's numbers make untrue (left out)
    drops: tuple[str, ...] = ()
    # a stage the model never forms (DiffLlama's Δ): how a product that reads it as its first
    # operand is computed instead, from that product's operands (the value of this one shown)
    product: Callable[[Sequence[np.ndarray], Rounding], Out] | None = None
    # a stage that chooses each query's keys (a sparse attention's top-k): the keys kept as the
    # dtype chose them ([n, m] bool), which every later mask applies in place of the float64 twin's
    keeps: np.ndarray | None = None
    # its −∞ cells are what it says (a mask of 0 and −∞ made from the keys kept), not a number
    # that overflowed: the summary's first non-finite cell is never one of them
    meant: bool = False


# Out.stored of a stage the tiled kernel keeps in float32 as its running state (FlashAttention's
# running maximum, sum and output): float32's numbers, said as the tiles' own
ACCUMULATOR = "float32 accumulator"
# Out.stored of a stage torch's softmax computes in float32 inside itself and never stores
# (e^(s − m) of softmax(…, dtype=the dtype) itself, as gpt-oss calls it)
INSIDE = "float32 inside softmax"

# Out.stored of a stage the model never forms, shown in float32 to be read (its product with
# the next operand is computed otherwise: Out.product); its own note says so
SHOWN = "float32, shown only"
# Out.stored of a stage a layer keeps in float32 by a cast of its own (a linear-attention
# layer's state): float32's numbers, and the rule's own note says why (the interpreter adds none)
SAID = "float32, the layer's own"

# (operands, params, rounding) -> the stage in the dtype
Rule = Callable[[Sequence[np.ndarray], Params, Rounding], Out]


def product(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, r: Rounding) -> Out:
    """[n, d] @ [d, e] (+ [e]) accumulated in float32, rounded once. Scaled float8: each
    operand read as s·q, the q's multiplied and summed in float32, then times s_A·s_B (and the
    bias added) in float32, the result kept in float32."""
    if r.scaled and r.rounds:
        (qa, sa), (qb, sb) = r.quantize(a), r.quantize(b)
        back = np.float32(sa) * np.float32(sb)
        acc = (r.work(qa) @ r.work(qb)) * back
        if bias is not None:
            acc = acc + r.work(r.to(bias))
        note = Msg("precision.fp8_product", dtype=str(r.dtype), a=_num(sa), b=_num(sb))
        return Out(r.f32(acc), r.kept, notes=(note,))
    acc = r.work(a) @ r.work(b)
    if bias is not None:
        acc = acc + r.work(r.to(bias))
    if r.inside:  # sdpa's Q·Kᵀ: the kernel's float32 accumulator, never rounded to the dtype
        return Out(r.f32(acc), "float32")
    return Out(r.to(acc), r.kept)


def rounded(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """The problem's own numbers, as they are stored in the dtype."""
    return r.stored(ops[0])


def moved(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """A stage that moves numbers already in the dtype (a copy): nothing to round."""
    return Out(ops[0].copy())
