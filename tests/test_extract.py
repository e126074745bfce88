"""qkvcalc extract against transformers itself: a tiny model of every architecture, built here
from a config with random weights (float64, eager attention) and saved with save_pretrained,
is extracted through the real command line (python -m qkvcalc extract … --dtype float64) and
through the Python call; tests/naive_modern.py computes the problem's attention, and every
head's attention probabilities (output_attentions) and the output projection module's own
output (a forward hook on o_proj / dense / c_proj / o) must match transformers' eager forward
to 1e-8. The same comparison runs through `qkvcalc explain FILE --format json`.

The reference forward is truly float64: transformers keeps its softmax, RMSNorm, rotary tables
and ALiBi slopes in float32 even in a float64 model, so in this test process only, while a
model is built and run, torch.float32 and torch.float mean float64 and Tensor.float() gives
float64 (true_float64 below). That is independent of how qkvcalc.extract lifts the same steps
(qkvcalc/extract/islands.py): the extracted x must equal the reference's to 1e-12.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import PINNED_ENV, ROOT, one_message, run_qkvcalc
from tests.inprocess import run_batch
from tests.naive_modern import attention

torch = pytest.importorskip(
    "torch", reason="qkvcalc extract needs torch: pip install torch==2.13.0"
)
transformers = pytest.importorskip(
    "transformers", reason="qkvcalc extract needs transformers: pip install -e '.[test]'"
)

torch.set_num_threads(1)  # tiny models: as fast on one thread, and no oversubscribed cores
TOL = 1e-8
N = 7  # tokens: more than the windows below, so they cut


@contextlib.contextmanager
def true_float64():
    """float32 means float64 in this process while the block runs (see the module's doc), and
    so does the default dtype (dynamic NTK's base is an integer tensor times a float: the
    default dtype's)."""
    saved = (torch.float32, torch.float, torch.Tensor.float)
    default = torch.get_default_dtype()
    torch.float32 = torch.float64
    torch.float = torch.float64
    torch.Tensor.float = lambda self, *a, **k: self.to(torch.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.float32, torch.float, torch.Tensor.float = saved
        torch.set_default_dtype(default)


# ---- the tiny models ----------------------------------------------------------------------
# name: (config class, its fields, model class, layer, the attention module whose input is x,
#        the output projection, modern keys)

SMALL = {"vocab_size": 60, "max_position_embeddings": 64}
CASES = {
    "bert": (
        "BertConfig",
        {**SMALL, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4},
        "BertModel",
        1,
        lambda m, i: m.encoder.layer[i].attention.self,
        lambda m, i: m.encoder.layer[i].attention.output.dense,
        False,
    ),
    "gpt2": (
        "GPT2Config",
        {
            "vocab_size": 60,
            "n_positions": 64,
            "n_embd": 32,
            "n_layer": 3,
            "n_head": 4,
            "scale_attn_by_inverse_layer_idx": True,  # the scale depends on the layer
        },
        "GPT2LMHeadModel",
        2,
        lambda m, i: m.transformer.h[i].attn,
        lambda m, i: m.transformer.h[i].attn.c_proj,
        False,
    ),
    "llama": (
        "LlamaConfig",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500.0},
        },
        "LlamaForCausalLM",
        2,
        lambda m, i: m.model.layers[i].self_attn,
        lambda m, i: m.model.layers[i].self_attn.o_proj,
        True,
    ),
    "mistral": (
        "MistralConfig",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 1,
            "sliding_window": 3,
        },
        "MistralForCausalLM",
        1,
        lambda m, i: m.model.layers[i].self_attn,
        lambda m, i: m.model.layers[i].self_attn.o_proj,
        True,
    ),
    "qwen2": (
        "Qwen2Config",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "use_sliding_window": True,
            "sliding_window": 4,
            "max_window_layers": 1,  # layer 0 full, layer 1 sliding
        },
        "Qwen2ForCausalLM",
        1,
        lambda m, i: m.model.layers[i].self_attn,
        lambda m, i: m.model.layers[i].self_attn.o_proj,
        True,
    ),
    "qwen3": (
        "Qwen3Config",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,  # not hidden/heads
        },
        "Qwen3ForCausalLM",
        1,
        lambda m, i: m.model.layers[i].self_attn,
        lambda m, i: m.model.layers[i].self_attn.o_proj,
        True,
    ),
    "gemma2-sliding": (
        "Gemma2Config",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 8,
            "sliding_window": 3,
            "query_pre_attn_scalar": 12,
            "attn_logit_softcapping": 2.0,  # small, so that it bites
            "final_logit_softcapping": None,
        },
        "Gemma2ForCausalLM",
        0,  # layer 0 slides, layer 1 is full
        lambda m, i: m.model.layers[i].self_attn,
        lambda m, i: m.model.layers[i].self_attn.o_proj,
        True,
    ),
    "gpt_neox": (
        "GPTNeoXConfig",
        {
            **SMALL,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "rotary_pct": 0.5,  # partial rotary: 8 of each head's 16 dimensions
        },
        "GPTNeoXForCausalLM",
        1,
        lambda m, i: m.gpt_neox.layers[i].attention,
        lambda m, i: m.gpt_neox.layers[i].attention.dense,
        True,
    ),
    "bloom": (
        "BloomConfig",
        {"vocab_size": 60, "hidden_size": 48, "n_layer": 2, "n_head": 12},  # 12: not 2^k
        "BloomForCausalLM",
        1,
        lambda m, i: m.transformer.h[i].self_attention,
        lambda m, i: m.transformer.h[i].self_attention.dense,
        True,
    ),
    "t5": (
        "T5Config",
        {
            "vocab_size": 60,
            "d_model": 32,
            "d_kv": 8,
            "d_ff": 48,
            "num_layers": 3,
            "num_decoder_layers": 1,
            "num_heads": 4,
            "relative_attention_num_buckets": 8,
            "relative_attention_max_distance": 16,
        },
        "T5ForConditionalGeneration",  # a whole T5 checkpoint; extract loads its encoder
        2,  # a later block: its bias comes from block 0
        lambda m, i: m.encoder.block[i].layer[0].SelfAttention,
        lambda m, i: m.encoder.block[i].layer[0].SelfAttention.o,
        True,
    ),
}
# Gemma 2's full layer: the same checkpoint as gemma2-sliding, layer 1
CASES["gemma2-full"] = (*CASES["gemma2-sliding"][:3], 1, *CASES["gemma2-sliding"][4:])

