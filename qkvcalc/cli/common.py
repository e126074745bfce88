"""What every command of the CLI shares: exit codes, --lang and --no-color, help text in the
environment's language, the console, the one way to fail, and writing a file whole.

Every command module of qkvcalc.cli (explain, presets, quiz) imports this one, so
none needs another.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from enum import Enum
from pathlib import Path
from types import MethodType
from typing import IO, TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import HAS_RICH as _USE_RICH  # typer's own switch: TYPER_USE_RICH
from typer.core import TyperGroup

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import catalog, lang_option, resolve_lang, translate

if TYPE_CHECKING:
    from rich.console import Console

EXIT_MISTAKES = 1  # a graded quiz found mistakes
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

# The help text is written into the commands in the language of the environment as it is when
# they are defined (QKVCALC_LANG, LC_ALL, LC_MESSAGES, LANG; qkvcalc.launch sets QKVCALC_LANG
# from a --lang on the command line first). A call of the app in a process that already has it
# (a test's CliRunner, a program) may ask another: its help is put into that call's language
# as it is written (help_lang, relang), and put back after, so no call leaks into the next.
_HELP_LANG = resolve_lang()
_CALL_LANG: ContextVar[str | None] = ContextVar("qkvcalc_help_lang", default=None)


# what rich's markup would read as a tag ([bold], [i, tᵢ], [models]): escaped as rich.markup.escape
_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")


# the same escaped: what plain help (TYPER_USE_RICH=0, click's formatter) writes back as written
_ESCAPED_TAG = re.compile(r"(\\*)\\(\[[a-z#/@][^[]*?])")


def unescape(text: str) -> str:
    """A help text as written, its rich escapes undone (`qkvcalc\\[models]` → `qkvcalc[models]`):
    plain help prints no markup, so an escape would show."""
    return _ESCAPED_TAG.sub(lambda m: m[1][: len(m[1]) // 2] + m[2], text)


def _help_in(key: str, lang: str) -> str:
    return _TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", translate(key, lang))


def help_text(key: str) -> str:
    """The help text under `key` (help.<command>.<option>) in the environment's language, as
    rich help shows it literally: `A[i, tᵢ]` and `qkvcalc[models]` are text, not markup."""
    return _help_in(key, _HELP_LANG)


def help_lang() -> str:
    """The language of the help being written: the running call's (its --lang, else the
    environment's as the call runs), else the one the commands were defined in."""
    return _CALL_LANG.get() or _HELP_LANG


def help_now(key: str) -> str:
    """help_text in the language of the help being written (help_lang)."""
    return _help_in(key, help_lang())


_WRITTEN: dict[str, str] = {}  # a help text as the commands hold it → its catalog key


def relang(text: str) -> str:
    """A help text the commands hold (help_text's, maybe cleandoc'd by typer) in the language
    of the help being written; any other text as it is."""
    if help_lang() == _HELP_LANG:
        return text
    if not _WRITTEN:
        for key in catalog("en"):
            if key.startswith("help.") or key == "step.option_help":
                try:
                    written = help_text(key)
                except (KeyError, IndexError):  # a sentence with values: not a help text alone
                    continue
                _WRITTEN.setdefault(written, key)
                _WRITTEN.setdefault(inspect.cleandoc(written), key)
    found = _WRITTEN.get(text)
    return help_now(found) if found is not None else text


@contextlib.contextmanager
def call_language(args: Sequence[str]) -> Iterator[None]:
    """The help of one call of the app in the language it asks for: its --lang, else the
    environment's as it runs (a CliRunner's env), until the call returns."""
    token = _CALL_LANG.set(lang_option(list(args)) or resolve_lang())
    try:
        yield
    finally:
        _CALL_LANG.reset(token)


class Lang(str, Enum):
    en = "en"
    ko = "ko"


LangOption = Annotated[Lang | None, typer.Option(help=help_text("help.lang"), show_default=False)]


class PageLang(str, Enum):
    """explain's --lang: one language, or both on one html page (the first shown first)."""

    en = "en"
    ko = "ko"
    en_ko = "en,ko"
    ko_en = "ko,en"


PageLangOption = Annotated[
    PageLang | None,
    typer.Option("--lang", help=help_text("help.explain.lang"), show_default=False),
]
NoColorOption = Annotated[bool, typer.Option("--no-color", help=help_text("help.no_color"))]


