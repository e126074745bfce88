"""The sentences a stage carries that read its numbers back to the student: each query's
strongest keys, one score as lengths and an angle, why the scale matters on this very row,
and the facts a stage of this problem should state (self-attention, d_v, a single key, why
GQA, why padded rows still get outputs, order without positions).

The plan attaches them (qkvcalc.plan); the ones that need numbers are `remarks`, computed by
the engine once the values exist, from qkvcalc.plan.readout's plain functions.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.labels import rounded, safe
from qkvcalc.ops import features
from qkvcalc.ops.table import OPS
from qkvcalc.plan import readout, reference
from qkvcalc.plan.specs import Spec

Ref = tuple[Any, ...]
ValueOf = Callable[[Ref], np.ndarray]
MAX_READ = 12  # queries read out under the weights; more are said to be left out


def _names(tokens: Sequence[str]) -> tuple[str, ...]:
    return _names_of(tuple(tokens))  # a list given for a Problem's tokens works too


@functools.lru_cache(maxsize=4)
def _names_of(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Token names as every sentence shows them: control characters escaped, long ones cut,
    and a name that repeats followed by its position ("cat (2)", "cat (5)"), so that a
    sentence names one token. Made once for a problem's tokens, not again by every head's
    notes (12 heads of 1024 tokens: 0.1 s of a GPT-2 layer's run)."""
    names = [safe(t) for t in tokens]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return tuple(f"{name} ({j + 1})" if counts[name] > 1 else name for j, name in enumerate(names))


DECIMALS = 4  # the numbers of these sentences


def _fmt(value: float) -> str:
    text = rounded(value, DECIMALS)
    return "0" if float(text) == 0 else text.rstrip("0").rstrip(".")


def reading(
    p: Problem, allowed: np.ndarray | None, weights_ref: Ref, extra: tuple[str, ...] = ()
) -> Callable[..., Any]:
    """Under the weights: each query's strongest keys as percentages, masked keys named.
    `extra`: the names of columns the stage read holds after the keys' (a sink's share),
    which are read as shares too and are never masked."""

    def remark(value_of: ValueOf) -> tuple[Msg, ...]:
        w = value_of(weights_ref)
        rows = range(min(w.shape[0], MAX_READ))
        queries, keys = _names(p.tokens), [*_names(features.key_labels(p)), *extra]
        allowed_rows = allowed
        if allowed is not None and extra:
            allowed_rows = np.hstack([allowed, np.ones((allowed.shape[0], len(extra)), bool)])
        readings = [
            readout.strongest_keys(w[i], None if allowed_rows is None else allowed_rows[i], keys)
            for i in rows
        ]
        lines = [readout.reading_msg(queries[i], r) for i, r in zip(rows, readings, strict=True)]
        notes = [Msg("note.reading_title"), *lines, Msg("note.reading_rounding")]
        if any(r.top and not r.equal and r.total < 100 for r in readings):
            notes.append(Msg("note.reading_rounding_ties"))  # equal weights kept equal
        if w.shape[1] == 1:  # a row of 0 is one whose key the mask hides: it gets no weight
            notes.append(Msg("note.single_key_masked" if np.any(w == 0) else "note.single_key"))
        return tuple(notes)

    return remark


def geometry(p: Problem, allowed: np.ndarray | None, q_ref: Ref, k_ref: Ref) -> Callable[..., Any]:
    """Under the scores: q·k = |q|·|k|·cos θ, on the query whose best-aligned key is not its
    highest-scoring one when there is such a query (the lesson), else on the first query."""

    def remark(value_of: ValueOf) -> tuple[Msg, ...]:
        q, k = value_of(q_ref), value_of(k_ref)
        queries, keys = _names(p.tokens), _names(features.key_labels(p))
        for i in range(min(q.shape[0], MAX_READ)):
            row = None if allowed is None else allowed[i]
            found = readout.aligned_and_strongest(q[i], k, row)
            if found is not None and found.differ:
                return (readout.alignment_msg(queries[i], keys, found, _fmt),)
        j = int(np.argmax(q[0] @ k.T))
        g = readout.score_geometry(q[0], k[j])
        said = readout.geometry_msg(queries[0], keys[j], g, _fmt)
        if said.key == "note.geometry_approx":  # the ≈ note follows its ≈
            return (said, Msg("note.rounded", precision=DECIMALS))
        return (said,)

    return remark


