"""The command line, in-process (CliRunner) and as a real process: every way in, every error."""

from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import ROOT

DOC = (ROOT / "presets" / "doc.json").read_text()
SENTENCE = (ROOT / "presets" / "sentence.json").read_text()
INLINE = [
    "--x",
    "1 2; 0 1; 1 1",
    "--wq",
    "1 0; 0 1",
    "--wk",
    "1 1; 0 1",
    "--wv",
    "1 0; 1 1",
    "--tokens",
    "I love cats",
    "--mask",
    "causal",
]


def output_of(stdout: str) -> list:
    return json.loads(stdout)["output"]


def test_doc_preset_shows_the_worked_example(cli):
    result = cli("explain", "--preset", "doc")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    for text in (
        "Q = X·W_Q",
        "Q[1,2] = 1×0 + 2×1 = 2",
        "K[1,2] = 1×1 + 2×1 = 3",
        "V[1,1] = 1×1 + 2×1 = 3",
        "q₁·k₁ = 1×1 + 2×3 = 7",
        "7 / √2 = 4.9497",
        "e^(4.9497 − 4.9497) = 1",
        "1 / 1 = 1",
        "out[1,1] = 1×3 = 3",
    ):
        assert text in out, text
    assert result.stderr == ""


@pytest.mark.parametrize("how", ["file", "dash", "piped", "inline", "preset"])
def test_every_way_in_gives_the_same_numbers(cli, tmp_path, how):
    path = tmp_path / "p.json"
    path.write_text(SENTENCE)
    args = {
        "file": ["explain", str(path)],
        "dash": ["explain", "-"],
        "piped": ["explain"],
        "inline": ["explain", *INLINE],
        "preset": ["explain", "--preset", "sentence"],
    }[how]
    result = cli(*args, "--format", "json", input=SENTENCE if how in ("dash", "piped") else None)
    assert result.exit_code == 0, result.stderr
    out = output_of(result.stdout)
    assert out[0] == [3.0, 2.0]
    assert out[1] == pytest.approx([2.6088593650, 1.8044296825], abs=1e-9)


def test_inline_options_refine_a_preset(cli):
    result = cli("explain", "--preset", "sentence", "--mask", "none", "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["problem"]["mask"] == "none"
    assert "masked" not in [s["id"] for s in doc["stages"]]


def test_json_document_follows_the_schema(cli):
    doc = json.loads(cli("explain", "--preset", "sentence", "-f", "json").stdout)
    assert doc["schema"] == "qkvcalc.trace/1"
    assert doc["problem"] == {
        **doc["problem"],
        "n": 3,
        "m": 3,
        "d_model": 2,
        "d_k": 2,
        "d_v": 2,
        "heads": 1,
        "kv_heads": 1,
        "mask": "causal",
        "tokens": ["I", "love", "cats"],
    }
    assert doc["problem"]["scale"] == pytest.approx(0.7071067811865476)
    ids = [s["id"] for s in doc["stages"]]
    assert ids == [
        "x",
        "q",
        "k",
        "v",
        "kt",
        "scores",
        "scaled",
        "masked",
        "exp",
        "weights",
        "output",
    ]
    masked = next(s for s in doc["stages"] if s["id"] == "masked")
    assert masked["value"][0][1] == "-inf"
    for stage in doc["stages"]:
        assert {"id", "head", "title", "formula", "shape", "value", "notes"} <= set(stage)
        assert stage["head"] is None
    assert doc["output"] == doc["stages"][-1]["value"]
    assert doc["warnings"] == []


def test_json_is_strict(cli):
    text = cli("explain", "--preset", "padding", "-f", "json").stdout
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))


def test_precision_sets_decimals_and_integers_stay_integers(cli):
    out = cli("explain", "--preset", "doc", "--precision", "2").stdout
    assert "7 / √2 = 4.95" in out and "4.9497" not in out
    assert "q₁·k₁ = 1×1 + 2×3 = 7" in out


def test_brief_detail_leaves_out_the_arithmetic(cli):
    out = cli("explain", "--preset", "doc", "--detail", "brief").stdout
    assert "Q·Kᵀ" in out and "q₁·k₁" not in out


def test_large_problem_leaves_arithmetic_out_with_a_note(cli):
    n = 20
    x = "; ".join(" ".join(str((i * j) % 3) for j in range(4)) for i in range(n))
    eye = "1 0 0 0; 0 1 0 0; 0 0 1 0; 0 0 0 1"
    result = cli("explain", "--x", x, "--wq", eye, "--wk", eye, "--wv", eye)
    assert result.exit_code == 0
    assert "Arithmetic left out: 400 cells" in result.stdout
    assert "of the rows and" in result.stdout and "Not shown" in result.stdout


