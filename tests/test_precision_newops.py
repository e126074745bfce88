"""--dtype with multi-head latent attention (`mla`), the norm on V (`v_norm`) and differential
attention (`differential`): each stage recomputed by torch in bfloat16 and float16 from
qkvcalc's own operands of that stage, as transformers' eager code computes it (DeepSeek-V3's
attention, Gemma 3n's and Gemma 4's `v_norm`, DiffLlama's attention) under `eager`, or with
every op on tensors in the dtype under `naive`; within 1 ulp and 99% of the cells bit for bit,
as tests/test_precision_features.py holds the other features. Each oracle is shown to matter:
the same stage rounded at another point (the other policy's) differs in some cells.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from tests.test_precision_features import _rms, _torch_feature_stage
from tests.test_precision_torch import DTYPES, _t, _torch_stage, _ulps, problem

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
torch.set_num_threads(1)


def mla_problem(seed: int) -> dict[str, Any]:
    """Multi-head latent attention with a query latent (or W_Q on odd seeds), d_R rotary
    columns, a causal mask."""
    rng = np.random.default_rng(seed + 900)
    heads = int(rng.choice([1, 2, 3]))
    n, d_model = int(rng.integers(2, 7)), int(rng.integers(3, 9))
    rank, rank_q, rope = int(rng.integers(2, 7)), int(rng.integers(2, 7)), 2
    nope, d_v = int(rng.integers(1, 4)), int(rng.integers(1, 4))

    def w(*shape: int) -> list[Any]:
        return rng.standard_normal(shape).tolist()

    mla: dict[str, Any] = {
        "wkv_a": w(d_model, rank + rope),
        "kv_a_norm": rng.uniform(0.5, 1.5, rank).tolist(),
        "wkv_b": w(rank, heads * (nope + d_v)),
        "rope_dims": rope,
    }
    if seed % 2:
        mla["wq"] = w(d_model, heads * (nope + rope))
    else:
        mla |= {"wq_a": w(d_model, rank_q), "q_a_norm": rng.uniform(0.5, 1.5, rank_q).tolist()}
        mla["wq_b"] = w(rank_q, heads * (nope + rope))
    return {
        "x": (rng.standard_normal((n, d_model)) * 2).tolist(),
        "heads": heads,
        "mla": mla,
        "rope": {"theta": 100, "dims": rope},
        "mask": "causal",
    }


def _mla_stage(stage: Any, dt: Any, naive: bool, trace: Any) -> Any:
    """An MLA stage by torch from its own operands (None: one the rope tests check)."""
    if stage.op == "mla_join":  # DeepSeek-V3's torch.cat of the two parts of each key
        return torch.cat([_t(o, dt) for o in stage.operands], dim=-1)
    if stage.op == "softmax":
        masked = trace.stage("masked", stage.head).value
        if naive:
            e = torch.exp(_t(masked, dt) - _t(masked, dt).max(dim=-1, keepdim=True).values)
            return e / e.sum(dim=-1, keepdim=True)
        return torch.softmax(_t(masked, dt), dim=-1, dtype=torch.float32).to(dt)
    if stage.op == "rmsnorm":
        return _torch_feature_stage(stage, dt, naive, trace)
    if stage.op in ("project", "matmul", "scale"):
        return _torch_stage(stage, dt)
    return None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_mla_stage_is_torchs_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    seen: set[str] = set()
    other = 0  # rmsnorm cells where the other policy's rounding differs
    for seed in range(30):
        trace = qkvcalc.explain(**mla_problem(seed), dtype=dtype, policy=policy)
        for stage in trace.stages:
            theirs = _mla_stage(stage, dt, policy == "naive", trace)
            if theirs is None:
                continue
            seen.add(stage.id if stage.op == "rmsnorm" else stage.op)
            theirs_np = theirs.double().numpy()
            ulps = _ulps(stage.value, theirs_np, dt)
            assert ulps.max() <= 1, (seed, stage.formula, stage.head, stage.value, theirs_np)
            same += int((ulps == 0).sum())
            total += ulps.size
            if stage.op == "rmsnorm":
                x, w = _t(stage.operands[0], dt), _t(stage.params["weight"], dt)
                wrong = _rms(x, w, stage.params["eps"], policy != "naive", dt).double().numpy()
                other += int((wrong != stage.value).sum())
    assert seen == {"project", "matmul", "scale", "softmax", "mla_join", "c_q_norm", "c_kv_norm"}
    assert same >= 0.99 * total, (same, total)
    assert other  # the other rounding point is told apart


def test_the_float64_twin_of_every_mla_stage_is_the_plain_run() -> None:
    for seed in range(6):
        doc = mla_problem(seed)
        plain = qkvcalc.explain(**doc)
        for policy in ("eager", "naive"):
            low = qkvcalc.explain(**doc, dtype="bfloat16", policy=policy)
            for mine, twin in zip(low.stages, plain.stages, strict=True):
                if mine.twin is not None:
                    np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)


def _gemma_v_norm(v: Any, eps: float) -> Any:
    """transformers' own module: Gemma 3n's v_norm, RMSNorm(head_dim, with_scale=False)."""
    from transformers.models.gemma3n.modeling_gemma3n import Gemma3nRMSNorm

    return Gemma3nRMSNorm(v.shape[-1], eps=eps, with_scale=False)(v)


def _naive_v_norm(v: Any, eps: float) -> Any:
    return v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + eps)  # every op in the dtype


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_v_norm_stage_is_gemmas_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    oracle, other = (
        (_gemma_v_norm, _naive_v_norm) if policy == "eager" else (_naive_v_norm, _gemma_v_norm)
    )
    same = total = checked = told = 0
    for seed in range(30):
        doc = problem(seed)
        doc["v_norm"] = {"eps": float(np.random.default_rng(seed).choice([1e-6, 1e-2, 0.5]))}
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        for stage in trace.stages:
            if stage.op != "v_rmsnorm":
                continue
            v, eps = _t(stage.operands[0], dt), stage.params["eps"]
            with torch.no_grad():
                theirs = oracle(v, eps).double().numpy()
                told += int((other(v, eps).double().numpy() != stage.value).sum())
            ulps = _ulps(stage.value, theirs, dt)
            assert ulps.max() <= 1, (seed, stage.head, stage.value, theirs)
            same += int((ulps == 0).sum())
            total += ulps.size
            checked += 1
        # and the output reads V_norm as the dtype made it: torch's product of the two
        for h in {s.head for s in trace.stages if s.op == "v_rmsnorm"}:
            out = trace.stage("output", h)
            assert np.array_equal(out.operands[1], trace.stage("v_norm", h).value)
    assert checked >= 40
    assert same >= 0.99 * total, (same, total)
    assert told  # the other rounding point is told apart


def diff_problem(seed: int) -> dict[str, Any] | None:
    """problem(seed) with differential attention (None where its heads are odd): λ, λ_init and
    ε drawn, λ at times above 1 (a pair whose difference cancels most)."""
    doc = problem(seed)
    if doc["heads"] % 2:
        return None
    rng = np.random.default_rng(seed + 700)
    doc["differential"] = {
        "lambda": float(rng.uniform(0.1, 1.2)),
        "lambda_init": float(rng.uniform(0.1, 0.8)),
        "eps": float(rng.choice([1e-5, 1e-2])),
    }
    return doc


def _diffllama_output(a: Any, b: Any, v: Any, lam: Any) -> Any:
    """DiffLlama's eager attention: each map times V'' (its own attention call), then the
    first less λ (a tensor in the dtype) times the second."""
    return torch.matmul(a, v) - lam * torch.matmul(b, v)


def _diff_stage(stage: Any, dt: Any, naive: bool, trace: Any) -> tuple[Any, Any] | None:
    """(torch's stage, the same rounded at the other policy's points), from the stage's own
    operands (for D under eager, from the two maps it is made of); None: not a pair's op."""
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "diff_maps":
        lam = _t(np.float64(stage.params["lambda"]), dt)
        in_dtype = ops[0] - lam * ops[1]
        wide = ops[0].float() - lam.float() * ops[1].float()  # shown in float32
        return (in_dtype, wide) if naive else (wide, in_dtype)
    if stage.op == "matmul" and stage.id == "diff_output":
        maps = trace.stage("diff_weights", stage.head)
        a, b = (_t(o, dt) for o in maps.operands)
        lam = _t(np.float64(maps.params["lambda"]), dt)
        theirs = _diffllama_output(a, b, ops[1], lam)
        naive_d = torch.matmul(a - lam * b, ops[1])
        return (naive_d, theirs) if naive else (theirs, naive_d)
    if stage.op == "group_rms":
        eps = stage.params["eps"]
        module = torch.nn.RMSNorm(ops[0].shape[-1], eps=eps, elementwise_affine=False)
        by_hand = _naive_v_norm(ops[0], eps)
        return (by_hand, module(ops[0])) if naive else (module(ops[0]), by_hand)
    if stage.op == "diff_scale":  # (1 - lambda_init) * groupnorm: a Python number
        factor = stage.params["factor"]
        return factor * ops[0], torch.tensor(factor).to(dt) * ops[0]
    if stage.op == "diff_join":
        joined = torch.cat(ops, dim=-1)
        return joined, joined
    return None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_differential_stage_is_diffllamas_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    told: dict[str, int] = {}
    for seed in range(40):
        doc = diff_problem(seed)
        if doc is None:
            continue
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        for stage in trace.stages:
            with torch.no_grad():
                found = _diff_stage(stage, dt, policy == "naive", trace)
            if found is None:
                continue
            theirs, other = (t.double().numpy() for t in found)
            wide = stage.op == "diff_maps" and policy == "eager"  # shown in float32
            ulps = _ulps(stage.value, theirs, torch.float32 if wide else dt)
            assert ulps.max() <= 1, (seed, stage.formula, stage.head, stage.value, theirs)
            same += int((ulps == 0).sum())
            total += ulps.size
            told[stage.id] = told.get(stage.id, 0) + int((other != stage.value).sum())
    assert set(told) == {"diff_weights", "diff_v", "diff_output", "diff_norm", "diff_scaled"}
    assert same >= 0.99 * total, (same, total)
    # the other rounding points are told apart (the join moves numbers: nothing to tell)
    assert all(told[s] for s in ("diff_weights", "diff_output", "diff_norm", "diff_scaled")), told


