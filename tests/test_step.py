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

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.input.problem import Problem
from qkvcalc.interactive.step import (
    KEYS,
    KeyReader,
    Move,
    head_start,
    jump_target,
    move_for,
    next_position,
    open_terminal,
    scrolled,
    stage_header,
)
from qkvcalc.run.engine import run
from tests.conftest import PINNED_ENV, ROOT, interrupt_at_prompt

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


HOME, END, DOWN, UP, PGDN, PGUP = "\x1b[H", "\x1b[F", "\x1b[B", "\x1b[A", "\x1b[6~", "\x1b[5~"


@pytest.mark.parametrize("key", [HOME, "\x1bOH", "\x1b[1~", "\x1b[7~"])
def test_home_goes_to_the_first_screen(key):
    assert next_position(7, 12, key) == 0


@pytest.mark.parametrize("key", [END, "\x1bOF", "\x1b[4~", "\x1b[8~"])
def test_end_goes_to_the_last_screen(key):
    assert next_position(2, 12, key) == 11


@pytest.mark.parametrize(
    ("offset", "key", "expected"),
    [
        (0, DOWN, 1),
        (0, "j", 1),
        (5, UP, 4),
        (5, "k", 4),
        (0, UP, 0),  # not above the top
        (0, PGDN, 9),  # a window of 10 less the line kept in sight
        (9, PGDN, 15),  # not past the last full window: 25 lines, 10 shown
        (15, DOWN, 15),
        (15, PGUP, 6),
        (3, PGUP, 0),
        (4, "x", 4),
    ],
)
def test_scrolling_within_a_stage(offset, key, expected):
    assert scrolled(offset, 25, 10, key) == expected


def test_a_stage_that_fits_does_not_scroll():
    assert scrolled(0, 8, 10, DOWN) == 0
    assert scrolled(0, 8, 10, PGDN) == 0


# screens: the problem, the split, then heads 1 to 3 of two stages each, the concat, the output
HEADS = [None, None, 1, 1, 2, 2, 3, 3, None, None]


@pytest.mark.parametrize(
    ("position", "forward", "expected"),
    [
        (0, True, 2),  # from before the heads: head 1
        (1, True, 2),
        (3, True, 4),  # head 1 -> head 2, from its second stage too
        (4, True, 6),
        (7, True, 7),  # no head after the last
        (8, True, 8),  # after the heads: n stays
        (8, False, 6),  # after the heads: p goes to the last head
        (5, False, 2),  # head 2 -> head 1
        (2, False, 2),  # no head before the first
        (0, False, 0),
    ],
)
def test_next_and_previous_head(position, forward, expected):
    assert head_start(HEADS, position, forward) == expected


def test_one_head_has_nowhere_to_go():
    assert head_start([None] * 12, 4, True) == 4


@pytest.mark.parametrize(("typed", "expected"), [("1", 1), ("44", 44), ("0", None), ("45", None)])
def test_a_typed_stage_number(typed, expected):
    assert jump_target(typed, 44) == expected


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
    child.expect_exact("the problem — 11 stages follow")  # the first screen: the problem
    child.expect_exact("? keys · q quit")  # the footer with the keys
    child.send(ENTER)
    child.expect_exact("stage 1 of 11 — X")
    child.send(ENTER)
    child.expect_exact("stage 2 of 11 — Q = X·W_Q")
    assert CLEAR in child.before  # the screen is cleared before each stage
    child.send(RIGHT)
    child.expect_exact("stage 3 of 11 — K = X·W_K")
    child.send("b")
    child.expect_exact("stage 2 of 11 — Q = X·W_Q")
    child.send(LEFT)
    child.expect_exact("stage 1 of 11 — X")
    child.send(LEFT)
    child.expect_exact("the problem — 11 stages follow")
    child.send("q")
    assert finish(child) == 0


def test_a_stage_screen_shows_that_stages_work():
    child = spawn("--preset", "sentence", "--step")
    child.expect_exact("the problem — 11 stages follow")
    child.send(ENTER * 6)  # to stage 6, the scores
    child.expect_exact("stage 6 of 11 — Q·Kᵀ")
    child.expect_exact("? keys · q quit")
    screen = child.before
    # q₁ = x₁·W_Q = [1, 2], k₁ = x₁·W_K = [1, 3] (sentence preset): q₁·k₁ = 1 + 6 = 7
    assert "q₁·k₁ = 1×1 + 2×3 = 7" in screen
    assert "stage 5 of 11" not in screen and "stage 7 of 11" not in screen
    child.send("q")
    assert finish(child) == 0


def test_going_past_the_last_stage_shows_the_result_and_ends():
    child = spawn("--preset", "doc", "--step")
    child.expect_exact("the problem — 10 stages follow")
    for number in range(1, 11):
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
    child.expect_exact("the problem — 10 stages follow")
    child.send(ENTER)
    child.expect_exact("stage 1 of 10")
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
    child.expect_exact("the problem — 10 stages follow")
    interrupt_at_prompt(child)
    assert finish(child) == 130
    assert "Traceback" not in child.before


