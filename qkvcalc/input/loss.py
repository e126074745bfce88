"""Where the backward pass starts (--backward, `qkvcalc train`): one of three keys.

    "grad_output": dL/dO given directly, n × d_out (as out.backward(grad) takes it)
    "target":      a target output T, n × d_out;      L = ½·Σ(O − T)², so dL/dO = O − T
    "attend":      for each query the key it should attend to, 1-based (null: no target for
                   that query);                       L = −Σᵢ log A[i, tᵢ], summed over the heads

d_out is the output's width: W_O's columns when W_O is given, else H·d_v.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.cells import Matrix, to_matrix
from qkvcalc.labels import shown
from qkvcalc.records import NamedTuple

KEYS = ("grad_output", "target", "attend")


class Loss(NamedTuple):
    """The start of the backward pass: `kind` is one of KEYS; `matrix` holds dL/dO or T
    (n × d_out); `attend` the 0-based target key of each query, −1 where it has none."""

    kind: str
    matrix: Matrix | None = None
    attend: tuple[int, ...] = ()

    def targets(self) -> list[tuple[int, int]]:
        """(query, key) of each target, 0-based."""
        return [(i, t) for i, t in enumerate(self.attend) if t >= 0]


def read_loss(doc: dict[str, Any], n: int, m: int, d_out: int, exact: bool) -> Loss | None:
    """The loss key of a document (at most one of them), checked against the problem's shapes."""
    given = [key for key in KEYS if doc.get(key) is not None]
    if not given:
        return None
    if len(given) > 1:
        raise QkvcalcError("loss.several", keys=", ".join(given))
    (key,) = given
    if key == "attend":
        return Loss("attend", attend=_attend(doc[key], n, m))
    matrix = to_matrix(doc[key], key, exact=exact)
    rows, cols = matrix.values.shape
    if (rows, cols) != (n, d_out):
        raise QkvcalcError("loss.shape", field=key, rows=rows, cols=cols, n=n, d_out=d_out)
    return Loss(key, matrix=matrix)


def _attend(raw: Any, n: int, m: int) -> tuple[int, ...]:
    """The 0-based target of each query (−1: none). A message names the "no target" word of
    what was given: - for typed text (the command line), null for a JSON list."""
    typed = "_typed" if isinstance(raw, str) else ""
    if isinstance(raw, str):  # typed: "3 1 -" or "3,1,null" (- or null: no target)
        words = raw.replace(",", " ").replace(";", " ").split()
        raw = [None if w.lower() in ("-", "null", "none") else _integer(w) for w in words]
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if isinstance(raw, int) and not isinstance(raw, bool) and n == 1:
        raw = [raw]
    if not isinstance(raw, list | tuple) or len(raw) != n:
        count = len(raw) if isinstance(raw, list | tuple) else 1
        raise QkvcalcError("loss.attend_count" + typed, count=count, n=n)
    out = []
    for i, t in enumerate(raw):
        if t is None:
            out.append(-1)
            continue
        ok = isinstance(t, int | float) and not isinstance(t, bool) and float(t).is_integer()
        if not ok or not 1 <= int(t) <= m:
            raise QkvcalcError("loss.attend_key" + typed, row=i + 1, value=shown(t), m=m)
        out.append(int(t) - 1)
    if all(t < 0 for t in out):
        raise QkvcalcError("loss.attend_empty")
    return tuple(out)


def _integer(word: str) -> Any:
    try:
        return int(word)
    except ValueError:
        return word  # named as it was typed by the check that follows
