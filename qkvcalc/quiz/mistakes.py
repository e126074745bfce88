"""Named mistakes: a wrong stage matrix matched against the classic mistakes of attention by hand.

Each classic mistake leaves a fingerprint in the numbers. For the stage a student got wrong,
every mistake that could be made there is worked out as a matrix, from the student's own
inputs to that stage (so a mistake on top of an earlier one is still recognised) and from the
true inputs. A mistake is named only when it is unambiguous:

- every answered cell of the student's matrix agrees with that mistake's matrix (to the quiz's
  precision), and at least one of those cells differs from the true value, and
- no other mistake's matrix fits the answers as well: then nothing is named. One exception:
  when d_model = d_k² (4 and 2), dividing by √d_model and by d_k are the same division; it is
  named scale_sqrt_d_model, and the sentence says that it is d_k as well.

A matrix with a slip on top of the mistake is not named either: the grader's cell-by-cell
verdicts still say which cells are wrong.

The mistakes (stable ids, used by the JSON report; sentences in the catalogs, key
`mistake.<id>`), each worked out by its op's module (Op.mistakes in qkvcalc/ops/: projection,
transpose, scale, mask, softmax, grads):

    q, k, v    weight_transposed     X·Wᵀ instead of X·W (square W)
               weight_torch_layout   X·W as written, when W was given out×in (layout torch)
    kt         kt_not_transposed     K copied as it is (square K)
    scores     k_not_transposed      Q·K instead of Q·Kᵀ (d_k = m)
               scores_transposed     K·Qᵀ: rows are keys, columns queries (n = m)
    scaled     scale_sqrt_d_model    / √d_model instead of / √d_k (d_model ≠ d_k)
               scale_d_k             / d_k instead of / √d_k
               scale_missing         not scaled at all
               scale_multiplied      · √d_k instead of / √d_k
    masked     mask_missing          the mask left out
               mask_inverted         1 read as "blocked" (or a causal mask turned to the future)
    exp        exp_not_shifted       e^s instead of e^(s − row max)
    weights    softmax_columns       softmax down each column instead of along each row
               mask_missing, mask_inverted (when the masked stage was not asked)
    concat     heads_averaged        the heads' outputs averaged (n×d_v) instead of laid side
                                     by side (n×H·d_v): found when a sheet is read, see
                                     `averaged_heads`

the backward pass's (--backward; qkvcalc.plan.backward):

    grad_v       grad_v_not_transposed    A·dO instead of Aᵀ·dO (n = m)
    the softmax's backward (grad_masked, grad_scaled …: op softmax_back)
                 softmax_back_no_row_term A ⊙ dA: the row term r = Σⱼ Aᵢⱼ·dAᵢⱼ left out
    grad_q (grad_q_rot, grad_q_norm: the q side of the scores), and the k side
                 grad_scale_missing       d(Q·Kᵀ) taken as the scaled scores' gradient: the
                                          scaling's factor left out of dQ (dK)
    grad_x, grad_source
                 grad_path_forgotten      one path of the chain rule left out (dX without
                                          dV·W_Vᵀ, say)

and each feature's own at the stages of its operations (qkvcalc.ops.features: Feature.mistakes,
listed in each feature's module, their sentences under the same `mistake.<id>` keys).

numpy only: no rich, no printing; the sentences are catalog keys with their values (Msg).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops import features
from qkvcalc.ops.op import Asked, Candidate
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids
from qkvcalc.quiz.tolerance import tolerance
from qkvcalc.trace import Stage, Trace

MISTAKE_IDS = tuple(
    dict.fromkeys(
        [
            *(mistake_id for op in OPS.values() for mistake_id in op.mistake_ids),
            "heads_averaged",  # the concat read from a sheet (averaged_heads, below)
            *(mistake_id for m in features.mistakes() for mistake_id in m.ids),  # the features'
        ]
    )
)


@dataclass(frozen=True)
class Mistake:
    """A named mistake: its stable id and the sentence that says it, with the right rule."""

    id: str
    msg: Msg

    def text(self, lang: str = "en") -> str:
        return self.msg.text(lang)


def _agree(answers: np.ndarray, candidate: np.ndarray, precision: int) -> np.ndarray:
    """Cell by cell: does the answer agree with the candidate at the quiz's precision?"""

    finite = np.isfinite(answers) & np.isfinite(candidate)
    with np.errstate(invalid="ignore"):
        tol = np.vectorize(lambda c: tolerance(float(c), precision))(
            np.where(np.isfinite(candidate), candidate, 0.0)
        )
        close = np.abs(np.where(finite, answers - candidate, 0.0)) <= tol
    return np.where(finite, close, answers == candidate)


