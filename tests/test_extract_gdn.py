"""qkvcalc extract on the Gated DeltaNet layers of Qwen3-Next, Qwen3.5 and OLMo-Hybrid (issue 37,
item 3): a linear-attention layer becomes a problem of the gated_delta key with the whole layer
around its core — in_proj_qkvz / in_proj_ba (Qwen3-Next, grouped by key head), in_proj_qkv, _z,
_b, _a (Qwen3.5) or OLMo-Hybrid's q/k/v/a/b/g projections, the causal convolution and SiLU, g
and β made from X (OLMo-Hybrid's β = 2·σ(b): beta_scale), the gated RMSNorm and out_proj (or
o_proj).

Against transformers itself (tiny float64 models from configs, random weights, eager,
save_pretrained, extract in float64, then explain): x to 1e-12; the linear_attn module's own
output (Qwen3NextGatedDeltaNet.forward, its float32 casts lifted: true_float64) to 1e-8
relative; each head's core output (the gated norm's input) to 1e-8, and each head's implicit
weights times its V equal to it; a value head count twice the key head count (each key head
serves two value heads); the chunked form equal to the recurrence. A checkpoint whose config
lies about the layer's sizes is refused with one message."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.test_extract import build_from, true_float64
from tests.test_extract_hybrid import EAGER, LINEAR, MOE, OLMO, VISION, as_loaded
from tests.test_extract_more import LLAMA, TOL, at, ids, relative

torch = pytest.importorskip("torch")

GROUPED = {**LINEAR, "linear_num_key_heads": 1, "linear_num_value_heads": 2}
WIDE = {  # d_k ≠ d_v, three taps, four value heads on two key heads
    **LINEAR,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 4,
    "linear_value_head_dim": 6,
    "linear_conv_kernel_dim": 3,
}
TEXT = "model.layers.{}.linear_attn"
MULTIMODAL = "model.language_model.layers.{}.linear_attn"
CASES = {
    "qwen3_next": ("Qwen3NextConfig", {**LLAMA, **LINEAR, **MOE}, "Qwen3NextForCausalLM", TEXT),
    "qwen3_next-grouped": (
        "Qwen3NextConfig",
        {**LLAMA, **GROUPED, **MOE},
        "Qwen3NextForCausalLM",
        TEXT,
    ),
    "qwen3_next-wide": ("Qwen3NextConfig", {**LLAMA, **WIDE, **MOE}, "Qwen3NextForCausalLM", TEXT),
    "qwen3_5_text": ("Qwen3_5TextConfig", {**LLAMA, **WIDE}, "Qwen3_5ForCausalLM", TEXT),
    "qwen3_5": (
        "Qwen3_5Config",
        {"text_config": {**LLAMA, **GROUPED}, "vision_config": VISION},
        "Qwen3_5ForConditionalGeneration",
        MULTIMODAL,
    ),
    "qwen3_5_moe": (
        "Qwen3_5MoeConfig",
        {"text_config": {**LLAMA, **LINEAR, **MOE}, "vision_config": VISION},
        "Qwen3_5MoeForConditionalGeneration",
        MULTIMODAL,
    ),
    # OLMo-Hybrid: q/k/v/a/b/g projections of their own, o_norm (ε 1e-5), β = 2·σ(b)
    # (allow_neg_eigval, its default); and without it, two value heads on one key head
    "olmo_hybrid": ("OlmoHybridConfig", OLMO, "OlmoHybridForCausalLM", TEXT),
    "olmo_hybrid-grouped": (
        "OlmoHybridConfig",
        {
            **OLMO,
            "linear_num_key_heads": 1,
            "linear_num_value_heads": 2,
            "linear_allow_neg_eigval": False,
        },
        "OlmoHybridForCausalLM",
        TEXT,
    ),
}
LAYER = 0  # the linear-attention layer


def reference(model, module) -> dict:
    """transformers' own forward, truly float64: the linear_attn module's input x, its output,
    and each value head's core output (the gated norm's input) [n, H_v, d_v]."""
    seen: dict = {}

    def grab_x(mod, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].detach().clone()

    def grab_out(mod, args, out):
        seen["out"] = out[0].detach().clone()

    def grab_core(mod, args):
        seen["core"] = args[0].detach().clone()

    hooks = [
        module.register_forward_pre_hook(grab_x, with_kwargs=True),
        module.register_forward_hook(grab_out),
        (module.norm if hasattr(module, "norm") else module.o_norm).register_forward_pre_hook(
            grab_core
        ),
    ]
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for hook in hooks:
            hook.remove()
    n = seen["x"].shape[0]
    out = {key: value.numpy() for key, value in seen.items()}
    out["core"] = out["core"].reshape(n, module.num_v_heads, module.head_v_dim)
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    import qkvcalc

    root = tmp_path_factory.mktemp("gdn")
    out: dict = {}

    def get(name: str) -> dict:
        if name not in out:
            config, fields, model_name, path = CASES[name]
            model = build_from(config, fields, model_name, **EAGER)
            as_loaded(model, name)
            folder = root / name
            model.save_pretrained(folder)
            module = at(model, path, LAYER)
            problem = qkvcalc.extract(str(folder), layer=LAYER, input_ids=ids(), dtype="float64")
            out[name] = {
                "problem": problem,
                "reference": reference(model, module),
                "module": module,
                "folder": folder,
                "trace": qkvcalc.explain(**problem),
            }
        return out[name]

    return get


@pytest.mark.parametrize("name", list(CASES))
def test_the_linear_layer_equals_transformers(lab, name):
    got = lab(name)
    problem, ref, trace = got["problem"], got["reference"], got["trace"]
    assert relative(problem["x"], ref["x"]) < 1e-12
    assert relative(trace.output, ref["out"]) < TOL
    assert "linear-attention (Gated DeltaNet) layer 0" in problem["description"]
    # OLMo-Hybrid's β is 2·σ(b) unless the config turns allow_neg_eigval off
    assert problem["gated_delta"].get("beta_scale", 1.0) == (2.0 if name == "olmo_hybrid" else 1.0)
    heads = problem["heads"]
    assert heads == got["module"].num_v_heads
    for h in range(1, heads + 1):
        core = trace.stage("output", h).value
        assert relative(core, ref["core"][:, h - 1]) < TOL
        # the layer is linear in V: the head's implicit weights times its V are its core output
        weights, v = trace.stage("weights", h).value, trace.stage("v_conv", h).value
        assert relative(weights @ v, core) < 1e-10
        assert np.allclose(np.triu(weights, 1), 0.0)


@pytest.mark.parametrize("name", ["qwen3_next", "qwen3_5_text", "olmo_hybrid"])
def test_each_part_of_the_layer_is_needed(lab, name):
    """Without the convolution, the gated norm, or with the norm's weight as 1 + w, the output
    is another: each key the problem carries is the layer's."""
    import qkvcalc

    got = lab(name)
    problem, ref = got["problem"], got["reference"]
    keys = problem["gated_delta"]
    changes = [
        {k: v for k, v in keys.items() if k != "conv"},
        {k: v for k, v in keys.items() if k not in ("wz", "norm", "norm_eps")},
        {**keys, "norm": keys["norm"] + 1.0},
        {**keys, "dt_bias": keys["dt_bias"] * 0.0},
    ]
    if "beta_scale" in keys:  # OLMo-Hybrid's β = 2·σ(b): σ(b) alone is another layer
        changes.append({k: v for k, v in keys.items() if k != "beta_scale"})
    for changed in changes:
        other = qkvcalc.explain(**{**problem, "gated_delta": changed})
        assert relative(other.output, ref["out"]) > 1e-3


