"""Grading a person's answers against the right ones: where they first differ, and which named
mistake (qkvcalc.check.mutants) explains every difference.

An answer is compared by the pieces it gives: its output; its weights when it returns
(output, weights); every stage it names when it returns a dict of stages. Numbers agree within
rtol 1e-5 (their code may compute in float32) and NaN agrees with NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from qkvcalc.check.child import Answer
from qkvcalc.check.mutants import MUTANTS, mutant
from qkvcalc.check.problems import Case
from qkvcalc.check.reference import Stages, key, run, weights
from qkvcalc.plan import ids

RTOL, ATOL = 1e-5, 1e-9


@dataclass(frozen=True)
class Difference:
    """The first cell where the person's answer parts from the right one."""

    stage: str  # a stage id
    head: int | None
    cell: tuple[int, int] | None  # (row, column), 1-based; None when the shapes differ
    theirs: Any  # the number (or the shape, when shapes differ)
    right: Any


def _fit(theirs: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A torch habit forgiven: leading dimensions of size 1 (a batch of one) dropped."""
    while theirs.ndim > len(shape) and theirs.shape[0] == 1:
        theirs = theirs[0]
    return theirs


def agree(theirs: np.ndarray, right: np.ndarray) -> bool:
    theirs = _fit(theirs, right.shape)
    if theirs.shape != right.shape:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.allclose(theirs, right, rtol=RTOL, atol=ATOL, equal_nan=True))


def pieces(answer: Answer, stages: Stages) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(stage key, theirs, right) for every piece the answer gives, in the pipeline's order."""
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    if answer.stages is not None:
        given = {k.lower(): v for k, v in answer.stages.items()}
        for name, right in stages.items():
            if name.lower() in given:
                found.append((name, given[name.lower()], right))
        return found
    if answer.weights is not None:
        found.append(("weights", answer.weights, weights(stages)))
    if answer.output is not None:
        found.append(("output", answer.output, stages["output"]))
    return found


def same(answer: Answer, stages: Stages | None) -> bool:
    """Whether the answer agrees with these stages in every piece it gives."""
    if stages is None:
        return answer.raised is not None
    if answer.raised is not None:
        return False
    return all(agree(theirs, right) for _, theirs, right in pieces(answer, stages))


def first_difference(answer: Answer, stages: Stages) -> Difference | None:
    for name, theirs, right in pieces(answer, stages):
        if agree(theirs, right):
            continue
        stage, _, head = name.partition("@h")
        theirs = _fit(theirs, right.shape)
        if theirs.ndim == 3 and stage == ids.WEIGHTS:  # (output, weights) of several heads
            return _cell(stage, theirs, right)
        if theirs.shape != right.shape:
            return Difference(
                stage, int(head) if head else None, None, list(theirs.shape), list(right.shape)
            )
        i, j = _where(theirs, right)
        return Difference(
            stage,
            int(head) if head else None,
            (i + 1, j + 1),
            float(theirs[i, j]),
            float(right[i, j]),
        )
    return None


def _cell(stage: str, theirs: np.ndarray, right: np.ndarray) -> Difference:
    if theirs.shape != right.shape:
        return Difference(stage, None, None, list(theirs.shape), list(right.shape))
    for h in range(right.shape[0]):
        if not agree(theirs[h], right[h]):
            i, j = _where(theirs[h], right[h])
            return Difference(
                stage, h + 1, (i + 1, j + 1), float(theirs[h, i, j]), float(right[h, i, j])
            )
    raise AssertionError("no cell differs")


def _where(theirs: np.ndarray, right: np.ndarray) -> tuple[int, int]:
    a, b = np.atleast_2d(theirs), np.atleast_2d(right)
    with np.errstate(invalid="ignore"):
        close = np.isclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
    i, j = np.argwhere(~close)[0]
    return int(i), int(j)


def explaining(cases: list[Case], answers: list[Answer | None]) -> str | None:
    """The mistake whose mutant gives the person's answer on every problem where it differs
    from the right one; of several, the one that agrees with them on the most problems.
    A problem the mutant cannot run on (its shapes do not fit that mistake) is no evidence
    either way, but it must give their answer on at least one problem where they differ."""
    ran = [(c, a) for c, a in zip(cases, answers, strict=True) if a is not None]
    wrong = [k for k, (c, a) in enumerate(ran) if a.raised is None and not same(a, run(c.problem))]
    if not wrong:
        return None
    best: tuple[int, str] | None = None
    for mistake in MUTANTS:
        found = [mutant(mistake, c.problem) for c, _ in ran]
        outcomes = [same(a, m) for (_, a), m in zip(ran, found, strict=True)]
        shown = [k for k in wrong if found[k] is not None]
        if shown and all(outcomes[k] for k in shown):
            score = sum(outcomes)
            if best is None or score > best[0]:
                best = (score, mistake)
    return None if best is None else best[1]


def wrong_shape(
    answer: Answer, problem: dict[str, Any]
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(their shape, the right shape) when their output's shape is not the right one (a batch
    of one forgiven); None when it is, or when there is no output."""
    if answer.output is None:
        return None
    right = run(problem)["output"]
    theirs = _fit(answer.output, right.shape)
    return None if theirs.shape == right.shape else (tuple(theirs.shape), tuple(right.shape))


def heads_of(name: str) -> tuple[str, int | None]:
    stage, _, head = name.partition("@h")
    return stage, int(head) if head else None


__all__ = [
    "Difference",
    "agree",
    "explaining",
    "first_difference",
    "key",
    "same",
    "wrong_shape",
]
