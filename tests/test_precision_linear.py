"""--dtype for the linear-attention layers (Gated DeltaNet, Kimi Delta Attention, lightning
attention), against transformers' own code run by torch in that dtype on the dtype's operands:

    eager  Qwen3-Next's torch_recurrent_gated_delta_rule, causal_conv1d_fn and
           Qwen3NextRMSNormGated; Kimi Linear's recurrent_kimi_delta_attention and
           KimiLinearRMSNormGated; MiniMax's lightning recurrence and MiniMaxRMSNorm, as their
           modeling files write them (the functions imported, the modules built);
    naive  the same steps written by hand with torch tensors in the dtype, every op rounded.

Each stage is recomputed by torch from qkvcalc's own operands of that stage (already the
dtype's numbers), and the whole core once from the layer's q, k, v, g and β; and the float64
twin of every stage is the plain run's.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import qkvcalc
from tests.test_precision_torch import DTYPES, _t, _ulps

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
F = torch.nn.functional
torch.set_num_threads(1)

H, D_K, D_V, D_MODEL, TAPS = 2, 3, 2, 4, 3


def gdn_problem(seed: int, n: int = 5) -> dict[str, Any]:
    """A whole Gated DeltaNet layer: the convolution, g and β made from X, the gated norm."""
    rng = np.random.default_rng(seed)
    doc = {
        "x": rng.standard_normal((n, D_MODEL)),
        "wq": rng.standard_normal((D_MODEL, H * D_K)),
        "wk": rng.standard_normal((D_MODEL, H * D_K)),
        "wv": rng.standard_normal((D_MODEL, H * D_V)),
        "heads": H,
        "mask": "causal",
        "gated_delta": {
            "conv": rng.standard_normal((TAPS, 2 * H * D_K + H * D_V)),
            "wa": rng.standard_normal((D_MODEL, H)),
            "wb": rng.standard_normal((D_MODEL, H)),
            "a_log": rng.uniform(-1, 0.5, H),
            "dt_bias": rng.uniform(-1, 1, H),
            "wz": rng.standard_normal((D_MODEL, H * D_V)),
            "norm": rng.uniform(0.5, 1.5, D_V),
            "chunk": 2,
        },
    }
    return json.loads(json.dumps(doc, default=lambda a: a.tolist()))


def _qwen3_next() -> Any:
    from transformers.models.qwen3_next import modeling_qwen3_next as m

    return m


def _step_torch(prev: Any, k: Any, v: Any, g: Any, beta: Any) -> Any:
    """One token as torch_recurrent_gated_delta_rule's loop writes it (g one number, or one per
    Key channel as Kimi's)."""
    decay = g.exp()
    state = prev * (decay[:, None] if decay.dim() else decay)
    kv_mem = (state * k.unsqueeze(-1)).sum(dim=-2)
    delta = (v - kv_mem) * beta
    return state + k.unsqueeze(-1) * delta.unsqueeze(-2)


def _l2norm_naive(x: Any, scale: float) -> Any:
    out = x / torch.sqrt((x * x).sum(dim=-1, keepdim=True) + 1e-6)
    return out if scale == 1.0 else out * scale


