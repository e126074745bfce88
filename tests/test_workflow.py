"""Small things an engineer runs into: the torch layout's weights labelled as what they are, a
preset's X overridden, an edited copy of a preset, --format txt, and the Korean --help wrapped
by display width. What a command prints runs in this process; --output's file and the Korean
--help (its words are chosen as the program starts) run as real processes."""

from __future__ import annotations

import json
import unicodedata

import pytest

from tests.conftest import in_process, run_qkvcalc

DOC_WEIGHTS = ["--wq", "1 0; 0 1", "--wk", "1 1; 0 1", "--wv", "1 0; 1 1"]


def json_of(*args: str) -> dict:
    result = in_process("explain", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def stage(doc: dict, sid: str, head=None) -> dict:
    return next(s for s in doc["stages"] if s["id"] == sid and s["head"] == head)


# ---- --layout torch -------------------------------------------------------------------------


def test_torch_layout_labels_the_weight_it_shows_as_the_transpose():
    rows = json_of("--x", "1 2; 0 1", *DOC_WEIGHTS)
    torch = json_of("--x", "1 2; 0 1", *DOC_WEIGHTS, "--layout", "torch")
    assert stage(rows, "q")["formula"] == "Q = X·W_Q"
    assert stage(torch, "q")["formula"] == "Q = X·W_Qᵀ"
    assert stage(torch, "k")["formula"] == "K = X·W_Kᵀ"
    assert any("as PyTorch stores it" in note for note in stage(torch, "q")["notes"])
    # X = [[1, 2], [0, 1]] and W_K = [[1, 1], [0, 1]]: X·W_K = [[1, 3], [0, 1]] in the rows
    # layout, X·W_Kᵀ = [[3, 2], [1, 1]] in the torch layout
    assert stage(rows, "k")["value"] == [[1.0, 3.0], [0.0, 1.0]]
    assert stage(torch, "k")["value"] == [[3.0, 2.0], [1.0, 1.0]]
    table = in_process("explain", "--x", "1 2", *DOC_WEIGHTS, "--layout", "torch").stdout
    assert "W_Kᵀ" in table


def test_torch_layout_labels_w_o_too():
    doc = json_of(
        "--x", "1 2; 0 1", *DOC_WEIGHTS, "--wo", "1 2; 0 1", "--layout", "torch", "--lang", "ko"
    )
    final = stage(doc, "output")
    assert final["formula"] == "output = concat·W_Oᵀ"
    assert any("PyTorch가 저장하는 방식" in note for note in final["notes"])


# ---- a preset's X overridden --------------------------------------------------------------


def test_overriding_a_presets_x_drops_tokens_that_no_longer_fit():
    # said on stderr: a message about what the command line did, not part of the document
    doc = json_of("--preset", "doc", "--x", "1 2; 3 4")
    assert doc["problem"]["tokens"] == ["t1", "t2"] and doc["warnings"] == []
    table = in_process("explain", "--preset", "doc", "--x", "1 2; 3 4", "--detail", "brief")
    assert table.returncode == 0 and "do not fit" not in table.stdout
    [said] = table.stderr.splitlines()
    assert said.startswith("warning: ") and "tokens (1) do not fit the 2 rows of --x" in said
    ko = in_process("explain", "--preset", "doc", "--x", "1 2; 3 4", "--lang", "ko")
    assert ko.returncode == 0 and "맞지 않아" in ko.stderr and "맞지 않아" not in ko.stdout


def test_the_readmes_npy_example_says_the_dropped_tokens_on_stderr(tmp_path):
    import numpy as np

    np.save(tmp_path / "x.npy", [[1.0, 0.0], [0.5, 2.0]])  # README, "Arrays, and some stages only"
    shown = in_process("explain", "--preset", "sentence", "--x", str(tmp_path / "x.npy"))
    assert shown.returncode == 0 and "t1" in shown.stdout and "dropped" not in shown.stdout
    assert "tokens (3) do not fit the 2 rows of --x" in shown.stderr


def test_tokens_that_still_fit_or_are_given_stay():
    doc = json_of("--preset", "sentence", "--x", "1 0; 0 1; 1 1")
    assert doc["problem"]["tokens"] == ["I", "love", "cats"] and doc["warnings"] == []
    doc = json_of("--preset", "doc", "--x", "1 2; 3 4", "--tokens", "a b")
    assert doc["problem"]["tokens"] == ["a", "b"] and doc["warnings"] == []
    bad = in_process("explain", "--preset", "doc", "--x", "1 2; 3 4", "--tokens", "a b c")
    assert (
        bad.returncode == 2 and "tokens is 3, but the number of rows of X is n = 2" in bad.stderr
    )  # given: checked


# ---- an edited copy of a preset ---------------------------------------------------------------


def test_an_edited_copy_is_not_announced_as_the_preset(tmp_path):
    shown = in_process("presets", "show", "sentence").stdout
    copy = tmp_path / "copy.json"
    copy.write_text(shown, encoding="utf-8")
    edited = tmp_path / "mine.json"
    edited.write_text(shown.replace('"causal"', '"none"'), encoding="utf-8")
    assert json_of(str(copy))["problem"].get("preset") == "sentence"
    assert "preset sentence" in in_process("explain", str(copy)).stdout
    assert "preset" not in json_of(str(edited))["problem"]
    edited_shown = in_process("explain", str(edited)).stdout
    assert "preset sentence:" not in edited_shown and "edited from preset sentence" in edited_shown
    assert "(preset sentence)" not in in_process("explain", str(edited), "-f", "torch").stdout


def test_a_copy_with_other_shapes_or_kinds_of_values_is_not_the_preset(tmp_path):
    doc = json.loads(in_process("presets", "show", "sentence").stdout)
    for change in ({"x": [[1, 2, 0], [0, 1, 0], [1, 1, 0]]}, {"mask": [[1, 0, 0]] * 3}):
        path = tmp_path / "copy.json"
        wq = [[1, 0], [0, 1], [0, 0]] if "x" in change else doc["wq"]
        wk = [[1, 1], [0, 1], [0, 0]] if "x" in change else doc["wk"]
        wv = [[1, 0], [1, 1], [0, 0]] if "x" in change else doc["wv"]
        path.write_text(json.dumps({**doc, **change, "wq": wq, "wk": wk, "wv": wv}))
        assert "preset" not in json_of(str(path))["problem"], change


def test_the_same_problem_written_differently_is_still_the_preset(tmp_path):
    """1.0 for 1 and defaults written out: the numbers and options
    are the preset's, so it is announced (a JSON trace's "input" writes a preset this way)."""
    doc = json.loads(in_process("presets", "show", "sentence").stdout)
    same = {
        **doc,
        "x": [[float(v) for v in row] for row in doc["x"]],
        "heads": 1,
        "kv_heads": 1,
        "layout": "rows",
    }
    path = tmp_path / "same.json"
    path.write_text(json.dumps(same))
    assert json_of(str(path))["problem"].get("preset") == "sentence"
    path.write_text(json.dumps({**same, "x": [[1.0, 0.5], *doc["x"][1:]]}))
    assert "preset" not in json_of(str(path))["problem"]


def test_a_name_of_ones_own_is_shown_but_not_as_a_preset(tmp_path):
    """An extracted layer or a file of one's own names itself: shown above the stages and as
    problem.name, never as 'preset …'."""
    doc = {**json.loads(in_process("presets", "show", "doc").stdout), "name": "tiny-llama L1"}
    doc["description"] = "layer 1 of a tiny model"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(doc))
    problem = json_of(str(path))["problem"]
    assert problem.get("name") == "tiny-llama L1" and "preset" not in problem
    shown = in_process("explain", str(path)).stdout
    assert "tiny-llama L1: layer 1 of a tiny model" in shown and "preset tiny" not in shown
    torch = in_process("explain", str(path), "-f", "torch").stdout
    # a name from the input is a string literal, never on the first two lines (issue 20)
    assert "problem_name = 'tiny-llama L1'" in torch and "(preset" not in torch
    assert "tiny" not in "".join(torch.splitlines(keepends=True)[:2])


