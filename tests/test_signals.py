"""Ctrl-C, a closed pipe and start-up, with real processes: qkvcalc ends quietly and starts light.

Ctrl-C (SIGINT) during a long run or at a prompt exits 130 with at most one short line on
stderr; a reader that goes away (`qkvcalc … | head -1`) ends the program without
"BrokenPipeError" or "Exception ignored" on stderr. Nothing here measures time: the sleeps only
wait for the child to reach the state under test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from qkvcalc.cli import COMMANDS
from tests.conftest import (
    PINNED_ENV,
    ROOT,
    interrupt_at_prompt,
    run_qkvcalc,
    wait_until_waiting_for_input,
)

NOISE = ("Traceback", "KeyboardInterrupt", "BrokenPipeError", "Exception ignored", "Aborted")


def quiet(stderr: str) -> None:
    assert not any(word in stderr for word in NOISE), stderr[-2000:]
    assert len(stderr.splitlines()) <= 1, stderr[-2000:]


def spawn(*args: str, **popen) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "qkvcalc", *args],
        env={**os.environ, **PINNED_ENV},
        cwd=ROOT,
        stderr=subprocess.PIPE,
        **popen,
    )


def wait_until_computing(proc: subprocess.Popen, limit: float = 60) -> None:
    """Wait until the child has loaded numpy: by then it is inside `explain`, past startup."""
    maps = Path(f"/proc/{proc.pid}/maps")
    end = time.monotonic() + limit
    while time.monotonic() < end:
        assert proc.poll() is None, "the long run ended before it could be interrupted"
        if "_multiarray_umath" in maps.read_text():
            time.sleep(0.3)  # into the work proper
            return
        time.sleep(0.02)
    pytest.fail("the child never got as far as loading numpy")


def write_problem(path: Path, n: int, d: int, heads: int) -> Path:
    rng = np.random.default_rng(6)
    doc = {
        "x": rng.standard_normal((n, d)).round(3).tolist(),
        "wq": rng.standard_normal((d, d)).round(3).tolist(),
        "wk": rng.standard_normal((d, d)).round(3).tolist(),
        "wv": rng.standard_normal((d, d)).round(3).tolist(),
        "heads": heads,
        "mask": "causal",
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def long_problem(tmp_path_factory) -> Path:
    """A problem whose JSON takes many seconds to write: 64 heads over 256 tokens, 350 MB."""
    return write_problem(tmp_path_factory.mktemp("long") / "long.json", 256, 128, 64)


@pytest.fixture(scope="module")
def wide_problem(tmp_path_factory) -> Path:
    """Quick to compute, but its output overfills a pipe's buffer (64 kB): 8 heads."""
    return write_problem(tmp_path_factory.mktemp("wide") / "wide.json", 128, 64, 8)


def test_ctrl_c_while_the_command_line_loads_exits_130_quietly():
    """Ctrl-C in the moment typer, rich and the commands are loading ends as Ctrl-C later does.
    The moment is too short to hit with a real signal every time, so the import of qkvcalc.cli
    raises KeyboardInterrupt here, as SIGINT would there."""
    code = (
        "import sys\n"
        "class Interrupt:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'qkvcalc.cli':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupt())\n"
        "from qkvcalc.launch import main\n"
        "main()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **PINNED_ENV},
    )
    assert result.returncode == 130, result.stderr[-2000:]
    assert result.stdout == ""
    quiet(result.stderr)
    assert result.stderr.strip() == "interrupted"


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_ctrl_c_during_a_long_run_exits_130_quietly_and_leaves_no_half_file(long_problem, tmp_path):
    """Ctrl-C while the long problem's 350 MB of JSON is being written to --output: exit 130,
    quietly, and neither the file asked for nor the temporary one it was being written into is
    left. (The signal waits for the temporary file: then the run is surely writing.)"""
    out = tmp_path / "out.json"
    proc = spawn(
        "explain", str(long_problem), "--format", "json", "--output", str(out),
        stdout=subprocess.PIPE,
    )  # fmt: skip
    wait_until_computing(proc)
    end = time.monotonic() + 60
    while not any(tmp_path.iterdir()) and time.monotonic() < end:
        assert proc.poll() is None, "the long run ended before it could be interrupted"
        time.sleep(0.02)
    [writing] = list(tmp_path.iterdir())
    assert writing.name.endswith(".qkvcalc-tmp")
    proc.send_signal(signal.SIGINT)
    printed, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert printed == b"" and list(tmp_path.iterdir()) == []  # a half-written result is never left
    quiet(err.decode())