# Every module that keys a table by dtype is imported now, before true_float64 ever runs: one
# first imported inside it would build its table with float32 meaning float64 (safetensors'
# dtype sizes, for one).
for _config, _, _model, *_ in CASES.values():
    getattr(transformers, _config), getattr(transformers, _model)
importlib.import_module("safetensors.torch")


KINDS = list(CASES)


def build(kind: str, seed: int = 0):
    """A tiny float64 model of this kind with random weights, eager attention."""
    config_name, fields, model_name, *_ = CASES[kind]
    return build_from(config_name, fields, model_name, seed)


def build_from(config_name: str, fields: dict, model_name: str, seed: int = 0, **extra):
    """A tiny float64 model of transformers' config and model classes so named, from these
    config fields, with random weights, eager attention (`extra`: more config attributes)."""
    config = getattr(transformers, config_name)(**fields)
    config._attn_implementation = "eager"
    for name, value in extra.items():
        setattr(config, name, value)
    cls = getattr(transformers, model_name)
    torch.manual_seed(seed)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # buffers made at construction (Gemma's embed_scale)
    try:
        with true_float64():  # and the rotary tables, built at construction in float32
            model = cls(config)
    finally:
        torch.set_default_dtype(default)
    model = model.to(torch.float64).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "inv_freq" not in name:
                param.copy_(
                    torch.randn(param.shape, generator=generator, dtype=torch.float64) * 0.3
                )
    return model


def token_ids(seed: int = 0) -> list[int]:
    return np.random.default_rng(seed).integers(0, 60, N).tolist()


def reference(model, kind: str, ids: list[int]) -> dict:
    """transformers' own eager forward, truly float64: layer L's attention probabilities
    [H, n, n] (output_attentions), its output projection's own output [n, d] (a forward hook)
    and its attention module's input x [n, d] (a forward pre-hook)."""
    _, _, _, layer, attention_of, projection_of, _ = CASES[kind]
    runner = model.encoder if kind == "t5" else model  # T5: the encoder alone
    return reference_at(runner, ids, layer, attention_of(model, layer), projection_of(model, layer))


def reference_at(runner, ids: list[int], layer: int, attention_module, projection) -> dict:
    """reference(), given the model to run, the attention module whose input is x and the
    output projection module."""
    seen: dict = {}

    def grab_x(module, args, kwargs):
        seen["x"] = (args[0] if args else kwargs["hidden_states"])[0].detach().clone()

    def grab_out(module, args, out):
        seen.setdefault("out", (out[0] if isinstance(out, tuple) else out)[0].detach().clone())

    hooks = [
        attention_module.register_forward_pre_hook(grab_x, with_kwargs=True),
        projection.register_forward_hook(grab_out),
    ]
    try:
        with torch.no_grad(), true_float64():
            result = runner(input_ids=torch.tensor([ids]), output_attentions=True)
    finally:
        for hook in hooks:
            hook.remove()
    return {
        "weights": result.attentions[layer][0].numpy(),
        "out": seen["out"].numpy(),
        "x": seen["x"].numpy(),
    }


class Lab:
    """Builds every case once for the module: the model, its folder, the CLI's problem. The
    first get() builds all the models, then extracts every layer through the command line,
    `python -m qkvcalc extract FOLDER --layer L --ids … --dtype float64 --output FILE`, all in
    one real process (tests/inprocess.py), which imports torch and transformers once, not once
    per architecture; test_the_python_call_gives_the_cli_problem and the real processes below
    (the errors of a missing torch, of custom code, --output's files) still start their own."""

    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[str, dict] = {}

    def get(self, kind: str) -> dict:
        if not self.cache:
            self.build_all()
        return self.cache[kind]

    def build_all(self) -> None:
        ids = token_ids()
        cases, jobs = {}, []
        for kind in KINDS:
            folder = self.root / ("gemma2" if kind.startswith("gemma2") else kind)
            model = build(kind)
            if not folder.exists():
                model.save_pretrained(folder)
            layer = CASES[kind][3]
            problem_file = self.root / f"{kind}.json"
            argv = ["extract", str(folder), "--layer", str(layer), "--ids", " ".join(map(str, ids))]
            jobs.append({"argv": [*argv, "--dtype", "float64", "--output", str(problem_file)]})
            cases[kind] = {
                "model": model,
                "folder": folder,
                "ids": ids,
                "layer": layer,
                "file": problem_file,
                "reference": reference(model, kind, ids),
            }
        results = run_batch([{**job, "stdin": None} for job in jobs], timeout=300 + 60 * len(jobs))
        for kind, result in zip(KINDS, results, strict=True):
            assert result.returncode == 0, (kind, result.stderr)
            assert result.stdout == "", "with --output, nothing goes to stdout"
            problem = json.loads(cases[kind]["file"].read_text(encoding="utf-8"))
            self.cache[kind] = {**cases[kind], "problem": problem}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return Lab(tmp_path_factory.mktemp("models"))


def max_diff(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b)))


# ---- the comparisons ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_the_extracted_problem_reproduces_transformers(lab, kind):
    case = lab.get(kind)
    weights, output = attention(case["problem"])
    ref = case["reference"]
    assert max_diff(weights, ref["weights"]) < TOL
    assert max_diff(output, ref["out"]) < TOL
    # x is float64-exact: the extract's own lifting agrees with this test's
    assert max_diff(case["problem"]["x"], ref["x"]) < 1e-12


