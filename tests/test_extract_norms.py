"""qkvcalc extract on the q/k norm kinds (issue 22, item 3.3), against transformers itself as
tests/test_extract_more.py does (a tiny float64 model from a config, random weights, eager
attention, save_pretrained, extract in float64, then explain): OLMo 2 (RMSNorm of the whole
projection), Cohere with use_qk_norm (LayerNorm, a weight row per head), StableLM with
qk_layernorm (a LayerNorm per head), Phi with qk_layernorm (one LayerNorm with a bias) and
HunYuan dense (RMSNorm after RoPE) and Llama 4's text layers (a weightless RMSNorm after RoPE
and chunked attention on RoPE layers, the attention temperature on NoPE layers). Every head's
attention probabilities and the output projection's own output equal transformers' float64
forward to 1e-8 relative, x to 1e-12; the norm is not vacuous (without it the weights differ)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at
from tests.test_extract_more import LLAMA, TOL, at, case, ids, relative

CASES = {
    "olmo2": case("Olmo2Config", LLAMA, "Olmo2ForCausalLM", [1]),
    "cohere-qk": case("CohereConfig", {**LLAMA, "use_qk_norm": True}, "CohereForCausalLM", [1]),
    "stablelm-qk": case(
        "StableLmConfig",
        {
            **LLAMA,
            "qk_layernorm": True,
            "use_qkv_bias": True,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.25},
        },
        "StableLmForCausalLM",
        [1],
    ),
    "phi-qk": case(
        "PhiConfig",
        {
            **LLAMA,
            "qk_layernorm": True,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.5},
        },
        "PhiForCausalLM",
        [1],
        proj="model.layers.{}.self_attn.dense",
    ),
    "hunyuan": case(
        "HunYuanDenseV1Config", {**LLAMA, "head_dim": 8}, "HunYuanDenseV1ForCausalLM", [1]
    ),
    "llama4": case(
        "Llama4TextConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "intermediate_size_mlp": 48,
            "num_local_experts": 2,
            "num_experts_per_tok": 1,
            "interleave_moe_layer_step": 1,
            "no_rope_layers": [1, 0],  # layer 0 rotates, layer 1 is NoPE
            "attention_chunk_size": 5,
            "floor_scale": 3,  # τ > 1 from position 2 on, within N = 12 tokens
            "attn_scale": 0.5,
            "use_qk_norm": True,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        },
        "Llama4ForCausalLM",
        [0, 1],
        experts_implementation="eager",
    ),
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import qkvcalc

    root = tmp_path_factory.mktemp("norm-models")
    out = {}
    for name, spec in CASES.items():
        model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
        model.save_pretrained(root / name)
        for layer in spec["layers"]:
            ref = reference_at(
                model, ids(), layer, at(model, spec["attn"], layer), at(model, spec["proj"], layer)
            )
            path = str(root / name)
            problem = qkvcalc.extract(path, layer=layer, input_ids=ids(), dtype="float64")
            out[(name, layer)] = {"problem": problem, "reference": ref}
    return out


WHERE = [(name, layer) for name, spec in CASES.items() for layer in spec["layers"]]


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(lab, name, layer):
    import qkvcalc

    problem, ref = lab[(name, layer)]["problem"], lab[(name, layer)]["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = attention(problem)  # the naive oracle
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    keys = ("q_norm", "k_norm", "qk_norm", "attn_temperature")
    bare = {k: v for k, v in problem.items() if k not in keys}
    assert relative(qkvcalc.explain(**bare).weights, ref["weights"]) > 1e-3


def test_the_keys_each_norm_needs(lab):
    def p(name, layer=1):
        return lab[(name, layer)]["problem"]

    heads, kv_heads, d_k = 4, 2, 8
    assert p("olmo2")["qk_norm"] == {"over": "projection"}
    assert np.shape(p("olmo2")["q_norm"]) == (heads * d_k,)
    assert np.shape(p("olmo2")["k_norm"]) == (kv_heads * d_k,)
    cohere = p("cohere-qk")
    assert cohere["qk_norm"] == {"kind": "layer"} and cohere["rope"]["style"] == "pairs"
    assert np.shape(cohere["q_norm"]) == (heads, d_k) and np.shape(cohere["k_norm"]) == (2, d_k)
    stablelm = p("stablelm-qk")
    assert stablelm["qk_norm"] == {"kind": "layer"}
    assert np.shape(stablelm["q_norm"]) == (heads, d_k) and np.shape(stablelm["k_norm"]) == (2, 8)
    phi = p("phi-qk")
    assert phi["qk_norm"]["kind"] == "layer" and np.shape(phi["q_norm"]) == (d_k,)
    assert np.shape(phi["qk_norm"]["bias"]["q"]) == (d_k,)
    assert np.shape(phi["qk_norm"]["bias"]["k"]) == (d_k,)
    assert p("hunyuan")["qk_norm"] == {"after_rope": True}
    rope_layer, nope = p("llama4", 0), p("llama4", 1)
    assert rope_layer["qk_norm"] == {"after_rope": True} and rope_layer["rope"]["style"] == "pairs"
    assert np.array_equal(rope_layer["q_norm"], np.ones(d_k))  # Llama 4's L2Norm: no weight
    assert rope_layer["mask"] == "causal" and rope_layer["chunk_size"] == 5  # chunked, not 0/1
    assert "attn_temperature" not in rope_layer
    assert nope["attn_temperature"] == {"floor_scale": 3.0, "attn_scale": 0.5}
    assert "rope" not in nope and "q_norm" not in nope and nope["mask"] == "causal"


def test_the_command_line_writes_and_explains_them(lab, tmp_path):
    """The written file (JSON, nested qk_norm included) runs again through the CLI."""
    import json

    from qkvcalc.extract.jsonout import write_problem
    from tests.conftest import run_qkvcalc

    for name, layer in (("phi-qk", 1), ("olmo2", 1), ("llama4", 1)):
        path = tmp_path / f"{name}.json"
        with path.open("w", encoding="utf-8") as out:
            write_problem(lab[(name, layer)]["problem"], out)
        proc = run_qkvcalc("explain", str(path), "--format", "json", "--detail", "brief")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        got = np.array(doc["output"], dtype=np.float64)
        assert relative(got, lab[(name, layer)]["reference"]["out"]) < TOL
