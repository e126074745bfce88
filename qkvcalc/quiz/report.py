"""A graded answer sheet in words: a rich table of scores per stage with every cell's mark,
the cells to look at again, or the "qkvcalc.quiz/1" JSON document for autograders.

Returns renderables and text; prints nothing. Numbers are formatted here, never computed.
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from qkvcalc.i18n import translate
from qkvcalc.quiz.answers import UNREADABLE, AnswerSheet
from qkvcalc.quiz.grade import (
    CARRIED,
    MISSING,
    RIGHT,
    VERDICTS,
    WRONG,
    CellRef,
    CellVerdict,
    Report,
    StageGrade,
)
from qkvcalc.quiz.tolerance import tolerance
from qkvcalc.render.json_doc import dumps, number_json
from qkvcalc.render.text import fmt, place
from qkvcalc.trace import Trace

SCHEMA = "qkvcalc.quiz/1"
MARKS = {RIGHT: "✓", CARRIED: "→", WRONG: "✗", MISSING: "·", UNREADABLE: "?"}
STYLES = {RIGHT: "green", CARRIED: "yellow", WRONG: "red", MISSING: "dim", UNREADABLE: "magenta"}
COUNTED = (*VERDICTS, UNREADABLE)  # the counts of the JSON report
MAX_MARKS = 200  # a stage's marks beyond this are elided


def answer_text(value: float) -> str:
    """A number as the student gave it, without rounding it to the quiz's precision."""
    if not math.isfinite(value):
        return fmt(value)
    text = fmt(value, 6)
    return text.rstrip("0").rstrip(".") if "." in text else text


def cell_name(ref: CellRef, lang: str) -> str:
    """'K[2,1]', or 'K[2,1] (head 2)' when the problem has several heads."""
    if ref.head is None:
        return ref.label
    return translate("quiz.cell_head", lang, cell=ref.label, head=ref.head)


def origins_text(cell: CellVerdict, lang: str, limit: int = 3) -> str:
    names = [cell_name(ref, lang) for ref in cell.origins[:limit]]
    return ", ".join(names) + (" …" if len(cell.origins) > limit else "")


def stage_name(grade: StageGrade, lang: str) -> str:
    title = translate(grade.stage.title.key, lang)
    where = place(grade.stage, lang)
    if where:
        title += f" · {where}"
    return title


def marks(grade: StageGrade) -> Text:
    """Every cell's mark, a row of the matrix per group: '✓✓ ✗✓ ✓✓'."""
    text = Text()
    cols = grade.stage.shape[1]
    for n, cell in enumerate(grade.cells[:MAX_MARKS]):
        if n and n % cols == 0:
            text.append(" ")
        text.append(MARKS[cell.verdict], style=STYLES[cell.verdict])
    if len(grade.cells) > MAX_MARKS:
        text.append(" …")
    return text


def score_table(report: Report, lang: str) -> Table:
    shown = (CARRIED, WRONG, MISSING) + ((UNREADABLE,) if report.count(UNREADABLE) else ())
    legend = translate("quiz.legend", lang)
    if report.count(UNREADABLE):
        legend += ", " + translate("quiz.legend_unreadable", lang)
    table = Table(
        title=translate("quiz.score_title", lang),
        title_justify="left",
        caption=legend,
        caption_justify="left",
        show_edge=False,
    )
    table.add_column(translate("quiz.col_stage", lang))
    table.add_column(translate("quiz.col_score", lang), justify="right", no_wrap=True)
    for verdict in shown:
        table.add_column(translate(f"quiz.verdict.{verdict}", lang), justify="right")
    table.add_column(translate("quiz.col_cells", lang))
    for grade in report.stages:
        counts = [grade.count(v) for v in shown]
        table.add_row(
            Text(f"{grade.key}  {stage_name(grade, lang)}"),
            Text(f"{grade.counted}/{grade.total}", style=STYLES[grade.status]),
            *(Text(str(c) if c else "") for c in counts),
            marks(grade),
        )
    return table


def cell_line(
    cell: CellVerdict, precision: int, lang: str, sheet: AnswerSheet | None = None
) -> Text:
    """One sentence about a cell that is not right."""
    if cell.verdict == UNREADABLE and sheet is not None:
        text, err = sheet.unreadable[(cell.ref.key, cell.ref.i, cell.ref.j)]
        line = translate(
            "quiz.detail_unreadable",
            lang,
            cell=cell_name(cell.ref, lang),
            text=text,
            reason=err.msg.text(lang),
            expected=fmt(cell.expected, precision),
        )
        return Text(f"{MARKS[UNREADABLE]} {line}", style=STYLES[UNREADABLE])
    params = {
        "cell": cell_name(cell.ref, lang),
        "expected": fmt(cell.expected, precision),
        "answer": "" if cell.answer is None else answer_text(cell.answer),
    }
    if cell.verdict == CARRIED:
        line = translate("quiz.detail_carried", lang, origin=origins_text(cell, lang), **params)
    else:
        line = translate(f"quiz.detail_{cell.verdict}", lang, **params)
    return Text(f"{MARKS[cell.verdict]} {line}", style=STYLES[cell.verdict])


