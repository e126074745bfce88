"""Attention in tiles (FlashAttention's online softmax): a block's scores, its maximum, the
running maximum, the correction e^(m_old − m_new), the block's exponentials, the running sum,
the unnormalised output and the final division. No stage holds a whole row."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Feeds, Literals, Op, Params, Shapes, rows_of, whole_row
from qkvcalc.ops.rounding import ACCUMULATOR, Out, Rounding, product
from qkvcalc.ops.softmax import TORCH_NORMALISE, normalise


def _block(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] -> [n, B]: the scores of this block's keys
    return ops[0][:, params["cols"]]


def _block_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, params["cols"].start + j


def _exact_columns_of_block(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.columns(ops[0], params["cols"]), ()


def _max_keep_inf(s: np.ndarray) -> np.ndarray:
    # [n, B] -> [n, 1]: −∞ when every key of the row is masked (so far)
    return np.max(s, axis=1, initial=-np.inf, keepdims=True)


def _block_max(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return _max_keep_inf(ops[0])


NEG_INF = float("-inf")


def _exact_max(values: Sequence[Any]) -> Any:
    from fractions import Fraction

    cells = list(values)
    if not all(isinstance(c, Fraction) or c == NEG_INF for c in cells):
        return None
    return max(cells, default=NEG_INF)


def _exact_block_max(ops: Sequence[Any], params: Params) -> Any:
    value = tuple((_exact_max(row),) for row in ops[0])
    return (value if all(r[0] is not None for r in value) else None), ()


def _running_max(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # m_b = max(m_{b−1}, the block's max): [n, 1]
    return ops[0].copy() if len(ops) == 1 else np.maximum(ops[0], ops[1])


def _pairwise(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((k, i, 0) for k in range(len(shapes)))


def _exact_running_max(ops: Sequence[Any], params: Params) -> Any:
    value = tuple((_exact_max([row[0] for row in rows]),) for rows in zip(*ops, strict=True))
    return (value if all(r[0] is not None for r in value) else None), ()


def correction(m_old: np.ndarray, m_new: np.ndarray) -> np.ndarray:
    """e^(m_old − m_new): what the earlier sum and output are multiplied by when the running
    maximum grows (1 when it did not; 0 before the first key, m_old = −∞)."""
    # [n, 1], each in [0, 1]; −∞ − (−∞) (no key seen yet) counts as "did not grow"
    same = m_old == m_new
    return np.where(same, 1.0, np.exp(np.where(same, 0.0, m_old - m_new)))


def _correction(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    if len(ops) == 1:  # the first block: before it m = −∞, so nothing to rescale
        return np.zeros_like(ops[0])
    return correction(ops[0], ops[1])


def _finite(m: np.ndarray) -> np.ndarray:
    # a running max of −∞ (every key masked so far) shifts by 0: e^(−∞ − 0) = 0
    return np.where(np.isneginf(m), 0.0, m)


def _block_exp(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # e^(s − m_b): [n, B] − [n, 1] -> [n, B], each ≤ 1
    return np.exp(ops[0] - _finite(rows_of(ops[1], rows)))


def _block_exp_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, 0


def _running_sum(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # ℓ_b = ℓ_{b−1}·e^(m_{b−1} − m_b) + Σ e^(s − m_b): [n, 1]
    if len(ops) == 1:
        return ops[0].sum(axis=1, keepdims=True)
    total, fix, e = ops
    return total * fix + e.sum(axis=1, keepdims=True)


def _running_sum_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    if len(shapes) == 3:
        yield 0, i, 0
        yield 1, i, 0
    last = len(shapes) - 1
    yield from ((last, i, t) for t in range(shapes[last][1]))


def _acc(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # acc_b = acc_{b−1}·e^(m_{b−1} − m_b) + E_b·V_b: [n, d_v] (not yet divided by ℓ)
    *before, e, v = ops
    fresh = e @ v[params["rows"]]
    if not before:
        return fresh
    acc, fix = before
    return acc * fix + fresh


def _acc_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    first = 0
    if len(shapes) == 4:
        yield 0, i, j
        yield 1, i, 0
        first = 2
    yield from ((first, i, t) for t in range(shapes[first][1]))
    rows = params["rows"]
    yield from ((first + 1, r, j) for r in range(rows.start, rows.stop))


def _divide(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # acc / ℓ: [n, d_v] / [n, 1]; a row with every key masked (ℓ = 0) stays 0
    return normalise(ops[0], ops[1][:, 0])


def _divide_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, 0


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _block_max_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: max(0.5, 1.2) = 1.2"""
    (s,) = stage.operands
    left = f"{style.at(i + 1, j + 1)}max({style.max_of(s[i])})"
    shown = max(style.shown(float(v)) for v in s[i])
    return style.line(left, shown, float(stage.value[i, j]), result)


