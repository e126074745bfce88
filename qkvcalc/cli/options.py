"""Option groups: the commands' options declared once, in groups that several commands share
(as sqlite-utils groups its click options). A command is assembled from groups by `command`;
it receives each group as one argument, a namespace of that group's values.

Each option's help is the catalog key help.<command>.<option> (or the key it names), in the
language of the environment, so that one group serves `explain` and `quiz` with the words of
each. A plug-in feature's option (qkvcalc.input.fields.FEATURE_OPTIONS) joins the group of the
option it follows.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run.
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from enum import Enum
from types import SimpleNamespace
from typing import Annotated, Any

import typer

from qkvcalc.cli.common import Lang, help_text, silence
from qkvcalc.input.fields import FEATURE_OPTIONS
from qkvcalc.launch import loaded
from qkvcalc.records import NamedTuple


class Opt(NamedTuple):
    """One option (or the argument) of a command: its name, the type of its value, its
    default, its declarations ("--format", "-f"), typer's settings, and its help key (the
    last part of help.<command>.<name> by default; a whole key when it holds a dot)."""

    name: str
    kind: Any
    default: Any = None
    decls: tuple[str, ...] = ()
    settings: Mapping[str, Any] = {}  # read, never changed: one empty default serves all
    help: str = ""
    argument: bool = False

    def parameter(self, command: str, group: str = "") -> inspect.Parameter:
        """The option as typer reads it; an option (not the argument) of a named `group` is
        shown under that group's panel in --help (help.panel.<group>)."""
        key = self.help if "." in self.help else f"help.{command}.{self.help or self.name}"
        make = typer.Argument if self.argument else typer.Option
        settings: dict[str, Any] = dict(self.settings)
        if group and not self.argument:
            settings["rich_help_panel"] = _panel(group)
        info = make(*self.decls, help=help_text(key), **settings)
        return inspect.Parameter(
            self.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=self.default,
            annotation=Annotated[self.kind, info],
        )


class Group(NamedTuple):
    """Options that go together (where the problem comes from; how it is shown …)."""

    name: str
    options: tuple[Opt, ...]


def _panel(group: str) -> str:
    """The title of a group's panel in --help, in the environment's language."""
    return help_text(f"help.panel.{group}")


HIDDEN = {"show_default": False}  # an option whose default says nothing ("None")


def _feature_opt(key: str) -> Opt:
    """A plug-in feature's option (FEATURE_OPTIONS): a flag, a choice of words or a value."""
    option = FEATURE_OPTIONS[key]
    settings = {"show_default": False, **option.settings}
    if option.kind is bool:  # a flag: --name, never --no-name
        return Opt(key, bool, False, ("--" + key.replace("_", "-"),), settings, option.help)
    kind: Any = option.kind
    if isinstance(kind, tuple):  # a choice of words, shown as [half|pairs]
        words = {word: word for word in kind}
        choice = Enum(key.title().replace("_", ""), words, type=str)  # type: ignore[misc]
        kind = choice
    return Opt(key, kind | None, None, (), settings, option.help)


def with_features(group: Group) -> Group:
    """The group with the plug-in features' options that follow one of its own, each placed
    after the option it names (in --help too)."""
    options = list(group.options)
    for key, option in FEATURE_OPTIONS.items():
        names = [o.name for o in options]
        if option.after in names:
            options.insert(names.index(option.after) + 1, _feature_opt(key))
    return Group(group.name, tuple(options))


def command(
    name: str, *groups: Group, loads_itself: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A command made of option groups: typer reads the options of every group, in order, and
    the function receives one namespace per group (explain(source=…, inline=…, …)).

    Once its options are read, the console script's start-up is over (qkvcalc.launch.loaded):
    unless `loads_itself`, where the function says so itself, once it has loaded the modules
    it runs on (it imports them inside, so that its --help loads none)."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = [opt.parameter(name, group.name) for group in groups for opt in group.options]

        @functools.wraps(fn)
        def run(**values: Any) -> Any:
            if not loads_itself:
                loaded()
            try:
                return fn(
                    **{
                        group.name: SimpleNamespace(
                            **{o.name: values[o.name] for o in group.options}
                        )
                        for group in groups
                    }
                )
            except BrokenPipeError:
                # the reader went away (… | head -c 100): stop quietly with 0, as a closed pipe
                # met after the command does (qkvcalc.cli.main); typer would say 1
                silence(sys.stdout)
                raise typer.Exit(0) from None

        run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        return run

    return wrap


def given(values: SimpleNamespace) -> dict[str, Any]:
    """A group's values as input keys: an Enum by its value (--layout torch → "torch")."""
    return {k: v.value if isinstance(v, Enum) else v for k, v in vars(values).items()}


# ---- the groups several commands share ----------------------------------------------------------

# Where the problem comes from: a file (or '-'), a preset, or random numbers (explain, quiz).
SOURCE = Group(
    "source",
    (
        Opt("source", str | None, None, settings=HIDDEN, argument=True),
        Opt("preset", str | None, settings=HIDDEN),
        Opt("random", bool, False, ("--random",)),
        Opt("seed", int | None, settings=HIDDEN),
        Opt("size", str | None, settings=HIDDEN),
    ),
)

# The language and the colours of what is printed (every command).
DISPLAY = Group(
    "display",
    (
        Opt("lang", Lang | None, settings=HIDDEN, help="help.lang"),
        Opt("no_color", bool, False, ("--no-color",), help="help.no_color"),
    ),
)

# Attention as the hardware computes it: the dtype, and whose rounding (explain --dtype).
PRECISION = Group(
    "precision",
    (
        Opt("dtype", str | None, settings={"metavar": "DTYPE", **HIDDEN}),
        Opt("policy", str | None, settings={"metavar": "POLICY", **HIDDEN}),
    ),
)
