"""qkvcalc extract on more of transformers' model types (issue 37, item 4), against transformers
itself as tests/test_extract_new.py does (a tiny float64 model from a config, random weights,
eager attention, save_pretrained, extract in float64, then explain): the multi-head latent
attention of DeepSeek-V2 (its complex rotation: pairs; q_proj without a query latent, YaRN),
MiniCPM3 (rotate_half), GLM-4.7-Flash (glm4_moe_lite), Youtu-LLM and A.X K1 (rope_interleave
on and off); the LLaMA-like dots.llm1 (dots1: q/k norm per head, sliding layers, MoE) and
MiMo-V2-Flash (sinks and their own K/V heads on sliding layers, V scaled, d_v ≠ d_k) and
Beam (an output gate with a bias per head, NoPE full layers with a factor on q), LFM3's
attention layers (a gate of one logit per head), Cohere Compass's text model (M-RoPE on its
sliding layers, NoPE full ones); and
Persimmon (fused per-head QKV, LayerNorm on q and k, partial RoPE), XGLM (sinusoidal
positions), MPT (ALiBi, its slopes for 6 heads), DBRX (fused QKV, grouped-query) and CodeGen
(its qkv_proj in 4 shards, GPT-J's rotation). Every
head's attention probabilities and the output projection's own output equal transformers'
float64 forward to 1e-8 relative, x to
1e-12; each layer kind (dense and MoE, sliding and full)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at
from tests.test_extract_hybrid import reference as hybrid_reference
from tests.test_extract_mla import DEEPSEEK
from tests.test_extract_more import LLAMA, TOL, N, at, case, ids, relative
from tests.test_extract_new import EAGER, kept_float32, oracle

YARN = {
    "rope_type": "yarn",
    "rope_theta": 500.0,
    "factor": 4.0,
    "original_max_position_embeddings": 16,
    "mscale": 1.0,
    "mscale_all_dim": 0.7,  # an attention factor ≠ 1 and a scale ≠ 1/√d_k
    "beta_fast": 32,
    "beta_slow": 1,
}

CASES = {
    # DeepSeek-V2-Lite has no query latent (q_lora_rank None); the first layer dense
    "deepseek_v2": case(
        "DeepseekV2Config",
        {**DEEPSEEK, "q_lora_rank": None, "rope_parameters": YARN},
        "DeepseekV2ForCausalLM",
        [0, 1],
        **EAGER,
    ),
    "minicpm3": case("MiniCPM3Config", DEEPSEEK, "MiniCPM3ForCausalLM", [1]),
    "glm4_moe_lite": case("Glm4MoeLiteConfig", DEEPSEEK, "Glm4MoeLiteForCausalLM", [0, 1], **EAGER),
    "youtu": case("YoutuConfig", {**DEEPSEEK, "rope_interleave": False}, "YoutuForCausalLM", [1]),
    "axk1": case(
        "AXK1Config", {**DEEPSEEK, "rope_interleave": True}, "AXK1ForCausalLM", [0, 1], **EAGER
    ),
    "dots1": case(
        "Dots1Config",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 8,
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_shared_experts": 1,
            "n_group": 2,
            "topk_group": 1,
            "first_k_dense_replace": 1,
            "sliding_window": 4,
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
            "attention_bias": True,
        },
        "Dots1ForCausalLM",
        [0, 1, 2],  # dense and full, MoE and sliding, MoE and full
        **EAGER,
    ),
    # twice the K/V heads and sinks on its sliding layers, d_v ≠ d_k, V times 0.7, partial RoPE
    # with a base per layer type
    "mimo_v2_flash": case(
        "MiMoV2FlashConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 12,
            "v_head_dim": 6,
            "attention_value_scale": 0.7,
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_group": 2,
            "topk_group": 1,
            "sliding_window": 4,
            "layer_types": ["full_attention", "sliding_attention", "full_attention"],
            "attention_bias": True,
        },
        "MiMoV2FlashForCausalLM",
        [0, 1, 2],  # dense and full, MoE and sliding, MoE and full
        **EAGER,
    ),
    # Beam: q/k norm per head, the output gate σ(x·W_G + b_h) with one bias per head; RoPE and
    # the window on its sliding layers, none on its full ones (NoPE) and there a factor on q
    "beam": case(
        "BeamConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 8,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
            "mlp_layer_types": ["dense", "sparse", "sparse"],
            "moe_intermediate_size": 16,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "n_group": 2,
            "topk_group": 1,
        },
        "BeamForCausalLM",
        [0, 1, 2],  # sliding and dense, full (NoPE) and MoE, sliding after an MoE layer
        **EAGER,
    ),
    # LFM3: short-convolution layers 0, 1, 3; a full layer (2: proportional RoPE on half of
    # each head) and a sliding one (4); q/k norm per head, a gate of one logit per head
    "lfm3": case(
        "Lfm3Config",
        {**LLAMA, "num_hidden_layers": 5, "head_dim": 8, "sliding_window": 4},
        "Lfm3ForCausalLM",
        [2, 4],
    ),
    # Cohere Compass's text model: M-RoPE (every axis the text position) on its sliding layers,
    # none on its full ones (NoPE); its LayerNorm without bias
    "cohere_compass_text": case(
        "CohereCompassTextConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "sliding_window": 4,
            "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
            "rope_parameters": {
                "sliding_attention": {"rope_type": "default", "rope_theta": 500.0},
                "full_attention": None,
            },
        },
        "CohereCompassForCausalLM",
        [0, 1, 2],
    ),
    # Persimmon: NeoX's fused, per-head interleaved query_key_value, a LayerNorm with bias on q
    # and k, RoPE on half of each head
    "persimmon": case(
        "PersimmonConfig",
        {**LLAMA, "qk_layernorm": True},
        "PersimmonForCausalLM",
        [1],
        proj="model.layers.{}.self_attn.dense",
    ),
    # XGLM: OPT's attention, sinusoidal positions added before layer 0
    "xglm": case(
        "XGLMConfig",
        {
            "vocab_size": 60,
            "max_position_embeddings": 64,
            "d_model": 32,
            "ffn_dim": 48,
            "num_layers": 2,
            "attention_heads": 4,
            "pad_token_id": 1,
        },
        "XGLMForCausalLM",
        [1],
        proj="model.layers.{}.self_attn.out_proj",
    ),
    # MPT: ALiBi (6 heads: not a power of two), a fused Wqkv; its own softmax_scale
    "mpt": case(
        "MptConfig",
        {
            "vocab_size": 60,
            "max_seq_len": 64,
            "d_model": 24,
            "n_heads": 6,
            "n_layers": 2,
            "expansion_ratio": 2,
            "attn_config": {"softmax_scale": 0.3},
        },
        "MptForCausalLM",
        [1],
        attn="transformer.blocks.{}.attn",
        proj="transformer.blocks.{}.attn.out_proj",
    ),
    # DBRX: a fused Wqkv with 2 K/V heads, RoPE, experts; clip_qkv (transformers 5.23 needs one)
    # far above the numbers here
    "dbrx": case(
        "DbrxConfig",
        {
            "vocab_size": 60,
            "max_seq_len": 64,
            "d_model": 32,
            "n_heads": 4,
            "n_layers": 2,
            "attn_config": {"kv_n_heads": 2, "rope_theta": 500.0, "clip_qkv": 50.0},
            "ffn_config": {"ffn_hidden_size": 48, "moe_num_experts": 3, "moe_top_k": 2},
        },
        "DbrxForCausalLM",
        [1],
        attn="transformer.blocks.{}.norm_attn_norm.attn",
        proj="transformer.blocks.{}.norm_attn_norm.attn.out_proj",
    ),
    # CodeGen: GPT-J's pairs on rotary_dim = 4 of each head's 8, its qkv_proj in 4 shards
    "codegen": case(
        "CodeGenConfig",
        {
            "vocab_size": 60,
            "n_positions": 64,
            "n_ctx": 64,
            "n_embd": 32,
            "n_layer": 2,
            "n_head": 4,
            "rotary_dim": 4,
        },
        "CodeGenForCausalLM",
        [1],
        attn="transformer.h.{}.attn",
        proj="transformer.h.{}.attn.out_proj",
    ),
}


HYBRIDS = ("lfm3",)


# Routers transformers 5.25 builds in float32 whatever the model's dtype (Beam's gate: weight and
# e_score_correction_bias): rounded to float32 in the reference model too, so that it is the
# model its checkpoint loads as (in 5.23 they are float64, and the rounded numbers are the same)
FLOAT32_ROUTERS = {"beam": ["mlp.gate."]}


def rounded(model, names: list[str]) -> None:
    import torch

    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            if any(part in name for part in names) and tensor.is_floating_point():
                tensor.copy_(tensor.to(torch.float32).to(tensor.dtype))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved and extracted once, lazily (a -k selection builds its own only)."""
    import qkvcalc

    root = tmp_path_factory.mktemp("newcomers")
    out: dict = {}

    def get(name: str, layer: int) -> dict:
        if (name, layer) not in out:
            spec = CASES[name]
            model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
            kept_float32(model)
            rounded(model, FLOAT32_ROUTERS.get(name, []))
            model.save_pretrained(root / name)
            for each in spec["layers"]:
                if name in HYBRIDS:  # output_attentions holds the attention layers' maps only
                    ref = hybrid_reference(model, at(model, spec["attn"], each))
                else:
                    ref = reference_at(
                        model,
                        ids(),
                        each,
                        at(model, spec["attn"], each),
                        at(model, spec["proj"], each),
                    )
                path = str(root / name)
                problem = qkvcalc.extract(path, layer=each, input_ids=ids(), dtype="float64")
                out[(name, each)] = {"problem": problem, "reference": ref, "folder": path}
        return out[(name, layer)]

    return get


