"""`qkvcalc explain`: read a problem, compute every stage, and print it in one format.

Parses options, calls the library (sources → Problem → engine → render) and prints; nothing
else. Errors: a QkvcalcError becomes one message on stderr and exit 2, nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import IO, TYPE_CHECKING, Any

import typer

from qkvcalc.cli.common import (
    PageLang,
    console,
    fail,
    is_utf,
    language,
    say,
    write_output,
)
from qkvcalc.cli.options import (
    DISPLAY,
    HIDDEN,
    PRECISION,
    SOURCE,
    Group,
    Opt,
    command,
    given,
    with_features,
)
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg, translate
from qkvcalc.input.fields import FEATURE_OPTIONS
from qkvcalc.input.limits import MAX_BYTES, MAX_ELEMENTS
from qkvcalc.launch import loaded
from qkvcalc.render import FORMATS

# The formats are the renderers' table (qkvcalc.render.FORMATS), listed once, there.
if TYPE_CHECKING:
    from qkvcalc.trace import Trace

    Format = str
else:
    Format = Enum("Format", {name: name for name in FORMATS}, type=str)


class Align(str, Enum):
    top_left = "top-left"
    bottom_right = "bottom-right"


class Positional(str, Enum):
    sinusoidal = "sinusoidal"


class Detail(str, Enum):
    full = "full"
    brief = "brief"


class Layout(str, Enum):
    rows = "rows"
    torch = "torch"


# ---- its options, in groups (qkvcalc.cli.options) ----------------------------------------------

# The matrices and sizes typed on the command line (each overrides the file's or preset's key).
INLINE = Group(
    "inline",
    (
        *(
            Opt(name, str | None, None, ("--" + name,), HIDDEN)
            for name in ("x", "wq", "wk", "wv", "wo")
        ),
        Opt("tokens", str | None, settings=HIDDEN),
        Opt("mask", str | None, settings=HIDDEN),
        Opt("heads", int | None, settings={"min": 1, **HIDDEN}),
        Opt("kv_heads", int | None, settings={"min": 1, **HIDDEN}),
        Opt("scale", str | None, settings=HIDDEN),
        Opt("layout", Layout | None, settings=HIDDEN),
        # where --backward starts (a file's or preset's key of the same name)
        Opt("target", str | None, settings=HIDDEN),
        Opt("grad_output", str | None, settings=HIDDEN),
        Opt("attend", str | None, settings=HIDDEN),
    ),
)
# Today's attention: positions, their alignment and encoding, the plug-in features' options,
# decoding with a KV cache, tiles, the tokens shuffled.
MODERN = with_features(
    Group(
        "modern",
        (
            Opt("positions", str | None, settings=HIDDEN),
            Opt("causal_align", Align | None, settings=HIDDEN),
            Opt("positional", Positional | None, settings=HIDDEN),
            Opt("decode", int | None, settings={"metavar": "P", **HIDDEN}),
            Opt("tiles", int | None, settings={"metavar": "B", **HIDDEN}),
            Opt("shuffle", str | None, settings={"metavar": "ORDER", **HIDDEN}),
        ),
    )
)
# How it is shown: the format, the file, how much, how precisely.
SHOW = Group(
    "show",
    (
        Opt("format", Format | None, None, ("--format", "-f"), HIDDEN),
        Opt("output", Path | None, None, ("--output", "-o"), HIDDEN),
        Opt("detail", Detail, Detail.full),
        Opt("precision", int, 4, settings={"min": 0, "max": 15}),
        Opt("exact", bool, False, ("--exact",)),
        Opt("backward", bool, False, ("--backward",)),
        Opt("worksheet", bool, False, ("--worksheet",)),
    ),
)
# How much input it reads, at most.
LIMITS = Group(
    "limits",
    (
        Opt("max_bytes", int, MAX_BYTES, settings={"min": 1}),
        Opt("max_elements", int, MAX_ELEMENTS, settings={"min": 1}),
    ),
)
# What of the run it shows: one stage at a time, some stages, one head.
VIEW = Group(
    "view",
    (
        Opt("step", bool, False, ("--step",), help="step.option_help"),
        Opt("stages", str | None, settings=HIDDEN),
        Opt("head", int | None, settings=HIDDEN),
    ),
)


# The language (or both, on one html page) and the colours.
EXPLAIN_DISPLAY = Group(
    "display",
    (
        Opt("lang", PageLang | None, None, ("--lang",), HIDDEN, "help.explain.lang"),
        *DISPLAY.options[1:],  # --no-color
    ),
)


# what every run reads, plans and runs with (its writer is loaded by the format it asks for)
RUNS_ON = ("qkvcalc.input.sources", "qkvcalc.input.problem", "qkvcalc.run.engine")


@command(
    "explain",
    SOURCE,
    INLINE,
    MODERN,
    SHOW,
    PRECISION,
    EXPLAIN_DISPLAY,
    LIMITS,
    VIEW,
    loads_itself=True,
)
def explain(
    source: SimpleNamespace,
    inline: SimpleNamespace,
    modern: SimpleNamespace,
    show: SimpleNamespace,
    precision: SimpleNamespace,
    display: SimpleNamespace,
    limits: SimpleNamespace,
    view: SimpleNamespace,
) -> None:
    """Compute attention for a problem and show every stage, with each cell's arithmetic."""
    lang_code = language(display.lang)
    try:
        from qkvcalc.render import FOLLOWS_TERMINAL, PAGE_WIDTH, RenderOptions, format_for, render

        if view.step and show.output is not None:
            raise QkvcalcError("step.with_output")
        chosen = None if show.format is None else str(getattr(show.format, "value", show.format))
        if view.step and chosen is not None and chosen not in ("table", "txt"):
            raise QkvcalcError("step.with_format", format=chosen)
        fmt = chosen or (format_for(show.output) if show.output is not None else "table")
        langs = tuple(display.lang.value.split(",")) if display.lang is not None else ()
        if len(langs) > 1 and fmt != "html":  # two languages: only a page holds both
            raise QkvcalcError("page.two_langs_html", langs=",".join(langs), format=fmt)
        if show.worksheet and fmt in ("json", "torch"):  # data and code hold every number
            raise QkvcalcError("explain.worksheet_format", format=fmt)
        _load(FORMATS[fmt][0] if not view.step else "qkvcalc.interactive.step")
        trace = _trace(source, inline, modern, limits, view, show, lang_code, precision)
        # Only a table printed on a terminal, and the step mode, follow its width (and colours,
        # unless it is txt); every other format, and any file, is laid out for the page.
        width, color = PAGE_WIDTH, False
        if show.output is None and (fmt in FOLLOWS_TERMINAL or view.step):
            terminal = console(display.no_color)
            width, color = terminal.width, terminal.color_system is not None and fmt == "table"
        opts = RenderOptions(
            lang=lang_code,
            precision=show.precision,
            detail=show.detail.value,
            width=width,
            color=color,
            exact=show.exact,
            worksheet=show.worksheet,
            langs=langs if len(langs) > 1 else (),
        )
        if view.step:
            from qkvcalc.interactive.step import step_through

            step_through(trace, opts, no_color=display.no_color)
            return
        if fmt == "json":  # streamed, stage by stage: a real layer's trace is over a GB of text
            from qkvcalc.render.json_doc import write_json

            def content(out: IO[str]) -> None:
                write_json(trace, opts, out, ascii_only=not is_utf(out))

            write: str | Callable[[IO[str]], None] = content
        else:
            write = render(trace, fmt, opts)
    except QkvcalcError as err:
        fail(err, lang_code)
    if show.output is not None:
        try:
            write_output(write, show.output)
        except QkvcalcError as err:
            fail(err, lang_code)
    else:
        if isinstance(write, str):
            if not (fmt == "table" and _paged(write)):
                sys.stdout.write(write)
        else:
            write(sys.stdout)
        sys.stdout.flush()