def why_scale(
    p: Problem, allowed: np.ndarray | None, h: int | None, head_specs: list[Spec]
) -> Callable[..., Any]:
    """Under the scaling: the last query's reading with the scale and without it (scale 1),
    each from this head's own stages after the scores (the features' stages,
    the mask, the softmax) run again on that row: "with it" is the weights table's row."""

    def remark(value_of: ValueOf) -> tuple[Msg, ...]:
        chain = _after_scores(head_specs, h)
        i = p.n - 1
        rows = np.array([i])
        scaled, extra = _shares(chain, value_of, rows, {})
        unscaled, _ = _shares(chain, value_of, rows, {("scaled", h): {"scale": 1.0}})
        if np.array_equal(scaled, unscaled):  # one key, d_k = 1, or equal scores: no change
            return ()
        row = None if allowed is None else allowed[i]
        if row is not None and extra:  # a column of its own (a sink's) is never masked
            row = np.concatenate([row, np.ones(len(extra), dtype=bool)])
        comparison = readout.ScaleComparison(p.scale, scaled, unscaled)
        keys = [*_names(features.key_labels(p)), *extra]
        key = "note.why_scale_shown" if p.scale_given is None else "note.why_scale_shown_given"
        said = {} if p.scale_given is None else {"scale": f"{p.scale:g}"}
        return (readout.scale_shown_msg(safe(p.tokens[i]), keys, comparison, row, key, said),)

    return remark


def _after_scores(head_specs: list[Spec], h: int | None) -> list[Spec]:
    """The head's stages from the scaling to the softmax (or to the last logits, in tiles)."""
    ids = [s.ref for s in head_specs]
    start = ids.index(("scaled", h))
    chain = []
    for spec in head_specs[start:]:
        op = OPS[spec.op]
        if spec.block is not None or op.product:  # the tiles, or A·V: past the weights
            break
        chain.append(spec)
        if op.divisor is not None:  # the weights: each exponential over its row's sum
            break
    return chain