def test_ctrl_c_while_the_long_json_streams_to_stdout_exits_130_quietly(long_problem):
    """Standard output cannot be taken back: Ctrl-C after the first 100 kB of the stream (the
    reader holds the rest back, so the run is surely writing) ends it there, exit 130, quietly."""
    proc = spawn("explain", str(long_problem), "--format", "json", stdout=subprocess.PIPE)
    assert proc.stdout is not None
    head = proc.stdout.read(100_000)
    assert head.startswith(b"{") and len(head) == 100_000
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert len(head + rest) < 10_000_000  # it stopped there: the whole is 349 MB
    quiet(err.decode())


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_ctrl_c_while_waiting_for_piped_input_exits_130_quietly():
    """A pipe that never ends: qkvcalc waits for it (numpy loaded, inside explain) until
    Ctrl-C, whatever the machine's speed."""
    proc = spawn("explain", "-", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    wait_until_computing(proc)
    wait_until_waiting_for_input(
        proc.pid, fd=0
    )  # the moment this test is about: blocked on the pipe
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()[-2000:]
    assert out == b""
    quiet(err.decode())


def test_ctrl_c_at_the_quiz_prompt_exits_130_quietly():
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "qkvcalc", "quiz", "--preset", "doc", "--no-color"],
        env={**os.environ, **PINNED_ENV},
        cwd=str(ROOT),
        timeout=60,
        encoding="utf-8",
    )
    child.expect_exact("Q[1,1] =")  # the first question waits for an answer
    interrupt_at_prompt(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus, child.before)
    assert not any(word in (child.before or "") for word in NOISE), child.before


# A Ctrl-C that Python has noted while the program already waits for what is typed: the
# state a Ctrl-C leaves when it lands in the microseconds between the last bytecode and the
# read() (CI met it once). Made here for certain: the main thread, which waits, blocks SIGINT,
# so the kernel hands it to a thread that sleeps, whose handler only notes it for the main one.
NOTED_WHILE_WAITING = """
import signal, sys, threading, time
from rich.console import Console
from rich.text import Text
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
try:
    if sys.argv[1] == "quiz":
        from qkvcalc.quiz.session import ask_line
        ask_line(Console())(Text("answer = "))
    else:
        from qkvcalc.interactive.step import KeyReader
        print("key: ", end="", flush=True)
        with KeyReader(sys.stdin.fileno()) as keys:
            keys.read_key()
except KeyboardInterrupt:
    print("interrupted")
    sys.exit(130)
print("read on")
"""


def test_waiting_in_slices_still_says_whether_input_came_in_time():
    from qkvcalc.interactive.waiting import line_at_a_time, wait_readable

    read_end, write_end = os.pipe()
    try:
        assert not wait_readable(read_end, 0)
        assert not wait_readable(read_end, 0.3)  # longer than a slice: still nothing
        os.write(write_end, b"1\n")
        assert wait_readable(read_end, 0) and wait_readable(read_end)
        with open(read_end, closefd=False) as pipe:
            assert line_at_a_time(pipe) is None  # a pipe's reads are not a line each
    finally:
        os.close(read_end)
        os.close(write_end)
    leader, follower = os.openpty()
    try:
        with open(follower, closefd=False) as terminal:
            assert line_at_a_time(terminal) == follower  # a terminal in canonical mode
            import termios
            import tty

            tty.setcbreak(follower)  # a key at a time: a read may hold more than a line
            assert line_at_a_time(terminal) is None
            assert termios.tcgetattr(follower)[3] & termios.ICANON == 0
    finally:
        os.close(leader)
        os.close(follower)


