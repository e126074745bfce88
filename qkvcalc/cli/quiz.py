"""The commands `qkvcalc quiz` and `qkvcalc new`: parse options, dispatch, print.

The grading is qkvcalc.quiz.grade's, the questions qkvcalc.quiz.session's and .entry's, the
report qkvcalc.quiz.report's; what the commands share with `explain` is in qkvcalc.cli.common.

Exit codes: 0 all right (or saved), 1 a graded quiz found mistakes, 2 bad input or usage,
130 interrupted.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import sys
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import typer

from qkvcalc.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_MISTAKES,
    check_writable,
    console,
    fail,
    language,
    write_output,
)
from qkvcalc.cli.options import DISPLAY, HIDDEN, SOURCE, Group, Opt, command
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate

if TYPE_CHECKING:
    from rich.console import Console

    from qkvcalc.quiz.answers import AnswerSheet
    from qkvcalc.trace import Trace


class QuizFormat(str, Enum):
    table = "table"
    json = "json"


MAX_SIZE_TEXT = 20  # characters of --size ("3,2", "8 x 8"): longer is refused unread
MAX_HEAD_DIGITS = 4  # a head in --stages (2/scores) is 1 to 1024
PRECISION_DEFAULT = 2  # --precision: the decimals an answer must agree to


def _stage_names(stages: str) -> list[str]:
    """--stages q,k,2/scores as names. A head that is not a plain number of a few ASCII digits
    (`²/scores`, a 5,000-digit head) is refused here, before anything turns it into an int."""
    names = [s for s in stages.split(",") if s.strip()]
    for name in names:
        head, slash, _ = name.strip().rpartition("/")
        if slash and not (head.isascii() and head.isdigit() and len(head) <= MAX_HEAD_DIGITS):
            shown = name.strip() if len(name.strip()) <= 40 else name.strip()[:39] + "…"
            raise QkvcalcError("quiz.stage_head", name=shown)
    return names


def _quiet_numpy() -> Any:
    """Grading follows a student's numbers wherever they go: 1e308 overflows a product, -inf
    minus -inf is NaN. The grade says what is wrong; numpy's RuntimeWarnings would only add
    noise on stderr."""
    import numpy as np

    return np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")


def _interrupted(console: "Console", lang: str) -> typer.Exit:
    console.print()
    typer.echo(translate("cli.interrupted", lang), err=True)
    return typer.Exit(EXIT_INTERRUPTED)


def _load(
    given: SimpleNamespace, answers: str | None, grads: SimpleNamespace
) -> "tuple[Trace, dict[str, Any] | None]":
    """The problem's Trace (with --backward, its gradients too), and for --random the seed and
    size to show."""
    from dataclasses import replace

    from qkvcalc.input.problem import Problem

    source, preset, seed, size = given.source, given.preset, given.seed, given.size
    # where --backward starts, typed on the command line (else the problem's own key)
    loss = {k: getattr(grads, k) for k in ("target", "grad_output", "attend")}

    def problem(doc: dict[str, Any]) -> Problem:
        found = Problem.from_mapping(doc)
        return replace(found, backward=True) if grads.backward else found

    from qkvcalc.input.sources import gather
    from qkvcalc.quiz.problems import MAX_SIZE, new_seed, parse_size, random_problem
    from qkvcalc.run.engine import run

    if given.random:
        named = [name for name, on in (("SOURCE", source), ("--preset", preset)) if on]
        if named:
            raise QkvcalcError("quiz.random_with_source", given=", ".join(named))
        size_text = size or "3,2"
        if len(size_text) > MAX_SIZE_TEXT:  # 5,000 digits: more than int() will read
            raise QkvcalcError("quiz.size", text=size_text[:MAX_SIZE_TEXT] + "…", limit=MAX_SIZE)
        n, d = parse_size(size_text)
        seed = new_seed() if seed is None else seed
        typed = {k: v for k, v in loss.items() if v is not None}  # read as with --preset
        doc = random_problem(seed, n, d) | (
            gather(None, None, typed, sys.stdin.buffer, True) if typed else {}
        )
        return run(problem(doc)), {"seed": seed, "size": f"{n},{d}"}
    if seed is not None or size is not None:
        raise QkvcalcError("quiz.seed_without_random")
    if source is None and preset is None:
        raise QkvcalcError("quiz.no_problem")
    if source == "-" and answers == "-":
        raise QkvcalcError("quiz.stdin_twice")
    # stdin_is_terminal=True: standard input is read for the problem only when SOURCE is "-"
    # a large input whose lengths alone refuse it is refused before its numbers are read
    doc = gather(source, preset, loss, sys.stdin.buffer, True, validate=Problem.from_mapping)
    return run(problem(doc)), None


def _again(
    random_info: dict[str, Any],
    asked: SimpleNamespace,
    grads: SimpleNamespace,
    display: SimpleNamespace,
) -> str:
    """The command that asks this random quiz again: its seed and size, and every option that
    shaped its questions (the backward pass and where it starts, the stages, the precision, the
    language), quoted for a shell."""
    import shlex

    words = ["qkvcalc", "quiz", "--random", "--seed", str(random_info["seed"])]
    words += ["--size", random_info["size"]]
    if grads.backward:
        words.append("--backward")
    for name in ("target", "grad_output", "attend"):
        if getattr(grads, name) is not None:
            words += [f"--{name.replace('_', '-')}", getattr(grads, name)]
    if asked.stages is not None:
        words += ["--stages", asked.stages]
    if asked.precision != PRECISION_DEFAULT:
        words += ["--precision", str(asked.precision)]
    if display.lang is not None:
        words += ["--lang", display.lang.value]
    return shlex.join(words)


def _read_sheet(answers: str, trace: "Trace", precision: int) -> "AnswerSheet":
    from qkvcalc.input.parse import load_json, read_limited
    from qkvcalc.input.sources import read_file
    from qkvcalc.quiz.answers import read_answer_sheet

    origin = "stdin" if answers == "-" else answers
    try:
        data = read_limited(sys.stdin.buffer) if answers == "-" else read_file(answers)
        return read_answer_sheet(load_json(data), trace, precision)
    except QkvcalcError as err:
        raise err.within("quiz.in_sheet", origin=origin) from None


# What the quiz asks and how it reports (with the problem's source, shared with explain).
ASKED = Group(
    "asked",
    (
        Opt("stages", str | None, settings=HIDDEN),
        Opt("answers", str | None, settings=HIDDEN),
        Opt("format", QuizFormat, QuizFormat.table, ("--format", "-f")),
        Opt("precision", int, PRECISION_DEFAULT, settings={"min": 0, "max": 6}),
        Opt("template", bool, False, ("--template",)),
    ),
)


# The backward pass's stages too, and where its gradient starts (as explain's options).
GRADS = Group(
    "grads",
    (
        Opt("backward", bool, False, ("--backward",)),
        Opt("target", str | None, settings=HIDDEN, help="help.explain.target"),
        Opt("grad_output", str | None, settings=HIDDEN, help="help.explain.grad_output"),
        Opt("attend", str | None, settings=HIDDEN, help="help.explain.attend"),
    ),
)


@command("quiz", SOURCE, ASKED, GRADS, DISPLAY)
def quiz(
    source: SimpleNamespace,
    asked: SimpleNamespace,
    grads: SimpleNamespace,
    display: SimpleNamespace,
) -> None:
    """Work out attention by hand: each cell is checked, a mistake is traced to where it began."""
    from qkvcalc.quiz.grade import grade_sheet, select_keys

    lang_code, no_color = language(display.lang), display.no_color
    stages, answers, precision = asked.stages, asked.answers, asked.precision
    template, format = asked.template, asked.format
    try:
        if template and answers is not None:
            raise QkvcalcError("quiz.template_with_answers")
        if format is QuizFormat.json and answers is None:
            raise QkvcalcError("quiz.json_needs_answers")
        trace, random_info = _load(source, answers, grads)
        names = _stage_names(stages) if stages is not None else None
        keys = select_keys(trace, names)
        sheet = _read_sheet(answers, trace, precision) if answers is not None else None
    except QkvcalcError as err:
        fail(err, lang_code)

    if template:
        from qkvcalc.quiz.answers import empty_sheet

        sys.stdout.write(empty_sheet(trace, keys))
        raise typer.Exit(0)

    from rich.text import Text

    from qkvcalc.quiz.report import render_report, report_json

    screen = console(no_color)
    if sheet is not None:
        matrices = sheet.matrices
        if names is not None:  # --stages names exactly what is graded
            matrices = {k: v for k, v in matrices.items() if k in keys}
        with _quiet_numpy():
            report = sheet.apply(grade_sheet(trace, matrices, keys, precision))
        if format is QuizFormat.json:
            sys.stdout.write(report_json(report, trace, lang_code, sheet))
        else:
            screen.print(render_report(report, lang_code, sheet))
        raise typer.Exit(0 if report.all_right else EXIT_MISTAKES)

    from qkvcalc.quiz.session import Session, ask_line
    from qkvcalc.render import RenderOptions

    opts = RenderOptions(
        lang=lang_code,
        precision=precision,
        width=screen.width,
        color=screen.color_system is not None,
    )
    if random_info is not None:
        again = _again(random_info, asked, grads, display)
        said = translate("quiz.random_seed", lang_code, seed=random_info["seed"], command=again)
        screen.print(Text(said, style="dim"))
    # The problem came in on standard input: the answers come from the terminal, as --step's
    # keys do (and with no terminal there is nobody to ask).
    terminal = None
    if source.source == "-":
        try:
            terminal = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError:
            fail(QkvcalcError("quiz.no_terminal"), lang_code)
    session = Session(trace, keys, opts, screen, ask_line(screen, terminal))
    try:
        with _quiet_numpy():
            report = session.run()
    except QkvcalcError as err:  # an answer no one typed: a line without end, invalid bytes
        fail(err, lang_code)
    except KeyboardInterrupt:
        so_far = session.so_far()  # the score of what was answered, before exit 130
        if so_far.stages:
            screen.print()
            screen.print(Text(translate("quiz.interrupted_score", lang_code), style="bold"))
            screen.print(render_report(so_far, lang_code))
        raise _interrupted(screen, lang_code) from None
    finally:
        if terminal is not None:
            terminal.close()
    screen.print(render_report(report, lang_code))
    raise typer.Exit(0 if report.all_right else EXIT_MISTAKES)


# Where `new` saves the problem (stdout when no file is named).
SAVED = Group("saved", (Opt("file", Path | None, None, settings=HIDDEN, argument=True),))


@command("new", SAVED, DISPLAY)
def new(saved: SimpleNamespace, display: SimpleNamespace) -> None:
    """Type a problem in step by step, each row checked as it comes; save it as JSON."""
    from rich.text import Text

    from qkvcalc.input.problem import Problem
    from qkvcalc.quiz.new import Entry, problem_json
    from qkvcalc.quiz.session import ask_line

    lang_code, no_color = language(display.lang), display.no_color
    file: Path | None = saved.file
    talk = console(no_color, stderr=True)  # questions on stderr: stdout gets only the JSON
    entry = Entry(talk, ask_line(talk), lang_code)
    try:
        if file is not None:  # before the questions: typed rows must not be lost at the end
            check_writable(file)
    except QkvcalcError as err:
        fail(err, lang_code)
    try:
        if (
            file is not None
            and file.exists()
            and not entry.yes("new.overwrite", default=False, path=str(file))
        ):
            talk.print(Text(translate("new.not_saved", lang_code)))
            return
        doc = entry.run()
    except KeyboardInterrupt:
        raise _interrupted(talk, lang_code) from None
    except EOFError:
        fail(QkvcalcError("new.ended"), lang_code)
    except QkvcalcError as err:  # a line without end (stdin from /dev/zero), invalid bytes
        fail(err, lang_code)
    try:
        problem = Problem.from_mapping(doc)
    except QkvcalcError as err:  # the rows were checked one by one; this is a last guard
        fail(err, lang_code)
    text = problem_json(doc)
    if file is not None:
        try:
            write_output(text, file)
        except QkvcalcError as err:
            fail(err, lang_code)
        talk.print(
            Text(translate("new.saved", lang_code, path=str(file)), style="green"), soft_wrap=True
        )
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if file is None and not sys.stdout.isatty():
        return  # the JSON went into a pipe or a file: an explanation would spoil it
    try:
        explain_now = entry.yes("new.explain_now", default=True)
    except (KeyboardInterrupt, EOFError, QkvcalcError):
        explain_now = False
    if explain_now:
        from qkvcalc.render import RenderOptions
        from qkvcalc.render.terminal import render_trace
        from qkvcalc.run.engine import run

        out = console(no_color)
        opts = RenderOptions(lang=lang_code, width=out.width, color=out.color_system is not None)
        out.print(render_trace(run(problem), opts))
    elif file is not None:
        later = translate("new.explain_later", lang_code, path=str(file))
        talk.print(Text(later, style="dim"), soft_wrap=True)
