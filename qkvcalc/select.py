"""Choosing stages and a head from a Trace: `explain --stages weights,output --head 2`.

A 12-head layer records hundreds of stages; a reader often wants a few. `select` returns a
Trace that holds only the chosen stages, in the trace's own order, with their ids unchanged,
so every renderer (and --step) shows them as usual. Looking a stage up by id still finds any
stage of the whole run (a renderer writes the weights' arithmetic from the exponentials, and
the final output is the whole run's), so nothing a shown stage refers to goes missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from qkvcalc.errors import QkvcalcError
from qkvcalc.labels import closest
from qkvcalc.trace import BRIEF_FIRST_STEPS, Selection, Trace

__all__ = ["BRIEF_FIRST_STEPS", "Selection", "brief_steps", "parse_ids", "select", "stage_ids"]


def stage_ids(trace: Trace) -> list[str]:
    """The ids a trace holds, each once, in the order they first appear."""
    return list(dict.fromkeys(stage.id for stage in trace.stages))


def parse_ids(text: str) -> list[str]:
    """'weights, output' -> ['weights', 'output'] (commas or spaces between ids)."""
    return [part for part in text.replace(",", " ").split() if part]


def select(
    trace: Trace, stages: Iterable[str] | str | None = None, head: int | None = None
) -> Trace:
    """The stages of `trace` with one of the ids `stages` (all ids when None) and, with `head`
    = h, of query head h: the per-head stages of the other heads are left out, while the stages
    every head shares (x, source, split, concat and the final output) stay.

    An id the trace does not hold, or a head outside 1…H, is a QkvcalcError that lists the
    valid ones. A single-head problem has one head, head 1.
    """
    whole = trace.whole if isinstance(trace, Selection) and trace.whole is not None else trace
    valid = stage_ids(trace)
    wanted: set[str] | None = None
    if stages is not None:
        ids = parse_ids(stages) if isinstance(stages, str) else [s.strip() for s in stages]
        if not ids:
            raise QkvcalcError("select.no_stages", valid=", ".join(valid))
        unknown = [i for i in ids if i not in valid]
        if unknown:
            # 'running_max@b99': an id with a block or step after it, whose id is valid
            base = re.split(r"[@#\[(:]", unknown[0], maxsplit=1)[0]
            if base != unknown[0] and base in valid:
                raise QkvcalcError("select.qualified_stage", id=unknown[0], base=base)
            close = closest(unknown[0], valid)  # 'score' → 'scores'
            if close is not None:
                raise QkvcalcError(
                    "select.unknown_stage_suggest",
                    id=unknown[0],
                    close=close,
                    valid=", ".join(valid),
                )
            raise QkvcalcError("select.unknown_stage", id=unknown[0], valid=", ".join(valid))
        wanted = set(ids)
    if head is not None:
        heads = trace.problem.heads
        if isinstance(head, bool) or not isinstance(head, int) or not 1 <= head <= heads:
            raise QkvcalcError("select.head_range", head=head, heads=heads)
    chosen = tuple(
        stage
        for stage in trace.stages
        if (wanted is None or stage.id in wanted)
        and (head is None or stage.head is None or stage.head == head)
    )
    return Selection(trace.problem, chosen, trace.warnings, precision=trace.precision, whole=whole)


def brief_steps(trace: Trace, most: int) -> Trace:
    """The trace as `--detail brief` lays it out on a page (Trace.brief, which render() applies
    to every format that lays a trace out as a page)."""
    return trace.brief(most)
