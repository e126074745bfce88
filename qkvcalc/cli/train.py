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
    from qkvcalc.run.train import Descent, Training


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
        Opt("compare_scale", bool, False, ("--compare-scale",)),
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
        from qkvcalc.input.dataset import is_dataset
        from qkvcalc.input.sources import gather
        from qkvcalc.run.train import descents, one_problem

        if show.step and (fmt not in ("table", "txt") or show.output is not None):
            shown = fmt if fmt not in ("table", "txt") else "table"
            raise QkvcalcError("train.step_format", format=shown)
        if show.output is not None:  # before the training: a folder missing is said at once
            _output_format(show.output)
            check_writable(show.output)
        typed = {k: v for k, v in (("attend", source.attend), ("target", source.target)) if v}
        doc = gather(source.source, source.preset, typed, sys.stdin.buffer, sys.stdin.isatty(),
                     MAX_BYTES, validate=one_problem)  # fmt: skip
        if typed and is_dataset(doc):  # each example's own loss would win: say so
            raise QkvcalcError("train.dataset_loss_option", option="--" + next(iter(typed)))
        runs = descents(doc, descent.steps, descent.lr, descent.freeze, descent.compare_scale)
    except QkvcalcError as err:
        fail(err, lang)
    interrupted = False
    try:
        _descend(runs, display)
    except KeyboardInterrupt:
        interrupted = True
    except QkvcalcError as err:
        fail(err, lang)
    run = runs[0]
    if not run.snapshots:  # stopped before the first run finished: nothing learned to show
        say(translate("cli.interrupted", lang))
        raise typer.Exit(EXIT_INTERRUPTED)
    unscaled = runs[1].result(interrupted) if len(runs) > 1 and runs[1].snapshots else None
    training = run.result(interrupted, unscaled)
    _show(training, fmt, show, display, lang)
    if interrupted:
        say(translate("cli.interrupted", lang))
        raise typer.Exit(EXIT_INTERRUPTED)


LONG_RUN = 200  # updates × examples past which a terminal shows the descent's progress


def _descend(runs: list["Descent"], display: SimpleNamespace) -> None:
    """Every descent, the scaled one last (a Ctrl-C then keeps the scaled one's updates). On a
    terminal a long run shows its progress on stderr (rich.progress, gone when it ends); piped,
    nothing is written but the result."""
    order = runs[1:] + runs[:1]
    work = sum(r.steps * len(r.starts) for r in runs)
    if work < LONG_RUN or not sys.stderr.isatty():
        for r in order:
            r.run()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    terminal = console(display.no_color, stderr=True)
    columns = (*Progress.get_default_columns()[:1], BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())  # fmt: skip
    lang = language(display.lang)
    with Progress(*columns, console=terminal, transient=True) as progress:
        for r in order:
            label = "train.progress_unscaled" if r is not runs[0] else "train.progress"
            task = progress.add_task(translate(label, lang), total=r.steps)
            for snapshot in r.updates():
                progress.update(task, completed=snapshot.step)


def _output_format(path: Path) -> str:
    """What --output writes, by the file's extension: the trained problem as JSON (.json, or a
    name without a format's extension), or the rendering of a format train prints (.svg: the
    loss curve, .html: the page, .txt: the text); any other format's extension is refused
    before training rather than filled with JSON."""
    from qkvcalc.render import EXTENSIONS

    ext = path.suffix.lower()
    shown = EXTENSIONS.get(ext, "json")  # no extension, or one no format has: left as named
    if shown == "json" or shown in WRITTEN:
        return shown
    raise QkvcalcError("train.output_not_json", path=str(path), ext=ext)


WRITTEN = ("svg", "html", "txt")  # the formats --output writes by the file's extension


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
        by_name = _output_format(show.output)
        if by_name in WRITTEN:  # .svg, .html, .txt: that format's rendering
            text = render_train(training, by_name, page)
        else:
            writer = render_train_json if fmt == "json" else render_trained
            text = writer(training, page)
        try:
            write_output(text, show.output)
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
