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

from tests.conftest import ROOT, run_qkvcalc
from tests.inprocess import run_batch

te = pytest.importorskip("tests.test_extract", reason="qkvcalc extract needs torch")


def one_message(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


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