def _running_max_work(
    stage: Any, i: int, j: int, style: Any, exact: Any, result: str
) -> str | None:
    """[1,1]: max(m₁ = 0.7, 1.2) = 1.2"""
    if len(stage.operands) == 1:  # the first block: m₁ is its maximum, nothing to compare
        return None
    old, new = (float(o[i, 0]) for o in stage.operands)
    left = f"{style.at(i + 1, j + 1)}max({style.num(old)}, {style.num(new)})"
    shown = max(style.shown(old), style.shown(new))
    return style.line(left, shown, float(stage.value[i, j]), result)


def _correction_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[1,1]: e^(0.7 − 1.2) = 0.6065 (1 when the maximum did not grow). Before the first key
    of a row there is nothing to rescale: e^(-∞) = 0 for the first block, whatever its maximum
    (−∞ too, when all its keys are masked), and no line while the maximum stays −∞."""
    at = style.at(i + 1, j + 1)
    value = float(stage.value[i, j])
    if len(stage.operands) == 1:
        new = float(stage.operands[0][i, 0])
        if np.isneginf(new):
            return f"{at}{style.exp(style.neg_inf)} = 0"
        left = f"{at}{style.exp(f'{style.neg_inf} {style.minus} {style.num(new)}')}"
        return style.line(left, 0.0, value, result)
    old, newest = (float(o[i, 0]) for o in stage.operands)
    if np.isneginf(newest):  # every key so far masked: e^(−∞ − −∞) is not a number
        return None
    left = f"{at}{style.exp(f'{style.num(old)} {style.minus} {style.num(newest)}')}"
    return style.line(left, math.exp(style.shown(old) - style.shown(newest)), value, result)


def _block_exp_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: e^(0.3 − 1.2) = 0.4066; a masked score: e^(-∞) = 0. A score shifted by its row's
    number, [n, 1]: the tiles' running maximum (block_exp), or the log-sum-exp L (block_p)."""
    s, m = stage.operands
    at = style.at(i + 1, j + 1)
    if np.isneginf(s[i, j]):
        return f"{at}{style.exp(style.neg_inf)} = 0"
    score, top = float(s[i, j]), float(m[i, 0])
    inner = f"{style.num(score)} {style.minus} {style.factor(top)}"
    shown = math.exp(style.shown(score) - style.shown(top))
    return style.line(f"{at}{style.exp(inner)}", shown, float(stage.value[i, j]), result)


def _running_sum_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """ℓ₂[1] = ℓ₁·e^(m₁−m₂) + Σ e^(s−m₂) = 1.5×0.6065 + (0.4066 + 1) = 2.3164"""
    e = stage.operands[-1][i]
    b = stage.block or 1
    value = float(stage.value[i, j])
    total = " + ".join(style.num(float(v)) for v in e)
    fresh = sum(style.shown(float(v)) for v in e)
    if style.latex:
        ell, m, times = (lambda k: rf"\ell_{{{k}}}"), (lambda k: f"m_{{{k}}}"), r" \cdot "
        sums = rf"\sum e^{{s - {m(b)}}}"
        carried = rf"{ell(b - 1)}{times}e^{{{m(b - 1)} - {m(b)}}}"
    else:
        ell, m, times = (lambda k: "ℓ" + style.sub(k)), (lambda k: "m" + style.sub(k)), "·"
        sums = f"Σ e^(s−{m(b)})"
        carried = f"{ell(b - 1)}{times}e^({m(b - 1)}−{m(b)})"
    if len(stage.operands) == 1:
        return style.line(f"{ell(b)}[{i + 1}] = {sums} = {total}", fresh, value, result)
    old, fix = (float(o[i, 0]) for o in stage.operands[:2])
    said = f"{style.num(old)}{style.times}{style.num(fix)} + ({total})"
    shown = style.shown(old) * style.shown(fix) + fresh
    return style.line(f"{ell(b)}[{i + 1}] = {carried} + {sums} = {said}", shown, value, result)


