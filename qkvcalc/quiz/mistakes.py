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
`mistake.<id>`):

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

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops import features
from qkvcalc.ops.grads import paths
from qkvcalc.ops.mask import apply_mask
from qkvcalc.ops.softmax import softmax_parts
from qkvcalc.plan import ids
from qkvcalc.quiz.tolerance import tolerance
from qkvcalc.trace import Stage, Trace

MISTAKE_IDS = (
    "weight_transposed",
    "weight_torch_layout",
    "kt_not_transposed",
    "k_not_transposed",
    "scores_transposed",
    "scale_sqrt_d_model",
    "scale_d_k",
    "scale_missing",
    "scale_multiplied",
    "mask_missing",
    "mask_inverted",
    "exp_not_shifted",
    "softmax_columns",
    "heads_averaged",
    "grad_v_not_transposed",
    "softmax_back_no_row_term",
    "grad_scale_missing",
    "grad_path_forgotten",
    *(mistake_id for m in features.mistakes() for mistake_id in m.ids),  # the features' own
)

NAMES = {"q": "Q", "k": "K", "v": "V"}
WEIGHTS = {"q": "W_Q", "k": "W_K", "v": "W_V"}


@dataclass(frozen=True)
class Mistake:
    """A named mistake: its stable id and the sentence that says it, with the right rule."""

    id: str
    msg: Msg

    def text(self, lang: str = "en") -> str:
        return self.msg.text(lang)


Candidate = tuple[str, Msg, np.ndarray]


def root_text(value: int) -> str:
    """√4 is '2'; √8 stays '√8'."""
    root = math.isqrt(value)
    return str(root) if root * root == value else f"√{value}"


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


def _projection(trace: Trace, stage: Stage) -> list[Candidate]:
    p = trace.problem
    if not stage.is_product or not p.projected or p.x is None:
        return []
    sid = stage.id
    weight = getattr(p, f"w{sid}")
    if weight is None:  # the latents stand in for W_Q, W_K, W_V: their own mistakes say it
        return []
    full = weight.values
    if full.shape[0] != full.shape[1]:
        return []  # Wᵀ does not fit where W goes
    width = p.d_k if sid in ("q", "k") else p.d_v
    head = stage.head or 1
    group = head if sid == "q" else p.kv_head_of(head)
    cols = slice((group - 1) * width, group * width) if stage.head is not None else slice(None)
    src = p.source if (sid != "q" and p.source is not None) else p.x
    value = src.values @ full.T[:, cols]
    if stage.bias is not None:
        value = value + stage.bias
    name, w, x = NAMES[sid], WEIGHTS[sid], "source" if src is p.source else "X"
    if p.layout == "torch":
        msg = Msg("mistake.weight_torch_layout", name=name, w=w, x=x)
        return [("weight_torch_layout", msg, value)]
    return [("weight_transposed", Msg("mistake.weight_transposed", name=name, w=w, x=x), value)]


def _kt(inputs: _Inputs) -> list[Candidate]:
    msg = Msg("mistake.kt_not_transposed")
    return [("kt_not_transposed", msg, k) for k in inputs.variants(ids.K)]


def _turned(wrong: np.ndarray, right: np.ndarray) -> bool:
    """A transposition mistake is one only where it changes the result: in a 1×1 table
    K·Qᵀ = Q·Kᵀ, and Q·K = Q·Kᵀ for a symmetric K, so neither may be blamed there."""
    return wrong.shape != right.shape or not np.allclose(wrong, right, rtol=1e-12, atol=1e-12)


def _scores(inputs: _Inputs) -> list[Candidate]:
    found: list[Candidate] = []
    for q in inputs.variants(ids.Q):
        for k in inputs.variants(ids.K):
            right = q @ k.T
            if q.shape[1] == k.shape[0] and _turned(q @ k, right):
                found.append(("k_not_transposed", Msg("mistake.k_not_transposed"), q @ k))
            if _turned(k @ q.T, right):
                found.append(("scores_transposed", Msg("mistake.scores_transposed"), k @ q.T))
    return found


