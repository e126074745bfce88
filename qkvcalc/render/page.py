"""The interactive page (`--format html`): what each shown cell carries, and the inline script.

Every value cell of a stage's table carries its stage (`data-stage`, and `data-head`,
`data-step`, `data-block` where they apply), its place (`data-cell="i,j"`, 1-based), the cells
it was computed from (`data-from`) and its arithmetic line (`data-arith`) or, when it has none,
why not (`data-why`). The sources are the trace's own references: the operation's rule of which
operand cells one cell reads (qkvcalc.ops, `feeds`) applied to the operands the plan
recorded (`Stage.reads`), kept to the cells the page shows. The script only reads these
attributes; it holds no copy of the graph. Everything else the script needs (the words of its
buttons in each language, the attention weights of the pictures, the tokens) is one JSON block
escaped so that no text of the input can close it.

`data-from` is a list of groups `TABLE:ROWS:COLS` separated by spaces: TABLE is the number of
a stage on the page (its table's cells have ids `c<TABLE>-<i>-<j>`) or `<stage>.<k>` for the
k-th operand table of a stage's A·B = C; ROWS and COLS are 1-based lists of ranges ("1-4,9").
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from html import escape
from importlib import resources
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

from qkvcalc.i18n import LANGS, catalog, translate
from qkvcalc.ops.op import Op, Shapes, whole_row
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids
from qkvcalc.render.arith import Style, cell_work, fits, has_arithmetic
from qkvcalc.render.text import safe

if TYPE_CHECKING:
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.document import TableView
    from qkvcalc.trace import Stage, Trace

# operations whose cell is one cell of an operand, moved: transposed, stacked, joined, cut out
COPIES = frozenset({"copy", "transpose", "stack", "block", "concat"})
# the backward stages that are 0 wherever the mask is (A = 0 there): d(S+M), dS, d(Q·Kᵀ)
MASKED_GRADIENTS = frozenset({"grad_masked", "grad_scaled", "grad_scores"})
PICTURE_TOKENS = 64  # a picture of the weights shows at most this many queries and keys

# The words of the page's controls, looked up by the script (catalog keys page.*).
UI_KEYS = (
    "page.present",
    "page.document",
    "page.keys_title",
    "page.key_next",
    "page.key_back",
    "page.key_number",
    "page.key_first_last",
    "page.key_group",
    "page.key_help",
    "page.key_why",
    "page.why_open",
    "page.why_close",
    "page.key_exit",
    "page.key_present",
    "page.key_cells",
    "page.language",
    "page.why_given",
    "page.why_masked",
    "page.why_kept",
    "page.why_copy",
    "page.why_none",
    "page.why_unmarked",
    "page.why_masked_grad",
    "page.picture_title",
    "page.picture_why",
    "page.heatmap",
    "page.lines",
    "page.head",
    "page.legend",
    "page.picture_part",
    "page.picture_cell",
    "page.not_shown",
)


class Cells:
    """What the page knows of its tables as it writes them, in order: which rows and columns
    each shows, so that a cell names only the sources a reader can see."""

    def __init__(self, trace: Trace, opts: RenderOptions, prefix: str = "") -> None:
        self.trace = trace
        self.opts = opts
        self.prefix = prefix
        self.number = {stage.ref: k for k, stage in enumerate(trace.stages, 1)}
        self.shown: dict[str, tuple[frozenset[int], frozenset[int]]] = {}
        self.style = Style.of(opts)

    def register(self, key: str, view: TableView) -> None:
        rows = frozenset(i for i in view.row_ids if i is not None)
        cols = frozenset(j for j in view.col_ids if j is not None)
        self.shown[key] = (rows, cols)

    def cell_id(self, key: str, i: int, j: int) -> str:
        return f"{self.prefix}c{key}-{i + 1}-{j + 1}"

    def operand_attrs(self, key: str, view: TableView) -> Callable[[int, int], str]:
        """An operand table of A·B = C: its cells are lit, never pointed at."""
        self.register(key, view)
        return lambda i, j: f' id="{self.cell_id(key, i, j)}"'

    def final_attrs(self, view: TableView) -> Callable[[int, int], str]:
        """The final output's table: each cell is the output stage's own."""
        self.register("F", view)
        source = self.number.get(self.trace.final.ref)

        def attrs(i: int, j: int) -> str:
            where = f' data-from="{source}:{i + 1}:{j + 1}"' if source else ""
            return (
                f' id="{self.cell_id("F", i, j)}" data-stage="output" data-cell="{i + 1},{j + 1}"'
                f'{where} data-why="copy"'
            )

        return attrs

    def stage_attrs(
        self, stage: Stage, number: int, view: TableView, product: bool
    ) -> Callable[[int, int], str]:
        """The attributes of each value cell of a stage's table (`product`: its A·B = C is on
        the page, so its operand tables are lit too)."""
        key = str(number)
        self.register(key, view)
        places = f' data-stage="{escape(stage.id)}"'
        places += f' data-head="{stage.head}"' if stage.head is not None else ""
        places += f' data-step="{stage.step}"' if stage.step is not None else ""
        places += f' data-block="{stage.block}"' if stage.block is not None else ""
        op = OPS[stage.op]
        shapes = self._shapes(stage)
        # operand k is lit in these tables: its own stage's, and its copy beside A·B = C, each
        # with the rows and columns it shows (as masks over the operand's shape)
        tables: list[tuple[int, str, np.ndarray, np.ndarray]] = []
        for k, read in enumerate(stage.reads):
            found = [self.number.get(tuple(read))] if _is_ref(read) else []
            keys = [str(n) for n in found if n is not None and str(n) in self.shown]
            if product and f"{number}.{k}" in self.shown:
                keys.append(f"{number}.{k}")
            for table in keys:
                rows, cols = self.shown[table]
                shape = shapes[k] if k < len(shapes) else (0, 0)
                tables.append((k, table, _mask(rows, shape[0]), _mask(cols, shape[1])))
        bias = product and stage.bias is not None and f"{number}.2" in self.shown
        arithmetic = self._writes_arithmetic(stage)

        def attrs(i: int, j: int) -> str:
            lit: dict[str, list[tuple[int, int]]] = defaultdict(list)
            if tables:  # the feeds as one array of (operand, row, column), filtered at once
                feeds = feeds_of(op, i, j, shapes, stage.params)
                for k, table, rows, cols in tables:
                    mine = feeds[feeds[:, 0] == k]
                    inside = (mine[:, 1] < len(rows)) & (mine[:, 2] < len(cols))
                    mine = mine[inside]
                    mine = mine[rows[mine[:, 1]] & cols[mine[:, 2]]]
                    lit[table] += [(int(a), int(b)) for _, a, b in mine]
            lit = defaultdict(list, {t: cells for t, cells in lit.items() if cells})
            if bias and j in self.shown[f"{number}.2"][1]:
                lit[f"{number}.2"].append((0, j))
            out = f' id="{self.cell_id(key, i, j)}"{places} data-cell="{i + 1},{j + 1}"'
            if lit:
                out += f' data-from="{_groups(lit)}"'
            line = cell_work(stage, i, j, self.style) if arithmetic else None
            if line is not None:
                return out + f' data-arith="{escape(line)}"'
            return out + f' data-why="{self._why(stage, i, j, bool(lit))}"'

        return attrs

    def _why(self, stage: Stage, i: int, j: int, lit: bool) -> str:
        op = OPS[stage.op]
        if op.given:
            return "given"
        if stage.allowed is not None:
            return "kept" if stage.allowed[i, j] else "masked"
        if stage.op in COPIES:
            return "copy"
        if self._masked_out(stage, i, j):  # dS where the mask is: 0 because of it
            return "masked_grad"
        return "none" if lit else "unmarked"  # nothing marked: no word of marked cells

    def _masked_out(self, stage: Stage, i: int, j: int) -> bool:
        """Whether cell (i, j) of a backward stage after the softmax's (d(S+M), dS, d(Q·Kᵀ))
        sits where the mask keeps this query from this key: its weight is 0, so its gradient
        is 0, from nothing shown."""
        if stage.id not in MASKED_GRADIENTS:
            return False
        for masked in self.trace.stages:
            allowed = masked.allowed
            if (
                allowed is not None
                and masked.head == stage.head
                and (masked.step, masked.block) == (stage.step, stage.block)
                and allowed.shape == stage.shape
            ):
                return not bool(allowed[i, j])
        return False

    def _writes_arithmetic(self, stage: Stage) -> bool:
        """Whether a pointed-at cell shows its arithmetic line: where the page writes the
        stage's arithmetic out (--detail full, and a stage small enough), the same lines."""
        opts = self.opts
        if opts.detail != "full" or opts.worksheet or not has_arithmetic(stage):
            return False
        return fits(stage, opts.arithmetic_cells, opts.arithmetic_terms) is None

    def _shapes(self, stage: Stage) -> list[tuple[int, int]]:
        """The operands' shapes, from the stages they are (a recomputed stage is not computed
        to be measured)."""
        shapes: list[tuple[int, int]] = []
        for read, data in zip(stage.reads, stage.inputs, strict=False):
            if isinstance(data, np.ndarray):
                shapes.append((data.shape[0], data.shape[-1]))
                continue
            earlier = None
            if _is_ref(read):
                sid, head, *rest = read
                step, block = [*rest, None, None][:2]
                earlier = self.trace.find(sid, head, step=step, block=block)
            if earlier is None:
                rows, cols = np.shape(data())
                shapes.append((rows, cols))
            else:
                shapes.append(earlier.shape)
        return shapes


