"""qkvcalc extract on Ling 3.0 (bailing_hybrid, issue 37): its MLA layers (interleaved RoPE on
the qk_rope_head_dim columns, a query latent from transformers 5.25 on, kv_a_layernorm's eps the
class default 1e-6, a sigmoid gate per head from g_proj before o_proj) become problems of the
`mla` key with `rope` and `wg`; its Kimi Delta Attention layers problems of the `kimi_delta` key
with the projections in one (`wf`: forget_gate.f_proj, `wz`: g_proj) and, under kda_safe_gate,
the bounded decay (`lower_bound`).

Against transformers itself (tiny float64 models from configs, random weights, eager,
save_pretrained, extract in float64, then explain): x to 1e-12; each layer's module output (its
float32 casts lifted: true_float64) to 1e-8 relative; each KDA head's core output (o_norm's
input) to 1e-8 and its implicit weights times its V equal to it; the gates equal the module's
forget gate; each key the problem carries needed; `qkvcalc heads` shows the MLA layer's
attention weights (the module's own) and draws the KDA layers (tests/test_heads_implicit.py
checks those matrices too). A bound the key cannot read, or a key given in both forms, is one
message."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from tests.test_extract import build_from, true_float64
from tests.test_extract_hybrid import EAGER
from tests.test_extract_kda import reference
from tests.test_extract_more import TOL, at, ids, relative
from tests.test_extract_new import kept_float32

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

BAILING = {
    "vocab_size": 60,
    "max_position_embeddings": 64,
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
    "head_dim": 8,  # the KDA layers' (linear_head_dim); the config then sets it to qk_rope_head_dim
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "n_group": 2,
    "topk_group": 1,
    "pad_token_id": 0,
    "eos_token_id": None,
    "rms_norm_eps": 1e-5,  # not kv_a_layernorm's (1e-6): the problem must say the module's
    "kda_lower_bound": -3.0,
    "layer_types": ["linear_attention", "linear_attention", "full_attention"],
    "mlp_layer_types": ["dense", "sparse", "sparse"],
}
# transformers 5.25 gives the MLA layers a query latent (q_lora_rank); 5.23 has q_proj only
LATENT = {"q_lora_rank": 12} if hasattr(transformers.BailingHybridConfig, "q_lora_rank") else {}
# name: the config's fields, the layers extracted (KDA and MLA)
CASES = {
    # the safe gate (Ling's default): g = −3·σ(e^(A_log)·(X·W_f + dt_bias))
    "bailing": (BAILING, {"kda": (0, 1), "mla": (2,)}),
    # an MLA layer first, with YaRN (the scale times mscale²) and a query latent on 5.25; then
    # two KDA layers with the unbounded decay −e^(A_log)·softplus(…) and three taps
    "bailing-wide": (
        {
            **BAILING,
            **LATENT,
            "kda_safe_gate": False,
            "short_conv_kernel_size": 3,
            "layer_types": ["full_attention", "linear_attention", "linear_attention"],
            "rope_parameters": {
                "rope_type": "yarn",
                "rope_theta": 10000.0,
                "factor": 4.0,
                "original_max_position_embeddings": 16,
                "mscale": 1.0,
                "mscale_all_dim": 1.0,
            },
        },
        {"kda": (1, 2), "mla": (0,)},
    ),
}
WHERE = [
    (name, layer, kind)
    for name, (_, kinds) in CASES.items()
    for kind, layers in kinds.items()
    for layer in layers
]
PATH = "model.layers.{}.self_attn"


def build(name: str, **changed):
    fields = {**CASES[name][0], **changed}
    model = build_from("BailingHybridConfig", fields, "BailingHybridForCausalLM", **EAGER)
    kept_float32(model)  # conv1d, A_log, dt_bias, the router: float32 in a checkpoint's load
    return model


def attention_weights(model, module) -> np.ndarray:
    """The MLA module's own softmax weights [H, n, n], truly float64."""
    seen: dict = {}

    def grab(mod, args, out):
        seen["w"] = out[1][0].detach().clone()

    hook = module.register_forward_hook(grab)
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        hook.remove()
    return seen["w"].numpy()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved and extracted once per layer, lazily."""
    import qkvcalc

    root = tmp_path_factory.mktemp("bailing")
    models: dict = {}
    out: dict = {}

    def get(name: str, layer: int) -> dict:
        if name not in models:
            model = build(name)
            model.save_pretrained(root / name)
            models[name] = model
        if (name, layer) not in out:
            model, folder = models[name], root / name
            module = at(model, PATH, layer)
            problem = qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="float64")
            out[(name, layer)] = {
                "problem": problem,
                "reference": reference(model, module),
                "model": model,
                "module": module,
                "folder": folder,
                "trace": qkvcalc.explain(**problem),
            }
        return out[(name, layer)]

    return get


@pytest.mark.parametrize(("name", "layer", "kind"), WHERE, ids=[f"{n}-{i}" for n, i, _ in WHERE])
def test_each_layer_equals_transformers(lab, name, layer, kind):
    got = lab(name, layer)
    problem, ref, trace, module = got["problem"], got["reference"], got["trace"], got["module"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    assert relative(trace.output, ref["out"]) < TOL
    if kind == "mla":
        assert type(module).__name__ == "BailingHybridAttention"
        assert "mla" in problem and "kimi_delta" not in problem
        return
    assert type(module).__name__ == "BailingHybridDeltaAttention"
    assert f"linear-attention (Kimi Delta Attention) layer {layer}" in problem["description"]
    for h in range(1, problem["heads"] + 1):
        core = trace.stage("output", h).value
        assert relative(core, ref["core"][:, h - 1]) < TOL
        weights, v = trace.stage("weights", h).value, trace.stage("v_conv", h).value
        assert relative(weights @ v, core) < 1e-10
        assert np.allclose(np.triu(weights, 1), 0.0)


def _rows(linear) -> np.ndarray:
    return linear.weight.detach().numpy().T


def test_the_kda_keys_are_the_modules(lab):
    """f_proj and g_proj in one (wf, wz), A_log one per head, dt_bias one per channel, the
    safe gate's bound (the config's kda_lower_bound), the norm's eps (the config's
    rms_norm_eps); the unbounded gate without lower_bound."""
    got = lab("bailing", 1)
    module, keys = got["module"], got["problem"]["kimi_delta"]
    assert np.array_equal(keys["wf"], _rows(module.forget_gate.f_proj))
    assert np.array_equal(keys["wz"], _rows(module.g_proj))
    assert np.array_equal(keys["wb"], _rows(module.b_proj))
    assert keys["lower_bound"] == module.forget_gate.lower_bound == -3.0
    assert np.shape(keys["wf"]) == (32, 32) and np.shape(keys["a_log"]) == (4,)
    assert np.shape(keys["conv"]) == (4, 3 * 32) and np.shape(keys["dt_bias"]) == (32,)
    assert keys["norm_eps"] == module.o_norm.variance_epsilon == 1e-5
    assert not {"wf_a", "wf_b", "wg_a", "wg_b", "g", "beta"} & set(keys)
    wide = lab("bailing-wide", 2)["problem"]["kimi_delta"]
    assert "lower_bound" not in wide and np.shape(wide["conv"]) == (3, 96)


def test_the_mla_keys_are_the_modules(lab):
    """The rotation "pairs" on the qk_rope_head_dim columns; kv_a_layernorm's own eps (1e-6,
    not the config's 1e-5); g_proj's logit per head repeated over its d_v columns; the scale
    qk_head_dim^−½, times mscale² under YaRN; the query latent where transformers has it."""
    plain, wide = lab("bailing", 2), lab("bailing-wide", 0)
    for got in (plain, wide):
        problem, module = got["problem"], got["module"]
        mla = problem["mla"]
        assert problem["rope"]["style"] == "pairs" and problem["rope"]["dims"] == 4
        assert mla["eps"] == module.kv_a_layernorm.variance_epsilon == 1e-6
        gate = _rows(module.g_proj)  # [d_model, H]
        assert np.array_equal(problem["wg"], np.repeat(gate, 5, axis=1))
    assert "scale" not in plain["problem"]  # 1/√10, the default
    assert wide["problem"]["scale"] == wide["module"].scaling != 10**-0.5
    assert ("wq_a" in wide["problem"]["mla"]) == bool(LATENT)


def test_each_part_of_the_layers_is_needed(lab):
    """Without the bound (the unbounded decay), the MLA layer's gate, with the config's eps or
    the half-split rotation: each output is another."""
    import qkvcalc

    kda, mla = lab("bailing", 0), lab("bailing", 2)
    keys = kda["problem"]["kimi_delta"]
    unbounded = {k: v for k, v in keys.items() if k != "lower_bound"}
    other = qkvcalc.explain(**{**kda["problem"], "kimi_delta": unbounded})
    assert relative(other.output, kda["reference"]["out"]) > 1e-3
    problem = mla["problem"]
    for changed, far in (
        ({k: v for k, v in problem.items() if k != "wg"}, 1e-3),
        ({**problem, "mla": {**problem["mla"], "eps": 1e-5}}, 1e-7),
        ({**problem, "rope": {**problem["rope"], "style": "half"}}, 1e-3),
    ):
        assert relative(qkvcalc.explain(**changed).output, mla["reference"]["out"]) > far


@pytest.mark.parametrize(("name", "layer"), [("bailing", 0), ("bailing-wide", 1)])
def test_the_gates_are_the_forget_gate_s(lab, name, layer):
    """Each head's g as BailingHybridForgetGate makes it (bounded: in (−3, 0)), β = σ(X·W_b)."""
    got = lab(name, layer)
    module, trace = got["module"], got["trace"]
    x = torch.tensor(got["reference"]["x"])[None]
    with torch.no_grad(), true_float64():
        g = module.forget_gate(x)[0].numpy()  # [n, H, d]
        beta = torch.sigmoid(module.b_proj(x))[0].numpy()
    for h in range(1, 5):
        gates = trace.stage("gates", h).value
        assert relative(gates[:, :-1], g[:, h - 1]) < 1e-12
        assert relative(gates[:, -1], beta[:, h - 1]) < 1e-12
        assert (gates[:, :-1] < 0).all()
    bounded = trace.stage("gates", 1)
    assert (bounded.topic == "kda_gates_bounded") == (name == "bailing")
    if name == "bailing":
        assert (trace.stage("gates", 1).value[:, :-1] > -3.0).all()
        assert [s.id for s in trace.stages if s.head == 1][:6] == [
            "q",
            "k",
            "v",
            "q_conv",
            "k_conv",
            "v_conv",
        ]
        assert not any(s.id in ("f_a", "g_a") for s in trace.stages)


