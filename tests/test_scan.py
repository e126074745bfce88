"""A large JSON input refused by its lengths from its outline (qkvcalc.input.scan): the same
message the whole parse gives, in a small multiple of the file's size.

The outline is only taken for inputs of megabytes; here its thresholds are lowered so that
documents of a few hundred bytes go through it, and every refusal it gives is compared with
the one the document gets when it is parsed whole (the way every input was read before).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qkvcalc.errors import QkvcalcError
from qkvcalc.input import scan
from qkvcalc.input.problem import Problem
from qkvcalc.input.sources import gather

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the outline needs possessive quantifiers (Python 3.11)"
)


@pytest.fixture
def small(monkeypatch):
    """The outline for every input, and any array of 16 bytes or more stood in for."""
    monkeypatch.setattr(scan, "LARGE", 0)
    monkeypatch.setattr(scan, "LONG", 16)
    monkeypatch.setattr(scan, "PIECE", 7)  # the checks split the arrays into many pieces


def outcome(path: Path, inline: dict[str, str], outlined: bool) -> tuple[str, str]:
    """('refused', message) or ('ok', ''), with or without the outline's check first."""

    def validate(doc):
        return Problem.from_mapping(doc)

    try:
        doc = gather(
            str(path), None, inline, io.BytesIO(), True, notes=[],
            validate=validate if outlined else None,
        )  # fmt: skip
        validate(doc)
    except QkvcalcError as err:
        return "refused", err.message("en")
    return "ok", ""


def _matrix(rng, rows: int, cols: int) -> list[list[float]]:
    return rng.integers(-9, 9, size=(rows, cols)).astype(float).round(1).tolist()


def _random_doc(rng) -> tuple[dict, dict[str, str]]:
    """Shapes that mostly meet, and sometimes do not: X, the weights, tokens, a mask, key
    padding, heads, a loss (attend), a ragged row; now and then an inline option on top."""
    n, d, dk = (int(v) for v in rng.integers(1, 6, size=3))

    def off(v: int) -> int:  # now and then one more or one fewer
        return int(v + rng.integers(-1, 2)) if rng.random() < 0.25 else v

    doc: dict = {
        "x": _matrix(rng, n, off(d)),
        "wq": _matrix(rng, off(d), dk),
        "wk": _matrix(rng, off(d), off(dk)),
        "wv": _matrix(rng, d, int(rng.integers(1, 5))),
    }
    if rng.random() < 0.3:
        doc["tokens"] = [f"t{i}" for i in range(off(n))]
    if rng.random() < 0.2:
        doc["mask"] = rng.integers(0, 2, size=(off(n), off(n))).tolist()
    if rng.random() < 0.2:
        doc["key_padding"] = [1] * off(n)
    if rng.random() < 0.2:
        doc["heads"] = int(rng.integers(1, 4))
    if rng.random() < 0.15:
        doc["attend"] = [1] * off(n)
    if rng.random() < 0.1:
        doc["x"][-1] = doc["x"][-1] + [1.0]  # a ragged row
    inline = {}
    if rng.random() < 0.2:
        inline["wq"] = "; ".join(" ".join("1" for _ in range(dk)) for _ in range(d))
    return doc, inline


