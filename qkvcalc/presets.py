"""The bundled presets: one JSON file each, in the input format plus name, description, reference.

They live in the repository's top-level presets/ folder; a wheel carries them as
qkvcalc/presets/. Both places are looked in, so a checkout and an install behave the same.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.parse import load_json

_HERE = Path(__file__).resolve().parent


def preset_dir() -> Path:
    for candidate in (_HERE / "presets", _HERE.parent / "presets"):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    raise QkvcalcError("cli.presets_missing", path=str(_HERE / "presets"))


def names() -> list[str]:
    return sorted(path.stem for path in preset_dir().glob("*.json"))


def path_of(name: str) -> Path:
    known = names()
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        if close:
            raise QkvcalcError("cli.preset_unknown_suggest", name=name, suggestion=close[0])
        raise QkvcalcError("cli.preset_unknown", name=name, names=", ".join(known))
    return preset_dir() / f"{name}.json"


def load(name: str) -> dict[str, Any]:
    """The preset's document, as a dict of the input format (with its metadata)."""
    doc = load_json(path_of(name).read_bytes())
    assert isinstance(doc, dict)
    return doc


META = ("name", "description", "reference")


def _content(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A document's fields without its metadata, by the field each key means; None when a
    key is not one of the input format's (such a document is not a preset's)."""
    from qkvcalc.problem import known_key

    content: dict[str, Any] = {}
    for key, value in doc.items():
        field = known_key(key)
        if field is None:
            return None
        if field not in META:
            content[field] = value
    return content


def unless_edited(doc: dict[str, Any]) -> dict[str, Any]:
    """The document, without its `name` when that names a bundled preset whose numbers and
    options it no longer holds: an edited copy (`presets show doc > mine.json`, or
    `--preset doc --x …`) is not announced as the preset it started from."""
    name = doc.get("name")
    if not isinstance(name, str) or name not in names():
        return doc
    mine, bundled = _content(doc), _content(load(name))
    same = mine is not None and bundled is not None and mine.keys() == bundled.keys()
    if same:
        assert mine is not None and bundled is not None
        for field, value in mine.items():
            equal = value == bundled[field]
            if not isinstance(equal, bool) or not equal:  # an array compares cell by cell
                same = False
                break
    if same:
        return doc
    return {k: v for k, v in doc.items() if k != "name"}


def text(name: str) -> str:
    """The preset's file exactly as shipped: a template to copy and edit."""
    return path_of(name).read_text(encoding="utf-8")
