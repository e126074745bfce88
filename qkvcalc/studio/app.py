"""The studio's screen: the problem's matrices as grids of boxes to type in, its options, every
stage as a table, and under them the focused cell's arithmetic, the stage's why and a bad
entry's message. What is computed, and how each number is written, is the Session's
(qkvcalc.studio.session); this module lays it out and follows the keys.

Widget ids (the tests drive them with Textual's Pilot): `in-KEY-I-J` (1-based) for a matrix
cell, `opt-KEY` for an option, `stage-ID` / `stage-ID-hH` for a stage's table, `arith`,
`why`, `error`. A large matrix shows a part of its cells at a time (the first rows and columns
at start); moving past its edge with the arrow keys brings the next ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.widget import Widget
from textual.widgets import DataTable, Input, Label, Static

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.studio.session import Session, StageTable, shown_text

SHOWN_ROWS = 8  # of a matrix's cells, this many rows and columns have boxes at a time
SHOWN_COLS = 6
CHANGED = "bold black on yellow"  # a cell the last edit changed

CSS = """
#body { height: 1fr; }
#left { width: 40%; min-width: 24; border-right: solid $primary; }
#stages { width: 1fr; }
.grid-title, .stage-title { text-style: bold; margin-top: 1; }
#left .grid-title { width: 100%; }
.stage-title.current { background: $primary; color: $text; }
.grid-row { height: 1; }
Cell, OptionBox { width: 10; height: 1; margin-right: 1; }
.option-row { height: 1; }
.option-name { width: 12; }
OptionBox { width: 1fr; }
.bad { background: $error; }
.stage-box, .grid { height: auto; }
DataTable { height: auto; max-height: 20; }
.was { color: $warning; height: 1; }
#status { height: 1; }
#panel { height: auto; max-height: 45%; border-top: solid $primary; }
#arith { text-style: bold; }
#why { color: $text-muted; }
#error { color: $error; text-style: bold; }
#help { display: none; border: solid $accent; height: auto; }
#help.shown { display: block; }
"""


class Cell(Input):
    """A box of one matrix cell; ↑ ↓ (and ← → at the edge of its text) move to the next box."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1, 0)", show=False),
        Binding("down", "move(1, 0)", show=False),
    ]

    def __init__(self, key: str, i: int, j: int, value: str) -> None:
        super().__init__(value=value, id=f"in-{key}-{i + 1}-{j + 1}", compact=True)
        self.key, self.i, self.j = key, i, j

    async def action_move(self, di: int, dj: int) -> None:
        await self.app.move_to(self.key, self.i + di, self.j + dj)  # type: ignore[attr-defined]

    async def action_cursor_left(self, select: bool = False) -> None:  # type: ignore[override]
        if self.cursor_position == 0 and not select:
            await self.action_move(0, -1)
        else:
            super().action_cursor_left(select)

    async def action_cursor_right(self, select: bool = False) -> None:  # type: ignore[override]
        if self.cursor_position >= len(self.value) and not select:
            await self.action_move(0, 1)
        else:
            super().action_cursor_right(select)


class OptionBox(Input):
    """The box of one option (mask, heads, scale …): JSON or a word; empty leaves it out."""

    def __init__(self, key: str, value: str) -> None:
        super().__init__(value=value, id=f"opt-{key}", compact=True)
        self.key = key


