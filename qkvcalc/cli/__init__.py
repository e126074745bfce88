"""The command line: a typer app whose commands only parse options, call the library and print.

One module per command group: explain (qkvcalc.cli.explain), presets (qkvcalc.cli.presets),
quiz and new (qkvcalc.cli.quiz), extract (qkvcalc.cli.extract); what they share (exit codes,
--lang, the console, failing, writing a file) is qkvcalc.cli.common. No math here and no
formatting of numbers.
Errors: a QkvcalcError becomes one message on stderr and exit 2, with nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import os
import sys
from typing import Annotated

import typer

from qkvcalc import __version__
from qkvcalc.cli import explain as _explain
from qkvcalc.cli import extract as _extract
from qkvcalc.cli import presets as _presets
from qkvcalc.cli import quiz as _quiz
from qkvcalc.cli.common import EXIT_INTERRUPTED, WideHelpGroup, help_text
from qkvcalc.i18n import resolve_lang, translate

app = typer.Typer(
    cls=WideHelpGroup,  # help wrapped by display width: a Hangul syllable is two columns wide
    name="qkvcalc",
    help=help_text("help.app"),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"qkvcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help=help_text("help.version")),
    ] = False,
) -> None:
    """qkvcalc: scaled dot-product attention, stage by stage."""


app.command(help=help_text("help.explain"))(_explain.explain)
app.add_typer(_presets.presets_app, name="presets")
_quiz.register(app)  # quiz and new, after explain: the order --help lists them in
app.command(help=help_text("help.extract"))(_extract.extract)


def main() -> None:
    """The console script: typer's app, plus quiet endings for Ctrl-C and a closed pipe."""
    try:
        app()
    except KeyboardInterrupt:
        # typer ends a running command on Ctrl-C itself (exit 130, no message); this is for a
        # Ctrl-C while typer is still building the commands, before any of them runs
        typer.echo(translate("cli.interrupted", resolve_lang()), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # the reader went away (qkvcalc … | head -1): stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