def fits(answers: np.ndarray, candidate: np.ndarray, truth: np.ndarray, precision: int) -> bool:
    """Every answered cell agrees with `candidate`, and one of them is not the true value."""
    if candidate.shape != answers.shape:
        return False
    answered = ~np.isnan(answers)
    if not answered.any():
        return False
    if not _agree(answers, candidate, precision)[answered].all():
        return False
    return bool((~_agree(answers, truth, precision))[answered].any())


# ---- the candidates of each stage ----------------------------------------------------------


class _Inputs:
    """An earlier stage of this head (or of every head, before the split), as the student has it
    (when given) and as it truly is."""

    def __init__(self, trace: Trace, stage: Stage, own: Mapping[str, np.ndarray]) -> None:
        self.trace, self.stage, self.own = trace, stage, own
        self.prefix = "" if stage.head is None else f"{stage.head}/"

    def variants(self, sid: str) -> list[np.ndarray]:
        """The student's version of stage `sid` of this head, then the true one (either may be
        absent); the same matrix once."""
        found: list[np.ndarray] = []
        prefix, head = self.prefix, self.stage.head
        if self.trace.find(sid, head) is None and self.trace.find(sid, None) is not None:
            prefix, head = "", None  # a stage before the heads (a latent every head reads)
        mine = self.own.get(prefix + sid)
        if mine is not None:
            found.append(np.asarray(mine, dtype=np.float64))
        true = self.trace.find(sid, head)
        if true is not None and not any(np.array_equal(true.value, f) for f in found):
            found.append(true.value)
        return found


def candidates(trace: Trace, stage: Stage, own: Mapping[str, np.ndarray]) -> list[Candidate]:
    """Every mistake that can be made at `stage`, as the matrix it would give: its op's own
    (Op.mistakes), then a feature's at that op (Feature.mistakes)."""
    inputs = _Inputs(trace, stage, own)
    asked = Asked(trace.problem, stage, inputs.variants, trace.find, own)
    build = OPS[stage.op].mistakes
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        found = [] if build is None else build(asked)
        for mistakes in features.mistakes():  # a feature's op: its module's mistakes
            if mistakes.op == stage.op:
                found += mistakes.build(stage, inputs.variants)
    return found


def recognise(
    trace: Trace,
    key: str,
    answers: np.ndarray,
    own: Mapping[str, np.ndarray],
    precision: int,
) -> Mistake | None:
    """The one classic mistake that explains `answers` (the student's matrix for the stage
    `key`: "scaled", or "2/scaled" for head 2; NaN where not answered), or None when none does
    or more than one could.

    `own`: the student's own version of the earlier stages, by stage key ("scores",
    "2/scores"), as the grader keeps them; the true values are taken from `trace`.
    """
    if "@" in key:  # a decode step's or a block's stage: the classic mistakes are the run's
        return None
    head_text, _, sid = key.rpartition("/")
    stage = trace.find(sid, int(head_text) if head_text else None)
    if stage is None:
        return None
    answers = np.asarray(answers, dtype=np.float64)
    truth = stage.value
    named: dict[str, Msg] = {}
    for mistake_id, msg, matrix in candidates(trace, stage, own):
        if mistake_id not in named and fits(answers, matrix, truth, precision):
            named[mistake_id] = msg
    if set(named) == {"scale_sqrt_d_model", "scale_d_k"}:
        # d_model = d_k² (4 and 2): one division, two readings of it; the sentence says both
        named = {
            "scale_sqrt_d_model": Msg(
                "mistake.scale_sqrt_d_model_or_d_k", **named["scale_sqrt_d_model"].params
            )
        }
    if len(named) != 1:
        return None
    ((mistake_id, msg),) = named.items()
    return Mistake(mistake_id, msg)


def averaged_heads(
    trace: Trace, answers: np.ndarray, own: Mapping[str, np.ndarray], precision: int
) -> Mistake | None:
    """A concat answer of shape n×d_v, the heads' outputs averaged instead of concatenated.

    `own` holds the student's head outputs when the sheet gives them ("1/output", …); the true
    head outputs are used as well.
    """
    p = trace.problem
    concat = trace.find(ids.CONCAT)
    if concat is None or p.heads < 2:
        return None
    answers = np.asarray(answers, dtype=np.float64)
    heads = [trace.stage(ids.OUTPUT, h).value for h in range(1, p.heads + 1)]
    options = [np.mean(heads, axis=0)]
    if all(f"{h}/output" in own for h in range(1, p.heads + 1)):
        options.append(np.mean([own[f"{h}/output"] for h in range(1, p.heads + 1)], axis=0))
    rows, cols = concat.shape
    for option in options:
        if (
            option.shape == answers.shape
            and _agree(answers, option, precision)[~np.isnan(answers)].all()
        ):
            msg = Msg("mistake.heads_averaged", heads=p.heads, shape=f"{rows}×{cols}")
            return Mistake("heads_averaged", msg)
    return None
