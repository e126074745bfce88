"""The interactive quiz: the problem, then each cell of each stage asked in turn and checked.

A right cell gets a tick; a wrong one gets the right value with its arithmetic written out
(render/arith.py's cell_work, as `explain` shows it) and, when the mistake came from an
earlier stage, a pointer to the cell where it started; a stage whose wrong cells make a
classic mistake gets that mistake named (quiz/mistakes.py). `?` answers with a hint (the
formula of the cell and the cells it reads); an empty answer or `skip` moves on, the cell
counted as not answered. The grading is quiz/grade.py's; this module only asks and tells.
Ctrl-C (KeyboardInterrupt) is left to the caller, which can still ask `so_far()` for the
score of what was answered; end of input stops the questions and the rest count as not
answered.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.text import Text

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg, translate
from qkvcalc.interactive.waiting import line_at_a_time, wait_readable
from qkvcalc.ops import features
from qkvcalc.plan import ids
from qkvcalc.plan.specs import dim_labels
from qkvcalc.quiz.answers import parse_answer
from qkvcalc.quiz.grade import (
    CARRIED,
    MISSING,
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
from qkvcalc.render.text import fmt, place
from qkvcalc.render.worksheet import keeps
from qkvcalc.trace import Stage, Trace

Ask = Callable[[Text], str]
# One typed answer: a number, a row of a matrix, a line of token names. A longer line is no
# answer (it is refused, not echoed back).
MAX_ANSWER = 10_000
_INVALID_BYTES = re.compile("[\ud800-\udfff]")  # bytes that were not UTF-8, or lone surrogates
SKIP_WORDS = ("", "skip", "s", "건너뛰기")  # an empty answer, or one of these, moves on
HINT_WORDS = ("?", "hint", "힌트")

# the forward stages a backward quiz shows before its questions (with the loss's dO)
_SHOWN_BESIDE = (ids.WEIGHTS, ids.OUTPUT)


def ask_line(console: Console, answers: TextIO | None = None) -> Ask:
    """A prompt on `console`, an answer read from `answers` (standard input unless given; the
    terminal when the problem itself came in on standard input). EOFError at its end."""

    def ask(prompt: Text) -> str:
        console.print(prompt, end="", soft_wrap=True)  # the terminal wraps, rich does not
        console.file.flush()
        stream = answers or sys.stdin
        fd = line_at_a_time(stream)
        if fd is not None:  # a Ctrl-C that came while the question was drawn is not lost
            wait_readable(fd)
        try:  # a line is read up to a bound: stdin from /dev/zero has no end of line
            line = stream.readline(MAX_ANSWER + 1)
        except UnicodeDecodeError:
            console.print()
            raise QkvcalcError("quiz.answer_not_utf8") from None
        if not line:
            console.print()
            raise EOFError
        if len(line.rstrip("\r\n")) > MAX_ANSWER:
            console.print()
            raise QkvcalcError("quiz.answer_too_long", limit=MAX_ANSWER)
        if _INVALID_BYTES.search(line):  # stdin decodes with surrogateescape: \xff is \udcff
            console.print()
            raise QkvcalcError("quiz.answer_not_utf8")
        return line.strip()

    return ask


def problem_view(
    trace: Trace, opts: RenderOptions, asked: frozenset[int] = frozenset()
) -> RenderableType:
    """What the student works from: the sizes, the input matrices and the mask."""
    p = trace.problem
    parts: list[RenderableType] = [header(trace, opts, results_hidden=True)]
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
    stand_in = features.projecting(p)  # multi-head latent attention: its own weights
    if stand_in is not None and stand_in[0].given is not None:
        for name, values in stand_in[0].given(stand_in[1]):
            rows_of = dim_labels(values.shape[0])
            parts.append(matrix_table(values, name, rows_of, dim_labels(values.shape[1]), opts))
            parts.append(Text(""))
    if p.mask is not None:
        parts.append(matrix_table(p.mask.astype(float), "M", p.tokens, p.source_tokens, opts))
        parts.append(Text(""))
    if p.scale_given is not None:
        parts.append(Text(f"scale = {fmt(p.scale, opts.precision)}"))
    parts += backward_givens(trace, opts, asked)
    return Group(*parts)


def backward_givens(trace: Trace, opts: RenderOptions, asked: frozenset[int]) -> list[Any]:
    """--backward: where the gradient starts (T, the given dO, or the target keys), and the
    forward results and dO the backward stages read (A, O, dO) when they are not asked."""
    p = trace.problem
    if p.loss is None or not p.backward:
        return []
    parts: list[Any] = [Text("")]
    if p.loss.kind == "attend":
        note = next(n for s in trace.stages for n in s.notes if n.key == "note.loss_attend_keys")
        parts.append(Text(translate(note.key, opts.lang, **note.params)))
    elif p.loss.matrix is not None:
        name = "T" if p.loss.kind == "target" else "dO"
        cols = dim_labels(p.loss.matrix.values.shape[1])
        parts.append(matrix_table(p.loss.matrix.values, name, p.tokens, cols, opts))
    for stage in trace.stages:
        shown = stage.id in _SHOWN_BESIDE
        given = p.loss.kind not in ("target", "attend")  # dO itself: shown above, where it starts
        shown = shown or (stage.id == ids.GRAD_OUTPUT and stage.head is None and not given)
        if shown and id(stage) not in asked and stage.step is None and stage.block is None:
            parts += [Text(""), matrix_table(stage.value, stage.name, stage.rows, stage.cols, opts)]
    return parts


def hint(trace: Trace, stage: Stage, i: int, j: int) -> Msg:
    """What cell (i, j) of `stage` is made of: its formula and the cells it reads (for `?`).
    The plan says which sentence fits each stage (Stage.hint); a stage without one is said by
    its formula."""
    at: dict[str, object] = {"cell": f"{stage.symbol}[{i + 1},{j + 1}]", "i": i + 1, "j": j + 1}
    if stage.hint is None:
        return Msg("hint.formula", formula=stage.formula, **at)
    key, params = stage.hint
    if "d_v" in params:  # the concat: which head's column this cell is
        d_v = int(params["d_v"])
        at |= {"h": j // d_v + 1, "c": j % d_v + 1}
    return Msg(key, **{**params, **at})


def stage_heading(stage: Stage, number: int, total: int, lang: str) -> Text:
    title = translate(stage.title.key, lang)
    where = place(stage, lang)
    if where:
        title += f" · {where}"
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
        self.grades: list[StageGrade] = []  # the stages finished so far
        self._current: tuple[str, np.ndarray] | None = None  # the stage being asked

    def so_far(self) -> Report:
        """The score of what has been asked so far: the finished stages, and the stage being
        asked (its cells not reached yet count as not answered). For Ctrl-C."""
        if self._current is not None:
            key, answers = self._current
            self._current = None
            grade = self.grader.commit(key, answers)
            if grade is not None:
                self.grades.append(grade)
        return Report(tuple(self.grades), self.opts.precision)

    def say(self, renderable: RenderableType) -> None:
        self.console.print(renderable)

    def run(self) -> Report:
        """Ask every chosen stage; the grades of those asked (all cells missing after EOF)."""
        asked = frozenset(id(s) for k, s in self.grader.stages.items() if k in self.keys)
        self.say(problem_view(self.trace, self.opts, asked))
        self.say(Text(translate("quiz.intro", self.lang, precision=self.opts.precision)))
        self.say(Text(""))
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
            self._current = None
            grade = self.grader.commit(key, answers)
            assert grade is not None
            self.grades.append(grade)
            if not ended:
                self.say(self.stage_score(grade))
                if grade.mistake is not None:
                    self.say(Text("  " + grade.mistake.text(self.lang) + "\n", style="red"))
        return Report(tuple(self.grades), self.opts.precision)

    def ask_stage(self, key: str, stage: Stage, number: int) -> tuple[np.ndarray, bool]:
        """Every cell of one stage, row by row. Returns the answers and whether input ended."""
        self.say(stage_heading(stage, number, len(self.keys), self.lang))
        for note in stage.notes:  # as on a worksheet: none that tells a result asked for
            if keeps(note):
                self.say(Text("  • " + note.text(self.lang), style="dim"))
        answers = np.full(stage.shape, np.nan)
        self._current = (key, answers)
        rows, cols = stage.shape
        for i in range(rows):
            for j in range(cols):
                try:
                    answers[i, j] = self.ask_cell(key, stage, i, j)
                except EOFError:
                    return answers, True
                verdict = self.grader.judge(key, i, j, float(answers[i, j]))
                self.say(self.feedback(verdict, stage, i, j))
        return answers, False

    def ask_cell(self, key: str, stage: Stage, i: int, j: int) -> float:
        """One cell's answer, asked again until it is a number; NaN when skipped."""
        cell = f"{stage.symbol}[{i + 1},{j + 1}]"
        prompt = Text(translate("quiz.prompt", self.lang, cell=cell))
        while True:
            text = self.ask(prompt)
            if text.strip().lower() in SKIP_WORDS:
                return float("nan")
            if text.strip().lower() in HINT_WORDS:
                rule = hint(self.trace, stage, i, j)
                self.say(Text("  " + translate("quiz.hint", self.lang, rule=rule), style="cyan"))
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
        if verdict.verdict == MISSING:
            expected = fmt(verdict.expected, self.opts.precision)
            line = translate("quiz.skipped", self.lang, cell=verdict.ref.label, expected=expected)
            return Text(f"  {MARKS[MISSING]} {line}", style=STYLES[MISSING])
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
        carried = grade.count(CARRIED)
        return Text(
            translate(
                "quiz.stage_score_carried" if carried else "quiz.stage_score",
                self.lang,
                right=grade.counted,
                total=grade.total,
                carried=carried,
                name=grade.stage.symbol,
            )
            + "\n",
            style=STYLES[grade.status],
        )
