"""qkvcalc extract and qkvcalc heads on Zamba and Zamba2 (issue 37, item 3): one shared attention
block called by each hybrid layer (layers_block_type "hybrid"), its input x = RMSNorm([h | e]),
the residual stream beside the original embeddings (2·d_model wide), its scale (d_k/2)^−½;
Zamba2's invocation at layer i adds its own LoRA adapters to Q, K and V (extract folds them
into W_Q, W_K, W_V) and may rotate (use_mem_rope). A layer's number is its index in the stack,
the layer_idx the shared attention is called with.

Against transformers itself, as tests/test_extract_hybrid.py does (a tiny float64 model from a
config, random weights, eager attention, save_pretrained; `qkvcalc extract --dtype float64`,
then `qkvcalc explain`): x to 1e-12, every head's attention probabilities and the attention
module's own output (o_proj's, before the hybrid layer's linear) to 1e-8 relative, at every
hybrid layer — Zamba2's layers 1 and 4 call the same block with different adapters, layer 3
the other block. A Mamba layer is refused with one message naming the attention layers, and
heads shows the attention invocations and says where the Mamba layers are."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.inprocess import run_batch
from tests.test_extract import build_from, true_float64
from tests.test_extract_hybrid import EAGER
from tests.test_extract_more import LLAMA, TOL, at, ids, relative
from tests.test_extract_new import oracle, qkvcalc_output

torch = pytest.importorskip("torch")

LAYERS = ["linear_attention", "hybrid", "linear_attention", "hybrid", "hybrid"]
ZAMBA2 = {
    **LLAMA,
    "num_key_value_heads": 4,  # the adapters' output is 2·d_model wide: K and V are too
    "num_hidden_layers": 5,
    "layers_block_type": LAYERS,
    "num_mem_blocks": 2,  # hybrid layers 1 and 4 share block 0, layer 3 has block 1
    "use_shared_attention_adapter": True,
    "adapter_rank": 4,
    "use_mem_rope": True,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000.0},
    "n_mamba_heads": 4,
    "mamba_d_state": 8,
    "chunk_size": 4,
}
CASES = {
    "zamba2": ("Zamba2Config", ZAMBA2, "Zamba2ForCausalLM", "shared_transformer"),
    "zamba2-plain": (  # no adapters, no positions: the shared block alone
        "Zamba2Config",
        {**ZAMBA2, "use_shared_attention_adapter": False, "use_mem_rope": False},
        "Zamba2ForCausalLM",
        "shared_transformer",
    ),
    "zamba": (  # one block for every hybrid layer, grouped-query attention, no positions
        "ZambaConfig",
        {
            **LLAMA,
            "num_hidden_layers": 4,
            "layers_block_type": LAYERS[:4],
            "n_mamba_heads": 2,
            "mamba_d_state": 8,
            "mamba_dt_rank": 4,
        },
        "ZambaForCausalLM",
        "shared_transf",
    ),
}
ATTENTION = {"zamba2": [1, 3, 4], "zamba2-plain": [1, 3, 4], "zamba": [1, 3]}
WHERE = [(name, layer) for name, layers in ATTENTION.items() for layer in layers]
# Zamba's A_log is made float32 whatever the model's dtype (torch.log of a float32 arange), so
# its checkpoint loads as float32: rounded in the reference model too
BUILT_FLOAT32 = {"zamba": "A_log"}


def attention_module(model, name: str, layer: int):
    return at(model, f"model.layers.{{}}.{CASES[name][3]}.self_attn", layer)


def reference(model, modules: dict) -> dict:
    """One eager forward of transformers, truly float64: each attention invocation's input x,
    its probabilities [H, n, n] and its output (the attention module's first output, o_proj's),
    by layer. The shared block's modules are one per hybrid layer (their weights tied), so each
    hook sees its own layer's call."""
    seen: dict = {}

    def hooks(layer, module):
        def grab_x(module, args, kwargs):
            seen.setdefault(layer, {})["x"] = kwargs["hidden_states"][0].detach().clone()

        def grab_out(module, args, out):
            seen[layer]["out"] = out[0][0].detach().clone()
            seen[layer]["weights"] = out[1][0].detach().clone()

        return [
            module.register_forward_pre_hook(grab_x, with_kwargs=True),
            module.register_forward_hook(grab_out),
        ]

    handles = [h for layer, module in modules.items() for h in hooks(layer, module)]
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for handle in handles:
            handle.remove()
    return {layer: {k: v.numpy() for k, v in got.items()} for layer, got in seen.items()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each model built and saved; every attention layer extracted through the command line,
    `qkvcalc extract FOLDER --layer L --ids … --dtype float64 --output FILE`, and explained,
    `qkvcalc explain FILE --format json --detail full`, in one process (tests/inprocess.py)."""
    root = tmp_path_factory.mktemp("zamba")
    out: dict = {}
    jobs = []
    for name, (config, fields, model_name, _) in CASES.items():
        model = build_from(config, fields, model_name, **EAGER)
        part = BUILT_FLOAT32.get(name)
        with torch.no_grad():
            for key, tensor in model.named_parameters():
                if part is not None and part in key:
                    tensor.copy_(tensor.to(torch.float32).to(tensor.dtype))
        folder = root / name
        model.save_pretrained(folder)
        modules = {layer: attention_module(model, name, layer) for layer in ATTENTION[name]}
        out[name] = {"model": model, "folder": folder, "reference": reference(model, modules)}
        for layer in ATTENTION[name]:
            file = root / f"{name}-{layer}.json"
            argv = [
                "extract",
                str(folder),
                "--layer",
                str(layer),
                "--ids",
                " ".join(map(str, ids())),
            ]
            jobs.append({"argv": [*argv, "--dtype", "float64", "--output", str(file)]})
            jobs.append({"argv": ["explain", str(file), "--format", "json", "--detail", "full"]})
    results = run_batch([{**job, "stdin": None} for job in jobs], timeout=600)
    for (name, layer), made, explained in zip(WHERE, results[::2], results[1::2], strict=True):
        assert made.returncode == 0 and made.stdout == "", made.stderr
        assert explained.returncode == 0, explained.stderr
        file = root / f"{name}-{layer}.json"
        out[name][layer] = {
            "problem": json.loads(file.read_text(encoding="utf-8")),
            "explained": json.loads(explained.stdout),
        }
    return out


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_each_invocation_equals_transformers(lab, name, layer):
    got, ref = lab[name][layer], lab[name]["reference"][layer]
    problem, doc = got["problem"], got["explained"]
    assert np.shape(problem["x"]) == (len(ids()), 64)  # [h | e]: 2·d_model wide
    assert relative(problem["x"], ref["x"]) < 1e-12
    by_head = {stage["head"]: stage["value"] for stage in doc["stages"] if stage["id"] == "weights"}
    assert sorted(by_head) == list(range(1, 5))
    assert relative([by_head[h] for h in range(1, 5)], ref["weights"]) < TOL
    assert relative(doc["output"], ref["out"]) < TOL
    weights, output = oracle(problem)  # an independent implementation
    assert relative(weights, ref["weights"]) < TOL and relative(output, ref["out"]) < TOL


def rows(linear) -> np.ndarray:
    return linear.weight.detach().numpy().T


def lora(module, slot: int, part: str) -> np.ndarray:
    """The adapter of this slot applied to the identity: its matrix in the rows layout, by
    transformers' own modules."""
    found = getattr(module, f"linear_{part}_adapter_list")[slot]
    with torch.no_grad():
        return found(torch.eye(64, dtype=torch.float64)).numpy()


def test_the_adapters_are_folded_into_each_invocations_weights(lab):
    """W_Q, W_K, W_V of an invocation are the shared projection plus that invocation's adapter
    (layer_idx's slot); layers 1 and 4 share the block but not the adapters; without the
    adapters, or with another invocation's, the output is another."""
    model = lab["zamba2"]["model"]
    for layer, slot in ((1, 0), (3, 1), (4, 2)):
        module = attention_module(model, "zamba2", layer)
        problem = lab["zamba2"][layer]["problem"]
        bare = {}
        for part in ("q", "k", "v"):
            plain = rows(getattr(module, f"{part}_proj"))
            folded = np.asarray(problem[f"w{part}"])
            assert relative(folded, plain + lora(module, slot, part)) < 1e-14
            assert relative(folded, plain) > 1e-2
            bare[f"w{part}"] = plain
        out = lab["zamba2"]["reference"][layer]["out"]
        assert relative(qkvcalc_output({**problem, **bare}), out) > 1e-3
        for part in ("q", "k", "v"):  # one adapter left out is enough to miss
            one = {**problem, f"w{part}": bare[f"w{part}"]}
            assert relative(qkvcalc_output(one), out) > 1e-3
    one, four = lab["zamba2"][1]["problem"], lab["zamba2"][4]["problem"]
    shared = attention_module(model, "zamba2", 1).q_proj.weight
    assert shared is attention_module(model, "zamba2", 4).q_proj.weight  # one block …
    assert relative(one["wq"], four["wq"]) > 1e-2  # … two invocations
    swapped = {**four, "wq": one["wq"], "wk": one["wk"], "wv": one["wv"]}
    assert relative(qkvcalc_output(swapped), lab["zamba2"]["reference"][4]["out"]) > 1e-3


def test_the_keys_of_zamba(lab):
    """The scale (d_k/2)^−½ with d_k = 2·d_model/H = 16, RoPE only when use_mem_rope, grouped
    K/V heads in Zamba, causal; the scale is needed (1/√d_k gives another output)."""
    for name in CASES:
        problem = lab[name][3]["problem"]
        assert problem["scale"] == (16 / 2) ** -0.5 and problem["mask"] == "causal"
        assert np.shape(problem["wq"]) == (64, 64) and np.shape(problem["wo"]) == (64, 32)
    assert lab["zamba2"][3]["problem"]["rope"] == {"theta": 1000.0, "style": "half"}
    assert (
        "rope" not in lab["zamba2-plain"][3]["problem"] and "rope" not in lab["zamba"][3]["problem"]
    )
    assert (
        lab["zamba"][3]["problem"]["kv_heads"] == 2
        and "kv_heads" not in lab["zamba2"][3]["problem"]
    )
    plain = lab["zamba2-plain"][3]["problem"]
    assert np.array_equal(
        plain["wq"], rows(attention_module(lab["zamba2-plain"]["model"], "zamba2-plain", 3).q_proj)
    )
    unscaled = {k: v for k, v in lab["zamba2"][3]["problem"].items() if k != "scale"}
    assert relative(qkvcalc_output(unscaled), lab["zamba2"]["reference"][3]["out"]) > 1e-3


def test_the_description_says_whose_weights_they_are(lab):
    """Which layers call the same block (their weights one tensor) and, in Zamba2, that this
    layer's adapters are folded in; a layer alone with its block and without adapters: the plain
    description."""
    import qkvcalc

    def said(name, layer):
        return lab[name][layer]["problem"]["description"]

    shared = "Layers {} call this one attention block and share its weights."
    folded = "W_Q, W_K and W_V are the block's plus this layer's own adapters, folded in"
    own = "the weights are the layer's own"
    for layer in (1, 4):
        assert shared.format("1, 4") in said("zamba2", layer) and folded in said("zamba2", layer)
        assert shared.format("1, 4") in said("zamba2-plain", layer)
        assert folded not in said("zamba2-plain", layer) and own not in said("zamba2", layer)
    assert "Layers" not in said("zamba2", 3) and folded in said("zamba2", 3)
    assert said("zamba2-plain", 3).endswith(f"{own}, in float64.")
    assert shared.format("1, 3") in said("zamba", 1) and folded not in said("zamba", 3)
    korean = qkvcalc.extract(
        str(lab["zamba2"]["folder"]), layer=4, input_ids=ids(), dtype="float64", lang="ko"
    )["description"]
    assert "이 어텐션 블록과 그 가중치를 함께 쓰는 층: 1, 4." in korean and "어댑터" in korean


@pytest.mark.parametrize("name", ["zamba2", "zamba"])
@pytest.mark.parametrize(("lang", "ending"), [("en", "are {}"), ("ko", ": {}")])
def test_a_mamba_layer_is_one_message_naming_the_attention_layers(lab, name, lang, ending):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(lab[name]["folder"]), layer=2, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    text = err.value.message(lang)
    assert ("state-space (Mamba)" if lang == "en" else "상태 공간(Mamba)") in text
    assert text.endswith(ending.format(", ".join(map(str, ATTENTION[name]))))


def test_the_command_line_refuses_a_mamba_layer_in_one_line(lab):
    folder = str(lab["zamba2"]["folder"])
    argv = ["extract", folder, "--layer", "0", "--ids", "1 2 3"]
    results = run_batch(
        [{"argv": argv, "stdin": None}, {"argv": [*argv, "--lang", "ko"], "stdin": None}],
        timeout=300,
    )
    for result, words in zip(results, ["state-space (Mamba)", "상태 공간(Mamba)"], strict=True):
        assert result.returncode == 2 and result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and "1, 3, 4" in lines[0]
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("name", list(CASES))
def test_heads_shows_the_attention_invocations_and_says_where_the_mamba_layers_are(lab, name):
    import qkvcalc
    from qkvcalc.extract.heads import attention_maps, split_head
    from qkvcalc.render.heads import heads_text

    run = attention_maps(str(lab[name]["folder"]), input_ids=ids(), dtype="float64", problems=True)
    assert run.layers == ATTENTION[name] and len(run.problems) == len(ATTENTION[name])
    for layer, weights, problem in zip(run.layers, run.weights, run.problems, strict=True):
        ref = lab[name]["reference"][layer]
        assert relative(weights, ref["weights"]) < TOL
        assert relative(problem["wq"], lab[name][layer]["problem"]["wq"]) < 1e-15
        trace = qkvcalc.explain(**split_head(problem, 3))  # head 3 alone, its adapter columns
        assert relative(np.squeeze(trace.weights), ref["weights"][2]) < TOL
    said = [other.text("en") for other in run.others]
    assert len(said) == 2 and "state-space (Mamba)" in said[0]
    assert said[0].endswith("leaves them out (layers: 0, 2).")
    shown = ", ".join(map(str, ATTENTION[name]))
    assert said[1] == f"The rows below are its attention layers: {shown}."
    for lang in ("en", "ko"):
        text = " ".join(heads_text(run, lang, 160).split("\n"))
        assert all(m.text(lang) in text for m in run.others)


@pytest.mark.parametrize("name", ["zamba2", "zamba"])
def test_the_memory_estimate_counts_the_wide_attention(lab, name):
    """A float64 run's estimate (stream.need, refused before loading when it cannot fit) counts
    layer L's attention weights three times in float64 (the run's and the problem's two), which
    are 2·d_model wide here."""
    from qkvcalc.extract.stream import BASE, need

    model = lab[name]["model"]
    module = attention_module(model, name, 1)
    count = sum(getattr(module, f"{p}_proj").weight.numel() for p in ("q", "k", "v", "o"))
    assert need(model.config, len(ids())) - BASE >= 3 * 8 * count


def test_zamba_is_no_longer_refused_as_a_whole():
    from qkvcalc.extract.hybrid import NOT_READ, READ
    from qkvcalc.extract.runner import families

    assert {"zamba", "zamba2"} <= set(READ) & set(families()) and not {"zamba", "zamba2"} & set(
        NOT_READ
    )
