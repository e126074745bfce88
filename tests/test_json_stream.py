"""The JSON trace, streamed (render.json_doc.write_json): the same document as trace_json
builds in memory, written stage by stage and block of rows by block of rows; and its "input",
which `qkvcalc explain trace.json` runs again."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions, json_doc
from qkvcalc.render.json_doc import render_json, trace_json, write_json
from qkvcalc.run.engine import run


def _random_problem(seed: int = 3, n: int = 7, d: int = 6) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((n, d)).tolist(),
        "wq": rng.standard_normal((d, d)).tolist(),
        "wk": rng.standard_normal((d, d // 3)).tolist(),
        "wv": rng.standard_normal((d, 5)).tolist(),
        "wo": rng.standard_normal((15, 4)).tolist(),
        "bq": rng.standard_normal(d).tolist(),
        "heads": 3,
        "kv_heads": 1,
        "mask": "causal",
        "key_padding": [1] * (n - 1) + [0],
    }


PROBLEMS = {name: presets.load(name) for name in presets.names()} | {"random": _random_problem()}


@pytest.mark.parametrize("name", sorted(PROBLEMS))
@pytest.mark.parametrize("detail", ["full", "brief"])
def test_the_stream_is_the_document(name, detail, monkeypatch):
    """Small blocks (3 numbers) so that every matrix is written in several blocks."""
    monkeypatch.setattr(json_doc, "BLOCK_CELLS", 3)
    trace = run(Problem.from_mapping(PROBLEMS[name]))
    opts = RenderOptions(detail=detail)
    out = io.StringIO()
    write_json(trace, opts, out)
    assert json.loads(out.getvalue()) == trace_json(trace, opts)
    assert out.getvalue() == render_json(trace, opts)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(trace.stages) + 9  # one line per stage


def test_recipe_stages_are_computed_by_blocks_of_rows(monkeypatch):
    """A stage kept as a recipe is never asked for whole: only value_rows, a block at a time."""
    from qkvcalc.trace import Stage

    monkeypatch.setattr(json_doc, "BLOCK_CELLS", 8)
    trace = run(Problem.from_mapping(_random_problem(n=9)))
    asked: list[int] = []
    original = Stage.value_rows

    def spy(self, rows):
        asked.append(len(rows))
        return original(self, rows)

    monkeypatch.setattr(Stage, "value_rows", spy)
    monkeypatch.setattr(Stage, "value", property(lambda self: pytest.fail("whole value read")))
    write_json(trace, RenderOptions(), io.StringIO())
    assert asked and max(asked) <= 8


def test_ascii_only_is_the_same_document_in_ascii():
    trace = run(Problem.from_mapping(presets.load("sentence")))
    opts = RenderOptions(lang="ko")
    out = io.StringIO()
    write_json(trace, opts, out, ascii_only=True)
    assert out.getvalue().isascii()
    assert json.loads(out.getvalue()) == trace_json(trace, opts)


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_explain_of_a_trace_runs_its_input_again(cli, tmp_path, name):
    src = tmp_path / "problem.json"
    src.write_text(json.dumps(PROBLEMS[name]))
    first = cli("explain", str(src), "--format", "json")
    assert first.exit_code == 0, first.output
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(first.stdout)
    again = cli("explain", str(trace_file), "--format", "json")
    assert again.exit_code == 0, again.output
    assert again.stdout == first.stdout
    table = cli("explain", str(trace_file))
    assert table.stdout == cli("explain", str(src)).stdout


def test_input_is_in_the_rows_layout():
    doc = {**presets.load("doc"), "layout": "torch"}
    doc["wq"] = np.array(doc["wq"]).T.tolist()
    doc["wk"] = np.array(doc["wk"]).T.tolist()
    doc["wv"] = np.array(doc["wv"]).T.tolist()
    trace = run(Problem.from_mapping(doc))
    given = trace_json(trace, RenderOptions())["input"]
    assert given["layout"] == "rows"
    assert given["wk"] == [[1.0, 1.0], [0.0, 1.0]]  # the doc preset's W_K, as rows


def test_a_brief_trace_leaves_big_input_matrices_out_and_says_so(cli, tmp_path, monkeypatch):
    """--detail brief leaves out matrices of more than 10,000 numbers, in "input" as in the
    stages; running such a trace again is one message that names them."""
    monkeypatch.setattr(json_doc, "BRIEF_VALUE_CELLS", 4)
    src = tmp_path / "problem.json"
    src.write_text(json.dumps(_random_problem()))
    first = cli("explain", str(src), "--format", "json", "--detail", "brief")
    doc = json.loads(first.stdout)
    assert doc["input"]["x"] is None and doc["input"]["bq"] is not None
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(first.stdout)
    again = cli("explain", str(trace_file))
    assert again.exit_code == 2
    assert "--detail brief" in again.output and "x, wq, wk, wv, wo" in again.output


def test_a_trace_without_its_input_is_one_message(cli, tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": "qkvcalc.trace/1", "stages": []}))
    result = cli("explain", str(path))
    assert result.exit_code == 2
    assert "without its" in result.output
