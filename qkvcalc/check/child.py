"""The parent's side of the child process that runs a person's code (qkvcalc.check.runner): it
starts it, sends each problem, and waits for the answer within a time limit; a call that does
not return in time ends the child (a new one serves the next call).

Answers are JSON of plain numbers (read with json, never unpickled). What the person's code
prints (the child points its standard output at its standard error) is not shown.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.plan import ids

START_LIMIT = 60.0  # seconds to import the person's module (torch takes a few)


@dataclass(frozen=True)
class Answer:
    """What one call gave: the output (and weights, or the stages by id), or what it raised."""

    output: np.ndarray | None = None
    weights: np.ndarray | None = None
    stages: dict[str, np.ndarray] | None = None
    raised: tuple[str, str] | None = None  # (type, message)


class TimedOut(Exception):
    """A call that did not return within the time limit."""


def _array(rows: Any) -> np.ndarray:
    return np.asarray(rows, dtype=np.float64)


def encode(value: Any) -> Any:
    """An argument as JSON: a matrix as its rows (and whether it is a mask), else as it is."""
    if isinstance(value, np.ndarray):
        return {"matrix": value.tolist(), "bool": value.dtype == bool}
    if isinstance(value, np.generic):
        return value.item()
    return value


class Child:
    """The person's FILE.py imported in a process of its own, its FUNCTION ready to call."""

    def __init__(self, path: Path, function: str, use_torch: bool, time_limit: float) -> None:
        self.path, self.function = path, function
        self.use_torch, self.time_limit = use_torch, time_limit
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> dict[str, Any]:
        """Start the child; its first message (the parameters, or why there are none)."""
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parent.parent.parent)  # where qkvcalc is imported from
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        for threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(threads, "1")  # small problems: one thread each, no spinning
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "qkvcalc.check.runner",
                str(self.path.resolve()),
                self.function,
                "torch" if self.use_torch else "numpy",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(self.path.resolve().parent),
            env=env,
        )
        self.buffer = b""
        return self._read(START_LIMIT)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self.proc = None

    def _read(self, limit: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + limit
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.stop()
                raise TimedOut
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the child ended (os._exit, a crash, killed)
                code = self.proc.wait()
                self.stop()
                return {"ended": code}
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        message: dict[str, Any] = json.loads(line)
        return message

    def call(self, args: list[tuple[str, Any, bool]]) -> Answer:
        """One call of FUNCTION (a fresh child if the last one ended); TimedOut after the limit."""
        if self.proc is None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        request = {"args": [[name, encode(value), pos] for name, value, pos in args]}
        try:
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            self.stop()
            return Answer(raised=("SystemExit", "the process ended"))
        message = self._read(self.time_limit)
        return self._answer(message)

    def _answer(self, message: dict[str, Any]) -> Answer:
        if "ended" in message:
            return Answer(
                raised=("SystemExit", f"the process ended (exit code {message['ended']})")
            )
        if "raised" in message:
            raised = message["raised"]
            return Answer(raised=(str(raised["type"]), str(raised["message"])))
        if "unusable" in message:
            what = message["unusable"]
            raise QkvcalcError("check.bad_return", function=self.function, type=what["type"])
        stages = message.get("stages")
        if stages is not None:
            if message.get(ids.OUTPUT) is None:
                raise QkvcalcError("check.no_output_stage", function=self.function)
            stages = {k: _array(v) for k, v in stages.items()}
        weights = message.get("weights")
        return Answer(
            output=_array(message["output"]),
            weights=None if weights is None else _array(weights),
            stages=stages,
        )