def test_every_refusal_from_the_outline_is_the_whole_parse_s(small, tmp_path, monkeypatch):
    """400 documents: whenever the outline refuses one, the whole parse refuses it with the
    same message; when it does not, the outcome is the whole parse's own."""
    refused: list[str] = []
    check = scan.Outline.check

    def counted(self, validate, doc):
        try:
            check(self, validate, doc)
        except QkvcalcError as err:
            refused.append(err.msg.key)
            raise

    monkeypatch.setattr(scan.Outline, "check", counted)
    rng = np.random.default_rng(41)
    for k in range(400):
        doc, inline = _random_doc(rng)
        path = tmp_path / f"{k}.json"
        path.write_text(json.dumps(doc))
        whole = outcome(path, inline, outlined=False)
        assert outcome(path, inline, outlined=True) == whole, (doc, inline)
    assert len(refused) > 40, refused  # the outline itself refused these (and said the same)
    assert {"shape.weight_rows", "matrix.ragged", "tokens.count", "mask.shape"} <= set(refused)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("row", "expect"),
    [
        ("1, 2,, 3", "Expecting value"),
        ("1, 02, 3", "Expecting ',' delimiter"),
        ("1, 2 3, 4", "Expecting ',' delimiter"),
        ("1, 2, 3,", "Expecting value"),
        ("1, 2., 3", "Expecting ',' delimiter"),
        ("1, 1e400, 3", "X[1,12]: inf"),
        ("1, " + "9" * 400 + ", 3", "X[1,12]: 9999"),
    ],
    ids=["two-commas", "leading-zero", "no-comma", "comma-last", "bare-point", "inf", "huge"],
)
def test_a_long_row_that_is_not_json_gets_the_json_message(small, tmp_path, row, expect):
    """X's width is wrong for W_Q whatever its numbers; but a row that is not JSON is said to
    be so (by the whole parse: line and column), not counted as if it were; and a number
    beyond float64 is named by its cell, as the whole parse names it first."""
    long_row = ", ".join(["1.5"] * 10) + ", " + row
    path = _write(
        tmp_path / "bad.json", f'{{"x": [[{long_row}]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}}'
    )
    kind, message = outcome(path, {}, outlined=True)
    assert kind == "refused" and expect in message, message
    assert (kind, message) == outcome(path, {}, outlined=False)


@pytest.mark.parametrize(
    "tokens",
    ['"a\\"b"', '"tab\there"', '"a", 1, "b"'],
    ids=["escaped-quote", "control-character", "a-number-among-names"],
)
def test_names_that_are_not_what_was_counted_get_the_whole_parse_s_message(small, tmp_path, tokens):
    names = ", ".join(f'"name{i}"' for i in range(20))
    text = (
        f'{{"x": [[1], [2]], "wq": [[1]], "wk": [[1]], "wv": [[1]], "tokens": [{names}, {tokens}]}}'
    )
    path = _write(tmp_path / "names.json", text)
    assert outcome(path, {}, outlined=True) == outcome(path, {}, outlined=False)


def test_brackets_inside_a_string_are_never_taken_for_an_array(small, tmp_path):
    """A name holding '[1, 2, 3, …]' stays the string it is: the outline reads strings whole."""
    inner = "[" + ", ".join(str(i) for i in range(40)) + "]"
    x = [list(range(20))]
    doc = {"name": inner, "x": x, "wq": [[1]], "wk": [[1]], "wv": [[1]], "tokens": "a b"}
    data = json.dumps(doc).encode()
    found = scan.outline(data)
    assert found is not None and found.doc["name"] == inner
    assert [long.kind for long in found.longs] == ["matrix"]
    path = _write(tmp_path / "named.json", data.decode())
    assert outcome(path, {}, outlined=True) == outcome(path, {}, outlined=False)


def test_a_matrix_of_equal_rows_is_stood_in_for_by_a_broadcast_array(small):
    rows = [[float(i + j) for j in range(7)] for i in range(5)]
    data = json.dumps({"X": rows, "mask": rows, "tokens": [f"w{i}" for i in range(9)]}).encode()
    found = scan.outline(data)
    assert found is not None
    x, mask, tokens = found.doc["X"], found.doc["mask"], found.doc["tokens"]
    assert isinstance(x, np.ndarray) and x.shape == (5, 7) and not x.flags.writeable
    assert x.strides == (0, 0)  # no number stored: one zero, broadcast
    assert [len(row) for row in mask] == [7] * 5 and isinstance(mask, list)  # not a matrix field
    assert len(tokens) == 9
    assert all(scan._holds(data, long) for long in found.longs)


