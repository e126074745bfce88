"""The terminal rendering: every stage as a rich table, with its explanation and arithmetic.

`stage_blocks` gives one renderable per stage (the step mode shows them one at a time);
`render_trace` joins them; `render_text` returns the plain or coloured text of a fixed width.
Text that came from the input (token names) always goes into rich as Text, never as markup.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style, exact_text, notes_and_work, row_summaries, split_rows
from qkvcalc.render.text import display_width, fmt, pick, safe, summary
from qkvcalc.trace import Stage, Trace

GAP = "   "  # between two columns of a matrix table


def _pad(renderable: RenderableType, pad: tuple[int, int, int, int]) -> Padding:
    """Indent without filling the line: no trailing spaces in files and pipes."""
    return Padding(renderable, pad, expand=False)


def _t(lang: str, key: str, **params: object) -> str:
    return translate(key, lang, **params)


def _heat(weight: float) -> str:
    """A background for a weight in [0, 1]: pale to deep blue, with readable text on it."""
    w = min(max(weight, 0.0), 1.0)
    r, g, b = (int(255 - w * (255 - c)) for c in (30, 90, 200))
    return f"{'white' if w > 0.55 else 'black'} on rgb({r},{g},{b})"


def _shape(stage_or_array: Stage | np.ndarray) -> str:
    rows, cols = stage_or_array.shape
    return f"{rows}×{cols}"


def matrix_table(
    value: np.ndarray,
    name: str,
    rows: Sequence[str],
    cols: Sequence[str],
    opts: RenderOptions,
    *,
    width: int | None = None,
    heat: bool = False,
    hidden: list[tuple[int, int]] | None = None,
    exact: Sequence[Sequence[Any]] | None = None,
) -> Text:
    """A labelled table of a matrix; a big one shows its corners and elides its middle.

    Laid out here as lines of text (a header, a rule, one line per row) rather than as a rich
    Table: only the cells shown are formatted and measured, so a 1024×1024 matrix costs what a
    4×4 one does. `exact` (--exact): a cell's exact value, shown where it is not None.
    """
    n_rows, n_cols = value.shape
    width = width or opts.width
    row_ids = pick(n_rows, max(opts.max_rows, 3))
    body_rows = [i for i in row_ids if i is not None]
    label_w = max(
        [display_width(name)] + [display_width(safe(rows[i])) for i in body_rows], default=1
    )

    def cell(i: int, j: int) -> tuple[str, str]:
        v = float(value[i, j])
        if v == -math.inf:
            return "−∞", "dim"
        if exact is not None and exact[i][j] is not None:
            return exact_text(exact[i][j], opts.precision), ""
        return fmt(v, opts.precision), _heat(v) if heat and opts.color else ""

    # A first guess of how many columns fit, from a sample of labels; corrected below.
    guess = max(opts.precision + 3, max((display_width(safe(c)) for c in cols[:50]), default=1))
    if exact is not None:  # fractions and surds are wider than decimals
        sample = [
            exact_text(c, opts.precision) for r in exact[:20] for c in r[:20] if c is not None
        ]
        guess = max(guess, max(map(display_width, sample), default=0))
    fit = max(2, (width - label_w) // (guess + len(GAP)))
    while True:  # as many columns as the width holds: the first ones, …, the last ones
        col_ids = pick(n_cols, fit)
        columns: list[list[tuple[str, str]]] = []
        for j in col_ids:
            if j is None:
                columns.append([("…", "")] + [("⋮" if i is None else "…", "") for i in row_ids])
            else:
                head = (safe(cols[j]), "bold")
                columns.append([head] + [("⋮", "") if i is None else cell(i, j) for i in row_ids])
        widths = [max(display_width(text) for text, _ in column) for column in columns]
        total = label_w + sum(w + len(GAP) for w in widths)
        if total <= width or fit <= 2:
            break
        fit = min(fit, len(col_ids)) - 1

    labels = [(name, "bold cyan")] + [
        ("⋮", "") if i is None else (safe(rows[i]), "bold") for i in row_ids
    ]
    table = Text(no_wrap=True, overflow="crop")
    for line, (label, label_style) in enumerate(labels):
        if line == 1:
            table.append("━" * total + "\n")
        table.append(label, label_style)
        table.append(" " * (label_w - display_width(label)))
        for column, w in zip(columns, widths, strict=True):
            text, style = column[line]
            table.append(GAP + " " * (w - display_width(text)))
            table.append(text, style)
        if line < len(labels) - 1:
            table.append("\n")
    if hidden is not None:
        hidden.append(
            (
                n_rows - len(body_rows),
                n_cols - sum(j is not None for j in col_ids),
            )
        )
    return table


def beside(blocks: Sequence[Text]) -> Text:
    """Blocks of text side by side, aligned at the top, one space apart: A · B = C."""
    columns = [block.split("\n") for block in blocks]
    widths = [max((display_width(line.plain) for line in column), default=0) for column in columns]
    height = max(len(column) for column in columns)
    out = Text(no_wrap=True, overflow="crop")
    for r in range(height):
        for k, (column, w) in enumerate(zip(columns, widths, strict=True)):
            line = column[r] if r < len(column) else Text("")
            out.append(" " if k else "")
            out.append_text(line)
            out.append(" " * (w - display_width(line.plain)))
        if r < height - 1:
            out.append("\n")
    return out


def _operand_view(stage: Stage, opts: RenderOptions) -> RenderableType | None:
    """A · B = C side by side, when all three fit across the screen."""
    if stage.op != "matmul" or not stage.names:
        return None
    a, b = stage.operands
    if (a.shape[1] + b.shape[1] + stage.shape[1]) * 4 > opts.width or max(
        a.shape[0], b.shape[0]
    ) > opts.max_rows:
        return None  # cannot fit: not worth laying out
    # --exact: the operands, bias and result as fractions, where the stage recorded them
    ea, eb = stage.operands_exact if opts.exact and len(stage.operands_exact) == 2 else (None, None)
    e_bias = (stage.bias_exact,) if opts.exact and stage.bias_exact is not None else None
    e_value = stage.exact if opts.exact else None
    parts = [
        matrix_table(a, stage.names[0], stage.rows, stage.inner, opts, exact=ea),
        Text("\n·"),
        matrix_table(b, stage.names[1], stage.inner, stage.cols, opts, exact=eb),
    ]
    if stage.bias is not None:
        parts += [
            Text("\n+"),
            matrix_table(stage.bias[None, :], "b", ("",), stage.cols, opts, exact=e_bias),
        ]
    parts += [
        Text("\n="),
        matrix_table(stage.value, stage.name, stage.rows, stage.cols, opts, exact=e_value),
    ]
    view = beside(parts)
    width = max(display_width(line.plain) for line in view.split("\n"))
    return view if width <= opts.width - 2 else None


def _split_view(stage: Stage, opts: RenderOptions) -> RenderableType:
    """The split stage as sentences: which columns each head reads."""
    return Group(*(Text(row.text(opts.lang)) for row in split_rows(stage)))


def render_stage(
    stage: Stage, number: int, total: int, trace: Trace, opts: RenderOptions
) -> RenderableType:
    """One stage: a rule with its number, title and formula; why; the table; notes; arithmetic."""
    lang = opts.lang
    title = _t(lang, stage.title.key)
    head = f" · {_t(lang, 'ui.head', head=stage.head)}" if stage.head else ""
    parts: list[RenderableType] = [
        Rule(
            Text(
                f"{number}/{total}  {title}{head}  ·  {stage.formula}  ·  {_shape(stage)}",
                style="bold",
            ),
            align="left",
            style="cyan",
        ),
        _pad(Text(_t(lang, stage.why.key), style="italic"), (0, 0, 1, 2)),
    ]
    hidden: list[tuple[int, int]] = []
    if stage.op == "split":
        parts.append(_pad(_split_view(stage, opts), (0, 0, 0, 2)))
    else:
        view = _operand_view(stage, opts)
        parts.append(
            _pad(
                view
                if view is not None
                else matrix_table(
                    stage.value,
                    stage.name,
                    stage.rows,
                    stage.cols,
                    opts,
                    width=opts.width - 2,
                    heat=stage.id == "weights",
                    hidden=hidden,
                    exact=stage.exact if opts.exact else None,
                ),
                (0, 0, 0, 2),
            )
        )
    notes, lines = notes_and_work(
        stage,
        hidden[0] if hidden else (0, 0),
        Style(precision=opts.precision, exact=opts.exact),
        opts.detail,
        (opts.arithmetic_cells, opts.arithmetic_terms),
    )
    rows = (
        row_summaries(stage, trace, opts.precision, opts.max_rows) if opts.detail == "full" else []
    )
    work = [Text("  " + ("⋮" if row is None else row.text(lang))) for row in rows]
    work += [Text("  " + line) for line in lines]
    if notes:  # bullets with a hanging indent: a wrapped note stays clear of the bullet
        bullets = Table.grid(padding=(0, 1, 0, 0))
        bullets.add_column(no_wrap=True)
        bullets.add_column()
        for note in notes:
            bullets.add_row(Text("•", style="dim"), Text(note.text(lang), style="dim"))
        parts.append(_pad(bullets, (0, 0, 0, 2)))
    if work:
        parts.append(_pad(Text(_t(lang, "ui.arithmetic"), style="bold"), (1, 0, 0, 2)))
        parts.extend(_pad(line, (0, 0, 0, 2)) for line in work)
    parts.append(Text(""))
    return Group(*parts)


def stage_blocks(trace: Trace, opts: RenderOptions) -> list[tuple[Stage, RenderableType]]:
    """One renderable per stage, in order (the step mode pages through these). A head's first
    stage carries the head's group header, so each head reads as its own group."""
    total = len(trace.stages)
    blocks: list[tuple[Stage, RenderableType]] = []
    previous: int | None = None
    for k, stage in enumerate(trace.stages, start=1):
        block = render_stage(stage, k, total, trace, opts)
        if stage.head is not None and stage.head != previous:
            block = Group(_head_rule(stage.head, trace, opts), block)
        previous = stage.head
        blocks.append((stage, block))
    return blocks


