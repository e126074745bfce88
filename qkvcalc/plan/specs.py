"""What a plan is made of: a Spec says what one stage is (its id and head, the operation, the
operands it reads — earlier stages by reference, or constants such as one head's slice of W_Q —
the operation's parameters, the labels of its rows and columns, its formula and notes); a Ref
names an earlier stage; a Const holds numbers from the problem. Also the small facts every
schedule needs: which columns a head reads and which keys a query may attend to."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.records import NamedTuple

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem

# An earlier stage of the same plan: (stage id, head), or (stage id, head, step, block) for a
# stage of one decode step or one block of keys. Made by `ref`, which keeps the short form
# for every stage that has neither, so (id, head) names what it always named.
Ref = tuple[Any, ...]


def ref(
    sid: str, head: int | None = None, step: int | None = None, block: int | None = None
) -> Ref:
    """The reference of a stage: (id, head), with step and block only when it has one."""
    return (sid, head) if step is None and block is None else (sid, head, step, block)


class Const(NamedTuple):
    """A constant operand: numbers from the problem (a weight, or one head's slice of it),
    with their exact fractions in exact mode."""

    value: np.ndarray
    exact: tuple[tuple[Any, ...], ...] | None = None
    # under --dtype, kept in float32 rather than rounded to the dtype: a parameter a model keeps
    # so in a low-precision checkpoint (transformers' _keep_in_fp32_modules_strict)
    float32: bool = False


Operand = Ref | Const


@dataclass(frozen=True, eq=False)
class Spec:
    """One stage to compute: what it is, what it reads, and how it is labelled and named."""

    id: str
    head: int | None
    op: str  # a key of qkvcalc.ops.table.OPS
    operands: tuple[Operand, ...]
    formula: str  # plain text with the paper's names: "Q = X·W_Q"
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the operands' names, as in the formula: ("X", "W_Q")
    inner: tuple[str, ...] = ()  # a product: labels of the dimension summed over
    cell: str = ""  # how a cell is named in its arithmetic: "q_{i}·k_{j}", "Q[{i},{j}]"
    notes: tuple[Msg, ...] = ()
    topic: str = ""  # catalog key of title and why, when it differs from the id
    lazy: bool = False  # recomputed from its operands when shown (the n×m stages)
    symbol: str = ""  # how the quiz names a cell of it: K[2,1], Q·Kᵀ[1,2] (default: the id)
    letters: str = ""  # its shape in the paper's letters, for the quiz: "n×d_k"
    hint: tuple[str, dict[str, Any]] | None = None  # the quiz's `?`: how one cell is made
    # notes that need the numbers: computed by the engine from the values of earlier stages
    remarks: Callable[[Callable[[Ref], np.ndarray]], tuple[Msg, ...]] | None = None
    step: int | None = None  # decoding with a KV cache: 0 = the prefill, 1, 2, … the steps
    block: int | None = None  # attention in tiles: the block of keys (1-based)
    # what its head number counts when not one head: "pair" (a feature that works on pairs of
    # heads, and their gradients), so that a page says 'pair 1' where it would say 'head 1'
    unit: str = ""

    @property
    def ref(self) -> Ref:
        return ref(self.id, self.head, self.step, self.block)


def stamped(specs: list[Spec], *, step: int | None = None, lazy: bool | None = None) -> list[Spec]:
    """A schedule's marks on the stages it made from the template (ops and features never set
    them): the decode step they belong to — a stage that already names its step keeps it, and
    a reference from one of them to another that did not (id, head) follows it to the step —
    and whether each is kept or computed again from its operands when shown (`lazy`)."""
    unstepped = {s.ref for s in specs if s.step is None and s.block is None}

    def moved(operand: Operand) -> Operand:
        if step is None or isinstance(operand, Const) or operand not in unstepped:
            return operand
        return ref(operand[0], operand[1], step)

    out = []
    for s in specs:
        marks: dict[str, Any] = {} if lazy is None else {"lazy": lazy}
        if step is not None:
            marks["operands"] = tuple(moved(o) for o in s.operands)
            if s.step is None:
                marks["step"] = step
        out.append(replace(s, **marks))
    return out


def d(symbol: str) -> str:
    """The gradient's name of a matrix: dQ, dS_cap, d(Q·Kᵀ), d(S+M)."""
    plain = symbol.replace("_", "").isalnum()
    return f"d{symbol}" if plain else f"d({symbol})"


def dim_labels(count: int) -> tuple[str, ...]:
    """The labels of a dimension's columns: '1', '2', … (1-based, as a teacher counts)."""
    return tuple(str(j + 1) for j in range(count))


def span(first: int, count: int) -> str:
    """1-based inclusive column range: columns 3–4 (or just 3)."""
    return f"{first + 1}" if count == 1 else f"{first + 1}–{first + count}"


def columns_of(m: Matrix, cols: slice) -> Const:
    exact = None if m.exact is None else tuple(tuple(row[cols]) for row in m.exact)
    return Const(m.values[:, cols], exact)


def bias_params(m: Matrix | None, cols: slice | None = None) -> dict[str, Any]:
    """The params of a bias added after a product: the row vector and its exact fractions."""
    if m is None:
        return {}
    cols = cols or slice(None)
    exact = None if m.exact is None else tuple(m.exact[0][cols])
    return {"bias": m.values[0, cols], "bias_exact": exact}


class Slices(NamedTuple):
    q: slice
    k: slice
    v: slice
    g: int


def head_slices(p: Problem, head: int) -> Slices:
    """The columns query head h reads of W_Q (or Q), and of W_K, W_V (or K, V): K/V head g's."""
    g = p.kv_head_of(head)
    return Slices(
        slice((head - 1) * p.d_k, head * p.d_k),
        slice((g - 1) * p.d_k, g * p.d_k),
        slice((g - 1) * p.d_v, g * p.d_v),
        g,
    )


def together(*remarks: Any) -> Any:
    """Several remarks on one stage, in order (None: a remark that does not apply)."""
    present = [r for r in remarks if r is not None]

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        return tuple(note for r in present for note in r(value_of))

    return remark


def positions_text(rows: tuple[str, ...], positions: np.ndarray, limit: int = 12) -> str:
    """'the @0, cat @1, …': each row's token at its position, the first `limit` of them."""
    said = [f"{t} @{pos}" for t, pos in zip(rows, positions.tolist(), strict=True)]
    return ", ".join(said[:limit]) + (" …" if len(said) > limit else "")
