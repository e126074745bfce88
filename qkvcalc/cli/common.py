"""What every command of the CLI shares: exit codes, --lang and --no-color, help text in the
environment's language, the console, the one way to fail, and writing a file whole.

Every command module of qkvcalc.cli (explain, presets, quiz) imports this one, so
none needs another.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, NoReturn

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


def is_utf(stream: object) -> bool:
    """Whether a text stream's encoding is a UTF (anything else, ASCII or Latin-1, gets
    escapes: PYTHONIOENCODING=ascii, LC_ALL=C without Python's UTF-8 mode)."""
    encoding = getattr(stream, "encoding", None) or ""
    return encoding.lower().replace("-", "").replace("_", "").startswith("utf")


def usable_size(value: str | None) -> bool:
    """A COLUMNS or LINES value rich and click can use: ASCII digits, from 1 to 10,000. `0`,
    `²` (a digit to str.isdigit, not to int) and `-5` are not: they are ignored instead."""
    return (
        value is not None
        and value.isascii()
        and value.isdigit()
        and 1 <= int(value[:6]) <= 10_000
        and len(value) <= 6
    )


def usable_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without an unusable COLUMNS or LINES (see usable_size)."""
    env = dict(os.environ if environ is None else environ)
    for name in ("COLUMNS", "LINES"):
        if name in env and not usable_size(env[name]):
            del env[name]
    return env


def console(no_color: bool, stderr: bool = False) -> Console:
    """A console for this run: rich reads NO_COLOR and COLUMNS (an unusable COLUMNS, 0 or ²,
    is ignored); input text is never markup."""
    from rich.console import Console

    return Console(
        stderr=stderr,
        no_color=no_color or None,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        _environ=usable_environ(),
    )


def fail(err: QkvcalcError, lang: str) -> NoReturn:
    """One message on stderr, nothing on stdout, exit 2. Input text a message echoes (a key,
    a path, a value) is shown literally: control characters become visible escapes."""
    from qkvcalc.render.text import printable

    say(printable(f"{translate('cli.error_prefix', lang)}: {err.message(lang)}"))
    raise typer.Exit(EXIT_BAD_INPUT)


def say(message: str) -> None:
    """One line on stderr. A stderr that cannot be written (a full disk, a closed descriptor)
    costs the message, never the exit code: the line is dropped, not raised."""
    try:
        typer.echo(message, err=True, color=False)
    except (OSError, ValueError, AttributeError):  # ValueError: closed; AttributeError: None
        silence(sys.stderr)


def silence(stream: IO[str] | None) -> None:
    """Point a standard stream that failed at /dev/null, so that nothing (the interpreter's
    flush at exit included) tries it again and turns the failure into a traceback."""
    if stream is None:
        return
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _unwritable(path: Path, reason: str) -> QkvcalcError:
    return QkvcalcError("export.output_unwritable", path=str(path), reason=reason)


def _target(path: Path) -> Path:
    """Where writing `path` lands: a symlink is written through, to the file it points to (the
    link itself stays a link, as `echo … > link` leaves it); anything else is itself."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_writable(path: Path) -> None:
    """The error write_output would end in, found before a long interaction is spent on it."""
    target = _target(path)
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as err:  # a parent that is a file: ENOTDIR
        raise _unwritable(path, err.strerror or type(err).__name__) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _unwritable(path, os.strerror(errno.EISDIR))
    if st is not None and not stat.S_ISREG(st.st_mode):  # a device or a FIFO: written as is
        if not os.access(target, os.W_OK):
            raise _unwritable(path, os.strerror(errno.EACCES))
        return
    if not target.parent.is_dir():
        reason = errno.ENOTDIR if target.parent.exists() else errno.ENOENT
        raise _unwritable(path, os.strerror(reason))
    if not os.access(target.parent, os.W_OK) or (st is not None and not os.access(target, os.W_OK)):
        raise _unwritable(path, os.strerror(errno.EACCES))


Content = str | Callable[[IO[str]], None]  # the text, or a function that writes it to a file


def _write(content: Content, stream: IO[str]) -> None:
    if isinstance(content, str):
        stream.write(content)
    else:
        content(stream)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_output(content: Content, path: Path) -> None:
    """Write the whole file or nothing. A regular file (or a new one) is written to a temporary
    file made in its folder with a random name, created exclusively and never through a
    symlink (tempfile.mkstemp), then renamed into place, keeping the old file's permissions.
    A symlink is written through to the file it points to, and the link stays. A device or a
    FIFO (/dev/null, /dev/stdout, a named pipe) is written straight to: it is not replaced.

    `content` is the text, or a function that writes it to the open file (the JSON trace is
    streamed that way). A file that cannot be written is a QkvcalcError
    (export.output_unwritable) with the system's reason.
    """
    target = _target(path)
    try:
        try:
            st = target.stat()
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(target, "w", encoding="utf-8") as device:
                _write(content, device)
            return
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".qkvcalc-tmp", dir=target.parent
        )
    except OSError as err:
        raise _unwritable(path, err.strerror or type(err).__name__) from None
    placed = False
    try:
        with open(fd, "w", encoding="utf-8") as file:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            _write(content, file)
        os.replace(tmp, target)
        placed = True
    except OSError as err:
        raise _unwritable(path, err.strerror or type(err).__name__) from None
    finally:
        if not placed:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