def feeds_of(op: Op, i: int, j: int, shapes: Shapes, params: dict[str, Any]) -> np.ndarray:
    """The operand cells cell (i, j) reads, [count, 3] of (operand, row, column): the op's own
    rule (qkvcalc.run.op's feeds), at numpy speed for the two rules a real layer's page meets
    a million times (a product: row i of A and column j of B; a whole row: the row's max and
    sum). tests/test_page.py holds these to `op.feeds`, cell for cell."""
    if op.product and len(shapes) >= 2:
        inner = np.arange(shapes[0][1], dtype=np.intp)
        first = np.column_stack([np.zeros_like(inner), np.full_like(inner, i), inner])
        inner = np.arange(shapes[1][0], dtype=np.intp)
        second = np.column_stack([np.ones_like(inner), inner, np.full_like(inner, j)])
        return np.vstack([first, second])
    if op.feeds is whole_row:
        inner = np.arange(shapes[0][1], dtype=np.intp)
        return np.column_stack([np.zeros_like(inner), np.full_like(inner, i), inner])
    flat = chain.from_iterable(op.feeds(i, j, shapes, params))
    return np.fromiter(flat, dtype=np.intp).reshape(-1, 3)


def _mask(shown: frozenset[int], size: int) -> np.ndarray:
    mask = np.zeros(size, dtype=bool)
    mask[[v for v in shown if v < size]] = True
    return mask


