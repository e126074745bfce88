"""Lengths before numbers: a large JSON input refused by its shapes without a Python object per
number.

`json.loads` makes an object for every number and string of a document before anything can be
checked: 24 million numbers written as `1.5,` (96 MB, under --max-bytes) took 1.16 GB to be
told that X's width does not meet W_Q's, and 10 million token names of two letters 840 MB.

So, for a JSON input of more than LARGE bytes, an outline of it is read first:

1. One pass of a regular expression over the bytes finds, outside strings (a string is
   consumed whole, so a bracket inside one is never taken for an array), the long arrays:
   a flat array of numbers, an array of such arrays (a matrix), or a flat array of strings
   without escapes. Their lengths are counted from the bytes (commas, brackets and quotes),
   nothing converted.
2. The rest of the document, each long array replaced by a marker (a string holding a
   random nonce, which no input can guess), is parsed as JSON (a few kilobytes).
3. Each marker becomes a stand-in of the same lengths: a read-only broadcast array for a
   top-level matrix field of equal rows (Problem takes a read-only float64 array as it is: no
   number stored), lists sharing one row otherwise, a list of one name repeated for names (8
   bytes a name).
4. The caller merges the inline options in and validates the outline (Problem.from_mapping).
   Only a refusal that depends on lengths alone (LENGTH_KEYS) is taken from it, and only once
   every long array has been checked to be JSON holding the counted entries, each number
   finite as a float64 (json.loads on PIECE bytes at a time, each piece let go). Anything
   else (it is valid, or wrong in another way) and the document is parsed whole, as before,
   with the message that parse gives.

A refused document thus costs its bytes, a piece and the stand-ins (tests/test_scan.py: under
4 times its size above the interpreter's own); the values of a stand-in never reach a message
(the keys taken name shapes and counts only). A valid large input pays the pass too (about
0.9 s for 68 MB) before it is parsed whole. Python 3.10 has no outline (see _PIECES).
"""

from __future__ import annotations

import json
import re
import secrets
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.fields import MATRICES, known_key

LARGE = 4 << 20  # bytes: a smaller input is parsed as it is, at once
LONG = 1 << 16  # bytes: a shorter array stays in the outline as its text
MAX_TOKENS = 1_000_000  # pieces of the outline's pass (strings, brackets, runs); more: no outline
PIECE = 1 << 18  # bytes of a long array checked by json.loads at a time

# A refusal the outline may give: each names only lengths (shapes, counts), which the
# stand-ins have as the document does.
LENGTH_KEYS = frozenset(
    {
        "tokens.count",
        "mask.shape",
        "mask.padding_length",
        "matrix.ragged",
        "loss.shape",
        "loss.attend_count",
        "loss.attend_count_typed",
        "variant.length",
        "limits.input_elements",
        "limits.stage_elements",
    }
)
LENGTH_PREFIXES = ("shape.",)

# Possessive quantifiers (Python 3.11): a repetition that never gives back holds no state per
# entry (without them, sre kept 1.4 GB of backtracking for 10 million names). On Python 3.10
# there is no outline: a large input is parsed as it is, as before.
_WS = rb"[ \t\r\n]*+"
_NUMBERS = rb"\[[-+0-9.eE \t\r\n,]*+\]"
_MATRIX = rb"\[" + _WS + _NUMBERS + rb"(?:" + _WS + rb"," + _WS + _NUMBERS + rb")*+" + _WS + rb"\]"
_NAME = rb'"[^"\\]*+"'
_NAMES = rb"\[" + _WS + _NAME + rb"(?:" + _WS + rb"," + _WS + _NAME + rb")*+" + _WS + rb"\]"
_STRING = rb'"(?:[^"\\]++|\\.)*+"'
# one piece at a time, every byte in exactly one piece: the long forms first, a string whole
_PIECES = (
    re.compile(
        rb"(?P<matrix>" + _MATRIX + rb")|(?P<numbers>" + _NUMBERS + rb")|(?P<names>" + _NAMES
        + rb")|" + _STRING + rb'|[^"\[]++|["\[]',
        re.DOTALL,
    )
    if sys.version_info >= (3, 11)
    else None
)  # fmt: skip


