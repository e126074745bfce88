"""DeepSeek-V4 (issue 37) through qkvcalc extract: its sliding-window layers extract, its
compressed layers are refused by their kind.

A tiny DeepSeek-V4 from its config (float64, eager, random weights, save_pretrained to a temp dir)
with one layer of each kind: sliding-window attention, compressed sparse attention (m = 2, the
indexer's top 2 of 5 entries at n = 11) and heavily compressed attention (m = 4). First, what
each kind computes: tests/naive_dsv4.py writes the module out in numpy from its weights, and it
equals the module's own output (o_b_proj's) to 1e-8 relative in a truly float64 run (the
transformers' float32 steps lifted: tests/test_extract.py's true_float64); the indexer's choice
and the output's turn back each move it. Then the sliding layer: `qkvcalc extract --dtype
float64` writes a problem (mla with shared_kv, q_norm, rope, vo_rope, sinks, the window, the
folded W_O) whose `qkvcalc explain` equals the module's output to 1e-8 relative and each head's
weights the module's attention probabilities; the fold of the grouped output projection is one
linear map. Then the refusals: a compressed layer exits 2 with one line on stderr naming its
kind, the model's layers by kind, and nothing on stdout; the Python call raises the same; a
folder with a config.json alone is refused the same way (before any weight is read); a model
whose layers are all compressed is refused at every layer; qkvcalc heads refuses the model as
a whole."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from qkvcalc.errors import QkvcalcError  # noqa: E402
from tests.conftest import run_qkvcalc  # noqa: E402
from tests.naive_dsv4 import attention  # noqa: E402
from tests.test_extract import build_from, true_float64  # noqa: E402
from tests.test_extract_more import TOL, relative  # noqa: E402

KINDS = ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"]
FIELDS = {
    "vocab_size": 60,
    "max_position_embeddings": 64,
    "hidden_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "head_dim": 16,
    "q_lora_rank": 12,
    "partial_rotary_factor": 0.5,  # the last 8 of 16 columns turn
    "n_routed_experts": 2,
    "num_experts_per_tok": 1,
    "moe_intermediate_size": 8,
    "n_shared_experts": 1,
    "sliding_window": 4,
    "o_groups": 2,
    "o_lora_rank": 6,
    "index_n_heads": 2,
    "index_head_dim": 8,
    "index_topk": 2,
    "compress_rates": {"compressed_sparse_attention": 2, "heavily_compressed_attention": 4},
    "layer_types": KINDS,
    "mlp_layer_types": ["moe"] * 3,
    "hc_mult": 2,
    "hc_sinkhorn_iters": 3,
    "num_nextn_predict_layers": 0,
}
IDS = [3, 7, 1, 9, 22, 5, 8, 13, 2, 40, 11]
WORDS = {
    0: "sliding-window attention (W = 4)",
    1: "compressed sparse attention (m = 2, top 2)",
    2: "heavily compressed attention (m = 4)",
}
KO = {
    0: "슬라이딩 윈도우 어텐션(W = 4)",
    1: "압축 희소 어텐션(m = 2, 상위 2개)",
    2: "고압축 어텐션(m = 4)",
}
LAYERS = (
    "0: sliding-window attention (W = 4); 1: compressed sparse attention (m = 2, top 2); "
    "2: heavily compressed attention (m = 4)"
)


def run(fields: dict) -> dict:
    """A tiny DeepSeek-V4 of these fields and, for each layer, its attention's input x and
    o_b_proj's output in a truly float64 forward."""
    model = build_from(
        "DeepseekV4Config", fields, "DeepseekV4ForCausalLM", _experts_implementation="eager"
    )
    # transformers 5.25 keeps some modules float32 on any load (_keep_in_fp32_modules_strict:
    # the sinks, q_a_norm, kv_norm, input_layernorm, the mHC weights), rounding what a float64
    # checkpoint holds: their weights are made float32 numbers here, so that the model saved and
    # the one extract loads hold the same values on every version
    kept = [
        *(getattr(model, "_keep_in_fp32_modules_strict", None) or []),
        *(getattr(model, "_keep_in_fp32_modules", None) or []),
    ]
    with torch.no_grad():
        for name, param in model.named_parameters():
            if any(part in name for part in kept):
                param.copy_(param.float().double())
    seen: dict = {}
    hooks = []
    for i, block in enumerate(model.model.layers):

        def grab_x(module, args, kwargs, i=i):
            seen[("x", i)] = (args[0] if args else kwargs["hidden_states"])[0].detach().clone()

        def grab_out(module, args, out, i=i):
            seen[("out", i)] = out[0].detach().clone()

        def grab_weights(module, args, out, i=i):
            if out[1] is not None:
                seen[("weights", i)] = out[1][0].detach().clone()

        hooks.append(block.self_attn.register_forward_pre_hook(grab_x, with_kwargs=True))
        hooks.append(block.self_attn.o_b_proj.register_forward_hook(grab_out))
        hooks.append(block.self_attn.register_forward_hook(grab_weights))
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([IDS]))
    finally:
        for hook in hooks:
            hook.remove()
    return {"model": model, "seen": {k: v.numpy() for k, v in seen.items()}}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    found = run(FIELDS)
    found["folder"] = tmp_path_factory.mktemp("dsv4") / "tiny-v4"
    found["model"].save_pretrained(found["folder"])
    return found


