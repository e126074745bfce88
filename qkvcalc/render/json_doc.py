"""The JSON rendering: the "qkvcalc.trace/1" document (docs/json-trace.md), strict JSON.

Numbers are full float64 (they round-trip); -inf, inf and NaN are the strings "-inf", "inf",
"nan". Titles and notes follow the language; ids, keys and numbers never do.

The document is written to a file object stage by stage (write_json): a stage's value goes out
a block of rows at a time, and a stage the engine keeps as a recipe (scaled, masked, exp,
weights) is computed a block of rows at a time too (Stage.value_rows), so the whole trace of a
real layer (60 million numbers) is never in memory as a document, as text or as a matrix.
trace_json builds the same document as a dict, for small traces and for tests.

"input" is the problem itself in the input format (the validated numbers, weights in the
"rows" layout, and the options), so that `qkvcalc explain trace.json` runs it again.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from qkvcalc.ops import features
from qkvcalc.render import RenderOptions
from qkvcalc.render.document import stage_heading

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem
    from qkvcalc.trace import Stage, Trace

SCHEMA = "qkvcalc.trace/1"

# Characters JSON may carry raw but a terminal or an encoder should not get: C1 controls (CSI),
# the Arabic letter mark and the other bidirectional controls and overrides, zero-width and
# line-separator characters, lone surrogates (which cannot be written as UTF-8), and the
# invisible tag characters (U+E0000–U+E007F, which can smuggle text past a reader). Written as
# \uXXXX escapes (a tag character as its surrogate pair); every other character stays as is.
_UNSAFE = re.compile(
    "[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff"
    "\U000e0000-\U000e007f]"
)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escape_unsafe(text: str) -> str:
    if text.isascii() and "\x7f" not in text:  # numbers and English: nothing to look for
        return text
    return _UNSAFE.sub(lambda m: _escape(m.group()), text)


def dumps(value: Any, indent: int | None = None, ascii_only: bool = False) -> str:
    """Strict JSON of qkvcalc's documents (the trace, the quiz report): UTF-8 text as is,
    the characters above escaped, no NaN or Infinity (numbers go through number_json).
    `ascii_only`: every non-ASCII character escaped, for an output that is not UTF-8."""
    if ascii_only:
        return json.dumps(value, ensure_ascii=True, allow_nan=False, indent=indent)
    return _escape_unsafe(json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent))


def number_json(value: float) -> float | str:
    """A number as strict JSON: itself when finite, else "-inf", "inf" or "nan"."""
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else "-inf" if value < 0 else "inf"


def matrix_json(value: np.ndarray) -> list[list[Any]]:
    if np.isfinite(value).all():
        return value.tolist()
    out = value.astype(object)
    out[np.isneginf(value)] = "-inf"
    out[np.isposinf(value)] = "inf"
    out[np.isnan(value)] = "nan"
    return [[v if isinstance(v, str) else float(v) for v in row] for row in out]


# With --detail brief, a stage of more cells than this has "value": null (its "shape" stays):
# a GPT-2-small layer's 60 score-sized stages would be 60 million numbers, about 1.3 GB of
# JSON. The final output (top-level "output") is always given in full.
BRIEF_VALUE_CELLS = 10_000


def _omitted(stage: Stage, opts: RenderOptions) -> bool:
    rows, cols = stage.shape
    return opts.detail == "brief" and rows * cols > BRIEF_VALUE_CELLS


def _stage_fields(stage: Stage, opts: RenderOptions) -> dict[str, Any]:
    """A stage's fields in the document's order, its value left as the Stage itself (written
    by rows when streamed, whole in trace_json)."""
    omitted = _omitted(stage, opts)
    words = stage_heading(stage, opts.lang)  # what every export says of it
    doc: dict[str, Any] = {
        "id": words.id,
        "head": words.head,
        "title": words.title,
        "formula": words.formula,
        "shape": list(words.shape),
        "value": None if omitted else stage,
        "notes": words.notes,
        "explanation": words.why,
    }
    if words.step is not None:
        doc["step"] = words.step
    if words.block is not None:
        doc["block"] = words.block
    if stage.error is not None:  # --dtype: the float64 twin, and how far the value is from it
        doc["float64"] = None if omitted or stage.twin is None else _Twin(stage)
        doc["error"] = {k: number_json(v) for k, v in stage.error._asdict().items()}
    if stage.exact is not None and not omitted:
        # "7/2", "7/√2", "-inf" where masked; null where a cell depends on an irrational input
        doc["exact"] = [[None if v is None else str(v) for v in row] for row in stage.exact]
    return doc


class _Twin:
    """A stage's float64 twin, written by rows as its value is (a recipe computes its rows)."""

    def __init__(self, stage: Stage) -> None:
        self.shape = stage.shape
        self.value_rows = stage.twin_rows
        self.whole = lambda: stage.twin_value


def stage_json(stage: Stage, opts: RenderOptions) -> dict[str, Any]:
    doc = _stage_fields(stage, opts)
    if doc["value"] is not None:
        doc["value"] = matrix_json(stage.value)
    if isinstance(doc.get("float64"), _Twin):
        doc["float64"] = matrix_json(doc["float64"].whole())
    return doc


