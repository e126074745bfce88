"""How the console script starts (qkvcalc.launch): the garbage collector held while the program
loads, what loading made frozen once the command has loaded what it runs on, and numpy's
OpenBLAS workers told to sleep soon. Each run is a real process, started as the console script
starts: `from qkvcalc.launch import main; main()`. A program that imports qkvcalc keeps its
collector and its environment as they are.

No test here measures time (benchmarks/bench.py does, against its floor): they check what
start-up does, and the figures it was done for are in the README."""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Run in the child: spies on the collector as qkvcalc.launch uses it and on the first import of
# numpy, runs the console script's main on ARGV, and prints what they saw as JSON.
CHILD = """
import gc, json, os, sys
import qkvcalc.launch as launch

seen = {"freezes": []}

class Collector:  # qkvcalc.launch's gc, noting each freeze
    def __getattr__(self, name):
        return getattr(gc, name)

    def freeze(self):
        seen["freezes"].append(
            {"enabled": gc.isenabled(), "modules": sorted(m for m in sys.modules if "qkvcalc" in m)}
        )
        gc.freeze()

class NumpyWatch:  # what the environment says when numpy (and its OpenBLAS) loads
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and "blas" not in seen:
            seen["blas"] = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
            seen["held"] = not gc.isenabled()
        return None

launch.gc = Collector()
sys.meta_path.insert(0, NumpyWatch())
sys.argv = ["qkvcalc", *json.loads(sys.argv[1])]
code = 0
try:
    launch.main()
except SystemExit as done:
    code = done.code
sys.stdout.flush()
seen.update(code=code, enabled=gc.isenabled(), frozen=gc.get_freeze_count())
os.write(2, ("\\nSEEN " + json.dumps(seen) + "\\n").encode())
"""


def start(args: list[str], **env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**environ, "NO_COLOR": "1", "COLUMNS": "100", **env},
    )
    seen = result.stderr.rpartition("\nSEEN ")[2]
    assert seen.startswith("{"), result.stderr[-2000:]
    return {**json.loads(seen), "stdout": result.stdout, "stderr": result.stderr}


@pytest.mark.parametrize(
    ("args", "writer"),
    [
        (["explain", "--preset", "doc"], "qkvcalc.render.terminal"),
        (["explain", "--preset", "doc", "--format", "json"], "qkvcalc.render.json_doc"),
        (["explain", "--preset", "doc", "--format", "markdown"], "qkvcalc.render.markdown"),
    ],
    ids=["table", "json", "markdown"],
)
def test_explain_freezes_what_start_up_made_once_its_run_and_writer_are_loaded(args, writer):
    seen = start(args)
    assert seen["code"] in (0, None), seen["stderr"][-2000:]
    assert "Q·Kᵀ" in seen["stdout"] or '"stages"' in seen["stdout"]
    [freeze] = seen["freezes"]  # once, and the collector held until then
    assert not freeze["enabled"]
    for module in ("qkvcalc.input.problem", "qkvcalc.run.engine", "qkvcalc.plan.pipeline", writer):
        assert module in freeze["modules"], f"{module} loaded after the freeze"
    assert seen["enabled"], "the collector is back on for the run"
    assert seen["frozen"] > 10_000  # the modules, classes and functions of start-up


def test_every_other_command_collects_again_once_its_options_are_read(tmp_path):
    problem = tmp_path / "p.json"
    problem.write_text(
        json.dumps(
            {
                "x": [[1, 2]],
                "wq": [[1, 0], [0, 1]],
                "wk": [[1, 1], [0, 1]],
                "wv": [[1, 0], [1, 1]],
                "target": [[0, 0]],
            }
        )
    )
    seen = start(["train", str(problem), "--steps", "2", "--format", "json"])
    assert seen["code"] in (0, None), seen["stderr"][-2000:]
    [freeze] = seen["freezes"]
    assert not freeze["enabled"]
    assert "qkvcalc.cli.train" in freeze["modules"]
    assert seen["enabled"]


