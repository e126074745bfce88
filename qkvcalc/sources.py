"""Where a problem comes from: a file, '-' (stdin), piped stdin, a preset, inline options.

One base document (a file, stdin or a preset) may be refined by inline options
(`--preset sentence --mask none`); inline options alone are a problem too.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

from qkvcalc import presets
from qkvcalc.errors import QkvcalcError
from qkvcalc.parse import MAX_BYTES, load_json, parse_inline, read_limited
from qkvcalc.problem import json_kind, known_key

TRACE_SCHEMA = "qkvcalc.trace/1"  # --format json's document; its "input" is the problem
INLINE_MATRICES = ("x", "wq", "wk", "wv", "wo", "mask")


def read_file(path: str, limit: int = MAX_BYTES) -> bytearray:
    file = Path(path)
    try:
        if file.is_file() and file.stat().st_size > limit:  # refused without reading it
            raise QkvcalcError("input.too_big", limit=limit)
        with file.open("rb") as stream:
            return read_limited(stream, limit)
    except FileNotFoundError:
        raise QkvcalcError("input.file_missing", path=path) from None
    except OSError as err:
        raise QkvcalcError("input.file_unreadable", path=path, reason=err.strerror or err) from None


def gather(
    source: str | None,
    preset: str | None,
    inline: dict[str, Any],
    stdin: IO[bytes],
    stdin_is_terminal: bool,
    limit: int = MAX_BYTES,
) -> dict[str, Any]:
    """The document the options describe, before validation (Problem.from_mapping)."""
    inline = {k: v for k, v in inline.items() if v is not None}
    sources = [name for name, on in (("SOURCE", source), ("--preset", preset)) if on]
    if len(sources) > 1:
        raise QkvcalcError("cli.two_sources", sources=", ".join(sources))

    doc: dict[str, Any] = {}
    given = False  # a document was given, even an empty one ({} is missing X …, not no input)
    if preset:
        doc, given = presets.load(preset), True
    elif source is not None:
        origin = "stdin" if source == "-" else source
        data = read_limited(stdin, limit) if source == "-" else read_file(source, limit)
        doc, given = _as_object(data, origin), True
    elif "x" not in inline and not stdin_is_terminal:
        data = read_limited(stdin, limit)
        if data.strip():
            doc, given = _as_object(data, "stdin"), True
    if not given and not inline:
        raise QkvcalcError("input.none")

    for key, text in inline.items():
        if key in INLINE_MATRICES or key == "tokens":
            try:
                value = parse_inline(text, key) if key != "tokens" else text
            except QkvcalcError as err:
                raise err.within("input.inline", option=key) from None
        else:
            value = text
        # an inline option replaces the document's field of the same meaning (W_Q, w_q, wq …)
        doc = {k: v for k, v in doc.items() if known_key(k) != key}
        doc[key] = value
    return doc


def _as_object(data: bytes | bytearray, origin: str) -> dict[str, Any]:
    try:
        doc = load_json(data)
    except QkvcalcError as err:
        raise err.within("input.from", origin=origin) from None
    if not isinstance(doc, dict):
        raise QkvcalcError("input.not_object", kind=json_kind(doc)).within(
            "input.from", origin=origin
        )
    if doc.get("schema") == TRACE_SCHEMA:  # a trace qkvcalc wrote: run its problem again
        problem = doc.get("input")
        if not isinstance(problem, dict):
            raise QkvcalcError("input.trace_without_input").within("input.from", origin=origin)
        left_out = [key for key, value in problem.items() if value is None]
        if left_out:  # --detail brief leaves out big matrices, in "input" too
            raise QkvcalcError("input.trace_brief", fields=", ".join(left_out)).within(
                "input.from", origin=origin
            )
        return problem
    return doc
