"""--dtype float8_e4m3fn / float8_e5m2 against PyTorch's float8 on CPU.

`naive`: a plain cast, every op in the format. torch.matmul multiplies two float8 tensors on the
CPU (summed in float32, cast once); its elementwise ops do not take float8 there, so those are
computed in float32 and cast with torch's own `.to(float8)` (which saturates in e4m3fn).
`eager`: per-tensor scaling as FP8 kernels store tensors: each operand of a product is cast
with torch as (t / s).to(float8), s = max|t| / the format's largest number, and multiplied by
torch._scaled_mm (float32 out); the weights are torch.softmax(dtype=float32) of the float32
masked scores. The lesson preset `fp8scaling` is recomputed with torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input import presets
from qkvcalc.run import lowp
from qkvcalc.run.precision import run as run_lowp
from tests.test_precision_torch import problem

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
torch.set_num_threads(1)

FP8 = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}


def _t(a: Any, dt: Any = torch.float64) -> Any:
    return torch.tensor(np.asarray(a, dtype=np.float64)).to(dt)


def _ulps(mine: np.ndarray, theirs: np.ndarray, dtype: str) -> np.ndarray:
    """|mine − theirs| in the format's units in the last place at |theirs| (NaN = NaN)."""
    same = (mine == theirs) | (np.isnan(mine) & np.isnan(theirs))
    unit = lowp.ulp(np.where(np.isfinite(theirs), theirs, 0.0), lowp.numpy_dtype(dtype))
    with np.errstate(invalid="ignore"):
        return np.where(same, 0.0, np.abs(mine - theirs) / unit)


def _naive(stage: Any, dt: Any) -> Any:
    """The stage by torch from its own operands, every result cast to the float8 format."""
    ops = [_t(o, dt) for o in stage.operands]
    f = [o.float() for o in ops]
    if stage.op in ("project", "matmul"):
        bias = stage.params.get("bias")
        if bias is None:
            return torch.matmul(ops[0], ops[1])  # float8 × float8 on the CPU
        return (f[0] @ f[1] + _t(bias, dt).float()).to(dt)
    if stage.op == "scale":
        return (f[0] * stage.params["scale"]).to(dt)
    if stage.op == "mask":
        fill = torch.tensor(-1e9).to(dt).float()
        return torch.where(torch.tensor(stage.params["allowed"]), f[0], fill).to(dt)
    if stage.op == "exp":
        top = f[0].max(dim=-1, keepdim=True).values
        return torch.exp((f[0] - top).to(dt).float()).to(dt)
    if stage.op == "softmax":
        total = f[0].sum(dim=-1, keepdim=True).to(dt).float()
        return (f[0] / total).to(dt)
    return None


@pytest.mark.parametrize("dtype", list(FP8))
def test_naive_float8_is_torchs_cast_and_matmul(dtype: str) -> None:
    dt = FP8[dtype]
    same = total = 0
    for seed in range(30):
        trace = qkvcalc.explain(**problem(seed), dtype=dtype, policy="naive")
        assert (trace.stage("x").value == _t(problem(seed)["x"], dt).double().numpy()).all()
        for stage in trace.stages:
            theirs = _naive(stage, dt)
            if theirs is None:
                continue
            ulps = _ulps(stage.value, theirs.double().numpy(), dtype)
            assert ulps.max() <= 1, (seed, stage.id, stage.head)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.99 * total, (same, total)


def _quantized(a: np.ndarray, dt: Any) -> tuple[Any, Any]:
    """(q, s): t stored as s·q, one scale per tensor, cast by torch."""
    t = _t(a)
    top = float(torch.finfo(dt).max)
    s = (t.abs().max() / top).float() if t.abs().max() > 0 else torch.tensor(1.0)
    return (t / s.double()).to(dt), s


