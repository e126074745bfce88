"""Renderers: each turns a Trace into text (or a rich renderable) and returns it; none prints.

`render(trace, fmt, options)` dispatches on the --format name; the table of formats is
FORMATS, and each entry names the module that holds it, imported only when used.
`format_for(path)` picks a format from a file name, as `--output FILE` does.

Width: only `table` (and `txt`, its plain text) follows the terminal it is printed on; every
other format is a document
(or data) laid out for PAGE_WIDTH columns, the same on stdout as in a file.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qkvcalc.records import NamedTuple

if TYPE_CHECKING:
    from qkvcalc.trace import Trace


class RenderOptions(NamedTuple):
    """How to render: language, precision, detail and the size of the page or screen.

    A NamedTuple rather than a dataclass: the CLI builds one on every run, and a class of
    ten dataclass fields costs 2 ms to create at import; change one with ._replace(width=…).
    """

    lang: str = "en"
    precision: int = 4
    detail: str = "full"  # full: per-cell arithmetic where it fits; brief: tables only
    width: int = 100  # columns available (the terminal's for `table`, else PAGE_WIDTH)
    color: bool = True
    exact: bool = False
    max_rows: int = 12  # a table shows at most this many rows, eliding the middle
    arithmetic_cells: int = 64  # write each cell's arithmetic out up to this many cells …
    arithmetic_terms: int = 8  # … each a sum of at most this many products
    worksheet: bool = False  # inputs filled in, computed cells blank (qkvcalc.render.worksheet)
    langs: tuple[str, ...] = ()  # the html page: every language it holds, the first shown


# --format name -> (module, function); the function takes (trace, options) and returns str.
FORMATS: dict[str, tuple[str, str]] = {
    "table": ("qkvcalc.render.terminal", "render_text"),
    "txt": ("qkvcalc.render.terminal", "render_plain"),  # the table without colour
    "json": ("qkvcalc.render.json_doc", "render_json"),
    "markdown": ("qkvcalc.render.markdown", "render_markdown"),
    "latex": ("qkvcalc.render.latex", "render_latex"),
    "html": ("qkvcalc.render.html", "render_html"),
    "svg": ("qkvcalc.render.svg", "render_svg"),
    "torch": ("qkvcalc.render.torch_script", "render_torch"),
}

# --output FILE picks the format from the extension unless --format says otherwise.
EXTENSIONS: dict[str, str] = {
    ".json": "json",
    ".txt": "txt",
    ".md": "markdown",
    ".tex": "latex",
    ".html": "html",
    ".htm": "html",
    ".svg": "svg",
    ".py": "torch",
}


# The formats that lay a trace out as a page: with detail "brief", a head's per-token steps
# past RenderOptions.max_rows show as the first two and the last (Trace.brief); JSON and torch
# hold every stage
BRIEF_STEPS = ("table", "txt", "markdown", "latex", "html", "svg")

PAGE_WIDTH = 100  # the width of every format but `table`, wherever it is written
# the format laid out at the terminal's width on standard output (and --step, in either of
# its formats, table or txt); txt is a document, 100 columns on standard output as in a file
FOLLOWS_TERMINAL = ("table",)


def format_for(path: str | os.PathLike[str], default: str = "table") -> str:
    """The format a file name asks for by its extension ('out.md' -> 'markdown'); `default`
    for a name without one. An extension no format has is a QkvcalcError naming the known."""
    from qkvcalc.errors import QkvcalcError

    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if not suffix:
        return default
    if suffix not in EXTENSIONS:
        raise QkvcalcError(
            "export.output_extension", path=os.fspath(path), ext=suffix, known=" ".join(EXTENSIONS)
        )
    return EXTENSIONS[suffix]


def renderer(fmt: str) -> Callable[[Trace, RenderOptions], str]:
    module, name = FORMATS[fmt]
    fn: Callable[[Trace, RenderOptions], str] = getattr(importlib.import_module(module), name)
    return fn


def render(
    trace: Trace, fmt: str = "table", options: RenderOptions | None = None, **changes: Any
) -> str:
    """The trace in one format, as text: `render(trace, "markdown")`, or with options changed,
    `render(trace, "table", lang="ko", precision=2, width=80)` (see RenderOptions)."""
    if fmt not in FORMATS:
        from qkvcalc.errors import QkvcalcError

        raise QkvcalcError("export.unknown_format", format=fmt, known=", ".join(FORMATS))
    # a trace computed exactly is shown exactly unless asked otherwise
    opts = (options or RenderOptions(color=False, exact=trace.exact))._replace(**changes)
    if opts.detail == "brief" and fmt in BRIEF_STEPS:
        trace = trace.brief(opts.max_rows)  # a head's many steps: the first two and the last
    return renderer(fmt)(trace, opts)


class _Callable(types.ModuleType):
    """`qkvcalc.render(trace, "markdown")`: the package is the function. Importing the package
    makes it the attribute `render` of qkvcalc, so a function of that name there would be
    replaced by it; calling the package instead means both spellings always work."""

    def __call__(
        self, trace: Trace, fmt: str = "table", options: RenderOptions | None = None, **changes: Any
    ) -> str:
        return render(trace, fmt, options, **changes)


sys.modules[__name__].__class__ = _Callable
