"""qkvcalc extract on the q/k norm kinds (issue 22, item 3.3), against transformers itself as
tests/test_extract_more.py does (a tiny float64 model from a config, random weights, eager
attention, save_pretrained, extract in float64, then explain): OLMo 2 (RMSNorm of the whole
projection), Cohere with use_qk_norm (LayerNorm, a weight row per head), StableLM with
qk_layernorm (a LayerNorm per head), Phi with qk_layernorm (one LayerNorm with a bias) and
HunYuan dense (RMSNorm after RoPE). Every head's attention probabilities and the output
projection's own output equal transformers' float64 forward to 1e-8 relative, x to 1e-12; the
norm is not vacuous (without it the weights differ)."""

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
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import qkvcalc

    root = tmp_path_factory.mktemp("norm-models")
    out = {}
    for name, spec in CASES.items():
        model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
        model.save_pretrained(root / name)
        layer = spec["layers"][0]
        ref = reference_at(
            model, ids(), layer, at(model, spec["attn"], layer), at(model, spec["proj"], layer)
        )
        problem = qkvcalc.extract(str(root / name), layer=layer, input_ids=ids(), dtype="float64")
        out[name] = {"problem": problem, "reference": ref}
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_the_extracted_layer_equals_transformers(lab, name):
    import qkvcalc

    problem, ref = lab[name]["problem"], lab[name]["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = attention(problem)  # the naive oracle
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    bare = {k: v for k, v in problem.items() if k not in ("q_norm", "k_norm", "qk_norm")}
    assert relative(qkvcalc.explain(**bare).weights, ref["weights"]) > 1e-3


def test_the_keys_each_norm_needs(lab):
    def p(name):
        return lab[name]["problem"]

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


def test_the_command_line_writes_and_explains_them(lab, tmp_path):
    """The written file (JSON, nested qk_norm included) runs again through the CLI."""
    import json

    from qkvcalc.extract.jsonout import write_problem
    from tests.conftest import run_qkvcalc

    for name in ("phi-qk", "olmo2"):
        path = tmp_path / f"{name}.json"
        with path.open("w", encoding="utf-8") as out:
            write_problem(lab[name]["problem"], out)
        proc = run_qkvcalc("explain", str(path), "--format", "json", "--detail", "brief")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        got = np.array(doc["output"], dtype=np.float64)
        assert relative(got, lab[name]["reference"]["out"]) < TOL
