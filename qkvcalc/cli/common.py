"""What every command of the CLI shares: exit codes, --lang and --no-color, help text in the
environment's language, the console, the one way to fail, and writing a file whole.

Every command module of qkvcalc.cli (explain, presets, quiz) imports this one, so
none needs another.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

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


# ---- help text wrapped by display width --------------------------------------------------
# typer's help formatter (click's) wraps by characters, but a Hangul syllable takes two columns
# of a terminal: a Korean help line of 60 characters is 114 columns wide. This formatter wraps
# the help's sentences by their display width (East Asian wide and full-width characters
# count 2, combining marks 0) and is otherwise click's.


def display_width(text: str) -> int:
    """The columns `text` takes in a terminal."""
    import unicodedata

    if text.isascii():
        return len(text)
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _cut(word: str, width: int) -> tuple[str, str]:
    """The longest start of `word` that fits in `width` columns (at least one character)."""
    used = 0
    for k, c in enumerate(word):
        used += display_width(c)
        if used > width and k:
            return word[:k], word[k:]
    return word, ""


def wrap_display(text: str, width: int, indent: str = "", first: str | None = None) -> str:
    """Paragraphs (split by blank lines) filled to `width` columns, measured on screen."""
    out: list[str] = []
    for paragraph in (p for p in text.split("\n\n") if p.strip()):
        lines: list[str] = []
        line = first if first is not None and not out else indent
        empty = True
        # words with the spaces before them: click sets two before "[default: …]"
        pieces = re.findall(r"(\s*)(\S+)", paragraph.strip())
        for space, word in pieces:
            gap = " " * len(space) if "\n" not in space else " "
            while word:
                room = width - display_width(line) - (0 if empty else len(gap))
                if display_width(word) <= room:
                    line += ("" if empty else gap) + word
                    word, empty = "", False
                elif empty:  # longer than a whole line: cut it
                    part, word = _cut(word, max(room, 1))
                    lines.append(line + part)
                    line = indent
                else:
                    lines.append(line)
                    line, empty = indent, True
        lines.append(line)
        out.append("\n".join(lines))
    return "\n\n".join(out)


def _measure(rows: list[tuple[str, str]]) -> int:
    return max((display_width(term) for term, _ in rows), default=0)


_HelpFormatter: Any = typer.Context.formatter_class  # click's, reached without importing click


class WideContext(typer.Context):
    """A command's context whose help formatter wraps by display width."""

    class formatter_class(_HelpFormatter):  # the name click reads
        def write_text(self, text: str) -> None:
            self.write(wrap_display(text, self.width, " " * self.current_indent) + "\n")

        def write_dl(
            self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
        ) -> None:
            rows = list(rows)
            first_col = min(_measure(rows), col_max) + col_spacing
            pad = " " * (first_col + self.current_indent)
            for term, text in rows:
                head = " " * self.current_indent + term
                if not text:
                    self.write(head + "\n")
                    continue
                if display_width(term) <= first_col - col_spacing:
                    head += " " * (first_col - display_width(term))
                else:
                    self.write(head + "\n")
                    head = pad
                width = self.current_indent + first_col + max(self.width - first_col - 2, 10)
                self.write(wrap_display(text, width, pad, head) + "\n")


class WideHelpGroup(TyperGroup):
    """qkvcalc's command group: it and every command under it write their help with
    WideContext (typer's commands are built when the app runs, so they are set here)."""

    context_class = WideContext

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        pending = [command]
        while pending:
            cmd = pending.pop()
            if cmd is not None:
                cmd.context_class = WideContext
                pending.extend(getattr(cmd, "commands", {}).values())
        return command
