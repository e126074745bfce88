"""Each cell's arithmetic, written out the way a teacher writes it on the board.

    q₁·k₂ = 1×1 + 2×0 = 1          (a matrix product: one row times one column)
    [1,1]: 7 / √2 = 4.9497          (scaling)
    [1,2]: e^(4.9497 − 4.9497) = 1  (softmax, step 1)

The wording of numbers and symbols is a Style, so every format shares one logic, and what
goes under a stage's table (its notes, row sentences and arithmetic) is decided once, in
stage_extras. Nothing is computed here: every figure comes from the stage the engine recorded.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.table import OPS
from qkvcalc.records import NamedTuple
from qkvcalc.render.text import cell_label, factor, fmt, pick, safe, sub

if TYPE_CHECKING:
    from qkvcalc.render import RenderOptions
    from qkvcalc.trace import Stage, Trace


class Line(str):
    """An arithmetic line as written, and whether it says ≈ (the shown numbers, redone, do not
    give the result shown), so that the ≈ note follows it (stage_extras)."""

    approx: bool

    def __new__(cls, text: str, approx: bool = False) -> Line:
        line = super().__new__(cls, text)
        line.approx = approx
        return line


class Style(NamedTuple):
    """How symbols are written: plain Unicode text (the default) or LaTeX."""

    precision: int = 4
    times: str = "×"
    minus: str = "−"
    neg_inf: str = "-∞"
    latex: bool = False
    exact: bool = False  # --exact: fractions where the stage recorded them (Stage.exact)

    @property
    def blank(self) -> str:
        """A worksheet's empty cell, wide enough to write a number of this precision in:
        '______' in text, an empty box in LaTeX."""
        if self.latex:
            return rf"\boxed{{\phantom{{-0.{'0' * max(self.precision, 1)}}}}}"
        return "_" * max(self.precision + 2, 4)

    @classmethod
    def of(cls, opts: RenderOptions, *, latex: bool = False) -> Style:
        """The style of a rendering: its precision and --exact, in plain text or LaTeX."""
        if latex:
            symbols = {"times": r"\times ", "minus": "-", "neg_inf": r"-\infty"}
            return cls(precision=opts.precision, exact=opts.exact, latex=True, **symbols)
        return cls(precision=opts.precision, exact=opts.exact)

    def num(self, value: float) -> str:
        text = fmt(value, self.precision)
        if self.latex:  # ∞ itself: a --dtype run's overflow
            return text.replace("-∞", r"-\infty").replace("∞", r"\infty")
        return text

    def factor(self, value: float) -> str:
        return factor(value, self.precision)

    @property
    def approx(self) -> str:
        return r" \approx " if self.latex else " ≈ "

    def shown(self, value: float, cell: Any = None) -> float:
        """A number as the arithmetic shows it, read back: its decimal at this precision, or
        its exact value (cell, from Stage.exact) where --exact writes that."""
        if isinstance(cell, Fraction):
            return float(cell)
        if not math.isfinite(value):
            return value
        return float(fmt(value, self.precision))

    def holds(self, shown: float, value: float) -> bool:
        """Whether `shown` (the arithmetic redone from the numbers shown) gives the result shown
        for `value`: the same number once rounded to this precision."""
        target = self.shown(value)
        if not (math.isfinite(shown) and math.isfinite(target)):
            return shown == target
        unit = 10.0**-self.precision  # half of it, and floating-point noise kept far below it
        slack = min(1e-12 * max(1.0, abs(target)), 1e-3 * unit)
        return abs(shown - target) <= 0.5 * unit + slack

    def sign(self, shown: float, value: float) -> str:
        """' = ' when the shown numbers give the result shown (holds), else ' ≈ '."""
        return " = " if self.holds(shown, value) else self.approx

    def line(self, left: str, shown: float, value: float, result: str) -> Line:
        """The one place an arithmetic line is put together: its left side, then ' = ' when
        the left side's shown numbers give the shown result (`shown` is that left side worked
        out from them, `value` the stage's own), else ' ≈ '; then the result."""
        sign = self.sign(shown, value)
        return Line(f"{left}{sign}{result}", sign != " = ")

    def label(self, template: str, i: int, j: int) -> str:
        if self.latex:  # keep the braces: q_{12} is a two-digit subscript in TeX
            return (
                template.replace("{i}", f"{{{i}}}")
                .replace("{j}", f"{{{j}}}")
                .replace("·", r" \cdot ")
                .replace("out[", r"\mathrm{out}[")
            )
        return cell_label(template, i, j)

    def at(self, i: int, j: int) -> str:
        """The prefix that names a cell (1-based) before its arithmetic: '[1,2]: '."""
        return rf"[{i},{j}]\colon\ " if self.latex else f"[{i},{j}]: "

    def exp(self, inner: str) -> str:
        return rf"e^{{{inner}}}" if self.latex else f"e^({inner})"

    def divided(self, a: str, b: str) -> str:
        return rf"\frac{{{a}}}{{{b}}}" if self.latex else f"{a} / {b}"

    def root(self, text: str) -> str:
        return text.replace("√", r"\sqrt{") + "}" if self.latex and "√" in text else text

    def exact_num(self, cell: Any) -> str:
        """An exact value: '7/2'; an irrational scaled score beside its decimal: '7/√2 ≈ 4.9497'."""
        if not self.latex:
            return exact_text(cell, self.precision)
        if isinstance(cell, Fraction):
            return str(cell)
        return rf"{self.root(str(cell))} \approx {self.num(float(cell))}"

    # ---- what an op's cell arithmetic (Op.work, in qkvcalc.ops) writes with -------------------

    def products(
        self, row: Any, col: Any, exact_row: Any = None, exact_col: Any = None
    ) -> tuple[str, float]:
        """'1×0 + 2×1' and that sum worked out from the factors as shown."""
        return _products(row, col, self, exact_row, exact_col)

    def row_of_product(
        self, stage: Stage, first: int, row: int, j: int, exact: Any
    ) -> tuple[str, float]:
        """Row `row` of operand `first` times column j of the next, plus the bias."""
        return _row_of_product(stage, first, row, j, self, exact)

    def sum_of_products(
        self,
        stage: Stage,
        i: int,
        j: int,
        pairs: list[tuple[float, float]],
        result: str,
        fractions: list[tuple[Any, Any]] | None = None,
    ) -> str:
        """d[1,2] = a×b + c×d = r: a cell as the sum of products it is."""
        return _sum_of_products(stage, i, j, self, pairs, result, fractions)

    def exact_pairs(
        self, stage: Stage, exact: Any, count: int, a: Any, b: Any
    ) -> list[tuple[Any, Any]] | None:
        """The exact factor pairs of a product's `count` terms (None without exact values)."""
        return _exact_pairs(stage, exact, count, a, b)

    @staticmethod
    def exact_cell(matrix: Any, i: int, j: int) -> Any:
        return _exact_cell(matrix, i, j)

    @staticmethod
    def root_value(text: str) -> float:
        """What a scale written as a root stands for, read back: '√2' -> 1.4142…"""
        return _root_value(text)

    def max_of(self, values: np.ndarray) -> str:
        """'0.5, 1.2': the numbers a maximum is taken over."""
        return ", ".join(self.num(float(v)) for v in values)

    @staticmethod
    def sub(k: int) -> str:
        """A number as subscript digits: ℓ₂."""
        return sub(k)

    def exact_factor(self, cell: Any, value: float) -> str:
        """A factor in a product: '(1/3)', '(-2)', '3'; the decimal when it has no exact value."""
        if cell is None:
            return self.factor(value)
        text = self.exact_num(cell)
        return f"({text})" if "/" in text or text.startswith("-") else text


