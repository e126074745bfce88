"""Shared fixtures: run the CLI in-process (typer's CliRunner) or as a real subprocess."""

from __future__ import annotations

import compileall
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qkvcalc.cli import app

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"

# A pinned, colourless, English environment: renders do not depend on the machine.
PINNED_ENV = {
    "COLUMNS": "100",
    "LINES": "50",
    "NO_COLOR": "1",
    "LANG": "C.UTF-8",
    "LC_ALL": "",
    "QKVCALC_LANG": "",
    "TERM": "dumb",
    "QKVCALC_PAGER": "cat",  # a long table on a pseudo-terminal is printed, not paged
}


def pytest_configure(config):
    """qkvcalc's bytecode, written once before any test, as an installed package has it (pip
    compiles at install; an editable install leaves it to the first import, which
    PYTHONDONTWRITEBYTECODE forbids): the suite's hundreds of `python -m qkvcalc` processes then
    load it instead of compiling every module again (80 ms a process here). Once, in the process
    that starts pytest-xdist's workers."""
    if not hasattr(config, "workerinput"):
        compileall.compile_dir(ROOT / "qkvcalc", quiet=1)
    # A suite started in the background by a shell without job control (`pytest … &` in a
    # script) has SIGINT ignored, and every process it starts would inherit that: the Ctrl-C
    # tests' qkvcalc would never see their Ctrl-C. Python's own handler again, as in a terminal.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# Modules whose module-scoped fixtures are costly (tiny models built and extracted, batches of
# torch runs, the browser and its pages): with pytest-xdist, all of a module's tests go to one
# worker, so that each fixture is made once, not once a worker; every other test is scheduled
# on its own, as `--dist load` does.
ONE_WORKER = {
    "test_extract",
    "test_extract_big",
    "test_extract_mla",
    "test_extract_more",
    "test_heads",
    "test_hostile",
    "test_page",
    "test_torch_script",
}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: without it, plain pytest runs
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    if config.getvalue("dist") != "load":
        return None  # a --dist asked for on the command line: xdist's own
    if not callable(getattr(LoadScopeScheduling, "_split_scope", None)):
        return None  # an xdist without the method overridden here: its own `--dist load`

    class OneWorkerModules(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return module if Path(module).stem in ONE_WORKER else nodeid

    return OneWorkerModules(config, log)


def _invoke(args: tuple[str, ...], input: str | bytes | None, env: dict | None):
    return CliRunner().invoke(
        app, list(args), input=input, env={**PINNED_ENV, **(env or {})}, catch_exceptions=False
    )


@pytest.fixture
def cli():
    """Invoke the app in-process: cli("explain", "--preset", "doc", input="...")."""

    def invoke(*args: str, input: str | bytes | None = None, env: dict | None = None):
        return _invoke(args, input, env)

    return invoke


def in_process(
    *args: str, input: bytes | str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """`run_qkvcalc`'s twin in this process (the `cli` fixture's run, as a finished process):
    for a test of what a command prints or refuses, where nothing is about the process itself
    (its streams, signals, memory or start). The same result: exit code, stdout and stderr."""
    result = _invoke(args, input, env)
    return subprocess.CompletedProcess(
        ["qkvcalc", *args], result.exit_code, result.stdout, result.stderr
    )


def run_qkvcalc(
    *args: str,
    input: bytes | str | None = None,
    env: dict | None = None,
    timeout: float = 60,
    stdin=None,
    preexec_fn=None,
) -> subprocess.CompletedProcess:
    """Run `python -m qkvcalc ARGS` as a real process; stdout and stderr as text.

    `stdin`: a file or another process's stdout to read instead of `input`; `preexec_fn` runs
    in the child before qkvcalc starts (test_hostile bounds its memory with it)."""
    data = input.encode() if isinstance(input, str) else input
    full_env = {**os.environ, **PINNED_ENV, **(env or {})}
    if stdin is None and data is None:
        stdin = subprocess.DEVNULL
    proc = subprocess.run(
        [sys.executable, "-m", "qkvcalc", *args],
        input=data,
        capture_output=True,
        env=full_env,
        timeout=timeout,
        cwd=ROOT,
        stdin=stdin,
        preexec_fn=preexec_fn,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


@pytest.fixture
def qkvcalc_proc():
    return run_qkvcalc


def spawn_qkvcalc(*args: str, cwd: Path = ROOT, shell: str | None = None):
    """`python -m qkvcalc ARGS` on a real pseudo-terminal (pexpect), 100×50, pinned env; or,
    with `shell`, that bash command line (for pipes into a program that still has a terminal)."""
    import pexpect

    program, argv = ("bash", ["-c", shell]) if shell else (sys.executable, ["-m", "qkvcalc", *args])
    return pexpect.spawn(
        program,
        argv,
        cwd=str(cwd),
        env={**os.environ, **PINNED_ENV},
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 100),
    )


# The system calls a program blocks in while it waits for input, by machine: Linux's
# /proc/PID/syscall starts with the call's number, then its arguments.
_WAITING_CALLS = {
    "x86_64": {"read": "0", "poll": "7", "select": "23", "pselect6": "270", "ppoll": "271"},
    "aarch64": {"read": "63", "pselect6": "72", "ppoll": "73"},
}


def wait_until_waiting_for_input(pid: int, fd: int | None = None, limit: float = 60) -> None:
    """Wait until process `pid` is blocked waiting for input: in read() (on file descriptor
    `fd` when given), or in select() or poll() when no `fd` is given.

    Seeing a prompt on the terminal is not enough to know the program has got there, and a
    test of Ctrl-C at a prompt should send it at the prompt: one that lands just before the
    wait begins is noted by CPython and acted on a slice later (qkvcalc.interactive.waiting;
    test_signals.py tests that case on its own). Where the kernel or the machine does not say,
    the wait is over."""
    import platform

    calls = _WAITING_CALLS.get(platform.machine())
    if calls is None:
        return
    waiting = {calls["read"]} if fd is not None else set(calls.values())
    path = Path(f"/proc/{pid}/syscall")
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            fields = path.read_text().split()
        except FileNotFoundError:
            pytest.fail(f"process {pid} ended while the test waited for it to read its input")
        except OSError:
            return
        if _state(pid) in ("Z", "X", None):
            pytest.fail(f"process {pid} ended while the test waited for it to read its input")
        if fields[:1] == ["running"] or not fields:  # on a CPU now: not blocked yet
            time.sleep(0.02)
            continue
        if not fields[0].isdigit():
            return  # a kernel that does not say
        if fields[0] in waiting and (fd is None or int(fields[1], 16) == fd):
            return
        time.sleep(0.02)
    pytest.fail(f"process {pid} never got to waiting for its input")


def _state(pid: int) -> str | None:
    """The one-letter state in /proc/PID/stat (after the command's name in parentheses)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def interrupt_at_prompt(child) -> None:
    """Ctrl-C on `child`'s terminal (pexpect) once it waits for what is typed."""
    wait_until_waiting_for_input(child.pid)
    child.sendintr()


def one_message(result, *fragments: str) -> None:
    """Bad input teaches: exit 2, nothing on stdout, one line on stderr (no traceback) holding
    every fragment. `result` is a finished process or a batched run (returncode, stdout, stderr),
    or an in-process run of the `cli` fixture (exit_code)."""
    code = result.returncode if hasattr(result, "returncode") else result.exit_code
    assert code == 2, (code, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