def _is_ref(read: Any) -> bool:
    """An operand that names an earlier stage, (id, head) or (id, head, step, block), rather
    than numbers of the problem (a constant: its values and their fractions)."""
    return isinstance(read, tuple) and len(read) in (2, 4) and isinstance(read[0], str)


def _ranges(values: Iterable[int]) -> str:
    """1-based ranges of 0-based indices: [0, 1, 2, 5] -> '1-3,6'."""
    out: list[str] = []
    run: list[int] = []
    for v in sorted(set(values)):
        if run and v == run[-1] + 1:
            run.append(v)
            continue
        if run:
            out.append(_span(run))
        run = [v]
    if run:
        out.append(_span(run))
    return ",".join(out)


def _span(run: list[int]) -> str:
    return f"{run[0] + 1}" if len(run) == 1 else f"{run[0] + 1}-{run[-1] + 1}"


def _groups(lit: dict[str, list[tuple[int, int]]]) -> str:
    """The lit cells as TABLE:ROWS:COLS groups, rows that light the same columns together."""
    out = []
    for table, cells in lit.items():
        by_row: dict[int, set[int]] = defaultdict(set)
        for a, b in cells:
            by_row[a].add(b)
        by_cols: dict[str, list[int]] = defaultdict(list)
        for a, cols in by_row.items():
            by_cols[_ranges(cols)].append(a)
        out += [f"{table}:{_ranges(rows)}:{cols}" for cols, rows in by_cols.items()]
    return " ".join(out)