@pytest.mark.parametrize("layer", [0, 1, 2], ids=KINDS)
def test_the_written_out_layer_equals_the_module(lab, layer):
    model, seen = lab["model"], lab["seen"]
    assert model.config.layer_types[layer] == KINDS[layer]
    attn, x, out = model.model.layers[layer].self_attn, seen[("x", layer)], seen[("out", layer)]
    assert relative(attention(attn, x, model.config), out) < TOL
    # the output's turn back by the query's position is part of every kind
    assert relative(attention(attn, x, model.config, derotate=False), out) > 1e-2
    if KINDS[layer] == "compressed_sparse_attention":  # the indexer's top-k is part of CSA
        assert relative(attention(attn, x, model.config, select=False), out) > 1e-2


def test_the_compressed_layers_turn_by_yarn_where_the_config_says_so():
    """Released V4 configs give YaRN to the "compress" rotation (attention factor 1.0): qkvcalc's
    own YaRN frequencies (qkvcalc/extract/rope.py) are the module's, and the layer needs them."""
    from qkvcalc.extract.rope import frequencies

    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}
    found = run({**FIELDS, "rope_parameters": yarn, "compress_rope_theta": 500.0})
    model, seen = found["model"], found["seen"]
    inv, factor = frequencies(model.model.rotary_emb, "compress", len(IDS))
    assert factor == 1.0
    for layer in (1, 2):
        attn, x, out = model.model.layers[layer].self_attn, seen[("x", layer)], seen[("out", layer)]
        assert relative(attention(attn, x, model.config, inv=inv), out) < TOL
        assert relative(attention(attn, x, model.config), out) > 1e-2  # θ^(−2i/R) is not it


def _explained(problem: dict):
    import qkvcalc

    return qkvcalc.explain(**{k: v for k, v in problem.items() if k not in ("name", "description")})


