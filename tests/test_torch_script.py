"""--format torch: the script runs, and what it prints is qkvcalc's output to 1e-9.

The presets, a few hand-picked edge cases and the decode runs are written to files and run as
`python script.py` would run them, all in one real process with this interpreter
(tests/inprocess.py: runpy, the script's own exit code and output), which imports torch once
for all of them; a script that must be its own process (an encoding declaration, a mismatch's
exit code, the fully masked row, the cache bug) runs as one, as a user would. A wider set of
generated problems is executed in the test process (the same script text, exec'd). Without
torch everything here skips.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qkvcalc.input import presets
from qkvcalc.input.dataset import first_example
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.torch_script import render_torch
from qkvcalc.run.engine import run

pytest.importorskip("torch", reason="the script needs PyTorch; pip install torch==2.13.0")

from tests.conftest import ROOT
from tests.inprocess import run_scripts
from tests.test_torch_oracle import ORACLE, problems  # after the skip: it needs torch

TOL = 1e-9
SDPA = "the output of F.scaled_dot_product_attention:"
MHA = "nn.MultiheadAttention output:"
# with a softcap, which SDPA has no place for
WRITTEN_OUT = "the output of attention, its steps written out in torch:"


def script_of(doc: dict[str, Any]) -> tuple[str, np.ndarray]:
    trace = run(Problem.from_mapping(doc))
    return render_torch(trace, RenderOptions()), trace.output


def printed_outputs(stdout: str) -> dict[str, np.ndarray]:
    """The matrices the script printed, by heading: each row is its token's repr, then a
    printed Python list."""
    found: dict[str, list[list[float]]] = {}
    current: list[list[float]] | None = None
    for line in stdout.splitlines():
        if line in (SDPA, MHA, WRITTEN_OUT):
            current = found.setdefault(line, [])
        elif line[:1] in ("'", '"') and line.endswith("]") and current is not None:
            _, _, row = line.rpartition(" [")
            current.append([float(v) for v in row.rstrip("]").split(", ")])
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


@pytest.fixture(scope="module")
def markers(tmp_path_factory) -> Path:
    """The folder of the files a token's payload would create (test_a_name_that_declares_…)."""
    return tmp_path_factory.mktemp("markers")


@pytest.fixture(scope="module")
def batched(tmp_path_factory, markers) -> dict[str, tuple[str, np.ndarray]]:
    """The scripts of the presets, the edge cases, the decode runs and the names that declare an
    encoding, each written to its own folder and run by run_scripts (runpy: a declaration is
    honoured as when Python runs the file), all in one process: key -> (stdout, qkvcalc's
    output); a script that exits non-zero fails its test with its stderr."""
    docs = {
        # a data set's preset as the problem its first example is, as explain reads it
        **{f"preset {name}": first_example(presets.load(name)) for name in sorted(presets.names())},
        **{f"edge {name}": doc for name, doc in EDGE_CASES.items()},
        **{f"decode {name}": doc for name, doc in DECODE_CASES.items()},
        **{
            f"encoding {name}": {**SMALL, "name": name, "tokens": ["a", payload(markers / str(k))]}
            for k, name in enumerate(DECLARING_NAMES)
        },
    }
    root = tmp_path_factory.mktemp("scripts")
    paths, expected = [], []
    for k, doc in enumerate(docs.values()):
        text, output = script_of(doc)
        (root / str(k)).mkdir()
        paths.append(root / str(k) / "attention.py")
        paths[-1].write_text(text, encoding="utf-8")
        expected.append(output)
    results = run_scripts(paths, timeout=120 + 20 * len(paths))
    return {
        key: (
            result.stdout
            if result.returncode == 0
            else f"exit {result.returncode}: {result.stderr}",
            output,
        )
        for key, result, output in zip(docs, results, expected, strict=True)
    }


def ran(batched, key: str) -> tuple[str, np.ndarray]:
    stdout, expected = batched[key]
    assert not stdout.startswith("exit "), stdout
    return stdout, expected


