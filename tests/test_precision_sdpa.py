"""--policy sdpa against torch's scaled_dot_product_attention on the CPU, in that dtype.

Each head's output is recomputed by F.scaled_dot_product_attention from qkvcalc's own Q, K and
V of that head (already in the dtype), with the boolean mask and the scale: torch picks its
kernel (the flash kernel where d_k = d_v, the math kernel otherwise; both are drawn). Within 2
units in the last place everywhere and bit for bit in at least 95% of cells.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from tests.test_precision_torch import DTYPES, _t, _ulps, problem

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
F = torch.nn.functional
torch.set_num_threads(1)


def sdpa_problem(seed: int) -> dict[str, Any]:
    """problem(seed), and on even seeds d_v = d_k (torch's flash kernel rather than math)."""
    doc = problem(seed)
    if seed % 2 == 0:
        heads, kv = doc["heads"], doc["kv_heads"]
        d_k = len(doc["wk"][0]) // kv
        rng = np.random.default_rng(seed + 1000)
        doc["wv"] = rng.standard_normal((len(doc["x"][0]), kv * d_k)).tolist()
        doc["bv"] = rng.standard_normal(kv * d_k).tolist()
        doc["wo"] = rng.standard_normal((heads * d_k, len(doc["x"][0]))).tolist()
    return doc


def _head_output(trace: Any, h: int | None, dt: Any) -> np.ndarray:
    scores = trace.stage("scores", h)
    q, kt = scores.operands
    v = trace.stage("output", h).operands[1]
    allowed = torch.tensor(trace.stage("masked", h).params["allowed"])
    out = F.scaled_dot_product_attention(
        _t(q, dt)[None, None],
        _t(kt.T, dt)[None, None],
        _t(v, dt)[None, None],
        attn_mask=allowed,
        scale=trace.problem.scale,
    )
    return out[0, 0].double().numpy()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_each_heads_output_is_torchs_sdpa_in_that_dtype(dtype: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    kernels = set()
    for seed in range(40):
        doc = sdpa_problem(seed)
        trace = qkvcalc.explain(**doc, dtype=dtype, policy="sdpa")
        kernels.add(trace.problem.d_k == trace.problem.d_v)
        heads = [s.head for s in trace.stages if s.id == "scores"]
        for h in heads:
            mine = trace.stage("output", h).value
            ulps = _ulps(mine, _head_output(trace, h, dt), dt)
            assert ulps.max() <= 2, (seed, h, ulps.max())
            same += int((ulps == 0).sum())
            total += ulps.size
    assert kernels == {True, False}  # both of torch's CPU kernels were drawn
    assert same >= 0.95 * total, (same, total)


def test_a_fully_masked_row_is_0_as_sdpa_gives_it() -> None:
    doc = sdpa_problem(1)  # odd seeds: the first query may see no key
    trace = qkvcalc.explain(**doc, dtype="bfloat16", policy="sdpa")
    assert not np.asarray(doc["mask"])[0].any()
    for stage in trace.stages:
        if stage.id == "weights":
            assert (stage.value[0] == 0).all()
    assert trace.precision is not None and trace.precision.first_nonfinite is None
    assert np.isfinite(trace.output).all()


def test_the_sdpa_twin_is_the_plain_run() -> None:
    for seed in range(4):
        doc = sdpa_problem(seed)
        plain = qkvcalc.explain(**doc)
        low = qkvcalc.explain(**doc, dtype="float16", policy="sdpa")
        for mine, twin in zip(low.stages, plain.stages, strict=True):
            if mine.twin is not None:
                np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)
