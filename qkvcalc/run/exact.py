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

from dataclasses import replace
from typing import Any

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.plan.specs import Const
from qkvcalc.run.rational import ExactMatrix
from qkvcalc.trace import Trace

# Exact mode is for problems a person could work by hand: past this many multiplications of
# fractions the exact stages are left out (with a note) rather than keep the user waiting.
MAX_PRODUCTS = 100_000

# ---- attaching the exact values to a trace ---------------------------------------------------


def in_exact_mode(p: Problem) -> bool:
    """True when the problem was read with exact=True (its matrices carry their fractions)."""
    first = p.x if p.x is not None else p.q
    return first is not None and first.exact is not None


def products_needed(p: Problem) -> int:
    """How many multiplications of fractions the exact stages take (the measure of the limit)."""
    projections = 0
    if p.projected and p.widths is not None:  # the latents stand in for W_Q, W_K, W_V (a bound)
        assert p.x is not None
        projections = p.x.values.shape[1] * p.n * p.heads * (2 * p.d_k + p.d_v)
    elif p.projected:
        assert p.x is not None and p.wq is not None and p.wk is not None and p.wv is not None
        d_model = p.x.values.shape[1]
        projections = d_model * (
            p.n * p.wq.values.shape[1] + p.m * (p.wk.values.shape[1] + p.wv.values.shape[1])
        )
    return projections + p.heads * p.n * p.m * (p.d_k + 1) + backward_products(p)


def backward_products(p: Problem) -> int:
    """The backward's multiplications of fractions (--backward with `grad_output` given: its
    rational stages are d(concat) = dO·W_Oᵀ and each head's dA = dO·Vᵀ; from a target or
    `attend` the gradient starts from the weights, and no backward stage is rational)."""
    if not p.backward or p.loss is None or p.loss.kind in ("attend", "target"):
        return 0
    d_out = p.loss.matrix.values.shape[1] if p.loss.matrix is not None else 0
    concat = p.n * d_out * p.heads * p.d_v if p.wo is not None else 0
    return concat + p.heads * p.n * p.m * p.d_v


def attach_exact(trace: Trace) -> Trace:
    """The trace with Stage.exact set on its rational stages, and notes on where exactness ends.

    Runs the trace's own plan again with each operation's exact version (qkvcalc.run.ops): a stage
    is exact when its operation has one and its operands are exact. Unchanged when the problem
    was not read in exact mode. A problem too big to work exactly (more than MAX_PRODUCTS
    multiplications) gets a note on its first stage and no exact values.
    """
    from qkvcalc.run.ops import OPS

    p = trace.problem
    if not in_exact_mode(p):
        return trace
    needed = products_needed(p)
    if needed > MAX_PRODUCTS:
        first, *rest = trace.stages
        note = Msg("note.exact_skipped", count=needed, limit=MAX_PRODUCTS)
        return replace(trace, stages=(replace(first, notes=(*first.notes, note)), *rest))

    exact: dict[tuple[Any, ...], ExactMatrix | None] = {}
    stages = []
    for stage in trace.stages:
        op = OPS[stage.op]
        operands = tuple(o.exact if isinstance(o, Const) else exact.get(o) for o in stage.reads)
        value: ExactMatrix | None = None
        notes: tuple[Msg, ...] = ()
        if op.exact is not None and all(o is not None for o in operands):
            value, notes = op.exact(operands, stage.params)
        elif op.exact_stops and any(o is not None for o in operands):
            notes = (Msg(op.exact_stops),)
        exact[stage.ref] = value
        if value is not None and any(cell is None for row in value for cell in row):
            notes += (Msg("note.exact_partial"),)
        stage = replace(
            stage,
            exact=value,
            operands_exact=operands if value is not None else (),
            bias_exact=stage.params.get("bias_exact") if value is not None else None,
            scale_exact=stage.params.get("scale_exact"),
            notes=(*stage.notes, *notes),
        )
        stages.append(stage)
    return replace(trace, stages=tuple(stages))