@pytest.mark.parametrize("dtype", list(FP8))
def test_eager_float8_products_are_torchs_scaled_mm(dtype: str) -> None:
    """Each product from its own operands: torch's float8 cast of t / s and torch._scaled_mm
    (float32 out), the bias added in float32, within a float32 sum-order bound; the stored
    inputs are s·(t / s).to(float8); the weights are torch's float32 softmax."""
    dt = FP8[dtype]
    eps = float(np.finfo(np.float32).eps)
    for seed in range(20):
        doc = problem(seed)
        trace = qkvcalc.explain(**doc, dtype=dtype, policy="eager")
        q, s = _quantized(np.asarray(doc["x"]), dt)
        assert (trace.stage("x").value == (q.double() * s.double()).numpy()).all()
        for stage in trace.stages:
            if stage.op == "softmax":
                masked = _t(trace.stage("masked", stage.head).value, torch.float32)
                theirs = torch.softmax(masked, dim=-1).double().numpy()
                assert np.abs(stage.value - theirs).max() <= 2 * eps, (seed, stage.head)
            if stage.op not in ("project", "matmul"):
                continue
            (qa, sa), (qb, sb) = (_quantized(o, dt) for o in stage.operands)
            out = torch._scaled_mm(qa, qb.T.contiguous().T, sa, sb, out_dtype=torch.float32)
            bias = stage.params.get("bias")
            if bias is not None:
                b, bs = _quantized(np.asarray(bias), dt)
                out = out + (b.double() * bs.double()).float()
            size = (qa.double().abs() @ qb.double().abs()).numpy() * float(sa) * float(sb)
            bound = 4 * eps * (size + np.abs(out.double().numpy()))
            diff = np.abs(stage.value - out.double().numpy())
            assert (diff <= bound).all(), (seed, stage.id, stage.head, diff.max())


@pytest.mark.parametrize("dtype", list(FP8))
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_the_float8_twin_is_the_plain_run(dtype: str, policy: str) -> None:
    for seed in range(6):
        plain = qkvcalc.explain(**problem(seed))
        low = run_lowp(plain.problem, dtype, policy)
        for mine, twin in zip(low.stages, plain.stages, strict=True):
            if mine.twin is None:
                continue
            got = np.asarray(mine.twin() if callable(mine.twin) else mine.twin)
            np.testing.assert_allclose(got, twin.value, rtol=0, atol=1e-12)


def test_fp8scaling_a_plain_cast_saturates_and_ties_and_a_scale_per_tensor_does_not() -> None:
    doc = presets.load("fp8scaling")
    dt = torch.float8_e4m3fn
    x = _t(doc["x"], dt)  # W_Q = W_K = W_V = I: Q = K = V = X
    assert (x.double().numpy() == np.asarray(doc["x"])).all()  # 24 and 20 are float8 numbers
    exact = (x.double() @ x.double().T)[0]
    assert exact.tolist() == [576, 0, 480]
    scores = torch.matmul(x, x.T)  # float8 × float8: torch saturates at 448
    assert scores[0].double().tolist() == [448, 0, 448]
    scale = 1 / np.sqrt(2)  # 1/√d_k, d_k = 2
    scaled = (scores.float() * scale).to(dt).float()
    assert scaled[0].tolist() == [320, 0, 320]
    e = torch.exp((scaled - scaled.max(dim=-1, keepdim=True).values).to(dt).float()).to(dt)
    weights = (e.float() / e.float().sum(dim=-1, keepdim=True).to(dt).float()).to(dt).float()
    assert weights[0].tolist() == [0.5, 0, 0.5]
    output = torch.matmul(weights.to(dt), x)[0].double()
    assert output.tolist() == [22, 10]

    naive = qkvcalc.explain(**doc)
    assert naive.problem.policy == "naive" and naive.problem.dtype == "float8_e4m3fn"
    assert naive.stage("scores").value[0].tolist() == [448, 0, 448]
    assert naive.stage("weights").value[0].tolist() == [0.5, 0, 0.5]
    assert naive.output[0].tolist() == [22, 10]
    twin = naive.stage("weights").twin_value[0]
    assert twin[0] == 1 and twin[1] < 1e-170 and 3e-30 < twin[2] < 4e-30  # float64
    assert np.allclose(qkvcalc.explain(**{**doc, "dtype": None, "policy": None}).output[0], [24, 0])

    # per-tensor scaling (eager): X stored as s·(X / s).to(float8), scores kept in float32
    eager = qkvcalc.explain(**{**doc, "policy": "eager"})
    q, s = _quantized(np.asarray(doc["x"]), dt)
    stored = (q.double() * s.double()).numpy()
    assert (eager.stage("x").value == stored).all()
    assert f"{stored[1, 1]:.5g}" == "20.571"  # 20 / s = 373.3 is 384 in float8: the price
    qk, sq = _quantized(eager.stage("q").value, dt)
    mm = torch._scaled_mm(qk, qk.T, sq, sq, out_dtype=torch.float32)  # Q·Kᵀ, K = Q
    row = eager.stage("scores").value[0]
    assert np.allclose(row, mm[0].double().numpy(), rtol=1e-6, atol=0)
    assert [f"{v:.7g}" for v in row] == ["576.0001", "0", "493.7144"]
    w = eager.stage("weights").value[0]
    assert w[0] == 1 and w[1] == 0 and 5e-26 < w[2] < 6e-26
    assert f"{eager.output[0, 0]:.8g}" == "24.000004" and eager.output[0, 1] == 0
