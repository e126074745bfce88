"""Which schedule a run is: the whole run (every head's pipeline, then the concat and W_O), or
decoding with a KV cache (qkvcalc.plan.decode); attention in tiles is the whole run whose heads
end in blocks of keys (qkvcalc.plan.tiles). `plan(p)` is the list of stages the engine runs."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from qkvcalc.errors import QkvcalcError
from qkvcalc.ops import features
from qkvcalc.plan import pipeline
from qkvcalc.plan.masks import allowed_keys
from qkvcalc.plan.specs import (
    Ref,
    Spec,
)

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem


def plan(p: Problem) -> tuple[Spec, ...]:
    """Every stage of the calculation, in the order a teacher writes them."""
    for feature, value in features.active(p):  # a layer with no gradients yet (a linear layer)
        if p.backward and feature.no_backward:
            raise QkvcalcError(feature.no_backward)
        refused = feature.no_backward_when(value) if feature.no_backward_when else ""
        if p.backward and refused:
            raise QkvcalcError(refused)
    specs = pipeline.inputs(p)
    # decode and the backward pass are loaded when a run asks for them: `explain --preset doc`
    # starts without them (benchmarks/bench.py measures its start)
    if p.decode is not None:  # a prefill, then one token at a time with a KV cache
        from qkvcalc.plan import decode

        if p.backward:
            from qkvcalc.plan import backward

            backward.backward(p, specs)  # refused, with the reason
        pe = p.variants.pe is not None
        x_ref: Ref = ("x_pe", None) if pe else ("x", None)
        if p.multihead and features.projecting(p) is None:  # each head's columns, once
            specs.append(pipeline.split(p))
        specs += decode.decode_plan(p, x_ref, "(X + PE)" if pe else "X")
        return tuple(specs)
    allowed = allowed_keys(p)
    if not p.multihead:
        specs += pipeline.head(p, None, allowed)
    else:
        if features.projecting(p) is None:  # the latents' heads say their own columns
            specs.append(pipeline.split(p))
        reads: list[Ref] = []  # each head's last stage: what the concat joins
        for h in range(1, p.heads + 1):
            head = pipeline.head(p, h, allowed)
            specs += head
            reads.append(head[-1].ref)
        joined, reads = features.joined(p, reads)  # a feature's, after every head
        specs += joined
        width = {s.ref: len(s.cols) for s in specs}
        specs += pipeline.combine(p, reads, [width[r] for r in reads])
    if p.backward:  # the gradients, from the loss back to the weights (qkvcalc.plan.backward)
        from qkvcalc.plan import backward

        # in tiles, the note that compares with the plain backward runs the plan without them
        specs += backward.backward(p, specs, lambda: plan(replace(p, tiles=None)))
    return tuple(specs)