def language(lang: Lang | PageLang | None) -> str:
    """--lang if given (the first of two), else the environment's (QKVCALC_LANG, LC_ALL,
    LC_MESSAGES, LANG)."""
    return resolve_lang(lang.value.split(",")[0] if lang else None)


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


def colorless(no_color: bool) -> bool:
    """Whether this run prints without colours: --no-color, or NO_COLOR set and not empty
    (no-color.org)."""
    return no_color or os.environ.get("NO_COLOR", "") != ""


def console(no_color: bool, stderr: bool = False) -> Console:
    """A console for this run: rich reads COLUMNS (an unusable COLUMNS, 0 or ², is ignored);
    input text is never markup. With --no-color or NO_COLOR it has no colour system at all,
    so that every command asking it (color_system is None) prints no escape sequences: rich's
    own no_color would drop the colours and still send bold, dim and the rest."""
    from rich.console import Console

    plain = colorless(no_color)
    return Console(
        stderr=stderr,
        no_color=plain or None,
        color_system=None if plain else "auto",
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


# /proc/self/fd/N or /proc/<this process>/fd/N: where /dev/stdout, /dev/stderr and /dev/fd/N lead
_FD_LINK = re.compile(r"/proc/(?:self|(\d+))/fd/(\d+)")


def _descriptor(path: Path) -> int | None:
    """The descriptor of this process that `path` names (/dev/stdout, /dev/fd/1,
    /proc/self/fd/1), else None. Its link leads to what the descriptor holds (a pipe's
    "pipe:[…]" is no path at all), so it is written through the descriptor itself: a pipe, a
    terminal or a file opened with >> gets the text as the shell set it up, never replaced."""
    link = str(path)
    for _ in range(40):  # the kernel's own limit on links followed
        head, name = os.path.split(link)
        link = os.path.join(os.path.realpath(head), name)
        found = _FD_LINK.fullmatch(link)
        if found and found[1] in (None, str(os.getpid())):
            return int(found[2])
        if not os.path.islink(link):
            return None
        link = os.path.join(head, os.readlink(link))
    return None


def check_writable(path: Path) -> None:
    """The error write_output would end in, found before a long interaction is spent on it."""
    fd = _descriptor(path)
    if fd is not None:
        try:
            mode = os.fstat(fd).st_mode
        except OSError as err:  # /dev/fd/7 with nothing open there
            raise _unwritable(path, err.strerror or type(err).__name__) from None
        if stat.S_ISDIR(mode):
            raise _unwritable(path, os.strerror(errno.EISDIR))
        return
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


# the text, or a function that writes it to a file (bytes, and a binary file, with binary=True)
Content = str | bytes | Callable[[IO[Any]], None]


def _write(content: Content, stream: IO[Any]) -> None:
    if isinstance(content, str | bytes):
        stream.write(content)
    else:
        content(stream)


def _open(file: Path | int, binary: bool) -> IO[Any]:
    """The output opened to be written: bytes for `binary` (a .npz), else UTF-8 text."""
    return open(file, "wb") if binary else open(file, "w", encoding="utf-8")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_output(content: Content, path: Path, binary: bool = False) -> None:
    """Write the whole file or nothing. A regular file (or a new one) is written to a temporary
    file made in its folder with a random name, created exclusively and never through a
    symlink (tempfile.mkstemp), then renamed into place, keeping the old file's permissions.
    A symlink is written through to the file it points to, and the link stays. A device or a
    FIFO (/dev/null, a named pipe) is written straight to: it is not replaced; /dev/stdout,
    /dev/fd/N and /proc/self/fd/N are written through that descriptor of this process.

    `content` is the text, or a function that writes it to the open file (the JSON trace is
    streamed that way); with `binary`, bytes to a file opened in binary mode (a .npz). A file
    that cannot be written is a QkvcalcError (export.output_unwritable) with the system's
    reason.
    """
    fd = _descriptor(path)
    if fd is not None:  # /dev/stdout and its kind: the open descriptor, as the shell set it up
        try:
            with _open(os.dup(fd), binary) as stream:
                _write(content, stream)
        except OSError as err:
            raise _unwritable(path, err.strerror or type(err).__name__) from None
        return
    target = _target(path)
    try:
        try:
            st = target.stat()
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if st is not None and not stat.S_ISREG(st.st_mode):
            with _open(target, binary) as device:
                _write(content, device)
            return
    except OSError as err:
        raise _unwritable(path, err.strerror or type(err).__name__) from None
    import tempfile  # only for --output to a regular file: not loaded on every start

    tmp, placed = None, False
    try:
        with _interrupt_held():  # a Ctrl-C now waits until the temporary file has its name here
            fd, tmp = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".qkvcalc-tmp", dir=target.parent
            )
        with _open(fd, binary) as file:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            _write(content, file)
        os.replace(tmp, target)
        placed = True
    except OSError as err:
        raise _unwritable(path, err.strerror or type(err).__name__) from None
    finally:
        if tmp is not None and not placed:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@contextlib.contextmanager
