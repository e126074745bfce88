"""Text from the input (token names) shown literally and measured as a terminal draws it.

Plain Python, no numpy: the engine names tokens in its warnings with `safe`, and every
renderer labels rows and columns with it.
"""

from __future__ import annotations

import unicodedata

MAX_LABEL = 24


def safe(text: str, limit: int = MAX_LABEL) -> str:
    """A token name shown literally: control characters (escape sequences included) become
    visible escapes, and a very long name is abbreviated with …"""
    out = []
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp"):
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    shown = "".join(out)
    if display_width(shown) <= limit:
        return shown
    kept, used = [], 1  # room for the …
    for char in shown:
        used += display_width(char)
        if used > limit:
            break
        kept.append(char)
    return "".join(kept) + "…"


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: wide (CJK, Hangul) characters take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
