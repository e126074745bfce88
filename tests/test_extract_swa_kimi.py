"""qkvcalc extract on Granite with sliding windows (granite_swa, granitemoe_swa) and on Kimi
Linear's MLA layers (kimi_linear), against transformers itself as tests/test_extract_new.py and
tests/test_extract_hybrid.py do: a tiny float64 model from a config, random weights, eager
attention, save_pretrained, extract in float64, then explain.

Granite SWA: three layers, sliding (window 4, RoPE base 500), full (layer_rope_theta 0: NoPE),
sliding (base 2000: each layer's own rotary module), attention_multiplier as the scale, and the
per-head sink, which its eager path applies after the softmax as σ(logsumexp(scores) − s) in
float32: the same as one more logit s in the softmax (qkvcalc's `sinks`). Its eager
probabilities are those before that factor, so each row of qkvcalc's weights (which hold it)
divided by its sum must equal them; the output holds the factor and must equal o_proj's.

Kimi Linear: a Kimi Delta Attention layer, then two MLA layers without RoPE (NoPE), with a query
latent (q_lora_rank) and without (q_proj); the KDA layer before them runs in float64 too. Its
attention probabilities and o_proj's output equal transformers' to 1e-8 relative, x to 1e-12;
the KDA layer is a kimi_delta problem (tests/test_extract_kda.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive_modern import attention
from tests.test_extract import build_from, reference_at
from tests.test_extract_hybrid import reference as module_reference
from tests.test_extract_more import LLAMA, SMALL, TOL, N, at, ids, relative
from tests.test_extract_new import EAGER, kept_float32

GRANITE = {
    **LLAMA,
    "num_hidden_layers": 3,
    "attention_multiplier": 0.4,
    "embedding_multiplier": 3.0,
    "residual_multiplier": 0.5,
    "sliding_window": 4,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
    "layer_rope_theta": [500.0, 0, 2000.0],
}
KIMI = {
    **SMALL,
    "hidden_size": 32,
    "intermediate_size": 48,
    "moe_intermediate_size": 16,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "kv_lora_rank": 10,
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 6,
    "v_head_dim": 5,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "pad_token_id": 0,
    "linear_head_dim": 8,
    "linear_num_heads": 4,
    "layer_types": ["linear_attention", "full_attention", "full_attention"],
    "mlp_layer_types": ["dense", "sparse", "sparse"],
}
# name: config class, fields, model class, the layers extracted
CASES = {
    "granite_swa": ("GraniteSWAConfig", GRANITE, "GraniteSWAForCausalLM", (0, 1, 2)),
    "granitemoe_swa": (
        "GraniteMoeSWAConfig",
        {**GRANITE, "num_local_experts": 3, "num_experts_per_tok": 2},
        "GraniteMoeSWAForCausalLM",
        (0, 1, 2),
    ),
    "kimi_linear": (
        "KimiLinearConfig",
        {**KIMI, "q_lora_rank": 12},
        "KimiLinearForCausalLM",
        (1, 2),
    ),
    "kimi_linear-q_proj": (
        "KimiLinearConfig",
        {**KIMI, "q_lora_rank": None},
        "KimiLinearForCausalLM",
        (1, 2),
    ),
}
WHERE = [(name, layer) for name, spec in CASES.items() for layer in spec[3]]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved, run and extracted once, lazily."""
    import qkvcalc

    root = tmp_path_factory.mktemp("swa-kimi")
    out: dict = {}

    def get(name: str, layer: int) -> dict:
        if (name, layer) not in out:
            config, fields, model_name, layers = CASES[name]
            model = build_from(config, fields, model_name, **EAGER)
            kept_float32(model)  # 5.25 keeps Kimi's router and dt_bias in float32
            folder = root / name
            model.save_pretrained(folder)
            for each in layers:
                module = at(model, "model.layers.{}.self_attn", each)
                if name.startswith("kimi"):  # its weights: the module's own output
                    ref = module_reference(model, module)
                else:
                    ref = reference_at(model, ids(), each, module, module.o_proj)
                problem = qkvcalc.extract(str(folder), layer=each, input_ids=ids(), dtype="float64")
                out[(name, each)] = {
                    "problem": problem,
                    "reference": ref,
                    "module": module,
                    "folder": folder,
                }
        return out[(name, layer)]

    return get