@pytest.mark.parametrize(
    "args",
    [["explain", "--heads", "two", "--preset", "doc"], ["presets", "list"], ["--version"]],
    ids=["usage error", "presets", "version"],
)
def test_a_run_that_never_loads_a_command_gives_the_collector_back_unfrozen(args):
    seen = start(args)
    assert seen["freezes"] == []
    assert seen["enabled"]
    assert seen["frozen"] == 0


def test_openblas_workers_sleep_soon_unless_the_environment_says_otherwise():
    seen = start(["explain", "--preset", "doc", "--format", "json"])
    assert seen["blas"] == "20", "set before numpy loads"
    assert seen["held"]
    assert (
        start(["explain", "--preset", "doc", "--format", "json"], OPENBLAS_THREAD_TIMEOUT="28")[
            "blas"
        ]
        == "28"
    )


def test_a_program_that_imports_qkvcalc_keeps_its_collector_and_environment():
    """The library (and the CLI called in-process, as the tests' runner does) leaves gc and
    os.environ alone: holding and freezing are the console script's own."""
    from typer.testing import CliRunner

    import qkvcalc
    from qkvcalc.cli import app
    from qkvcalc.launch import loaded

    frozen = gc.get_freeze_count()
    blas = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    qkvcalc.render(
        qkvcalc.explain(x=[1, 2], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]]),
        "markdown",
    )
    result = CliRunner().invoke(app, ["explain", "--preset", "doc", "--format", "json"])
    assert result.exit_code == 0, result.output
    loaded()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
    assert os.environ.get("OPENBLAS_THREAD_TIMEOUT") == blas


# Run in the child: the console script's main on ARGV, then the modules loaded, as JSON.
LOADED = """
import json, sys
from qkvcalc.launch import main

sys.argv = ["qkvcalc", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as done:
    assert done.code in (0, None), done.code
sys.stdout.flush()
sys.stderr.write("\\nLOADED " + json.dumps(sorted(sys.modules)) + "\\n")
"""

# …and the modules of qkvcalc/ops/ that every feature adds to what the op table's core loads
FEATURE_ONLY = """
import json, sys
import qkvcalc.ops.table
from qkvcalc.ops import features

core = set(sys.modules)
features.every()
print(json.dumps(sorted(m for m in set(sys.modules) - core if m.startswith("qkvcalc.ops."))))
"""


def loaded_by(args: list[str]) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-c", LOADED, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"},
    )
    seen = result.stderr.rpartition("\nLOADED ")[2]
    assert seen.startswith("["), result.stderr[-2000:]
    return set(json.loads(seen))


