"""Sentences of the help and the docs about what a command does, or refuses, checked by running
the command: each test reads the sentence (from the catalog or the doc) and runs what it says,
so a sentence left behind when a refusal is lifted (or a refusal that comes back under a
sentence that says otherwise) fails here."""

from __future__ import annotations

import json
import re

import pytest

from qkvcalc.i18n import translate
from tests.conftest import ROOT, in_process
from tests.test_arith_invariant import GDN_LAYER, KDA_LAYER


def _prose(path: str) -> str:
    """A doc's text with its line breaks as spaces."""
    return " ".join((ROOT / path).read_text(encoding="utf-8").split())


def _file(tmp_path, doc: dict, name: str = "p.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def _with_zero_target(doc: dict) -> dict:
    n, d_out = len(doc["x"]), len(doc["wo"][0])
    return doc | {"target": [[0.0] * d_out for _ in range(n)]}


def _frozen(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("Frozen"))


# ---- train --freeze -----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_freeze_help_names_core_weights_and_a_layers_own(lang):
    """help.train.freeze names wq … bo and, as examples of a layer's own, MLA's W_DQ or wdq and a
    linear layer's w_norm or norm: every one is a word --freeze takes (below)."""
    said = translate("help.train.freeze", lang)
    for word in ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", "W_DQ", "wdq", "w_norm", "norm"):
        assert re.search(rf"(?<![a-z_]){word}(?![a-z_])", said), word
    assert "docs/train.md" in said and (ROOT / "docs" / "train.md").exists()


def test_freeze_takes_mla_names_the_help_gives():
    proc = in_process(
        "train", "--preset", "mla", "--lr", "0.05", "--steps", "2", "--freeze", "W_DQ,wuk"
    )
    assert proc.returncode == 0, proc.stderr
    assert _frozen(proc.stdout) == "Frozen (--freeze, not moved): W_DQ, W_UK."


@pytest.mark.parametrize("layer", [GDN_LAYER, KDA_LAYER], ids=["gated_delta", "kimi_delta"])
def test_freeze_takes_a_linear_layers_names_the_help_gives(tmp_path, layer):
    path = _file(tmp_path, _with_zero_target(layer))
    proc = in_process("train", path, "--lr", "0.02", "--steps", "2", "--freeze", "w_norm,conv")
    assert proc.returncode == 0, proc.stderr
    assert _frozen(proc.stdout) == "Frozen (--freeze, not moved): w_norm, w_conv."


def test_freeze_takes_lightnings_norm_and_gate(tmp_path):
    preset = json.loads((ROOT / "presets" / "lightning.json").read_text())
    d = len(preset["wv"][0])
    preset["lightning"] |= {"norm": [1.0] * d, "gate": [[0.5] * d for _ in preset["x"][0]]}
    proc = in_process(
        "train", _file(tmp_path, preset), "--lr", "0.001", "--steps", "2", "--freeze", "norm,gate"
    )
    assert proc.returncode == 0, proc.stderr
    assert _frozen(proc.stdout) == "Frozen (--freeze, not moved): w_norm, W_G."


def test_cli_md_train_says_which_weights_learn_and_freeze():
    """docs/cli.md's train: a layer's own weights are learned (MLA's in place of W_Q, W_K, W_V; a
    linear layer's norm, gate, convolution and decay), and --freeze takes their names (wdq, wuk;
    norm, conv, a_log) and a linear layer's input keys."""
    text = _prose("docs/cli.md")
    assert "and the weights of its own layer: multi-head latent attention's in place of" in text
    assert "(`wdq`, `wuk`, … for multi-head latent attention; `norm`, `conv`, `a_log`" in text
    assert "whose input keys work too" in text
    mla = in_process("train", "--preset", "mla", "--lr", "0.05", "--steps", "1", "-f", "json")
    assert mla.returncode == 0, mla.stderr
    learned = json.loads(mla.stdout)["learned"]
    assert {"wq", "wk", "wv"}.isdisjoint(learned) and {"wdq", "wuk"} <= set(learned)


@pytest.mark.parametrize("words", ["norm,conv,a_log", "wf_a,wg_b,A_log,dt_bias"])
def test_freeze_takes_a_kda_layers_names_and_input_keys(tmp_path, words):
    path = _file(tmp_path, _with_zero_target(KDA_LAYER))
    proc = in_process("train", path, "--lr", "0.02", "--steps", "2", "--freeze", words)
    assert proc.returncode == 0, proc.stderr
    learned = next(line for line in proc.stdout.splitlines() if line.startswith("Learned"))
    frozen = _frozen(proc.stdout)
    assert len(frozen.split(":")[1].split(",")) == len(words.split(","))
    for name in frozen.split(":")[1].strip(" .").split(", "):
        assert name not in learned


# ---- docs/input-format.md: mla ------------------------------------------------------------------


def test_input_format_says_train_steps_mla_and_it_does():
    text = _prose("docs/input-format.md")
    assert "`qkvcalc train` steps every one of them by those gradients" in text
    assert "train` does not step them" not in text
    proc = in_process(
        "train", "--preset", "mla", "--lr", "0.05", "--steps", "2", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    learned = json.loads(proc.stdout)["learned"]
    assert {"wdq", "wuq", "wdkv", "wkr", "wuk", "wuv"} <= set(learned), learned


# ---- explain --backward --------------------------------------------------------------------------


def _grads(tmp_path, doc: dict) -> set[str]:
    proc = in_process("explain", _file(tmp_path, doc), "--backward", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return {s["id"] for s in json.loads(proc.stdout)["stages"] if s["id"].startswith("grad_")}


PLAIN = {
    "x": [[1, 0], [0, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [[1, 0], [1, 1]],
    "wo": [[1, 0], [1, 1]],
    "bq": [1, 1],
    "target": [[0, 0], [0, 0]],
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_backward_help_names_what_the_backward_reaches(tmp_path, lang):
    """help.explain.backward: back to X and the weights (W_Q, W_K, W_V, W_O, the biases, MLA's
    latents', a linear layer's own), or to the Q, K and V given."""
    said = translate("help.explain.backward", lang)
    for word in ("X", "W_Q", "W_K", "W_V", "W_O", "MLA", "Q, K"):
        assert word in said, word
    assert {"grad_x", "grad_wq", "grad_wk", "grad_wv", "grad_wo", "grad_bq"} <= _grads(
        tmp_path, PLAIN
    )
    mla = json.loads((ROOT / "presets" / "mla.json").read_text())
    mla["target"] = [[0.0] * 4 for _ in mla["x"]]
    assert {"grad_x", "grad_wdq", "grad_wuq", "grad_wdkv", "grad_wuk", "grad_wuv"} <= _grads(
        tmp_path, mla
    )
    linear = _grads(tmp_path, _with_zero_target(GDN_LAYER))
    assert {"grad_x", "grad_wq", "grad_wo", "grad_wa", "grad_wb", "grad_wz"} <= linear
    given = {"q": PLAIN["wq"], "k": PLAIN["wk"], "v": PLAIN["wv"], "target": PLAIN["target"]}
    assert {"grad_q", "grad_k", "grad_v"} <= _grads(tmp_path, given)


def test_no_message_says_backward_refuses_a_lightning_layer(tmp_path):
    """The message that --backward does not go through lightning attention is gone: it does,
    and train steps through it."""
    from qkvcalc.catalog.en import MESSAGES

    assert not [k for k, v in MESSAGES.items() if "--backward does not go through" in v]
    preset = json.loads((ROOT / "presets" / "lightning.json").read_text())
    assert {"grad_wq", "grad_wk", "grad_wv", "grad_x"} <= _grads(tmp_path, preset)
    proc = in_process("train", "--preset", "lightning", "--lr", "0.0005", "--steps", "2")
    assert proc.returncode == 0, proc.stderr


# ---- qk_norm over the projection -----------------------------------------------------------------

QK_PROJECTION = {
    "x": [[1, 2, 0, 1], [0, 1, 1, 0], [1, 1, 1, 1]],
    "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
    "wk": [[1, 1, 0, 0], [0, 1, 0, 1], [1, 0, 1, 0], [0, 0, 1, 1]],
    "wv": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0], [0, 0, 1, 1]],
    "heads": 2,
    "q_norm": [1, 1.5, 0.5, 1],
    "k_norm": [1, 0.5, 1.5, 1],
    "qk_norm": {"over": "projection"},
    "mask": "causal",
    "target": [[0, 0, 0, 0]] * 3,
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_qk_norm_over_the_projection_message_tells_what_runs(tmp_path, lang):
    """qk_norm.projection_backward: --backward and qkvcalc train need the norm per head (both
    refuse it, with this message, and take "over": "head"); explain without --backward shows it.
    docs/input-format.md says the same."""
    said = translate("qk_norm.projection_backward", lang)
    assert "--backward" in said and "qkvcalc train" in said and '"over": "head"' in said
    path = _file(tmp_path, QK_PROJECTION)
    for args in (("explain", path, "--backward"), ("train", path, "--steps", "2")):
        proc = in_process(*args, "--lang", lang)
        assert (
            proc.returncode == 2
            and proc.stderr.strip() == f"{translate('cli.error_prefix', lang)}: {said}"
        )
    assert in_process("explain", path).returncode == 0
    per_head = QK_PROJECTION | {"qk_norm": {"over": "head"}, "q_norm": [1, 1.5], "k_norm": [0.5, 1]}
    per_head = _file(tmp_path, per_head, "head.json")
    assert in_process("explain", per_head, "--backward").returncode == 0
    assert in_process("train", per_head, "--steps", "2", "--lr", "0.01").returncode == 0
    text = _prose("docs/input-format.md")
    assert "Not with `decode`, `--backward` or `qkvcalc train` (a head's norm reads" in text


# ---- attend on a linear-attention layer ---------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_attend_on_a_linear_layer_says_what_each_command_takes(tmp_path, lang):
    """backward.attend_mixer, printed by explain --backward and by train: both take target;
    explain --backward takes grad_output too (train does not: it has no loss to descend)."""
    said = translate("backward.attend_mixer", lang)
    assert "target" in said and "explain --backward" in said and "grad_output" in said
    error = translate("cli.error_prefix", lang)
    preset = json.loads((ROOT / "presets" / "lightning.json").read_text())
    given = {k: v for k, v in preset.items() if k != "target"}
    attend = _file(tmp_path, given | {"attend": [1, 1, 1]}, "attend.json")
    for args in (("explain", attend, "--backward"), ("train", attend, "--lr", "0.0005")):
        proc = in_process(*args, "--lang", lang)
        assert proc.returncode == 2 and proc.stderr.strip() == f"{error}: {said}"
    target = _file(tmp_path, preset, "target.json")  # the preset has a target
    assert in_process("train", target, "--lr", "0.0005", "--steps", "2").returncode == 0
    assert in_process("explain", target, "--backward").returncode == 0
    dl_do_path = _file(tmp_path, given | {"grad_output": preset["target"]}, "dl_do.json")
    assert in_process("explain", dl_do_path, "--backward").returncode == 0
    assert in_process("train", dl_do_path).returncode == 2


# ---- extract: a hybrid's layers -----------------------------------------------------------------


def _saved(name: str, folder) -> str:
    from tests.test_extract import build_from
    from tests.test_extract_hybrid import CASES, EAGER

    config, fields, model_name, _ = CASES[name]
    build_from(config, fields, model_name, **EAGER).save_pretrained(folder)
    return str(folder)


def test_cli_md_says_which_hybrid_layers_extract_reads_as_it_does(tmp_path):
    """docs/cli.md: a hybrid's Gated DeltaNet layer is read (as gated_delta); a Mamba layer is
    refused with the message its text block shows (extract.not_attention), en and ko alike."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    text = _prose("docs/cli.md")
    assert "A hybrid's linear-attention layers are read" in text
    assert (
        "the Gated DeltaNet layers of Qwen3-Next, Qwen3.5 and OLMo-Hybrid (the `gated_delta`"
        in text
    )
    shown = re.search(r"layer 0 of my-bamba is a (.*?) layer, (.*?); the attention layers", text)
    assert shown is not None
    qwen = _saved("qwen3_next", tmp_path / "qwen")  # its layer 0 is linear attention
    proc = in_process("extract", qwen, "--layer", "0", "--ids", "1 2 3", "--dtype", "float64")
    assert proc.returncode == 0, proc.stderr
    assert "gated_delta" in json.loads(proc.stdout)
    bamba = _saved("bamba", tmp_path / "bamba")
    for lang in ("en", "ko"):
        proc = in_process("extract", bamba, "--layer", "0", "--ids", "1 2 3", "--lang", lang)
        assert proc.returncode == 2 and not proc.stdout
        kind = translate("hybrid.mamba", lang)
        said = translate(
            "extract.not_attention", lang, layer=0, model="bamba", kind=kind, attention="1"
        )
        assert proc.stderr.strip() == f"{translate('cli.error_prefix', lang)}: {said}"
    said = translate("extract.not_attention", "en", layer=0, model="m", kind="K", attention="1")
    assert f"K layer, {shown.group(2)}; the attention layers" in said
    assert shown.group(1) == translate("hybrid.mamba", "en")


# ---- docs/cli.md: explain --dtype and --backward -------------------------------------------------


def test_cli_md_dtype_computes_the_indexer_and_the_linear_layers():
    """docs/cli.md's --dtype: the indexer and the three linear-attention layers are computed in
    the dtype, the linear layers not under sdpa; not with --exact, --backward nor --shuffle."""
    text = _prose("docs/cli.md")
    assert "the sparse-attention indexer (`indexer`, its scores in float32" in text
    assert "layers (`gated_delta`, `kimi_delta`, `lightning`, each as its model's code" in text
    for preset in ("dsa", "deltanet", "kda", "lightning"):
        proc = in_process("explain", "--preset", preset, "--dtype", "bfloat16", "-f", "json")
        assert proc.returncode == 0, (preset, proc.stderr)
        assert json.loads(proc.stdout)["precision"]["dtype"] == "bfloat16"
    for preset in ("deltanet", "kda", "lightning"):
        args = ("explain", "--preset", preset, "--dtype", "bfloat16", "--policy", "sdpa")
        assert in_process(*args).returncode == 2
    for option in (("--exact",), ("--backward",), ("--shuffle", "3 2 1")):
        proc = in_process("explain", "--preset", "lightning", "--dtype", "bfloat16", *option)
        assert proc.returncode == 2 and option[0] in proc.stderr


def test_cli_md_backward_goes_through_the_latents_and_the_linear_layers(tmp_path):
    """docs/cli.md's --backward: on through MLA's latents to their weights, the indexer's choice
    held as a mask, through a linear-attention layer to its own weights."""
    text = _prose("docs/cli.md")
    assert "with multi-head latent attention on through the latents to their weights" in text
    dsa = in_process("explain", "--preset", "dsa", "--backward", "-f", "json")
    assert dsa.returncode == 0, dsa.stderr
    ids = {s["id"] for s in json.loads(dsa.stdout)["stages"]}
    assert {"grad_wdq", "grad_wdkv", "grad_wuk", "grad_wuv"} <= ids
    assert not any(i.startswith("grad_index") for i in ids)  # the choice: no gradient
    linear = _grads(tmp_path, _with_zero_target(KDA_LAYER))
    assert {"grad_wfa", "grad_wfb", "grad_wb"} <= linear, linear


def test_readme_quotes_extracts_refusal_of_a_mamba_layer_as_it_is():
    said = translate(
        "extract.not_attention",
        "en",
        layer=0,
        model="m",
        kind=translate("hybrid.mamba", "en"),
        attention="3, 7, 11",
    )
    assert f'("{said}")' in _prose("README.md")


# ---- train's notes ------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_attend_note_names_no_weight_a_latent_layer_lacks(lang):
    """train.attend_shortcut is printed for every attend run, MLA's too, which has no W_Q, W_K,
    W_V: the note says 'its weights'."""
    said = translate("train.attend_shortcut", lang)
    assert "W_Q" not in said
    args = ("train", "--preset", "mla", "--attend", "1 1 1 1 1", "--lr", "0.05", "--steps", "1")
    proc = in_process(*args, "--lang", lang, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert said in out["notes"] and not {"wq", "wk", "wv"} & set(out["learned"])


# ---- quiz --backward -----------------------------------------------------------------------------


def test_quiz_backward_asks_each_default_stage_the_problem_has():
    """docs/cli.md's quiz --backward: the default stages, each that the problem has (a linear
    layer has no softmax, MLA no W_Q)."""
    assert "`grad_wq`, each that the problem has (a linear-attention layer has no softmax," in (
        _prose("docs/cli.md")
    )

    def asked(preset: str, *loss: str) -> set[str]:
        proc = in_process("quiz", "--preset", preset, "--backward", "--template", *loss)
        assert proc.returncode == 0, proc.stderr
        return {key.split("/")[-1] for key in json.loads(proc.stdout)}

    assert {"grad_v", "grad_weights", "grad_scores", "grad_q", "grad_k", "grad_wq"} <= asked(
        "sentence", "--target", "0 0; 0 0; 0 0"
    )
    mla = asked("mla")
    assert "grad_wq" not in mla and {"grad_v", "grad_weights", "grad_q"} <= mla
    lightning = asked("lightning")
    assert "grad_weights" not in lightning and {"grad_q", "grad_wq"} <= lightning


# ---- docs/input-format.md: mla's one key/value head ----------------------------------------------


def test_input_format_says_shared_kv_takes_backward_train_and_decode_and_it_does(tmp_path):
    text = _prose("docs/input-format.md")
    assert "`--backward` adds dC_KV = Σₕ (dKₕ + dVₕ)" in text
    assert "With `decode` the cache holds the one key/value head once for every head" in text
    from tests.test_mla_shared_kv import _decoded_doc

    doc = _decoded_doc(True, True) | {"target": [[0.0] * 3] * 5}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    runs = (["explain", "--backward"], ["train", "--steps", "2"], ["explain", "--decode", "2"])
    for args in runs:
        proc = in_process(args[0], str(path), *args[1:], "--format", "json")
        assert proc.returncode == 0, (args, proc.stderr)
    assert "With `vo_rope` as well (DeepSeek-V4's layer) the values turn as the keys do" in text
    turned = tmp_path / "turned.json"
    turned.write_text(json.dumps(_decoded_doc(True, True, vo_rope=True)), encoding="utf-8")
    proc = in_process("explain", str(turned), "--decode", "2", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    ids = {stage["id"] for stage in json.loads(proc.stdout)["stages"]}
    assert {"c_kv_cache", "out_back"} <= ids and "k_rope_cache" not in ids