@pytest.mark.parametrize("reader", ["quiz", "step"])
def test_a_ctrl_c_noted_before_the_wait_still_ends_it(reader):
    """The quiz's answers and the step mode's keys are waited for in slices: a Ctrl-C that
    Python noted while nothing returned to it ends the wait within a slice, not at Enter."""
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-c", NOTED_WHILE_WAITING, reader],
        env={**os.environ, **PINNED_ENV},
        cwd=str(ROOT),
        timeout=10,
        encoding="utf-8",
    )
    child.expect_exact("answer = " if reader == "quiz" else "key: ")
    wait_until_waiting_for_input(child.pid)
    child.sendintr()
    child.expect_exact("interrupted")  # without the slices: still waiting, 10 s later
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "--preset", "sentence"),
        ("explain", "--preset", "multihead", "--format", "json"),
        ("explain", "{long}", "--detail", "brief"),
        ("explain", "{long}", "--format", "json"),
        ("explain", "--preset", "sentence", "--format", "markdown"),
        ("presets", "show", "sentence"),
    ],
    ids=["table", "json", "long-table", "long-json", "markdown", "presets-show"],
)
def test_a_closed_pipe_ends_quietly(wide_problem, args):
    """A reader gone before the first byte (the end of `… | head -c 0`, made certain: the
    pipe's read end is closed before qkvcalc starts, so every write fails): it ends quietly.
    The status is 0 as `cat` would end, whether the pipe is met inside the command (a JSON
    document streamed stage by stage: typer made that 1) or while the output is flushed after
    it (cli.main)."""
    argv = [a.replace("{long}", str(wide_problem)) for a in args]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = spawn(*argv, stdout=write_end)
    finally:
        os.close(write_end)
    _, err = proc.communicate(timeout=120)
    quiet(err.decode())
    assert proc.returncode == 0, (proc.returncode, err.decode()[-2000:])


def test_a_closed_pipe_through_a_shell(wide_problem):
    """The form a user types, `| head -1`, through sh: only head's line comes out."""
    cmd = f"{sys.executable} -m qkvcalc explain {wide_problem} --detail brief | head -1"
    proc = subprocess.run(
        ["sh", "-c", cmd],
        capture_output=True,
        env={**os.environ, **PINNED_ENV},
        cwd=ROOT,
        timeout=120,
    )
    assert proc.stdout.decode().startswith("qkvcalc")
    assert len(proc.stdout.decode().splitlines()) == 1
    quiet(proc.stderr.decode())


# ---- start-up: the quick commands stay light -------------------------------------------------


# the modules of every command but explain, as the command line names them
OTHER_COMMANDS = tuple(dict.fromkeys(m for m, _ in COMMANDS.values() if m != "qkvcalc.cli.explain"))


