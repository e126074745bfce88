"""The bundled presets: one JSON file each, in the input format plus name, description, reference.

They live in the repository's top-level presets/ folder; a wheel carries them as
qkvcalc/presets/. Both places are looked in, so a checkout and an install behave the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.parse import load_json
from qkvcalc.labels import closest

_PACKAGE = Path(__file__).resolve().parent.parent  # the folder of qkvcalc itself


def preset_dir() -> Path:
    """The presets' folder: qkvcalc/presets in a wheel, presets/ at the top of a checkout."""
    for candidate in (_PACKAGE / "presets", _PACKAGE.parent / "presets"):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    raise QkvcalcError("cli.presets_missing", path=str(_PACKAGE / "presets"))


def names() -> list[str]:
    return sorted(path.stem for path in preset_dir().glob("*.json"))


def path_of(name: str) -> Path:
    known = names()
    if name not in known:
        close = closest(name, known)
        if close is not None:
            raise QkvcalcError("cli.preset_unknown_suggest", name=name, suggestion=close)
        raise QkvcalcError("cli.preset_unknown", name=name, names=", ".join(known))
    return preset_dir() / f"{name}.json"


def load(name: str) -> dict[str, Any]:
    """The preset's document, as a dict of the input format (with its metadata)."""
    doc = load_json(path_of(name).read_bytes())
    assert isinstance(doc, dict)
    return doc


def text(name: str) -> str:
    """The preset's file exactly as shipped: a template to copy and edit."""
    return path_of(name).read_text(encoding="utf-8")