def in_this_process(path) -> subprocess.CompletedProcess:
    """`python PATH` run in this process (tests/inprocess.py's run_script: runpy, its own
    stdout, stderr and exit code); the scripts run as processes of their own above and below."""
    from tests.inprocess import run_script as run_here

    got = run_here(str(path))
    return subprocess.CompletedProcess(str(path), got["returncode"], got["stdout"], got["stderr"])


def exec_script(text: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(text, "<qkvcalc torch script>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


PLAN = re.compile(r"^max \|the plan in torch - qkvcalc\| = (\S+)$", re.MULTILINE)


def check(stdout: str, expected: np.ndarray, *, mha: bool) -> None:
    # qkvcalc's plan, applied in torch stage by stage, gives qkvcalc's output
    (plan,) = PLAN.findall(stdout)
    assert float(plan) <= TOL * max(1.0, float(np.abs(expected).max())), stdout
    got = printed_outputs(stdout)
    first = SDPA if SDPA in got else WRITTEN_OUT
    assert first in got, stdout
    np.testing.assert_allclose(got[first], expected, rtol=TOL, atol=TOL)
    assert (MHA in got) == mha, stdout
    if mha:
        live = ~np.isnan(got[MHA]).any(axis=1)  # MHA gives NaN where every key is masked
        np.testing.assert_allclose(got[MHA][live], expected[live], rtol=TOL, atol=TOL)


# ---- presets and edge cases, as real processes ---------------------------------------------

# Which presets nn.MultiheadAttention can reproduce: all whose widths fit its one embed_dim
# (gqa: d_model 2 but H·d_k 4; cross: d_v 2 but d_k 4).
# The module's one width, or a step it has no place for (RoPE, a bias, a softcap)
PRESET_MHA = {
    "gqa": False,
    "cross": False,
    "dk64": False,
    "pronoun": False,
    "learn": False,  # d_model 4, d_k 2, as pronoun
    "llama": False,
    "rope": False,
    "bf16rope": False,  # RoPE
    "alibi": False,
    "referent": False,  # cross-attention (the sentence is the source): MHA cannot say it
    "referent64": False,
    "diff": False,  # differential attention: pairs of heads, which MHA has no place for
    "deltanet": False,  # a Gated DeltaNet layer: a state, not softmax attention
    "dsa": False,  # multi-head latent attention with an indexer's top-k: no W_Q, W_K, W_V
    "mla": False,  # multi-head latent attention: no W_Q, W_K, W_V
    "kda": False,  # a Kimi Delta Attention layer: a state, not softmax attention
    "lightning": False,  # a lightning-attention layer: a state, not softmax attention
}


@pytest.mark.parametrize("name", sorted(presets.names()))
def test_preset_script_prints_qkvcalcs_output(batched, name):
    stdout, expected = ran(batched, f"preset {name}")
    check(stdout, expected, mha=PRESET_MHA.get(name, True))


@pytest.mark.parametrize("name", ["doc", "llama"])
def test_a_preset_script_as_its_own_process_prints_what_the_batch_printed(batched, name, tmp_path):
    text, _ = script_of(presets.load(name))
    assert run_script(text, tmp_path) == ran(batched, f"preset {name}")[0]


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
    "grouped-query with a custom scale and every bias, which the module represents": {
        "heads": 4,
        "kv_heads": 2,
        "x": [[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 1, 1]],
        "wq": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[0, 1], [1, 0], [1, 1], [0, 1]],
        "wv": [[1, 0], [0, 2], [0, 0], [1, 0]],
        "bq": [0.5, -1, 0, 1],
        "bk": [1, -0.5],
        "bv": [0, 3],
        "scale": 0.25,
        "key_padding": [1, 0, 1],
    },
    "every modern variant: sinusoid, q/k norm, RoPE pairs, ALiBi, softcap, a window": {
        "heads": 2,
        "kv_heads": 1,
        "tokens": ["the", "cat", "sat"],
        "x": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
        "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[1, 0], [0, 1], [1, 1], [0, 1]],
        "wv": [[1, 0], [0, 1], [1, 0], [0, 1]],
        "mask": "causal",
        "window": 2,
        "positional": "sinusoidal",
        "q_norm": [1, 0.5],
        "k_norm": [1, 2],
        "rope": {"theta": 10000, "style": "pairs"},
        "alibi": True,
        "softcap": 5,
    },
    "RoPE half at given positions, bottom-right, a score bias per head": {
        "heads": 2,
        "q": [[1, 0, 2, 1], [0, 1, 1, -1]],
        "k": [[1, 2, 0, 1], [0, 1, 1, 1], [2, 2, 1, 0]],
        "v": [[1, 0, 1, 1], [0, 1, 2, 0], [1, 1, 0, 1]],
        "mask": "causal",
        "causal_align": "bottom-right",
        "rope": {"theta": 100, "dims": 2, "attention_factor": 1.5},
        "score_bias": [[[0, -1, -2], [0.5, 0, -1]], [[1, 0, 0], [0, 0, 0.25]]],
    },
    "q/k LayerNorm per head with a bias, grouped-query, after RoPE (HunYuan, Cohere)": {
        "heads": 2,
        "kv_heads": 1,
        "x": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
        "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[1, 0], [0, 1], [1, 1], [0, 1]],
        "wv": [[1, 0], [0, 1], [1, 0], [0, 1]],
        "mask": "causal",
        "q_norm": [[1, 0.5], [2, -1]],
        "k_norm": [[0.5, 1.5]],
        "norm_eps": 1e-5,
        "qk_norm": {"kind": "layer", "bias": {"q": [[0.1, 0], [0, -0.2]]}, "after_rope": True},
        "rope": {"theta": 100},
    },
    "q/k RMSNorm and LayerNorm over the whole projection (OLMo 2), grouped-query": {
        "heads": 2,
        "kv_heads": 1,
        "x": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
        "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[1, 0], [0, 1], [1, 1], [0, 1]],
        "wv": [[1, 0], [0, 1], [1, 0], [0, 1]],
        "q_norm": [1, 0.5, 2, 1.5],
        "k_norm": [1, -1],
        "qk_norm": {"over": "projection"},
        "rope": {"theta": 10},
    },
    "attention temperature (Llama 4's NoPE layers) after a q norm": {
        "heads": 2,
        "kv_heads": 1,
        "x": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [2, 0, 1, 1]],
        "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[1, 0], [0, 1], [1, 1], [0, 1]],
        "wv": [[1, 0], [0, 1], [1, 0], [0, 1]],
        "mask": "causal",
        "q_norm": [1, 2],
        "attn_temperature": {"floor_scale": 2, "attn_scale": 0.5},
    },
    "chunks of 2 at given positions with RoPE (Llama 4's chunked layers), grouped-query": {
        "heads": 2,
        "kv_heads": 1,
        "x": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [2, 0, 1, 1]],
        "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "wk": [[1, 0], [0, 1], [1, 1], [0, 1]],
        "wv": [[1, 0], [0, 1], [1, 0], [0, 1]],
        "mask": "causal",
        "positions": [1, 2, 3, 5],
        "chunk_size": 2,
        "rope": {"theta": 10000},
    },
}
EDGE_MHA = [True, True, True, True, True, False, False, False, False, False, False]


