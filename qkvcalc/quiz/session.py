"""The interactive quiz: the problem, then each cell of each stage asked in turn and checked.

A right cell gets a tick; a wrong one gets the right value with its arithmetic written out
(render/arith.py's cell_work, as `explain` shows it) and, when the mistake came from an
earlier stage, a pointer to the cell where it started. The grading is quiz/grade.py's; this
module only asks and tells. Ctrl-C (KeyboardInterrupt) is left to the caller; end of input
stops the questions and the rest count as not answered.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.text import Text

from qkvcalc.engine import dim_labels
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.quiz.answers import parse_answer
from qkvcalc.quiz.grade import (
    CARRIED,
    RIGHT,
    CellVerdict,
    Grader,
    Report,
    StageGrade,
)
from qkvcalc.quiz.report import MARKS, STYLES, answer_text, origins_text
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style, cell_work
from qkvcalc.render.terminal import header, matrix_table
from qkvcalc.render.text import fmt
from qkvcalc.trace import Stage, Trace

Ask = Callable[[Text], str]


def ask_line(console: Console, answers: TextIO | None = None) -> Ask:
    """A prompt on `console`, an answer read from `answers` (standard input unless given; the
    terminal when the problem itself came in on standard input). EOFError at its end."""

    def ask(prompt: Text) -> str:
        console.print(prompt, end="", soft_wrap=True)  # the terminal wraps, rich does not
        console.file.flush()
        line = (answers or sys.stdin).readline()
        if not line:
            console.print()
            raise EOFError
        return line.strip()

    return ask


def problem_view(trace: Trace, opts: RenderOptions) -> RenderableType:
    """What the student works from: the sizes, the input matrices and the mask."""
    p = trace.problem
    parts: list[RenderableType] = [header(trace, opts)]
    given = [("x", "X"), ("source", "source"), ("wq", "W_Q"), ("wk", "W_K"), ("wv", "W_V")]
    given += [("bq", "b_Q"), ("bk", "b_K"), ("bv", "b_V"), ("wo", "W_O"), ("bo", "b_O")]
    if not p.projected:
        given = [("q", "Q"), ("k", "K"), ("v", "V")]
    for field, name in given:
        matrix = getattr(p, field)
        if matrix is None:
            continue
        rows = (
            p.tokens
            if field in ("x", "q")
            else p.source_tokens
            if field in ("source", "k", "v")
            else dim_labels(matrix.values.shape[0])
        )
        parts.append(
            matrix_table(matrix.values, name, rows, dim_labels(matrix.values.shape[1]), opts)
        )
        parts.append(Text(""))
    if p.mask is not None:
        parts.append(matrix_table(p.mask.astype(float), "M", p.tokens, p.source_tokens, opts))
        parts.append(Text(""))
    if p.scale_given is not None:
        parts.append(Text(f"scale = {fmt(p.scale, opts.precision)}"))
    return Group(*parts)


def stage_heading(stage: Stage, number: int, total: int, lang: str) -> Text:
    title = translate(stage.title.key, lang)
    if stage.head is not None:
        title += f" · {translate('ui.head', lang, head=stage.head)}"
    formula = stage.formula
    if " = " not in formula and formula != stage.symbol:
        formula = f"{stage.symbol} = {formula}"
    rows, cols = stage.shape
    return Text(
        translate(
            "quiz.stage_heading",
            lang,
            number=number,
            total=total,
            title=title,
            formula=formula,
            shape=f"{rows}×{cols}",
        ),
        style="bold cyan",
    )


class Session:
    """One quiz: asks the chosen stages of `trace` in order and grades each cell at once."""

    def __init__(
        self,
        trace: Trace,
        keys: list[str],
        opts: RenderOptions,
        console: Console,
        ask: Ask,
    ) -> None:
        self.trace, self.keys, self.opts = trace, keys, opts
        self.console, self.ask = console, ask
        self.lang = opts.lang
        self.grader = Grader(trace, opts.precision)
        self.style = Style(precision=opts.precision)

    def say(self, renderable: RenderableType) -> None:
        self.console.print(renderable)

    def run(self) -> Report:
        """Ask every chosen stage; the grades of those asked (all cells missing after EOF)."""
        self.say(problem_view(self.trace, self.opts))
        self.say(Text(translate("quiz.intro", self.lang, precision=self.opts.precision)))
        self.say(Text(""))
        grades: list[StageGrade] = []
        ended = False
        number = 0
        for key, stage in self.grader.stages.items():
            if key not in self.keys:
                self.grader.commit(key, None)
                continue
            number += 1
            if ended:
                answers = np.full(stage.shape, np.nan)
            else:
                answers, ended = self.ask_stage(key, stage, number)
            grade = self.grader.commit(key, answers)
            assert grade is not None
            grades.append(grade)
            if not ended:
                self.say(self.stage_score(grade))
        return Report(tuple(grades), self.opts.precision)

    def ask_stage(self, key: str, stage: Stage, number: int) -> tuple[np.ndarray, bool]:
        """Every cell of one stage, row by row. Returns the answers and whether input ended."""
        self.say(stage_heading(stage, number, len(self.keys), self.lang))
        for note in stage.notes:
            self.say(Text("  • " + note.text(self.lang), style="dim"))
        answers = np.full(stage.shape, np.nan)
        rows, cols = stage.shape
        for i in range(rows):
            for j in range(cols):
                try:
                    answers[i, j] = self.ask_cell(key, i, j)
                except EOFError:
                    return answers, True
                verdict = self.grader.judge(key, i, j, float(answers[i, j]))
                self.say(self.feedback(verdict, stage, i, j))
        return answers, False

    def ask_cell(self, key: str, i: int, j: int) -> float:
        """One cell's answer, asked again until it is a number."""
        cell = f"{self.grader.stages[key].symbol}[{i + 1},{j + 1}]"
        prompt = Text(translate("quiz.prompt", self.lang, cell=cell))
        while True:
            text = self.ask(prompt)
            if not text:
                continue
            try:
                return parse_answer(text, cell)
            except QkvcalcError as err:
                self.say(
                    Text(
                        "  "
                        + translate("quiz.bad_answer", self.lang, reason=err.message(self.lang)),
                        style="yellow",
                    )
                )

    def feedback(self, verdict: CellVerdict, stage: Stage, i: int, j: int) -> RenderableType:
        if verdict.verdict == RIGHT:
            return Text(f"  {MARKS[RIGHT]}", style=STYLES[RIGHT])
        params = {
            "cell": verdict.ref.label,
            "expected": fmt(verdict.expected, self.opts.precision),
            "answer": "" if verdict.answer is None else answer_text(verdict.answer),
        }
        if verdict.verdict == CARRIED:
            line = translate(
                "quiz.carried",
                self.lang,
                origin=origins_text(verdict, self.lang),
                own=fmt(verdict.own, self.opts.precision),
                **params,
            )
        else:
            line = translate("quiz.wrong", self.lang, **params)
        parts: list[RenderableType] = [
            Text(f"  {MARKS[verdict.verdict]} {line}", style=STYLES[verdict.verdict])
        ]
        work = cell_work(stage, i, j, self.style)
        if work is not None:
            parts.append(Text("      " + work))
        return Group(*parts)

    def stage_score(self, grade: StageGrade) -> Text:
        return Text(
            translate(
                "quiz.stage_score",
                self.lang,
                right=grade.count(RIGHT),
                total=grade.total,
                name=grade.stage.symbol,
            )
            + "\n",
            style=STYLES[grade.status],
        )
