"""`qkvcalc quiz`: the grader on answer sheets with known mistakes, its exit codes and JSON, and
the interactive quiz driven through a real pseudo-terminal.

The right answers come from tests/naive.py (loops over Python floats, sharing nothing with the
engine) or are worked out by hand in the comments; the grader is never its own oracle.
"""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pexpect
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.answers import parse_answer
from qkvcalc.quiz.grade import (
    CARRIED,
    DEFAULT_STAGES,
    RIGHT,
    WRONG,
    agrees,
    grade_sheet,
    select_keys,
    stage_keys,
)
from qkvcalc.quiz.problems import parse_size, random_problem
from qkvcalc.run.engine import run
from tests.conftest import PINNED_ENV, ROOT, in_process, interrupt_at_prompt, run_qkvcalc
from tests.conftest import spawn_qkvcalc as spawn
from tests.naive import naive
from tests.strategies import problems

# ---- the sentence preset, worked out by hand ---------------------------------------------------
# X = [[1,2],[0,1],[1,1]], W_Q = I, W_K = [[1,1],[0,1]], W_V = [[1,0],[1,1]], causal mask.
# A row [a, b] times W_K is [a, a+b]; times W_V it is [a+b, b].
SENTENCE = {
    "tokens": ["I", "love", "cats"],
    "x": [[1, 2], [0, 1], [1, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [[1, 0], [1, 1]],
    "mask": "causal",
}
Q = [[1, 2], [0, 1], [1, 1]]
K = [[1, 3], [0, 1], [1, 2]]
V = [[3, 2], [1, 1], [2, 1]]
SCORES = [[7, 2, 5], [3, 1, 2], [4, 1, 3]]  # q_i · k_j
# The same student with K[2,1] = 1 instead of 0: k₂ = [1, 1], so column 2 of Q·Kᵀ becomes
# q₁·k₂ = 1 + 2 = 3 (not 2), q₂·k₂ = 0 + 1 = 1 (unchanged), q₃·k₂ = 1 + 1 = 2 (not 1).
K_SLIP = [[1, 3], [1, 1], [1, 2]]
SCORES_SLIP = [[7, 3, 5], [3, 1, 2], [4, 2, 3]]


def downstream(scores, v=V, causal=True):
    """scaled, weights, output from a student's scores, by the textbook formula (no engine)."""
    n, m = len(scores), len(scores[0])
    scaled = [[s / math.sqrt(2) for s in row] for row in scores]
    weights = []
    for i, row in enumerate(scaled):
        live = [j for j in range(m) if not causal or j <= i]
        top = max(row[j] for j in live)
        e = [math.exp(row[j] - top) if j in live else 0.0 for j in range(m)]
        weights.append([t / sum(e) for t in e])
    output = [
        [sum(weights[i][j] * v[j][c] for j in range(m)) for c in range(len(v[0]))] for i in range(n)
    ]
    return scaled, weights, output


def right_sheet():
    scaled, weights, output = downstream(SCORES)
    return {
        "q": Q,
        "k": K,
        "v": V,
        "scores": SCORES,
        "scaled": scaled,
        "weights": weights,
        "output": output,
    }


def test_the_hand_worked_sheet_agrees_with_the_naive_reference():
    # the two oracles of this file agree with each other before either grades anything
    ref = naive({**SENTENCE, "x": [[float(v) for v in r] for r in SENTENCE["x"]]})
    for key, value in right_sheet().items():
        assert np.allclose(ref[(key, None)], value), key


@pytest.fixture
def grade(cli, tmp_path):
    """Grade a sheet of the sentence problem: returns (exit code, JSON report, stderr)."""
    problem = tmp_path / "sentence.json"
    problem.write_text(json.dumps(SENTENCE))

    def run_sheet(sheet, *extra):
        path = tmp_path / "answers.json"
        path.write_text(json.dumps(sheet) if not isinstance(sheet, str) else sheet)
        result = cli("quiz", str(problem), "--answers", str(path), "--format", "json", *extra)
        doc = json.loads(result.stdout) if result.exit_code in (0, 1) else None
        return result.exit_code, doc, result.stderr

    return run_sheet


def not_right(doc):
    """{(key, row, col): verdict} of every cell that is not right."""
    return {
        (s["key"], c["row"], c["col"]): c["verdict"]
        for s in doc["stages"]
        for c in s["cells"]
        if c["verdict"] != RIGHT
    }


def test_a_right_sheet_is_all_right_and_exits_0(grade):
    code, doc, _ = grade(right_sheet())
    assert code == 0
    assert doc["all_right"] is True
    assert [s["key"] for s in doc["stages"]] == list(DEFAULT_STAGES)
    assert all(s["status"] == RIGHT for s in doc["stages"])
    assert doc["score"]["right"] == doc["score"]["total"] == 6 * 3 + 9 * 3 + 6


def test_answers_in_the_number_grammar_and_rounded(grade):
    sheet = right_sheet()
    sheet["scaled"] = [[f"{s}/sqrt(2)" for s in row] for row in SCORES]
    sheet["weights"] = [[round(w, 2) for w in row] for row in sheet["weights"]]
    sheet["output"] = [[f"{w:.3f}" for w in row] for row in sheet["output"]]
    code, doc, _ = grade(sheet)
    assert (code, not_right(doc)) == (0, {})


@pytest.mark.parametrize("stage", DEFAULT_STAGES)
def test_one_mistake_per_stage_is_that_cell_alone(grade, stage):
    sheet = right_sheet()
    sheet[stage] = [list(row) for row in sheet[stage]]
    sheet[stage][1][0] += 1  # row 2, column 1: off by one
    code, doc, _ = grade(sheet)
    assert code == 1
    assert doc["all_right"] is False
    assert not_right(doc) == {(stage, 2, 1): WRONG}
    statuses = {s["key"]: s["status"] for s in doc["stages"]}
    assert statuses == {key: (WRONG if key == stage else RIGHT) for key in DEFAULT_STAGES}
    cell = next(c for s in doc["stages"] for c in s["cells"] if c["verdict"] == WRONG)
    assert cell["answer"] == pytest.approx(cell["expected"] + 1)


def test_a_wrong_k_is_carried_into_the_scores(grade):
    sheet = right_sheet()
    sheet["k"], sheet["scores"] = K_SLIP, SCORES_SLIP  # scaled onwards: from the true scores
    code, doc, _ = grade(sheet)
    assert code == 1
    assert not_right(doc) == {
        ("k", 2, 1): WRONG,
        ("scores", 1, 2): CARRIED,
        ("scores", 3, 2): CARRIED,
    }
    carried = [c for s in doc["stages"] for c in s["cells"] if c["verdict"] == CARRIED]
    for cell in carried:
        assert [(o["key"], o["row"], o["col"], o["cell"]) for o in cell["carried_from"]] == [
            ("k", 2, 1, "K[2,1]")
        ]
    assert [c["answer"] for c in carried] == [3, 2]
    assert [c["expected"] for c in carried] == [2, 1]


def test_a_step_done_right_on_a_carried_mistake_counts_as_right(grade, cli, tmp_path):
    """Issue 25: Q·Kᵀ worked right from the student's own wrong K is right for that step. It
    counts in the stage's score and the total, and stays marked → (its number is not the true
    one), in the table, the summary and the JSON, in English and in Korean."""
    sheet = right_sheet()
    sheet["k"], sheet["scores"] = K_SLIP, SCORES_SLIP
    code, doc, _ = grade(sheet)
    assert code == 1  # K itself is still wrong
    stages = {s["key"]: s for s in doc["stages"]}
    assert stages["scores"]["counted"] == 9 and stages["scores"]["right"] == 7
    assert stages["scores"]["carried"] == 2 and stages["scores"]["status"] == CARRIED
    assert stages["k"]["counted"] == 5 and stages["k"]["status"] == WRONG
    assert doc["score"]["counted"] == doc["score"]["total"] - 1  # only K[2,1] is not counted
    assert doc["score"]["carried"] == 2
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(sheet))
    out = cli("quiz", "--preset", "sentence", "--answers", str(path)).stdout
    scores_row = next(line for line in out.splitlines() if line.lstrip().startswith("scores "))
    assert "9/9" in scores_row and "✓→✓ ✓✓✓ ✓→✓" in scores_row
    total = doc["score"]["total"]
    assert f"Cells right: {total - 1} of {total}, 2 of them worked right from" in out
    assert "→ Q·Kᵀ[1,2]: right for this step, worked from your own K[2,1]" in out
    ko = cli("quiz", "--preset", "sentence", "--answers", str(path), "--lang", "ko").stdout
    assert f"{total}칸 중 {total - 1}칸 정답" in ko and "그중 2칸은" in ko
    assert "→ Q·Kᵀ[1,2]: 이 단계의 계산은 맞음" in ko


def test_a_wrong_k_carried_all_the_way_points_back_to_k(grade):
    sheet = right_sheet()
    scaled, weights, output = downstream(SCORES_SLIP)
    sheet.update(k=K_SLIP, scores=SCORES_SLIP, scaled=scaled, weights=weights, output=output)
    code, doc, _ = grade(sheet)
    assert code == 1
    found = not_right(doc)
    # causal: rows 1 and 2 of the weights never see the changed score q₃·k₂; row 3 sees all
    assert found == {
        ("k", 2, 1): WRONG,
        ("scores", 1, 2): CARRIED,
        ("scores", 3, 2): CARRIED,
        ("scaled", 1, 2): CARRIED,
        ("scaled", 3, 2): CARRIED,
        ("weights", 3, 1): CARRIED,
        ("weights", 3, 2): CARRIED,
        ("weights", 3, 3): CARRIED,
        ("output", 3, 1): CARRIED,
        ("output", 3, 2): CARRIED,
    }
    for stage in doc["stages"]:
        for cell in stage["cells"]:
            if cell["verdict"] == CARRIED:
                assert [o["cell"] for o in cell["carried_from"]] == ["K[2,1]"]


def test_a_right_score_after_a_wrong_k_is_right(grade):
    sheet = right_sheet()
    sheet["k"] = K_SLIP  # the student slipped in K but worked the scores out afresh
    code, doc, _ = grade(sheet)
    assert code == 1
    assert not_right(doc) == {("k", 2, 1): WRONG}


def test_a_new_mistake_on_top_of_a_carried_one_is_wrong(grade):
    sheet = right_sheet()
    scores = [list(r) for r in SCORES_SLIP]
    scores[0][1] = 10  # neither the truth (2) nor what their K gives (3)
    sheet.update(k=K_SLIP, scores=scores)
    _, doc, _ = grade(sheet)
    assert not_right(doc) == {
        ("k", 2, 1): WRONG,
        ("scores", 1, 2): WRONG,
        ("scores", 3, 2): CARRIED,
    }


def test_a_missing_stage_is_reported_not_a_crash(grade):
    sheet = right_sheet()
    del sheet["v"]
    code, doc, _ = grade(sheet)
    assert code == 1
    v = next(s for s in doc["stages"] if s["key"] == "v")
    assert v["status"] == "missing"
    assert v["missing"] == v["total"] == 6
    assert all(c["answer"] is None for c in v["cells"])
    # the output is still graded: V came from the problem, not from the student
    out = next(s for s in doc["stages"] if s["key"] == "output")
    assert out["status"] == RIGHT


def test_null_cells_are_missing(grade):
    sheet = right_sheet()
    sheet["q"] = [[1, None], [0, 1], [1, 1]]
    code, doc, _ = grade(sheet)
    assert code == 1
    assert not_right(doc) == {("q", 1, 2): "missing"}


def test_stages_limits_what_is_graded(grade):
    sheet = {"k": K, "scores": SCORES}
    code, doc, _ = grade(sheet, "--stages", "k,scores")
    assert code == 0
    assert [s["key"] for s in doc["stages"]] == ["k", "scores"]


def test_extra_stages_on_a_sheet_are_graded_too(grade):
    sheet = {**right_sheet(), "kt": [[1, 0, 1], [3, 1, 2]]}
    code, doc, _ = grade(sheet)
    assert code == 0
    assert "kt" in [s["key"] for s in doc["stages"]]


@pytest.mark.parametrize(
    ("sheet", "words"),
    [
        ({**right_sheet(), "k": [[1, 3, 0], [0, 1, 0], [1, 2, 0]]}, ["k", "3×3", "m×d_k", "3×2"]),
        ({**right_sheet(), "scorez": SCORES}, ["scorez", "'scores'"]),
        ({"k": [[1, 3], [0]]}, ["k", "row 2", "row 2 is 1 long"]),
        ([1, 2], ["JSON object", "list"]),
        ('{"k": [[1, 3], ', ["not valid JSON"]),
    ],
)
def test_an_invalid_sheet_exits_2_with_one_message(grade, sheet, words):
    code, doc, err = grade(sheet)
    assert code == 2
    assert doc is None
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "answer sheet" in err
    for word in words:
        assert word in err, (word, err)
    assert "Traceback" not in err


def test_an_invalid_problem_exits_2(cli, tmp_path):
    sheet = tmp_path / "answers.json"
    sheet.write_text("{}")
    result = cli("quiz", "--preset", "nope", "--answers", str(sheet))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "no preset named 'nope'" in result.stderr


def test_the_table_report_names_each_verdict(cli, tmp_path):
    sheet = right_sheet()
    sheet.update(k=K_SLIP, scores=SCORES_SLIP)
    del sheet["v"]
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(sheet))
    result = cli("quiz", "--preset", "sentence", "--answers", str(path))
    assert result.exit_code == 1
    out = result.stdout
    assert "✗ K[2,1]: you wrote 1, the answer is 0" in out
    assert (
        "→ Q·Kᵀ[1,2]: right for this step, worked from your own K[2,1] (a mistake made "
        "earlier); you wrote 3, the true value is 2" in " ".join(out.split())
    )
    assert "v: not answered" in out
    # marks per cell, a group per row: K is 3×2 with row 2, column 1 wrong
    k_row = next(line for line in out.splitlines() if line.lstrip().startswith("k "))
    assert "5/6" in k_row and "✓✓ ✗✓ ✓✓" in k_row
    scores_row = next(line for line in out.splitlines() if line.lstrip().startswith("scores "))
    assert "9/9" in scores_row and "✓→✓ ✓✓✓ ✓→✓" in scores_row  # the → cells count