@pytest.mark.parametrize(
    ("name", "mha"), list(zip(EDGE_CASES, EDGE_MHA, strict=True)), ids=list(EDGE_CASES)
)
def test_edge_case_script_prints_qkvcalcs_output(batched, name, mha):
    stdout, expected = ran(batched, f"edge {name}")
    check(stdout, expected, mha=mha)


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


def representable(doc: dict[str, Any]) -> bool:
    """Whether nn.MultiheadAttention can hold the problem, from the document alone: its one
    width embed_dim = H·d_k must be the query input's (X, or Q itself), H·d_v, and W_O's."""
    heads, kv_heads = doc["heads"], doc.get("kv_heads", doc["heads"])
    torch_layout = doc.get("layout") == "torch"

    def shape(name: str) -> tuple[int, int]:
        rows, cols = np.array(doc[name]).shape
        return (cols, rows) if torch_layout and name.startswith("w") else (rows, cols)

    direct = "q" in doc
    e = shape("q" if direct else "wq")[1]
    d_v = shape("v" if direct else "wv")[1] // kv_heads
    d_in = e if direct else shape("x")[1]
    wo_ok = "wo" not in doc or shape("wo")[1] == heads * d_v
    return d_in == e and heads * d_v == e and wo_ok


@settings(ORACLE, max_examples=60)
@given(problems(mha=False))
def test_module_is_used_wherever_it_can_represent_the_problem(doc):
    text, expected = script_of(doc)
    assert ("mha = torch.nn.MultiheadAttention(" in text) == representable(doc), text
    got = printed_outputs(exec_script(text))
    if MHA in got:
        live = ~np.isnan(got[MHA]).any(axis=1)
        np.testing.assert_allclose(got[MHA][live], expected[live], rtol=TOL, atol=TOL)
    else:
        assert "nn.MultiheadAttention cannot represent this problem" in text


