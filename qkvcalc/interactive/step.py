"""The step mode: the problem, then one stage per screen, paged with the keyboard, for a class
watching a projector.

Parts, each testable on its own:

- `next_position`, `scrolled`, `head_start`, `jump_target`: pure; which screen a key leads to,
  where a tall stage's view starts, where the next head begins, which stage a typed number
  names.
- `KeyReader`: reads one key at a time from a terminal in cbreak mode (termios/tty from the
  standard library) and puts the terminal's settings back on every way out.
- `Screens`: every screen's lines at the terminal's size; a screen is a header line that stays
  put, a view onto the stage (↓/↑, j/k, PgDn/PgUp scroll it) and a status line.
- `step_through(trace, opts)`: opens the terminal (/dev/tty, so the problem may come in on a
  pipe), draws, follows the keys, and redraws when the terminal changes size.

Positions: 0 is the problem (its sizes and the preset's sentence), 1 … stages the stages;
`total` (= stages + 1) is past the last one (the summary is shown and the step mode ends); None
means the user quit. Ctrl-C raises KeyboardInterrupt (exit 130).
"""

from __future__ import annotations

import os
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
from qkvcalc.interactive.waiting import wait_readable
from qkvcalc.render import RenderOptions
from qkvcalc.render.terminal import footer, header, stage_blocks
from qkvcalc.render.text import place
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
    FIRST = "first"  # Home: the first screen (the problem)
    LAST = "last"  # End: the last stage
    DOWN = "down"  # scroll within a tall stage
    UP = "up"
    PAGE_DOWN = "page down"
    PAGE_UP = "page up"
    NEXT_HEAD = "next head"
    PREV_HEAD = "previous head"
    HELP = "help"


# What each key means. Arrow keys come as CSI (ESC [ C) or, in application mode, SS3 (ESC O C);
# Home and End as ESC [ H / ESC [ F, ESC O H / ESC O F, or ESC [ 1 ~ / ESC [ 4 ~ (and 7~, 8~).
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
    "\x1b[H": Move.FIRST,
    "\x1bOH": Move.FIRST,
    "\x1b[1~": Move.FIRST,
    "\x1b[7~": Move.FIRST,
    "\x1b[F": Move.LAST,
    "\x1bOF": Move.LAST,
    "\x1b[4~": Move.LAST,
    "\x1b[8~": Move.LAST,
    "\x1b[B": Move.DOWN,  # ↓
    "\x1bOB": Move.DOWN,
    "j": Move.DOWN,
    "\x1b[A": Move.UP,  # ↑
    "\x1bOA": Move.UP,
    "k": Move.UP,
    "\x1b[6~": Move.PAGE_DOWN,
    "\x1b[5~": Move.PAGE_UP,
    "n": Move.NEXT_HEAD,
    "p": Move.PREV_HEAD,
    "?": Move.HELP,
}


def move_for(key: str) -> Move:
    """What a key (as `KeyReader.read_key` returns it) asks for; unknown keys ask for nothing."""
    return KEYS.get(key, Move.NONE)


def next_position(position: int, total: int, key: str) -> int | None:
    """The screen after pressing `key` on screen `position` of `total` screens.

    Forward from the last screen gives `total` (past the end: show the summary and stop);
    back from the first stays on the first; Home goes to the first screen and End to the last;
    quit gives None; any other key (scrolling, digits, n/p, ?) leaves the screen as it is.
    Ctrl-C is not a position: the caller raises KeyboardInterrupt for Move.INTERRUPT.
    """
    if not 0 <= position < total:
        raise ValueError(f"position {position} is outside 0…{total - 1}")
    move = move_for(key)
    if move is Move.NEXT:
        return position + 1
    if move is Move.BACK:
        return max(position - 1, 0)
    if move is Move.FIRST:
        return 0
    if move is Move.LAST:
        return total - 1
    if move is Move.QUIT:
        return None
    return position


def scrolled(offset: int, body: int, view: int, key: str) -> int:
    """The first line shown of a stage `body` lines tall on a screen `view` lines tall, after
    `key`: ↓/j and ↑/k move one line, PgDn/PgUp a screenful less one line (one line stays in
    sight, so the eye keeps its place); never before the top nor past the last full screen."""
    move = move_for(key)
    step = {
        Move.DOWN: 1,
        Move.UP: -1,
        Move.PAGE_DOWN: max(view - 1, 1),
        Move.PAGE_UP: -max(view - 1, 1),
    }.get(move, 0)
    return min(max(offset + step, 0), max(body - view, 0))