# ---- the data block and the script ---------------------------------------------------------


def pictures(trace: Trace, opts: RenderOptions) -> dict[str, Any] | None:
    """Each head's attention weights for the heatmap and the lines (at most PICTURE_TOKENS
    queries and keys), for the heads whose weights are on the page, with where each query's row
    is on the page ([stage number, row]: a decode run's rows are its steps'). None when no head's
    weights are on the page (a run in tiles never forms them; --stages may leave them out)."""
    p = trace.problem
    numbers = {stage.ref: k for k, stage in enumerate(trace.stages, 1)}
    n, m = min(p.n, PICTURE_TOKENS), min(p.m, PICTURE_TOKENS)
    stitched: np.ndarray | None = None
    heads: list[dict[str, Any]] = []
    for head in range(1, p.heads + 1) if p.multihead else [None]:
        mine = [
            s for s in trace.stages if s.id == ids.WEIGHTS and s.head == head and s.block is None
        ]
        whole = next((s for s in mine if s.step is None), None)
        if whole is not None:
            weights = whole.value_rows(list(range(n)))
            rows = [[numbers[whole.ref], i + 1] for i in range(n)]
        elif mine and sum(s.shape[0] for s in mine) == p.n:  # every decode step's rows
            if stitched is None:
                stitched = trace.weights  # the steps' rows, one under another
            weights = stitched[head - 1] if head is not None else stitched
            rows = [[numbers[s.ref], r + 1] for s in mine for r in range(s.shape[0])][:n]
        else:
            continue
        # a NaN weight (a --dtype run's row of −∞) is drawn blank: the tables name it NaN
        weights = np.nan_to_num(np.round(weights[:n, :m], opts.precision), nan=0.0)
        heads.append({"head": head, "rows": rows, "weights": weights.tolist()})
    if not heads:
        return None
    # the queries are the output's rows; the keys, the columns of the widest weights (a decode
    # run's last step has cached every key)
    queries = trace.final.rows
    keys = max((s for s in trace.stages if s.id == ids.WEIGHTS), key=lambda s: s.shape[1]).cols
    return {
        "queries": [safe(t) for t in queries[:n]],
        "keys": [safe(t) for t in keys[:m]],
        "n": p.n,
        "m": p.m,
        "heads": heads,
    }


def ui_words(lang: str) -> dict[str, str]:
    """The words of the page's controls in `lang`, as templates: the script fills in {head}."""
    words, english = catalog(lang), catalog("en")
    return {key.removeprefix("page."): words.get(key) or english[key] for key in UI_KEYS}


def data_block(trace: Trace, opts: RenderOptions, langs: tuple[str, ...]) -> str:
    """The page's data as JSON inside a <script type="application/json">: `<`, `>` and `&`
    written as \\u escapes, so that no text of the input can end the block or open a comment."""
    data = {
        "langs": list(langs),
        "names": {lang: translate("page.language_name", lang) for lang in LANGS},
        "ui": {lang: ui_words(lang) for lang in langs},
        "pictures": pictures(trace, opts),
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, code)
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="qkv-data">{text}</script>'


def script() -> str:
    """The page's script, inline (no network): qkvcalc/render/page.js."""
    code = resources.files("qkvcalc.render").joinpath("page.js").read_text(encoding="utf-8")
    return f"<script>\n{code.strip()}\n</script>"


