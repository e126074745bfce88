"""From text to a document of the input format: JSON (file, stdin, preset) and inline matrices.

This layer reads bytes and returns plain Python values; Problem.from_mapping validates them.
Every failure is a QkvcalcError that says where (line and column, byte offset) and what to do.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.limits import MAX_BYTES

CHUNK = 1 << 20  # bytes read at a time


def read_limited(stream: IO[bytes], limit: int = MAX_BYTES) -> bytearray:
    """Read at most `limit` bytes, refusing a larger input before it is all in memory. Read a
    chunk at a time: memory follows what the input holds, not the limit (--max-bytes 1e12 on a
    300-byte file allocates nothing like a terabyte)."""
    data = bytearray()
    started = False  # its first chunk looked at (_check_start): once, not again every chunk
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - len(data)))
        if not chunk:
            return data  # a bytearray: a copy into bytes would double a 100 MB input
        data += chunk
        if len(data) > limit:
            raise QkvcalcError("input.too_big", limit=limit)
        if not started and len(data) >= CHUNK:  # more is coming: the start of anything at all?
            _check_start(data)
            started = True


# What an input can start with: JSON (a BOM and whitespace first, then a value's first
# character), or numpy's .npz (a zip) or .npy magic.
_JSON_START = b'{["-0123456789tfn'
_MAGICS = (b"PK\x03\x04", b"\x93NUMPY")


def _check_start(data: bytearray) -> None:
    """An input longer than one chunk whose first bytes can start nothing qkvcalc reads (the
    NUL bytes of /dev/zero, `yes`'s y, a megabyte of spaces) is refused then, not after
    --max-bytes of it is in memory (with --max-bytes raised, an endless stream grew without
    bound). Shorter inputs are left to the parsers, whose messages say more."""
    if data.startswith(_MAGICS):
        return
    head = bytes(data[:CHUNK]).removeprefix(b"\xef\xbb\xbf")
    body = head.lstrip(b" \t\r\n")
    if not body:
        raise QkvcalcError("input.blank_start", count=len(head))
    if body[0] not in _JSON_START:
        offset = len(data[:CHUNK]) - len(body)
        raise QkvcalcError("input.cannot_start", byte=f"0x{body[0]:02x}", offset=offset)


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for key, value in pairs:
        if key in doc:
            raise QkvcalcError("key.duplicate", key=key, canonical=key)
        doc[key] = value
    return doc


def load_json(data: bytes | bytearray | str) -> Any:
    """Decode JSON text strictly: UTF-8, no duplicate keys; absurd nesting is an error."""
    if isinstance(data, bytes | bytearray):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise QkvcalcError(
                "input.not_utf8", offset=err.start, byte=f"0x{data[err.start]:02x}"
            ) from None
    else:
        text = data
    if not text.strip():
        raise QkvcalcError("input.empty")
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as err:
        raise QkvcalcError("input.json", line=err.lineno, col=err.colno, reason=err.msg) from None
    except RecursionError:
        raise QkvcalcError("input.json_deep") from None
    except QkvcalcError:  # a duplicate key, from _reject_duplicates
        raise
    except ValueError as err:
        if "int_max_str_digits" in str(err) or "4300" in str(err):
            raise QkvcalcError("input.json_long_number", limit=4300) from None
        raise QkvcalcError("input.json_value", reason=str(err)[:120]) from None


_ROW_SPLIT = re.compile(r"[;\n]")
_CELL_SPLIT = re.compile(r"[\s,]+")


def parse_inline(text: str) -> Any:
    """'1 2; 3 4' (rows split by ';', numbers by spaces or commas) -> [['1', '2'], ['3', '4']].

    A JSON literal ('[[1, 2], [3, 4]]') is read as JSON; a bare word ('causal') stays a word.
    Numbers stay text here, so the safe number grammar reads them ('1/2', 'sqrt(2)').
    """
    stripped = text.strip()
    if stripped.startswith("["):
        return load_json(stripped)
    if re.fullmatch(r"[A-Za-z]+", stripped):
        return stripped
    rows = [r for r in (row.strip() for row in _ROW_SPLIT.split(stripped)) if r]
    if not rows:
        raise QkvcalcError("inline.grammar", text=text)
    for row in rows:  # '1 2, 0 1': groups of numbers split by commas look like rows
        groups = [g.strip() for g in row.split(",")]
        if len(groups) > 1 and any(re.search(r"\s", g) for g in groups):
            rows_meant = "; ".join(" ".join(g.split()) for g in groups)
            raise QkvcalcError("inline.comma_rows", text=text, rows=rows_meant)
    return [[c for c in _CELL_SPLIT.split(row) if c] for row in rows]
