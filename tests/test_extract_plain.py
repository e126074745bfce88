"""qkvcalc extract on the newcomers of issue 37, item 4 (transformers 5.23–5.25), against
transformers itself as tests/test_extract_newcomers.py does (a tiny float64 model from a
config, random weights, eager attention, save_pretrained, extract in float64, then explain):
Doge, whose dynamic mask is a bias of each key added to the scaled scores (score_bias), is read;
a run where its mask keeps only keep_window_size keys of a row is refused. Aria's text model
(LLaMA's attention, its experts before layer L) and Gemma 4 Unified's (Gemma 4's attention: the
norm on V, K = V on full layers, KV sharing) are read as their families are, and so are
OpenAI GPT, BioGPT, CTRL, GPT-NeoX Japanese, ModernBERT's decoder, GPT-SW3 (GPT-2 under
another model_type), a multimodal Llama 4 checkpoint's text layers, RecurrentGemma's
attention layers (its RG-LRU layers refused by kind) and MiniMax-M3's dense layers (its
block-sparse ones refused). Laguna is read with its softplus output gate (gate_act, g_proj per
head or per element) and its heads per layer.
JetMoE, Inkling and Inkling 2 are refused by name with the step no problem can say, before
anything loads, whether from a folder or from a model already loaded (BitNet, once refused
here, is read: tests/test_extract_bitnet.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at
from tests.test_extract_more import LLAMA, TOL, at, case, ids, relative
from tests.test_extract_new import EAGER, GEMMA, oracle

DOGE = {
    **LLAMA,
    "head_dim": 8,
    "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
}


def doge(**fields):
    """A tiny Doge, its A (one per K/V head) ten times the random 0.3·N(0, 1), so that its bias
    spreads over the keys well beyond the scores' rounding."""
    import torch

    model = build_from("DogeConfig", {**DOGE, **fields}, "DogeForCausalLM")
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.A.mul_(10.0)
    return model


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The Doge model saved once, each layer extracted once, with transformers' own numbers."""
    import qkvcalc

    root = tmp_path_factory.mktemp("plain")
    model = doge()
    model.save_pretrained(root / "doge")
    out: dict = {"model": model, "folder": str(root / "doge")}
    for layer in (0, 1):
        attn = at(model, "model.layers.{}.self_attn", layer)
        ref = reference_at(model, ids(), layer, attn, attn.o_proj)
        problem = qkvcalc.extract(out["folder"], layer=layer, input_ids=ids(), dtype="float64")
        out[layer] = {"problem": problem, "reference": ref}
    return out