def exact_text(cell: Any, precision: int = 4) -> str:
    """A cell of Stage.exact as text: '7/2', '-3', or a surd beside its decimal '7/√2 ≈ 4.9497'."""
    if isinstance(cell, Fraction):
        return str(cell)
    if isinstance(cell, float):  # -inf: a masked score
        return fmt(cell, precision)
    return f"{cell} ≈ {fmt(float(cell), precision)}"


def _exact_cell(matrix: Any, i: int, j: int) -> Any:
    return None if matrix is None else matrix[i][j]


def fits(stage: Stage, cells_limit: int, terms_limit: int) -> Msg | None:
    """None when this stage's arithmetic should be written out; else the reason it is not."""
    rows, cols = stage.shape  # from the labels: a recipe is not computed to be measured
    if rows * cols > cells_limit:
        return Msg("note.too_big_cells", cells=rows * cols, limit=cells_limit)
    if stage.inner and len(stage.inner) > terms_limit:  # each cell a sum over `inner`
        return Msg("note.too_long_sums", inner=len(stage.inner), limit=terms_limit)
    return None


def _root_value(text: str) -> float:
    """What a scale written as a root stands for, read back: '√2' -> 1.4142…, '8' -> 8."""
    body = text.strip()
    if body.startswith("√"):
        return math.sqrt(float(body[1:]))
    return float(body)


def _products(
    row: Sequence[float] | np.ndarray,
    col: Sequence[float] | np.ndarray,
    style: Style,
    exact_row: Any = None,
    exact_col: Any = None,
) -> tuple[str, float]:
    """'1×0 + 2×1', and that sum worked out from the factors as shown: a row times a column,
    with the exact factors (--exact) where recorded."""
    if exact_row is None or exact_col is None:
        exact_row = exact_col = [None] * len(row)
    terms, total = [], 0.0
    for x, y, ea, eb in zip(row, col, exact_row, exact_col, strict=True):
        x, y = float(x), float(y)
        terms.append(f"{style.exact_factor(ea, x)}{style.times}{style.exact_factor(eb, y)}")
        total += style.shown(x, ea) * style.shown(y, eb)
    return " + ".join(terms), total


