"""qkvcalc extract and qkvcalc heads on hybrids (issue 37, item 3): Qwen3-Next, Qwen3.5 (its text
model and its multimodal checkpoint) and Qwen3.5-MoE, whose full-attention layers sit between
Gated DeltaNet (linear-attention) layers. A full-attention layer's q_proj holds each head's query
and its output gate side by side ([q_h | gate_h]), the gate multiplies the head's output by
σ(gate) before o_proj, the q/k norms multiply by (1 + w), and only part of each head rotates.

Against transformers itself, as tests/test_extract_new.py does (a tiny float64 model from a
config, random weights, eager attention, save_pretrained, extract in float64, then explain):
x to 1e-12, every head's attention probabilities and the output projection's own output to 1e-8
relative. transformers' output_attentions returns the attention layers' maps only, so the
reference takes the weights from the attention module's own output. A linear-attention layer
is refused with one message naming its kind and the attention layers; the hybrids extract does
not read are refused as a whole before anything loads; heads shows the attention layers and
says where the others are."""

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
            "vision_config": {
                "depth": 1,
                "hidden_size": 16,
                "intermediate_size": 16,
                "num_heads": 2,
                "out_hidden_size": 32,
                "patch_size": 2,
                "num_position_embeddings": 16,
            },
        },
        "Qwen3_5ForConditionalGeneration",
        "model.language_model.layers.{}.self_attn",
    ),
    "qwen3_5_moe_text": (
        "Qwen3_5MoeTextConfig",
        {**LLAMA, **LINEAR, **MOE},
        "Qwen3_5MoeForCausalLM",
        TEXT,
    ),
}
LAYER = 1  # the full-attention layer, after a Gated DeltaNet layer


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
        attention_module.o_proj.register_forward_hook(grab_out),
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
            model = build_from(config, fields, model_name, **EAGER)
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


@pytest.mark.parametrize("name", list(CASES))
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
def test_a_linear_attention_layer_is_one_message_naming_the_attention_layers(lab, lang):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    folder = lab("qwen3_5")["folder"]  # the multimodal checkpoint: its text config says
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(folder), layer=0, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    text = err.value.message(lang)
    assert "Gated DeltaNet" in text and text.endswith(": 1" if lang == "ko" else "are 1")


def test_the_command_line_refuses_a_linear_layer_in_one_line(lab):
    folder = lab("qwen3_next")["folder"]
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(folder), "--layer", "0"]
    result = subprocess.run(
        [*argv, "--ids", "1 2 3"], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Gated DeltaNet" in lines[0] and "Traceback" not in result.stderr


@pytest.mark.parametrize("model_type", ["bamba", "jamba", "nemotron_h", "lfm2", "zamba2"])
def test_the_hybrids_extract_does_not_read_are_refused_before_loading(tmp_path, model_type):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.hybrid import NOT_READ

    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type}))
    with pytest.raises(QkvcalcError) as err:  # no weights: nothing was loaded
        qkvcalc.extract(str(tmp_path), layer=0, input_ids=[1, 2])
    assert err.value.msg.key == "extract.hybrid"
    name, _ = NOT_READ[model_type]
    assert name in str(err.value) and repr(model_type) in str(err.value)


def test_heads_shows_the_attention_layers_and_says_where_the_others_are(lab):
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, page, split_head, to_json
    from qkvcalc.render.heads import heads_text

    got = lab("qwen3_next")
    run = attention_maps(str(got["folder"]), input_ids=ids(), dtype="float64", problems=True)
    assert run.layers == [LAYER] and len(run.weights) == len(run.problems) == 1
    assert relative(run.weights[0], got["reference"]["weights"]) < TOL
    assert [layer["layer"] for layer in to_json(run)["layers"]] == [LAYER]
    for lang in ("en", "ko"):
        text = heads_text(run, lang, 120)
        assert run.others is not None and run.others.text(lang) in " ".join(text.split("\n"))
        assert ("layer 1" if lang == "en" else "층 1") in text
    assert "layers 0." in run.others.text("en")
    html = page(run)
    assert 'id="l1h4"' in html and 'id="l0h1"' not in html
    assert "not in the page" not in html  # every head explained, the gate included
    # head 2's problem: its query, key, value and gate columns; its output is its gated part
    problem = run.problems[0]
    trace = qkvcalc.explain(**split_head(problem, 2))
    assert relative(trace.weights[0], got["reference"]["weights"][1]) < TOL
    _, gated = oracle({**problem, "wo": np.eye(np.shape(problem["wo"])[0])})
    assert relative(trace.output, gated[:, 8:16]) < TOL