def test_problem_on_a_pipe_and_keys_from_the_terminal():
    child = spawn(command=f"cat presets/sentence.json | {PYTHON} -m qkvcalc explain --step")
    child.expect_exact("the problem — 11 stages follow")
    child.send(ENTER)
    child.expect_exact("stage 1 of 11 — X")
    child.send("q")
    assert finish(child) == 0


def test_korean_screens():
    child = spawn("--preset", "sentence", "--step", "--lang", "ko")
    child.expect_exact("문제 — 이어서 11개 단계")
    child.expect_exact("? 키 · q 끝내기")
    child.send(ENTER)
    child.expect_exact("11단계 중 1단계 — X")
    child.send(ENTER)
    child.expect_exact("11단계 중 2단계 — Q = X·W_Q")
    child.send("q")
    assert finish(child) == 0


def test_a_resized_terminal_is_redrawn_at_its_new_width():
    child = spawn("--preset", "sentence", "--step", env={"COLUMNS": None, "LINES": None})
    child.expect_exact("the problem — 11 stages follow")
    child.send(ENTER * 2)
    child.expect_exact("stage 2 of 11")
    child.expect_exact("q quit")
    wide = ANSI.sub("", child.before)
    assert max(len(line) for line in wide.split("\r\n")) > 60
    child.setwinsize(40, 60)
    child.expect_exact("stage 2 of 11")
    child.expect_exact("q quit")
    narrow = ANSI.sub("", child.before)
    assert max(len(line.rstrip()) for line in narrow.split("\r\n")) <= 60
    child.send("q")
    assert finish(child) == 0


# ---- a projector: 60×15 ------------------------------------------------------------------------


def small(*args: str) -> pexpect.spawn:
    """The step mode in a 60×15 terminal (its size from the terminal, not COLUMNS/LINES)."""
    full_env = {**os.environ, **TTY_ENV}
    full_env = {k: v for k, v in full_env.items() if k not in ("COLUMNS", "LINES")}
    return pexpect.spawn(
        PYTHON,
        ["-m", "qkvcalc", "explain", *args, "--step"],
        env=full_env,
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=30,
        dimensions=(15, 60),
    )


def screen_after(child: pexpect.spawn, keys: str, until: str = "q quit") -> list[str]:
    """The lines of the screen drawn after `keys` (up to its status line), colours removed."""
    if keys:
        child.send(keys)
    child.expect_exact(until)
    text = ANSI.sub("", child.before.split(CLEAR)[-1]).replace("\r", "")
    return text.split("\n")


def test_the_first_screen_is_the_problem_with_the_presets_sentence():
    child = small("--preset", "sentence")
    lines = screen_after(child, "")
    assert lines[0] == "the problem — 11 stages follow"
    text = " ".join(" ".join(lines).split())
    assert "queries n = 3, keys m = 3, d_model = 2, d_k = 2" in text
    assert "mask: causal" in text
    assert (
        "preset sentence: Three tokens, 'I love cats', with the doc weights and a causal mask"
        in text
    )
    child.send("q")
    assert finish(child) == 0


def test_a_tall_stage_keeps_its_header_and_scrolls_at_60_by_15():
    child = small("--preset", "sentence")
    screen_after(child, "")
    screen_after(child, "1", until="(Enter)")
    screen_after(child, "0", until="(Enter)")
    lines = screen_after(child, ENTER)  # stage 10 (the weights) by its number
    assert lines[0] == "stage 10 of 11 — A = softmax(Q·Kᵀ / √d_k + M)"
    assert len(lines) <= 15 and all(len(line.rstrip()) <= 60 for line in lines)
    assert any("━" in line for line in lines)  # the table, under the header
    status = lines[-1]
    assert re.match(r"↕ 1–13/(\d+)", status), status
    body = int(re.match(r"↕ 1–13/(\d+)", status).group(1))
    assert body > 13  # taller than the window: the arithmetic is below
    lines = screen_after(child, PGDN)
    assert lines[0] == "stage 10 of 11 — A = softmax(Q·Kᵀ / √d_k + M)"  # the header stays
    assert lines[-1].startswith(f"↕ 13–{min(25, body)}/{body}")
    lines = screen_after(child, "k")
    assert lines[-1].startswith("↕ 12–")
    lines = screen_after(child, "j")
    assert lines[-1].startswith(f"↕ 13–{min(25, body)}/{body}")
    lines = screen_after(child, PGUP)
    assert lines[-1].startswith("↕ 1–13/")
    lines = screen_after(child, DOWN)
    assert lines[-1].startswith("↕ 2–14/")
    lines = screen_after(child, ENTER)  # the next stage starts at its top
    assert lines[0].startswith("stage 11 of 11")
    child.send("q")
    assert finish(child) == 0


