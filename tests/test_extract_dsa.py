"""qkvcalc extract on DeepSeek-V3.2 and GLM-MoE-DSA (multi-head latent attention with the
sparse-attention indexer, DSA), against transformers itself as tests/test_extract_mla.py does: a
tiny float64 model from a config, random weights, eager attention, save_pretrained, extract in
float64, then explain. n = 12 tokens and top_k = 4, so the indexer masks most keys of the later
queries. DeepSeek-V3.2 with YaRN (its attention factor turns the indexer's rotation too; the MLA
interleaved, the indexer half-split), GLM-MoE-DSA with the default rope (both interleaved).
Every head's attention probabilities and o_proj's output equal transformers' float64 forward to
1e-8 relative; the keys qkvcalc keeps are those transformers' indexer returned (a hook on it);
without the indexer the output is another; the command line's JSON and its torch script agree;
a GLM layer that reuses another's top-k is refused, and so is a tie at the cut that torch.topk
broke otherwise than qkvcalc."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from qkvcalc.errors import QkvcalcError  # noqa: E402
from tests.conftest import run_qkvcalc  # noqa: E402
from tests.inprocess import run_script  # noqa: E402
from tests.test_extract import build_from, reference_at, true_float64  # noqa: E402
from tests.test_extract_more import SMALL, TOL, at, ids, relative  # noqa: E402

DSA = {
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
    "index_topk": 4,
    "index_head_dim": 8,
    "index_n_heads": 8,  # enough heads that no two kept scores tie at 0 (all ReLUs 0)
}
CASES = {
    "deepseek_v32": (
        "DeepseekV32Config",
        "DeepseekV32ForCausalLM",
        {
            **DSA,
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 500.0,
                "factor": 4.0,
                "original_max_position_embeddings": 8,
                "mscale": 1.0,
                "mscale_all_dim": 0.7,
                "beta_fast": 32,
                "beta_slow": 1,
            },
        },
    ),
    "glm_moe_dsa": (
        "GlmMoeDsaConfig",
        "GlmMoeDsaForCausalLM",
        {**DSA, "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}},
    ),
}
LAYERS = (0, 1)


def built(name, fields=None, seed=0):
    config, model_class, default = CASES[name]
    return build_from(config, fields or default, model_class, seed=seed,
                      _experts_implementation="eager")  # fmt: skip


def chosen(model, layer):
    """The keys transformers' indexer of `layer` returned for each query (a hook on it)."""
    seen = {}

    def grab(module, args, out):
        seen["topk"] = out[0].clone()

    hook = model.model.layers[layer].self_attn.indexer.register_forward_hook(grab)
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        hook.remove()
    n = len(ids())
    kept = np.zeros((n, n))
    for i, row in enumerate(seen["topk"].tolist()):
        for j in row:
            if j <= i:  # a masked key it returned (fewer allowed than top_k) stays masked
                kept[i, j] = 1
    return kept


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import qkvcalc

    root = tmp_path_factory.mktemp("dsa")
    out = {}
    for name in CASES:
        model = built(name)
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
            out[(name, layer)] = {
                "problem": problem,
                "reference": ref,
                "kept": chosen(model, layer),
                "folder": root / name,
            }
    return out


