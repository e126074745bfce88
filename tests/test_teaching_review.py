"""The teaching review of 2026-12-06 (issue 39): each finding F01–F31 held as a test that
failed on the code it was found in. Every sentence about the scale and about learning is
checked against the run's own numbers, recomputed here independently (PyTorch autograd)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.conftest import in_process, one_message, run_qkvcalc

SENTENCE = ("sentence", {})


def problem(preset: str, **changes) -> Problem:
    doc = presets.load(preset)
    for key in ("attend", "target", "grad_output"):
        if key in changes:
            for other in ("attend", "target", "grad_output"):
                doc.pop(other, None)
    doc.update(changes)
    return replace(Problem.from_mapping(doc), backward=True)


def keys(stage) -> list[str]:
    return [n.key for n in stage.notes if hasattr(n, "key")]


def said(value: float) -> str:
    text = f"{value:.4g}".replace("-", "−")
    return ("= " if float(f"{value:.4g}") == value else "≈ ") + text


# ---- F01: √d_k's gradient sentences say what this run shows ---------------------------------


def _score_grad_norms(doc: dict, loss) -> tuple[float, float]:
    """‖d(Q·Kᵀ)‖ with scale 1/√d_k and with scale 1, by autograd."""
    q, k, v = (torch.tensor(np.array(doc[n], dtype=float)) for n in ("q", "k", "v"))
    out = []
    for scale in (1 / np.sqrt(q.shape[1]), 1.0):
        s = (q @ k.T).requires_grad_()
        a = torch.softmax(s * scale, dim=-1)
        loss(a, a @ v).backward()
        out.append(float(s.grad.norm()))
    return out[0], out[1]


@pytest.mark.parametrize(
    ("changes", "loss"),
    [
        ({"attend": [1, 1, 1, 1]}, lambda a, o: -torch.log(a[:, 0]).sum()),
        ({"target": [[0, 0]] * 4}, lambda a, o: 0.5 * (o**2).sum()),
    ],
)
def test_f01_the_scale_sentence_is_chosen_by_the_gradients_of_this_run(changes, loss):
    """Under −Σ log A the unscaled gradient is not smaller (A − onehot does not vanish); under
    a loss through the output it is. The sentence says which, with the run's numbers."""
    p = problem("dk64", **changes)
    notes = run(p).stage("grad_scaled").notes
    with_, without = _score_grad_norms(presets.load("dk64"), loss)
    found = [n for n in notes if n.key.startswith("note.grad_scores_")]
    assert len(found) == 1
    expect = "note.grad_scores_smaller" if without < with_ else "note.grad_scores_larger"
    assert found[0].key == expect
    text = translate(found[0].key, "en", **found[0].params)
    assert said(with_) in text and said(without) in text
    why = {n.key for n in notes}
    if "attend" in changes:
        assert without > with_  # the review's point: −log A keeps the gradient
        assert "note.grad_log_cancels" in why and "note.grad_saturated" not in why
    else:
        assert without < with_ / 10
        assert "note.grad_saturated_given" in why  # dk64 gives Q and K: no W_Q, W_K to name


# ---- F03, F04, F27, F08: the softmax's and the softcap's backward, as the numbers show ---------


def explain_text(*args: str, input: str | None = None) -> str:
    result = in_process("explain", *args, "--backward", "--format", "txt", input=input)
    assert result.returncode == 0, result.stderr
    return " ".join(result.stdout.split())  # the sentences as one line: wrapping aside


def test_f03_a_weight_near_0_can_pass_the_most_back_under_attend():
    p = problem("sentence", attend=[1, 1, 2])
    t = run(p)
    ids = [s.id for s in t.stages]
    a, ds = t.stage("weights").value, t.stages[ids.index("softmax_rowdot") + 1].value
    i, j = np.unravel_index(np.argmax(np.abs(ds)), ds.shape)
    assert a[i, j] < 0.1  # the largest gradient is at a weight near 0 (0.0743 → −0.9257)
    text = explain_text("--preset", "sentence", "--attend", "1 1 2")
    assert "A weight near 0 or near 1 passes almost nothing back" not in text
    assert "as −1/A does under attend, is not held back" in text


