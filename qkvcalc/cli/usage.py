"""A usage error in the language of the call. The click typer bundles writes its own words in
English (f-strings, no gettext): "Invalid value for '--precision': 'abc' is not a valid int
range.", "Missing argument 'model'.", "Option '--preset' requires an argument." Each one
qkvcalc can meet is recognised here by its shape and said again from the catalog, the values
it names kept as written; a message of any other shape is shown as click wrote it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import typer

from qkvcalc.i18n import translate

Say = Callable[["re.Match[str]", str], str]

# the kinds of value click's number types name ("'abc' is not a valid int range.")
_KINDS = {
    "int": "cli.kind.int",
    "int range": "cli.kind.int_range",
    "float": "cli.kind.float",
    "float range": "cli.kind.float_range",
}


def _kind(m: re.Match[str], lang: str) -> str:
    kind = translate(_KINDS[m["kind"]], lang)
    return translate("cli.not_a_valid", lang, value=m["value"], kind=kind)


# what a parameter's type says of a value it refuses (the part after "Invalid value for …:")
_INNER: tuple[tuple[re.Pattern[str], Say], ...] = (
    (
        re.compile(r"(?P<value>.+) is not one of (?P<choices>.+)\.", re.S),
        lambda m, lang: translate("cli.not_one_of", lang, **m.groupdict()),
    ),
    (re.compile(rf"(?P<value>.+) is not a valid (?P<kind>{'|'.join(_KINDS)})\.", re.S), _kind),
    (
        re.compile(r"(?P<value>.+) is not in the range (?P<range>.+)\.", re.S),
        lambda m, lang: translate("cli.not_in_range", lang, **m.groupdict()),
    ),
)


def _inner(text: str, lang: str) -> str:
    for pattern, say in _INNER:
        if m := pattern.fullmatch(text):
            return say(m, lang)
    return text


def _missing(m: re.Match[str], lang: str) -> str:
    text = translate(f"cli.missing_{m['kind']}", lang, name=m["name"])
    if m["choices"] is not None:
        text += " " + translate("cli.choose_from", lang, choices=m["choices"])
    return text


# click's whole message (err.format_message()), by its shape
_OUTER: tuple[tuple[re.Pattern[str], Say], ...] = (
    (
        re.compile(r"Invalid value for (?P<name>'.+?'(?: / '.+?')*): (?P<message>.*)", re.S),
        lambda m, lang: translate(
            "cli.invalid_value", lang, name=m["name"], message=_inner(m["message"], lang)
        ),
    ),
    (
        re.compile(r"Invalid value: (?P<message>.*)", re.S),
        lambda m, lang: translate(
            "cli.invalid_value_unnamed", lang, message=_inner(m["message"], lang)
        ),
    ),
    (
        re.compile(
            r"Missing (?P<kind>argument|option|parameter) (?P<name>.+?)\."
            r"(?: Choose from:\n\t(?P<choices>.*))?",
            re.S,
        ),
        _missing,
    ),
    (
        re.compile(r"Option (?P<name>.+) requires an argument\.", re.S),
        lambda m, lang: translate("cli.option_needs_value", lang, name=m["name"]),
    ),
    (
        re.compile(r"Option (?P<name>.+) requires (?P<count>[0-9]+) arguments\.", re.S),
        lambda m, lang: translate("cli.option_needs_values", lang, **m.groupdict()),
    ),
    (
        re.compile(r"Got unexpected extra argument\(s\) \((?P<args>.*)\)", re.S),
        lambda m, lang: translate("cli.extra_arguments", lang, args=m["args"]),
    ),
    (
        re.compile(r"No such command (?P<name>.+)\.", re.S),
        lambda m, lang: translate("cli.no_such_command", lang, name=m["name"]),
    ),
)


def message(err: Any, lang: str) -> str:
    """The error's own sentence (what follows "Error: ") in `lang`."""
    said: str = getattr(err, "message", "")  # escaped and cut short as click and _run left it
    english = "No such option: "
    if type(err).__name__ == "NoSuchOption" and said.startswith(english):
        text = translate("cli.no_such_option", lang, name=said[len(english) :])
        possible = sorted(getattr(err, "possibilities", None) or ())
        if possible:
            text += " " + translate("cli.possible_options", lang, names=", ".join(possible))
        return text
    text = err.format_message()
    for pattern, say in _OUTER:
        if m := pattern.fullmatch(text):
            return say(m, lang)
    return text


def show(err: Any, lang: str) -> None:
    """A usage error as click shows it (the usage line, where to find help, the error), with
    click's own words in `lang`."""
    ctx: Any = getattr(err, "ctx", None)
    if ctx is not None:
        hint = ""
        if ctx.command.get_help_option(ctx) is not None:
            option = ctx.help_option_names[0]
            hint = translate("cli.try_help", lang, command=ctx.command_path, option=option) + "\n"
        typer.echo(f"{ctx.get_usage()}\n{hint}", err=True, color=ctx.color)
    typer.echo(translate("cli.usage_error", lang, message=message(err, lang)), err=True)