def _scaled(trace: Trace, inputs: _Inputs) -> list[Candidate]:
    p = trace.problem
    d_k = p.d_k
    found: list[Candidate] = []
    for s in inputs.variants(ids.SCORES):
        if p.scale_given is not None:
            scale = f"{p.scale:.6g}"
            found.append(("scale_missing", Msg("mistake.scale_missing_given", scale=scale), s))
            continue
        root = root_text(d_k)
        if p.d_model is not None and p.d_model != d_k:
            msg = Msg(
                "mistake.scale_sqrt_d_model",
                d_model=p.d_model,
                model_root=root_text(p.d_model),
                d_k=d_k,
                root=root,
            )
            found.append(("scale_sqrt_d_model", msg, s / math.sqrt(p.d_model)))
        found.append(("scale_d_k", Msg("mistake.scale_d_k", d_k=d_k, root=root), s / d_k))
        found.append(("scale_missing", Msg("mistake.scale_missing", d_k=d_k, root=root), s))
        found.append(
            ("scale_multiplied", Msg("mistake.scale_multiplied", d_k=d_k, root=root), s * d_k**0.5)
        )
    return found


def _mask_variants(trace: Trace, allowed: np.ndarray) -> list[np.ndarray]:
    """The mask read the wrong way round: the complement, and for a causal mask the future."""
    wrong = [~allowed]
    if trace.problem.mask_kind == "causal":
        wrong.append(np.triu(np.ones(allowed.shape, dtype=bool)))
    return wrong


def _mask_msgs(trace: Trace, allowed: np.ndarray) -> tuple[Msg, Msg]:
    blocked = int((~allowed).sum())
    causal = trace.problem.mask_kind == "causal"
    missing = Msg("mistake.mask_missing", count=blocked)
    inverted = Msg("mistake.mask_inverted_causal" if causal else "mistake.mask_inverted")
    return missing, inverted


def _masked(trace: Trace, stage: Stage, inputs: _Inputs) -> list[Candidate]:
    allowed = stage.allowed
    if allowed is None:
        return []
    missing, inverted = _mask_msgs(trace, allowed)
    found: list[Candidate] = []
    for s in inputs.variants(ids.SCALED):
        found.append(("mask_missing", missing, s))
        found.extend(
            ("mask_inverted", inverted, apply_mask(s, w)) for w in _mask_variants(trace, allowed)
        )
    return found


def _exp(trace: Trace, stage: Stage, inputs: _Inputs) -> list[Candidate]:
    source = ids.MASKED if trace.find(ids.MASKED, stage.head) is not None else ids.SCALED
    msg = Msg("mistake.exp_not_shifted")
    with np.errstate(over="ignore"):
        return [("exp_not_shifted", msg, np.exp(s)) for s in inputs.variants(source)]


def _columns(e: np.ndarray) -> np.ndarray:
    """e divided by its column sums (a column that sums to 0 stays 0)."""
    sums = e.sum(axis=0, keepdims=True)
    return np.divide(e, sums, out=np.zeros_like(e), where=sums != 0)


def _weights(trace: Trace, stage: Stage, inputs: _Inputs) -> list[Candidate]:
    masked = trace.find(ids.MASKED, stage.head)
    logits = ids.MASKED if masked is not None else ids.SCALED
    columns = Msg("mistake.softmax_columns")
    found: list[Candidate] = [
        ("softmax_columns", columns, _columns(e)) for e in inputs.variants(ids.EXP)
    ]
    for s in inputs.variants(logits):
        # softmax down each column: subtract each column's max, exponentiate, divide by the sum
        col_max = np.max(s, axis=0, initial=-np.inf, keepdims=True)
        col_max[np.isneginf(col_max)] = 0.0
        found.append(("softmax_columns", columns, _columns(np.exp(s - col_max))))
    if masked is not None and masked.allowed is not None:
        missing, inverted = _mask_msgs(trace, masked.allowed)
        for s in inputs.variants(ids.SCALED):
            found.append(("mask_missing", missing, softmax_parts(s)[3]))
            for wrong in _mask_variants(trace, masked.allowed):
                found.append(("mask_inverted", inverted, softmax_parts(apply_mask(s, wrong))[3]))
    return found


# ---- the backward pass's -------------------------------------------------------------------


def _grad_v(inputs: _Inputs) -> list[Candidate]:
    """dV = Aᵀ·dO; the mistake: A·dO, the weights not turned (it fits only when n = m)."""
    msg = Msg("mistake.grad_v_not_transposed")
    return [
        ("grad_v_not_transposed", msg, a @ g)
        for a in inputs.variants(ids.WEIGHTS)
        for g in inputs.variants(ids.GRAD_OUTPUT)
        if a.shape[1] == g.shape[0] and _turned(a @ g, a.T @ g)
    ]