def _explain(problem, tmp_path, *args: str) -> subprocess.CompletedProcess:
    from qkvcalc.extract import write_problem

    file = tmp_path / "layer.json"
    with file.open("w") as out:
        write_problem(problem, out)
    argv = [sys.executable, "-m", "qkvcalc", "explain", str(file), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize(("name", "layer"), [("bailing", 1), ("bailing-wide", 0)])
def test_the_torch_script_agrees(lab, tmp_path, name, layer):
    """--format torch of a KDA layer (W_f, the bounded decay, W_z) and of an MLA layer with its
    gate: the script runs and PyTorch agrees with qkvcalc."""
    made = _explain(lab(name, layer)["problem"], tmp_path, "--format", "torch")
    assert made.returncode == 0, made.stderr
    if name == "bailing":
        assert "W_f = t(" in made.stdout and "W_z = t(" in made.stdout
        assert "-3 * torch.sigmoid(" in made.stdout
    script = tmp_path / "layer.py"
    script.write_text(made.stdout)
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0 and "OK: PyTorch agrees" in ran.stdout, ran.stdout + ran.stderr


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_page_of_a_kda_layer_names_its_gates(lab, tmp_path, lang):
    """The terminal page with its arithmetic, in both languages: F straight from X, the bounded
    decay with its bound, Z straight from X."""
    ran = _explain(lab("bailing", 0)["problem"], tmp_path, "--lang", lang, "--detail", "full")
    assert ran.returncode == 0, ran.stderr
    if lang == "en":
        words = ["X times this head's d_k columns of W_f", "(b, 0)", "the bound is b = −3"]
    else:
        words = ["X에 W_f(f_proj", "(b, 0) 안에", "하한은 b = −3"]
    words += ["g = −3·σ(e^(", "Z = X·W_z[:, 1…8]", "F = X·W_f[:, 1…8]"]
    for word in words:
        assert word in " ".join(ran.stdout.split()), word


def test_a_cell_of_the_bounded_decay_is_worked(lab):
    """g[t, c] = b×σ(e^(A_log)×(F + dt_bias)) written out with the cell's own numbers (a
    negative factor in brackets, as every work line writes it), and equal to the stage's value;
    β's cell is σ(b)."""
    import math

    from qkvcalc.render.arith import Style, cell_work

    got = lab("bailing", 0)
    trace = got["trace"]
    gates, f = trace.stage("gates", 2), trace.stage("f", 2).value
    a_log = float(got["problem"]["kimi_delta"]["a_log"][1])
    dt_bias = float(got["problem"]["kimi_delta"]["dt_bias"][8 + 2])
    line = cell_work(gates, 3, 2, Style())
    assert line is not None and line.startswith("[4,3]: (-3)×σ(e^(")
    assert f"{f[3, 2]:.4f}" in line and f"{dt_bias:.4f}" in line
    inner = math.exp(a_log) * (f[3, 2] + dt_bias)
    assert gates.value[3, 2] == pytest.approx(-3.0 / (1.0 + math.exp(-inner)), rel=1e-12)
    assert line.endswith(f"{gates.value[3, 2]:.4f}")
    beta = cell_work(gates, 3, 8, Style())
    assert beta is not None and "σ(" in beta and "-3" not in beta


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"wf_a": np.zeros((32, 4))}, "kimi_delta.both_forms", ["wf", "wf_a, wf_b"]),
        ({"wg_b": np.zeros((4, 32))}, "kimi_delta.both_forms", ["wz", "wg_a, wg_b"]),
        ({"lower_bound": 0.5}, "kimi_delta.lower_bound", ["0.5"]),
        ({"lower_bound": True}, "kimi_delta.lower_bound", ["true"]),
        ({"wf": np.zeros((32, 31))}, "kimi_delta.weight_shape", ["wf", "32×31", "32×32"]),
        ({"wz": np.zeros((31, 32))}, "kimi_delta.weight_shape", ["wz", "31×32", "32×32"]),
    ],
)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_bad_key_is_one_message(lab, change, key, words, lang):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    problem = lab("bailing", 0)["problem"]
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**{**problem, "kimi_delta": {**problem["kimi_delta"], **change}})
    assert err.value.msg.key == key
    text = err.value.message(lang)
    assert "\n" not in text and all(word in text for word in words), text


