"""The plan of a decode run: a prefill, then one token at a time with a KV cache.

Step 0 (when P > 0) is the prefill of the first P tokens; each later token is one step: its
query alone is computed, its key and value rows are appended to the cache, and the query
attends to every cached key. A step's stages carry `step`; the cached rows are read from the
previous step's cache, never computed again. The last stage of each head stacks every step's
output rows: that is the ordinary causal run, and a note says by how much it differs.

The causal mask of a step compares positions (qkvcalc.plan.allowed_keys): the step's queries
are the last rows of the causal mask, so for one query and t cached keys the mask is aligned
bottom-right (FlashAttention ≥ 2.1, attention with a cache), not top-left.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.labels import safe
from qkvcalc.ops import features
from qkvcalc.plan import pipeline, reference
from qkvcalc.plan.gap import gap
from qkvcalc.plan.masks import allowed_keys
from qkvcalc.plan.pipeline import _mask_notes, _scaling, combine, on_logits, turned
from qkvcalc.plan.specs import (
    Ref,
    Spec,
    dim_labels,
    head_slices,
    ref,
    span,
    stamped,
)
from qkvcalc.records import NamedTuple


def steps(p: Problem) -> list[tuple[int, np.ndarray]]:
    """(step, the rows of its tokens): step 0 the prefill of P tokens (none when P = 0), then
    step s the token P + s − 1 alone."""
    assert p.decode is not None
    out = [(0, np.arange(p.decode))] if p.decode else []
    out += [(t - p.decode + 1, np.array([t])) for t in range(p.decode, p.n)]
    return out


def decode_plan(p: Problem, x_ref: Ref, x_name: str) -> list[Spec]:
    """Every step's stages, head by head, then each head's stacked output (and the concat and
    W_O of several heads)."""
    allowed = allowed_keys(p)
    assert allowed is not None  # a decode run is causal
    heads: list[int | None] = list(range(1, p.heads + 1)) if p.multihead else [None]
    specs: list[Spec] = []
    stand_in = features.projecting(p)  # multi-head latent attention: its own cache

    def turn(problem: Problem, side: features.Turn, out: list[Spec]) -> Ref:
        (found,), _ = turned(problem, [side], out)
        return found

    for step, take in steps(p):
        if stand_in is not None and stand_in[0].decode_shared is not None:
            before = step - 1 if step > 1 or (step == 1 and p.decode) else None
            shared = stand_in[0].decode_shared(
                p, stand_in[1], step, take, before, x_ref, x_name, turn
            )
            specs += stamped(shared, step=step, lazy=False)
        for h in heads:
            specs += _step(p, h, step, take, allowed, x_ref, x_name)
    stacked = [_stacked(p, h) for h in heads]
    outputs = []
    for s in stacked:  # a feature's stages after a head's output, once over its stacked rows
        after = features.after_output(p, s.head, s)
        specs += [s, *after]
        outputs.append((after[-1] if after else s).ref)
    if p.multihead:  # what comes after every head runs once over the stacked rows, as W_O does
        joined, reads = features.joined(p, outputs)  # a norm over the heads
        specs += joined
        width = {s.ref: len(s.cols) for s in specs}
        specs += combine(p, reads, [width[r] for r in reads])
    return specs


def _rows_said(take: np.ndarray) -> str:
    """'1–3' for the prefill's rows, '4' for one token (1-based)."""
    return span(int(take[0]), len(take))


class _At(NamedTuple):
    """Where a decode step of head h stands: its rows (`take`), their labels, the keys cached
    after it (1…end), how its rows are said ('1–3'), the step before (None: the first)."""

    h: int | None
    step: int
    take: np.ndarray
    rows: tuple[str, ...]
    keys: tuple[str, ...]
    end: int
    said: str
    before: int | None

    def ref(self, sid: str) -> Ref:
        return ref(sid, self.h, self.step)


