"""What an extracted layer's x is (teaching review F17): the description says it, by what the
block does before its attention — GPT-2's LayerNorm ln_1, Llama's RMSNorm input_layernorm,
BERT's nothing (post-norm) — and x's rows are what it says, recomputed here from transformers'
own hidden states (output_hidden_states: the input of every layer) with torch's norms.

Tiny models from configs, random weights, float64, eager, saved with save_pretrained to a
temporary folder, extracted through the command line as a user would."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.conftest import in_process  # noqa: E402
from tests.test_extract import CASES, build_from, true_float64  # noqa: E402

IDS = [3, 17, 5, 42, 8]
LAYER = 1


def _saved(tmp_path_factory, kind: str, **fields):
    config_name, base, model_name, *_ = CASES[kind]
    model = build_from(config_name, {**base, **fields}, model_name)
    folder = tmp_path_factory.mktemp(kind)
    model.save_pretrained(folder)
    return model, folder


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return {
        "gpt2": _saved(tmp_path_factory, "gpt2", n_layer=2),
        "llama": _saved(tmp_path_factory, "llama", num_hidden_layers=2),
        "bert": _saved(tmp_path_factory, "bert"),
    }


def _extract(folder, *more: str) -> dict:
    ids = " ".join(map(str, IDS))
    result = in_process(
        "extract", str(folder), "--layer", str(LAYER), "--ids", ids, "--dtype", "float64", *more
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _layer_input(model, layer: int) -> torch.Tensor:
    """The input of layer `layer` (the residual stream there), as transformers reports it, truly
    in float64 (its float32 steps lifted, as extract's --dtype float64 run lifts them)."""
    with torch.no_grad(), true_float64():
        out = model(input_ids=torch.tensor([IDS]), output_hidden_states=True)
    return out.hidden_states[layer][0]


def test_gpt2_x_is_ln_1_of_the_residual_stream(models):
    model, folder = models["gpt2"]
    doc = _extract(folder)
    said = doc["description"]
    assert "x = ln_1(h)" in said and "pre-norm, with a LayerNorm" in said, said
    assert "an embedding plus its position" not in said
    norm = model.transformer.h[LAYER].ln_1
    h = _layer_input(model, LAYER)
    x = np.array(doc["x"])
    with torch.no_grad():
        expected = torch.nn.functional.layer_norm(h, h.shape[-1:], norm.weight, norm.bias, norm.eps)
    assert np.allclose(x, expected.numpy(), rtol=0, atol=1e-10)
    # the rows before the weight and the bias: mean 0, variance just under 1 (σ²/(σ² + ε))
    w, b = norm.weight.detach().numpy(), norm.bias.detach().numpy()
    unscaled = (x - b) / w
    assert np.allclose(unscaled.mean(axis=1), 0, atol=1e-8)
    variance = unscaled.var(axis=1)
    assert np.all(variance < 1) and np.all(variance > 0.99), variance
    assert f"ε = {norm.eps:g}" in said


def test_llama_x_is_an_rmsnorm_of_the_residual_stream(models):
    model, folder = models["llama"]
    doc = _extract(folder)
    said = doc["description"]
    assert "x = input_layernorm(h)" in said and "with an RMSNorm" in said, said
    norm = model.model.layers[LAYER].input_layernorm
    h = _layer_input(model, LAYER).numpy()
    x = np.array(doc["x"])
    eps = norm.variance_epsilon
    expected = h / np.sqrt((h**2).mean(axis=1, keepdims=True) + eps) * norm.weight.detach().numpy()
    assert np.allclose(x, expected, rtol=0, atol=1e-10)
    unscaled = x / norm.weight.detach().numpy()
    squares = (unscaled**2).mean(axis=1)
    assert np.all(squares < 1) and np.all(squares > 0.99), squares
    assert np.abs(unscaled.mean(axis=1)).max() > 1e-3  # the mean is not subtracted
    assert "the mean is not subtracted" in said


def test_bert_x_is_the_previous_layer_s_output(models):
    model, folder = models["bert"]
    doc = _extract(folder)
    said = doc["description"]
    assert f"the input of layer {LAYER} itself, the output of layer {LAYER - 1}" in said, said
    assert "post-norm" in said and "LayerNorm before" not in said
    x = np.array(doc["x"])
    assert np.allclose(x, _layer_input(model, LAYER).numpy(), rtol=0, atol=1e-12)


def test_explain_shows_what_x_is_and_korean_says_it_too(models, tmp_path):
    _, folder = models["gpt2"]
    problem = tmp_path / "layer.json"
    problem.write_text(json.dumps(_extract(folder)), encoding="utf-8")
    page = in_process("explain", str(problem), "--format", "markdown", "--stages", "x")
    assert page.returncode == 0, page.stderr
    assert "Here x = ln_1(h)" in page.stdout
    korean = _extract(folder, "--lang", "ko")["description"]
    assert "x = ln_1(h)이고" in korean and "LayerNorm" in korean and "편향" in korean