@pytest.mark.parametrize("layer", [0, 1])
def test_the_extracted_doge_layer_equals_transformers(lab, layer):
    import qkvcalc

    problem, ref = lab[layer]["problem"], lab[layer]["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = oracle(problem)
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


def test_the_keys_of_doge(lab):
    """Doge's bias: exp(A_g·softplus(v_j·W_dt + b_dt)_g) for key j, the same in every row, head
    h taking K/V head h // 2; without it the weights are not transformers'. q/k norm per head,
    RoPE, grouped-query, causal."""
    import torch

    problem, ref = lab[1]["problem"], lab[1]["reference"]
    attn = lab["model"].model.layers[1].self_attn
    n = len(ids())
    bias = np.asarray(problem["score_bias"])
    assert bias.shape == (4, n, n) and problem["mask"] == "causal"
    assert problem["kv_heads"] == 2 and np.shape(problem["q_norm"]) == (8,)
    assert problem["rope"] == {"theta": 500.0, "style": "half"}
    x = torch.from_numpy(np.asarray(problem["x"]))
    with torch.no_grad():
        dt = x @ attn.v_proj.weight.T @ attn.dt_proj.weight.T  # attention_bias off: no biases
        want = torch.exp(attn.A * torch.nn.functional.softplus(dt)).T.numpy()  # [G, n]
    for h in range(4):
        assert relative(bias[h], np.broadcast_to(want[h // 2], (n, n))) < 1e-13
    assert np.ptp(want) > 0.2  # a bias that varies over the keys: the test can tell
    bare = {k: v for k, v in problem.items() if k != "score_bias"}
    assert relative(attention(bare)[0], ref["weights"]) > 1e-4


def test_heads_splits_each_doge_head(lab):
    """qkvcalc heads on Doge: the run's maps are transformers' probabilities, and each head's
    own problem (its share of the bias, its K/V head's) gives that head's map."""
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, split_head

    run = attention_maps(lab["folder"], input_ids=ids(), dtype="float64", problems=True)
    weights = lab[1]["reference"]["weights"]
    assert relative(np.asarray(run.weights[1]), weights) < TOL
    for h in (1, 4):
        trace = qkvcalc.explain(**split_head(run.problems[1], h))
        assert relative(np.squeeze(trace.weights), weights[h - 1]) < TOL


def test_doge_with_a_sliding_window(tmp_path):
    """Doge with sliding_window: the window read from the mask the layer is given, beside the
    bias, equals transformers."""
    import qkvcalc

    model = doge(sliding_window=4)
    model.save_pretrained(tmp_path / "doge")
    attn = model.model.layers[1].self_attn
    ref = reference_at(model, ids(), 1, attn, attn.o_proj)
    problem = qkvcalc.extract(str(tmp_path / "doge"), layer=1, input_ids=ids(), dtype="float64")
    assert problem["window"] == 4 and problem["mask"] == "causal"
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


def test_doge_past_its_keep_window_is_refused(tmp_path):
    """keep_window_size 5 with 12 tokens: rows past the fifth keep the 5 keys of largest bias
    per head, which no mask says: refused, naming the count and the limit."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    doge(keep_window_size=5).save_pretrained(tmp_path / "doge")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "doge"), layer=1, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.doge_window"
    assert err.value.msg.params["keys"] == len(ids()) and err.value.msg.params["keep"] == 5
    # as many tokens as the window keeps: nothing is dropped, and the layer is read
    problem = qkvcalc.extract(str(tmp_path / "doge"), layer=1, input_ids=ids()[:5], dtype="float64")
    assert np.shape(problem["score_bias"]) == (4, 5, 5)


TINY_GPT = {"vocab_size": 60, "n_embd": 32, "n_layer": 2, "n_head": 4}
# More model types read by an existing family: one tiny model each, each kind of layer
CASES = {
    "aria_text": case(
        "AriaTextConfig",
        {**LLAMA, "head_dim": 8, "moe_num_experts": 4, "moe_topk": 2, "moe_num_shared_experts": 1},
        "AriaTextForCausalLM",
        [0, 1],
        **EAGER,
    ),
    # layers 0 and 1 sliding and full (head_dim 16, one K/V head, K = V), 4 and 5 reuse the K
    # and V of layers 2 and 3
    "gemma4_unified_text": case(
        "Gemma4UnifiedTextConfig",
        {**GEMMA, "global_head_dim": 16, "num_global_key_value_heads": 1, "attention_k_eq_v": True},
        "Gemma4UnifiedForCausalLM",
        [0, 1, 4, 5],
    ),
    # OpenAI GPT (GPT-1): GPT-2's fused c_attn, post-norm (x is the block's input), −10⁴ where
    # its causal table hides a key
    "openai-gpt": case(
        "OpenAIGPTConfig",
        {**TINY_GPT, "n_positions": 64},
        "OpenAIGPTLMHeadModel",
        [0, 1],
        attn="transformer.h.{}.attn",
        proj="transformer.h.{}.attn.c_proj",
    ),
    # BioGPT: XGLM's attention (biases, after self_attn_layer_norm), learned positions
    "biogpt": case(
        "BioGptConfig",
        {**LLAMA, "num_key_value_heads": 4, "pad_token_id": 1},
        "BioGptForCausalLM",
        [1],
        attn="biogpt.layers.{}.self_attn",
        proj="biogpt.layers.{}.self_attn.out_proj",
    ),
    # CTRL: Wq, Wk, Wv, dense after layernorm1; its sinusoidal table (float64 in the run)
    "ctrl": case(
        "CTRLConfig",
        {**TINY_GPT, "n_positions": 64, "dff": 48},
        "CTRLLMHeadModel",
        [1],
        attn="transformer.h.{}.multi_head_attention",
        proj="transformer.h.{}.multi_head_attention.dense",
    ),
    # GPT-NeoX Japanese: NeoX's fused per-head query_key_value, RoPE on half of each head; the
    # last layer's dense_bias is added outside its attention
    "gpt_neox_japanese": case(
        "GPTNeoXJapaneseConfig",
        {
            **LLAMA,
            "num_key_value_heads": 4,
            "intermediate_multiple_size": 2,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 500.0,
                "partial_rotary_factor": 0.5,
            },
        },
        "GPTNeoXJapaneseForCausalLM",
        [1],
        attn="gpt_neox_japanese.layers.{}.attention",
        proj="gpt_neox_japanese.layers.{}.attention.dense",
    ),
    # ModernBERT's decoder: q/k/v_proj and Wo with biases; a full layer (RoPE base 160000) and a
    # sliding one (the last 4 positions, base 10000)
    "modernbert-decoder": case(
        "ModernBertDecoderConfig",
        {
            **LLAMA,
            "num_key_value_heads": 4,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "cls_token_id": 3,
            "sep_token_id": 4,
            "local_attention": 8,
            "layer_types": ["full_attention", "sliding_attention"],
            "attention_bias": True,
        },
        "ModernBertDecoderForCausalLM",
        [0, 1],
        attn="model.layers.{}.attn",
        proj="model.layers.{}.attn.Wo",
    ),
    # MiniMax-M3's text model: Gemma-style q/k norm (1 + w) per head; layer 1 block-sparse
    "minimax_m3_vl_text": case(
        "MiniMaxM3VLTextConfig",
        {
            **LLAMA,
            "num_hidden_layers": 3,
            "head_dim": 8,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
            "dense_intermediate_size": 48,
            "shared_intermediate_size": 16,
            "layer_types": ["full_attention", "minimax_m3_sparse", "full_attention"],
            "mlp_layer_types": ["dense", "sparse", "sparse"],
            "index_n_heads": 2,
            "index_head_dim": 8,
            "index_block_size": 4,
            "index_topk_blocks": 2,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        },
        "MiniMaxM3VLForCausalLM",
        [0, 2],
        **EAGER,
    ),
}
WHERE = [(name, layer) for name, spec in CASES.items() for layer in spec["layers"]]


@pytest.fixture(scope="module")
def more(tmp_path_factory):
    """Each case built, saved and extracted once, lazily."""
    import qkvcalc

    root = tmp_path_factory.mktemp("more")
    out: dict = {}

    def get(name: str, layer: int) -> dict:
        if (name, layer) not in out:
            spec = CASES[name]
            model = build_from(spec["config"], spec["fields"], spec["model"], **spec["extra"])
            model.save_pretrained(root / name)
            for each in spec["layers"]:
                attn, proj = at(model, spec["attn"], each), at(model, spec["proj"], each)
                ref = reference_at(model, ids(), each, attn, proj)
                problem = qkvcalc.extract(
                    str(root / name), layer=each, input_ids=ids(), dtype="float64"
                )
                out[(name, each)] = {"problem": problem, "reference": ref}
        return out[(name, layer)]

    get.root = root  # type: ignore[attr-defined]
    return get


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(more, name, layer):
    import qkvcalc

    got = more(name, layer)
    problem, ref = got["problem"], got["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


def test_the_keys_of_gpt_neox_japanese(more):
    """Its last layer's dense_bias (random here) is not in the problem: it is added after dense,
    with the residual; RoPE on 4 of each head's 8 dimensions."""
    problem = more("gpt_neox_japanese", 1)["problem"]
    assert problem["rope"] == {"theta": 500.0, "style": "half", "dims": 4}
    assert "bo" not in problem and "bq" not in problem and problem["mask"] == "causal"


def test_the_keys_of_the_modernbert_decoder(more):
    full, sliding = (more("modernbert-decoder", i)["problem"] for i in (0, 1))
    assert full["mask"] == sliding["mask"] == "causal" and "window" not in full
    assert sliding["window"] == 4 and sliding["rope"]["theta"] != full["rope"]["theta"]
    assert all(k in full for k in ("bq", "bk", "bv", "bo"))


def test_the_keys_of_gemma4_unified(more):
    """Gemma 4 Unified's text layers carry Gemma 4's keys: scale 1, the norm on V, the full
    layer's one K/V head with K = V, a shared layer's K and V from the earlier layer's x."""
    sliding, full, shared = (more("gemma4_unified_text", i)["problem"] for i in (0, 1, 5))
    assert sliding["window"] == 4 and "window" not in full and full["scale"] == 1.0
    assert full["kv_heads"] == 1 and np.array_equal(full["wk"], full["wv"])
    assert "v_norm" in sliding and "source" in shared and "source" not in full


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("openai-gpt", "extract.too_many_positions"),
        ("biogpt", "extract.too_many_positions"),
        ("ctrl", "extract.too_many_table_positions"),
    ],
)
def test_more_tokens_than_positions_are_refused(tmp_path, name, key):
    """A run past the 64 rows of OpenAI GPT's or BioGPT's learned positions or of CTRL's
    sinusoidal table is refused before the model runs (it would index past the table)."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    spec = CASES[name]
    build_from(spec["config"], spec["fields"], spec["model"]).save_pretrained(tmp_path / name)
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / name), layer=1, input_ids=[1] * 65, dtype="float64")
    assert err.value.msg.key == key and err.value.msg.params["positions"] == 64


def test_a_gpt_sw3_checkpoint_is_read_as_gpt2(tmp_path):
    """GPT-SW3's config.json says "gpt-sw3", which transformers loads as GPT-2: read as GPT-2's
    layers, and the description names GPT-SW3."""
    import json

    import qkvcalc

    model = build_from("GPT2Config", {**TINY_GPT, "n_positions": 64}, "GPT2LMHeadModel")
    model.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "gpt-sw3"}))
    attn = model.transformer.h[1].attn
    ref = reference_at(model, ids(), 1, attn, attn.c_proj)
    problem = qkvcalc.extract(str(tmp_path), layer=1, input_ids=ids(), dtype="float64")
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    assert "(GPT-SW3)" in problem["description"]


def test_a_llama4_checkpoint_with_vision_gives_its_text_layers(tmp_path):
    """A multimodal llama4 checkpoint (a tiny vision tower beside the text model, whose
    language_model is a Llama4ForCausalLM): extract finds its text layers, a chunked RoPE layer
    and a NoPE layer with its temperature."""
    import torch
    import transformers

    import qkvcalc
    from tests.test_extract import true_float64
    from tests.test_extract_norms import CASES as NORMS

    text = transformers.Llama4TextConfig(**NORMS["llama4"]["fields"]).to_dict()
    vision = transformers.Llama4VisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
        image_size=28, patch_size=14, vision_output_dim=16, projector_input_dim=16,
        projector_output_dim=16,
    ).to_dict()  # fmt: skip
    config = transformers.Llama4Config(text_config=text, vision_config=vision)
    config._attn_implementation = "eager"
    config.text_config._experts_implementation = "eager"
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with true_float64():
            model = transformers.Llama4ForConditionalGeneration(config).to(torch.float64).eval()
    finally:
        torch.set_default_dtype(default)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64) * 0.3)
    model.save_pretrained(tmp_path / "llama4")
    for layer, key in ((0, "chunk_size"), (1, "attn_temperature")):
        attn = model.language_model.model.layers[layer].self_attn
        ref = reference_at(model, ids(), layer, attn, attn.o_proj)
        folder = str(tmp_path / "llama4")
        problem = qkvcalc.extract(folder, layer=layer, input_ids=ids(), dtype="float64")
        trace = qkvcalc.explain(**problem)
        assert key in problem and "(Llama 4)" in problem["description"]
        assert relative(trace.weights, ref["weights"]) < TOL
        assert relative(trace.output, ref["out"]) < TOL


def test_recurrent_gemma_reads_its_attention_layers(tmp_path, monkeypatch):
    """RecurrentGemma: its attention layer (a window of 4, RoPE on half of each head, its rotary
    module its own, o_proj with a bias) equals transformers' forward, made truly float64 (its
    RG-LRU accumulates in float32 by a default argument, which extract's float64 run lifts);
    an RG-LRU layer is refused, naming the attention layers."""
    import torch
    from transformers.models.recurrent_gemma import modeling_recurrent_gemma as rg

    import qkvcalc
    from qkvcalc.errors import QkvcalcError
    from tests.test_extract_hybrid import reference as hybrid_reference

    fields = {
        **LLAMA,
        "num_hidden_layers": 3,
        "head_dim": 8,
        "lru_width": 32,
        "attention_window_size": 4,
        "block_types": ["recurrent", "attention"],
        "partial_rotary_factor": 0.5,
    }
    model = build_from("RecurrentGemmaConfig", fields, "RecurrentGemmaForCausalLM")
    model.save_pretrained(tmp_path / "rg")
    monkeypatch.setattr(rg.RecurrentGemmaRglru._rnn_scan, "__defaults__", (torch.float64,))
    ref = hybrid_reference(model, model.model.layers[1].temporal_block)
    problem = qkvcalc.extract(str(tmp_path / "rg"), layer=1, input_ids=ids(), dtype="float64")
    assert relative(problem["x"], ref["x"]) < 1e-12
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    assert problem["window"] == 4 and problem["rope"]["dims"] == 4 and "bo" in problem
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "rg"), layer=2, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    assert "RG-LRU" in str(err.value) and str(err.value).endswith("are 1")


def test_a_gemma4_unified_checkpoint_gives_its_text_layers(tmp_path):
    """A gemma4_unified checkpoint (Gemma4UnifiedForConditionalGeneration, built here without its
    optional vision and audio towers): extract finds the text layers in its language_model, a
    KV-shared one too."""
    import torch
    import transformers

    import qkvcalc
    from tests.test_extract import true_float64

    text = transformers.Gemma4UnifiedTextConfig(**CASES["gemma4_unified_text"]["fields"])
    config = transformers.Gemma4UnifiedConfig(
        text_config=text.to_dict(), vision_config=None, audio_config=None
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with true_float64():
            model = transformers.Gemma4UnifiedForConditionalGeneration(config)
            model = model.to(torch.float64).eval()
    finally:
        torch.set_default_dtype(default)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(torch.randn(param.shape, generator=generator, dtype=torch.float64) * 0.3)
    model.save_pretrained(tmp_path / "g4u")
    attn = model.model.language_model.layers[5].self_attn
    ref = reference_at(model.model, ids(), 5, attn, attn.o_proj)
    problem = qkvcalc.extract(str(tmp_path / "g4u"), layer=5, input_ids=ids(), dtype="float64")
    trace = qkvcalc.explain(**problem)
    assert "source" in problem and "(Gemma 4 Unified)" in problem["description"]
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


def test_a_block_sparse_minimax_m3_layer_is_refused(more):
    """MiniMax-M3's minimax_m3_sparse layer (its indexer's per-head block selection) is refused
    before the model runs, naming the layers extract reads; its q/k norm is read as 1 + w."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    full = more("minimax_m3_vl_text", 2)["problem"]
    assert np.shape(full["q_norm"]) == (8,) and full["kv_heads"] == 2
    folder = str(more.root / "minimax_m3_vl_text")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(folder, layer=1, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.block_sparse"
    assert str(err.value).endswith("are 0, 2")
    from qkvcalc.extract.heads import attention_maps

    run = attention_maps(folder, input_ids=ids(), dtype="float64")  # the maps: every layer
    assert len(run.weights) == 3
    with pytest.raises(QkvcalcError) as err:  # the page's problems: not the sparse layer's
        attention_maps(folder, input_ids=ids(), dtype="float64", problems=True)
    assert err.value.msg.key == "extract.block_sparse"


LAGUNA = {
    **LLAMA,
    "num_hidden_layers": 3,
    "head_dim": 8,
    "num_attention_heads_per_layer": [4, 2, 6],  # each layer its own H; 2 K/V heads in all
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    "sliding_window": 4,
    "mlp_layer_types": ["dense", "sparse", "sparse"],
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
}
GATINGS = {"per-head": True, "per-element": "per-element"}


@pytest.fixture(scope="module")
def laguna(tmp_path_factory):
    """A tiny Laguna of each gating (its g_proj one logit per head, or one per head and
    column), saved once, each layer extracted once, with transformers' own numbers."""
    import qkvcalc

    root = tmp_path_factory.mktemp("laguna")
    out: dict = {}
    for name, gating in GATINGS.items():
        model = build_from(
            "LagunaConfig",
            {**LAGUNA, "gating": gating},
            "LagunaForCausalLM",
            _experts_implementation="eager",  # the grouped experts kernel has no float64
        )
        folder = str(root / name)
        model.save_pretrained(folder)
        for layer in range(3):
            attn = at(model, "model.layers.{}.self_attn", layer)
            ref = reference_at(model, ids(), layer, attn, attn.o_proj)
            problem = qkvcalc.extract(folder, layer=layer, input_ids=ids(), dtype="float64")
            out[name, layer] = {"problem": problem, "reference": ref, "attn": attn}
    return out


@pytest.mark.parametrize("gating", sorted(GATINGS))
@pytest.mark.parametrize("layer", [0, 1, 2])
def test_the_extracted_laguna_layer_equals_transformers(laguna, gating, layer):
    """Each layer kind (sliding with its window and full RoPE, full with its partial RoPE of
    another base) of each gating: explain's weights and output are the module's to 1e-8."""
    import qkvcalc

    got = laguna[gating, layer]
    problem, ref = got["problem"], got["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    # the same layer with the sigmoid gate is not transformers' (the key is what makes it so)
    sigmoid = {k: v for k, v in problem.items() if k != "gate_act"}
    assert relative(qkvcalc.explain(**sigmoid).output, ref["out"]) > 1e-2


def test_the_keys_of_laguna(laguna):
    """Heads per layer (4, 2, 6 over 2 K/V heads), the softplus gate, W_G per head as g_proj's
    column repeated over the head's 8 outputs (per element: g_proj itself), the window and RoPE
    of each layer type, the q/k norm per head."""
    for layer, heads in enumerate((4, 2, 6)):
        for gating in GATINGS:
            problem, attn = laguna[gating, layer]["problem"], laguna[gating, layer]["attn"]
            assert problem["heads"] == heads and problem.get("kv_heads", heads) == 2
            assert problem["gate_act"] == "softplus"
            assert np.shape(problem["wg"]) == (32, heads * 8) and "bg" not in problem
            g_proj = attn.g_proj.weight.detach().numpy().T
            want = np.repeat(g_proj, 8, axis=1) if gating == "per-head" else g_proj
            assert np.shape(g_proj)[1] == (heads if gating == "per-head" else heads * 8)
            assert np.array_equal(problem["wg"], want)
            assert np.shape(problem["q_norm"]) == (8,) and np.shape(problem["k_norm"]) == (8,)
    sliding, full = laguna["per-head", 0]["problem"], laguna["per-head", 1]["problem"]
    assert sliding["window"] == 4 and "window" not in full
    assert sliding["rope"] == {"theta": 10000.0, "style": "half"}
    assert full["rope"] == {"theta": 500000.0, "style": "half", "dims": 4}


def test_a_laguna_head_is_split_with_its_gate(laguna):
    """qkvcalc heads' one-head problem keeps gate_act and its head's columns of W_G."""
    import qkvcalc
    from qkvcalc.extract.heads import split_head

    problem = laguna["per-element", 2]["problem"]
    one = split_head(problem, 5)
    assert one["gate_act"] == "softplus" and np.shape(one["wg"]) == (32, 8)
    whole = qkvcalc.explain(**problem)
    part = qkvcalc.explain(**one)
    assert relative(part.stage("gated", 1).value, whole.stage("gated", 5).value) < 1e-12


# model_type → the config class transformers builds it from
REFUSED = {
    "jetmoe": "JetMoeConfig",
    "inkling_text": "InklingTextConfig",
    "inkling_mm_model": "InklingConfig",
    "inkling2_text": "Inkling2TextConfig",
    "inkling2": "Inkling2Config",
}


@pytest.mark.parametrize(("model_type", "config"), REFUSED.items())
def test_a_model_type_no_problem_can_say_is_refused_by_name(tmp_path, model_type, config):
    """The folder's config (as transformers saves it) is refused before any weight is read,
    with the architecture's name and the reason, in English and Korean."""
    import transformers

    import qkvcalc
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.refused import REFUSED as NAMES

    made = getattr(transformers, config)()
    assert made.model_type == model_type
    made.save_pretrained(tmp_path)  # config.json only: no weights to load
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path), layer=0, input_ids=[1, 2])
    assert err.value.msg.key == "extract.not_expressible"
    assert err.value.msg.params["reason"].key == NAMES[model_type][1]
    said = str(err.value)
    assert NAMES[model_type][0] in said and "does not read" in said
    assert "k_sconv" in said if "inkling" in model_type else True


def test_heads_counts_each_laguna_layer_by_its_own_heads(tmp_path, monkeypatch):
    """Laguna's layers here have 2, 2 and 6 query heads against a config's num_attention_heads
    of 2: `qkvcalc heads` counts 10 heads in all (not 3 × 2 = 6), refuses by that count before
    the run, and draws each layer's own heads."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract import heads

    model = build_from(
        "LagunaConfig",
        {**LAGUNA, "num_attention_heads": 2, "num_attention_heads_per_layer": [2, 2, 6]},
        "LagunaForCausalLM",
        _experts_implementation="eager",
    )
    folder = str(tmp_path / "laguna")
    model.save_pretrained(folder)
    n = len(ids())
    monkeypatch.setattr(heads, "MAX_WEIGHTS", 10 * n * n - 1)
    with pytest.raises(QkvcalcError) as err:
        heads.attention_maps(folder, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "heads.too_many_weights_per_layer"
    assert f"({10} heads in all, each layer with its own count, × {n}²)" in str(err.value)
    monkeypatch.setattr(heads, "MAX_WEIGHTS", 10 * n * n)
    run = heads.attention_maps(folder, input_ids=ids(), dtype="float64")
    assert [w.shape[0] for w in run.weights] == [2, 2, 6]
