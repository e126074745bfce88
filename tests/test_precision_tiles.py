"""--dtype with --tiles and --decode, against PyTorch doing the same thing in that dtype on CPU.

Tiles: each stage of the online softmax recomputed by torch from qkvcalc's own operands of that
stage. Under `naive` every op is a torch op on tensors in the dtype (a tiled online softmax
written in bf16 or fp16); under `eager` and `sdpa` the state is float32 as FlashAttention keeps
it (torch ops on float32 tensors, e^(s − m) cast to the dtype before E·V, the output cast once).
The whole tiled loop is run by torch from the logits and V alone, and under `sdpa` each head's
output is torch's own scaled_dot_product_attention in the dtype.

Decode: each step's stages recomputed by torch's eager ops from their operands, and under
`sdpa` each step's output of each head is torch's scaled_dot_product_attention of the step's
queries against the cached keys and values in the dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.run.precision import run as run_lowp
from tests.test_precision_torch import DTYPES, _t, _torch_stage, _ulps

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
F = torch.nn.functional
torch.set_num_threads(1)

TILE_OPS = ("block_max", "running_max", "correction", "block_exp", "running_sum", "acc", "divide")


def tiles_problem(seed: int) -> dict[str, Any]:
    """problem(seed) in blocks of 1 to 3 keys; on even seeds d_v = d_k (torch's flash kernel)."""
    from tests.test_precision_sdpa import sdpa_problem

    doc = sdpa_problem(seed)
    doc["tiles"] = 1 + seed % 3
    return doc


def decode_problem(seed: int) -> dict[str, Any]:
    """problem(seed), causal (a decode run's mask), a prefill of 0 to n − 1 tokens."""
    from tests.test_precision_sdpa import sdpa_problem

    doc = sdpa_problem(seed)
    del doc["mask"]
    doc["decode"] = seed % len(doc["x"])
    return doc


def _naive_tile(stage: Any, dt: Any) -> Any:
    """A tile stage as a tiled online softmax written with torch tensors in the dtype."""
    ops = [_t(o, dt) for o in stage.operands]
    first = len(ops) == {"correction": 1, "running_sum": 1, "acc": 2}.get(stage.op, 0)
    if stage.op == "block_max":
        return ops[0].amax(dim=1, keepdim=True)
    if stage.op == "running_max":
        return ops[0].clone() if len(ops) == 1 else torch.maximum(ops[0], ops[1])
    if stage.op == "correction":
        if first:
            return torch.zeros_like(ops[0])
        same = ops[0] == ops[1]
        return torch.where(same, 1.0, torch.exp(torch.where(same, 0.0, ops[0] - ops[1]))).to(dt)
    if stage.op == "block_exp":
        m = torch.where(torch.isneginf(ops[1]), 0.0, ops[1]).to(dt)
        return torch.exp(ops[0] - m)
    if stage.op == "running_sum":
        fresh = ops[-1].sum(dim=1, keepdim=True)
        return fresh if first else ops[0] * ops[1] + fresh
    if stage.op == "acc":
        *before, e, v = ops
        fresh = torch.matmul(e, v[stage.params["rows"]])
        return fresh if first else before[0] * before[1] + fresh
    if stage.op == "divide":
        return torch.where(ops[1] == 0, 0.0, ops[0] / ops[1]).to(dt)
    return None


def _flash_tile(stage: Any, dt: Any, math_kernel: bool) -> Any:
    """A tile stage as FlashAttention keeps it: torch ops on float32 tensors (the dtype's
    numbers, or float32's, are exact there), e^(s − m) cast to the dtype before E·V (not by
    torch's math kernel), the output O × (1/ℓ) cast to the dtype."""
    f32 = torch.float32
    ops = [_t(o, f32) for o in stage.operands]
    first = len(ops) == {"correction": 1, "running_sum": 1, "acc": 2}.get(stage.op, 0)
    if stage.op in ("block_max", "running_max", "running_sum") or stage.op == "correction":
        return _naive_tile(stage, f32)
    if stage.op == "block_exp":
        m = torch.where(torch.isneginf(ops[1]), 0.0, ops[1])
        return torch.exp(ops[0] - m)
    if stage.op == "acc":
        *before, e, v = ops
        if not math_kernel:
            e = e.to(dt).to(f32)
        fresh = torch.matmul(e, v[stage.params["rows"]])
        return fresh if first else before[0] * before[1] + fresh
    if stage.op == "divide":
        inverse = torch.where(ops[1] == 0, 0.0, 1 / ops[1])
        return (ops[0] * inverse).to(dt)
    return None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["naive", "eager", "sdpa"])
