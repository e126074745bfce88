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
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from qkvcalc import features
from qkvcalc.i18n import Msg
from qkvcalc.render.text import cell_label, factor, fmt, pick, safe, sub
from qkvcalc.run.ops import OPS

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


def _product_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """One row times one column: q₁·k₂ = 1×1 + 2×0 = 1 (plus the bias, when there is one)."""
    a, b = stage.operands
    n = len(a[i])
    ea = eb = None
    if exact is not None and len(stage.operands_exact) == 2:
        ea, eb = stage.operands_exact
    rows = [_exact_cell(ea, i, t) for t in range(n)]
    cols = [_exact_cell(eb, t, j) for t in range(n)]
    terms, total = _products(a[i], b[:, j], style, rows, cols)
    if stage.bias is not None:
        bias = stage.bias_exact[j] if exact is not None and stage.bias_exact else None
        terms += f" + {style.exact_factor(bias, float(stage.bias[j]))}"
        total += style.shown(float(stage.bias[j]), bias)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    return style.line(left, total, float(stage.value[i, j]), result)


def _scale_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,1]: 7 / √2 = 4.9497, or 7 × 0.5 = 3.5 for a scale given."""
    at = style.at(i + 1, j + 1)
    score = float(stage.operands[0][i, j])
    assert stage.scale is not None
    cell = scale_cell = None  # the exact score and scale, where --exact writes them
    if exact is not None and stage.operands_exact:
        cell, scale_cell = _exact_cell(stage.operands_exact[0], i, j), stage.scale_exact
    s = style.num(score) if cell is None else style.exact_factor(cell, score)
    shown, value = style.shown(score, cell), float(stage.value[i, j])
    if stage.scale_text:
        left = f"{at}{style.divided(s, style.root(stage.scale_text))}"
        return style.line(left, shown / _root_value(stage.scale_text), value, result)
    scale = (
        style.num(stage.scale)
        if scale_cell is None
        else style.exact_factor(scale_cell, stage.scale)
    )
    left = f"{at}{s} {style.times} {scale}"
    return style.line(left, shown * style.shown(stage.scale, scale_cell), value, result)


def _root_value(text: str) -> float:
    """What a scale written as a root stands for, read back: '√2' -> 1.4142…, '8' -> 8."""
    body = text.strip()
    if body.startswith("√"):
        return math.sqrt(float(body[1:]))
    return float(body)


def _exp_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,2]: e^(4.9497 − 4.9497) = 1; a masked score: e^(-∞) = 0."""
    at = style.at(i + 1, j + 1)
    logit = float(stage.operands[0][i, j])
    assert stage.row_max is not None
    if np.isneginf(logit) and np.isfinite(stage.row_max[i]):
        return f"{at}{style.exp(style.neg_inf)} = 0"
    top = float(stage.row_max[i])
    left = f"{at}{style.exp(f'{style.num(logit)} {style.minus} {style.num(top)}')}"
    shown = math.exp(style.shown(logit) - style.shown(top))
    return style.line(left, shown, float(stage.value[i, j]), result)


def _softmax_work(
    stage: Stage, i: int, j: int, style: Style, exact: Any, result: str
) -> str | None:
    """[1,2]: 1 / 1.0067 = 0.9933; a row with every key masked has no division to show."""
    assert stage.row_sum is not None
    total = float(stage.row_sum[i])
    if total == 0:
        return None
    e = float(stage.operands[0][i, j])
    left = f"{style.at(i + 1, j + 1)}{style.divided(style.num(e), style.num(total))}"
    shown = style.shown(e) / style.shown(total)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _add_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,2]: 3.5355 + (−0.5) = 3.0355"""
    a, b = (float(m[i, j]) for m in stage.operands)
    left = f"{style.at(i + 1, j + 1)}{style.num(a)} + {style.factor(b)}"
    return style.line(left, style.shown(a) + style.shown(b), float(stage.value[i, j]), result)


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


def _step_project_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,2]: 1×0 + 2×1 = 2: this step's token's row of X times a column of W."""
    terms, total = _row_of_product(stage, 0, int(stage.params["take"][i]), j, style, exact)
    return style.line(f"{style.at(i + 1, j + 1)}{terms}", total, float(stage.value[i, j]), result)


