"""--dtype with the features other than RoPE: softcap, ALiBi (and a score bias given as numbers),
the output gate, the q/k RMSNorm and gpt-oss's sinks, each stage recomputed by torch in that
dtype from qkvcalc's own operands of that stage, as transformers' eager code computes it
(`eager`) or with every op on tensors in the dtype (`naive`); under `sdpa` a score bias is the
float attn_mask of torch's scaled_dot_product_attention. The features --dtype does not compute
are one message naming them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from qkvcalc.errors import QkvcalcError
from tests.test_precision_torch import DTYPES, _t, _ulps, problem

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
F = torch.nn.functional
torch.set_num_threads(1)


def featured(seed: int) -> dict[str, Any]:
    """problem(seed) with a softcap small enough to bite, ALiBi or a score bias, an output gate
    and q/k RMSNorm weights (the features drawn by the seed)."""
    doc = problem(seed)
    rng = np.random.default_rng(seed + 500)
    heads, kv, n = doc["heads"], doc["kv_heads"], len(doc["x"])
    d_k = len(doc["wq"][0]) // heads
    d_v = len(doc["wv"][0]) // kv
    d_model = len(doc["x"][0])
    doc["softcap"] = float(rng.uniform(0.5, 4))
    if seed % 2:
        doc["alibi"] = True
    else:
        doc["score_bias"] = (rng.standard_normal((heads, n, n)) * 2).tolist()
    doc["wg"] = rng.standard_normal((d_model, heads * d_v)).tolist()
    doc["bg"] = rng.standard_normal(heads * d_v).tolist()
    if seed % 3 == 0:  # a sinusoidal table added to X (a table, then X + PE)
        doc["positional"] = "sinusoidal"
    doc["q_norm"] = (rng.uniform(0.5, 1.5, (heads, d_k))).tolist()
    if seed % 2 == 0:  # Llama 4's attention temperature (its rule, by position)
        doc["attn_temperature"] = {"floor_scale": 2, "attn_scale": float(rng.uniform(0.1, 1))}
    if seed % 4 == 1:  # gpt-oss's sinks
        doc["sinks"] = rng.uniform(-1, 2, heads).tolist()
    doc["k_norm"] = (rng.uniform(0.5, 1.5, d_k)).tolist()
    if seed % 3 == 1 and d_k > 1:  # LayerNorm with a bias instead (StableLM's, Phi's q/k norm;
        # of one number it is its bias, which torch's x·r − r·μ misses by float32's rounding)
        bias = {"q": rng.standard_normal((heads, d_k)).tolist(), "k": rng.standard_normal(d_k)}
        doc["qk_norm"] = {"kind": "layer", "bias": {**bias, "k": bias["k"].tolist()}}
    return doc


def _rms(x: Any, w: Any, eps: float, naive: bool, dt: Any) -> Any:
    if naive:  # written by hand, every op on tensors in the dtype
        return w * (x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps))
    wide = x.float()  # transformers' LlamaRMSNorm / Qwen3RMSNorm
    wide = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps)
    return w * wide.to(dt)


def _layer(x: Any, w: Any, b: Any, eps: float, naive: bool) -> Any:
    if not naive:  # F.layer_norm on the dtype's tensors (float32 inside, rounded once)
        return F.layer_norm(x, (x.shape[-1],), w, b, eps)
    mu = x.mean(-1, keepdim=True)  # written by hand, every op on tensors in the dtype
    d = x - mu
    return d / torch.sqrt((d * d).mean(-1, keepdim=True) + eps) * w + b


def _torch_feature_stage(stage: Any, dt: Any, naive: bool, trace: Any) -> Any:
    """The stage by torch from its own operands in the dtype (None: not a feature's op)."""
    ops = [_t(o, dt) for o in stage.operands]
    if stage.op == "softcap":
        c = stage.params["cap"]
        return torch.tanh(ops[0] / c) * c
    if stage.op == "alibi":
        positions = np.asarray(stage.params["positions"], dtype=np.float32)
        keys = np.asarray(stage.params["key_positions"], dtype=np.float32)
        distance = torch.tensor(np.abs(positions[:, None] - keys[None, :]))
        return (torch.tensor(-stage.params["slope"], dtype=torch.float32) * distance).to(dt)
    if stage.op == "table":
        return _t(stage.params["table"], dt)
    if stage.op == "add":
        return ops[0] + ops[1]
    if stage.op == "sigmoid":
        return torch.sigmoid(ops[0])
    if stage.op == "gate_mul":
        return ops[0] * ops[1]
    if stage.op == "rmsnorm":
        return _rms(ops[0], _t(stage.params["weight"], dt), stage.params["eps"], naive, dt)
    if stage.op == "layernorm":
        w, b = (_t(stage.params[k], dt) for k in ("weight", "bias"))
        return _layer(ops[0], w, b, stage.params["eps"], naive)
    if stage.op == "row_scale":  # Llama 4: (q * attn_scales).to(dtype), the scales float32
        factors = torch.tensor(np.asarray(stage.params["factors"]), dtype=torch.float32)
        if naive:
            return ops[0] * factors.to(dt)[:, None]
        return (ops[0] * factors[:, None]).to(dt)
    if stage.op in ("sink_exp", "sink_softmax"):
        exp = next(s for s in trace.stages if s.op == "sink_exp" and s.head == stage.head)
        return _sinks(stage.op, exp.operands[0], exp.params["sink"], dt, naive)
    return None


def _sinks(op: str, logits: np.ndarray, sink: float, dt: Any, naive: bool) -> Any:
    """gpt-oss's eager attention (transformers' GptOss eager_attention_forward) from the logits,
    or the same written with every op in the dtype (naive). The exponentials: torch's float32
    e^ of the shifted row (inside its softmax); naive, e^ in the dtype."""
    joined = torch.cat([_t(logits, dt), torch.full((len(logits), 1), sink).to(dt)], -1)
    shifted = joined - joined.max(dim=-1, keepdim=True).values
    if op == "sink_exp":
        return torch.exp(shifted) if naive else torch.exp(shifted.float())
    if naive:
        e = torch.exp(shifted)
        return (e / e.sum(dim=-1, keepdim=True))[:, :-1]
    return torch.softmax(shifted, dim=-1, dtype=dt)[:, :-1]


FEATURE_OPS = {"softcap", "alibi", "table", "add", "sigmoid", "gate_mul", "rmsnorm", "sink_exp"}
FEATURE_OPS |= {"sink_softmax", "row_scale", "layernorm"}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_each_feature_stage_is_torchs_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    same = total = 0
    seen = set()
    reached = 0
    for seed in range(30):
        trace = qkvcalc.explain(**featured(seed), dtype=dtype, policy=policy)
        for stage in trace.stages:
            theirs = _torch_feature_stage(stage, dt, policy == "naive", trace)
            if theirs is None:
                continue
            seen.add(stage.op)
            theirs_np = theirs.double().numpy()
            float32 = stage.op == "sink_exp" and policy == "eager"  # inside torch's softmax
            ulps = _ulps(stage.value, theirs_np, torch.float32 if float32 else dt)
            assert ulps.max() <= 1, (seed, stage.formula, stage.head, stage.value, theirs_np)
            same += int((ulps == 0).sum())
            total += ulps.size
            if stage.op == "softcap":
                reached += any(m.key == "precision.softcap_reached" for m in stage.notes)
    assert seen == FEATURE_OPS
    assert reached  # a cap reached in the dtype was drawn (and said)
    assert same >= 0.99 * total, (same, total)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_score_bias_under_sdpa_is_torchs_float_attn_mask(dtype: str) -> None:
    """Each head's output under sdpa: torch's SDPA with B (in the dtype) plus −∞ where masked
    as its float attn_mask, within 2 ulp and 95% bit for bit."""
    dt = DTYPES[dtype]
    same = total = 0
    for seed in range(30):
        doc = featured(seed)
        for key in ("softcap", "sinks", "wg", "bg"):  # SDPA has neither softcap nor sinks;
            doc.pop(key, None)  # the gate comes after it
        trace = qkvcalc.explain(**doc, dtype=dtype, policy="sdpa")
        for h in [s.head for s in trace.stages if s.id == "scores"]:
            q, kt = trace.stage("scores", h).operands
            bias = _t(trace.stage("score_bias", h).value, dt)
            allowed = torch.tensor(trace.stage("masked", h).params["allowed"])
            mask = bias.masked_fill(~allowed, float("-inf"))
            out = trace.stage("output", h)
            theirs = F.scaled_dot_product_attention(
                _t(q, dt)[None, None],
                _t(kt.T, dt)[None, None],
                _t(out.operands[1], dt)[None, None],
                attn_mask=mask[None, None],
                scale=trace.problem.scale,
            )[0, 0].double()
            live = allowed.any(dim=1).numpy()  # a fully masked row: NaN in torch's, 0 here
            ulps = _ulps(out.value[live], theirs.numpy()[live], dt)
            assert ulps.max() <= 2, (seed, h, ulps.max())
            same += int((ulps == 0).sum())
            total += ulps.size
    assert same >= 0.95 * total, (same, total)


def test_the_float64_twin_of_every_feature_stage_is_the_plain_run() -> None:
    for seed in range(6):
        doc = featured(seed)
        plain = qkvcalc.explain(**doc)
        low = qkvcalc.explain(**doc, dtype="bfloat16")
        for mine, twin in zip(low.stages, plain.stages, strict=True):
            if mine.twin is not None:
                np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)


