"""qkvcalc extract on Kimi Linear's Kimi Delta Attention layers (issue 37, item 3): a KDA layer
becomes a problem of the kimi_delta key with the whole layer around its core — q_proj, k_proj,
v_proj, the causal convolution and SiLU, each Key channel's decay made from X (f_a_proj,
f_b_proj, A_log, dt_bias), β = σ(X·W_b), the gated RMSNorm with σ(X·W_ga·W_gb), and o_proj.

Against transformers itself (tiny float64 models from configs, random weights, eager,
save_pretrained, extract in float64, then explain): x to 1e-12; the KDA module's own output
(KimiLinearDeltaAttention.forward, its float32 casts lifted: true_float64) to 1e-8 relative;
each head's core output (o_norm's input) to 1e-8, and each head's implicit weights times its V
equal to it; the chunked form equal to the recurrence; the MLA layers beside it still equal to
their module. A config that lies about the layer's sizes, or a convolution with another
activation, is refused with one message."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.test_extract import build_from, true_float64
from tests.test_extract_hybrid import EAGER
from tests.test_extract_more import TOL, at, ids, relative
from tests.test_extract_new import kept_float32
from tests.test_extract_swa_kimi import KIMI

torch = pytest.importorskip("torch")

# name: the config's fields, the layers extracted (KDA and MLA)
CASES = {
    "kimi_linear": ({**KIMI, "q_lora_rank": 12}, {"kda": (0,), "mla": (1,)}),
    # an MLA layer first, then two KDA layers of 2 heads of 6, three taps: each KDA layer's x
    # has passed through both kinds
    "kimi_linear-wide": (
        {
            **KIMI,
            "q_lora_rank": None,
            "linear_num_heads": 2,
            "linear_head_dim": 6,
            "linear_conv_kernel_dim": 3,
            "layer_types": ["full_attention", "linear_attention", "linear_attention"],
        },
        {"kda": (1, 2), "mla": (0,)},
    ),
}
WHERE = [(name, layer) for name, (_, kinds) in CASES.items() for layer in kinds["kda"]]
PATH = "model.layers.{}.self_attn"


def reference(model, module) -> dict:
    """transformers' own forward, truly float64: the module's input x, its output, and each
    head's core output (o_norm's input) [n, H, d]."""
    seen: dict = {}

    def grab_x(mod, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].detach().clone()

    def grab_out(mod, args, out):
        seen["out"] = (out[0] if isinstance(out, tuple) else out)[0].detach().clone()

    def grab_core(mod, args):
        seen["core"] = args[0][0].detach().clone()

    hooks = [
        module.register_forward_pre_hook(grab_x, with_kwargs=True),
        module.register_forward_hook(grab_out),
    ]
    if hasattr(module, "o_norm"):
        hooks.append(module.o_norm.register_forward_pre_hook(grab_core))
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for hook in hooks:
            hook.remove()
    return {key: value.numpy() for key, value in seen.items()}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved and extracted once per layer, lazily."""
    import qkvcalc

    root = tmp_path_factory.mktemp("kda")
    models: dict = {}
    out: dict = {}

    def get(name: str, layer: int) -> dict:
        if name not in models:
            model = build_from("KimiLinearConfig", CASES[name][0], "KimiLinearForCausalLM", **EAGER)
            kept_float32(model)  # 5.25 keeps Kimi's router and dt_bias in float32
            model.save_pretrained(root / name)
            models[name] = model
        if (name, layer) not in out:
            model, folder = models[name], root / name
            module = at(model, PATH, layer)
            problem = qkvcalc.extract(str(folder), layer=layer, input_ids=ids(), dtype="float64")
            out[(name, layer)] = {
                "problem": problem,
                "reference": reference(model, module),
                "module": module,
                "folder": folder,
                "trace": qkvcalc.explain(**problem),
            }
        return out[(name, layer)]

    return get