def test_f04_f27_the_row_term_with_a_sink_is_an_average_not_a_sum_to_1():
    doc = {**presets.load("sentence"), "sinks": [0.5], "attend": [1, 1, 2]}
    for key in ("name", "description", "reference"):
        doc.pop(key, None)
    t = run(replace(Problem.from_mapping(doc), backward=True))
    a = t.stage("weights").value
    assert np.all(a.sum(axis=1) < 0.999)  # the keys' weights do not add up to 1 with a sink
    da, r = t.stage("grad_weights").value, t.stage("softmax_rowdot").value
    sink = 1 - a.sum(axis=1)
    average = (a * da).sum(axis=1) + sink * 0.0  # the sink counted with dA = 0
    np.testing.assert_allclose(r.ravel(), average / (a.sum(axis=1) + sink), rtol=1e-12)
    import json

    text = explain_text("-", input=json.dumps(doc))
    assert "The weights of a row add up to 1" not in text
    assert "what the row as a whole gains" not in text
    assert (
        "averaged with the weights A; a sink's share, when there is one, counts with dA = 0" in text
    )


def test_f08_the_softcap_is_there_to_bound_the_logits():
    doc = {**presets.load("sentence"), "softcap": 2, "attend": [1, 1, 2]}
    for key in ("name", "description", "reference"):
        doc.pop(key, None)
    import json

    text = explain_text("-", input=json.dumps(doc))
    assert "which is the point of the cap" not in text
    assert "The cap is there to bound the logits" in text


# ---- F05, F06, F07, F25: what a gradient adds, counted from the plan -------------------------


def test_f05_gqa_weight_gradients_name_the_key_value_heads():
    p = problem("gqa", attend=[1, 1, 2])
    t = run(p)
    for name in ("grad_wk",):
        stage = t.stage(name)
        side = [n for n in stage.notes if "side_by_side" in n.key]
        assert len(side) == (1 if p.kv_heads > 1 else 0)
        if side:
            assert side[0].key == "note.grad_kv_heads_side_by_side"
            assert side[0].params["heads"] == p.kv_heads
            assert stage.value.shape[1] == p.kv_heads * p.d_k  # one block per K/V head


@pytest.mark.parametrize(
    ("preset", "attend", "stage_id", "feeds"),
    [
        ("sentence", [1, 1, 2], "grad_x", 3),
        ("cross", [1, 2, 3], "grad_x", 1),
        ("cross", [1, 2, 3], "grad_source", 2),
    ],
)
def test_f06_f07_f25_the_paths_note_counts_what_feeds_and_what_reaches(
    preset, attend, stage_id, feeds
):
    stage = run(problem(preset, attend=attend)).stage(stage_id)
    terms = stage.spec.formula.split("=", 1)[1].count("·W_")
    note = next(n for n in stage.notes if n.key.startswith("note.grad_path"))
    assert note.params["count"] == feeds
    assert note.params.get("reached", feeds) == terms
    text = translate(note.key, "en", **note.params)
    assert " 1 projections" not in text and " 1 paths" not in text
    if terms == 1:
        assert "one path" in text and "adds" not in text


# ---- F12, F14, F15, F16, F31: the quiz, the worksheet and the messages -------------------------


def test_f12_quiz_random_reads_a_typed_target_as_with_a_preset():
    args = ("quiz", "--random", "--seed", "3", "--backward", "--template")
    result = in_process(*args, "--target", "0 0; 0 0; 0 0")
    assert result.returncode == 0, result.stderr
    assert "grad_v" in result.stdout
    again = in_process(*args, "--attend", "1 - 2")
    assert again.returncode == 0, again.stderr


