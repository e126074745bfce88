"""qkvcalc extract on the plain 2025–26 newcomers (issue 37, item 4), against transformers itself
as tests/test_extract_more.py does (a tiny float64 model from a config, random weights, eager
attention, save_pretrained, extract in float64, then explain): OLMo 3 (sliding and full layers,
the q/k norm over the whole projection), Apertus, Seed-OSS (q/k/v biases without an output
bias), GLM-4 (interleaved pairs on half of each head), GLM-4.5's MoE (half-split RoPE on half of
each head, q/k norm), Qwen3-MoE (sliding), ERNIE 4.5 and its MoE (interleaved pairs on the
whole head), Granite and Granite MoE (attention_multiplier as the scale), and the other
standard-attention model types of transformers that extract takes for LLaMA-like (OLMo with its
weightless LayerNorm, OLMoE, Gemma, VaultGemma, GLM, Helium, Ministral, EXAONE MoE, MiniMax-M2 …:
CASES below, one layer of each kind: sliding and full, RoPE and NoPE), and Gemma 3n and Gemma 4
(the norm on V, K = V, proportional RoPE, KV-shared layers as cross-attention). Every head's
attention probabilities and the output projection's own output equal transformers' float64
forward to 1e-8 relative, x to 1e-12."""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at
from tests.test_extract_more import LLAMA, SMALL, TOL, N, at, case, ids, relative


def ministral3_rope(original: int) -> dict:
    """Ministral 3's YaRN, whose original_max_position_embeddings is also where its
    position-dependent scale of q (llama_4_scaling_beta) starts."""
    return {
        "rope_type": "yarn",
        "rope_theta": 500.0,
        "factor": 2.0,
        "original_max_position_embeddings": original,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "llama_4_scaling_beta": 0.5,
    }


ENCODER = {
    **SMALL,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "pad_token_id": 0,
}
EAGER = {"_experts_implementation": "eager"}  # the grouped experts kernel has no float64
TWO_KINDS = ["sliding_attention", "full_attention"]
GEMMA = {
    **LLAMA,
    "num_hidden_layers": 6,
    "head_dim": 8,
    "layer_types": TWO_KINDS * 3,
    "sliding_window": 4,
    "num_kv_shared_layers": 2,
    "hidden_size_per_layer_input": 8,
    "vocab_size_per_layer_input": 60,
}