@pytest.mark.parametrize(("name", "layer"), WHERE, ids=[f"{n}-{i}" for n, i in WHERE])
def test_the_kda_layer_equals_transformers(lab, name, layer):
    got = lab(name, layer)
    problem, ref, trace, module = got["problem"], got["reference"], got["trace"], got["module"]
    assert type(module).__name__ == "KimiLinearDeltaAttention"
    assert relative(problem["x"], ref["x"]) < 1e-12
    assert relative(trace.output, ref["out"]) < TOL
    assert f"linear-attention (Kimi Delta Attention) layer {layer}" in problem["description"]
    heads = problem["heads"]
    assert heads == module.num_heads and "kv_heads" not in problem
    for h in range(1, heads + 1):
        core = trace.stage("output", h).value
        assert relative(core, ref["core"][:, h - 1]) < TOL
        # the layer is linear in V: the head's implicit weights times its V are its core output
        weights, v = trace.stage("weights", h).value, trace.stage("v_conv", h).value
        assert relative(weights @ v, core) < 1e-10
        assert np.allclose(np.triu(weights, 1), 0.0)


@pytest.mark.parametrize(("name", "layer"), [("kimi_linear", 1), ("kimi_linear-wide", 0)])
def test_the_mla_layers_beside_it_still_equal_transformers(lab, name, layer):
    got = lab(name, layer)
    problem, ref, trace = got["problem"], got["reference"], got["trace"]
    assert "mla" in problem and "kimi_delta" not in problem
    assert relative(problem["x"], ref["x"]) < 1e-12
    assert relative(trace.output, ref["out"]) < TOL


def test_the_keys_are_the_modules(lab):
    """What the problem says, read from the module: each weight in the row layout, A_log one
    per head, dt_bias one per channel, the norm's own eps (the config's rms_norm_eps)."""
    got = lab("kimi_linear-wide", 2)
    problem, module = got["problem"], got["module"]
    keys = problem["kimi_delta"]

    def w(linear):
        return linear.weight.detach().numpy().T

    assert np.array_equal(problem["wq"], w(module.q_proj))
    assert np.array_equal(keys["wf_a"], w(module.forget_gate.f_a_proj))
    assert np.array_equal(keys["wf_b"], w(module.forget_gate.f_b_proj))
    assert np.array_equal(keys["wg_b"], w(module.g_b_proj))
    assert np.shape(keys["conv"]) == (3, 3 * 2 * 6) and np.shape(keys["a_log"]) == (2,)
    assert np.shape(keys["dt_bias"]) == (12,) and np.shape(keys["wf_b"]) == (6, 12)
    assert keys["norm_eps"] == module.o_norm.variance_epsilon == module.layer_norm_epsilon
    assert "g" not in keys and "beta" not in keys


def test_each_part_of_the_layer_is_needed(lab):
    """Without the convolution, the gated norm, dt_bias, or with the norm's weight as 1 + w,
    the output is another: each key the problem carries is the layer's."""
    import qkvcalc

    got = lab("kimi_linear", 0)
    problem, ref = got["problem"], got["reference"]
    keys = problem["kimi_delta"]
    for changed in (
        {k: v for k, v in keys.items() if k != "conv"},
        {k: v for k, v in keys.items() if k not in ("wg_a", "wg_b", "norm", "norm_eps")},
        {**keys, "norm": keys["norm"] + 1.0},
        {**keys, "dt_bias": keys["dt_bias"] * 0.0},
    ):
        other = qkvcalc.explain(**{**problem, "kimi_delta": changed})
        assert relative(other.output, ref["out"]) > 1e-3


def test_the_gates_are_made_channel_by_channel(lab):
    """Each head's g: one decay per Key channel, as KimiLinearForgetGate makes them; β = σ(b)."""
    got = lab("kimi_linear-wide", 1)
    module, trace = got["module"], got["trace"]
    x = torch.tensor(got["reference"]["x"])[None]
    with torch.no_grad(), true_float64():
        g = module.forget_gate(x)[0].numpy()  # [n, H, d]
        beta = torch.sigmoid(module.b_proj(x))[0].numpy()
    for h in (1, 2):
        gates = trace.stage("gates", h).value
        assert relative(gates[:, :-1], g[:, h - 1]) < 1e-12
        assert relative(gates[:, -1], beta[:, h - 1]) < 1e-12
        assert np.ptp(gates[:, :-1], axis=1).min() > 0  # the channels differ


def test_the_chunked_form_equals_the_recurrence(lab):
    import qkvcalc

    problem = lab("kimi_linear-wide", 2)["problem"]
    chunked = {**problem, "kimi_delta": {**problem["kimi_delta"], "chunk": 5}}
    trace = qkvcalc.explain(**chunked)
    for h in range(1, problem["heads"] + 1):
        out = trace.stage("output", h).value
        assert relative(trace.stage("chunked", h).value, out) < 1e-10
    notes = [n.key for n in trace.stage("output", 1).notes]
    assert "note.kda_chunked_equal" in notes and "note.kda_linear_in_v" in notes


