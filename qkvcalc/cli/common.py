"""What every command of the CLI shares: exit codes, --lang and --no-color, help text in the
environment's language, the console, the one way to fail, and writing a file whole.

Every command module of qkvcalc.cli (explain, presets, quiz) imports this one, so
none needs another.
"""

from __future__ import annotations

import errno
import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import resolve_lang, translate

if TYPE_CHECKING:
    from rich.console import Console

EXIT_MISTAKES = 1  # a graded quiz found mistakes
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# The help text speaks the language of the environment as it is when the commands are
# defined (QKVCALC_LANG, LC_ALL, LC_MESSAGES, LANG): --lang is parsed after --help answers.
_HELP_LANG = resolve_lang()


def help_text(key: str) -> str:
    """The help text under `key` (help.<command>.<option>) in the environment's language."""
    return translate(key, _HELP_LANG)


class Lang(str, Enum):
    en = "en"
    ko = "ko"


LangOption = Annotated[Lang | None, typer.Option(help=help_text("help.lang"), show_default=False)]
NoColorOption = Annotated[bool, typer.Option("--no-color", help=help_text("help.no_color"))]


def language(lang: Lang | None) -> str:
    """--lang if given, else the environment's (QKVCALC_LANG, LC_ALL, LC_MESSAGES, LANG)."""
    return resolve_lang(lang.value if lang else None)


def console(no_color: bool, stderr: bool = False) -> Console:
    """A console for this run: rich reads NO_COLOR and COLUMNS; input text is never markup."""
    from rich.console import Console

    return Console(
        stderr=stderr,
        no_color=no_color or None,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )


def fail(err: QkvcalcError, lang: str) -> NoReturn:
    """One message on stderr, nothing on stdout, exit 2. Input text a message echoes (a key,
    a path, a value) is shown literally: control characters become visible escapes."""
    from qkvcalc.render.text import printable

    message = printable(f"{translate('cli.error_prefix', lang)}: {err.message(lang)}")
    typer.echo(message, err=True, color=False)
    raise typer.Exit(EXIT_BAD_INPUT)


def _unwritable(path: Path, reason: str) -> QkvcalcError:
    return QkvcalcError("export.output_unwritable", path=str(path), reason=reason)


def check_writable(path: Path) -> None:
    """The error write_output would end in, found before a long interaction is spent on it."""
    if not path.parent.is_dir():
        raise _unwritable(path, os.strerror(errno.ENOENT))
    if path.is_dir():
        raise _unwritable(path, os.strerror(errno.EISDIR))
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise _unwritable(path, os.strerror(errno.EACCES))


def write_output(text: str, path: Path) -> None:
    """Write the whole file or nothing: a temporary file renamed into place. A file that
    cannot be written is a QkvcalcError (export.output_unwritable) with the system's reason."""
    tmp = path.with_name(f".{path.name}.qkvcalc-tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as err:
        raise _unwritable(path, err.strerror or type(err).__name__) from None
    finally:
        tmp.unlink(missing_ok=True)
