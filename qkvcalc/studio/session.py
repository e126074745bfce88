"""What the studio holds and computes, with no widget in sight: the problem being edited, its
last good Trace, the edits to undo, and each stage as the rows of text its table shows.

An edit builds a new document and reads it the way `qkvcalc explain` reads a file
(Problem.from_mapping, then the engine): a bad entry raises the CLI's own QkvcalcError and
leaves the session as it was, so the last good numbers stay. A stage's cells are written by
the document model's TableView (the digits the terminal shows), a cell's arithmetic by
qkvcalc.render.arith.cell_work (what every writer prints under the table), and a stage's why
comes from the catalog.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from qkvcalc.i18n import translate
from qkvcalc.input.fields import DISPLAY
from qkvcalc.records import NamedTuple
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style, cell_work, split_rows
from qkvcalc.render.document import TableView, table_view
from qkvcalc.render.text import place

if TYPE_CHECKING:
    from qkvcalc.trace import Stage, Trace

# The matrices a student edits, in the order they are shown (the input format's keys).
GRID_KEYS = ("x", "wq", "wk", "wv", "wo", "source")
# Options shown as controls even when the problem leaves them out; a key the problem gives
# that is neither a matrix nor text about the problem is shown as a control too.
CORE_OPTIONS = ("mask", "heads", "kv_heads", "scale")
ABOUT = ("name", "description", "reference", "tokens")
# A table shows at most this many rows and columns, the middle elided as the terminal does: a
# table redraws every column of a row it shows, and 64 columns cost 0.4 s of CPU an edit.
MAX_ROWS = 32
MAX_COLS = 12
CHANGES_LISTED = 6  # old values listed under a table; the rest are counted


def as_rows(value: Any) -> list[list[Any]]:
    """A matrix of the input as a list of rows: a flat list is one row (one token)."""
    rows = value.tolist() if hasattr(value, "tolist") else value
    if isinstance(rows, list) and rows and not isinstance(rows[0], list | tuple):
        return [list(rows)]
    return [list(row) if isinstance(row, list | tuple) else [row] for row in rows]


def typed_value(text: str) -> Any:
    """A typed cell as the input format holds it: an integer or a finite decimal as a number,
    anything else as its text, for the input layer to read or to refuse ('1/2', 'sqrt(2)')."""
    stripped = text.strip()
    for kind in (int, float):
        try:
            number = kind(stripped)
        except ValueError:
            continue
        if isinstance(number, int) or math.isfinite(number):
            return number
    return stripped


def option_value(text: str) -> Any:
    """A typed option: JSON where it reads as JSON (2, 0.5, [[1, 0], [1, 1]]), else its text
    ('causal'); empty leaves the option out (None)."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return stripped


