"""qkvcalc heads on a hybrid's linear-attention layers (issue 37): a Gated DeltaNet (Qwen3-Next,
Qwen3.5, OLMo-Hybrid), Kimi Delta Attention (Kimi Linear, Ling 3.0) or lightning (MiniMax)
layer forms no matrix of attention weights, but computes one without forming it (its problem's
`weights` stage, W with W·V the head's core output). heads draws those matrices under the
layer's own number, marked implicit, from the same run of the model as the softmax layers'
maps.

Against extract and transformers (tiny float64 models from configs, random weights, eager,
save_pretrained): each drawn matrix equals the `weights` stage of `extract --layer L` then
explain, and W·V per head equals the module's own core output (the input of its norm) to 1e-8;
the legend's largest |W| is the matrices' own, and the table marks exactly the negative cells;
the page in both languages; the JSON round trip; `--layer L --head H` of such a layer is a
problem that explains to the same W."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tests.test_extract import build_from, true_float64
from tests.test_extract_bailing import CASES as BAILING
from tests.test_extract_gdn import CASES as GDN
from tests.test_extract_hybrid import EAGER, as_loaded
from tests.test_extract_kda import CASES as KDA
from tests.test_extract_minimax import FIELDS as MINIMAX
from tests.test_extract_minimax import as_saved
from tests.test_extract_more import TOL, at, ids, relative
from tests.test_extract_new import kept_float32

torch = pytest.importorskip("torch")

# name: (config, fields, model class, the path of a layer's mixer, its linear layers, the stage
# of the V the core reads, how the model is made what its checkpoint loads as)
CASES = {
    "qwen3_next": (*GDN["qwen3_next"], (0,), "v_conv", "qwen3_next"),
    "qwen3_5": (*GDN["qwen3_5"], (0,), "v_conv", "qwen3_5"),
    "olmo_hybrid": (*GDN["olmo_hybrid"], (0,), "v_conv", "olmo_hybrid"),
    "kimi_linear": (
        "KimiLinearConfig",
        KDA["kimi_linear-wide"][0],
        "KimiLinearForCausalLM",
        "model.layers.{}.self_attn",
        (1, 2),
        "v_conv",
        "kimi",
    ),
    # Ling 3.0: its KDA layers' decay projection and output gate in one (wf, wz), the
    # bounded decay (lower_bound); its MLA layer (2) is a softmax layer's maps
    "bailing_hybrid": (
        "BailingHybridConfig",
        BAILING["bailing"][0],
        "BailingHybridForCausalLM",
        "model.layers.{}.self_attn",
        (0, 1),
        "v_conv",
        "kimi",
    ),
    "minimax": (
        "MiniMaxConfig",
        MINIMAX,
        "MiniMaxForCausalLM",
        "model.layers.{}.self_attn",
        (0, 2),
        "v_silu",
        "minimax",
    ),
}


def _norm(module):
    """The module whose input is the core's output, every head's side by side."""
    return module.norm if hasattr(module, "norm") else module.o_norm


def cores(model, path: str, layers) -> dict[int, np.ndarray]:
    """transformers' own forward, truly float64: each linear layer's core output (its norm's
    input) [n, H, d_v]."""
    seen: dict[int, np.ndarray] = {}
    hooks = []
    for layer in layers:
        module = at(model, path, layer)

        def grab(mod, args, layer=layer):
            seen[layer] = args[0].detach().clone().reshape(len(ids()), -1).numpy()

        hooks.append(_norm(module).register_forward_pre_hook(grab))
    try:
        with torch.no_grad(), true_float64():
            model(input_ids=torch.tensor([ids()]))
    finally:
        for hook in hooks:
            hook.remove()
    return seen


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Each case built, saved and run by heads once (the page's problems kept), lazily."""
    from qkvcalc.extract.heads import attention_maps

    root = tmp_path_factory.mktemp("implicit")
    out: dict = {}

    def get(name: str) -> dict:
        if name not in out:
            config, fields, model_name, path, layers, v, made = CASES[name]
            extra = {} if made == "minimax" else EAGER
            if made == "minimax":
                extra = {"_experts_implementation": "eager"}
            model = build_from(config, fields, model_name, **extra)
            if made == "kimi":
                kept_float32(model)
            elif made != "minimax":
                as_loaded(model, made)
            core = cores(model, path, layers)  # MiniMax's: its float64 decays, as extract's
            if made == "minimax":
                as_saved(model)
            folder = root / name
            model.save_pretrained(folder)
            run = attention_maps(str(folder), input_ids=ids(), dtype="float64", problems=True)
            out[name] = {"run": run, "core": core, "folder": folder, "layers": layers, "v": v}
        return out[name]

    return get


