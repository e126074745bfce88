"""DeepSeek-V4 (issue 37) through qkvcalc extract: each of its three kinds of layer extracts.

A tiny DeepSeek-V4 from its config (float64, eager, random weights, save_pretrained to a temp dir)
with one layer of each kind: sliding-window attention, compressed sparse attention (m = 2, the
indexer's top 2 of 5 entries at n = 11) and heavily compressed attention (m = 4). First, what
each kind computes: tests/naive_dsv4.py writes the module out in numpy from its weights, and it
equals the module's own output (o_b_proj's) to 1e-8 relative in a truly float64 run (the
transformers' float32 steps lifted: tests/test_extract.py's true_float64); the indexer's choice
and the output's turn back each move it. Then each layer: `qkvcalc extract --dtype float64`
writes a problem (mla with shared_kv, q_norm, rope, vo_rope, sinks, the window, the folded W_O;
a compressed layer's `compress`, with the indexer's `index` on the sparse one) whose `qkvcalc
explain` equals the module's output to 1e-8 relative and each head's weights the module's
attention probabilities (over the tokens and the entries); the fold of the grouped output
projection is one linear map. qkvcalc heads reads the model. A kind qkvcalc does not know
(a config edited by hand) is refused by its kind, at its layer and as a whole."""

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


def test_a_kind_qkvcalc_does_not_know_is_refused_by_its_kind_in_both_languages():
    """transformers' config admits the three kinds alone; a config edited by hand that names
    another is refused from the config (before any weight is read), at that layer and as a
    whole (qkvcalc heads, a layer out of range), its layers' kinds named."""
    from types import SimpleNamespace

    from qkvcalc.extract.deepseek_v4 import check

    config = SimpleNamespace(
        model_type="deepseek_v4",
        layer_types=["sliding_attention", "foo_attention", "heavily_compressed_attention"],
        sliding_window=4,
        compress_rates=FIELDS["compress_rates"],
        index_topk=2,
    )
    layers = (
        "0: sliding-window attention (W = 4); 1: 'foo_attention' (a kind qkvcalc does not "
        "know); 2: heavily compressed attention (m = 4)"
    )
    for layer in (0, 2):
        check(config, layer, "m")  # the known kinds go on
    with pytest.raises(QkvcalcError) as err:
        check(config, 1, "m")
    said = str(err.value)
    assert err.value.msg.key == "extract.dsv4_layer" and said.endswith(f"layers are {layers}")
    assert "qkvcalc does not know what a layer of this kind computes" in said
    assert "슬라이딩 윈도우 층, 고압축 층, 압축 희소 층이 추출됩니다" in err.value.message("ko")
    for whole in (None, 3):
        with pytest.raises(QkvcalcError) as err:
            check(config, whole, "m")
        assert err.value.msg.key == "extract.dsv4" and layers in str(err.value)
        assert "모르는 종류의 층이 있는 DeepSeek-V4 모델" in err.value.message("ko")
    check(SimpleNamespace(model_type="deepseek_v4", layer_types=KINDS), None, "m")


