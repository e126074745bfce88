"""The commands `qkvcalc quiz` and `qkvcalc new`: parse options, dispatch, print.

The grading is qkvcalc.quiz.grade's, the questions qkvcalc.quiz.session's and .entry's, the
report qkvcalc.quiz.report's. qkvcalc/cli.py calls `register(app)` at its end; helpers of
cli.py are imported inside the commands, so importing this module first works too.

Exit codes: 0 all right (or saved), 1 a graded quiz found mistakes, 2 bad input or usage,
130 interrupted.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import resolve_lang, translate

if TYPE_CHECKING:
    from rich.console import Console

    from qkvcalc.trace import Trace

EXIT_MISTAKES = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class QuizFormat(str, Enum):
    table = "table"
    json = "json"


class QuizLang(str, Enum):
    en = "en"
    ko = "ko"


def _help(key: str) -> str:
    """The help text under `key` in the environment's language, as qkvcalc.cli._help (kept
    here so that this module can be imported before qkvcalc.cli)."""
    return translate(key, resolve_lang())


LangOption = Annotated[
    QuizLang | None,
    typer.Option(help=_help("help.lang"), show_default=False),
]
NoColorOption = Annotated[bool, typer.Option("--no-color", help=_help("help.no_color"))]


def _console(no_color: bool, stderr: bool = False) -> Console:
    from rich.console import Console

    return Console(
        stderr=stderr,
        no_color=no_color or None,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )


def _interrupted(console: Console, lang: str) -> typer.Exit:
    console.print()
    typer.echo(translate("cli.interrupted", lang), err=True)
    return typer.Exit(EXIT_INTERRUPTED)


def _load(
    source: str | None,
    preset: str | None,
    random: bool,
    seed: int | None,
    size: str | None,
    answers: str | None,
) -> tuple[Trace, dict[str, Any] | None]:
    """The problem's Trace, and for --random the seed and size to show."""
    from qkvcalc.engine import run
    from qkvcalc.problem import Problem
    from qkvcalc.quiz.problems import new_seed, parse_size, random_problem
    from qkvcalc.sources import gather

    if random:
        given = [name for name, on in (("SOURCE", source), ("--preset", preset)) if on]
        if given:
            raise QkvcalcError("quiz.random_with_source", given=", ".join(given))
        size_text = size or "3,2"
        n, d = parse_size(size_text)
        seed = new_seed() if seed is None else seed
        doc = random_problem(seed, n, d)
        return run(Problem.from_mapping(doc)), {"seed": seed, "size": f"{n},{d}"}
    if seed is not None or size is not None:
        raise QkvcalcError("quiz.seed_without_random")
    if source is None and preset is None:
        raise QkvcalcError("quiz.no_problem")
    if source == "-" and answers == "-":
        raise QkvcalcError("quiz.stdin_twice")
    # stdin_is_terminal=True: standard input is read for the problem only when SOURCE is "-"
    doc = gather(source, preset, {}, sys.stdin.buffer, True)
    return run(Problem.from_mapping(doc)), None


def _read_sheet(answers: str, trace: Trace) -> dict[str, Any]:
    from qkvcalc.parse import load_json, read_limited
    from qkvcalc.quiz.answers import read_sheet
    from qkvcalc.quiz.grade import stage_keys
    from qkvcalc.sources import read_file

    origin = "stdin" if answers == "-" else answers
    try:
        data = read_limited(sys.stdin.buffer) if answers == "-" else read_file(answers)
        return read_sheet(load_json(data), stage_keys(trace))
    except QkvcalcError as err:
        raise err.within("quiz.in_sheet", origin=origin) from None