def test_answers_from_stdin(qkvcalc_proc):
    result = qkvcalc_proc(
        "quiz",
        "--preset",
        "doc",
        "--answers",
        "-",
        "--format",
        "json",
        input=json.dumps(
            {
                "q": [1, 2],
                "k": [1, 3],
                "v": [3, 2],
                "scores": 7,
                "scaled": "7/sqrt(2)",
                "weights": 1,
                "output": [3, 2],
            }
        ),
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["all_right"] is True


def test_problem_and_sheet_cannot_both_be_stdin(qkvcalc_proc):
    result = qkvcalc_proc("quiz", "-", "--answers", "-", input="{}")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "standard input" in result.stderr


# ---- multi-head: "2/k", "2/scores" ------------------------------------------------------------


def test_multihead_keys_and_a_carried_mistake_in_head_2(cli, tmp_path):
    # two heads of d_k = 1: head 2 reads column 2 of W_Q and W_K.
    # q = [[2], [1]]; k = X·[1, 1]ᵀ = [[3], [1]]; scores = q·kᵀ = [[6, 2], [3, 1]].
    # The student writes k₂ = 2: their scores are [[6, 4], [3, 2]], column 2 carried.
    problem = {
        "x": [[1, 2], [0, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "heads": 2,
    }
    (tmp_path / "p.json").write_text(json.dumps(problem))
    (tmp_path / "a.json").write_text(json.dumps({"2/k": [[3], [2]], "2/scores": [[6, 4], [3, 2]]}))
    result = cli(
        "quiz",
        str(tmp_path / "p.json"),
        "--answers",
        str(tmp_path / "a.json"),
        "--stages",
        "2/k,2/scores",
        "--format",
        "json",
    )
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert [(s["key"], s["head"]) for s in doc["stages"]] == [("2/k", 2), ("2/scores", 2)]
    assert not_right(doc) == {
        ("2/k", 2, 1): WRONG,
        ("2/scores", 1, 2): CARRIED,
        ("2/scores", 2, 2): CARRIED,
    }
    cell = doc["stages"][1]["cells"][1]
    assert cell["carried_from"] == [{"key": "2/k", "row": 2, "col": 1, "cell": "K[2,1]"}]


def test_stage_selection():
    trace = run(Problem.from_mapping({**SENTENCE, "heads": 2}))
    assert select_keys(trace, ["scores"]) == ["1/scores", "2/scores"]
    # in the order of the calculation, whatever the order asked
    assert select_keys(trace, ["2/scores", "output"]) == [
        "1/output",
        "2/scores",
        "2/output",
        "output",
    ]
    with pytest.raises(QkvcalcError, match="no stage 'scorez'"):
        select_keys(trace, ["scorez"])
    with pytest.raises(QkvcalcError, match="3/scores"):
        select_keys(trace, ["3/scores"])


# ---- tolerance and the grammar of answers (hypothesis) ----------------------------------------


def half_unit(value, precision):
    return 0.5 * 10.0**-precision * max(1.0, abs(value) / 10)


@settings(max_examples=300, deadline=None)
@given(value=st.floats(-1e4, 1e4, allow_nan=False), precision=st.integers(0, 6))
def test_the_value_at_every_precision_is_accepted(value, precision):
    shown = f"{value:.{precision}f}"
    assert agrees(parse_answer(shown, "cell"), value, precision)


@settings(max_examples=300, deadline=None)
@given(
    value=st.floats(-1e4, 1e4, allow_nan=False),
    precision=st.integers(0, 6),
    factor=st.floats(1.01, 1e3),
    sign=st.sampled_from([-1, 1]),
)
def test_a_value_off_by_more_than_the_tolerance_is_refused(value, precision, factor, sign):
    answer = value + sign * factor * half_unit(value, precision)
    assert not agrees(answer, value, precision)


def test_answer_grammar():
    assert parse_answer("7", "c") == 7
    assert parse_answer(" -0.5 ", "c") == -0.5
    assert parse_answer("7/sqrt(2)", "c") == pytest.approx(7 / math.sqrt(2))
    assert parse_answer("−∞", "c") == -math.inf
    with pytest.raises(QkvcalcError, match="not a number"):
        parse_answer("__import__('os')", "c")


def sheet_from_naive(doc, trace):
    """Every gradable stage of `doc`, by key, from the naive reference."""
    ref = naive(doc)
    multi = trace.problem.multihead
    sheet = {}
    for (sid, head), value in ref.items():
        key = sid if head is None else f"{head}/{sid}"
        if key in stage_keys(trace):
            sheet[key] = np.array(value, dtype=float)
    assert multi or "concat" not in sheet
    return sheet


def askable_keys(trace):
    return select_keys(trace, list(dict.fromkeys(s.id for s in stage_keys(trace).values())))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=problems(max_n=4, max_d=3), precision=st.integers(1, 6))
def test_the_naive_answers_rounded_are_right_for_any_problem(doc, precision):
    trace = run(Problem.from_mapping(doc))
    sheet = {k: np.round(v, precision) for k, v in sheet_from_naive(doc, trace).items()}
    keys = askable_keys(trace)
    report = grade_sheet(trace, {k: sheet[k] for k in keys}, keys, precision)
    assert report.all_right, [
        (c.ref.label, c.answer, c.expected)
        for g in report.stages
        for c in g.cells
        if c.verdict != RIGHT
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=problems(max_n=4, max_d=3), data=st.data())
def test_one_changed_cell_is_found_and_nothing_else(doc, data):
    trace = run(Problem.from_mapping(doc))
    keys = askable_keys(trace)
    sheet = sheet_from_naive(doc, trace)
    sheet = {k: sheet[k] for k in keys}
    key = data.draw(st.sampled_from(keys))
    rows, cols = sheet[key].shape
    i, j = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))
    assume(math.isfinite(sheet[key][i, j]))
    sheet[key] = sheet[key].copy()
    sheet[key][i, j] += 1 + 10 * half_unit(sheet[key][i, j], 2)
    report = grade_sheet(trace, sheet, keys, 2)
    off = [
        (g.key, c.ref.i, c.ref.j, c.verdict)
        for g in report.stages
        for c in g.cells
        if c.verdict != RIGHT
    ]
    assert off == [(key, i, j, WRONG)]