def drawn(run, layer: int) -> np.ndarray:
    return run.weights[run.layers.index(layer)]


@pytest.mark.parametrize("name", list(CASES))
def test_each_linear_layer_is_drawn_as_extract_then_explain_compute_it(lab, name):
    import qkvcalc

    got = lab(name)
    run, layers = got["run"], got["layers"]
    assert sorted(run.implicit) == list(layers) and run.layers == sorted(run.layers)
    for layer in layers:
        problem = qkvcalc.extract(str(got["folder"]), layer=layer, input_ids=ids(), dtype="float64")
        trace = qkvcalc.explain(**problem)
        heads = problem["heads"]
        maps = drawn(run, layer)
        assert maps.shape == (heads, len(ids()), len(ids()))
        core = got["core"][layer].reshape(len(ids()), heads, -1)
        for h in range(1, heads + 1):
            weights = trace.stage("weights", h).value
            assert relative(maps[h - 1], weights) < 1e-12
            # W·V: the head's core output, as the module computes it
            v = trace.stage(got["v"], h).value
            assert relative(maps[h - 1] @ v, core[:, h - 1]) < TOL
            assert np.allclose(np.triu(maps[h - 1], 1), 0.0)


def test_the_matrices_are_signed_and_not_probabilities(lab):
    """What the page says of them is so: the delta rule makes negative entries, and rows do not
    sum to 1 (else a softmax map would do)."""
    run = lab("qwen3_next")["run"]
    maps = drawn(run, 0)
    assert (maps < 0).any()
    assert not np.allclose(maps.sum(axis=-1), 1.0)


def _legend_numbers(text: str) -> list[float]:
    joined = " ".join(text.split())
    return [float(x) for x in re.findall(r"largest \|W\|, (-?[0-9.e+-]+?)[;.](?:\s|$)", joined)]


@pytest.mark.parametrize("name", ["qwen3_next", "kimi_linear", "minimax"])
def test_the_table_s_legend_and_marks_are_the_matrices_own(lab, name):
    from qkvcalc.render.heads import heads_text

    run = lab(name)["run"]
    text = heads_text(run, "en", 400)
    numbers = _legend_numbers(text)
    tops = [float(np.abs(drawn(run, layer)).max()) for layer in sorted(run.implicit)]
    assert len(numbers) == len(tops)
    for said, top in zip(numbers, tops, strict=True):
        assert said == pytest.approx(top, rel=1e-3)
    # the mark after each shade: exactly the negative cells (every head side by side at 400)
    lines = text.split("\n")
    n = len(ids())
    for layer in run.implicit:
        maps = drawn(run, layer)
        start = next(i for i, line in enumerate(lines) if line.startswith(f"layer {layer} "))
        for i in range(n):
            row = lines[start + 1 + i].ljust(10 + maps.shape[0] * (2 * n + 2))  # trailing spaces
            for h in range(maps.shape[0]):
                at_h = 10 + h * (2 * n + 2)  # the label's column, then a block and a gap each
                marks = [row[at_h + 2 * j + 1] == "-" for j in range(n)]
                assert marks == list(maps[h, i] < 0), (layer, h, i)
    ko = heads_text(run, "ko", 400)
    assert "암묵적" in ko and all(f"{top:.4g}" in ko for top in tops)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_page_draws_them_signed_with_their_legend(lab, lang):
    from qkvcalc.extract.heads import page
    from qkvcalc.render.heads import largest

    run = lab("qwen3_next")["run"]
    html = page(run, lang)
    top = largest(drawn(run, 0))
    assert top == float(np.abs(drawn(run, 0)).max())
    legend = "Layer 0, linear-attention (Gated DeltaNet), implicit" if lang == "en" else "층 0"
    said = re.search(r'<p class="implicit">(.*?)</p>', html)[1]
    assert said.startswith(legend) and f"{top:.4g}" in said
    assert html.count('class="implicit"') == 1 and 'id="l0h2"' in html
    # each head's full matrix: its signed numbers, under the implicit caption
    caption = "computes without forming it" if lang == "en" else "만들지 않고 계산하는 행렬 W"
    assert caption in html
    section = html[html.index('id="l0h1"') : html.index('id="l0h2"')]
    first = drawn(run, 0)[0]
    assert f">{first[1, 0]:.4g}<" in section or f">{first[1, 0]:.4g}\n" in section
    # a negative cell is red, a positive one blue: the classes' colours say so
    styles = dict(re.findall(r"\.(s\d+) \{ background: (rgb\([^)]*\))", html))
    cells = re.findall(r'<td class="(s\d+)">(-?[0-9.e+-]+)', section)
    reds = {styles[c] for c, w in cells if float(w) < -0.05 * top}
    blues = {styles[c] for c, w in cells if float(w) > 0.05 * top}
    assert reds and blues
    assert all(_rgb(c)[0] > _rgb(c)[2] for c in reds) and all(
        _rgb(c)[2] > _rgb(c)[0] for c in blues
    )
    assert "not in the page" not in html and "들어 있지 않습니다" not in html


