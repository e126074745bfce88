"""--dtype with the linear-attention layers and the sparse-attention indexer on every page:
each format in both languages (the JSON's dtype fields as DESIGN's "--dtype's JSON" names them),
every "=" of the cell arithmetic true for the dtype's numbers shown, the torch script still
checking the float64 twin, and --policy sdpa refused once for a layer that calls no attention
kernel."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tests.conftest import in_process, one_message

PRESETS = ("deltanet", "kda", "lightning", "dsa")
FORMATS = ("table", "txt", "json", "markdown", "latex", "html", "svg")
# what each page says of its own rounding, per policy (the summary's first words)
SAID = {
    ("deltanet", "eager"): "Qwen3-Next's token-by-token",
    ("kda", "eager"): "recurrent_kimi_delta_attention",
    ("lightning", "eager"): "nothing is cast to float32",
    ("dsa", "eager"): "DeepseekV32Indexer",
}


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("preset", PRESETS)
def test_every_format_in_both_languages(preset: str, fmt: str, lang: str) -> None:
    args = ["explain", "--preset", preset, "--dtype", "bfloat16", "--format", fmt, "--lang", lang]
    proc = in_process(*args, env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout and not proc.stderr
    if lang == "en" and fmt in ("txt", "markdown"):
        assert SAID[(preset, "eager")] in proc.stdout.replace("\n", " ")
    if fmt != "json":
        return
    doc = json.loads(proc.stdout)
    assert doc["problem"]["dtype"] == "bfloat16" and doc["problem"]["policy"] == "eager"
    precision = doc["precision"]
    assert precision["dtype"] == "bfloat16" and precision["policy"] == "eager"
    assert precision["first_nonfinite"] is None
    ids = {s["id"] for s in doc["stages"]}
    assert precision["most_added"] in ids or precision["most_added"]["stage"] in ids
    for stage in doc["stages"]:
        if stage.get("error") is None:
            continue
        assert set(stage["error"]) == {"max_abs", "max_ulp", "added_ulp"}
        assert "float64" in stage
        assert all(math.isfinite(v) for v in stage["error"].values())


@pytest.mark.parametrize("policy", ["eager", "naive"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"])
@pytest.mark.parametrize("preset", PRESETS)
def test_every_equals_holds_in_every_dtype_and_policy(preset: str, dtype: str, policy: str) -> None:
    """The cell arithmetic's "=" lines hold for the dtype's numbers (tests/test_arith_invariant.py's
    check), in every dtype and policy the lab has."""
    from tests.test_arith_invariant import PINNED_ENV, arithmetic_lines, check_line

    args = ["explain", "--preset", preset, "-f", "table", "--no-color", "--detail", "full"]
    env = {**PINNED_ENV, "COLUMNS": "4000"}
    proc = in_process(*args, "--dtype", dtype, "--policy", policy, env=env)
    assert proc.returncode == 0, proc.stderr
    checked = 0
    for line in arithmetic_lines(proc.stdout):
        try:
            n, failure = check_line(line, 4)
        except ArithmeticError:
            continue  # a cell said to be NaN or ∞ (float8's −1e9 and overflow)
        assert failure is None, failure
        checked += n
    assert checked


@pytest.mark.parametrize("preset", ["deltanet", "kda", "lightning"])
def test_sdpa_is_refused_once_for_a_linear_layer(preset: str) -> None:
    proc = in_process("explain", "--preset", preset, "--dtype", "bfloat16", "--policy", "sdpa")
    one_message(proc, "--policy sdpa does not apply to a linear-attention layer")


@pytest.mark.parametrize("preset", PRESETS)
def test_the_torch_script_checks_the_float64_twin(preset: str, tmp_path) -> None:
    pytest.importorskip("torch", reason="the script runs PyTorch")
    proc = in_process("explain", "--preset", preset, "--dtype", "bfloat16", "--format", "torch")
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "check.py"
    script.write_text(proc.stdout, encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "OK: PyTorch agrees with qkvcalc" in ran.stdout


@pytest.mark.parametrize("policy", ["eager", "naive"])
@pytest.mark.parametrize("preset", ["deltanet", "kda", "lightning"])
def test_the_float64_agreement_notes_are_left_out_of_the_dtypes_output(
    preset: str, policy: str
) -> None:
    """The plain run's notes under the output (W·V and the chunked form equal it to float64's
    rounding, or are 'too large for float64') speak of float64: in the dtype none of them is
    said, whatever the numbers."""
    import qkvcalc
    from tests.conftest import ROOT

    doc = json.loads((ROOT / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    doc = {k: v for k, v in doc.items() if k not in ("name", "description", "reference")}
    for dtype in ("bfloat16", "float16", "float8_e4m3fn"):
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        for stage in trace.stages:
            keys = {n.key for n in stage.notes}
            assert not any(k.endswith(("_linear_in_v", "_linear_in_v_far", "_far")) for k in keys)
            assert not any(k.endswith(("chunked_equal", "blocked_equal")) for k in keys)
