"""The command line: parse options, load the problem, call the engine, pick a renderer, print.

No math here and no formatting of numbers: those live in the engine and the renderers.
Errors: a QkvcalcError becomes one message on stderr and exit 2, with nothing on stdout.
"""

# Annotations here are evaluated once, at import (no `from __future__ import annotations`):
# typer reads the commands' signatures on every run, and string annotations would make it
# eval every option's again on every run (about 10 ms).
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from qkvcalc import __version__
from qkvcalc.cli_common import (
    EXIT_INTERRUPTED,
    LangOption,
    NoColorOption,
    console,
    fail,
    help_text,
    language,
    write_output,
)
from qkvcalc.cli_quiz import register as register_quiz
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import preset_description, resolve_lang, translate

app = typer.Typer(
    name="qkvcalc",
    help=help_text("help.app"),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)
presets_app = typer.Typer(
    help=help_text("help.presets"),
    invoke_without_command=True,
    rich_markup_mode=None,
)
app.add_typer(presets_app, name="presets")


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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"qkvcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help=help_text("help.version")),
    ] = False,
) -> None:
    """qkvcalc: scaled dot-product attention, stage by stage."""


@app.command(help=help_text("help.explain"))
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
        text = render(trace, fmt, opts)
    except QkvcalcError as err:
        fail(err, lang_code)
    if output is not None:
        try:
            write_output(text, output)
        except QkvcalcError as err:
            fail(err, lang_code)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


@presets_app.callback()
def presets_list(ctx: typer.Context, lang: LangOption = None) -> None:
    """`qkvcalc presets [--lang ko]` lists them; a subcommand gets the --lang given here."""
    ctx.obj = lang
    if ctx.invoked_subcommand is None:
        _print_presets(language(lang))


@presets_app.command("list", help=help_text("help.presets.list"))
def presets_list_cmd(ctx: typer.Context, lang: LangOption = None) -> None:
    _print_presets(language(lang or ctx.obj))


def _print_presets(lang_code: str) -> None:
    from rich.table import Table
    from rich.text import Text

    from qkvcalc import presets

    table = Table(
        title=translate("ui.presets_title", lang_code), title_justify="left", show_edge=False
    )
    table.add_column(translate("ui.presets_name", lang_code), style="bold", no_wrap=True)
    table.add_column(translate("ui.presets_description", lang_code))
    try:
        names = presets.names()
    except QkvcalcError as err:
        fail(err, lang_code)
    for name in names:
        written = str(presets.load(name).get("description", ""))
        table.add_row(Text(name), Text(preset_description(name, written, lang_code)))
    out = console(False)
    with out.capture() as capture:
        out.print(table)
        out.print(Text(translate("ui.presets_hint", lang_code), style="dim"))
    text = capture.get()
    if out.color_system is None:  # a pipe or a file: no padding at the ends of the lines
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    sys.stdout.write(text)


@presets_app.command("show", help=help_text("help.presets.show"))
def presets_show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help=help_text("help.presets.name"))],
    lang: LangOption = None,
) -> None:
    from qkvcalc import presets

    try:
        sys.stdout.write(presets.text(name))
    except QkvcalcError as err:
        fail(err, language(lang or ctx.obj))


def main() -> None:
    """The console script: typer's app, plus quiet endings for Ctrl-C and a closed pipe."""
    try:
        app()
    except KeyboardInterrupt:
        # typer ends a running command on Ctrl-C itself (exit 130, no message); this is for a
        # Ctrl-C while typer is still building the commands, before any of them runs
        typer.echo(translate("cli.interrupted", resolve_lang()), err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        # the reader went away (qkvcalc … | head -1): stop quietly, as cat does
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)


register_quiz(app)  # quiz and new, after explain: the order --help lists them in
