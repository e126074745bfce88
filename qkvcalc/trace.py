"""Trace and Stage: what the engine records so that a renderer can show it.

A Stage is one matrix on the board: its id (stable: docs/json-trace.md), the head it belongs to,
the catalog keys of its title and explanation, the formula, its value, the labels of its rows
and columns, and what a renderer needs to write each cell's arithmetic out (the operation and
its operands). Nothing here formats or prints; renderers in qkvcalc.render do.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from qkvcalc.i18n import Msg

if TYPE_CHECKING:
    from qkvcalc.problem import Problem


# A matrix, or how to compute it again. The engine records the n×m stages derived from the
# scores (scaled, masked, exp, weights) as recipes, so a trace of a real layer (12 heads of
# 1024×1024) holds one score matrix per head instead of five; a stage recomputes its value
# when asked, and the last few values asked for are kept (_RECENT). A recipe called with row
# indices computes those rows alone: every derived stage works row by row, so a table that
# shows twelve rows of a 1024×1024 stage costs twelve rows, not a million cells.
Matrix: TypeAlias = "np.ndarray | Callable[[np.ndarray | None], np.ndarray]"

_RECENT: OrderedDict[Callable[[np.ndarray | None], np.ndarray], np.ndarray] = OrderedDict()
_RECENT_SIZE = 4


def resolve(matrix: Matrix, rows: np.ndarray | None = None) -> np.ndarray:
    """The matrix itself (or its rows `rows`), computing it if it is a recipe."""
    if isinstance(matrix, np.ndarray):
        return matrix if rows is None else matrix[rows]
    if matrix in _RECENT:
        _RECENT.move_to_end(matrix)
        return _RECENT[matrix] if rows is None else _RECENT[matrix][rows]
    # The engine checked this value when it first computed it (engine._check_finite), under
    # the same silence: computing it again must not warn where the first time did not.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        value = matrix(rows)
    if rows is None:
        _RECENT[matrix] = value
        if len(_RECENT) > _RECENT_SIZE:
            _RECENT.popitem(last=False)
    return value


@dataclass(frozen=True, eq=False)  # it holds arrays: a Stage equals only itself
class Stage:
    id: str
    head: int | None
    formula: str  # plain text with the paper's names: "Q = X·W_Q"
    data: Matrix  # the value (always 2-D), or its recipe: read it as .value
    rows: tuple[str, ...]  # a label per row (tokens, or dimensions for Kᵀ and weights)
    cols: tuple[str, ...]
    op: str  # input | slice | matmul | transpose | scale | mask | exp | softmax | concat | copy
    inputs: tuple[Matrix, ...] = ()  # .operands: matmul (A, B); scale/mask/exp/softmax (input,)
    names: tuple[str, ...] = ()  # the operands' names, as in the formula: ("X", "W_Q")
    inner: tuple[str, ...] = ()  # matmul: labels of the dimension summed over
    bias: np.ndarray | None = None  # matmul: the row vector added to every row (b_Q …)
    cell: str = ""  # how a cell is named in its arithmetic: "q_{i}·k_{j}", "Q[{i},{j}]"
    allowed: np.ndarray | None = None  # mask: [n, m] bool, True = may attend
    row_max: np.ndarray | None = None  # exp: the max each row's scores were shifted by
    row_sum: np.ndarray | None = None  # softmax: each row's sum of exponentials
    scale: float | None = None  # scale: the factor; scale_text: how to say it ("1/√2")
    scale_text: str = ""
    notes: tuple[Msg, ...] = ()
    exact: tuple[tuple[Any, ...], ...] | None = None  # --exact: a rational value per cell
    topic: str = ""  # catalog key of title and why, when it differs from the id
    # --exact (qkvcalc.exact): the operands, bias and scale as fractions, for the arithmetic
    operands_exact: tuple[tuple[tuple[Any, ...], ...] | None, ...] = ()
    bias_exact: tuple[Any, ...] | None = None
    scale_exact: Any = None

    @property
    def value(self) -> np.ndarray:
        return resolve(self.data)

    def value_rows(self, rows: Sequence[int]) -> np.ndarray:
        """The rows `rows` of the value, [len(rows), m]: computed alone when it is a recipe."""
        return resolve(self.data, np.asarray(rows, dtype=np.intp))

    @property
    def operands(self) -> tuple[np.ndarray, ...]:
        return tuple(resolve(m) for m in self.inputs)

    @property
    def title(self) -> Msg:
        return Msg(f"stage.{self.topic or self.id}.title")

    @property
    def why(self) -> Msg:
        return Msg(f"stage.{self.topic or self.id}.why")

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns), known from the labels without computing a recipe."""
        return len(self.rows), len(self.cols)

    @property
    def name(self) -> str:
        """The short name a reader calls it by: the left side of its formula ('Q', 'Kᵀ')."""
        return self.formula.split(" = ")[0]


@dataclass(frozen=True, eq=False, repr=False)  # equal only to itself; its __repr__ is below
class Trace:
    """Every stage of one attention calculation, in the order a teacher writes them."""

    problem: Problem
    stages: tuple[Stage, ...]
    warnings: tuple[Msg, ...] = field(default=())

    @property
    def output(self) -> np.ndarray:
        """The final output: the last stage with id 'output' and no head."""
        return self.stage("output").value

    @property
    def weights(self) -> np.ndarray:
        """Attention weights: [n, m] for one head, [H, n, m] for several."""
        if self.problem.multihead:
            return np.stack(
                [self.stage("weights", h).value for h in range(1, self.problem.heads + 1)]
            )
        return self.stage("weights").value

    def stage(self, stage_id: str, head: int | None = None) -> Stage:
        for stage in reversed(self.stages):
            if stage.id == stage_id and stage.head == head:
                return stage
        raise KeyError(f"no stage {stage_id!r} for head {head!r}")

    def find(self, stage_id: str, head: int | None = None) -> Stage | None:
        try:
            return self.stage(stage_id, head)
        except KeyError:
            return None

    # A Trace shows itself: in a terminal (rich) and in a notebook (HTML).
    def __rich__(self) -> Any:
        from qkvcalc.render.terminal import render_trace

        return render_trace(self)

    def _repr_html_(self) -> str:
        from qkvcalc.render.html import render_html

        return render_html(self, standalone=False)

    def __repr__(self) -> str:
        p = self.problem
        return (
            f"<Trace n={p.n} m={p.m} heads={p.heads} stages={len(self.stages)} "
            f"output={np.array2string(self.output, precision=4)}>"
        )