def renormalised(weights) -> np.ndarray:
    """Each row over its own sum: the probabilities without the sink's share."""
    weights = np.asarray(weights)
    return weights / weights.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_extracted_layer_equals_transformers(lab, name, layer):
    import qkvcalc

    got = lab(name, layer)
    problem, ref = got["problem"], got["reference"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    trace = qkvcalc.explain(**problem)
    weights, output = attention(problem)  # the independent oracle
    assert relative(trace.output, ref["out"]) < TOL
    assert relative(output, ref["out"]) < TOL
    if "sinks" in problem:  # Granite SWA: eager's probabilities are before the sink's factor
        assert relative(renormalised(trace.weights), ref["weights"]) < TOL
        assert relative(renormalised(weights), ref["weights"]) < TOL
        assert relative(trace.weights, ref["weights"]) > 1e-3  # the sink takes a share
    else:
        assert relative(trace.weights, ref["weights"]) < TOL
        assert relative(weights, ref["weights"]) < TOL


@pytest.mark.parametrize("name", ["granite_swa", "granitemoe_swa"])
def test_the_keys_of_granite_swa(lab, name):
    """Read from the model: the window on the sliding layers only, attention_multiplier as the
    scale, the layer's own RoPE base (none at 0), the sinks; each part needed."""
    problems = [lab(name, layer)["problem"] for layer in (0, 1, 2)]
    assert [p.get("window") for p in problems] == [4, None, 4]
    assert all(p["scale"] == 0.4 and p["kv_heads"] == 2 for p in problems)
    assert problems[0]["rope"]["theta"] == 500.0 and problems[2]["rope"]["theta"] == 2000.0
    assert "rope" not in problems[1]
    assert N > 4  # the windows cut
    for layer, problem in enumerate(problems):
        module = lab(name, layer)["module"]
        assert np.array_equal(problem["sinks"], module.sinks.detach().numpy())
        out = lab(name, layer)["reference"]["out"]
        bare = {k: v for k, v in problem.items() if k != "sinks"}
        assert relative(qkvcalc_output(bare), out) > 1e-3
    # the model's global base (10000) instead of the layer's own: not transformers' weights
    other = {**problems[2], "rope": {**problems[2]["rope"], "theta": 10000.0}}
    weights, _ = attention(other)
    assert relative(renormalised(weights), lab(name, 2)["reference"]["weights"]) > 1e-4
    unwindowed = {k: v for k, v in problems[0].items() if k != "window"}
    assert relative(qkvcalc_output(unwindowed), lab(name, 0)["reference"]["out"]) > 1e-3


def qkvcalc_output(problem: dict) -> np.ndarray:
    import qkvcalc

    return qkvcalc.explain(**problem).output


@pytest.mark.parametrize("name", ["kimi_linear", "kimi_linear-q_proj"])
def test_the_keys_of_kimi_linear(lab, name):
    """MLA without a rotation: no `rope`, the d_R shared key columns as they are; the latents'
    norm ε is the class default 1e-6 (not the config's rms_norm_eps 1e-5); the scale is the
    default 1/√(d_C + d_R)."""
    got = lab(name, 2)
    problem, module = got["problem"], got["module"]
    mla = problem["mla"]
    assert "rope" not in problem and "scale" not in problem and problem["mask"] == "causal"
    assert mla["rope_dims"] == 4 and mla["eps"] == 1e-6 and problem["heads"] == 4
    assert module.kv_a_layernorm.variance_epsilon == 1e-6 and module.config.rms_norm_eps == 1e-5
    assert np.array_equal(mla["wkv_a"], module.kv_a_proj_with_mqa.weight.detach().numpy().T)
    assert ("wq" in mla) == (name == "kimi_linear-q_proj")
    assert ("wq_a" in mla) == (name == "kimi_linear")
    # turned as DeepSeek's would be, it is not Kimi's layer
    turned = {**problem, "rope": {"theta": 10000.0, "dims": 4}}
    assert relative(qkvcalc_output(turned), got["reference"]["out"]) > 1e-3


def test_a_kimi_delta_layer_is_a_kimi_delta_problem(lab):
    """Layer 0, a Kimi Delta Attention layer, is no longer refused: it is a problem of the
    kimi_delta key with the whole layer (tests/test_extract_kda.py compares it with the
    module)."""
    import qkvcalc

    folder = lab("kimi_linear", 1)["folder"]
    problem = qkvcalc.extract(str(folder), layer=0, input_ids=ids(), dtype="float64")
    assert "kimi_delta" in problem and "mla" not in problem
    assert "Kimi Delta Attention" in problem["description"]


def test_heads_on_kimi_linear_shows_its_mla_layers(lab):
    from qkvcalc.extract.heads import attention_maps

    got = lab("kimi_linear", 2)
    run = attention_maps(str(got["folder"]), input_ids=ids(), dtype="float64")
    assert run.layers == [0, 1, 2] and list(run.implicit) == [0]  # KDA's implicit matrices
    assert relative(run.weights[-1], got["reference"]["weights"]) < TOL
    said = [other.text("en") for other in run.others]
    assert "Kimi Delta Attention" in said[0] and said[0].endswith("marked implicit (layers: 0).")


@pytest.mark.parametrize("name", ["granite_swa", "granitemoe_swa"])
def test_heads_on_granite_swa_shows_the_weights_with_the_sink(lab, name):
    """transformers' eager output_attentions on Granite SWA are the probabilities before the
    sink's factor (rows summing to 1), while each head's worked problem (`sinks`) has the sink's
    share: the page's maps said one thing and its explanations another. The maps are now the
    problems' weights: every head's as its explanation computes it, renormalised equal to
    transformers' probabilities, rows summing to less than 1; the JSON holds the same."""
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, page, split_head, to_json

    folder = str(lab(name, 0)["folder"])
    for problems in (True, False):  # the page (with the heads' problems), the table and JSON
        run = attention_maps(folder, input_ids=ids(), dtype="float64", problems=problems)
        assert run.layers == [0, 1, 2]
        for index, maps in zip(run.layers, run.weights, strict=True):
            got = lab(name, index)
            assert relative(renormalised(maps), got["reference"]["weights"]) < TOL
            assert (maps.sum(axis=-1) < 1 - 1e-3).all()  # the sink's share
            for h in (1, 4):  # each head's own problem, as its explanation on the page
                trace = qkvcalc.explain(**split_head(got["problem"], h))
                assert relative(trace.weights, maps[h - 1]) < 1e-12, (index, h)
        assert len(run.problems) == (3 if problems else 0)
        assert not run.notes
        said = to_json(run)["layers"][2]["heads"][3]["weights"]
        assert np.array_equal(np.asarray(said), run.weights[2][3])
    assert "learned sink" not in page(run)


def test_heads_on_a_large_granite_swa_says_its_maps_are_before_the_sink(lab, monkeypatch):
    """Past MAX_EXPLAINED heads no layer's problem is made: the maps stay transformers', and the
    page (terminal and HTML, both languages) says they are before the sink."""
    from qkvcalc.extract import heads
    from qkvcalc.render.heads import heads_html, heads_text

    monkeypatch.setattr(heads, "MAX_EXPLAINED", 4)
    folder = str(lab("granite_swa", 0)["folder"])
    run = heads.attention_maps(folder, input_ids=ids(), dtype="float64", problems=True)
    assert not run.problems
    for index, maps in zip(run.layers, run.weights, strict=True):
        assert relative(maps, lab("granite_swa", index)["reference"]["weights"]) < TOL
        assert np.allclose(maps.sum(axis=-1), 1)
    [note] = run.notes
    assert note.key == "heads.before_sinks"
    for lang, words in (("en", "Granite SWA applies each head's learned sink"), ("ko", "싱크")):
        said = note.text(lang)
        assert words in said
        assert said in " ".join(heads_text(run, lang, width=400).split())
        assert said in heads_html(run, lang).replace("&#x27;", "'")
