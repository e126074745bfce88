"""Sentences that were true for one case and shown for all (the review of 2026-12-07): each
test failed on the code before it. Where a sentence depends on the case, the case is made
here and its numbers recomputed independently (PyTorch autograd, numpy)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from qkvcalc.i18n import translate
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.conftest import in_process, one_message
from tests.test_teaching_review import problem

ROOT = Path(__file__).resolve().parent.parent

# ---- the scaling's "why": a saturated softmax slows a loss through A·V, not −Σ log A ---------


def _score_grads(scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sentence preset's weights at `scale`, and the gradients of its scaled scores under
    a loss through the output (½‖A·V‖²) and under −Σ log A with each query's target its own
    key, by autograd (the causal mask as −∞)."""
    from qkvcalc.input import presets

    doc = presets.load("sentence")
    x, wq, wk, wv = (torch.tensor(np.array(doc[n], dtype=float)) for n in ("x", "wq", "wk", "wv"))
    q, k, v = x @ wq, x @ wk, x @ wv
    n = x.shape[0]
    causal = torch.triu(torch.full((n, n), float("-inf"), dtype=torch.float64), 1)
    grads = []
    for loss in (lambda a: 0.5 * ((a @ v) ** 2).sum(), lambda a: -torch.log(a.diagonal()).sum()):
        s = ((q @ k.T) * scale).detach().requires_grad_()
        a = torch.softmax(s + causal, dim=-1)
        loss(a).backward()
        grads.append(s.grad.numpy())
    return a.detach().numpy(), grads[0], grads[1]


def test_the_scaling_s_why_says_which_loss_a_saturated_softmax_slows():
    """At scale 50 the sentence's softmax is saturated (every weight within 1e-6 of 0 or 1):
    a loss through A·V then gets almost nothing back to the scores, −Σ log A gets about 1.
    The engine agrees, and the sentence shown on every page says both, in en and ko."""
    a, through_output, log_loss = _score_grads(50.0)
    assert np.all(np.minimum(a, 1 - a) < 1e-6)
    assert np.abs(through_output).max() < 1e-6
    assert np.abs(log_loss).max() > 0.9  # A − onehot: the target key's weight is near 0
    cases = (({"target": [[0, 0]] * 3}, through_output), ({"attend": [1, 2, 3]}, log_loss))
    for changes, expect in cases:
        t = run(problem("sentence", scale=50.0, **changes))
        np.testing.assert_allclose(t.stage("grad_scaled").value, expect, atol=1e-9)
        stage = t.stage("scaled")
        en, ko = (stage.why.text(lang) for lang in ("en", "ko"))
        assert "its gradients are tiny" not in en
        assert "through A·V" in en and "−Σ log A, cancels that derivative" in en, en
        assert "A·V를 거쳐" in ko and "−Σ log A는 그 도함수를 상쇄합니다" in ko, ko


# ---- docs/backward.md's "Not yet": only what --backward still refuses ------------------------

NOT_YET = (ROOT / "docs" / "backward.md").read_text(encoding="utf-8").split("## Not yet")[1]


def _zeros(preset: str) -> str:
    from qkvcalc.input import presets

    return "; ".join(["0 0"] * len(presets.load(preset)["x"]))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("fmt", ["txt", "markdown", "html", "latex"])
def test_a_worksheet_states_the_target_so_not_yet_no_longer_says_it_does_not(fmt, lang):
    """The section said a worksheet does not show T; it states T row by row (in every format
    a person reads, both languages), as the answer key does."""
    target = "1 2; 3 4; 5.5 6"
    args = ("explain", "--preset", "sentence", "--target", target, "--backward", "--lang", lang)
    sheet = in_process(*args, "--worksheet", "--format", fmt)
    assert sheet.returncode == 0, sheet.stderr
    rows = {"I": "1, 2", "love": "3, 4", "cats": "5.5, 6"}
    said = translate(
        "note.loss_target_rows", lang, rows="; ".join(f"{k}: {v}" for k, v in rows.items())
    )
    flat = " ".join(sheet.stdout.split())
    if fmt == "txt":
        assert said in flat, flat
    else:  # marked up: each row's numbers, beside the note's own words
        assert all(f"{k}: {v}" in flat for k, v in rows.items()), flat
    assert "worksheet" not in NOT_YET.lower() and "beside the sheet" not in NOT_YET


