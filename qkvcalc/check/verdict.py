"""`qkvcalc check FILE.py:FUNCTION`: run a person's attention on problems small to large, and say
whether it is right, where it first parts from the right answer, which named mistake explains
it, and the smallest problem that shows it.

Plain: no rich, no printing. The person's code runs only in the child process
(qkvcalc.check.child); the right answers come from the reference pipeline, held equal to
qkvcalc.explain by the tests.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from qkvcalc.check.child import Answer, Child, TimedOut
from qkvcalc.check.grade import (
    Difference,
    explaining,
    first_difference,
    same,
    wrong_shape,
)
from qkvcalc.check.mutants import mutant
from qkvcalc.check.problems import Case, Param, Signature, cases, match, smaller
from qkvcalc.check.reference import run
from qkvcalc.errors import QkvcalcError

DEFAULT_PROBLEMS = 40
DEFAULT_TIME_LIMIT = 10.0  # seconds a call may take
MAX_PROBLEMS = 10_000
MAX_SHRINK = 60  # calls spent looking for a smaller problem


@dataclass
class Verdict:
    """What a check found (the "qkvcalc.check/1" document is made of it)."""

    verdict: str  # right | wrong | error
    problems_tried: int
    mistake: str | None = None
    first: Difference | None = None
    smallest: Case | None = None  # the smallest problem that shows it …
    theirs: Answer | None = None  # … and the person's answer to it
    raised: list[tuple[str, str, str]] = field(default_factory=list)  # (problem, type, message)
    style: str = "qkv"
    stages_file: bool = False  # --stages: one problem, their own tensors


def imports_torch(source: str) -> bool:
    """Whether a module's source imports torch (read, never run)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "torch" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            return True
    return False


def _open(path: Path, function: str, use_torch: bool | None) -> bool:
    """The errors found before any code runs; whether the function gets torch tensors."""
    if not path.is_file():
        raise QkvcalcError("check.no_file", path=str(path))
    if not function.isidentifier():
        raise QkvcalcError("check.bad_function_name", function=function)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise QkvcalcError("check.unreadable", path=str(path), reason=str(err)) from None
    wants = use_torch or imports_torch(source)
    if wants and importlib.util.find_spec("torch") is None:
        raise QkvcalcError("check.no_torch", path=str(path))
    return wants


def _signature(child: Child, path: Path, function: str) -> Signature:
    first = child.start()
    if "params" in first:
        return match(function, [Param(*p) for p in first["params"]])
    if "no_function" in first:
        names = ", ".join(first["no_function"]) or "—"
        raise QkvcalcError("check.no_function", path=str(path), function=function, names=names)
    if "not_callable" in first:
        raise QkvcalcError("check.not_callable", function=function, type=first["not_callable"])
    if "import_raised" in first:
        raised = first["import_raised"]
        raise QkvcalcError(
            "check.import_raised", path=str(path), type=raised["type"], message=raised["message"]
        )
    raise QkvcalcError("check.child_ended", path=str(path))


def _call(child: Child, sig: Signature, case: Case) -> Answer:
    order = list(sig.names)  # the roles in the function's own parameter order
    args = [(sig.names[r], case.args[r], r in sig.positional) for r in order if r in case.args]
    try:
        return child.call(args)
    except TimedOut:
        raise QkvcalcError(
            "check.timed_out",
            function=child.function,
            problem=case.name,
            seconds=f"{child.time_limit:g}",
        ) from None