def test_gqa_jumps_by_number_home_end_and_head():
    child = small("--preset", "gqa")
    lines = screen_after(child, "")
    assert lines[0] == "the problem — 44 stages follow"
    screen_after(child, "2", until="(Enter)")
    screen_after(child, "5", until="(Enter)")
    lines = screen_after(child, ENTER)
    assert lines[0].startswith("stage 25 of 44")
    lines = screen_after(child, END)
    assert lines[0] == "stage 44 of 44 — output = concat·W_O"
    lines = screen_after(child, "p")  # from after the heads: the last head's first stage
    assert lines[0] == "stage 33 of 44 — Q = X·W_Q[:, 4] · head 4"
    lines = screen_after(child, "p")
    assert lines[0] == "stage 23 of 44 — Q = X·W_Q[:, 3] · head 3"
    lines = screen_after(child, "n")
    assert lines[0].startswith("stage 33 of 44") and lines[0].endswith("head 4")
    lines = screen_after(child, HOME)
    assert lines[0] == "the problem — 44 stages follow"
    lines = screen_after(child, "n")
    assert lines[0] == "stage 3 of 44 — Q = X·W_Q[:, 1] · head 1"
    screen_after(child, "9", until="(Enter)")
    lines = screen_after(child, "9", until="(Enter)")
    assert lines[-1].startswith("go to stage 99…")
    lines = screen_after(child, ENTER, until="1 to 44")
    assert lines[-1].startswith("there is no stage 99: the stages are")
    assert lines[0].startswith("stage 3 of 44")  # where it was
    child.send("q")
    assert finish(child) == 0


def test_question_mark_shows_the_keys_and_any_key_goes_back():
    child = small("--preset", "gqa")
    screen_after(child, "")
    lines = screen_after(child, "?", until="Any key goes back to the stage.")
    text = "\n".join(lines)
    for words in ("PgDn PgUp", "12 Enter", "Home, End", "n, p", "q, Esc"):
        assert words in text
    lines = screen_after(child, "x")
    assert lines[0] == "the problem — 44 stages follow"
    child.send("q")
    assert finish(child) == 0


def test_n_in_a_one_head_problem_says_why_nothing_moves():
    child = small("--preset", "doc")
    screen_after(child, "")
    lines = screen_after(child, "n", until="one head")
    assert lines[-1].startswith("n and p move between heads")
    child.send("q")
    assert finish(child) == 0


def test_korean_keys_screen():
    child = spawn("--preset", "gqa", "--step", "--lang", "ko")
    child.expect_exact("문제 — 이어서 44개 단계")
    child.send("?")
    child.expect_exact("아무 키나 누르면 단계로 돌아갑니다.")
    assert "12단계로 이동" in child.before
    child.send("x")
    child.expect_exact("문제 — 이어서 44개 단계")
    child.send("7")
    child.expect_exact("7단계로 이동")
    child.send(ENTER)
    child.expect_exact("44단계 중 7단계")
    child.send("q")
    assert finish(child) == 0


def test_a_resize_keeps_the_header_on_a_shorter_screen():
    child = spawn("--preset", "sentence", "--step", env={"COLUMNS": None, "LINES": None})
    child.expect_exact("the problem — 11 stages follow")
    child.send("1")
    child.expect_exact("(Enter)")
    child.send("0")
    child.expect_exact("go to stage 10")
    child.send(ENTER)
    child.expect_exact("stage 10 of 11")
    child.expect_exact("q quit")
    child.setwinsize(15, 60)
    lines = screen_after(child, "", until="· →")
    assert lines[0] == "stage 10 of 11 — A = softmax(Q·Kᵀ / √d_k + M)"
    assert len(lines) <= 15
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


def test_quitting_leaves_the_shell_prompt_on_a_line_of_its_own():
    """After q the last thing written is a line break: the prompt does not glue onto the
    status line."""
    child = spawn("--preset", "sentence", "--step")
    child.expect_exact("? keys · q quit")
    child.send("q")
    child.expect(pexpect.EOF)
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)  # the text, escapes left out
    child.close()
    assert child.exitstatus == 0
    assert shown.endswith("\n"), repr(shown[-80:])


def test_step_goes_through_the_backward_stages():
    """--step --backward: after the 11 forward stages, the 10 of the backward pass, each its own
    screen with its formula and its arithmetic; back from the first gradient to the output."""
    child = spawn("--preset", "sentence", "--attend", "1 1 2", "--backward", "--step")
    child.expect_exact("the problem — 21 stages follow")
    child.send("12")
    child.expect_exact("(Enter)")
    child.send(ENTER)
    child.expect_exact("stage 12 of 21 — dA[i, tᵢ] = −1 / A[i, tᵢ]")
    child.expect_exact("? keys · q quit")
    assert "−1 / " in child.before  # the cell arithmetic of the loss's gradient
    child.send(RIGHT)
    child.expect_exact("stage 13 of 21 — r = Σⱼ Aᵢⱼ·dAᵢⱼ")
    child.send(RIGHT)
    child.expect_exact("stage 14 of 21 — d(S+M) = A ⊙ (dA − r)")
    child.send(LEFT * 2)
    child.expect_exact("stage 12 of 21")
    child.send(LEFT)
    child.expect_exact("stage 11 of 21 — A·V")
    child.send(END)
    child.expect_exact("stage 21 of 21 — dX = dQ·W_Qᵀ + dK·W_Kᵀ")
    child.send("q")
    assert finish(child) == 0