# ---- random problems ---------------------------------------------------------------------------


def test_random_problems_repeat_by_seed():
    assert random_problem(7, 3, 2) == random_problem(7, 3, 2)
    assert random_problem(7, 3, 2) != random_problem(8, 3, 2)
    doc = random_problem(7, 4, 3)
    assert np.array(doc["x"]).shape == (4, 3)
    assert np.array(doc["wq"]).shape == (3, 3)
    assert all(isinstance(v, int) and -1 <= v <= 2 for row in doc["x"] for v in row)
    Problem.from_mapping(doc)  # valid input


@pytest.mark.parametrize("text", ["0,2", "3", "9,2", "a,b", "3,2,1"])
def test_bad_sizes(text):
    with pytest.raises(QkvcalcError, match="--size"):
        parse_size(text)


def test_random_quiz_says_its_seed(cli):
    result = cli("quiz", "--random", "--seed", "7", "--size", "2,2", "--stages", "q", input="\n")
    assert "seed 7" in result.stdout
    assert "qkvcalc quiz --random --seed 7 --size 2,2" in result.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--random", "--preset", "doc"], ["--random", "--preset"]),
        (["--preset", "doc", "--seed", "3"], ["--random"]),
        ([], ["--preset NAME"]),
        (["--preset", "doc", "--format", "json"], ["--answers"]),
        (["--preset", "doc", "--stages", "masked"], ["masked"]),
        (["--random", "--size", "20,2"], ["--size"]),
    ],
)
def test_usage_errors_exit_2(cli, args, words):
    result = cli("quiz", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    for word in words:
        assert word in result.stderr


# ---- the interactive quiz, through a real pseudo-terminal --------------------------------------


def answer(child, cell, text):
    child.expect_exact(f"{cell} = ")
    child.sendline(text)


def test_quiz_all_right_at_a_terminal():
    child = spawn("quiz", "--preset", "doc")
    child.expect_exact("x   1   2")  # the problem is shown first
    answer(child, "Q[1,1]", "1")
    child.expect_exact("✓")
    answer(child, "Q[1,2]", "two")  # not a number: asked again, nothing counted
    child.expect_exact("'two' is not a number qkvcalc reads")
    answer(child, "Q[1,2]", "2")
    for cell, text in [
        ("K[1,1]", "1"),
        ("K[1,2]", "3"),
        ("V[1,1]", "3"),
        ("V[1,2]", "2"),
        ("Q·Kᵀ[1,1]", "7"),
        ("S[1,1]", "7/sqrt(2)"),
        ("A[1,1]", "1"),
        ("out[1,1]", "3"),
        ("out[1,2]", "2"),
    ]:
        answer(child, cell, text)
    child.expect_exact("Score per stage")
    child.expect_exact("Every cell right: 11 of 11.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert "Traceback" not in child.before


def test_quiz_wrong_and_carried_at_a_terminal():
    child = spawn("quiz", "--preset", "sentence", "--stages", "k,scores")
    for i, row in enumerate(K_SLIP, start=1):
        for j, value in enumerate(row, start=1):
            answer(child, f"K[{i},{j}]", str(value))
            if (i, j) == (2, 1):
                child.expect_exact("✗ K[2,1] is 0, not 1.")
                child.expect_exact("K[2,1] = 0×1 + 1×0 = 0")  # its arithmetic, written out
    child.expect_exact("K: 5 of 6 right")
    for i, row in enumerate(SCORES_SLIP, start=1):
        for j, value in enumerate(row, start=1):
            answer(child, f"Q·Kᵀ[{i},{j}]", str(value))
            if (i, j) == (1, 2):
                child.expect_exact("Q·Kᵀ[1,2]: right for this step, and counted right")
                child.expect_exact("is 2: the mistake started at K[2,1] and carries into it.")
                child.expect_exact("q₁·k₂ = 1×0 + 2×1 = 2")
    child.expect_exact("Q·Kᵀ: 9 of 9 right (2 of them worked right from an earlier mistake)")
    child.expect_exact("Score per stage")
    child.expect_exact("5/6")
    child.expect_exact("9/9")
    child.expect_exact("Cells right: 14 of 15, 2 of them worked right from an earlier mistake")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1


def test_ctrl_c_quits_quietly_with_130():
    child = spawn("quiz", "--preset", "doc")
    child.expect_exact("Q[1,1] = ")
    interrupt_at_prompt(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in child.before


def test_ctrl_c_prints_the_score_so_far_then_exits_130():
    child = spawn("quiz", "--preset", "sentence", "--stages", "k,scores")
    for i, row in enumerate(K, start=1):
        for j, value in enumerate(row, start=1):
            answer(child, f"K[{i},{j}]", str(value))
    answer(child, "Q·Kᵀ[1,1]", "7")
    answer(child, "Q·Kᵀ[1,2]", "3")  # wrong: 2
    child.expect_exact("Q·Kᵀ[1,3] = ")
    interrupt_at_prompt(child)
    child.expect_exact("Stopped. The score so far:")
    child.expect_exact("Score per stage")
    child.expect_exact("6/6")
    child.expect_exact("1/9")  # the stage being asked: one right, one wrong, seven not reached
    child.expect_exact("Cells right: 7 of 15.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    assert "Traceback" not in child.before


def test_question_mark_gives_the_formula_and_the_cells_it_reads():
    child = spawn("quiz", "--preset", "sentence", "--stages", "scores,scaled,weights")
    answer(child, "Q·Kᵀ[1,1]", "?")
    child.expect_exact("Hint: Q·Kᵀ[1,1] = q_1·k_1: row 1 of Q times column 1 of Kᵀ (row 1 of K),")
    child.expect_exact("Q·Kᵀ[1,1] = ")  # the same cell is asked again after the hint
    assert " ".join(child.before.split()).endswith("multiplied pair by pair and added.")
    child.sendline("7")  # the same cell is asked again after the hint
    child.expect_exact("✓")
    for cell in ("Q·Kᵀ[1,2]", "Q·Kᵀ[1,3]", "Q·Kᵀ[2,1]", "Q·Kᵀ[2,2]", "Q·Kᵀ[2,3]"):
        answer(child, cell, "")
    for cell in ("Q·Kᵀ[3,1]", "Q·Kᵀ[3,2]", "Q·Kᵀ[3,3]"):
        answer(child, cell, "skip")
    answer(child, "S[1,1]", "?")
    child.expect_exact("Hint: S[1,1] = Q·Kᵀ[1,1] / √2.")
    answer(child, "S[1,1]", "4,95")  # a decimal comma
    child.expect_exact("✓")
    child.expect_exact("S[1,2] = ")
    interrupt_at_prompt(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130


def test_empty_answers_and_skip_move_on_and_count_as_missing():
    child = spawn("quiz", "--preset", "doc", "--stages", "q,k")
    answer(child, "Q[1,1]", "")
    child.expect_exact("· Q[1,1] skipped: it is 1.")
    answer(child, "Q[1,2]", "skip")
    child.expect_exact("· Q[1,2] skipped: it is 2.")
    answer(child, "K[1,1]", "1")
    answer(child, "K[1,2]", "3")
    child.expect_exact("Score per stage")
    child.expect_exact("q: not answered")  # every cell of Q skipped
    child.expect_exact("Cells right: 2 of 4.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1


def test_a_named_mistake_is_said_after_the_stage_at_a_terminal():
    child = spawn("quiz", "--preset", "doc", "--stages", "scaled", "--lang", "ko")
    answer(child, "S[1,1]", "7")  # not scaled: 7/√2 = 4.95
    child.expect_exact("이 값은 스케일링하지 않은 Q·Kᵀ입니다.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1


def test_hints_in_korean_at_a_terminal():
    child = spawn("quiz", "--preset", "doc", "--stages", "weights", "--lang", "ko")
    answer(child, "A[1,1]", "?")
    child.expect_exact("힌트: A[1,1] = E[1,1] / (E의 1번째 행의 합).")
    answer(child, "A[1,1]", "건너뛰기")
    child.expect_exact("A[1,1] 건너뜀: 정답 1.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1


def test_quiz_in_korean_at_a_terminal():
    child = spawn("quiz", "--preset", "doc", "--stages", "scores", "--lang", "ko")
    answer(child, "Q·Kᵀ[1,1]", "6")
    child.expect_exact("틀렸습니다")  # quiz.wrong, in Korean
    child.expect_exact("q₁·k₁ = 1×1 + 2×3 = 7")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "Wrong" not in child.before and "right" not in child.before


def test_a_piped_problem_takes_its_answers_from_the_terminal():
    """`cat p.json | qkvcalc quiz -`: standard input carried the problem, so the questions are
    answered at the terminal (as --step's keys are), not read as an empty answer sheet."""
    child = spawn(shell=f"cat presets/doc.json | {sys.executable} -m qkvcalc quiz - --stages q")
    answer(child, "Q[1,1]", "1")
    child.expect_exact("✓")
    answer(child, "Q[1,2]", "2")
    child.expect_exact("Every cell right: 2 of 2.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_a_piped_problem_with_no_terminal_says_so():
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "quiz", "-"],
        input=(ROOT / "presets" / "doc.json").read_bytes(),
        capture_output=True,
        env={**os.environ, **PINNED_ENV},
        cwd=ROOT,
        timeout=60,
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened
    )
    assert proc.returncode == 2 and proc.stdout == b""
    assert b"answers are read from a terminal" in proc.stderr


def test_the_json_report_escapes_what_a_terminal_would_act_on(cli, tmp_path):
    """A token holding a C1 control (CSI, U+009B) or a bidi override reaches the report as a
    \\u escape, as in the trace JSON: a report piped to a terminal cannot drive it."""
    problem = tmp_path / "p.json"
    problem.write_text(json.dumps({**SENTENCE, "tokens": ["I\u009b31m", "lo\u202eve", "cats"]}))
    sheet = tmp_path / "answers.json"
    sheet.write_text(json.dumps({"q": [[1, 2], [0, 1], [1, 1]]}))
    result = cli("quiz", str(problem), "--answers", str(sheet), "--stages", "q", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert "\u009b" not in result.stdout and "\u202e" not in result.stdout
    assert "\\u009b" in result.stdout and "\\u202e" in result.stdout
    assert json.loads(result.stdout)["problem"]["tokens"][0] == "I\u009b31m"


# ---- unreadable cells and decimal commas (issue 17) -------------------------------------------


def proc_grade(tmp_path, sheet, *extra):
    """Grade a sheet of the sentence problem on the command line: (exit code, stdout, stderr)."""
    (tmp_path / "sentence.json").write_text(json.dumps(SENTENCE))
    (tmp_path / "answers.json").write_text(json.dumps(sheet))
    proc = in_process(
        "quiz", str(tmp_path / "sentence.json"), "--answers", str(tmp_path / "answers.json"), *extra
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_an_unreadable_cell_is_graded_unreadable_and_the_rest_as_usual(tmp_path):
    sheet = {**right_sheet(), "k": [[1, "3?"], [0, 1], [1, 2]]}
    code, out, err = proc_grade(tmp_path, sheet, "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    assert not_right(doc) == {("k", 1, 2): "unreadable"}
    assert doc["score"]["unreadable"] == 1
    assert doc["score"]["right"] == doc["score"]["total"] - 1
    cell = doc["stages"][1]["cells"][1]
    assert cell["written"] == '"3?"'
    assert "'3?' is not a number qkvcalc reads" in cell["reason"]
    assert cell["expected"] == 3


def test_unreadable_cells_in_the_table_report_in_both_languages(tmp_path):
    sheet = {**right_sheet(), "k": [[1, "3?"], [True, 1], [1, 2]]}
    code, out, err = proc_grade(tmp_path, sheet)
    assert code == 1 and err == ""
    text = " ".join(out.split())
    assert "? K[1,2]: \"3?\" cannot be read (k[1,2]: '3?' is not a number" in text
    assert "? K[2,1]: true cannot be read (k[2,1] is true/false where a number belongs" in text
    assert "? unreadable" in text  # the legend
    code, out, _ = proc_grade(tmp_path, sheet, "--lang", "ko")
    assert code == 1
    assert "읽을 수 없습니다" in out


@pytest.mark.parametrize(
    ("written", "value"),
    [("4,95", 4.95), ("-0,5", -0.5), ("0,125", 0.125), ("1,234.5", 1234.5), ("1.234,5", 1234.5)],
)
def test_decimal_commas_read_as_a_teacher_would(written, value):
    assert parse_answer(written, "S[1,1]") == pytest.approx(value)


def test_a_comma_before_three_digits_is_ambiguous_and_says_both_readings():
    with pytest.raises(QkvcalcError) as info:
        parse_answer("1,234", "S[1,1]")
    assert str(info.value) == (
        "S[1,1]: '1,234' could be 1.234 (a decimal comma) or 1234 (a thousands separator); "
        "write 1.234 or 1234"
    )


def test_a_sheet_with_decimal_commas_is_graded(tmp_path):
    # 7/√2 = 4.9497…, written 4,95 at precision 2
    sheet = {
        "scaled": [["4,95", "1,41", "3,54"], ["2,12", "0,71", "1,41"], ["2,83", "0,71", "2,12"]]
    }
    code, out, err = proc_grade(tmp_path, sheet, "--stages", "scaled", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["all_right"] is True


def test_an_ambiguous_comma_on_a_sheet_is_unreadable_with_the_reason(tmp_path):
    sheet = {"q": [["1,000", 2], [0, 1], [1, 1]]}
    code, out, _ = proc_grade(tmp_path, sheet, "--stages", "q", "--format", "json")
    assert code == 1
    cell = json.loads(out)["stages"][0]["cells"][0]
    assert cell["verdict"] == "unreadable"
    assert cell["reason"] == (
        "q[1,1]: '1,000' could be 1.000 (a decimal comma) or 1000 (a thousands separator); "
        "write 1.000 or 1000"
    )


# ---- quiz --template ----------------------------------------------------------------------------


def test_template_prints_an_empty_sheet_that_grades_as_missing(tmp_path):
    proc = run_qkvcalc("quiz", "--preset", "sentence", "--template")
    assert proc.returncode == 0 and proc.stderr == ""
    sheet = json.loads(proc.stdout)
    assert list(sheet) == list(DEFAULT_STAGES)
    assert sheet["k"] == [[None, None]] * 3
    assert sheet["scores"] == [[None] * 3] * 3
    (tmp_path / "blank.json").write_text(proc.stdout)
    graded = run_qkvcalc(
        "quiz", "--preset", "sentence", "--answers", str(tmp_path / "blank.json"), "-f", "json"
    )
    assert graded.returncode == 1
    doc = json.loads(graded.stdout)
    assert doc["score"]["missing"] == doc["score"]["total"]


def test_template_follows_stages_and_heads():
    proc = in_process("quiz", "--preset", "multihead", "--template", "--stages", "scores,concat")
    assert proc.returncode == 0
    sheet = json.loads(proc.stdout)
    assert list(sheet) == ["1/scores", "2/scores", "concat"]


def test_template_of_a_random_problem_matches_its_seed():
    a = in_process("quiz", "--random", "--seed", "7", "--size", "4,2", "--template")
    assert a.returncode == 0
    assert json.loads(a.stdout)["scores"] == [[None] * 4] * 4


def test_template_with_answers_is_a_usage_error(tmp_path):
    proc = in_process("quiz", "--preset", "doc", "--template", "--answers", "x.json")
    assert proc.returncode == 2
    assert "--template prints an empty answer sheet" in proc.stderr


# ---- explain --random: the same problem as quiz --random ---------------------------------------


def test_explain_random_is_the_problem_quiz_random_grades(tmp_path):
    """The worked solution `explain --random --seed 7` prints, handed in as an answer sheet to
    `quiz --random --seed 7`, is all right: the two commands made the same problem."""
    proc = in_process("explain", "--random", "--seed", "7", "--size", "4,3", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    assert "seed 7" in proc.stderr and "qkvcalc quiz --random --seed 7 --size 4,3" in proc.stderr
    doc = json.loads(proc.stdout)  # stdout holds the JSON alone
    assert doc["problem"]["n"] == 4 and doc["problem"]["d_model"] == 3
    x = next(s for s in doc["stages"] if s["id"] == "x")["value"]
    assert x == random_problem(7, 4, 3)["x"]
    sheet = {s["id"]: s["value"] for s in doc["stages"] if s["id"] in DEFAULT_STAGES}
    (tmp_path / "solution.json").write_text(json.dumps(sheet))
    graded = in_process(
        "quiz",
        "--random",
        "--seed",
        "7",
        "--size",
        "4,3",
        "--answers",
        str(tmp_path / "solution.json"),
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert "Every cell right: 96 of 96." in graded.stdout
    other = in_process("explain", "--random", "--seed", "8", "--size", "4,3", "-f", "json")
    assert json.loads(other.stdout)["stages"][0]["value"] != x  # another seed, another problem


def test_explain_random_in_korean_says_its_seed_in_korean():
    proc = in_process("explain", "--random", "--seed", "3", "--lang", "ko", "-f", "json")
    assert proc.returncode == 0
    assert "무작위 문제, 시드 3" in proc.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--random", "--preset", "doc"], "--random makes its own problem: leave out --preset"),
        (["--random", "--x", "1 2"], "leave out --x"),
        (["--seed", "7"], "--seed and --size describe a random problem: add --random"),
        (["--random", "--size", "9,9"], "--size '9,9'"),
    ],
)
def test_explain_random_usage_errors(args, words):
    proc = in_process("explain", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert words in proc.stderr


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_quiz_tells_no_result_it_asks_for(cli, lang):
    """As a worksheet does (issue 25, item 6): no reading line, no 'why scale, shown', no
    geometry read-out and no preset reference that states a result the student works out.
    The same problem explained shows them all."""
    asked = cli("quiz", "--preset", "sentence", "--lang", lang, input="\n" * 40).stdout
    told = cli("explain", "--preset", "sentence", "--lang", lang).stdout
    # the reference's and the reading's 80%, 'cats → I 62%', and the sentence that compares
    # with and without the scale (its weights), which explain shows before the tables
    for result in ("80%", "62%", "cats 31%", "71%", "cos θ = 1"):
        assert result in told, result
        assert result not in asked, result


def test_a_mistyped_stage_gets_a_did_you_mean():
    from tests.conftest import one_message

    for typed, meant in (("scors", "scores"), ("2/scors", "2/scores"), ("weight", "weights")):
        result = in_process("quiz", "--preset", "multihead", "--stages", typed)
        one_message(result, f"no stage {typed!r}", f"did you mean {meant!r}?")
    korean = in_process("quiz", "--preset", "multihead", "--stages", "scors", "--lang", "ko")
    one_message(korean, "'scores' 단계를 뜻했나요?")
    far = in_process("quiz", "--preset", "multihead", "--stages", "banana")
    one_message(far, "no stage 'banana'; choose from")


def test_a_head_the_problem_lacks_is_said_with_its_heads():
    from tests.conftest import one_message

    one_message(in_process("quiz", "--preset", "multihead", "--stages", "3/scores"),
                "head 3 is not in this problem, whose heads are 1 to 2")  # fmt: skip
    one_message(in_process("quiz", "--preset", "sentence", "--stages", "2/scores"),
                "a single head", "write scores")  # fmt: skip
    korean = in_process("quiz", "--preset", "multihead", "--stages", "3/scores", "--lang", "ko")
    one_message(korean, "3번 헤드가 없습니다", "1부터 2까지")
