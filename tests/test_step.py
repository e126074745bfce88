"""The step mode (`qkvcalc explain --step`): the key logic alone, the key reader on a real
pseudo-terminal, and the whole program driven through a pseudo-terminal with pexpect."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import termios

import pexpect
import pytest
from hypothesis import given
from hypothesis import strategies as st

from qkvcalc.engine import run
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.interactive.step import (
    KEYS,
    KeyReader,
    Move,
    move_for,
    next_position,
    open_terminal,
    stage_header,
)
from qkvcalc.problem import Problem
from tests.conftest import PINNED_ENV, ROOT

PYTHON = sys.executable
ENTER, RIGHT, LEFT, ESC, CTRL_C = "\r", "\x1b[C", "\x1b[D", "\x1b", "\x03"
CLEAR = "\x1b[2J"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

# ---- which screen a key leads to (no terminal) ------------------------------------------------

FORWARD = ["\r", "\n", " ", "\x1b[C", "\x1bOC"]
BACKWARD = ["b", "\x1b[D", "\x1bOD"]
QUITS = ["q", "\x1b"]


@pytest.mark.parametrize("key", FORWARD)
def test_forward_keys_go_on(key):
    assert next_position(3, 11, key) == 4


@pytest.mark.parametrize("key", BACKWARD)
def test_back_keys_go_back(key):
    assert next_position(3, 11, key) == 2


@pytest.mark.parametrize("key", QUITS)
def test_quit_keys_end(key):
    assert next_position(3, 11, key) is None


def test_back_from_the_first_stage_stays_there():
    assert next_position(0, 11, "b") == 0


def test_forward_from_the_last_stage_goes_past_the_end():
    assert next_position(10, 11, ENTER) == 11


@pytest.mark.parametrize("key", ["x", "1", "\t", "\x1b[A", "\x1b[B", "한", "\x1b[5~"])
def test_other_keys_change_nothing(key):
    assert next_position(5, 11, key) == 5


def test_ctrl_c_is_an_interrupt_not_a_position():
    assert move_for(CTRL_C) is Move.INTERRUPT


@pytest.mark.parametrize("position", [-1, 11, 12])
def test_a_position_outside_the_stages_is_refused(position):
    with pytest.raises(ValueError):
        next_position(position, 11, ENTER)


keys = st.sampled_from(FORWARD + BACKWARD + QUITS + ["x", "\x1b[A", "?"])


@given(total=st.integers(1, 40), presses=st.lists(keys, max_size=60))
def test_a_session_of_keys_follows_a_counter_that_stops_at_the_ends(total, presses):
    """Model: a counter from 0; forward +1, back −1 but not below 0; quit or past the end
    stops the session. next_position must agree with it key by key."""
    position: int | None = 0
    expected = 0
    for key in presses:
        if position is None or position == total:
            break
        position = next_position(position, total, key)
        if key in QUITS:
            assert position is None
            break
        expected = (
            expected + 1
            if key in FORWARD
            else max(expected - 1, 0)
            if key in BACKWARD
            else expected
        )
        assert position == expected
        assert 0 <= position <= total


def test_every_key_in_the_table_has_a_move():
    assert all(isinstance(move, Move) and move is not Move.NONE for move in KEYS.values())


# ---- the header of a screen --------------------------------------------------------------------


def multihead_trace():
    w = [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
    return run(
        Problem.from_mapping(
            {"x": [[1, 2, 3, 4], [0, 1, 0, 1]], "wq": w, "wk": w, "wv": w, "heads": 2}
        )
    )


def test_header_names_the_stage_number_the_formula_and_the_head():
    trace = multihead_trace()
    total = len(trace.stages)
    number = trace.stages.index(trace.stage("scores", 2)) + 1
    text = stage_header(trace.stage("scores", 2), number, total, "en").plain
    assert text == f"stage {number} of {total} — Q·Kᵀ · head 2"
    concat = trace.stages.index(trace.stage("concat")) + 1
    text = stage_header(trace.stage("concat"), concat, total, "en").plain
    assert text == f"stage {concat} of {total} — concat(head_1, …, head_H)"  # no head of its own


def test_header_in_korean():
    trace = multihead_trace()
    total = len(trace.stages)
    text = stage_header(trace.stage("scores", 2), 7, total, "ko").plain
    assert text == f"{total}단계 중 7단계 — Q·Kᵀ · 헤드 2"
    assert "stage" not in text and "head" not in text


# ---- the key reader on a real pseudo-terminal (os.openpty) -----------------------------------


@pytest.fixture
def pty_pair():
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


@pytest.mark.parametrize(
    ("typed", "key"),
    [
        (b"\x1b[C", RIGHT),
        (b"\x1b[D", LEFT),
        (b"\x1bOC", "\x1bOC"),
        (b" ", " "),
        (b"q", "q"),
        (b"\x1b", ESC),
        ("한".encode(), "한"),
        (b"\x1b[5~", "\x1b[5~"),
    ],
)
def test_reader_reads_one_whole_key(pty_pair, typed, key):
    master, slave = pty_pair
    with KeyReader(slave) as reader:
        os.write(master, typed)
        assert reader.read_key(5) == key
        assert reader.read_key(0.05) is None  # nothing left over


def test_reader_reads_enter_and_keys_typed_together_one_by_one(pty_pair):
    master, slave = pty_pair
    with KeyReader(slave) as reader:
        os.write(master, b"\r\rb")
        got = [reader.read_key(5) for _ in range(3)]
    assert [move_for(k) for k in got] == [Move.NEXT, Move.NEXT, Move.BACK]


def test_reader_times_out_with_none(pty_pair):
    _, slave = pty_pair
    with KeyReader(slave) as reader:
        assert reader.read_key(0.05) is None


def test_reader_turns_off_echo_and_line_editing_and_restores_them(pty_pair):
    _, slave = pty_pair
    before = termios.tcgetattr(slave)
    assert before[3] & termios.ICANON and before[3] & termios.ECHO
    with KeyReader(slave):
        inside = termios.tcgetattr(slave)
        assert not inside[3] & termios.ICANON
        assert not inside[3] & termios.ECHO
    assert termios.tcgetattr(slave) == before


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt, SystemExit])
def test_reader_restores_the_terminal_when_the_block_fails(pty_pair, error):
    _, slave = pty_pair
    before = termios.tcgetattr(slave)
    with pytest.raises(error), KeyReader(slave):
        raise error()
    assert termios.tcgetattr(slave) == before


@pytest.mark.parametrize("path", [os.devnull, "/nonexistent/tty"])
def test_no_terminal_is_a_clear_error(path):
    with pytest.raises(QkvcalcError) as info:
        open_terminal(path)
    assert info.value.msg.key == "step.no_terminal"


# ---- the whole program through a pseudo-terminal (pexpect) --------------------------------------

TTY_ENV = {**PINNED_ENV, "COLUMNS": "100", "LINES": "40", "NO_COLOR": "1", "TERM": "xterm-256color"}


def spawn(*args: str, command: str | None = None, env: dict | None = None) -> pexpect.spawn:
    """`python -m qkvcalc explain ARGS` on a fresh pseudo-terminal (or a bash command line)."""
    full_env = {**os.environ, **TTY_ENV, **(env or {})}
    full_env = {k: v for k, v in full_env.items() if v is not None}
    if command is None:
        program, argv = PYTHON, ["-m", "qkvcalc", "explain", *args]
    else:
        program, argv = "bash", ["-c", command]
    return pexpect.spawn(
        program,
        argv,
        env=full_env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 100),
    )


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_step_forward_back_and_quit():
    child = spawn("--preset", "sentence", "--step")
    child.expect_exact("stage 1 of 11 — X")
    child.expect_exact("Enter, Space or → next")  # the footer with the keys
    child.send(ENTER)
    child.expect_exact("stage 2 of 11 — Q = X·W_Q")
    assert CLEAR in child.before  # the screen is cleared before each stage
    child.send(RIGHT)
    child.expect_exact("stage 3 of 11 — K = X·W_K")
    child.send("b")
    child.expect_exact("stage 2 of 11 — Q = X·W_Q")
    child.send(LEFT)
    child.expect_exact("stage 1 of 11 — X")
    child.send("q")
    assert finish(child) == 0


def test_a_stage_screen_shows_that_stages_work():
    child = spawn("--preset", "sentence", "--step")
    child.expect_exact("stage 1 of 11")
    child.send(ENTER * 5)  # to stage 6, the scores
    child.expect_exact("stage 6 of 11 — Q·Kᵀ")
    child.expect_exact("Enter, Space or → next")
    screen = child.before
    # q₁ = x₁·W_Q = [1, 2], k₁ = x₁·W_K = [1, 3] (sentence preset): q₁·k₁ = 1 + 6 = 7
    assert "q₁·k₁ = 1×1 + 2×3 = 7" in screen
    assert "stage 5 of 11" not in screen and "stage 7 of 11" not in screen
    child.send("q")
    assert finish(child) == 0


def test_going_past_the_last_stage_shows_the_result_and_ends():
    child = spawn("--preset", "doc", "--step")
    child.expect_exact("stage 1 of 10")
    for number in range(2, 11):
        child.send(" ")
        child.expect_exact(f"stage {number} of 10")
    child.send(ENTER)
    child.expect_exact("All 10 stages shown.")
    assert finish(child) == 0
    summary = ANSI.sub("", child.before)
    # the doc example's output is V = [3, 2] (one token attends to itself with weight 1)
    assert re.search(r"Output\s.*\n.*\n\s*\S+\s+3\s+2\s*$", summary.replace("\r", ""), re.M)


@pytest.mark.parametrize(("key", "status"), [("q", 0), (ESC, 0), (CTRL_C, 130)])
def test_quit_keys_restore_the_terminal(key, status):
    """After the step mode ends, the same terminal is back in line mode with echo (stty)."""
    child = spawn(
        command=f'{PYTHON} -m qkvcalc explain --preset doc --step; echo "status=$?"; stty -a'
    )
    child.expect_exact("stage 1 of 10")
    child.send(ENTER)
    child.expect_exact("stage 2 of 10")
    child.send(key)
    child.expect(r"status=(\d+)")
    assert int(child.match.group(1)) == status
    child.expect(pexpect.EOF)
    stty = child.before
    assert re.search(r"(?<![-\w])icanon\b", stty), stty
    assert re.search(r"(?<![-\w])echo\b", stty), stty
    child.close()


def test_interrupt_is_quiet():
    child = spawn("--preset", "doc", "--step")
    child.expect_exact("stage 1 of 10")
    child.sendintr()
    assert finish(child) == 130
    assert "Traceback" not in child.before


def test_problem_on_a_pipe_and_keys_from_the_terminal():
    child = spawn(command=f"cat presets/sentence.json | {PYTHON} -m qkvcalc explain --step")
    child.expect_exact("stage 1 of 11 — X")
    child.send(ENTER)
    child.expect_exact("stage 2 of 11")
    child.send("q")
    assert finish(child) == 0


def test_korean_screens():
    child = spawn("--preset", "sentence", "--step", "--lang", "ko")
    child.expect_exact("11단계 중 1단계 — X")
    child.expect_exact("다음: Enter, Space, →")
    child.send(ENTER)
    child.expect_exact("11단계 중 2단계 — Q = X·W_Q")
    child.send("q")
    assert finish(child) == 0


def test_a_resized_terminal_is_redrawn_at_its_new_width():
    child = spawn("--preset", "sentence", "--step", env={"COLUMNS": None, "LINES": None})
    child.expect_exact("stage 1 of 11")
    child.expect_exact("q or Esc quit")
    wide = ANSI.sub("", child.before)
    assert max(len(line) for line in wide.split("\r\n")) > 60
    child.setwinsize(40, 60)
    child.expect_exact("stage 1 of 11")
    child.expect_exact("q or Esc quit")
    narrow = ANSI.sub("", child.before)
    assert max(len(line.rstrip()) for line in narrow.split("\r\n")) <= 60
    child.send("q")
    assert finish(child) == 0


# ---- no terminal at all, and options that do not go with --step -------------------------------


def test_no_terminal_is_an_error_not_a_hang():
    env = {**os.environ, **PINNED_ENV}
    proc = subprocess.run(
        [PYTHON, "-m", "qkvcalc", "explain", "--preset", "sentence", "--step"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    message = proc.stderr.decode()
    assert translate("step.no_terminal") in message
    assert "Traceback" not in message


@pytest.mark.parametrize("fmt", ["json", "markdown", "svg"])
def test_step_with_another_format_is_a_usage_error(cli, fmt):
    result = cli("explain", "--preset", "doc", "--step", "--format", fmt)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert translate("step.with_format", format=fmt) in result.stderr


def test_step_with_output_is_a_usage_error_and_writes_nothing(cli, tmp_path):
    target = tmp_path / "out.md"
    result = cli("explain", "--preset", "doc", "--step", "--output", str(target))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert translate("step.with_output") in result.stderr
    assert not target.exists()