@pytest.mark.parametrize(
    ("args", "unloaded"),
    [
        (["--version"], "numpy"),
        (["--help"], "numpy"),
        (["explain", "--help"], "numpy"),
        (["presets", "--help"], "numpy"),
        (["quiz", "--help"], "numpy"),
        (["explain", "--lang", "ko", "--help"], "numpy"),
        # formats that look the same at any width never ask the terminal for one
        (["explain", "--preset", "doc", "--format", "json"], "rich"),
        (["explain", "--preset", "doc", "--format", "torch"], "rich"),
        # a run of one command loads that command's module, not the others'
        (["explain", "--preset", "doc"], OTHER_COMMANDS),
        (["presets", "list"], "qkvcalc.cli.explain"),
    ],
    ids=lambda v: v if isinstance(v, str) else " ".join(v),
)
def test_what_a_command_does_not_load(args, unloaded):
    """--version and --help answer before the heavy imports (numpy is never loaded); a script
    piping JSON out of qkvcalc does not pay for rich; a command does not load the modules of
    the others. Run as the console script runs it."""
    names = [unloaded] if isinstance(unloaded, str) else list(unloaded)
    code = (
        "import sys\nfrom qkvcalc.launch import main\n"
        f"sys.argv = ['qkvcalc', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        f"loaded = [m for m in {names!r} if m in sys.modules]\n"
        "assert not loaded, f'{loaded} imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **PINNED_ENV},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip()


def test_ctrl_c_as_the_temporary_file_is_made_leaves_no_file(tmp_path, monkeypatch):
    """The narrowest moment: SIGINT arrives after the temporary file exists and before its name
    is back in write_output (here mkstemp itself sends it). The signal is held back until the
    name is known, so the file is removed on the way out."""
    import tempfile

    from qkvcalc.cli.common import write_output

    made = tempfile.mkstemp

    def interrupted(*args, **kwargs):
        fd, name = made(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.1)  # an unheld SIGINT raises KeyboardInterrupt here, losing the name
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_output("text\n", tmp_path / "out.txt")
    assert list(tmp_path.iterdir()) == []


# ---- Ctrl-C in the middle of the work: the tiles' loop, a long .npz listing ------------------
#
# Where the signal lands is made certain, not timed: the child itself sends SIGINT (a real
# signal, through Python's own handler) from inside the work under test, at a chosen call.

_CTRL_C_INSIDE = """
import os, signal, sys
target, attribute, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
import importlib
owner = importlib.import_module(target.partition(":")[0])
for part in target.partition(":")[2].split(".") if ":" in target else ():
    owner = getattr(owner, part)
original = getattr(owner, attribute)
calls = [0]
def interrupting(*args, **kwargs):
    calls[0] += 1
    if calls[0] == at:
        with open(os.environ["QKVCALC_TEST_MARK"], "w") as mark:
            mark.write("sent")
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, landing here
    return original(*args, **kwargs)
setattr(owner, attribute, interrupting)
sys.argv = ["qkvcalc", *sys.argv[4:]]
from qkvcalc.launch import main
main()
"""


def ctrl_c_inside(tmp_path: Path, where: str, attribute: str, at: int, *args: str):
    """Run qkvcalc ARGS with Ctrl-C sent at the `at`-th call of WHERE's ATTRIBUTE; the result,
    and whether the signal was sent at all (the work reached that call)."""
    mark = tmp_path / "sent"
    proc = subprocess.run(
        [sys.executable, "-c", _CTRL_C_INSIDE, where, attribute, str(at), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **PINNED_ENV, "QKVCALC_TEST_MARK": str(mark)},
        cwd=ROOT,
        timeout=120,
    )
    return proc, mark.exists()


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_ctrl_c_inside_the_tiles_loop_exits_130_with_nothing_after(tmp_path, backward):
    """Round three: Ctrl-C during `--tiles` exited 2. Sent at the second block's correction
    e^(m_old − m_new) (the online softmax's loop, before any output): exit 130, nothing on
    stdout, no traceback, and the same with the backward that reads the tiles."""
    args = ["explain", "--preset", "sentence", "--tiles", "1", "--format", "json"]
    if backward:
        args += ["--backward", "--attend", "1 2 1"]
    finished = run_qkvcalc(*args)
    assert finished.returncode == 0, finished.stderr  # without Ctrl-C it runs to its end
    proc, sent = ctrl_c_inside(tmp_path, "qkvcalc.ops.tiles", "correction", 2, *args)
    assert sent, "the tiles' loop never reached a second block"
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert proc.stdout == ""
    quiet(proc.stderr)


def _many_members_said_few(path: Path, count: int, said: int) -> Path:
    """An .npz of `count` empty members whose zip64 end record says it holds `said`: the
    count read from the end is passed, so zipfile lists every member (the long part)."""
    import struct

    from tests.test_hostile import _npz

    _npz(path, [(f"m{i}.npy", b"") for i in range(count)])
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x06\x06")
    assert at > 0, "200,000 members make a zip64 archive"
    data[at + 24 : at + 40] = struct.pack("<QQ", said, said)  # on this disk, in all
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="module")
def said_few(tmp_path_factory) -> Path:
    return _many_members_said_few(tmp_path_factory.mktemp("npz") / "many.npz", 200_000, 4)


def test_an_npz_of_200000_members_that_says_4_is_refused_by_the_count_listed(said_few):
    """The count zipfile listed, not the one the end record claims; the file named once (it
    was "in many.npz: many.npz holds …")."""
    from tests.test_hostile import assert_one_clean_message

    proc = run_qkvcalc("explain", str(said_few), timeout=120)
    assert_one_clean_message(proc, "many.npz holds 200000 members; a problem has at most 100")
    assert proc.stderr.count("many.npz") == 1, proc.stderr
    korean = run_qkvcalc("explain", str(said_few), "--lang", "ko", timeout=120)
    assert korean.returncode == 2 and korean.stdout == ""
    assert "200000" in korean.stderr and korean.stderr.count("many.npz") == 1, korean.stderr


def test_ctrl_c_while_an_npz_of_200000_members_is_listed_exits_130(tmp_path, said_few):
    """Round three: Ctrl-C while a 200,000-member .npz was read exited 2 (a damaged file).
    Sent while zipfile lists the members (at the 100,000th): exit 130, quietly."""
    proc, sent = ctrl_c_inside(
        tmp_path, "zipfile:ZipInfo", "__init__", 100_000, "explain", str(said_few)
    )
    assert sent
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert proc.stdout == ""
    quiet(proc.stderr)