WHERE = [(name, layer) for name, spec in CASES.items() for layer in spec["layers"]]


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


MLA = {
    "deepseek_v2": "pairs",
    "minicpm3": "half",
    "glm4_moe_lite": "pairs",
    "youtu": "half",
    "axk1": "pairs",
}


@pytest.mark.parametrize(("name", "style"), MLA.items())
def test_the_mla_keys_and_rotation(lab, name, style):
    """The rotation of each MLA model type (DeepSeek-V2: view_as_complex, so pairs, whatever
    rope_interleave says; MiniCPM3: rotate_half; the others as rope_interleave says) on the
    qk_rope_head_dim columns; with the other style the weights are not transformers'."""
    layer = CASES[name]["layers"][-1]
    got = lab(name, layer)
    problem, ref = got["problem"], got["reference"]
    assert problem["rope"]["style"] == style and problem["rope"]["dims"] == 4
    assert "wq" not in problem and problem["mla"]["rope_dims"] == 4
    assert ("wq" in problem["mla"]) == (name == "deepseek_v2")  # no query latent there
    other = {**problem["rope"], "style": "half" if style == "pairs" else "pairs"}
    weights, _ = attention({**problem, "rope": other})
    assert relative(weights, ref["weights"]) > 1e-4


def test_deepseek_v2_under_yarn_has_its_attention_factor_and_scale(lab):
    problem = lab("deepseek_v2", 1)["problem"]
    assert problem["rope"]["attention_factor"] != 1.0 and "inv_freq" in problem["rope"]
    assert problem["scale"] != (6 + 4) ** -0.5  # mscale² under YaRN
    assert np.shape(problem["wo"]) == (4 * 5, 32)