@settings(ORACLE, max_examples=30)
@given(problems(mha=True))
def test_module_is_used_for_every_problem_made_for_it(doc):
    text, expected = script_of(doc)
    assert "mha = torch.nn.MultiheadAttention(" in text
    got = printed_outputs(exec_script(text))
    live = ~np.isnan(got[MHA]).any(axis=1)
    np.testing.assert_allclose(got[MHA][live], expected[live], rtol=TOL, atol=TOL)


def test_a_mismatch_exits_1_with_the_difference(tmp_path):
    text, _ = script_of(presets.load("padding"))
    assert "expected = t(" in text
    path = tmp_path / "wrong.py"
    path.write_text(text.replace("expected = t(", "expected = 0.5 + t("), encoding="utf-8")
    wrong = in_this_process(path)  # torch is imported here already
    assert wrong.returncode == 1, wrong.stdout
    assert "MISMATCH: max |SDPA - qkvcalc| = 0.5" in wrong.stderr
    assert "MISMATCH: max |MHA - qkvcalc| = 0.5" in wrong.stderr
    assert "MISMATCH: max |the plan in torch - qkvcalc| = 0.5" in wrong.stderr
    proc = subprocess.run(
        [sys.executable, "-c", text], capture_output=True, text=True, timeout=120
    )  # the same script untouched passes
    assert proc.returncode == 0 and "OK: PyTorch agrees with qkvcalc" in proc.stdout


def test_a_plan_stage_that_parts_from_qkvcalcs_fails_the_script_alone(tmp_path):
    """The plan path is a check of its own: one stage changed (the weights × 1.5) and the
    script exits 1 naming it and the output, while SDPA and the module still agree."""
    text, _ = script_of(presets.load("padding"))
    broken, count = re.subn(r"^(s_weights\S* = .*)$", r"\1 * 1.5", text, count=1, flags=re.M)
    assert count == 1
    path = tmp_path / "broken.py"
    path.write_text(broken, encoding="utf-8")
    got = in_this_process(path)
    assert got.returncode == 1, got.stdout
    assert "MISMATCH: max |the plan in torch - qkvcalc|" in got.stderr
    # a small problem's script checks every stage: the first one to part is named
    assert "MISMATCH: max |stage weights - qkvcalc|" in got.stderr
    assert "MISMATCH: max |stage exp - qkvcalc|" not in got.stderr
    assert "MISMATCH: max |SDPA" not in got.stderr and "MISMATCH: max |MHA" not in got.stderr