def test_f12_a_random_problem_s_target_of_the_wrong_shape_names_the_shape():
    """--random's target is read as a preset's is: a wrong one names the random problem's
    n × d_out (the seed's n and d_v), as a process, one line."""
    good = run_qkvcalc("quiz", "--random", "--seed", "3", "--backward", "--template",
                       "--target", "0 0; 0 0; 0 0")  # fmt: skip
    assert good.returncode == 0, good.stderr
    n = len(json.loads(good.stdout)["grad_v"])  # dV: one row per key (self-attention: n)
    d_v = len(json.loads(good.stdout)["grad_v"][0])
    bad = run_qkvcalc("quiz", "--random", "--seed", "3", "--backward", "--template",
                      "--target", "0 0")  # fmt: skip
    one_message(bad, f"target is 1×2 but the output is n × d_out = {n}×{d_v}")
    assert "must be a matrix" not in bad.stderr


def test_f13_the_tiles_preset_s_backward_torch_script_runs(tmp_path):
    """The finding's own command: a script that agrees with autograd, not a KeyError."""
    n = len(presets.load("tiles")["x"])
    target = "; ".join(["0 0"] * n)
    out = tmp_path / "tiles_backward.py"
    made = run_qkvcalc("explain", "--preset", "tiles", "--target", target, "--backward",
                       "--format", "torch", "--output", str(out))  # fmt: skip
    assert made.returncode == 0 and "Traceback" not in made.stderr, made.stderr
    import subprocess
    import sys

    ran = subprocess.run([sys.executable, str(out)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert "dA" in ran.stdout and "OK: PyTorch agrees with qkvcalc" in ran.stdout


def test_f14_quiz_help_says_the_backward_replaces_the_forward_by_default():
    from qkvcalc.catalog.en import MESSAGES as EN

    text = EN["help.quiz.backward"]
    assert text.startswith("Ask the backward pass instead of the forward one")
    named = ["grad_v", "grad_weights", "grad_scores", "grad_q", "grad_k", "grad_wq"]
    assert all(name in text for name in named)
    assert "the softmax backward's gradient of the logits" in text
    assert "under attend there is no grad_v" in text
    # what it names is what it asks: the six, and the softmax's backward (here grad_masked)
    for loss, missing in (
        (("--target", "0 0; 0 0; 0 0"), set()),
        (("--attend", "1 1 2"), {"grad_v"}),
    ):
        result = run_qkvcalc("quiz", "--preset", "sentence", *loss, "--backward", "--template")
        asked = json.loads(result.stdout)
        assert set(asked) == (set(named) - missing) | {"grad_masked"}, asked
    shown = run_qkvcalc("quiz", "--help", env={"COLUMNS": "200"}).stdout
    assert "By default it asks grad_v, grad_weights" in " ".join(shown.replace("│", " ").split())


def test_f15_the_backward_quiz_shows_t_a_o_and_do():
    result = in_process("quiz", "--preset", "sentence", "--target", "0 0; 0 0; 0 0",
                        "--backward", input="")  # fmt: skip
    before = result.stdout.split("Stage 1/")[0]
    t = run(problem("sentence", target=[[0, 0]] * 3))
    for line in ("T      1   2", "A         I   love   cats", "dO        1      2"):
        assert line in before, line
    o = t.stage("output").value
    assert f"{o[1, 0]:.2f}" in before  # O's numbers, as the quiz rounds them
    attend = in_process("quiz", "--preset", "sentence", "--attend", "1 - 2", "--backward",
                        input="")  # fmt: skip
    assert "The key each query should look at (attend): I → I, cats → love." in attend.stdout


def test_f15_a_given_do_is_shown_once_before_the_first_question():
    """--grad-output: dO is the given the first question (dV = Aᵀ·dO) reads, shown once with
    A and O, its numbers the ones typed."""
    result = run_qkvcalc("quiz", "--preset", "sentence", "--grad-output", "1 0; 0 1; 1 1",
                         "--backward", input="")  # fmt: skip
    before = result.stdout.split("Stage 1/")[0]
    tables = [line for line in before.splitlines() if line.startswith("dO")]
    assert len(tables) == 1, tables
    assert "A         I   love   cats" in before and "A·V" in before
    rows = before.split(tables[0], 1)[1].splitlines()[2:5]
    assert [row.split()[1:] for row in rows] == [["1", "0"], ["0", "1"], ["1", "1"]]
    assert "Stage 1/7: Backward: gradient of V" in result.stdout


def test_f16_the_backward_worksheet_shows_t_and_the_target_keys():
    text = explain_text("--preset", "sentence", "--target", "0 0.5; 0 0; 1/3 0", "--worksheet")
    assert (
        "T, the output to reach, row by row (rounded to 4 decimals): I: 0, 0.5; love: 0, 0;" in text
    )
    assert "cats: 0.3333, 0." in text
    text = explain_text("--preset", "sentence", "--attend", "1 - 2", "--worksheet")
    assert "The key each query should look at (attend): I → I, cats → love." in text


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--attend", "1 2"), "2 given for n = 3 queries (- for a query with no target)"),
        (("--attend", "1 x 2"), 'attend[2] is "x": a key\'s number from 1 to m = 3'),
    ],
)
def test_f31_a_typed_attend_s_message_names_the_dash_typed(args, fragment):
    """The command line takes - for "no target": its message says -, not JSON's null."""
    result = run_qkvcalc("explain", "--preset", "sentence", *args, "--backward")
    one_message(result, fragment, "- for")
    assert "null" not in result.stderr


