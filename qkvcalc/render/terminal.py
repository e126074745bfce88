"""The terminal rendering: every stage as a block of lines: its rule, why it exists, its table
(or A · B = C side by side), its notes and each cell's arithmetic.

`stage_blocks` gives one renderable per stage (the step mode shows them one at a time);
`render_trace` joins them; `render_text` returns the plain or coloured text of a fixed width.
Text that came from the input (token names) always goes into rich as Text, never as markup.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np
from rich.cells import cell_len, set_cell_size
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.text import Span, Text

from qkvcalc.i18n import translate
from qkvcalc.records import NamedTuple
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style, exact_text
from qkvcalc.render.document import TableView, operand_views, stage_view, table_view
from qkvcalc.render.text import display_width, fmt, pick, safe, summary
from qkvcalc.render.worksheet import operand_kinds

if TYPE_CHECKING:
    from qkvcalc.trace import Stage, Trace

GAP = "   "  # between two columns of a matrix table
ALL = 1 << 62  # the document offers every column: the terminal measures how many fit
NARROW = 8  # below this width, indents and bullets alone can pass the edge
MEASURE = 100  # prose wraps at most this wide, however wide the terminal: tables use it all
TITLE_PARTS = "  ·  "  # between a stage title's parts (title, formula, shape): where it wraps


class _Item(NamedTuple):
    kind: str  # "para", "cut", "rule" or "centred rule"
    text: Text
    indent: int = 0
    mark: Text | None = None  # para: its bullet; rule: the character it is drawn with, styled
    prose: bool = True  # para: wrapped at MEASURE at most (False: arithmetic, at the width)


class Block:
    """Lines laid out at the width of the console that draws them: wrapped paragraphs (with a
    hanging indent after a bullet), tables cut at the edge, rules across.

    One stage of rich Padding, Group and Table.grid objects re-measured and re-split every line
    it held, and drawing ten stages cost more than computing them. A Block does the same layout
    in one pass and hands rich lines that already fit, so the cost is that of the lines.
    """

    def __init__(self) -> None:
        self._items: list[_Item] = []

    def para(
        self, text: Text | str, indent: int = 0, bullet: Text | None = None, prose: bool = True
    ) -> Block:
        """A paragraph wrapped at the width (prose at MEASURE at most, a readable line on a wide
        terminal); with a bullet, its later lines hang under the text."""
        text = Text(text) if isinstance(text, str) else text
        self._items.append(_Item("para", text, indent, bullet, prose))
        return self

    def cut(self, lines: Text | list[Text], indent: int = 0) -> Block:
        """Lines never wrapped (a table): what goes past the edge is cut off."""
        for line in lines.split("\n") if isinstance(lines, Text) else lines:
            self._items.append(_Item("cut", line, indent))
        return self

    def blank(self) -> Block:
        return self.cut([Text()])

    def rule(self, title: Text, style: str, characters: str = "─", center: bool = False) -> Block:
        """A line across the width with the title in it, at its left or in its centre."""
        kind = "centred rule" if center else "rule"
        self._items.append(_Item(kind, title, mark=Text(characters, style=style)))
        return self

    def lines(self, console: Console, width: int) -> list[Text]:
        """The lines at `width`, none of them longer."""
        out: list[Text] = []
        for kind, text, indent, mark, prose in self._items:
            lead = " " * indent
            if kind == "rule":  # a title too long for its line wraps between its parts
                assert mark is not None
                *above, last = _title_lines(text, width, console)
                out += above
                out.append(_rule(last, width, mark, center=False))
            elif kind == "centred rule":
                assert mark is not None
                out.append(_rule(text, width, mark, center=True))
            elif kind == "cut":
                out.append(_cropped(_indented(text, lead), width))
            else:
                hang = "" if mark is None else " " * (mark.cell_len + 1)
                line_width = min(width, MEASURE) if prose else width
                room = max(line_width - len(lead) - len(hang), 1)
                pieces = text.split("\n") if "\n" in text.plain else [text]
                wrapped = [line for piece in pieces for line in _wrap(piece, room, console)]
                for k, line in enumerate(wrapped):
                    if mark is not None and k == 0:
                        out.append(Text(lead).append_text(mark).append(" ").append_text(line))
                    else:
                        out.append(_indented(line, lead + hang))
        if width < NARROW:  # narrower than an indent, a bullet and a letter: cut what sticks out
            out = [_cropped(line, width) for line in out]
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # The lines fit already: rendered as they are, not wrapped and cut again.
        yield from Text("\n").join(self.lines(console, options.max_width)).render(console, "\n")


_WORD = re.compile(r"\s*\S+\s*")  # a word with the spaces around it, as rich divides a line


def _wrap(text: Text, width: int, console: Console) -> list[Text]:
    """The lines rich's Text.wrap makes of one line of text. Text of one style (every paragraph
    qkvcalc writes) is divided here, on its plain string: the same lines, without rich's work
    for spans; anything else, and a word wider than the line (rich folds it), goes to rich."""
    if text.cell_len <= width:
        return [text]
    if text.spans:
        return list(text.wrap(console, width))
    plain, lines, start, used = text.plain, [], 0, 0
    for word in _WORD.finditer(plain):
        need = cell_len(word.group().rstrip())
        if need > width:
            return list(text.wrap(console, width))
        if used + need <= width:
            used += cell_len(word.group())
        else:
            lines.append(plain[start : word.start()])
            start, used = word.start(), cell_len(word.group())
    lines.append(plain[start:])
    # as rich does: spaces at the end of a line are dropped where they pass the width
    lines = [line[: max(width, len(line.rstrip()))] for line in lines]
    lines = [set_cell_size(line, width) if cell_len(line) > width else line for line in lines]
    return [Text(line, style=text.style) for line in lines]


def _title_lines(title: Text, width: int, console: Console) -> list[Text]:
    """A rule's title in lines that fit beside at least a short rule: the stage's name on one
    line and its formula with its shape on the next, so a formula is never cut in the middle;
    a part wider than its line wraps between words."""
    room = max(width - 4, 1)  # the last line keeps a space and a few rule characters
    if title.cell_len <= room or width < NARROW:
        return [title]
    name, _, rest = title.plain.partition(TITLE_PARTS)
    number = re.match(r"\d+/\d+\s+", name)  # "9/29  ": later lines hang under the name
    hang = " " * (len(number.group()) if number and len(number.group()) < room // 2 else 0)
    first, *more = _wrap(Text(name), room, console)
    lines = [first.plain] + [
        hang + line.plain
        for part in ([" ".join(t.plain for t in more)] if more else []) + ([rest] if rest else [])
        for line in _wrap(Text(part), room - len(hang), console)
    ]
    return [Text(line, style=title.style) for line in lines]


def _cropped(line: Text, width: int) -> Text:
    if line.cell_len <= width:
        return line
    line = line.copy()
    line.truncate(width, overflow="crop")
    return line


def _indented(line: Text, lead: str) -> Text:
    return Text(lead).append_text(line) if lead else line


def _rule(title: Text, width: int, characters: Text, *, center: bool) -> Text:
    """'── title ─────' (centred) or 'title ─────────' (at the left), `width` cells long."""
    title = title.copy()
    title.truncate(max(width - (4 if center else 2), 0), overflow="ellipsis")
    fill = width - title.cell_len - (2 if center else 1)
    left = max(fill // 2, 0) if center else 0
    right = max(fill - left, 0)
    line = Text()
    if center:
        line.append(characters.plain * left + " ", characters.style)
    line.append_text(title)
    if center:
        line.append(" " + characters.plain * right, characters.style)
    else:
        line.append(" ").append(characters.plain * right, characters.style)
    return line


def _t(lang: str, key: str, **params: object) -> str:
    return translate(key, lang, **params)


def _heat(weight: float) -> str:
    """A background for a weight in [0, 1]: pale to deep blue, with readable text on it."""
    w = min(max(weight, 0.0), 1.0) if weight == weight else 0.0  # NaN (--dtype): unshaded
    r, g, b = (int(255 - w * (255 - c)) for c in (30, 90, 200))
    return f"{'white' if w > 0.55 else 'black'} on rgb({r},{g},{b})"


def matrix_table(
    value: np.ndarray | Stage,
    name: str,
    rows: Sequence[str],
    cols: Sequence[str],
    opts: RenderOptions,
    **options: Any,
) -> Text:
    """matrix_lines as one Text, for a rich console: never wrapped, cut at the edge."""
    text = Text("\n", no_wrap=True, overflow="crop").join(
        matrix_lines(value, name, rows, cols, opts, **options)
    )
    text.no_wrap, text.overflow = True, "crop"
    return text


Cells = list[list[tuple[str, str]]]  # each shown column: its header, then its cells (text, style)
Layout = tuple[list[int | None], Cells, list[int], int]


def _fitted(layout: Callable[[int], Layout], fit: int, n_cols: int, width: int) -> Layout:
    """The first guess of how many columns fit was a guess: shrink until the table fits, or
    grow while one more column does (a 12×12 table of short numbers fills an 80-column
    terminal instead of leaving it empty)."""
    col_ids, columns, widths, total = layout(fit)
    while total > width and fit > 2:
        fit = min(fit, len(col_ids)) - 1
        col_ids, columns, widths, total = layout(fit)
    while total <= width and fit < n_cols:
        wider = layout(fit + 1)
        if wider[3] > width:
            break
        fit += 1
        col_ids, columns, widths, total = wider
    return col_ids, columns, widths, total


def _table_lines(
    labels: list[tuple[str, str]], columns: Cells, widths: list[int], label_w: int, total: int
) -> list[Text]:
    """The table's lines: the header, a rule, then a line per row, each line's text and the
    spans of its styled cells put together once."""
    table: list[Text] = []
    for line, (label, label_style) in enumerate(labels):
        if line == 1:
            table.append(Text("━" * total))
        parts = [label, " " * (label_w - display_width(label))]
        spans = [Span(0, len(label), label_style)] if label_style else []
        at = len(parts[0]) + len(parts[1])
        for column, w in zip(columns, widths, strict=True):
            text, style = column[line]
            pad = GAP + " " * (w - display_width(text))
            if style:
                spans.append(Span(at + len(pad), at + len(pad) + len(text), style))
            parts += (pad, text)
            at += len(pad) + len(text)
        table.append(Text("".join(parts), spans=spans))
    return table


def matrix_lines(
    value: np.ndarray | Stage,
    name: str,
    rows: Sequence[str],
    cols: Sequence[str],
    opts: RenderOptions,
    *,
    width: int | None = None,
    heat: bool = False,
    hidden: list[tuple[int, int]] | None = None,
    exact: Sequence[Sequence[Any]] | None = None,
    blank: bool = False,
) -> list[Text]:
    """A labelled table of a matrix, line by line (view_lines of its TableView, every column
    offered: the terminal decides how many fit)."""
    view = table_view(
        value, name, rows, cols, opts, value.shape[1], exact=exact, heat=heat, blank=blank
    )
    return view_lines(view, opts, width=width, hidden=hidden)


def view_lines(
    view: TableView,
    opts: RenderOptions,
    *,
    width: int | None = None,
    hidden: list[tuple[int, int]] | None = None,
) -> list[Text]:
    """A table of the document (qkvcalc.render.document.TableView), line by line: its rows as
    the document chose them (the first and last that fit, the middle elided), and of its
    columns as many as fit `width`, measured here (the first ones and the last ones).
    `view.blank` (a worksheet's computed stage): every cell a line to write on.

    Laid out here as lines of text (a header, a rule, one line per row) rather than as a rich
    Table: only the cells shown are formatted and measured, and of a Stage only the rows shown
    are computed, so a 1024×1024 matrix costs what a 4×4 one does. `view.exact` (--exact): a
    cell's exact value, shown where it is not None.
    """
    name, rows, cols, row_ids, shown = view.name, view.rows, view.cols, view.row_ids, view.shown
    exact, heat, blank = view.exact, view.heat, view.blank
    n_rows, n_cols = len(rows), len(cols)
    width = width or opts.width
    body_rows = [i for i in row_ids if i is not None]
    label_w = max(
        [display_width(name)] + [display_width(safe(rows[i])) for i in body_rows], default=1
    )

    def cell(i: int, j: int) -> tuple[str, str]:
        if blank:
            return Style.of(opts).blank, "dim"
        v = float(shown[i][j])
        if v == -math.inf:
            return "-∞", "dim"
        if exact is not None and exact[i][j] is not None:
            return exact_text(exact[i][j], opts.precision), ""
        return fmt(v, opts.precision), _heat(v) if heat and opts.color else ""

    # A first guess of how many columns fit, from a sample of labels; corrected below.
    guess = max(opts.precision + 3, max((display_width(safe(c)) for c in cols[:50]), default=1))
    if blank:
        guess = max(guess, len(Style.of(opts).blank))
    if exact is not None:  # fractions and surds are wider than decimals
        sample = [
            exact_text(c, opts.precision) for r in exact[:20] for c in r[:20] if c is not None
        ]
        guess = max(guess, max(map(display_width, sample), default=0))
    fit = max(2, (width - label_w) // (guess + len(GAP)))

    def layout(fit: int) -> Layout:
        """The columns shown when `fit` are allowed (the first ones, …, the last ones), their
        cells, widths and the table's total width, measured."""
        col_ids = pick(n_cols, fit)
        columns: Cells = []
        for j in col_ids:
            if j is None:
                columns.append([("…", "")] + [("⋮" if i is None else "…", "") for i in row_ids])
            else:
                head = (safe(cols[j]), "bold")
                columns.append([head] + [("⋮", "") if i is None else cell(i, j) for i in row_ids])
        widths = [max(display_width(text) for text, _ in column) for column in columns]
        return col_ids, columns, widths, label_w + sum(w + len(GAP) for w in widths)

    col_ids, columns, widths, total = _fitted(layout, fit, n_cols, width)
    labels = [(name, "bold cyan")] + [
        ("⋮", "") if i is None else (safe(rows[i]), "bold") for i in row_ids
    ]
    table = _table_lines(labels, columns, widths, label_w, total)
    if hidden is not None:
        hidden.append(
            (
                n_rows - len(body_rows),
                n_cols - sum(j is not None for j in col_ids),
            )
        )
    return table


def beside(blocks: Sequence[list[Text]]) -> list[Text]:
    """Blocks of lines side by side, aligned at the top, one space apart: A · B = C."""
    widths = [max((display_width(line.plain) for line in block), default=0) for block in blocks]
    out: list[Text] = []
    for r in range(max(len(block) for block in blocks)):
        line = Text()
        for k, (block, w) in enumerate(zip(blocks, widths, strict=True)):
            part = block[r] if r < len(block) else Text("")
            pad = " " * (w - display_width(part.plain))
            line.append(" " if k else "").append_text(part).append(pad)
        out.append(line)
    return out


def _operand_view(stage: Stage, kinds: list[str], opts: RenderOptions) -> list[Text] | None:
    """A · B = C side by side, when all three fit across the screen: the document's operand
    tables (qkvcalc.render.document.operand_views) and the stage's own. On a worksheet a
    computed operand is blank, and Q·Kᵀ, whose operands are both computed, is its table alone."""
    if not stage.is_product or kinds == ["computed", "computed"]:
        return None
    n, inner, cols = (
        len(stage.rows),
        len(stage.inner),
        len(stage.cols),
    )  # A [n, inner], B [inner, cols]
    if (inner + cols + cols) * 4 > opts.width or max(n, inner) > opts.max_rows:
        return None  # cannot fit: not worth laying out (nor computing a recipe operand)
    given = [kind != "computed" for kind in kinds]
    a, b, *bias = [view_lines(view, opts) for view in operand_views(stage, opts, ALL, given)]
    parts = [a, [Text(), Text("·")], b, *([[Text(), Text("+")], bias[0]] if bias else [])]
    exact = stage.exact if opts.exact else None
    blank = opts.worksheet
    table = table_view(
        stage.value, stage.name, stage.rows, stage.cols, opts, ALL, exact=exact, blank=blank
    )
    result = view_lines(table, opts)
    view = beside([*parts, [Text(), Text("=")], result])
    if _width(view) <= opts.width - 2:
        return view
    # Too wide side by side: A · B on top, = C under it (as concat · W_O at 100 columns)
    top, bottom = beside(parts), beside([[Text(), Text("=")], result])
    if max(_width(top), _width(bottom)) <= opts.width - 2:
        return [*top, Text(), *bottom]
    return None


def _width(lines: list[Text]) -> int:
    return max(display_width(line.plain) for line in lines)


def _twin(block: Block, stage: Stage, opts: RenderOptions) -> None:
    """A --dtype stage's float64 twin, as its own table under the dtype's."""
    from dataclasses import replace

    assert stage.twin is not None
    twin = replace(stage, data=stage.twin)  # of a recipe, only the rows shown are computed
    name = f"{stage.name} (float64)"
    lines = matrix_lines(twin, name, stage.rows, stage.cols, opts, width=opts.width - 2)
    block.blank().cut(lines, indent=2)


def render_stage(stage: Stage, number: int, total: int, trace: Trace, opts: RenderOptions) -> Block:
    """One stage as the document has it (qkvcalc.render.document.StageView): a rule with its
    number, title and formula; why; the table (or A · B = C side by side, when it fits this
    console); notes; arithmetic. The terminal measures its tables against its width: how many
    columns fit, and so how much of the table is hidden, is decided here."""
    kinds = operand_kinds(stage, trace) if opts.worksheet and stage.is_product else ["const"] * 2
    product = None if stage.in_words else _operand_view(stage, kinds, opts)
    laid: list[list[Text]] = []

    def fit(table: TableView) -> tuple[int, int]:  # the stage's table, laid out to this console
        hidden: list[tuple[int, int]] = []
        laid.append(view_lines(table, opts, width=opts.width - 2, hidden=hidden))
        return hidden[0]

    view = stage_view(
        stage,
        number,
        total,
        trace,
        opts,
        max_cols=ALL,
        product_fits=product is not None,
        style=Style.of(opts),
        fit=None if product is not None else fit,
    )
    head = f" · {view.head}" if view.head else ""
    block = Block().rule(
        Text(f"{number}/{total}  {view.title}{head}  ·  {view.formula}  ·  {view.shape}", "bold"),
        style="cyan",
    )
    block.para(Text(view.why, style="italic"), indent=2).blank()
    for sentence in view.words:  # which columns each head reads, in sentences
        block.para(sentence, indent=2)
    for weights in view.givens:  # a worksheet's weights, when A · B = C is not shown
        block.cut(view_lines(weights, opts, width=opts.width - 2), indent=2).blank()
    if view.table is not None:
        block.cut(product if product is not None else laid[0], indent=2)
        if stage.twin is not None:  # --dtype: the same stage in float64, beside or under it
            _twin(block, stage, opts)
    for note in view.notes:  # a bullet with a hanging indent: a wrapped note stays clear of it
        block.para(Text(note.text(opts.lang), style="dim"), indent=2, bullet=Text("•", style="dim"))
    work = ["  " + ("⋮" if row is None else row.text(opts.lang)) for row in view.row_sentences]
    work += ["  " + line for line in view.work]
    if work:
        block.blank().para(Text(_t(opts.lang, "ui.arithmetic"), style="bold"), indent=2)
        block.para("\n".join(work), indent=2, prose=False)
    return block.blank()


def stage_blocks(trace: Trace, opts: RenderOptions) -> list[tuple[Stage, RenderableType]]:
    """One renderable per stage, in order (the step mode pages through these). A head's first
    stage carries the head's group header, so each head reads as its own group (a pair of
    heads' first stage, the pair's)."""
    total = len(trace.stages)
    blocks: list[tuple[Stage, RenderableType]] = []
    previous: tuple[int | None, bool] = (None, False)
    for k, stage in enumerate(trace.stages, start=1):
        block: RenderableType = render_stage(stage, k, total, trace, opts)
        if stage.head is not None and (stage.head, stage.pair) != previous:
            block = Group(_head_rule(stage, trace, opts), block)
        previous = (stage.head, stage.pair)
        blocks.append((stage, block))
    return blocks


def _head_rule(stage: Stage, trace: Trace, opts: RenderOptions) -> Block:
    """'Head 2 of 4' (and, under grouped-query attention, which K/V head it reads), or a
    pair's 'Pair 1 of 2'."""
    p, head = trace.problem, stage.head
    assert head is not None
    if stage.pair:
        text = _t(opts.lang, "ui.pairs_group", pair=head, pairs=p.heads // 2)
    elif p.kv_heads < p.heads:
        g = p.kv_head_of(head)
        first, last = p.query_heads_of(g)
        key = "ui.heads_group_kv"
        text = _t(opts.lang, key, head=head, heads=p.heads, kv_head=g, first=first, last=last)
    else:
        text = _t(opts.lang, "ui.heads_group", head=head, heads=p.heads)
    return Block().rule(Text(text, style="bold magenta"), "magenta", characters="═", center=True)


def header(trace: Trace, opts: RenderOptions, results_hidden: bool = False) -> Block:
    """The problem's sentence and its preset's (`results_hidden`: the quiz's, without the
    reference, which often tells a result the student is asked for)."""
    problem, *preset = summary(trace, opts.lang, opts.worksheet, results_hidden)
    block = Block().para(Text(f"qkvcalc — {_formula(trace)[0]}", style="bold")).para(problem)
    for line in preset:
        block.para(Text(line, style="dim"))
    return block.blank()


def footer(trace: Trace, opts: RenderOptions) -> Block:
    block = Block()
    for warning in trace.warnings:
        text = f"{_t(opts.lang, 'ui.warning')}: {warning.text(opts.lang)}"
        block.para(Text(text, style="bold yellow"))
    final = trace.final
    output = _t(opts.lang, "ui.output_final")
    return block.cut(
        matrix_lines(final.value, output, final.rows, final.cols, opts, blank=opts.worksheet)
    )


def render_trace(trace: Trace, opts: RenderOptions | None = None) -> RenderableType:
    opts = opts or RenderOptions()
    blocks = [block for _, block in stage_blocks(trace, opts)]
    return Group(header(trace, opts), *blocks, footer(trace, opts))


def make_console(opts: RenderOptions, file: IO[str] | None = None) -> Console:
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


def _blocks(renderable: RenderableType) -> list[Block] | None:
    """The Blocks a rendering is made of, in order (through Groups); None if it holds anything
    else."""
    if isinstance(renderable, Block):
        return [renderable]
    if not isinstance(renderable, Group):
        return None
    out: list[Block] = []
    for part in renderable.renderables:
        blocks = _blocks(part)
        if blocks is None:
            return None
        out += blocks
    return out


def to_text(renderable: RenderableType, opts: RenderOptions) -> str:
    """The rendering as text of the pinned width; colourless text has no trailing spaces."""
    console = make_console(opts)
    blocks = None if opts.color else _blocks(renderable)
    if blocks is not None:  # colourless Blocks: their lines' plain text is what rich would print
        width = console.options.max_width
        return "".join(
            line.plain.rstrip() + "\n" for b in blocks for line in b.lines(console, width)
        )
    with console.capture() as capture:
        console.print(renderable, crop=False)  # every line was laid out to fit (Block)
    text = capture.get()
    if not opts.color:
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


def render_text(trace: Trace, opts: RenderOptions) -> str:
    return to_text(render_trace(trace, opts), opts)


def render_plain(trace: Trace, opts: RenderOptions) -> str:
    """The table as plain text, never coloured: --format txt, or --output FILE.txt."""
    return render_text(trace, opts._replace(color=False))


NARROWEST = 40  # columns: titles wrap and tables show fewer columns, down to this width


def measure_trace(trace: Trace, options: Any) -> Any:
    """How wide a trace wants to be in rich's layout (Trace.__rich_measure__): all the width it
    is given, and it still lays out (wrapped titles, fewer columns) down to NARROWEST."""
    from rich.measure import Measurement

    return Measurement(min(NARROWEST, options.max_width), options.max_width)


def _formula(trace: Trace) -> tuple[str, str]:
    """The layer's formula in the header (plain, TeX): softmax attention's, or a linear
    layer's own."""
    from qkvcalc.ops import features  # here: the error path imports this module light

    return features.formula(trace.problem)