@pytest.mark.parametrize("preset", ["deltanet", "kda"])
def test_not_yet_no_longer_names_train_through_a_whole_linear_layer(tmp_path, preset):
    """Not yet said train refused the whole linear layer's pieces before its core (its
    convolution here) until issue 37: --backward goes through them (since 2026-12-07) and train
    now moves them, so the section names neither."""
    from qkvcalc.input import presets

    assert "convolution's taps" not in NOT_YET and "qkvcalc train" not in NOT_YET
    doc = dict(presets.load(preset))
    key = "gated_delta" if preset == "deltanet" else "kimi_delta"
    doc[key] = doc[key] | {"conv": [[1.0] * 6]}  # K = 1 over q | k | v (2 + 2 + 2 channels)
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    shown = in_process("explain", str(path), "--backward", "--grad-output", _zeros(preset))
    assert shown.returncode == 0, shown.stderr
    trained = tmp_path / "target.json"
    trained.write_text(json.dumps(doc | {"target": [[0, 0]] * len(doc["x"])}), encoding="utf-8")
    proc = in_process("train", str(trained), "--steps", "2", "--lr", "0.01")
    assert proc.returncode == 0, proc.stderr
    assert "w_conv" in proc.stdout


def test_not_yet_s_decode_is_refused_in_one_message():
    assert "`decode`" in NOT_YET
    one_message(
        in_process("explain", "--preset", "decode", "--backward", "--target", _zeros("decode")),
        "decode",
    )


# ---- the quiz's softmax-down-the-columns mistake: not "every row sums to 1" where one is 0 ----


def _column_softmax(doc: dict, allowed: np.ndarray) -> np.ndarray:
    """Softmax down each column of the masked scaled scores, computed here (a column with no
    allowed key stays 0), as a student who took the wrong axis writes it."""
    x, wq, wk = (np.array(doc[n], dtype=float) for n in ("x", "wq", "wk"))
    s = (x @ wq) @ (x @ wk).T / np.sqrt(wq.shape[1])
    e = np.where(allowed, np.exp(s - np.where(allowed, s, -np.inf).max(axis=0, initial=0)), 0.0)
    sums = e.sum(axis=0)
    return np.divide(e, sums, out=np.zeros_like(e), where=sums != 0)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_columns_mistake_says_a_fully_masked_row_is_0(tmp_path, lang):
    """Left padding under a causal mask: query 1 sees key 1 alone, a pad, so row 1 of A is 0
    throughout. The mistake's sentence said every row of A sums to 1; it now says which rows
    do, and the run's A agrees with it."""
    from qkvcalc.input import presets
    from tests.test_mistakes import graded, rounded

    doc = {k: v for k, v in presets.load("sentence").items() if k in ("x", "wq", "wk", "wv")}
    doc |= {"mask": "causal", "key_padding": [False, True, True]}
    allowed = np.tril(np.ones((3, 3), dtype=bool)) & np.array([False, True, True])
    assert not allowed[0].any()
    a = run(Problem.from_mapping(doc)).stage("weights").value
    np.testing.assert_array_equal(a.sum(axis=1) == 0, ~allowed.any(axis=1))  # row 1 is 0
    stages = graded(tmp_path, doc, {"weights": rounded(_column_softmax(doc, allowed))}, lang)
    assert stages["weights"]["mistake"] == "softmax_columns"
    text = stages["weights"]["mistake_text"]
    if lang == "en":
        assert "every row of A sums to 1." not in text
        assert "except a row whose keys are all masked, which is 0 throughout" in text, text
    else:
        assert text.endswith(
            "다만 Key가 모두 마스킹된 행은 전부 0입니다(이 A에도 그런 행이 있습니다)."
        ), text