def test_the_grouped_value_heads_read_their_key_head(lab):
    """Two value heads on one key head: both read the same q and k (W_Q's and W_K's columns,
    and the convolution's q and k taps, repeated), each with its own V, gates and state."""
    got = lab("qwen3_next-grouped")
    problem, trace = got["problem"], got["trace"]
    assert problem["heads"] == 2 and np.shape(problem["wq"]) == (32, 16)
    assert np.array_equal(problem["wq"][:, :8], problem["wq"][:, 8:])
    conv = problem["gated_delta"]["conv"]
    assert np.array_equal(conv[:, :8], conv[:, 8:16]) and conv.shape == (2, 16 + 16 + 16)
    assert np.array_equal(trace.stage("q_l2", 1).value, trace.stage("q_l2", 2).value)
    assert not np.allclose(trace.stage("gates", 1).value, trace.stage("gates", 2).value)


def test_the_qkvz_interleaving_is_read_as_transformers_orders_it(lab):
    """Qwen3-Next's in_proj_qkvz, grouped by key head: value head i's V columns are those
    fix_query_key_value_ordering gives it (checked on the module's own split)."""
    got = lab("qwen3_next-wide")
    module, problem = got["module"], got["problem"]
    x = torch.tensor(got["reference"]["x"])[None]
    with torch.no_grad():
        q, k, v, z, b, a = module.fix_query_key_value_ordering(
            module.in_proj_qkvz(x), module.in_proj_ba(x)
        )
    xs = got["reference"]["x"]
    assert relative(xs @ problem["wv"], v[0].reshape(len(xs), -1).numpy()) < 1e-12
    assert relative(xs @ problem["gated_delta"]["wz"], z[0].reshape(len(xs), -1).numpy()) < 1e-12
    assert relative(xs @ problem["gated_delta"]["wa"], a[0].numpy()) < 1e-12
    assert relative(xs @ problem["gated_delta"]["wb"], b[0].numpy()) < 1e-12
    per = module.num_v_heads // module.num_k_heads
    for name, found in (("wq", q), ("wk", k)):
        w = problem[name].reshape(32, module.num_v_heads, module.head_k_dim)[:, ::per]
        assert relative(xs @ w.reshape(32, -1), found[0].reshape(len(xs), -1).numpy()) < 1e-12


