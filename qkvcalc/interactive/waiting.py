"""Waiting for what is typed at a terminal, a short slice at a time.

CPython acts on Ctrl-C between bytecodes: its signal handler only notes the signal. A Ctrl-C
that comes in the microseconds between the last bytecode and a blocking read() or select()
(on a busy machine, while the question is still being drawn) is noted, and the wait goes on
until the next key or line, or a second Ctrl-C. Waiting in slices returns to Python often
enough that such a Ctrl-C is acted on within a fraction of a second.
"""

from __future__ import annotations

import select
import time

SLICE = 0.2  # seconds: the longest a Ctrl-C that came before the wait can go unnoticed


def wait_readable(fd: int, timeout: float | None = None) -> bool:
    """True once `fd` has something to read; False when `timeout` seconds pass first (None:
    as long as it takes)."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        left = SLICE if end is None else max(min(SLICE, end - time.monotonic()), 0.0)
        if select.select([fd], [], [], left)[0]:
            return True
        if end is not None and time.monotonic() >= end:
            return False


def line_at_a_time(stream: object) -> int | None:
    """The file descriptor of `stream` when it is a terminal that hands over whole lines
    (canonical mode: each read() returns one line, so nothing waits in the stream's buffer
    while its descriptor is waited on); None otherwise (a pipe, a file, a test's stand-in)."""
    try:
        import termios
    except ImportError:  # no POSIX terminals here (Windows): read as it comes
        return None
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        return fd if termios.tcgetattr(fd)[3] & termios.ICANON else None
    except (AttributeError, OSError, ValueError, termios.error):
        return None
