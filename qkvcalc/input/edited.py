"""Whether a document is still the bundled preset it names: an edited copy (`presets show doc
> mine.json`, or `--preset doc --x …`) is not announced as the preset it started from, while a
preset written another way (1.0 for 1, defaults written out, as a JSON trace's input writes
it) still is."""

from __future__ import annotations

from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.input import dataset, presets
from qkvcalc.input.fields import META, known_key
from qkvcalc.input.problem import Problem, same_numbers


def _content(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A document's fields without its metadata, by the field each key means; None when a
    key is not one of the input format's (such a document is not a preset's)."""
    content: dict[str, Any] = {}
    for key, value in doc.items():
        field = known_key(key) or dataset.set_key(key)  # a data set's examples are content too
        if field is None:
            return None
        if field not in META:
            content[field] = value
    return content


def unless_edited(doc: dict[str, Any]) -> dict[str, Any]:
    """The document, with its `name` turned into `edited_from` when that names a bundled preset
    whose numbers and options it no longer holds: an edited copy (`presets show doc >
    mine.json`, or `--preset doc --x …`) is not announced as the preset, but as edited from it;
    the preset's description and reference, which speak of the preset's numbers, are left out."""
    key = next((k for k in doc if known_key(k) == "name"), None)
    name = doc.get(key) if key is not None else None
    if not isinstance(name, str) or name not in presets.names():
        return doc
    mine, bundled = _content(doc), _content(presets.load(name))
    if _same(mine, bundled) or _same_problem(mine, bundled):
        return doc
    said = {k for k in doc if known_key(k) in ("name", "description", "reference")}
    return {k: v for k, v in doc.items() if k not in said} | {"edited_from": name}


def _same_problem(mine: dict[str, Any] | None, bundled: dict[str, Any] | None) -> bool:
    """Whether two documents are the same problem written differently: `1.0` for `1`, a
    default written out (`"heads": 1`, `"layout": "rows"`), as the "input" of a JSON trace
    writes a preset. Their problems are compared number by number and option by option."""
    if mine is None or bundled is None:
        return False
    try:
        return same_numbers(Problem.from_mapping(mine), Problem.from_mapping(bundled))
    except QkvcalcError:
        return False


def _same(mine: dict[str, Any] | None, bundled: dict[str, Any] | None) -> bool:
    """Whether two documents' contents are equal, value by value as JSON values (an array or
    any other object is never a preset's value)."""
    if mine is None or bundled is None or mine.keys() != bundled.keys():
        return False
    plain = (str, int, float, bool, list, dict, type(None))
    return all(
        isinstance(value, plain) and _plain_equal(value, bundled[field])
        for field, value in mine.items()
    )


def _plain_equal(a: Any, b: Any) -> bool:
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_plain_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, list | tuple | dict) or isinstance(b, list | tuple | dict):
        return isinstance(a, dict) and a == b
    return type(a) is type(b) and a == b
