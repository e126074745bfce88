"""`qkvcalc presets [list|show NAME]`: the bundled presets, listed or printed as JSON."""

# Annotations evaluated at import, as in qkvcalc.cli.explain (typer reads them every run).
import sys
from typing import Annotated

import typer

from qkvcalc.cli.common import LangOption, NoColorOption, console, fail, help_text, language
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import preset_description, translate

presets_app = typer.Typer(
    help=help_text("help.presets"),
    invoke_without_command=True,
    rich_markup_mode=None,
)


@presets_app.callback()
def presets_list(
    ctx: typer.Context, lang: LangOption = None, no_color: NoColorOption = False
) -> None:
    """`qkvcalc presets [--lang ko] [--no-color]` lists them; a subcommand gets the --lang and
    --no-color given here."""
    ctx.obj = (lang, no_color)
    if ctx.invoked_subcommand is None:
        _print_presets(language(lang), no_color)


@presets_app.command("list", help=help_text("help.presets.list"))
def presets_list_cmd(
    ctx: typer.Context, lang: LangOption = None, no_color: NoColorOption = False
) -> None:
    given_lang, given_no_color = ctx.obj
    _print_presets(language(lang or given_lang), no_color or given_no_color)


def _print_presets(lang_code: str, no_color: bool) -> None:
    from rich.table import Table
    from rich.text import Text

    from qkvcalc.input import presets

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
    out = console(no_color)
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
    from qkvcalc.input import presets

    try:
        sys.stdout.write(presets.text(name))
    except QkvcalcError as err:
        fail(err, language(lang or ctx.obj[0]))