def test_each_tile_stage_is_torchs_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    seen = set()
    for seed in range(30):
        doc = tiles_problem(seed)
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        math_kernel = policy == "sdpa" and trace.problem.d_k != trace.problem.d_v
        for stage in trace.stages:
            if stage.op not in TILE_OPS:
                continue
            seen.add(stage.op)
            if policy == "naive":
                theirs, unit = _naive_tile(stage, dt), dt
            else:
                theirs = _flash_tile(stage, dt, math_kernel)
                unit = dt if stage.op == "divide" else torch.float32
            theirs_np = theirs.double().numpy()
            ulps = _ulps(stage.value, theirs_np, unit)
            far = ulps > 1
            if stage.op == "acc" and unit == torch.float32:  # a sum in float32: its order
                far &= np.abs(stage.value - theirs_np) > _sum_bound(stage)
            assert not far.any(), (seed, stage.formula, stage.head, stage.value, theirs_np)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert seen == set(TILE_OPS)
    assert same >= 0.99 * total, (same, total)


def _sum_bound(stage: Any) -> np.ndarray:
    """How far two float32 computations of the accumulator O ← O·c + E·V_block may lie apart
    by the order of their sums alone (torch's matmul fuses multiply and add on some CPUs, or
    sums in another order): each of the k + 1 terms rounds at most twice, so 2·(k + 1)·u times
    the sum of the terms' sizes, u = 2⁻²⁴. One machine's torch put O_1 = E_1·V[1–2] 2 ulps from
    qkvcalc's, within this bound; every other cell stays within 1 ulp."""
    *before, e, v = (np.asarray(o, dtype=np.float64) for o in stage.operands)
    v = v[stage.params["rows"]]
    sizes = np.abs(e) @ np.abs(v)
    if before:
        sizes = sizes + np.abs(before[0] * before[1])
    return 2 * (e.shape[1] + 1) * 2.0**-24 * sizes


def _torch_tiled(
    logits: np.ndarray,
    v: np.ndarray,
    size: int,
    dt: Any,
    flash: bool,
    start: tuple[float, float] = (float("-inf"), 0.0),
) -> Any:
    """The online softmax over blocks of `size` keys, written in torch from the logits and V
    alone: float32 state (FlashAttention) or every tensor in the dtype (naive); the state
    starts at (m₀, ℓ₀) = `start` (a sink: (σ, 1))."""
    work = torch.float32 if flash else dt
    s, vv = _t(logits, work), _t(v, dt)
    n = s.shape[0]
    m = torch.full((n, 1), start[0], dtype=work)
    total = torch.full((n, 1), start[1], dtype=work)
    acc = torch.zeros((n, v.shape[1]), dtype=work)
    for a in range(0, s.shape[1], size):
        block = s[:, a : a + size]
        new = torch.maximum(m, block.amax(dim=1, keepdim=True))
        same = m == new
        fix = torch.where(same, 1.0, torch.exp(torch.where(same, 0.0, m - new))).to(work)
        e = torch.exp(block - torch.where(torch.isneginf(new), 0.0, new).to(work))
        p = e.to(dt).to(work) if flash else e
        total = total * fix + e.sum(dim=1, keepdim=True)
        acc = acc * fix + torch.matmul(p, vv[a : a + size].to(work))
        m = new
    if flash:
        return (acc * torch.where(total == 0, 0.0, 1 / total)).to(dt)
    return torch.where(total == 0, 0.0, acc / total).to(dt)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["naive", "eager"])
