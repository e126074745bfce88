"""The SVG rendering: a picture of the terminal rendering, with its colours, for slides.

The terminal rendering (terminal.render_trace) printed on a recording console of a pinned
width, then rich's export_svg. Always in colour: an SVG is a picture for a slide, and its
colours never carry information alone (every weight is printed as a number). rich escapes
the text it writes into the SVG, and the console reads no markup from token names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions
from qkvcalc.render.terminal import make_console, render_trace
from qkvcalc.render.text import safe

if TYPE_CHECKING:
    from qkvcalc.trace import Trace


def svg_title(trace: Trace, opts: RenderOptions) -> str:
    name = trace.problem.meta.get("name")
    title = f"qkvcalc · {translate('export.title', opts.lang)}"
    return f"{title} · {safe(name)}" if name else title


def render_svg(trace: Trace, opts: RenderOptions) -> str:
    """The terminal rendering of the whole derivation as an SVG image of opts.width columns."""
    opts = opts._replace(color=True)
    console = make_console(opts)  # pinned width, truecolor, no markup, whatever the env says
    console.record = True
    console.print(render_trace(trace, opts))
    return console.export_svg(title=svg_title(trace, opts))