@dataclass(frozen=True)
class Long:
    """A long array of the input, by its place in the bytes and its lengths."""

    kind: str  # matrix | numbers | names
    start: int
    end: int
    widths: np.ndarray | None = None  # a matrix: each row's count
    count: int = 0  # numbers, names: the entries

    def stand_in(self, matrix_field: bool) -> Any:
        if self.kind == "names":
            return ["\0"] * self.count
        if self.kind == "numbers":
            return [0] * self.count
        assert self.widths is not None
        widths = self.widths
        if matrix_field and len(widths) and (widths == widths[0]).all():
            return np.broadcast_to(np.float64(0), (len(widths), int(widths[0])))
        rows: dict[int, list[int]] = {}  # rows of one width share one list
        return [rows.setdefault(int(w), [0] * int(w)) for w in widths]


@dataclass(frozen=True)
class Outline:
    """A large JSON document with its long arrays stood in for (see the module's docstring)."""

    doc: dict[str, Any]
    longs: tuple[Long, ...]
    data: bytes | bytearray

    def check(self, validate: Callable[[dict[str, Any]], Any], doc: dict[str, Any]) -> None:
        """Run `validate` on `doc` (this outline's, merged with the inline options): its
        refusal is raised when it names lengths alone and the long arrays are what they were
        counted to be; any other outcome returns (the caller parses the document for real)."""
        try:
            validate(doc)
        except QkvcalcError as err:
            key = err.msg.key
            lengths = key in LENGTH_KEYS or key.startswith(LENGTH_PREFIXES)
            if lengths and all(_holds(self.data, long) for long in self.longs):
                raise
        except Exception:  # a stand-in met where its values matter: the document is parsed
            return


def outline(data: bytes | bytearray) -> Outline | None:
    """The outline of a large JSON object, or None: a small or odd input (not an object, not
    UTF-8, no long array, too many pieces), which is parsed as it is."""
    if len(data) < LARGE or _PIECES is None:
        return None
    parts: list[bytes] = []
    longs: dict[str, Long] = {}
    nonce = secrets.token_hex(8)
    at = 0
    for k, piece in enumerate(_PIECES.finditer(data)):
        if k > MAX_TOKENS:
            return None
        kind = piece.lastgroup
        if kind is None or piece.end() - piece.start() < LONG:
            continue
        long = _measure(data, kind, piece.start(), piece.end())
        if long is None:
            return None
        marker = f"\\u0000qkvcalc {nonce} {len(longs)}"
        parts += [bytes(data[at : piece.start()]), b'"', marker.encode(), b'"']
        longs[f"\0qkvcalc {nonce} {len(longs)}"] = long
        at = piece.end()
    if not longs:
        return None
    parts.append(bytes(data[at:]))
    try:
        from qkvcalc.input.parse import load_json

        doc = load_json(b"".join(parts))
    except QkvcalcError:
        return None
    if not isinstance(doc, dict):
        return None
    stood = {key: _replace(value, longs, known_key(key) in MATRICES) for key, value in doc.items()}
    return Outline(stood, tuple(longs.values()), data)


def _replace(value: Any, longs: dict[str, Long], matrix_field: bool) -> Any:
    if isinstance(value, str) and value in longs:
        return longs[value].stand_in(matrix_field)
    if isinstance(value, list):
        return [_replace(v, longs, False) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, longs, False) for k, v in value.items()}
    return value


