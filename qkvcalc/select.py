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
from dataclasses import dataclass

from qkvcalc.errors import QkvcalcError
from qkvcalc.labels import closest
from qkvcalc.trace import Stage, Trace


@dataclass(frozen=True, eq=False, repr=False)
class Selection(Trace):
    """Some stages of a Trace. `whole` is the run they were chosen from."""

    whole: Trace | None = None

    def stage(
        self,
        stage_id: str,
        head: int | None = None,
        *,
        step: int | None = None,
        block: int | None = None,
    ) -> Stage:
        if self.whole is not None:
            return self.whole.stage(stage_id, head, step=step, block=block)
        return super().stage(stage_id, head, step=step, block=block)


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


# --detail brief on a page: a head's per-token steps (a linear-attention layer's states, one
# d_k × d_v table per token) past this many show as the first two and the last, as a table past
# RenderOptions.max_rows rows shows its first and last rows
BRIEF_FIRST_STEPS = 2


def brief_steps(trace: Trace, most: int) -> Trace:
    """The trace as `--detail brief` lays it out on a page: of the stages with a step of a
    layer's own (a linear layer's state after each token) that a head has more than `most` of,
    the first BRIEF_FIRST_STEPS and the last are kept, the last with a note that says which
    are left out and how to see them. Every other stage is kept; the trace itself when none
    is left out. Looking a stage up still finds it in the whole run."""
    from dataclasses import replace

    from qkvcalc.i18n import Msg

    runs: dict[tuple[str, int | None], list[int]] = {}
    for k, stage in enumerate(trace.stages):
        if stage.step is not None and stage.spec.params.get("step_key") == "ui.token_step":
            runs.setdefault((stage.id, stage.head), []).append(k)
    left_out: set[int] = set()
    noted: dict[int, Msg] = {}
    for (stage_id, head), found in runs.items():
        if len(found) <= most:
            continue
        gone = found[BRIEF_FIRST_STEPS:-1]
        left_out.update(gone)
        first, last = trace.stages[gone[0]], trace.stages[gone[-1]]
        noted[found[-1]] = Msg(
            first.spec.params.get("brief_note", "note.brief_steps"),  # a gradient's own words
            id=stage_id,
            from_symbol=first.spec.symbol,
            to_symbol=last.spec.symbol,
            first=first.step,
            last=last.step,
            count=len(gone),
            total=len(found),
            head=head or 1,
        )
    if not left_out:
        return trace
    kept = tuple(
        replace(stage, notes=(*stage.notes, noted[k])) if k in noted else stage
        for k, stage in enumerate(trace.stages)
        if k not in left_out
    )
    whole = trace.whole if isinstance(trace, Selection) and trace.whole is not None else trace
    return Selection(trace.problem, kept, trace.warnings, precision=trace.precision, whole=whole)
