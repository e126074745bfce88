"""The `qkvcalc` console script and `python -m qkvcalc`: the command line, loaded inside a guard.

Loading typer, rich and the commands takes a moment; Ctrl-C in that moment ends the way it
does later (one line, exit 130) instead of with Python's traceback. Once loaded,
qkvcalc.cli.main handles Ctrl-C and a closed pipe itself.

The help text is written when the commands are defined, before typer reads any option, so a
`--lang` on the command line is looked for here first: `qkvcalc explain --lang ko --help`
answers in Korean.
"""

from __future__ import annotations

import errno
import io
import os
import sys

from qkvcalc.i18n import LANGS

EXIT_INTERRUPTED = 130  # as qkvcalc.cli.common, which this module must not load first


def lang_option(args: list[str]) -> str | None:
    """The value of a valid `--lang en|ko` (or `--lang=ko`) among the arguments, if any."""
    for k, arg in enumerate(args):
        if arg == "--":
            break
        value = args[k + 1] if arg == "--lang" and k + 1 < len(args) else None
        if arg.startswith("--lang="):
            value = arg.partition("=")[2]
        if value in LANGS:
            return value
    return None


class _ClosedOutput(io.TextIOBase):
    """Standard output that was closed when qkvcalc started (`>&-`): writing to it is the
    error a closed descriptor gives (EBADF), which the CLI reports as one message, exit 2."""

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    def isatty(self) -> bool:
        return False


def guard_standard_streams() -> None:
    """A standard descriptor closed at start (`<&-`, `>&-`, `2>&-`) is held by /dev/null, so
    that no file qkvcalc opens later lands on descriptor 0, 1 or 2. Closed stdin reads as empty
    (a --preset runs; no input is the usual message); closed stderr drops the messages, not the
    exit code; closed stdout is an error when something is to be written to it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        held = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if held != fd:
            os.dup2(held, fd)
            os.close(held)
        if fd == 0:
            sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        elif fd == 1:
            sys.stdout = _ClosedOutput()
        else:
            sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115


def main() -> None:
    guard_standard_streams()
    lang = lang_option(sys.argv[1:])
    if lang:  # the help text, built at import, reads the language from the environment
        os.environ["QKVCALC_LANG"] = lang
    try:
        from qkvcalc.cli import main as cli_main
    except KeyboardInterrupt:
        from qkvcalc.i18n import resolve_lang, translate

        sys.stderr.write(translate("cli.interrupted", resolve_lang()) + "\n")
        sys.exit(EXIT_INTERRUPTED)
    cli_main()