@pytest.mark.parametrize("name", ["qwen3_next-wide", "qwen3_5"])
def test_the_chunked_form_equals_the_recurrence(lab, name):
    import qkvcalc

    problem = lab(name)["problem"]
    chunked = {**problem, "gated_delta": {**problem["gated_delta"], "chunk": 3}}
    trace = qkvcalc.explain(**chunked)
    for h in range(1, problem["heads"] + 1):
        out = trace.stage("output", h).value
        assert relative(trace.stage("chunked", h).value, out) < 1e-10
    notes = [n.key for n in trace.stage("output", 1).notes]
    assert "note.gdn_chunked_equal" in notes and "note.gdn_linear_in_v" in notes


def test_the_problem_round_trips_through_json(lab, tmp_path):
    """Written as extract writes it, read back by explain: the same output."""
    import qkvcalc
    from qkvcalc.extract import write_problem

    got = lab("qwen3_5_moe")
    file = tmp_path / "layer.json"
    with file.open("w") as out:
        write_problem(got["problem"], out)
    trace = qkvcalc.explain(**json.loads(file.read_text()))
    assert relative(trace.output, got["reference"]["out"]) < TOL


def test_the_attention_layer_still_extracts_and_mamba_stays_refused(lab, tmp_path):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    folder = lab("qwen3_next")["folder"]
    problem = qkvcalc.extract(str(folder), layer=1, input_ids=ids(), dtype="float64")
    assert "gated_delta" not in problem and "wg" in problem
    from tests.test_extract_hybrid import CASES as HYBRIDS

    config, fields, model_name, _ = HYBRIDS["bamba"]
    model = build_from(config, fields, model_name, **EAGER)
    model.save_pretrained(tmp_path / "bamba")
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.extract(str(tmp_path / "bamba"), layer=0, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.not_attention"
    assert "state-space (Mamba)" in str(err.value)


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ({"wa": np.zeros((32, 3))}, "gated_delta.weight_shape", ["wa", "32×3", "32×2"]),
        ({"conv": np.zeros((2, 40))}, "gated_delta.conv", ["2×40", "K × 48"]),
        ({"a_log": np.zeros(3)}, "gated_delta.vector", ["a_log", "3", "2"]),
        ({"norm": np.zeros(7)}, "gated_delta.vector", ["norm", "7", "8"]),
        ({"g": [[-1.0] * 2] * 7}, "gated_delta.both_gates", ["wa, wb, a_log, dt_bias"]),
        ({"norm_eps": 2}, "gated_delta.norm_eps", ["2"]),
        ({"beta_scale": 3}, "gated_delta.beta_scale", ["beta_scale", "3"]),
    ],
)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_key_of_the_wrong_size_is_one_message(lab, change, key, words, lang):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    problem = lab("qwen3_next")["problem"]
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**{**problem, "gated_delta": {**problem["gated_delta"], **change}})
    assert err.value.msg.key == key
    text = err.value.message(lang)
    assert "\n" not in text and all(word in text for word in words), text


