"""The document every export writes: a stage as the parts of a page, decided once.

A StageView is what goes on the page for one stage — its heading (number, title, head,
formula, shape), why it exists, its table (which rows and columns are shown, each cell's
value and, with --exact, its exact value), the A·B = C product when the page has room for it,
the split said in sentences, the notes, the row sentences and each cell's arithmetic. The
Markdown, HTML and LaTeX writers only spell these parts in their own markup; the terminal
lays its tables out by measuring them at its console (qkvcalc.render.terminal) and reads the
same heading, notes and arithmetic. The JSON writer reads a stage's words from the same place
(StageHeading): its title, formula, shape, why and notes, in the page's language. Nothing here
escapes text: each writer does, its own way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.records import NamedTuple
from qkvcalc.render.arith import Style, split_rows, stage_extras
from qkvcalc.render.text import corners, place
from qkvcalc.render.worksheet import given, operand_kinds

if TYPE_CHECKING:
    from qkvcalc.render import RenderOptions
    from qkvcalc.trace import Stage, Trace


class TableView(NamedTuple):
    """A matrix as a table shows it: the rows and columns shown (None: the elided middle),
    the shown values by row, their exact values where there are any, and what is hidden."""

    name: str
    rows: Sequence[str]
    cols: Sequence[str]
    row_ids: list[int | None]
    col_ids: list[int | None]
    shown: dict[int, np.ndarray]
    exact: Sequence[Sequence[Any]] | None
    hidden: tuple[int, int]
    heat: bool = False
    blank: bool = False  # a worksheet's computed stage: every cell left for the student

    def cell(self, i: int, j: int, style: Style) -> str:
        """A shown cell as text: its exact value when --exact recorded one, else the decimal
        (-∞ for a masked score); on a worksheet, a computed stage's blank."""
        if self.blank:
            return style.blank
        value = float(self.shown[i][j])
        if np.isneginf(value):
            return style.neg_inf
        if self.exact is not None and self.exact[i][j] is not None:
            return style.exact_num(self.exact[i][j])
        return style.num(value)

    def weight(self, i: int, j: int) -> float | None:
        """The shade of a weight (heat), or None for a table without one."""
        return float(self.shown[i][j]) if self.heat and not self.blank else None

    def strongest(self, i: int, j: int) -> bool:
        """A weight that is the largest of its row (what a page without colour marks bold)."""
        if not self.heat or self.blank:
            return False
        row = self.shown[i]
        return bool(row[j] > 0 and row[j] == np.max(row))


def table_view(
    value: np.ndarray | Stage,
    name: str,
    rows: Sequence[str],
    cols: Sequence[str],
    opts: RenderOptions,
    max_cols: int,
    *,
    exact: Sequence[Sequence[Any]] | None = None,
    heat: bool = False,
    blank: bool = False,
) -> TableView:
    row_ids, col_ids, shown, hidden = corners(value, opts.max_rows, max_cols)
    return TableView(name, rows, cols, row_ids, col_ids, shown, exact, hidden, heat, blank)


class StageHeading(NamedTuple):
    """What every export says of a stage in words, in one language: its id and head, title,
    formula, shape, why it exists and its own notes (a page adds its own to these: how much of
    a table is hidden, why arithmetic is left out), and where a schedule put it (a decode
    step, a tile's block)."""

    id: str
    head: int | None
    title: str
    formula: str
    shape: tuple[int, int]
    why: str
    notes: list[str]
    step: int | None
    block: int | None


def stage_heading(stage: Stage, lang: str) -> StageHeading:
    return StageHeading(
        stage.id,
        stage.head,
        stage.title.text(lang),
        stage.formula,
        stage.shape,
        stage.why.text(lang),
        [note.text(lang) for note in stage.notes],
        stage.step,
        stage.block,
    )


class StageView(NamedTuple):
    """One stage as the parts of a page."""

    stage: Stage
    number: int
    total: int
    title: str
    head: str  # 'head 2', or '' for a stage of the whole run
    formula: str
    shape: str  # '3×2'
    why: str
    table: TableView | None  # None when the stage is said in words
    product: list[TableView] | None  # A, B (and the bias) of A·B = C, when the page has room
    givens: list[TableView]  # a worksheet: the given operands, when A·B = C is not shown
    words: list[str]  # the stage in sentences (the split into heads)
    notes: list[Msg]
    row_sentences: list[Msg | None]
    work: list[str]