@pytest.mark.parametrize("kind", KINDS)
def test_qkvcalc_explain_reproduces_transformers(lab, kind):
    case = lab.get(kind)
    result = run_qkvcalc("explain", str(case["file"]), "--format", "json", "--detail", "full")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    ref = case["reference"]
    heads = case["problem"]["heads"]
    by_head = {stage["head"]: stage["value"] for stage in doc["stages"] if stage["id"] == "weights"}
    assert set(by_head) == set(range(1, heads + 1))
    for h in range(1, heads + 1):
        assert max_diff(by_head[h], ref["weights"][h - 1]) < TOL, f"head {h}"
    assert max_diff(doc["output"], ref["out"]) < TOL


@pytest.mark.parametrize("kind", ["llama", "gemma2-sliding", "t5", "gpt2"])
def test_the_python_call_gives_the_cli_problem(lab, kind):
    import qkvcalc

    case = lab.get(kind)
    problem = qkvcalc.extract(case["model"], layer=case["layer"], input_ids=case["ids"])
    cli = case["problem"]
    assert set(problem) == set(cli)
    for key, value in problem.items():
        if isinstance(value, np.ndarray):
            assert max_diff(value, cli[key]) < 1e-12, key
        elif isinstance(value, dict):
            assert json.loads(json.dumps(value)) == cli[key], key
        elif key == "name":
            assert value.endswith(f"layer {case['layer']}")
        elif key != "description":
            assert value == cli[key], key


# ---- what each architecture's problem says ------------------------------------------------


def test_the_keys_each_architecture_needs(lab):
    p = {kind: lab.get(kind)["problem"] for kind in KINDS}
    assert p["bert"]["mask"] == "none" and "rope" not in p["bert"]
    assert p["gpt2"]["scale"] == pytest.approx(8**-0.5 / 3)  # layer 2: divided by 3
    assert p["llama"]["rope"] == {"theta": 500.0, "style": "half"}
    assert p["llama"]["kv_heads"] == 2 and p["llama"]["mask"] == "causal"
    assert p["mistral"]["window"] == 3 and p["mistral"]["kv_heads"] == 1
    assert p["qwen2"]["window"] == 4 and "bq" in p["qwen2"] and "bo" not in p["qwen2"]
    assert len(p["qwen3"]["q_norm"]) == 16 and len(p["qwen3"]["wq"][0]) == 64
    assert p["gemma2-sliding"]["window"] == 3 and "window" not in p["gemma2-full"]
    assert p["gemma2-full"]["softcap"] == 2.0 and p["gemma2-full"]["scale"] == 12**-0.5
    assert p["gpt_neox"]["rope"]["dims"] == 8
    assert p["bloom"]["alibi"] is True and p["bloom"]["heads"] == 12
    assert p["t5"]["scale"] == 1 and np.shape(p["t5"]["score_bias"]) == (4, N, N)
    for problem in p.values():
        assert problem["tokens"] == [str(i) for i in token_ids()]
        assert "layer" in problem["name"] and problem["description"]


def test_the_window_and_softcap_change_the_weights(lab):
    """The cases are not vacuous: without its window or softcap the problem gives other
    weights than transformers."""
    for kind, key in (("mistral", "window"), ("gemma2-sliding", "softcap"), ("t5", "score_bias")):
        case = lab.get(kind)
        without = {k: v for k, v in case["problem"].items() if k != key}
        weights, _ = attention(without)
        assert max_diff(weights, case["reference"]["weights"]) > 1e-3, kind


# ---- the run itself -------------------------------------------------------------------------


def test_later_layers_never_run_and_the_model_is_left_as_it_was(lab):
    import qkvcalc

    model = lab.get("llama")["model"]
    calls = []
    later = model.model.layers[2].mlp.register_forward_hook(lambda *a: calls.append("mlp"))
    norm = model.model.norm.register_forward_hook(lambda *a: calls.append("norm"))
    model.train()
    try:
        qkvcalc.extract(model, layer=2, input_ids=[1, 2, 3])
        assert calls == []  # layer 2's MLP and the final norm: never reached
        assert model.training  # put back in the mode it was in
    finally:
        later.remove()
        norm.remove()
        model.eval()
    attention_module = model.model.layers[2].self_attn
    assert not attention_module._forward_pre_hooks
    assert "forward" not in vars(model.model.norm)  # the float64 lifting is undone
    assert torch.nn.functional.softmax.__module__ == "torch.nn.functional"


def test_auto_runs_a_float32_checkpoint_in_float32(tmp_path):
    import qkvcalc

    model = build("llama").to(torch.float32)
    model.save_pretrained(tmp_path / "f32")
    problem = qkvcalc.extract(str(tmp_path / "f32"), layer=1, input_ids=[1, 2, 3, 4])
    exact = qkvcalc.extract(str(tmp_path / "f32"), layer=1, input_ids=[1, 2, 3, 4], dtype="float64")
    assert problem["x"].dtype == np.float64
    assert "float32" in problem["description"] and "float64" in exact["description"]
    difference = max_diff(problem["x"], exact["x"])
    assert 0 < difference < 1e-4  # float32 numbers, close to the float64 run's
    assert max_diff(problem["wq"], exact["wq"]) == 0  # the same float32 weights, exactly


# ---- errors, through real processes ---------------------------------------------------------


# Most runs of the tests below are made ready each in a folder of its own, then all run through
# the command line in one real process (batched_runs, tests/inprocess.py: the program's own
# standard descriptors, exit code and messages; torch and transformers imported once, not once a
# run); test_a_sample_of_the_batched_runs_as_real_processes runs a sample of them as
# `python -m qkvcalc` processes, which must give the very same results. A run: BATCHED[name] is
# make(lab, folder) -> (argv, stdin text or None), or None when it cannot be made here.
BATCHED: dict = {}


def batched(name: str):
    def register(make):
        assert name not in BATCHED, name
        BATCHED[name] = make
        return make

    return register


