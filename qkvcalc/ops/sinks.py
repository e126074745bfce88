"""Attention sinks (gpt-oss): one extra logit σ_h per head joins every row's softmax as a column
of its own, takes its share of the weight, and is dropped after the division, so a query may
give part of its attention to nothing at all instead of forcing it onto some token.

    "sinks": [σ_1, …, σ_H]

    m   = max(max_j s_j, σ)                  the row maximum over the scores and the sink
    E   = e^(s − m), and e^(σ − m) in a column of its own (stage `exp`, one column more)
    A_j = e^(s_j − m) / (Σ_j e^(s_j − m) + e^(σ − m))        (stage `weights`)

A row of weights sums to 1 − (the sink's share). A query whose every key is masked gives all
of it to the sink: weights 0, no 0/0. In tiles the online softmax starts from the sink
(m₀ = σ, ℓ₀ = e^0 = 1, the output so far 0), and its backward reads the sink's share of a row
as e^(σ − LSE), LSE = m + log ℓ the log-sum-exp the forward saved.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import to_vector
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Reading, Sizes
from qkvcalc.ops.op import Feeds, Op, Params, Shapes, whole_row
from qkvcalc.ops.rounding import INSIDE, Out, Rounding
from qkvcalc.ops.softmax import softmax_grads
from qkvcalc.plan.specs import Ref, Spec, dim_labels


def _read(raw: Any, sizes: Sizes) -> np.ndarray:
    sinks = to_vector(raw, "sinks").values[0]
    if sinks.size != sizes.heads:
        raise QkvcalcError("sinks.count", count=int(sinks.size), heads=sizes.heads)
    return sinks


def joined_exp(s: np.ndarray, sink: float) -> tuple[np.ndarray, np.ndarray]:
    """e^(s − m) with the sink's e^(σ − m) as one more column, and m, the maximum of each row
    over its scores and the sink (finite, since σ is)."""
    # [n, m], scalar -> [n, m + 1], [n]
    top = np.maximum(np.max(s, axis=1, initial=-np.inf), sink)
    return np.hstack([np.exp(s - top[:, None]), np.exp(sink - top)[:, None]]), top


def _exp(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return joined_exp(ops[0], params["sink"])[0]


def _weights(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m + 1] -> [n, m]: every exponential over the row's sum, the sink's column dropped
    e = ops[0]
    return e[:, :-1] / e.sum(axis=1, keepdims=True)  # the sum holds e^(σ − m) > 0: never 0


def _exp_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: e^(1.5 − 2) = 0.6065; the sink's column: e^(σ − max) = e^(2 − 2) = 1."""
    at = style.at(i + 1, j + 1)
    row_max = float(stage.row_max[i])
    top = style.num(row_max)
    (s,) = stage.operands
    value = float(stage.value[i, j])
    if j == s.shape[1]:  # the sink's own column
        sink = style.num(stage.params["sink"])
        shown = math.exp(style.shown(stage.params["sink"]) - style.shown(row_max))
        return style.line(f"{at}{style.exp(f'{sink} {style.minus} {top}')}", shown, value, result)
    logit = float(s[i, j])
    if np.isneginf(logit):
        return f"{at}{style.exp(style.neg_inf)} = 0"
    shown = math.exp(style.shown(logit) - style.shown(row_max))
    left = f"{at}{style.exp(f'{style.num(logit)} {style.minus} {top}')}"
    return style.line(left, shown, value, result)


def _weights_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.6065 / 2.2131 = 0.2741 (the sum holds the sink's e^(σ − max))."""
    (e,) = stage.operands
    exp, total = float(e[i, j]), float(stage.row_sum[i])
    cell = style.divided(style.num(exp), style.num(total))
    shown = style.shown(exp) / style.shown(total)
    return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, float(stage.value[i, j]), result)