def test_the_script_and_the_extra_ask_for_the_same_torch():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'torch = ["torch>=2.0"]' in pyproject
    for name in presets.names():
        text, _ = script_of(presets.load(name))
        assert "needs torch >= 2.0" in text
        assert "enable_gqa=True" not in text.replace("what enable_gqa=True", "")
        assert "scale=" not in text.replace("SDPA's scale=", "")


# ---- what the script says ------------------------------------------------------------------


def test_mask_comments_translate_the_three_conventions():
    text, _ = script_of(presets.load("padding"))
    assert "True = MAY attend" in text
    assert "True = BLOCKED" in text
    assert 'masked_fill(~allowed, float("-inf"))' in text


def test_gqa_script_repeats_the_kv_heads_and_says_why_the_module_cannot_take_it():
    text, _ = script_of(presets.load("gqa"))
    assert "k.repeat_interleave(H // G, dim=1)" in text
    assert "nn.MultiheadAttention cannot represent this problem" in text
    assert "d_model = 2 but H*d_k = 4" in text
    assert "mha = torch.nn.MultiheadAttention(" not in text
    text, _ = script_of(presets.load("cross"))
    assert "H*d_v = 2 but H*d_k = 4" in text


def test_padding_masks_are_inverted_for_the_module():
    # nn.MultiheadAttention's key_padding_mask is True = ignore: the opposite of key_padding
    text, _ = script_of(presets.load("padding"))
    assert "key_padding_mask=~key_padding[None]" in text
    text, _ = script_of(presets.load("sentence"))
    assert "attn_mask=~causal" in text


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


# ---- decoding with a KV cache: the script decodes too ------------------------------------------

DECODE_CASES = {
    "the decode preset": presets.load("decode"),
    "grouped-query, prefill 1": {**presets.load("gqa"), "decode": 1},
    "LLaMA: RoPE, GQA, W_O, every token a step": {**presets.load("llama"), "decode": 0},
    "a window, prefill 2": {**presets.load("window"), "decode": 2},
    "chunks of 2, prefill 1": {
        **{k: v for k, v in presets.load("window").items() if k != "window"},
        "chunk_size": 2,
        "decode": 1,
    },
    "ALiBi, prefill 1": {**presets.load("alibi"), "decode": 1},
    "key padding, prefill 1": {**presets.load("padding"), "decode": 1},
}


@pytest.mark.parametrize("name", DECODE_CASES)
def test_a_decode_run_is_decoded_in_torch_with_a_growing_cache(batched, name):
    """The script appends each step's key and value to a cache and attends one query to it with
    SDPA; the stacked rows agree with qkvcalc (the script exits 1 otherwise)."""
    doc = DECODE_CASES[name]
    stdout, expected = ran(batched, f"decode {name}")
    assert "max |KV-cache decoding - qkvcalc| =" in stdout
    check(stdout, expected, mha=PRESET_MHA.get(doc["name"], True) and "rope" not in doc)


def test_the_classic_cache_bug_is_caught(tmp_path):
    """A step's one query against t cached keys with is_causal=True is aligned top-left: it sees
    key 1 only. The script's check catches exactly that."""
    text, _ = script_of(presets.load("decode"))
    assert "attn_mask=allowed[rows, :end]" in text
    path = tmp_path / "bug.py"
    path.write_text(text.replace("attn_mask=allowed[rows, :end]", "is_causal=True"))
    proc = in_this_process(path)
    assert proc.returncode == 1, proc.stdout
    assert "MISMATCH: max |KV-cache decoding - qkvcalc|" in proc.stderr
    assert "MISMATCH: max |SDPA" not in proc.stderr


# ---- input text never becomes code (issue 20, security 1) -----------------------------------
# Python reads an encoding declaration from a comment on the first two lines (PEP 263): a name
# such as "coding:unicode_escape" there made every backslash escape in the file live, so a token
# whose repr was "'\', open(...), \''" closed its string literal and ran. The script now keeps
# input text off those lines, and every string from the input is an ASCII-only literal.