def _acc_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 2.1×0.6065 + (0.4066×1 + 1×0) = 1.6737"""
    *before, e, v = stage.operands
    rows = stage.params["rows"]
    fresh, total = style.products(e[i], v[rows, j])
    value = float(stage.value[i, j])
    if not before:
        return style.line(f"{style.at(i + 1, j + 1)}{fresh}", total, value, result)
    acc, fix = float(before[0][i, j]), float(before[1][i, 0])
    kept = f"{style.factor(acc)}{style.times}{style.num(fix)}"
    shown = style.shown(acc) * style.shown(fix) + total
    return style.line(f"{style.at(i + 1, j + 1)}{kept} + ({fresh})", shown, value, result)


def _divide_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[1,1]: 3.2 / 2.15 = 1.4884"""
    acc, total = stage.operands
    if total[i, 0] == 0:
        return None
    a, t = float(acc[i, j]), float(total[i, 0])
    left = f"{style.at(i + 1, j + 1)}{style.divided(style.num(a), style.num(t))}"
    shown = style.shown(a) / style.shown(t)
    return style.line(left, shown, float(stage.value[i, j]), result)


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----
#
# eager and sdpa: as FlashAttention keeps its state, the running maximum, the correction, the
# exponentials, the running sum and the output so far in float32 (ACCUMULATOR), e^(s − m)
# rounded to the dtype only where the product E·V reads it (not under torch's math kernel,
# which keeps everything in float32), and the output rounded to the dtype once, at the end.
# naive: the same loop written with tensors in the dtype, every result rounded to the dtype.


def _logits_kept(r: Rounding) -> str:
    # what the logits are kept in (a block's columns and maxima move them, exactly)
    return "float32" if r.policy == "sdpa" else r.kept


