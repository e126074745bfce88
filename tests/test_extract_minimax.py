"""qkvcalc extract on MiniMax (issue 37, item 3): its softmax-attention layers (MiniMaxAttention,
LLaMA's) and its lightning layers (MiniMaxLightningAttention) each become a problem; a lightning
layer's is the `lightning` key (qkvcalc/ops/lightning.py) with silu on q, k and v, the norm over
the joined heads, the output gate and out_proj.

Against transformers itself, as tests/test_extract_hybrid.py does (a tiny float64 model from a
config, random weights, eager attention, save_pretrained, extract in float64, then explain): x
to 1e-12 and the layer's own output (its out_proj's or o_proj's) to 1e-8 relative. The
reference is the model truly in float64 (tests/test_extract.py's true_float64: its norm's cast
and its decays in float64); the checkpoint extract reads holds the decays rounded to float32, as
MiniMax's own checkpoints do (the module computes them in float32), so extract must compute them
again in float64. The slopes depend on the layer; each part of the layer is needed."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.test_extract import build_from, true_float64
from tests.test_extract_more import LLAMA, TOL, ids, relative

torch = pytest.importorskip("torch")

FIELDS = {
    **LLAMA,
    "head_dim": 8,
    "num_hidden_layers": 3,
    "layer_types": ["linear_attention", "full_attention", "linear_attention"],
    "block_size": 4,  # the tokens (ids(): 10) in three blocks, the last one partial
    "num_local_experts": 2,
    "num_experts_per_tok": 1,
}
LIGHTNING_LAYERS, ATTENTION_LAYERS = (0, 2), (1,)
BUFFERS = ("slope_rate", "query_decay", "key_decay", "diagonal_decay")


def reference(model, layer: int) -> dict:
    """transformers' own forward, truly float64: layer `layer`'s attention input x and its
    output projection's output."""
    attn = model.model.layers[layer].self_attn
    projection = getattr(attn, "out_proj", None) or attn.o_proj
    seen: dict = {}

    def grab_x(module, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].detach().clone()

    def grab_out(module, args, out):
        seen["out"] = out[0].detach().clone()

    hooks = [
        attn.register_forward_pre_hook(grab_x, with_kwargs=True),
        projection.register_forward_hook(grab_out),
    ]
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for hook in hooks:
            hook.remove()
    return {key: value.numpy() for key, value in seen.items()}


def as_saved(model) -> None:
    """The decay buffers as MiniMax's checkpoints hold them: computed in float32."""
    with torch.no_grad():
        for module in model.modules():
            if type(module).__name__ == "MiniMaxLightningAttention":
                for name in BUFFERS:
                    found = getattr(module, name)
                    found.copy_(found.to(torch.float32).to(torch.float64))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import qkvcalc

    model = build_from(
        "MiniMaxConfig", FIELDS, "MiniMaxForCausalLM", _experts_implementation="eager"
    )
    refs = {layer: reference(model, layer) for layer in range(3)}
    as_saved(model)
    rounded = {layer: reference(model, layer)["out"] for layer in LIGHTNING_LAYERS}
    folder = tmp_path_factory.mktemp("minimax") / "tiny"
    model.save_pretrained(folder)
    problems = {
        layer: qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="float64")
        for layer in range(3)
    }
    return {
        "model": model,
        "folder": folder,
        "refs": refs,
        "rounded": rounded,
        "problems": problems,
    }


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_each_layer_is_a_problem_equal_to_transformers(lab, layer):
    import qkvcalc

    problem, ref = lab["problems"][layer], lab["refs"][layer]
    assert relative(problem["x"], ref["x"]) < 1e-12
    assert ("lightning" in problem) is (layer in LIGHTNING_LAYERS)
    trace = qkvcalc.explain(**problem)
    assert relative(trace.output, ref["out"]) < TOL


