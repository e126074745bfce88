"""--dtype under `eager` against PyTorch doing transformers' eager ops in that dtype on CPU.

Each stage is recomputed by torch from qkvcalc's own inputs to that stage (the stage's
operands, already in the dtype): F.linear for a projection (bias included), torch.matmul for
Q·Kᵀ and A·V, `* scale` with the Python float, `+ mask` where the mask holds torch.finfo(dtype)
.min, softmax(dtype=float32).to(dtype) for the weights. Then the whole chain is run by torch from
the rounded inputs alone, as transformers' eager_attention_forward (with repeat_kv for GQA) and
o_proj run it, and compared with qkvcalc's final output. Problems are drawn from a seeded rng:
heads, GQA, W_O, biases, a given scale, d_v ≠ d_k, a mask with a fully masked row.

The float64 twin of every stage is the plain run's value (to 1e-12).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.run.precision import run as run_lowp

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
F = torch.nn.functional
torch.set_num_threads(1)

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def problem(seed: int) -> dict[str, Any]:
    """A random problem: heads (GQA when kv_heads < heads), W_O with b_O, biases, a scale,
    d_v ≠ d_k, a causal or 0/1 mask with its first row fully masked (on odd seeds)."""
    rng = np.random.default_rng(seed)
    kv = int(rng.choice([1, 2]))
    heads = kv * int(rng.choice([1, 2]))
    n, m_model, d_k = int(rng.integers(2, 7)), int(rng.integers(2, 9)), int(rng.integers(1, 5))
    d_v = d_k + int(rng.integers(1, 3))
    doc: dict[str, Any] = {
        "x": rng.standard_normal((n, m_model)) * 2,
        "wq": rng.standard_normal((m_model, heads * d_k)),
        "wk": rng.standard_normal((m_model, kv * d_k)),
        "wv": rng.standard_normal((m_model, kv * d_v)),
        "wo": rng.standard_normal((heads * d_v, m_model)),
        "bq": rng.standard_normal(heads * d_k),
        "bk": rng.standard_normal(kv * d_k),
        "bv": rng.standard_normal(kv * d_v),
        "bo": rng.standard_normal(m_model),
        "heads": heads,
        "kv_heads": kv,
    }
    if seed % 3:
        doc["scale"] = float(rng.uniform(0.2, 1.5))
    mask = np.tril(np.ones((n, n), dtype=int)) if seed % 2 else (rng.random((n, n)) < 0.7)
    mask = np.asarray(mask, dtype=int)
    if seed % 2:
        mask[0] = 0  # a query whose every key is masked
    mask[-1, 0] = 1
    doc["mask"] = mask.tolist()
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in doc.items()}


def _t(a: np.ndarray, dt: Any) -> Any:
    # the dtype's numbers are exact in float64, so this cast is exact
    return torch.tensor(np.asarray(a, dtype=np.float64)).to(dt)


def _torch_stage(stage: Any, dt: Any) -> Any:
    """The stage computed by torch from the stage's own operands (None: not an op to check)."""
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "project":
        bias = stage.params.get("bias")
        b = None if bias is None else _t(bias, dt)
        return F.linear(ops[0], ops[1].T.contiguous(), b)
    if stage.op == "matmul":
        return torch.matmul(ops[0], ops[1])
    if stage.op == "scale":
        return ops[0] * stage.params["scale"]
    if stage.op == "mask":
        fill = torch.zeros(ops[0].shape, dtype=dt)
        fill[~torch.tensor(stage.params["allowed"])] = torch.finfo(dt).min
        return ops[0] + fill
    return None


def _ulps(a: np.ndarray, b: np.ndarray, dt: Any) -> np.ndarray:
    """|a − b| in units in the last place of the dtype (NaN = NaN, ±inf = ±inf count as 0)."""
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    size = _t(np.where(np.isfinite(b), np.abs(b), 0.0), dt)
    up = torch.nextafter(size, torch.full_like(size, float("inf"))).double().numpy()
    with np.errstate(invalid="ignore"):
        return np.where(same, 0.0, np.abs(a - b) / (up - size.double().numpy()))


def _torch_weights(masked: np.ndarray, dt: Any) -> np.ndarray:
    return torch.softmax(_t(masked, dt), dim=-1, dtype=torch.float32).to(dt).double().numpy()


