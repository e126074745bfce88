"""The one error type of qkvcalc: a message a student can act on."""

from __future__ import annotations

from typing import Any

from qkvcalc.i18n import Msg


class QkvcalcError(ValueError):
    """Bad input, named: which field, which shapes, which rule.

    Carries a catalog key so the CLI can say it in the user's language; ``str(err)`` is
    the English sentence. ``where`` adds context as the error rises (the file it came from),
    the way einops re-raises with the pattern that failed.
    """

    def __init__(self, key: str, /, **params: Any) -> None:
        self.msg = Msg(key, **params)
        self.where: list[Msg] = []
        super().__init__(self.message("en"))

    def within(self, key: str, /, **params: Any) -> QkvcalcError:
        """Add a line of context (outermost last) and return self, for `raise err.within(...)`."""
        self.where.append(Msg(key, **params))
        self.args = (self.message("en"),)
        return self

    def message(self, lang: str = "en") -> str:
        text = self.msg.text(lang)
        for ctx in self.where:
            text = f"{ctx.text(lang)}: {text}"
        return text
