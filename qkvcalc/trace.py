"""Trace and Stage: what the engine records so that a renderer can show it.

A Stage is one matrix on the board: its id (stable: docs/json-trace.md), the head it belongs to,
the catalog keys of its title and explanation, the formula, its value, the labels of its rows
and columns, and what a renderer needs to write each cell's arithmetic out (the operation and
its operands). Nothing here formats or prints; renderers in qkvcalc.render do.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.plan import ids  # the plan names its stages; the trace asks it for them
from qkvcalc.records import NamedTuple

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem
    from qkvcalc.plan.specs import Spec


class Recipe:
    """How to compute a stage's value again: the engine records the n×m stages derived from
    the scores (scaled, masked, exp, weights) this way, so a trace of a real layer (12 heads
    of 1024×1024) holds one score matrix per head instead of five. Called with row indices it
    computes those rows alone: a table that shows twelve rows of a 1024×1024 stage costs
    twelve rows. Whole values asked for are kept in the trace's own cache (a few at a time)."""

    __slots__ = ("cache", "compute")

    def __init__(self, compute: Callable[[np.ndarray | None], np.ndarray], cache: Cache) -> None:
        self.compute = compute
        self.cache = cache

    def __call__(self, rows: np.ndarray | None = None) -> np.ndarray:
        if rows is not None:
            kept = self.cache.get(self)
            return kept[rows] if kept is not None else self._compute(rows)
        kept = self.cache.get(self)
        if kept is None:
            kept = self._compute(None)
            self.cache.put(self, kept)
        return kept

    def _compute(self, rows: np.ndarray | None) -> np.ndarray:
        # The engine checked this value when it first computed it, under the same silence:
        # computing it again must not warn where the first time did not.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            return self.compute(rows)


