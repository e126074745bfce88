"""The step mode: one stage per screen, paged with the keyboard, for a class watching a projector.

Three parts, each testable on its own:

- `next_position(position, total, key)`: pure; which screen a key leads to.
- `KeyReader`: reads one key at a time from a terminal in cbreak mode (termios/tty from the
  standard library) and puts the terminal's settings back on every way out.
- `step_through(trace, opts)`: opens the terminal (/dev/tty, so the problem may come in on a
  pipe), draws each stage that `render.terminal.stage_blocks` made, and follows the keys.

Positions: 0 … total-1 are the stages; `total` is past the last one (the summary is shown and
the step mode ends); None means the user quit. Ctrl-C raises KeyboardInterrupt (exit 130).
"""

from __future__ import annotations

import os
import select
import signal
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from enum import Enum
from types import FrameType, TracebackType
from typing import IO, Any

from rich.console import Console, Group, RenderableType
from rich.text import Text

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions
from qkvcalc.render.terminal import footer, header, stage_blocks
from qkvcalc.trace import Stage, Trace

TTY_PATH = "/dev/tty"
ESC_WAIT = 0.05  # seconds to wait after Esc for the rest of an arrow key's sequence
RESIZE_POLL = 0.25  # seconds between looks at the terminal's size while waiting for a key


class Move(Enum):
    NEXT = "next"
    BACK = "back"
    QUIT = "quit"
    INTERRUPT = "interrupt"
    NONE = "none"


# What each key means. Arrow keys come as CSI (ESC [ C) or, in application mode, SS3 (ESC O C).
KEYS: dict[str, Move] = {
    "\r": Move.NEXT,
    "\n": Move.NEXT,
    " ": Move.NEXT,
    "\x1b[C": Move.NEXT,  # →
    "\x1bOC": Move.NEXT,
    "b": Move.BACK,
    "B": Move.BACK,
    "\x1b[D": Move.BACK,  # ←
    "\x1bOD": Move.BACK,
    "q": Move.QUIT,
    "Q": Move.QUIT,
    "\x1b": Move.QUIT,  # Esc on its own
    "\x04": Move.QUIT,  # Ctrl-D
    "": Move.QUIT,  # end of input: the terminal went away
    "\x03": Move.INTERRUPT,  # Ctrl-C arriving as a byte (when the terminal sends no SIGINT)
}


def move_for(key: str) -> Move:
    """What a key (as `KeyReader.read_key` returns it) asks for; unknown keys ask for nothing."""
    return KEYS.get(key, Move.NONE)


def next_position(position: int, total: int, key: str) -> int | None:
    """The screen after pressing `key` on screen `position` of `total` stages.

    Forward from the last stage gives `total` (past the end: show the summary and stop);
    back from the first stays on the first; quit gives None; any other key changes nothing.
    Ctrl-C is not a position: the caller raises KeyboardInterrupt for Move.INTERRUPT.
    """
    if not 0 <= position < total:
        raise ValueError(f"position {position} is outside 0…{total - 1}")
    move = move_for(key)
    if move is Move.NEXT:
        return position + 1
    if move is Move.BACK:
        return max(position - 1, 0)
    if move is Move.QUIT:
        return None
    return position


class KeyReader:
    """Keys from a terminal, one at a time: `with KeyReader(fd) as keys: keys.read_key()`.

    Inside the block the terminal is in cbreak mode (no echo, no line editing; Ctrl-C still
    sends SIGINT). Its settings are restored however the block ends: normally, by an
    exception, by KeyboardInterrupt, or by SystemExit.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[Any] | None = None

    def __enter__(self) -> KeyReader:
        import termios
        import tty

        self._saved = termios.tcgetattr(self.fd)
        tty.setcbreak(self.fd, termios.TCSANOW)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.restore()

    def restore(self) -> None:
        import termios

        if self._saved is None:
            return
        saved, self._saved = self._saved, None
        # a terminal that hung up has nothing to restore
        with suppress(termios.error, OSError):
            termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)

    def _ready(self, timeout: float | None) -> bool:
        readable, _, _ = select.select([self.fd], [], [], timeout)
        return bool(readable)

    def _byte(self) -> bytes:
        return os.read(self.fd, 1)

    def read_key(self, timeout: float | None = None) -> str | None:
        """The next key as text: one character, or an escape sequence such as "\\x1b[C".

        None when `timeout` seconds pass with no key; "" when the terminal reached its end.
        """
        if not self._ready(timeout):
            return None
        first = self._byte()
        if first != b"\x1b":
            return self._utf8_rest(first).decode("utf-8", "replace")
        if not self._ready(ESC_WAIT):
            return "\x1b"  # Esc pressed on its own
        second = self._byte()
        seq = first + second
        if second == b"[":  # CSI: parameters, then one final byte in @ … ~
            while len(seq) < 16 and self._ready(ESC_WAIT):
                byte = self._byte()
                seq += byte
                if not byte or 0x40 <= byte[0] <= 0x7E:
                    break
        elif second == b"O" and self._ready(ESC_WAIT):  # SS3: one more byte
            seq += self._byte()
        return seq.decode("utf-8", "replace")

    def _utf8_rest(self, first: bytes) -> bytes:
        """The continuation bytes of a character typed in UTF-8 (한, é …)."""
        if not first:
            return first
        lead = first[0]
        more = 3 if lead >= 0xF0 else 2 if lead >= 0xE0 else 1 if lead >= 0xC0 else 0
        data = first
        for _ in range(more):
            if not self._ready(ESC_WAIT):
                break
            data += self._byte()
        return data


def open_terminal(path: str = TTY_PATH) -> int:
    """A file descriptor on the controlling terminal, or the step mode's clear error."""
    try:
        import termios

        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except (ImportError, OSError):
        raise QkvcalcError("step.no_terminal") from None
    try:
        termios.tcgetattr(fd)
    except termios.error:
        os.close(fd)
        raise QkvcalcError("step.no_terminal") from None
    return fd