def _interrupt_held() -> Iterator[None]:
    """A Ctrl-C during the block is noted, not acted on, and raised again as the block ends,
    to whatever handler was there: one between the temporary file's creation and its name
    reaching write_output would have left the file behind (tests/test_signals.py met it).
    Python runs signal handlers in the main thread only; elsewhere the block runs as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[int] = []
    before = signal.signal(signal.SIGINT, lambda number, frame: noted.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if before is None else before)
        if noted:
            signal.raise_signal(signal.SIGINT)


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


TYPER_HELP_LINE = "Show this message and exit."  # typer's --help, as it writes it
HEADINGS = ("help.heading.options", "help.heading.arguments", "help.heading.commands")


class WideContext(typer.Context):
    """A command's context whose help formatter wraps by display width."""

    class formatter_class(_HelpFormatter):  # the name click reads
        # typer's own words (headings, the usage prefix, --help's line) in the help's language
        def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
            super().write_usage(prog, args, help_now("help.usage") if prefix is None else prefix)

        def write_heading(self, heading: str) -> None:
            key = f"help.heading.{heading.lower()}"
            super().write_heading(help_now(key) if key in HEADINGS else heading)

        def write_text(self, text: str) -> None:
            text = unescape(text)
            self.write(wrap_display(text, self.width, " " * self.current_indent) + "\n")

        def write_dl(
            self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2
        ) -> None:
            rows = list(rows)
            first_col = min(_measure(rows), col_max) + col_spacing
            pad = " " * (first_col + self.current_indent)
            for term, text in rows:
                text = help_now("help.help_option") if text == TYPER_HELP_LINE else unescape(text)
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


# typer's own words in its rich help, module strings of typer.rich_utils: by catalog key
TYPER_WORDS = {
    "ARGUMENTS_PANEL_TITLE": "help.panel.arguments",
    "OPTIONS_PANEL_TITLE": "help.panel.options",
    "COMMANDS_PANEL_TITLE": "help.panel.commands",
    "DEFAULT_STRING": "help.default",
    "REQUIRED_LONG_STRING": "help.required",
}


@contextlib.contextmanager
def _in_help_language(command: Any, ctx: Any) -> Iterator[None]:
    """A command's help texts (its own, its parameters', its panels', its commands') and its
    --help line in the language of the help being written, put back as they were after."""
    changed: list[tuple[Any, str, Any]] = []

    def put(obj: Any, name: str, value: Any) -> None:
        changed.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    help_option = command.get_help_option(ctx)  # click's says its line in English: ours
    held = [*command.get_params(ctx), *getattr(command, "commands", {}).values(), command]
    for obj in held:
        for name in ("help", "short_help", "rich_help_panel"):
            text = getattr(obj, name, None)
            if isinstance(text, str) and (said := relang(text)) != text:
                put(obj, name, said)
    if help_option is not None and help_option.help in (
        TYPER_HELP_LINE,
        help_text("help.help_option"),
    ):
        put(help_option, "help", help_now("help.help_option"))
    try:
        yield
    finally:
        for obj, name, value in reversed(changed):
            setattr(obj, name, value)


