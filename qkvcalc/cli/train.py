"""`qkvcalc train`: gradient descent on a problem's weights, from its `attend` or `target`.

Parses options, calls the library (sources → Problem → qkvcalc.run.train → qkvcalc.render.train)
and prints; nothing else. Errors: a QkvcalcError becomes one message on stderr and exit 2,
nothing on stdout. Ctrl-C stops the descent: what was learned so far is printed (and written to
--output), then "interrupted" on stderr and exit 130.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run.
import sys
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import typer

from qkvcalc.cli.common import (
    EXIT_INTERRUPTED,
    check_writable,
    console,
    fail,
    language,
    say,
    write_output,
)
from qkvcalc.cli.options import DISPLAY, HIDDEN, Group, Opt, command
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.input.limits import MAX_BYTES

if TYPE_CHECKING:
    from qkvcalc.run.train import Training


class TrainFormat(str, Enum):
    table = "table"
    txt = "txt"
    json = "json"
    svg = "svg"
    html = "html"


TRAIN_SOURCE = Group(
    "source",
    (
        Opt("source", str | None, None, settings=HIDDEN, argument=True),
        Opt("preset", str | None, settings=HIDDEN),
        # where the loss is (each replaces the document's key of the same name)
        Opt("attend", str | None, settings=HIDDEN),
        Opt("target", str | None, settings=HIDDEN),
    ),
)
DESCENT = Group(
    "descent",
    (
        # taken as text and checked by the library: a bad value is one line, as every error
        Opt("steps", str | None, settings={"metavar": "N", **HIDDEN}),
        Opt("lr", str | None, settings={"metavar": "η", **HIDDEN}),
        Opt("freeze", str | None, settings={"metavar": "wv,…", **HIDDEN}),
    ),
)
SHOW = Group(
    "show",
    (
        Opt("format", TrainFormat | None, None, ("--format", "-f"), HIDDEN),
        Opt("output", Path | None, None, ("--output", "-o"), HIDDEN),
        Opt("step", bool, False, ("--step",)),
    ),
)


@command("train", TRAIN_SOURCE, DESCENT, SHOW, DISPLAY)
def train(
    source: SimpleNamespace,
    descent: SimpleNamespace,
    show: SimpleNamespace,
    display: SimpleNamespace,
) -> None:
    """Train the weights by gradient descent and show the losses and the weights."""
    lang = language(display.lang)
    fmt = show.format.value if show.format is not None else "table"
    try:
        from qkvcalc.input.problem import Problem
        from qkvcalc.input.sources import gather
        from qkvcalc.run.train import Descent, parse_lr, parse_steps

        if show.step and (fmt not in ("table", "txt") or show.output is not None):
            shown = fmt if fmt not in ("table", "txt") else "table"
            raise QkvcalcError("train.step_format", format=shown)
        if show.output is not None:  # before the training: a folder missing is said at once
            _check_output_is_json(show.output)
            check_writable(show.output)
        typed = {k: v for k, v in (("attend", source.attend), ("target", source.target)) if v}
        doc = gather(source.source, source.preset, typed, sys.stdin.buffer, sys.stdin.isatty(),
                     MAX_BYTES)  # fmt: skip
        problem = Problem.from_mapping(doc)
        run = Descent(problem, parse_steps(descent.steps), parse_lr(descent.lr), descent.freeze)
    except QkvcalcError as err:
        fail(err, lang)
    interrupted = False
    try:
        run.run()
    except KeyboardInterrupt:
        interrupted = True
    except QkvcalcError as err:
        fail(err, lang)
    if not run.snapshots:  # stopped before the first run finished: nothing learned to show
        say(translate("cli.interrupted", lang))
        raise typer.Exit(EXIT_INTERRUPTED)
    training = run.result(interrupted)
    _show(training, fmt, show, display, lang)
    if interrupted:
        say(translate("cli.interrupted", lang))
        raise typer.Exit(EXIT_INTERRUPTED)


def _check_output_is_json(path: Path) -> None:
    """--output gets the trained problem, as JSON: a name whose extension says another format
    (page.html, curve.svg) is refused before training rather than filled with JSON."""
    from qkvcalc.render import EXTENSIONS

    ext = path.suffix.lower()
    shown = EXTENSIONS.get(ext, "json")  # no extension, or one no format has: left as named
    if shown == "json":
        return
    if shown in {f.value for f in TrainFormat}:  # one train prints: say how to keep it
        raise QkvcalcError("train.output_not_json_redirect", path=str(path), ext=ext, format=shown)
    raise QkvcalcError("train.output_not_json", path=str(path), ext=ext)


def _show(
    training: "Training", fmt: str, show: SimpleNamespace, display: SimpleNamespace, lang: str
) -> None:
    """Write --output, then print the training (or step through it): a file that cannot be
    written (/dev/full) is one message with nothing printed before it."""
    from qkvcalc.render import FOLLOWS_TERMINAL, PAGE_WIDTH, RenderOptions
    from qkvcalc.render.train import render_train, render_train_json, render_trained

    width, color = PAGE_WIDTH, False  # txt is a document: 100 columns, as `explain` writes it
    if fmt in FOLLOWS_TERMINAL or show.step:
        terminal = console(display.no_color)
        width, color = terminal.width, terminal.color_system is not None and fmt == "table"
    opts = RenderOptions(lang=lang, width=width, color=color)
    if show.output is not None:
        page = opts._replace(width=PAGE_WIDTH, color=False)
        writer = render_train_json if fmt == "json" else render_trained
        try:
            write_output(writer(training, page), show.output)
        except QkvcalcError as err:
            fail(err, lang)
    if show.step and not training.interrupted:
        from qkvcalc.interactive.train_step import step_training

        try:
            step_training(training, opts, no_color=display.no_color)
        except QkvcalcError as err:
            fail(err, lang)
    elif show.output is None or fmt != "json":  # --format json --output F: the file alone
        sys.stdout.write(render_train(training, fmt, opts))
        sys.stdout.flush()
