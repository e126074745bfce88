"""Issue 22, item 5: a large model's layer on this machine. A MODEL that cannot be a folder
here is one message at once, without the network; `--output layer.npz` writes the problem as
arrays that `qkvcalc explain` reads back to the same numbers; the JSON writer's numbers read
back bit-exact; `--dtype float64` converts only the layers it runs (each when it runs), from a
checkpoint stored in float32, and still reproduces transformers' float64 attention to 1e-8."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

from tests.conftest import ROOT, one_message, run_qkvcalc
from tests.inprocess import run_batch

te = pytest.importorskip("tests.test_extract", reason="qkvcalc extract needs torch")


def test_a_name_that_can_only_be_a_folder_fails_at_once_without_the_network(tmp_path):
    """A typo'd folder (an absolute or ./ path, or one under a folder that is here: tests/ is
    one, beside the process's working directory) is said at once: the hub, pointed at a socket
    this test listens on, is never asked."""
    assert (ROOT / "tests").is_dir()
    with socket.socket() as hub:
        hub.bind(("127.0.0.1", 0))
        hub.listen()
        hub.settimeout(0.5)
        env = {"HF_ENDPOINT": f"http://127.0.0.1:{hub.getsockname()[1]}"}
        for name in (str(tmp_path / "my-mdoel"), "./my-mdoel", "tests/my-mdoel", "a/b/c"):
            for command in ("extract", "heads"):
                argv = [command, name, "--ids", "1"] + (["--layer", "0"] * (command == "extract"))
                one_message(run_qkvcalc(*argv, env=env, timeout=60), name, "no such folder")
        try:
            hub.accept()[0].close()
        except TimeoutError:
            pass
        else:
            raise AssertionError("a name that can only be a folder asked the hub")


# ---- --output layer.npz ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """The tiny LLaMA of test_extract (GQA, RoPE), saved in float64, and its reference."""
    root = tmp_path_factory.mktemp("big")
    model = te.build("llama")
    model.save_pretrained(root / "llama")
    ids = te.token_ids()
    return {"root": root, "folder": root / "llama", "ids": ids, "model": model}


def test_npz_output_explains_to_the_same_numbers_as_json(llama):
    root, ids = llama["root"], " ".join(map(str, llama["ids"]))
    jobs = [
        {"argv": ["extract", str(llama["folder"]), "--layer", "2", "--ids", ids,
                  "--dtype", "float64", "--output", str(root / f"layer.{ext}")], "stdin": None}
        for ext in ("json", "npz")
    ] + [
        {"argv": ["explain", str(root / f"layer.{ext}"), "--format", "json", "--detail", "full",
                  "--output", str(root / f"trace-{ext}.json")], "stdin": None}
        for ext in ("json", "npz")
    ]  # fmt: skip
    for result in run_batch(jobs, timeout=300):
        assert result.returncode == 0 and result.stdout == "", result.stderr
    assert (root / "layer.npz").read_bytes()[:4] == b"PK\x03\x04"
    with np.load(root / "layer.npz", allow_pickle=False) as archive:  # no pickle anywhere
        names = set(archive.files)
        assert {"x", "wq", "wk", "wv", "wo", "_json"} <= names
        assert all(archive[name].dtype != object for name in names)
        plain = json.loads(str(archive["_json"]))
    problem = json.loads((root / "layer.json").read_text(encoding="utf-8"))
    assert plain["tokens"] == problem["tokens"] and plain["rope"] == problem["rope"]
    with np.load(root / "layer.npz") as archive:
        for key in ("x", "wq", "wk", "wv", "wo"):
            assert np.array_equal(archive[key], np.asarray(problem[key])), key
    traces = [json.loads((root / f"trace-{e}.json").read_text("utf-8")) for e in ("json", "npz")]
    assert traces[0]["stages"] == traces[1]["stages"]
    assert traces[0]["output"] == traces[1]["output"]
    ref = te.reference(llama["model"], "llama", llama["ids"])
    assert te.max_diff(traces[1]["output"], ref["out"]) < te.TOL


def _npz(path, **members) -> None:
    np.savez(path, **members)


@pytest.mark.parametrize(
    ("members", "fragment"),
    [
        ({"_json": np.arange(3)}, "_json.npy must be one string holding a JSON object"),
        ({"_json": np.array('"causal"')}, "_json.npy must be one string holding a JSON object"),
        ({"_json": np.array('{"mask": "causal",}')}, "_json"),
        ({"_json": np.array('{"x": [[1.0]]}'), "x": np.eye(2)}, "two members named 'x"),
    ],
)
def test_a_bad_json_member_is_one_message(tmp_path, members, fragment):
    _npz(tmp_path / "bad.npz", wq=np.eye(2), wk=np.eye(2), wv=np.eye(2), **members)
    one_message(run_qkvcalc("explain", str(tmp_path / "bad.npz")), fragment)


# ---- --dtype float64 streams the layers it runs -----------------------------------------------


def rounded(kind: str, dtype):
    """test_extract's tiny model of `kind` with its weights rounded to `dtype` (still a float64
    model: the reference), and a copy in `dtype` to save as the checkpoint."""
    import copy

    torch = te.torch
    model = te.build(kind)
    with torch.no_grad():
        for param in model.parameters():
            param.copy_(param.to(dtype).to(torch.float64))
    return model, copy.deepcopy(model).to(dtype)


STREAMED = [
    ("llama", "bfloat16"),
    ("gemma2-sliding", "float32"),
    ("gpt2", "float32"),
    ("bloom", "float32"),
    ("t5", "float32"),
    ("bert", "float32"),
    ("gpt_neox", "bfloat16"),
    ("qwen3", "float32"),
]


@pytest.fixture(scope="module")
def streamed(tmp_path_factory):
    """Each kind saved in bf16 or float32 and extracted with --dtype float64 through the
    command line, all in one process."""
    torch = te.torch
    root = tmp_path_factory.mktemp("streamed")
    ids = te.token_ids()
    cases, jobs = {}, []
    for kind, dtype in STREAMED:
        model, stored = rounded(kind, getattr(torch, dtype))
        stored.save_pretrained(root / kind)
        layer = te.CASES[kind][3]
        out = root / f"{kind}.json"
        argv = ["extract", str(root / kind), "--layer", str(layer), "--ids"]
        argv += [" ".join(map(str, ids)), "--dtype", "float64", "--output", str(out)]
        jobs.append({"argv": argv, "stdin": None})
        cases[kind] = {"file": out, "reference": te.reference(model, kind, ids)}
    for (kind, _), result in zip(STREAMED, run_batch(jobs, timeout=900), strict=True):
        assert result.returncode == 0 and result.stdout == "", (kind, result.stderr)
    return cases


@pytest.mark.parametrize(("kind", "dtype"), STREAMED)
def test_a_checkpoint_stored_narrow_extracts_float64_exact(streamed, kind, dtype):
    """A checkpoint in bf16 or float32, extracted with --dtype float64 (loaded in its own
    dtype, each layer converted as it runs): x, every head's weights and the output
    projection's output as transformers computes them in float64 from the same numbers."""
    case = streamed[kind]
    problem = json.loads(case["file"].read_text(encoding="utf-8"))
    weights, output = te.attention(problem)
    ref = case["reference"]
    assert te.max_diff(weights, ref["weights"]) < te.TOL
    assert te.max_diff(output, ref["out"]) < te.TOL
    assert te.max_diff(problem["x"], ref["x"]) < 1e-12
    assert "in float64" in problem["description"]