def head_start(heads: list[int | None], position: int, forward: bool) -> int:
    """The screen where the next (or previous) head begins, for n and p.

    `heads[k]` is the head of screen k (None for a screen of no head: the problem, the split,
    the concat and the output). n goes to the first screen of the head after the current one
    (from before the heads, to head 1); p to the first screen of the head before it (from
    after the heads, to the last head). Where there is no such head, the position stays.
    """
    starts = {h: heads.index(h) for h in heads if h is not None}
    if not starts:
        return position
    current = heads[position]
    if current is None:
        before = position < min(starts.values())
        if forward:
            return starts[min(starts)] if before else position
        return position if before else starts[max(starts)]
    wanted = current + 1 if forward else current - 1
    return starts.get(wanted, position)


def jump_target(typed: str, stages: int) -> int | None:
    """The stage number typed before Enter, when it is one of 1 … stages."""
    if typed.isdigit() and 1 <= int(typed) <= stages:
        return int(typed)
    return None


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
        return wait_readable(self.fd, timeout)  # in slices: a Ctrl-C before it is not lost

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
    where = place(stage, lang)
    formula = (
        stage.formula
        if stage.step is None and stage.block is None
        else f"{stage.formula} ({where})"
    )
    if stage.head is None:
        line = translate("step.header", lang, number=number, total=total, formula=formula)
    elif stage.pair:  # a pair of heads (a feature that joins the heads in pairs)
        line = translate(
            "step.header_pair", lang, number=number, total=total, formula=formula, pair=stage.head
        )
    else:
        line = translate(
            "step.header_head",
            lang,
            number=number,
            total=total,
            formula=formula,
            head=stage.head,
        )
    return Text(line, style="bold")


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


def screen_console(out: IO[str], size: tuple[int, int], no_color: bool) -> Console:
    """The console one screen of a step mode is drawn on (explain's and train's)."""
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


class Screens:
    """What the step mode draws, at one terminal size: the lines of every screen (the problem,
    then each stage), cut to the width, and the part of them that fits under the header.

    Screen 0 is the problem; screen k (1 … stages) is stage k. Each screen is a header line that
    stays put, the view onto its body (scrolled with the keys), and a status line.
    """

    def __init__(self, trace: Trace, opts: RenderOptions, console: Console) -> None:
        self.trace, self.opts, self.console = trace, opts, console
        self.lang = opts.lang
        width, height = console.size
        self.width = width
        self.view = max(height - 2, 1)  # the header line above, the status line below
        options = console.options.update(width=width, height=None)
        blocks = [block for _, block in stage_blocks(trace, opts)]
        intro = Group(
            header(trace, opts),
            Text(translate("step.intro_next", self.lang, total=len(trace.stages)), style="dim"),
        )
        self.bodies: list[list[Text]] = [
            [
                Text.assemble(*((seg.text, seg.style or "") for seg in line if not seg.control))
                for line in console.render_lines(renderable, options, pad=False)
            ]
            for renderable in (intro, *blocks)
        ]
        self.heads: list[int | None] = [None, *(stage.head for stage in trace.stages)]

    @property
    def total(self) -> int:
        return len(self.bodies)

    def title(self, position: int) -> Text:
        if position == 0:
            line = translate("step.problem_header", self.lang, total=self.total - 1)
            return Text(line, style="bold")
        return stage_header(self.trace.stages[position - 1], position, self.total - 1, self.lang)

    def status(self, position: int, offset: int, typed: str, notice: str) -> Text:
        """The bottom line: what was typed or said, where the view is, and the keys."""
        parts = []
        if typed:
            parts.append(translate("step.jump", self.lang, typed=typed))
        elif notice:
            parts.append(notice)
        body = len(self.bodies[position])
        if body > self.view:
            last = min(offset + self.view, body)
            parts.append(
                translate("step.lines", self.lang, first=offset + 1, last=last, total=body)
            )
        parts.append(translate("step.keys", self.lang))
        return Text(" · ".join(parts), style="dim")

    def draw(self, out: IO[str], position: int, offset: int, typed: str, notice: str) -> None:
        """Clear the screen and draw screen `position` with its body from line `offset`."""
        self.console.clear()
        body = self.bodies[position][offset : offset + self.view]
        self._lines([_fit(self.title(position), self.width)], end=False)
        self._lines(body, end=False)
        for _ in range(self.view - len(body)):
            self.console.file.write("\n")
        self._lines([_fit(self.status(position, offset, typed, notice), self.width)], end=True)
        out.flush()

    def draw_help(self, out: IO[str]) -> None:
        self.console.clear()
        lines = [Text(translate("step.help_title", self.lang), style="bold")]
        lines += [Text(line) for line in translate("step.help", self.lang).split("\n")]
        lines.append(Text(translate("step.help_close", self.lang), style="dim"))
        self._lines([_fit(line, self.width) for line in lines], end=True)
        out.flush()

    def _lines(self, lines: list[Text], end: bool) -> None:
        for n, line in enumerate(lines):
            last = end and n == len(lines) - 1
            self.console.print(line, end="" if last else "\n", soft_wrap=True)


