"""--no-color and NO_COLOR on a real terminal (a pseudo-terminal, pexpect): every command that
prints a table prints no escape sequence at all, while the same run without them is coloured."""

from __future__ import annotations

import os
import re
import sys

import pytest

from tests.conftest import PINNED_ENV, ROOT

ESCAPE = re.compile(r"\x1b\[")

RUNS = [
    ("explain", "--preset", "doc"),
    ("explain", "--preset", "sentence", "--stages", "weights"),
    ("train", "--preset", "learn", "--steps", "5"),
    ("explain", "--help"),
    ("presets",),
    ("presets", "list"),
]


def _escapes(args: tuple[str, ...], **env: str) -> int:
    """The escape sequences `qkvcalc ARGS` writes on a colour terminal, with `env` set."""
    import pexpect

    base = {**os.environ, **PINNED_ENV, "TERM": "xterm-256color"}
    del base["NO_COLOR"]
    child = pexpect.spawn(
        sys.executable,
        ["-m", "qkvcalc", *args],
        cwd=str(ROOT),
        env={**base, **env},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 100),
    )
    out = child.read()
    child.close()
    assert child.exitstatus in (0, 1), out
    return len(ESCAPE.findall(out))


@pytest.mark.parametrize("args", RUNS, ids=" ".join)
def test_a_terminal_gets_colours_by_default(args):
    assert _escapes(args) > 0


@pytest.mark.parametrize("args", RUNS, ids=" ".join)
def test_no_color_in_the_environment_means_no_escape_sequences(args):
    assert _escapes(args, NO_COLOR="1") == 0


@pytest.mark.parametrize("args", RUNS, ids=" ".join)
def test_the_no_color_option_means_no_escape_sequences(args):
    assert _escapes((*args, "--no-color")) == 0


def test_an_empty_no_color_is_not_set():
    # no-color.org: NO_COLOR counts when it is present and not empty
    assert _escapes(RUNS[0], NO_COLOR="") > 0