def shown_text(value: Any) -> str:
    """An input cell or option as the studio writes it in its box."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value) if isinstance(value, list | dict | bool) else str(value)


class StageTable(NamedTuple):
    """One stage as the studio shows it: its widget id, heading, column and row labels, the
    cells as text ('…' and '⋮' where the middle is elided), which stage row and column each
    shown one is, and the stage in sentences when it is said in words."""

    wid: str
    title: str
    cols: list[str]
    rows: list[str]
    cells: list[list[str]]
    row_ids: list[int | None]
    col_ids: list[int | None]
    words: list[str]
    stage: Stage
    view: TableView | None = None  # the shown values, to reuse the text of those unchanged


def widget_id(stage: Stage, taken: set[str]) -> str:
    """stage-ID, stage-ID-hH for head H (and -sS, -bB for a decoding step or a tile), unique."""
    wid = f"stage-{stage.id}".replace(".", "-")
    for mark, value in (("h", stage.head), ("s", stage.step), ("b", stage.block)):
        if value is not None:
            wid += f"-{mark}{value}"
    base, count = wid, 1
    while wid in taken:
        count += 1
        wid = f"{base}-{count}"
    taken.add(wid)
    return wid


def stage_tables(
    trace: Trace, opts: RenderOptions, before: Sequence[StageTable] = ()
) -> list[StageTable]:
    """Every stage of the trace as the rows of its table, formatted as the terminal shows it.
    A cell whose value is the one it had in `before` (the tables of the last run) keeps its
    text: after an edit, only the numbers that moved are formatted again."""
    style = Style.of(opts)
    taken: set[str] = set()
    tables = []
    total = len(trace.stages)
    old = {t.wid: t for t in before}
    for number, stage in enumerate(trace.stages, 1):
        where = place(stage, opts.lang)
        title = translate(stage.title.key, opts.lang)
        heading = f"{number}/{total}  {title}{' · ' + where if where else ''}"
        heading += f"  ·  {stage.formula}  ·  {stage.size}"
        wid = widget_id(stage, taken)
        if stage.in_words:
            words = [row.text(opts.lang) for row in split_rows(stage)]
            tables.append(StageTable(wid, heading, [], [], [], [], [], words, stage))
            continue
        view = table_view(stage, stage.name, stage.rows, stage.cols, opts, MAX_COLS)
        cols = ["…" if j is None else stage.cols[j] for j in view.col_ids]
        rows = ["⋮" if i is None else stage.rows[i] for i in view.row_ids]
        cells = _cells(view, style, old.get(wid))
        tables.append(
            StageTable(wid, heading, cols, rows, cells, view.row_ids, view.col_ids, [], stage, view)
        )
    return tables


def _cells(view: TableView, style: Style, was: StageTable | None) -> list[list[str]]:
    """The shown cells as text ('⋮' and '…' where the middle is elided); those whose value is
    the one `was` showed keep its text."""
    same_layout = (
        was is not None
        and was.view is not None
        and (was.row_ids, was.col_ids) == (view.row_ids, view.col_ids)
    )
    cells = []
    for r, i in enumerate(view.row_ids):
        if i is None:
            cells.append(["⋮" if j is not None else "…" for j in view.col_ids])
            continue
        if same_layout and was is not None and was.view is not None:
            moved = view.shown[i] != was.view.shown[i]
            old_row = was.cells[r]
        else:
            moved, old_row = None, None
        row = []
        for c, j in enumerate(view.col_ids):
            if j is None:
                row.append("…")
            elif moved is not None and old_row is not None and not moved[j]:
                row.append(old_row[c])
            else:
                row.append(view.cell(i, j, style))
        cells.append(row)
    return cells


def changes(old: list[StageTable], new: list[StageTable]) -> dict[str, dict[tuple[int, int], str]]:
    """The cells whose shown text an edit changed, by table and position, with the old text
    (a table whose shape changed is new as a whole: none of its cells is marked)."""
    before = {t.wid: t for t in old}
    changed: dict[str, dict[tuple[int, int], str]] = {}
    for table in new:
        was = before.get(table.wid)
        if was is None or (was.row_ids, was.col_ids) != (table.row_ids, table.col_ids):
            continue
        cells = {
            (r, c): was.cells[r][c]
            for r, row in enumerate(table.cells)
            for c, text in enumerate(row)
            if was.cells[r][c] != text
        }
        if cells:
            changed[table.wid] = cells
    return changed


def compute(doc: Mapping[str, Any]) -> Trace:
    """The problem read and run as `qkvcalc explain` reads and runs a file."""
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    return run(Problem.from_mapping(doc))


class Session:
    """The problem being edited: its document, its last good trace and tables, the edits to
    undo, and which cells the last edit changed (with their old text)."""

    def __init__(self, problem: Mapping[str, Any], lang: str = "en", precision: int = 4) -> None:
        doc = {  # an .npz's arrays as the lists JSON holds, so that each cell can be edited
            key: value.tolist() if hasattr(value, "tolist") else copy.deepcopy(value)
            for key, value in problem.items()
        }
        for key in GRID_KEYS:
            if key in doc and doc[key] is not None:
                doc[key] = as_rows(doc[key])
        self.opts = RenderOptions(lang=lang, precision=precision, max_rows=MAX_ROWS, color=False)
        self.doc = doc
        self.trace = compute(doc)  # a bad problem fails here, before any screen is drawn
        self.tables = stage_tables(self.trace, self.opts)
        self.changed: dict[str, dict[tuple[int, int], str]] = {}
        self.history: list[dict[str, Any]] = []

    @property
    def lang(self) -> str:
        return self.opts.lang

    def grids(self) -> dict[str, list[list[Any]]]:
        """The editable matrices the problem has, by key, in GRID_KEYS order."""
        return {k: self.doc[k] for k in GRID_KEYS if isinstance(self.doc.get(k), list)}

    def options(self) -> dict[str, Any]:
        """The options shown as controls: the core ones, and every other key the problem
        gives that is neither a matrix nor text about it."""
        shown = {key: self.doc.get(key) for key in CORE_OPTIONS}
        for key, value in self.doc.items():
            if key not in GRID_KEYS and key not in ABOUT and key not in shown:
                shown[key] = value
        return shown

    def _apply(self, doc: dict[str, Any]) -> bool:
        """Compute `doc` and keep it, the old one kept to undo; a QkvcalcError when it does
        not compute, with the session left as it was."""
        trace = compute(doc)
        tables = stage_tables(trace, self.opts, self.tables)
        self.history.append(self.doc)
        self.doc, self.trace = doc, trace
        self.changed = changes(self.tables, tables)
        self.tables = tables
        return True

    def edit_cell(self, key: str, i: int, j: int, text: str) -> bool:
        """Put `text` in cell (i, j) (0-based) of matrix `key`; False when it holds that already."""
        value = typed_value(text)
        if shown_text(self.doc[key][i][j]) == shown_text(value):
            return False
        doc = dict(self.doc)  # the old document is kept, unchanged, to undo: copy what changes
        doc[key] = list(doc[key])
        doc[key][i] = list(doc[key][i])
        doc[key][i][j] = value
        return self._apply(doc)

    def edit_option(self, key: str, text: str) -> bool:
        """Set option `key` from its typed text (JSON or a word; empty leaves it out)."""
        value = option_value(text)
        if value == self.doc.get(key):
            return False
        doc = dict(self.doc)
        if value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
        return self._apply(doc)

    def undo(self) -> bool:
        """Go back to the problem before the last edit; False when there was none."""
        if not self.history:
            return False
        doc = self.history.pop()
        trace = compute(doc)  # it computed before
        tables = stage_tables(trace, self.opts, self.tables)
        self.doc, self.trace = doc, trace
        self.changed = changes(self.tables, tables)
        self.tables = tables
        return True

    def saved(self) -> str:
        """The problem as the JSON the input format reads (what `s` writes); an edited preset
        is written as edited from it, not as the preset (qkvcalc.input.edited)."""
        from qkvcalc.input.edited import unless_edited

        return json.dumps(unless_edited(self.doc), ensure_ascii=False, indent=2) + "\n"

    def arithmetic(self, table: StageTable, r: int, c: int) -> str:
        """The arithmetic of the shown cell (r, c) of a table, as every writer writes it, or
        a sentence saying this stage's cells have none; with the old value when it changed."""
        i, j = table.row_ids[r], table.col_ids[c]
        if i is None or j is None:
            return ""
        work = cell_work(table.stage, i, j, Style.of(self.opts))
        if work is None:
            work = translate(
                "studio.no_arithmetic",
                self.lang,
                name=table.stage.name,
                i=i + 1,
                j=j + 1,
                value=table.cells[r][c],
            )
        old = self.changed.get(table.wid, {}).get((r, c))
        if old is not None:
            work += "   " + translate("studio.was", self.lang, old=old)
        return work

    def why(self, table: StageTable) -> str:
        return translate(table.stage.why.key, self.lang)

    def changed_line(self, wid: str) -> str:
        """The old values of the cells the last edit changed in one table, as one line."""
        cells = self.changed.get(wid)
        if not cells:
            return ""
        table = next(t for t in self.tables if t.wid == wid)
        listed = []
        for r, c in sorted(cells)[:CHANGES_LISTED]:
            i, j = table.row_ids[r], table.col_ids[c]
            new = table.cells[r][c]
            listed.append(f"[{(i or 0) + 1},{(j or 0) + 1}] {cells[r, c]} → {new}")
        line = translate("studio.changed", self.lang, cells="; ".join(listed))
        if len(cells) > CHANGES_LISTED:
            line += " " + translate("studio.more", self.lang, count=len(cells) - CHANGES_LISTED)
        return line

    def field(self, key: str) -> str:
        """A matrix's name as messages write it: X, W_Q …"""
        return DISPLAY.get(key, key)
