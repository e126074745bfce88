"""qkvcalc extract and qkvcalc heads on hybrids (issue 37, item 3): Qwen3-Next, Qwen3.5 (its text
model and its multimodal checkpoint) and Qwen3.5-MoE, whose full-attention layers sit between
Gated DeltaNet (linear-attention) layers. A full-attention layer's q_proj holds each head's query
and its output gate side by side ([q_h | gate_h]), the gate multiplies the head's output by
σ(gate) before o_proj, the q/k norms multiply by (1 + w), and only part of each head rotates.

Against transformers itself, as tests/test_extract_new.py does (a tiny float64 model from a
config, random weights, eager attention, save_pretrained, extract in float64, then explain):
x to 1e-12, every head's attention probabilities and the output projection's own output to 1e-8
relative. transformers' output_attentions returns the attention layers' maps only, so the
reference takes the weights from the attention module's own output. A Mamba layer is refused
with one message naming its kind and the attention layers (the Gated DeltaNet layers are read:
tests/test_extract_gdn.py); the hybrids extract does not read are
refused as a whole before anything loads; heads shows the attention layers and says where the
others are."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.test_extract import build_from, true_float64
from tests.test_extract_more import LLAMA, TOL, at, ids, relative
from tests.test_extract_new import oracle, qkvcalc_output

torch = pytest.importorskip("torch")

LINEAR = {
    "head_dim": 8,
    "layer_types": ["linear_attention", "full_attention"],
    "linear_num_value_heads": 2,
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    "linear_conv_kernel_dim": 2,
    # half of each head rotates: two frequencies, one of them not a power of two
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5,
    },
}
MOE = {
    "num_experts": 3,
    "num_experts_per_tok": 2,
    "moe_intermediate_size": 16,
    "shared_expert_intermediate_size": 16,
}
TEXT = "model.layers.{}.self_attn"
EAGER = {"_experts_implementation": "eager"}

VISION = {  # a vision tower as small as it goes: extract runs the text layers only
    "depth": 1,
    "hidden_size": 16,
    "intermediate_size": 16,
    "num_heads": 2,
    "out_hidden_size": 32,
    "patch_size": 2,
    "num_position_embeddings": 16,
}
CASES = {
    "qwen3_next": ("Qwen3NextConfig", {**LLAMA, **LINEAR, **MOE}, "Qwen3NextForCausalLM", TEXT),
    "qwen3_next-bias": (
        "Qwen3NextConfig",
        {**LLAMA, **LINEAR, **MOE, "attention_bias": True},
        "Qwen3NextForCausalLM",
        TEXT,
    ),
    "qwen3_5_text": ("Qwen3_5TextConfig", {**LLAMA, **LINEAR}, "Qwen3_5ForCausalLM", TEXT),
    "qwen3_5": (
        "Qwen3_5Config",
        {
            "text_config": {**LLAMA, **LINEAR},
            "vision_config": VISION,
        },
        "Qwen3_5ForConditionalGeneration",
        "model.language_model.layers.{}.self_attn",
    ),
    "qwen3_5_moe": (
        "Qwen3_5MoeConfig",
        {"text_config": {**LLAMA, **LINEAR, **MOE}, "vision_config": VISION},
        "Qwen3_5MoeForConditionalGeneration",
        "model.language_model.layers.{}.self_attn",
    ),
    "qwen3_5_moe_text": (
        "Qwen3_5MoeTextConfig",
        {**LLAMA, **LINEAR, **MOE},
        "Qwen3_5MoeForCausalLM",
        TEXT,
    ),
}
QWEN = list(CASES)
MAMBA = {  # Mamba 2 (Bamba, Granite 4, Falcon-H1), tiny: 4 heads of 16 = 2 × hidden
    "mamba_n_heads": 4,
    "mamba_d_head": 16,
    "mamba_n_groups": 1,
    "mamba_d_state": 8,
    "mamba_chunk_size": 4,
}
GRANITE = {
    **LLAMA,
    **MAMBA,
    "layer_types": ["mamba", "attention"],
    "num_local_experts": 2,
    "num_experts_per_tok": 1,
    "attention_multiplier": 0.4,
}
OLMO = {
    **LLAMA,
    "layer_types": ["linear_attention", "full_attention"],
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
}
# the hybrids of state-space layers (and LFM2's short convolutions, Nemotron-H's MLP blocks)
CASES.update(
    {
        "bamba": (
            "BambaConfig",
            {**LLAMA, **MAMBA, "attn_layer_indices": [1]},
            "BambaForCausalLM",
            TEXT,
        ),
        "jamba": (
            "JambaConfig",
            {
                **LLAMA,
                "attn_layer_period": 2,
                "attn_layer_offset": 1,
                "num_experts": 2,
                "expert_layer_period": 2,
                "expert_layer_offset": 1,
                "mamba_d_state": 8,
                "mamba_dt_rank": 4,
                "use_mamba_kernels": False,
            },
            "JambaForCausalLM",
            TEXT,
        ),
        "granitemoehybrid": (
            "GraniteMoeHybridConfig",
            {**GRANITE, "position_embedding_type": "rope"},
            "GraniteMoeHybridForCausalLM",
            TEXT,
        ),
        "granitemoehybrid-nope": (
            "GraniteMoeHybridConfig",
            GRANITE,
            "GraniteMoeHybridForCausalLM",
            TEXT,
        ),
        "nemotron_h": (
            "NemotronHConfig",
            {
                **LLAMA,
                "num_hidden_layers": 3,
                "layers_block_type": ["linear_attention", "full_attention", "mlp"],
                "head_dim": 8,
                "mamba_num_heads": 4,
                "mamba_head_dim": 16,
                "n_groups": 1,
                "ssm_state_size": 8,
                "chunk_size": 4,
            },
            "NemotronHForCausalLM",
            "model.layers.{}.mixer",
        ),
        "lfm2": (
            "Lfm2Config",
            {**LLAMA, "layer_types": ["conv", "full_attention"]},
            "Lfm2ForCausalLM",
            TEXT,
        ),
        "lfm2_moe": (
            "Lfm2MoeConfig",
            {
                **LLAMA,
                "layer_types": ["conv", "full_attention"],
                "num_dense_layers": 1,
                "num_experts": 3,
                "num_experts_per_tok": 2,
                "moe_intermediate_size": 16,
            },
            "Lfm2MoeForCausalLM",
            TEXT,
        ),
        "olmo_hybrid": (  # OLMo 3's attention (q/k norms over the projection, norms after)
            "OlmoHybridConfig",
            {**OLMO, "rope_parameters": {"rope_type": "default", "rope_theta": 500.0}},
            "OlmoHybridForCausalLM",
            TEXT,
        ),
        "olmo_hybrid-nope": (  # its released checkpoints: no rope_theta, no rotation
            "OlmoHybridConfig",
            OLMO,
            "OlmoHybridForCausalLM",
            TEXT,
        ),
        "falcon_h1": (  # attention and Mamba side by side in every layer
            "FalconH1Config",
            {
                **LLAMA,
                **MAMBA,
                "head_dim": 8,
                "mamba_d_ssm": 64,
                "key_multiplier": 0.7,
                "attention_in_multiplier": 1.3,
            },
            "FalconH1ForCausalLM",
            TEXT,
        ),
    }
)
LAYER = 1  # the attention layer, after a layer of the other kind


# Parameters the modeling code makes float32 whatever the model's dtype, which a checkpoint
# therefore loads as float32 (OLMo-Hybrid's A_log: nn.Parameter(torch.log(A)) of a float32 A):
# rounded in the reference model too, so that it is the model its checkpoint loads as
# config attributes set after the config is built (its checks would fill rope_theta in)
EXTRA = {"olmo_hybrid-nope": {"rope_parameters": {"rope_type": "default", "rope_theta": None}}}
BUILT_FLOAT32 = {"olmo_hybrid": "linear_attn.A_log"}


def as_loaded(model, name: str) -> None:
    part = BUILT_FLOAT32.get(name.split("-")[0])
    with torch.no_grad():
        for key, tensor in model.named_parameters():
            if part is not None and part in key:
                tensor.copy_(tensor.to(torch.float32).to(tensor.dtype))


def projection(module):
    return getattr(module, "o_proj", None) or module.out_proj  # LFM2: out_proj


def reference(model, attention_module) -> dict:
    """transformers' own eager forward, truly float64: the attention module's input x, its
    attention probabilities [H, n, n] (its own output's second part) and its o_proj's output."""
    seen: dict = {}

    def grab_x(module, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].detach().clone()

    def grab_weights(module, args, out):
        seen["weights"] = out[1][0].detach().clone()

    def grab_out(module, args, out):
        seen["out"] = out[0].detach().clone()

    hooks = [
        attention_module.register_forward_pre_hook(grab_x, with_kwargs=True),
        attention_module.register_forward_hook(grab_weights),
        projection(attention_module).register_forward_hook(grab_out),
    ]
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for hook in hooks:
            hook.remove()
    return {key: value.numpy() for key, value in seen.items()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved, run and extracted once, lazily."""
    import qkvcalc

    root = tmp_path_factory.mktemp("hybrids")
    out: dict = {}

    def get(name: str) -> dict:
        if name not in out:
            config, fields, model_name, attn = CASES[name]
            model = build_from(config, fields, model_name, **EAGER, **EXTRA.get(name, {}))
            as_loaded(model, name)
            folder = root / name
            model.save_pretrained(folder)
            module = at(model, attn, LAYER)
            problem = qkvcalc.extract(str(folder), layer=LAYER, input_ids=ids(), dtype="float64")
            out[name] = {
                "problem": problem,
                "reference": reference(model, module),
                "module": module,
                "folder": folder,
            }
        return out[name]

    return get


@pytest.mark.parametrize("name", list(CASES))
def test_the_full_attention_layer_equals_transformers(lab, name):
    import qkvcalc

    got = lab(name)
    problem, ref = got["problem"], got["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    weights, output = oracle(problem)  # an independent implementation, the gate included
    assert relative(weights, ref["weights"]) < TOL
    assert relative(output, ref["out"]) < TOL
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL


@pytest.mark.parametrize("name", QWEN)
def test_the_gate_the_norms_and_the_partial_rotation_are_the_layers(lab, name):
    """What the problem says, read from the module, and each part needed: without the gate, with
    the norms' plain w, or with the whole head rotating, the output is another."""
    got = lab(name)
    problem, ref, module = got["problem"], got["reference"], got["module"]
    heads, d_k = 4, 8
    assert np.shape(problem["wq"]) == np.shape(problem["wg"]) == (32, heads * d_k)
    assert problem["kv_heads"] == 2 and problem["rope"]["dims"] == d_k // 2
    q_proj = module.q_proj.weight.detach().numpy().reshape(heads, 2, d_k, 32)
    assert np.array_equal(problem["wq"], q_proj[:, 0].reshape(-1, 32).T)
    assert np.array_equal(problem["wg"], q_proj[:, 1].reshape(-1, 32).T)
    assert np.array_equal(problem["q_norm"], 1.0 + module.q_norm.weight.detach().numpy())
    bare = {k: v for k, v in problem.items() if k not in ("wg", "bg")}
    assert relative(qkvcalc_output(bare), ref["out"]) > 1e-3
    plain = {**problem, "q_norm": problem["q_norm"] - 1.0, "k_norm": problem["k_norm"] - 1.0}
    assert relative(qkvcalc_output(plain), ref["out"]) > 1e-3
    whole = {**problem, "rope": {k: v for k, v in problem["rope"].items() if k != "dims"}}
    assert relative(qkvcalc_output(whole), ref["out"]) > 1e-3


def test_the_biases_split_as_the_weights_do(lab):
    got = lab("qwen3_next-bias")
    problem, module = got["problem"], got["module"]
    bias = module.q_proj.bias.detach().numpy().reshape(4, 2, 8)
    assert np.array_equal(problem["bq"], bias[:, 0].reshape(-1))
    assert np.array_equal(problem["bg"], bias[:, 1].reshape(-1))
    assert all(key in problem for key in ("bk", "bv", "bo"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_layer_of_another_kind_is_one_message_naming_the_attention_layers(lab, lang):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    # every Gated DeltaNet layer is read now (Qwen3-Next's, Qwen3.5's, OLMo-Hybrid's:
    # tests/test_extract_gdn.py); a Mamba layer is refused
    folder = lab("bamba")["folder"]
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(folder), layer=0, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    text = err.value.message(lang)
    assert "Mamba" in text and text.endswith(": 1" if lang == "ko" else "are 1")


def test_the_command_line_refuses_a_layer_of_another_kind_in_one_line(lab):
    folder = lab("bamba")["folder"]
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(folder), "--layer", "0"]
    result = subprocess.run(
        [*argv, "--ids", "1 2 3"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Mamba" in lines[0] and "Traceback" not in result.stderr


def test_the_keys_of_the_state_space_hybrids(lab):
    """What each problem says, read from its module: positions or none (Jamba's and Nemotron-H's
    attention has none, Granite 4's as its config says), Granite's scale, LFM2's q/k norms,
    Falcon-H1's key multiplier folded into W_K."""

    def p(name):
        return lab(name)["problem"]

    assert p("bamba")["rope"]["dims"] == 4  # partial_rotary_factor 0.5 by default
    for name in ("jamba", "nemotron_h", "granitemoehybrid-nope"):
        assert "rope" not in p(name) and p(name)["mask"] == "causal"
    assert "rope" in p("granitemoehybrid") and p("granitemoehybrid")["scale"] == 0.4
    for name in ("lfm2", "lfm2_moe"):
        assert np.shape(p(name)["q_norm"]) == (8,) and "qk_norm" not in p(name)
    assert p("olmo_hybrid")["qk_norm"] == {"over": "projection"} and "rope" in p("olmo_hybrid")
    assert "rope" not in p("olmo_hybrid-nope") and np.shape(p("olmo_hybrid-nope")["k_norm"]) == (
        16,
    )
    falcon = lab("falcon_h1")
    k_proj = falcon["module"].k_proj.weight.detach().numpy().T
    assert relative(falcon["problem"]["wk"], 0.7 * k_proj) < 1e-15
    unscaled = {**falcon["problem"], "wk": k_proj}
    assert relative(qkvcalc_output(unscaled), falcon["reference"]["out"]) > 1e-3


@pytest.mark.parametrize(
    ("layer", "words", "ko"),
    [(0, "state-space (Mamba)", "상태 공간(Mamba)"), (2, "feed-forward (MLP-only)", "MLP")],
)
def test_a_mamba_or_mlp_block_is_named_as_such(lab, layer, words, ko):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    folder = lab("nemotron_h")["folder"]
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    assert words in str(err.value) and str(err.value).endswith("are 1")
    assert ko in err.value.message("ko")


def test_every_hybrid_named_is_a_model_type_of_transformers():
    from transformers import CONFIG_MAPPING

    from qkvcalc.extract.hybrid import NOT_READ, READ
    from qkvcalc.extract.runner import families

    for model_type in [*READ, *NOT_READ]:
        assert model_type in CONFIG_MAPPING, model_type
    assert set(READ) <= set(families()) and not set(NOT_READ) & set(families())


def test_a_hybrid_extract_does_not_read_is_refused_before_loading(tmp_path, monkeypatch):
    """No hybrid is listed as unread today (Ling 3.0, the last, is read:
    test_extract_bailing; Zamba, Zamba2: test_extract_zamba), so one is listed for the test: a
    model type of no family, refused as a whole by its name and the kind of its other
    layers, before anything loads."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract import hybrid

    monkeypatch.setitem(hybrid.NOT_READ, "some_hybrid", ("Some Hybrid", "kimi_delta"))
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "some_hybrid"}))
    with pytest.raises(QkvcalcError) as err:  # no weights: nothing was loaded
        qkvcalc.extract(str(tmp_path), layer=0, input_ids=[1, 2])
    assert err.value.msg.key == "extract.hybrid"
    assert "Some Hybrid" in str(err.value) and "'some_hybrid'" in str(err.value)
    assert "Kimi Delta Attention" in str(err.value)


def test_heads_shows_the_attention_layers_and_says_where_the_others_are(lab):
    """Qwen3-Next: its attention layer's maps, and its Gated DeltaNet layer's implicit matrices
    under its own number (tests/test_heads_implicit.py checks them), each said so."""
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, page, split_head, to_json
    from qkvcalc.render.heads import heads_text

    got = lab("qwen3_next")
    run = attention_maps(str(got["folder"]), input_ids=ids(), dtype="float64", problems=True)
    assert run.layers == [0, LAYER] and len(run.weights) == len(run.problems) == 2
    assert list(run.implicit) == [0] and relative(run.weights[1], got["reference"]["weights"]) < TOL
    assert [(layer["layer"], layer.get("implicit")) for layer in to_json(run)["layers"]] == [
        (0, True),
        (LAYER, None),
    ]
    for lang in ("en", "ko"):
        text = heads_text(run, lang, 120)
        joined = " ".join(text.split("\n"))
        assert len(run.others) == 2 and all(
            m.text(lang) in " ".join(joined.split()) for m in run.others
        )
        assert ("layer 1" if lang == "en" else "층 1") in text
    assert run.others[0].text("en").endswith("marked implicit (layers: 0).")
    assert run.others[1].text("en") == (
        "The rows below are its softmax-attention layers (1) and its linear-attention "
        "(Gated DeltaNet) layers (0, implicit)."
    )
    html = page(run)
    assert 'id="l1h4"' in html and 'id="l0h2"' in html and 'id="l0h3"' not in html
    assert "not in the page" not in html  # every head explained, the gate included
    # head 2's problem: its query, key, value and gate columns; its output is its gated part
    problem = run.problems[1]
    trace = qkvcalc.explain(**split_head(problem, 2))
    assert relative(trace.weights[0], got["reference"]["weights"][1]) < TOL
    _, gated = oracle({**problem, "wo": np.eye(np.shape(problem["wo"])[0])})
    assert relative(trace.output, gated[:, 8:16]) < TOL


def test_heads_names_each_kind_of_other_layer(lab):
    from qkvcalc.extract.heads import attention_maps
    from qkvcalc.render.heads import heads_text

    got = lab("nemotron_h")
    run = attention_maps(str(got["folder"]), input_ids=ids(), dtype="float64")
    assert run.layers == [1] and relative(run.weights[0], got["reference"]["weights"]) < TOL
    said = [other.text("en") for other in run.others]
    assert len(said) == 3 and said[2].endswith("attention layers: 1.")
    assert "state-space (Mamba)" in said[0] and said[0].endswith("leaves them out (layers: 0).")
    assert "feed-forward (MLP-only)" in said[1] and "(layers: 2)." in said[1]
    text = " ".join(heads_text(run, "en", 200).split("\n"))
    assert all(sentence in text for sentence in said)


def test_heads_on_a_parallel_hybrid_shows_every_layer(lab):
    """Falcon-H1's layers are each attention and Mamba side by side: every layer is shown."""
    from qkvcalc.extract.heads import attention_maps

    run = attention_maps(str(lab("falcon_h1")["folder"]), input_ids=ids(), dtype="float64")
    assert run.layers == [0, 1] and run.others == []
    assert relative(run.weights[1], lab("falcon_h1")["reference"]["weights"]) < TOL


@pytest.mark.parametrize("name", list(CASES))
def test_heads_on_each_hybrid_is_its_attention_layers_maps(lab, name):
    """Every hybrid's one run: the maps of its attention layers only, each transformers' own."""
    from qkvcalc.extract.heads import attention_maps

    got = lab(name)
    run = attention_maps(str(got["folder"]), input_ids=ids(), dtype="float64")
    # Falcon-H1: every layer attention; the Gated DeltaNet hybrids: layer 0's implicit matrices
    drawn = name == "falcon_h1" or name.split("-")[0] in (*QWEN, "olmo_hybrid")
    assert run.layers == ([0, 1] if drawn else [LAYER])
    assert list(run.implicit) == ([0] if drawn and name != "falcon_h1" else [])
    assert relative(run.weights[-1], got["reference"]["weights"]) < TOL
    assert bool(run.others) is (name != "falcon_h1")