def check_function(
    path: str | Path,
    function: str,
    *,
    use_torch: bool | None = None,
    problems: int = DEFAULT_PROBLEMS,
    seed: int = 0,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> Verdict:
    """Check FUNCTION of the file at `path` (see the module's docstring). Raises QkvcalcError
    when it cannot be checked: no such file or function, a signature it cannot call, a call
    that outlived `time_limit`, a return value that is not numbers or an output of the wrong
    shape that no named mistake explains."""
    path = Path(path)
    if not 1 <= problems <= MAX_PROBLEMS:
        raise QkvcalcError("check.problems_count", count=problems)
    if not (math.isfinite(time_limit) and time_limit > 0):
        raise QkvcalcError("check.time_limit", seconds=time_limit)
    wants_torch = _open(path, function, use_torch)
    with Child(path, function, wants_torch, time_limit) as child:
        sig = _signature(child, path, function)
        tried = cases(sig, problems, seed)
        answers = [_call(child, sig, case) for case in tried]
        verdict = _grade(tried, answers, sig)
        if verdict.verdict == "wrong" and verdict.mistake is None:
            _shapes(function, tried, answers)
        if verdict.verdict != "error":
            _nondeterminism(child, sig, tried, answers, verdict)
        if verdict.verdict == "wrong" and verdict.mistake != "nondeterministic":
            _shrink(child, sig, verdict, seed)
    return verdict


def _shapes(function: str, tried: list[Case], answers: list[Answer]) -> None:
    """An output of the wrong shape that no named mistake explains is bad input (exit 2), not
    a verdict. (A named mistake may change the shape: W_O left out gives n×(H·d_v); K·Qᵀ in an
    einsum that broadcasts gives m rows.)"""
    for case, answer in zip(tried, answers, strict=True):
        found = wrong_shape(answer, case.problem)
        if found is not None:
            theirs, right = ("×".join(str(n) for n in s) for s in found)
            raise QkvcalcError(
                "check.output_shape",
                function=function,
                problem=case.name,
                theirs=theirs,
                right=right,
            )


def _grade(tried: list[Case], answers: list[Answer], sig: Signature) -> Verdict:
    raised = [(c.name, *a.raised) for c, a in zip(tried, answers, strict=True) if a.raised]
    for case, answer in zip(tried, answers, strict=True):
        if answer.raised is None and not same(answer, run(case.problem)):
            return Verdict(
                "wrong",
                len(tried),
                explaining(tried, list(answers)),
                first_difference(answer, run(case.problem)),
                case,
                answer,
                raised,
                sig.style,
            )
    return Verdict("error" if raised else "right", len(tried), raised=raised, style=sig.style)


def _nondeterminism(
    child: Child, sig: Signature, tried: list[Case], answers: list[Answer], verdict: Verdict
) -> None:
    """The function called again, nothing reseeded, on the first problems of a few tokens it
    answered (twice each: dropout that keeps 90% can give one problem the same answer twice):
    another answer is `nondeterministic`."""
    again_on = [
        (c, a)
        for c, a in zip(tried, answers, strict=True)
        if a.raised is None and c.name in ("doc", "square", "random shapes")
    ]
    for case, answer in again_on:
        for _ in range(2):
            again = _call(child, sig, case)
            if again.raised is None and not _same_answer(answer, again):
                verdict.verdict, verdict.mistake = "wrong", "nondeterministic"
                right = run(case.problem)
                verdict.first = first_difference(answer, right) or first_difference(again, right)
                verdict.smallest, verdict.theirs = case, answer
                return


def _same_answer(a: Answer, b: Answer) -> bool:
    pairs = [(a.output, b.output), (a.weights, b.weights)]
    pairs += [(a.stages.get(k), b.stages.get(k)) for k in a.stages] if a.stages and b.stages else []
    for x, y in pairs:
        if (x is None) != (y is None):
            return False
        if (
            x is not None
            and y is not None
            and not (x.shape == y.shape and np.allclose(x, y, rtol=1e-9, atol=0, equal_nan=True))
        ):
            return False
    return True


def _shrink(child: Child, sig: Signature, verdict: Verdict, seed: int) -> None:
    """The smallest problem like the first that showed it where their answer still parts from
    the right one (and, when a mistake is named, is that mistake's answer)."""
    assert verdict.smallest is not None
    for case in smaller(sig, verdict.smallest, seed)[:MAX_SHRINK]:
        answer = _call(child, sig, case)
        if answer.raised is not None or (
            verdict.mistake is None and wrong_shape(answer, case.problem) is not None
        ):
            continue
        right = run(case.problem)
        if same(answer, right):
            continue
        if verdict.mistake is not None and not same(answer, mutant(verdict.mistake, case.problem)):
            continue
        verdict.smallest, verdict.theirs = case, answer
        verdict.first = first_difference(answer, right)
        return


def problem_fields(case: Case) -> dict[str, Any]:
    """A problem as the input format writes it (lists; a causal mask as "causal")."""
    out: dict[str, Any] = {}
    for name, value in case.problem.items():
        if isinstance(value, np.ndarray):
            out[name] = value.astype(int).tolist() if value.dtype == bool else value.tolist()
        else:
            out[name] = value
    return out