def _append_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str | None:
    """Only the new rows of a cache have arithmetic; the others are copied from the last step."""
    kept = len(stage.operands[0]) if len(stage.operands) == 3 else 0
    if i < kept:
        return None
    first = 1 if kept else 0
    row = int(stage.params["take"][i - kept])
    terms, total = _row_of_product(stage, first, row, j, style, exact)
    return style.line(f"{style.at(i + 1, j + 1)}{terms}", total, float(stage.value[i, j]), result)


def _qk_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """q₃·k₂ = 1×1 + 2×0 = 1: a query row (named by its token) against a cached key row."""
    q, k = stage.operands
    eq = ek = None
    if exact is not None and len(stage.operands_exact) == 2 and None not in stage.operands_exact:
        eq, ek = stage.operands_exact[0][i], stage.operands_exact[1][j]  # type: ignore[index]
    row = int(stage.params["take"][i]) + 1  # the query's token, counted in the whole sequence
    terms, total = _products(q[i], k[j], style, eq, ek)
    left = f"{style.label('q_{i}·k_{j}', row, j + 1)} = {terms}"
    return style.line(left, total, float(stage.value[i, j]), result)


def _max_of(values: np.ndarray, style: Style) -> str:
    return ", ".join(style.num(float(v)) for v in values)


def _block_max_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,1]: max(0.5, 1.2) = 1.2"""
    (s,) = stage.operands
    left = f"{style.at(i + 1, j + 1)}max({_max_of(s[i], style)})"
    shown = max(style.shown(float(v)) for v in s[i])
    return style.line(left, shown, float(stage.value[i, j]), result)


def _running_max_work(
    stage: Stage, i: int, j: int, style: Style, exact: Any, result: str
) -> str | None:
    """[1,1]: max(m₁ = 0.7, 1.2) = 1.2"""
    if len(stage.operands) == 1:  # the first block: m₁ is its maximum, nothing to compare
        return None
    old, new = (float(o[i, 0]) for o in stage.operands)
    left = f"{style.at(i + 1, j + 1)}max({style.num(old)}, {style.num(new)})"
    shown = max(style.shown(old), style.shown(new))
    return style.line(left, shown, float(stage.value[i, j]), result)


def _correction_work(
    stage: Stage, i: int, j: int, style: Style, exact: Any, result: str
) -> str | None:
    """[1,1]: e^(0.7 − 1.2) = 0.6065 (1 when the maximum did not grow). Before the first key
    of a row there is nothing to rescale: e^(-∞) = 0 for the first block, whatever its maximum
    (−∞ too, when all its keys are masked), and no line while the maximum stays −∞."""
    at = style.at(i + 1, j + 1)
    value = float(stage.value[i, j])
    if len(stage.operands) == 1:
        new = float(stage.operands[0][i, 0])
        if np.isneginf(new):
            return f"{at}{style.exp(style.neg_inf)} = 0"
        left = f"{at}{style.exp(f'{style.neg_inf} {style.minus} {style.num(new)}')}"
        return style.line(left, 0.0, value, result)
    old, newest = (float(o[i, 0]) for o in stage.operands)
    if np.isneginf(newest):  # every key so far masked: e^(−∞ − −∞) is not a number
        return None
    left = f"{at}{style.exp(f'{style.num(old)} {style.minus} {style.num(newest)}')}"
    return style.line(left, math.exp(style.shown(old) - style.shown(newest)), value, result)


def _block_exp_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,2]: e^(0.3 − 1.2) = 0.4066; a masked score: e^(-∞) = 0. A score shifted by its row's
    number, [n, 1]: the tiles' running maximum (block_exp), or the log-sum-exp L (block_p)."""
    s, m = stage.operands
    at = style.at(i + 1, j + 1)
    if np.isneginf(s[i, j]):
        return f"{at}{style.exp(style.neg_inf)} = 0"
    score, top = float(s[i, j]), float(m[i, 0])
    inner = f"{style.num(score)} {style.minus} {style.factor(top)}"
    shown = math.exp(style.shown(score) - style.shown(top))
    return style.line(f"{at}{style.exp(inner)}", shown, float(stage.value[i, j]), result)