def test_f31_a_json_attend_s_message_names_null():
    """A JSON list takes null for "no target": its message says null, not the command line's -."""
    doc = presets.load("sentence")
    for attend, fragment in (([1, 2], "2 given for n = 3"), ([1, "x", 2], "attend[2] is")):
        result = run_qkvcalc(
            "explain", "-", "--backward", input=json.dumps(doc | {"attend": attend})
        )
        one_message(result, fragment, "null for")
        assert "- for" not in result.stderr
    ko = run_qkvcalc(
        "explain", "--preset", "sentence", "--attend", "1 2", "--backward", "--lang", "ko"
    )
    one_message(ko, "목표가 없는 Query는 -)")


# ---- F17, F26, F28, F29, F30: what a stage says it is -------------------------------------


def test_f17_x_is_said_to_be_the_norm_s_output_in_a_pre_norm_model():
    from qkvcalc.catalog.en import MESSAGES as EN

    assert (
        "(an embedding plus its position, or the previous layer's output)" not in EN["stage.x.why"]
    )
    assert "ln_1" in EN["stage.x.why"]


def test_f28_the_scale_of_d_k_2_is_approximately_1_4142():
    text = in_process("explain", "--preset", "sentence", "--exact", "--format", "txt").stdout
    assert "divided by √2 ≈ 1.4142" in text and "√2 = 1.4142" not in text
    assert "divided by √64 = 8" in in_process("explain", "--preset", "dk64").stdout


def test_f29_the_tiles_log_sum_exp_is_not_called_l():
    doc = presets.load("tiles")
    n = len(doc["x"])
    trace = run(problem("tiles", attend=[1] * n))
    lse = [s for s in trace.stages if s.id == "lse"]
    assert lse and all(s.spec.symbol == "LSE" and s.spec.formula.startswith("LSE =") for s in lse)


def _mla_doc(**more) -> dict:
    from tests.test_mla import latent_problem

    return latent_problem(**more)


def test_f26_the_mla_cache_note_says_k_and_v_are_rebuilt_here_for_clarity():
    """The cache holds C_KV; K and V are made again here for clarity; real inference folds
    W_UK into the query and W_UV into W_O and never forms them: both languages say it."""
    doc = {**_mla_doc(), "decode": 1}
    trace = run(Problem.from_mapping(doc))
    said = [n for s in trace.stages for n in s.notes if n.key == "note.mla_from_cache"]
    assert said
    english = translate("note.mla_from_cache", "en", **said[0].params)
    assert "here for clarity" in english and "never forms them" in english
    assert "folds W_UK into the query side" in english and "W_UV into W_O" in english
    assert " 1 rows" not in english and "as the formula reads" not in english
    korean = translate("note.mla_from_cache", "ko", **said[0].params)
    assert "알아보기 쉽도록" in korean and "만들지 않습니다" in korean
    for lang, words in (("en", "for clarity"), ("ko", "알아보기 쉽도록")):
        why = translate("stage.c_kv_cache.why", lang)
        assert words in why and "W_UV" in why


