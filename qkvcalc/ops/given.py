"""The problem's own numbers as stages: X and the weights as given (`input`), one head's
columns of them (`slice`), a copy (`copy`), a table the plan works out (`table`) and the head
split said in words (`split`). Nothing to work out, nothing to ask in a quiz."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.ops.op import Back, Literals, Op, Params, nothing, rows_of, same_cell
from qkvcalc.ops.rounding import Out, Rounding, moved, rounded
from qkvcalc.plan.specs import Ref, Spec


def _exact_input(ops: Sequence[Any], params: Params) -> Any:
    return ops[0], ()


def _exact_columns(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.columns(ops[0], params["cols"]), ()


def _input(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return rows_of(ops[0], rows)


def _columns(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d] -> [n, d_k]: one head's slice of columns
    return rows_of(ops[0], rows)[:, params["cols"]]


def _table(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return rows_of(params["table"], rows)


def _exact_table(ops: Sequence[Any], params: Params) -> Any:
    return params.get("table_exact"), ()


def _copy_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """The output that is the concat itself (no W_O): d(concat) = dO, the same numbers."""
    read = back.by[at.operands[0]]
    into = f"d({read.symbol})"  # a word (the concat), in brackets
    return [
        Spec(
            f"grad_{read.id}",
            at.head,
            "copy",
            (g,),
            f"{into} = {back.by[g].symbol}",
            read.rows,
            read.cols,
            topic=f"grad_{read.id}.copy",
            symbol=into,
            letters=read.letters,
        )
    ]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_columns(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    whole = r.stored(ops[0])  # the whole tensor stored (one scale for it), then the columns
    return whole._replace(value=whole.value[:, params["cols"]])


def _lowp_table(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return r.stored(params["table"])  # numbers the plan was given or worked out: stored


def _lowp_split(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(np.asarray(params["table"]))  # which columns each head reads: no numbers


# ---- in PyTorch (--format torch): the numbers themselves, or their columns ----


def _torch_columns(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"{names[0]}[:, {lit.index(params['cols'])}]"


OPS: tuple[Op, ...] = (
    Op(
        "input",
        _input,
        same_cell,
        _exact_input,
        given=True,
        lowp=rounded,
        torch=lambda params, names, lit: names[0],
    ),
    Op(
        "slice",
        _columns,
        nothing,
        _exact_columns,
        given=True,
        lowp=_lowp_columns,
        torch=_torch_columns,
    ),
    Op(
        "copy",
        _input,
        same_cell,
        _exact_input,
        backward=lambda ops, params, out, g: (g,),
        lowp=moved,
        plan_back=_copy_grads,
        torch=lambda params, names, lit: names[0],
    ),
    Op(
        "split",
        _table,
        overflow=lambda params: False,
        given=True,
        in_words=True,
        lowp=_lowp_split,
        in_code={  # a person's code (qkvcalc check): its pipeline's steps, replaced
            # head h takes every H-th column (h, h + H, …) instead of the h-th slice
            "heads_split": {"split": lambda x, h, parts: x[:, h::parts]},
            # K/V heads repeated as a whole (tile) instead of each in turn (repeat_interleave)
            "gqa_repeat": {"kv_head": lambda h, heads, groups: h % groups},
        },
        torch=lambda params, names, lit: lit.array(params["table"]),
    ),
    Op(
        "table",
        _table,
        nothing,
        _exact_table,
        given=True,
        lowp=_lowp_table,
        torch=lambda params, names, lit: lit.array(params["table"]),
    ),
)
