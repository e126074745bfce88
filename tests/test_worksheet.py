"""`explain --worksheet`: the inputs filled in, every computed cell blank, in every format.

A worksheet is checked against the trace the same problem computes: every input number is on
the page, and no number a stage computes is, in any format (the command line in this process;
one real process, as a teacher runs it). Its answer key, `explain` with the same seed, has the
same stages.
"""

from __future__ import annotations

import html
import json
import re

import pytest

import qkvcalc
from qkvcalc.ops.table import OPS
from qkvcalc.render.text import fmt
from tests.conftest import in_process, run_qkvcalc
from tests.test_exports import PDFLATEX, _has_kotex, _pdflatex
from tests.test_i18n import english_in

# Inputs with distinctive decimals, so every computed number is a decimal no input shares
PROBLEM = {
    "tokens": ["I", "love", "cats"],
    "x": [[0.13, 1.7, -0.61], [0.42, -0.27, 0.9], [1.15, 0.33, 0.58]],
    "wq": [[0.21, -0.74], [0.56, 0.19], [-0.37, 0.88]],
    "wk": [[0.64, 0.12], [-0.29, 0.47], [0.81, -0.53]],
    "wv": [[0.35, 0.77], [-0.46, 0.24], [0.18, -0.92]],
    "mask": "causal",
}
MULTIHEAD = {
    **PROBLEM,
    "wq": [[0.21, -0.74, 0.31, 0.52], [0.56, 0.19, -0.83, 0.44], [-0.37, 0.88, 0.26, -0.15]],
    "wk": [[0.64, 0.12, -0.58, 0.71], [-0.29, 0.47, 0.36, 0.23], [0.81, -0.53, 0.17, 0.62]],
    "wv": [[0.35, 0.77, 0.48, -0.11], [-0.46, 0.24, 0.69, 0.57], [0.18, -0.92, 0.14, 0.39]],
    "wo": [
        [0.11, 0.22, -0.33, 0.44],
        [0.55, -0.66, 0.77, 0.12],
        [0.34, 0.56, 0.78, -0.91],
        [0.23, -0.45, 0.67, 0.89],
    ],
    "heads": 2,
    "mask": "none",
}
FORMATS = ["txt", "markdown", "html", "latex", "svg"]


def _numbers(values) -> set[str]:
    return {fmt(float(v), 4) for v in values}


def inputs_and_answers(doc: dict) -> tuple[set[str], set[str]]:
    """The input numbers as a page shows them, and the computed ones that are decimals no
    input shares (0 and 1, a masked key's weight or a lone key's, also appear as labels)."""
    fields = {k: v for k, v in doc.items() if k not in ("tokens",)}
    trace = qkvcalc.explain(**fields, tokens=doc["tokens"])
    given, computed = set(), set()
    for stage in trace.stages:
        if OPS[stage.op].in_words:
            continue
        target = given if OPS[stage.op].given else computed
        target |= _numbers(v for v in stage.value.ravel() if abs(v) != float("inf"))
    given |= _numbers(
        v for key in ("wq", "wk", "wv", "wo") if key in doc for r in doc[key] for v in r
    )
    computed -= given
    return given, {c for c in computed if "." in c}


