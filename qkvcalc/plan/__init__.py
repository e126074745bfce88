"""The plan of an attention run: from a Problem, the ordered list of stages to compute.

Parse → plan → execute, as einops does. A Spec (qkvcalc.plan.specs) says what one stage is;
the engine executes a plan with numpy, exact mode with fractions, the quiz with a student's own
answers; none of them needs to know what a stage id means. The per-head pipeline is
qkvcalc.plan.pipeline; decoding with a KV cache (qkvcalc.plan.decode) and attention in tiles
(qkvcalc.plan.tiles) are schedules of it.
"""

from __future__ import annotations

from qkvcalc.input.problem import Problem
from qkvcalc.plan import decode, pipeline
from qkvcalc.plan.specs import Ref, Spec, allowed_keys


def plan(p: Problem) -> tuple[Spec, ...]:
    """Every stage of the calculation, in the order a teacher writes them."""
    specs = pipeline.inputs(p)
    if p.decode is not None:  # a prefill, then one token at a time with a KV cache
        pe = p.variants.pe is not None
        x_ref: Ref = ("x_pe", None) if pe else ("x", None)
        if p.multihead:  # which columns each head reads, once for every step
            specs.append(pipeline.split(p))
        specs += decode.decode_plan(p, x_ref, "(X + PE)" if pe else "X")
        return tuple(specs)
    allowed = allowed_keys(p)
    if not p.multihead:
        specs += pipeline.head(p, None, allowed)
        return tuple(specs)
    specs.append(pipeline.split(p))
    for h in range(1, p.heads + 1):
        specs += pipeline.head(p, h, allowed)
    specs += pipeline.combine(p)
    return tuple(specs)