@pytest.fixture(scope="module")
def batched_runs(lab, tmp_path_factory) -> dict:
    """Every run of BATCHED: name -> (its result, its folder), or None if it could not be made."""
    root = tmp_path_factory.mktemp("batched")
    made, jobs = {}, []
    for number, (name, make) in enumerate(BATCHED.items()):
        where = root / str(number)
        where.mkdir()
        run = make(lab, where / "case")
        made[name] = None if run is None else where / "case"
        if run is not None:
            argv, stdin = run
            if stdin is not None:
                (where / "stdin").write_text(stdin, encoding="utf-8")
            jobs.append(
                (name, {"argv": argv, "stdin": None if stdin is None else str(where / "stdin")})
            )
    results = run_batch([job for _, job in jobs], timeout=300 + 10 * len(jobs))
    done = {name: (result, made[name]) for (name, _), result in zip(jobs, results, strict=True)}
    return {name: done.get(name) for name in BATCHED}


def batched_run(batched_runs: dict, name: str):
    """(result, folder) of one run of BATCHED."""
    if batched_runs[name] is None:
        pytest.skip(f"{name}: cannot be made here")
    return batched_runs[name]


@batched("text through the folder's tokenizer")
def _text_through_the_tokenizer(lab, where: Path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["the", "cat", "sat", "on", "mat"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="the"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    folder = where / "gpt2"
    lab.get("gpt2")["model"].save_pretrained(folder)  # build("gpt2"), built once
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(folder)
    return ["extract", str(folder), "--layer", "0", "--text", "the cat sat"], None


def test_text_goes_through_the_folders_tokenizer(batched_runs):
    """(Through a real process of its own: the hostile folder's name and tokens below.)"""
    result = batched_run(batched_runs, "text through the folder's tokenizer")[0]
    assert result.returncode == 0, result.stderr
    problem = json.loads(result.stdout)
    assert problem["tokens"] == ["the", "cat", "sat"] and len(problem["x"]) == 3


def request_folder(lab, where: Path, name: str) -> Path:
    """The folder a bad request names: the llama checkpoint, or one made in `where`."""
    if name == "llama":
        return lab.get("llama")["folder"]
    folder = where / name
    folder.mkdir(parents=True)
    if name == "rwkv":  # an architecture extract does not know
        (folder / "config.json").write_text('{"model_type": "rwkv"}', encoding="utf-8")
    elif name == "no-weights":
        shutil.copy(lab.get("llama")["folder"] / "config.json", folder)
    return folder


BAD_REQUESTS = {
    "layer": ("llama", ["--layer", "3", "--ids", "1 2"], ["layer 3", "3 layers", "0 to 2"]),
    "negative layer": ("llama", ["--layer", "-1", "--ids", "1 2"], ["layer -1", "0 to 2"]),
    "token id": ("llama", ["--layer", "0", "--ids", "1 60"],
                 ["token id 60", "60 tokens", "0 to 59"]),
    "text without tokenizer": ("llama", ["--layer", "0", "--text", "hello"], ["--text", "--ids"]),
    "empty": ("empty", ["--layer", "0", "--ids", "1"],
              ["not a Hugging Face checkpoint", "config.json"]),
    "no weights": ("no-weights", ["--layer", "0", "--ids", "1"], ["config.json", "weights"]),
    "unknown architecture": ("rwkv", ["--layer", "0", "--ids", "1"], [
        "'rwkv'", "BERT, RoBERTa,", "GPT-2, LLaMA, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3",
        "OLMo 3", "T5 encoder",
    ]),
}  # fmt: skip


def _bad_request(folder: str, args: list[str]):
    def make(lab, where: Path):
        return ["extract", str(request_folder(lab, where, folder)), *args], None

    return make


for _name, (_folder, _args, _) in BAD_REQUESTS.items():
    batched(f"request: {_name}")(_bad_request(_folder, _args))


@pytest.mark.parametrize("name", BAD_REQUESTS)
def test_bad_requests_are_one_message(batched_runs, name):
    one_message(batched_run(batched_runs, f"request: {name}")[0], *BAD_REQUESTS[name][2])


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--layer", "0", "--ids", "1 two"], ["--ids", "whole numbers"]),
        (["--layer", "0"], ["--ids", "--text"]),
        (["--layer", "0", "--ids", "1", "--text", "a"], ["exactly one"]),
    ],
)
def test_bad_options_are_one_message_before_any_model_loads(tmp_path, args, fragments):
    one_message(run_qkvcalc("extract", str(tmp_path), *args), *fragments)


@batched("a missing folder")
def _missing_folder(lab, where: Path):
    where.mkdir()
    return ["extract", str(where / "nope"), "--layer", "0", "--ids", "1"], None


def test_a_missing_folder_is_named(batched_runs):
    one_message(batched_run(batched_runs, "a missing folder")[0], "no such folder")


def test_without_torch_it_says_what_to_install(tmp_path):
    """A real process in which torch cannot be imported (sys.modules['torch'] = None)."""
    code = (
        "import sys\nsys.modules['torch'] = None\nfrom qkvcalc.launch import main\n"
        f"sys.argv = ['qkvcalc', 'extract', {str(tmp_path)!r}, '--layer', '0', '--ids', '1']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **PINNED_ENV},
    )
    one_message(proc, "pip install 'qkvcalc[models]'", "torch")


def test_the_python_call_raises_the_same_errors(lab):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    model = lab.get("llama")["model"]
    with pytest.raises(QkvcalcError, match="numbered 0 to 2"):
        qkvcalc.extract(model, layer=5, input_ids=[1])
    with pytest.raises(QkvcalcError, match="exactly one"):
        qkvcalc.extract(model, layer=0)
    with pytest.raises(QkvcalcError, match="already loaded"):
        qkvcalc.extract(model, layer=0, input_ids=[1], dtype="bfloat16")
    with pytest.raises(QkvcalcError, match="not a list"):
        qkvcalc.extract([1, 2], layer=0, input_ids=[1])