def quiz(
    source: Annotated[
        str | None,
        typer.Argument(help=_help("help.quiz.source"), show_default=False),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(help=_help("help.quiz.preset"), show_default=False),
    ] = None,
    random: Annotated[bool, typer.Option("--random", help=_help("help.quiz.random"))] = False,
    seed: Annotated[
        int | None,
        typer.Option(help=_help("help.quiz.seed"), show_default=False),
    ] = None,
    size: Annotated[
        str | None,
        typer.Option(help=_help("help.quiz.size"), show_default=False),
    ] = None,
    stages: Annotated[
        str | None,
        typer.Option(
            help=_help("help.quiz.stages"),
            show_default=False,
        ),
    ] = None,
    answers: Annotated[
        str | None,
        typer.Option(
            help=_help("help.quiz.answers"),
            show_default=False,
        ),
    ] = None,
    format: Annotated[
        QuizFormat,
        typer.Option("--format", "-f", help=_help("help.quiz.format")),
    ] = QuizFormat.table,
    precision: Annotated[
        int,
        typer.Option(help=_help("help.quiz.precision"), min=0, max=6),
    ] = 2,
    lang: LangOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Work out attention by hand: each cell is checked, a mistake is traced to where it began."""
    from qkvcalc.cli import fail
    from qkvcalc.quiz.grade import grade_sheet, select_keys

    language = resolve_lang(lang.value if lang else None)
    try:
        if format is QuizFormat.json and answers is None:
            raise QkvcalcError("quiz.json_needs_answers")
        trace, random_info = _load(source, preset, random, seed, size, answers)
        names = [s for s in stages.split(",") if s.strip()] if stages is not None else None
        keys = select_keys(trace, names)
        sheet = _read_sheet(answers, trace) if answers is not None else None
    except QkvcalcError as err:
        fail(err, language)

    from rich.text import Text

    from qkvcalc.quiz.report import render_report, report_json

    console = _console(no_color)
    if sheet is not None:
        if names is not None:  # --stages names exactly what is graded
            sheet = {k: v for k, v in sheet.items() if k in keys}
        report = grade_sheet(trace, sheet, keys, precision)
        if format is QuizFormat.json:
            sys.stdout.write(report_json(report, trace, language))
        else:
            console.print(render_report(report, language))
        raise typer.Exit(0 if report.all_right else EXIT_MISTAKES)

    from qkvcalc.quiz.session import Session, ask_line
    from qkvcalc.render import RenderOptions

    opts = RenderOptions(
        lang=language,
        precision=precision,
        width=console.width,
        color=console.color_system is not None,
    )
    if random_info is not None:
        console.print(Text(translate("quiz.random_seed", language, **random_info), style="dim"))
    # The problem came in on standard input: the answers come from the terminal, as --step's
    # keys do (and with no terminal there is nobody to ask).
    terminal = None
    if source == "-":
        try:
            terminal = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 (closed below)
        except OSError:
            fail(QkvcalcError("quiz.no_terminal"), language)
    try:
        report = Session(trace, keys, opts, console, ask_line(console, terminal)).run()
    except KeyboardInterrupt:
        raise _interrupted(console, language) from None
    finally:
        if terminal is not None:
            terminal.close()
    console.print(render_report(report, language))
    raise typer.Exit(0 if report.all_right else EXIT_MISTAKES)


def new(
    file: Annotated[
        Path | None,
        typer.Argument(
            help=_help("help.new.file"),
            show_default=False,
        ),
    ] = None,
    lang: LangOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Type a problem in step by step, each row checked as it comes; save it as JSON."""
    from rich.text import Text

    from qkvcalc.cli import fail, write_output
    from qkvcalc.problem import Problem
    from qkvcalc.quiz.entry import Entry, problem_json
    from qkvcalc.quiz.session import ask_line

    language = resolve_lang(lang.value if lang else None)
    talk = _console(no_color, stderr=True)  # questions on stderr: stdout gets only the JSON
    entry = Entry(talk, ask_line(talk), language)
    try:
        if (
            file is not None
            and file.exists()
            and not entry.yes("new.overwrite", default=False, path=str(file))
        ):
            talk.print(Text(translate("new.not_saved", language)))
            return
        doc = entry.run()
    except KeyboardInterrupt:
        raise _interrupted(talk, language) from None
    except EOFError:
        fail(QkvcalcError("new.ended"), language)
    try:
        problem = Problem.from_mapping(doc)
    except QkvcalcError as err:  # the rows were checked one by one; this is a last guard
        fail(err, language)
    text = problem_json(doc)
    if file is not None:
        try:
            write_output(text, file)
        except OSError as err:
            fail(QkvcalcError("new.cannot_write", path=str(file), reason=err.strerror), language)
        talk.print(
            Text(translate("new.saved", language, path=str(file)), style="green"), soft_wrap=True
        )
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if file is None and not sys.stdout.isatty():
        return  # the JSON went into a pipe or a file: an explanation would spoil it
    try:
        explain_now = entry.yes("new.explain_now", default=True)
    except (KeyboardInterrupt, EOFError):
        explain_now = False
    if explain_now:
        from qkvcalc.engine import run
        from qkvcalc.render import RenderOptions
        from qkvcalc.render.terminal import render_trace

        out = _console(no_color)
        opts = RenderOptions(lang=language, width=out.width, color=out.color_system is not None)
        out.print(render_trace(run(problem), opts))
    elif file is not None:
        later = translate("new.explain_later", language, path=str(file))
        talk.print(Text(later, style="dim"), soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add `quiz` and `new` to qkvcalc's typer app."""
    app.command("quiz", help=_help("help.quiz"))(quiz)
    app.command("new", help=_help("help.new"))(new)