def _problem(trace: Trace) -> dict[str, Any]:
    """problem_json, with the dtype and policy of a --dtype run."""
    doc = problem_json(trace.problem)
    if trace.precision is not None:
        doc["dtype"] = trace.precision.dtype
        doc["policy"] = trace.precision.policy
    return doc


def precision_json(trace: Trace, opts: RenderOptions) -> dict[str, Any] | None:
    """The --dtype summary: the first cell that turned inf or NaN (1-based), the stage that
    added most error (by its largest added_ulp), and the sentences that say why."""
    summary = trace.precision
    if summary is None:
        return None
    first = None
    if summary.first_nonfinite is not None:
        stage, head, (i, j) = summary.first_nonfinite
        first = {"stage": stage, "head": head, "cell": [i, j]}
    most = None if summary.most_added is None else summary.most_added[0]
    return {
        "dtype": summary.dtype,
        "policy": summary.policy,
        "first_nonfinite": first,
        "most_added": most,
        "notes": [note.text(opts.lang) for note in summary.notes],
    }


def problem_json(p: Problem) -> dict[str, Any]:
    problem: dict[str, Any] = {
        "n": p.n,
        "m": p.m,
        "d_model": p.d_model,
        "d_k": p.d_k,
        "d_v": p.d_v,
        "heads": p.heads,
        "kv_heads": p.kv_heads,
        "scale": p.scale,
        "mask": p.mask_kind,
        "tokens": list(p.tokens),
    }
    if p.key_padding is not None:
        problem["key_padding"] = p.key_padding.astype(int).tolist()
    if p.cross or not p.projected:
        problem["source_tokens"] = list(p.source_tokens)
    problem["layout"] = p.layout
    if p.decode is not None:
        problem["decode"] = p.decode
    if p.tiles is not None:
        problem["tiles"] = p.tiles
    if p.preset is not None:
        problem["preset"] = p.preset
    elif "name" in p.meta:
        problem["name"] = p.meta["name"]
    elif "edited_from" in p.meta:
        problem["edited_from"] = p.meta["edited_from"]
    return problem


# ---- "input": the problem again, in the input format ----------------------------------------

_INPUT_MATRICES = ("x", "source", "q", "k", "v", "wq", "wk", "wv", "wo")
_INPUT_VECTORS = ("bq", "bk", "bv", "bo")


def input_fields(p: Problem, opts: RenderOptions) -> dict[str, Any]:
    """The problem in the input format, its matrices left as Matrix (written by rows when
    streamed): what `qkvcalc explain` reads to run it again. Weights in the "rows" layout,
    whatever layout they were given in; options as validated. With --detail brief a matrix of
    more than BRIEF_VALUE_CELLS numbers is null, as a stage's value is (a GPT-2 layer's
    weights are 3 million numbers): such a trace says so when it is run again."""
    doc: dict[str, Any] = {}
    for name in _INPUT_MATRICES:
        matrix = getattr(p, name)
        if matrix is not None:
            big = opts.detail == "brief" and matrix.values.size > BRIEF_VALUE_CELLS
            doc[name] = None if big else matrix
    for name in _INPUT_VECTORS:
        vector = getattr(p, name)
        if vector is not None:
            doc[name] = [_input_number(v) for v in vector.values[0].tolist()]
    doc["heads"] = p.heads
    doc["kv_heads"] = p.kv_heads
    if p.scale_given is not None:
        doc["scale"] = p.scale_given.value
    if p.mask is not None:
        doc["mask"] = p.mask.astype(int).tolist()
    else:
        doc["mask"] = p.mask_kind
    if p.key_padding is not None:
        doc["key_padding"] = p.key_padding.astype(int).tolist()
    doc["tokens"] = list(p.tokens)
    if p.cross or (not p.projected and p.source_tokens != p.tokens):
        doc["source_tokens"] = list(p.source_tokens)
    doc["layout"] = "rows"
    doc.update(_variant_fields(p))
    if p.decode is not None:
        doc["decode"] = p.decode
    if p.tiles is not None:
        doc["tiles"] = p.tiles
    if p.dtype is not None:  # --dtype: the trace runs again in its dtype
        doc["dtype"] = p.dtype
    if p.policy is not None:
        doc["policy"] = p.policy
    if p.loss is not None:  # where a backward pass starts (attend 1-based, as it was given)
        if p.loss.kind == "attend":
            doc["attend"] = [t + 1 if t >= 0 else None for t in p.loss.attend]
        else:
            assert p.loss.matrix is not None
            doc[p.loss.kind] = p.loss.matrix
    doc.update(p.meta)  # name, description, reference: a preset stays itself
    return doc