def _running_sum_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """ℓ₂[1] = ℓ₁·e^(m₁−m₂) + Σ e^(s−m₂) = 1.5×0.6065 + (0.4066 + 1) = 2.3164"""
    e = stage.operands[-1][i]
    b = stage.block or 1
    value = float(stage.value[i, j])
    total = " + ".join(style.num(float(v)) for v in e)
    fresh = sum(style.shown(float(v)) for v in e)
    if style.latex:
        ell, m, times = (lambda k: rf"\ell_{{{k}}}"), (lambda k: f"m_{{{k}}}"), r" \cdot "
        sums = rf"\sum e^{{s - {m(b)}}}"
        carried = rf"{ell(b - 1)}{times}e^{{{m(b - 1)} - {m(b)}}}"
    else:
        ell, m, times = (lambda k: "ℓ" + sub(k)), (lambda k: "m" + sub(k)), "·"
        sums = f"Σ e^(s−{m(b)})"
        carried = f"{ell(b - 1)}{times}e^({m(b - 1)}−{m(b)})"
    if len(stage.operands) == 1:
        return style.line(f"{ell(b)}[{i + 1}] = {sums} = {total}", fresh, value, result)
    old, fix = (float(o[i, 0]) for o in stage.operands[:2])
    said = f"{style.num(old)}{style.times}{style.num(fix)} + ({total})"
    shown = style.shown(old) * style.shown(fix) + fresh
    return style.line(f"{ell(b)}[{i + 1}] = {carried} + {sums} = {said}", shown, value, result)


def _acc_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,1]: 2.1×0.6065 + (0.4066×1 + 1×0) = 1.6737"""
    *before, e, v = stage.operands
    rows = stage.params["rows"]
    fresh, total = _products(e[i], v[rows, j], style)
    value = float(stage.value[i, j])
    if not before:
        return style.line(f"{style.at(i + 1, j + 1)}{fresh}", total, value, result)
    acc, fix = float(before[0][i, j]), float(before[1][i, 0])
    kept = f"{style.factor(acc)}{style.times}{style.num(fix)}"
    shown = style.shown(acc) * style.shown(fix) + total
    return style.line(f"{style.at(i + 1, j + 1)}{kept} + ({fresh})", shown, value, result)


def _divide_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str | None:
    """[1,1]: 3.2 / 2.15 = 1.4884"""
    acc, total = stage.operands
    if total[i, 0] == 0:
        return None
    a, t = float(acc[i, j]), float(total[i, 0])
    left = f"{style.at(i + 1, j + 1)}{style.divided(style.num(a), style.num(t))}"
    shown = style.shown(a) / style.shown(t)
    return style.line(left, shown, float(stage.value[i, j]), result)


# ---- the backward pass (qkvcalc.run.grad_ops) ------------------------------------------------


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


def _tn_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """dV[1,2] = A₁₁×dO₁₂ + A₂₁×dO₂₂ + … : column i of A against column j of B (Aᵀ·B)."""
    a, b = stage.operands
    pairs = [(float(x), float(y)) for x, y in zip(a[:, i], b[:, j], strict=True)]
    exact_pairs = _exact_pairs(stage, exact, len(pairs), lambda t: (t, i), lambda t: (t, j))
    return _sum_of_products(stage, i, j, style, pairs, result, exact_pairs)


def _nt_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """dA[1,2] = dO₁₁×V₂₁ + dO₁₂×V₂₂: row i of A against row j of B (A·Bᵀ)."""
    a, b = stage.operands
    pairs = [(float(x), float(y)) for x, y in zip(a[i], b[j], strict=True)]
    exact_pairs = _exact_pairs(stage, exact, len(pairs), lambda t: (i, t), lambda t: (j, t))
    return _sum_of_products(stage, i, j, style, pairs, result, exact_pairs)


def _weight_grad_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """dW[2,1] = X₁₂×dQ₁₁ + X₂₂×dQ₂₁ + …: a column of X against a column of the gradient of the
    head (or heads, summed, under GQA) that read this column of W."""
    x, *grads = stage.operands
    params = stage.params
    a, c = (j, i) if params["torch"] else (i, j)
    pairs = [
        (float(x[t, a]), float(g[t, c - cols.start]))
        for g, cols in zip(grads, params["cols"], strict=True)
        if cols.start <= c < cols.stop
        for t in range(x.shape[0])
    ]
    return _sum_of_products(stage, i, j, style, pairs, result)


def _loss_grad_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,2]: 2.6089 − 1 = 1.6089 (O − T)"""
    o = float(stage.operands[0][i, j])
    t = float(stage.params["target"][i, j])
    left = f"{style.at(i + 1, j + 1)}{style.num(o)} {style.minus} {style.factor(t)}"
    return style.line(left, style.shown(o) - style.shown(t), float(stage.value[i, j]), result)


