"""--format torch with --backward: the script builds the loss, runs autograd in float64 and
compares every gradient qkvcalc computed with torch's.

The 19 feature combinations × 3 losses of tests/test_backward.py are written to files and run
as `python script.py` would run them, in one real process (tests/inprocess.py); a mismatch and
the CLI's own script run as processes of their own. Without torch everything here skips.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest

from qkvcalc.render import RenderOptions
from qkvcalc.render.torch_script import render_torch
from tests.test_backward import FEATURES, LOSSES, backward_trace, make

pytest.importorskip("torch", reason="the script needs PyTorch; pip install torch==2.13.0")

from tests.conftest import ROOT
from tests.inprocess import run_scripts

CASES = [(f, loss) for f in FEATURES for loss in LOSSES]
LINE = re.compile(
    r"^(d\S+(?: \(head \d+\))?): max \|autograd - qkvcalc\| = (\S+) \(largest (\S+)\)$", re.M
)


def script(doc: dict[str, Any]) -> str:
    return render_torch(backward_trace(doc), RenderOptions())


def expected_names(doc: dict[str, Any]) -> set[str]:
    """The gradients the script must compare, from the problem alone."""
    heads, kv = doc["heads"], doc["kv_heads"]
    flows = "attend" not in doc
    names = {"dQ", "dW_Q", "dW_K", "dX"}
    per_head = [f" (head {h})" for h in range(1, heads + 1)] if heads > 1 or "wo" in doc else [""]
    names |= {f"dA{h}" for h in per_head}
    if kv == heads:
        names.add("dK")
    if flows:
        names |= {"dO", "dW_V"}
        if kv == heads:
            names.add("dV")
            names |= {f"dV{h}" for h in per_head if h}
    if "wo" in doc and flows:
        names.add("dW_O")
    if "bo" in doc and flows:
        names.add("db_O")
    for b in ("bq", "bk") + (("bv",) if flows else ()):
        if b in doc:
            names.add(f"db_{b[1].upper()}")
    if "source" in doc:
        names.add("dsource")
    if "sinks" in doc:
        names.add("dsigma")
    return names


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[tuple[str, str], subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("backward_scripts")
    paths = []
    for k, (feature, loss) in enumerate(CASES):
        path = root / f"{k}_{feature}_{loss}.py"
        path.write_text(script(make(feature, loss, seed=k)), encoding="utf-8")
        paths.append(path)
    results = run_scripts(paths, timeout=120 + 20 * len(paths))
    return dict(zip(CASES, results, strict=True))


@pytest.mark.parametrize(("feature", "loss"), CASES)
def test_every_gradient_equals_autograds(ran, feature, loss):
    result = ran[(feature, loss)]
    assert result.returncode == 0, result.stderr
    found = {name: (float(d), float(size)) for name, d, size in LINE.findall(result.stdout)}
    doc = make(feature, loss, seed=CASES.index((feature, loss)))
    assert set(found) == expected_names(doc)
    assert all(d <= 1e-12 * max(1.0, size) for d, size in found.values()), found
    assert "OK: PyTorch agrees with qkvcalc" in result.stdout
    assert ("loss L =" in result.stdout) == (loss != "grad_output")


def test_a_wrong_gradient_exits_1_and_names_it(tmp_path):
    text = script(make("biases", "target", seed=3))
    assert "compare('dW_Q', W_Q.grad," in text
    path = tmp_path / "attention.py"
    path.write_text(text.replace("compare('dW_Q', W_Q.grad,", "compare('dW_Q', W_Q.grad * 1.001,"))
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "MISMATCH: max |dW_Q - qkvcalc|" in proc.stderr
    assert "MISMATCH" not in proc.stderr.replace("MISMATCH: max |dW_Q", "")


def test_the_cli_writes_a_backward_script_that_runs(tmp_path):
    out = tmp_path / "grad.py"
    cli = [sys.executable, "-m", "qkvcalc", "explain", "--preset", "sentence"]
    args = ["--attend", "1 1 2", "--backward", "--format", "torch", "--output", str(out)]
    subprocess.run([*cli, *args], check=True, cwd=ROOT, capture_output=True)
    proc = subprocess.run([sys.executable, str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "dW_Q: max |autograd - qkvcalc|" in proc.stdout


def test_input_text_stays_an_ascii_literal_off_the_first_two_lines():
    doc = make("plain", "attend", seed=1)
    doc["tokens"] = ["# -*- coding: unicode_escape -*-", "\u00e9\\n", "'\"", "x\nimport os"]
    doc["name"] = "\u2028 coding: latin-1"
    text = script(doc)
    assert text.isascii()
    assert "coding" not in "".join(text.splitlines()[:2])
    compile(text, "<script>", "exec")


TILED = [(f, loss) for f in ("plain", "multihead", "gqa", "causal", "sinks") for loss in LOSSES]


@pytest.fixture(scope="module")
def ran_tiled(tmp_path_factory) -> dict[tuple[str, str], subprocess.CompletedProcess]:
    """The same problems in tiles of 3 keys (--tiles 3 --backward): the run has no whole dA,
    only the blocks' dP_b; the script ended in KeyError before it was written."""
    root = tmp_path_factory.mktemp("tiled_backward_scripts")
    paths = []
    for k, (feature, loss) in enumerate(TILED):
        doc = make(feature, loss, seed=100 + k) | {"tiles": 3}
        path = root / f"{k}_{feature}_{loss}.py"
        path.write_text(script(doc), encoding="utf-8")
        paths.append(path)
    results = run_scripts(paths, timeout=120 + 20 * len(paths))
    return dict(zip(TILED, results, strict=True))


@pytest.mark.parametrize(("feature", "loss"), TILED)
def test_a_tiled_backward_script_checks_the_same_gradients(ran_tiled, feature, loss):
    result = ran_tiled[(feature, loss)]
    assert result.returncode == 0, result.stderr
    found = {name: (float(d), float(size)) for name, d, size in LINE.findall(result.stdout)}
    doc = make(feature, loss, seed=100 + TILED.index((feature, loss)))
    assert set(found) == expected_names(doc)
    assert all(d <= 1e-12 * max(1.0, size) for d, size in found.values()), found
    assert "OK: PyTorch agrees with qkvcalc" in result.stdout
