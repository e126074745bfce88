"""The named mistakes of `qkvcalc check`, each as the right pipeline with that one mistake put in.

Each mistake is its op's own, beside the quiz's mistakes at the same op (qkvcalc/ops/: the
scale's `no_scale`, the mask's `mask_inverted`, the softmax's `softmax_axis` …): an op's
`in_code` maps a mistake id to the steps of check's plain pipeline
(qkvcalc.check.reference.Steps) it replaces.
This module gathers them from the op table, in the stable order of the ids below (of two
mutants that explain a person's numbers equally, the first is named).

A mutant that cannot run on a problem (Q·K where d_k ≠ m) raises there, never broadcasts, and
says nothing about that problem: a person's einsum may broadcast where a matmul raises.
`nondeterministic` is not a mutant: it is found by calling the function twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from qkvcalc.check.reference import RIGHT, Stages, Steps, run
from qkvcalc.ops.table import OPS

# check's mistake ids, stable, in the order ties are broken
IDS = (
    "softmax_axis",
    "no_scale",
    "scale_dk",
    "scale_twice",
    "scale_after_softmax",
    "kt_missing",
    "scores_transposed",
    "weights_transposed",
    "mask_ignored",
    "mask_inverted",
    "causal_diagonal",
    "causal_transposed",
    "mask_after_softmax",
    "masked_row_nan",
    "masked_row_uniform",
    "no_max_shift",
    "heads_split",
    "heads_concat",
    "gqa_repeat",
    "rope_pairs",
    "layout_transposed",
    "bias_missing",
    "wo_missing",
)


def _gathered() -> dict[str, Mapping[str, Callable[..., Any]]]:
    """Each mistake's replaced steps, from the op that owns it."""
    declared = [(mistake, steps) for op in OPS.values() for mistake, steps in op.in_code.items()]
    owned = dict(declared)
    if set(owned) != set(IDS) or len(owned) != len(declared):  # a programming error
        raise RuntimeError(f"check's mistake ids and the ops' in_code differ: {declared}")
    return {mistake: owned[mistake] for mistake in IDS}


def _put_in(steps: Mapping[str, Callable[..., Any]]) -> Callable[[Steps], Steps]:
    return lambda right: right._replace(**steps)


MUTANTS: dict[str, Callable[[Steps], Steps]] = {m: _put_in(s) for m, s in _gathered().items()}

MISTAKE_IDS = (*MUTANTS, "nondeterministic")


def mutant(mistake: str, problem: dict[str, Any]) -> Stages | None:
    """The stages of `problem` with `mistake` put in; None where that cannot run."""
    try:
        return run(problem, MUTANTS[mistake](RIGHT))
    except (ValueError, IndexError):
        return None