def _attend_grad_work(
    stage: Stage, i: int, j: int, style: Style, exact: Any, result: str
) -> str | None:
    """[3,2]: −1 / 0.2 = −5, at a query's target key (every other cell is 0)."""
    if (i, j) not in stage.params["targets"]:
        return None
    a = float(stage.operands[0][i, j])
    cell = f"{style.minus}{style.divided('1', style.num(a))}"
    shown = -1 / style.shown(a) if style.shown(a) else math.nan
    return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, float(stage.value[i, j]), result)


def _rowdot_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """r[2] = 0.8044×11.4354 + 0.1956×4.4133 + … (a masked key's 0 weight left out)."""
    a, da = stage.operands
    pairs = [(float(x), float(y)) for x, y in zip(a[i], da[i], strict=True) if x != 0]
    if not pairs:
        return f"{style.at(i + 1, j + 1)}0"
    return _sum_of_products(stage, i, j, style, pairs, result)


def _softmax_back_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[2,1]: 0.8044×(11.4354 − 10.0621) = 1.1047; a masked key: 0×(0.5 − 1.2) = 0."""
    a, da, r = (float(m[i, j if k < 2 else 0]) for k, m in enumerate(stage.operands))
    shown = style.shown(a) * (style.shown(da) - style.shown(r))
    inner = f"{style.num(da)} {style.minus} {style.factor(r)}"
    left = f"{style.at(i + 1, j + 1)}{style.num(a)}{style.times}({inner})"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _bias_grad_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """db[2] = 0.78 + (−0.26) + (−0.52) = 0: the column of the gradient summed over the rows."""
    cells = [
        float(v)
        for g, cols in zip(stage.operands, stage.params["cols"], strict=True)
        if cols.start <= j < cols.stop
        for v in g[:, j - cols.start]
    ]
    terms = " + ".join(style.factor(v) for v in cells)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    shown = sum(style.shown(v) for v in cells)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _input_grad_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """dX[1,2] = (dQ·W_Qᵀ)[1,2] + (dK·W_Kᵀ)[1,2] + (dV·W_Vᵀ)[1,2] = 0.5 + 1.2 + 3 = 4.7: the
    chain rule's paths, each its own product (summed over the heads), added."""
    from qkvcalc.run.grad_ops import paths

    parts = [float(m[i, j]) for m in paths(stage.operands, stage.params)]
    named = " + ".join(
        f"(d{letter}·W_{letter}ᵀ){style.label('[{i},{j}]', i + 1, j + 1)}" for letter in stage.names
    )
    numbers = " + ".join(style.factor(v) for v in parts)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {named} = {numbers}"
    shown = sum(style.shown(v) for v in parts)
    return style.line(left, shown, float(stage.value[i, j]), result)


def _scale_back_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """[1,2]: 1.1047 / √2 = 0.7812, or 1.1047 × 0.5 for a scale given."""
    grad = float(stage.operands[-1][i, j])
    g, value = style.num(grad), float(stage.value[i, j])
    params = stage.params["of"]
    if params.get("scale_text"):
        cell = style.divided(g, style.root(params["scale_text"]))
        shown = style.shown(grad) / _root_value(params["scale_text"])
        return style.line(f"{style.at(i + 1, j + 1)}{cell}", shown, value, result)
    left = f"{style.at(i + 1, j + 1)}{g} {style.times} {style.num(params['scale'])}"
    return style.line(left, style.shown(grad) * style.shown(params["scale"]), value, result)


# the backward of the core ops, by forward op; a feature's op brings its own (Op.grad_work)
_GRAD_WORK = {"scale": _scale_back_work}


def _back_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str | None:
    """A stage that goes back through one forward stage: that op's own backward arithmetic."""
    name = stage.params["op"]
    work = _GRAD_WORK.get(name) or OPS[name].grad_work
    return None if work is None else work(stage, i, j, style, exact, result)


# ---- FlashAttention-2's backward in tiles (qkvcalc.run.flash_grad_ops) ------------------------