def _torch_chain(doc: dict[str, Any], dt: Any, scale: float) -> np.ndarray:
    """transformers' eager attention + o_proj in the dtype, from the rounded inputs alone."""
    x = _t(doc["x"], dt)
    heads, kv = doc["heads"], doc["kv_heads"]

    def lin(w: str, b: str) -> Any:
        return F.linear(x, _t(doc[w], dt).T.contiguous(), _t(doc[b], dt))

    n = x.shape[0]
    q = lin("wq", "bq").view(n, heads, -1).transpose(0, 1)
    k = lin("wk", "bk").view(n, kv, -1).transpose(0, 1).repeat_interleave(heads // kv, 0)
    v = lin("wv", "bv").view(n, kv, -1).transpose(0, 1).repeat_interleave(heads // kv, 0)
    fill = torch.zeros((n, n), dtype=dt)
    fill[~torch.tensor(np.asarray(doc["mask"], dtype=bool))] = torch.finfo(dt).min
    s = torch.matmul(q, k.transpose(1, 2)) * scale + fill
    w = torch.softmax(s, dim=-1, dtype=torch.float32).to(dt)
    out = torch.matmul(w, v).transpose(0, 1).reshape(n, -1)
    return F.linear(out, _t(doc["wo"], dt).T.contiguous(), _t(doc["bo"], dt)).double().numpy()


SEEDS = range(40)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_each_eager_stage_is_torchs_op_in_that_dtype(dtype: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    for seed in SEEDS:
        trace = qkvcalc.explain(**problem(seed), dtype=dtype)
        for stage in trace.stages:
            theirs = _torch_stage(stage, dt)
            if stage.op == "softmax":  # e^(s − max) kept in float32: check the weights it makes
                masked = trace.stage("masked", stage.head)
                theirs_np = _torch_weights(masked.value, dt)
            elif theirs is None:
                continue
            else:
                theirs_np = theirs.double().numpy()
            ulps = _ulps(stage.value, theirs_np, dt)
            assert ulps.max() <= 1, (seed, stage.id, stage.head, stage.value, theirs_np)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.99 * total, (same, total)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_whole_eager_chain_is_torchs_bit_for_bit(dtype: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    for seed in SEEDS:
        doc = problem(seed)
        trace = qkvcalc.explain(**doc, dtype=dtype)
        theirs = _torch_chain(doc, dt, trace.problem.scale)
        same += int(((trace.output == theirs) | np.isnan(theirs) & np.isnan(trace.output)).sum())
        total += theirs.size
    assert same >= 0.99 * total, (same, total)


def test_float32_stages_are_within_torchs_sum_order() -> None:
    """float32: a sum's order is the kernel's own (BLAS and torch differ among themselves): a
    product within the sum-order bound 2·d·ε·(|A|·|B| + |b|) of torch's (each result may be
    d·ε·Σ|a·b| from the exact sum), the elementwise ops bit for bit."""
    dt = torch.float32
    eps = float(np.finfo(np.float32).eps)
    for seed in SEEDS:
        trace = qkvcalc.explain(**problem(seed), dtype="float32")
        for stage in trace.stages:
            theirs = _torch_stage(stage, dt)
            if theirs is None:
                continue
            diff = np.abs(stage.value - theirs.double().numpy())
            if stage.op in ("scale", "mask"):
                assert (diff == 0).all(), (seed, stage.id)
                continue
            a, b = (np.abs(o) for o in stage.operands)
            bias = np.abs(stage.params.get("bias", 0.0))
            bound = 2 * a.shape[1] * eps * (a @ b + bias)
            assert (diff <= bound).all(), (seed, stage.id, diff.max())


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_the_float64_twin_is_the_plain_run(dtype: str, policy: str) -> None:
    for seed in range(10):
        doc = problem(seed)
        plain = qkvcalc.explain(**doc)
        low = run_lowp(plain.problem, dtype, policy)
        assert len(low.stages) == len(plain.stages)
        for mine, twin in zip(low.stages, plain.stages, strict=True):
            if mine.twin is None:
                continue
            got = np.asarray(mine.twin() if callable(mine.twin) else mine.twin)
            np.testing.assert_allclose(got, twin.value, rtol=0, atol=1e-12)