def _shares(
    chain: list[Spec], value_of: ValueOf, rows: np.ndarray, changed: dict[Ref, dict[str, Any]]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """The first of `rows`' shares of attention, as the weights table's reading line reads
    them, and the names of the columns past the keys': the weights row itself; the row of
    exponentials over its sum when that holds a column of its own (a sink's share); in tiles,
    the softmax their blocks make of the last logits."""
    values = reference.forward(chain, value_of, rows, changed)
    last = chain[-1]
    if OPS[last.op].divisor is None:  # tiles: the softmax of these logits
        logits = values[last.ref][0]
        return readout.softmax_row(logits, np.isfinite(logits)), ()
    exp = next(spec for spec in chain if spec.ref == last.operands[0])
    extra = exp.cols[len(last.cols) :]
    if not extra:
        return values[last.ref][0], ()
    joined = values[exp.ref][0]
    return joined / joined.sum(), extra


def scaling_facts(p: Problem) -> tuple[Msg, ...]:
    """Why √d_k, and the scale as a temperature: a positive scale's (the default's); a given
    scale of 0 or below is no temperature, and is said for what it does."""
    root = f"{math.sqrt(p.d_k):.4g}"
    whole = math.isqrt(p.d_k) ** 2 == p.d_k  # √4 = 2; √2 ≈ 1.414, irrational
    temperature = (
        Msg("note.scale_temperature", root=root, eq="=" if whole else "≈")
        if p.scale > 0
        else Msg("note.scale_zero" if p.scale == 0 else "note.scale_negative")
    )
    return (Msg("note.why_scale_variance", d_k=p.d_k, root=root), temperature)


def key_facts(p: Problem, h: int | None) -> tuple[Msg, ...]:
    """On the first head's K: self-attention named as such (a linear-attention layer compares
    no pair of tokens: its tokens meet through the state)."""
    if p.cross or (h or 1) != 1:
        return ()
    state = features.mixing(p) is not None
    return (Msg("note.self_attention_state" if state else "note.self_attention"),)


def value_facts(p: Problem, h: int | None) -> tuple[Msg, ...]:
    """On the first head's V: what d_v decides (a linear-attention layer: through its state,
    as it has no A)."""
    key = "note.dv_state" if features.mixing(p) is not None else "note.dv"
    return (Msg(key, d_v=p.d_v, d_k=p.d_k),) if (h or 1) == 1 else ()


def mask_facts(p: Problem) -> tuple[Msg, ...]:
    return (Msg("note.pad_rows"),) if p.key_padding is not None else ()


def split_facts(p: Problem) -> tuple[Msg, ...]:
    if p.kv_heads >= p.heads:
        return ()
    ratio = p.heads // p.kv_heads
    return (Msg("note.gqa_why", heads=p.heads, kv_heads=p.kv_heads, ratio=ratio),)


def input_facts(p: Problem) -> tuple[Msg, ...]:
    """On X: without positions and without a causal mask, order is invisible."""
    v = p.variants
    ordered = v.pe is not None or bool(features.order_reasons(p)) or p.mask_kind != "none"
    if ordered or p.n == 1:
        return ()
    if p.n > 12:  # an order to type out is a demonstration for a few tokens
        return (Msg("note.shuffle"),)
    swap = " ".join(str(k) for k in (2, 1, *range(3, p.n + 1)))
    return (Msg("note.shuffle"), Msg("note.shuffle_try", order=swap))


# ---- the backward pass ------------------------------------------------------------------------


def _about(value: float) -> tuple[str, str]:
    """A number as a sentence says it, four significant digits, and whether that is the number
    itself ('=') or a rounding of it ('≈')."""
    text = f"{value:.4g}"
    return ("=" if float(text) == value else "≈"), text.replace("-", "−")


def target_rows(p: Problem, target: np.ndarray) -> Msg:
    """T, the output to reach, row by row: a worksheet's dO = O − T needs it (rounded as a
    note rounds: '≈' when a number is not shown whole)."""
    names = _names(p.tokens)
    rows = "; ".join(
        f"{names[i]}: " + ", ".join(_fmt(v) for v in row) for i, row in enumerate(target)
    )
    exact = all(float(_fmt(v)) == v for v in target.ravel())
    return Msg("note.loss_target_rows" if exact else "note.loss_target_rows_approx", rows=rows)


def attend_keys(p: Problem, targets: list[tuple[int, int]]) -> Msg:
    """The key each query should look at, by name: a worksheet's dA needs it."""
    queries, keys = _names(p.tokens), _names(features.key_labels(p))
    return Msg(
        "note.loss_attend_keys", pairs=", ".join(f"{queries[i]} → {keys[t]}" for i, t in targets)
    )


def loss_target(final_ref: Ref, target: np.ndarray) -> Callable[..., Any]:
    """On dO: the loss L = ½·Σ(O − T)² these numbers give."""

    def remark(value_of: ValueOf) -> tuple[Msg, ...]:
        loss = 0.5 * float(np.sum((value_of(final_ref) - target) ** 2))
        eq, said = _about(loss)
        return (Msg("note.loss_target", eq=eq, loss=said),)

    return remark


def loss_attend(
    weights_ref: Ref, targets: list[tuple[int, int]], h: int | None
) -> Callable[..., Any]:
    """On dA (`attend`): this head's term of L = −Σᵢ log A[i, tᵢ], and the weight each query
    gives its target key now."""

    def remark(value_of: ValueOf) -> tuple[Msg, ...]:
        a = value_of(weights_ref)
        with np.errstate(divide="ignore"):
            loss = 0.0 - float(sum(np.log(a[i, t]) for i, t in targets))  # 0, never −0
        eq, said = _about(loss)
        keys = (
            ("note.loss_attend_head", "note.loss_attend_head_one")
            if h is not None
            else ("note.loss_attend", "note.loss_attend_one")
        )
        key = keys[len(targets) == 1]  # "over one target key", not "over 1 target keys"
        return (Msg(key, eq=eq, loss=said, count=len(targets), head=h or 1),)

    return remark


def gradient_through_softmax(
    p: Problem, h: int | None, specs: list[Spec], plan: Callable[[], Sequence[Spec]]
) -> Callable[..., Any]:
    """√d_k, shown by its gradients: ∂Aᵢⱼ/∂Sᵢⱼ = Aᵢⱼ·(1 − Aᵢⱼ) is how much a change of a
    logit still moves its weight; its largest value in this head with the scaling, and with
    the scores not scaled (the head's own stages after the scores run again, scale 1). Then
    what the loss does with it: the gradient of the scores, ‖d(Q·Kᵀ)‖, from the whole plan
    (`plan()`: forward and backward) run again with every head unscaled, against the scaled
    run's; the sentence that follows is chosen by which is smaller, and by the loss (−log A
    cancels the softmax's vanishing derivative)."""

    def remark(value_of: ValueOf) -> tuple[Msg, ...]:
        if p.scale == 1:
            return ()
        chain = _after_scores(specs, h)
        scaled = value_of(chain[-1].ref)
        unscaled = reference.forward(chain, value_of, None, {("scaled", h): {"scale": 1.0}})
        plain = unscaled[chain[-1].ref]
        largest, without = (float(np.max(a * (1 - a), initial=0.0)) for a in (scaled, plain))
        if largest == without:  # one key, or scores all equal: the scale changes nothing
            return ()
        eq_with, said_with = _about(largest)
        eq_without, said_without = _about(without)
        root = f"√{p.d_k}" if p.scale_given is None else f"× {p.scale:g}"
        given = p.scale_given is not None  # not √d_k: the scale the problem gives
        return (
            Msg(
                "note.grad_through_softmax_given" if given else "note.grad_through_softmax",
                eq_with=eq_with,
                with_=said_with,
                eq_without=eq_without,
                without=said_without,
                root=root,
            ),
            *score_gradients(
                p, h, plan(), saturated=without < largest / 10, sharper=largest < without
            ),
        )

    return remark


def score_gradient_norms(p: Problem, h: int | None, plan: Sequence[Spec]) -> tuple[float, float]:
    """‖d(Q·Kᵀ)‖ of head h (the Frobenius norm: what reaches Q and K), with the problem's
    scale and with every head's scale 1: the plan's own forward and backward run again."""
    refs = [s.ref for s in plan]
    upto = list(plan[: refs.index(("grad_scores", h)) + 1])
    plain: dict[Ref, dict[str, Any]] = {s.ref: {"scale": 1.0} for s in upto if s.id == "scaled"}
    for s in upto:  # the backward through the scaling multiplies by the scale too
        if s.id == "grad_scores":
            plain[s.ref] = {"of": {**s.params["of"], "scale": 1.0}}
    last = upto[-1].ref
    scaled, unscaled = (
        float(np.linalg.norm(reference.forward(upto, reference.nothing, None, changed)[last]))
        for changed in ({}, plain)
    )
    return scaled, unscaled


def score_gradients(
    p: Problem, h: int | None, plan: Sequence[Spec], saturated: bool, sharper: bool = False
) -> tuple[Msg, ...]:
    """What leaving the scale out does to the gradient that reaches Q and K in this run, and
    why: a saturated softmax blocks a loss through the output; under −log A it does not. A
    scale above 1 that leaves the scaled softmax the more saturated (`sharper`: its largest
    A·(1 − A) the smaller) is why its gradient is the smaller, not the scale's factor."""
    assert p.loss is not None
    with_, without = score_gradient_norms(p, h, plan)
    if not (np.isfinite(with_) and np.isfinite(without)) or with_ == without:
        return ()
    (eq_with, said_with), (eq_without, said_without) = _about(with_), _about(without)
    said = {"eq_with": eq_with, "with_": said_with}
    said |= {"eq_without": eq_without, "without": said_without}
    if without < with_:
        given = p.wq is None  # Q and K given directly: no W_Q, W_K for the note to name
        saturated_key = "note.grad_saturated_given" if given else "note.grad_saturated"
        why = saturated_key if saturated else "note.grad_scale_shrinks"
        return (Msg("note.grad_scores_smaller", **said), Msg(why))
    if p.loss.kind == "attend":
        why = "note.grad_log_cancels"
    elif p.scale > 1 and sharper:
        why = "note.grad_scale_sharpens"
    else:
        why = "note.grad_not_saturated"
    return (Msg("note.grad_scores_larger", **said), Msg(why))