def test_each_weight_is_float64_only_while_it_is_used():
    """In layers 0…L every weight reads as float64 while its operation runs, yet the model
    keeps no float64 copy of any weight (each is made when read and dropped after), layers past
    L are left as stored, the embedding table stays stored too (its output is widened), and
    afterwards every weight is the very tensor it was (a mapped weight stays mapped)."""
    from qkvcalc.extract.llama import FAMILY
    from qkvcalc.extract.stream import float64_layers

    torch = te.torch
    fields = {**te.CASES["llama"][1], "num_hidden_layers": 4}
    model = te.build_from("LlamaConfig", fields, "LlamaModel").to(torch.float32)
    stack = FAMILY.stack(model)
    memory = [[p.data_ptr() for p in block.parameters()] for block in stack]
    seen = []

    class Stop(Exception):
        pass

    def look(index):
        def hook(linear, args):
            kept = {str(p.dtype) for b in stack for p in b.parameters()}  # what the layers hold
            seen.append((index, str(linear.weight.dtype), kept))

        return hook

    def stop(block, args, kwargs):
        raise Stop  # where the runner's own hook stops a run at layer 2's attention

    with float64_layers(model, stack, 2):
        hooks = [stack[i].self_attn.q_proj.register_forward_pre_hook(look(i)) for i in range(3)]
        hooks.append(stack[3].register_forward_pre_hook(stop, with_kwargs=True))
        assert model.embed_tokens.weight.dtype == torch.float32
        with torch.no_grad(), pytest.raises(Stop):
            model(input_ids=torch.tensor([[1, 2, 3]]))
        assert stack[3].self_attn.q_proj.weight.dtype == torch.float32  # past L: as stored
        for hook in hooks:
            hook.remove()
    assert seen == [(i, "torch.float64", {"torch.float32"}) for i in range(3)]
    for i, block in enumerate(stack):
        assert [p.data_ptr() for p in block.parameters()] == memory[i]  # the very same memory
        assert all(p.dtype == torch.float32 for p in block.parameters())
        assert all("Parametrized" not in type(m).__name__ for m in block.modules())


