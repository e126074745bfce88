"""--format torch: the script runs, and what it prints is qkvcalc's output to 1e-9.

The presets and a few hand-picked edge cases run as real processes with this interpreter
(`python script.py`, as a user would); a wider set of generated problems is executed in-process
(the same script text, exec'd), which keeps the file fast. Without torch everything here skips.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings

from qkvcalc import presets
from qkvcalc.engine import run
from qkvcalc.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.torch_script import render_torch

pytest.importorskip("torch", reason="the script needs PyTorch; pip install torch==2.13.0")

from tests.test_torch_oracle import ORACLE, problems  # after the skip: it needs torch

TOL = 1e-9
SDPA = "F.scaled_dot_product_attention output:"
MHA = "nn.MultiheadAttention output:"


def script_of(doc: dict[str, Any]) -> tuple[str, np.ndarray]:
    trace = run(Problem.from_mapping(doc))
    return render_torch(trace, RenderOptions()), trace.output


def printed_outputs(stdout: str) -> dict[str, np.ndarray]:
    """The matrices the script printed, by heading: each row is a printed Python list."""
    found: dict[str, list[list[float]]] = {}
    current: list[list[float]] | None = None
    for line in stdout.splitlines():
        if line in (SDPA, MHA):
            current = found.setdefault(line, [])
        elif line.startswith("[") and current is not None:
            current.append([float(v) for v in line.strip("[]").split(", ")])
        else:
            current = None
    return {k: np.array(v) for k, v in found.items()}


def run_script(text: str, tmp_path) -> str:
    path = tmp_path / "attention.py"
    path.write_text(text, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def exec_script(text: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "<qkvcalc torch script>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


def check(stdout: str, expected: np.ndarray, *, mha: bool) -> None:
    got = printed_outputs(stdout)
    assert SDPA in got, stdout
    np.testing.assert_allclose(got[SDPA], expected, rtol=TOL, atol=TOL)
    assert (MHA in got) == mha, stdout
    if mha:
        live = ~np.isnan(got[MHA]).any(axis=1)  # MHA gives NaN where every key is masked
        np.testing.assert_allclose(got[MHA][live], expected[live], rtol=TOL, atol=TOL)


# ---- presets and edge cases, as real processes ---------------------------------------------

# Which presets nn.MultiheadAttention can reproduce: multi-head, one K/V head per query head.
PRESET_MHA = {"multihead": True, "gqa": False, "cross": False}


@pytest.mark.parametrize("name", sorted(presets.names()))
def test_preset_script_prints_qkvcalcs_output(name, tmp_path):
    text, expected = script_of(presets.load(name))
    check(run_script(text, tmp_path), expected, mha=PRESET_MHA.get(name, False))


EDGE_CASES = {
    "torch layout with every bias, two heads, W_O and b_O": {
        "layout": "torch",
        "heads": 2,
        "x": [[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 1, 1]],
        "wq": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[0, 1, 0, 1], [1, 0, 1, 0], [1, 1, 1, 0], [0, 1, 1, 1]],
        "wv": [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1]],
        "wo": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "bq": [0.5, -1, 0, 1],
        "bk": [1, 0, 0, -0.5],
        "bv": [0, 1, 2, 3],
        "bo": [1, 1, -1, -1],
        "mask": "causal",
        "key_padding": [1, 1, 0],
    },
    "cross-attention, causal with n < m, a custom scale": {
        "heads": 2,
        "x": [[1, 0], [0, 1]],
        "source": [[1, 1], [0, 2], [1, -1], [2, 0]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "wo": [[1, 2], [3, 4]],
        "mask": "causal",
        "scale": "1/sqrt(3)",
    },
    "a custom mask with a fully masked row": {
        "heads": 2,
        "x": [[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 1, 1]],
        "wq": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[0, 1, 0, 1], [1, 0, 1, 0], [1, 1, 1, 0], [0, 1, 1, 1]],
        "wv": [[1, 0, 0, 0], [0, 2, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1]],
        "mask": [[0, 0, 0], [1, 0, 1], [1, 1, 1]],
    },
    "Q, K, V given directly, grouped-query": {
        "heads": 4,
        "kv_heads": 2,
        "q": [[1, 0, 2, 1], [0, 1, 1, -1]],
        "k": [[1, 2], [0, 1], [2, 2]],
        "v": [[1, 0], [0, 1], [1, 1]],
    },
}
EDGE_MHA = [True, False, True, False]


@pytest.mark.parametrize(
    ("doc", "mha"), list(zip(EDGE_CASES.values(), EDGE_MHA, strict=True)), ids=list(EDGE_CASES)
)
def test_edge_case_script_prints_qkvcalcs_output(doc, mha, tmp_path):
    text, expected = script_of(doc)
    check(run_script(text, tmp_path), expected, mha=mha)


def test_fully_masked_row_is_zero_in_sdpa_and_nan_in_the_module(tmp_path):
    text, expected = script_of(EDGE_CASES["a custom mask with a fully masked row"])
    assert "returns NaN (0/0)" in text  # the script warns about it
    got = printed_outputs(run_script(text, tmp_path))
    assert (got[SDPA][0] == 0).all() and (expected[0] == 0).all()
    assert np.isnan(got[MHA][0]).all()


# ---- generated problems, in-process --------------------------------------------------------


@settings(ORACLE, max_examples=60)
@given(problems())
def test_generated_problem_script_prints_qkvcalcs_output(doc):
    text, expected = script_of(doc)
    stdout = exec_script(text)
    got = printed_outputs(stdout)
    np.testing.assert_allclose(got[SDPA], expected, rtol=TOL, atol=TOL)
    if MHA in got:
        live = ~np.isnan(got[MHA]).any(axis=1)
        np.testing.assert_allclose(got[MHA][live], expected[live], rtol=TOL, atol=TOL)


@settings(ORACLE, max_examples=40)
@given(problems(mha=True))
def test_module_is_used_wherever_it_can_represent_the_problem(doc):
    text, expected = script_of(doc)
    multihead = doc["heads"] > 1 or "wo" in doc
    assert ("mha = torch.nn.MultiheadAttention(" in text) == multihead
    if multihead:
        got = printed_outputs(exec_script(text))
        live = ~np.isnan(got[MHA]).any(axis=1)
        np.testing.assert_allclose(got[MHA][live], expected[live], rtol=TOL, atol=TOL)


# ---- what the script says ------------------------------------------------------------------


def test_mask_comments_translate_the_three_conventions():
    text, _ = script_of(presets.load("padding"))
    assert "True = MAY attend" in text
    assert "True = BLOCKED" in text
    assert 'masked_fill(~allowed, float("-inf"))' in text


def test_gqa_script_says_why_the_module_cannot_represent_it():
    text, _ = script_of(presets.load("gqa"))
    assert "enable_gqa=True" in text
    assert "nn.MultiheadAttention cannot represent this problem" in text
    assert "grouped-query attention (4 query heads, 2 K/V heads)" in text
    assert "mha = torch.nn.MultiheadAttention(" not in text


def test_input_text_cannot_escape_into_code():
    doc = {
        "name": "evil\nraise SystemExit('name')",
        "tokens": ["a'\nraise SystemExit(1)#", "\u2028b\x1b[31m"],
        "x": [[1, 0], [0, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 0], [0, 1]],
        "wv": [[1, 0], [0, 1]],
    }
    text, expected = script_of(doc)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(text, "<script>", "exec"), namespace)
    assert namespace["tokens"] == doc["tokens"]
    np.testing.assert_allclose(printed_outputs(out.getvalue())[SDPA], expected, atol=TOL)


def test_cli_writes_the_script_for_a_py_output(cli, tmp_path):
    target = tmp_path / "attention.py"
    result = cli("explain", "--preset", "multihead", "--output", str(target))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# qkvcalc --format torch (preset multihead)")
    result = cli("explain", "--preset", "multihead", "--format", "torch")
    assert result.stdout == text
    doc = json.loads(cli("explain", "--preset", "multihead", "--format", "json").stdout)
    check(run_script(text, tmp_path), np.array(doc["output"]), mha=True)
