"""`qkvcalc train --step`: the training one update per screen, paged with the keyboard.

Screen 0 is the problem and its loss before any update; screens 1 … N are the updates (the
loss before and after, each learned matrix W, ΔW = −η·∂L/∂W and W'); going past the last
shows the whole summary (qkvcalc.render.train) and ends. Keys as in explain's step mode:
Enter, Space or → next; b or ← back; q, Esc or Ctrl-D quit; Ctrl-C raises KeyboardInterrupt.
The terminal is read through qkvcalc.interactive.step's KeyReader, which restores it on every
way out.
"""

from __future__ import annotations

import os
from contextlib import suppress
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text

from qkvcalc.i18n import translate
from qkvcalc.interactive.step import (
    TTY_PATH,
    KeyReader,
    Move,
    move_for,
    open_terminal,
    screen_console,
    terminal_size,
)
from qkvcalc.render import RenderOptions
from qkvcalc.render.train import header_lines, loss_lines, train_lines, update_lines

if TYPE_CHECKING:
    from qkvcalc.run.train import Training


def screen_lines(training: Training, position: int, opts: RenderOptions) -> list[Text]:
    """The lines of screen `position`: 0 the problem, k the update k."""
    if position == 0:
        first = loss_lines(training, opts)[:1]  # a blank line
        return [*header_lines(training, opts), *first]
    return update_lines(training, position, opts)


def step_training(
    training: Training, opts: RenderOptions, *, no_color: bool = False, tty_path: str = TTY_PATH
) -> None:
    """Show screen 0, then each update, following the keys; past the last, the summary."""
    fd = open_terminal(tty_path)
    out = open(os.dup(fd), "w", encoding="utf-8", errors="replace", closefd=True)  # noqa: SIM115
    try:
        cols, lines = terminal_size(fd)
        console = screen_console(out, (cols, lines), no_color)
        view = opts._replace(width=cols, color=console.color_system is not None)
        total = training.done + 1  # screens 0 … N; N + 1 is the summary
        keys_line = Text(translate("train.update_keys", opts.lang), style="dim")

        def draw(position: int) -> None:
            console.clear()
            body = screen_lines(training, position, view)[: max(1, lines - 2)]
            console.print(Group(*body, keys_line), crop=True)
            out.flush()

        position: int | None = 0
        with KeyReader(fd) as reader:
            draw(0)
            while position is not None and position < total:
                move = move_for(reader.read_key() or "")
                if move is Move.INTERRUPT:
                    raise KeyboardInterrupt
                if move is Move.QUIT:
                    position = None
                elif move is Move.NEXT:
                    position += 1
                elif move is Move.BACK:
                    position = max(0, position - 1)
                else:
                    continue
                if position is not None and position < total:
                    draw(position)
            if position is None:
                out.write("\n")
            else:
                console.clear()
                console.print(Group(*train_lines(training, view)), crop=True)
    finally:
        with suppress(OSError):
            out.flush()
            out.close()
        os.close(fd)
