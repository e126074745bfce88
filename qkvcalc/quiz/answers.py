"""Reading a student's answers: one typed cell, or a JSON answer sheet of whole matrices.

A cell is a number in the safe grammar of the input format (`7`, `-0.5`, `7/sqrt(2)`, `4.95`),
or `-inf` / `−∞` for a masked score. A sheet maps stage keys (`"k"`, `"scores"`, `"2/scores"`
for head 2) to matrices; a flat list is one row (or the one column of a
one-column stage), a single number a 1×1 matrix, and a null cell
is "not answered". Every problem is a QkvcalcError that names the stage, the cell and the rule.

Decimal commas, as a teacher reads them (`decimal_comma`):

- `4,95` is 4.95, `-0,5` is -0.5 and `0,125` is 0.125: one comma between digits, no point.
- `1,234` (one to three digits, not starting with 0, a comma, then exactly three digits) is
  ambiguous: 1.234 with a decimal comma, 1234 with a thousands separator. It is not guessed:
  the cell is unreadable, and the reason says both readings and how to write either.
- `1,234.5` (commas between groups of three, then a point) is 1234.5, and `1.234,5` (points
  between groups of three, then a comma) is 1234.5: the other mark says which is the decimal.
- Anything else with a comma (`1,2,3`) is not a number.

An unreadable cell on a sheet (`"3?"`, an ambiguous comma, `true`) does not void the sheet:
`read_answer_sheet` reads it as unanswered, keeps the reason, and the report grades it as
unreadable while every other cell is graded as usual. A sheet whose shape is wrong is still an
error, with one exception: a concatenation given as the heads' average (n×d_v instead of
n×H·d_v) is graded as that named mistake (quiz/mistakes.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.numbers import parse_number
from qkvcalc.labels import closest, safe, shape_text
from qkvcalc.plan import ids
from qkvcalc.quiz.grade import (
    MISSING,
    WRONG,
    Report,
    StageGrade,
    askable,
    stage_keys,
)
from qkvcalc.quiz.mistakes import Mistake, averaged_heads
from qkvcalc.trace import Stage, Trace

NEG_INF = ("-inf", "−inf", "-∞", "−∞")
UNREADABLE = "unreadable"  # the verdict of a cell that could not be read as a number

_DECIMAL_COMMA = re.compile(r"([-+]?)(\d+),(\d+)")
_AMBIGUOUS_COMMA = re.compile(r"[-+]?[1-9]\d{0,2},\d{3}")
_THOUSANDS_COMMAS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+\.\d+")
_THOUSANDS_POINTS = re.compile(r"[-+]?\d{1,3}(?:\.\d{3})+,\d+")


def decimal_comma(text: str, field: str) -> str:
    """`text` with its comma read as a teacher would (see the module's docstring); unchanged
    when it has no comma. Raises answer.comma_ambiguous for `1,234`."""
    if "," not in text:
        return text
    if _AMBIGUOUS_COMMA.fullmatch(text):
        return _ambiguous(text, field)
    if _DECIMAL_COMMA.fullmatch(text):
        return text.replace(",", ".")
    if _THOUSANDS_COMMAS.fullmatch(text):
        return text.replace(",", "")
    if _THOUSANDS_POINTS.fullmatch(text):
        return text.replace(".", "").replace(",", ".")
    return text  # the grammar says what is wrong with it


def _ambiguous(text: str, field: str) -> str:
    raise QkvcalcError(
        "answer.comma_ambiguous",
        field=field,
        text=text,
        decimal=text.replace(",", "."),
        thousands=text.replace(",", ""),
    )


def parse_answer(text: str, field: str) -> float:
    """One typed answer: a number of the safe grammar (with a decimal comma read as a point,
    and − as a minus), or minus infinity for a masked score."""
    stripped = text.strip()
    if stripped.lower() in NEG_INF:
        return -math.inf
    stripped = decimal_comma(stripped.replace("−", "-"), field)
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


Unreadable = dict[tuple[str, int, int], tuple[str, QkvcalcError]]


def read_matrix(
    raw: Any,
    key: str,
    stage: Stage,
    unreadable: Unreadable | None = None,
    misshapen: dict[str, Any] | None = None,
) -> np.ndarray:
    """One stage's answer as a float matrix of the stage's shape (NaN where not answered).

    With `unreadable`, a cell that is not a number is read as NaN and its text and reason are
    put there under (key, i, j) instead of raising; with `misshapen`, an answer of the wrong
    shape is put there (under its key) and a NaN matrix returned, for the caller to judge."""
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
        if misshapen is not None:
            misshapen[key] = rows
            return np.full(stage.shape, np.nan)
        raise shape_error(key, shape, stage)
    return _numbers(rows, key, unreadable)


def shape_error(key: str, shape: tuple[int, int], stage: Stage) -> QkvcalcError:
    return QkvcalcError(
        "quiz.sheet_shape",
        key=key,
        shape=shape_text(shape),
        rule=stage.letters,
        expected=shape_text(stage.shape),
    )


def _numbers(rows: list[list[Any]], key: str, unreadable: Unreadable | None) -> np.ndarray:
    out = np.full((len(rows), len(rows[0])), np.nan)
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            try:
                out[i, j] = _cell(value, f"{key}[{i + 1},{j + 1}]")
            except QkvcalcError as err:
                if unreadable is None:
                    raise
                # shown as written, but a lone surrogate ("\ud800" in the JSON) as an escape:
                # no stream can encode it, and the report would end in a UnicodeEncodeError
                unreadable[(key, i, j)] = (safe(json.dumps(value, ensure_ascii=False), 40), err)
    return out


def read_sheet(
    raw: Any,
    stages: Mapping[str, Stage],
    unreadable: Unreadable | None = None,
    misshapen: dict[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """A whole answer sheet, checked against the problem's stages (by key); `unreadable` and
    `misshapen` as in read_matrix."""
    if not isinstance(raw, Mapping):
        raise QkvcalcError("quiz.sheet_not_object", kind=type(raw).__name__)
    known = [k for k, s in stages.items() if askable(s)]
    sheet: dict[str, np.ndarray] = {}
    for given, value in raw.items():
        key = str(given).strip().lower()
        if key not in known and key.startswith("1/") and key[2:] in known:
            key = key[2:]  # one head: "1/scores" is "scores"
        if key not in known and f"1/{key}" in known:  # several heads: each stage has its own
            heads = sum(1 for k in known if k.endswith(f"/{key}"))
            suggestion, last = f"1/{key}", f"{heads}/{key}"
            raise QkvcalcError(
                "quiz.sheet_key_head", key=given, heads=heads, suggestion=suggestion, last=last
            )
        if key not in known:
            close = closest(key, known)
            if close is not None:
                raise QkvcalcError("quiz.sheet_key_suggest", key=given, suggestion=close)
            raise QkvcalcError("quiz.sheet_key", key=given, known=", ".join(known))
        if key in sheet:
            raise QkvcalcError("key.duplicate", key=given, canonical=key)
        sheet[key] = read_matrix(value, key, stages[key], unreadable, misshapen)
    return sheet


# ---- a whole sheet, with its unreadable cells and its misshapen heads ------------------------


@dataclass(frozen=True)
class AnswerSheet:
    """A sheet as read: its matrices (NaN where not answered or unreadable), the unreadable
    cells with their text and reason, and the mistakes found in its shapes."""

    matrices: dict[str, np.ndarray]
    unreadable: Unreadable = dataclasses.field(default_factory=dict)
    mistakes: dict[str, Mistake] = dataclasses.field(default_factory=dict)

    def apply(self, report: Report) -> Report:
        """The grades with this sheet's unreadable cells marked unreadable (they were graded
        as not answered) and its shape mistakes named, the cells of such a stage wrong."""
        stages = []
        for grade in report.stages:
            cells = []
            for cell in grade.cells:
                where = (grade.key, cell.ref.i, cell.ref.j)
                if cell.verdict == MISSING and where in self.unreadable:
                    cell = dataclasses.replace(cell, verdict=UNREADABLE)
                elif cell.verdict == MISSING and grade.key in self.mistakes:
                    cell = dataclasses.replace(cell, verdict=WRONG)
                cells.append(cell)
            mistake = self.mistakes.get(grade.key, grade.mistake)
            stages.append(StageGrade(grade.key, grade.stage, tuple(cells), mistake))
        return Report(tuple(stages), report.precision)


def read_answer_sheet(raw: Any, trace: Trace, precision: int) -> AnswerSheet:
    """A JSON answer sheet for `trace`: unreadable cells kept with their reasons, and a
    concatenation given as the heads' average recognised (any other wrong shape is an error)."""
    stages = stage_keys(trace)
    unreadable: Unreadable = {}
    misshapen: dict[str, Any] = {}
    matrices = read_sheet(raw, stages, unreadable, misshapen)
    answered = any(not np.isnan(m).all() for m in matrices.values())
    if unreadable and not answered and not misshapen:
        # not one number in it (strings, true/false): no answers to grade, but a sheet that is
        # not one; its first cell's reason says why (a typo among numbers is graded unreadable)
        raise next(iter(unreadable.values()))[1]
    mistakes: dict[str, Mistake] = {}
    for key, rows in misshapen.items():
        stage = stages[key]
        shape = (len(rows), len(rows[0]))
        averaged = None
        joined = key == ids.CONCAT or (key == ids.OUTPUT and trace.problem.wo is None)
        if joined and trace.find(ids.CONCAT) is not None:
            answers = _numbers(rows, key, {})
            averaged = averaged_heads(trace, answers, matrices, precision)
        if averaged is None:
            raise shape_error(key, shape, stage)
        mistakes[key] = averaged
    return AnswerSheet(matrices, unreadable, mistakes)


def empty_sheet(trace: Trace, keys: list[str]) -> str:
    """An answer sheet to fill in: each stage of `keys` as a matrix of nulls of its shape, one
    stage per line, in the order of the calculation (`quiz --template`)."""
    stages = stage_keys(trace)
    lines = []
    for key in keys:
        rows, cols = stages[key].shape
        lines.append(f"  {json.dumps(key)}: {json.dumps([[None] * cols] * rows)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"