class Studio(App[None]):
    """qkvcalc's studio: edit any number of a problem and watch every stage follow.

    `problem` is the input format's document (a preset's whole document, name and description
    included); a problem that does not compute raises QkvcalcError here, before any screen.
    """

    CSS = CSS
    TITLE = "qkvcalc studio"
    AUTO_FOCUS = "Cell"  # the first box of X: the studio opens ready to be typed in
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", show=False, priority=True),
        Binding("ctrl+z", "undo", show=False, priority=True),
        Binding("q", "quit_key", show=False),
        Binding("s", "save", show=False),
        Binding("question_mark", "help", show=False),
        Binding("escape", "leave", show=False),
        Binding("enter,space,right", "step(1)", show=False),
        Binding("b,left", "step(-1)", show=False),
        Binding("home", "step_to(0)", show=False),
        Binding("end", "step_to(-1)", show=False),
        Binding("n", "head(1)", show=False),
        Binding("p", "head(-1)", show=False),
        Binding("down,j", "scroll(1)", show=False),
        Binding("up,k", "scroll(-1)", show=False),
    ]

    def __init__(
        self, problem: Mapping[str, Any], lang: str = "en", save_to: str | Path | None = None
    ) -> None:
        super().__init__()
        self.session = Session(problem, lang)
        self.save_to = Path(save_to) if save_to is not None else Path("qkvcalc-studio.json")
        self.windows = {key: (0, 0) for key in self.session.grids()}
        self.position = 0  # the stage the step keys are at
        self.shown: dict[str, tuple[list[list[str]], set[tuple[int, int]]]] = {}
        self.said: dict[str, str] = {}  # what each Static (by id) says now

    def _t(self, key: str, **params: object) -> str:
        return translate(key, self.session.lang, **params)

    # ---- the screen --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            with VerticalScroll(id="left"):
                yield Label(self._t("studio.inputs"), classes="grid-title")
                for key in self.session.grids():
                    yield Label(id=f"title-{key}", classes="grid-title")
                    yield Vertical(*self._grid_rows(key), id=f"grid-{key}", classes="grid")
                yield Label(self._t("studio.options"), classes="grid-title")
                for key, value in self.session.options().items():
                    with Horizontal(classes="option-row"):
                        yield Label(Text(key), classes="option-name")
                        yield OptionBox(key, shown_text(value))
            yield VerticalScroll(*self._stage_boxes(), id="stages")
        with VerticalScroll(id="panel"):
            yield Static(self._t("studio.keys"), id="help")
            yield Static(id="status")
            yield Static(id="error")
            yield Static(id="arith")
            yield Static(id="why")

    def on_mount(self) -> None:
        for key in self.windows:
            self._grid_title(key)
        self._show_stage(0)
        self._say_status()

    def _grid_rows(self, key: str) -> list[Widget]:
        matrix = self.session.grids()[key]
        top, left = self.windows[key]
        rows: list[Widget] = []
        for i in range(top, min(top + SHOWN_ROWS, len(matrix))):
            row = matrix[i]
            cells = [
                Cell(key, i, j, shown_text(row[j]))
                for j in range(left, min(left + SHOWN_COLS, len(row)))
            ]
            rows.append(Horizontal(*cells, classes="grid-row"))
        return rows

    def _grid_title(self, key: str) -> None:
        matrix = self.session.grids()[key]
        n, d = len(matrix), max(len(row) for row in matrix)
        top, left = self.windows[key]
        title = f"{self.session.field(key)}  {n}×{d}"
        if n > SHOWN_ROWS or d > SHOWN_COLS:
            title += "  " + self._t(
                "studio.part",
                rows=f"{top + 1}–{min(top + SHOWN_ROWS, n)}",
                cols=f"{left + 1}–{min(left + SHOWN_COLS, d)}",
            )
        self.query_one(f"#title-{key}", Label).update(Text(title))

    def _stage_boxes(self) -> list[Widget]:
        boxes: list[Widget] = []
        for table in self.session.tables:
            parts: list[Widget] = [Label(Text(table.title), classes="stage-title")]
            if table.words:
                parts.append(Static(Text("\n".join(table.words)), id=table.wid))
            else:
                parts.append(self._data_table(table))
            parts.append(Static(id=f"{table.wid}-was", classes="was"))
            boxes.append(Vertical(*parts, id=f"{table.wid}-box", classes="stage-box"))
            self.shown[table.wid] = ([row[:] for row in table.cells], set())
        return boxes

    def _data_table(self, table: StageTable) -> DataTable[Any]:
        grid: DataTable[Any] = DataTable(id=table.wid, zebra_stripes=True)
        grid.add_columns(*(Text(c) for c in table.cols))
        self._fill(grid, table, set())
        return grid

    @staticmethod
    def _fill(grid: DataTable[Any], table: StageTable, marked: set[tuple[int, int]]) -> None:
        """The table's rows, each labelled by its token; the cells in `marked` highlighted."""
        for r, (label, row) in enumerate(zip(table.rows, table.cells, strict=True)):
            texts = [
                Text(cell, style=CHANGED if (r, c) in marked else "", justify="right")
                for c, cell in enumerate(row)
            ]
            grid.add_row(*texts, label=Text(label))

    # ---- after an edit -----------------------------------------------------------------------

    async def _redraw(self) -> None:
        """Every table as the session now has it: the cells that changed rewritten (and
        marked), or, when the stages themselves changed (heads, a shape), every table anew."""
        tables = self.session.tables
        same = [t.wid for t in tables] == list(self.shown) and all(
            len(t.cells) == len(self.shown[t.wid][0])
            and all(len(a) == len(b) for a, b in zip(t.cells, self.shown[t.wid][0], strict=True))
            for t in tables
        )
        if not same:
            stages = self.query_one("#stages", VerticalScroll)
            await stages.remove_children()
            self.shown = {}
            self.said = {k: v for k, v in self.said.items() if not k.endswith("-was")}
            await stages.mount_all(self._stage_boxes())
            self.position = min(self.position, len(tables) - 1)
        else:
            with self.batch_update():
                for table in tables:
                    self._update_table(table)
        for table in tables:
            self._say(f"{table.wid}-was", self.session.changed_line(table.wid))
        self._show_stage(self.position, scroll=False)

    def _update_table(self, table: StageTable) -> None:
        """One table as the session now has it: the cells whose text or mark changed are
        rewritten, the others left alone (writing a table's rows anew costs more, measured)."""
        cells, marked = self.shown[table.wid]
        now = set(self.session.changed.get(table.wid, {}))
        self.shown[table.wid] = ([row[:] for row in table.cells], now)
        if table.words:
            self.query_one(f"#{table.wid}", Static).update(Text("\n".join(table.words)))
            return
        grid = self.query_one(f"#{table.wid}", DataTable)
        moved = [
            (r, c)
            for r, row in enumerate(table.cells)
            for c, text in enumerate(row)
            if text != cells[r][c] or ((r, c) in now) != ((r, c) in marked)
        ]
        for r, c in moved:
            text = table.cells[r][c]
            style = CHANGED if (r, c) in now else ""
            wider = len(text) > len(cells[r][c])  # the column grows to hold it
            cell = Text(text, style=style, justify="right")
            grid.update_cell_at(Coordinate(r, c), cell, update_width=wider)

    def _refresh_boxes(self) -> None:
        """The boxes show the problem's values again (after an undo)."""
        for box in self.query(Cell):
            box.value = shown_text(self.session.doc[box.key][box.i][box.j])
            box.remove_class("bad")
        options = self.session.options()
        for option in self.query(OptionBox):
            option.value = shown_text(options.get(option.key))
            option.remove_class("bad")

    def _fail(self, err: QkvcalcError, box: Input) -> None:
        box.add_class("bad")
        message = f"{self._t('cli.error_prefix')}: {err.message(self.session.lang)}"
        self._say("error", message)

    async def _commit(self, box: Input) -> None:
        """Compute the problem with what the box holds; a bad entry's message stays in
        `error` (the last good numbers stay on screen) until an entry computes."""
        try:
            if isinstance(box, Cell):
                changed = self.session.edit_cell(box.key, box.i, box.j, box.value)
            elif isinstance(box, OptionBox):
                changed = self.session.edit_option(box.key, box.value)
            else:
                return
        except QkvcalcError as err:
            self._fail(err, box)
            return
        box.remove_class("bad")
        self._say("error", "")
        if changed:
            await self._redraw()

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        await self._commit(event.input)

    async def on_input_blurred(self, event: Input.Blurred) -> None:
        await self._commit(event.input)

    def on_descendant_focus(self, event: Any) -> None:
        widget = event.widget
        if isinstance(widget, Cell):
            value = shown_text(self.session.doc[widget.key][widget.i][widget.j])
            where = f"{self.session.field(widget.key)}[{widget.i + 1},{widget.j + 1}]"
            self._arith(self._t("studio.input_cell", cell=where, value=value))
        elif isinstance(widget, OptionBox):
            self._arith(self._t("studio.option_cell", name=widget.key))
        elif isinstance(widget, DataTable):
            self._cell_chosen(widget, widget.cursor_coordinate.row, widget.cursor_coordinate.column)

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        if not event.data_table.has_focus:  # every table highlights its first cell as it mounts
            return
        self._cell_chosen(event.data_table, event.coordinate.row, event.coordinate.column)

    def _cell_chosen(self, grid: DataTable[Any], r: int, c: int) -> None:
        index = next(n for n, t in enumerate(self.session.tables) if t.wid == grid.id)
        table = self.session.tables[index]
        if r < len(table.cells) and c < len(table.cols):
            self._arith(self.session.arithmetic(table, r, c))
        self._show_stage(index, scroll=False)

    def _say(self, wid: str, text: str) -> None:
        """Put `text` in the Static `wid` unless it says it already: an update lays the screen
        out again, which costs more than an edit's arithmetic on a large problem. A one-line
        Static (the status, a table's old values) keeps its height, so it is not laid out."""
        if self.said.get(wid) == text:
            return
        self.said[wid] = text
        one_line = wid == "status" or wid.endswith("-was")
        content = Text(text, no_wrap=one_line, overflow="ellipsis" if one_line else "fold")
        self.query_one(f"#{wid}", Static).update(content, layout=not one_line)

    def _arith(self, text: str) -> None:
        self._say("arith", text)

    # ---- moving -------------------------------------------------------------------------------

    async def move_to(self, key: str, i: int, j: int) -> None:
        """Focus cell (i, j) of matrix `key`, bringing its rows or columns on screen."""
        matrix = self.session.grids()[key]
        if not (0 <= i < len(matrix) and 0 <= j < len(matrix[i])):
            return
        top, left = self.windows[key]
        if not (top <= i < top + SHOWN_ROWS and left <= j < left + SHOWN_COLS):
            top = min(max(top, i - SHOWN_ROWS + 1), i)
            left = min(max(left, j - SHOWN_COLS + 1), j)
            focused = self.focused
            if isinstance(focused, Input):
                await self._commit(focused)
            self.windows[key] = (top, left)
            grid = self.query_one(f"#grid-{key}", Vertical)
            await grid.remove_children()
            await grid.mount_all(self._grid_rows(key))
            self._grid_title(key)
        self.query_one(f"#in-{key}-{i + 1}-{j + 1}", Cell).focus()

    def _show_stage(self, index: int, scroll: bool = True) -> None:
        tables = self.session.tables
        self.position = index = max(0, min(index, len(tables) - 1))
        for box in self.query(".stage-title.current"):
            box.remove_class("current")
        table = tables[index]
        box = self.query_one(f"#{table.wid}-box", Vertical)
        box.query_one(".stage-title").add_class("current")
        if scroll:
            self.query_one("#stages", VerticalScroll).scroll_to_widget(box, top=True, animate=False)
        self._say("why", self.session.why(table))
        self._say_status()

    def _say_status(self) -> None:
        total = len(self.session.tables)
        status = self._t("studio.status", number=self.position + 1, total=total)
        self._say("status", status)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The one-letter keys and the step keys are the boxes' own while a box has focus."""
        typing = isinstance(self.focused, Input)
        keys = ("quit_key", "save", "help", "step", "step_to", "head", "scroll")
        return not (typing and action in keys)

    async def action_quit_key(self) -> None:
        """q: quit, when no box has focus (Ctrl+Q quits from anywhere)."""
        await self.action_quit()

    def action_step(self, delta: int) -> None:
        self._show_stage(self.position + delta)

    def action_step_to(self, index: int) -> None:
        self._show_stage(index if index >= 0 else len(self.session.tables) + index)

    def action_head(self, delta: int) -> None:
        """n / p: the first stage of the next (previous) head, as in --step."""
        from qkvcalc.interactive.step import head_start

        heads = [t.stage.head for t in self.session.tables]
        self._show_stage(head_start(heads, self.position, delta > 0))

    def action_scroll(self, lines: int) -> None:
        self.query_one("#stages", VerticalScroll).scroll_relative(y=lines, animate=False)

    def action_leave(self) -> None:
        self.set_focus(None)

    def action_help(self) -> None:
        self.query_one("#help", Static).toggle_class("shown")

    async def action_undo(self) -> None:
        if not self.session.undo():
            self._say("error", self._t("studio.nothing_to_undo"))
            return
        self._refresh_boxes()
        self._say("error", "")
        await self._redraw()

    def action_save(self) -> None:
        from qkvcalc.cli.common import write_output

        try:
            write_output(self.session.saved(), self.save_to)
        except QkvcalcError as err:
            message = f"{self._t('cli.error_prefix')}: {err.message(self.session.lang)}"
            self._say("error", message)
            return
        self._say("status", self._t("studio.saved", path=str(self.save_to)))
