"""The features of attention as plug-ins: one module each, listed here in pipeline order.

A feature module (qkvcalc.features.base.Feature) holds everything about one mechanism: its
input key and how it is checked, the stage it adds to each head, its operations, its cell
arithmetic, its header line, its worksheet policy, its PyTorch lines and its JSON echo. The
layers ask this registry; none of them names a feature. Adding one is a module and a line here,
its key in the fields table (qkvcalc.input.fields, with FEATURE_OPTIONS for a command-line
option), its sentences in both catalogs, its docs and its tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qkvcalc.features import sinks, softcap, window
from qkvcalc.features.base import Feature, Logits, Reading, Sizes, Work

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem
    from qkvcalc.plan.specs import Spec
    from qkvcalc.run.op import Op

__all__ = ["REGISTRY", "Feature", "Logits", "Sizes", "active", "ops", "work"]

REGISTRY: tuple[Feature, ...] = (softcap.FEATURE, window.FEATURE, sinks.FEATURE)


def active(p: Problem) -> list[tuple[Feature, Any]]:
    """The features this problem uses, in pipeline order, each with its value."""
    used = p.variants.features
    return [(f, used[f.name]) for f in REGISTRY if f.name in used]


def around_softmax(p: Problem, exp: Spec, weights: Spec, reading: Reading) -> tuple[Spec, Spec]:
    """A head's exp and weights stages as the features this problem uses make them."""
    for feature, value in active(p):
        if feature.softmax is not None:
            exp, weights = feature.softmax(p, value, exp, weights, reading)
    return exp, weights


def tiles_start(p: Problem, h: int | None) -> tuple[float, float]:
    """Where head h's online softmax starts: (m₀, ℓ₀) = (−∞, 0) unless a feature says."""
    start = (float("-inf"), 0.0)
    for feature, value in active(p):
        if feature.tiles_start is not None:
            start = feature.tiles_start(value, h)
    return start


def ops() -> dict[str, Op]:
    """Every feature's operations, by name (the op table merges them)."""
    return {op.name: op for f in REGISTRY for op in f.ops}


def work() -> dict[str, Work]:
    """Every feature's cell arithmetic, by op name (the writers merge it)."""
    return {name: fn for f in REGISTRY for name, fn in f.work.items()}


def worksheet_notes() -> frozenset[str]:
    """The notes of the features that tell no result: a worksheet keeps them."""
    return frozenset(key for f in REGISTRY for key in f.worksheet_notes)
