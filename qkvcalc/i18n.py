"""Message keys and the catalogs that turn them into sentences, in English and Korean.

Every user-facing sentence lives in qkvcalc/catalog/<lang>.py under a key; code passes
Msg(key, params) around and a renderer (or the CLI) translates it once, at the edge.
"""

from __future__ import annotations

import os
import string
from typing import Any

LANGS = ("en", "ko")


class Msg:
    """A sentence not yet put into words: a catalog key and the values it mentions."""

    __slots__ = ("key", "params")

    def __init__(self, key: str, /, **params: Any) -> None:
        self.key = key
        self.params = params

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Msg) and (self.key, self.params) == (other.key, other.params)

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Msg({self.key!r}, **{self.params!r})"

    def text(self, lang: str = "en") -> str:
        return translate(self.key, lang, **self.params)


def catalog(lang: str) -> dict[str, str]:
    if lang == "ko":
        from qkvcalc.catalog.ko import MESSAGES as ko

        return ko
    from qkvcalc.catalog.en import MESSAGES as en

    return en


def translate(key: str, lang: str = "en", /, **params: Any) -> str:
    """The sentence for `key` in `lang`, with its params filled in; English if `lang` lacks it.

    A param may itself be a Msg, or a list of them (joined with commas): it is put into words
    in the same language, so the engine can say "columns 1–2 from head 1, …" without words.
    """
    template = catalog(lang).get(key) or catalog("en")[key]
    values = {name: _words(value, lang) for name, value in params.items()}
    if "|" not in template:  # str.format is the fast path; a plural needs the Formatter
        return template.format(**values)
    return _FORMATTER.vformat(template, (), values)


def plural(count: Any, one: str, other: str) -> str:
    """`one` when `count` is written as 1 (1, "1", numpy's 1), else `other`: English's two
    numbers of a noun. Korean needs none (its counters do not inflect)."""
    return one if str(count).strip() in ("1", "-1") else other


def plural_spec(spec: str) -> tuple[str, str] | None:
    """A placeholder's spec `token|tokens` as (singular, plural); None for any other spec."""
    one, bar, other = spec.partition("|")
    return (one, other) if bar else None


class _CatalogFormatter(string.Formatter):
    """str.format with one addition: `{n:token|tokens}` is the noun for the count n, singular
    when n is 1, so a sentence writes `{n} {n:token|tokens}` and reads "1 token", "2 tokens"."""

    def format_field(self, value: Any, format_spec: str) -> str:
        forms = plural_spec(format_spec)
        if forms is not None:
            return plural(value, *forms)
        return super().format_field(value, format_spec)


_FORMATTER = _CatalogFormatter()


def preset_description(name: str, description: str, lang: str) -> str:
    """A bundled preset's description in `lang`. The catalogs hold each bundled preset's own
    sentence (preset.<name>.description); any other description, such as a file of one's own
    that kept a bundled preset's name, is shown as it was written."""
    key = f"preset.{name}.description"
    if catalog("en").get(key) == description:
        return translate(key, lang)
    return description


def preset_reference(name: str, reference: str, lang: str) -> str:
    """A bundled preset's reference (where its numbers come from) in `lang`, by the same rule
    as preset_description: the catalogs hold preset.<name>.reference, word for word the file's
    English text; a reference of one's own is shown as written."""
    key = f"preset.{name}.reference"
    if catalog("en").get(key) == reference:
        return translate(key, lang)
    return reference


def _words(value: Any, lang: str) -> Any:
    if isinstance(value, Msg):
        return value.text(lang)
    if isinstance(value, list) and value and all(isinstance(v, Msg) for v in value):
        return ", ".join(v.text(lang) for v in value)
    return value


def lang_option(args: list[str]) -> str | None:
    """The value of a valid `--lang en|ko` (or `--lang=ko`; of `--lang en,ko`, the first)
    among the arguments, if any."""
    for k, arg in enumerate(args):
        if arg == "--":
            break
        value = args[k + 1] if arg == "--lang" and k + 1 < len(args) else None
        if arg.startswith("--lang="):
            value = arg.partition("=")[2]
        value = value.split(",")[0] if value and "," in value else value
        if value in LANGS:
            return value
    return None


def resolve_lang(explicit: str | None = None) -> str:
    """--lang wins; then QKVCALC_LANG; then LC_ALL, LC_MESSAGES, LANG (the POSIX order)."""
    if explicit:
        return explicit
    for var in ("QKVCALC_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(var, "")
        if value:
            return "ko" if value.lower().startswith("ko") else "en"
    return "en"