def test_the_problem_round_trips_through_json_and_npz(lab, tmp_path):
    import zipfile

    import qkvcalc
    from qkvcalc.extract import write_arrays, write_problem
    from qkvcalc.input.arrays import load_npz

    got = lab("kimi_linear", 0)
    file = tmp_path / "layer.json"
    with file.open("w") as out:
        write_problem(got["problem"], out)
    trace = qkvcalc.explain(**json.loads(file.read_text()))
    assert relative(trace.output, got["reference"]["out"]) < TOL
    packed = tmp_path / "layer.npz"
    with packed.open("wb") as out:
        write_arrays(got["problem"], out)
    assert {"kimi_delta.wf_b.npy", "kimi_delta.conv.npy"} <= set(zipfile.ZipFile(packed).namelist())
    doc = load_npz(packed.read_bytes(), str(packed), 10**9)
    assert relative(qkvcalc.explain(**doc).output, got["reference"]["out"]) < TOL


def test_the_torch_script_of_a_whole_layer_agrees(lab, tmp_path):
    """--format torch of an extracted layer: the convolution, the gates from X and the gated
    norm with σ written in PyTorch, run, and agreeing with qkvcalc."""
    from qkvcalc.extract import write_problem

    problem = lab("kimi_linear-wide", 1)["problem"]
    file, script = tmp_path / "layer.json", tmp_path / "layer.py"
    with file.open("w") as out:
        write_problem(problem, out)
    argv = [sys.executable, "-m", "qkvcalc", "explain", str(file), "--format", "torch"]
    made = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert made.returncode == 0, made.stderr
    assert "F.conv1d" in made.stdout and "W_fb" in made.stdout and "torch.sigmoid(z)" in made.stdout
    script.write_text(made.stdout)
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0 and "OK: PyTorch agrees" in ran.stdout, ran.stdout + ran.stderr


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_format_of_an_extracted_layer_runs(lab, tmp_path, lang):
    """The terminal page of a whole layer with its arithmetic, in both languages: every stage
    titled in the language asked, the sigmoid gate named as such."""
    from qkvcalc.extract import write_problem

    problem = lab("kimi_linear", 0)["problem"]
    file = tmp_path / "layer.json"
    with file.open("w") as out:
        write_problem(problem, out)
    argv = [sys.executable, "-m", "qkvcalc", "explain", str(file), "--lang", lang]
    ran = subprocess.run(
        [*argv, "--detail", "full"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    title = "정규화한 출력에 σ(Z)를 곱함" if lang == "ko" else "the normed output times σ(Z)"
    assert title in ran.stdout and "softplus" in ran.stdout


@pytest.mark.parametrize("stage", ["weights", "output"])
def test_the_quiz_names_a_mistake_after_the_convolution(lab, stage):
    """One decay per token instead of per channel, on an extracted layer: the quiz's mistakes
    read the convolved V."""
    from qkvcalc.ops.kimi_delta import implicit, scalar
    from qkvcalc.quiz.mistakes import recognise

    trace = lab("kimi_linear", 0)["trace"]
    q, k, v = (trace.stage(sid, 1).value for sid in ("q_l2", "k_l2", "v_conv"))
    gates = trace.stage("gates", 1).value
    wrong = implicit(q, k, scalar(gates[:, :-1]), gates[:, -1])
    wrong = wrong if stage == "weights" else wrong @ v
    found = recognise(trace, f"1/{stage}", np.round(wrong, 6), {}, 6)
    assert found is not None and found.id == "kda_decay_scalar"
    assert recognise(trace, f"1/{stage}", np.round(trace.stage(stage, 1).value, 6), {}, 6) is None


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"wf_b": np.zeros((5, 32))}, "kimi_delta.weight_shape", ["wf_b", "5×32", "8×32"]),
        ({"wb": np.zeros((32, 3))}, "kimi_delta.weight_shape", ["wb", "32×3", "32×4"]),
        ({"conv": np.zeros((2, 40))}, "kimi_delta.conv", ["2×40", "K × 96"]),
        ({"dt_bias": np.zeros(4)}, "kimi_delta.vector", ["dt_bias", "4", "32"]),
        ({"a_log": np.zeros(3)}, "kimi_delta.vector", ["a_log", "3", "4"]),
        ({"g": [[-1.0] * 32] * 12}, "kimi_delta.both_gates", ["wf_a, wf_b, a_log, dt_bias, wb"]),
        ({"norm_eps": 2}, "kimi_delta.norm_eps", ["2"]),
    ],
)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_key_of_the_wrong_size_is_one_message(lab, change, key, words, lang):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    problem = lab("kimi_linear", 0)["problem"]
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**{**problem, "kimi_delta": {**problem["kimi_delta"], **change}})
    assert err.value.msg.key == key
    text = err.value.message(lang)
    assert "\n" not in text and all(word in text for word in words), text


