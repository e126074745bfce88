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
from types import SimpleNamespace
from typing import Any

from qkvcalc.cli.common import check_writable, console, fail, is_utf, language, write_output
from qkvcalc.cli.extract import GIVEN, MODEL, RUN, loading, tokens, write_file
from qkvcalc.cli.options import DISPLAY, HIDDEN, Group, Opt, command
from qkvcalc.errors import QkvcalcError


class HeadsFormat(str, Enum):
    table = "table"
    html = "html"
    json = "json"


# what it shows: every head as a grid (in a format), or one head's problem
SHOWN = Group(
    "shown",
    (
        Opt("fmt", HeadsFormat | None, None, ("--format", "-f"), HIDDEN, "format"),
        Opt("layer", int | None, settings=HIDDEN),
        Opt("head", int | None, settings=HIDDEN),
    ),
)


@command("heads", MODEL, GIVEN, SHOWN, RUN, DISPLAY)
def heads(
    model: SimpleNamespace,
    given: SimpleNamespace,
    shown: SimpleNamespace,
    run: SimpleNamespace,
    display: SimpleNamespace,
) -> None:
    """Every layer's every head's attention weights at a glance."""
    lang_code, no_color = language(display.lang), display.no_color
    fmt, layer, head, output = shown.fmt, shown.layer, shown.head, run.output
    try:
        input_ids = tokens(given)
        if (layer is None) != (head is None):
            raise QkvcalcError("heads.layer_and_head")
        one_head = layer is not None and head is not None
        if one_head and fmt is not None:
            raise QkvcalcError("heads.format_with_head", format=fmt.value)
        chosen = fmt or HeadsFormat.table
        if output is not None:
            check_writable(output)
        from qkvcalc.extract import heads as library

        with loading(model.model, lang_code, no_color, "heads") as progress:
            common: dict[str, Any] = {
                "input_ids": input_ids,
                "text": given.text,
                "dtype": run.dtype.value,
                "lang": lang_code,
                "progress": progress,
            }
            if one_head:
                problem = library.head_problem(model.model, layer, head, **common)
            else:
                maps = library.attention_maps(
                    model.model, problems=chosen is HeadsFormat.html, **common
                )
                content = _render(maps, chosen, lang_code, no_color, output)
        if one_head:
            from qkvcalc.extract import write_problem

            if output is None:
                write_problem(problem, sys.stdout)
            else:
                write_file(problem, output)
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