def test_in_a_terminal_the_status_leaves_stdout_to_the_problem(lab, tmp_path):
    """stderr a terminal (the status spins there), stdout a file: the file gets the problem. A
    rich status in a terminal routes sys.stdout to its own console while it shows."""
    import pexpect

    from tests.conftest import spawn_qkvcalc

    folder, out = lab.get("llama")["folder"], tmp_path / "problem.json"
    command = f"{sys.executable} -m qkvcalc extract {folder} --layer 0 --ids '1 2' > {out}"
    child = spawn_qkvcalc(shell=f"TERM=xterm {command}")
    child.expect(pexpect.EOF, timeout=300)
    child.close()
    assert child.exitstatus == 0, child.before
    assert json.loads(out.read_text(encoding="utf-8"))["tokens"] == ["1", "2"]


# ---- a checkpoint's own code never runs (issue 20, security 2) ------------------------------


def word_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["the", "cat", "sat", "on", "mat"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="the"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok)


def with_custom_code(folder: Path, marker: Path, where: str) -> None:
    """Give a checkpoint folder code of its own that creates `marker` when it is imported,
    named by an auto_map in config.json or tokenizer_config.json."""
    (folder / "custom_code.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from transformers import PreTrainedTokenizerFast as Custom\n"
        "from transformers import LlamaModel as CustomModel\n",
        encoding="utf-8",
    )
    file = folder / where
    doc = json.loads(file.read_text(encoding="utf-8"))
    if where == "tokenizer_config.json":
        doc.pop("tokenizer_class", None)  # then transformers has no class of its own to use
        doc["auto_map"] = {"AutoTokenizer": ["custom_code.Custom", None]}
    else:
        doc["auto_map"] = {"AutoModel": "custom_code.CustomModel"}
    file.write_text(json.dumps(doc), encoding="utf-8")


def copy_with_tokenizer(lab, where: Path) -> Path:
    """A copy of the llama checkpoint, with a word-level tokenizer, as where/llama."""
    folder = where / "llama"
    shutil.copytree(lab.get("llama")["folder"], folder)
    word_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture
def llama_with_tokenizer(lab, tmp_path):
    return copy_with_tokenizer(lab, tmp_path)


CUSTOM_FILES = ["tokenizer_config.json", "config.json"]
CUSTOM_OPTIONS = {"text": ["--text", "the cat"], "ids": ["--ids", "1 2"]}


def _custom_code_says_yes(where_code: str, option: list[str]):
    def make(lab, where: Path):
        folder = copy_with_tokenizer(lab, where)
        with_custom_code(folder, where / "pwned", where_code)
        return ["extract", str(folder), "--layer", "0", *option], "y\n"

    return make


for _file in CUSTOM_FILES:
    for _option, _args in CUSTOM_OPTIONS.items():
        batched(f"custom code: {_option}-{_file}")(_custom_code_says_yes(_file, _args))


def code_never_ran(where: Path) -> None:
    assert not (where / "pwned").exists(), "the checkpoint's code ran"


@pytest.mark.parametrize("where", CUSTOM_FILES)
@pytest.mark.parametrize("option", list(CUSTOM_OPTIONS))
def test_a_checkpoint_with_its_own_code_is_refused_even_when_stdin_says_yes(
    batched_runs, where, option
):
    result, folder = batched_run(batched_runs, f"custom code: {option}-{where}")
    code_never_ran(folder)
    one_message(result, "code of its own", where)
    assert "[y/N]" not in result.stdout + result.stderr


def test_every_from_pretrained_refuses_custom_code_by_itself(llama_with_tokenizer, tmp_path):
    """Without qkvcalc's own check (patched out in the child) transformers still refuses, as
    trust_remote_code=False is passed to it: it asks nothing on stdin and runs nothing."""
    marker = tmp_path / "pwned"
    with_custom_code(llama_with_tokenizer, marker, "tokenizer_config.json")
    code = (
        "import sys\nimport qkvcalc.extract.runner as r\nr._refuse_custom_code = lambda *a: None\n"
        "from qkvcalc.launch import main\n"
        f"sys.argv = ['qkvcalc', 'extract', {str(llama_with_tokenizer)!r}, '--layer', '0',"
        " '--text', 'the cat']\nmain()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input="y\n",
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **PINNED_ENV},
    )
    assert not marker.exists(), "the checkpoint's code ran"
    one_message(proc, "needs code of its own")


PICKLE_PROTOCOLS = [2, "highest"]


def _pickled(protocol):
    def make(lab, where: Path):
        import pickle

        marker = where / "pwned"

        class Payload:
            def __reduce__(self):
                return (open, (str(marker), "w"))

        folder = where / "pickled"
        folder.mkdir(parents=True)
        shutil.copy(lab.get("llama")["folder"] / "config.json", folder)
        number = pickle.HIGHEST_PROTOCOL if protocol == "highest" else protocol
        (folder / "pytorch_model.bin").write_bytes(pickle.dumps({"w": Payload()}, number))
        return ["extract", str(folder), "--layer", "0", "--ids", "1"], None

    return make


for _protocol in PICKLE_PROTOCOLS:
    batched(f"pickle protocol {_protocol}")(_pickled(_protocol))


@pytest.mark.parametrize("protocol", PICKLE_PROTOCOLS)
def test_pickled_weights_are_not_unpickled_and_are_one_message(batched_runs, protocol):
    result, where = batched_run(batched_runs, f"pickle protocol {protocol}")
    assert not (where / "pwned").exists(), "the pickle was unpickled"
    one_message(result, "pickle", "safetensors")


# ---- --output writes the file it names and nothing else (issue 20, security 3) --------------
# extract wrote through a fixed temporary name (.NAME.qkvcalc-tmp): a symlink planted there
# redirected the write, a file of that name was lost, and a FIFO, a device or a symlink given as
# the output became a regular file. It now writes as explain --output does (write_output).