def _rgb(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def test_the_json_says_which_layers_are_implicit_and_round_trips(lab):
    from qkvcalc.extract.heads import to_json

    run = lab("minimax")["run"]
    doc = json.loads(json.dumps(to_json(run)))
    assert [(layer["layer"], layer.get("implicit", False)) for layer in doc["layers"]] == [
        (0, True),
        (1, False),
        (2, True),
    ]
    for layer, maps in zip(doc["layers"], run.weights, strict=True):
        assert np.array_equal(np.array([h["weights"] for h in layer["heads"]]), maps)


@pytest.mark.parametrize("name", list(CASES))
def test_a_linear_head_is_a_problem_of_its_own(lab, name):
    """split_head of a linear layer's problem: head h's columns, gates and taps; explain gives
    the head's W as drawn, and its output that head's part of the layer (the core output for
    lightning, whose norm reads every head)."""
    import qkvcalc
    from qkvcalc.extract.heads import split_head

    got = lab(name)
    run = got["run"]
    for layer in got["layers"]:
        problem = run.problems[run.layers.index(layer)]
        whole = qkvcalc.explain(**problem)
        for h in range(1, problem["heads"] + 1):
            one = split_head(problem, h)
            trace = qkvcalc.explain(**one)
            weights = trace.weights  # [1, n, n] where the gated norm joins the one head
            assert relative(weights.reshape(weights.shape[-2:]), drawn(run, layer)[h - 1]) < 1e-12
            if name == "minimax":
                assert relative(trace.output, whole.stage("output", h).value) < 1e-12
                assert "RMSNorm" in one["description"]
            else:  # its gated norm, of the head alone: its part of the concatenation, and
                # the problem's output (the core output, before the norm, was given before)
                assert [s.id for s in trace.stages[-3:]] == ["gated", "concat", "output"]
                assert relative(trace.output, whole.stage("gated", h).value) < 1e-12


def test_the_command_line_writes_a_linear_head_that_explains(lab, tmp_path):
    from tests.conftest import run_qkvcalc

    got = lab("qwen3_next")
    argv = ["heads", str(got["folder"]), "--ids", " ".join(map(str, ids()))]
    done = run_qkvcalc(*argv, "--layer", "0", "--head", "2", timeout=300)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "head.json"
    path.write_text(done.stdout)
    shown = run_qkvcalc("explain", str(path), "--format", "json", timeout=300)
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    weights = next(s for s in doc["stages"] if s["id"] == "weights")["value"]
    assert relative(np.array(weights, dtype=float), drawn(got["run"], 0)[1]) < 1e-12


def test_the_state_space_layers_stay_left_out():
    """Only linear-attention layers with an implicit matrix are drawn: a Mamba or MLP layer is
    not (its sentence: test_extract_hybrid's Nemotron-H)."""
    import transformers

    from qkvcalc.extract.hybrid import implicit_layers
    from tests.test_extract_hybrid import CASES as HYBRIDS

    assert implicit_layers(_config("qwen3_next")) == [0] and implicit_layers(
        _config("minimax")
    ) == [0, 2]
    for name in ("bamba", "nemotron_h", "lfm2"):
        config_name, fields, _, _ = HYBRIDS[name]
        assert implicit_layers(getattr(transformers, config_name)(**fields)) == []


def _config(name: str):
    import transformers

    config_name, fields, *_ = CASES[name]
    return getattr(transformers, config_name)(**fields)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_too_many_weights_counts_the_implicit_matrices(lab, monkeypatch, lang):
    """Qwen3-Next here: one attention layer of 4 heads and one Gated DeltaNet layer of 2, on
    12 tokens: (4 + 2) × 144 = 864 weights; one fewer allowed is one message with that sum."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.extract import heads

    run = lab("qwen3_next")["run"]
    n = len(ids())
    count = sum(w.size for w in run.weights)
    assert count == (1 * 4 + 1 * 2) * n * n
    monkeypatch.setattr(heads, "MAX_WEIGHTS", count - 1)
    with pytest.raises(QkvcalcError) as err:
        heads.attention_maps(str(lab("qwen3_next")["folder"]), input_ids=ids(), dtype="float64")
    said = err.value.message(lang)
    assert str(count) in said and f"{n}²" in said
    parts = f"(1 × 4 + 1 × 2) × {n}²" if lang == "en" else "(1개 층 × 4개 헤드 + 선형 어텐션 1개"
    assert parts in said  # the count it says, = (4 + 2)·n², by its parts
    assert "1 layers" not in said
    monkeypatch.setattr(heads, "MAX_WEIGHTS", count)
    assert heads.attention_maps(str(lab("qwen3_next")["folder"]), input_ids=ids()).implicit


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_title_counts_one_layer_without_a_plural(lab, lang):
    """One attention layer and one linear layer: the title's counts read as labels
    ("layers × heads: 1 × 4"), never "1 layers"."""
    from qkvcalc.render.heads import title

    said = title(lab("qwen3_next")["run"], lang)
    counts = ("1 × 4", "1 × 2") if lang == "en" else ("1개 층 × 4개 헤드", "1개 층 × 2개 헤드")
    assert all(count in said for count in counts) and str(len(ids())) in said
    assert "1 layers" not in said and "1 tokens" not in said


def _how_to_read(text: str, lang: str) -> str:
    """The how-to-read sentence: from its start to the token list's label after it."""
    from qkvcalc.i18n import translate

    joined = " ".join(text.split())
    start = joined.index("One block per head" if lang == "en" else "헤드마다 블록")
    return joined[start : joined.index(translate("heads.tokens", lang) + ":", start)]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_how_to_read_is_true_of_the_blocks_shown(lab, lang):
    """'The darker the more weight, from 0 to 1' is true of softmax rows only: with implicit
    layers on the page it says what their shade is (|W| up to the layer's own largest, given
    above it); with implicit layers alone it never speaks of weights from 0 to 1."""
    import dataclasses

    from qkvcalc.render.heads import heads_text

    run = lab("qwen3_next")["run"]  # layer 0 Gated DeltaNet, layer 1 softmax attention
    assert run.implicit and set(run.layers) - set(run.implicit)
    for layer in run.implicit:  # the implicit blocks do reach outside [0, 1]: the old line lied
        assert np.abs(drawn(run, layer)).max() > 1 or (drawn(run, layer) < 0).any()
    said = _how_to_read(heads_text(run, lang, 400), lang)
    if lang == "en":
        assert "softmax layer's block its weight, from 0 to 1" in said, said
        assert "implicit layer's block its |W|, from 0 to that layer's largest |W|" in said
    else:
        assert "소프트맥스 층" in said and "0부터 1까지" in said and "|W|" in said, said
    keep = [k for k, layer in enumerate(run.layers) if layer in run.implicit]
    alone = dataclasses.replace(
        run,
        weights=[run.weights[k] for k in keep],
        problems=[run.problems[k] for k in keep],
        numbers=[run.layers[k] for k in keep],
    )
    said = _how_to_read(heads_text(alone, lang, 400), lang)
    assert "0 to 1" not in said and "0부터 1까지" not in said and "|W|" in said, said
    assert "softmax" not in said and "소프트맥스" not in said
    # a model of softmax layers only keeps the sentence it had
    softmax = [k for k, layer in enumerate(run.layers) if layer not in run.implicit]
    plain = dataclasses.replace(
        run,
        weights=[run.weights[k] for k in softmax],
        problems=[run.problems[k] for k in softmax],
        numbers=[run.layers[k] for k in softmax],
        implicit={},
    )
    said = _how_to_read(heads_text(plain, lang, 400), lang)
    assert ("from 0 to 1" in said or "0에서 1까지" in said) and "|W|" not in said, said