def test_missing_pieces_are_named(lab):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    problem = lab("kimi_linear", 0)["problem"]
    keys = problem["kimi_delta"]
    for dropped, key in (("dt_bias", "kimi_delta.made_needs"), ("wg_b", "kimi_delta.norm_needs")):
        with pytest.raises(QkvcalcError) as err:
            qkvcalc.explain(
                **{**problem, "kimi_delta": {k: v for k, v in keys.items() if k != dropped}}
            )
        assert err.value.msg.key == key and dropped in str(err.value)
    x = problem["x"]
    bare = {
        **{name: x @ problem[f"w{name}"] for name in ("q", "k", "v")},
        "heads": 4,
        "mask": "causal",
        "kimi_delta": {k: v for k, v in keys.items() if k != "conv"},
    }
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**bare)
    assert err.value.msg.key == "kimi_delta.needs_x"


def _cli_extract(folder, layer: int) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(folder), "--layer", str(layer)]
    return subprocess.run(
        [*argv, "--ids", "1 2 3", "--dtype", "float64"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("field", "said"), [("linear_num_heads", "4×32"), ("linear_head_dim", "8×32")]
)
def test_a_config_that_lies_about_the_layer_is_one_message(lab, tmp_path, field, said):
    """A checkpoint whose config says other sizes than its weights hold: one line naming a
    weight, its stored shape and the one the config makes; exit 2, no traceback."""
    folder = tmp_path / "lying"
    shutil.copytree(lab("kimi_linear", 0)["folder"], folder)
    config = json.loads((folder / "config.json").read_text())
    config[field] = config[field] * 2
    (folder / "config.json").write_text(json.dumps(config))
    result = _cli_extract(folder, 0)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "does not match its weights" in lines[0] and f"is {said} in the checkpoint" in lines[0]
    assert "above report" not in lines[0]  # transformers' pointer to a report nobody sees


def test_a_convolution_of_another_activation_is_one_message(tmp_path):
    """hidden_act other than SiLU (the convolution's activation): refused, naming it."""
    fields = {**KIMI, "q_lora_rank": 12, "hidden_act": "gelu"}
    model = build_from("KimiLinearConfig", fields, "KimiLinearForCausalLM", **EAGER)
    model.save_pretrained(tmp_path / "gelu")
    result = _cli_extract(tmp_path / "gelu", 0)
    assert result.returncode == 2 and result.stdout == "", result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "gelu" in lines[0] and "Kimi Delta Attention" in lines[0]


def test_the_torch_layout_gives_the_same_layer(lab):
    """The weights given out × in (layout "torch", as nn.Linear stores them, W_fb and W_gb
    r wide): the same output, and the echo writes them in the rows layout (a JSON trace's
    "input" says "rows" of every weight: tests/test_echo_layout.py)."""
    import qkvcalc

    got = lab("kimi_linear-wide", 1)
    problem = got["problem"]
    keys = problem["kimi_delta"]
    turned = {name: np.asarray(problem[name]).T for name in ("wq", "wk", "wv", "wo")}
    layer = {k: (np.asarray(v).T if k in ("wf_a", "wf_b", "wb", "wg_a", "wg_b") else v)
             for k, v in keys.items()}  # fmt: skip
    trace = qkvcalc.explain(**{**problem, **turned, "kimi_delta": layer, "layout": "torch"})
    assert relative(trace.output, got["reference"]["out"]) < TOL
    from qkvcalc.ops.kimi_delta import _echo

    echoed = _echo(trace.problem.variants.features["kimi_delta"])
    assert np.array_equal(echoed["wf_b"], keys["wf_b"]) and np.shape(echoed["wf_b"]) == (6, 12)
