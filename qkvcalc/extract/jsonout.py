"""The problem as JSON, written a row at a time: a 7B model's W_Q is 16 million numbers, and
as one nested Python list it would take some 500 MB before a byte is written. Floats are
written in their shortest round-trip form (repr), so the file holds the float64 numbers
exactly."""

from __future__ import annotations

import json
from typing import IO, Any

import numpy as np


def _value(value: Any, out: IO[str], indent: str) -> None:
    if isinstance(value, np.ndarray):
        if value.ndim <= 1:
            out.write(json.dumps(value.tolist()))
            return
        out.write("[")
        inner = indent + "  "
        for i, row in enumerate(value):
            out.write(("," if i else "") + "\n" + inner)
            _value(row, out, inner)
        out.write("\n" + indent + "]")
    elif isinstance(value, dict):
        out.write("{")
        for i, (key, item) in enumerate(value.items()):
            out.write(("," if i else "") + "\n" + indent + "  " + json.dumps(key) + ": ")
            _value(item, out, indent + "  ")
        out.write("\n" + indent + "}")
    else:
        out.write(json.dumps(value, ensure_ascii=False))


def write_problem(problem: dict[str, Any], out: IO[str]) -> None:
    """`problem` (numpy arrays and plain values) as one JSON object, to `out`."""
    _value(problem, out, "")
    out.write("\n")


def to_plain(problem: dict[str, Any]) -> dict[str, Any]:
    """The same problem with nested lists for arrays (for json.dumps; small models only)."""
    return json.loads(_dumps(problem))


def _dumps(problem: dict[str, Any]) -> str:
    import io

    buffer = io.StringIO()
    write_problem(problem, buffer)
    return buffer.getvalue()
