"""The teaching review of 2026-12-06, again: what its first fixes (tests/test_teaching_review.py)
left behind. Each test failed on the code before this file: the tiles' log-sum-exp still called
L in the docs (F29), a count of 1 with a plural noun and a loss of −0 (F25), 배치 for a weight's
layout (F22), the chain rule "adding" one path (F07), the scaling's backward calling a given
scale "the default" (F01)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.test_teaching_review import problem

ROOT = Path(__file__).resolve().parent.parent

# ---- F29: the log-sum-exp of the tiles' backward is LSE wherever it is written ---------------


def test_f29_the_docs_and_the_code_call_the_log_sum_exp_lse_not_l():
    """L is the loss; the tiles' backward keeps m + log ℓ per row under its own name, LSE, as
    its stage does (the loss L = −Σ log A is on the same pages)."""
    as_l = re.compile(r"(?<![\w\[])L = m \+ log|− L\)|inside L\b|forward's L\b|\bL\[1\] = ")
    files = [*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("qkvcalc/**/*.py")]
    found = [
        f"{f.relative_to(ROOT)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if as_l.search(line)
    ]
    assert not found, found


# ---- F25: a count of 1 reads as one; a loss of 0 is not −0 -----------------------------------


def _attend_one(preset: str, key: int) -> Problem:
    doc = presets.load(preset)
    for k in ("attend", "target", "grad_output", "decode"):
        doc.pop(k, None)
    n = len(doc["x"])
    doc["attend"] = [key] + [None] * (n - 1)  # one query with a target: its first key
    return replace(Problem.from_mapping(doc), backward=True)


@pytest.mark.parametrize("preset", ["sentence", "alibi"])  # one head; two (head by head)
def test_f25_the_loss_over_one_target_key_says_one_and_its_zero_is_0(preset):
    """Query 1 of a causal mask sees key 1 alone: A[1, 1] = 1, so L = −log 1 = 0 exactly,
    over the one target key the problem gives."""
    t = run(_attend_one(preset, 1))
    notes = [n for s in t.stages for n in s.notes if n.key.startswith("note.loss_attend")]
    notes = [n for n in notes if n.key != "note.loss_attend_keys"]
    assert notes
    weights = [s.value for s in t.stages if s.id == "weights"]
    for note, a in zip(notes, weights, strict=True):
        assert a[0, 0] == 1.0  # the loss is exactly 0 ...
        for lang in ("en", "ko"):
            text = translate(note.key, lang, **note.params)
            assert "−0" not in text and "-0" not in text, text  # ... and said as 0
            assert "= 0" in text, text
        text = translate(note.key, "en", **note.params)
        assert "over one target key" in text and "1 target keys" not in text, text
        assert "목표 Key 하나" in translate(note.key, "ko", **note.params)


def test_f25_several_target_keys_keep_their_count():
    t = run(problem("sentence", attend=[1, 1, 2]))
    said = ("note.loss_attend", "note.loss_attend_one")
    (note,) = [n for n in t.stage("grad_weights").notes if n.key in said]
    assert "over 3 target keys" in translate(note.key, "en", **note.params)


# ---- F22: a layout is not a batch (배치) in Korean ---------------------------------------------


def test_f22_no_korean_sentence_calls_a_layout_a_batch():
    """배치 is the batch (preset padding, array.too_many_dims); a weight's layout, as the
    forward note (note.layout_torch) says it, is 레이아웃 or 방식 (PyTorch's out × in)."""
    from qkvcalc.catalog.en import MESSAGES as EN
    from qkvcalc.catalog.ko import MESSAGES as KO

    layouts = [key for key in EN if "layout" in EN[key].lower()]
    assert len(layouts) > 10
    assert [key for key in layouts if "배치" in KO[key]] == []
    assert "배치" in KO["array.too_many_dims"]  # the batch keeps its word


# ---- F07: the chain rule adds paths only where there are several ------------------------------


@pytest.mark.parametrize(
    ("preset", "loss"),
    [
        ("sentence", {"attend": [1, 1, 2]}),
        ("sentence", {"target": [[0, 0]] * 3}),
        ("cross", {"attend": [1, 2, 3]}),
        ("cross", {"grad_output": "ones"}),
        ("gqa", {"attend": [1, 1, 2]}),
    ],
)
def test_f07_the_input_s_why_adds_paths_only_when_its_formula_has_several(preset, loss):
    """The why under dX and dsource names the terms its formula has: one path is said as one
    (cross-attention's X, the source under attend), several as the chain rule's sum."""
    if loss.get("grad_output") == "ones":
        out = run(problem(preset, attend=[1] * len(presets.load(preset)["x"]))).stage("output")
        loss = {"grad_output": np.ones(out.value.shape).tolist()}
    t = run(problem(preset, **loss))
    inputs = [s for s in t.stages if s.id in ("grad_x", "grad_source")]
    assert inputs
    for stage in inputs:
        terms = stage.spec.formula.split("=", 1)[1].strip().split(" + ")
        for lang in ("en", "ko"):
            why = translate(stage.why.key, lang)
            said = set(re.findall(r"d[A-Z]·W_[A-Z]ᵀ", why))
            if len(terms) == 1:
                assert stage.why.key == f"stage.{stage.id}.one.why"
                assert said == set(terms), (stage.id, lang, why)
            else:
                assert stage.why.key == f"stage.{stage.id}.why"
                assert set(terms) <= said | {"dP·W_Pᵀ"} or "dP·W_Pᵀ" in why, why
        english = translate(stage.why.key, "en")
        assert ("nothing to add" in english or "nothing for the chain rule to add" in english) == (
            len(terms) == 1
        )
        assert ("adds" in english) == (len(terms) > 1)
        if stage.id == "grad_source" and len(terms) > 1:
            assert terms == ["dK·W_Kᵀ", "dV·W_Vᵀ"]  # "the two paths" it says


# ---- F01: the scaling's backward says nothing of this run that its numbers deny ---------------


@pytest.mark.parametrize(
    ("preset", "changes"),
    [
        ("sentence", {}),  # d_k = 2: the unscaled softmax is not saturated
        ("sentence", {"scale": 0.5}),  # a scale given: not the default
        ("sentence", {"scale": 2}),  # a scale above 1 grows what flows back
        ("dk64", {}),
    ],
)
def test_f01_the_scaling_s_backward_claims_only_what_this_run_shows(preset, changes):
    """Under the scaling's backward the why used to say 'the default 1/√d_k, which kept the
    softmax from saturating, also shrinks what flows back' whatever the scale and the softmax
    were. Each claim is checked against the run: the default only without a scale given, kept
    from saturating only where the notes find the unscaled softmax saturated, shrinks only
    below 1."""
    n = len(presets.load(preset).get("x") or presets.load(preset)["q"])
    p = problem(preset, target=[[0, 0]] * n, **changes)
    t = run(p)
    back = t.stage("grad_scores")
    factor = float(np.max(np.abs(back.value)) / np.max(np.abs(t.stage("grad_scaled").value)))
    saturated = any(k.startswith("note.grad_saturated") for k in keys(t.stage("grad_scaled")))
    for lang in ("en", "ko"):
        why = translate(back.why.key, lang)
        if "scale" in changes:  # the default was not used: said as an example, if at all
            assert "the default 1/√d_k, which" not in why and "막은 기본 스케일" not in why
        if not saturated:
            assert "which kept the softmax from saturating" not in why
            assert "포화를 막은" not in why
    english = translate(back.why.key, "en")
    if factor > 1:  # the scale grew what flows back: the why must not say it shrinks it
        assert "a scale below 1" in english or "shrinks" not in english


def keys(stage) -> list[str]:
    return [n.key for n in stage.notes if hasattr(n, "key")]


# ---- F03, F27: which logits the softmax's backward pushes, and which it leaves -----------------


def test_f03_f27_keys_are_pushed_by_the_side_of_r_they_are_on_and_by_their_weight():
    """dS = A ⊙ (dA − r). Descent raises a logit where dS < 0: a key with dA < r. It lowers one
    with dA > r, and leaves a key of weight 0 (masked) or with dA = r alone; the old why said
    'the others down', which the first row of a causal attend run denies (all of it 0)."""
    t = run(problem("sentence", attend=[1, 1, 2]))
    a, da = t.stage("weights").value, t.stage("grad_weights").value
    r = t.stage("softmax_rowdot").value
    ids = [s.id for s in t.stages]
    ds = t.stages[ids.index("softmax_rowdot") + 1].value
    np.testing.assert_allclose(ds, a * (da - r), atol=1e-12)
    left = (a == 0) | np.isclose(da, r, atol=1e-12)
    assert left.any() and np.allclose(ds[left], 0, atol=1e-12)
    assert np.all(ds[(da < r) & ~left] < 0) and np.all(ds[(da > r) & ~left] > 0)
    why = t.stages[ids.index("softmax_rowdot") + 1].why
    english = translate(why.key, "en")
    assert "(dA < r) is pushed up" in english and "(dA > r) down" in english
    assert "the others down" not in english  # the keys left alone are not pushed down
    assert "(dA > r)는 아래로" in translate(why.key, "ko")


# ---- F02: a saturated softmax's note names W_Q and W_K only where the problem has them --------


def _saturating_layer() -> dict:
    """X (4 one-hot rows) through random W_Q, W_K 64 columns wide and twice a standard normal:
    unscaled, its softmax is saturated (the note's own test: A·(1 − A) ten times smaller)."""
    rng = np.random.default_rng(0)
    wq, wk = (2 * rng.standard_normal((4, 64)), 2 * rng.standard_normal((4, 64)))
    wv = rng.standard_normal((4, 2))
    doc = {"x": np.eye(4).tolist(), "target": [[0, 0]] * 4}
    return doc | {name: w.round(2).tolist() for name, w in (("wq", wq), ("wk", wk), ("wv", wv))}


@pytest.mark.parametrize("given", [True, False])
def test_f02_the_saturated_note_names_the_weights_that_exist(given):
    p = problem("dk64", target=[[0, 0]] * 4) if given else None
    if p is None:
        p = replace(Problem.from_mapping(_saturating_layer()), backward=True)
    t = run(p)
    (note,) = [n for n in t.stage("grad_scaled").notes if n.key.startswith("note.grad_saturated")]
    assert (p.wq is None) == given
    assert note.key == ("note.grad_saturated_given" if given else "note.grad_saturated")
    english = translate(note.key, "en")
    assert ("given here" in english) == given
    assert "W_Q" in english  # a layer's weights are named either way, as what a layer has
    assert ("여기서는 직접 주어졌고" in translate(note.key, "ko")) == given


# ---- F02, F06: attend's note names what gets no gradient, of what the problem has -------------


@pytest.mark.parametrize(
    ("preset", "attend"),
    [("dk64", [1, 1, 1, 1]), ("sentence", [1, 1, 2]), ("multihead", [1, 1, 1])],
)
def test_f02_f06_attend_names_only_the_value_side_the_problem_has(preset, attend):
    """V always; W_V, b_V, W_O, b_O where given. Each named gets no gradient stage, and the
    problem has each (dk64 gives V: no W_V)."""
    p = problem(preset, attend=attend)
    t = run(p)
    said = [n for s in t.stages if s.id == "grad_weights" for n in s.notes]
    note = next(n for n in said if n.key == "note.grad_attend_no_v")  # each head's the same
    assert len({n.params["names"] for n in said if n.key == note.key}) == 1
    names = note.params["names"].split(", ")
    has = {"W_V": p.wv, "b_V": p.bv, "W_O": p.wo, "b_O": p.bo}
    assert names == ["V", *(name for name, m in has.items() if m is not None)]
    grads = {s.id for s in t.stages}
    for name in names:
        assert f"grad_{name.replace('_', '').lower()}" not in grads  # grad_v, grad_wv, grad_wo …
    if preset == "dk64":
        assert names == ["V"]
    for lang in ("en", "ko"):
        assert f"({note.params['names']})" in translate(note.key, lang, **note.params)


# ---- F05: a key/value head's columns are what made it, not what it made -----------------------


def test_f05_each_key_value_head_sits_in_the_columns_that_made_it():
    """gqa: 4 query heads over 2 K/V heads, d_k = 1: dW_K is 2 columns, one per K/V head, and
    each column is the sum of its two query heads' Xᵀ·dK (the columns of W_K that made it)."""
    p = problem("gqa", target=[[0, 0]] * 3)
    t = run(p)
    stage = t.stage("grad_wk")
    (note,) = [n for n in stage.notes if n.key == "note.grad_kv_heads_side_by_side"]
    assert note.params["heads"] == p.kv_heads == stage.value.shape[1] // p.d_k
    x = t.stage("x").value
    per = p.heads // p.kv_heads
    for g in range(p.kv_heads):
        dk = sum(t.stage("grad_k", g * per + i + 1).value for i in range(per))
        np.testing.assert_allclose(stage.value[:, g * p.d_k : (g + 1) * p.d_k], x.T @ dk)
    assert "that made that head" in translate(note.key, "en", **note.params)


def test_f07_the_quiz_hint_adds_paths_only_when_there_are_several():
    """The quiz's '?' under dX: 'adds cell [i,j] of every path' where the formula adds several,
    'the one path there is' where it has one (cross-attention's X)."""
    from qkvcalc.quiz.session import hint

    for preset, attend in (("cross", [1, 2, 3]), ("sentence", [1, 1, 2])):
        t = run(problem(preset, attend=attend))
        stage = t.stage("grad_x")
        terms = stage.spec.formula.split("=", 1)[1].split(" + ")
        text = translate(hint(t, stage, 0, 0).key, "en", **hint(t, stage, 0, 0).params)
        assert ("adds cell [1,1] of every path" in text) == (len(terms) > 1), text
        assert ("the one path there is" in text) == (len(terms) == 1), text


# ---- F23: dW_V's Korean, as dW_K's was rewritten -----------------------------------------------


def test_f23_dw_v_is_said_as_dw_k_is_in_korean():
    """The review found '각 Key가 내놓았어야 할 것이 … 바뀝니다' a calque; dW_V's '각 Value가
    실어 날랐어야 할 것에서 …' was the same construction. Both say how each row should have
    changed, gathered into a change of the one matrix."""
    from qkvcalc.catalog.ko import MESSAGES as KO

    for name, role in (("wk", "Key"), ("wv", "Value")):
        text = KO[f"stage.grad_{name}.why"]
        assert f"각 {role}가 어떻게 달라졌어야 하는지가 모여" in text, text
        assert "했어야 할 것" not in text and "날랐어야 할 것" not in text


def test_f01_a_large_d_k_is_not_said_to_saturate_where_this_run_shows_it_does_not():
    """d_k = 64, W_Q and W_K a standard normal: the unscaled softmax is not saturated (the
    note's own test) and its gradient is larger. The note may say a large d_k tends to
    saturate, not that it does: this run, at d_k = 64, is one where it does not."""
    doc = _saturating_layer()
    doc["wq"] = (np.array(doc["wq"]) / 2).tolist()
    doc["wk"] = (np.array(doc["wk"]) / 2).tolist()
    p = replace(Problem.from_mapping(doc), backward=True)
    assert p.d_k == 64
    t = run(p)
    found = keys(t.stage("grad_scaled"))
    assert "note.grad_not_saturated" in found
    a = t.stage("weights").value
    plain = np.exp(t.stage("scores").value - t.stage("scores").value.max(axis=1, keepdims=True))
    plain /= plain.sum(axis=1, keepdims=True)
    assert np.max(plain * (1 - plain)) >= np.max(a * (1 - a)) / 10  # not saturated, unscaled
    for lang in ("en", "ko"):
        text = translate("note.grad_not_saturated", lang)
        assert "unscaled softmax saturates" not in text and "소프트맥스가 포화됩니다" not in text


def test_f01_a_scale_above_1_is_said_to_saturate_the_scaled_softmax_not_to_shrink_the_way_back():
    """--scale 2 on the sentence, loss through the output: the scaled gradient of Q·Kᵀ is the
    smaller, yet the way back multiplies it by 2. The reason is the scaled softmax's saturation
    (its largest A·(1 − A) the smaller), which the note now says, by autograd's numbers."""
    p = problem("sentence", target=[[0, 0]] * 3, scale=2)
    t = run(p)
    q, k, v = (torch.tensor(np.array(t.stage(n).value, dtype=float)) for n in ("q", "k", "v"))
    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    norms, peaks = [], []
    for scale in (2.0, 1.0):
        s = (q @ k.T).requires_grad_()
        a = torch.softmax((s * scale).masked_fill(~causal, float("-inf")), dim=-1)
        (0.5 * ((a @ v) ** 2).sum()).backward()
        norms.append(float(s.grad.norm()))
        peaks.append(float((a * (1 - a)).max().detach()))
    assert norms[0] < norms[1] and peaks[0] < peaks[1]  # the scaled softmax: more saturated
    found = [n.key for s in t.stages for n in s.notes if hasattr(n, "key")]
    assert "note.grad_scale_sharpens" in found and "note.grad_not_saturated" not in found
    text = translate("note.grad_scale_sharpens", "en")
    assert "scale above 1" in text and "more saturated" in text


@pytest.mark.parametrize("scale", [None, 0.5, 2])
def test_f01_the_gradient_read_out_names_sqrt_d_k_only_when_the_scale_is_it(scale):
    """'√d_k, shown by its gradients' was said of --scale 0.5 and 2 too: the scale the note
    reads out is the problem's, and it is √d_k only when none is given."""
    changes = {} if scale is None else {"scale": scale}
    p = problem("sentence", target=[[0, 0]] * 3, **changes)
    notes = [n for s in run(p).stages for n in s.notes if hasattr(n, "key")]
    (note,) = [n for n in notes if n.key.startswith("note.grad_through_softmax")]
    for lang in ("en", "ko"):
        text = translate(note.key, lang, **note.params)
        assert ("√d_k" in text) == (scale is None), text
        assert (f"× {scale:g}" in text) if scale else ("√2" in text)
