"""Op: one kind of stage — how its value is computed (numpy), exactly (fractions) where it stays
rational, and which operand cells one output cell reads. The op table (qkvcalc.ops.table) holds
the core ones; a feature module (qkvcalc.ops.features) brings its own."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from qkvcalc.records import NamedTuple

if TYPE_CHECKING:
    from qkvcalc.i18n import Msg
    from qkvcalc.ops.rounding import Rule

Params = dict[str, Any]
Shapes = Sequence[tuple[int, int]]
Feeds = Iterator[tuple[int, int, int]]


# a named mistake's matrix at one stage: (its stable id, the sentence that says it, the matrix)
Candidate = tuple[str, "Msg", np.ndarray]


class Asked(NamedTuple):
    """What the named mistakes at a stage are worked out from (the quiz asks): the problem, the
    stage, each earlier stage's versions by id (`versions(sid)`: the student's own, then the
    true one, of the same head), a look-up of the run's stages and the student's own answers
    by stage key ("scores", "2/scores")."""

    problem: Any
    stage: Any
    versions: Callable[[str], list[np.ndarray]]
    find: Callable[..., Any]
    own: Mapping[str, np.ndarray]


def turned(wrong: np.ndarray, right: np.ndarray) -> bool:
    """A transposition mistake is one only where it changes the result: in a 1×1 table
    K·Qᵀ = Q·Kᵀ, and Q·K = Q·Kᵀ for a symmetric K, so neither may be blamed there."""
    return wrong.shape != right.shape or not np.allclose(wrong, right, rtol=1e-12, atol=1e-12)


def rows_of(matrix: Any, rows: np.ndarray | None) -> Any:
    """Rows `rows` of a matrix (all of it for None): what a row-wise op computes from."""
    return matrix if matrix is None or rows is None else matrix[rows]


class Literals(Protocol):
    """How an op's torch rule (`Op.torch`) writes the numbers its parameters hold into the
    script (--format torch gives it): each returns Python source. `array` and `flags` name a
    float64 / bool tensor the script defines once; `index` writes a column or row index (a
    slice, a list of positions)."""

    def array(self, value: Any) -> str: ...

    def flags(self, value: Any) -> str: ...

    def num(self, value: float) -> str: ...

    def index(self, value: Any) -> str: ...


# an op in PyTorch: (its params, its operands' names in the script, how to write numbers) ->
# the torch expression of the stage's value (float64, 2-D as every stage is)
Torch = Callable[[Params, Sequence[str], Literals], str]


def same_cell(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j


def whole_row(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # the row max and the row sum read every cell of the row
    yield from ((0, i, t) for t in range(shapes[0][1]))


def nothing(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ()


class Op(NamedTuple):
    """One kind of stage: how its value is computed, exactly and in floats, and what it reads.

    `rowwise`: row i of the value depends only on row i of the first operand (and on whole
    other operands), so a table that shows twelve rows computes twelve rows.
    `overflow`: whether finite operands can give a non-finite value (the engine checks those).
    `product`: the stage is a matrix product shown as A·B = C with each cell's sum of products.
    `exact_stops`: an op that leaves the rationals: the note that says why exactness ends.
    `details`: what the arithmetic shows beside each row, from the operands (the maximum the
    scores were shifted by, the sum the exponentials are divided by).
    `divisor`: what each row is divided by to make weights (a softmax's sum of exponentials,
    the tiles' running sum): 0 where every key of the row is masked, which the engine warns of.
    `backward`: beside the forward, as micrograd keeps them: given the operands, the op's
    parameters, its value and ∂L/∂value, the gradient ∂L/∂operand of each operand (None where
    an operand takes none). The backward pass (--backward) runs these in reverse plan order.
    `grad_formula`: how the gradient of its first operand is written, given the names of that
    gradient, of the gradient coming in, of the operand, and the op's parameters
    ("dS = d(S+M) where allowed, else 0"); `grad_work`: that gradient's cell arithmetic (its
    stage reads the forward operands, the forward value, then the gradient coming in);
    `grad_reads`: whether that backward reads the forward operand's cells too.
    """

    name: str
    compute: Callable[[Sequence[np.ndarray], Params, np.ndarray | None], np.ndarray]
    feeds: Callable[[int, int, Shapes, Params], Feeds] = nothing
    exact: Callable[[Sequence[Any], Params], Any] | None = None
    rowwise: bool = False
    overflow: Callable[[Params], bool] = lambda params: True
    product: bool = False
    exact_stops: str = ""  # the catalog key of the note that says why exactness ends here
    details: Callable[[Sequence[np.ndarray], Params], dict[str, np.ndarray]] | None = None
    given: bool = False  # the numbers are the problem's own: nothing to work out or to ask
    heat: bool = False  # a table of weights, shaded by size where colour is on
    in_words: bool = False  # shown as sentences (one per row) instead of a table
    divisor: Callable[[Sequence[np.ndarray]], np.ndarray] | None = None
    backward: Backward | None = None
    grad_formula: Callable[[str, str, str, Params], str] | None = None
    grad_work: Callable[..., str | None] | None = None
    # its backward reads the forward operand's cells (a norm's row, a cap's tanh(S/c)), not
    # only the gradient coming in (a scaling, a mask, a rotation): the cells a gradient's cell
    # is computed from (the quiz's and the page's feeds) include them
    grad_reads: bool = False
    # its cell arithmetic, as the writers write it out: (stage, i, j, style, exact, result) ->
    # the line, or None for a cell with none; the style (qkvcalc.render.arith.Style) says how
    # numbers and symbols are written. None: the op has no per-cell arithmetic
    work: Callable[..., str | None] | None = None
    # the classic mistakes a student makes at a stage of this op (the quiz names one when the
    # student's matrix fits it alone): their stable ids, and each one's matrix worked out
    mistake_ids: tuple[str, ...] = ()
    mistakes: Callable[[Asked], list[Candidate]] | None = None
    # how it rounds in a low-precision dtype (--dtype) under each policy: a rule (operands,
    # params, rounding) -> the stage's numbers in the dtype, rounding where `rounding.policy`
    # rounds (qkvcalc.ops.rounding). None: --dtype refuses the op rather than show float64
    lowp: Rule | None = None
    # its gradient's stages, as the backward pass's walk (qkvcalc.plan.backward) plans them:
    # (what the walk knows, this forward stage, the ref of its gradient) -> the stages of its
    # operands' gradients, each `grad_` + the operand's id. None: the chain rule through the
    # first operand alone, one stage by `backward` and `grad_formula` (a scaling, a mask, a turn)
    plan_back: Callable[[Back, Any, Any], list[Any]] | None = None
    # its gradient gathered over the heads rather than handed on by the walk: a head's
    # projection of the layer's input, a slice of one learned weight (W_Q, a feature's W_G).
    # (what the walk knows, the heads' stages of one weight, their gradients' refs) -> the
    # weight's and its bias's gradient stages, and its share of the input's gradient
    gather: Callable[[Back, Sequence[Any], Sequence[Any]], tuple[list[Any], Any]] | None = None
    # its value is its operand turned (Kᵀ): a product that reads it folds the turn into its own
    # gradients (dK = d(Q·Kᵀ)ᵀ·Q), so it gets none of its own
    turns: bool = False
    # the mistakes a person's own code makes at this op, by the ids `qkvcalc check` names
    # (softmax_axis, kt_missing …): for each, the steps of check's plain pipeline
    # (qkvcalc.check.reference.Steps) it replaces, by step name, with their wrong versions.
    # check runs that pipeline with one mistake put in and names the one that gives their numbers
    in_code: Mapping[str, Mapping[str, Callable[..., Any]]] = MappingProxyType({})
    # --format torch: how its stage is computed in PyTorch (the script applies the plan, stage
    # by stage, with these), and the functions that expression calls, defined once in the
    # script. Every op a forward plan can hold has one (a test checks); a backward-only op may
    # lack it: the script's gradients are autograd's, the check of qkvcalc's
    torch: Torch | None = None
    torch_defs: str = ""


class Part(NamedTuple):
    """A share of a stage's gradient that an op's `plan_back` hands back when the stage is
    read by several (the shared rotary key k_R, read by every head's key): `grad`'s columns
    `cols` are this reader's share of the gradient of `of`. The walk adds the shares of every
    reader (micrograd's +=) in one stage of their sum before it goes on from `of`."""

    of: Any  # the forward stage's ref
    grad: Any  # the ref of the gradient the share is a part of
    cols: slice
    symbol: str  # how that gradient is written (dK)
    rows: slice = slice(None)  # its rows (keys stacked under others: the entries' rows of dK')


class Back(NamedTuple):
    """What an op reads to plan its gradient's stages: the problem, every stage planned so far
    by ref (the forward ones and the gradients made before this one), the remarks the plan
    adds to a gradient by its topic (the softmax's note on √d_k runs the whole plan again),
    and the op table (what kind of stage an operand is)."""

    problem: Any
    by: Mapping[Any, Any]
    remarks: Callable[[str, Any], Any]
    ops: Mapping[str, Op]
    # the walk itself, over forward stages from some of them (roots, their gradients' refs,
    # the gradient stages made before, where to stop) -> the gradient stages, in order, and
    # each forward stage's gradient by ref: an op that plans its operands' gradients one at a
    # time walks back through what lies between (the concat, through a feature's stages)
    walk: Callable[[Sequence[Any], dict[Any, Any], Sequence[Any], Any], tuple[list[Any], Any]] = (
        lambda roots, seeds, made, stops: ([], {})
    )


# (operands, params, value, ∂L/∂value) -> ∂L/∂operand, one per operand
Backward = Callable[
    [Sequence[np.ndarray], Params, np.ndarray, np.ndarray], tuple[np.ndarray | None, ...]
]
