"""A pager for a long table on a terminal, the way git pages: `explain`'s table, when standard
output is a terminal and the text is taller than it, goes through $QKVCALC_PAGER, else $PAGER,
else `less` with LESS=FRX (quit at once if it fits, keep the colours, leave the text on the
screen). A pager set to "" or "cat" turns paging off. Never for a pipe or a file: the caller
asks only when standard output is a terminal. Loaded only when a table is printed there.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys


def pager_command(environ: dict[str, str] | None = None) -> str | None:
    """The pager's shell command, or None for no pager: QKVCALC_PAGER, else PAGER, else less
    when installed (an empty value, or cat, means none)."""
    env = os.environ if environ is None else environ
    for name in ("QKVCALC_PAGER", "PAGER"):
        if name in env:
            command = env[name].strip()
            return None if command in ("", "cat") else command
    return "less" if shutil.which("less") else None


def page(text: str, height: int) -> bool:
    """Show `text` through the pager when it has more lines than `height` (the terminal's);
    False when it was not paged (short, or no pager), and the caller prints it as it is."""
    command = pager_command()
    if command is None or text.count("\n") < height:
        return False
    env = {**os.environ}
    env.setdefault("LESS", "FRX")  # as git sets it: quit if one screen, colours, no clearing
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    encoding = sys.stdout.encoding or "utf-8"
    # Ctrl-C belongs to the pager while it runs (less uses it); qkvcalc waits for it to end
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
        stdin = pager.stdin
        assert stdin is not None  # stdin=PIPE
        with contextlib.suppress(BrokenPipeError):  # the reader quit (q) before the end
            stdin.write(text.encode(encoding, errors="backslashreplace"))
        with contextlib.suppress(BrokenPipeError):
            stdin.close()
        pager.wait()
    finally:
        signal.signal(signal.SIGINT, before)
    return True
