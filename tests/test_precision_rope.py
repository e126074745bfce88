"""RoPE under --dtype against PyTorch doing transformers' rotary embedding in that dtype.

`eager`: transformers' own LlamaRotaryEmbedding (angles and cos/sin in float32, cast to the
dtype) and apply_rotary_pos_emb (q·cos + rotate_half(q)·sin in the dtype), applied by torch to
qkvcalc's own input of each q_rot/k_rot stage (its Q or K, already in the dtype). `naive`: the
same formula with the positions and inv_freq in the dtype too (a bfloat16 arange, as before
transformers' issue 29285), cos and sin of those. The lesson preset `bf16rope` is recomputed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input import presets
from tests.test_precision_torch import DTYPES, _t, _ulps

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
modeling_llama = pytest.importorskip("transformers.models.llama.modeling_llama")
LlamaConfig = pytest.importorskip("transformers").LlamaConfig
torch.set_num_threads(1)


def rope_problem(seed: int) -> dict[str, Any]:
    """Heads (GQA on some), d_k even, positions from far past 256, a theta of its own."""
    rng = np.random.default_rng(seed)
    kv = int(rng.choice([1, 2]))
    heads = kv * int(rng.choice([1, 2]))
    n, d_model, d_k = int(rng.integers(2, 7)), int(rng.integers(2, 9)), 2 * int(rng.integers(1, 4))
    start = int(rng.integers(0, 5000))
    return {
        "x": (rng.standard_normal((n, d_model)) * 2).tolist(),
        "wq": rng.standard_normal((d_model, heads * d_k)).tolist(),
        "wk": rng.standard_normal((d_model, kv * d_k)).tolist(),
        "wv": rng.standard_normal((d_model, kv * d_k)).tolist(),
        "heads": heads,
        "kv_heads": kv,
        "positions": sorted(rng.choice(np.arange(start, start + 3 * n), n, replace=False).tolist()),
        "rope": float(rng.choice([10000.0, 500000.0, 100.0])),
        "mask": "causal",
    }


def _transformers_rope(x: Any, positions: list[int], theta: float, dt: Any) -> Any:
    """transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb on x [n, d_k] in dtype dt."""
    d_k = x.shape[-1]
    config = LlamaConfig(hidden_size=d_k, num_attention_heads=1, head_dim=d_k, rope_theta=theta)
    rotary = modeling_llama.LlamaRotaryEmbedding(config)
    cos, sin = rotary(x, torch.tensor([positions]))
    q = x[None, None]  # [batch, heads, n, d_k]
    turned, _ = modeling_llama.apply_rotary_pos_emb(q, q, cos, sin)
    return turned[0, 0]


def _naive_rope(x: Any, positions: list[int], theta: float, dt: Any) -> Any:
    """A layer that keeps its positions and inv_freq in the dtype (no float32 angles)."""
    d_k = x.shape[-1]
    inv_freq = (1.0 / theta ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)).to(dt)
    freqs = torch.tensor(positions, dtype=torch.float64).to(dt)[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return x * emb.cos() + modeling_llama.rotate_half(x) * emb.sin()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_rope_stage_is_transformers_rotary_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    oracle = _transformers_rope if policy == "eager" else _naive_rope
    same = total = checked = 0
    for seed in range(30):
        doc = rope_problem(seed)
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        for stage in trace.stages:
            if stage.op != "rope":
                continue
            x = _t(stage.operands[0], dt)
            theirs = oracle(x, doc["positions"], doc["rope"], dt).double().numpy()
            ulps = _ulps(stage.value, theirs, dt)
            assert ulps.max() <= 1, (seed, stage.id, stage.head, ulps.max())
            same += int((ulps == 0).sum())
            total += ulps.size
            checked += 1
    assert checked >= 60
    assert same >= 0.99 * total, (same, total)


def test_the_rope_twin_is_the_plain_run() -> None:
    for seed in range(5):
        doc = rope_problem(seed)
        plain = qkvcalc.explain(**doc)
        low = qkvcalc.explain(**doc, dtype="bfloat16")
        for mine, twin in zip(low.stages, plain.stages, strict=True):
            if mine.op == "rope":
                np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)


def test_bf16rope_257_is_256_in_bfloat16_and_float32_angles_keep_it_apart() -> None:
    doc = presets.load("bf16rope")
    positions = torch.tensor(doc["positions"], dtype=torch.float64)
    assert positions.to(torch.bfloat16).double().tolist() == [256, 256, 258, 260]
    assert positions.to(torch.float32).double().tolist() == [256, 257, 258, 259]
    x = _t(doc["x"], torch.bfloat16)  # W_Q = W_K = W_V = I: Q = K = V = X, d_k = 2
    scale = 1 / np.sqrt(2)

    def weights(turned: Any) -> np.ndarray:
        s = (turned @ turned.T) * scale
        return torch.softmax(s, dim=-1, dtype=torch.float32).to(torch.bfloat16).double().numpy()

    naive = _naive_rope(x, doc["positions"], doc["rope"]["theta"], torch.bfloat16)
    assert (naive[0] == naive[1]).all()  # 'a' and 'b' turn alike
    assert (naive @ naive.T)[1, :2].double().tolist() == [64, 64]
    eager = _transformers_rope(x, doc["positions"], doc["rope"]["theta"], torch.bfloat16)
    assert (eager @ eager.T)[1, 0].item() == 34.75
    assert f"{64 * np.cos(1):.4g}" == "34.58"  # float64: q·k = 8·8·cos(257 − 256)

    trace = qkvcalc.explain(**doc)
    assert trace.problem.policy == "naive"
    k_rot = trace.stage("k_rot").value
    assert (k_rot[0] == k_rot[1]).all() and (k_rot == naive.double().numpy()).all()
    assert trace.stage("scores").value[1, :2].tolist() == [64, 64]
    row = trace.stage("weights").value[1]
    assert row[:2].tolist() == [0.5, 0.5]
    assert f"{trace.stage('weights').twin_value[1, 0]:.2g}" == "9.2e-10"  # float64
    said = [str(n) for n in trace.stage("k_rot").notes]
    assert any("257 → 256, 259 → 260" in n for n in said), said

    fixed = qkvcalc.explain(**{**doc, "policy": "eager"})
    assert (fixed.stage("k_rot").value == eager.double().numpy()).all()
    assert fixed.stage("scores").value[1, 0] == 34.75
    w = fixed.stage("weights").value[1]
    assert f"{w[0]:.2g}" == "1.1e-09" and w[1] == 1
    assert (w == weights(eager)[1]).all()
