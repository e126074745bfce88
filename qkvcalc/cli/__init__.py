"""The command line: a typer app whose commands only parse options, call the library and print.

One module per command group: explain (qkvcalc.cli.explain), presets (qkvcalc.cli.presets),
quiz and new (qkvcalc.cli.quiz), extract (qkvcalc.cli.extract), heads (qkvcalc.cli.heads),
train (qkvcalc.cli.train), check (qkvcalc.cli.check), studio (qkvcalc.cli.studio);
what they share (exit codes, --lang, the console, failing, writing a file) is
qkvcalc.cli.common. No math here and no formatting of numbers.
Errors: a QkvcalcError becomes one message on stderr and exit 2, with nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import importlib
import os
import re
import sys
from typing import Annotated

import typer

from qkvcalc import __version__
from qkvcalc.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    WideHelpGroup,
    call_language,
    help_lang,
    help_text,
    is_utf,
    say,
    silence,
    usable_environ,
)
from qkvcalc.i18n import resolve_lang, translate


def _version(value: bool) -> None:
    if value:
        typer.echo(f"qkvcalc {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help=help_text("help.version")),
    ] = False,
) -> None:
    """qkvcalc: scaled dot-product attention, stage by stage."""


# Each command, by name: the module and the name in it of its function (of its typer app, for
# a group of commands), in the order --help lists them. A run of one command loads that
# command's module alone: the others cost milliseconds at start.
COMMANDS: dict[str, tuple[str, str]] = {
    "explain": ("qkvcalc.cli.explain", "explain"),
    "presets": ("qkvcalc.cli.presets", "presets_app"),
    "quiz": ("qkvcalc.cli.quiz", "quiz"),
    "new": ("qkvcalc.cli.quiz", "new"),
    "extract": ("qkvcalc.cli.extract", "extract"),
    "heads": ("qkvcalc.cli.heads", "heads"),
    "train": ("qkvcalc.cli.train", "train"),
    "check": ("qkvcalc.cli.check", "check"),
    "studio": ("qkvcalc.cli.studio", "studio"),
}


def make_app(command: str | None = None) -> typer.Typer:
    """qkvcalc's typer app: every command, or only `command` (one of COMMANDS) for a run of it."""
    app = typer.Typer(
        cls=WideHelpGroup,  # help wrapped by display width: a Hangul syllable is two columns wide
        name="qkvcalc",
        help=help_text("help.app"),
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    names = [command] if command is not None and command in COMMANDS else list(COMMANDS)
    for name in names:
        module, attribute = COMMANDS[name]
        found = getattr(importlib.import_module(module), attribute)
        if isinstance(found, typer.Typer):
            app.add_typer(found, name=name)
        else:
            app.command(name, help=help_text(f"help.{name}"))(found)
    return app


def __getattr__(name: str) -> typer.Typer:
    # `qkvcalc.cli.app`: the whole app, made the first time it is asked for (tests, docs)
    if name == "app":
        globals()["app"] = whole = make_app()
        return whole
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The console script: typer's app, plus the endings typer leaves to its caller: Ctrl-C, a
    closed pipe, a standard stream that cannot be written, and usage messages cut short."""
    sys.exit(_run())


# A usage message echoes the value it refuses: a 5,000-digit --heads is shown cut short.
MAX_ECHO = 40
_LONG_WORD = re.compile(rf"\S{{{2 * MAX_ECHO},}}")


def _run() -> int:
    from typer import Abort

    usable = usable_environ()  # rich and click read COLUMNS and LINES: 0 and ² are ignored
    for name in ("COLUMNS", "LINES"):
        if name not in usable:
            os.environ.pop(name, None)
    if not is_utf(sys.stdout):  # PYTHONIOENCODING=ascii, LC_ALL=C without UTF-8 mode
        sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    args = sys.argv[1:]
    try:
        code = make_app(args[0] if args else None)(args, standalone_mode=False)
    except KeyboardInterrupt:
        # typer ends a running command on Ctrl-C itself (exit 130, no message); this is for a
        # Ctrl-C while typer is still building the commands, before any of them runs
        say(translate("cli.interrupted", resolve_lang()))
        return EXIT_INTERRUPTED
    except Abort:  # what click's standalone mode does with it
        say("Aborted!")
        return 1
    except BrokenPipeError:
        # the reader went away (qkvcalc … | head -1): stop quietly, as cat does
        silence(sys.stdout)
        return 0
    except SystemExit as ended:
        # the same met inside a command (a JSON document streamed stage by stage, a preset's
        # text): typer turns it into exit 1, where the reader going away is no error
        if isinstance(ended.__context__, BrokenPipeError) and ended.code == 1:
            silence(sys.stdout)
            return 0
        raise
    except OSError as err:  # standard output on a full disk, or closed
        return _stream_failed(err)
    except Exception as err:
        # A usage error: the ClickException of the click typer bundles (private to typer, so
        # known by what it does): its one paragraph, a value it echoes cut short.
        message, show = getattr(err, "message", None), getattr(err, "show", None)
        if not (isinstance(message, str) and callable(show)):
            raise
        err.message = _LONG_WORD.sub(lambda m: m.group()[:MAX_ECHO] + "…", message)  # type: ignore[attr-defined]
        try:
            with call_language(args):
                _show_usage_error(err)
        except (OSError, ValueError):
            silence(sys.stderr)
        return int(getattr(err, "exit_code", EXIT_BAD_INPUT))
    try:  # flushed here, where a failure is reported, not at exit, where it is a traceback
        sys.stdout.flush()
    except BrokenPipeError:
        silence(sys.stdout)
        return 0
    except (OSError, ValueError) as err:
        return _stream_failed(err)
    return code if isinstance(code, int) else 0


def _show_usage_error(err: Exception) -> None:
    """A usage error as click shows it, in the language of the run (qkvcalc.cli.usage)."""
    from qkvcalc.cli import usage

    usage.show(err, help_lang())


def _stream_failed(err: Exception) -> int:
    from qkvcalc.render.text import printable

    silence(sys.stdout)
    reason = getattr(err, "strerror", None) or type(err).__name__
    lang = resolve_lang()
    message = translate("cli.stdout_failed", lang, reason=reason)
    say(printable(f"{translate('cli.error_prefix', lang)}: {message}"))
    return EXIT_BAD_INPUT
