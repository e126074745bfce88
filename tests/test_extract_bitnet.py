"""qkvcalc extract on BitNet (transformers' `bitnet`, 5.23–5.25): its attention is LLaMA's with
attn_sub_norm, an RMSNorm over all heads' outputs joined (H·d_v numbers a token, with a weight)
before o_proj, read as `sub_norm` and `sub_norm_eps` (qkvcalc/ops/sub_norm.py). Its projections
are plain nn.Linear in transformers' BitNetAttention; a checkpoint with a quantization_config
(BitLinear: each projection's input rounded to 8 bits per token when it runs) is refused before
any weight is read. A tiny float64 model from its config, random weights, eager attention,
save_pretrained to a temporary folder, extracted, then explained: its weights and output equal
transformers' own to 1e-8 relative; nothing downloads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_extract import build_from, reference_at
from tests.test_extract_more import LLAMA, TOL, ids, relative

pytest.importorskip("transformers")


def bitnet():
    return build_from("BitNetConfig", LLAMA, "BitNetForCausalLM")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The BitNet model saved once, each layer extracted once, with transformers' numbers."""
    import qkvcalc

    root = tmp_path_factory.mktemp("bitnet")
    model = bitnet()
    model.save_pretrained(root / "bitnet")
    out: dict = {"model": model, "folder": str(root / "bitnet")}
    for layer in (0, 1):
        attn = model.model.layers[layer].self_attn
        ref = reference_at(model, ids(), layer, attn, attn.o_proj)
        problem = qkvcalc.extract(out["folder"], layer=layer, input_ids=ids(), dtype="float64")
        out[layer] = {"problem": problem, "reference": ref}
    return out


def test_bitnet_projections_are_plain_linear_layers():
    """What extract reads: transformers' BitNetAttention builds nn.Linear projections (no
    quantization when it runs) and attn_sub_norm as wide as the heads joined."""
    import torch

    attn = bitnet().model.layers[0].self_attn
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        assert type(getattr(attn, name)) is torch.nn.Linear, name
    assert attn.attn_sub_norm.weight.shape == (4 * 8,)


@pytest.mark.parametrize("layer", [0, 1])
def test_the_extracted_bitnet_layer_equals_transformers(lab, layer):
    import qkvcalc

    problem, ref = lab[layer]["problem"], lab[layer]["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    trace = qkvcalc.explain(**problem)
    assert relative(trace.weights, ref["weights"]) < TOL
    assert relative(trace.output, ref["out"]) < TOL
    # the norm is what makes it so: without it the output is not transformers'
    plain = qkvcalc.explain(**{k: v for k, v in problem.items() if not k.startswith("sub_norm")})
    assert relative(plain.output, ref["out"]) > 1e-3


def test_the_keys_of_bitnet(lab):
    """sub_norm is attn_sub_norm's weight (H·d_v numbers), sub_norm_eps its ε (the config's
    rms_norm_eps); LLaMA's keys otherwise: RoPE, grouped-query, causal, o_proj as W_O."""
    model, problem = lab["model"], lab[1]["problem"]
    attn = model.model.layers[1].self_attn
    assert np.array_equal(problem["sub_norm"], attn.attn_sub_norm.weight.detach().numpy())
    assert problem["sub_norm_eps"] == model.config.rms_norm_eps
    assert problem["heads"] == 4 and problem["kv_heads"] == 2 and problem["mask"] == "causal"
    assert problem["rope"]["style"] == "half" and "wo" in problem


def test_a_loaded_bitnet_is_read_as_its_folder_is(lab):
    import qkvcalc

    problem = qkvcalc.extract(lab["model"], layer=1, input_ids=ids(), dtype="float64")
    trace = qkvcalc.explain(**problem)
    assert relative(trace.output, lab[1]["reference"]["out"]) < TOL
    assert np.array_equal(problem["sub_norm"], lab[1]["problem"]["sub_norm"])


def test_every_format_shows_the_extracted_norm_in_both_languages(lab):
    import qkvcalc
    from qkvcalc.render import RenderOptions, render

    trace = qkvcalc.explain(**lab[0]["problem"])
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    assert {"sub_rms", "sub_normed"} <= {s["id"] for s in data["stages"]}
    for fmt in ("table", "txt", "markdown", "latex", "html", "svg"):
        for lang in ("en", "ko"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert "out_N" in text or "out_{N}" in text, (fmt, lang)


def test_the_torch_script_of_the_extracted_layer_runs(lab, tmp_path):
    import qkvcalc
    from qkvcalc.render import RenderOptions, render
    from tests.inprocess import run_script

    problem = lab[1]["problem"]
    target = np.zeros_like(np.asarray(lab[1]["reference"]["out"])).tolist()
    trace = qkvcalc.explain(**problem, target=target, backward=True)
    path = tmp_path / "check.py"
    path.write_text(render(trace, "torch", RenderOptions(width=100, color=False)), "utf-8")
    result = run_script(str(path))
    assert result["returncode"] == 0, result["stderr"]
    assert "dw_sub:" in result["stdout"] and "OK: PyTorch agrees" in result["stdout"]


def test_heads_splits_a_bitnet_layer_before_its_norm(lab):
    """qkvcalc heads: one head's problem has no sub_norm (the norm reads every head's row, as
    W_O does), and its map is transformers' map of that head."""
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, split_head

    one = split_head(lab[1]["problem"], 3)
    assert "sub_norm" not in one and "sub_norm_eps" not in one
    trace = qkvcalc.explain(**one)
    weights = lab[1]["reference"]["weights"]
    assert relative(np.squeeze(trace.weights), weights[2]) < TOL
    run = attention_maps(lab["folder"], input_ids=ids(), dtype="float64", problems=True)
    assert relative(np.asarray(run.weights[1]), weights) < TOL
    assert np.array_equal(run.problems[1]["sub_norm"], lab[1]["problem"]["sub_norm"])


QUANTIZED = {
    "quant_method": "bitnet",
    "linear_class": "autobitlinear",
    "quantization_mode": "offline",
}


def test_a_quantized_bitnet_checkpoint_is_refused_before_any_weight(tmp_path):
    """A config with quantization_config (as BitNet's published checkpoints have): transformers
    would build BitLinear projections that round their input to 8 bits per token, so no problem
    equals the layer; refused by name, config.json alone (no weights to load), both languages."""
    import transformers

    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    config = transformers.BitNetConfig(**LLAMA)
    config.quantization_config = dict(QUANTIZED)
    config.save_pretrained(tmp_path)
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path), layer=0, input_ids=[1, 2])
    assert err.value.msg.key == "extract.bitnet_quantized"
    said = str(err.value)
    assert "BitLinear" in said and "8 bits per token" in said and "quant_method bitnet" in said
    korean = err.value.msg.text("ko")
    assert korean != said and "BitLinear" in korean and "{" not in korean


def test_a_loaded_model_with_a_quantization_config_is_refused(lab):
    import copy

    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    model = copy.deepcopy(lab["model"])
    model.config.quantization_config = dict(QUANTIZED)
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(model, layer=0, input_ids=ids())
    assert err.value.msg.key == "extract.bitnet_quantized"
