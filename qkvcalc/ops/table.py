"""The op table: every operation a stage can be, by name, merged from the modules that declare
them — the core of attention, the backward pass, FlashAttention-2's backward in tiles, then each
feature's own. The engine, exact mode, the grader, the page and the cell arithmetic all read it;
nothing here knows a stage's id (the plan says which operation each stage is and what it reads).

    compute(operands, params, rows)  the value, or only the rows `rows` for a row-wise op
                                     (its operands are then those rows of a row-wise input)
    feeds(i, j, shapes, params)      (operand, a, b) for each operand cell that cell (i, j) reads
    exact(operands, params)          exact values and notes, or None when the op leaves the
                                     rationals (e^x)

The forward core's operations are there from the start; the rest of the core's (the KV cache,
the tiles, the backward pass, the loss) join when one of them is first asked for. A feature's
operations join the table when it is asked for one of them: those of the features
already loaded (a problem that uses a feature has loaded it), else every feature's (the registry
imports their modules). Listing the table (its keys, values, length) lists every feature's.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from qkvcalc.ops import add, concat, features, given, mask, projection, scale, softmax, transpose
from qkvcalc.ops.op import Op

_FORWARD = (given, projection, transpose, scale, mask, softmax, concat, add)


def _rest_of_core() -> dict[str, Op]:
    """The core's operations a plain forward run never asks for — the KV cache's, the tiles',
    the backward pass's, the loss's and FlashAttention-2's backward — imported when one of them
    is first asked for, so that `explain` of a forward problem does not load them."""
    from qkvcalc.ops import cache, flash_grads, grads, loss, tiles

    return {
        **{op.name: op for module in (cache, tiles) for op in module.OPS},
        **grads.OPS,
        **{op.name: op for op in loss.OPS},
        **flash_grads.OPS,
    }


class _Table(MutableMapping[str, Op]):
    """The op table: the core's operations from the start, a feature's from when it is asked
    for (an op's name is its own: no feature's shadows another's or the core's, a test checks).
    Listed, it is the core's then every feature's in the registry's order, as it was built. (A
    test may set an entry, as it could in the dict this was: the entry stays as set.)"""

    def __init__(self, forward: dict[str, Op]) -> None:
        self._forward = forward
        self._core: dict[str, Op] | None = None  # the forward's and the rest of the core's
        self._ops = dict(forward)
        self._whole = False  # every feature's operations are in

    def __getitem__(self, name: str) -> Op:
        if name not in self._ops:
            for known, op in features.loaded_ops().items():
                self._ops.setdefault(known, op)
        if name not in self._ops:
            self._ops = {**self._whole_core(), **self._ops}
        if name not in self._ops:
            self._complete()
        return self._ops[name]

    def _whole_core(self) -> dict[str, Op]:
        if self._core is None:
            self._core = {**self._forward, **_rest_of_core()}
        return self._core

    def _complete(self) -> dict[str, Op]:
        if not self._whole:
            self._ops = {**self._whole_core(), **features.ops()} | self._ops
            self._whole = True
        return self._ops

    def __iter__(self) -> Iterator[str]:
        return iter(self._complete())

    def __len__(self) -> int:
        return len(self._complete())

    def __setitem__(self, name: str, op: Op) -> None:
        self._ops[name] = op

    def __delitem__(self, name: str) -> None:
        del self._ops[name]


OPS: MutableMapping[str, Op] = _Table({op.name: op for module in _FORWARD for op in module.OPS})
