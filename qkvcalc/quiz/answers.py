"""Reading a student's answers: one typed cell, or a JSON answer sheet of whole matrices.

A cell is a number in the safe grammar of the input format (`7`, `-0.5`, `7/sqrt(2)`, `4.95`),
or `-inf` / `−∞` for a masked score. A sheet maps stage keys (`"k"`, `"scores"`, `"2/scores"`
for head 2) to matrices; a flat list is one row (or the one column of a
one-column stage), a single number a 1×1 matrix, and a null cell
is "not answered". Every problem is a QkvcalcError that names the stage, the cell and the rule.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.numbers import parse_number
from qkvcalc.problem import shape_text
from qkvcalc.quiz.grade import askable
from qkvcalc.trace import Stage

NEG_INF = ("-inf", "−inf", "-∞", "−∞")


def parse_answer(text: str, field: str) -> float:
    """One typed answer: a number of the safe grammar, or minus infinity for a masked score."""
    stripped = text.strip()
    if stripped.lower() in NEG_INF:
        return -math.inf
    return parse_number(stripped, field).value


def _cell(value: Any, field: str) -> float:
    if value is None:
        return math.nan  # not answered
    if isinstance(value, bool):
        raise QkvcalcError("matrix.bool", field=field, where="")
    if isinstance(value, int | float):
        number = float(value)
        if math.isnan(number) or math.isinf(number):
            raise QkvcalcError("number.not_finite", field=field, text=repr(value))
        return number
    if isinstance(value, str):
        return parse_answer(value, field)
    raise QkvcalcError("matrix.not_number", field=field, where="", value=repr(value)[:40])


def read_matrix(raw: Any, key: str, stage: Stage) -> np.ndarray:
    """One stage's answer as a float matrix of the stage's shape (NaN where not answered)."""
    if isinstance(raw, int | float | str) and not isinstance(raw, bool):
        raw = [[raw]]
    if not isinstance(raw, list) or not raw:
        raise QkvcalcError("quiz.sheet_not_matrix", key=key, value=repr(raw)[:40])
    rows = raw if isinstance(raw[0], list) else [raw]
    if rows is not raw and stage.shape == (len(raw), 1):  # a flat list for a one-column stage
        rows = [[v] for v in raw]
    for i, row in enumerate(rows):
        if not isinstance(row, list):
            raise QkvcalcError("matrix.mixed", field=key, row=i + 1)
        if len(row) != len(rows[0]):
            raise QkvcalcError(
                "matrix.ragged", field=key, row=i + 1, length=len(row), width=len(rows[0])
            )
    shape = (len(rows), len(rows[0]))
    if shape != stage.shape:
        raise QkvcalcError(
            "quiz.sheet_shape",
            key=key,
            shape=shape_text(shape),
            rule=stage.letters,
            expected=shape_text(stage.shape),
        )
    return np.array(
        [
            [_cell(v, f"{key}[{i + 1}][{j + 1}]") for j, v in enumerate(row)]
            for i, row in enumerate(rows)
        ],
        dtype=np.float64,
    )


def read_sheet(raw: Any, stages: Mapping[str, Stage]) -> dict[str, np.ndarray]:
    """A whole answer sheet, checked against the problem's stages (by key)."""
    if not isinstance(raw, Mapping):
        raise QkvcalcError("quiz.sheet_not_object", kind=type(raw).__name__)
    known = [k for k, s in stages.items() if askable(s)]
    sheet: dict[str, np.ndarray] = {}
    for given, value in raw.items():
        key = str(given).strip().lower()
        if key not in known and key.startswith("1/") and key[2:] in known:
            key = key[2:]  # one head: "1/scores" is "scores"
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            if close:
                raise QkvcalcError("quiz.sheet_key_suggest", key=given, suggestion=close[0])
            raise QkvcalcError("quiz.sheet_key", key=given, known=", ".join(known))
        if key in sheet:
            raise QkvcalcError("key.duplicate", key=given, canonical=key)
        sheet[key] = read_matrix(value, key, stages[key])
    return sheet
