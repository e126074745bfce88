"""A long table on a terminal goes through a pager, as git's output does: $QKVCALC_PAGER, else
$PAGER, else less (LESS=FRX); "" or cat turns it off; never into a pipe, never for a short
table. Tested on a real pseudo-terminal with PAGER set to a script that records what it got."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pexpect
import pytest

from tests.conftest import PINNED_ENV, ROOT

RECORDER = '#!/bin/sh\ncat > "$1"\n'


@pytest.fixture
def recorder(tmp_path):
    """A pager that writes what it is given to got.txt: (its command, the file)."""
    script = tmp_path / "pager.sh"
    script.write_text(RECORDER)
    script.chmod(0o755)
    got = tmp_path / "got.txt"
    return f"{script} {got}", got


def _on_terminal(*args: str, **env: str) -> tuple[int, str]:
    """`qkvcalc ARGS` on a 100×50 pseudo-terminal: its exit status and what the terminal got."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "qkvcalc", *args],
        cwd=str(ROOT),
        env=_environ(**env),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 100),
    )
    out = child.read()
    child.close()
    return child.exitstatus, out.replace("\r\n", "\n")


def _environ(**env: str) -> dict[str, str]:
    """The pinned environment with no pager chosen, and `env` on top."""
    base = {**os.environ, **PINNED_ENV}
    return {**{k: v for k, v in base.items() if k not in ("PAGER", "LESS", "QKVCALC_PAGER")}, **env}


def _piped(*args: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "qkvcalc", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_environ(**env),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_a_long_table_on_a_terminal_goes_to_the_pager(recorder):
    pager, got = recorder
    status, shown = _on_terminal("explain", "--preset", "doc", PAGER=pager)
    assert status == 0
    paged = got.read_text(encoding="utf-8")
    assert len(paged.splitlines()) > 50  # taller than the terminal
    assert _lines(paged) == _lines(_piped("explain", "--preset", "doc"))  # the same table
    assert "qkvcalc —" not in shown  # the terminal got nothing past the pager


def test_qkvcalc_pager_comes_before_pager_and_cat_turns_it_off(recorder):
    pager, got = recorder
    for off in ("cat", ""):
        status, shown = _on_terminal("explain", "--preset", "doc", PAGER=pager, QKVCALC_PAGER=off)
        assert status == 0 and not got.exists()
        assert _lines(shown) == _lines(_piped("explain", "--preset", "doc"))


def test_a_table_that_fits_is_printed_as_it_is(recorder):
    pager, got = recorder
    status, shown = _on_terminal("explain", "--preset", "doc", "--stages", "x", PAGER=pager)
    assert status == 0 and not got.exists() and "qkvcalc —" in shown


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_pipe_never_gets_the_pager(recorder, fmt):
    pager, got = recorder
    out = _piped("explain", "--preset", "gqa", "--format", fmt, PAGER=pager)
    assert not got.exists() and len(out) > 20_000


def test_other_formats_on_a_terminal_are_not_paged(recorder):
    pager, got = recorder
    status, shown = _on_terminal("explain", "--preset", "doc", "--format", "json", PAGER=pager)
    assert status == 0 and not got.exists() and '"stages"' in shown


@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_less_by_default_and_q_quits():
    child = pexpect.spawn(
        sys.executable,
        ["-m", "qkvcalc", "explain", "--preset", "gqa"],
        cwd=str(ROOT),
        env=_environ(TERM="xterm"),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 100),
    )
    child.expect_exact("qkvcalc —")  # the first screen
    child.expect(re.compile(r"(:|\(END\)|lines \d)"))  # less's prompt: it waits for a key
    child.send("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Output" not in child.before  # the end of the document was never shown


def test_a_piped_run_never_loads_the_pager():
    probe = (
        "import sys\nfrom qkvcalc.launch import main\n"
        "sys.argv = ['qkvcalc', 'explain', '--preset', 'doc']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert 'qkvcalc.cli.pager' not in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_environ(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