def test_the_whole_tiled_loop_is_torchs(dtype: str, policy: str) -> None:
    """Each head's O / ℓ against the whole loop written in torch from the logits and V."""
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(30):
        doc = tiles_problem(seed)
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        for h in [s.head for s in trace.stages if s.id == "scores"]:
            out = trace.stage("output", h)
            logits = trace.stage("masked", h).value
            v = next(s for s in trace.stages if s.op == "acc" and s.head == h).operands[-1]
            theirs = _torch_tiled(logits, v, doc["tiles"], dt, policy != "naive")
            ulps = _ulps(out.value, theirs.double().numpy(), dt)
            assert ulps.max() <= 1, (seed, h)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.99 * total, (same, total)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_sdpa_tiles_are_torchs_sdpa(dtype: str) -> None:
    """Under sdpa each head's tiled output is torch's scaled_dot_product_attention in the
    dtype (its own blocks are larger) within 2 units in the last place, 95% bit for bit."""
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(30):
        trace = qkvcalc.explain(**tiles_problem(seed), dtype=dtype, policy="sdpa")
        for h in [s.head for s in trace.stages if s.id == "scores"]:
            q, kt = trace.stage("scores", h).operands
            v = next(s for s in trace.stages if s.op == "acc" and s.head == h).operands[-1]
            allowed = torch.tensor(trace.stage("masked", h).params["allowed"])
            theirs = F.scaled_dot_product_attention(
                _t(q, dt)[None, None],
                _t(kt.T, dt)[None, None],
                _t(v, dt)[None, None],
                attn_mask=allowed,
                scale=trace.problem.scale,
            )[0, 0]
            ulps = _ulps(trace.stage("output", h).value, theirs.double().numpy(), dt)
            assert ulps.max() <= 2, (seed, h, ulps.max())
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.95 * total, (same, total)


