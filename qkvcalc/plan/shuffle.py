"""Shuffling the tokens (`--shuffle "3 1 2"`): the demonstration that attention by itself does not
see order.

The tokens move; the places stay. Token order[i] goes to place i: its row of X (or of Q, when
Q, K, V are given), its name and, in self-attention, its key and value (so its key_padding entry
and its column of a 0/1 mask move with it). What belongs to a place does not move: positions,
a position encoding, a causal mask (narrowed or not), a score bias (T5's: by distance). The
run of the shuffled problem then says how its output compares with the original's, row for row: the
same rows, moved, when nothing tells attention the order; different rows when something does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.input.problem import Problem
from qkvcalc.labels import safe
from qkvcalc.ops import features
from qkvcalc.plan.gap import ROUNDING, gap
from qkvcalc.trace import Trace

# The largest difference, relative to the largest output, that is rounding and not a change.
SAME = ROUNDING


def parse_order(text: str, n: int) -> tuple[int, ...]:
    """ "3 1 2" (or "3,1,2"): the original token numbers, 1…n, in their new order; 0-based."""
    words = text.replace(",", " ").split()
    numbers = []
    for word in words:
        if not (word.isascii() and word.isdigit()) or len(word) > 9:
            raise QkvcalcError("shuffle.not_a_number", word=safe(word, 40), n=n)
        numbers.append(int(word))
    if sorted(numbers) != list(range(1, n + 1)):
        raise QkvcalcError("shuffle.not_a_permutation", given=safe(text, 80), n=n)
    return tuple(k - 1 for k in numbers)


def _rows(matrix: Matrix | None, order: np.ndarray, cols: bool = False) -> Matrix | None:
    if matrix is None:
        return None
    values = matrix.values[:, order] if cols else matrix.values[order]
    exact = matrix.exact
    if exact is not None:
        exact = (
            tuple(tuple(row[j] for j in order) for row in exact)
            if cols
            else tuple(exact[i] for i in order)
        )
    return Matrix(values, exact)


def shuffled(p: Problem, order: Sequence[int]) -> Problem:
    """The problem with token order[i] at place i (see the module's docstring)."""
    rows = np.asarray(order, dtype=np.intp)
    # Self-attention: the keys are the same tokens (X's rows, or Q, K, V of one sequence).
    keys_move = not p.cross if p.projected else p.source_tokens == p.tokens
    cols = rows if keys_move else np.arange(p.m)
    mask = p.mask[np.ix_(rows, cols)] if p.mask is not None else None
    padding = p.key_padding[cols] if p.key_padding is not None else None
    return replace(
        p,
        tokens=tuple(p.tokens[i] for i in rows),
        source_tokens=tuple(p.source_tokens[j] for j in cols),
        x=_rows(p.x, rows),
        q=_rows(p.q, rows),
        k=_rows(p.k, cols),
        v=_rows(p.v, cols),
        mask=mask,
        key_padding=padding,
        meta={},  # a shuffled preset is not the preset any more
    )


def order_reasons(p: Problem) -> list[Msg]:
    """What tells this attention the order of its tokens (empty: nothing does)."""
    v = p.variants
    reasons = []
    if p.mask_kind == "causal":
        reasons.append(Msg("shuffle.by_causal"))
    if v.pe is not None:
        reasons.append(Msg("shuffle.by_pe"))
    reasons += [Msg(key) for key in features.order_reasons(p)]  # a rotation, a bias …
    if p.mask_kind == "custom":
        reasons.append(Msg("shuffle.by_custom_mask"))
    return reasons


def compare(original: Trace, moved: Trace, order: Sequence[int]) -> Msg:
    """The note on the shuffled run's output: its row i against the original's row order[i]."""
    before = np.asarray(original.output)[list(order)]
    after = np.asarray(moved.output)
    with np.errstate(invalid="ignore"):
        diff = float(np.max(np.abs(after - before), initial=0.0))
    size = float(np.max(np.abs(before), initial=0.0))
    names = " ".join(safe(t, 20) for t in moved.problem.tokens)
    if diff <= SAME * max(size, 1.0):
        return Msg("note.shuffle_demo", order=names, diff=gap(after, before))
    reasons = order_reasons(moved.problem)
    return Msg("note.shuffle_changed", order=names, diff=f"{diff:.4g}", reasons=reasons)


def explain_shuffled(p: Problem, order: Sequence[int]) -> Trace:
    """The trace of the shuffled problem, its output carrying the comparison with the original."""
    from qkvcalc.run.engine import run

    original = run(p)
    moved = run(shuffled(p, order))
    note = compare(original, moved, order)
    last = moved.stages[-1]
    stages = (*moved.stages[:-1], replace(last, notes=(*last.notes, note)))
    return replace(moved, stages=stages)
