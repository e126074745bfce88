"""Exact values for --exact: the stages whose numbers stay rational, as fractions.

Rational inputs give rational projections (biases included), Kᵀ and Q·Kᵀ. The scaled scores
stay rational when the scale does (d_k a perfect square, or a rational scale given); with the
default 1/√d_k and d_k not a square, a scaled score is a rational over a square root, kept
symbolically as a Surd and written `7/√2`. Softmax exponentiates, and e^x of a rational x ≠ 0
is irrational (Lindemann), so the exponentials, the weights and everything after stay decimal;
so does a cell that depends on an irrational input such as sqrt(2) (its exact value is None).

Pure Python fractions, no numpy in the arithmetic. `attach_exact(trace)` fills in Stage.exact
(and the exact operands the arithmetic shows); engine.run calls it when the problem was read
in exact mode. Big problems are skipped with a note instead of hanging: see MAX_PRODUCTS.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from qkvcalc.i18n import Msg
from qkvcalc.problem import Matrix, Problem
from qkvcalc.trace import Stage, Trace

# Exact mode is for problems a person could work by hand: past this many multiplications of
# fractions the exact stages are left out (with a note) rather than keep the user waiting.
MAX_PRODUCTS = 100_000

NEG_INF = float("-inf")  # a masked score: the same -inf the decimals carry ("-inf" in JSON)


@dataclass(frozen=True)
class Surd:
    """coef / √root with root square-free and > 1: a scaled score when √d_k is irrational.

    Written in one canonical form, an integer over the square root of an integer, with the
    smallest such root: 7/√2, -3/√8 (= -3/(2√2)), 1/√18 (= (1/3)/√2). The form reads like the
    formula (score / √d_k) and goes back to the same number.
    """

    coef: Fraction
    root: int

    def __str__(self) -> str:
        # (p/q)/√s = p/√(q²·s); with p/q in lowest terms and s square-free, q²·s is minimal
        p, q = self.coef.numerator, self.coef.denominator
        return f"{p}/√{q * q * self.root}"

    def __float__(self) -> float:
        return float(self.coef) / math.sqrt(self.root)


ExactCell = Fraction | Surd | float | None  # float: only NEG_INF, a masked score
ExactMatrix = tuple[tuple[ExactCell, ...], ...]
Rational = Fraction | None  # None: irrational (it depends on a square root in the input)


def split_square(d: int) -> tuple[int, int]:
    """d = r²·s with s square-free: (r, s). 8 -> (2, 2); 4 -> (2, 1); 6 -> (1, 6)."""
    r, s = 1, d
    f = 2
    while f * f <= s:
        while s % (f * f) == 0:
            s //= f * f
            r *= f
        f += 1
    return r, s


def over_root(value: Fraction, d: int) -> Fraction | Surd:
    """value / √d, exactly: a Fraction when √d is rational (or value is 0), else a Surd."""
    r, s = split_square(d)
    coef = value / r
    return coef if s == 1 or coef == 0 else Surd(coef, s)


# ---- matrices of fractions, as on the board ---------------------------------------------------


def _times(a: Rational, b: Rational) -> Rational:
    """a·b; a known zero times anything (even an irrational) is exactly 0."""
    if a is None or b is None:
        return Fraction(0) if a == 0 or b == 0 else None
    return a * b


def matmul(
    a: Sequence[Sequence[Rational]],
    b: Sequence[Sequence[Rational]],
    bias: Sequence[Rational] | None = None,
) -> tuple[tuple[Rational, ...], ...]:
    """A·B (+ bias on every row); a cell with any irrational term is None."""
    # [n, k] @ [k, m] (+ [m]) -> [n, m]
    out = []
    for row in a:
        cells: list[Rational] = []
        for j in range(len(b[0])):
            terms = [_times(x, b[t][j]) for t, x in enumerate(row)]
            if bias is not None:
                terms.append(bias[j])
            total: Rational = Fraction(0)
            for term in terms:
                total = None if total is None or term is None else total + term
            cells.append(total)
        out.append(tuple(cells))
    return tuple(out)


def transpose(a: Sequence[Sequence[ExactCell]]) -> ExactMatrix:
    # [m, d_k] -> [d_k, m]
    return tuple(zip(*a, strict=True))


def columns(a: Sequence[Sequence[ExactCell]], cols: slice) -> ExactMatrix:
    return tuple(tuple(row[cols]) for row in a)


def _scale(scores: Sequence[Sequence[Rational]], p: Problem) -> ExactMatrix | None:
    """Q·Kᵀ times the scale: exact for 1/√d_k and for a rational scale; None otherwise."""
    if p.scale_given is None:
        return tuple(
            tuple(None if s is None else over_root(s, p.d_k) for s in row) for row in scores
        )
    factor = p.scale_given.exact
    if factor is None:
        return None
    return tuple(tuple(None if s is None else s * factor for s in row) for row in scores)


# ---- attaching the exact values to a trace ---------------------------------------------------


def in_exact_mode(p: Problem) -> bool:
    """True when the problem was read with exact=True (its matrices carry their fractions)."""
    first = p.x if p.x is not None else p.q
    return first is not None and first.exact is not None


def products_needed(p: Problem) -> int:
    """How many multiplications of fractions the exact stages take (the measure of the limit)."""
    projections = 0
    if p.projected:
        assert p.x is not None and p.wq is not None and p.wk is not None and p.wv is not None
        d_model = p.x.values.shape[1]
        projections = d_model * (
            p.n * p.wq.values.shape[1] + p.m * (p.wk.values.shape[1] + p.wv.values.shape[1])
        )
    return projections + p.heads * p.n * p.m * (p.d_k + 1)


def _exact(m: Matrix | None) -> tuple[tuple[Rational, ...], ...] | None:
    return None if m is None else m.exact


def _bias(m: Matrix | None, cols: slice) -> tuple[Rational, ...] | None:
    return None if m is None or m.exact is None else tuple(m.exact[0][cols])


@dataclass
class _HeadExact:
    """One head's exact stages, with the exact operands each stage's arithmetic shows."""

    stages: dict[str, ExactMatrix | None]
    operands: dict[str, tuple[ExactMatrix | None, ...]]
    biases: dict[str, tuple[Rational, ...] | None]


def _head(p: Problem, head: int) -> _HeadExact:
    g = p.kv_head_of(head)
    qs = slice((head - 1) * p.d_k, head * p.d_k)
    ks = slice((g - 1) * p.d_k, g * p.d_k)
    vs = slice((g - 1) * p.d_v, g * p.d_v)
    stages: dict[str, ExactMatrix | None] = {}
    operands: dict[str, tuple[ExactMatrix | None, ...]] = {}
    biases: dict[str, tuple[Rational, ...] | None] = {}
    if p.projected:
        x = _exact(p.x)
        src = _exact(p.source) if p.source is not None else x
        assert x is not None and src is not None
        for sid, inputs, cols in (("q", x, qs), ("k", src, ks), ("v", src, vs)):
            w = _exact(getattr(p, f"w{sid}"))
            assert w is not None
            w_cols = columns(w, cols)
            bias = _bias(getattr(p, f"b{sid}"), cols)
            # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
            stages[sid] = matmul(inputs, w_cols, bias)  # type: ignore[arg-type]
            operands[sid] = (inputs, w_cols)
            biases[sid] = bias
    else:
        for sid, cols in (("q", qs), ("k", ks), ("v", vs)):
            given = _exact(getattr(p, sid))
            assert given is not None
            stages[sid] = columns(given, cols)
    q, k = stages["q"], stages["k"]
    assert q is not None and k is not None
    kt = transpose(k)
    stages["kt"] = kt
    # [n, d_k] @ [d_k, m] -> [n, m]
    scores = matmul(q, kt)  # type: ignore[arg-type]
    stages["scores"] = scores
    operands["scores"] = (q, kt)
    stages["scaled"] = _scale(scores, p)
    operands["scaled"] = (scores,)
    return _HeadExact(stages, operands, biases)


def _masked(scaled: ExactMatrix | None, stage: Stage) -> ExactMatrix | None:
    """The scaled scores where a key may be attended, -inf where it is masked."""
    if scaled is None or stage.allowed is None:
        return None
    return tuple(
        tuple(cell if ok else NEG_INF for cell, ok in zip(row, allowed, strict=True))
        for row, allowed in zip(scaled, stage.allowed.tolist(), strict=True)
    )


def _has_gap(matrix: ExactMatrix) -> bool:
    return any(cell is None for row in matrix for cell in row)


def attach_exact(trace: Trace) -> Trace:
    """The trace with Stage.exact set on its rational stages, and notes on where exactness ends.

    Unchanged when the problem was not read in exact mode. A problem too big to work exactly
    (more than MAX_PRODUCTS multiplications) gets a note on its first stage and no exact values.
    """
    p = trace.problem
    if not in_exact_mode(p):
        return trace
    needed = products_needed(p)
    if needed > MAX_PRODUCTS:
        first, *rest = trace.stages
        note = Msg("note.exact_skipped", count=needed, limit=MAX_PRODUCTS)
        return replace(trace, stages=(replace(first, notes=(*first.notes, note)), *rest))

    heads = {h: _head(p, h) for h in range(1, p.heads + 1)}
    inputs = {"x": _exact(p.x), "source": _exact(p.source)}
    stages = []
    for stage in trace.stages:
        work = heads[stage.head or 1]
        if stage.head is None and stage.id in inputs:
            stage = replace(stage, exact=inputs[stage.id])
        elif stage.id in ("q", "k", "v", "kt", "scores"):
            stage = replace(
                stage,
                exact=work.stages[stage.id],
                operands_exact=work.operands.get(stage.id, ()),
                bias_exact=work.biases.get(stage.id),
            )
        elif stage.id == "scaled":
            stage = _scaled(stage, work.stages["scaled"], work.operands["scaled"], p)
        elif stage.id == "masked":
            scaled = work.stages["scaled"]
            stage = replace(stage, exact=_masked(scaled, stage), operands_exact=(scaled,))
        elif stage.id == "exp":
            stage = _noted(stage, Msg("note.exact_stops"))
        if stage.exact is not None and _has_gap(stage.exact):
            stage = _noted(stage, Msg("note.exact_partial"))
        stages.append(stage)
    return replace(trace, stages=tuple(stages))


def _noted(stage: Stage, note: Msg) -> Stage:
    return replace(stage, notes=(*stage.notes, note))


def _scaled(
    stage: Stage,
    exact: ExactMatrix | None,
    operands: tuple[ExactMatrix | None, ...],
    p: Problem,
) -> Stage:
    """The scaled stage with its exact values, and a note on how they are written (or why not)."""
    given = p.scale_given
    stage = replace(
        stage,
        exact=exact,
        operands_exact=operands,
        scale_exact=None if given is None else given.exact,
    )
    if exact is None:
        return _noted(stage, Msg("note.exact_scale_irrational", scale=f"{p.scale:g}"))
    if any(isinstance(cell, Surd) for row in exact for cell in row):
        return _noted(stage, Msg("note.exact_surd", d_k=p.d_k))
    return stage