def _gdn_stage(stage: Any, dt: Any, naive: bool) -> Any:
    """The stage by torch from its own operands (None: not one checked here)."""
    m = _qwen3_next()
    work = dt if naive else torch.float32
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "l2norm":
        if naive:
            return _l2norm_naive(ops[0], stage.params["scale"])
        out = m.l2norm(ops[0].float(), dim=-1, eps=1e-6)
        scale = stage.params["scale"]
        return out if scale == 1.0 else out * scale
    if stage.op == "delta_step":
        prev = _t(stage.operands[0], work)
        k, v, gates = (_t(o, work) for o in stage.operands[1:])
        t = stage.params["t"]
        return _step_torch(prev, k[t], v[t], gates[t, 0], gates[t, 1])
    if stage.op == "state_read":
        q, states = _t(stage.operands[0], work), [_t(s, work) for s in stage.operands[1:]]
        out = torch.stack([(s * q[t].unsqueeze(-1)).sum(dim=-2) for t, s in enumerate(states)])
        return out.to(dt)
    if stage.op == "conv_silu":
        x, kernel = ops
        conv = F.conv1d(
            x.T.unsqueeze(0), kernel.T.unsqueeze(1), padding=kernel.shape[0] - 1, groups=x.shape[1]
        )[0, :, : x.shape[0]].T
        if naive:
            return conv * torch.sigmoid(conv)
        return F.silu(conv)
    if stage.op == "gdn_gates":
        a, b = ops[0][:, 0], ops[1][:, 0]  # the stages a and b, n × 1 each
        a_log = _t(np.float64(stage.params["a_log"]), dt)
        dt_bias = _t(np.float64(stage.params["dt_bias"]), dt)
        if naive:
            g = -a_log.exp() * F.softplus(a + dt_bias)
            return torch.stack([g.to(dt), torch.sigmoid(b)], dim=1)
        g = -a_log.float().exp() * F.softplus(a.float() + dt_bias)
        return torch.stack([g, torch.sigmoid(b).float()], dim=1)
    if stage.op == "gdn_rms":
        o, w = ops[0], _t(stage.operands[1][0], dt)
        eps = stage.params["eps"]
        if naive:
            return o / torch.sqrt((o * o).mean(-1, keepdim=True) + eps) * w
        x = o.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        if stage.params.get("strict"):
            return w.float() * x
        return w * x.to(dt)
    if stage.op == "silu_gate":
        act = torch.sigmoid if stage.params.get("act") == "sigmoid" else F.silu
        n, z = ops[0], ops[1]
        if naive:
            return n * act(z)
        return (_t(stage.operands[0], torch.float32) * act(z.float())).to(dt)
    return None


def _check(trace: Any, oracle: Any, dt: Any, naive: bool) -> tuple[set[str], int, int]:
    """Each stage against the oracle: within one unit in the last place of the dtype it is kept
    in, and how many cells are the same bit for bit; a stage kept in float32 to float32's
    precision (torch's sums go in an order of their own)."""
    seen: set[str] = set()
    same = total = 0
    for stage in trace.stages:
        theirs = oracle(stage, dt, naive)
        if theirs is None:
            continue
        seen.add(stage.op)
        kept = dt if naive or theirs.dtype == dt else torch.float32
        theirs_np = theirs.to(kept).double().numpy()
        if kept != dt or dt == torch.float32:  # float32's numbers: torch sums in its own order
            top = max(1.0, float(np.abs(theirs_np).max()))
            np.testing.assert_allclose(stage.value, theirs_np, rtol=1e-5, atol=1e-6 * top)
            continue
        ulps = _ulps(stage.value, theirs_np, kept)
        assert ulps.max() <= 1, (stage.formula, stage.head, stage.value, theirs_np)
        same += int((ulps == 0).sum())
        total += ulps.size
    return seen, same, total


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_gated_deltanet_stage_is_torchs_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(8):
        trace = qkvcalc.explain(**gdn_problem(seed), dtype=dtype, policy=policy)
        seen, s, t = _check(trace, _gdn_stage, dt, policy == "naive")
        same, total = same + s, total + t
        assert seen == {
            "l2norm",
            "delta_step",
            "state_read",
            "conv_silu",
            "gdn_gates",
            "gdn_rms",
            "silu_gate",
        }
    assert same >= 0.99 * total, (same, total)


def _core_inputs(trace: Any, h: int, dt: Any) -> tuple[Any, ...]:
    """The layer's q, k, v (after the convolution), g and β of head h, as the kernel takes them
    ([1, n, 1, d] and [1, n, 1])."""
    q, k, v = (_t(trace.stage(f"{s}_conv", h).value, dt)[None, :, None, :] for s in "qkv")
    gates = trace.stage("gates", h).value
    g = torch.tensor(gates[:, 0], dtype=torch.float32)[None, :, None]
    beta = _t(gates[:, 1], dt)[None, :, None]
    return q, k, v, g, beta


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_core_is_qwen3_nexts_recurrent_kernel_in_that_dtype(dtype: str) -> None:
    """transformers' torch_recurrent_gated_delta_rule itself, on the dtype's q, k, v (g in
    float32, β in the dtype, as the layer hands them over): its output is qkvcalc's, cell for
    cell within one unit in the last place, and the same bit for bit in nearly every cell."""
    m, dt = _qwen3_next(), DTYPES[dtype]
    same = total = 0
    for seed in range(10):
        trace = qkvcalc.explain(**gdn_problem(seed, n=7), dtype=dtype)
        for h in range(1, H + 1):
            out, _ = m.torch_recurrent_gated_delta_rule(
                *_core_inputs(trace, h, dt), use_qk_l2norm_in_kernel=True
            )
            assert out.dtype == dt
            ulps = _ulps(trace.stage("output", h).value, out[0, :, 0].double().numpy(), dt)
            assert ulps.max() <= 1
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.97 * total, (same, total)