def _lowp_moved(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # a block's columns, a row's maximum, the larger of two: numbers already held, none rounded
    if len(ops) == 2:
        return Out(np.maximum(ops[0], ops[1]), _logits_kept(r))
    value = ops[0][:, params["cols"]] if "cols" in params else _max_keep_inf(ops[0])
    return Out(value, _logits_kept(r))


def _flash(r: Rounding) -> bool:
    return r.policy != "naive"


def _held(r: Rounding, a: np.ndarray) -> np.ndarray:
    """A result as the tiles keep it: float32 (FlashAttention's state), or the dtype (naive)."""
    return r.f32(a) if _flash(r) else r.to(a)


def _lowp_correction(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    if len(ops) == 1:
        return Out(np.zeros_like(ops[0]), ACCUMULATOR if _flash(r) else "")
    old, new = ops
    same = old == new
    shift = _held(r, np.where(same, 0.0, old - new))
    return Out(np.where(same, 1.0, _held(r, np.exp(shift))), ACCUMULATOR if _flash(r) else "")


def _lowp_block_exp(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    s, m = ops
    e = _held(r, np.exp(_held(r, s - _finite(m))))
    return Out(e, ACCUMULATOR if _flash(r) else "")


def _lowp_running_sum(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # Σ e^(s − m) accumulated in float32 (torch's sum of a bf16 row too), then held
    fresh = _held(r, r.work(ops[-1]).sum(axis=1, keepdims=True))
    if len(ops) == 1:
        return Out(fresh, ACCUMULATOR if _flash(r) else "")
    total, fix, _ = ops
    value = _held(r, _held(r, total * fix) + fresh)
    return Out(value, ACCUMULATOR if _flash(r) else "")


def _lowp_acc(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # E·V[block]: the exponentials rounded to the dtype first (FlashAttention's P before P·V;
    # not under torch's math kernel), accumulated in float32
    *before, e, v = ops
    if r.scaled and r.rounds:  # FP8: the product as every other one, per-tensor scaled
        fresh = product(e, v[params["rows"]], None, r).value
    else:
        if _flash(r) and r.kernel != "math":
            e = r.to(e)
        fresh = _held(r, r.work(e) @ r.work(v[params["rows"]]))
    if not before:
        return Out(fresh, ACCUMULATOR if _flash(r) else "")
    acc, fix = before
    return Out(_held(r, _held(r, acc * fix) + fresh), ACCUMULATOR if _flash(r) else "")


def _lowp_divide(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    acc, total = ops[0], ops[1][:, 0]
    if not _flash(r):  # O / ℓ, rounded
        return Out(r.to(normalise(acc, total)))
    # FlashAttention: 1/ℓ in float32, O times it in float32, rounded to the dtype once
    inverse = np.divide(1.0, total, out=np.zeros_like(total), where=total != 0)
    return Out(r.keep(r.work(acc) * r.work(r.f32(inverse))[:, None]), r.kept)


# ---- in PyTorch (--format torch): each block's step as the numpy above ----

_TORCH_CORRECTION = """\
def correction(m_old, m_new):
    \"\"\"e^(m_old - m_new), 1 where the running max did not grow (-inf to -inf too).\"\"\"
    same = m_old == m_new
    return torch.where(same, 1.0, torch.exp(torch.where(same, 0.0, m_old - m_new)))
"""


def _torch_running_max(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"{names[0]}.clone()" if len(names) == 1 else f"torch.maximum({names[0]}, {names[1]})"


def _torch_correction(params: Params, names: Sequence[str], lit: Literals) -> str:
    if len(names) == 1:
        return f"torch.zeros_like({names[0]})"
    return f"correction({names[0]}, {names[1]})"


def _torch_running_sum(params: Params, names: Sequence[str], lit: Literals) -> str:
    if len(names) == 1:
        return f"{names[0]}.sum(dim=1, keepdim=True)"
    return f"{names[0]} * {names[1]} + {names[2]}.sum(dim=1, keepdim=True)"


def _torch_acc(params: Params, names: Sequence[str], lit: Literals) -> str:
    *before, e, v = names
    fresh = f"{e} @ {v}[{lit.index(params['rows'])}]"
    return fresh if not before else f"{before[0]} * {before[1]} + {fresh}"


def _torch_block_exp(params: Params, names: Sequence[str], lit: Literals) -> str:
    m = names[1]
    return f"torch.exp({names[0]} - torch.where(torch.isneginf({m}), 0.0, {m}))"


OPS: tuple[Op, ...] = (
    Op(
        "block",
        _block,
        _block_feeds,
        _exact_columns_of_block,
        overflow=lambda p: False,
        lowp=_lowp_moved,
        torch=lambda params, names, lit: f"{names[0]}[:, {lit.index(params['cols'])}]",
    ),
    Op(
        "block_max",
        _block_max,
        whole_row,
        _exact_block_max,
        overflow=lambda p: False,
        work=_block_max_work,
        lowp=_lowp_moved,
        torch=lambda params, names, lit: f"{names[0]}.max(dim=1, keepdim=True).values",
    ),
    Op(
        "running_max",
        _running_max,
        _pairwise,
        _exact_running_max,
        overflow=lambda p: False,
        work=_running_max_work,
        lowp=_lowp_moved,
        torch=_torch_running_max,
    ),
    Op(
        "correction",
        _correction,
        _pairwise,
        overflow=lambda p: False,
        exact_stops="note.exact_stops",
        work=_correction_work,
        lowp=_lowp_correction,
        torch=_torch_correction,
        torch_defs=_TORCH_CORRECTION,
    ),
    Op(
        "block_exp",
        _block_exp,
        _block_exp_feeds,
        rowwise=True,
        overflow=lambda p: False,
        work=_block_exp_work,
        lowp=_lowp_block_exp,
        torch=_torch_block_exp,
    ),
    Op(
        "running_sum",
        _running_sum,
        _running_sum_feeds,
        overflow=lambda p: False,
        work=_running_sum_work,
        lowp=_lowp_running_sum,
        torch=_torch_running_sum,
    ),
    Op("acc", _acc, _acc_feeds, work=_acc_work, lowp=_lowp_acc, torch=_torch_acc),
    Op(
        "divide",
        _divide,
        _divide_feeds,
        overflow=lambda p: False,
        divisor=lambda ops: ops[1][:, 0],  # ℓ: 0 where every key is masked
        work=_divide_work,
        lowp=_lowp_divide,
        torch=lambda params, names, lit: f"normalise({names[0]}, {names[1]}[:, 0])",
        torch_defs=TORCH_NORMALISE,
    ),
)