def operand_views(
    stage: Stage, opts: RenderOptions, max_cols: int, given: Sequence[bool] = (True, True)
) -> list[TableView]:
    """The operands of a product as tables (with the bias as a one-row table), exact where
    --exact recorded them; on a worksheet an operand not `given` is blank."""
    a, b = stage.operands
    ea, eb = stage.operands_exact if opts.exact and len(stage.operands_exact) == 2 else (None, None)
    blank = [opts.worksheet and not g for g in given]
    views = [
        table_view(
            a, stage.names[0], stage.rows, stage.inner, opts, max_cols, exact=ea, blank=blank[0]
        ),
        table_view(
            b, stage.names[1], stage.inner, stage.cols, opts, max_cols, exact=eb, blank=blank[1]
        ),
    ]
    if stage.bias is not None:
        e_bias = (stage.bias_exact,) if opts.exact and stage.bias_exact is not None else None
        views.append(
            table_view(stage.bias[None, :], "b", ("",), stage.cols, opts, max_cols, exact=e_bias)
        )
    return views


def stage_view(
    stage: Stage,
    number: int,
    total: int,
    trace: Trace,
    opts: RenderOptions,
    *,
    max_cols: int,
    product_fits: bool,
    style: Style,
    fit: Callable[[TableView], tuple[int, int]] | None = None,
) -> StageView:
    """What a page shows of one stage. `max_cols`: how many columns a table of this page
    holds; `product_fits`: whether the page has room for A·B = C (a rule of its format);
    `fit`: for a writer that lays the table out itself (the terminal measures how many
    columns its console holds), that layout, which says how many rows and columns it hid."""
    lang = opts.lang
    heading = stage_heading(stage, lang)
    table = None
    words: list[str] = []
    if stage.in_words:
        words = [row.text(lang) for row in split_rows(stage)]
    else:
        exact = stage.exact if opts.exact else None
        blank = opts.worksheet and not given(stage)
        table = table_view(
            stage,
            stage.name,
            stage.rows,
            stage.cols,
            opts,
            max_cols,
            exact=exact,
            heat=stage.heat,
            blank=blank,
        )
    kinds = ["const", "const"]
    if opts.worksheet and stage.is_product:  # the given operands filled in, the others blank
        kinds = operand_kinds(stage, trace)
        product_fits = product_fits and kinds != ["computed", "computed"]
    operands = [kind != "computed" for kind in kinds]
    hidden = (0, 0)  # said in sentences (the split), every row of it: nothing hidden
    if table is not None:
        hidden = table.hidden if fit is None else fit(table)
    extras = stage_extras(stage, trace, hidden, style, opts)
    return StageView(
        stage,
        number,
        total,
        heading.title,
        place(stage, lang),
        heading.formula,
        stage.size,
        heading.why,
        table,
        operand_views(stage, opts, max_cols, operands)
        if product_fits and stage.is_product
        else None,
        _givens(stage, opts, max_cols, kinds) if not product_fits else [],
        words,
        extras.notes,
        extras.rows,
        extras.work,
    )


def _givens(stage: Stage, opts: RenderOptions, max_cols: int, kinds: list[str]) -> list[TableView]:
    """A worksheet's weights a product reads (W_Q when X·W_Q = Q is too wide to show, or W_O
    after the heads): each as its own table, so every input of the problem is on the page
    (X is, as its own stage)."""
    if not (opts.worksheet and stage.is_product):
        return []
    views = operand_views(stage, opts, max_cols, [kind != "computed" for kind in kinds])
    return [view for view, kind in zip(views, [*kinds, "const"], strict=False) if kind == "const"]


def product_fits_width(stage: Stage, opts: RenderOptions) -> bool:
    """Markdown and HTML: A·B = C goes on the page when its three matrices fit its width."""
    if not stage.is_product:
        return False
    cols = len(stage.inner) + 2 * len(stage.cols)  # A [n, inner] · B [inner, cols] = [n, cols]
    rows = max(len(stage.rows), len(stage.inner))
    return cols * (opts.precision + 4) + 40 <= opts.width and rows <= opts.max_rows


def final_view(trace: Trace, opts: RenderOptions, max_cols: int) -> TableView:
    """The final output as the last table of a page (blank on a worksheet)."""
    final = trace.final
    blank = opts.worksheet
    return table_view(final.value, "", final.rows, final.cols, opts, max_cols, blank=blank)


def plain_cell(view: TableView, i: int, j: int, opts: RenderOptions) -> str:
    """A cell as plain Unicode text (Markdown, HTML): '7/√2 ≈ 4.9497', '-∞', '0.8044'."""
    return view.cell(i, j, Style.of(opts))