@pytest.mark.parametrize("layer", LIGHTNING_LAYERS)
def test_a_lightning_layer_is_its_slopes_its_silu_its_norm_and_its_gate(lab, layer):
    """What the problem says, read from the module, and each part needed: without silu, the
    norm, the gate, or with the slopes of another layer, the output is another."""
    import qkvcalc
    from qkvcalc.extract.minimax import slopes

    problem, ref = lab["problems"][layer], lab["refs"][layer]
    attn = lab["model"].model.layers[layer].self_attn
    spec = problem["lightning"]
    heads = 4
    base = 2 ** (-8 / heads)
    factor = 1 - layer / (3 - 1 + 1e-5) + 1e-5
    assert np.allclose(spec["slope"], [base ** (h + 1) * factor for h in range(heads)], rtol=1e-15)
    assert spec["act"] == "silu" and spec["block"] == 4 and spec["norm_eps"] == 1e-6
    qkv = attn.qkv_proj.weight.detach().numpy().reshape(heads, 3, 8, 32)
    assert np.array_equal(problem["wk"], qkv[:, 1].reshape(-1, 32).T)
    assert np.array_equal(spec["gate"], attn.output_gate.weight.detach().numpy().T)
    assert np.array_equal(spec["norm"], attn.norm.weight.detach().numpy())

    other = {**spec, "slope": slopes(heads, 2 - layer, 3)}
    found = qkvcalc.explain(**{**problem, "lightning": other}).output
    assert relative(found, ref["out"]) > 1e-3
    for dropped in ("act", "norm", "gate"):
        kept = {k: v for k, v in spec.items() if k != dropped}
        found = qkvcalc.explain(**{**problem, "lightning": kept}).output
        assert relative(found, ref["out"]) > 1e-3, dropped


def test_the_checkpoints_float32_decays_are_computed_again(lab):
    """The module run as the checkpoint holds it (decays rounded to float32) is off by more
    than extract's check allows; the problem, with decays computed in float64, is not."""
    for layer in LIGHTNING_LAYERS:
        off = relative(lab["rounded"][layer], lab["refs"][layer]["out"])
        assert off > 1e-9, off
    saved = lab["model"].model.layers[0].self_attn.slope_rate.reshape(-1).numpy()
    exact = np.asarray(lab["problems"][0]["lightning"]["slope"])
    assert np.array_equal(saved, saved.astype(np.float32)) and not np.array_equal(saved, exact)


def test_the_command_line_extracts_a_lightning_layer_that_explain_reads(lab, tmp_path):
    path = tmp_path / "layer0.json"
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(lab["folder"]), "--layer", "0"]
    given = " ".join(str(i) for i in ids())
    done = subprocess.run(
        [*argv, "--ids", given, "--dtype", "float64", "--output", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "explain", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert relative(doc["output"], lab["refs"][0]["out"]) < TOL


def test_heads_shows_the_attention_layer_and_the_lightning_layers_implicit_matrices(lab):
    from qkvcalc.extract.heads import attention_maps

    run = attention_maps(str(lab["folder"]), input_ids=ids(), dtype="float64")
    assert run.layers == [0, 1, 2] and list(run.implicit) == list(LIGHTNING_LAYERS)
    said = [other.text("en") for other in run.others]
    assert "linear-attention (lightning attention)" in said[0]
    assert said[0].endswith("marked implicit (layers: 0, 2).")
    assert said[-1].startswith("The rows below are its softmax-attention layers (1)")


def test_a_loaded_model_keeps_its_own_buffers_after_extract(lab):
    """A model given as an object runs as it is: its float32-computed decays are replaced by
    float64 ones for the run only, and put back afterwards."""
    import qkvcalc

    model = lab["model"]
    attn = model.model.layers[2].self_attn
    before = {name: getattr(attn, name).clone() for name in BUFFERS}
    problem = qkvcalc.extract(model, layer=2, input_ids=ids())
    assert relative(qkvcalc.explain(**problem).output, lab["refs"][2]["out"]) < TOL
    for name, value in before.items():
        assert torch.equal(getattr(attn, name), value), name


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_lightning_layer_with_another_activation_is_one_message(lang):
    """The lightning key has silu only: a MiniMax whose hidden_act is another is refused at its
    lightning layers, naming it (its attention layer is still read)."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    fields = {**FIELDS, "hidden_act": "gelu"}
    model = build_from(
        "MiniMaxConfig", fields, "MiniMaxForCausalLM", _experts_implementation="eager"
    )
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(model, layer=0, input_ids=ids())
    assert err.value.msg.key == "extract.minimax_act"
    assert "'gelu'" in err.value.message(lang) and "silu" in err.value.message(lang)
    assert "rope" in qkvcalc.extract(model, layer=1, input_ids=ids())
