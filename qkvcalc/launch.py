"""The `qkvcalc` console script and `python -m qkvcalc`: the command line, loaded inside a guard.

Loading typer, rich and the commands takes a moment; Ctrl-C in that moment ends the way it
does later (one line, exit 130) instead of with Python's traceback. Once loaded,
qkvcalc.cli.main handles Ctrl-C and a closed pipe itself.

The help text is written when the commands are defined, before typer reads any option, so a
`--lang` on the command line is looked for here first: `qkvcalc explain --lang ko --help`
answers in Korean.

While the program loads, Python's cyclic garbage collector is held off, and what loading made
is then frozen out of its reach (`loaded`): the modules, classes, functions and catalogs live
until the process exits, and every collection would walk them all again (with numpy kept to
one thread, the doc example took 0.146 s instead of 0.173 s, its floor 0.131 s).

numpy's OpenBLAS starts worker threads when it loads (one per core besides the caller's), and
each spins, waiting for work, for 2^28 clock cycles (about a tenth of a second) before it
sleeps; the same after every threaded call. A run of the doc example is over within that tenth,
and while a worker spins on the other core, every block of memory the process gives back makes
the system interrupt that core (a TLB shootdown: about 900 on the doc example, 3 once the
workers sleep). So, unless the environment says otherwise, they spin for at most 2^20 cycles
(under a millisecond): awake between the calls of one computation, asleep between runs of it
(OPENBLAS_THREAD_TIMEOUT, read when numpy loads).
"""

from __future__ import annotations

import errno
import gc
import io
import os
import sys

from qkvcalc.i18n import lang_option

EXIT_INTERRUPTED = 130  # as qkvcalc.cli.common, which this module must not load first

_holding = False  # the console script is loading, the collector held off (hold_collector)
_frozen = False  # what start-up made is frozen: once a process (a later run in it freezes nothing)


def hold_collector() -> None:
    """No cyclic garbage collection until `loaded`: nearly all that starting makes lasts."""
    global _holding
    if gc.isenabled():
        gc.disable()
        _holding = True


def loaded() -> None:
    """A command has loaded what it runs on: freeze what start-up made (gc.freeze), so that no
    later collection walks it, and collect again. Nothing unless the console script is
    starting (hold_collector): a program that imports qkvcalc keeps its collector as it is."""
    global _holding, _frozen
    if not _holding:
        return
    _holding = False
    if not _frozen:
        gc.freeze()
        _frozen = True
    gc.enable()


def _let_go() -> None:
    """The collector as it was, without freezing (a run that ended before `loaded`)."""
    global _holding
    if _holding:
        _holding = False
        gc.enable()


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


# OpenBLAS's own name and scale: a worker spins 2^N cycles before it sleeps (N from 4 to 30)
BLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "20")


def main() -> None:
    os.environ.setdefault(*BLAS_SPIN)  # before numpy loads
    hold_collector()
    try:
        try:
            _main()
        except KeyboardInterrupt:
            # a Ctrl-C that lands as the command ends, its output written (after the command's
            # own handling): 130 as any other, never a traceback
            sys.exit(EXIT_INTERRUPTED)
        finally:
            _let_go()
            _interrupt_kills()
    except KeyboardInterrupt:  # one that landed in the lines just above
        sys.exit(EXIT_INTERRUPTED)


def _interrupt_kills() -> None:
    """From here to the end of the process (the interpreter's shutdown, where Python runs no
    handler and a Ctrl-C was lost: exit 0), Ctrl-C ends the process as the system does, which
    a shell reports as 130."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def _main() -> None:
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