def test_a_run_loads_the_feature_modules_its_problem_uses_and_no_other():
    """The feature modules (and the op modules only they import: gdn_layer, row_rms, and base,
    where Feature is declared) are loaded when a problem uses them: the doc example uses none
    and loads none (they took about 15 ms of its start-up); the rope preset loads RoPE's module
    alone of them."""
    from qkvcalc.ops.features import TABLE

    result = subprocess.run(
        [sys.executable, "-c", FEATURE_ONLY], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    feature_only = set(json.loads(result.stdout))
    modules = {f"qkvcalc.ops.{module}" for _, module, _ in TABLE}
    assert modules <= feature_only
    assert {"qkvcalc.ops.base", "qkvcalc.ops.gdn_layer", "qkvcalc.ops.row_rms"} <= feature_only
    assert not loaded_by(["explain", "--preset", "doc"]) & feature_only
    rope = loaded_by(["explain", "--preset", "rope", "--format", "json"]) & feature_only
    assert rope & modules == {"qkvcalc.ops.rope"}


REST_OF_CORE = {f"qkvcalc.ops.{m}" for m in ("cache", "tiles", "grads", "loss", "flash_grads")}


def test_a_forward_run_loads_the_core_ops_it_runs_and_not_the_backward_or_the_cache():
    """The op table holds the forward core from the start; the KV cache's, the tiles', the
    backward pass's and the loss's ops are imported when a plan first asks for one (they took
    about 5 ms of the doc example's start-up); the runs that use them still find them."""
    assert not loaded_by(["explain", "--preset", "doc"]) & REST_OF_CORE
    assert {"qkvcalc.ops.grads", "qkvcalc.ops.loss"} <= loaded_by(
        ["explain", "--preset", "learn", "--backward", "--format", "json"]
    )
    assert "qkvcalc.ops.cache" in loaded_by(["explain", "--preset", "decode"])
    assert "qkvcalc.ops.tiles" in loaded_by(["explain", "--preset", "tiles"])


def test_a_backward_through_a_borrowed_norm_loads_only_the_modules_it_imports(tmp_path):
    """BitNet's norm over the joined heads (sub_norm) reuses lightning's ops, its backward's too
    (rms_share, rms_back, norm_weight_grad): the op table finds them among the modules already
    imported, so --backward loads what its forward loads and no other feature module."""
    from tests.test_sub_norm import DOC

    path = tmp_path / "normed.json"
    path.write_text(json.dumps(DOC | {"target": [[0, 0]] * len(DOC["x"])}), encoding="utf-8")
    forward = loaded_by(["explain", str(path), "--format", "json"])
    backward = loaded_by(["explain", str(path), "--backward", "--format", "json"])
    ops = {m for m in backward if m.startswith("qkvcalc.ops.")}
    assert {"qkvcalc.ops.sub_norm", "qkvcalc.ops.lightning"} <= ops
    assert not {"qkvcalc.ops.mla", "qkvcalc.ops.rope", "qkvcalc.ops.indexer"} & ops
    assert ops - {m for m in forward if m.startswith("qkvcalc.ops.")} <= REST_OF_CORE


def test_the_registry_table_names_each_feature_as_its_module_declares_it():
    """features.TABLE (the name, module and keys it imports a module by) agrees with each
    module's own Feature, in the table's order; every key is in the fields table; and no op
    name is declared twice, among the features or beside the core's (the op table looks a
    feature's op up among the features loaded so far)."""
    from qkvcalc.input.fields import VARIANT_KEYS
    from qkvcalc.ops import cache, features, flash_grads, grads, loss, table, tiles

    for name, module, keys in features.TABLE:
        feature = importlib.import_module(f"qkvcalc.ops.{module}").FEATURE
        assert features.load(name) is feature
        assert (feature.name, feature.keys) == (name, keys)
        assert {name, *keys} <= set(VARIANT_KEYS)
    assert [f.name for f in features.every()] == [name for name, _, _ in features.TABLE]
    names = [op.name for f in features.every() for op in f.ops]
    assert len(names) == len(set(names))
    core = [op.name for module in table._FORWARD for op in module.OPS]
    core += [op.name for module in (cache, tiles) for op in module.OPS]
    core += [*grads.OPS, *(op.name for op in loss.OPS), *flash_grads.OPS]
    assert len(core) == len(set(core))
    assert list(table._rest_of_core()) == core[len(core) - len(table._rest_of_core()) :]
    assert not set(core) & set(names)
    assert list(table.OPS) == [*core, *names]  # whatever was loaded first
    for f in features.every():
        for op in f.ops:
            assert table.OPS[op.name] is op


def test_an_entry_set_in_the_op_table_stays_as_set():
    """A test may set an op table entry (monkeypatch.setitem), as it could when the table was a
    dict: neither a feature's ops joining it later nor listing it puts the original back."""
    from qkvcalc.ops import features, table

    fresh = table._Table({})
    features.load("wg")
    own = fresh["sigmoid"]  # the output gate's, among the features loaded
    fresh["sigmoid"] = mine = own._replace(in_words=not own.in_words)
    with pytest.raises(KeyError):
        fresh["no such op"]  # a miss: the loaded features' ops join, then every feature's
    assert fresh["sigmoid"] is mine
    every = [op.name for f in features.every() for op in f.ops]
    # listed: the rest of the core's (the table's own forward core is empty here), then every
    # feature's, in the registry's order
    assert list(fresh) == [*table._rest_of_core(), *every]
    assert fresh["sigmoid"] is mine
    del fresh["sigmoid"]
    assert "sigmoid" not in list(fresh)