def _step(
    p: Problem,
    h: int | None,
    step: int,
    take: np.ndarray,
    allowed: np.ndarray,
    x_ref: Ref,
    x_name: str,
) -> list[Spec]:
    """One head's stages of one step: its new rows of Q, K and V (the keys and values appended
    to the caches), then the head's template from the scores on, over the step's rows."""
    end = int(take[-1]) + 1  # the cache after this step holds keys 1…end
    before = step - 1 if step > 1 or (step == 1 and p.decode) else None
    rows = tuple(p.tokens[int(i)] for i in take)
    at = _At(h, step, take, rows, p.tokens[:end], end, _rows_said(take), before)
    out: list[Spec] = []
    k_cache, v_cache, v_name = at.ref("k_cache"), at.ref("v_cache"), "V_cache"
    stand_in = features.projecting(p)
    if stand_in is not None and stand_in[0].decode_head is not None:  # the latents' cache
        qkv, k_cache, v_cache = stand_in[0].decode_head(
            p, stand_in[1], h, step, take, end, x_ref, x_name
        )
        out += qkv
        (q_final,), _ = turned(p, [_side(p, h, step, take, "Q", rows)], out)
        v_name = "V"
    else:
        q_final = _step_projections(p, at, x_ref, x_name, out)
    out += _step_attention(p, at, allowed, q_final, k_cache, v_cache, v_name)
    return stamped(out, step=step, lazy=False)  # a step's few rows are kept as they are


def _step_projections(p: Problem, at: _At, x_ref: Ref, x_name: str, out: list[Spec]) -> Ref:
    """The template's projections over the step's rows (X[rows]·W), the features' turns of its
    new query and key rows (a key is normed and rotated once, at its own position), then its
    keys and values appended to the caches; appended to `out`. Returns the ref of the queries
    the scores read."""
    taken = pipeline.Taken(at.take, at.rows, at.said, at.step)
    q, k, v = pipeline.projections(p, at.h, head_slices(p, at.h or 1), (), taken)
    out += [replace(q, notes=(_step_note(p, at.step, at.take),)), k, v]
    sides = [_side(p, at.h, at.step, at.take, side, at.rows) for side in ("Q", "K")]
    (q_final, k_final), _ = turned(p, sides, out)
    k_symbol = next((s.symbol for s in out if s.ref == k_final), "K")  # K, or K turned
    out.append(_cached(p, at, "k", k_final, k_symbol, "d_k"))
    out.append(_cached(p, at, "v", ref("v", at.h), "V", "d_v"))
    return q_final


def _cached(p: Problem, at: _At, sid: str, new: Ref, symbol: str, width: str) -> Spec:
    """The cache of K (or V) after the step: the cached rows, then the step's new ones under
    them."""
    h, step, before = at.h, at.step, at.before
    name = f"{sid.upper()}_cache"
    old = (ref(name.lower(), h, before),) if before is not None else ()
    columns = p.d_v if sid == "v" else p.d_k
    return Spec(
        f"{sid}_cache",
        h,
        "stack",
        (*old, new),
        f"{name} = [{name}; {symbol}]" if before is not None else f"{name} = {symbol}",
        at.keys,
        dim_labels(columns),
        notes=_cache_notes(p, sid, step, len(at.take), at.end, before is not None, h),
        symbol=name,
        letters=f"m_t×{width}",
        hint=("hint.decode_stack", {"name": name, "rows": at.said, "new": symbol}),
    )


def _step_attention(
    p: Problem,
    at: _At,
    allowed: np.ndarray,
    q_final: Ref,
    k_cache: Ref,
    v_cache: Ref,
    v_name: str,
) -> list[Spec]:
    """The head's template from the scores on, over the step's rows and the cached keys:
    Q·K_cacheᵀ, the scaling, the features' stages on the logits, the mask (aligned
    bottom-right), the softmax and A·V_cache."""
    h, step, rows, keys = at.h, at.step, at.rows, at.keys
    out = [
        Spec(
            "scores",
            h,
            "qk",
            (q_final, k_cache),
            "Q·K_cacheᵀ",
            rows,
            keys,
            params={"take": at.take},
            symbol="Q·Kᵀ",
            letters="t×m_t",
            hint=("hint.scores", {}),
            step=step,
            topic="scores.decode" if step else "scores.prefill",  # the prefill: P×P at once
        )
    ]
    formula, _, note, _ = _scaling(p)
    formula = formula.replace("Q·Kᵀ", "Q·K_cacheᵀ")
    at_rows = pipeline.Rows(h, step, rows, keys, "t", "m_t")
    first = step == (0 if p.decode else 1)  # the scale is said once
    out.append(pipeline.scaled(p, at_rows, formula, (note,) if first else ()))
    logits = features.Logits(
        h, at.ref("scaled"), "S", formula, rows, keys, step, "t×m_t", at.take, at.end
    )
    logit, symbol, formula = on_logits(p, logits, out)
    notes = _decode_mask_notes(p, step, at.take, at.end)
    mask = allowed[at.take][:, : at.end]
    out.append(pipeline.masked(at_rows, logit, symbol, formula, mask, notes))
    softmax = f"A = softmax({formula} + M)"
    return out + pipeline.softmax_and_output(
        p, at_rows, at.ref("masked"), "S+M", softmax, v_cache, v_name, lambda ref, extra: None
    )


