"""qkvcalc extract on more architectures and on scaled RoPE (issue 22, items 1 and 2), against
transformers itself, as tests/test_extract.py does: a tiny float64 model built from a config
with random weights and eager attention, saved with save_pretrained, extracted from its folder
with `qkvcalc.extract(..., dtype="float64")` in this process (the loading path and the float64
lifting of a real run), then explained with `qkvcalc.explain`; every head's attention
probabilities and the output projection's own output must equal transformers' truly float64
forward (float32 islands lifted in the reference, tests/test_extract.true_float64) to 1e-8
relative, and x to 1e-12. The sequences are longer than every window and scaling threshold.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at, torch

N = 12  # tokens: past the windows and the scaling thresholds below
TOL = 1e-8
SMALL = {"vocab_size": 60, "max_position_embeddings": 64}
LLAMA = {
    **SMALL,
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "pad_token_id": 0,
}


def at(model, path: str, layer: int):
    """The module at a dotted path, `{}` standing for the layer's index."""
    found = model
    for part in path.format(layer).split("."):
        found = found[int(part)] if part.isdigit() else getattr(found, part)
    return found


def case(config, fields, model, layers, attn="model.layers.{}.self_attn", proj=None, **extra):
    return {
        "config": config,
        "fields": fields,
        "model": model,
        "layers": layers,
        "attn": attn,
        "proj": proj or attn + ".o_proj",
        "extra": extra,
    }


FALCON = {**SMALL, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}


def llama_rope(**rope) -> dict:
    return {**LLAMA, "rope_parameters": {"rope_theta": 500.0, **rope}}