def test_the_keys_of_dots1(lab):
    """dots.llm1: an RMSNorm of each head's q and k (head_dim numbers), the window on its
    sliding layers only, biases with attention_bias."""
    dense, sliding, full = (lab("dots1", i)["problem"] for i in (0, 1, 2))
    assert sliding["window"] == 4 and "window" not in dense and "window" not in full
    for problem in (dense, sliding, full):
        assert np.shape(problem["q_norm"]) == (8,) and "qk_norm" not in problem
        assert problem["kv_heads"] == 2 and all(k in problem for k in ("bq", "bk", "bv", "bo"))
    bare = {k: v for k, v in full.items() if k not in ("q_norm", "k_norm", "norm_eps")}
    assert relative(attention(bare)[0], lab("dots1", 2)["reference"]["weights"]) > 1e-4


def test_the_keys_of_mimo_v2_flash(lab):
    """MiMo-V2-Flash: its sliding layers have twice the config's K/V heads (here H, so no
    kv_heads) and a sink per head, the full ones neither; W_V and b_V carry attention_value_scale
    (without it the output is not transformers'), which the description says; d_v = 6, d_k = 12,
    RoPE on 4 dims with the layer type's base."""
    spec = CASES["mimo_v2_flash"]
    model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
    full, sliding = lab("mimo_v2_flash", 2)["problem"], lab("mimo_v2_flash", 1)["problem"]
    assert full["kv_heads"] == 2 and "sinks" not in full and "window" not in full
    assert "kv_heads" not in sliding and len(sliding["sinks"]) == 4 and sliding["window"] == 4
    assert np.shape(sliding["wv"]) == (32, 4 * 6) and np.shape(full["wv"]) == (32, 2 * 6)
    assert np.shape(full["wq"]) == (32, 4 * 12) and np.shape(full["wo"]) == (4 * 6, 32)
    v_proj = model.model.layers[2].self_attn.v_proj
    assert np.allclose(full["wv"], 0.7 * v_proj.weight.detach().numpy().T, rtol=1e-15, atol=0)
    assert np.allclose(full["bv"], 0.7 * v_proj.bias.detach().numpy(), rtol=1e-15, atol=0)
    assert "attention_value_scale (0.7)" in full["description"]
    assert full["rope"]["dims"] == 4 and full["rope"]["theta"] != sliding["rope"]["theta"]
    unscaled = {**full, "wv": full["wv"] / 0.7, "bv": full["bv"] / 0.7}
    assert relative(attention(unscaled)[1], lab("mimo_v2_flash", 2)["reference"]["out"]) > 1e-3