ENCODING_DECLARATION = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
SMALL = {
    "x": [[1, 0], [0, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 0], [0, 1]],
    "wv": [[1, 0], [0, 1]],
}
HOSTILE_TEXT = [
    "coding:unicode_escape",
    "coding:utf-7",
    "-*- coding: utf-16 -*-",
    "# vim: set fileencoding=raw_unicode_escape :",
    "\\', open('x', 'w'), '",
    "a\nraise SystemExit(3)",
    "a\rraise SystemExit(3)",
    "\x0c# coding: latin-1",
    "\ud800 lone surrogate",
    "\u2028\u2029\x85\x00",
    '"""',
    "\x1b[31m",
]
texts = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(st.characters(exclude_categories=()), max_size=30),  # surrogates included
    st.builds(lambda a, b: a + b, st.sampled_from(HOSTILE_TEXT), st.text(max_size=10)),
)


def payload(marker: Path) -> str:
    """A token that runs open(marker, "w") once a unicode_escape declaration is in force."""
    return f'\', open("{marker}", "w"), \''


DECLARING_NAMES = ["coding:unicode_escape", "coding:utf-7", "-*- coding: utf-16 -*-"]


@pytest.mark.parametrize("name", DECLARING_NAMES)
def test_a_name_that_declares_an_encoding_cannot_run_a_token(batched, markers, name):
    """(test_an_extracted_layer_with_a_hostile_folder_name_makes_a_safe_script below runs such a
    script as a process of its own.)"""
    stdout, expected = ran(batched, f"encoding {name}")  # utf-7 and utf-16 made a SyntaxError
    assert not (markers / str(DECLARING_NAMES.index(name))).exists(), "a token's code ran"
    check(stdout, expected, mha=True)


def string_constants(tree: ast.AST) -> list[str]:
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


@settings(max_examples=150, deadline=None)
@given(name=texts, tokens=st.lists(texts, min_size=2, max_size=2), description=texts)
def test_every_input_text_is_an_ascii_literal_equal_to_itself(name, tokens, description):
    assume(name not in presets.names())  # a preset's own name is in the title instead
    doc = {**SMALL, "name": name, "description": description, "tokens": tokens}
    text, _ = script_of(doc)
    source = text.encode("utf-8")  # as Python reads the file: bytes, declarations honoured
    plain, _ = script_of(SMALL)  # the first two lines are the same whatever the input says
    assert text.splitlines()[:2] == plain.splitlines()[:2]
    assert not any(ENCODING_DECLARATION.match(line) for line in text.splitlines()[:2])
    tree = ast.parse(source)
    constants = string_constants(tree)
    assert name in constants
    for token in tokens:
        assert token in constants
    for node in ast.walk(tree):  # every string the input made is written in ASCII
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            literal = ast.get_source_segment(text, node)
            assert literal is not None and literal.isascii(), literal
    namespace: dict[str, Any] = {}
    assignments = [n for n in tree.body if isinstance(n, ast.Assign)]
    for node in assignments:
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id in ("tokens", "problem_name"):
            exec(compile(ast.Module([node], []), "<script>", "exec"), namespace)
    assert namespace["tokens"] == tokens and namespace["problem_name"] == name


def test_an_extracted_layer_with_a_hostile_folder_name_makes_a_safe_script(tmp_path):
    """extract's problem carries the folder's name and the tokenizer's text; the same doc through
    explain --format torch runs without running them."""
    marker = tmp_path / "pwned"
    doc = {
        **SMALL,
        "name": "coding:unicode_escape, layer 0",
        "description": "Layer 0 of coding:unicode_escape",
        "tokens": [payload(marker), "b"],
    }
    problem = tmp_path / "problem.json"
    problem.write_text(json.dumps(doc), encoding="utf-8")
    script = tmp_path / "check.py"
    from tests.conftest import run_qkvcalc

    result = run_qkvcalc("explain", str(problem), "--output", str(script))
    assert result.returncode == 0, result.stderr
    run_script(script.read_text(encoding="utf-8"), tmp_path)
    assert not marker.exists()