def _softmax_back(inputs: _Inputs) -> list[Candidate]:
    """dS = A ⊙ (dA − r); the mistake: A ⊙ dA, as if each weight moved alone."""
    msg = Msg("mistake.softmax_back_no_row_term")
    return [
        ("softmax_back_no_row_term", msg, a * da)
        for a in inputs.variants(ids.WEIGHTS)
        for da in inputs.variants(ids.GRAD_WEIGHTS)
    ]


def _scale_missing(trace: Trace, stage: Stage, inputs: _Inputs) -> list[Candidate]:
    """dQ = d(Q·Kᵀ)·K with d(Q·Kᵀ) = scale · (the scaled scores' gradient); the mistake: the
    scaled scores' gradient itself (dK: its transpose times Q)."""
    scores = trace.find(ids.GRAD_SCORES, stage.head)
    if scores is None or scores.topic != ids.TOPIC_GRAD_BACK_SCALE:  # back through the scaling
        return []
    before = scores.reads[-1][0]  # the gradient of the scaled scores
    other = stage.reads[1][0]  # K (for dQ), Q (for dK)
    q_side = stage.topic == "grad_q_side"
    said = scores.params["of"].get("scale_text")  # "√2": the scaling divides by it
    scale = f"1/{said}" if said else f"{trace.problem.scale:.6g}"
    msg = Msg("mistake.grad_scale_missing", grad=stage.symbol, scale=scale)
    return [
        ("grad_scale_missing", msg, ds @ m if q_side else ds.T @ m)
        for ds in inputs.variants(before)
        for m in inputs.variants(other)
    ]


def _path_forgotten(stage: Stage, own: Mapping[str, np.ndarray]) -> list[Candidate]:
    """dX = Σ over the paths dP·W_Pᵀ; the mistake: one path left out (from the student's own
    dQ, dK, dV where the sheet gives them, and from the true ones)."""
    letters = stage.names
    if len(letters) < 2:
        return []
    true = list(stage.operands)
    keys = [ref[0] if ref[1] is None else f"{ref[1]}/{ref[0]}" for ref in stage.reads]
    mine = [own.get(k) for k in keys]
    versions = [true]
    if any(m is not None for m in mine):
        pairs = zip(mine, true, strict=True)
        versions.insert(0, [t if m is None else np.asarray(m, dtype=np.float64) for m, t in pairs])
    x = stage.symbol[1:]  # dX: X; dsource: source
    found: list[Candidate] = []
    for ops in versions:
        parts = paths(ops, stage.params)
        total = np.sum(parts, axis=0)
        for letter, part in zip(letters, parts, strict=True):
            msg = Msg("mistake.grad_path_forgotten", path=f"d{letter}·W_{letter}ᵀ", x=x)
            found.append(("grad_path_forgotten", msg, total - part))
    return found


# the backward's stages whose id is not fixed, by their op or topic
BY_OP: dict[str, Callable[[Trace, Stage, _Inputs], list[Candidate]]] = {
    "softmax_back": lambda t, s, i: _softmax_back(i),
    "input_grad": lambda t, s, i: _path_forgotten(s, i.own),
}
BY_TOPIC: dict[str, Callable[[Trace, Stage, _Inputs], list[Candidate]]] = {
    "grad_q_side": _scale_missing,
    "grad_k_side": _scale_missing,
}

BUILDERS: dict[str, Callable[[Trace, Stage, _Inputs], list[Candidate]]] = {
    ids.Q: lambda t, s, i: _projection(t, s),
    ids.K: lambda t, s, i: _projection(t, s),
    ids.V: lambda t, s, i: _projection(t, s),
    ids.KT: lambda t, s, i: _kt(i),
    ids.SCORES: lambda t, s, i: _scores(i),
    ids.SCALED: lambda t, s, i: _scaled(t, i),
    ids.MASKED: _masked,
    ids.EXP: _exp,
    ids.WEIGHTS: _weights,
    ids.GRAD_V: lambda t, s, i: _grad_v(i),
}


def candidates(trace: Trace, stage: Stage, own: Mapping[str, np.ndarray]) -> list[Candidate]:
    """Every mistake that can be made at `stage`, as the matrix it would give."""
    build = BUILDERS.get(stage.id) or BY_OP.get(stage.op) or BY_TOPIC.get(stage.topic)
    inputs = _Inputs(trace, stage, own)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        found = [] if build is None else build(trace, stage, inputs)
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
