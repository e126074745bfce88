"""`NamedTuple` as typing's, for class syntax, without evaluating its fields' annotations.

qkvcalc's modules use `from __future__ import annotations`, so every field annotation is a
string; typing.NamedTuple turns each into a ForwardRef, and a ForwardRef compiles its string:
about 280 compiles, 2.4% of the instructions of `qkvcalc explain --preset doc`, for annotations
nothing reads at run time. These records are the same classes (collections.namedtuple with the
class body's defaults, methods and docstring) with the annotations kept as the strings they
are, as any other class keeps them. mypy reads typing's NamedTuple (TYPE_CHECKING below), so a
record is checked as a NamedTuple is.

    from qkvcalc.records import NamedTuple

    class Span(NamedTuple):
        start: int
        stop: int = 0
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple  # noqa: TID251  (what mypy checks)
else:
    # what typing's NamedTupleMeta refuses to overwrite, and what it leaves out
    _PROHIBITED = frozenset(
        {"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults"}
        | {"_make", "_replace", "_asdict", "_source"}
    )
    _SPECIAL = frozenset({"__module__", "__name__", "__annotations__"})

    class _Meta(type):
        def __new__(mcs, typename: str, bases: tuple[type, ...], ns: dict[str, Any]) -> type:
            if bases != (_Base,):
                raise TypeError("a record inherits from NamedTuple alone")
            fields = dict(ns.get("__annotations__", {}))
            defaults = [name for name in fields if name in ns]
            if defaults and list(fields)[-len(defaults) :] != defaults:
                raise TypeError(f"{typename}: a field without a default follows one with")
            record = collections.namedtuple(
                typename, list(fields), defaults=[ns[n] for n in defaults], module=ns["__module__"]
            )
            record.__annotations__ = fields
            for key, value in ns.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in fields:
                    setattr(record, key, value)
            return record

    _Base = type.__new__(_Meta, "NamedTuple", (), {})

    def NamedTuple(*args: Any, **kwargs: Any) -> type:
        """Class syntax only: `class Name(NamedTuple): field: type`."""
        raise TypeError("qkvcalc's NamedTuple is used as a base class, not called")

    NamedTuple.__mro_entries__ = lambda bases: (_Base,)
