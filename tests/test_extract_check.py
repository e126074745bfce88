"""Extract checks itself (issue 41, item 3): the layer's own attention runs to its output
projection, and a problem whose output, as qkvcalc's engine computes it, misses that output is
refused, as is a module layout extract does not know; never a silently wrong problem or a
traceback. Each refusal is provoked the way a transformers release provokes it (5.25 renamed
Llama 4's q/k norm class, moved GPT-J's sinusoid table): the model's module is changed here
with monkeypatch, on a tiny float64 model built from a config with random weights (as
tests/test_extract.py builds them; nothing downloads). The command line's refusal is seen
through a real process, in English and Korean."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import PINNED_ENV, ROOT, one_message
from tests.test_extract import build_from, transformers
from tests.test_extract_more import CASES as MORE_CASES
from tests.test_extract_norms import CASES as NORM_CASES

IDS = [3, 14, 15, 9, 26, 5, 35, 8]


def build(spec: dict):
    return build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])


@pytest.fixture(scope="module")
def llama4(tmp_path_factory):
    """A tiny Llama 4 text checkpoint's folder (layer 0 rotates and has the q/k norm)."""
    folder = tmp_path_factory.mktemp("check") / "llama4"
    build(NORM_CASES["llama4"]).save_pretrained(folder)
    return str(folder)


def extract(folder: str, layer: int = 0):
    import qkvcalc

    return qkvcalc.extract(folder, layer=layer, input_ids=IDS, dtype="float64")


@pytest.fixture
def rename_norm():
    """Llama 4's q/k norm class as a later transformers might name it (5.25 renamed
    Llama4TextL2Norm to Llama4TextWeightlessRMSNorm): the same computation under a name
    extract does not know, while the test runs."""
    from transformers.models.llama4 import modeling_llama4

    classes = {
        getattr(modeling_llama4, name)
        for name in ("Llama4TextWeightlessRMSNorm", "Llama4TextL2Norm")
        if hasattr(modeling_llama4, name)
    }
    saved = {cls: cls.__name__ for cls in classes}

    def rename() -> None:
        for cls in classes:
            cls.__name__ = "Llama4TextNewNorm"

    yield rename
    for cls, name in saved.items():
        cls.__name__ = name


def test_a_renamed_qk_norm_class_is_refused_not_dropped(llama4, rename_norm):
    from qkvcalc.errors import QkvcalcError

    assert "q_norm" in extract(llama4)  # known: checked and given
    rename_norm()
    with pytest.raises(QkvcalcError) as caught:
        extract(llama4)
    err = caught.value
    assert err.msg.key == "extract.mismatch"
    for lang in ("en", "ko"):
        text = err.message(lang)
        assert "llama4_text" in text and transformers.__version__ in text
        found = re.search(r"≈([0-9.e+-]+)", text)
        assert found is not None and float(found.group(1)) > 1e-3, text  # the norm's effect


def test_heads_refuses_the_same_layers(llama4, rename_norm):
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.heads import attention_maps, head_problem

    given = {"input_ids": IDS, "dtype": "float64"}
    assert len(attention_maps(llama4, problems=True, **given).problems) == 2
    rename_norm()
    with pytest.raises(QkvcalcError, match="transformers") as caught:
        attention_maps(llama4, problems=True, **given)
    assert caught.value.msg.key == "extract.mismatch"
    with pytest.raises(QkvcalcError) as caught:
        head_problem(llama4, 0, 1, **given)
    assert caught.value.msg.key == "extract.mismatch"
    # the page without problems shows transformers' own weights: nothing to check there
    assert attention_maps(llama4, **given).problems == []


def test_a_renamed_attribute_is_refused_by_name():
    """GPT-J's sinusoid table, in its attention module up to transformers 5.24 and in its
    rotary module since 5.25, renamed: the float64 run reads it, so extract names it."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    model = build(MORE_CASES["gptj"])
    qkvcalc.extract(model, layer=1, input_ids=IDS)
    holder = next(m for m in model.modules() if "embed_positions" in m._buffers)
    table = holder._buffers.pop("embed_positions")
    holder.sinusoids = table  # a later release's name
    with pytest.raises(QkvcalcError) as caught:
        qkvcalc.extract(model, layer=1, input_ids=IDS)
    err = caught.value
    assert err.msg.key == "extract.layout"
    for lang in ("en", "ko"):
        text = err.message(lang)
        assert "'embed_positions'" in text and "gptj" in text
        assert transformers.__version__ in text


def test_a_projection_never_called_is_refused(llama4, monkeypatch):
    """The family's output projection, if the attention no longer calls it, leaves nothing to
    check against: refused, and the run stops where the layer's block ends."""
    import torch

    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract import llama

    stray = torch.nn.Linear(2, 2)  # a module the attention never calls
    ran = []

    def output(block):
        block.register_forward_hook(lambda *a: ran.append(block.self_attn.layer_idx))
        return stray

    monkeypatch.setattr(llama, "FAMILY", replace(llama.FAMILY, output=output))
    with pytest.raises(QkvcalcError) as caught:
        extract(llama4)
    assert caught.value.msg.key == "extract.no_output"
    assert caught.value.msg.params["model_type"] == "llama4_text"
    assert ran == [0]  # layer 0's block ended the run: layer 1 never ran


