"""qkvcalc.records.NamedTuple builds what typing.NamedTuple builds, without compiling its
fields' annotation strings at import (a ForwardRef each: 2.4% of the doc example's start-up)."""

from __future__ import annotations

import copy
import pickle
import typing

import pytest

from qkvcalc.records import NamedTuple


class Span(NamedTuple):
    """A span of rows."""

    start: int
    stop: int = 0
    names: tuple[str, ...] = ()

    @property
    def width(self) -> int:
        return self.stop - self.start

    def shifted(self, by: int) -> Span:
        return self._replace(start=self.start + by, stop=self.stop + by)


class TypingSpan(typing.NamedTuple):  # the one it must equal
    """A span of rows."""

    start: int
    stop: int = 0
    names: tuple[str, ...] = ()


def test_a_record_is_the_namedtuple_typing_would_build():
    span = Span(2, 5)
    assert span == (2, 5, ()) and isinstance(span, tuple)
    assert Span._fields == TypingSpan._fields == ("start", "stop", "names")
    assert Span._field_defaults == TypingSpan._field_defaults == {"stop": 0, "names": ()}
    assert Span.__doc__ == TypingSpan.__doc__ == "A span of rows."
    assert (Span.__module__, Span.__qualname__) == (__name__, "Span")
    assert span.width == 3 and span.shifted(1) == Span(3, 6)
    assert span._asdict() == {"start": 2, "stop": 5, "names": ()}
    assert Span._make([1, 2, ("a",)]).names == ("a",)
    assert pickle.loads(pickle.dumps(span)) == span and copy.deepcopy(span) == span
    assert repr(span) == "Span(start=2, stop=5, names=())"
    with pytest.raises(AttributeError):
        span.start = 3  # type: ignore[misc]


def test_its_annotations_stay_the_strings_they_are_and_still_resolve():
    assert Span.__annotations__ == {"start": "int", "stop": "int", "names": "tuple[str, ...]"}
    assert typing.get_type_hints(Span) == typing.get_type_hints(TypingSpan)


def test_what_typing_refuses_a_record_refuses():
    with pytest.raises(TypeError, match="without a default follows"):

        class Bad(NamedTuple):
            a: int = 0
            b: int

    with pytest.raises(AttributeError, match="_replace"):

        class Clash(NamedTuple):
            a: int

            def _replace(self) -> None: ...

    with pytest.raises(TypeError, match="base class"):
        NamedTuple("Called", [("a", int)])  # type: ignore[call-overload]


def test_no_package_module_uses_typings_namedtuple():
    """ruff's banned-api rule holds it (pyproject.toml); this holds the rule's effect."""
    import ast
    from pathlib import Path

    root = Path(__file__).parent.parent
    assert '"typing.NamedTuple".msg' in (root / "pyproject.toml").read_text(encoding="utf-8")
    found = []
    for path in sorted((root / "qkvcalc").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "typing":
                found += [path.name for alias in node.names if alias.name == "NamedTuple"]
            if isinstance(node, ast.Attribute) and node.attr == "NamedTuple":
                found.append(path.name)
    assert found == ["records.py"]
