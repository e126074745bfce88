"""Renderers: each turns a Trace into text (or a rich renderable) and returns it; none prints.

`render(trace, fmt, options)` dispatches on the --format name; the table of formats is
FORMATS, and each entry names the module that holds it, imported only when used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

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
    width: int = 100  # columns available (the terminal's, or a pinned one)
    color: bool = True
    exact: bool = False
    max_rows: int = 12  # a table shows at most this many rows, eliding the middle
    arithmetic_cells: int = 64  # write each cell's arithmetic out up to this many cells …
    arithmetic_terms: int = 8  # … each a sum of at most this many products


# --format name -> (module, function); the function takes (trace, options) and returns str.
FORMATS: dict[str, tuple[str, str]] = {
    "table": ("qkvcalc.render.terminal", "render_text"),
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
    ".txt": "table",
    ".md": "markdown",
    ".tex": "latex",
    ".html": "html",
    ".htm": "html",
    ".svg": "svg",
    ".py": "torch",
}


def renderer(fmt: str) -> Callable[[Trace, RenderOptions], str]:
    module, name = FORMATS[fmt]
    fn: Callable[[Trace, RenderOptions], str] = getattr(importlib.import_module(module), name)
    return fn


def render(trace: Trace, fmt: str, options: RenderOptions) -> str:
    return renderer(fmt)(trace, options)
