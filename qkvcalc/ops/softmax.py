"""The softmax, computed stably in its parts: each row's maximum, e^(s − max), the row sum,
and each exponential divided by it. A row whose every key is masked gets weights 0."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Asked, Back, Candidate, Op, Params, whole_row
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Ref, Spec, d


def row_max(s: np.ndarray) -> np.ndarray:
    """The maximum of each row, 0 for a row whose every entry is −∞ (all keys masked)."""
    # [n, m] -> [n]
    top = np.max(s, axis=1, initial=-np.inf)
    top[np.isneginf(top)] = 0.0
    return top


def shifted_exp(s: np.ndarray, top: np.ndarray) -> np.ndarray:
    # [n, m] - [n, 1] -> [n, m]: each ≤ 1, so e^s cannot overflow; e^(−∞) = 0
    e = s - top[:, None]
    return np.exp(e, out=e)  # in the difference's own memory: one new [n, m], not two


def normalise(e: np.ndarray, row_sum: np.ndarray) -> np.ndarray:
    # [n, m] / [n, 1] -> [n, m]; a row that sums to 0 (every key masked) stays 0
    if row_sum.all():
        return e / row_sum[:, None]
    return np.divide(e, row_sum[:, None], out=np.zeros_like(e), where=row_sum[:, None] != 0)


def softmax_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stable softmax over each row, with its parts: (row max, e^(s − max), row sum, weights).

    A row whose every entry is −∞ (all keys masked) gets max 0, exponentials 0, sum 0 and
    weights 0 (what PyTorch's SDPA returns) instead of 0/0 = NaN."""
    top = row_max(s)
    e = shifted_exp(s, top)
    total = e.sum(axis=1)
    return top, e, total, normalise(e, total)