def rich_help(obj: Any, ctx: Any) -> None:
    """A command's --help as typer's rich help: the options in their groups' panels, each
    command's whole summary, in the language of the call (help_lang). Loaded only for --help;
    with --no-color or NO_COLOR, colourless. typer's module settings it changes for this help
    are put back after."""
    from rich.cells import cell_len
    from rich.text import Text
    from typer import rich_utils

    saved = {name: getattr(rich_utils, name) for name in (*TYPER_WORDS, "COLOR_SYSTEM")}
    if colorless("--no-color" in sys.argv[1:]):  # --help answers before options are parsed
        rich_utils.COLOR_SYSTEM = None
    for name, key in TYPER_WORDS.items():  # typer's own words, in our language
        # (typer fills in the default: "[default: {}]")
        setattr(rich_utils, name, translate(key, help_lang(), value="{}"))

    def rstrip_end(self: Text, size: int) -> None:
        # rich's Text.rstrip_end measures a wrapped line in characters, not columns: a Korean
        # line ending in the space it broke at is then cut short with "…" (rich 15)
        excess = cell_len(self.plain) - size
        space = len(self.plain) - len(self.plain.rstrip())
        if excess > 0 and space:
            self.right_crop(min(space, excess))

    before = Text.rstrip_end
    Text.rstrip_end = rstrip_end  # type: ignore[method-assign]
    try:
        with _in_help_language(obj, ctx):
            rich_utils.rich_format_help(obj=obj, ctx=ctx, markup_mode="rich")
    finally:
        Text.rstrip_end = before  # type: ignore[method-assign]
        for name, value in saved.items():
            setattr(rich_utils, name, value)


def _format_help(command: Any, ctx: Any, formatter: Any) -> None:
    rich_help(command, ctx)


@contextlib.contextmanager
def _typer_gettext() -> Iterator[None]:
    """typer's plain help writes "[default: …]" and "[required]" through gettext (typer.core's
    `_`): in the call's language while the help is written, typer's own after."""
    from typer import core

    lang = help_lang()
    words = {
        "default: {default}": translate("help.default", lang, value="{default}")[1:-1],
        "required": translate("help.required", lang)[1:-1],
    }
    before = core._

    def said(message: str) -> str:
        return words.get(message, before(message))

    core._ = said
    try:
        yield
    finally:
        core._ = before


def _plain_format_help(command: Any, ctx: Any, formatter: Any) -> None:
    """click's own help (TYPER_USE_RICH=0), its texts in the call's language."""
    with _in_help_language(command, ctx), _typer_gettext():
        type(command).format_help(command, ctx, formatter)


@contextlib.contextmanager
def _usage_errors_in_call_language() -> Iterator[None]:
    """A usage error raised within: shown (by click's standalone main, or by qkvcalc.cli's
    _run) in the language of the call, click's own words included (qkvcalc.cli.usage)."""
    try:
        yield
    except Exception as err:
        # click's UsageError (private to typer, so known by what it has); not the help that
        # no_args_is_help raises as an error, which shows itself
        shows = callable(getattr(err, "show", None)) and hasattr(err, "ctx")
        if shows and type(err).__name__ != "NoArgsIsHelpError":
            from qkvcalc.cli import usage

            lang = help_lang()
            err.show = lambda file=None, e=err: usage.show(e, lang)  # type: ignore[attr-defined]
        raise


class WideHelpGroup(TyperGroup):
    """qkvcalc's command group: it and every command under it write their help as typer's rich
    help (rich_help); where typer is told not to use rich (TYPER_USE_RICH=0), with WideContext
    (typer's commands are built when the app runs, so they are set here). The app's own
    rich_markup_mode stays None: a usage error is one plain paragraph, never a rich panel."""

    context_class = WideContext

    def main(self, args: Sequence[str] | None = None, *more: Any, **options: Any) -> Any:
        """One call of the app: its help in the language it asks for (call_language)."""
        with call_language(sys.argv[1:] if args is None else args):
            return super().main(args, *more, **options)

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _usage_errors_in_call_language():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _usage_errors_in_call_language():
            return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if _USE_RICH:
            rich_help(self, ctx)
        else:
            with _in_help_language(self, ctx), _typer_gettext():
                super().format_help(ctx, formatter)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        pending = [command]
        while pending:
            cmd = pending.pop()
            if cmd is not None:
                cmd.context_class = WideContext
                # its help as the group's (an instance's method: typer made it)
                shown = _format_help if _USE_RICH else _plain_format_help
                cmd.format_help = MethodType(shown, cmd)  # type: ignore[method-assign]
                pending.extend(getattr(cmd, "commands", {}).values())
        return command