def _variant_fields(p: Problem) -> dict[str, Any]:
    """Positions, the position encoding and the features, as the input format
    says them (only those the problem has), so that a trace of them runs again the same."""
    v = p.variants
    out: dict[str, Any] = {}
    if v.positions_given:
        out["positions"] = v.positions.tolist()
        out["key_positions"] = v.key_positions.tolist()
    if v.causal_align != "top-left":
        out["causal_align"] = v.causal_align
    if v.positional == "sinusoidal":
        out["positional"] = "sinusoidal"
    elif v.pe is not None:
        out["positional"] = matrix_json(v.pe)
    for feature, value in features.active(p):
        echo = feature.echo(value)
        if feature.keys:  # a feature of several keys: each of those it uses
            out.update({key: _echoed(given) for key, given in echo.items()})
        else:
            out[feature.name] = _echoed(echo)
    return out


def _input_number(value: float) -> float | str:
    return number_json(value)


def _echoed(value: Any) -> Any:
    """A feature's value as strict JSON: an array as lists, ±∞ and NaN as strings."""
    if isinstance(value, np.ndarray):
        if value.ndim == 1:
            return [number_json(float(x)) for x in value.tolist()]
        return [_echoed(part) for part in value] if value.ndim > 2 else matrix_json(value)
    if isinstance(value, float):
        return number_json(value)
    return value


def input_json(p: Problem, opts: RenderOptions) -> dict[str, Any]:
    from qkvcalc.input.cells import Matrix

    fields = input_fields(p, opts)
    return {k: matrix_json(v.values) if isinstance(v, Matrix) else v for k, v in fields.items()}


def trace_json(trace: Trace, opts: RenderOptions) -> dict[str, Any]:
    """The whole document as a dict: what write_json streams, built in memory at once."""
    return {
        "schema": SCHEMA,
        "problem": _problem(trace),
        "input": input_json(trace.problem, opts),
        "stages": [stage_json(stage, opts) for stage in trace.stages],
        "output": matrix_json(trace.output),
        "warnings": [w.text(opts.lang) for w in trace.warnings],
        **({} if trace.precision is None else {"precision": precision_json(trace, opts)}),
    }


# ---- streaming --------------------------------------------------------------------------------

BLOCK_CELLS = 1 << 16  # numbers per block of rows: a few MB of text and of Python floats


def _blocks(n_rows: int, n_cols: int) -> Iterator[list[int]]:
    step = max(1, BLOCK_CELLS // max(1, n_cols))
    for start in range(0, n_rows, step):
        yield list(range(start, min(n_rows, start + step)))


def _write_rows(
    out: IO[str], rows_of: Callable[[list[int]], np.ndarray], shape: tuple[int, int]
) -> None:
    """A matrix as JSON, `[[…], […]]`, one block of rows at a time: rows_of(indices) gives
    the block's rows. Exactly what json.dumps(matrix_json(whole)) writes."""
    out.write("[")
    for k, rows in enumerate(_blocks(*shape)):
        text = json.dumps(matrix_json(rows_of(rows)), allow_nan=False)  # numbers: ASCII
        out.write(text[1:-1] if k == 0 else ", " + text[1:-1])
    out.write("]")


def _write_object(out: IO[str], fields: dict[str, Any], ascii_only: bool) -> None:
    """A dict as json.dumps writes it ({"a": 1, "b": …}), a Stage or Matrix value streamed."""
    from qkvcalc.input.cells import Matrix

    out.write("{")
    for k, (key, value) in enumerate(fields.items()):
        out.write((", " if k else "") + dumps(key, ascii_only=ascii_only) + ": ")
        if isinstance(value, Matrix):
            _write_rows(out, value.values.__getitem__, value.values.shape)
        elif hasattr(value, "value_rows"):  # a Stage: its rows computed as they are written
            _write_rows(out, value.value_rows, value.shape)
        else:
            out.write(dumps(value, ascii_only=ascii_only))
    out.write("}")


def write_json(trace: Trace, opts: RenderOptions, out: IO[str], ascii_only: bool = False) -> None:
    """Write the document to `out`, one line per stage (readable in a pager), stage by stage
    and, inside a stage, block of rows by block of rows. `ascii_only`: escape every non-ASCII
    character (an output whose encoding is not UTF-8 still gets valid JSON)."""
    p = trace.problem

    def field(key: str, first: bool = False) -> None:
        out.write(("" if first else ",\n") + f"  {dumps(key)}: ")

    out.write("{\n")
    field("schema", first=True)
    out.write(dumps(SCHEMA))
    field("problem")
    out.write(dumps(_problem(trace), ascii_only=ascii_only))
    field("input")
    _write_object(out, input_fields(p, opts), ascii_only)
    field("stages")
    out.write("[")
    for k, stage in enumerate(trace.stages):
        out.write((",\n" if k else "\n") + "    ")
        _write_object(out, _stage_fields(stage, opts), ascii_only)
    out.write("\n  ]")
    field("output")
    output = trace.final
    _write_rows(out, output.value_rows, output.shape)
    field("warnings")
    out.write(dumps([w.text(opts.lang) for w in trace.warnings], ascii_only=ascii_only))
    if trace.precision is not None:
        field("precision")
        out.write(dumps(precision_json(trace, opts), ascii_only=ascii_only))
    out.write("\n}\n")


def render_json(trace: Trace, opts: RenderOptions) -> str:
    """The document as text (write_json into a string): for small traces and the library."""
    buffer = io.StringIO()
    write_json(trace, opts, buffer)
    return buffer.getvalue()