class Cache:
    """The last few whole values a trace's recipes computed (least recently used goes first)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.kept: OrderedDict[Recipe, np.ndarray] = OrderedDict()

    def get(self, recipe: Recipe) -> np.ndarray | None:
        if recipe in self.kept:
            self.kept.move_to_end(recipe)
            return self.kept[recipe]
        return None

    def put(self, recipe: Recipe, value: np.ndarray) -> None:
        self.kept[recipe] = value
        if len(self.kept) > self.size:
            self.kept.popitem(last=False)

    def clear(self) -> None:
        self.kept.clear()


class Error(NamedTuple):
    """How far a low-precision stage is from its float64 twin (--dtype): the largest absolute
    difference and the largest in units in the last place of the dtype (`max_ulp`: all the
    error, inherited and added), and `added_ulp`, the stage's own rounding: its value against
    its op applied exactly to its own (rounded) operands. inf where a cell turned inf or NaN."""

    max_abs: float
    max_ulp: float
    added_ulp: float


class Precision(NamedTuple):
    """A --dtype run's summary: the dtype and policy, the first cell that turned inf or NaN
    ((stage id, head, (row, column) 1-based) or None) and the stage that added most error,
    with the sentences that say why."""

    dtype: str
    policy: str
    first_nonfinite: tuple[str, int | None, tuple[int, int]] | None
    most_added: tuple[str, int | None] | None
    notes: tuple[Msg, ...] = ()


# A stage's data: its matrix, or how to compute it again.
Data: TypeAlias = "np.ndarray | Recipe"


def resolve(matrix: Data, rows: np.ndarray | None = None) -> np.ndarray:
    """The matrix itself (or its rows `rows`), computing it if it is a recipe."""
    if isinstance(matrix, np.ndarray):
        return matrix if rows is None else matrix[rows]
    return matrix(rows)


@dataclass(frozen=True, eq=False)  # it holds arrays: a Stage equals only itself
class Stage:
    """A stage of the run: its spec (what it is, from the plan) and its data (what the engine
    computed: the value or its recipe, the operands' values, the row maxima and sums, the
    exact fractions). The spec's fields are read through it: stage.id, stage.rows …"""

    spec: Spec  # qkvcalc.plan.specs: id, head, op, operands, formula, labels, params, notes …
    data: Data  # the value (always 2-D), or its recipe: read it as .value
    inputs: tuple[Data, ...] = ()  # the operands' values, as .operands: (A, B), (input,) …
    notes: tuple[Msg, ...] = ()  # the spec's notes, then its remarks on these numbers
    row_max: np.ndarray | None = None  # exp: the max each row's scores were shifted by
    row_sum: np.ndarray | None = None  # softmax: each row's sum of exponentials
    exact: tuple[tuple[Any, ...], ...] | None = None  # --exact: a rational value per cell
    # --exact (qkvcalc.run.exact): the operands, bias and scale as fractions, for the arithmetic
    operands_exact: tuple[tuple[tuple[Any, ...], ...] | None, ...] = ()
    bias_exact: tuple[Any, ...] | None = None
    scale_exact: Any = None
    # --dtype (qkvcalc.run.precision): `data` holds the dtype's numbers, `twin` the same stage
    # in float64 from the unrounded inputs (the plain run's), `error` how far apart they are
    twin: Data | None = None
    error: Error | None = None
    # --dtype, where the dtype held the parameters otherwise (angles, logits): the float64
    # twin's own, which `params` no longer are (the torch script's plan reads them)
    twin_params: dict[str, Any] | None = None

    # ---- the spec's fields, read through the stage ----------------------------------------

    @property
    def id(self) -> str:  # stable: docs/json-trace.md
        return self.spec.id

    @property
    def head(self) -> int | None:
        return self.spec.head

    @property
    def pair(self) -> bool:  # its head number counts pairs of heads (Spec.unit)
        return self.spec.unit == "pair"

    @property
    def formula(self) -> str:  # plain text with the paper's names: "Q = X·W_Q"
        return self.spec.formula

    @property
    def rows(self) -> tuple[str, ...]:  # a label per row (tokens, or dimensions for Kᵀ)
        return self.spec.rows

    @property
    def cols(self) -> tuple[str, ...]:
        return self.spec.cols

    @property
    def op(self) -> str:  # a key of qkvcalc.ops.table.OPS: project, matmul, scale, exp …
        return self.spec.op

    @property
    def names(self) -> tuple[str, ...]:  # the operands' names, as in the formula: ("X", "W_Q")
        return self.spec.names

    @property
    def inner(self) -> tuple[str, ...]:  # a product: labels of the dimension summed over
        return self.spec.inner

    @property
    def cell(self) -> str:  # how a cell is named in its arithmetic: "q_{i}·k_{j}"
        return self.spec.cell

    @property
    def topic(self) -> str:  # catalog key of title and why, when it differs from the id
        return self.spec.topic

    @property
    def reads(self) -> tuple[Any, ...]:
        """The operands, as the plan names them (earlier stages by ref, or constants): what
        exact mode and the quiz execute again with other numbers."""
        return self.spec.operands

    @property
    def params(self) -> dict[str, Any]:
        return self.spec.params

    @property
    def symbol(self) -> str:  # how the quiz names a cell: K[2,1], Q·Kᵀ[1,2]
        return self.spec.symbol or self.spec.id

    @property
    def letters(self) -> str:  # the shape in the paper's letters: "n×d_k"
        return self.spec.letters

    @property
    def hint(self) -> tuple[str, dict[str, Any]] | None:  # the quiz's `?`
        return self.spec.hint

    @property
    def step(self) -> int | None:  # decoding with a KV cache: 0 = the prefill, 1, 2, …
        return self.spec.step

    @property
    def block(self) -> int | None:  # attention in tiles: the block of keys (1-based)
        return self.spec.block

    @property
    def bias(self) -> np.ndarray | None:  # a product: the row vector added to every row (b_Q)
        return self.spec.params.get("bias")

    @property
    def allowed(self) -> np.ndarray | None:  # a mask: [n, m] bool, True = may attend
        return self.spec.params.get("allowed")

    @property
    def scale(self) -> float | None:  # the scaling's factor
        return self.spec.params.get("scale")

    @property
    def scale_text(self) -> str:  # how the factor is said: "√2"
        return str(self.spec.params.get("scale_text", ""))

    @property
    def ref(self) -> tuple[Any, ...]:
        """How later stages name this one: (id, head), or (id, head, step, block) for a stage
        of one decode step or one block of keys (qkvcalc.plan.ref)."""
        return self.spec.ref

    @property
    def value(self) -> np.ndarray:
        return resolve(self.data)

    @property
    def twin_value(self) -> np.ndarray | None:
        """--dtype: the float64 twin's value (None for a plain run's stage)."""
        return None if self.twin is None else resolve(self.twin)

    def twin_rows(self, rows: Sequence[int]) -> np.ndarray:
        """The rows `rows` of the float64 twin, [len(rows), m] (a recipe computes only those)."""
        assert self.twin is not None
        return resolve(self.twin, np.asarray(rows, dtype=np.intp))

    def value_rows(self, rows: Sequence[int]) -> np.ndarray:
        """The rows `rows` of the value, [len(rows), m]: computed alone when it is a recipe."""
        return resolve(self.data, np.asarray(rows, dtype=np.intp))

    @property
    def is_product(self) -> bool:
        """A matrix product with named operands, shown as A·B = C beside its table."""
        from qkvcalc.ops.table import OPS

        return OPS[self.op].product and bool(self.names)

    @property
    def in_words(self) -> bool:
        """Shown as a sentence per row instead of a table (the split into heads)."""
        from qkvcalc.ops.table import OPS

        return OPS[self.op].in_words

    @property
    def heat(self) -> bool:
        """Weights: shaded by size where colour is on."""
        from qkvcalc.ops.table import OPS

        return OPS[self.op].heat

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
    def size(self) -> str:
        """Its size as a heading says it: '3×2'; the split into heads, said in sentences, by
        its number of heads: 'H = 2'."""
        rows, cols = self.shape
        return f"H = {rows}" if self.in_words else f"{rows}×{cols}"

    @property
    def name(self) -> str:
        """The short name a reader calls it by: the left side of its formula ('Q', 'Kᵀ')."""
        return self.formula.split(" = ")[0]

    def __repr__(self) -> str:
        """<Stage weights head=1 step=… block=… 3×3 'Attention weights': A = softmax(S)>: what
        it is, never its arrays (trace.stage('weights').value holds them)."""
        where = "".join(
            f" {name}={value}"
            for name, value in (("head", self.head), ("step", self.step), ("block", self.block))
            if value is not None
        )
        title = self.title.text("en")
        return f"<Stage {self.id}{where} {self.size} {title!r}: {self.formula}>"