def test_the_float64_twin_of_every_linear_stage_is_the_plain_run() -> None:
    for doc in (gdn_problem(3), kda_problem(3), lightning_problem(3)):
        plain = qkvcalc.explain(**doc)
        for policy in ("eager", "naive"):
            low = qkvcalc.explain(**doc, dtype="bfloat16", policy=policy)
            for mine, twin in zip(low.stages, plain.stages, strict=True):
                if mine.twin is not None:
                    np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)


def test_the_state_is_float32_under_eager_and_the_dtype_under_naive() -> None:
    """What the notes say of the state is what the numbers are: under eager every cell of every
    state is a float32 number and not all are bfloat16 ones; under naive every cell is one."""
    import ml_dtypes

    doc = gdn_problem(1)
    eager = qkvcalc.explain(**doc, dtype="bfloat16")
    naive = qkvcalc.explain(**doc, dtype="bfloat16", policy="naive")

    def states(trace: Any) -> np.ndarray:
        return np.concatenate([s.value.ravel() for s in trace.stages if s.op == "delta_step"])

    wide, small = states(eager), states(naive)
    assert (wide.astype(np.float32).astype(np.float64) == wide).all()
    assert (wide.astype(ml_dtypes.bfloat16).astype(np.float64) != wide).any()
    assert (small.astype(ml_dtypes.bfloat16).astype(np.float64) == small).all()
    said = " ".join(n.text() for s in eager.stages if s.op == "delta_step" for n in s.notes)
    assert "keeps the state in float32" in said
    said = " ".join(n.text() for s in naive.stages if s.op == "delta_step" for n in s.notes)
    assert "kept in bfloat16" in said


RANK = 2


def kda_problem(seed: int, n: int = 5) -> dict[str, Any]:
    """A whole Kimi Delta Attention layer: the convolution, g per Key channel and β made from X
    through the low-rank projections, the gated norm (σ of Z)."""
    rng = np.random.default_rng(seed)
    doc = {
        "x": rng.standard_normal((n, D_MODEL)),
        "wq": rng.standard_normal((D_MODEL, H * D_K)),
        "wk": rng.standard_normal((D_MODEL, H * D_K)),
        "wv": rng.standard_normal((D_MODEL, H * D_V)),
        "heads": H,
        "mask": "causal",
        "kimi_delta": {
            "conv": rng.standard_normal((TAPS, 2 * H * D_K + H * D_V)),
            "wf_a": rng.standard_normal((D_MODEL, RANK)),
            "wf_b": rng.standard_normal((RANK, H * D_K)),
            "a_log": rng.uniform(-1, 0.5, H),
            "dt_bias": rng.uniform(-1, 1, H * D_K),
            "wb": rng.standard_normal((D_MODEL, H)),
            "wg_a": rng.standard_normal((D_MODEL, RANK)),
            "wg_b": rng.standard_normal((RANK, H * D_V)),
            "norm": rng.uniform(0.5, 1.5, D_V),
            "chunk": 2,
        },
    }
    return json.loads(json.dumps(doc, default=lambda a: a.tolist()))


def _kda_stage(stage: Any, dt: Any, naive: bool) -> Any:
    """A Kimi Delta Attention stage by torch from its own operands (None: not checked here)."""
    work = dt if naive else torch.float32
    if stage.op == "kda_step":
        prev = _t(stage.operands[0], work)
        k, v, gates = (_t(o, work) for o in stage.operands[1:])
        t = stage.params["t"]
        return _step_torch(prev, k[t], v[t], gates[t, :-1], gates[t, -1])
    if stage.op == "kda_read":
        return _gdn_stage(replace_op(stage, "state_read"), dt, naive)
    if stage.op == "kda_gates":
        f, b, dt_bias = (_t(o, dt) for o in stage.operands)
        a_log = _t(np.float64(stage.params["a_log"]), dt)
        if naive:
            g = -a_log.exp() * F.softplus(f + dt_bias[0])
            return torch.cat([g, torch.sigmoid(b)], dim=1)
        g = f.float() + dt_bias[0].float()
        g = -a_log.float().exp() * torch.where(g > 20.0, g, torch.log(1.0 + torch.exp(g)))
        return torch.cat([g, torch.sigmoid(b).float()], dim=1)
    return _gdn_stage(stage, dt, naive)