def _head_rule(head: int, trace: Trace, opts: RenderOptions) -> RenderableType:
    """'Head 2 of 4' (and, under grouped-query attention, which K/V head it reads)."""
    p = trace.problem
    if p.kv_heads < p.heads:
        per = p.heads // p.kv_heads
        g = p.kv_head_of(head)
        text = _t(
            opts.lang,
            "ui.heads_group_kv",
            head=head,
            heads=p.heads,
            kv_head=g,
            first=(g - 1) * per + 1,
            last=g * per,
        )
    else:
        text = _t(opts.lang, "ui.heads_group", head=head, heads=p.heads)
    return Rule(Text(text, style="bold magenta"), align="center", style="magenta", characters="═")


def header(trace: Trace, opts: RenderOptions) -> RenderableType:
    problem, *preset = summary(trace, opts.lang)
    lines = [Text("qkvcalc — softmax(Q·Kᵀ/√d_k + M)·V", style="bold"), Text(problem)]
    lines += [Text(line, style="dim") for line in preset]
    return _pad(Group(*lines), (0, 0, 1, 0))


def footer(trace: Trace, opts: RenderOptions) -> RenderableType:
    parts: list[RenderableType] = []
    for warning in trace.warnings:
        parts.append(
            Text(f"{_t(opts.lang, 'ui.warning')}: {warning.text(opts.lang)}", style="bold yellow")
        )
    final = trace.stage("output")
    parts.append(
        matrix_table(final.value, _t(opts.lang, "ui.output_final"), final.rows, final.cols, opts)
    )
    return Group(*parts)


def render_trace(trace: Trace, opts: RenderOptions | None = None) -> RenderableType:
    opts = opts or RenderOptions()
    blocks = [block for _, block in stage_blocks(trace, opts)]
    return Group(header(trace, opts), *blocks, footer(trace, opts))


def make_console(opts: RenderOptions, file: io.TextIOBase | None = None) -> Console:
    """A console of a pinned width that writes to a string (or `file`)."""
    return Console(
        file=file or io.StringIO(),
        width=opts.width,
        force_terminal=opts.color,
        color_system="truecolor" if opts.color else None,
        no_color=not opts.color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
        soft_wrap=False,
    )


def to_text(renderable: RenderableType, opts: RenderOptions) -> str:
    """The rendering as text of the pinned width; colourless text has no trailing spaces."""
    console = make_console(opts)
    with console.capture() as capture:
        console.print(renderable)
    text = capture.get()
    if not opts.color:
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


def render_text(trace: Trace, opts: RenderOptions) -> str:
    return to_text(render_trace(trace, opts), opts)