def _row_of_product(
    stage: Stage, first: int, row: int, j: int, style: Style, exact: Any
) -> tuple[str, float]:
    """Row `row` of operand `first` times column j of the next operand, plus the bias: the
    arithmetic of a step's projection (exact factors when --exact recorded them)."""
    x, w = stage.operands[first], stage.operands[first + 1]
    ex = ew = None
    if exact is not None and len(stage.operands_exact) > first + 1:
        xs, ws = stage.operands_exact[first], stage.operands_exact[first + 1]
        if xs is not None and ws is not None:
            ex, ew = xs[row], [r[j] for r in ws]
    terms, total = _products(x[row], w[:, j], style, ex, ew)
    if stage.bias is not None:
        bias = stage.bias_exact[j] if exact is not None and stage.bias_exact else None
        terms += f" + {style.exact_factor(bias, float(stage.bias[j]))}"
        total += style.shown(float(stage.bias[j]), bias)
    return terms, total


def _sum_of_products(
    stage: Stage,
    i: int,
    j: int,
    style: Style,
    pairs: list[tuple[float, float]],
    result: str,
    fractions: list[tuple[Any, Any]] | None = None,
) -> str:
    """d[1,2] = a×b + c×d = r: a gradient cell as the sum of products it is (with --exact and
    exact operands, `fractions`: the factors as fractions, and the sum is exact)."""
    xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
    ex = ey = None
    if fractions is not None:
        ex, ey = [a for a, _ in fractions], [b for _, b in fractions]
    terms, total = _products(xs, ys, style, ex, ey)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    return style.line(left, total, float(stage.value[i, j]), result)


def _exact_pairs(
    stage: Stage, exact: Any, count: int, a: Any, b: Any
) -> list[tuple[Any, Any]] | None:
    """The `count` exact factor pairs of a gradient's product, given where term t reads each
    operand (t -> (row, column)); None when the stage has no exact value."""
    if exact is None or len(stage.operands_exact) != 2:
        return None
    ea, eb = stage.operands_exact
    return [(_exact_cell(ea, *a(t)), _exact_cell(eb, *b(t))) for t in range(count)]


def has_arithmetic(stage: Stage) -> bool:
    """Whether each cell of this stage has arithmetic to write out (its op writes it: Op.work;
    the mask is said row by row instead, row_summaries)."""
    return OPS[stage.op].work is not None


def cell_work(stage: Stage, i: int, j: int, style: Style) -> str | None:
    """The arithmetic of cell (i, j) (0-based), or None when this cell has none to show."""
    work = OPS[stage.op].work
    if work is None:
        return None
    value = float(stage.value[i, j])
    exact = _exact_cell(stage.exact, i, j) if style.exact else None
    result = style.num(value) if exact is None else style.exact_num(exact)
    return work(stage, i, j, style, exact, result)


def stage_work(stage: Stage, style: Style) -> Iterator[str]:
    """Every cell's arithmetic, row by row."""
    rows, cols = stage.value.shape
    for i in range(rows):
        for j in range(cols):
            line = cell_work(stage, i, j, style)
            if line is not None:
                yield line


def hidden_note(rows: int, cols: int) -> Msg:
    """How much of an elided table is hidden, naming only what is (rows, columns or both)."""
    if not cols:
        return Msg("note.hidden_rows", rows=rows)
    if not rows:
        return Msg("note.hidden_cols", cols=cols)
    return Msg("note.hidden", rows=rows, cols=cols)


class StageExtras(NamedTuple):
    """What every format writes under a stage's table."""

    notes: list[Msg]  # the stage's notes, how much of the table is hidden, why no arithmetic
    rows: list[Msg | None]  # sentences about whole rows (row_summaries), before the arithmetic
    work: list[str]  # each cell's arithmetic, in the style asked for

    @property
    def has_arithmetic(self) -> bool:
        return bool(self.rows or self.work)


