"""`qkvcalc heads MODEL (--ids "…" | --text "…") [--format table|html|json]`: every layer's every
head's attention weights as a grid of small heatmaps, from one run of a Hugging Face model;
`--layer L --head H` writes that head's problem instead, as `qkvcalc extract` writes a layer.

Parses options, calls qkvcalc.extract.heads with a status on stderr while the model loads and
runs, and prints what the renderers return; nothing else. Errors: one message on stderr, exit 2,
nothing on stdout.
"""

# Annotations evaluated at import, as in qkvcalc.cli.explain (typer reads them every run).
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from qkvcalc.cli.common import (
    LangOption,
    NoColorOption,
    check_writable,
    console,
    fail,
    help_text,
    is_utf,
    language,
    write_output,
)
from qkvcalc.cli.extract import Dtype, _ids, _quiet_transformers
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate


class HeadsFormat(str, Enum):
    table = "table"
    html = "html"
    json = "json"


def heads(
    model: Annotated[str, typer.Argument(help=help_text("help.heads.model"), show_default=False)],
    ids: Annotated[
        str | None, typer.Option("--ids", help=help_text("help.heads.ids"), show_default=False)
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", help=help_text("help.heads.text"), show_default=False)
    ] = None,
    fmt: Annotated[
        HeadsFormat | None,
        typer.Option("--format", "-f", help=help_text("help.heads.format"), show_default=False),
    ] = None,
    layer: Annotated[
        int | None, typer.Option(help=help_text("help.heads.layer"), show_default=False)
    ] = None,
    head: Annotated[
        int | None, typer.Option(help=help_text("help.heads.head"), show_default=False)
    ] = None,
    dtype: Annotated[Dtype, typer.Option(help=help_text("help.heads.dtype"))] = Dtype.auto,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help=help_text("help.heads.output"), show_default=False),
    ] = None,
    lang: LangOption = None,
    no_color: NoColorOption = False,
) -> None:
    """Every layer's every head's attention weights at a glance."""
    lang_code = language(lang)
    try:
        if (ids is None) == (text is None):
            raise QkvcalcError("extract.input_choice")
        if (layer is None) != (head is None):
            raise QkvcalcError("heads.layer_and_head")
        one_head = layer is not None and head is not None
        if one_head and fmt is not None:
            raise QkvcalcError("heads.format_with_head", format=fmt.value)
        chosen = fmt or HeadsFormat.table
        input_ids = _ids(ids) if ids is not None else None
        if output is not None:
            check_writable(output)
        from qkvcalc.extract import heads as library
        from qkvcalc.extract.runner import require_models

        # the status ends before anything is written (see qkvcalc.cli.extract)
        loading = translate("extract.loading", lang_code, model=model)
        with console(no_color, stderr=True).status(loading) as status:
            _quiet_transformers()
            require_models()
            _quiet_transformers()
            common: dict[str, Any] = {
                "input_ids": input_ids,
                "text": text,
                "dtype": dtype.value,
                "lang": lang_code,
                "progress": lambda msg: status.update(msg.text(lang_code)),
            }
            if layer is not None and head is not None:
                problem = library.head_problem(model, layer, head, **common)
            else:
                run = library.attention_maps(model, problems=chosen is HeadsFormat.html, **common)
                content = _render(run, chosen, lang_code, no_color, output)
        if one_head:
            from qkvcalc.extract import write_problem

            if output is None:
                write_problem(problem, sys.stdout)
            else:
                write_output(lambda stream: write_problem(problem, stream), output)
        elif output is None:
            sys.stdout.write(content)
        else:
            write_output(content, output)
        sys.stdout.flush()
    except QkvcalcError as err:
        fail(err, lang_code)


def _render(run: Any, fmt: HeadsFormat, lang: str, no_color: bool, output: Path | None) -> str:
    if fmt is HeadsFormat.json:
        import json

        from qkvcalc.extract.heads import to_json

        return json.dumps(to_json(run), ensure_ascii=False) + "\n"
    if fmt is HeadsFormat.html:
        from qkvcalc.extract.heads import page

        return page(run, lang)
    from qkvcalc.render import PAGE_WIDTH
    from qkvcalc.render.heads import heads_text

    if output is not None:  # a file: the page's width, no colour
        return heads_text(run, lang, PAGE_WIDTH)
    terminal = console(no_color)
    color = terminal.color_system is not None
    return heads_text(run, lang, terminal.width, color, ascii_only=not is_utf(sys.stdout))