def _torch_decode_stage(stage: Any, dt: Any) -> Any:
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "step_project":
        bias = stage.params.get("bias")
        rows = ops[0][torch.tensor(np.asarray(stage.params["take"]))]
        return F.linear(rows, ops[1].T.contiguous(), None if bias is None else _t(bias, dt))
    if stage.op == "qk":
        return torch.matmul(ops[0], ops[1].T)
    if stage.op == "stack":
        return torch.cat(ops)
    return _torch_stage(stage, dt)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_each_eager_decode_stage_is_torchs(dtype: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    seen = set()
    for seed in range(30):
        trace = qkvcalc.explain(**decode_problem(seed), dtype=dtype)
        for stage in trace.stages:
            if stage.op == "softmax":
                masked = [s for s in trace.stages if s.id == "masked"]
                logits = next(s for s in masked if (s.head, s.step) == (stage.head, stage.step))
                theirs = torch.softmax(_t(logits.value, dt), -1, dtype=torch.float32).to(dt)
            else:
                theirs = _torch_decode_stage(stage, dt)
            if theirs is None:
                continue
            seen.add(stage.op)
            ulps = _ulps(stage.value, theirs.double().numpy(), dt)
            assert ulps.max() <= 1, (seed, stage.formula, stage.step, stage.head)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert {"step_project", "qk", "stack", "softmax", "matmul"} <= seen
    assert same >= 0.99 * total, (same, total)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_each_sdpa_decode_step_is_torchs_sdpa(dtype: str) -> None:
    """Each step's output of each head: torch's SDPA of the step's queries against the cached
    keys and values, in the dtype, with the step's mask (aligned bottom-right)."""
    dt = DTYPES[dtype]
    same = total = 0
    kernels = set()
    for seed in range(30):
        trace = qkvcalc.explain(**decode_problem(seed), dtype=dtype, policy="sdpa")
        kernels.add(trace.problem.d_k == trace.problem.d_v)
        for stage in trace.stages:
            if stage.op != "qk":
                continue
            q, k = stage.operands
            at = [s for s in trace.stages if (s.head, s.step) == (stage.head, stage.step)]
            out = next(s for s in at if s.id == "output")
            allowed = next(s for s in at if s.id == "masked").params["allowed"]
            theirs = F.scaled_dot_product_attention(
                _t(q, dt)[None, None],
                _t(k, dt)[None, None],
                _t(out.operands[1], dt)[None, None],
                attn_mask=torch.tensor(allowed),
                scale=trace.problem.scale,
            )[0, 0]
            ulps = _ulps(out.value, theirs.double().numpy(), dt)
            assert ulps.max() <= 2, (seed, stage.step, stage.head, ulps.max())
            same += int((ulps == 0).sum())
            total += ulps.size
    assert kernels == {True, False}
    assert same >= 0.95 * total, (same, total)


@pytest.mark.parametrize("policy", ["eager", "naive", "sdpa"])
@pytest.mark.parametrize("schedule", ["tiles", "decode"])
def test_the_float64_twin_is_the_plain_run(policy: str, schedule: str) -> None:
    for seed in range(6):
        doc = tiles_problem(seed) if schedule == "tiles" else decode_problem(seed)
        plain = qkvcalc.explain(**doc)
        low = run_lowp(plain.problem, "bfloat16", policy)
        assert len(low.stages) == len(plain.stages)
        for mine, twin in zip(low.stages, plain.stages, strict=True):
            if mine.twin is None:
                continue
            got = np.asarray(mine.twin() if callable(mine.twin) else mine.twin)
            np.testing.assert_allclose(got, twin.value, rtol=0, atol=1e-12)


def test_the_stacked_steps_and_the_tiles_say_how_far_the_whole_run_in_the_dtype_is() -> None:
    """The closing note compares with the same attention all at once in the same dtype and
    policy (not with float64): its count of equal cells is recomputed here."""
    for schedule, doc in (("decode", decode_problem(3)), ("tiles", tiles_problem(4))):
        for policy in ("naive", "eager"):
            trace = qkvcalc.explain(**doc, dtype="float16", policy=policy)
            whole_doc = {k: v for k, v in doc.items() if k != schedule}
            if schedule == "decode":
                whole_doc["mask"] = "causal"
            whole = qkvcalc.explain(**whole_doc, dtype="float16", policy=policy)
            for h in [s.head for s in trace.stages if s.id == "scores" and not s.step]:
                out = trace.stage("output", h)
                (note,) = [m for m in out.notes if m.key == f"precision.{schedule}_whole"]
                theirs = whole.stage("output", h).value
                assert note.params["same"] == int((out.value == theirs).sum())
                assert note.params["cells"] == theirs.size


def test_bf16tiles_the_bfloat16_running_sum_loses_eight_blocks_and_float32_keeps_them() -> None:
    """The lesson preset, recomputed: with bfloat16 tensors (torch's own loop, naive) ℓ stays 2
    through block 9 and the output is about 10 ulp from float64; FlashAttention's float32 state
    (eager) gives the whole row's output, within 0.27 ulp."""
    from qkvcalc.input import presets

    doc = presets.load("bf16tiles")
    dt = torch.bfloat16
    plain = qkvcalc.explain(**{k: v for k, v in doc.items() if k not in ("dtype", "policy")})
    exact = plain.stage("output").value
    got = {}
    for policy in ("naive", "eager"):
        trace = qkvcalc.explain(**{**doc, "policy": policy})
        logits = next(s for s in trace.stages if s.op == "block").operands[0]
        v = next(s for s in trace.stages if s.op == "acc").operands[-1]
        theirs = _torch_tiled(logits, v, doc["tiles"], dt, policy == "eager").double().numpy()
        np.testing.assert_array_equal(trace.stage("output").value, theirs)
        got[policy] = _ulps(theirs, exact, dt).max()
        sums = [float(trace.stage("running_sum", block=b).value[0, 0]) for b in range(1, 10)]
        if policy == "naive":
            assert sums == [2.0] * 9  # blocks 2 to 9 add 0.0077 each: below half an ulp of 2
        else:
            assert sums[-1] == pytest.approx(2.0614262, abs=1e-7)
    whole = {k: v for k, v in doc.items() if k != "tiles"}
    untiled = qkvcalc.explain(**{**whole, "policy": "naive"}).stage("output").value
    assert got["naive"] > 9.5 and got["eager"] < 0.3 and _ulps(untiled, exact, dt).max() < 0.3
    assert (
        qkvcalc.explain(**{**doc, "policy": "eager"}).stage("output").value
        == qkvcalc.explain(**{**whole, "policy": "eager"}).stage("output").value
    ).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["naive", "eager"])
def test_tiles_that_start_from_a_sink_are_torchs_loop(dtype: str, policy: str) -> None:
    """gpt-oss's sinks in tiles: the state starts at m₀ = σ (in the dtype), ℓ₀ = 1."""
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(12):
        doc = tiles_problem(seed)
        rng = np.random.default_rng(seed + 7)
        doc["sinks"] = rng.uniform(-1, 2, doc["heads"]).tolist()
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        for h in [s.head for s in trace.stages if s.id == "scores"]:
            sink = float(_t(doc["sinks"][(h or 1) - 1], dt).double())
            logits = next(s for s in trace.stages if s.op == "block" and s.head == h).operands[0]
            v = next(s for s in trace.stages if s.op == "acc" and s.head == h).operands[-1]
            theirs = _torch_tiled(logits, v, doc["tiles"], dt, policy != "naive", (sink, 1.0))
            ulps = _ulps(trace.stage("output", h).value, theirs.double().numpy(), dt)
            assert ulps.max() <= 1, (seed, h)
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.99 * total, (same, total)
