"""Small text helpers the renderers share (numbers, subscripts, safe labels, elision), and
`printable`, which the CLI's error path uses: light at import, no numpy until a table is drawn."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from qkvcalc.i18n import preset_description, preset_reference, translate
from qkvcalc.labels import MAX_LABEL, display_width, rounded, safe
from qkvcalc.records import NamedTuple

if TYPE_CHECKING:  # at run time this module stays light: the CLI's error path uses printable
    import numpy as np

    from qkvcalc.input.problem import Problem
    from qkvcalc.render import RenderOptions
    from qkvcalc.trace import Stage, Trace

_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def place(stage: Stage, lang: str) -> str:
    """Where a stage belongs beyond its id: 'head 2' (a pair of heads': 'pair 1'),
    'step 1', 'block 3', joined by ' · ' ('' for a stage of the whole run)."""
    parts = []
    if stage.head is not None:
        if stage.pair:
            parts.append(translate("ui.pair", lang, pair=stage.head))
        else:
            parts.append(translate("ui.head", lang, head=stage.head))
    if stage.step is not None:
        # a decode step, or a step of a layer's own (a linear layer's token: its `step_key`)
        parts.append(translate(stage.spec.params.get("step_key", "ui.step"), lang, step=stage.step))
    if stage.block is not None:
        parts.append(translate("ui.block", lang, block=stage.block))
    return " · ".join(parts)


def fmt(value: float, precision: int = 4) -> str:
    """7.0 -> '7'; 4.949747 -> '4.9497'; 0.60615 -> '0.6062'; -inf -> '-∞'. Integers show as
    integers; the rest is rounded half away from zero from the exact value where the stage has
    one (labels.rounded). A number's sign is ASCII '-' everywhere, -∞ included, so a number
    copied out reads back anywhere; the typographic '−' is kept for the operator between two
    numbers (e^(s − max))."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-∞" if value < 0 else "∞"
    nearest = round(value)
    # floating-point noise around a whole number (7.000000000000001) shows as that number; the
    # noise allowed stays below half a unit of the last decimal shown, which it cannot change
    noise = min(1e-9 * max(1.0, abs(value)), 0.5 * 10.0**-precision)
    if abs(value - nearest) <= noise and abs(value) < 1e15:
        return str(int(nearest))
    return rounded(value, precision)


def factor(value: float, precision: int) -> str:
    """A number as a factor in a product: negatives in parentheses, '(-2)'."""
    text = fmt(value, precision)
    return f"({text})" if text.startswith(("-", "−")) else text


def sub(index: int) -> str:
    return str(index).translate(_SUB)


def cell_label(template: str, i: int, j: int) -> str:
    """'q_{i}·k_{j}' -> 'q₁·k₂'; 'Q[{i},{j}]' -> 'Q[1,2]' (1-based)."""
    return (
        template.replace("_{i}", sub(i))
        .replace("_{j}", sub(j))
        .replace("{i}", str(i))
        .replace("{j}", str(j))
    )


MAX_MESSAGE = 2000


def printable(message: str, limit: int = MAX_MESSAGE) -> str:
    """A message for stderr: the input text it echoes (a key, a path, a value) cannot move the
    cursor, change colours or retitle the terminal, and it stays one line of sensible length."""
    return safe(message, limit)


def pick(count: int, limit: int) -> list[int | None]:
    """Which of `count` rows (or columns) to show when at most `limit` fit: the first and last
    ones, with None where the hidden middle goes."""
    if count <= limit:
        return list(range(count))
    head = max(1, (limit - 1) // 2 + (limit - 1) % 2)
    tail = max(1, limit - 1 - head)
    return [*range(head), None, *range(count - tail, count)]


class Corners(NamedTuple):
    """What a table of a (possibly big) matrix shows: the rows and columns (None stands for a
    hidden middle), the values of the rows shown, and how many rows and columns are hidden."""

    row_ids: list[int | None]
    col_ids: list[int | None]
    shown: dict[int, np.ndarray]
    hidden: tuple[int, int]


def corners(value: np.ndarray | Stage, max_rows: int, max_cols: int) -> Corners:
    """The first and last rows and columns of `value` that fit (see pick)."""
    n_rows, n_cols = value.shape
    row_ids, col_ids = pick(n_rows, max(max_rows, 3)), pick(n_cols, max_cols)
    hidden = (
        n_rows - sum(i is not None for i in row_ids),
        n_cols - sum(j is not None for j in col_ids),
    )
    return Corners(row_ids, col_ids, shown_rows(value, row_ids), hidden)


def columns_that_fit(labels: Sequence[str], opts: RenderOptions, cell_width: int) -> int:
    """How many number columns a page of opts.width holds beside a column of row labels."""
    label_w = min(max((display_width(safe(r)) for r in labels[:50]), default=1), MAX_LABEL)
    return max(2, (opts.width - label_w - cell_width) // (opts.precision + 3 + cell_width))


def shown_rows(value: np.ndarray | Stage, row_ids: Sequence[int | None]) -> dict[int, np.ndarray]:
    """The rows a table shows (`row_ids`, from pick), by index. Of a Stage only these rows are
    computed (Stage.value_rows): a table of a 1024×1024 stage costs what its shown rows cost."""
    body = [i for i in row_ids if i is not None]
    values = value.value_rows(body) if hasattr(value, "value_rows") else value[body]
    return dict(zip(body, values, strict=True))


def summary(
    trace: Trace, lang: str, worksheet: bool = False, results_hidden: bool = False
) -> list[str]:
    """The problem in a sentence (sizes, heads, mask) and the preset it came from, as plain
    text: each renderer escapes it its own way. A worksheet leaves the preset's reference out
    (it often tells a result) and says how to fill it in; so does the quiz (`results_hidden`),
    without the worksheet's line."""
    p = trace.problem
    mask = translate(f"ui.mask_{p.mask_kind}", lang)
    if p.key_padding is not None:
        mask = translate("ui.mask_padding", lang, mask=mask)
    key = "ui.problem" if p.projected else "ui.problem_direct"
    sizes = {"n": p.n, "m": p.m, "d_model": p.d_model, "d_k": p.d_k, "d_v": p.d_v}
    lines = [translate(key, lang, **sizes, heads=p.heads, mask=mask)]
    variants = variant_items(p)
    if variants:
        items = ", ".join(translate(k, lang, **params) for k, params in variants)
        lines.append(translate("ui.variants", lang, items=items))
    if "name" in p.meta:
        written = p.meta.get("description", "")
        description = safe(preset_description(p.meta["name"], written, lang), 200)
        key = "ui.preset" if p.preset is not None else "ui.named"
        key += "" if description else "_bare"
        lines.append(translate(key, lang, name=safe(p.meta["name"]), description=description))
        if p.meta.get("reference") and not (worksheet or results_hidden):
            said = preset_reference(p.meta["name"], p.meta["reference"], lang)
            lines.append(translate("ui.preset_reference", lang, reference=safe(said, 2000)))
    elif "edited_from" in p.meta:
        lines.append(translate("ui.edited_from", lang, name=safe(p.meta["edited_from"])))
    if trace.precision is not None:  # --dtype: how it was computed, what went wrong where
        lines += [note.text(lang) for note in trace.precision.notes]
    if worksheet:
        lines.append(translate("ui.worksheet", lang))
    return lines


def variant_items(p: Problem) -> list[tuple[str, dict[str, object]]]:
    """What a problem adds to the paper's attention (positions, the features …), as catalog
    keys and their values, in the order the stages apply them."""
    v = p.variants
    out: list[tuple[str, dict[str, object]]] = []
    if v.positional is not None:
        out.append((f"ui.variant.pe_{v.positional}", {}))
    from qkvcalc.ops import features  # here: the CLI's error path imports this module light

    for f, value in features.active(p):
        out += f.header(value) if f.header is not None else []
    if v.causal_align == "bottom-right":
        out.append(("ui.variant.bottom_right", {}))
    if v.positions_given:
        out.append(("ui.variant.positions", {}))
    if p.decode is not None:
        out.append(("ui.variant.decode", {"prefill": p.decode}))
    if p.tiles is not None:
        out.append(("ui.variant.tiles", {"tiles": p.tiles}))
    return out
