"""`explain --stages ID,ID… --head H`: some stages of the run, in every format and in --step, with
the ids unchanged; an unknown id or a head out of range is one message that lists the valid ones.
Also qkvcalc.select.select, the library function the command uses."""

from __future__ import annotations

import json

import pytest

from qkvcalc.errors import QkvcalcError
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from qkvcalc.select import select, stage_ids
from tests.conftest import in_process
from tests.test_step import finish, spawn


def json_of(*args: str) -> dict:
    result = in_process("explain", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def one_error(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_stages_in_json_keep_their_ids_and_order():
    whole = json_of("--preset", "multihead")
    chosen = json_of("--preset", "multihead", "--stages", "output,weights")
    assert [(s["id"], s["head"]) for s in chosen["stages"]] == [
        ("weights", 1), ("output", 1), ("weights", 2), ("output", 2), ("output", None)
    ]  # fmt: skip
    same = {(s["id"], s["head"]): s for s in whole["stages"]}
    for stage in chosen["stages"]:
        assert stage == same[(stage["id"], stage["head"])]
    assert chosen["output"] == whole["output"]
    assert chosen["problem"] == whole["problem"]


def test_head_keeps_that_heads_stages_and_the_shared_ones():
    doc = json_of("--preset", "gqa", "--head", "3")
    heads = {s["head"] for s in doc["stages"]}
    assert heads == {None, 3}
    ids = [s["id"] for s in doc["stages"] if s["head"] is None]
    assert ids == ["x", "split", "concat", "output"]
    doc = json_of("--preset", "gqa", "--head", "3", "--stages", "weights")
    assert [(s["id"], s["head"]) for s in doc["stages"]] == [("weights", 3)]


def test_single_head_problem_has_head_1():
    doc = json_of("--preset", "sentence", "--head", "1", "--stages", "masked")
    assert [(s["id"], s["head"]) for s in doc["stages"]] == [("masked", None)]
    one_error(in_process("explain", "--preset", "sentence", "--head", "2"), "no head 2", "1 to 1")


def test_unknown_stage_lists_the_valid_ones():
    one_error(
        in_process("explain", "--preset", "doc", "--stages", "weights,masked"),
        "'masked'",
        "x, q, k, v, kt, scores, scaled, exp, weights, output",
    )
    one_error(in_process("explain", "--preset", "doc", "--stages", " , "), "x, q, k")
    one_error(in_process("explain", "--preset", "multihead", "--head", "0"), "no head 0", "1 to 2")
    result = in_process("explain", "--preset", "doc", "--stages", "foo", "--lang", "ko")
    one_error(result, "'foo'", "단계")


@pytest.mark.parametrize(
    ("fmt", "shown", "hidden"),
    [
        ("table", "Attention scores", "Key projection"),
        ("txt", "Attention scores", "Key projection"),
        ("markdown", "Attention scores", "Key projection"),
        ("latex", "Attention scores", "Key projection"),
        ("html", "Attention scores", "Key projection"),
        ("svg", "Attention", "Key"),
    ],
)
def test_every_format_shows_only_the_chosen_stages(fmt, shown, hidden):
    result = in_process(
        "explain", "--preset", "multihead", "--stages", "scores", "--head", "2", "--format", fmt
    )
    assert result.returncode == 0, result.stderr
    assert shown in result.stdout
    assert hidden not in result.stdout


def test_step_mode_walks_the_chosen_stages():
    child = spawn("--preset", "multihead", "--stages", "scores,weights", "--head", "1", "--step")
    child.expect_exact("q quit")  # the first screen is the problem
    child.send(" ")
    child.expect_exact("stage 1 of 2 — Q·Kᵀ · head 1")
    child.send(" ")
    child.expect_exact("stage 2 of 2")
    child.send(" ")
    child.expect_exact("All 2 stages shown.")
    assert finish(child) == 0


def test_the_library_function():
    trace = run(Problem.from_mapping(presets.load("gqa")))
    chosen = select(trace, ["weights"], head=4)
    assert [(s.id, s.head) for s in chosen.stages] == [("weights", 4)]
    assert (chosen.output == trace.output).all()  # lookups still reach the whole run
    assert chosen.stage("exp", 4) is trace.stage("exp", 4)
    again = select(chosen, "weights")  # a selection of a selection
    assert [(s.id, s.head) for s in again.stages] == [("weights", 4)]
    assert stage_ids(trace)[:3] == ["x", "split", "q"]
    with pytest.raises(QkvcalcError, match="no head 5"):
        select(trace, head=5)
    with pytest.raises(QkvcalcError, match="no stage 'masks'"):
        select(trace, "masks")
    assert select(trace) is not trace and len(select(trace).stages) == len(trace.stages)
