"""`qkvcalc explain`: read a problem, compute every stage, and print it in one format.

Parses options, calls the library (sources → Problem → engine → render) and prints; nothing
else. Errors: a QkvcalcError becomes one message on stderr and exit 2, nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import sys
from enum import Enum
from pathlib import Path
from typing import IO, Annotated

import typer

from qkvcalc.cli.common import (
    Content,
    LangOption,
    NoColorOption,
    console,
    fail,
    help_text,
    is_utf,
    language,
    write_output,
)
from qkvcalc.errors import QkvcalcError


class Format(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    html = "html"
    svg = "svg"
    torch = "torch"


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
    lang: LangOption = None,
    no_color: NoColorOption = False,
    max_bytes: Annotated[
        int, typer.Option(help=help_text("help.explain.max_bytes"), min=1)
    ] = 100_000_000,
    max_elements: Annotated[
        int,
        typer.Option(help=help_text("help.explain.max_elements"), min=1),
    ] = 100_000_000,
    step: Annotated[bool, typer.Option("--step", help=help_text("step.option_help"))] = False,
) -> None:
    """Compute attention for a problem and show every stage, with each cell's arithmetic."""
    lang_code = language(lang)
    try:
        from qkvcalc.engine import run
        from qkvcalc.problem import Problem
        from qkvcalc.render import EXTENSIONS, RenderOptions, render
        from qkvcalc.sources import gather

        if step and output is not None:
            raise QkvcalcError("step.with_output")
        if step and format is not None and format is not Format.table:
            raise QkvcalcError("step.with_format", format=format.value)
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
        }
        doc = gather(source, preset, inline, sys.stdin.buffer, sys.stdin.isatty(), max_bytes)
        problem = Problem.from_mapping(doc, exact=exact, max_elements=max_elements)
        del doc  # the parsed lists: at real-model sizes, 100 MB the engine does not need
        trace = run(problem)
        fmt = format.value if format else "table"
        if output is not None and format is None and output.suffix:
            if output.suffix.lower() not in EXTENSIONS:
                raise QkvcalcError(
                    "export.output_extension",
                    path=str(output),
                    ext=output.suffix,
                    known=" ".join(EXTENSIONS),
                )
            fmt = EXTENSIONS[output.suffix.lower()]
        width, color = 100, False  # a file gets a pinned width, and no colour
        if output is None and fmt not in ("json", "torch"):  # those two are the same at any width
            terminal = console(no_color)
            width, color = terminal.width, terminal.color_system is not None and fmt == "table"
        opts = RenderOptions(
            lang=lang_code,
            precision=precision,
            detail=detail.value,
            width=width,
            color=color,
            exact=exact,
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