def test_the_float64_twin_of_every_differential_stage_is_the_plain_run() -> None:
    for seed in range(12):
        doc = diff_problem(seed)
        if doc is None:
            continue
        plain = qkvcalc.explain(**doc)
        for policy in ("eager", "naive"):
            low = qkvcalc.explain(**doc, dtype="bfloat16", policy=policy)
            for mine, twin in zip(low.stages, plain.stages, strict=True):
                if mine.twin is not None:
                    np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)


def test_differential_under_sdpa_is_one_message() -> None:
    doc = next(d for d in map(diff_problem, range(20)) if d is not None)
    with pytest.raises(qkvcalc.QkvcalcError) as raised:
        qkvcalc.explain(**doc, dtype="bfloat16", policy="sdpa")
    assert raised.value.msg.key == "precision.sdpa_differential"


NEW_OPS = {  # a problem of each feature, as a document the command line reads
    "mla": mla_problem(0),
    "v_norm": {**problem(3), "v_norm": {"eps": 1e-2}},
    "differential": diff_problem(2),
}


@pytest.mark.parametrize("feature", sorted(NEW_OPS))
@pytest.mark.parametrize(("dtype", "policy"), [("bfloat16", "eager"), ("float16", "naive")])
def test_every_equals_holds_in_the_new_ops_under_dtype(cli, feature, dtype, policy) -> None:
    """Every '=' of the cell arithmetic holds for the numbers shown (the dtype's), as
    tests/test_arith_invariant.py checks the presets, and the rounding notes are there."""
    import json

    from tests.test_arith_invariant import PINNED_ENV, arithmetic_lines, check_line

    doc = NEW_OPS[feature]
    assert doc is not None
    args = ["explain", "-", "-f", "table", "--no-color", "--detail", "full", "--dtype", dtype]
    env = {**PINNED_ENV, "COLUMNS": "4000"}
    result = cli(*args, "--policy", policy, input=json.dumps(doc), env=env)
    assert result.exit_code == 0, result.output[-2000:]
    checked = 0
    for line in arithmetic_lines(result.output):
        try:
            n, failure = check_line(line, 4)
        except ArithmeticError:
            assert line.endswith(" NaN"), line  # a float16 row of −∞ (−1e9), said to be NaN
            continue
        assert failure is None, failure
        checked += n
    assert checked
    said = {
        "mla": "As transformers' RMSNorm" if policy == "eager" else "x / √(mean(x²) + ε) · w",
        "v_norm": "Gemma 3n" if policy == "eager" else "V / √(mean(V²) + ε)",
        "differential": "DiffLlama never forms Δ" if policy == "eager" else "D / √(mean(D²)",
    }
    assert said[feature] in result.output