def test_a_plain_llama_has_no_note_of_a_scale_on_v(lab):
    problem = lab("dots1", 1)["problem"]
    assert "attention_value_scale" not in problem["description"]
    assert "the weights are the layer's own" in problem["description"]


def test_the_keys_of_persimmon_xglm_and_mpt(lab):
    persimmon = lab("persimmon", 1)["problem"]
    how = persimmon["qk_norm"]
    assert how["kind"] == "layer" and set(how["bias"]) == {"q", "k"}
    assert np.shape(persimmon["q_norm"]) == (8,) and np.shape(how["bias"]["k"]) == (8,)
    assert persimmon["rope"]["dims"] == 4 and persimmon["rope"]["style"] == "half"
    assert all(k in persimmon for k in ("bq", "bk", "bv", "bo")) and "kv_heads" not in persimmon
    xglm = lab("xglm", 1)["problem"]
    assert xglm["mask"] == "causal" and "rope" not in xglm and "scale" not in xglm
    mpt = lab("mpt", 1)["problem"]
    assert mpt["mask"] == "causal" and mpt["scale"] == 0.3 and mpt["heads"] == 6
    assert mpt["alibi"] == [2.0**-k for k in (2, 4, 6, 8, 1, 3)]  # MPT's order for 6 heads
    assert np.shape(mpt["wq"]) == (24, 24) and "bq" not in mpt
    bare = {k: v for k, v in mpt.items() if k != "alibi"}
    assert relative(attention(bare)[0], lab("mpt", 1)["reference"]["weights"]) > 1e-4


def test_the_keys_of_dbrx(lab):
    dbrx = lab("dbrx", 1)["problem"]
    assert dbrx["kv_heads"] == 2 and np.shape(dbrx["wk"]) == (32, 2 * 8)
    assert (
        dbrx["rope"]["style"] == "half" and "dims" not in dbrx["rope"] and dbrx["mask"] == "causal"
    )
    spec = CASES["dbrx"]  # the base the rotary module uses: rope_parameters (attn_config's unused)
    model = build_from(spec["config"], spec["fields"], spec["model"])
    assert dbrx["rope"]["theta"] == model.config.rope_parameters["rope_theta"]


