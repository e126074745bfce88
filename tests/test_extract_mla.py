"""qkvcalc extract on DeepSeek-V3 (multi-head latent attention), against transformers itself as
tests/test_extract_norms.py does: a tiny float64 model from a config, random weights, eager
attention, save_pretrained, extract in float64, then explain. Two models: one with a query
latent (q_lora_rank), the interleaved rope layout and YaRN (its attention factor and mscale in
the scale), one with q_proj (q_lora_rank None), the rotate_half layout and the default rope.
Layer 0 has a dense MLP (first_k_dense_replace = 1), layer 1 experts, loaded with the eager
experts path. Every head's attention probabilities and o_proj's own output equal transformers'
float64 forward to 1e-8 relative, through qkvcalc (and with the cache of the latents, --decode)
and through the independent oracle; the script of --format torch runs and agrees."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import run_qkvcalc
from tests.inprocess import run_script
from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at
from tests.test_extract_more import SMALL, TOL, at, ids, relative

DEEPSEEK = {
    **SMALL,
    "hidden_size": 32,
    "intermediate_size": 48,
    "moe_intermediate_size": 16,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "q_lora_rank": 12,
    "kv_lora_rank": 10,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 5,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "pad_token_id": 0,
}
CASES = {
    "yarn-interleaved": {
        **DEEPSEEK,
        "rope_interleave": True,
        "rope_parameters": {
            "rope_type": "yarn",
            "rope_theta": 500.0,
            "factor": 4.0,
            "original_max_position_embeddings": 16,
            "mscale": 1.0,
            "mscale_all_dim": 0.7,  # an attention factor ≠ 1 and a scale ≠ 1/√d_k
            "beta_fast": 32,
            "beta_slow": 1,
        },
    },
    "q-proj-half": {
        **DEEPSEEK,
        "q_lora_rank": None,
        "rope_interleave": False,
        "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
    },
}
LAYERS = (0, 1)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import qkvcalc

    root = tmp_path_factory.mktemp("deepseek")
    out = {}
    for name, fields in CASES.items():
        model = build_from(
            "DeepseekV3Config", fields, "DeepseekV3ForCausalLM", _experts_implementation="eager"
        )
        model.save_pretrained(root / name)
        for layer in LAYERS:
            ref = reference_at(
                model,
                ids(),
                layer,
                at(model, "model.layers.{}.self_attn", layer),
                at(model, "model.layers.{}.self_attn.o_proj", layer),
            )
            problem = qkvcalc.extract(
                str(root / name), layer=layer, input_ids=ids(), dtype="float64"
            )
            out[(name, layer)] = {"problem": problem, "reference": ref, "folder": root / name}
    return out


WHERE = [(name, layer) for name in CASES for layer in LAYERS]


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(lab, name, layer):
    import qkvcalc

    problem, ref = lab[(name, layer)]["problem"], lab[(name, layer)]["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = attention(problem)  # the naive oracle, in DeepSeek's column order
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    # decoding with the cache of the latents (a prefill of 5, then one token a step)
    decoded = qkvcalc.explain(**problem, decode=5)
    assert relative(decoded.output, ref["out"]) < TOL
    # not vacuous: without the rotation (or with the other pairing) the weights differ
    bare = {k: v for k, v in problem.items() if k != "rope"}
    assert relative(qkvcalc.explain(**bare).weights, ref["weights"]) > 1e-3


def test_the_keys_of_each_model(lab):
    yarn, plain = lab[("yarn-interleaved", 1)]["problem"], lab[("q-proj-half", 0)]["problem"]
    mla = yarn["mla"]
    assert np.shape(mla["wq_a"]) == (32, 12) and np.shape(mla["q_a_norm"]) == (12,)
    assert np.shape(mla["wq_b"]) == (12, 4 * (6 + 4))
    assert np.shape(mla["wkv_a"]) == (32, 10 + 4) and np.shape(mla["kv_a_norm"]) == (10,)
    assert np.shape(mla["wkv_b"]) == (10, 4 * (6 + 5)) and mla["rope_dims"] == 4
    assert np.shape(yarn["wo"]) == (4 * 5, 32) and yarn["heads"] == 4
    assert yarn["rope"]["style"] == "pairs" and yarn["rope"]["dims"] == 4
    assert yarn["rope"]["attention_factor"] != 1 and "inv_freq" in yarn["rope"]
    assert yarn["scale"] != (6 + 4) ** -0.5  # mscale² under YaRN
    assert "wq" in plain["mla"] and "wq_a" not in plain["mla"]
    assert plain["rope"]["style"] == "half" and "scale" not in plain
    assert "wq" not in yarn and "wk" not in yarn and "wv" not in yarn


def test_the_command_line_writes_explains_and_scripts_it(lab, tmp_path):
    """The written JSON (the nested mla object) runs again through the CLI, and its torch
    script agrees with qkvcalc when run."""
    folder = lab[("yarn-interleaved", 1)]["folder"]
    out = tmp_path / "layer.json"
    id_text = " ".join(str(i) for i in ids())
    proc = run_qkvcalc(
        "extract", str(folder), "--layer", "1", "--ids", id_text, "--dtype", "float64",
        "-o", str(out), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert set(doc["mla"]) >= {"wq_a", "q_a_norm", "wq_b", "wkv_a", "kv_a_norm", "wkv_b"}
    ref = lab[("yarn-interleaved", 1)]["reference"]
    proc = run_qkvcalc("explain", str(out), "--format", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    output = np.array(json.loads(proc.stdout)["output"], dtype=np.float64)
    assert relative(output, ref["out"]) < TOL
    proc = run_qkvcalc("explain", str(out), "--format", "torch", timeout=300)
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "s.py"
    script.write_text(proc.stdout)
    ran = run_script(str(script))  # in this process: torch is imported already
    assert ran["returncode"] == 0, ran["stdout"] + ran["stderr"]
    assert "OK: PyTorch agrees" in ran["stdout"]


def test_one_head_of_it_is_refused_by_name(lab):
    """qkvcalc heads cuts a layer to one head; the latents are every head's at once."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.heads import split_head

    with pytest.raises(QkvcalcError) as caught:
        split_head(lab[("q-proj-half", 0)]["problem"], 1)
    assert "'mla'" in caught.value.message("en")