class replace_op:
    def __init__(self, stage: Any, op: str) -> None:
        self._stage, self.op = stage, op

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stage, name)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_kimi_delta_stage_is_torchs_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(8):
        trace = qkvcalc.explain(**kda_problem(seed), dtype=dtype, policy=policy)
        seen, s, t = _check(trace, _kda_stage, dt, policy == "naive")
        same, total = same + s, total + t
        assert seen == {
            "l2norm",
            "kda_step",
            "kda_read",
            "conv_silu",
            "kda_gates",
            "gdn_rms",
            "silu_gate",
        }
    assert same >= 0.99 * total, (same, total)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_the_core_is_kimi_linears_recurrent_kernel_in_that_dtype(dtype: str) -> None:
    """transformers' recurrent_kimi_delta_attention itself on the dtype's q, k, v (g in float32,
    β in the dtype): its output is qkvcalc's within one unit in the last place."""
    from transformers.models.kimi_linear import modeling_kimi_linear as m

    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(10):
        trace = qkvcalc.explain(**kda_problem(seed, n=7), dtype=dtype)
        for h in range(1, H + 1):
            q, k, v = (_t(trace.stage(f"{s}_conv", h).value, dt)[None, :, None, :] for s in "qkv")
            gates = trace.stage("gates", h).value
            g = torch.tensor(gates[:, :-1], dtype=torch.float32)[None, :, None, :]
            beta = _t(gates[:, -1], dt)[None, :, None]
            out, _ = m.recurrent_kimi_delta_attention(
                q, k, v, g, beta, None, False, use_qk_l2norm_in_kernel=True
            )
            assert out.dtype == dt
            ulps = _ulps(trace.stage("output", h).value, out[0, :, 0].double().numpy(), dt)
            assert ulps.max() <= 1
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.97 * total, (same, total)


def lightning_problem(seed: int, n: int = 7) -> dict[str, Any]:
    """A whole lightning-attention layer (MiniMax): SiLU, blocks of 3, the norm, the gate, W_O."""
    rng = np.random.default_rng(seed)
    d = 3
    doc = {
        "x": rng.standard_normal((n, D_MODEL)),
        "wq": rng.standard_normal((D_MODEL, H * d)),
        "wk": rng.standard_normal((D_MODEL, H * d)),
        "wv": rng.standard_normal((D_MODEL, H * d)),
        "wo": rng.standard_normal((H * d, D_MODEL)),
        "heads": H,
        "mask": "causal",
        "lightning": {
            "slope": rng.uniform(0.05, 0.6, H),
            "block": 3,
            "act": "silu",
            "norm": 1 + 0.3 * rng.standard_normal(H * d),
            "gate": rng.standard_normal((D_MODEL, H * d)),
        },
    }
    return json.loads(json.dumps(doc, default=lambda a: a.tolist()))


def _minimax_decays(slope: float, block: int, dt: Any) -> tuple[Any, Any, Any]:
    """MiniMaxLightningAttention's own decay_factors from the slope in float32, its buffers
    then cast to the dtype (as the model's .to(dtype) casts them)."""
    from transformers import MiniMaxConfig
    from transformers.models.minimax.modeling_minimax import MiniMaxLightningAttention

    config = MiniMaxConfig(
        hidden_size=D_MODEL,
        num_attention_heads=H,
        head_dim=3,
        num_hidden_layers=2,
        block_size=block,
        layer_types=["linear_attention", "full_attention"],
    )
    module = MiniMaxLightningAttention(config, 0)
    rate = torch.tensor([[[slope]]], dtype=torch.float32)
    return tuple(d.to(dt) for d in module.decay_factors(rate))