def summary(report: Report, lang: str) -> Text:
    if report.all_right:
        return Text(translate("quiz.all_right", lang, total=report.total), style="bold green")
    carried = report.count(CARRIED)
    key = "quiz.total_carried" if carried else "quiz.total"
    text = translate(key, lang, right=report.counted, total=report.total, carried=carried)
    return Text(text, style="bold")


def mistake_lines(report: Report, lang: str) -> list[Text]:
    """The named mistakes, a sentence per stage (quiz/mistakes.py found them)."""
    lines = []
    for grade in report.stages:
        if grade.mistake is not None:
            name = f"{grade.key}  {stage_name(grade, lang)}"
            line = translate("quiz.mistake_line", lang, stage=name, text=grade.mistake.text(lang))
            lines.append(Text(f"{MARKS[WRONG]} {line}", style=STYLES[WRONG]))
    return lines


def render_report(report: Report, lang: str, sheet: AnswerSheet | None = None) -> RenderableType:
    """The score table, the mistakes recognised, each cell that is not right, the total."""
    parts: list[RenderableType] = [score_table(report, lang), Text("")]
    named = mistake_lines(report, lang)
    if named:
        parts.append(Text(translate("quiz.mistakes_title", lang), style="bold"))
        parts.extend(named)
        parts.append(Text(""))
    missing = [g for g in report.stages if g.status == MISSING]
    for grade in missing:
        parts.append(
            Text(translate("quiz.stage_missing", lang, key=grade.key), style=STYLES[MISSING])
        )
    faults = [
        c for g in report.stages if g.status != MISSING for c in g.cells if c.verdict != RIGHT
    ]
    if faults:
        parts.append(Text(translate("quiz.cells_title", lang), style="bold"))
        parts.extend(cell_line(c, report.precision, lang, sheet) for c in faults)
    if missing or faults:
        parts.append(Text(""))
    parts.append(summary(report, lang))
    return Group(*parts)


# ---- JSON --------------------------------------------------------------------------------------


def _number(value: float | None) -> float | str | None:
    return None if value is None else number_json(value)


def _ref_json(ref: CellRef) -> dict[str, Any]:
    return {"key": ref.key, "row": ref.i + 1, "col": ref.j + 1, "cell": ref.label}


def report_json(report: Report, trace: Trace, lang: str, sheet: AnswerSheet | None = None) -> str:
    """The "qkvcalc.quiz/1" document: every stage and every cell with its verdict; a stage's
    named mistake as `mistake` (a stable id, null when none) and `mistake_text`; `counted` (a
    stage's and the whole score's) is right + carried, the cells right for their step; an unreadable
    cell's text as written as `written` and why it could not be read as `reason`."""
    p = trace.problem
    stages = []
    for grade in report.stages:
        cells = []
        for cell in grade.cells:
            doc: dict[str, Any] = {
                **_ref_json(cell.ref),
                "verdict": cell.verdict,
                "answer": _number(cell.answer),
                "expected": _number(cell.expected),
                "tolerance": tolerance(cell.expected, report.precision)
                if math.isfinite(cell.expected)
                else 0.0,
            }
            if cell.verdict == CARRIED:
                doc["own"] = _number(cell.own)
                doc["carried_from"] = [_ref_json(r) for r in cell.origins]
            if cell.verdict == UNREADABLE and sheet is not None:
                written, err = sheet.unreadable[(grade.key, cell.ref.i, cell.ref.j)]
                doc["written"] = written
                doc["reason"] = err.msg.text(lang)
            cells.append(doc)
        stages.append(
            {
                "key": grade.key,
                "id": grade.stage.id,
                "head": grade.stage.head,
                "title": translate(grade.stage.title.key, lang),
                "shape": list(grade.stage.shape),
                "status": grade.status,
                **{v: grade.count(v) for v in COUNTED},
                "counted": grade.counted,
                "total": grade.total,
                "mistake": None if grade.mistake is None else grade.mistake.id,
                "mistake_text": None if grade.mistake is None else grade.mistake.text(lang),
                "cells": cells,
            }
        )
    doc = {
        "schema": SCHEMA,
        "problem": {
            "n": p.n,
            "m": p.m,
            "d_k": p.d_k,
            "d_v": p.d_v,
            "heads": p.heads,
            "tokens": list(p.tokens),
        },
        "precision": report.precision,
        "all_right": report.all_right,
        "score": {
            **{v: report.count(v) for v in COUNTED},
            "counted": report.counted,
            "total": report.total,
        },
        "stages": stages,
    }
    return dumps(doc, indent=2) + "\n"