def test_the_columns_mistake_is_not_named_where_a_sink_takes_a_share():
    """With sinks a row of A sums to less than 1: the weights are the sink's own op, whose
    mistakes do not include softmax_columns (so its sentence is never said there)."""
    from qkvcalc.input import presets
    from qkvcalc.quiz.mistakes import candidates

    doc = {**presets.load("sentence"), "sinks": [0.5]}
    for key in ("name", "description", "reference"):
        doc.pop(key)
    trace = run(Problem.from_mapping(doc))
    weights = trace.stage("weights")
    assert np.all(weights.value.sum(axis=1) < 1 - 1e-3)
    named = {mistake for mistake, _, _ in candidates(trace, weights, {})}
    assert named and "softmax_columns" not in named, named


# ---- one spelling per gradient: the heading's dsource is the sentence's dsource --------------


@pytest.mark.parametrize(
    ("preset", "loss"),
    [("cross", {"target": [[0, 0]] * 3}), ("cross", {"attend": [1, 2, 3]}), ("sentence", {})],
)
def test_a_gradient_is_written_as_its_heading_writes_it(preset, loss):
    """The source's gradient was `dsource` in its heading, its formula and its cells and
    `d source` in its sentence. Every gradient's name (dX, dW_K, dsource …) is written one way:
    the sentences under it never split it, and where they state its formula they name it."""
    t = run(problem(preset, **(loss or {"target": [[0, 0]] * 3})))
    named = 0
    for stage in t.stages:
        lhs, _, rhs = stage.spec.formula.partition(" = ")
        if not (lhs.startswith("d") and lhs[1:2].isalpha()):
            continue
        for lang in ("en", "ko"):
            said = " ".join([stage.why.text(lang), *(n.text(lang) for n in stage.notes)])
            assert f"d {lhs[1:]} " not in said, (stage.id, lang, said)
            if stage.id in ("grad_x", "grad_source") and rhs in said:
                assert f"{lhs} = {rhs}" in said, (stage.id, lang, said)
                named += 1
    assert named >= 2 or preset != "cross"  # the source's gradient stated in both languages


# ---- quiz --random: "the same quiz again" repeats every option that shaped it -----------------


def _again(stdout: str) -> list[str]:
    """The command the quiz printed for asking it again (its words, as a shell reads them)."""
    import shlex

    head = stdout.split("qkvcalc —")[0]  # before the problem's header line
    said = " ".join(head.split())  # the sentence as one line: wrapping aside
    return shlex.split(said.split(": ", 1)[1])


@pytest.mark.parametrize(
    "options",
    [
        ("--backward", "--target", "0 0; 0 0; 0 0"),
        ("--backward", "--attend", "1 - 2", "--stages", "grad_weights,grad_q"),
        ("--backward", "--grad-output", "1 0; 0 1; 1 1", "--precision", "3", "--lang", "ko"),
        ("--stages", "scaled,weights", "--size", "4,3"),
    ],
)
def test_the_printed_command_asks_the_same_quiz(options):
    """`quiz --random --seed 3 --backward --target …` printed `qkvcalc quiz --random --seed 3
    --size 3,2` to ask it again: the forward quiz, not this one. Running the printed command
    asks the same questions (the same stages, cells and report)."""
    first = in_process("quiz", "--random", "--seed", "3", *options)
    words = _again(first.stdout)
    assert words[:2] == ["qkvcalc", "quiz"], words
    again = in_process(*words[1:])
    assert again.stdout == first.stdout  # the same problem, stages and cells, said the same way
    assert again.returncode == first.returncode == 1  # none answered
    for option in options:
        if option.startswith("--"):
            assert option in words, (option, words)


# ---- the absolute claims of the catalog, against masked rows and sinks ------------------------