def test_a_sliding_layer_extracts_and_explain_equals_the_module(lab, tmp_path):
    """The command line: extract --dtype float64 writes the problem, explain computes the
    module's output to 1e-8 relative and each head's weights its attention probabilities."""
    path = tmp_path / "layer0.json"
    proc = run_qkvcalc(
        "extract", str(lab["folder"]), "--layer", "0", "--ids", " ".join(map(str, IDS)),
        "--dtype", "float64", "--output", str(path), timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = run_qkvcalc("explain", str(path), "--format", "json", timeout=180)
    assert shown.returncode == 0, shown.stderr
    trace = json.loads(shown.stdout)
    out = lab["seen"][("out", 0)]
    assert relative(np.asarray(trace["output"], dtype=float), out) < TOL
    maps = lab["seen"][("weights", 0)]  # the eager path's probabilities, [H, n, n]
    for stage in trace["stages"]:
        if stage["id"] == "weights":
            got = np.asarray(stage["value"], dtype=float)
            assert np.allclose(got, maps[stage["head"] - 1], atol=1e-12, rtol=0)
    assert (
        sum(stage["id"] == "weights" for stage in trace["stages"]) == FIELDS["num_attention_heads"]
    )


def test_the_sliding_layers_keys_say_what_it_computes(lab):
    import qkvcalc

    problem = qkvcalc.extract(lab["model"], layer=0, input_ids=IDS)
    mla, attn = problem["mla"], lab["model"].model.layers[0].self_attn
    assert mla["shared_kv"] is True and "wkv_b" not in mla and mla["rope_dims"] == 8
    assert problem["vo_rope"] is True and problem["window"] == 4 and problem["mask"] == "causal"
    assert problem["rope"]["style"] == "pairs" and problem["rope"]["dims"] == 8
    assert np.array_equal(problem["q_norm"], np.ones(16))
    assert np.array_equal(problem["sinks"], attn.sinks.detach().numpy())
    trace = _explained(problem)
    assert relative(trace.output, lab["seen"][("out", 0)]) < TOL
    # each piece is needed: without the turns of V and of the output, or without q_b_norm
    for change in ({"vo_rope": False}, {"q_norm": None}, {"sinks": None}):
        other = {k: v for k, v in (problem | change).items() if v is not None}
        assert relative(_explained(other).output, lab["seen"][("out", 0)]) > 1e-3, change


def test_the_grouped_output_projection_folds_into_one_w_o(lab):
    """o_b_proj(o_a_proj(J in groups)) = J'·W_O, J' each head's columns in qkvcalc's order (the
    rotary ones first): the same linear map, to float64's last places."""
    import qkvcalc

    attn = lab["model"].model.layers[0].self_attn
    wo = np.asarray(qkvcalc.extract(lab["model"], layer=0, input_ids=IDS)["wo"])
    heads, d, nope = 4, 16, 8
    joined = np.random.default_rng(5).standard_normal((7, heads * d))
    with torch.no_grad():
        grouped = torch.tensor(joined).reshape(7, FIELDS["o_groups"], -1)
        want = attn.o_b_proj(attn.o_a_proj(grouped).flatten(1)).numpy()
    ours = joined.reshape(7, heads, d)
    ours = np.concatenate([ours[..., nope:], ours[..., :nope]], axis=-1).reshape(7, -1)
    assert relative(ours @ wo, want) < 1e-14
    assert relative(joined @ wo, want) > 1e-2  # W_O's rows follow qkvcalc's column order


@pytest.mark.parametrize("layer", [1, 2], ids=KINDS[1:])
def test_each_compressed_layer_is_refused_by_its_kind(lab, layer):
    proc = run_qkvcalc(
        "extract", str(lab["folder"]), "--layer", str(layer), "--ids", " ".join(map(str, IDS)),
        "--dtype", "float64", timeout=180,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    said = proc.stderr
    assert f"layer {layer} of tiny-v4 is a DeepSeek-V4 {WORDS[layer]} layer" in said
    assert "entries pooled from the tokens' projections, one per m tokens" in said
    assert "Only a DeepSeek-V4 model's sliding-window layers extract" in said
    assert "K = V" not in said  # the one key/value head is expressed now (mla's shared_kv)
    assert said.strip().endswith(f"this model's layers are {LAYERS}")


@pytest.mark.parametrize("layer", [1, 2], ids=KINDS[1:])
def test_the_python_call_refuses_a_loaded_model_in_both_languages(lab, layer):
    import qkvcalc

    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(lab["model"], layer=layer, input_ids=IDS)
    assert err.value.msg.key == "extract.dsv4_layer"
    assert WORDS[layer] in str(err.value)
    ko = err.value.message("ko")
    assert KO[layer] in ko and "슬라이딩 윈도우 층만 추출됩니다" in ko and "K = V" not in ko


def test_a_config_alone_is_refused_before_any_weight_is_read(tmp_path):
    from transformers import DeepseekV4Config

    import qkvcalc

    folder = tmp_path / "config-only"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(DeepseekV4Config(**FIELDS).to_dict()))
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(folder), layer=2, input_ids=IDS, dtype="float64")
    assert err.value.msg.key == "extract.dsv4_layer" and WORDS[2] in str(err.value)


def test_a_model_whose_layers_are_all_compressed_is_refused_at_every_layer(tmp_path):
    from transformers import DeepseekV4Config

    import qkvcalc

    kinds = ["heavily_compressed_attention", "compressed_sparse_attention"]
    fields = FIELDS | {"num_hidden_layers": 2, "layer_types": kinds, "mlp_layer_types": ["moe"] * 2}
    folder = tmp_path / "all-compressed"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(DeepseekV4Config(**fields).to_dict()))
    for layer in (0, 1):
        with pytest.raises(QkvcalcError) as err:
            qkvcalc.extract(str(folder), layer=layer, input_ids=IDS, dtype="float64")
        assert err.value.msg.key == "extract.dsv4_layer", layer
        assert "sliding-window attention" not in str(err.value).split("layers are")[-1]


