"""The JSON rendering: the "qkvcalc.trace/1" document of DESIGN.md, strict JSON.

Numbers are full float64 (they round-trip); -inf, inf and NaN are the strings "-inf", "inf",
"nan". Titles and notes follow the language; ids, keys and numbers never do.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from qkvcalc.render import RenderOptions
from qkvcalc.trace import Stage, Trace

SCHEMA = "qkvcalc.trace/1"

# Characters JSON may carry raw but a terminal or an encoder should not get: C1 controls (CSI),
# bidirectional overrides, zero-width and line-separator characters, lone surrogates (which
# cannot be written as UTF-8). Written as \uXXXX escapes; every other character stays as is.
_UNSAFE = re.compile("[\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")


def _escape_unsafe(text: str) -> str:
    if text.isascii() and "\x7f" not in text:  # numbers and English: nothing to look for
        return text
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(value: Any, indent: int | None = None) -> str:
    """Strict JSON of qkvcalc's documents (the trace, the quiz report): UTF-8 text as is,
    the characters above escaped, no NaN or Infinity (numbers go through number_json)."""
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


def stage_json(stage: Stage, opts: RenderOptions) -> dict[str, Any]:
    rows, cols = stage.shape
    omitted = opts.detail == "brief" and rows * cols > BRIEF_VALUE_CELLS
    doc: dict[str, Any] = {
        "id": stage.id,
        "head": stage.head,
        "title": stage.title.text(opts.lang),
        "formula": stage.formula,
        "shape": list(stage.shape),
        "value": None if omitted else matrix_json(stage.value),
        "notes": [note.text(opts.lang) for note in stage.notes],
        "explanation": stage.why.text(opts.lang),
    }
    if stage.step is not None:
        doc["step"] = stage.step
    if stage.block is not None:
        doc["block"] = stage.block
    if stage.exact is not None and not omitted:
        # "7/2", "7/√2", "-inf" where masked; null where a cell depends on an irrational input
        doc["exact"] = [[None if v is None else str(v) for v in row] for row in stage.exact]
    return doc


def trace_json(trace: Trace, opts: RenderOptions) -> dict[str, Any]:
    p = trace.problem
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
    if "name" in p.meta:
        problem["preset"] = p.meta["name"]
    return {
        "schema": SCHEMA,
        "problem": problem,
        "stages": [stage_json(stage, opts) for stage in trace.stages],
        "output": matrix_json(trace.output),
        "warnings": [w.text(opts.lang) for w in trace.warnings],
    }


def render_json(trace: Trace, opts: RenderOptions) -> str:
    """One line per stage: readable in a pager, quick to write at real-model sizes."""
    doc = trace_json(trace, opts)

    stages = ",\n".join(f"    {dumps(stage)}" for stage in doc.pop("stages"))
    fields = [f"  {dumps(key)}: {dumps(value)}" for key, value in doc.items()]
    fields.insert(2, f'  "stages": [\n{stages}\n  ]')
    # one join: at real-model sizes the output alone is 16 MB of text, not worth copying twice
    return "".join(["{\n", ",\n".join(fields), "\n}\n"])