def test_missing_pieces_are_named(lab):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    problem = lab("qwen3_next")["problem"]
    keys = problem["gated_delta"]
    for dropped, key in (("dt_bias", "gated_delta.made_needs"), ("norm", "gated_delta.norm_pair")):
        with pytest.raises(QkvcalcError) as err:
            qkvcalc.explain(
                **{**problem, "gated_delta": {k: v for k, v in keys.items() if k != dropped}}
            )
        assert err.value.msg.key == key and dropped in str(err.value)
    given = {k: problem[k] for k in ("wq", "wk", "wv")}
    x = problem["x"]
    bare = {
        "q": x @ given["wq"],
        "k": x @ given["wk"],
        "v": x @ given["wv"],
        "heads": 2,
        "mask": "causal",
        "gated_delta": {k: v for k, v in keys.items() if k != "conv"},
    }
    with pytest.raises(QkvcalcError) as err:
        qkvcalc.explain(**bare)
    assert err.value.msg.key == "gated_delta.needs_x"


def test_a_config_that_lies_about_the_layer_is_one_message(lab, tmp_path):
    """A checkpoint whose config says more value heads than its weights hold: transformers
    cannot load it, and extract says so in one message (no traceback)."""
    import shutil
    import subprocess
    import sys

    folder = tmp_path / "lying"
    shutil.copytree(lab("qwen3_next")["folder"], folder)
    config = json.loads((folder / "config.json").read_text())
    config["linear_num_value_heads"] = 4
    (folder / "config.json").write_text(json.dumps(config))
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(folder), "--layer", "0"]
    result = subprocess.run(
        [*argv, "--ids", "1 2 3", "--dtype", "float64"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "does not match its weights" in lines[0], lines[0]


def test_the_problem_round_trips_through_npz_with_its_nested_arrays(lab, tmp_path):
    """extract --output layer.npz: gated_delta's matrices are members of their own
    (`gated_delta.wz.npy`), not numbers in the JSON member; read back, the same output."""
    import zipfile

    import qkvcalc
    from qkvcalc.extract import write_arrays
    from qkvcalc.input.arrays import load_npz

    got = lab("qwen3_next-grouped")
    file = tmp_path / "layer.npz"
    with file.open("wb") as out:
        write_arrays(got["problem"], out)
    names = set(zipfile.ZipFile(file).namelist())
    assert {"gated_delta.conv.npy", "gated_delta.wz.npy", "gated_delta.wa.npy"} <= names
    assert "gated_delta.a_log.npy" not in names  # a vector stays in the JSON member
    doc = load_npz(file.read_bytes(), str(file), 10**9)
    assert doc["gated_delta"]["norm_eps"] == got["problem"]["gated_delta"]["norm_eps"]
    assert np.array_equal(doc["gated_delta"]["wz"], got["problem"]["gated_delta"]["wz"])
    trace = qkvcalc.explain(**doc)
    assert relative(trace.output, got["reference"]["out"]) < TOL


def test_the_torch_script_of_a_whole_layer_agrees(lab, tmp_path):
    """--format torch of an extracted layer: the convolution, the gates from X and the gated
    norm written in PyTorch, run, and agreeing with qkvcalc."""
    import subprocess
    import sys

    from qkvcalc.extract import write_problem

    problem = lab("qwen3_next-grouped")["problem"]
    file, script = tmp_path / "layer.json", tmp_path / "layer.py"
    with file.open("w") as out:
        write_problem(problem, out)
    argv = [sys.executable, "-m", "qkvcalc", "explain", str(file), "--format", "torch"]
    made = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert made.returncode == 0, made.stderr
    assert "F.conv1d" in made.stdout and "F.softplus" in made.stdout and "W_z" in made.stdout
    script.write_text(made.stdout)
    ran = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert ran.returncode == 0 and "OK: PyTorch agrees" in ran.stdout, ran.stdout + ran.stderr


@pytest.mark.parametrize("stage", ["weights", "output"])
def test_the_quiz_names_a_mistake_after_the_convolution(lab, stage):
    """The decay left out, on an extracted layer: the quiz's mistakes read the convolved V."""
    from qkvcalc.ops.gated_delta import implicit
    from qkvcalc.quiz.mistakes import recognise

    trace = lab("qwen3_next")["trace"]
    q, k, v = (trace.stage(sid, 1).value for sid in ("q_l2", "k_l2", "v_conv"))
    gates = trace.stage("gates", 1).value
    wrong = implicit(q, k, 0 * gates[:, 0], gates[:, 1])
    wrong = wrong if stage == "weights" else wrong @ v
    found = recognise(trace, f"1/{stage}", np.round(wrong, 6), {}, 6)
    assert found is not None and found.id == "gdn_decay_missing"
    truth = np.round(trace.stage(stage, 1).value, 6)
    assert recognise(trace, f"1/{stage}", truth, {}, 6) is None


def test_a_model_of_linear_layers_only_extracts(tmp_path):
    """Every layer linear: transformers' forward with its cache on cannot even count the
    cache's tokens (Cache.get_seq_length raises for linear layers alone), so extract runs the
    model without a cache; each layer then equals the module's own output."""
    import qkvcalc

    fields = {**LLAMA, **LINEAR, **MOE, "layer_types": ["linear_attention"] * 2}
    model = build_from("Qwen3NextConfig", fields, "Qwen3NextForCausalLM", **EAGER)
    as_loaded(model, "qwen3_next")
    model.config.use_cache = False  # the reference run, as extract runs it
    model.save_pretrained(tmp_path)
    for layer in (0, 1):
        module = at(model, TEXT, layer)
        problem = qkvcalc.extract(str(tmp_path), layer=layer, input_ids=ids(), dtype="float64")
        assert relative(qkvcalc.explain(**problem).output, reference(model, module)["out"]) < TOL


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_models_own_forward_failing_is_one_message(lab, monkeypatch, lang):
    """transformers raising inside its own forward, before the layer is reached, is named as
    that (its exception's type and first line), not passed out as a traceback."""
    from transformers import AutoModelForCausalLM

    import qkvcalc
    from qkvcalc.extract.common import base_model

    loaded = AutoModelForCausalLM.from_pretrained(lab("qwen3_next")["folder"])

    def broken(*args, **kwargs):
        raise ValueError("the cache cannot say its length\nsecond line")

    monkeypatch.setattr(base_model(loaded), "forward", broken)
    with pytest.raises(qkvcalc.QkvcalcError) as raised:
        qkvcalc.extract(loaded, layer=LAYER, input_ids=ids())
    text = raised.value.msg.text(lang)
    assert raised.value.msg.key == "extract.model_failed"
    assert "ValueError: the cache cannot say its length" in text
    assert "second line" not in text and "qwen3_next" in text


@pytest.mark.parametrize("name", ["qwen3_next", "olmo_hybrid"])
def test_a_convolution_of_another_activation_is_one_message(tmp_path, name):
    """hidden_act other than SiLU (the convolution's activation, as KDA's): the Gated DeltaNet
    layer is refused with one message naming it, on the command line and from Python, in both
    languages; the model's softmax-attention layer still extracts."""
    import subprocess
    import sys

    import qkvcalc

    config, fields, model_name, _ = CASES[name]
    model = build_from(config, {**fields, "hidden_act": "gelu"}, model_name, **EAGER)
    assert at(model, TEXT, LAYER).activation == "gelu"  # what transformers' layer applies
    folder = tmp_path / name
    model.save_pretrained(folder)
    argv = [sys.executable, "-m", "qkvcalc", "extract", str(folder), "--layer", str(LAYER)]
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
    assert "gelu" in lines[0] and "Gated DeltaNet" in lines[0] and "SiLU" in lines[0]
    with pytest.raises(qkvcalc.QkvcalcError) as err:
        qkvcalc.extract(str(folder), layer=LAYER, input_ids=ids(), dtype="float64")
    assert err.value.msg.key == "extract.gdn_activation"
    assert "gelu" in err.value.msg.text("ko") and "활성화 함수" in err.value.msg.text("ko")
    attention = model.config.layer_types.index("full_attention")
    problem = qkvcalc.extract(str(folder), layer=attention, input_ids=ids(), dtype="float64")
    assert "gated_delta" not in problem


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_heads_says_the_models_own_forward_failing_in_one_message(lab, monkeypatch, lang):
    """qkvcalc heads runs the model as extract does, and transformers raising inside its own
    forward is the same one message there (it was a traceback: DeepSeek-V4's mHC weights kept
    float32 by transformers 5.25 met a float64 run's numbers)."""
    from transformers import AutoModelForCausalLM

    import qkvcalc
    from qkvcalc.extract.common import base_model
    from qkvcalc.extract.heads import attention_maps

    loaded = AutoModelForCausalLM.from_pretrained(lab("qwen3_next")["folder"])

    def broken(*args, **kwargs):
        raise RuntimeError("expected m1 and m2 to have the same dtype\nsecond line")

    monkeypatch.setattr(base_model(loaded), "forward", broken)
    with pytest.raises(qkvcalc.QkvcalcError) as raised:
        attention_maps(loaded, input_ids=ids())
    text = raised.value.msg.text(lang)
    assert raised.value.msg.key == "extract.model_failed"
    assert "RuntimeError: expected m1 and m2 to have the same dtype" in text
    assert "second line" not in text and "qwen3_next" in text
