"""`qkvcalc quiz … --backward`: the backward pass's stages graded cell by cell, its classic
mistakes named, a mistake carried through the backward ops' feeds, its hints.

Each wrong matrix is worked out here with plain loops from the true values of the stages it
reads (the mistake's own formula, written independently of qkvcalc's ops).
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.grade import CARRIED, RIGHT, WRONG, grade_sheet, select_keys
from qkvcalc.quiz.mistakes import MISTAKE_IDS, recognise
from qkvcalc.quiz.session import hint
from qkvcalc.run.engine import run
from tests.conftest import in_process

# Two heads of d_k = 2 over 3 tokens (n = m, so A·dO fits where Aᵀ·dO goes), causal, with W_O
# and a bias on Q: every backward stage the quiz asks by default, and dX of three paths.
PROBLEM = {
    "tokens": ["a", "b", "c"],
    "x": [[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 1, 1]],
    "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
    "wk": [[0, 1, 0, 1], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0]],
    "wv": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
    "wo": [[1, 0], [0, 1], [1, 1], [0, -1]],
    "bq": [0.5, 0, 0, -0.5],
    "heads": 2,
    "mask": "causal",
    "target": [[1, 0], [0, 1], [1, 1]],
}


@pytest.fixture(scope="module")
def trace():
    return run(replace(Problem.from_mapping(PROBLEM), backward=True))


def softmax_back_stage(trace, head):
    (stage,) = [s for s in trace.stages if s.head == head and s.op == "softmax_back"]
    return stage


def matmul(a, b):
    rows, inner, cols = a.shape[0], a.shape[1], b.shape[1]
    assert b.shape[0] == inner
    return np.array(
        [[sum(a[i, t] * b[t, j] for t in range(inner)) for j in range(cols)] for i in range(rows)]
    )


def wrong_matrices(trace):
    """(stage key, the wrong matrix, the mistake's id, words of its English sentence)."""
    h = 2
    a = trace.stage("weights", h).value
    d_o = trace.stage("grad_output", h).value
    d_a = trace.stage("grad_weights", h).value
    # the scaled scores' gradient (before × 1/√2 takes it to d(Q·Kᵀ))
    d_scaled = trace.stage("grad_scaled", h).value
    q, k = trace.stage("q", h).value, trace.stage("k", h).value
    x, wq, wk, wv = (np.array(PROBLEM[n], dtype=float) for n in ("x", "wq", "wk", "wv"))
    dq = np.hstack([trace.stage("grad_q", g).value for g in (1, 2)])
    dk = np.hstack([trace.stage("grad_k", g).value for g in (1, 2)])
    dv = np.hstack([trace.stage("grad_v", g).value for g in (1, 2)])
    no_v = matmul(dq, wq.T) + matmul(dk, wk.T)  # dX with the path through V forgotten
    no_q = matmul(dk, wk.T) + matmul(dv, wv.T)
    assert x.shape == no_v.shape
    a_times_da = np.array([[a[i, j] * d_a[i, j] for j in range(3)] for i in range(3)])
    return [
        ("2/grad_v", matmul(a, d_o), "grad_v_not_transposed", "dV = Aᵀ·dO"),
        (
            f"2/{softmax_back_stage(trace, h).id}",
            a_times_da,
            "softmax_back_no_row_term",
            "the row term comes off first",
        ),
        ("2/grad_q", matmul(d_scaled, k), "grad_scale_missing", "times 1/√2"),
        ("2/grad_k", matmul(d_scaled.T, q), "grad_scale_missing", "dK was computed"),
        ("grad_x", no_v, "grad_path_forgotten", "dV·W_Vᵀ was left out"),
        ("grad_x", no_q, "grad_path_forgotten", "dQ·W_Qᵀ was left out"),
    ]


BACKWARD_IDS = (
    "grad_v_not_transposed",
    "softmax_back_no_row_term",
    "grad_scale_missing",
    "grad_path_forgotten",
)


def test_every_backward_mistake_has_a_case(trace):
    assert set(BACKWARD_IDS) <= set(MISTAKE_IDS)
    assert {case[2] for case in wrong_matrices(trace)} == set(BACKWARD_IDS)


@pytest.mark.parametrize("case", range(6))
def test_a_backward_mistake_is_named(trace, case):
    key, wrong, mistake_id, words = wrong_matrices(trace)[case]
    head, _, sid = key.rpartition("/")
    truth = trace.stage(sid, int(head) if head else None).value
    assert not np.allclose(wrong, truth, atol=1e-3)  # the mistake shows in these numbers
    found = recognise(trace, key, np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake_id
    assert words in found.text("en")
    korean = found.text("ko")
    assert korean != found.text("en") and "{" not in korean


def test_no_mistake_is_named_on_a_right_gradient(trace):
    grads = [s for s in trace.stages if s.id.startswith("grad_") or s.op == "rowdot"]
    assert len(grads) > 20
    for stage in grads:
        key = stage.id if stage.head is None else f"{stage.head}/{stage.id}"
        assert recognise(trace, key, np.round(stage.value, 4), {}, 4) is None, key


def test_a_mistake_on_top_of_a_wrong_da_is_still_named(trace):
    """A ⊙ dA from the student's own (wrong) dA: the mistake is found from their inputs."""
    sid = softmax_back_stage(trace, 1).id
    a = trace.stage("weights", 1).value
    mine = trace.stage("grad_weights", 1).value.copy()
    mine[2, 0] += 1.0
    own = {"1/grad_weights": mine}
    found = recognise(trace, f"1/{sid}", np.round(a * mine, 4), own, 4)
    assert found is not None and found.id == "softmax_back_no_row_term"


def test_the_default_stages_with_backward(trace):
    keys = select_keys(trace, None)
    ids = list(dict.fromkeys(k.rpartition("/")[2] for k in keys))
    asked = ["grad_v", "grad_weights", "grad_masked", "grad_scores", "grad_q", "grad_k", "grad_wq"]
    assert ids == asked
    assert {k.partition("/")[0] for k in keys if "/" in k} == {"1", "2"}
    forward = run(Problem.from_mapping(PROBLEM))
    assert not any(k.rpartition("/")[2].startswith("grad_") for k in select_keys(forward, None))


def test_a_wrong_da_is_carried_into_the_softmax_backward_and_dq(trace):
    """One wrong cell of dA: the softmax backward and dQ computed right from it are carried,
    each traced back to that cell, through the backward ops' feeds."""
    sid = softmax_back_stage(trace, 1).id
    wrong = trace.stage("grad_weights", 1).value.copy()
    wrong[2, 0] += 1.0
    rowdot = trace.stage("softmax_rowdot", 1).value
    a = trace.stage("weights", 1).value
    r = rowdot.copy()
    r[2, 0] = sum(a[2, j] * wrong[2, j] for j in range(3))
    ds = np.array([[a[i, j] * (wrong[i, j] - r[i, 0]) for j in range(3)] for i in range(3)])
    sheet = {"1/grad_weights": wrong, f"1/{sid}": ds}
    report = grade_sheet(trace, sheet, list(sheet), 4)
    grades = {g.key: g for g in report.stages}
    assert grades["1/grad_weights"].count(WRONG) == 1
    cells = {(c.ref.i, c.ref.j): c for c in grades[f"1/{sid}"].cells}
    # row 3 read the wrong cell (through r as well), rows 1 and 2 did not
    assert {ij for ij, c in cells.items() if c.verdict == CARRIED} == {(2, 0), (2, 1), (2, 2)}
    assert all(cells[(i, j)].verdict == RIGHT for i in (0, 1) for j in range(3))
    (origin,) = cells[(2, 1)].origins
    assert (origin.key, origin.i, origin.j) == ("1/grad_weights", 2, 0)
    assert grades[f"1/{sid}"].mistake is None


def test_each_default_stage_has_its_own_hint_in_both_languages(trace):
    for key in select_keys(trace, None):
        head, _, sid = key.rpartition("/")
        stage = trace.stage(sid, int(head) if head else None)
        assert stage.hint is not None, key
        msg = hint(trace, stage, 1, 0)
        for lang in ("en", "ko"):
            text = translate(msg.key, lang, **msg.params)
            assert "{" not in text and stage.symbol in text, (key, text)
    said = hint(trace, trace.stage("grad_v", 1), 1, 0)
    assert "column 2 of A" in said.text("en") and "column 1 of dO" in said.text("en")


def test_a_real_quiz_process_grades_the_backward(tmp_path):
    """`qkvcalc quiz --preset sentence --attend … --backward --answers`: the softmax backward
    without its row term is named, in both languages; the right answers pass."""
    doc = presets.load("sentence") | {"attend": [1, 1, 2]}
    t = run(replace(Problem.from_mapping(doc), backward=True))
    sid = softmax_back_stage(t, None).id
    a, d_a = t.stage("weights").value, t.stage("grad_weights").value
    (tmp_path / "wrong.json").write_text(json.dumps({sid: np.round(a * d_a, 4).tolist()}))
    right = {sid: np.round(t.stage(sid).value, 4).tolist()}
    (tmp_path / "right.json").write_text(json.dumps(right))
    base = ["quiz", "--preset", "sentence", "--attend", "1 1 2", "--backward", "--format", "json"]
    for lang, words in (("en", "the row term comes off first"), ("ko", "행 항을 먼저 뺍니다")):
        proc = in_process(*base, "--answers", str(tmp_path / "wrong.json"), "--lang", lang)
        assert proc.returncode == 1, proc.stderr
        stages = {s["key"]: s for s in json.loads(proc.stdout)["stages"]}
        assert stages[sid]["mistake"] == "softmax_back_no_row_term"
        assert words in stages[sid]["mistake_text"]
    proc = in_process(*base, "--stages", sid, "--answers", str(tmp_path / "right.json"))
    assert proc.returncode == 0, proc.stdout
    sheet = in_process(
        "quiz", "--preset", "sentence", "--attend", "1 1 2", "--backward", "--template"
    )
    assert sheet.returncode == 0, sheet.stderr
    assert set(json.loads(sheet.stdout)) >= {"grad_weights", sid, "grad_q", "grad_k", "grad_wq"}


def test_without_a_loss_the_backward_quiz_is_one_message_and_random_takes_one():
    proc = in_process("quiz", "--preset", "sentence", "--backward", "--template")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "--backward needs a place for the gradient to start" in proc.stderr
    args = ["quiz", "--random", "--seed", "3", "--size", "3,2", "--attend", "1 2 3"]
    sheet = in_process(*args, "--backward", "--template")
    assert sheet.returncode == 0, sheet.stderr
    keys = set(json.loads(sheet.stdout))
    assert {"grad_weights", "grad_scores", "grad_q", "grad_k", "grad_wq"} <= keys
    assert "grad_v" not in keys  # `attend` reads the weights alone: V gets no gradient