def _paged(text: str) -> bool:
    """A table taller than the terminal it is printed on goes through a pager, as git's output
    does (qkvcalc.cli.pager: $QKVCALC_PAGER, $PAGER, less); never into a pipe or a file."""
    if not sys.stdout.isatty():
        return False
    import shutil

    from qkvcalc.cli.pager import page

    return page(text, shutil.get_terminal_size().lines)


def _load(writer: str) -> None:
    """What the run reads, plans, runs and writes with, loaded: start-up is over (from here,
    the console script collects garbage again, qkvcalc.launch.loaded)."""
    for module in (*RUNS_ON, writer):
        importlib.import_module(module)
    loaded()


def _trace(
    source: SimpleNamespace,
    inline: SimpleNamespace,
    modern: SimpleNamespace,
    limits: SimpleNamespace,
    view: SimpleNamespace,
    show: SimpleNamespace,
    lang: str,
    precision: SimpleNamespace | None = None,
) -> "Trace":
    """The problem read (from its source, with the options typed on top), run (shuffled when
    asked) and cut to the stages and head asked for."""
    from qkvcalc.input.problem import Problem
    from qkvcalc.input.sources import gather
    from qkvcalc.run.engine import run

    typed = {**given(inline), **_modern_values(modern)}
    notes: list[Msg] = []  # what the options changed in the input on the way (tokens dropped)
    if source.random or source.seed is not None or source.size is not None:
        doc = _random_doc(source, typed, lang)
    else:
        stdin = sys.stdin.buffer
        isatty = sys.stdin.isatty()
        chosen = {k: v for k, v in vars(precision).items() if v is not None} if precision else {}

        def validate(outline: dict[str, Any]) -> Problem:  # a large input's, by its lengths
            return Problem.from_mapping({**outline, **chosen}, max_elements=limits.max_elements)

        doc = gather(
            source.source, source.preset, typed, stdin, isatty, limits.max_bytes, notes, validate
        )
    if precision is not None:  # --dtype, --policy: over the file's or preset's own
        doc.update({k: v for k, v in vars(precision).items() if v is not None})
    problem = Problem.from_mapping(doc, exact=show.exact, max_elements=limits.max_elements)
    if show.backward:  # the gradients too, from the problem's grad_output, target or attend
        problem = replace(problem, backward=True)
    del doc  # the parsed lists: at real-model sizes, 100 MB the engine does not need
    if problem.dtype is not None and modern.shuffle is not None:
        raise QkvcalcError("precision.with_option", option="--shuffle", dtype=problem.dtype)
    if problem.dtype is not None:  # the stages as the hardware computes them, beside float64
        from qkvcalc.run.precision import run as run_in

        trace = run_in(problem)
    elif modern.shuffle is not None:
        from qkvcalc.plan.shuffle import explain_shuffled, parse_order

        trace = explain_shuffled(problem, parse_order(modern.shuffle, problem.n))
    else:
        trace = run(problem)
    for note in notes:  # about the command line, not the problem: stderr, not the document
        say(f"{translate('ui.warning', lang)}: {note.text(lang)}")
    if view.stages is not None or view.head is not None:
        from qkvcalc.select import select

        trace = select(trace, view.stages, view.head)
    return trace