STYLE = """
.qkvcalc td[data-cell] { cursor: pointer; }
.qkvcalc td[data-cell]:focus { outline: 3px solid #c2410c; outline-offset: -3px; }
.qkvcalc td.qkv-on { outline: 3px solid #c2410c; outline-offset: -3px; }
.qkvcalc td.qkv-from { box-shadow: inset 0 0 0 3px #f59e0b; background-color: #fde68a; }
.qkv-arith { display: block; width: fit-content; margin: 0.3em 0 0.6em;
  max-width: min(44em, 92vw); background: #fffbea;
  color: #111; border: 2px solid #b45309; border-radius: 6px; padding: 0.35em 0.7em;
  font: 0.9em "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre-wrap;
  overflow-wrap: anywhere; box-shadow: 0 2px 8px rgba(0,0,0,0.25); }
.qkv-arith[hidden] { display: none; }
.qkv-bar { position: fixed; top: 0.4em; right: 0.4em; z-index: 20; display: flex; gap: 0.4em; }
.qkv-bar button, .qkv-picture button { font: 0.8em system-ui, -apple-system, "Segoe UI",
  "Noto Sans", "Noto Sans KR", "Malgun Gothic", sans-serif; padding: 0.2em 0.7em;
  border: 2px solid #0b6e99; border-radius: 5px; background: #fff; color: #0b6e99;
  cursor: pointer; }
.qkv-bar button:focus-visible, .qkv-picture button:focus-visible,
.qkv-picture line:focus, .qkv-picture rect:focus { outline: 3px solid #c2410c; }
.qkv-picture rect:focus { stroke: #c2410c; stroke-width: 3px; }
.qkv-picture line:focus { stroke: #c2410c; stroke-opacity: 1; }
.qkv-picture button[aria-pressed="true"] { background: #0b6e99; color: #fff; }
.qkv-picture .controls { display: flex; flex-wrap: wrap; gap: 0.4em; margin: 0.4em 0; }
.qkv-picture svg { max-width: 100%; height: auto; }
.qkv-picture svg text { font: 15px system-ui, sans-serif; }
.qkv-picture .legend { display: flex; align-items: center; gap: 0.5em; font-size: 0.85em; }
.qkv-picture .legend span.ramp { display: inline-block; width: 12em; height: 1em;
  border: 1px solid #888; background: linear-gradient(to right, rgb(255,255,255),
  rgb(30,90,200)); }
.qkv-help { position: fixed; z-index: 30; top: 10vh; left: 50%; transform: translateX(-50%);
  max-width: 90vw; background: #fff; color: #111; border: 3px solid #0b6e99;
  border-radius: 8px; padding: 0.8em 1.4em; box-shadow: 0 4px 20px rgba(0,0,0,0.3); }
.qkv-help[hidden] { display: none; }
.qkv-help { font-size: 0.8em; max-height: 80vh; overflow-y: auto; }
.qkv-help h2 { margin: 0 0 0.4em; font-size: 1.2em; }
.qkv-help dl { display: grid; grid-template-columns: auto 1fr; gap: 0.3em 1em; margin: 0; }
.qkv-help dd { margin: 0; }
.qkv-help kbd { border: 1px solid #888; border-radius: 3px; padding: 0 0.3em; }
body.qkv-present { max-width: none; font-size: 26px; padding: 2.5em 2em 1em; }
body.qkv-present .qkvcalc > header, body.qkv-present .qkvcalc > section:not(.qkv-current) {
  display: none; }
body.qkv-present .qkvcalc > section.qkv-current h2 { margin-top: 0; }
body.qkv-present .qkvcalc > section:not(.qkv-open) > .why,
body.qkv-present .qkvcalc > section:not(.qkv-open) > ul.notes { display: none; }
body.qkv-present .qkvcalc > section > pre.work { column-gap: 2em; column-rule: 1px solid #ccc; }
.qkvcalc .qkv-why { display: none; }
body.qkv-present .qkvcalc .qkv-why { display: inline-block; margin: 0.2em 0; padding: 0.1em 0.7em;
  font: 0.8em system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans KR",
  "Malgun Gothic", sans-serif; border: 2px solid #0b6e99; border-radius: 5px; background: #fff;
  color: #0b6e99; cursor: pointer; }
.qkvcalc .qkv-why:focus-visible { outline: 3px solid #c2410c; }
@media print { .qkv-bar, .qkv-arith, .qkv-help, .qkv-picture, .qkvcalc .qkv-why {
  display: none !important; }
  body.qkv-present .qkvcalc > section > .why, body.qkv-present .qkvcalc > section > ul.notes {
  display: block !important; }
  body.qkv-present .qkvcalc > header,
  body.qkv-present .qkvcalc > section:not(.qkv-picture) { display: block !important; }
  .qkvcalc td.qkv-from, .qkvcalc td.qkv-on { box-shadow: none; outline: none;
  background-color: inherit; } }
""".strip()