def test_output_file_is_written_whole(cli, tmp_path):
    target = tmp_path / "out.json"
    result = cli("explain", "--preset", "doc", "--output", str(target))
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(target.read_text())["output"] == [[3.0, 2.0]]


def test_presets_list_and_show(cli):
    listing = cli("presets").stdout
    for name in ("doc", "sentence", "padding"):
        assert name in listing
    assert cli("presets", "list").stdout == listing
    korean = cli("presets", "--lang", "ko").stdout
    assert korean == cli("presets", "list", "--lang", "ko").stdout
    assert korean == cli("presets", "--lang", "ko", "list").stdout and "프리셋" in korean
    assert all(line == line.rstrip() for line in listing.splitlines())  # no padding in a pipe
    shown = cli("presets", "show", "sentence")
    assert shown.exit_code == 0
    assert json.loads(shown.stdout)["mask"] == "causal"
    missing = cli("presets", "show", "sentense")
    assert missing.exit_code == 2 and missing.stdout == ""
    assert "did you mean 'sentence'" in missing.stderr


@pytest.mark.parametrize("key", ["num_heads", "Heads", "n_heads"])
def test_an_inline_option_replaces_the_field_under_any_of_its_names(cli, key):
    doc = {"x": [1, 2], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]], "wv": [[1, 0], [1, 1]]}
    result = cli(
        "explain", "-", "--heads", "2", "--format", "json", input=json.dumps({**doc, key: 1})
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["problem"]["heads"] == 2


def test_a_missing_presets_folder_is_one_message(cli, monkeypatch, tmp_path):
    from qkvcalc.input import presets

    monkeypatch.setattr(presets, "_PACKAGE", tmp_path / "site-packages" / "qkvcalc")
    for args in (["presets"], ["explain", "--preset", "doc"], ["presets", "show", "doc"]):
        result = cli(*args)
        assert result.exit_code == 2 and result.stdout == "", args
        assert "presets folder is missing" in result.stderr, (args, result.stderr)


def test_version(cli):
    from qkvcalc import __version__

    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"qkvcalc {__version__}"


# ---- bad input: one message, the field, the shapes, the rule; exit 2; nothing on stdout ----

BAD = {
    "malformed JSON": ('{"x": [1, 2],, }', ["line 1, column 14"]),
    "truncated JSON": ('{"x": [[1, 2], [3', ["not valid JSON"]),
    "ragged rows": (
        '{"x": [[1, 2], [3]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}',
        ["X", "row 2 is 1 long but row 1 is 2 long"],
    ),
    "a non-number": (
        '{"x": [[1, "two"]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}',
        ["X[1,2]", "'two'", "1/2"],
    ),
    "NaN": ('{"x": [[1, NaN]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}', ["X[1,2]", "NaN"]),
    "shape that does not fit": (
        '{"x": [[1, 2], [0, 1], [1, 1]], "wq": [[1, 0], [0, 1], [1, 1]], '
        '"wk": [[1, 1], [0, 1]], "wv": [[1, 0], [1, 1]]}',
        ["W_Q is 3×2", "the width of X (its number of columns) is 2", "rows of W_Q must be 2"],
    ),
    "unknown key": (
        '{"x": [1, 2], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]], '
        '"wv": [[1, 0], [1, 1]], "maks": "causal"}',
        ["'maks'", "'mask'"],
    ),
    "mask of the wrong shape": (
        '{"x": [[1, 2], [0, 1]], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]], '
        '"wv": [[1, 0], [1, 1]], "mask": [[1, 0, 0], [1, 1, 0]]}',
        ["mask is 2×3", "2×2"],
    ),
    "empty matrix": ('{"x": [], "wq": [[1]], "wk": [[1]], "wv": [[1]]}', ["X is empty"]),
    "not an object": ("[1, 2, 3]", ["JSON object", "list"]),
    "duplicate key": (
        '{"x": [1], "x": [2], "wq": [[1]], "wk": [[1]], "wv": [[1]]}',
        ["'x' is given twice"],
    ),
    "two spellings of one key": (
        '{"x": [1], "wq": [[1]], "W_Q": [[1]], "wk": [[1]], "wv": [[1]]}',
        ["'W_Q'", "twice"],
    ),
    "a boolean": (
        '{"x": [[true, 1]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}',
        ["X[1,1]", "true/false"],
    ),
    "a mask value not 0/1": (
        '{"x": [1], "wq": [[1]], "wk": [[1]], "wv": [[1]], "mask": [[2]]}',
        ["mask", "1 (may attend) or 0"],
    ),
    "a null in a mask, said as JSON says it": (
        '{"x": [1], "wq": [[1]], "wk": [[1]], "wv": [[1]], "mask": [[null]]}',
        ["mask[1,1] is null:"],
    ),
    "heads given as true, said as JSON says it": (
        '{"x": [1], "wq": [[1]], "wk": [[1]], "wv": [[1]], "heads": true}',
        ["not true"],
    ),
    "a mask word in quotes, as JSON quotes it": (
        '{"x": [1], "wq": [[1]], "wk": [[1]], "wv": [[1]], "mask": "sometimes"}',
        ['"sometimes"'],
    ),
    "empty input": ("   ", ["the input is empty", '{"x": [1, 2]']),
    "not UTF-8": (b'{"x": [1], "tokens": ["\xff"]}', ["UTF-8", "0xff"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_teaches(cli, case):
    data, expected = BAD[case]
    result = cli("explain", "-", input=data)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    for text in expected:
        assert text in result.stderr, (text, result.stderr)


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--preset", "nope"], "no preset named 'nope'"),
        (["missing.json"], "no such file: missing.json"),
        (["--preset", "doc", "--x", "1 2; 3"], "row 2 is 1 long"),
        (["--preset", "doc", "--scale", "__import__('os')"], "not a number qkvcalc reads"),
        (["--preset", "doc", "--scale", "9**9**9"], "not a number qkvcalc reads"),
        (["--preset", "doc", "--heads", "3"], "do not split into heads = 3"),
        (["--preset", "doc", "--mask", "1 0"], "mask is 1×2 but the scores are 1×1"),
        (["--preset", "doc", "--mask", "sometimes"], "mask must be"),
        (["doc.json", "--preset", "doc"], "give one input"),
    ],
)
def test_bad_options_teach(cli, args, expected):
    result = cli("explain", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert expected in result.stderr, result.stderr


def test_a_real_process_reads_stdin_and_files(qkvcalc_proc, tmp_path):
    piped = qkvcalc_proc("explain", "--format", "json", input=SENTENCE)
    assert piped.returncode == 0, piped.stderr
    path = tmp_path / "p.json"
    path.write_text(SENTENCE)
    from_file = qkvcalc_proc("explain", str(path), "--format", "json")
    assert output_of(from_file.stdout) == output_of(piped.stdout)
    table = qkvcalc_proc("explain", "--preset", "doc")
    assert table.returncode == 0 and "q₁·k₁ = 1×1 + 2×3 = 7" in table.stdout
    assert "\x1b[" not in table.stdout  # NO_COLOR is honoured


def test_a_real_process_fails_cleanly(qkvcalc_proc):
    result = qkvcalc_proc(
        "explain", "-", input='{"x": [[1, 2], [3]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}'
    )
    assert result.returncode == 2 and result.stdout == ""
    assert "Traceback" not in result.stderr and "row 2" in result.stderr


def test_no_input_at_a_terminal_says_what_to_do():
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "qkvcalc", "explain"],
        cwd=str(ROOT),
        env={"COLUMNS": "100", "NO_COLOR": "1", "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"},
        encoding="utf-8",
        timeout=30,
    )
    child.expect("no input")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2


def test_python_dash_m_is_the_same_program(qkvcalc_proc):
    result = qkvcalc_proc("--help")
    assert result.returncode == 0 and "explain" in result.stdout and "presets" in result.stdout


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("--mask", "causl"), 'did you mean "causal"?'),
        (("--mask", "None "), None),  # a kind with a space and a capital is that kind
        (("--stages", "score"), "did you mean 'scores'?"),
        (("--stages", "wieghts"), "did you mean 'weights'?"),
    ],
)
def test_a_typo_of_a_mask_kind_or_a_stage_id_is_told_the_word_it_meant(cli, args, hint):
    result = cli("explain", "--preset", "sentence", *args)
    if hint is None:
        assert result.exit_code == 0
        return
    assert result.exit_code == 2 and result.stdout == ""
    assert hint in result.stderr


@pytest.mark.parametrize(
    ("typed", "meant"), [("1 2, 0 1", "1 2; 0 1"), ("1, 2 3", "1; 2 3"), ("1 2,0 1", "1 2; 0 1")]
)
def test_commas_between_groups_of_numbers_are_taken_for_rows_and_refused(typed, meant):
    """'1 2, 0 1' read as one row of four numbers would fail later at W_Q's rows, far from the
    typing that caused it: refused where it was typed, with the rows it looks like."""
    from tests.conftest import in_process, one_message

    weights = ("--wq", "1 0; 0 1", "--wk", "1 0; 0 1", "--wv", "1 0; 0 1")
    result = in_process("explain", "--x", typed, *weights)
    one_message(result, f"in --x: {typed!r}", f'"{meant}"', "not both")
    assert result.stderr.count("--x") == 1  # the option is named once, by the shared context
    for fine in ("1, 2; 0, 1", "1 2; 0 1", "1,2;0,1"):
        assert in_process("explain", "--x", fine, *weights).returncode == 0
    korean = in_process("explain", "--x", typed, *weights, "--lang", "ko")
    one_message(korean, f'"{meant}"', "쉼표")