def _minimax_blocked(q: Any, k: Any, v: Any, slope: float, block: int, dt: Any) -> Any:
    """MiniMax's forward loop over blocks, as modeling_minimax writes it, in the dtype."""
    query_decay, key_decay, diagonal_decay = _minimax_decays(slope, block, dt)
    rate = torch.tensor([[[slope]]], dtype=torch.float32).to(dt)
    state = torch.zeros(q.shape[1], v.shape[1], dtype=dt)
    out = []
    for start in range(0, q.shape[0], block):
        qb, kb, vb = q[start : start + block], k[start : start + block], v[start : start + block]
        b = qb.shape[0]
        intra = torch.matmul(qb @ kb.T * diagonal_decay[0, 0, :b, :b], vb)
        inter = torch.matmul(qb * query_decay[0, :b], state)
        out.append(inter + intra)
        moved = torch.matmul((kb * key_decay[0, -b:]).T, vb)
        state = state * torch.exp(-rate * b)[0, 0] + moved
    return torch.cat(out)


def _lightning_stage(stage: Any, dt: Any, naive: bool) -> Any:
    """A lightning-attention stage by torch from its own operands (None: not checked here)."""
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "silu":
        return ops[0] / (1 + torch.exp(-ops[0])) if naive else F.silu(ops[0])
    if stage.op == "lightning_step":
        prev, k, v = ops
        t = stage.params["t"]
        ratio = torch.exp(-_t(np.float64(stage.params["slope"]), dt))
        return ratio * prev + torch.matmul(k[t : t + 1].T, v[t : t + 1])
    if stage.op == "lightning_read":
        q, states = ops[0], ops[1:]
        return torch.cat([torch.matmul(q[t : t + 1], s) for t, s in enumerate(states)])
    if stage.op == "lightning_blocked":
        return _minimax_blocked(*ops, stage.params["slope"], stage.params["block"], dt)
    if stage.op == "joint_rms":
        joined = torch.cat(ops, dim=1)
        if naive:
            return torch.sqrt((joined * joined).mean(-1, keepdim=True) + stage.params["eps"])
        wide = joined.float()
        return torch.sqrt(wide.pow(2).mean(-1, keepdim=True) + stage.params["eps"])
    if stage.op == "rms_apply":
        w = _t(stage.params["weight"], dt)
        if naive:
            return ops[0] / ops[1] * w
        rms = _t(stage.operands[1], torch.float32)
        return w * (ops[0].float() * (1 / rms)).to(dt)
    return None


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_lightning_stage_is_torchs_in_that_dtype(dtype: str, policy: str) -> None:
    """MiniMax keeps its state in the dtype under eager too: every stage but the norm's root
    is the dtype's, against torch doing MiniMax's ops in that dtype."""
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(8):
        trace = qkvcalc.explain(**lightning_problem(seed), dtype=dtype, policy=policy)
        seen, s, t = _check(trace, _lightning_stage, dt, policy == "naive")
        same, total = same + s, total + t
        assert seen == {
            "silu",
            "lightning_step",
            "lightning_read",
            "lightning_blocked",
            "joint_rms",
            "rms_apply",
        }
    assert same >= 0.99 * total, (same, total)


def test_the_lightning_state_is_the_dtypes_under_eager_and_says_so() -> None:
    import ml_dtypes

    trace = qkvcalc.explain(**lightning_problem(2), dtype="bfloat16")
    states = [s for s in trace.stages if s.op == "lightning_step"]
    cells = np.concatenate([s.value.ravel() for s in states])
    assert (cells.astype(ml_dtypes.bfloat16).astype(np.float64) == cells).all()
    assert all("kept in bfloat16" in " ".join(n.text() for n in s.notes) for s in states)


def ling_problem(seed: int, bounded: bool = True) -> dict[str, Any]:
    """Ling 3.0's Kimi Delta Attention layer: kda_problem's with the decay's and the output
    gate's projections in one (wf, wz) and, `bounded`, the bounded decay (lower_bound)."""
    doc = kda_problem(seed)
    own = doc["kimi_delta"]
    own["wf"] = (np.asarray(own.pop("wf_a")) @ np.asarray(own.pop("wf_b"))).tolist()
    own["wz"] = (np.asarray(own.pop("wg_a")) @ np.asarray(own.pop("wg_b"))).tolist()
    if bounded:
        own["lower_bound"] = -3.0
    return doc