def extract_to(folder: Path, out: Path, **kw) -> subprocess.CompletedProcess:
    return run_qkvcalc(
        "extract",
        str(folder),
        "--layer",
        "0",
        "--ids",
        "1 2",
        "--output",
        str(out),
        timeout=300,
        **kw,
    )


def assert_problem(text: str) -> None:
    assert json.loads(text)["tokens"] == ["1", "2"]


def extract_argv(lab, out: Path) -> list[str]:
    folder = lab.get("llama")["folder"]
    return ["extract", str(folder), "--layer", "0", "--ids", "1 2", "--output", str(out)]


def written(result) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == "", result.stderr


@batched("output: a planted temporary symlink")
def _planted_symlink(lab, where: Path):
    where.mkdir()
    victim = where / "victim"
    victim.write_text("precious\n")
    (where / ".out.json.qkvcalc-tmp").symlink_to(victim)
    return extract_argv(lab, where / "out.json"), None


def test_extract_output_never_follows_a_planted_temporary_symlink(batched_runs):
    result, where = batched_run(batched_runs, "output: a planted temporary symlink")
    written(result)
    assert (where / "victim").read_text() == "precious\n"
    assert_problem((where / "out.json").read_text())
    assert (where / ".out.json.qkvcalc-tmp").is_symlink()  # left as it was


@batched("output: a user's file of the old temporary name")
def _old_temporary_name(lab, where: Path):
    where.mkdir()
    (where / ".out.json.qkvcalc-tmp").write_text("mine\n")
    return extract_argv(lab, where / "out.json"), None


def test_extract_output_keeps_a_users_file_of_the_old_temporary_name(batched_runs):
    result, where = batched_run(batched_runs, "output: a user's file of the old temporary name")
    written(result)
    assert (where / ".out.json.qkvcalc-tmp").read_text() == "mine\n"
    assert_problem((where / "out.json").read_text())


@batched("output: through a symlink")
def _through_a_symlink(lab, where: Path):
    where.mkdir()
    (where / "real.json").write_text("old\n")
    (where / "link.json").symlink_to(where / "real.json")
    return extract_argv(lab, where / "link.json"), None


def link_kept(where: Path) -> None:
    link = where / "link.json"
    assert link.is_symlink() and os.readlink(link) == str(where / "real.json")
    assert_problem((where / "real.json").read_text())


def test_extract_output_through_a_symlink_keeps_the_link(batched_runs):
    result, where = batched_run(batched_runs, "output: through a symlink")
    written(result)
    link_kept(where)