def test_the_tolerance_is_the_run_dtypes(llama4):
    """A problem 1e-7 off (relative) is refused from a float64 run and allowed from a float32
    one; the problem as extracted passes with room to spare."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.check import TOLERANCE, difference, verify

    problem = extract(llama4, layer=1)
    trace = qkvcalc.explain(**{**problem}, max_elements=10**9)
    exact = np.asarray(trace.output)
    largest, scale = difference(problem, exact)
    assert largest == 0 and scale > 0
    off = exact * (1 + 1e-7)
    names = {"model": "m", "model_type": "llama4_text", "layer": 1}
    verify(problem, off, dtype="float32", **names)
    with pytest.raises(QkvcalcError, match="1e-09"):
        verify(problem, off, dtype="float64", **names)
    assert TOLERANCE["float64"] < TOLERANCE["float32"] < TOLERANCE["bfloat16"]


def test_the_tested_versions_are_the_extras_range():
    """check.TESTED, the models extra's range in pyproject.toml and the installed transformers
    agree: a refusal names the versions that are tested, and CI runs one of them."""
    from qkvcalc.extract.check import TESTED

    low, high = TESTED.split(" to ")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    models = re.search(r"^models = \[(.*)\]$", text, re.MULTILINE)
    assert models is not None
    pin = next(i.strip(' "') for i in models.group(1).split('", "') if "transformers" in i)

    def release(text: str) -> tuple[int, int]:
        major, minor = text.split(".")[:2]
        return int(major), int(minor)

    major, minor = release(high)
    assert pin.replace(" ", "") == f"transformers>={low},<{major}.{minor + 1}", pin
    assert release(low) <= release(transformers.__version__) <= release(high)


PRELUDE = """
import runpy, sys
from transformers.models.llama4 import modeling_llama4 as m
for name in ("Llama4TextWeightlessRMSNorm", "Llama4TextL2Norm"):
    if hasattr(m, name):
        getattr(m, name).__name__ = "Llama4TextNewNorm"
sys.argv = ["qkvcalc", *sys.argv[1:]]
runpy.run_module("qkvcalc", run_name="__main__")
"""


@pytest.mark.parametrize(("lang", "words"), [("en", "does not reproduce"), ("ko", "재현하지")])
def test_the_command_line_refuses_in_both_languages(llama4, tmp_path, lang, words):
    """A real process whose transformers names the norm's class anew: exit 2, one line on
    stderr naming the model type, the version and the difference, nothing on stdout, and no
    file written."""
    out = tmp_path / f"layer-{lang}.json"
    ids = " ".join(map(str, IDS))
    argv = ["extract", llama4, "--layer", "0", "--ids", ids, "--dtype", "float64"]
    result = subprocess.run(
        [sys.executable, "-c", PRELUDE, *argv, "--output", str(out), "--lang", lang],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**PINNED_ENV, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
        timeout=600,
    )
    one_message(result, words, "llama4_text", transformers.__version__, "≈")
    assert not out.exists()


def test_the_check_copies_none_of_the_layers_weights():
    """qkvcalc's input takes a read-only float64 matrix as it is (the check hands its problem
    over so: a 7B layer's four weights are 0.54 GB), copies a writable or float32 one (a
    caller's later change does not reach the trace), and still names a NaN cell."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.input.cells import to_matrix

    weights = np.arange(6.0).reshape(2, 3)
    view = weights.view()
    view.flags.writeable = False
    assert np.shares_memory(to_matrix(view, "wq").values, weights)
    assert not np.shares_memory(to_matrix(weights, "wq").values, weights)
    single = to_matrix(weights.astype(np.float32), "wq").values
    assert single.dtype == np.float64 and np.array_equal(single, weights)
    weights[1, 2] = np.nan
    with pytest.raises(QkvcalcError, match=r"W_Q|wq"):
        to_matrix(view, "wq")
