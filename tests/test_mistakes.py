"""Named mistakes (qkvcalc/quiz/mistakes.py): one answer sheet per classic mistake, graded by a
real `qkvcalc quiz --answers` process; the report names the mistake (a stable id in the JSON,
a sentence with the right rule in both languages), and only when the match is unambiguous.

Every wrong matrix below is worked out by hand in its comment, from the problem's numbers;
the engine is never asked what the mistake gives.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.quiz.grade import grade_sheet
from qkvcalc.quiz.mistakes import MISTAKE_IDS, candidates, recognise
from qkvcalc.run.engine import run
from tests.conftest import in_process

R2 = math.sqrt(2)

# The sentence preset: X = [[1,2],[0,1],[1,1]], W_Q = I, W_K = [[1,1],[0,1]],
# W_V = [[1,0],[1,1]], causal. Q = X, K = [[1,3],[0,1],[1,2]], scores q_i·k_j:
SENTENCE = {
    "tokens": ["I", "love", "cats"],
    "x": [[1, 2], [0, 1], [1, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [[1, 0], [1, 1]],
    "mask": "causal",
}
SCORES = [[7, 2, 5], [3, 1, 2], [4, 1, 3]]
SCALED = [[s / R2 for s in row] for row in SCORES]
NEG = "-inf"

# Two tokens, so that K (2×2) is square: K = [[1,3],[0,1]], Q = X = [[1,2],[0,1]].
TWO = {
    "tokens": ["a", "b"],
    "x": [[1, 2], [0, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [[1, 0], [1, 1]],
}

I2 = [[1, 0], [0, 1]]
WK = [[1, 1], [0, 1]]

# Two heads of d_k = 2 on d_model = 4 (the multihead preset's shape).
W4 = [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]]
HEADS = {"x": [[1, 2, 3, 4], [0, 1, 0, 1]], "wq": W4, "wk": W4, "wv": W4, "heads": 2}


def softmax_rows(rows):
    out = []
    for row in rows:
        live = [v for v in row if v != -math.inf]
        top = max(live) if live else 0.0
        e = [0.0 if v == -math.inf else math.exp(v - top) for v in row]
        total = sum(e)
        out.append([t / total if total else 0.0 for t in e])
    return out


def masked(rows, allowed):
    return [
        [v if allowed(i, j) else -math.inf for j, v in enumerate(r)] for i, r in enumerate(rows)
    ]


def causal(i, j):
    return j <= i


def grade(tmp_path, problem, sheet, *extra):
    """Run `qkvcalc quiz PROBLEM --answers SHEET --format json`: (exit code, report)."""
    (tmp_path / "p.json").write_text(json.dumps(problem))
    (tmp_path / "a.json").write_text(json.dumps(sheet))
    proc = in_process(
        "quiz", str(tmp_path / "p.json"), "--answers", str(tmp_path / "a.json"), *extra
    )
    return proc


def graded(tmp_path, problem, sheet, lang="en"):
    proc = grade(tmp_path, problem, sheet, "--format", "json", "--lang", lang)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    return {s["key"]: s for s in doc["stages"]}


def rounded(rows, places=4):
    """A matrix as a student writes it: rounded, and −∞ as the string "-inf"."""
    return [[NEG if v == -math.inf else round(v, places) for v in row] for row in rows]


# (name, problem, sheet, stage key, id, words of the sentence in English)
CASES = [
    (
        "scale by d_k",
        SENTENCE,
        {"scaled": rounded([[s / 2 for s in r] for r in SCORES])},  # 7/2 = 3.5 …
        "scaled",
        "scale_d_k",
        "These are Q·Kᵀ / d_k = Q·Kᵀ / 2; the scale is the square root of d_k, so "
        "Q·Kᵀ / √d_k = Q·Kᵀ / √2.",
    ),
    (
        "not scaled",
        SENTENCE,
        {"scaled": SCORES},
        "scaled",
        "scale_missing",
        "These are Q·Kᵀ, not scaled; every score is divided by √d_k = √2 (d_k = 2).",
    ),
    (
        "scale multiplied",
        SENTENCE,
        {"scaled": rounded([[s * R2 for s in r] for r in SCORES])},  # 7·√2 = 9.8995 …
        "scaled",
        "scale_multiplied",
        "√d_k = √2, not multiplied",
    ),
    (
        "scale by √d_model, per head",
        # head 1 reads columns 1-2 of W4: q = k = [x1+x3, x2+x3] = [4, 5] and [0, 1];
        # Q·Kᵀ = [[41, 5], [5, 1]]; / √d_model = / 2 (which is d_k too); the rule is / √2
        HEADS,
        {"1/scaled": [[20.5, 2.5], [2.5, 0.5]]},
        "1/scaled",
        "scale_sqrt_d_model",
        "These are Q·Kᵀ / √d_model = Q·Kᵀ / 2 (here the same as dividing by d_k); the scale "
        "uses d_k = 2, the width of a query and a key per head, and its square root: "
        "Q·Kᵀ / √d_k = Q·Kᵀ / √2.",
    ),
    (
        "scale by √d_model, d_model not d_k squared",
        # d_model = 3, d_k = 1: W_Q = W_K = [[1],[0],[1]], X = [[1,2,1],[0,1,2]] → q = k = [2],[2];
        # Q·Kᵀ = [[4,4],[4,4]]; / √3 = 2.3094; / d_k = / 1 is the truth itself
        {
            "x": [[1, 2, 1], [0, 1, 2]],
            "wq": [[1], [0], [1]],
            "wk": [[1], [0], [1]],
            "wv": [[1], [0], [1]],
        },
        {"scaled": [[2.3094, 2.3094], [2.3094, 2.3094]]},
        "scaled",
        "scale_sqrt_d_model",
        "These are Q·Kᵀ / √d_model = Q·Kᵀ / √3; the scale uses d_k = 1",
    ),
    (
        "W instead of its transpose",
        # X·W_Kᵀ, W_Kᵀ = [[1,0],[1,1]]: a row [a, b] gives [a+b, b]
        SENTENCE,
        {"k": [[3, 2], [1, 1], [2, 1]]},
        "k",
        "weight_transposed",
        "These are X·W_Kᵀ; with row vectors K = X·W_K, with no transpose",
    ),
    (
        "torch layout taken as rows",
        # the same weights given out×in: W_K written [[1,0],[1,1]]; X·(as written) = [a+b, b]
        {
            **SENTENCE,
            "wq": [[1, 0], [0, 1]],
            "wk": [[1, 0], [1, 1]],
            "wv": [[1, 1], [0, 1]],
            "layout": "torch",
        },
        {"k": [[3, 2], [1, 1], [2, 1]]},
        "k",
        "weight_torch_layout",
        "These are X·W_K as it is written; this problem gives its weights as PyTorch stores "
        "them (out×in, layout torch), so K = X·W_Kᵀ.",
    ),
    (
        "Kᵀ left as K",
        TWO,
        {"kt": [[1, 3], [0, 1]]},  # K itself; Kᵀ = [[1,0],[3,1]]
        "kt",
        "kt_not_transposed",
        "This is K as it is; Kᵀ turns K on its side",
    ),
    (
        "Q·K instead of Q·Kᵀ",
        TWO,
        {"scores": [[1, 5], [0, 1]]},  # [1,2]·[[1,3],[0,1]] = [1, 5]; Q·Kᵀ = [[7,2],[3,1]]
        "scores",
        "k_not_transposed",
        "These are Q·K; a score compares query i with key j",
    ),
    (
        "scores turned on their side",
        SENTENCE,
        {"scores": [list(c) for c in zip(*SCORES, strict=True)]},  # K·Qᵀ = (Q·Kᵀ)ᵀ
        "scores",
        "scores_transposed",
        "These are K·Qᵀ, the scores turned on their side",
    ),
    (
        "mask forgotten",
        SENTENCE,
        {"masked": rounded(SCALED)},  # no −∞ above the diagonal
        "masked",
        "mask_missing",
        "The mask is left out; 3 query–key pairs are masked",
    ),
    (
        "mask forgotten, seen in the weights",
        SENTENCE,
        {"weights": rounded(softmax_rows(SCALED))},
        "weights",
        "mask_missing",
        "The mask is left out",
    ),
    (
        "causal mask turned to the future",
        SENTENCE,
        {"masked": rounded(masked(SCALED, lambda i, j: j >= i))},
        "masked",
        "mask_inverted",
        "The causal mask is turned around; query i may attend to keys 1…i",
    ),
    (
        "0/1 mask read as 1 = blocked",
        # mask [[1,0],[1,1]] read the other way: row 1 keeps key 2 only, row 2 keeps nothing
        {**TWO, "mask": [[1, 0], [1, 1]]},
        {"weights": [[0, 1], [0, 0]]},
        "weights",
        "mask_inverted",
        "The mask is read the wrong way round; 1 / true means may attend",
    ),
    (
        "exponentials not shifted",
        # e^s of the masked scaled scores: e^(7/√2) = 141.0…, masked cells e^(−∞) = 0
        SENTENCE,
        {"exp": rounded([[math.exp(v) for v in r] for r in masked(SCALED, causal)], 2)},
        "exp",
        "exp_not_shifted",
        "These are e^s; this stage subtracts each row's maximum first",
    ),
    (
        "softmax down the columns",
        SENTENCE,
        {
            "weights": rounded(
                [
                    list(r)
                    for r in zip(
                        *softmax_rows([list(c) for c in zip(*masked(SCALED, causal), strict=True)]),
                        strict=True,
                    )
                ]
            )
        },
        "weights",
        "softmax_columns",
        "This is softmax down each column; softmax runs along each row",
    ),
]


@pytest.mark.parametrize(
    ("name", "problem", "sheet", "key", "mistake", "words"), CASES, ids=[c[0] for c in CASES]
)
def test_a_sheet_per_mistake_is_named_in_the_json_report(
    tmp_path, name, problem, sheet, key, mistake, words
):
    stages = graded(tmp_path, problem, sheet)
    assert stages[key]["mistake"] == mistake, stages[key]
    assert words in stages[key]["mistake_text"]
    assert stages[key]["wrong"] > 0
    others = [s["mistake"] for k, s in stages.items() if k != key]
    assert others == [None] * len(others)  # the stages given right name nothing


def test_every_mistake_id_has_a_sheet():
    from tests.test_feature_mistakes import FEATURE_IDS  # the features' own, tested there
    from tests.test_quiz_backward import BACKWARD_IDS  # the backward pass's, tested there

    named = {c[4] for c in CASES} | {"heads_averaged"} | FEATURE_IDS | set(BACKWARD_IDS)
    assert named == set(MISTAKE_IDS)


def test_the_table_report_says_the_mistake_in_english_and_korean(tmp_path):
    sheet = {"scaled": rounded([[s / 2 for s in r] for r in SCORES])}
    proc = grade(tmp_path, SENTENCE, sheet, "--stages", "scaled")
    assert proc.returncode == 1
    text = " ".join(proc.stdout.split())
    assert "Mistakes recognised" in text
    assert "scaled Scaling: These are Q·Kᵀ / d_k = Q·Kᵀ / 2;" in text
    proc = grade(tmp_path, SENTENCE, sheet, "--stages", "scaled", "--lang", "ko")
    assert proc.returncode == 1
    text = " ".join(proc.stdout.split())
    assert "알아낸 실수" in text
    assert "이 값은 Q·Kᵀ / d_k = Q·Kᵀ / 2입니다." in text
    assert "Q·Kᵀ / √d_k = Q·Kᵀ / √2입니다." in text


def test_korean_json_keeps_the_id(tmp_path):
    stages = graded(tmp_path, SENTENCE, {"scaled": SCORES}, lang="ko")
    assert stages["scaled"]["mistake"] == "scale_missing"
    assert "스케일링하지 않은" in stages["scaled"]["mistake_text"]


def test_heads_averaged_instead_of_concatenated(tmp_path):
    # the heads' outputs of HEADS, averaged (n×d_v = 2×2 instead of n×H·d_v = 2×4): the
    # outputs themselves come from a real run, the average is taken here
    trace = run(Problem.from_mapping(HEADS))
    mean = (trace.stage("output", 1).value + trace.stage("output", 2).value) / 2
    stages = graded(tmp_path, HEADS, {"concat": np.round(mean, 4).tolist()})
    concat = stages["concat"]
    assert concat["mistake"] == "heads_averaged"
    assert "laid side by side" in concat["mistake_text"] and "2×4" in concat["mistake_text"]
    assert concat["wrong"] == 8


def test_a_wrong_shape_that_is_not_an_average_is_still_an_error(tmp_path):
    proc = grade(tmp_path, HEADS, {"concat": [[1, 2], [3, 4]]})
    assert proc.returncode == 2
    assert "concat is 2×2" in proc.stderr


def test_a_slip_on_top_of_a_mistake_is_not_named(tmp_path):
    wrong = [[s / 2 for s in r] for r in SCORES]
    wrong[2][2] = 9  # not 3/2
    stages = graded(tmp_path, SENTENCE, {"scaled": rounded(wrong)})
    assert stages["scaled"]["mistake"] is None


def test_a_mistake_on_top_of_an_earlier_one_is_named_from_the_students_own_numbers(tmp_path):
    # K[2,1] = 1 instead of 0 changes column 2 of the scores to [3, 1, 2]; dividing those
    # (their own scores) by 2 is still the d_k mistake
    k = [[1, 3], [1, 1], [1, 2]]
    scores = [[7, 3, 5], [3, 1, 2], [4, 2, 3]]
    sheet = {"k": k, "scores": scores, "scaled": rounded([[s / 2 for s in r] for r in scores])}
    stages = graded(tmp_path, SENTENCE, sheet)
    assert stages["k"]["mistake"] is None
    assert stages["scaled"]["mistake"] == "scale_d_k"


def test_a_match_is_named_only_when_it_is_the_one_mistake_that_fits():
    # Q, K given directly (no d_model): q·k = 8, d_k = 4, the truth 8/2 = 4; /d_k gives 2,
    # unscaled 8, ·√d_k 16: only "/ d_k" fits 2
    trace = run(Problem.from_mapping({"q": [[2, 2, 2, 2]], "k": [[1, 1, 1, 1]], "v": [[1]]}))
    own = {"scores": trace.stage("scores").value}
    assert recognise(trace, "scaled", np.array([[2.0]]), own, 2).id == "scale_d_k"
    # d_k = 1: dividing by d_k, by √d_k or by nothing is the truth itself; 6 fits none
    trace = run(Problem.from_mapping({"q": [[3]], "k": [[2]], "v": [[1]]}))
    own = {"scores": trace.stage("scores").value}
    assert recognise(trace, "scaled", np.array([[6.0]]), own, 2) is None


def test_grading_functions_carry_the_mistake():
    trace = run(Problem.from_mapping(SENTENCE))
    report = grade_sheet(trace, {"scaled": np.array(SCORES, dtype=float)}, ["scaled"], 2)
    assert report.stages[0].mistake.id == "scale_missing"
    assert "√2" in report.stages[0].mistake.text("ko")


def test_no_transposition_is_blamed_where_turning_changes_nothing():
    """Issue 25: in a 1×1 table K·Qᵀ = Q·Kᵀ, so a wrong score there is never 'turned on its
    side'. The doc preset: x = [1, 2], Q = [1, 2], K = [1, 3], Q·Kᵀ = 7. The student writes
    Q = [2, 2] and K = [1, 1] (their own score: 4), is told K is [1, 3], and multiplies their
    Q by that K: 2 + 6 = 8. That is no transposition (K·Qᵀ of the same two is 8 too)."""
    trace = run(Problem.from_mapping({"x": [[1, 2]], "wq": I2, "wk": WK, "wv": I2}))
    sheet = {"q": np.array([[2.0, 2.0]]), "k": np.array([[1.0, 1.0]]), "scores": np.array([[8.0]])}
    report = grade_sheet(trace, sheet, ["q", "k", "scores"], 2)
    scores = next(g for g in report.stages if g.key == "scores")
    assert scores.cells[0].verdict == "wrong"
    assert scores.mistake is None
    # where turning the table does change it, the mistake is still named (3×3, from the truth)
    trace = run(Problem.from_mapping(SENTENCE))
    turned = np.array(SCORES, dtype=float).T
    assert recognise(trace, "scores", turned, {}, 2).id == "scores_transposed"
    # nor is dV = Aᵀ·dO said to be A·dO for one token (n = m = 1: Aᵀ = A), nor Q·K said for
    # Q·Kᵀ when K is square and symmetric (K = Kᵀ): no candidate equals the right product of
    # the same matrices
    one = {"x": [[1, 2]], "wq": I2, "wk": WK, "wv": I2, "target": [[0, 0]]}
    trace = run(replace(Problem.from_mapping(one), backward=True))
    own = {"grad_output": np.array([[5.0, 9.0]]), "weights": np.array([[0.5]])}
    found = [m for m, _, _ in candidates(trace, trace.stage("grad_v"), own)]
    assert "grad_v_not_transposed" not in found
    sym = {"x": [[1, 0], [0, 1]], "wq": I2, "wk": [[2, 1], [1, 3]], "wv": I2}
    trace = run(Problem.from_mapping(sym))
    found = [m for m, _, _ in candidates(trace, trace.stage("scores"), {})]
    assert "k_not_transposed" not in found and "scores_transposed" not in found
