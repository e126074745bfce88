"""Hostile input on the surfaces added since the first corpora (issue 41's fourth corpus and
the residue of rounds two and three): the backward and its tiles, `train`, .npz members,
checkpoints, the writers. Every case goes through the real program (a process of its own
where its exit code, streams, memory or signals are what is tested) and ends in one message,
exit 2 (130 for Ctrl-C), nothing on stdout, nothing left behind.

The small corpus of typed command lines is in tests/data/bad/ (test_hostile.py runs it); what
needs a file made at run time, a FIFO, a pipe or a signal is here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PINNED_ENV, ROOT, run_qkvcalc
from tests.test_hostile import HANG_GUARD, assert_one_clean_message, cap_memory


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _run(*args: str, **kw):
    return run_qkvcalc(*args, timeout=HANG_GUARD, preexec_fn=cap_memory, **kw)


# ---- the tiled backward ------------------------------------------------------------------


def _far_target(tmp_path: Path) -> Path:
    """Query 1's target key scores 2000/√2 below its other key: its weight underflows to 0."""
    doc = {
        "x": [[1, 0], [0, 1]],
        "wq": [[2000, 0], [0, 2000]],
        "wk": [[1, 0], [0, 1]],
        "wv": [[1, 0], [0, 1]],
        "attend": [2, 1],
    }
    return _write(tmp_path / "far.json", doc)


def _huge_sink(tmp_path: Path) -> Path:
    """A sink of 10⁶: every key's weight underflows beside it."""
    doc = {
        "x": [[1, 0], [0, 1], [1, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 0], [0, 1]],
        "wv": [[1, 0], [0, 1]],
        "sinks": [1e6],
        "attend": [1, 2, 1],
    }
    return _write(tmp_path / "sink.json", doc)


@pytest.mark.parametrize("make", [_far_target, _huge_sink], ids=["underflow", "sink"])
@pytest.mark.parametrize("tiles", ["1", "2"])
def test_a_tiled_backward_whose_target_weight_underflows_is_the_plain_ones_message(
    tmp_path, make, tiles
):
    """−log A at a weight that underflows to 0: dA = −1/A has no double, so the plain backward
    refuses it as an overflow; the tiled one (D = A·(−1/A)) ended in ZeroDivisionError."""
    path = make(tmp_path)
    plain = _run("explain", str(path), "--backward", "--format", "json")
    assert_one_clean_message(plain, "overflow float64")
    tiled = _run("explain", str(path), "--backward", "--tiles", tiles, "--format", "json")
    assert_one_clean_message(tiled, "overflow float64 at D = A[i, tᵢ]")


# ---- where the output goes -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["missing/trained.json", ".", "/dev/full"])
def test_train_output_that_cannot_be_written_is_said_before_anything_is_printed(tmp_path, where):
    """A folder missing or a directory is refused before the descent; /dev/full is written
    before the training is printed. Each printed the whole training to stdout first."""
    target = where if where.startswith("/") else str(tmp_path / where)
    proc = _run("train", "--preset", "learn", "--steps", "3", "--output", target)
    assert_one_clean_message(proc, "cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file left


@pytest.mark.parametrize(
    "command", [["explain", "--preset", "doc"], ["train", "--preset", "learn", "--steps", "2"]]
)
@pytest.mark.parametrize("device", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_output_onto_dev_stdout_into_a_pipe_is_what_stdout_gets(command, device):
    """`--output /dev/stdout | …` ended in "No such file or directory": the link leads to
    "pipe:[…]", no path. The descriptor itself is written now, as the shell set it up."""
    plain = _run(*command, "--format", "json")
    assert plain.returncode == 0, plain.stderr
    proc = _run(*command, "--format", "json", "--output", device)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == plain.stdout and proc.stdout.startswith("{")


def test_output_onto_dev_stdout_appended_to_a_file_keeps_what_it_held(tmp_path):
    """`>> file`: the text goes after what the file held, as the shell opened it (a file
    replaced through /dev/stdout's link would lose it)."""
    path = tmp_path / "log.txt"
    path.write_text("before\n")
    with path.open("a") as out:
        argv = [sys.executable, "-m", "qkvcalc", "explain", "--preset", "doc", "-f", "txt"]
        subprocess.run(
            [*argv, "-o", "/dev/stdout"],
            stdout=out,
            check=True,
            cwd=ROOT,
            env={**os.environ, **PINNED_ENV},
            timeout=HANG_GUARD,
        )
    alone = _run("explain", "--preset", "doc", "-f", "txt")
    assert path.read_text() == "before\n" + alone.stdout
