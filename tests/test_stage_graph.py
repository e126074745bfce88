"""The stage graph: one plan read by the engine, exact mode, the quiz and the renderers, and the
library that does everything the command line does.

The plan is checked against the engine's output (every stage's operands are the values of the
stages it names), the ops against an independent computation, and the library's answers against
the real command line's.
"""

from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import qkvcalc
from qkvcalc.input.presets import load
from qkvcalc.input.problem import Problem
from qkvcalc.ops.table import OPS
from qkvcalc.plan.schedule import plan
from qkvcalc.plan.specs import Const
from qkvcalc.run.engine import run
from tests.conftest import ROOT, in_process, run_qkvcalc

PRESETS = sorted(p.stem for p in (ROOT / "presets").glob("*.json"))


def _problem(name: str) -> Problem:
    return Problem.from_mapping(load(name))


@pytest.mark.parametrize("name", PRESETS)
def test_every_stage_reads_earlier_stages_and_its_operands_are_their_values(name):
    """A record knows its inputs (micrograd's `_prev`): each operand a stage names is an earlier
    stage of the same trace, and the value it recorded is that stage's value."""
    trace = run(_problem(name))
    seen: dict[tuple, np.ndarray] = {}  # by reference: (id, head), or (id, head, step, block)
    for stage in trace.stages:
        assert stage.op in OPS
        for operand, value in zip(stage.reads, stage.operands, strict=True):
            if isinstance(operand, Const):
                np.testing.assert_array_equal(value, operand.value)
            else:
                assert operand in seen, f"{stage.id} reads {operand} before it exists"
                np.testing.assert_array_equal(value, seen[operand])
        seen[stage.ref] = stage.value


@pytest.mark.parametrize("name", PRESETS)
def test_executing_each_op_again_on_its_operands_gives_the_recorded_value(name):
    """What the quiz does with a student's numbers, done with the true ones. A rational stage
    records the double nearest its exact value (qkvcalc.run.exact), which numpy's own sum of the
    same operands may miss by its rounding: a few units in the last place, never more; every
    other stage is numpy's value, bit for bit."""
    exact = {s.ref: s.exact for s in run(Problem.from_mapping(load(name), exact=True)).stages}
    for stage in run(_problem(name)).stages:
        again = OPS[stage.op].compute(list(stage.operands), stage.params, None)
        if exact[stage.ref] is None:
            np.testing.assert_array_equal(again, stage.value)
        else:
            finite = np.isfinite(stage.value)
            np.testing.assert_array_equal(again[~finite], stage.value[~finite])
            np.testing.assert_array_max_ulp(again[finite], stage.value[finite], maxulp=64)


@pytest.mark.parametrize("name", PRESETS)
def test_row_wise_stages_computed_for_some_rows_equal_those_rows(name):
    trace = run(_problem(name))
    for stage in trace.stages:
        rows = list(range(0, stage.shape[0], 2))
        np.testing.assert_array_equal(stage.value_rows(rows), stage.value[rows])


@pytest.mark.parametrize("name", PRESETS)
def test_the_feeds_rule_names_cells_that_change_the_result(name):
    """Change every operand cell the rule does NOT name for one output cell: the cell stays.
    (The rule is what the grader follows to trace a carried mistake.)"""
    trace = run(_problem(name))
    rng = np.random.default_rng(0)
    for stage in trace.stages:
        if not stage.reads or stage.shape[0] * stage.shape[1] > 64:
            continue
        operands = [np.array(m, dtype=float) for m in stage.operands]
        shapes = [m.shape for m in operands]
        i, j = stage.shape[0] - 1, stage.shape[1] - 1
        named = set(OPS[stage.op].feeds(i, j, shapes, stage.params))
        changed = []
        for k, m in enumerate(operands):
            noise = m + rng.uniform(0.5, 1.5, m.shape)
            for a, b in np.ndindex(m.shape):
                if (k, a, b) not in named:
                    m[a, b] = noise[a, b]
            changed.append(m)
        again = OPS[stage.op].compute(changed, stage.params, None)
        assert again[i, j] == pytest.approx(stage.value[i, j], nan_ok=True), stage.id


def test_the_plan_is_the_trace_stage_for_stage():
    p = _problem("gqa")
    specs = plan(p)
    trace = run(p)
    assert [(s.id, s.head, s.op) for s in specs] == [(s.id, s.head, s.op) for s in trace.stages]


def test_the_split_is_recorded_as_data_from_the_plan():
    p = _problem("gqa")
    split = run(p).stage("split")
    table = split.value.astype(int)
    for h, row in enumerate(table, start=1):
        g = p.kv_head_of(h)
        assert row.tolist() == [
            (h - 1) * p.d_k + 1,
            h * p.d_k,
            (g - 1) * p.d_k + 1,
            g * p.d_k,
            (g - 1) * p.d_v + 1,
            g * p.d_v,
            g,
        ]