def test_extract_output_onto_a_fifo_writes_into_it(lab, tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        result = extract_to(lab.get("llama")["folder"], fifo)
        got = reader.communicate(timeout=60)[0]
    finally:
        reader.kill()
    assert result.returncode == 0, result.stderr
    assert_problem(got.decode())
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still a FIFO


@batched("output: a device")
def _a_device(lab, where: Path):
    where.mkdir()
    node = where / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        node.write_text("probe")
    except OSError:
        return None  # needs root and a filesystem allowing it
    return extract_argv(lab, node), None


def test_extract_output_onto_a_device_leaves_it_a_device(batched_runs):
    """A null device made in the run's folder (never the machine's /dev/null: the old code, run
    as root, replaced the device it was given with a regular file)."""
    if batched_runs["output: a device"] is None:
        pytest.skip("cannot make a device node here (needs root and a filesystem allowing it)")
    result, where = batched_run(batched_runs, "output: a device")
    written(result)
    assert stat.S_ISCHR((where / "null").lstat().st_mode)
    assert not [p.name for p in where.iterdir() if p.name != "null"]


# ---- damaged, lying and hostile checkpoints: one message each (issue 20, robustness) ---------


def _header(doc: dict, rest: bytes = b"") -> bytes:
    import struct

    text = json.dumps(doc).encode()
    return struct.pack("<Q", len(text)) + text + rest


def _weights_cases(good: bytes) -> dict[str, bytes | str]:
    import struct

    size = struct.unpack("<Q", good[:8])[0]
    header, rest = json.loads(good[8 : 8 + size]), good[8 + size :]
    name = next(k for k in header if k != "__metadata__")

    def changed(**fields) -> bytes:
        return _header({**header, name: {**header[name], **fields}}, rest)

    return {
        "empty": b"",
        "random bytes": bytes(range(256)) * 4,
        "a header length of 2^60": struct.pack("<Q", 2**60) + b"{}",
        "a header that is not JSON": struct.pack("<Q", 5) + b"{abc}",
        "offsets past the end": changed(data_offsets=[0, 10**12]),
        "a shape its bytes do not fill": changed(shape=[3, 3]),
        "an unknown dtype": changed(dtype="Q99"),
        "cut in half": good[: len(good) // 2],
        "a symlink to a system file": "/etc/passwd",
    }


WEIGHTS_CASES = list(
    _weights_cases(_header({"w": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}, bytes(8)))
)  # the names


def broken_copy(lab, where: Path, config: dict | None = None) -> Path:
    """A copy of the llama checkpoint as where/llama, its config.json updated with `config`."""
    folder = where / "llama"
    shutil.copytree(lab.get("llama")["folder"], folder)
    if config is not None:
        doc = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        doc.update(config)
        (folder / "config.json").write_text(json.dumps(doc), encoding="utf-8")
    return folder


def _damaged_weights(case: str):
    def make(lab, where: Path):
        folder = broken_copy(lab, where)
        weights = folder / "model.safetensors"
        content = _weights_cases(weights.read_bytes())[case]
        weights.unlink()
        if isinstance(content, str):
            weights.symlink_to(content)
        else:
            weights.write_bytes(content)
        return ["extract", str(folder), "--layer", "0", "--ids", "1 2"], None

    return make


for _case in WEIGHTS_CASES:
    batched(f"weights: {_case}")(_damaged_weights(_case))


@pytest.mark.parametrize("case", WEIGHTS_CASES)
def test_damaged_or_lying_safetensors_are_one_message(batched_runs, case):
    one_message(batched_run(batched_runs, f"weights: {case}")[0], "weights could not be read")


CONFIG_CASES = {
    "num_hidden_layers 'two'": ({"num_hidden_layers": "two"}, ["num_hidden_layers", "'two'"]),
    "num_hidden_layers 1.5": ({"num_hidden_layers": 1.5}, ["num_hidden_layers", "1.5"]),
    "vocab_size '50'": ({"vocab_size": "50"}, ["vocab_size", "'50'"]),
    "0 heads": ({"num_attention_heads": 0}, ["config.json"]),
    "heads that do not divide the width": (
        {"num_attention_heads": 5, "head_dim": None},
        ["not a multiple"],
    ),
    "an unknown dtype": ({"dtype": "float99"}, ["float99"]),
    "an unknown rope type": (
        {"rope_parameters": {"rope_type": "nope", "rope_theta": 1.0}},
        ["nope"],
    ),
    "a million layers": ({"num_hidden_layers": 10**6}, ["1000000 layers"]),
    "weights bigger than memory": (
        {"num_hidden_layers": 900, "hidden_size": 65536, "num_attention_heads": 512},
        ["memory"],
    ),
    "rms_norm_eps NaN": ({"rms_norm_eps": float("nan")}, ["rms_norm_eps", "nan"]),
}


def _bad_config(config: dict):
    def make(lab, where: Path):
        folder = broken_copy(lab, where, config)
        return ["extract", str(folder), "--layer", "0", "--ids", "1 2"], None

    return make


for _case, (_config, _) in CONFIG_CASES.items():
    batched(f"config: {_case}")(_bad_config(_config))


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_a_config_that_cannot_describe_a_model_is_one_message(batched_runs, case):
    one_message(batched_run(batched_runs, f"config: {case}")[0], *CONFIG_CASES[case][1])


UNREADABLE_CONFIGS = {
    "nested": (b'{"model_type": "llama", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested"),
    "no model_type": (b'{"hidden_size": 4}', "no model_type"),
}


def _unreadable_config(content: bytes):
    def make(lab, where: Path):
        folder = broken_copy(lab, where)
        (folder / "config.json").write_bytes(content)
        return ["extract", str(folder), "--layer", "0", "--ids", "1"], None

    return make


for _name, (_content, _) in UNREADABLE_CONFIGS.items():
    batched(f"config.json: {_name}")(_unreadable_config(_content))


@pytest.mark.parametrize("name", list(UNREADABLE_CONFIGS))
def test_a_config_json_that_cannot_be_read_is_one_message(batched_runs, name):
    result = batched_run(batched_runs, f"config.json: {name}")[0]
    one_message(result, UNREADABLE_CONFIGS[name][1])
    assert "''" not in result.stderr


@batched("config.json: 3 GB")
def _huge_config(lab, where: Path):
    folder = broken_copy(lab, where)
    with (folder / "config.json").open("r+b") as file:
        file.truncate(3 * 10**9)  # sparse: no disk is spent
    return ["extract", str(folder), "--layer", "0", "--ids", "1"], None


def test_a_3_gb_config_json_is_refused_unread(batched_runs):
    one_message(batched_run(batched_runs, "config.json: 3 GB")[0], "3000000000 bytes")


BAD_IDS = {
    "a superscript digit": ("llama", "1 ²", "whole numbers"),
    "5000 digits": ("llama", "9" * 5000, "5000 digits"),
    "20000 ids": ("llama", " ".join(["1"] * 20_000), "20000 tokens"),
    "past GPT-2's positions": ("gpt2", " ".join(["1"] * 65), "positions for 64 tokens"),
    "BERT's": ("bert", " ".join(["1"] * 65), "positions for 64 tokens"),
}


def _bad_ids(kind: str, ids: str):
    def make(lab, where: Path):
        return ["extract", str(lab.get(kind)["folder"]), "--layer", "0", "--ids", ids], None

    return make


for _name, (_kind, _ids, _) in BAD_IDS.items():
    batched(f"ids: {_name}")(_bad_ids(_kind, _ids))


@pytest.mark.parametrize("name", list(BAD_IDS))
def test_ids_the_model_cannot_take_are_one_message(batched_runs, name):
    one_message(batched_run(batched_runs, f"ids: {name}")[0], BAD_IDS[name][2])


@batched("text: 120 kB")
def _long_text(lab, where: Path):
    folder = copy_with_tokenizer(lab, where)
    return ["extract", str(folder), "--layer", "0", "--text", "the cat " * 15_000], None


def test_120_kb_of_text_is_one_message(batched_runs):
    one_message(batched_run(batched_runs, "text: 120 kB")[0], "30000 tokens")


@batched("a NaN weight")
def _nan_weight(lab, where: Path):
    model = build("llama")
    with torch.no_grad():
        model.model.layers[0].self_attn.k_proj.weight[3, 1] = float("nan")
    model.save_pretrained(where / "nan")
    return ["extract", str(where / "nan"), "--layer", "0", "--ids", "1 2"], None


def test_a_nan_weight_is_refused_naming_the_tensor(batched_runs):
    one_message(batched_run(batched_runs, "a NaN weight")[0], "wk", "NaN")


# A sample of the batched runs, each as a real `python -m qkvcalc` process of its own (made
# ready afresh in tmp_path): the same exit code, stdout and stderr as in the batch (its folder's
# path aside), and the same files left behind.
REAL_SAMPLE = {
    "weights: cut in half": None,
    "config: weights bigger than memory": None,
    "custom code: text-tokenizer_config.json": code_never_ran,
    "output: through a symlink": link_kept,
}


@pytest.mark.parametrize("name", list(REAL_SAMPLE))
def test_a_sample_of_the_batched_runs_as_real_processes(lab, batched_runs, tmp_path, name):
    batch, batch_folder = batched_run(batched_runs, name)
    argv, stdin = BATCHED[name](lab, tmp_path / "case")
    real = run_qkvcalc(*argv, input=stdin, timeout=300)

    def seen(result, folder: Path) -> tuple:
        out, err = (text.replace(str(folder), "FOLDER") for text in (result.stdout, result.stderr))
        return result.returncode, out, err

    assert seen(real, tmp_path / "case") == seen(batch, batch_folder)
    check = REAL_SAMPLE[name]
    if check is not None:
        check(tmp_path / "case")


def test_a_hub_name_out_of_reach_is_one_line_at_once(tmp_path):
    """No network (the hub's address refuses): huggingface_hub retried five times over 26 s,
    with a warning line for each try; one attempt decides now, and the cache is looked in. The
    one line is the proof (retries would print a line each); the timeout only keeps a hang from
    stalling the suite, so a loaded machine's slow import of torch does not fail it."""
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}
    result = run_qkvcalc("extract", "gpt2", "--layer", "0", "--ids", "1", env=env, timeout=120)
    one_message(result, "gpt2", "cannot be reached", "cache")


def test_a_cached_hub_name_loads_from_the_cache_with_the_hub_out_of_reach(lab, tmp_path):
    """The refusal above is for a name the cache has no folder for, said before torch loads;
    a name it has (here a tiny GPT-2 laid out as huggingface_hub caches a download) is loaded
    from the cache, offline, to the numbers its own folder gives."""
    case = lab.get("gpt2")
    revision = "0" * 40
    repo = tmp_path / "hf" / "hub" / "models--tiny--gpt2"
    shutil.copytree(case["folder"], repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}
    ids = " ".join(map(str, case["ids"]))
    argv = ["extract", "tiny/gpt2", "--layer", str(case["layer"]), "--ids", ids]
    result = run_qkvcalc(*argv, "--dtype", "float64", env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    got, want = json.loads(result.stdout), case["problem"]
    assert got.keys() == want.keys()
    for key in want.keys() - {"name", "description", "reference"}:
        assert got[key] == want[key], key
    assert "tiny/gpt2" in got["description"] + got.get("name", "")


@batched("output: a directory of the old temporary name")
def _old_temporary_directory(lab, where: Path):
    (where / ".out.json.qkvcalc-tmp").mkdir(parents=True)  # said "cannot write to standard output"
    return extract_argv(lab, where / "out.json"), None


def test_extract_output_ignores_a_directory_of_the_old_temporary_name(batched_runs):
    result, where = batched_run(batched_runs, "output: a directory of the old temporary name")
    written(result)
    assert_problem((where / "out.json").read_text())


def test_running_out_of_memory_is_said_as_such(lab, monkeypatch):
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    def no_memory(*args, **kwargs):
        raise RuntimeError(
            "[enforce fail at alloc_cpu.cpp:118] DefaultCPUAllocator: can't allocate memory"
        )

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", no_memory)
    with pytest.raises(QkvcalcError, match="ran out of memory"):
        qkvcalc.extract(str(lab.get("llama")["folder"]), layer=0, input_ids=[1])
    monkeypatch.setattr(
        transformers.AutoModel,
        "from_pretrained",
        lambda *a, **k: (_ for _ in ()).throw(MemoryError()),
    )
    with pytest.raises(QkvcalcError, match="ran out of memory"):
        qkvcalc.extract(str(lab.get("llama")["folder"]), layer=0, input_ids=[1])


def test_a_hostile_folder_name_and_token_text_make_a_safe_torch_script(lab, tmp_path):
    """Issue 20, security 1 through extract: a checkpoint folder named coding:unicode_escape
    and a tokenizer whose token closes a string literal under that encoding; the problem's
    torch script runs and the payload does not."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    marker = tmp_path / "pwned"
    payload = f'\',open("{marker}","w"),\''
    assert " " not in payload
    words = ["the", payload, "cat"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="the"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    folder = tmp_path / "coding:unicode_escape"
    shutil.copytree(lab.get("llama")["folder"], folder)
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(folder)
    problem = tmp_path / "problem.json"
    result = run_qkvcalc(
        "extract", str(folder), "--layer", "0", "--text", f"the {payload} cat",
        "--output", str(problem), timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(problem.read_text(encoding="utf-8"))
    assert payload in doc["tokens"] and doc["name"].startswith("coding:unicode_escape")
    script = tmp_path / "check.py"
    result = run_qkvcalc("explain", str(problem), "--output", str(script), timeout=300)
    assert result.returncode == 0, result.stderr
    # the script in this process (runpy honours a declaration as Python does for a file; torch is
    # imported here already): test_torch_script's hostile names run it as a process of its own
    from tests.inprocess import run_script

    proc = run_script(str(script))
    assert not marker.exists(), "the token ran as code"
    assert proc["returncode"] == 0, proc["stderr"][-2000:]
    assert "OK: PyTorch agrees with qkvcalc" in proc["stdout"]


def test_a_checkpoint_with_its_own_code_asks_nothing_of_an_open_stdin(
    llama_with_tokenizer, tmp_path
):
    """stdin a pipe left open: transformers' question waited 15 s for an answer (then went on
    without the code); qkvcalc asks nothing, so it ends at once with its message."""
    marker = tmp_path / "pwned"
    with_custom_code(llama_with_tokenizer, marker, "tokenizer_config.json")
    read_end, write_end = os.pipe()  # the write end stays open here: no end of input
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "qkvcalc", "extract", str(llama_with_tokenizer), "--layer",
             "0", "--text", "the cat"],
            stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=ROOT, env={**os.environ, **PINNED_ENV},
        )  # fmt: skip
        os.close(read_end)
        try:
            out, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
    finally:
        os.close(write_end)
    one_message(
        subprocess.CompletedProcess(proc.args, proc.returncode, out, err), "code of its own"
    )
    assert not marker.exists()
