"""Where a problem comes from: a file, '-' (stdin), piped stdin, a preset, inline options.

One base document (a file, stdin or a preset) may be refined by inline options
(`--preset sentence --mask none`); inline options alone are a problem too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input import arrays, presets
from qkvcalc.input.edited import unless_edited
from qkvcalc.input.fields import LOSS, known_key
from qkvcalc.input.parse import MAX_BYTES, load_json, parse_inline, read_limited
from qkvcalc.labels import json_kind

TRACE_SCHEMA = "qkvcalc.trace/1"  # --format json's document; its "input" is the problem
INLINE_MATRICES = ("x", "wq", "wk", "wv", "wo", "mask", "target", "grad_output")


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
    notes: list[Msg] | None = None,
    validate: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Any]:
    """The document the options describe, before validation (Problem.from_mapping).

    What was changed on the way (a preset's tokens dropped because --x has another number of
    rows) is appended to `notes`, for the trace's warnings. With `validate` (the caller's
    Problem.from_mapping), a large JSON input whose lengths alone refuse it is refused from its
    outline (qkvcalc.input.scan), before a Python object is made for each of its numbers.
    """
    inline = {k: v for k, v in inline.items() if v is not None}
    sources = [name for name, on in (("SOURCE", source), ("--preset", preset)) if on]
    if len(sources) > 1:
        raise QkvcalcError("cli.two_sources", sources=", ".join(sources))
    losses = ["--" + key.replace("_", "-") for key in LOSS if key in inline]
    if len(losses) > 1:  # each would replace the other: one would win without a word
        raise QkvcalcError("cli.two_losses", options=", ".join(losses))

    doc: dict[str, Any] = {}
    given = False  # a document was given, even an empty one ({} is missing X …, not no input)
    if preset:
        doc, given = presets.load(preset), True
    elif source is not None:
        origin = "stdin" if source == "-" else source
        data = read_limited(stdin, limit) if source == "-" else read_file(source, limit)
        if validate is not None:
            _refuse_by_lengths(data, origin, inline, limit, validate)
        doc, given = _as_object(data, origin, limit), True
    elif "x" not in inline and not stdin_is_terminal:
        data = read_limited(stdin, limit)
        if data.strip():
            if validate is not None:
                _refuse_by_lengths(data, "stdin", inline, limit, validate)
            doc, given = _as_object(data, "stdin", limit), True
    if not given and not inline:
        raise QkvcalcError("input.none")
    return unless_edited(_merged(doc, inline, limit, notes))


def _refuse_by_lengths(
    data: bytearray, origin: str, inline: dict[str, Any], limit: int, validate: Callable[..., Any]
) -> None:
    """Raise the refusal a large JSON input gets from its lengths alone, read from its outline
    with the inline options merged in (qkvcalc.input.scan); return in every other case."""
    from qkvcalc.input import scan

    if arrays.kind_of(data) is not None:
        return
    found = scan.outline(data)
    if found is None:
        return
    try:
        doc = _merged(_problem_doc(found.doc, origin), inline, limit, None)
    except QkvcalcError:  # said again, as it was, by the real reading
        return
    found.check(validate, doc)


def _merged(
    doc: dict[str, Any], inline: dict[str, Any], limit: int, notes: list[Msg] | None
) -> dict[str, Any]:
    """The document with the inline options put in (each replaces the field it means)."""
    for key, text in inline.items():
        if key in INLINE_MATRICES or key == "tokens":
            try:
                if key != "tokens" and arrays.is_npy_path(text):  # --x x.npy
                    value = arrays.load_npy(read_file(text.strip(), limit), text.strip(), key)
                else:
                    value = parse_inline(text) if key != "tokens" else text
            except QkvcalcError as err:
                raise err.within("input.inline", option=key) from None
        else:
            value = text
        # an inline option replaces the document's field of the same meaning (W_Q, w_q, wq …;
        # a loss typed replaces the document's loss, whichever of the three keys it was)
        same = set(LOSS) if key in LOSS else {key}
        doc = {k: v for k, v in doc.items() if known_key(k) not in same}
        doc[key] = value
    if "x" in inline and "tokens" not in inline:
        _fit_tokens(doc, notes)
    return doc


def _rows(value: Any) -> int | None:
    """The rows of a matrix field as given (a flat list is one row); None if not a matrix."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) == 2 else 1 if len(shape) == 1 else None
    if isinstance(value, list | tuple) and value:
        return len(value) if isinstance(value[0], list | tuple) else 1
    return None


def _fit_tokens(doc: dict[str, Any], notes: list[Msg] | None) -> None:
    """--x replaced the base document's X: its tokens stay only if their count still fits."""
    key = next((k for k in doc if known_key(k) == "tokens"), None)
    if key is None:
        return
    tokens = doc[key]
    if not isinstance(tokens, str | list | tuple):
        return  # not tokens at all: Problem says so
    count = len(tokens.split()) if isinstance(tokens, str) else len(tokens)
    rows = _rows(doc["x"])
    if rows is None or count == rows:
        return
    del doc[key]
    if notes is not None:
        notes.append(Msg("warn.tokens_dropped", count=count, rows=rows))


def _names(err: QkvcalcError, origin: str) -> bool:
    """The message already names the file (an .npz's messages name it, or its member)."""
    said = (err.msg, *err.where)
    return any(str(m.params.get("origin", "")).startswith(origin) for m in said)


def _as_object(data: bytes | bytearray, origin: str, limit: int = MAX_BYTES) -> dict[str, Any]:
    kind = arrays.kind_of(data)
    if kind is not None:  # a numpy file: a .npz holds a whole problem, a .npy one matrix
        try:
            if kind == "npy":
                raise QkvcalcError("array.npy_as_source")
            return arrays.load_npz(data, origin, limit)
        except QkvcalcError as err:
            raise (
                err if _names(err, origin) else err.within("input.from", origin=origin)
            ) from None
    try:
        doc = load_json(data)
    except QkvcalcError as err:
        raise err.within("input.from", origin=origin) from None
    return _problem_doc(doc, origin)


def _problem_doc(doc: Any, origin: str) -> dict[str, Any]:
    """A JSON document as a problem: an object, or a trace qkvcalc wrote (its "input")."""
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
