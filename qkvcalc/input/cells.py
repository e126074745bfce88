"""Cell parsing: a matrix or a vector from the input, checked cell by cell (numbers, or strings
in the safe grammar of qkvcalc.input.numbers), with a message that names the field and the cell."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.fields import DISPLAY
from qkvcalc.input.numbers import Number, exact_of_float, parse_number
from qkvcalc.labels import long_integer, shown
from qkvcalc.records import NamedTuple


class Matrix(NamedTuple):
    """A validated input matrix: float64 values and, in exact mode, its rational entries."""

    values: np.ndarray
    exact: tuple[tuple[Fraction | None, ...], ...] | None = None


def _fail_cell(field_name: str, where: str, value: object) -> QkvcalcError:
    name = DISPLAY.get(field_name, field_name)
    if isinstance(value, bool):
        return QkvcalcError("matrix.bool", field=name, where=where)
    if isinstance(value, list | tuple):
        return QkvcalcError("matrix.too_deep", field=name, where=where)
    if value is None:
        return QkvcalcError("matrix.null", field=name, where=where)
    if isinstance(value, float) and math.isnan(value):
        return QkvcalcError("number.nan", field=f"{name}{where}")
    if isinstance(value, int | float):
        return QkvcalcError("number.not_finite", field=f"{name}{where}", text=repr(value))
    return QkvcalcError("matrix.not_number", field=name, where=where, value=shown(value))


def _too_large(value: Any, field: str) -> QkvcalcError:
    """An integer beyond float64 (hundreds of digits)."""
    return QkvcalcError("number.too_large", field=field, text=long_integer(int(value)))


def cell(value: object, field_name: str, where: str, exact: bool) -> Number:
    if type(value) is int or type(value) is float or isinstance(value, np.integer | np.floating):
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits: beyond float64
            raise _too_large(value, f"{DISPLAY.get(field_name, field_name)}{where}") from None
        if math.isfinite(number):
            return Number(number, exact_of_float(number) if exact else None)
    elif isinstance(value, str):
        return parse_number(value, f"{DISPLAY.get(field_name, field_name)}{where}")
    raise _fail_cell(field_name, where, value)


# numpy dtypes whose every finite number is a float64 exactly
FLOATS = (np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16))


def to_matrix(raw: Any, field_name: str, *, exact: bool = False) -> Matrix:
    """A list of rows, a flat list (one row), or a 2-D array, checked cell by cell. (Its size
    was checked against --max-elements before: _check_claimed_size.)"""
    name = DISPLAY.get(field_name, field_name)
    if isinstance(raw, np.ndarray):
        # A float array of finite numbers (a layer extract hands over, 16.7 million numbers
        # for a 7B model's W_Q) is taken without a Python float per number: copied, or as it
        # is when it is float64 and read-only (extract's check hands its problem over so)
        floats = not exact and raw.ndim == 2 and raw.size > 0 and raw.dtype in FLOATS
        if floats and np.isfinite(raw).all():
            kept = raw.dtype == np.float64 and not raw.flags.writeable
            return Matrix(raw if kept else np.array(raw, dtype=np.float64))
        raw = raw.tolist() if raw.ndim <= 2 else raw
    if not isinstance(raw, list | tuple):
        raise QkvcalcError("matrix.not_list", field=name, value=shown(raw))
    if len(raw) == 0:
        raise QkvcalcError("matrix.empty", field=name)
    rows = [raw] if not isinstance(raw[0], list | tuple) else raw
    width = len(rows[0])
    if width == 0:
        raise QkvcalcError("matrix.empty_row", field=name, row=1)
    for i, row in enumerate(rows):
        if not isinstance(row, list | tuple):
            raise QkvcalcError("matrix.mixed", field=name, row=i + 1)
        if len(row) != width:
            raise QkvcalcError("matrix.ragged", field=name, row=i + 1, length=len(row), width=width)
    # Fast path: plain JSON numbers (the common case, and the only one at real-model sizes).
    plain = {float, int}  # not bool, not str: those take the checked path below
    if not exact and all(set(map(type, row)) <= plain for row in rows):
        try:
            values = np.array(rows, dtype=np.float64)
        except OverflowError:
            values = None
        if values is not None and np.isfinite(values).all():
            return Matrix(values)
    cells = [
        [
            cell(
                v,
                field_name,
                f"[{j + 1}]" if rows is not raw else f"[{i + 1},{j + 1}]",  # flat: one index
                exact,
            )
            for j, v in enumerate(row)
        ]
        for i, row in enumerate(rows)
    ]
    values = np.array([[c.value for c in row] for row in cells], dtype=np.float64)
    exact_rows = tuple(tuple(c.exact for c in row) for row in cells) if exact else None
    return Matrix(values, exact_rows)


def to_vector(raw: Any, field_name: str, *, exact: bool = False) -> Matrix:
    """A flat list of numbers, kept as a 1×d Matrix."""
    name = DISPLAY.get(field_name, field_name)
    if isinstance(raw, list | tuple) and raw and isinstance(raw[0], list | tuple):
        if len(raw) == 1:
            raw = raw[0]
        else:
            raise QkvcalcError("vector.not_flat", field=name, rows=len(raw))
    return to_matrix(raw, field_name, exact=exact)


def positive(raw: Any, field: str, *, integer: bool = False) -> Number:
    """A number greater than 0 (a whole one with `integer`), as a JSON number or a string of the
    safe grammar: a feature's value (a rotation's base, a cap)."""
    number: Number | None = None
    if isinstance(raw, str):
        number = parse_number(raw, field)
    elif isinstance(raw, int | float | np.integer | np.floating) and not isinstance(raw, bool):
        try:
            value = float(raw)
        except OverflowError:  # an integer of hundreds of digits: beyond float64
            if raw < 0:
                raise QkvcalcError("variant.not_positive", field=field, value=shown(raw)) from None
            raise _too_large(raw, field) from None
        if math.isfinite(value):
            number = Number(value, Fraction(value) if integer or float(raw).is_integer() else None)
    if number is None or not number.value > 0:
        raise QkvcalcError("variant.not_positive", field=field, value=shown(raw))
    if integer and not float(number.value).is_integer():
        raise QkvcalcError("variant.not_whole", field=field, value=shown(raw))
    return number