CASES = {
    "olmo3": case(
        "Olmo3Config",
        {**LLAMA, "sliding_window": 4, "layer_types": TWO_KINDS},
        "Olmo3ForCausalLM",
        [0, 1],
    ),
    "apertus": case(
        "ApertusConfig",
        {
            **LLAMA,
            "rope_parameters": {  # its default, llama3 scaling, within 64 positions
                "rope_type": "llama3",
                "rope_theta": 500.0,
                "factor": 4.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 16,
            },
        },
        "ApertusForCausalLM",
        [1],
    ),
    "seed_oss": case(
        "SeedOssConfig",
        {**LLAMA, "head_dim": 12, "attention_bias": True},
        "SeedOssForCausalLM",
        [1],
    ),
    "glm4": case(
        "Glm4Config",
        {**LLAMA, "head_dim": 8, "attention_bias": True},
        "Glm4ForCausalLM",
        [1],
    ),
    "glm4_moe": case(
        "Glm4MoeConfig",
        {
            **LLAMA,
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_group": 2,
            "topk_group": 1,
            "n_shared_experts": 1,
            "first_k_dense_replace": 1,
            "use_qk_norm": True,
            "attention_bias": True,
            "num_hidden_layers": 3,
        },
        "Glm4MoeForCausalLM",
        [2],
        **EAGER,
    ),
    "qwen3_moe": case(
        "Qwen3MoeConfig",
        {
            **LLAMA,
            "head_dim": 12,
            "moe_intermediate_size": 16,
            "num_experts": 3,
            "num_experts_per_tok": 2,
            "use_sliding_window": True,
            "sliding_window": 4,
        },
        "Qwen3MoeForCausalLM",
        [1],
        **EAGER,
    ),
    "ernie4_5": case(
        "Ernie4_5Config", {**LLAMA, "head_dim": 8, "use_bias": True}, "Ernie4_5ForCausalLM", [1]
    ),
    "ernie4_5_moe": case(
        "Ernie4_5_MoeConfig",
        {
            **LLAMA,
            "moe_intermediate_size": 16,
            "moe_num_experts": 3,
            "moe_k": 2,
            "moe_num_shared_experts": 1,
            "moe_layer_start_index": 0,
        },
        "Ernie4_5_MoeForCausalLM",
        [1],
        **EAGER,
    ),
    "granite": case(
        "GraniteConfig",
        {
            **LLAMA,
            "attention_multiplier": 0.4,
            "embedding_multiplier": 3.0,
            "residual_multiplier": 0.5,
            "attention_bias": True,
        },
        "GraniteForCausalLM",
        [1],
    ),
    "granitemoe": case(
        "GraniteMoeConfig",
        {
            **LLAMA,
            "attention_multiplier": 0.4,
            "embedding_multiplier": 3.0,
            "residual_multiplier": 0.5,
            "num_local_experts": 3,
            "num_experts_per_tok": 2,
        },
        "GraniteMoeForCausalLM",
        [1],
        **EAGER,
    ),
    # ---- more of transformers' standard-attention model types ----
    "granitemoeshared": case(
        "GraniteMoeSharedConfig",
        {
            **LLAMA,
            "attention_multiplier": 0.4,
            "num_local_experts": 3,
            "num_experts_per_tok": 2,
            "shared_intermediate_size": 16,
        },
        "GraniteMoeSharedForCausalLM",
        [1],
        **EAGER,
    ),
    "olmo": case("OlmoConfig", {**LLAMA, "attention_bias": True}, "OlmoForCausalLM", [1]),
    "olmoe": case(
        "OlmoeConfig",
        {**LLAMA, "num_experts": 3, "num_experts_per_tok": 2},
        "OlmoeForCausalLM",
        [1],
        **EAGER,
    ),
    "flex_olmo": case(
        "FlexOlmoConfig",
        {**LLAMA, "num_experts": 3, "num_experts_per_tok": 2},
        "FlexOlmoForCausalLM",
        [1],
        **EAGER,
    ),
    "gemma": case("GemmaConfig", {**LLAMA, "head_dim": 8}, "GemmaForCausalLM", [1]),
    "vaultgemma": case(
        "VaultGemmaConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": TWO_KINDS,
            "query_pre_attn_scalar": 12,
            "attn_logit_softcapping": 2.0,
            "final_logit_softcapping": None,
        },
        "VaultGemmaForCausalLM",
        [0, 1],
    ),
    "glm": case(
        "GlmConfig",
        {**LLAMA, "head_dim": 8, "attention_bias": True},
        "GlmForCausalLM",
        [1],
    ),
    "helium": case("HeliumConfig", {**LLAMA, "head_dim": 8}, "HeliumForCausalLM", [1]),
    "arcee": case("ArceeConfig", LLAMA, "ArceeForCausalLM", [1]),
    "ministral": case(
        "MinistralConfig",
        {**LLAMA, "head_dim": 8, "sliding_window": 4, "layer_types": TWO_KINDS},
        "MinistralForCausalLM",
        [0, 1],
    ),
    "cwm": case(
        "CwmConfig",
        {**LLAMA, "head_dim": 8, "sliding_window": 4, "layer_types": TWO_KINDS},
        "CwmForCausalLM",
        [0, 1],
    ),
    "hyperclovax": case(
        "HyperCLOVAXConfig",
        {**LLAMA, "attention_multiplier": 0.4, "embedding_multiplier": 3.0},
        "HyperCLOVAXForCausalLM",
        [1],
    ),
    "solar_open": case(
        "SolarOpenConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "n_group": 2,
            "topk_group": 1,
        },
        "SolarOpenForCausalLM",
        [1],
        **EAGER,
    ),
    "exaone_moe": case(
        "ExaoneMoeConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": [*TWO_KINDS, "sliding_attention"],
            "first_k_dense_replace": 1,
            "moe_intermediate_size": 16,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "num_shared_experts": 1,
            "n_group": 2,
            "topk_group": 1,
        },
        "ExaoneMoeForCausalLM",
        [1, 2],
        **EAGER,
    ),
    "hunyuan_v1_moe": case(
        "HunYuanMoEV1Config",
        {**LLAMA, "head_dim": 8, "num_experts": 3, "moe_topk": 2},
        "HunYuanMoEV1ForCausalLM",
        [1],
        **EAGER,
    ),
    "minimax_m2": case(
        "MiniMaxM2Config",
        {
            **LLAMA,
            "head_dim": 8,
            "num_local_experts": 3,
            "num_experts_per_tok": 2,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.5},
        },
        "MiniMaxM2ForCausalLM",
        [1],
        **EAGER,
    ),
    "mellum": case(
        "MellumConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": TWO_KINDS,
            "moe_intermediate_size": 16,
            "num_experts": 3,
            "num_experts_per_tok": 2,
        },
        "MellumForCausalLM",
        [0, 1],
        **EAGER,
    ),
    "kolibri1": case(
        "Kolibri1Config",
        {
            **LLAMA,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": TWO_KINDS,
            "moe_intermediate_size": 16,
            "num_experts": 3,
            "num_experts_per_tok": 2,
            "shared_expert_intermediate_size": 16,
        },
        "Kolibri1ForCausalLM",
        [0, 1],
        **EAGER,
    ),
    "hy_v3": case(
        "HYV3Config",
        {
            **LLAMA,
            "head_dim": 8,
            "num_experts": 3,
            "num_experts_per_tok": 2,
            "num_shared_experts": 1,
            "moe_intermediate_size": 16,
        },
        "HYV3ForCausalLM",
        [1],
        **EAGER,
    ),
    "phimoe": case(
        "PhimoeConfig",
        {
            **LLAMA,
            "sliding_window": 4,
            "num_local_experts": 3,
            "num_experts_per_tok": 2,
            "attention_bias": True,
        },
        "PhimoeForCausalLM",
        [1],
        **EAGER,
    ),
    "jais2": case(
        "Jais2Config",
        {**LLAMA, "head_dim": 8, "attention_bias": True},
        "Jais2ForCausalLM",
        [1],
    ),
    "nemotron": case(
        "NemotronConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.5},
        },
        "NemotronForCausalLM",
        [1],
    ),
    "cohere2_moe": case(
        "Cohere2MoeConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
            "mlp_layer_types": ["dense", "sparse", "sparse"],
            "num_experts": 3,
            "num_experts_per_tok": 2,
        },
        "Cohere2MoeForCausalLM",
        [0, 1, 2],  # dense and full (RoPE all the same), sliding, full (NoPE)
        **EAGER,
    ),
    "ministral3": case(
        "Ministral3Config",
        {**LLAMA, "head_dim": 8, "rope_parameters": ministral3_rope(32)},
        "Ministral3ForCausalLM",
        [1],
    ),
    "afmoe": case(
        "AfmoeConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
            "num_dense_layers": 1,
            "moe_intermediate_size": 16,
            "num_experts": 3,
            "num_experts_per_tok": 2,
            "num_shared_experts": 1,
        },
        "AfmoeForCausalLM",
        [1, 2],  # full (NoPE) after a dense layer, sliding after an MoE layer
        **EAGER,
    ),
    "flint": case(
        "FlintConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": TWO_KINDS,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 16,
            "num_experts": 3,
            "num_experts_per_tok": 2,
        },
        "FlintForCausalLM",
        [0, 1],  # sliding with RoPE, full without (NoPE); sinks on both
        **EAGER,
    ),
    "nanochat": case("NanoChatConfig", LLAMA, "NanoChatForCausalLM", [1]),
    # differential attention: layer 0 (λ_init 0.2) and 2 (λ_init = 0.8 − 0.6·e^(−0.6))
    "diffllama": case(
        "DiffLlamaConfig",
        {**LLAMA, "num_hidden_layers": 3, "lambda_std_dev": 0.3},
        "DiffLlamaForCausalLM",
        [0, 2],
    ),
    "internlm3": case(
        "InternLM3Config",
        {**LLAMA, "head_dim": 8, "qkv_bias": True, "bias": True},
        "LlamaForCausalLM",
        [1],
    ),
    "iquestcoder": case("IQuestCoderConfig", LLAMA, "LlamaForCausalLM", [1]),
    # Gemma 3n and Gemma 4: the norm on V, scale 1, plain q/k norm weights; the last two layers
    # reuse the K and V of layers 2 (sliding) and 3 (full); Gemma 4's full layers have head_dim
    # 16, one K/V head, K = V and proportional RoPE on a quarter of each head
    "gemma3n_text": case(
        "Gemma3nTextConfig",
        {
            **GEMMA,
            "altup_num_inputs": 2,
            "laurel_rank": 4,
            "activation_sparsity_pattern": [0.0] * 6,
            "intermediate_size": [48] * 6,
        },
        "Gemma3nForCausalLM",
        [0, 1, 4, 5],
    ),
    "gemma4_text": case(
        "Gemma4TextConfig",
        {
            **GEMMA,
            "global_head_dim": 16,
            "num_global_key_value_heads": 1,
            "attention_k_eq_v": True,
        },
        "Gemma4ForCausalLM",
        [0, 1, 4, 5],
    ),
    **{
        name: case(
            config,
            ENCODER,
            model,
            [1],
            attn="encoder.layer.{}.attention.self",
            proj="encoder.layer.{}.attention.output.dense",
        )
        for name, config, model in (
            ("roberta", "RobertaConfig", "RobertaModel"),
            ("xlm-roberta", "XLMRobertaConfig", "XLMRobertaModel"),
            ("camembert", "CamembertConfig", "CamembertModel"),
            ("electra", "ElectraConfig", "ElectraModel"),
            ("data2vec-text", "Data2VecTextConfig", "Data2VecTextModel"),
            ("ernie", "ErnieConfig", "ErnieModel"),
            ("roc_bert", "RoCBertConfig", "RoCBertModel"),
            ("roberta-prelayernorm", "RobertaPreLayerNormConfig", "RobertaPreLayerNormModel"),
            ("xlm-roberta-xl", "XLMRobertaXLConfig", "XLMRobertaXLModel"),
        )
    },
}


