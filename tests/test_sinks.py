"""Attention sinks (gpt-oss), the plug-in feature qkvcalc/features/sinks.py: checked against
transformers' own GptOssAttention (eager, float64, a tiny random model), against a naive loop
written here, and across the schedules: a decode run and a tiled run equal the whole run; the
torch script runs; a JSON trace runs again the same; a wrong count is one message."""

from __future__ import annotations

import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import render
from tests.inprocess import run_script

X = [[1, 2], [3, 1], [0, 2], [1, -1]]
W_Q = [[1, 0], [0, 1]]
W_K = [[1, 1], [0, 1]]
W_V = [[1, 0], [1, 1]]


def naive(x, wq, wk, wv, sinks, heads=1, causal=True):
    """Loops, as on paper: per head and query, m = max over the allowed scores and the sink,
    weights e^(s − m) / (Σ e^(s − m) + e^(σ − m)); the outputs of the heads side by side."""
    x, wq, wk, wv = (np.asarray(a, float) for a in (x, wq, wk, wv))
    n, d_k = x.shape[0], wq.shape[1] // heads
    out = np.zeros((n, heads * d_k))
    all_weights = []
    for h in range(heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        q, k, v = x @ wq[:, cols], x @ wk[:, cols], x @ wv[:, cols]
        weights = np.zeros((n, n))
        for i in range(n):
            keys = range(i + 1) if causal else range(n)
            scores = {j: float(q[i] @ k[j]) / np.sqrt(d_k) for j in keys}
            m = max([*scores.values(), sinks[h]])
            total = sum(np.exp(s - m) for s in scores.values()) + np.exp(sinks[h] - m)
            for j, s in scores.items():
                weights[i, j] = np.exp(s - m) / total
        out[:, cols] = weights @ v
        all_weights.append(weights)
    return out, all_weights


def _explain(**extra):
    doc = {"x": X, "wq": W_Q, "wk": W_K, "wv": W_V, "mask": "causal", "sinks": [1.5]}
    return qkvcalc.explain(**(doc | extra))


def test_the_sink_takes_its_share_and_the_rows_sum_to_less_than_one():
    trace = _explain()
    expected, (weights,) = naive(X, W_Q, W_K, W_V, [1.5])
    assert np.allclose(trace.output, expected, atol=1e-14)
    assert np.allclose(trace.weights, weights, atol=1e-14)
    exp = trace.stage("exp")
    assert exp.value.shape == (4, 5) and exp.cols[-1] == "σ"  # the sink's column, shown
    shares = exp.value[:, -1] / exp.value.sum(axis=1)
    assert np.allclose(trace.weights.sum(axis=1), 1 - shares)
    assert (trace.weights.sum(axis=1) < 1).all()


def test_two_heads_each_with_its_own_sink():
    wq = [[1, 0, 0.5, 1], [0, 1, 1, -1]]
    wk = [[1, 1, 0, 1], [0, 1, 1, 0]]
    wv = [[1, 0, 2, 1], [1, 1, 0, 1]]
    trace = qkvcalc.explain(x=X, wq=wq, wk=wk, wv=wv, heads=2, mask="causal", sinks=[-1, 3])
    expected, weights = naive(X, wq, wk, wv, [-1, 3], heads=2)
    assert np.allclose(trace.output, expected, atol=1e-14)
    for h in (1, 2):
        assert np.allclose(trace.weights[h - 1], weights[h - 1], atol=1e-14)


def test_a_query_whose_every_key_is_masked_gives_everything_to_the_sink():
    trace = _explain(mask=[[0, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    assert np.array_equal(trace.weights[0], np.zeros(4)) and np.array_equal(trace.output[0], [0, 0])
    assert not trace.warnings  # no 0/0: the sum holds the sink's e^(σ − m)


@pytest.mark.parametrize("schedule", [{"decode": 1}, {"decode": 0}, {"tiles": 2}, {"tiles": 3}])
def test_decode_and_tiles_with_a_sink_equal_the_whole_run(schedule):
    whole = _explain()
    scheduled = _explain(**schedule)
    assert np.allclose(scheduled.output, whole.output, atol=1e-14)


def test_tiles_start_from_the_sink():
    trace = _explain(tiles=2)
    start = [s for s in trace.stages if s.block == 0]
    assert [s.id for s in start] == ["running_max", "running_sum", "acc"]
    assert np.all(start[0].value == 1.5) and np.all(start[1].value == 1.0)
    assert np.all(start[2].value == 0)


def test_the_reading_line_names_the_sinks_share():
    text = render(_explain(), "txt")
    assert "σ" in text.split("Read out")[1].split("Percentages")[0]


def test_a_json_trace_of_sinks_runs_again_the_same(tmp_path):
    trace = _explain()
    doc = json.loads(render(trace, "json"))
    assert doc["input"]["sinks"] == [1.5]
    again = qkvcalc.explain(**{k: v for k, v in doc["input"].items() if k != "name"})
    assert np.allclose(again.output, trace.output)


def test_a_wrong_number_of_sinks_is_one_message(cli):
    doc = {"x": X, "wq": W_Q, "wk": W_K, "wv": W_V, "sinks": [1, 2]}
    result = cli("explain", input=json.dumps(doc))
    assert result.exit_code == 2 and result.stdout == ""
    assert "one logit per head" in result.stderr and "heads = 1" in result.stderr


def test_both_languages_say_it():
    ko = render(_explain(), "txt", lang="ko")
    assert "싱크" in ko and "sink" not in ko.replace("sinks", "")


def test_the_torch_script_writes_the_sink_out_and_agrees(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "check.py"
    script.write_text(render(_explain(heads=1), "torch"), encoding="utf-8")
    # in this process (torch is imported here already): tests/test_torch_script.py runs such
    # scripts as processes of their own
    run = run_script(str(script))
    assert run["returncode"] == 0, run["stdout"] + run["stderr"]
    assert "OK: PyTorch agrees with qkvcalc" in run["stdout"]
    assert "torch.cat([scores, sinks]" in script.read_text()


def test_gpt_oss_attention_of_transformers_agrees():
    """A tiny GptOssAttention with random float64 weights and sinks, run eagerly by transformers,
    and the same layer as a qkvcalc problem: every head's weights and the o_proj output."""
    torch = pytest.importorskip("torch")
    modeling = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")
    from transformers import GptOssConfig

    config = GptOssConfig(
        hidden_size=8,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=4,
        num_hidden_layers=1,
        intermediate_size=8,
        num_local_experts=2,
        attention_bias=True,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    attention = modeling.GptOssAttention(config, 0).double().eval()
    with torch.no_grad():
        attention.sinks.normal_(0, 1)
    n = 5
    x = torch.randn(1, n, 8, dtype=torch.float64)
    inv_freq = 1.0 / 10000.0 ** (np.arange(0, 4, 2) / 4)
    angles = np.arange(n)[:, None] * inv_freq[None, :]
    cos, sin = (torch.tensor(f(angles))[None] for f in (np.cos, np.sin))
    mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        out, weights = attention(x, (cos, sin), mask)

    def weight(name):
        return getattr(attention, name).weight.detach().numpy()

    def bias(name):
        return getattr(attention, name).bias.detach().numpy()

    trace = qkvcalc.explain(
        x=x[0].numpy(),
        wq=weight("q_proj"),
        wk=weight("k_proj"),
        wv=weight("v_proj"),
        wo=weight("o_proj"),
        bq=bias("q_proj"),
        bk=bias("k_proj"),
        bv=bias("v_proj"),
        bo=bias("o_proj"),
        layout="torch",
        heads=4,
        kv_heads=2,
        mask="causal",
        rope={"inv_freq": inv_freq.tolist(), "style": "half"},
        sinks=attention.sinks.detach().numpy(),
    )
    assert np.allclose(trace.output, out[0].numpy(), rtol=1e-12, atol=1e-12)
    for h in range(1, 5):
        assert np.allclose(trace.weights[h - 1], weights[0, h - 1].numpy(), rtol=1e-12, atol=1e-12)
