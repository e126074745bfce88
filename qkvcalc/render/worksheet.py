"""A worksheet (`explain --worksheet`): the problem's inputs filled in, every computed cell blank.

One flag of the render options (RenderOptions.worksheet), read where a page's parts are decided
(qkvcalc.render.document, arith.stage_extras, the terminal's tables), so every format writes the
same worksheet in its own markup. What stays: the stage titles, formulas, shapes, labels, the
"why" sentences, the mask said row by row, and the notes in KEPT, which say only what the
problem gives (sizes, conventions, positions, the scale 1/√d_k) and never a number the student
is asked to work out. A note not listed here is left out, so a new note never gives an answer
away by default. The answer key is the same command without --worksheet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qkvcalc.i18n import Msg
from qkvcalc.ops import features
from qkvcalc.ops.table import OPS

if TYPE_CHECKING:
    from qkvcalc.trace import Stage, Trace

# Notes that say nothing a student computes: the problem's sizes and conventions, what a stage
# reads, the constants it uses (the scale is the problem's, not an answer).
KEPT = frozenset(
    {
        "note.scale_default",
        "note.scale_given",
        "note.why_scale_variance",
        "note.scale_temperature",
        "note.scale_negative",  # (not note.scale_zero: it says the scaled scores, all 0)
        "note.mask_convention",
        "note.causal_topleft",
        "note.causal_positions",
        "note.causal_bottomright",
        "note.kv_shared",
        "note.split",
        "note.gqa_why",
        "note.hidden",
        "note.hidden_rows",
        "note.hidden_cols",
        "note.shuffle",
        "note.pad_rows",
        "note.self_attention",
        "note.self_attention_state",
        "note.dv",
        "note.dv_state",
        "note.layout_torch",
        "note.concat_columns",
        "note.cross_axes",
        "note.pe_sinusoidal",
        "note.pe_given",
        "note.positions",
        "note.decode_prefill",
        "note.decode_prefill_one",
        "note.decode_step",
        "note.decode_cache_start",
        "note.decode_saved",
        "note.decode_memory",
        "note.decode_gqa",
        "note.decode_mask_prefill",
        "note.decode_bottom_right",
        "note.tiles_block",
        "note.tiles_whole",
        "note.tiles_running_max",
        "note.tiles_correction_first",
        "note.tiles_correction",
        "note.tiles_running_sum",
        "note.tiles_acc",
        # (not note.exact_surd: its example, 7/√2, is the doc example's scaled score)
        "note.exact_scale_irrational",
        "note.exact_partial",
        "note.exact_stops",
        "note.exact_stops_tanh",
        "note.brief",
        "note.brief_steps",
        # the backward pass's notes that say how a gradient is laid out or which paths
        # reach it (the loss's value and √d_k's read-out under the softmax are results)
        "note.grad_attend_no_v",
        "note.grad_layout_torch",
        "note.grad_heads_side_by_side",
        "note.grad_kv_shared",
        "note.grad_paths",
        "note.grad_path_one",
        "note.grad_paths_some",
        "note.grad_path_one_of",
        "note.grad_kv_heads_side_by_side",
        "note.grad_pe",
        "note.loss_target_rows",
        "note.loss_target_rows_approx",
        "note.loss_attend_keys",
    }
)  # and each feature's own (features.worksheet_notes)


# Sentences about whole rows that only restate the mask, an input (which keys a query may
# not see); the softmax's row maxima and sums are answers and are left out.
KEPT_ROWS = frozenset({"ui.masked_row"})


def given(stage: Stage) -> bool:
    """A stage whose numbers are the problem's own (X, the source, Q/K/V typed in, a bias or
    position table given): filled in on a worksheet. Every other stage is left blank."""
    return OPS[stage.op].given


def operand_kinds(stage: Stage, trace: Trace) -> list[str]:
    """What each operand of a stage is: "const" (a weight, or one head's slice of it),
    "given" (a stage of the problem's own numbers, such as X) or "computed" (Q, Kᵀ, concat).
    A worksheet fills the first two in and leaves the computed ones blank."""
    out = []
    for operand in stage.reads:
        if isinstance(operand, tuple) and operand and isinstance(operand[0], str):
            sid, head, *rest = operand
            step, block = [*rest, None, None][:2]
            earlier = trace.find(sid, head, step=step, block=block)
            out.append("given" if earlier is not None and given(earlier) else "computed")
        else:
            out.append("const")
    return out


def keeps(note: Msg | None) -> bool:
    """Whether a note (or a row sentence) stays on a worksheet."""
    if note is None or note.key in KEPT or note.key in KEPT_ROWS:
        return True
    return note.key in features.worksheet_notes()