def test_heads_refuses_the_model_as_a_whole(lab):
    proc = run_qkvcalc("heads", str(lab["folder"]), "--ids", " ".join(map(str, IDS)), timeout=180)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert "Traceback" not in proc.stderr
    assert "tiny-v4 is a DeepSeek-V4 model" in proc.stderr
    assert "one sliding-window layer at a time" in proc.stderr
    assert proc.stderr.strip().endswith(f"its layers are {LAYERS}")


def test_a_layer_out_of_range_names_the_model_as_a_whole(lab):
    import qkvcalc

    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(lab["model"], layer=3, input_ids=IDS)
    assert err.value.msg.key == "extract.dsv4" and LAYERS in str(err.value)


def test_heads_refuses_a_loaded_model_as_a_whole(lab):
    from qkvcalc.extract.heads import attention_maps

    with pytest.raises(QkvcalcError) as err:
        attention_maps(lab["model"], input_ids=IDS)
    assert err.value.msg.key == "extract.dsv4" and LAYERS in str(err.value)
    assert "DeepSeek-V4 모델이며" in err.value.message("ko")


def test_the_why_of_a_compressed_layer_names_only_what_is_not_expressed():
    """Reviewed (wt-check, then wt-dsv4): once the one key/value head (mla's shared_kv) and the
    turns of V and of the output (vo_rope) are keys, a compressed layer's why names the pooled
    entries alone, and a kind qkvcalc does not know says so."""
    from qkvcalc.i18n import Msg

    for key in ("extract.dsv4", "extract.dsv4_layer"):
        for why in ("dsv4.why_compressed", "dsv4.why_other"):
            msg = Msg(key, model="m", layer=0, kind="k", why=Msg(why), layers="0: k")
            en, ko = msg.text("en"), msg.text("ko")
            assert "K = V" not in en and "K = V" not in ko, en
            assert "no key of the input format expresses" in en or "does not know" in en, en


def test_a_sliding_layers_gradients_equal_autograd(lab):
    """--backward on the layer extract wrote: a DeepSeek-V4 layer in torch from the problem's
    own keys (tests/test_mla_shared_kv_backward.py's, checked here against the module's output
    first) and autograd's gradient of every weight and of X equal qkvcalc's to 1e-10."""
    import qkvcalc
    from tests.test_mla_shared_kv_backward import _same, autograd, layer, leaves_of, qkvcalc_grads

    problem = qkvcalc.extract(lab["model"], layer=0, input_ids=IDS)
    doc = {k: v for k, v in problem.items() if k not in ("name", "description", "tokens")}
    doc = json.loads(json.dumps(doc, default=lambda a: np.asarray(a).tolist()))
    out, _ = layer(doc, leaves_of(doc))
    assert relative(out.detach().numpy(), lab["seen"][("out", 0)]) < TOL
    doc["target"] = np.random.default_rng(9).standard_normal(out.shape).tolist()
    trace = qkvcalc.explain(**doc, backward=True)
    _same(qkvcalc_grads(trace, doc), autograd(doc))


def test_a_sliding_layer_decodes_with_its_one_cached_head(lab):
    """--decode on the layer extract wrote: C_KV cached once, turned (vo_rope), d_k numbers a
    token for every head; the stacked steps equal the whole run to 1e-12 and the module."""
    import qkvcalc

    problem = qkvcalc.extract(lab["model"], layer=0, input_ids=IDS)
    whole = _explained(problem)
    for prefill in (0, 5):
        trace = _explained(problem | {"decode": prefill})
        assert np.max(np.abs(trace.output - whole.output)) < 1e-12
        assert relative(trace.output, lab["seen"][("out", 0)]) < TOL
        heads = FIELDS["num_attention_heads"]
        assert all(trace.find("k_cache", h, step=1) is None for h in range(1, heads + 1))
        cache = trace.stage("c_kv_cache", step=len(IDS) - prefill)
        assert cache.value.shape == (len(IDS), FIELDS["head_dim"])