def test_heads_reads_the_model(lab):
    proc = run_qkvcalc(
        "heads", str(lab["folder"]), "--ids", " ".join(map(str, IDS)), "--format", "json",
        timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_compressed_sparse_layer_extracts_and_explain_equals_the_module(lab, tmp_path):
    """extract --dtype float64 of the CSA layer, then explain: the module's output to 1e-8
    relative, and each head's weights its probabilities over the tokens and the entries the
    indexer keeps."""
    path = tmp_path / "layer1.json"
    proc = run_qkvcalc(
        "extract", str(lab["folder"]), "--layer", "1", "--ids", " ".join(map(str, IDS)),
        "--dtype", "float64", "--output", str(path), timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = run_qkvcalc("explain", str(path), "--format", "json", timeout=180)
    assert shown.returncode == 0, shown.stderr
    trace = json.loads(shown.stdout)
    assert relative(np.asarray(trace["output"], dtype=float), lab["seen"][("out", 1)]) < TOL
    maps = lab["seen"][("weights", 1)]  # [H, n, n + T]
    entries = len(IDS) // FIELDS["compress_rates"]["compressed_sparse_attention"]
    assert maps.shape[-1] == len(IDS) + entries
    for stage in trace["stages"]:
        if stage["id"] == "weights":
            got = np.asarray(stage["value"], dtype=float)
            assert np.allclose(got, maps[stage["head"] - 1], atol=1e-12, rtol=0)
    kept = next(s for s in trace["stages"] if s["id"] == "idx_topk")
    assert (np.asarray(kept["value"]).sum(axis=1) <= FIELDS["index_topk"]).all()


def test_the_compressed_sparse_layers_keys_say_what_it_computes(lab):
    import qkvcalc

    problem = qkvcalc.extract(lab["model"], layer=1, input_ids=IDS)
    comp = problem["compress"]
    module = lab["model"].model.layers[1].self_attn.compressor
    assert comp["m"] == 2 and comp["overlap"] is True
    index = comp["index"]
    assert index["heads"] == 2 and index["top_k"] == 2
    order = np.r_[8:16, 0:8, 24:32, 16:24]  # each half's rotary columns first
    assert np.array_equal(comp["bias"], module.position_bias.detach().numpy()[:, order])
    out = lab["seen"][("out", 1)]
    assert relative(_explained(problem).output, out) < TOL
    # the indexer's choice is part of it: without it every visible entry is read
    every = problem | {"compress": {k: v for k, v in comp.items() if k != "index"}}
    assert relative(_explained(every).output, out) > 1e-3


def test_a_heavily_compressed_layer_extracts_and_explain_equals_the_module(lab, tmp_path):
    """extract --dtype float64 of the HCA layer, then explain: the module's output to 1e-8
    relative, and each head's weights its probabilities over the tokens and the entries."""
    path = tmp_path / "layer2.json"
    proc = run_qkvcalc(
        "extract", str(lab["folder"]), "--layer", "2", "--ids", " ".join(map(str, IDS)),
        "--dtype", "float64", "--output", str(path), timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = run_qkvcalc("explain", str(path), "--format", "json", timeout=180)
    assert shown.returncode == 0, shown.stderr
    trace = json.loads(shown.stdout)
    assert relative(np.asarray(trace["output"], dtype=float), lab["seen"][("out", 2)]) < TOL
    maps = lab["seen"][("weights", 2)]  # [H, n, n + T]: the tokens', then the entries'
    entries = len(IDS) // FIELDS["compress_rates"]["heavily_compressed_attention"]
    assert maps.shape[-1] == len(IDS) + entries
    weights = [s for s in trace["stages"] if s["id"] == "weights"]
    assert len(weights) == FIELDS["num_attention_heads"]
    for stage in weights:
        got = np.asarray(stage["value"], dtype=float)
        assert np.allclose(got, maps[stage["head"] - 1], atol=1e-12, rtol=0)
        assert got[:, len(IDS) :].sum() > 1e-3  # the entries take a share


def test_the_heavily_compressed_layers_keys_say_what_it_computes(lab):
    import qkvcalc

    problem = qkvcalc.extract(lab["model"], layer=2, input_ids=IDS)
    comp, module = problem["compress"], lab["model"].model.layers[2].self_attn.compressor
    assert comp["m"] == 4 and "overlap" not in comp
    order = np.r_[8:16, 0:8]  # the rotary columns (the compressor's last 8) first
    assert np.array_equal(comp["bias"], module.position_bias.detach().numpy()[:, order])
    assert np.array_equal(comp["norm"], module.kv_norm.weight.detach().numpy()[order])
    out = lab["seen"][("out", 2)]
    assert relative(_explained(problem).output, out) < TOL
    # the entries are needed, and so is their position bias
    without = {k: v for k, v in problem.items() if k != "compress"}
    assert relative(_explained(without).output, out) > 1e-3
    unbiased = problem | {"compress": comp | {"bias": np.zeros_like(comp["bias"])}}
    assert relative(_explained(unbiased).output, out) > 1e-3


def test_a_prompt_shorter_than_m_makes_no_entry(lab):
    """With 3 tokens the heavily compressed layer (m = 4) pools no entry: `compress` is left
    out, and extract's own check (the problem run against the layer) holds."""
    import qkvcalc

    problem = qkvcalc.extract(lab["model"], layer=2, input_ids=IDS[:3])
    assert "compress" not in problem and problem["vo_rope"] is True
    assert "compress" in qkvcalc.extract(lab["model"], layer=2, input_ids=IDS[:4])


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


@pytest.mark.parametrize("layer", [1, 2], ids=["compressed_sparse", "heavily_compressed"])
def test_a_compressed_layers_gradients_equal_autograd(lab, layer):
    """--backward on a compressed layer extract wrote: tests/test_compress_backward.py's torch
    layer from the problem's own keys (checked here against the module's output first, the
    indexer's kept entries a constant mask) and autograd's gradient of every weight, the
    entries' W_C, W_CG, B and norm weight among them, and of X equal qkvcalc's to 1e-10."""
    import qkvcalc
    from tests.test_compress_backward import autograd, leaves, ours, same
    from tests.test_compress_backward import layer as torch_layer

    problem = qkvcalc.extract(lab["model"], layer=layer, input_ids=IDS)
    doc = {k: v for k, v in problem.items() if k not in ("name", "description", "tokens")}
    doc = json.loads(json.dumps(doc, default=lambda a: np.asarray(a).tolist()))
    assert "compress" in doc and ("index" in doc["compress"]) == (layer == 1)
    if layer == 1:
        doc["keep"] = (qkvcalc.explain(**doc).stage("idx_topk").value > 0).tolist()
    out, _ = torch_layer(doc, leaves(doc))
    assert relative(out.detach().numpy(), lab["seen"][("out", layer)]) < TOL
    doc["target"] = np.random.default_rng(9).standard_normal(out.shape).tolist()
    same(ours(doc), autograd(doc))