def _softmax(
    p: Any, sinks: np.ndarray, exp: Spec, weights: Spec, reading: Reading
) -> tuple[Spec, Spec]:
    sink = float(sinks[(exp.head or 1) - 1])
    said = f"{sink:g}"
    joined = replace(
        exp,
        op="sink_exp",
        formula="e^(s − m), e^(σ − m)",
        cols=(*exp.cols, "σ"),
        params={**exp.params, "sink": sink},
        notes=(*exp.notes, Msg("note.sinks", sink=said, head=exp.head or 1)),
        letters="{}×({}+1)".format(*exp.letters.split("×")),
        hint=("hint.sink_exp", {"src": exp.hint[1]["src"] if exp.hint else "S+M"}),
    )
    # the reading line of each query: its keys' shares and the sink's, from the joined row
    read = reading(exp.ref, ("σ",)) if weights.remarks is not None else None
    divided = replace(
        weights,
        op="sink_softmax",
        formula="A = e^(s − m) / (Σ e^(s − m) + e^(σ − m))",
        topic="weights.sinks",  # its rows no longer add up to 1: a "why" of its own
        notes=(*weights.notes, Msg("note.sinks_weights")),
        remarks=read if read is not None else weights.remarks,
    )
    return joined, divided


def _shift_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The row maximum taken over the scores alone, the sink left out of it (the same as the
    truth where no sink is above its row's scores)."""
    sink = stage.params["sink"]
    found: list[Candidate] = []
    for s in versions(stage.reads[0][0]):
        top = np.max(s, axis=1, initial=-np.inf)[:, None]
        wrong = np.hstack([np.exp(s - top), np.exp(sink - top)])
        found.append(("sink_max_forgotten", Msg("mistake.sink_max_forgotten"), wrong))
    return found


def _weights_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The plain softmax: the keys' exponentials over their own sum, the sink's left out."""
    found: list[Candidate] = []
    for e in versions(stage.reads[0][0]):
        keys = e[:, :-1]
        total = keys.sum(axis=1, keepdims=True)
        plain = np.divide(keys, total, out=np.zeros_like(keys), where=total != 0)
        found.append(("sink_left_out", Msg("mistake.sink_left_out"), plain))
    return found


def _grad(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # dσ_h = −Σᵢ (1 − Σⱼ A_h[i, j])·r_h[i]: the sink's share of each row times the row's term of
    # the softmax backward, [1, H] from each head's weights and row terms
    pairs = zip(ops[::2], ops[1::2], strict=True)
    return np.array([[-float(((1 - a.sum(axis=1)) * r[:, 0]).sum()) for a, r in pairs]])


def _grad_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    a, r = 2 * j, 2 * j + 1
    for t in range(shapes[a][0]):
        yield from ((a, t, c) for c in range(shapes[a][1]))
        yield r, t, 0


def _grad_tiles(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # in tiles no stage holds the weights: the sink's share of row i is e^(σ_h − Lᵢ), L the
    # log-sum-exp the forward saved (its sum started at the sink's e^0), and rᵢ is Dᵢ
    pairs = zip(ops[::2], ops[1::2], strict=True)
    sinks = params["sinks"]
    shares = [(np.exp(s - lse[:, 0]), r[:, 0]) for s, (lse, r) in zip(sinks, pairs, strict=True)]
    return np.array([[-float((share * r).sum()) for share, r in shares]])


def _grad_tiles_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for t in range(shapes[2 * j][0]):
        yield 2 * j, t, 0
        yield 2 * j + 1, t, 0


def _grads(p: Any, sinks: np.ndarray, softmaxes: list[tuple[Ref, Ref]]) -> list[Spec]:
    """dσ: one number per head, from its weights and its softmax's row term — or, in tiles
    (FlashAttention-2's backward), from its log-sum-exp L and D = rowsum(dO ⊙ O), the pairs
    the backward then gives."""
    tiled = p.tiles is not None
    return [
        Spec(
            "grad_sinks",
            None,
            "sink_grad_tiles" if tiled else "sink_grad",
            tuple(ref for pair in softmaxes for ref in pair),
            "dσ_h = −Σᵢ e^(σ_h − LSEᵢ)·Dᵢ" if tiled else "dσ_h = −Σᵢ (1 − Σⱼ Aᵢⱼ)·rᵢ",
            ("dσ",),
            dim_labels(len(softmaxes)),
            params={"sinks": tuple(float(v) for v in sinks)} if tiled else {},
            symbol="dσ",
            cell="dσ[{j}]",
            letters="1×H",
        )
    ]


def _torch(sinks: np.ndarray, literal: Callable[[Any], str]) -> list[str]:
    return [
        f"sink_logits = t({literal(sinks)})  # one per head",
        "sinks = sink_logits.view(1, -1, 1, 1).expand(1, -1, n, 1)",
        "# the sink joins each row's softmax as one more column, dropped after it",
        "weights = torch.softmax(torch.cat([scores, sinks], dim=-1), dim=-1)[..., :-1]",
    ]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_exp(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """gpt-oss's eager attention: σ (a parameter in the dtype) joins the row, the row's max is
    subtracted in the dtype (rounded), then softmax(…, dtype=the dtype) takes e^ of that in
    float32 inside itself. naive: e^ of it rounded to the dtype too."""
    sink = float(r.to(params["sink"]))
    joined = np.hstack([ops[0], np.full((len(ops[0]), 1), sink)])
    top = np.max(joined, axis=1)  # finite: σ is
    shifted = r.keep(joined - top[:, None])
    held = {"sink": sink}  # the cell arithmetic shows σ as the dtype holds it
    if r.policy == "naive":
        return Out(r.to(np.exp(shifted)), details={"row_max": top}, params=held)
    note = Msg("precision.sinks_eager", dtype=r.kept or str(r.dtype))
    e = r.f32(np.exp(np.asarray(r.work(shifted), dtype=np.float64)))
    return Out(e, INSIDE, {"row_max": top}, notes=(note,), params=held)


def _lowp_weights(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    e = ops[0]
    if r.policy == "naive":  # the row sum accumulated in float32 and rounded, then divided
        total = r.to(r.work(e).sum(axis=1))
        return Out(r.to(e[:, :-1] / total[:, None]), details={"row_sum": total})
    total = r.f32(r.work(e).sum(axis=1))  # softmax's float32 sum, times 1/Σ, then rounded
    inverse = r.f32(1 / total) if r.rounds else 1 / total
    weights = r.keep(r.f32(r.work(e[:, :-1]) * r.work(inverse)[:, None]))
    return Out(weights, r.kept, details={"row_sum": total})


# ---- in PyTorch (--format torch) ----

_TORCH_EXP = """\
def joined_exp(s, sink):
    \"\"\"e^(s - top) with the sink's e^(sink - top) as one more column, top over both.\"\"\"
    top = torch.clamp(s.max(dim=1).values, min=sink)
    return torch.hstack([torch.exp(s - top[:, None]), torch.exp(sink - top)[:, None]])
"""


FEATURE = Feature(
    name="sinks",
    read=_read,
    ops=(
        Op(
            "sink_exp",
            _exp,
            whole_row,
            rowwise=True,
            overflow=lambda params: False,
            exact_stops="note.exact_stops_sinks",
            details=lambda ops, params: {"row_max": joined_exp(ops[0], params["sink"])[1]},
            work=_exp_work,
            lowp=_lowp_exp,
            torch=lambda params, names, lit: f"joined_exp({names[0]}, {lit.num(params['sink'])})",
            torch_defs=_TORCH_EXP,
        ),
        Op(
            "sink_softmax",
            _weights,
            whole_row,
            rowwise=True,
            overflow=lambda params: False,
            details=lambda ops, params: {"row_sum": ops[0].sum(axis=1)},
            divisor=lambda ops: ops[0].sum(axis=1),  # holds e^(σ − m) > 0: never 0
            heat=True,
            work=_weights_work,
            lowp=_lowp_weights,
            plan_back=softmax_grads,  # A ⊙ (dA − r) over the tokens' weights; dσ is grad_sinks,
            torch=lambda params, names, lit: (
                f"{names[0]}[:, :-1] / {names[0]}.sum(dim=1, keepdim=True)"
            ),
        ),
        Op("sink_grad", _grad, _grad_feeds),
        Op("sink_grad_tiles", _grad_tiles, _grad_tiles_feeds),
    ),
    softmax=_softmax,
    grads=_grads,
    tiles_start=lambda sinks, h: (float(sinks[(h or 1) - 1]), 1.0),
    mistakes=(
        Mistakes("sink_exp", ("sink_max_forgotten",), _shift_mistakes),
        Mistakes("sink_softmax", ("sink_left_out",), _weights_mistakes),
    ),
    header=lambda sinks: [("ui.variant.sinks", {})],
    echo=lambda sinks: sinks.tolist(),
    worksheet_notes=("note.sinks", "note.sinks_weights", "note.exact_stops_sinks"),
    torch_softmax=_torch,
    torch_leaf=("dsigma", "sink_logits"),
    torch_module_gap="it has no attention sinks: each row of its weights sums to 1",
    no_sdpa=True,
)