# --detail brief on a page: a head's per-token steps (a linear-attention layer's states, one
# d_k × d_v table per token) past this many show as the first two and the last, as a table past
# RenderOptions.max_rows rows shows its first and last rows
BRIEF_FIRST_STEPS = 2


@dataclass(frozen=True, eq=False, repr=False)  # equal only to itself; its __repr__ is below
class Trace:
    """Every stage of one attention calculation, in the order a teacher writes them."""

    problem: Problem
    stages: tuple[Stage, ...]
    warnings: tuple[Msg, ...] = field(default=())
    cache: Cache = field(default_factory=Cache)  # the whole values its recipes computed last
    precision: Precision | None = None  # --dtype: the dtype, the policy, where it went wrong

    @property
    def final(self) -> Stage:
        """The stage of the final output: the last 'output' with no head (qkvcalc.plan.ids)."""
        return self.stage(ids.OUTPUT)

    @property
    def output(self) -> np.ndarray:
        """The final output's value."""
        return self.final.value

    @property
    def weights(self) -> np.ndarray:
        """Attention weights: [n, m] for one head, [H, n, m] for several. A decode run's are its
        steps' rows, one under another, with 0 for the keys a step had not cached yet."""
        if self.problem.multihead:
            return np.stack([self._weights(h) for h in range(1, self.problem.heads + 1)])
        return self._weights(None)

    def _weights(self, head: int | None) -> np.ndarray:
        whole = self.find(ids.WEIGHTS, head)
        if whole is not None:
            return whole.value
        numbers = sorted({s.step for s in self.stages if s.step is not None})
        found = [self.find(ids.WEIGHTS, head, step=step) for step in numbers]
        steps = [s.value for s in found if s is not None]
        if not steps:
            raise KeyError(f"no stage {ids.WEIGHTS!r} for head {head!r}")
        out = np.zeros((self.problem.n, self.problem.m))
        row = 0
        for part in steps:  # [t, cached keys] each
            out[row : row + part.shape[0], : part.shape[1]] = part
            row += part.shape[0]
        return out

    def stage(
        self,
        stage_id: str,
        head: int | None = None,
        *,
        step: int | None = None,
        block: int | None = None,
    ) -> Stage:
        """The last stage with this id and head (and decode step, block of keys: None for a
        stage of the whole run)."""
        for stage in reversed(self.stages):
            if (
                stage.id == stage_id
                and stage.head == head
                and stage.step == step
                and stage.block == block
            ):
                return stage
        where = "" if step is None else f" step {step!r}"
        where += "" if block is None else f" block {block!r}"
        raise KeyError(f"no stage {stage_id!r} for head {head!r}{where}")

    def find(
        self,
        stage_id: str,
        head: int | None = None,
        *,
        step: int | None = None,
        block: int | None = None,
    ) -> Stage | None:
        try:
            return self.stage(stage_id, head, step=step, block=block)
        except KeyError:
            return None

    def brief(self, most: int) -> Trace:
        """The trace as `--detail brief` lays it out on a page (render() does this for every
        format that lays a trace out as a page): of the stages with a step of a layer's own (a
        linear layer's state after each token) that a head has more than `most` of, the first
        BRIEF_FIRST_STEPS and the last are kept, the last with a note that says which are left
        out and how to see them. Every other stage is kept; the trace itself when none is left
        out. Looking a stage up still finds it in the whole run."""
        runs: dict[tuple[str, int | None], list[int]] = {}
        for k, stage in enumerate(self.stages):
            if stage.step is not None and stage.spec.params.get("step_key") == "ui.token_step":
                runs.setdefault((stage.id, stage.head), []).append(k)
        left_out: set[int] = set()
        noted: dict[int, Msg] = {}
        for (stage_id, head), found in runs.items():
            if len(found) <= most:
                continue
            gone = found[BRIEF_FIRST_STEPS:-1]
            left_out.update(gone)
            first, last = self.stages[gone[0]], self.stages[gone[-1]]
            noted[found[-1]] = Msg(
                first.spec.params.get("brief_note", "note.brief_steps"),  # a gradient's own words
                id=stage_id,
                from_symbol=first.spec.symbol,
                to_symbol=last.spec.symbol,
                first=first.step,
                last=last.step,
                count=len(gone),
                total=len(found),
                head=head or 1,
            )
        if not left_out:
            return self
        kept = tuple(
            replace(stage, notes=(*stage.notes, noted[k])) if k in noted else stage
            for k, stage in enumerate(self.stages)
            if k not in left_out
        )
        whole = self.whole if isinstance(self, Selection) and self.whole is not None else self
        return Selection(self.problem, kept, self.warnings, precision=self.precision, whole=whole)

    @property
    def exact(self) -> bool:
        """Whether the run kept its rational stages as fractions (explain(..., exact=True)):
        every writer then shows them, without being asked again."""
        return any(stage.exact is not None for stage in self.stages)

    # A Trace shows itself: in a terminal (rich), laid out at the width of the console it is
    # printed on (and measured, so it fits in a table or a panel), and in a notebook (HTML).
    def __rich_console__(self, console: Any, options: Any) -> Any:
        from qkvcalc.render import RenderOptions
        from qkvcalc.render.terminal import render_trace

        color = console.color_system is not None
        yield render_trace(
            self, RenderOptions(width=options.max_width, color=color, exact=self.exact)
        )

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from qkvcalc.render.terminal import measure_trace

        return measure_trace(self, options)

    def _repr_html_(self) -> str:
        from qkvcalc.render import RenderOptions
        from qkvcalc.render.html import render_html

        # folded: each stage's heading, opened by a click; the output shown
        return render_html(self, RenderOptions(exact=self.exact), standalone=False, folded=True)

    def __repr__(self) -> str:
        p = self.problem
        return (
            f"<Trace n={p.n} m={p.m} heads={p.heads} stages={len(self.stages)} "
            f"output={np.array2string(self.output, precision=4)}>"
        )


@dataclass(frozen=True, eq=False, repr=False)
class Selection(Trace):
    """Some stages of a Trace (qkvcalc.select, Trace.brief). `whole` is the run they were
    chosen from: looking a stage up finds it there."""

    whole: Trace | None = None

    def stage(
        self,
        stage_id: str,
        head: int | None = None,
        *,
        step: int | None = None,
        block: int | None = None,
    ) -> Stage:
        if self.whole is not None:
            return self.whole.stage(stage_id, head, step=step, block=block)
        return super().stage(stage_id, head, step=step, block=block)