# name: the tiny model, the layers to extract (one of each kind), where x and the output are
CASES = {
    # ---- scaled RoPE past its threshold (item 1) ----
    "llama-llama3": case(
        "LlamaConfig",
        llama_rope(
            rope_type="llama3",
            factor=4.0,
            low_freq_factor=1.0,
            high_freq_factor=4.0,
            original_max_position_embeddings=64,  # wavelengths 6, 30, 140, 664: all 3 rules
        ),
        "LlamaForCausalLM",
        [1],
    ),
    "llama-dynamic": case(
        "LlamaConfig",
        {**llama_rope(rope_type="dynamic", factor=2.0), "max_position_embeddings": 8},
        "LlamaForCausalLM",
        [1],
    ),
    "llama-longrope": case(
        "LlamaConfig",
        {
            **llama_rope(
                rope_type="longrope",
                short_factor=[1.0, 1.5, 2.0, 3.0],
                long_factor=[1.0, 2.0, 4.0, 8.0],
                original_max_position_embeddings=8,
            ),
            "max_position_embeddings": 32,
        },
        "LlamaForCausalLM",
        [1],
    ),
    "llama-linear": case(
        "LlamaConfig", llama_rope(rope_type="linear", factor=3.0), "LlamaForCausalLM", [1]
    ),
    "llama-yarn": case(
        "LlamaConfig",
        {
            **llama_rope(rope_type="yarn", factor=4.0, original_max_position_embeddings=8),
            "max_position_embeddings": 32,
        },
        "LlamaForCausalLM",
        [1],
    ),
    "gpt_neox-dynamic": case(
        "GPTNeoXConfig",
        {
            **SMALL,
            "max_position_embeddings": 8,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "rope_parameters": {
                "rope_type": "dynamic",
                "factor": 2.0,
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.5,
            },
        },
        "GPTNeoXForCausalLM",
        [1],
        attn="gpt_neox.layers.{}.attention",
        proj="gpt_neox.layers.{}.attention.dense",
    ),
    # ---- more architectures (item 2) ----
    "phi3": case(
        "Phi3Config",
        {
            **LLAMA,
            "sliding_window": 5,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.5},
        },
        "Phi3ForCausalLM",
        [1],
    ),
    "starcoder2": case(
        "Starcoder2Config",
        {**LLAMA, "sliding_window": 5, "use_bias": True},
        "Starcoder2ForCausalLM",
        [1],
    ),
    "mixtral": case(
        "MixtralConfig",
        {**LLAMA, "sliding_window": 5, "num_local_experts": 3, "num_experts_per_tok": 2},
        "MixtralForCausalLM",
        [1],
        _experts_implementation="eager",
    ),
    "qwen2_moe": case(
        "Qwen2MoeConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "moe_intermediate_size": 16,
            "shared_expert_intermediate_size": 16,
            "num_experts": 3,
            "num_experts_per_tok": 2,
            "use_sliding_window": True,
            "sliding_window": 4,
            "max_window_layers": 3,
        },
        "Qwen2MoeForCausalLM",
        [0, 1],
        _experts_implementation="eager",
    ),
    "smollm3": case(
        "SmolLM3Config", {**LLAMA, "no_rope_layer_interval": 2}, "SmolLM3ForCausalLM", [0, 1]
    ),
    "exaone4": case(
        "Exaone4Config",
        {**LLAMA, "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]},
        "Exaone4ForCausalLM",
        [0, 1],
    ),
    "gpt_oss": case(
        "GptOssConfig",
        {
            **LLAMA,
            "max_position_embeddings": 32,
            "intermediate_size": 16,
            "head_dim": 8,
            "num_local_experts": 3,
            "num_experts_per_tok": 2,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention"],
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 1000.0,
                "factor": 4.0,
                "original_max_position_embeddings": 8,
                "beta_fast": 32.0,
                "beta_slow": 1.0,
            },
        },
        "GptOssForCausalLM",
        [0, 1],
        _experts_implementation="eager",
    ),
    "cohere2": case(
        "Cohere2Config",
        {**LLAMA, "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"]},
        "Cohere2ForCausalLM",
        [0, 1],
    ),
    "gemma3": case(
        "Gemma3TextConfig",
        {
            **LLAMA,
            "head_dim": 8,
            "sliding_window": 4,
            "query_pre_attn_scalar": 12,
            "layer_types": ["sliding_attention", "full_attention"],
            "rope_parameters": {
                "sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 5000.0},
            },
        },
        "Gemma3ForCausalLM",
        [0, 1],
    ),
    "phi": case(
        "PhiConfig",
        {
            **LLAMA,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.5},
        },
        "PhiForCausalLM",
        [1],
        proj="model.layers.{}.self_attn.dense",
    ),
    "gemma3-multimodal": case(  # a Gemma 3 checkpoint with its vision tower: the text layers
        "Gemma3Config",
        {
            "text_config": {
                **LLAMA,
                "head_dim": 8,
                "sliding_window": 4,
                "query_pre_attn_scalar": 12,
                "layer_types": ["sliding_attention", "full_attention"],
            },
            "vision_config": {
                "hidden_size": 16,
                "intermediate_size": 24,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "image_size": 28,
                "patch_size": 14,
            },
            "mm_tokens_per_image": 4,
            "boi_token_index": 57,
            "eoi_token_index": 58,
            "image_token_index": 59,
        },
        "Gemma3ForConditionalGeneration",
        [0, 1],
        attn="model.language_model.layers.{}.self_attn",
    ),
    "falcon": case(  # multi-query, RoPE
        "FalconConfig",
        FALCON,
        "FalconForCausalLM",
        [1],
        attn="transformer.h.{}.self_attention",
        proj="transformer.h.{}.self_attention.dense",
    ),
    "falcon-grouped": case(  # the new decoder architecture: 2 K/V groups
        "FalconConfig",
        {**FALCON, "new_decoder_architecture": True, "num_kv_heads": 2},
        "FalconForCausalLM",
        [1],
        attn="transformer.h.{}.self_attention",
        proj="transformer.h.{}.self_attention.dense",
    ),
    "falcon-alibi": case(
        "FalconConfig",
        {**FALCON, "alibi": True, "multi_query": False, "bias": True},
        "FalconForCausalLM",
        [1],
        attn="transformer.h.{}.self_attention",
        proj="transformer.h.{}.self_attention.dense",
    ),
    "modernbert": case(
        "ModernBertConfig",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "local_attention": 6,  # each side: 3 positions
            "layer_types": ["full_attention", "sliding_attention"],
            "pad_token_id": 0,
        },
        "ModernBertModel",
        [0, 1],
        attn="layers.{}.attn",
        proj="layers.{}.attn.Wo",
    ),
    "gptj": case(
        "GPTJConfig",
        {
            "vocab_size": 60,
            "n_positions": 64,
            "n_embd": 32,
            "n_layer": 2,
            "n_head": 4,
            "rotary_dim": 4,
        },
        "GPTJForCausalLM",
        [1],
        attn="transformer.h.{}.attn",
        proj="transformer.h.{}.attn.out_proj",
    ),
    "stablelm": case(
        "StableLmConfig",
        {
            **LLAMA,
            "use_qkv_bias": True,
            "rope_parameters": {"rope_theta": 500.0, "partial_rotary_factor": 0.25},
        },
        "StableLmForCausalLM",
        [1],
    ),
    "cohere": case("CohereConfig", LLAMA, "CohereForCausalLM", [1]),
    "gpt_bigcode": case(
        "GPTBigCodeConfig",
        {"vocab_size": 60, "n_positions": 64, "n_embd": 32, "n_layer": 2, "n_head": 4},
        "GPTBigCodeForCausalLM",  # multi-query: one K/V head
        [1],
        attn="transformer.h.{}.attn",
        proj="transformer.h.{}.attn.c_proj",
    ),
    "gpt_bigcode-mha": case(
        "GPTBigCodeConfig",
        {
            "vocab_size": 60,
            "n_positions": 64,
            "n_embd": 32,
            "n_layer": 2,
            "n_head": 4,
            "multi_query": False,
        },
        "GPTBigCodeForCausalLM",
        [1],
        attn="transformer.h.{}.attn",
        proj="transformer.h.{}.attn.c_proj",
    ),
    "opt": case(
        "OPTConfig",
        {
            **SMALL,
            "hidden_size": 32,
            "ffn_dim": 48,
            "word_embed_proj_dim": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "pad_token_id": 0,
        },
        "OPTForCausalLM",
        [1],
        attn="model.decoder.layers.{}.self_attn",
        proj="model.decoder.layers.{}.self_attn.out_proj",
    ),
    "gpt_neo": case(
        "GPTNeoConfig",
        {
            **SMALL,
            "hidden_size": 32,
            "num_layers": 2,
            "num_heads": 4,
            "attention_types": [[["global", "local"], 1]],
            "window_size": 4,
        },
        "GPTNeoForCausalLM",
        [0, 1],  # global, local
        attn="transformer.h.{}.attn.attention",
        proj="transformer.h.{}.attn.attention.out_proj",
    ),
}