MLA = {  # multi-head latent attention (docs/input-format.md's example)
    "x": [[1, 0, 2, 1], [0, 1, 1, 0], [2, 1, 0, 1]],
    "heads": 2,
    "mla": {
        "wq_a": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
        "q_a_norm": [1, 2, 0.5],
        "wq_b": [[1, 0, 0, 1, 0, 1, 1, 0], [0, 1, 1, 0, 1, 0, 0, 1], [1, 1, 0, 0, 0, 0, 1, 1]],
        "wkv_a": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "kv_a_norm": [1, 1],
        "wkv_b": [[1, 0, 1, 0, 1, 1, 0, 1], [0, 1, 0, 1, 1, 0, 1, 0]],
        "rope_dims": 2,
    },
    "rope": {"theta": 100, "dims": 2},
    "mask": "causal",
}


def test_a_feature_op_without_a_rule_is_one_message_naming_the_feature(monkeypatch) -> None:
    """Every feature --dtype takes has its rules (Gated DeltaNet is refused by its own
    message); a feature op added without one is refused, naming the feature, not computed in
    float64 and shown as the dtype's: MLA's join with its rule taken away."""
    from qkvcalc.ops.table import OPS

    assert qkvcalc.explain(**MLA, dtype="bfloat16").precision is not None  # it has its rules
    monkeypatch.setitem(OPS, "mla_join", OPS["mla_join"]._replace(lowp=None))
    with pytest.raises(QkvcalcError) as raised:
        qkvcalc.explain(**MLA, dtype="bfloat16")
    assert raised.value.msg.key == "precision.feature_unsupported"
    assert raised.value.msg.params["feature"] == "mla"


@pytest.mark.parametrize("feature", ["softcap", "sinks"])
def test_softcap_or_sinks_under_sdpa_is_one_message(feature: str) -> None:
    doc = featured(1)  # softcap and sinks
    doc.pop("sinks" if feature == "softcap" else "softcap")
    with pytest.raises(QkvcalcError) as raised:
        qkvcalc.explain(**doc, dtype="bfloat16", policy="sdpa")
    assert raised.value.msg.key == "precision.sdpa_feature"
    assert raised.value.msg.params["feature"] == feature