def _page(doc: dict, fmt_name: str, *extra: str) -> str:
    result = in_process(
        "explain", "-", "--worksheet", "--format", fmt_name, *extra, input=json.dumps(doc)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout
    text = html.unescape(result.stdout) if fmt_name in ("html", "svg") else result.stdout
    return text.replace("\u00a0", " ").replace("−", "-")


@pytest.mark.parametrize("doc", [PROBLEM, MULTIHEAD], ids=["causal", "multihead"])
@pytest.mark.parametrize("fmt_name", FORMATS)
def test_a_worksheet_holds_every_input_and_no_answer(doc, fmt_name):
    given, answers = inputs_and_answers(doc)
    page = _page(doc, fmt_name)
    shown = set(re.findall(r"-?\d+(?:\.\d+)?", page))
    assert given <= shown, sorted(given - shown)
    assert answers, "the problem computes decimals"
    assert not answers & shown, sorted(answers & shown)
    # and the explanation of the same problem shows them: the check can fail
    answer_key = in_process("explain", "-", "--format", fmt_name, input=json.dumps(doc)).stdout
    answer_key = html.unescape(answer_key).replace("−", "-")
    assert answers & set(re.findall(r"-?\d+(?:\.\d+)?", answer_key))


@pytest.mark.parametrize("fmt_name", FORMATS)
def test_blank_cells_are_boxes_to_write_in(fmt_name):
    page = _page(PROBLEM, fmt_name)
    blank = {
        "txt": "______",
        "markdown": r"\_\_\_\_\_\_",  # escaped: GitHub shows ______
        "svg": "______",
        "html": '<td class="blank"></td>',
        "latex": r"\boxed{\phantom{-0.0000}}",
    }[fmt_name]
    # Q, K, V 3×2, Kᵀ 2×3, four 3×3 stages from the scores to the weights, output twice
    assert page.count(blank) >= 3 * 6 + 6 + 4 * 9 + 2 * 6


def test_the_reading_line_and_the_arithmetic_are_left_out():
    page = _page(PROBLEM, "txt")
    answer_key = in_process("explain", "-", "--format", "txt", input=json.dumps(PROBLEM)).stdout
    for said in ("Read out", "Arithmetic\n    Q[1,1]", "max = ", "%"):
        assert said in answer_key or said == "Arithmetic\n    Q[1,1]"
        assert said not in page
    assert "Worksheet" in page and "without --worksheet" in page
    assert "divided by √2 ≈ 1.4142" in page.replace("-", "−")  # the scale is the problem's


def test_a_random_worksheet_and_its_answer_key_have_the_same_stages():
    args = ("--random", "--seed", "7", "--size", "4,3", "--format", "markdown")
    sheet = in_process("explain", *args, "--worksheet")
    key = in_process("explain", *args)
    assert sheet.returncode == key.returncode == 0, sheet.stderr
    headings = [line for line in sheet.stdout.splitlines() if line.startswith("## ")]
    assert headings == [line for line in key.stdout.splitlines() if line.startswith("## ")]
    assert len(headings) == 11  # 10 stages (no mask) and the output
    x_of = [text.split("## 2/10")[0].split("## 1/10")[1] for text in (sheet.stdout, key.stdout)]
    tables = [[line for line in x.splitlines() if line.startswith("|")] for x in x_of]
    assert tables[0] == tables[1] and len(tables[0]) == 6  # the same problem: the same X
    assert "seed 7" in sheet.stderr
    blank = r"\_\_\_\_\_\_"
    assert blank in sheet.stdout and blank not in key.stdout


def test_a_worksheet_goes_with_a_preset_stages_and_a_head():
    result = run_qkvcalc(
        "explain", "--preset", "multihead", "--worksheet", "--stages", "weights", "--head", "2"
    )
    assert result.returncode == 0, result.stderr
    assert "1/1  Softmax, part 2: attention weights · head 2" in result.stdout
    assert "______" in result.stdout


@pytest.mark.parametrize("fmt_name", ["json", "torch"])
def test_a_worksheet_in_json_or_torch_is_refused_with_the_way_to_a_blank_sheet(fmt_name):
    result = in_process("explain", "--preset", "doc", "--worksheet", "--format", fmt_name)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "qkvcalc quiz --template" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("fmt_name", ["txt", "markdown", "html", "latex", "svg"])
def test_a_korean_worksheet_has_no_english(fmt_name):
    result = in_process(
        "explain", "--preset", "sentence", "--worksheet", "--lang", "ko", "--format", fmt_name
    )
    assert result.returncode == 0, result.stderr
    text = html.unescape(result.stdout)
    assert english_in(text, excuse=("I love cats",)) == set()
    assert "워크시트" in text


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed")
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_latex_worksheet_compiles(tmp_path, lang):
    if lang == "ko" and not _has_kotex():
        pytest.skip("kotex is not installed (Debian: texlive-lang-korean)")
    tex = in_process(
        "explain", "--preset", "multihead", "--worksheet", "--format", "latex", "--lang", lang
    )
    assert tex.returncode == 0, tex.stderr
    _pdflatex(tex.stdout, tmp_path)