def test_rows_are_counted_a_block_at_a_time_as_a_whole(monkeypatch):
    rng = np.random.default_rng(7)
    rows = [rng.integers(0, 9, size=int(rng.integers(1, 60))).tolist() for _ in range(300)]
    text = json.dumps(rows).encode()
    monkeypatch.setattr(scan, "BLOCK", 64)  # blocks of a few rows, and rows longer than a block
    long = scan._measure(text, "matrix", 0, len(text))
    assert long.widths is not None and long.widths.tolist() == [len(r) for r in rows]


# ---- the real program, its memory measured ----------------------------------------------------


def _refused_with_peak(
    path: Path, command: str = "explain"
) -> tuple[subprocess.CompletedProcess, int]:
    """`qkvcalc COMMAND PATH` (COMMAND may hold options: "check --stages FILE")."""
    from tests.test_hostile_surfaces import run_measured

    return run_measured(*command.split(), str(path))


def _repeat(path: Path, head: str, item: str, count: int, tail: str) -> Path:
    with path.open("w") as out:
        out.write(head)
        for left in range(count, 0, -1_000_000):
            out.write(("," if left != count else "") + ",".join([item] * min(left, 1_000_000)))
        out.write(tail)
    return path


@pytest.fixture(scope="module")
def floor_kb(tmp_path_factory) -> int:
    """The peak of a refusal of a few bytes: the interpreter, numpy and qkvcalc loaded."""
    path = tmp_path_factory.mktemp("floor") / "tiny.json"
    path.write_text('{"x": [[1.5, 1.5]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}')
    proc, peak = _refused_with_peak(path)
    assert proc.returncode == 2, proc.stderr
    return peak


WEIGHTS = '], "wq": [[1]], "wk": [[1]], "wv": [[1]]}'


def _row(path: Path) -> Path:
    return _repeat(path, '{"x": [[', "1.5", 8_000_000, "]" + WEIGHTS)


def _rows(path: Path) -> Path:
    return _repeat(path, '{"x": [', "[" + ",".join(["1.5"] * 4000) + "]", 2000, WEIGHTS)


def _names(path: Path) -> Path:
    head = '{"x": [[1], [2]], "wq": [[1]], "wk": [[1]], "wv": [[1]], "tokens": ['
    return _repeat(path, head, '"ab"', 4_000_000, "]}")


ROW_WIDTH = "the width of X (its number of columns) is 8000000"
NAMES = "the number of names in tokens is 4000000"


@pytest.mark.parametrize(
    ("command", "make", "expect"),
    [
        ("explain", _row, ROW_WIDTH),
        ("explain", _rows, "the width of X (its number of columns) is 4000"),
        ("explain", _names, NAMES),
        ("quiz", _row, ROW_WIDTH),
        ("train", _row, ROW_WIDTH),
        ("studio", _row, ROW_WIDTH),
        ("check --stages presets/doc.json", _row, ROW_WIDTH),
    ],
    ids=["row", "rows", "names", "quiz-row", "train-row", "studio-row", "check-stages-row"],
)
def test_a_large_input_is_refused_by_its_lengths_in_a_small_multiple_of_its_size(
    tmp_path, floor_kb, command, make, expect
):
    """8 million numbers in one row of X (32 MB), 2,000 rows of 4,000, 4 million names for
    2 rows (20 MB). The whole parse held a Python object per number or name: 12 and 16 times
    the file's size above the floor (1.16 GB for 96 MB of `1.5,`). From the outline, the
    refusal's peak above the floor stays under 4 times the file's size (measured: 1.2 times
    for the numbers, 3 times for the names, whose stand-in is a list: 8 bytes a name of 5)."""
    from tests.test_hostile import assert_one_clean_message

    path = make(tmp_path / "big.json")
    size_kb = path.stat().st_size // 1000
    proc, peak = _refused_with_peak(path, command)
    assert_one_clean_message(proc, expect)
    assert peak - floor_kb < 4 * size_kb, (command, make.__name__, peak, floor_kb, size_kb)