def test_dbrx_with_a_clip_that_bites_is_refused(tmp_path):
    """DBRX's clip_qkv clamps q, k and v, which a problem cannot say: where the clamp changed a
    number, extract's own check refuses the layer."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    spec = CASES["dbrx"]
    fields = {**spec["fields"], "attn_config": {**spec["fields"]["attn_config"], "clip_qkv": 0.05}}
    model = build_from(spec["config"], fields, spec["model"])
    model.save_pretrained(tmp_path / "dbrx")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "dbrx"), layer=1, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.mismatch"


def test_the_keys_of_codegen(lab):
    """CodeGen: the pairs of GPT-J on rotary_dim; its qkv_proj read as 4 shards of [q | v | k]
    (read as [Q | K | V] one after another, the weights are not transformers')."""
    got = lab("codegen", 1)
    codegen = got["problem"]
    assert codegen["rope"] == {"theta": 10000.0, "style": "pairs", "dims": 4}
    assert np.shape(codegen["wq"]) == (32, 32) and "bq" not in codegen
    fused = np.concatenate([codegen["wq"], codegen["wv"], codegen["wk"]], axis=1)
    flat = fused.reshape(32, 3, 4, 8).transpose(0, 2, 1, 3).reshape(32, -1)  # the shards' order
    assert not np.array_equal(flat, fused)
    plain = {**codegen, "wq": flat[:, :32], "wk": flat[:, 32:64], "wv": flat[:, 64:]}
    assert relative(attention(plain)[0], got["reference"]["weights"]) > 1e-4


HEADS = [("mpt", 1), ("mimo_v2_flash", 1), ("persimmon", 1), ("codegen", 1), ("dbrx", 1)]


@pytest.mark.parametrize(("name", "layer"), HEADS, ids=[n for n, _ in HEADS])
def test_heads_splits_each_head(lab, name, layer):
    """qkvcalc heads on these model types: the run's maps are transformers' probabilities, and
    each head's own problem (its ALiBi slope, its sink, its share of the latents …) gives that
    head's map."""
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, split_head

    got = lab(name, layer)
    run = attention_maps(got["folder"], input_ids=ids(), dtype="float64", problems=True)
    weights = got["reference"]["weights"]
    assert relative(np.asarray(run.weights[layer]), weights) < TOL
    for h in (1, len(weights)):
        trace = qkvcalc.explain(**split_head(run.problems[layer], h))
        assert relative(np.squeeze(trace.weights), weights[h - 1]) < TOL


def test_heads_shows_an_mla_layer_and_does_not_cut_it(lab):
    """An MLA layer (DeepSeek-V2): heads' maps are transformers' probabilities; its problem
    cannot be cut to one head (the latents are every head's), as DeepSeek-V3's cannot."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.heads import attention_maps, split_head

    got = lab("deepseek_v2", 1)
    run = attention_maps(got["folder"], input_ids=ids(), dtype="float64", problems=True)
    assert relative(np.asarray(run.weights[1]), got["reference"]["weights"]) < TOL
    with pytest.raises(QkvcalcError) as err:
        split_head(run.problems[1], 1)
    assert err.value.msg.key == "heads.cannot_split"


def test_the_keys_of_beam(lab):
    """Beam: its gate's per-head bias repeated over each head's d_v logits; its full layer has
    no rope and the factor (1 + (i + 1)/2048)^0.1 on q (without it, or with the gate's bias
    left out, the output is not transformers'); its sliding layers rope and the window."""
    import torch

    spec = CASES["beam"]
    model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
    sliding, full = lab("beam", 0)["problem"], lab("beam", 1)["problem"]
    attn = model.model.layers[1].self_attn
    assert np.array_equal(full["bg"], np.repeat(attn.gate_bias.detach().numpy(), 8))
    assert np.shape(full["wg"]) == (32, 32) and np.shape(full["q_norm"]) == (8,)
    assert "rope" not in full and "window" not in full
    positions = torch.arange(N, dtype=torch.float64)
    factor = torch.exp(0.1 * torch.log1p((positions + 1) / 2048)).numpy()
    assert relative(np.asarray(full["attn_temperature"]), factor) < 1e-15
    assert sliding["window"] == 4 and "rope" in sliding and "attn_temperature" not in sliding
    ref = lab("beam", 1)["reference"]["out"]
    for left_out in ("attn_temperature", "bg"):
        bare = {k: v for k, v in full.items() if k != left_out}
        assert relative(qkvcalc_output(bare), ref) > 1e-6, left_out


def qkvcalc_output(problem: dict) -> np.ndarray:
    import qkvcalc

    return qkvcalc.explain(**problem).output


def test_the_keys_of_lfm3(lab, tmp_path):
    """LFM3: its one gate logit per head is W_G's column repeated over the head's d_v outputs;
    the full layer's proportional RoPE (zeros past half of the head), the sliding layer's window
    and base; a short-convolution layer is refused, naming the attention layers."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    spec = CASES["lfm3"]
    model = build_from(spec["config"], spec["fields"], spec["model"])
    full, sliding = lab("lfm3", 2)["problem"], lab("lfm3", 4)["problem"]
    g_proj = model.model.layers[2].self_attn.g_proj.weight.detach().numpy().T  # 32 × H
    assert np.array_equal(full["wg"], np.repeat(g_proj, 8, axis=1)) and "bg" not in full
    inv_freq = np.asarray(full["rope"]["inv_freq"])
    assert np.all(inv_freq[2:] == 0) and np.all(inv_freq[:2] > 0) and "window" not in full
    assert sliding["window"] == 4 and sliding["rope"]["theta"] == 10000.0
    bare = {k: v for k, v in full.items() if k != "wg"}
    assert relative(qkvcalc_output(bare), lab("lfm3", 2)["reference"]["out"]) > 1e-3
    model.save_pretrained(tmp_path / "lfm3")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "lfm3"), layer=3, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    assert "2, 4" in str(err.value)


def test_the_keys_of_cohere_compass(lab):
    """Cohere Compass: its M-RoPE with every axis at the text position is the plain rotation
    (rebuilt in float64 for the run) on its sliding layers; its full layers have none."""
    sliding, full = (
        lab("cohere_compass_text", 0)["problem"],
        lab("cohere_compass_text", 1)["problem"],
    )
    assert sliding["window"] == 4 and sliding["rope"] == {"theta": 500.0, "style": "half"}
    assert "rope" not in full and "window" not in full and full["kv_heads"] == 2