WHERE = [(name, layer) for name in CASES for layer in LAYERS]


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(lab, name, layer):
    import qkvcalc

    case = lab[(name, layer)]
    problem, ref = case["problem"], case["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    # the keys kept are transformers' own, and the top-k matters: most later rows lose keys
    kept = trace.stage("index_topk").value
    assert np.array_equal(kept, case["kept"])
    assert kept.sum() < np.tril(np.ones_like(kept)).sum() - 20
    # not the no-indexer result
    bare = {k: v for k, v in problem.items() if k != "indexer"}
    assert relative(qkvcalc.explain(**bare).output, ref["out"]) > 0.05


def test_the_keys_of_each_model(lab):
    v32, glm = lab[("deepseek_v32", 1)]["problem"], lab[("glm_moe_dsa", 0)]["problem"]
    for problem in (v32, glm):
        ix = problem["indexer"]
        assert np.shape(ix["wq"]) == (12, 8 * 8) and np.shape(ix["wk"]) == (32, 8)
        assert np.shape(ix["weights"]) == (32, 8) and np.shape(ix["k_norm"]) == (8,)
        assert np.shape(ix["k_norm_bias"]) == (8,) and ix["eps"] == 1e-6
        assert ix["heads"] == 8 and ix["top_k"] == 4
        assert problem["rope"]["style"] == "pairs"  # MLA: interleaved in both
    assert v32["indexer"]["rope_style"] == "half" and glm["indexer"]["rope_style"] == "pairs"
    assert v32["rope"]["attention_factor"] != 1 and "scale" in v32  # YaRN


def test_the_indexer_rotation_is_read(lab):
    """Not vacuous: the other pairing of the indexer's rotation keeps other keys."""
    import qkvcalc

    problem = lab[("deepseek_v32", 0)]["problem"]
    other = {**problem, "indexer": {**problem["indexer"], "rope_style": "pairs"}}
    kept = qkvcalc.explain(**problem).stage("index_topk").value
    assert not np.array_equal(qkvcalc.explain(**other).stage("index_topk").value, kept)


def test_the_command_line_writes_explains_and_scripts_it(lab, tmp_path):
    folder = lab[("deepseek_v32", 1)]["folder"]
    out = tmp_path / "layer.json"
    id_text = " ".join(str(i) for i in ids())
    proc = run_qkvcalc(
        "extract", str(folder), "--layer", "1", "--ids", id_text, "--dtype", "float64",
        "-o", str(out), timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert set(doc["indexer"]) >= {"wq", "wk", "k_norm", "weights", "heads", "top_k"}
    ref = lab[("deepseek_v32", 1)]["reference"]
    proc = run_qkvcalc("explain", str(out), "--format", "json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    output = np.array(json.loads(proc.stdout)["output"], dtype=np.float64)
    assert relative(output, ref["out"]) < TOL
    proc = run_qkvcalc("explain", str(out), "--format", "torch", timeout=300)
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "s.py"
    script.write_text(proc.stdout)
    ran = run_script(str(script))
    assert ran["returncode"] == 0, ran["stdout"] + ran["stderr"]
    assert "OK: PyTorch agrees" in ran["stdout"]


def test_a_shared_layer_is_refused(tmp_path):
    """GLM-MoE-DSA's "shared" layers reuse an earlier layer's top-k: one message naming it."""
    import qkvcalc

    fields = {**CASES["glm_moe_dsa"][2], "indexer_types": ["full", "shared"]}
    model = built("glm_moe_dsa", fields)
    model.save_pretrained(tmp_path / "shared")
    with pytest.raises(QkvcalcError) as caught:
        qkvcalc.extract(str(tmp_path / "shared"), layer=1, input_ids=ids(), dtype="float64")
    english = caught.value.message("en")
    assert "layer 1 has no indexer of its own" in english and "layer 0" in english
    assert "{" not in caught.value.message("ko")


def test_a_tie_at_the_cut_is_refused(tmp_path):
    """Three index heads: some keys score 0 in every head, and in layer 1 of this model such a
    tie straddles the cut of query 11, where torch.topk keeps another of them than qkvcalc."""
    import qkvcalc

    fields = {**CASES["glm_moe_dsa"][2], "index_n_heads": 3}
    model = built("glm_moe_dsa", fields)
    model.save_pretrained(tmp_path / "tie")
    with pytest.raises(QkvcalcError) as caught:
        qkvcalc.extract(str(tmp_path / "tie"), layer=1, input_ids=ids(), dtype="float64")
    english = caught.value.message("en")
    assert "equal scores at the cut" in english and "row(s) 11" in english