def _lse_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """L[1] = 1.2 + log 2.15 = 1.9655; a row whose every key is masked: ℓ = 0, L = −∞."""
    top, total = (float(o[i, 0]) for o in stage.operands)
    label = style.label(stage.cell, i + 1, j + 1)
    if total <= 0:
        return f"{label} = {style.neg_inf}"
    log = r"\log" if style.latex else "log"
    kept = style.shown(total)
    shown = style.shown(top) + math.log(kept) if kept > 0 else -math.inf
    left = f"{label} = {style.num(top)} + {log} {style.num(total)}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _attend_rowdot_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """D[1] = e^(0.3 − 2.1)×(−1 / e^(0.3 − 2.1)) = −1: the target key's weight times its
    gradient, the row's one term; 0 for a query without a target."""
    label = style.label(stage.cell, i + 1, j + 1)
    s, top = stage.operands
    targets = [t for row, t in stage.params["targets"] if row == i]
    if not targets:
        return f"{label} = 0"
    weight = style.exp(
        f"{style.num(float(s[i, targets[0]]))} {style.minus} {style.factor(float(top[i, 0]))}"
    )
    grad = f"({style.minus}{style.divided('1', weight)})"
    return f"{label} = {weight}{style.times}{grad} = {result}"


def _block_nt_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """dP_2[1,1] = dO₁₁×V₃₁ + dO₁₂×V₃₂: row i of dO against the block's key row of V."""
    g, v = stage.operands
    key = stage.params["rows"].start + j
    pairs = [(float(x), float(y)) for x, y in zip(g[i], v[key], strict=True)]
    return _sum_of_products(stage, i, j, style, pairs, result)


def _grad_q_acc_work(stage: Stage, i: int, j: int, style: Style, exact: Any, result: str) -> str:
    """dQ_2[1,1] = dQ_1[1,1] + (d(Q·Kᵀ)_2 row 1 × K's block rows, column 1) = −0.59 + (…)."""
    *before, ds, k = stage.operands
    start = stage.params["rows"].start
    pairs = [(float(ds[i, t]), float(k[start + t, j])) for t in range(ds.shape[1])]
    if not before:
        return _sum_of_products(stage, i, j, style, pairs, result)
    prev = float(before[0][i, j])
    terms, total = _products([x for x, _ in pairs], [y for _, y in pairs], style)
    label = style.label(stage.cell, i + 1, j + 1)
    left = f"{label} = {style.num(prev)} + ({terms})"
    return style.line(left, style.shown(prev) + total, float(stage.value[i, j]), result)


class _BlockColumns:
    """A `block_back` stage seen as the plain `back` stage of its block's columns: the forward
    operands and value cut to those columns, so that the op's own backward arithmetic
    (Op.grad_work) reads cell (i, j) of the block."""

    def __init__(self, stage: Stage) -> None:
        self._stage = stage
        cols = stage.params["cols"]
        *forward, grad = stage.operands
        self.operands = (*(o[:, cols] for o in forward), grad)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stage, name)


def _block_back_work(
    stage: Stage, i: int, j: int, style: Style, exact: Any, result: str
) -> str | None:
    """The block's columns back through one elementwise stage: that op's own arithmetic."""
    return _back_work(_BlockColumns(stage), i, j, style, exact, result)  # type: ignore[arg-type]


# How each operation's cells are written out; the mask is said row by row (row_summaries).
_WORK = {
    "project": _product_work,
    "matmul": _product_work,
    "scale": _scale_work,
    "exp": _exp_work,
    "softmax": _softmax_work,
    "add": _add_work,
    "step_project": _step_project_work,
    "append": _append_work,
    "qk": _qk_work,
    "block_max": _block_max_work,
    "running_max": _running_max_work,
    "correction": _correction_work,
    "block_exp": _block_exp_work,
    "running_sum": _running_sum_work,
    "acc": _acc_work,
    "divide": _divide_work,
    "matmul_tn": _tn_work,
    "matmul_nt": _nt_work,
    "weight_grad": _weight_grad_work,
    "loss_grad": _loss_grad_work,
    "attend_grad": _attend_grad_work,
    "rowdot": _rowdot_work,
    "softmax_back": _softmax_back_work,
    "bias_grad": _bias_grad_work,
    "input_grad": _input_grad_work,
    "back": _back_work,
    "lse": _lse_work,
    "block_p": _block_exp_work,  # e^(S_b − L): the same line, shifted by L
    "attend_rowdot": _attend_rowdot_work,
    "block_nt": _block_nt_work,
    "grad_q_acc": _grad_q_acc_work,
    "block_back": _block_back_work,
    **features.work(),  # each feature writes its own operations out
}


def has_arithmetic(stage: Stage) -> bool:
    """Whether each cell of this stage has arithmetic to write out."""
    return stage.op in _WORK


def cell_work(stage: Stage, i: int, j: int, style: Style) -> str | None:
    """The arithmetic of cell (i, j) (0-based), or None when this cell has none to show."""
    work = _WORK.get(stage.op)
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