def test_missing_pieces_are_named(lab):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    problem = lab("bailing", 0)["problem"]
    keys = problem["kimi_delta"]
    for dropped, key in (
        ("dt_bias", "kimi_delta.made_needs"),
        ("norm", "kimi_delta.norm_needs"),
        ("wz", "kimi_delta.norm_needs"),
    ):
        with pytest.raises(QkvcalcError) as err:
            qkvcalc.explain(
                **{**problem, "kimi_delta": {k: v for k, v in keys.items() if k != dropped}}
            )
        assert err.value.msg.key == key and dropped in str(err.value)
    alone = {k: v for k, v in keys.items() if k not in ("wf", "a_log", "dt_bias", "wb")}
    with pytest.raises(QkvcalcError) as err:  # the bound without the gates it bounds
        qkvcalc.explain(**{**problem, "kimi_delta": alone})
    assert err.value.msg.key == "kimi_delta.made_needs" and "wf_a" in str(err.value)


def test_the_torch_layout_and_json_give_the_same_layer(lab, tmp_path):
    """wf and wz given out × in (layout "torch"): the same output, echoed in the rows layout
    (a JSON trace's "input" says "rows" of every weight: tests/test_echo_layout.py); the
    problem written as JSON and as npz explains to the same output."""
    import json

    import qkvcalc
    from qkvcalc.extract import write_arrays, write_problem
    from qkvcalc.input.arrays import load_npz
    from qkvcalc.ops.kimi_delta import _echo

    got = lab("bailing", 1)
    problem, out = got["problem"], got["reference"]["out"]
    keys = problem["kimi_delta"]
    turned = {name: np.asarray(problem[name]).T for name in ("wq", "wk", "wv", "wo")}
    layer = {k: (np.asarray(v).T if k in ("wf", "wb", "wz") else v) for k, v in keys.items()}
    trace = qkvcalc.explain(**{**problem, **turned, "kimi_delta": layer, "layout": "torch"})
    assert relative(trace.output, out) < TOL
    echoed = _echo(trace.problem.variants.features["kimi_delta"])
    assert np.array_equal(echoed["wf"], keys["wf"]) and echoed["lower_bound"] == -3.0
    file, packed = tmp_path / "layer.json", tmp_path / "layer.npz"
    with file.open("w") as sink:
        write_problem(problem, sink)
    assert relative(qkvcalc.explain(**json.loads(file.read_text())).output, out) < TOL
    with packed.open("wb") as sink:
        write_arrays(problem, sink)
    doc = load_npz(packed.read_bytes(), str(packed), 10**9)
    assert relative(qkvcalc.explain(**doc).output, out) < TOL


