"""`qkvcalc explain`: read a problem, compute every stage, and print it in one format.

Parses options, calls the library (sources → Problem → engine → render) and prints; nothing
else. Errors: a QkvcalcError becomes one message on stderr and exit 2, nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import inspect
import sys
from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from qkvcalc.cli.common import (
    Content,
    NoColorOption,
    PageLangOption,
    console,
    fail,
    help_text,
    is_utf,
    language,
    write_output,
)
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.fields import FEATURE_OPTIONS
from qkvcalc.input.limits import MAX_BYTES, MAX_ELEMENTS
from qkvcalc.render import FORMATS

# The formats are the renderers' table (qkvcalc.render.FORMATS), listed once, there.
if TYPE_CHECKING:
    Format = str
else:
    Format = Enum("Format", {name: name for name in FORMATS}, type=str)


class Align(str, Enum):
    top_left = "top-left"
    bottom_right = "bottom-right"


class Positional(str, Enum):
    sinusoidal = "sinusoidal"


class RopeStyle(str, Enum):
    half = "half"
    pairs = "pairs"


class Detail(str, Enum):
    full = "full"
    brief = "brief"


class Layout(str, Enum):
    rows = "rows"
    torch = "torch"


def explain(
    source: Annotated[
        str | None,
        typer.Argument(
            help=help_text("help.explain.source"),
            show_default=False,
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(help=help_text("help.explain.preset"), show_default=False),
    ] = None,
    random: Annotated[
        bool, typer.Option("--random", help=help_text("help.explain.random"))
    ] = False,
    seed: Annotated[
        int | None,
        typer.Option(help=help_text("help.explain.seed"), show_default=False),
    ] = None,
    size: Annotated[
        str | None,
        typer.Option(help=help_text("help.explain.size"), show_default=False),
    ] = None,
    x: Annotated[
        str | None,
        typer.Option("--x", help=help_text("help.explain.x"), show_default=False),
    ] = None,
    wq: Annotated[
        str | None, typer.Option("--wq", help=help_text("help.explain.wq"), show_default=False)
    ] = None,
    wk: Annotated[
        str | None, typer.Option("--wk", help=help_text("help.explain.wk"), show_default=False)
    ] = None,
    wv: Annotated[
        str | None, typer.Option("--wv", help=help_text("help.explain.wv"), show_default=False)
    ] = None,
    wo: Annotated[
        str | None,
        typer.Option("--wo", help=help_text("help.explain.wo"), show_default=False),
    ] = None,
    tokens: Annotated[
        str | None,
        typer.Option(help=help_text("help.explain.tokens"), show_default=False),
    ] = None,
    mask: Annotated[
        str | None,
        typer.Option(help=help_text("help.explain.mask"), show_default=False),
    ] = None,
    heads: Annotated[
        int | None, typer.Option(help=help_text("help.explain.heads"), min=1, show_default=False)
    ] = None,
    kv_heads: Annotated[
        int | None,
        typer.Option(help=help_text("help.explain.kv_heads"), min=1, show_default=False),
    ] = None,
    scale: Annotated[
        str | None,
        typer.Option(
            help=help_text("help.explain.scale"),
            show_default=False,
        ),
    ] = None,
    layout: Annotated[
        Layout | None,
        typer.Option(
            help=help_text("help.explain.layout"),
            show_default=False,
        ),
    ] = None,
    positions: Annotated[
        str | None, typer.Option(help=help_text("help.explain.positions"), show_default=False)
    ] = None,
    causal_align: Annotated[
        Align | None,
        typer.Option(help=help_text("help.explain.causal_align"), show_default=False),
    ] = None,
    positional: Annotated[
        Positional | None,
        typer.Option(help=help_text("help.explain.positional"), show_default=False),
    ] = None,
    rope: Annotated[
        float | None, typer.Option(help=help_text("help.explain.rope"), show_default=False)
    ] = None,
    rope_style: Annotated[
        RopeStyle | None,
        typer.Option(help=help_text("help.explain.rope_style"), show_default=False),
    ] = None,
    rope_dims: Annotated[
        int | None,
        typer.Option(help=help_text("help.explain.rope_dims"), min=2, show_default=False),
    ] = None,
    alibi: Annotated[bool, typer.Option("--alibi", help=help_text("help.explain.alibi"))] = False,
    decode: Annotated[
        int | None,
        typer.Option(help=help_text("help.explain.decode"), show_default=False, metavar="P"),
    ] = None,
    tiles: Annotated[
        int | None,
        typer.Option(help=help_text("help.explain.tiles"), show_default=False, metavar="B"),
    ] = None,
    shuffle: Annotated[
        str | None,
        typer.Option(help=help_text("help.explain.shuffle"), show_default=False, metavar="ORDER"),
    ] = None,
    format: Annotated[
        Format | None,
        typer.Option(
            "--format",
            "-f",
            help=help_text("help.explain.format"),
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help=help_text("help.explain.output"),
            show_default=False,
        ),
    ] = None,
    detail: Annotated[Detail, typer.Option(help=help_text("help.explain.detail"))] = Detail.full,
    precision: Annotated[
        int, typer.Option(help=help_text("help.explain.precision"), min=0, max=15)
    ] = 4,
    exact: Annotated[bool, typer.Option("--exact", help=help_text("help.explain.exact"))] = False,
    worksheet: Annotated[
        bool, typer.Option("--worksheet", help=help_text("help.explain.worksheet"))
    ] = False,
    lang: PageLangOption = None,
    no_color: NoColorOption = False,
    max_bytes: Annotated[
        int, typer.Option(help=help_text("help.explain.max_bytes"), min=1)
    ] = MAX_BYTES,
    max_elements: Annotated[
        int,
        typer.Option(help=help_text("help.explain.max_elements"), min=1),
    ] = MAX_ELEMENTS,
    step: Annotated[bool, typer.Option("--step", help=help_text("step.option_help"))] = False,
    stages: Annotated[
        str | None,
        typer.Option(help=help_text("help.explain.stages"), show_default=False),
    ] = None,
    head: Annotated[
        int | None,
        typer.Option(help=help_text("help.explain.head"), show_default=False),
    ] = None,
    **features: Any,  # the plug-in features' options: see _with_feature_options
) -> None:
    """Compute attention for a problem and show every stage, with each cell's arithmetic."""
    lang_code = language(lang)
    try:
        from qkvcalc.input.problem import Problem
        from qkvcalc.input.sources import gather
        from qkvcalc.render import FOLLOWS_TERMINAL, PAGE_WIDTH, RenderOptions, format_for, render
        from qkvcalc.run.engine import run

        if step and output is not None:
            raise QkvcalcError("step.with_output")
        chosen = None if format is None else str(getattr(format, "value", format))
        if step and chosen is not None and chosen not in ("table", "txt"):
            raise QkvcalcError("step.with_format", format=chosen)
        fmt = chosen or (format_for(output) if output is not None else "table")
        langs = tuple(lang.value.split(",")) if lang is not None else ()
        if len(langs) > 1 and fmt != "html":  # two languages: only a page holds both
            raise QkvcalcError("page.two_langs_html", langs=",".join(langs), format=fmt)
        if worksheet and fmt in ("json", "torch"):  # data and code hold every computed number
            raise QkvcalcError("explain.worksheet_format", format=fmt)
        inline = {
            "x": x,
            "wq": wq,
            "wk": wk,
            "wv": wv,
            "wo": wo,
            "tokens": tokens,
            "mask": mask,
            "heads": heads,
            "kv_heads": kv_heads,
            "scale": scale,
            "layout": layout.value if layout else None,
            "positions": positions.replace(",", " ").split() if positions else None,
            "causal_align": causal_align.value if causal_align else None,
            "positional": positional.value if positional else None,
            "rope": _rope(rope, rope_style, rope_dims),
            "alibi": True if alibi else None,
            **{key: features.get(key) for key in FEATURE_OPTIONS},
            "decode": decode,
            "tiles": tiles,
        }
        notes: list[Msg] = []  # what gathering the input changed on the way (tokens dropped …)
        if random or seed is not None or size is not None:
            doc = _random_doc(random, seed, size, source, preset, inline, lang_code)
        else:
            stdin = sys.stdin.buffer
            doc = gather(source, preset, inline, stdin, sys.stdin.isatty(), max_bytes, notes)
        problem = Problem.from_mapping(doc, exact=exact, max_elements=max_elements)
        del doc  # the parsed lists: at real-model sizes, 100 MB the engine does not need
        if shuffle is not None:
            from qkvcalc.plan.shuffle import explain_shuffled, parse_order

            trace = explain_shuffled(problem, parse_order(shuffle, problem.n))
        else:
            trace = run(problem)
        if notes:
            trace = replace(trace, warnings=(*notes, *trace.warnings))
        if stages is not None or head is not None:
            from qkvcalc.select import select

            trace = select(trace, stages, head)
        # Only a table printed on a terminal follows its width (and colours, unless it is
        # txt); every other format, and any file, is laid out for the page (PAGE_WIDTH).
        width, color = PAGE_WIDTH, False
        if output is None and fmt in FOLLOWS_TERMINAL:
            terminal = console(no_color)
            width, color = terminal.width, terminal.color_system is not None and fmt == "table"
        opts = RenderOptions(
            lang=lang_code,
            precision=precision,
            detail=detail.value,
            width=width,
            color=color,
            exact=exact,
            worksheet=worksheet,
            langs=langs if len(langs) > 1 else (),
        )
        if step:
            from qkvcalc.interactive.step import step_through

            step_through(trace, opts, no_color=no_color)
            return
        if fmt == "json":  # streamed, stage by stage: a real layer's trace is over a GB of text
            from qkvcalc.render.json_doc import write_json

            def content(out: IO[str]) -> None:
                write_json(trace, opts, out, ascii_only=not is_utf(out))

            write: Content = content
        else:
            write = render(trace, fmt, opts)
    except QkvcalcError as err:
        fail(err, lang_code)
    if output is not None:
        try:
            write_output(write, output)
        except QkvcalcError as err:
            fail(err, lang_code)
    else:
        if isinstance(write, str):
            sys.stdout.write(write)
        else:
            write(sys.stdout)
        sys.stdout.flush()