def test_f30_mla_runs_backward_and_what_still_refuses_says_it_whole():
    import json

    from qkvcalc.catalog.en import MESSAGES as EN
    from qkvcalc.catalog.ko import MESSAGES as KO

    result = in_process(
        "explain", "-", "--attend", "1 1 2 3", "--backward", input=json.dumps(_mla_doc())
    )
    assert result.returncode == 0, result.stderr
    assert "dW_DKV" in result.stdout and "mla.backward" not in EN
    # no MLA refusal remains: the indexer's backward holds its choice fixed, and train steps
    # the latents' weights (tests/test_train_mla.py)
    assert "indexer.backward" not in EN and "train.projecting" not in EN
    assert "indexer.backward" not in KO and "train.projecting" not in KO
    result = in_process("explain", "--preset", "dsa", "--backward")
    assert result.returncode == 0, result.stderr
    assert "the backward pass goes back through the latent attention alone" in " ".join(
        result.stdout.split()
    )


# ---- F19–F24: Korean ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("explain", "--preset", "sentence", "--x", "1 2; 0 1; 1 2"),
        ("explain", "--preset", "rope"),
        ("explain", "--preset", "sentence", "--layout", "torch"),
    ],
)
def test_f19_no_dual_particle_after_a_value_in_what_a_run_shows(args):
    result = in_process(*args, "--format", "txt", "--lang", "ko")
    assert result.returncode == 0, result.stderr
    for dual in ("을(를)", "은(는)", "와(과)", "이(가)"):
        assert dual not in result.stdout, dual


def test_f20_to_f23_korean_backward_sentences():
    from qkvcalc.catalog.ko import MESSAGES as KO

    assert "움직일 방향은 기울기의 반대쪽" not in KO["stage.grad_output.target.why"]
    assert "T 쪽으로" in KO["stage.grad_output.target.why"]
    assert "더 작은 음수" not in KO["stage.grad_weights.why"]
    assert "음수 쪽으로 더 커집니다" in KO["stage.grad_weights.why"]
    assert "배치" not in KO["note.grad_layout_torch"] + KO["hint.grad_weight_torch"]
    assert "내놓았어야 할 것이" not in KO["stage.grad_wk.why"]


def test_f24_korean_help_has_korean_headings():
    result = run_qkvcalc("train", "--help", env={"QKVCALC_LANG": "ko"})
    out = result.stdout
    assert "Show this message and exit." not in out
    for english in ("Usage:", "Options:", "Arguments:"):
        assert english not in out
    # the usage line, and the option panels' titles (rich help: a panel has no colon)
    assert "사용법:" in out and "╭─ 옵션 " in out


def test_f09_the_attend_stage_and_option_say_it_is_a_shortcut():
    from qkvcalc.catalog.en import MESSAGES as EN

    text = explain_text("--preset", "sentence", "--attend", "1 1 2")
    assert "It is a teaching shortcut: a real model is never told where to look" in text
    assert "a teaching shortcut" in EN["help.explain.attend"]


def test_f09_the_learn_preset_s_reference_says_attend_is_a_shortcut():
    """The preset made for train says, where it tells its story, that a real model is not told
    where to look (both languages: the Korean is the catalog's, read only when the file's
    English is the catalog's word for word)."""
    for lang, fragment in (("en", "attend is a teaching shortcut: a real model is never told"),
                           ("ko", "attend는 가르치기 위한 지름길입니다")):  # fmt: skip
        result = run_qkvcalc("explain", "--preset", "learn", "--format", "txt", "--lang", lang)
        assert fragment in " ".join(result.stdout.split()), lang