def _exp(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # e^(s − row max): [n, m]
    return shifted_exp(ops[0], row_max(ops[0]))


def _softmax(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] / [n, 1]: each exponential over its row's sum
    return normalise(ops[0], ops[0].sum(axis=1))


def _exp_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = e^(s − max s): ∂s_k = g_k·out_k, less Σ_j g_j·out_j at the row's maximum (the shift
    # moves with it); a masked cell (out 0) gets none
    grad = g * out
    top = np.argmax(ops[0], axis=1)
    rows = np.arange(out.shape[0])
    live = np.isfinite(ops[0][rows, top])
    grad[rows[live], top[live]] -= grad[live].sum(axis=1)
    return (grad,)


def _softmax_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = e / Σe per row: ∂e_k = (g_k − Σ_j g_j·out_j) / Σe (a row of zeros: no gradient)
    total = ops[0].sum(axis=1, keepdims=True)
    rowdot = (g * out).sum(axis=1, keepdims=True)
    return (np.divide(g - rowdot, total, out=np.zeros_like(g), where=total != 0),)


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def softmax_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """The softmax's backward as two stages: each row's r = Σⱼ Aᵢⱼ·dAᵢⱼ (the weighted average
    of dA, the baseline each key is compared with), then the gradient of the logits the softmax
    read, A ⊙ (dA − r). The exponentials are part of the softmax: they get no gradient of
    their own. A feature's softmax over more than the keys has the same backward over them."""
    h, a_ref = at.head, at.ref
    logits = back.by[back.by[at.operands[0]].operands[0]]  # what the exponentials read
    grad = back.by[g].symbol
    rowdot: Ref = ("softmax_rowdot", h)
    formula = f"{d(logits.symbol)} = {at.symbol} ⊙ ({grad} − r)"
    return [
        Spec(
            rowdot[0],
            h,
            "rowdot",
            (a_ref, g),
            f"r = Σⱼ {at.symbol}ᵢⱼ·{grad}ᵢⱼ",
            at.rows,
            ("r",),
            symbol="r",
            cell="r[{i}]",
            letters=at.letters.split("×")[0] + "×1",
            hint=("hint.grad_rowdot", {}),
        ),
        Spec(
            f"grad_{logits.id}",
            h,
            "softmax_back",
            (a_ref, g, rowdot),
            formula,
            logits.rows,
            logits.cols,
            topic=ids.TOPIC_GRAD_LOGITS,
            symbol=d(logits.symbol),
            letters=logits.letters,
            remarks=back.remarks(ids.TOPIC_GRAD_LOGITS, h),
            hint=("hint.grad_softmax", {}),
        ),
    ]


def _exp_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: e^(4.9497 − 4.9497) = 1; a masked score: e^(-∞) = 0."""
    at = style.at(i + 1, j + 1)
    logit = float(stage.operands[0][i, j])
    assert stage.row_max is not None
    if np.isneginf(logit) and np.isfinite(stage.row_max[i]):
        return f"{at}{style.exp(style.neg_inf)} = 0"
    top = float(stage.row_max[i])
    left = f"{at}{style.exp(f'{style.num(logit)} {style.minus} {style.num(top)}')}"
    shown = math.exp(style.shown(logit) - style.shown(top))
    return style.line(left, shown, float(stage.value[i, j]), result)


def _softmax_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[1,2]: 1 / 1.0067 = 0.9933; a row with every key masked has no division to show."""
    assert stage.row_sum is not None
    total = float(stage.row_sum[i])
    if total == 0:
        return None
    e = float(stage.operands[0][i, j])
    left = f"{style.at(i + 1, j + 1)}{style.divided(style.num(e), style.num(total))}"
    shown = style.shown(e) / style.shown(total)
    return style.line(left, shown, float(stage.value[i, j]), result)


# ---- the named mistakes the quiz looks for at its stages ----


def _exp_mistakes(asked: Asked) -> list[Candidate]:
    """e^s, without the row's maximum subtracted."""
    masked = asked.find(ids.MASKED, asked.stage.head) is not None
    source = ids.MASKED if masked else ids.SCALED
    msg = Msg("mistake.exp_not_shifted")
    with np.errstate(over="ignore"):
        return [("exp_not_shifted", msg, np.exp(s)) for s in asked.versions(source)]


def _columns(e: np.ndarray) -> np.ndarray:
    """e divided by its column sums (a column that sums to 0 stays 0)."""
    sums = e.sum(axis=0, keepdims=True)
    return np.divide(e, sums, out=np.zeros_like(e), where=sums != 0)


def _weights_mistakes(asked: Asked) -> list[Candidate]:
    """The softmax down each column; the mask left out or read the wrong way round (when the
    masked stage was not asked)."""
    from qkvcalc.ops.mask import apply_mask, mask_msgs, mask_variants

    masked = asked.find(ids.MASKED, asked.stage.head)
    logits = ids.MASKED if masked is not None else ids.SCALED
    empty = not np.all(np.any(asked.stage.value != 0, axis=1))  # a row whose keys are all masked
    columns = Msg("mistake.softmax_columns_empty" if empty else "mistake.softmax_columns")
    found: list[Candidate] = [
        ("softmax_columns", columns, _columns(e)) for e in asked.versions(ids.EXP)
    ]
    for s in asked.versions(logits):
        # softmax down each column: subtract each column's max, exponentiate, divide by the sum
        col_max = np.max(s, axis=0, initial=-np.inf, keepdims=True)
        col_max[np.isneginf(col_max)] = 0.0
        found.append(("softmax_columns", columns, _columns(np.exp(s - col_max))))
    if masked is not None and masked.allowed is not None:
        missing, inverted = mask_msgs(asked.problem, masked.allowed)
        for s in asked.versions(ids.SCALED):
            found.append(("mask_missing", missing, softmax_parts(s)[3]))
            for wrong in mask_variants(asked.problem, masked.allowed):
                found.append(("mask_inverted", inverted, softmax_parts(apply_mask(s, wrong))[3]))
    return found


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_exp(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    s = ops[0]
    top = np.max(s, axis=1)  # as torch takes it: −∞ for a row of −∞ (then e^(−∞ − (−∞)) is NaN)
    if r.policy == "naive":  # s − max rounded, e^ rounded: each op in the dtype
        e = r.to(np.exp(r.to(s - top[:, None])))
        return Out(e, details={"row_max": top})
    if r.policy == "sdpa":  # the kernel: a row whose every key is masked gets e = 0
        dead = np.isneginf(top)
        shift = np.where(dead, 0.0, top)
        e = r.f32(np.exp(np.asarray(r.work(s) - r.work(shift)[:, None], dtype=np.float64)))
        e[dead] = 0.0
        return Out(e, "float32", {"row_max": top})
    # eager, softmax(dtype=float32): s − max in float32, e^ of it rounded to float32
    e = r.f32(np.exp(np.asarray(r.work(s) - r.work(top)[:, None], dtype=np.float64)))
    return Out(e, "float32", {"row_max": top})


def _lowp_softmax(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    e = ops[0]
    if r.policy == "naive":  # the row sum accumulated in float32 and rounded, then divided
        total = r.to(r.work(e).sum(axis=1))
        return Out(r.to(e / total[:, None]), details={"row_sum": total})
    total = r.f32(r.work(e).sum(axis=1))
    if r.policy == "sdpa":  # never stored: float32, and 0 for a row whose every key is masked
        inverse = np.divide(1.0, total, out=np.zeros_like(total), where=total != 0)
        inverse = r.f32(inverse)
        # the flash kernel rounds e^(s − max) to the dtype before P·V (and divides after)
        kept = r.to(e) if r.kernel == "flash" else e
        weights = r.f32(r.work(kept) * r.work(inverse)[:, None])
        return Out(weights, "float32", details={"row_sum": total})
    inverse = r.f32(1 / total) if r.rounds else 1 / total  # torch multiplies by 1/Σ
    weights = r.keep(r.f32(r.work(e) * r.work(inverse)[:, None]))
    return Out(weights, r.kept, details={"row_sum": total})


# ---- the mistakes a person's code makes here (qkvcalc check: its pipeline's steps, replaced) ----


def _column_exp(s: np.ndarray) -> np.ndarray:
    top = np.max(s, axis=0, keepdims=True)  # each column's maximum: softmax(s, axis=0)
    return np.exp(s - np.where(np.isfinite(top), top, 0.0))


def _column_normalise(e: np.ndarray) -> np.ndarray:
    total = e.sum(axis=0, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


# ---- in PyTorch (--format torch): as the numpy above, a fully masked row 0 ----

TORCH_NORMALISE = """\
def normalise(e, total):
    \"\"\"e / its row's total; a row whose total is 0 (every key masked) stays 0.\"\"\"
    total = total[:, None]
    return torch.where(total != 0, e / torch.where(total != 0, total, 1.0), 0.0)
"""
_TORCH_EXP = """\
def shifted_exp(s):
    \"\"\"e^(s - the row's max); a row of -inf (every key masked) is shifted by 0.\"\"\"
    top = s.max(dim=1, keepdim=True).values
    return torch.exp(s - torch.where(torch.isneginf(top), 0.0, top))
"""


OPS: tuple[Op, ...] = (
    Op(
        "exp",
        _exp,
        whole_row,
        rowwise=True,
        overflow=lambda p: False,
        exact_stops="note.exact_stops",
        details=lambda ops, params: {"row_max": row_max(ops[0])},
        backward=_exp_back,
        work=_exp_work,
        mistake_ids=("exp_not_shifted",),
        mistakes=_exp_mistakes,
        lowp=_lowp_exp,
        # e^s without subtracting the row maximum: large scores overflow to inf/inf = NaN
        in_code={"no_max_shift": {"exp": np.exp}},
        torch=lambda params, names, lit: f"shifted_exp({names[0]})",
        torch_defs=_TORCH_EXP,
    ),
    Op(
        "softmax",
        _softmax,
        whole_row,
        rowwise=True,
        overflow=lambda p: False,
        details=lambda ops, params: {"row_sum": ops[0].sum(axis=1)},
        divisor=lambda ops: ops[0].sum(axis=1),
        heat=True,
        backward=_softmax_back,
        work=_softmax_work,
        mistake_ids=("softmax_columns", "mask_missing", "mask_inverted"),
        mistakes=_weights_mistakes,
        lowp=_lowp_softmax,
        plan_back=softmax_grads,
        in_code={
            # softmax down each column (dim=0) instead of along each row
            "softmax_axis": {"exp": _column_exp, "normalise": _column_normalise},
            # a fully masked row: 0/0 = NaN
            "masked_row_nan": {"normalise": lambda e: e / e.sum(axis=1, keepdims=True)},
        },
        torch=lambda params, names, lit: f"normalise({names[0]}, {names[0]}.sum(dim=1))",
        torch_defs=TORCH_NORMALISE,
    ),
)