def _with_feature_options(command: Any) -> None:
    """One option per plug-in feature that the fields table lists (FEATURE_OPTIONS), placed in
    the command's signature after the option it names, where typer reads it; the command
    receives them in **features. A new feature's option is a line in the fields table."""
    signature = inspect.signature(command)
    params = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in signature.parameters.values()
        if p.kind is not p.VAR_KEYWORD
    ]
    for key, (kind, help_key, after, settings) in FEATURE_OPTIONS.items():
        option = typer.Option(help=help_text(help_key), show_default=False, **settings)
        annotation = Annotated[kind | None, option]  # type: ignore[valid-type]  # built at run time
        param = inspect.Parameter(
            key, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
        )
        params.insert([p.name for p in params].index(after) + 1, param)
    command.__signature__ = signature.replace(parameters=params)


def _rope(theta: float | None, style: "RopeStyle | None", dims: int | None) -> dict | None:
    """--rope THETA --rope-style half|pairs --rope-dims R, as the input format's rope object."""
    if theta is None and style is None and dims is None:
        return None
    rope: dict[str, object] = {} if theta is None else {"theta": theta}
    if style is not None:
        rope["style"] = style.value
    if dims is not None:
        rope["dims"] = dims
    return rope


def _random_doc(
    random: bool,
    seed: int | None,
    size: str | None,
    source: str | None,
    preset: str | None,
    inline: Mapping[str, object],
    lang: str,
) -> dict[str, Any]:
    """--random: the problem `qkvcalc quiz --random` makes from the same seed and size
    (qkvcalc.quiz.problems); its seed is said on stderr, so it can be had again."""
    from qkvcalc.i18n import translate
    from qkvcalc.quiz.problems import new_seed, parse_size, random_problem

    if not random:
        raise QkvcalcError("quiz.seed_without_random")
    given = [name for name, on in (("SOURCE", source), ("--preset", preset)) if on]
    # `is not None`, as gather reads them: --tiles 0 or --decode 0 is given, not ignored
    given += [f"--{name.replace('_', '-')}" for name, value in inline.items() if value is not None]
    if given:
        raise QkvcalcError("quiz.random_with_source", given=", ".join(given))
    n, d = parse_size(size or "3,2")
    seed = new_seed() if seed is None else seed
    doc = random_problem(seed, n, d)
    typer.echo(translate("explain.random_seed", lang, seed=seed, size=f"{n},{d}"), err=True)
    return doc


_with_feature_options(explain)