def test_a_float64_run_that_cannot_fit_is_refused_before_loading(tmp_path, cli):
    """The config alone decides: a checkpoint folder whose config describes a model with a
    vocabulary of 10⁹ × d 4096 (32 TB of float64 embeddings), and no weights at all. A real
    process in English; the Korean sentence in this process (the same check)."""
    fields = {**te.CASES["llama"][1], "vocab_size": 10**9, "hidden_size": 4096}
    config = te.transformers.LlamaConfig(**fields)
    config.save_pretrained(tmp_path / "huge")
    result = run_qkvcalc(
        "extract", str(tmp_path / "huge"), "--layer", "0", "--ids", "1 2", "--dtype", "float64",
        timeout=120,
    )  # fmt: skip
    one_message(result, "huge", "float64 run of 2 tokens", "available now")
    ko = cli(
        "extract", str(tmp_path / "huge"), "--layer", "0", "--ids", "1 2", "--dtype", "float64",
        "--lang", "ko",
    )  # fmt: skip
    one_message(ko, "huge", "토큰 2개를 float64로")


def test_extract_loads_in_the_stored_dtype_and_leaves_later_layers_unread(tmp_path, monkeypatch):
    """The runner itself: --dtype float64 loads a float32 checkpoint as float32, and after the
    run at layer 0 the layers past it are float32 still (never converted)."""
    import qkvcalc

    torch, transformers = te.torch, te.transformers
    _, stored = rounded("llama", torch.float32)
    stored.save_pretrained(tmp_path / "llama")
    loaded, own = [], transformers.AutoModel.from_pretrained

    def spy(*args, **kwargs):
        loaded.append((kwargs.get("dtype"), own(*args, **kwargs)))
        return loaded[-1][1]

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", spy)
    problem = qkvcalc.extract(str(tmp_path / "llama"), layer=0, input_ids=[1, 2], dtype="float64")
    assert problem["x"].dtype == np.float64 and "in float64" in problem["description"]
    [(asked, model)] = loaded
    assert asked == "auto"
    assert model.embed_tokens.weight.dtype == torch.float32  # its output was widened
    for block in model.layers:  # the weights as stored, after the run
        assert all(p.dtype == torch.float32 for p in block.parameters())
        assert all("Parametrized" not in type(m).__name__ for m in block.modules())


@pytest.mark.parametrize(
    "err",
    [
        OSError(12, "Cannot allocate memory"),
        RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 56 GB"),
        type("SafetensorError", (Exception,), {})("Cannot allocate memory (os error 12)"),
    ],
)
def test_running_out_of_memory_while_reading_weights_is_said_as_such(tmp_path, monkeypatch, err):
    """It was "its weights could not be read": safetensors' and the system's words for it."""
    import qkvcalc
    from qkvcalc.errors import QkvcalcError

    _, stored = rounded("llama", te.torch.float32)
    stored.save_pretrained(tmp_path / "llama")

    def no_memory(*args, **kwargs):
        raise err

    monkeypatch.setattr(te.transformers.AutoModel, "from_pretrained", no_memory)
    with pytest.raises(QkvcalcError, match="ran out of memory"):
        qkvcalc.extract(str(tmp_path / "llama"), layer=0, input_ids=[1], dtype="float64")
