"""Many runs of the qkvcalc program inside one real process: `python -m tests.inprocess JOBS OUT`.

JOBS is a JSON list of {"argv": [...], "stdin": path or null}; OUT gets a JSON list of
{"returncode", "stdout", "stderr"}, one per job, in order. Each job is what `python -m qkvcalc
ARGV <STDIN` does, in this process: its standard descriptors 0, 1 and 2 are the job's files
(stdin the given file or /dev/null, stdout and stderr fresh temporary files), sys.stdin/stdout/
stderr are new text streams on them as Python makes them at start, sys.argv and __main__'s
package are those of `python -m qkvcalc`, the environment is put back after each job, and
qkvcalc.launch.main runs: its exit code is the job's; an exception that escapes it is written
as Python would (a traceback, exit 1). Every warning is shown every time
(a real process shows a warning at least once; here earlier jobs would otherwise hide it).

A job {"script": path} is `python PATH` instead (run_script). tests/test_hostile.py runs its
corpus through this, once, and a sample of it as real processes too, which must give the very
same results; test_extract and test_torch_script batch their runs of torch with it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path


def _stream(fd: int, mode: str, like: io.TextIOWrapper) -> io.TextIOWrapper:
    raw = open(fd, mode + "b", buffering=0 if mode == "w" else -1, closefd=False)  # noqa: SIM115
    if mode == "w":
        raw = io.BufferedWriter(raw)  # type: ignore[arg-type]
    return io.TextIOWrapper(
        raw,  # type: ignore[arg-type]
        encoding=like.encoding,
        errors=like.errors,
        line_buffering=like.line_buffering,
    )


def run_job(argv: list[str], stdin: str | None) -> dict:
    import qkvcalc
    from qkvcalc.launch import main

    here = sys.modules["__main__"]
    saved_package = here.__package__
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_env, saved_argv = dict(os.environ), sys.argv
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        source = os.open(stdin or os.devnull, os.O_RDONLY)
        for fd, target in ((0, source), (1, out.fileno()), (2, err.fileno())):
            os.dup2(target, fd)
        os.close(source)
        sys.stdin = _stream(0, "r", sys.__stdin__)  # type: ignore[arg-type]
        sys.stdout = _stream(1, "w", sys.__stdout__)  # type: ignore[arg-type]
        sys.stderr = _stream(2, "w", sys.__stderr__)  # type: ignore[arg-type]
        # as `python -m qkvcalc` has them: click names the program from these in its usage line
        here.__package__ = "qkvcalc"
        sys.argv = [str(Path(qkvcalc.__file__).with_name("__main__.py")), *argv]
        code = 0
        interrupt = signal.getsignal(signal.SIGINT)  # main leaves Ctrl-C to the system at its end
        try:
            main()
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            if isinstance(done.code, str):
                sys.stderr.write(done.code + "\n")
        except BaseException:
            sys.stderr.write(traceback.format_exc())
            code = 1
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        for fd, saved in zip((0, 1, 2), saved_fds, strict=True):
            os.dup2(saved, fd)
            os.close(saved)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv, here.__package__ = saved_argv, saved_package
        signal.signal(signal.SIGINT, interrupt)
        os.environ.clear()
        os.environ.update(saved_env)
        out.seek(0)
        err.seek(0)
        return {
            "returncode": code,
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
        }


def run_batch(
    jobs: list[dict], *, timeout: float, preexec_fn=None
) -> list[subprocess.CompletedProcess]:
    """Run these jobs ({"argv": [...], "stdin": path or None}) in one new process, from the
    repository's root, in tests/conftest.py's pinned environment; their results in order."""
    from tests.conftest import PINNED_ENV, ROOT

    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
        driver = subprocess.run(
            [sys.executable, "-m", "tests.inprocess", f"{tmp}/jobs.json", f"{tmp}/out.json"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=ROOT,
            env={**os.environ, **PINNED_ENV, "OMP_NUM_THREADS": "1"},  # tiny tensors: 1 thread
            preexec_fn=preexec_fn, timeout=timeout,
        )  # fmt: skip
        assert driver.returncode == 0, driver.stderr[-3000:]
        done = json.loads(Path(tmp, "out.json").read_text(encoding="utf-8"))
    return [
        subprocess.CompletedProcess(
            job.get("argv", job.get("script")), got["returncode"], got["stdout"], got["stderr"]
        )
        for job, got in zip(jobs, done, strict=True)
    ]


def run_script(path: str) -> dict:
    """`python PATH` in this process (runpy, so PEP 263 and `__name__ == "__main__"` hold as
    they do for a script): its exit code, stdout and stderr. PyTorch's global defaults are put
    back first, so no script can lean on what an earlier one set."""
    import runpy

    import torch

    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    out, err = io.StringIO(), io.StringIO()
    saved_argv, code = sys.argv, 0
    sys.argv = [path]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as done:
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
            except BaseException:
                err.write(traceback.format_exc())
                code = 1
    finally:
        sys.argv = saved_argv
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def run_scripts(paths: list[Path], *, timeout: float) -> list[subprocess.CompletedProcess]:
    """Run these Python scripts one after another in one new process (torch imported once)."""
    jobs = [{"script": str(path)} for path in paths]
    return run_batch(jobs, timeout=timeout)


def main() -> None:
    jobs_path, out_path = sys.argv[1:3]
    warnings.simplefilter("always")
    with open(jobs_path, encoding="utf-8") as f:
        jobs = json.load(f)
    results = [
        run_script(job["script"]) if "script" in job else run_job(job["argv"], job["stdin"])
        for job in jobs
    ]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