def stage_extras(
    stage: Stage, trace: Trace, hidden: tuple[int, int], style: Style, opts: RenderOptions
) -> StageExtras:
    """A stage's notes (plus how much of its table is hidden, and why its arithmetic is left
    out, when it is), its row sentences and its arithmetic lines, for --detail full."""
    notes = list(stage.notes)
    if any(hidden):
        notes.append(hidden_note(*hidden))
    if opts.worksheet:  # no arithmetic, and only what the problem itself says
        from qkvcalc.render.worksheet import keeps

        rows = [r for r in row_summaries(stage, trace, opts.precision, opts.max_rows) if keeps(r)]
        if all(r is None for r in rows):  # the ⋮ of rows none of which is said
            rows = []
        return StageExtras([n for n in notes if keeps(n)], rows, [])
    if opts.detail != "full":
        return StageExtras(notes, [], [])
    work: list[str] = []
    if has_arithmetic(stage):
        reason = fits(stage, opts.arithmetic_cells, opts.arithmetic_terms)
        if reason is None:
            work = list(stage_work(stage, style))
        else:
            notes.append(Msg("note.no_arithmetic", reason=reason))
    rows = row_summaries(stage, trace, opts.precision, opts.max_rows)
    said_approx = [r for r in rows if r is not None and "≈" in r.params.get("eq", "")]
    rounded = Msg("note.rounded", precision=opts.precision)
    if (any(getattr(line, "approx", False) for line in work) or said_approx) and (
        rounded not in notes
    ):
        notes.append(rounded)  # the ≈ note follows any ≈
    return StageExtras(notes, rows, work)


def row_summaries(stage: Stage, trace: Trace, precision: int, max_rows: int) -> list[Msg | None]:
    """Sentences about whole rows, written before the cells' arithmetic: for softmax each row's
    maximum and sum of exponentials, for the mask which keys each query may not see. None
    stands for the rows a long table elides (⋮). Every renderer escapes them its own way."""
    if stage.row_sum is None and stage.allowed is None:
        return []
    out: list[Msg | None] = []
    for i in pick(stage.shape[0], max_rows):
        if i is None:
            out.append(None)
            continue
        token = safe(stage.rows[i])
        if stage.allowed is not None:  # the mask: which keys this query may not see
            blocked = np.flatnonzero(~stage.allowed[i])
            if blocked.size:
                keys = ", ".join(f"{safe(stage.cols[j])} ({j + 1})" for j in blocked[:12])
                keys += " …" if blocked.size > 12 else ""
                said = "ui.masked_row" if stage.twin is None else "ui.masked_row_lowp"
                out.append(Msg(said, row=i + 1, token=token, keys=keys))
            continue
        assert stage.row_sum is not None
        row_max = _row_max_behind(stage, trace)
        if stage.row_sum[i] == 0:
            out.append(Msg("ui.all_masked_row", row=i + 1, token=token))
        else:
            out.append(_softmax_row(stage, i, token, float(row_max[i]), Style(precision)))
    return out


MAX_SUM_TERMS = 12  # a row's sum of exponentials is written out term by term up to this many


def _softmax_row(stage: Stage, i: int, token: str, row_max: float, style: Style) -> Msg:
    """row 2 (love): max = 2.1213; sum of exponentials = 1 + 0.2431 = 1.2431 (≈ when the
    exponentials as shown do not add up to the sum shown; a masked key's 0 left out)."""
    assert stage.row_sum is not None
    top, total = style.num(row_max), float(stage.row_sum[i])
    exps = [float(v) for v in stage.operands[0][i] if v != 0]
    if len(exps) < 2 or len(exps) > MAX_SUM_TERMS:  # nothing to add up, or too much
        return Msg("ui.softmax_row", row=i + 1, token=token, max=top, sum=style.num(total))
    terms = " + ".join(style.num(v) for v in exps)
    eq = style.sign(sum(map(style.shown, exps)), total)
    return Msg(
        "ui.softmax_row_terms",
        row=i + 1,
        token=token,
        max=top,
        terms=terms,
        eq=eq,
        sum=style.num(total),
    )


def _row_max_behind(stage: Stage, trace: Trace) -> np.ndarray:
    """The maxima the exponentials a softmax divides were shifted by (its operand's)."""
    sid, head, *rest = stage.reads[0]
    step, block = [*rest, None, None][:2]
    earlier = trace.stage(sid, head, step=step, block=block)  # a selection reaches the whole run
    if earlier.row_max is None:
        raise KeyError(stage.reads[0])
    return earlier.row_max


def split_rows(stage: Stage) -> list[Msg]:
    """The split stage in sentences, a head a line: which columns of W_Q, W_K and W_V (or of
    Q, K, V) it reads, and which K/V head. Every renderer shows these instead of the table."""
    q, k, v = stage.names
    out = []
    for h, row in enumerate(stage.value.astype(int), start=1):
        bounds = zip(row[0:6:2], row[1:6:2], strict=True)
        qcols, kcols, vcols = (f"{a}–{b}" if a != b else f"{a}" for a, b in bounds)
        out.append(
            Msg(
                "ui.split_row",
                head=h,
                q=q,
                k=k,
                v=v,
                qcols=qcols,
                kcols=kcols,
                vcols=vcols,
                g=int(row[6]),
            )
        )
    return out
