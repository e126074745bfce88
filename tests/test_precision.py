"""--dtype and --policy as a user meets them: the refusals, the JSON keys, the terminal's twin,
the `naive` policy against PyTorch, and each lesson preset's claim recomputed with PyTorch."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input import presets
from qkvcalc.run import lowp
from tests.conftest import in_process
from tests.test_precision_torch import DTYPES, _t, _ulps, problem

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")


# ---- bad input: one message naming the option, exit 2, nothing on stdout ----------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--dtype", "int8"], "--dtype"),
        (["--dtype", "bfloat16", "--policy", "fast"], "--policy"),
        (["--dtype", "float8_e4m3fn", "--policy", "sdpa"], "--policy"),
        (["--policy", "naive"], "--dtype"),
        (["--dtype", "bfloat16", "--exact"], "--exact"),
        (["--dtype", "float16", "--backward", "--attend", "1 2 3"], "--backward"),
        (["--dtype", "bfloat16", "--shuffle", "3,2,1"], "--shuffle"),
    ],
)
def test_a_dtype_it_cannot_run_is_one_message(args: list[str], named: str) -> None:
    result = in_process("explain", "--preset", "multihead", *args)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert named in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_op_without_a_low_precision_rounding_is_refused_not_run_in_float64(
    tmp_path, monkeypatch
) -> None:
    from qkvcalc.ops.table import OPS
    from tests.test_precision_features import MLA  # latent attention, its join's rule taken away

    monkeypatch.setitem(OPS, "mla_join", OPS["mla_join"]._replace(lowp=None))
    path = tmp_path / "mla.json"
    path.write_text(json.dumps(MLA), encoding="utf-8")
    result = in_process("explain", str(path), "--dtype", "bfloat16")
    assert result.returncode == 2 and result.stdout == ""
    assert "mla" in result.stderr and "--dtype" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(qkvcalc.QkvcalcError):
        qkvcalc.explain(**MLA, dtype="bfloat16")


def test_each_op_says_how_it_rounds_in_its_own_module() -> None:
    """The interpreter holds no table of rules: every op of a run with heads, biases, W_O and a
    mask has its `lowp` rule from qkvcalc/ops/, the module that declares the op."""
    from qkvcalc.ops.table import OPS

    trace = qkvcalc.explain(**problem(1))
    for name in {stage.op for stage in trace.stages}:
        rule = OPS[name].lowp
        assert rule is not None and rule is lowp.rule(name), name
        assert rule.__module__.startswith("qkvcalc.ops."), (name, rule.__module__)


def test_the_korean_refusal_is_korean() -> None:
    result = in_process("explain", "--preset", "multihead", "--dtype", "int8", "--lang", "ko")
    assert result.returncode == 2 and "--dtype에는" in result.stderr


# ---- what it writes ------------------------------------------------------------------------


def test_json_has_the_keys_and_the_twin_is_the_plain_run() -> None:
    plain = json.loads(in_process("explain", "--preset", "multihead", "-f", "json").stdout)
    assert "precision" not in plain and "dtype" not in plain["problem"]
    assert all("float64" not in s and "error" not in s for s in plain["stages"])
    result = in_process("explain", "--preset", "multihead", "--dtype", "float16", "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["problem"]["dtype"] == "float16" and doc["problem"]["policy"] == "eager"
    assert doc["input"]["dtype"] == "float16"
    for mine, twin in zip(doc["stages"], plain["stages"], strict=True):
        if mine["id"] == "split":
            continue
        assert mine["float64"] == twin["value"], mine["id"]
        assert set(mine["error"]) == {"max_abs", "max_ulp", "added_ulp"}
        value = np.array(mine["value"], dtype=float)
        assert (value.astype(np.float16).astype(float) == value).all() or mine["id"] == "exp"
    precision = doc["precision"]
    assert precision["dtype"] == "float16" and precision["first_nonfinite"] is None
    ranked = max(doc["stages"], key=lambda s: s.get("error", {}).get("added_ulp", -1))
    assert precision["most_added"] == ranked["id"]


def test_the_table_shows_each_stage_beside_its_twin() -> None:
    result = in_process(
        "explain", "--preset", "sentence", "--dtype", "bfloat16", "--stages", "scaled"
    )
    assert result.returncode == 0, result.stderr
    assert "Q·Kᵀ / √d_k (float64)" in result.stdout
    assert "bfloat16 against its float64 twin" in result.stdout
    assert "Computed in bfloat16 as transformers' eager attention does" in result.stdout


def test_a_dtype_run_goes_through_every_format() -> None:
    for fmt in ("txt", "markdown", "html", "latex", "svg", "torch"):
        result = in_process("explain", "--preset", "fp16overflow", "-f", fmt, "--detail", "brief")
        assert result.returncode == 0, (fmt, result.stderr)


def test_ulp_is_the_dtypes_spacing() -> None:
    rng = np.random.default_rng(0)
    x = np.abs(rng.standard_normal(200) * 10.0 ** rng.integers(-6, 5, 200))
    for name in ("float16", "float32"):
        dt = np.dtype(name)
        held = x.astype(dt)
        assert (lowp.ulp(held.astype(float), dt) == np.spacing(held).astype(float)).all()


# ---- naive: every op in the dtype, as torch does it on CPU ------------------------------------


def _torch_naive(stage: Any, trace: Any, dt: Any) -> Any:
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "mask":
        allowed = torch.tensor(stage.params["allowed"])
        return torch.where(allowed, ops[0], -1e9)  # masked_fill(-1e9) refuses float16
    if stage.op == "exp":
        return torch.exp(ops[0] - ops[0].max(dim=-1, keepdim=True).values)
    if stage.op == "softmax":
        return ops[0] / ops[0].sum(dim=-1, keepdim=True)
    return None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_naive_softmax_and_mask_are_torchs_ops_in_that_dtype(dtype: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(30):
        trace = qkvcalc.explain(**problem(seed), dtype=dtype, policy="naive")
        for stage in trace.stages:
            theirs = _torch_naive(stage, trace, dt)
            if theirs is None:
                continue
            ulps = _ulps(stage.value, theirs.double().numpy(), dt)
            assert ulps.max() <= 1, (seed, stage.id)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.99 * total, (same, total)


# ---- the lesson presets: each claim recomputed --------------------------------------------------


def test_fp16overflow_scores_overflow_in_torch_and_the_scale_first_does_not() -> None:
    doc = presets.load("fp16overflow")
    trace = qkvcalc.explain(**doc)
    assert trace.precision is not None
    assert trace.precision.first_nonfinite == ("scores", None, (1, 1))
    q = _t(doc["x"], torch.float16)  # W_Q = W_K = I
    assert (q.double() @ q.double().T)[0, 0].item() == 180**2 + 190**2 == 68_500
    product = q @ q.T
    assert math.isinf(product[0, 0].item()) and math.isinf(trace.stage("scores").value[0, 0])
    scale = 1 / math.sqrt(2)
    first = (q * scale) @ q.T  # the scale taken first
    assert math.isfinite(first[0, 0].item()) and first[0, 0].item() == 48_448
    assert round(68_500 * scale) == 48_437
    weights = torch.softmax(product * scale, dim=-1, dtype=torch.float32).to(torch.float16)
    assert torch.isnan(weights[0]).all() and np.isnan(trace.stage("weights").value[0]).all()
    assert np.isfinite(trace.stage("weights").twin_value).all()  # the float64 twin is fine


def test_fp16mask_minus_1e9_is_inf_in_fp16_and_eager_spreads_the_row() -> None:
    doc = presets.load("fp16mask")
    assert torch.tensor(-1e9, dtype=torch.float16).item() == -math.inf
    scores = torch.zeros((1, 2), dtype=torch.float16)
    keep = torch.tensor([[True, False]])
    assert torch.where(keep, scores, -1e9)[0, 1].item() == -math.inf
    with pytest.raises(RuntimeError, match="overflow"):  # the preset says masked_fill refuses it
        scores.masked_fill(~keep, -1e9)
    assert torch.finfo(torch.float16).min == -65504
    naive = qkvcalc.explain(**doc)
    assert naive.precision is not None and naive.precision.first_nonfinite == (
        "masked",
        None,
        (1, 1),
    )
    assert np.isnan(naive.stage("weights").value[0]).all()
    eager = qkvcalc.explain(**{**doc, "policy": "eager"})
    row = eager.stage("weights").value[0]
    third = torch.tensor(1 / 3, dtype=torch.float16).item()
    assert (row == third).all() and eager.precision is not None
    assert eager.precision.first_nonfinite is None
    assert (eager.stage("weights").twin_value[0] == 0).all()  # scaled_dot_product_attention's 0


def test_bf16softmax_naive_strays_further_than_the_float32_softmax() -> None:
    doc = presets.load("bf16softmax")
    naive = qkvcalc.explain(**doc)
    eager = qkvcalc.explain(**{**doc, "policy": "eager"})
    # the same bfloat16 scores under both policies
    assert (naive.stage("scaled").value == eager.stage("scaled").value).all()
    worst = {}
    for name, trace in (("naive", naive), ("eager", eager)):
        error = trace.stage("weights").error
        assert error is not None
        worst[name] = error.max_ulp
    assert f"{worst['naive']:.3g}" == "2.45" and worst["eager"] <= 0.53 < 1
    # and torch, from the same scores, gives the same weights both ways
    s = _t(naive.stage("scaled").value, torch.bfloat16)
    e = torch.exp(s - s.max(dim=-1, keepdim=True).values)
    by_hand = (e / e.sum(dim=-1, keepdim=True)).double().numpy()
    upcast = torch.softmax(s, dim=-1, dtype=torch.float32).to(torch.bfloat16).double().numpy()
    assert (by_hand == naive.stage("weights").value).mean() >= 0.99
    assert (upcast == eager.stage("weights").value).mean() >= 0.99