def test_the_script_says_what_it_measured_labels_rows_and_needs_torch_politely(tmp_path):
    """It prints the largest difference it measured (not only the tolerance), each output row
    beside its token (repr'd: a control character is shown, never sent to the terminal), and
    without torch one sentence instead of a ModuleNotFoundError traceback."""
    import qkvcalc
    from qkvcalc.render import render

    trace = qkvcalc.explain(
        x=[[1, 2], [0, 1]],
        wq=[[1, 0], [0, 1]],
        wk=[[1, 1], [0, 1]],
        wv=[[1, 0], [1, 1]],
        tokens=["cat", "\x1b[31mred"],
    )
    script = tmp_path / "check.py"
    script.write_text(render(trace, "torch"), encoding="utf-8")
    if importlib.util.find_spec("torch") is not None:
        run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "largest difference" in run.stdout and "\x1b" not in run.stdout
        assert "'cat' [" in run.stdout and "'\\x1b[31mred' [" in run.stdout
    blocker = tmp_path / "no_torch"
    blocker.mkdir()
    (blocker / "torch.py").write_text("raise ModuleNotFoundError('torch')\n")
    env = {**os.environ, "PYTHONPATH": str(blocker)}
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip() == "This script needs PyTorch (2.0 or later): pip install torch"


# ---- reviewed (wt-check): the script's sentences hold under the preset's own --dtype ---------

DTYPE_PRESETS = sorted(name for name in presets.names() if "dtype" in presets.load(name))
OK_LINE = re.compile(r"^OK: PyTorch agrees with qkvcalc: largest difference (\S+) ", re.MULTILINE)
MEASURED = re.compile(r"(?:max \|.+ - qkvcalc\| =|largest difference) (\S+)$", re.MULTILINE)


@pytest.mark.parametrize("name", DTYPE_PRESETS)
def test_a_dtype_preset_script_agrees_stage_by_stage(name, tmp_path):
    """Under --dtype the stages are checked against their float64 twins, so the plan in torch
    must run with the twin's parameters: bf16rope's script printed MISMATCH for q_rot … weights
    (its angles were bfloat16's, 257 rounded to 256) and exited 1 though qkvcalc was right."""
    from qkvcalc.run.precision import run as run_in_dtype

    trace = run_in_dtype(Problem.from_mapping(presets.load(name)))
    assert trace.precision is not None
    stdout = run_script(render_torch(trace, RenderOptions()), tmp_path)  # exit 0
    assert "forward stages" in stdout and "against the plan's in torch" in stdout
    assert "# Each stage's float64 twin as qkvcalc computed it" in render_torch(
        trace, RenderOptions()
    )


@pytest.mark.parametrize("name", ["dk64", "mla", "tiles"])
def test_the_ok_line_says_the_largest_difference_of_all(name, tmp_path):
    """The OK line named the difference nearest its own tolerance as the 'largest difference'
    (dk64: SDPA's 6.7e-16, while stage scores differed by 3.6e-15)."""
    stdout = run_script(script_of(presets.load(name))[0], tmp_path)
    (said,) = OK_LINE.findall(stdout)
    measured = [float(v) for v in MEASURED.findall(stdout.split("OK:")[0])]
    assert float(said) == max(measured), stdout


def test_the_stage_count_says_whether_it_is_every_forward_stage(tmp_path):
    """It printed "10 of qkvcalc's stages", which reads as a part of them: it is every forward
    stage (under --dtype, those with a float64 twin)."""
    trace = run(Problem.from_mapping(presets.load("doc")))
    stdout = run_script(render_torch(trace, RenderOptions()), tmp_path)
    said = [line for line in stdout.splitlines() if "against the plan's in torch" in line]
    assert said == [
        "10 stages, every one of qkvcalc's forward stages, against the plan's in torch: "
        "largest difference 0.0"
    ]