def _side(
    p: Problem, h: int | None, step: int, take: np.ndarray, side: str, rows: tuple[str, ...]
) -> features.Turn:
    """The step's new query (or key) rows, where the features turn them: a key is normed and
    rotated once, at its own position, then cached."""
    v = p.variants
    positions = (v.positions if side == "Q" else v.key_positions)[take]
    return features.Turn(h, ref(side.lower(), h, step), side, side, rows, positions, step, "t×d_k")


def _step_note(p: Problem, step: int, take: np.ndarray) -> Msg:
    pos = p.variants.positions
    if step == 0:
        if len(take) == 1:
            return Msg("note.decode_prefill_one")
        return Msg("note.decode_prefill", count=len(take), last=int(take[-1]) + 1)
    t = int(take[0])
    return Msg("note.decode_step", step=step, row=t + 1, token=safe(p.tokens[t]), pos=int(pos[t]))


def _cache_notes(
    p: Problem, sid: str, step: int, new: int, end: int, cached: bool, h: int | None
) -> tuple[Msg, ...]:
    notes: list[Msg] = []
    name = f"{sid.upper()}_cache"
    if cached:
        old = span(0, end - new)  # '1–3', or '1'
        notes.append(Msg("note.decode_saved", name=name, old=old, row=end, step=step - 1))
    else:
        notes.append(Msg("note.decode_cache_start", name=name, rows=end))
    if sid == "k" and not cached and (h or 1) == 1:
        per_token = p.kv_heads * (p.d_k + p.d_v)
        notes.append(
            Msg(
                "note.decode_memory",
                kv_heads=p.kv_heads,
                d_k=p.d_k,
                d_v=p.d_v,
                per_token=per_token,
                tokens=p.n,
                total=per_token * p.n,
            )
        )
        if p.kv_heads < p.heads:
            notes.append(
                Msg(
                    "note.decode_gqa",
                    heads=p.heads,
                    kv_heads=p.kv_heads,
                    ratio=p.heads // p.kv_heads,
                    full=p.heads * (p.d_k + p.d_v),
                    per_token=per_token,
                )
            )
    if p.kv_heads < p.heads:
        first, last = p.query_heads_of(p.kv_head_of(h or 1))
        notes.append(Msg("note.kv_shared", kv_head=p.kv_head_of(h or 1), first=first, last=last))
    return tuple(notes)


def _decode_mask_notes(p: Problem, step: int, take: np.ndarray, end: int) -> tuple[Msg, ...]:
    notes = list(_mask_notes(p))
    if step == 0:
        notes.append(Msg("note.decode_mask_prefill", count=len(take)))
    else:
        notes.append(Msg("note.decode_bottom_right", keys=end, row=int(take[0]) + 1))
    return tuple(notes)


def _stacked(p: Problem, h: int | None) -> Spec:
    """Every step's output rows, one under another: the whole run's output (of this head)."""
    all_steps = [step for step, _ in steps(p)]
    return Spec(
        "output",
        h,
        "stack",
        tuple(ref("output", h, step) for step in all_steps),
        "out = [out_0; out_1; …]" if p.decode else "out = [out_1; out_2; …]",
        p.tokens,
        dim_labels(p.d_v),
        topic="output.decode",
        symbol="out",
        letters="n×d_v",
        remarks=_same_as_plain(p, h, all_steps),
    )


def _same_as_plain(
    p: Problem, h: int | None, all_steps: list[int]
) -> Callable[[Callable[[Ref], np.ndarray]], tuple[Msg, ...]]:
    """The note that the stacked rows are the ordinary causal run: that run's stages of this
    head executed again (qkvcalc.plan.reference), with the largest difference."""

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        plain = reference.forward(pipeline.plain_head(p, h), reference.nothing)[("output", h)]
        stacked = np.vstack([value_of(ref("output", h, s)) for s in all_steps])
        return (Msg("note.decode_equal", steps=len(all_steps), gap=gap(plain, stacked)),)

    return remark