def test_heads_shows_the_mla_layer_and_draws_the_kda_layers(lab):
    """qkvcalc heads: the MLA layer's maps are the module's own softmax weights; the KDA
    layers are drawn under their own numbers, marked implicit, each head's W·V its core
    output; the page says so in both languages."""
    from qkvcalc.extract.heads import attention_maps
    from qkvcalc.render.heads import heads_text

    got = lab("bailing", 2)
    run = attention_maps(str(got["folder"]), input_ids=ids(), dtype="float64", problems=True)
    assert run.layers == [0, 1, 2] and sorted(run.implicit) == [0, 1]
    own = attention_weights(got["model"], got["module"])
    assert relative(run.weights[2], own) < TOL
    assert relative(run.weights[2], got["trace"].weights) < 1e-12
    for layer in (0, 1):
        trace = lab("bailing", layer)["trace"]
        core = lab("bailing", layer)["reference"]["core"]
        for h in range(1, 5):
            assert relative(run.weights[layer][h - 1], trace.stage("weights", h).value) < 1e-12
            v = trace.stage("v_conv", h).value
            assert relative(run.weights[layer][h - 1] @ v, core[:, h - 1]) < TOL
    for lang in ("en", "ko"):
        text = " ".join(heads_text(run, lang, 120).split())
        assert "Kimi Delta Attention" in text


def test_a_bound_the_key_cannot_read_is_one_message(tmp_path):
    """kda_lower_bound at or above 0 (the decay e^g would reach 1 or more): refused at extract,
    one line naming the layer and the bound; exit 2, nothing on stdout."""
    model = build("bailing", kda_lower_bound=0.5)
    model.save_pretrained(tmp_path / "bound")
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(tmp_path / "bound"), "--layer", "0"]
    result = subprocess.run(
        [*argv, "--ids", "1 2 3", "--dtype", "float64"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "layer 0" in lines[0] and "0.5" in lines[0] and "kda_lower_bound" in lines[0]


def test_ling_is_read_not_refused():
    from qkvcalc.extract.hybrid import NOT_READ, READ
    from qkvcalc.extract.runner import families

    assert "bailing_hybrid" in set(READ) & set(families()) and "bailing_hybrid" not in NOT_READ
    assert families()["bailing_hybrid"].names["bailing_hybrid"] == "Ling 3.0 (Bailing hybrid)"
