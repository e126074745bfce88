"""`qkvcalc check FILE.py:FUNCTION [--torch] [--problems N] [--seed S] [--time-limit S]
[--format table|json]`: grade a person's own attention function; `qkvcalc check --stages
THEIRS.(npz|json) (SOURCE | --preset NAME)`: grade their stage tensors, no code run.

Parses options, calls qkvcalc.check and prints what qkvcalc.render.check returns; nothing
else. Exit 0 right, 1 wrong or an error in their code, 2 unusable (one message on stderr,
nothing on stdout).
"""

# Annotations evaluated at import, as in qkvcalc.cli.explain (typer reads them every run).
import sys
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import typer

from qkvcalc.cli.common import EXIT_MISTAKES, console, fail, is_utf, language
from qkvcalc.cli.options import DISPLAY, HIDDEN, Group, Opt, command
from qkvcalc.errors import QkvcalcError

if TYPE_CHECKING:
    from qkvcalc.check.verdict import Verdict


class CheckFormat(str, Enum):
    table = "table"
    json = "json"


# what is checked: a function in a file, or a person's stage tensors against a problem
CHECKED = Group(
    "checked",
    (
        Opt("target", str | None, None, settings=HIDDEN, argument=True),
        Opt("stages", Path | None, None, ("--stages",), HIDDEN),
        Opt("preset", str | None, None, ("--preset",), HIDDEN),
    ),
)

# how a function is run
RUNS = Group(
    "runs",
    (
        Opt("torch", bool, False, ("--torch",)),
        Opt("problems", int, 40, ("--problems",)),
        Opt("seed", int, 0, ("--seed",)),
        Opt("time_limit", float, 10.0, ("--time-limit",)),
        Opt("fmt", CheckFormat, CheckFormat.table, ("--format", "-f"), help="format"),
    ),
)


@command("check", CHECKED, RUNS, DISPLAY)
def check(checked: SimpleNamespace, runs: SimpleNamespace, display: SimpleNamespace) -> None:
    """Grade your own attention code: the first difference, the mistake, the smallest problem."""
    lang = language(display.lang)
    try:
        name, verdict = _verdict(checked, runs)
        if runs.fmt is CheckFormat.json:
            from qkvcalc.render.check import check_json

            text = check_json(verdict, name, lang)
        else:
            text = _table(verdict, name, lang, display.no_color)
    except QkvcalcError as err:
        fail(err, lang)
    sys.stdout.write(text)
    sys.stdout.flush()
    if verdict.verdict != "right":
        raise typer.Exit(EXIT_MISTAKES)


def _verdict(checked: SimpleNamespace, runs: SimpleNamespace) -> "tuple[str, Verdict]":
    if checked.stages is not None:
        from qkvcalc.check.stages import check_stages
        from qkvcalc.input.sources import gather

        if checked.target is None and checked.preset is None:
            raise QkvcalcError("check.stages_without_problem")
        from qkvcalc.input.problem import Problem

        stdin, isatty = sys.stdin.buffer, sys.stdin.isatty()
        doc = gather(
            checked.target, checked.preset, {}, stdin, isatty, validate=Problem.from_mapping
        )
        return checked.stages.name, check_stages(checked.stages, doc)
    if checked.preset is not None:
        raise QkvcalcError("check.preset_without_stages")
    target = checked.target
    if target is None:
        raise QkvcalcError("check.no_target")
    if ":" not in target:
        raise QkvcalcError("check.target_form", target=target)
    path, _, function = target.rpartition(":")
    from qkvcalc.check.verdict import check_function

    verdict = check_function(
        Path(path),
        function,
        use_torch=runs.torch or None,
        problems=runs.problems,
        seed=runs.seed,
        time_limit=runs.time_limit,
    )
    return function, verdict


def _table(verdict: "Verdict", name: str, lang: str, no_color: bool) -> str:
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.check import check_text

    terminal = console(no_color)
    opts = RenderOptions(lang=lang, width=terminal.width, color=terminal.color_system is not None)
    if not is_utf(sys.stdout):
        opts = opts._replace(color=False)
    return check_text(verdict, name, opts)
