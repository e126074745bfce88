"""Issue 17's layout at real widths and the wording around it: titles that wrap instead of
being cut, tables that use the width they have, prose at a readable measure, one minus sign,
stages given directly that are not called projections, and an answer sheet's head keys."""

from __future__ import annotations

import json
import re

from tests.conftest import in_process

GIVEN = {"q": [[1, 0], [0, 1]], "k": [[1, 1], [0, 1]], "v": [[1, 2], [3, 4]]}


def test_q_k_v_given_directly_are_not_called_projections():
    for lang, word in (("en", "projection"), ("ko", "선형 투영")):
        for doc in (GIVEN, {**{k: [r * 2 for r in v] for k, v in GIVEN.items()}, "heads": 2}):
            result = in_process("explain", "-", "--lang", lang, input=json.dumps(doc))
            assert result.returncode == 0, result.stderr
            titles = [line for line in result.stdout.splitlines() if "·" in line and "──" in line]
            assert titles and not [t for t in titles if word in t], titles
            assert "(given)" in result.stdout or "(주어진 값)" in result.stdout
    projected = in_process("explain", "--preset", "doc").stdout
    assert "Query projection" in projected


def test_a_head_stage_keyed_without_its_head_suggests_head_one(tmp_path):
    sheet = tmp_path / "sheet.json"
    sheet.write_text(json.dumps({"scores": [[1, 2], [3, 4]]}), encoding="utf-8")
    result = in_process("quiz", "--preset", "multihead", "--answers", str(sheet))
    assert result.returncode == 2 and result.stdout == ""
    assert "'1/scores'" in result.stderr and "'2/scores'" in result.stderr
    assert "did you mean '1/scores'" in result.stderr
    korean = in_process("quiz", "--preset", "multihead", "--answers", str(sheet), "--lang", "ko")
    assert korean.returncode == 2 and "'1/scores'" in korean.stderr and "헤드" in korean.stderr


def _run(*args: str, columns: int, input: str | None = None) -> str:
    result = in_process("explain", *args, input=input, env={"COLUMNS": str(columns)})
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_titles_wrap_between_their_parts_instead_of_being_cut():
    from qkvcalc.render.text import display_width

    for preset in ("sentence", "multihead", "llama", "decode"):
        text = _run("--preset", preset, columns=80)
        lines = text.splitlines()
        rules = [k for k, line in enumerate(lines) if line.endswith("─") and "/" in line[:6]]
        assert rules, preset
        for line in lines:
            assert display_width(line) <= 80, line
            if "──" in line:
                assert "… ─" not in line and "·… " not in line, line  # never cut mid-formula
        # the softmax's formula is whole, on the line of its rule
        formula = "A = softmax(Q·K_cacheᵀ" if preset == "decode" else "A = softmax(Q·Kᵀ / √d_k"
        assert any(line.lstrip().startswith(formula) and line.endswith("─") for line in lines), (
            preset
        )


def test_a_wide_score_table_uses_the_width_it_has():
    import random

    r = random.Random(1)

    def matrix(rows: int) -> list[list[int]]:
        return [[r.randint(-3, 3) for _ in range(4)] for _ in range(rows)]

    doc = {"x": matrix(12), "wq": matrix(4), "wk": matrix(4), "wv": matrix(4)}
    text = _run("-", "--stages", "scores", columns=80, input=json.dumps(doc))
    header = next(line for line in text.splitlines() if line.lstrip().startswith("Q·Kᵀ "))
    shown = [w for w in header.split() if w.startswith("t")]
    assert len(shown) >= 10, header  # it showed 6, leaving a third of the line empty
    assert len(header) <= 80
    table = [line for line in text.splitlines() if line.startswith("  t1 ")]
    assert table and 80 - len(table[0]) < 8  # one more column would not have fitted


def test_prose_keeps_a_readable_measure_on_a_wide_terminal():
    text = _run("--preset", "sentence", columns=200)
    lines = text.splitlines()
    prose = [line for line in lines if line.startswith("  ") and not line.startswith("    ")]
    prose = [line for line in prose if line.strip() and line.strip()[0].isalpha()]
    assert max(len(line) for line in prose) <= 100
    assert max(len(line) for line in lines if line.endswith("─")) == 200  # rules span it all
    # the arithmetic is not prose: a long line of it stays whole
    wide = _run("--preset", "dk64", "--stages", "output", columns=200)
    assert max(len(line) for line in wide.splitlines()) > 100


def test_latex_sets_exponentials_in_prose_as_math_and_arithmetic_from_the_left():
    tex = in_process("explain", "--preset", "sentence", "--format", "latex").stdout
    assert "$e^{s}$ from overflowing" in tex
    assert "textasciicircum" not in tex  # no caret left in a sentence
    assert "\\begin{flalign*}\n& Q[{1},{1}] = 1\\times 1 + 2\\times 0 = 1 && \\\\" in tex
    assert "align*}" not in tex.replace("flalign*}", "")
    # a token is text, never math, whatever it holds
    doc = {"x": [[1, 0], [0, 1]], "wq": [[1, 0], [0, 1]], "wk": [[1, 0], [0, 1]]}
    doc |= {"wv": [[1, 0], [0, 1]], "tokens": ["e^x", "b"]}
    tex = in_process("explain", "-", "--format", "latex", input=json.dumps(doc)).stdout
    assert "e\\textasciicircum{}x" in tex


def test_one_minus_sign_for_numbers_in_every_format(cli):
    """A number's sign is ASCII '-' in every table, formula and arithmetic line, -∞ included
    (prose may still say −∞): no '−148' beside '-∞', and a number copied out reads back."""
    for fmt in ("txt", "markdown", "html"):
        out = cli("explain", "--preset", "alibi", "--format", fmt).stdout
        assert "-∞" in out and "-0.5" in out, fmt
        for line in out.splitlines():
            numbers = re.findall(r"(?<![\w)])−(?=\d)", line)  # a sign, not an operator
            assert not numbers, (fmt, line)


def test_txt_is_a_document_of_100_columns_on_standard_output_as_in_a_file(tmp_path):
    """`--format txt` is laid out for the page wherever it goes, whatever the terminal's width:
    only `table` (and --step) follow the terminal."""
    from qkvcalc.render.text import display_width

    saved = tmp_path / "lesson.txt"
    assert in_process("explain", "--preset", "sentence", "-o", str(saved)).returncode == 0
    trained = tmp_path / "trained.txt"
    train = ("train", "--preset", "learn", "--steps", "3")
    for columns in (40, 100, 200):
        env = {"COLUMNS": str(columns)}
        shown = in_process("explain", "--preset", "sentence", "-f", "txt", env=env)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == saved.read_text(encoding="utf-8")
        assert max(display_width(line) for line in shown.stdout.splitlines()) == 100
        learned = in_process(*train, "-f", "txt", env=env)
        assert learned.returncode == 0, learned.stderr
        if columns == 40:
            trained.write_text(learned.stdout, encoding="utf-8")
        assert learned.stdout == trained.read_text(encoding="utf-8")
    table = in_process("explain", "--preset", "sentence", env={"COLUMNS": "60"})
    assert max(display_width(line) for line in table.stdout.splitlines()) == 60