def _ling_stage(stage: Any, dt: Any, naive: bool) -> Any:
    """A stage of Ling 3.0's layer by transformers' own code from its operands: its
    causal_conv1d_fn with the taps in float32 and its BailingHybridForgetGate with A_log and
    dt_bias in float32 (f_proj the identity, so that it reads F); naive, every tensor in the
    dtype (the taps and the parameters too) and its lines written out."""
    from transformers import BailingHybridConfig
    from transformers.models.bailing_hybrid import modeling_bailing_hybrid as m

    kept = dt if naive else torch.float32
    if stage.op == "conv_silu" and not naive:  # naive: SiLU by hand, as for Kimi Linear's
        x, kernel = _t(stage.operands[0], dt), _t(stage.operands[1], kept)
        return m.causal_conv1d_fn(x.T.unsqueeze(0), kernel.T, None, "silu")[0].T
    if stage.op == "kda_gates":
        f, b, dt_bias = stage.operands
        bound = stage.params.get("lower_bound")
        config = BailingHybridConfig(
            hidden_size=f.shape[1], linear_num_heads=1, head_dim=f.shape[1],
            kda_safe_gate=bound is not None, kda_lower_bound=bound or -5.0,
        )  # fmt: skip
        gate = m.BailingHybridForgetGate(config).to(dt)
        with torch.no_grad():
            gate.f_proj.weight.copy_(torch.eye(f.shape[1]))
            gate.A_log.data = _t(np.array([stage.params["a_log"]]), kept)
            gate.dt_bias.data = _t(dt_bias[0], kept)
            g = gate(_t(f, dt)[None])[0, :, 0]
            if naive:  # the lines in the dtype: g = b·σ(e^(A_log)·(F + dt_bias)), or −e^(A_log)·…
                rate, shifted = gate.A_log.exp(), _t(f, dt) + gate.dt_bias
                g = bound * torch.sigmoid(rate * shifted) if bound else -rate * F.softplus(shifted)
        assert g.dtype == dt
        return torch.cat([g, torch.sigmoid(_t(b, dt))], dim=1)
    return _kda_stage(stage, dt, naive)


@pytest.mark.parametrize("bounded", [True, False])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_ling_stage_is_transformers_in_that_dtype(dtype: str, policy: str, bounded) -> None:
    """Ling 3.0's layer (wf) rounds as its own model: conv1d, A_log and dt_bias in float32, the
    convolution and SiLU in float32 then the dtype, g made in float32 and cast to the dtype —
    each stage transformers' own functions on its operands, within one unit in the last place
    (the convolution and the gates bit for bit in almost every cell)."""
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(6):
        trace = qkvcalc.explain(**ling_problem(seed, bounded), dtype=dtype, policy=policy)
        taps = trace.stage("q_conv", 1).operands[1]
        floats = taps.astype(np.float32).astype(np.float64)
        assert np.array_equal(taps, floats if policy == "eager" else _t(taps, dt).double().numpy())
        seen, s, t = _check(trace, _ling_stage, dt, policy == "naive")
        same, total = same + s, total + t
        assert {"conv_silu", "kda_gates", "kda_step", "kda_read"} <= seen
    assert same >= 0.99 * total, (same, total)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_bounded_decay_under_a_dtype_without_lings_projection_is_one_message(lang: str) -> None:
    """--dtype rounds a bounded decay as Ling 3.0's model does, the layer with the decay's
    projection in one (wf); with the low-rank wf_a and wf_b no model qkvcalc reads makes a
    bounded decay, so there is no rounding to follow: one message says so."""
    from qkvcalc.errors import QkvcalcError

    doc = kda_problem(0)
    doc["kimi_delta"]["lower_bound"] = -3.0
    qkvcalc.explain(**doc)  # the plain run is fine
    qkvcalc.explain(**ling_problem(0), dtype="bfloat16")  # and Ling's own form in the dtype
    with pytest.raises(QkvcalcError) as caught:
        qkvcalc.explain(**doc, dtype="bfloat16")
    said = caught.value.message(lang)
    assert caught.value.msg.key == "precision.kda_bounded", said
    assert "lower_bound" in said and "wf" in said and "wf_a" in said and "Ling 3.0" in said