def _fit(text: Text, width: int) -> Text:
    """One line, cut at the width with an ellipsis when it is longer."""
    line = text.copy()
    line.truncate(max(width, 1), overflow="ellipsis")
    return line


def _ended_by_keys(
    trace: Trace, screens: Screens, console: Any, out: IO[str], position: int | None
) -> None:
    """Past the last stage: the summary stays on the screen. Quit: the shell's prompt starts
    below the status line."""
    if position is not None and position >= screens.total:
        console.clear()
        console.print(summary_screen(trace, screens.opts))
    elif position is None:
        out.write("\n")


def _leave_screen(console: Any, out: IO[str], ended: bool) -> None:
    """The cursor back, and after a Ctrl-C (not ended by the keys) the prompt, too, on a line
    of its own; a terminal that hung up takes no more output."""
    with suppress(OSError):
        if not ended:
            out.write("\n")
        console.show_cursor(True)
        out.flush()


def step_through(
    trace: Trace, opts: RenderOptions, *, no_color: bool = False, tty_path: str = TTY_PATH
) -> None:
    """Show the problem, then the stages one screen at a time, and follow the keys.

    Returns when the user quits or has gone past the last stage (then the summary stays on the
    screen); raises KeyboardInterrupt on Ctrl-C and QkvcalcError('step.no_terminal') when
    there is no terminal to read keys from.
    """
    fd = open_terminal(tty_path)
    out = open(os.dup(fd), "w", encoding="utf-8", errors="replace", closefd=True)  # noqa: SIM115
    try:
        size = terminal_size(fd)
        console = screen_console(out, size, no_color)

        def layout(size: tuple[int, int]) -> Screens:
            console.size = size
            view = opts._replace(width=size[0], color=console.color_system is not None)
            return Screens(trace, view, console)

        screens = layout(size)
        total = screens.total
        position: int | None = 0
        offset, typed, notice, helping = 0, "", "", False
        ended = False  # by the keys: else Ctrl-C, SIGTERM or an error ends the screen below
        with _signals_restore_terminal(), KeyReader(fd) as keys:
            console.show_cursor(False)
            try:
                screens.draw(out, 0, 0, typed, notice)
                while position is not None and position < total:
                    key = keys.read_key(RESIZE_POLL)
                    if key is None:  # no key yet: redraw if the terminal changed size
                        if terminal_size(fd) != size:
                            size = terminal_size(fd)
                            screens = layout(size)
                            offset = scrolled(
                                offset, len(screens.bodies[position]), screens.view, ""
                            )
                            if helping:
                                screens.draw_help(out)
                            else:
                                screens.draw(out, position, offset, typed, notice)
                        continue
                    move = move_for(key)
                    if move is Move.INTERRUPT:
                        raise KeyboardInterrupt
                    new: int | None = position
                    notice = ""
                    if helping:  # any key closes the list of keys
                        helping = False
                    elif key.isdigit() and key.isascii():
                        typed = (typed + key)[-4:]
                    elif typed and key in ("\x7f", "\x08"):  # Backspace
                        typed = typed[:-1]
                    elif typed and key in ("\r", "\n"):
                        target = jump_target(typed, total - 1)
                        if target is None:
                            notice = translate(
                                "step.jump_bad", opts.lang, typed=typed, total=total - 1
                            )
                        else:
                            new = target
                        typed = ""
                    elif typed and move is Move.QUIT and key == "\x1b":  # Esc: forget the number
                        typed = ""
                    elif move is Move.HELP:
                        helping = True
                    elif move in (Move.NEXT_HEAD, Move.PREV_HEAD):
                        new = head_start(screens.heads, position, move is Move.NEXT_HEAD)
                        if new == position and all(h is None for h in screens.heads):
                            notice = translate("step.one_head", opts.lang)
                    elif move in (Move.DOWN, Move.UP, Move.PAGE_DOWN, Move.PAGE_UP):
                        body = len(screens.bodies[position])
                        offset = scrolled(offset, body, screens.view, key)
                    else:
                        typed = ""
                        new = next_position(position, total, key)
                    if new is None or new >= total:
                        position = new
                        break
                    if new != position:
                        offset = 0
                    position = new
                    if helping:
                        screens.draw_help(out)
                    else:
                        screens.draw(out, position, offset, typed, notice)
                _ended_by_keys(trace, screens, console, out, position)
                ended = True
            finally:
                _leave_screen(console, out, ended)
    finally:
        with suppress(OSError):
            out.close()
        os.close(fd)
