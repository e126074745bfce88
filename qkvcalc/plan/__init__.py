"""The plan of an attention run: from a Problem, the ordered list of stages to compute.

Parse → plan → execute, as einops does. A Spec (qkvcalc.plan.specs) says what one stage is;
the engine executes a plan with numpy, exact mode with fractions, the quiz with a student's own
answers; none of them needs to know what a stage id means. The per-head pipeline is
qkvcalc.plan.pipeline; decoding with a KV cache (qkvcalc.plan.decode) and attention in tiles
(qkvcalc.plan.tiles) are schedules of it; qkvcalc.plan.schedule.plan(p) is the whole list.
"""