def test_a_preset_changed_by_an_option_is_not_announced_either():
    assert "preset" not in json_of("--preset", "sentence", "--mask", "none")["problem"]
    assert json_of("--preset", "sentence", "--format", "json")["problem"]["preset"] == "sentence"


# ---- --format txt -----------------------------------------------------------------------------


def test_format_txt_is_what_output_txt_writes(tmp_path):
    target = tmp_path / "lesson.txt"
    written = run_qkvcalc("explain", "--preset", "sentence", "--output", str(target))
    assert written.returncode == 0, written.stderr
    shown = run_qkvcalc("explain", "--preset", "sentence", "--format", "txt")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == target.read_text(encoding="utf-8")
    assert "\x1b[" not in shown.stdout
    other = tmp_path / "lesson.md"
    run_qkvcalc("explain", "--preset", "doc", "--format", "txt", "--output", str(other))
    assert other.read_text(encoding="utf-8").startswith("qkvcalc — ")


# ---- the Korean --help -----------------------------------------------------------------------


def columns(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


@pytest.mark.parametrize("args", [[], ["explain"], ["quiz"], ["new"], ["presets"]])
@pytest.mark.parametrize("width", [60, 80])
def test_korean_help_fits_the_terminal_by_display_width(args, width):
    result = run_qkvcalc(*args, "--help", env={"QKVCALC_LANG": "ko", "COLUMNS": str(width)})
    assert result.returncode == 0, result.stderr
    wide = [line for line in result.stdout.splitlines() if columns(line) > width]
    # an option's name and its choices are one unbreakable word (--format <table|json|…>)
    assert all(line.lstrip().startswith("-") for line in wide), wide
    assert any(columns(line) > 0.8 * width for line in result.stdout.splitlines())


def test_an_edited_preset_says_where_it_started_both_languages():
    """An edited preset is not announced as the preset, and does not lose where it came from:
    'edited from preset sentence' in the header and problem.edited_from in JSON, the preset's
    own description and reference (which speak of its numbers) left out; a JSON trace of it
    runs again the same."""
    shown = in_process("explain", "--preset", "sentence", "--mask", "none").stdout
    assert "edited from preset sentence" in shown and "preset sentence:" not in shown
    assert "Where the numbers come from" not in shown
    ko = in_process("explain", "--preset", "sentence", "--mask", "none", "--lang", "ko").stdout
    assert "프리셋을 고친 문제(원래 프리셋: sentence)" in ko
    trace = json_of("--preset", "sentence", "--mask", "none")
    assert trace["problem"]["edited_from"] == "sentence" and "preset" not in trace["problem"]
    assert trace["input"]["edited_from"] == "sentence" and "name" not in trace["input"]