def test_stage_ids_and_ops_are_switched_on_nowhere_but_the_plan_and_the_op_table():
    """Adding a stage is a plan entry (and an op): no module outside the plan (qkvcalc/plan/) and
    the op table compares a stage's id or op with a literal."""
    pattern = re.compile(r"\.(id|op)\s*(==|!=|in|not in)\s*[\"'(\[]")
    offenders = []
    for path in (ROOT / "qkvcalc").rglob("*.py"):
        if path.parent.name == "plan" or path.name == "ops.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_lazy_stages_cache_on_their_trace_not_in_the_process():
    import qkvcalc.trace as trace_module

    assert not any(
        isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)
        and isinstance(node.value, ast.Call)
        for node in ast.parse(Path(trace_module.__file__).read_text()).body
    ), "a module-level cache in qkvcalc/trace.py"
    one = qkvcalc.explain(
        x=[[1, 2], [0, 1]], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]]
    )
    two = qkvcalc.explain(
        x=[[1, 2], [0, 1]], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]]
    )
    one.stage("weights").value  # noqa: B018 - computing it fills the cache of `one` only
    assert one.cache.kept and not two.cache.kept


# ---- the library does what the command line does ----------------------------------------------


DOC = {"x": [1, 2], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]], "wv": [[1, 0], [1, 1]]}


def test_explain_exact_in_python():
    trace = qkvcalc.explain(**DOC, exact=True)
    assert str(trace.stage("scaled").exact[0][0]) == "7/√2"
    assert str(trace.stage("scores").exact[0][0]) == "7"


def test_explain_max_elements_in_python():
    with pytest.raises(qkvcalc.QkvcalcError):
        qkvcalc.explain(**DOC, max_elements=3)


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html", "json", "torch", "svg"])
def test_render_in_python_is_the_command_lines_text(fmt):
    """Documents are laid out for the page whatever the terminal: COLUMNS=70 changes nothing."""
    trace = qkvcalc.explain(**load("sentence"))
    proc = in_process("explain", "--preset", "sentence", "--format", fmt, env={"COLUMNS": "70"})
    assert proc.returncode == 0, proc.stderr
    assert qkvcalc.render(trace, fmt) == proc.stdout


def test_render_table_in_python_at_a_width_is_the_command_lines_table():
    trace = qkvcalc.explain(**load("sentence"))
    proc = in_process("explain", "--preset", "sentence", env={"COLUMNS": "70"})
    expected = "\n".join(line.rstrip() for line in proc.stdout.splitlines())
    got = "\n".join(line.rstrip() for line in qkvcalc.render(trace, width=70).splitlines())
    assert got == expected


def test_render_an_unknown_format_is_one_error():
    with pytest.raises(qkvcalc.QkvcalcError, match="html"):
        qkvcalc.render(qkvcalc.explain(**DOC), "pdf")


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.md", "markdown"),
        ("A.TEX", "latex"),
        ("x.htm", "html"),
        ("y.py", "torch"),
        ("z", "table"),
    ],
)
def test_format_for_a_file_name(name, fmt):
    assert qkvcalc.format_for(name) == fmt


@pytest.mark.parametrize("fmt", ["table", "markdown", "latex", "html"])
def test_exact_cells_show_the_surd_in_every_format(fmt):
    proc = in_process("explain", "--preset", "doc", "--exact", "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    surd = r"7/\sqrt{2} \approx 4.9497" if fmt == "latex" else "7/√2 ≈ 4.9497"
    work = surd.count("4.9497")
    # in the scaled stage's table, not only in its arithmetic
    assert proc.stdout.count(surd) >= 2 * work, proc.stdout


@pytest.mark.parametrize("width", [50, 64, 120])
def test_rich_print_of_a_trace_fits_the_console_it_is_printed_on(width):
    trace = qkvcalc.explain(**load("sentence"))
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(trace)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= width
    # laid out for that width: the 3×3 weights are whole, not cut at the edge
    assert any(re.fullmatch(r"\s+A\s+I\s+love\s+cats\s*", line) for line in lines)


def test_svg_on_stdout_and_in_a_file_are_the_same_picture(tmp_path):
    out = tmp_path / "doc.svg"
    to_file = run_qkvcalc("explain", "--preset", "doc", "--output", str(out), env={"COLUMNS": "80"})
    to_stdout = run_qkvcalc("explain", "--preset", "doc", "--format", "svg", env={"COLUMNS": "80"})
    assert to_file.returncode == 0 and to_stdout.returncode == 0
    assert out.read_text(encoding="utf-8") == to_stdout.stdout
