"""`qkvcalc check --stages THEIRS.(npz|json) (SOURCE | --preset NAME)`: a person's own tensors,
by stage id, graded against the problem's trace. No code runs: an .npz is read with
allow_pickle=False, a JSON file as data.

Their file names stages `ID` or `ID@hH` (head H, 1-based): an .npz's members, a JSON object's
keys, or qkvcalc's own trace JSON ("qkvcalc.trace/1"). The verdict is check's: the first stage
and cell that differ, and the named mistake whose mutant gives their numbers.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from qkvcalc.check.child import Answer
from qkvcalc.check.grade import explaining, first_difference, same
from qkvcalc.check.problems import Case
from qkvcalc.check.reference import Stages, key, run
from qkvcalc.check.verdict import Verdict
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.limits import MAX_BYTES

NONFINITE = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}


def _number(value: Any) -> Any:
    if isinstance(value, list):
        return [_number(v) for v in value]
    return NONFINITE.get(value, value) if isinstance(value, str) else value


def _matrix(value: Any, name: str, path: Path) -> np.ndarray:
    try:
        array = np.asarray(_number(value), dtype=np.float64)
    except (TypeError, ValueError):
        raise QkvcalcError("check.stage_not_numbers", path=str(path), stage=name) from None
    return array


def read(path: Path) -> dict[str, np.ndarray]:
    """Their stages by key ("weights", "weights@h2"), from an .npz or a JSON file."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as err:
        raise QkvcalcError("check.unreadable", path=str(path), reason=err.strerror or "") from None
    if len(data) > MAX_BYTES:
        raise QkvcalcError("check.unreadable", path=str(path), reason=f"over {MAX_BYTES} bytes")
    if data[:2] == b"PK":
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                return {name: _matrix(npz[name], name, path) for name in npz.files}
        except ValueError as err:  # an object array (it would need pickle), a broken member
            raise QkvcalcError("check.unreadable", path=str(path), reason=str(err)) from None
    from qkvcalc.input.parse import load_json

    doc = load_json(data)
    if not isinstance(doc, dict):
        raise QkvcalcError("check.stages_not_object", path=str(path))
    if doc.get("schema") == "qkvcalc.trace/1" and isinstance(doc.get("stages"), list):
        return {
            key(str(s.get("id")), s.get("head")): _matrix(s.get("value"), str(s.get("id")), path)
            for s in doc["stages"]
            if isinstance(s, dict) and s.get("value") is not None
        }
    return {str(name): _matrix(value, str(name), path) for name, value in doc.items()}


def _right(trace: Any) -> Stages:
    return {key(s.id, s.head): s.value for s in trace.stages if s.step is None and s.block is None}


def _fields(problem: Any) -> dict[str, Any]:
    """The problem as the reference pipeline reads it (mutants are tried only when the
    reference gives its trace's numbers: a problem with features of its own names none)."""
    out: dict[str, Any] = {}
    for name in ("x", "wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", "q", "k", "v"):
        value = getattr(problem, name, None)
        if value is not None:
            out[name] = np.asarray(value.values, dtype=np.float64)
    for name in ("bq", "bk", "bv", "bo"):
        if name in out:
            out[name] = out[name].reshape(-1)
    if problem.heads > 1 or problem.kv_heads != problem.heads:
        out["heads"], out["kv_heads"] = problem.heads, problem.kv_heads
    if problem.mask_kind == "causal":
        out["mask"] = "causal"
    elif problem.mask is not None:
        out["mask"] = np.asarray(problem.mask, dtype=bool)
    if problem.scale_given:
        out["scale"] = problem.scale
    rope = problem.variants.features.get("rope")
    if rope is not None:  # RoPE (qkvcalc.ops.rope.Rope), in the input format's keys
        out["rope"] = {"theta": rope.theta, "style": rope.style, "dims": rope.dims}
        if rope.inv_freq_given:
            out["rope"]["inv_freq"] = rope.inv_freq.tolist()
        if rope.attention_factor != 1:
            out["rope"]["attention_factor"] = rope.attention_factor
        if problem.variants.positions_given:
            out["positions"] = problem.variants.positions.tolist()
            out["key_positions"] = problem.variants.key_positions.tolist()
    return out


def check_stages(path: Path, doc: dict[str, Any]) -> Verdict:
    """Grade the stages in `path` against the problem `doc` (the input format)."""
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run as explain

    theirs = read(path)
    trace = explain(Problem.from_mapping(doc))
    right = _right(trace)
    unknown = sorted(set(theirs) - set(right))
    if not theirs:
        raise QkvcalcError("check.stages_empty", path=str(path), known=", ".join(right))
    if unknown:
        raise QkvcalcError(
            "check.unknown_stage", path=str(path), stage=unknown[0], known=", ".join(right)
        )
    fields = _fields(trace.problem)
    answer = Answer(output=theirs.get("output"), stages=theirs)
    case = Case("given", fields)
    mine = _reference(fields, right)
    verdict = Verdict("right", 1, style="qkv" if "q" in fields else "x", stages_file=True)
    if not same(answer, right):
        verdict.verdict = "wrong"
        verdict.first = first_difference(answer, right)
        verdict.mistake = explaining([case], [answer]) if mine else None
        if mine:  # shown worked out, their numbers beside the right ones
            verdict.smallest, verdict.theirs = case, answer
    return verdict


def _reference(fields: dict[str, Any], right: Stages) -> bool:
    """Whether the reference pipeline gives this problem's trace (then mutants apply)."""
    if trace_only(fields):
        return False
    try:
        mine = run(fields)
    except (ValueError, KeyError, IndexError):
        return False
    return all(k in right and np.allclose(v, right[k], equal_nan=True) for k, v in mine.items())


def trace_only(fields: dict[str, Any]) -> bool:
    return not ({"q", "k", "v"} <= set(fields) or {"x", "wq", "wk", "wv"} <= set(fields))
