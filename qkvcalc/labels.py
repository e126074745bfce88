"""Text from the input (token names) shown literally and measured as a terminal draws it, and
numbers rounded the one way every layer writes them (`rounded`).

Plain Python, no numpy: the engine names tokens in its warnings with `safe`, and every
renderer labels rows and columns with it.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Context, Decimal

from qkvcalc.i18n import Msg

MAX_LABEL = 24


def safe(text: str, limit: int = MAX_LABEL) -> str:
    """A token name shown literally: control characters (escape sequences included) become
    visible escapes, and a very long name is abbreviated with …

    Only what can be shown is looked at: a name of 3 million characters costs its first few
    dozen (every character shown takes a column, but a combining mark takes none: the cut
    leaves room for a name of accents, and whatever lies past it is the …)."""
    cut = len(text) > 4 * limit + 8
    out = []
    for char in text[: 4 * limit + 8] if cut else text:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    shown = "".join(out)
    if not cut and display_width(shown) <= limit:
        return shown
    kept, used = [], 1  # room for the …
    for char in shown:
        used += display_width(char)
        if used > limit:
            break
        kept.append(char)
    return "".join(kept) + "…"


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: wide (CJK, Hangul) characters take two, combining
    marks (the accent of c + U+0301) and other zero-width characters none."""
    if text.isascii():
        return len(text)
    return sum(_char_width(c) for c in text)


def _char_width(char: str) -> int:
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def shape_text(shape: tuple[int, ...]) -> str:
    return "×".join(str(s) for s in shape)


_KINDS = {list: "list", tuple: "list", str: "string", int: "number", float: "number"}


def json_kind(value: object) -> Msg:
    """What a value is called in a message, in the user's language: 'a list', not 'list'."""
    if isinstance(value, bool):
        return Msg("kind.bool")
    if value is None:
        return Msg("kind.null")
    return Msg(f"kind.{_KINDS.get(type(value), 'value')}")


def long_integer(value: int) -> str:
    """An integer too long for a message: its first digits and its length ('10000000… (401
    digits)'), or ≈10^N past the 4,300 digits Python itself will write out."""
    try:
        digits = str(abs(value))
    except ValueError:  # past Python's own limit on writing an integer
        return f"≈10^{int(value.bit_length() * math.log10(2))}"
    return f"{digits[:8]}… ({len(digits)} digits)"


def closest(word: str, known: Sequence[str], cutoff: float = 0.6) -> str | None:
    """The known word a typo most likely meant ('causl' → 'causal'), if one is close enough:
    every "did you mean" of the messages."""
    import difflib  # here: the command line's start-up does not need it

    found = difflib.get_close_matches(word, known, n=1, cutoff=cutoff)
    return found[0] if found else None


def shown(value: object, limit: int = 40) -> str:
    """A value from the input, for a message, as the user wrote it: in JSON's spelling (null,
    true, "text"), or Python's repr for what JSON cannot spell; cut short at `limit`."""
    import json  # here: the command line's start-up (--help) does not need it

    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # numpy scalars, NaN, objects from a Python caller
        text = long_integer(value) if isinstance(value, int) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# enough digits for any double's decimal quantized to any number of places a table asks for
_DECIMALS = Context(prec=1200)


def rounded(value: float, places: int) -> str:
    """A finite number to `places` decimals, as a student rounds by hand: its decimal (the
    shortest that reads back as this double) rounded half away from zero, so 0.60615 gives
    0.6062 and -0.125 gives -0.13 at two. The engine records a rational stage's value as the
    double nearest its exact value (qkvcalc.run.exact), so there it is the exact value that is
    rounded, on every machine. '-0.0000' is written '0.0000'; ∞ and NaN as Python writes
    them ('inf', 'nan': renderers that show them otherwise check before calling this)."""
    if not math.isfinite(value):
        return f"{value:.{places}f}"
    value = float(value)  # a numpy scalar, a Fraction: the double shown
    shortest = repr(value)
    if _binary_rounds_alike(shortest, abs(value), places):
        text = f"{value:.{places}f}"
    else:
        unit = Decimal(1).scaleb(-places)
        text = f"{Decimal(shortest).quantize(unit, ROUND_HALF_UP, _DECIMALS):f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _binary_rounds_alike(shortest: str, size: float, places: int) -> bool:
    """Whether Python's own rounding of the double (its exact binary value, f"{v:.4f}") gives
    what rounding its shortest decimal half away from zero gives, the case of nearly every
    number a table shows (the formatting takes a third of the Decimal's time). It does unless a
    rounding boundary (…5 at the first decimal dropped) lies between the two or on the decimal:

    - a shortest decimal with more than places + 1 decimals: a boundary between it and the
      double would read back as the same double and be shorter, or as short and nearer;
    - one with places + 1 decimals not ending in 5: the same, as short and nearer;
    - one with at most `places` decimals, already on the grid: the double is within half a unit
      in the last place of it, less than half a unit of the grid while |v| < 2^52·10^-places.
    A decimal ending in 5 just past the grid is a tie, and an exponent form is left to the
    Decimal."""
    _, point, fraction = shortest.partition(".")
    if not point or "e" in fraction:
        return False
    decimals = len(fraction)
    if decimals > places + 1:
        return True
    if decimals == places + 1:
        return shortest[-1] != "5"
    return size < 2.0**52 * 10.0**-places