def _modern_values(modern: SimpleNamespace) -> dict[str, Any]:
    """Positions, their alignment and encoding, the features' options, decode and tiles as
    input keys (--positions "0 1 5" → [0, 1, 5]; shuffling is not a key)."""
    values = given(modern)
    positions = values.pop("positions")
    del values["shuffle"]
    features = {key: values.pop(key) for key in FEATURE_OPTIONS}
    return {
        "positions": positions.replace(",", " ").split() if positions else None,
        **values,
        **_feature_values(features),
    }


def _feature_values(given: dict[str, Any]) -> dict[str, Any]:
    """The plug-in features' options as input keys: --name V → "name": V; an option into a
    field of an object sets that field (FeatureOption.into); a flag given → true."""
    doc: dict[str, Any] = {}
    for key, option in FEATURE_OPTIONS.items():
        value = given.get(key)
        if value is None or value is False:
            continue
        value = value.value if isinstance(value, Enum) else value
        where = option.into or (key,)
        if len(where) == 1:
            doc[where[0]] = value
        else:
            doc.setdefault(where[0], {})[where[1]] = value
    return doc


def _random_doc(source: SimpleNamespace, typed: Mapping[str, object], lang: str) -> dict[str, Any]:
    """--random: the problem `qkvcalc quiz --random` makes from the same seed and size
    (qkvcalc.quiz.problems); its seed is said on stderr, so it can be had again."""
    from qkvcalc.i18n import translate
    from qkvcalc.quiz.problems import new_seed, parse_size, random_problem

    if not source.random:
        raise QkvcalcError("quiz.seed_without_random")
    named = [name for name, on in (("SOURCE", source.source), ("--preset", source.preset)) if on]
    # `is not None`, as gather reads them: --tiles 0 or --decode 0 is given, not ignored
    named += [f"--{name.replace('_', '-')}" for name, value in typed.items() if value is not None]
    if named:
        raise QkvcalcError("quiz.random_with_source", given=", ".join(named))
    n, d = parse_size(source.size or "3,2")
    seed = new_seed() if source.seed is None else source.seed
    doc = random_problem(seed, n, d)
    typer.echo(translate("explain.random_seed", lang, seed=seed, size=f"{n},{d}"), err=True)
    return doc