# Routers that the modeling code builds in float32 whatever the model's dtype
# (nn.Linear(..., dtype=torch.float32)): HunYuan MoE's gate
BUILT_FLOAT32 = ["mlp.gate.wg."]


def kept_float32(model) -> None:
    """The tensors transformers loads in float32 whatever the dtype asked
    (_keep_in_fp32_modules_strict: ERNIE 4.5 MoE's router weight; BUILT_FLOAT32) rounded to
    float32 in the reference model too, so that it is the model a checkpoint of it loads as."""
    import torch

    names = [*(getattr(model, "_keep_in_fp32_modules_strict", None) or []), *BUILT_FLOAT32]
    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if any(part in name for part in names) and tensor.is_floating_point():
                tensor.copy_(tensor.to(torch.float32).to(tensor.dtype))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved and extracted once, lazily (a -k selection builds its own only)."""
    import qkvcalc

    root = tmp_path_factory.mktemp("new-models")
    out: dict = {}

    def get(name: str, layer: int) -> dict:
        if (name, layer) not in out:
            spec = CASES[name]
            model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
            kept_float32(model)
            model.save_pretrained(root / name)
            for each in spec["layers"]:
                ref = reference_at(
                    model, ids(), each, at(model, spec["attn"], each), at(model, spec["proj"], each)
                )
                path = str(root / name)
                problem = qkvcalc.extract(path, layer=each, input_ids=ids(), dtype="float64")
                out[(name, each)] = {"problem": problem, "reference": ref}
        return out[(name, layer)]

    return get


WHERE = [(name, layer) for name, spec in CASES.items() for layer in spec["layers"]]


def oracle(problem: dict) -> tuple[np.ndarray, np.ndarray]:
    """The naive oracle's weights and output; with an output gate (AFMoE), the oracle's heads
    side by side (W_O the identity) times σ(x·W_G + b_G), then W_O and b_O (DiffLlama's pairs
    of heads are the oracle's own: naive_modern.differential)."""
    if "wg" not in problem:
        return attention(problem)
    rest = {k: v for k, v in problem.items() if k not in ("wg", "bg", "wo", "bo")}
    width = np.shape(problem["wo"])[0]
    weights, heads = attention({**rest, "wo": np.eye(width)})
    logits = np.asarray(problem["x"]) @ problem["wg"] + problem.get("bg", 0.0)
    gated = heads / (1.0 + np.exp(-logits))
    return weights, gated @ problem["wo"] + problem.get("bo", 0.0)


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(lab, name, layer):
    import qkvcalc

    got = lab(name, layer)
    problem, ref = got["problem"], got["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = oracle(problem)
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)  # qkvcalc itself
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


def test_the_keys_each_layer_needs(lab):
    """What each layer's problem says, read from the model: the cases are not vacuous."""

    def p(name, layer=1):
        return lab(name, layer)["problem"]

    heads, kv_heads, d_k = 4, 2, 8
    sliding, full = p("olmo3", 0), p("olmo3", 1)
    assert sliding["window"] == 4 and "window" not in full
    assert sliding["qk_norm"] == {"over": "projection"}
    assert np.shape(sliding["q_norm"]) == (heads * d_k,)
    assert np.shape(sliding["k_norm"]) == (kv_heads * d_k,)
    apertus = p("apertus")
    assert np.shape(apertus["q_norm"]) == (d_k,) and "qk_norm" not in apertus
    assert len(apertus["rope"]["inv_freq"]) == d_k // 2
    seed = p("seed_oss")
    assert np.shape(seed["wq"]) == (32, heads * 12) and "bq" in seed and "bo" not in seed
    glm4 = p("glm4")  # partial_rotary_factor 0.5 by default: half of each head rotates
    assert glm4["rope"]["style"] == "pairs" and glm4["rope"]["dims"] == d_k // 2 and "bq" in glm4
    glm4_moe = p("glm4_moe", 2)
    assert glm4_moe["rope"]["style"] == "half" and glm4_moe["rope"]["dims"] == d_k // 2
    assert np.shape(glm4_moe["q_norm"]) == (d_k,) and "bk" in glm4_moe
    assert p("qwen3_moe")["window"] == 4 and np.shape(p("qwen3_moe")["q_norm"]) == (12,)
    for name in ("ernie4_5", "ernie4_5_moe"):
        assert p(name)["rope"]["style"] == "pairs" and "dims" not in p(name)["rope"]
    assert "bo" in p("ernie4_5")
    for name in ("granite", "granitemoe"):
        assert p(name)["scale"] == 0.4 and p(name)["kv_heads"] == kv_heads
    assert N > 4  # the windows cut


def test_the_keys_of_the_other_model_types(lab):
    """The same for the other standard-attention model types."""

    def p(name, layer=1):
        return lab(name, layer)["problem"]

    for name in ("granitemoeshared", "hyperclovax"):
        assert p(name)["scale"] == 0.4
    assert all(k in p("olmo") for k in ("bq", "bk", "bv", "bo")) and "q_norm" not in p("olmo")
    for name in ("olmoe", "flex_olmo", "minimax_m2"):
        assert p(name)["qk_norm"] == {"over": "projection"} and np.shape(p(name)["q_norm"]) == (32,)
    assert "q_norm" not in p("gemma") and p("gemma")["rope"]["style"] == "half"
    local, full = p("vaultgemma", 0), p("vaultgemma", 1)
    assert local["window"] == 4 and "window" not in full
    assert local["scale"] == 12**-0.5 and full["softcap"] == 2.0
    assert p("glm")["rope"] == {"theta": 10000.0, "style": "pairs", "dims": 4} and "bq" in p("glm")
    assert p("helium")["rope"]["style"] == "pairs" and "dims" not in p("helium")["rope"]
    for name in ("ministral", "cwm", "mellum", "kolibri1"):
        assert p(name, 0)["window"] == 4 and "window" not in p(name, 1)
    assert p("mellum", 0)["rope"]["theta"] != p("mellum", 1)["rope"]["theta"]  # per layer type
    for nope, roped in (("exaone_moe", 2), ("kolibri1", 0)):  # NoPE on the global layers
        full_layer = 1
        assert "rope" not in p(nope, full_layer) and "rope" in p(nope, roped)
        assert np.shape(p(nope, full_layer)["q_norm"]) == (8,)
    assert p("exaone_moe", 2)["window"] == 4
    assert p("hunyuan_v1_moe")["qk_norm"] == {"after_rope": True}
    assert np.shape(p("hy_v3")["q_norm"]) == (8,) and "qk_norm" not in p("hy_v3")
    assert p("minimax_m2")["rope"]["dims"] == 4 and p("nemotron")["rope"]["dims"] == 4
    assert p("phimoe")["window"] == 4 and "bo" in p("phimoe") and "bo" in p("jais2")


def test_olmo_with_a_clip_that_bites_is_refused(tmp_path):
    """OLMo's clip_qkv clamps q, k and v, which a problem cannot say: where the clamp changed a
    number, extract's own check refuses the layer rather than give another layer's problem."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    spec = CASES["olmo"]
    model = build_from(spec["config"], {**spec["fields"], "clip_qkv": 0.05}, spec["model"])
    model.save_pretrained(tmp_path / "olmo")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "olmo"), layer=1, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.mismatch"


@pytest.mark.parametrize(("name", "layer"), [("glm4", 1), ("ernie4_5", 1), ("glm4_moe", 2)])
def test_the_other_rotation_gives_other_weights(lab, name, layer):
    """The rotary style matters here: with the other one the weights are not transformers'."""
    got = lab(name, layer)
    problem, ref = got["problem"], got["reference"]
    rope = dict(problem["rope"])
    other = {**rope, "style": "half" if rope["style"] == "pairs" else "pairs"}
    weights, _ = attention({**problem, "rope": other})
    assert relative(weights, ref["weights"]) > 1e-4


def qkvcalc_output(problem: dict) -> np.ndarray:
    import qkvcalc

    return qkvcalc.explain(**problem).output


def test_the_keys_of_the_later_cases(lab):
    def p(name, layer=1):
        return lab(name, layer)["problem"]

    full, sliding = p("afmoe", 1), p("afmoe", 2)  # AFMoE: its output gate, NoPE global layers
    assert np.shape(full["wg"]) == (32, 32) and "bg" not in full
    assert "rope" not in full and "window" not in full
    assert sliding["window"] == 4 and "rope" in sliding and np.shape(sliding["q_norm"]) == (8,)
    bare = {k: v for k, v in full.items() if k != "wg"}
    assert relative(qkvcalc_output(bare), lab("afmoe", 1)["reference"]["out"]) > 1e-3

    dense, sliding, full = p("cohere2_moe", 0), p("cohere2_moe", 1), p("cohere2_moe", 2)
    assert dense["rope"]["style"] == "pairs" and "window" not in dense  # force_rope
    assert sliding["window"] == 4 and "rope" in sliding
    assert "rope" not in full and "window" not in full
    assert p("ministral3")["rope"]["attention_factor"] != 1.0
    nanochat = p("nanochat")  # turned by −θ, then a weightless RMSNorm
    assert np.all(nanochat["rope"]["inv_freq"] < 0) and nanochat["qk_norm"] == {"after_rope": True}
    assert np.array_equal(nanochat["q_norm"], np.ones(8))
    turned = {**nanochat["rope"], "inv_freq": -nanochat["rope"]["inv_freq"]}  # by +θ
    weights, _ = attention({**nanochat, "rope": turned})
    assert relative(weights, lab("nanochat", 1)["reference"]["weights"]) > 1e-4
    first, third = p("diffllama", 0), p("diffllama", 2)  # λ_init by the layer's index
    assert first["differential"]["lambda_init"] == pytest.approx(0.2)
    assert third["differential"]["lambda_init"] == pytest.approx(0.8 - 0.6 * np.exp(-0.6))
    assert first["differential"]["eps"] == 1e-5 and first["heads"] == 4
    assert first["differential"]["lambda"] != third["differential"]["lambda"]
    plain = {k: v for k, v in third.items() if k != "differential"}
    assert relative(qkvcalc_output(plain), lab("diffllama", 2)["reference"]["out"]) > 1e-3
    local, glob = p("flint", 0), p("flint", 1)  # Flint: sinks, NoPE global layers
    assert local["window"] == 4 and "rope" in local and len(local["sinks"]) == 4
    assert "rope" not in glob and "window" not in glob and len(glob["sinks"]) == 4


def test_ministral3_past_its_scaling_start_is_refused(tmp_path):
    """Ministral 3 scales q by 1 + β·log(1 + ⌊i / original_max_position_embeddings⌋), which a
    problem cannot say: positions past that point make extract's check refuse the layer."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    spec = CASES["ministral3"]
    fields = {**spec["fields"], "rope_parameters": ministral3_rope(8)}
    model = build_from(spec["config"], fields, spec["model"])
    model.save_pretrained(tmp_path / "ministral3")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "ministral3"), layer=1, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.mismatch"


def test_the_encoders_have_no_mask_and_their_biases(lab):
    for name in ("roberta", "xlm-roberta-xl", "roberta-prelayernorm"):
        problem = lab(name, 1)["problem"]
        assert problem["mask"] == "none" and all(k in problem for k in ("bq", "bk", "bv", "bo"))


def test_the_keys_of_gemma_3n_and_gemma_4(lab):
    """The norm on V and the scale 1 everywhere; the plain q/k norm weights; Gemma 4's full
    layer: its own head_dim and K/V heads, K = V (wv is wk), proportional RoPE (zeros past a
    quarter of the head); a KV-shared layer: source is the earlier layer's x and its W_K, W_V."""
    for name in ("gemma3n_text", "gemma4_text"):
        for layer in (0, 1, 4, 5):
            problem = lab(name, layer)["problem"]
            assert problem["v_norm"] == {"eps": 1e-6} and problem["scale"] == 1.0
            assert ("window" in problem) == (layer % 2 == 0)
        spec = CASES[name]
        model = build_from(spec["config"], spec["fields"], spec["model"])
        attn = model.model.layers[1].self_attn
        assert np.array_equal(
            lab(name, 1)["problem"]["q_norm"], attn.q_norm.weight.detach().numpy()
        )
        for shared, earlier in ((4, 2), (5, 3)):
            problem = lab(name, shared)["problem"]
            kv = model.model.layers[earlier].self_attn
            then = reference_at(model, ids(), earlier, kv, kv.o_proj)["x"]  # its attention's x
            assert relative(problem["source"], then) < 1e-12
            assert relative(problem["source"], problem["x"]) > 1e-3
            assert f"reuses those of layer {earlier} (KV sharing)" in problem["description"]
            # its W_K and W_V are layer `earlier`'s: 'the weights are the layer's own' was false
            assert "the weights are the layer's own" not in problem["description"]
            assert "W_Q, the query norm and W_O are the layer's own" in problem["description"]
            assert np.array_equal(problem["wk"], kv.k_proj.weight.detach().numpy().T)
            assert np.array_equal(problem["k_norm"], kv.k_norm.weight.detach().numpy())
        assert "KV sharing" not in lab(name, 1)["problem"]["description"]
    full = lab("gemma4_text", 1)["problem"]
    assert np.shape(full["wq"]) == (32, 4 * 16) and full["kv_heads"] == 1
    assert np.array_equal(full["wv"], full["wk"])  # K = V: one projection
    inv_freq = np.asarray(full["rope"]["inv_freq"])
    assert len(inv_freq) == 8 and np.all(inv_freq[2:] == 0) and np.all(inv_freq[:2] > 0)
    assert np.allclose(inv_freq[:2], 1e6 ** (-np.arange(0, 4, 2) / 16), rtol=1e-15)
    assert "dims" not in full["rope"] and full["rope"]["style"] == "half"
    assert not np.array_equal(lab("gemma3n_text", 1)["problem"]["wv"], full["wk"])


@pytest.mark.parametrize("name", ["gemma3n_text", "gemma4_text"])
def test_without_the_norm_on_v_the_output_is_not_transformers(lab, name):
    problem, ref = lab(name, 5)["problem"], lab(name, 5)["reference"]
    bare = {k: v for k, v in problem.items() if k != "v_norm"}
    assert relative(qkvcalc_output(bare), ref["out"]) > 1e-3
    own_x = {k: v for k, v in problem.items() if k != "source"}  # K and V from this layer's x
    assert relative(attention(own_x)[0], ref["weights"]) > 1e-4


def test_heads_explains_a_kv_shared_layer(tmp_path):
    """qkvcalc heads: one run records every layer's x, so a KV-shared layer's problem has its
    source too, and each of its heads splits (source and v_norm are every head's)."""
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, split_head

    spec = CASES["gemma4_text"]
    model = build_from(spec["config"], spec["fields"], spec["model"])
    model.save_pretrained(tmp_path / "gemma4")
    run = attention_maps(str(tmp_path / "gemma4"), input_ids=ids(), dtype="float64", problems=True)
    shared = run.problems[5]
    assert "source" in shared and len(run.problems) == 6
    assert "reuses those of layer 3 (KV sharing)" in shared["description"]  # as extract says
    assert "the weights are the layer's own" not in shared["description"]
    for h in (1, 4):
        trace = qkvcalc.explain(**split_head(shared, h))
        assert relative(np.squeeze(trace.weights), run.weights[5][h - 1]) < TOL


def test_a_gemma4_checkpoint_with_vision_gives_its_text_layers(tmp_path):
    """A multimodal gemma4 checkpoint (a tiny vision tower beside the text model): extract
    finds the text layers (language_model), a KV-shared one too."""
    import torch
    import transformers

    import qkvcalc
    from tests.test_extract import true_float64

    text = transformers.Gemma4TextConfig(**CASES["gemma4_text"]["fields"]).to_dict()
    vision = transformers.Gemma4VisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, head_dim=8,
    ).to_dict()  # fmt: skip
    config = transformers.Gemma4Config(text_config=text, vision_config=vision, audio_config=None)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with true_float64():
            model = transformers.Gemma4ForConditionalGeneration(config).to(torch.float64).eval()
    finally:
        torch.set_default_dtype(default)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64) * 0.3)
    model.save_pretrained(tmp_path / "gemma4")
    attn = model.model.language_model.layers[5].self_attn
    ref = reference_at(model.model, ids(), 5, attn, attn.o_proj)
    problem = qkvcalc.extract(str(tmp_path / "gemma4"), layer=5, input_ids=ids(), dtype="float64")
    trace = qkvcalc.explain(**problem)
    assert "source" in problem
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