def _measure(data: bytes | bytearray, kind: str, start: int, end: int) -> Long:
    """A long array's lengths, counted from its bytes without copying them (right for valid
    JSON, which _holds checks before a refusal is given)."""
    if kind == "names":
        return Long(kind, start, end, count=data.count(b'"', start, end) // 2)
    if kind == "numbers":
        commas = data.count(b",", start, end)  # none: one number, or nothing
        blank = commas == 0 and not bytes(data[start + 1 : end - 1]).strip()
        return Long(kind, start, end, count=0 if blank else commas + 1)
    opens = _positions(data, start + 1, end, ord("["))  # each row's [
    inside = _per_row(data, opens, end, ord(","))  # from a row's [ to the next row's [
    inside[:-1] -= 1  # the comma between two rows
    return Long(kind, start, end, widths=inside + 1)


BLOCK = 1 << 22  # bytes looked at at once (as numpy compares them, a byte each)


def _bytes(data: bytes | bytearray, start: int, end: int) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start)


def _positions(data: bytes | bytearray, start: int, end: int, byte: int) -> np.ndarray:
    """Where `byte` is in data[start:end], a block at a time (8 bytes per place found)."""
    found = [
        np.flatnonzero(_bytes(data, at, min(at + BLOCK, end)) == byte) + at
        for at in range(start, end, BLOCK)
    ]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _per_row(data: bytes | bytearray, starts: np.ndarray, end: int, byte: int) -> np.ndarray:
    """How many times `byte` is in each row (from a start to the next start, the last to
    `end`): short rows a block at a time, a long row alone, without widening its bytes."""
    bounds = np.append(starts, end)
    counts = np.empty(len(starts), dtype=np.int64)
    i = 0
    while i < len(starts):
        j = int(np.searchsorted(bounds, bounds[i] + BLOCK, side="right")) - 1
        j = min(max(j, i + 1), len(starts))
        if j == i + 1:
            counts[i] = data.count(bytes([byte]), int(bounds[i]), int(bounds[j]))
        else:
            flags = _bytes(data, int(bounds[i]), int(bounds[j])) == byte
            counts[i:j] = np.add.reduceat(flags, starts[i:j] - bounds[i], dtype=np.int64)
        i = j
    return counts


_BRACKETS = bytes.maketrans(b"[]", b"  ")


def _holds(data: bytes | bytearray, long: Long) -> bool:
    """Whether a long array is JSON and holds what was counted (numbers: each finite as a
    float64, so that no cell's own message would have come before one of lengths): json.loads
    a piece at a time (split at a comma between entries), each let go once counted."""
    want = int(long.widths.sum()) if long.widths is not None else long.count
    got = 0
    try:
        for piece in _pieces(data, long.start + 1, long.end - 1, long.kind == "names"):
            if long.kind == "matrix":
                piece = piece.translate(_BRACKETS)  # its rows' entries, one after another
            found = json.loads("[" + piece.decode("utf-8") + "]")
            if not found:  # nothing between two commas
                return False
            if long.kind != "names" and not np.isfinite(np.array(found, dtype=np.float64)).all():
                return False  # 1e400, or an integer past float64: its own message comes first
            got += len(found)
    except (ValueError, RecursionError, OverflowError):
        return False
    return got == want


def _pieces(data: bytes | bytearray, start: int, end: int, names: bool) -> Iterator[bytes]:
    """data[start:end] split at commas between entries, about PIECE bytes a piece. Between
    entries: any comma among numbers; among names (no escapes in them), one after an even
    count of quotes."""
    if start == end:
        return
    while True:
        cut = data.find(b",", min(start + PIECE, end), end)
        quotes = data.count(b'"', start, cut) if names and cut >= 0 else 0
        while quotes % 2 and cut >= 0:  # inside a name: on to the next comma
            after = data.find(b",", cut + 1, end)
            quotes += data.count(b'"', cut, after) if after >= 0 else 0
            cut = after
        if cut < 0:
            yield bytes(data[start:end])
            return
        yield bytes(data[start:cut])
        start = cut + 1