ONE_KEY = {"x": [[1, 2], [0, 1]], "source": [[1, 1]]} | {
    w: [[1, 0], [0, 1]] for w in ("wq", "wk", "wv")
}


@pytest.mark.parametrize(
    "extra", [{}, {"key_padding": [False]}, {"mask": [[True], [False]]}, {"sinks": [0.5]}]
)
def test_the_single_key_note_says_weight_1_only_where_a_row_has_it(extra):
    """With one key, the note said softmax "always gives it weight 1"; a query whose key the
    mask hides has a row of 0. Each sentence under the weights is checked against A itself."""
    weights = run(Problem.from_mapping(ONE_KEY | extra)).stage("weights")
    a = weights.value
    said = {n.key for n in weights.notes if hasattr(n, "key")}
    if "sinks" in extra:  # the sink competes with the key: no single-key sentence at all
        assert np.all(a < 1) and not {"note.single_key", "note.single_key_masked"} & said
        return
    allowed = np.ones((2, 1), bool)
    if "key_padding" in extra:
        allowed[:] = False
    if "mask" in extra:
        allowed = np.array(extra["mask"])
    np.testing.assert_array_equal(a, allowed.astype(float))  # 1 where seen, else 0
    expect = "note.single_key" if allowed.all() else "note.single_key_masked"
    assert expect in said and not ({"note.single_key", "note.single_key_masked"} - {expect}) & said
    text = translate(expect, "en")
    assert ("always gives it weight 1" in text) == bool(allowed.all())


def test_json_trace_md_says_what_a_row_of_weights_sums_to_in_every_case():
    """docs/json-trace.md said each row of `weights` sums to 1 (with sinks, 1 minus the sink's
    share); a row whose keys are all masked sums to 0, with or without a sink."""
    (line,) = [
        row
        for row in (ROOT / "docs" / "json-trace.md").read_text(encoding="utf-8").splitlines()
        if row.startswith("| `weights` |")
    ]
    for extra in ({}, {"sinks": [0.5]}):
        doc = ONE_KEY | {"key_padding": [False]} | extra
        a = run(Problem.from_mapping(doc)).stage("weights").value
        assert np.all(a.sum(axis=1) == 0)  # every key masked: the row is 0
    assert "0 where every key of the row is masked" in line, line


def test_check_s_softmax_sentences_hold_for_its_fully_masked_row():
    """`qkvcalc check` runs code on a problem with a fully masked row ("fully masked row");
    the right weights there are 0 (docs/check.md: what scaled_dot_product_attention returns), so its
    softmax_axis sentence cannot say every query's weights sum to 1, nor mask_after_softmax
    that every row stops summing to 1 (a row the mask leaves whole still does)."""
    from qkvcalc.check.problems import Flags, make

    p = make("qkv", np.random.default_rng(0), 3, 4, (2, 2, 2), Flags(mask="empty_row"))
    allowed = np.array(p["mask"], dtype=bool)
    assert (~allowed.any(axis=1)).sum() == 1 and allowed.any(axis=1).sum() == 2
    q, k = (torch.tensor(np.array(p[n], dtype=float)) for n in ("q", "k"))
    scores = torch.where(torch.tensor(allowed), q @ k.T / np.sqrt(2), float("-inf"))
    a = torch.nan_to_num(torch.softmax(scores, dim=-1))  # 0/0 → 0: the right code's row
    sums = a.sum(dim=-1).numpy()
    np.testing.assert_allclose(sums[allowed.any(axis=1)], 1.0, rtol=1e-12)
    assert np.all(sums[~allowed.any(axis=1)] == 0)
    axis, after = (
        translate(f"check.mistake.{m}", "en") for m in ("softmax_axis", "mask_after_softmax")
    )
    assert "sum to 1 (0 where every key of the row is masked)" in axis, axis
    assert "a row the mask cuts no longer sums to 1" in after, after
    assert "그 행의 Key가 모두 마스크되면 0" in translate("check.mistake.softmax_axis", "ko")