def terminal_size(fd: int) -> tuple[int, int]:
    """(columns, lines): COLUMNS and LINES win, as in rich; then the terminal; then 80×24."""
    try:
        cols, lines = os.get_terminal_size(fd)
    except OSError:
        cols, lines = 0, 0
    env_cols, env_lines = os.environ.get("COLUMNS", ""), os.environ.get("LINES", "")
    cols = int(env_cols) if env_cols.isdigit() else cols
    lines = int(env_lines) if env_lines.isdigit() else lines
    return cols or 80, lines or 24


def stage_header(stage: Stage, number: int, total: int, lang: str) -> Text:
    """'stage 4 of 11 — Q·Kᵀ', with the head for a multi-head stage."""
    if stage.head is None:
        line = translate("step.header", lang, number=number, total=total, formula=stage.formula)
    else:
        line = translate(
            "step.header_head",
            lang,
            number=number,
            total=total,
            formula=stage.formula,
            head=stage.head,
        )
    return Text(line, style="bold")


def stage_screen(
    stage: Stage, block: RenderableType, number: int, total: int, lang: str
) -> RenderableType:
    """One screen: the header, the stage as the terminal renderer drew it, the keys."""
    keys = translate("step.keys", lang)
    return Group(stage_header(stage, number, total, lang), Text(""), block, Text(keys, style="dim"))


def summary_screen(trace: Trace, opts: RenderOptions) -> RenderableType:
    """After the last stage: the problem, the warnings and the final output."""
    done = translate("step.done", opts.lang, total=len(trace.stages))
    return Group(header(trace, opts), Text(done, style="bold"), Text(""), footer(trace, opts))


@contextmanager
def _signals_restore_terminal() -> Iterator[None]:
    """SIGTERM and SIGHUP end the step mode through `finally` blocks (so the terminal is
    restored) instead of killing the process where it stands."""

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    saved: dict[int, Any] = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            saved[sig] = signal.signal(sig, leave)
    except ValueError:  # not the main thread: leave the handlers alone
        pass
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _console(out: IO[str], size: tuple[int, int], no_color: bool) -> Console:
    return Console(
        file=out,
        width=size[0],
        height=size[1],
        no_color=no_color or None,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        legacy_windows=False,
    )


def step_through(
    trace: Trace, opts: RenderOptions, *, no_color: bool = False, tty_path: str = TTY_PATH
) -> None:
    """Show the stages one screen at a time on the terminal and follow the keys.

    Returns when the user quits or has gone past the last stage (then the summary stays on the
    screen); raises KeyboardInterrupt on Ctrl-C and QkvcalcError('step.no_terminal') when
    there is no terminal to read keys from.
    """
    fd = open_terminal(tty_path)
    out = open(os.dup(fd), "w", encoding="utf-8", errors="replace", closefd=True)  # noqa: SIM115
    try:
        size = terminal_size(fd)
        console = _console(out, size, no_color)
        total = len(trace.stages)

        def blocks_for(size: tuple[int, int]) -> tuple[RenderOptions, list[RenderableType]]:
            view = opts._replace(width=size[0], color=console.color_system is not None)
            return view, [block for _, block in stage_blocks(trace, view)]

        view, blocks = blocks_for(size)

        def draw(position: int) -> None:
            console.clear()
            if position < total:
                screen = stage_screen(
                    trace.stages[position], blocks[position], position + 1, total, opts.lang
                )
            else:
                screen = summary_screen(trace, view)
            console.print(screen)
            out.flush()

        position: int | None = 0
        with _signals_restore_terminal(), KeyReader(fd) as keys:
            console.show_cursor(False)
            try:
                draw(0)
                while position is not None and position < total:
                    key = keys.read_key(RESIZE_POLL)
                    if key is None:  # no key yet: redraw if the terminal changed size
                        if terminal_size(fd) != size:
                            size = terminal_size(fd)
                            console.size = size
                            view, blocks = blocks_for(size)
                            draw(position)
                        continue
                    if move_for(key) is Move.INTERRUPT:
                        raise KeyboardInterrupt
                    new = next_position(position, total, key)
                    if new is not None and new != position:
                        draw(new)
                    position = new
            finally:
                with suppress(OSError):  # a terminal that hung up takes no more output
                    console.show_cursor(True)
                    out.flush()
    finally:
        with suppress(OSError):
            out.close()
        os.close(fd)