def ids() -> list[int]:
    return np.random.default_rng(3).integers(0, 60, N).tolist()


class Lab:
    """Each case built, saved and extracted once for the module, at each of its layers."""

    def __init__(self, root):
        self.root = root
        self.cache: dict[str, dict] = {}

    def get(self, name: str) -> dict:
        if name not in self.cache:
            self.cache[name] = self.run(name)
        return self.cache[name]

    def run(self, name: str) -> dict:
        import qkvcalc

        spec = CASES[name]
        model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
        folder = self.root / name
        model.save_pretrained(folder)
        out = {}
        for layer in spec["layers"]:
            ref = reference_at(
                model, ids(), layer, at(model, spec["attn"], layer), at(model, spec["proj"], layer)
            )
            problem = qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="float64")
            out[layer] = {"problem": problem, "reference": ref}
        return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return Lab(tmp_path_factory.mktemp("more-models"))


def relative(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


WHERE = [(name, layer) for name, spec in CASES.items() for layer in spec["layers"]]


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(lab, name, layer):
    import qkvcalc

    got = lab.get(name)[layer]
    problem, ref = got["problem"], got["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = attention(problem)  # the naive oracle
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)  # qkvcalc itself
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


@pytest.mark.parametrize("name", ["llama-dynamic", "llama-longrope", "gpt_neox-dynamic"])
def test_past_the_threshold_the_frequencies_are_the_scaled_ones(lab, name):
    """The dynamic cases are not vacuous: with the frequencies of a short sequence the problem
    gives other weights than transformers."""
    spec = CASES[name]
    got = lab.get(name)[spec["layers"][0]]
    problem, ref = got["problem"], got["reference"]
    params = spec["fields"]["rope_parameters"]
    rope = dict(problem["rope"])
    dims = rope.get("dims", 8)
    plain = params["rope_theta"] ** (-np.arange(0, dims, 2) / dims)
    short = plain / np.asarray(params.get("short_factor", 1.0))
    assert np.max(np.abs(rope["inv_freq"] - short)) > 1e-3
    weights, _ = attention({**problem, "rope": {**rope, "inv_freq": short}})
    assert relative(weights, ref["weights"]) > 1e-4
    assert torch is not None


def test_the_keys_each_layer_needs(lab):
    """What each layer's problem says, read from the model: the cases are not vacuous."""

    def p(name, layer=None):
        return lab.get(name)[layer if layer is not None else CASES[name]["layers"][0]]["problem"]

    assert p("phi3")["window"] == 5 and p("phi3")["rope"]["dims"] == 4
    assert p("starcoder2")["window"] == 5 and "bq" in p("starcoder2") and "bo" in p("starcoder2")
    assert p("mixtral")["window"] == 5 and p("mixtral")["kv_heads"] == 2
    # Qwen2-MoE: layer 0 slides, layer 1 (odd) does not, though config.json has sliding_window
    assert p("qwen2_moe", 0)["window"] == 4 and "window" not in p("qwen2_moe", 1)
    assert "rope" in p("smollm3", 0) and "rope" not in p("smollm3", 1)  # NoPE
    assert p("exaone4", 0)["window"] == 4 and "rope" in p("exaone4", 0)
    assert "window" not in p("exaone4", 1) and "rope" not in p("exaone4", 1)
    assert len(p("exaone4", 0)["q_norm"]) == 8
    assert len(p("gpt_oss", 0)["sinks"]) == 4 and p("gpt_oss", 0)["window"] == 4
    assert p("gpt_oss", 1)["rope"]["attention_factor"] > 1 and "window" not in p("gpt_oss", 1)
    assert p("cohere2", 0)["rope"]["style"] == "pairs" and "rope" not in p("cohere2", 1)
    local, full = p("gemma3", 0), p("gemma3", 1)
    assert local["window"] == 4 and local["rope"] == {"theta": 100.0, "style": "half"}
    assert "window" not in full and full["rope"]["theta"] == 5000.0
    assert np.allclose(full["rope"]["inv_freq"], 5000.0 ** (-np.arange(0, 8, 2) / 8) / 2)
    assert full["scale"] == 12**-0.5 and len(full["q_norm"]) == 8
    assert p("gemma3-multimodal", 0)["window"] == 4 and "window" not in p("gemma3-multimodal", 1)
    assert p("stablelm")["rope"]["dims"] == 2 and "bq" in p("stablelm")
    assert p("cohere")["rope"]["style"] == "pairs"
    assert p("phi")["rope"]["dims"] == 4 and "bo" in p("phi")
    assert p("falcon")["kv_heads"] == 1 and "rope" in p("falcon")
    assert p("falcon-grouped")["kv_heads"] == 2
    assert np.shape(p("falcon-alibi")["score_bias"]) == (4, N, N) and "rope" not in p(
        "falcon-alibi"
    )
    assert p("modernbert", 0)["mask"] == "none" and "window" not in p("modernbert", 1)
    band = np.abs(np.subtract.outer(range(N), range(N))) <= 3
    assert np.array_equal(p("modernbert", 1)["mask"], band)
    assert p("gptj")["rope"] == {"theta": 10000.0, "style": "pairs", "dims": 4}
    assert p("gpt_bigcode")["kv_heads"] == 1 and "kv_heads" not in p("gpt_bigcode-mha")
    assert p("opt")["mask"] == "causal" and "scale" not in p("opt") and "bo" in p("opt")
    assert p("gpt_neo", 0)["scale"] == 1.0 and "window" not in p("gpt_neo", 0)
    assert p("gpt_neo", 1)["window"] == 4


def test_the_command_line_writes_and_explains_them(lab, tmp_path):
    """Through the real command line, in one process: `qkvcalc extract … --dtype float64
    --output FILE`, then `qkvcalc explain FILE --format json`, for a layer of each new key
    shape (a 0/1 band mask, sinks, an explicit per-head bias, a layer without RoPE)."""
    import json

    from tests.inprocess import run_batch

    picked = [("modernbert", 1), ("gpt_oss", 0), ("falcon-alibi", 1), ("cohere2", 1)]
    jobs = []
    for name, layer in picked:
        lab.get(name)  # built and saved
        file = tmp_path / f"{name}-{layer}.json"
        argv = ["extract", str(lab.root / name), "--layer", str(layer), "--dtype", "float64"]
        jobs.append({"argv": [*argv, "--ids", " ".join(map(str, ids())), "-o", str(file)]})
        jobs.append({"argv": ["explain", str(file), "--format", "json", "--detail", "brief"]})
    results = run_batch([{**job, "stdin": None} for job in jobs], timeout=600)
    for (name, layer), written, explained in zip(picked, results[::2], results[1::2], strict=True):
        assert written.returncode == 0, (name, written.stderr)
        assert explained.returncode == 0, (name, explained.stderr)
        ref = lab.get(name)[layer]["reference"]
        doc = json.loads(explained.stdout)
        by_head = {s["head"]: s["value"] for s in doc["stages"] if s["id"] == "weights"}
        weights = [by_head[h] for h in sorted(by_head)]
        assert relative(weights, ref["weights"]) < TOL, name
        assert relative(doc["output"], ref["out"]) < TOL, name
