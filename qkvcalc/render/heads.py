"""`qkvcalc heads`: every layer's every head's attention weights as a grid of small heatmaps.

`heads_table(run, lang, width)` is the terminal's: one block of shaded cells per head (its rows
the queries, its columns the keys), the heads of a layer side by side, one row of blocks per
layer, wrapped onto more rows when they do not fit the width. The shade is a character
("·░▒▓█", or ".:-=#" on a terminal that cannot show them), so the picture reads without
colour too; colour deepens it where the console has some.

`heads_html(run, lang, explanations)` is one self-contained page (no script, no network): the
grid of every head as small tables of coloured cells, each a link to its own section (shown
when it is the page's target, CSS :target) with the head's full weights, numbered, the command
that writes it as a problem, and its explanation by qkvcalc's HTML writer when given. Every
piece of input text (tokens, the model's name) is escaped. Written small, for 72 explanations
and more: their stylesheet once, each heat colour once as a class (Palette), no optional end
tags (compact); what the browser shows is the writer's own (tests/test_heads_page.py).

These take a HeadsRun (qkvcalc.extract.heads) as it is: they format numbers, never compute.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

import numpy as np

from qkvcalc.i18n import translate
from qkvcalc.labels import display_width, safe
from qkvcalc.render.html import STYLE as EXPLAINED  # the explanations' style
from qkvcalc.render.html import heat

RAMP = "·░▒▓█"  # a dot for (next to) no weight, so that every block keeps its shape
ASCII_RAMP = ".:-=#"
LABEL_WIDTH = 10  # the column of the layer labels
GAP = 2  # between two blocks


def _level(weight: float, steps: int) -> int:
    """0 for no weight … steps − 1 for all of it (NaN: 0)."""
    if not np.isfinite(weight):
        return 0
    if weight <= 0.02:
        return 0
    return min(steps - 1, max(1, round(weight * (steps - 1) + 0.2)))


def _colour(weight: float) -> str:
    """The shade's colour on a terminal: pale grey-blue for no weight to deep blue for all."""
    w = min(max(float(weight), 0.0), 1.0) if np.isfinite(weight) else 0.0
    r, g, b = (int(a + w * (c - a)) for a, c in ((170, 20), (180, 70), (200, 210)))
    return f"rgb({r},{g},{b})"


# ---- a linear-attention layer's implicit matrices: signed, drawn by |W| ----------------------

NEGATIVE = "-"  # after a cell's shade: the cell is negative
ASCII_NEGATIVE = "~"  # the same where the ramp is ASCII_RAMP (whose middle shade is "-")


def largest(layer: np.ndarray) -> float:
    """The largest finite |W| of a layer's matrices (0 when there is none)."""
    found = np.abs(np.asarray(layer, dtype=float))
    return float(found[np.isfinite(found)].max(initial=0.0))


def shown_largest(value: float) -> str:
    """How a legend says the largest |W|: four significant digits."""
    return f"{value:.4g}"


def _signed_colour(weight: float, top: float) -> str:
    """A signed cell's colour on a terminal: its |W| / top as _colour's blue when positive, the
    same depth in red when negative."""
    w = abs(float(weight)) / top if top > 0 and np.isfinite(weight) else 0.0
    if weight >= 0 or not np.isfinite(weight):
        return _colour(w)
    w = min(w, 1.0)
    r, g, b = (int(a + w * (c - a)) for a, c in ((200, 200), (180, 30), (170, 30)))
    return f"rgb({r},{g},{b})"


def _negative(ramp: str) -> str:
    return ASCII_NEGATIVE if ramp == ASCII_RAMP else NEGATIVE


def _signed_shade(weight: float, top: float, ramp: str) -> str:
    """Two characters: the shade of |W| / top on the ramp, then the negative mark for a
    negative cell (else the shade again, or a space after the ramp's first)."""
    w = abs(float(weight)) / top if top > 0 and np.isfinite(weight) else 0.0
    level = _level(w, len(ramp))
    negative = np.isfinite(weight) and weight < 0
    mark = _negative(ramp) if negative else (ramp[level] if level else " ")
    return ramp[level] + mark


def title(run: Any, lang: str) -> str:
    """The grid's title: its layers and heads (a hybrid's implicit matrices counted apart)."""
    common = {"model": safe(run.model), "arch": run.arch, "n": len(run.tokens), "dtype": run.dtype}
    if not run.implicit:
        return translate("heads.title", lang, layers=len(run.weights), heads=run.heads, **common)
    return translate(
        "heads.title_implicit",
        lang,
        layers=len(run.weights) - len(run.implicit),
        heads=run.heads,
        linear=len(run.implicit),
        linear_heads=run.linear_heads,
        **common,
    )


def command(run: Any, layer: int | str, head: int | str) -> str:
    """The command that writes one head's problem (the ids, so that it is exact)."""
    ids = " ".join(str(i) for i in run.ids)
    return (
        # the whole path (a command cut short runs nothing), its control characters made visible
        f"qkvcalc heads {shlex.quote(safe(run.source, len(run.source) + 1))} "
        f"--ids {shlex.quote(ids)} "
        f"--layer {layer} --head {head}"
    )


def _token_list(tokens: Sequence[str]) -> str:
    return "  ".join(f"{k}:{safe(t, 24)}" for k, t in enumerate(tokens, 1))


def how_to_read(run: Any) -> str:
    """The key of the sentence that says what a shade means: a softmax weight from 0 to 1, an
    implicit matrix's |W| on its layer's own scale, or both when the page holds both."""
    if not run.implicit:
        return "heads.how_to_read"
    if set(run.implicit) >= set(run.layers):
        return "heads.how_to_read_implicit"
    return "heads.how_to_read_mixed"


def heads_table(run: Any, lang: str = "en", width: int = 100, ascii_only: bool = False) -> Any:
    """The grid for a terminal of `width` columns, as a rich renderable."""
    from rich.console import Group
    from rich.text import Text

    ramp = ASCII_RAMP if ascii_only else RAMP
    n = len(run.tokens)
    room = max(1, width - LABEL_WIDTH)
    # two characters make a cell about square; an implicit matrix's always two (its sign mark)
    cells = {i: 2 if n <= 16 or i in run.implicit else 1 for i in run.layers}
    out: list[Any] = [
        Text(title(run, lang), style="bold"),
        *[Text(other.text(lang)) for other in (*run.others, *run.notes)],
        Text(translate(how_to_read(run), lang, ramp=repr(ramp))),
        Text(f"{translate('heads.tokens', lang)}: {_token_list(run.tokens)}"),
    ]
    if n * max(cells.values(), default=1) > room:
        out.append(Text(translate("heads.too_wide", lang, n=n), style="yellow"))
    for index, layer in zip(run.layers, run.weights, strict=True):
        out.append(Text(""))
        top = largest(layer) if index in run.implicit else 0.0
        if index in run.implicit:
            legend = translate(
                "heads.implicit_legend",
                lang,
                layer=index,
                kind=run.implicit[index],
                ramp=repr(ramp),
                largest=shown_largest(top),
                mark=repr(_negative(ramp)),
            )
            out.append(Text(legend, style="italic"))
        out += _layer_rows(run, index, layer, cells[index], room, lang, ramp, top)
    out.append(Text(""))
    out.append(Text(translate("heads.open_one", lang, command=command(run, "L", "H"))))
    return Group(*out)


def _layer_rows(
    run: Any, index: int, layer: Any, cell: int, room: int, lang: str, ramp: str, top: float
) -> list[Any]:
    """A layer's blocks, as many side by side as fit `room`: shaded by weight, or (an implicit
    matrix, `top` its layer's largest |W|) by |W| / top with negative cells marked."""
    from rich.text import Text

    n = len(run.tokens)
    block = n * cell
    per_line = max(1, (room + GAP) // (block + GAP))
    out: list[Any] = []
    for start in range(0, len(layer), per_line):
        shown = range(start, min(start + per_line, len(layer)))
        label = translate("heads.layer", lang, layer=index) if start == 0 else ""
        header = Text(_pad(label, LABEL_WIDTH))
        for h in shown:
            name = translate("heads.head_label", lang, head=h + 1)
            header.append(_pad(name, block + GAP))
        out.append(header)
        for i in range(n):
            line = Text(" " * LABEL_WIDTH, no_wrap=True, overflow="crop")
            for h in shown:
                for j in range(n):
                    w = float(layer[h, i, j])
                    if index in run.implicit:
                        line.append(_signed_shade(w, top, ramp), style=_signed_colour(w, top))
                        continue
                    level = _level(w, len(ramp))
                    shade = ramp[level] * cell if level else ramp[0].ljust(cell)
                    line.append(shade, style=_colour(w))
                line.append(" " * GAP)
            out.append(line)
    return out


def _pad(text: str, width: int) -> str:
    return text + " " * max(1, width - display_width(text))


# ---- HTML ---------------------------------------------------------------------------------

STYLE = """
body { margin: 0 auto; max-width: 90em; padding: 1em 2em; color: #111; background: #fff;
  font-family: system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans KR", sans-serif; }
.grid .layer { display: flex; flex-wrap: nowrap; align-items: flex-start; gap: 0.6em;
  margin: 0.5em 0; overflow-x: auto; }
.grid .layer > * { flex: none; }
.grid .layer > .name { width: 5em; font-weight: bold; padding-top: 1.2em; }
a.head { display: inline-block; text-decoration: none; color: #111; padding: 2px;
  border: 1px solid transparent; }
a.head:hover, a.head:focus { border-color: #0b6e99; outline: none; }
a.head .label { display: block; font-size: 0.8em; text-align: center; }
table.mini { border-collapse: collapse; }
table.mini td { width: 7px; height: 7px; padding: 0; }
section.head-detail { display: none; border-top: 3px solid #0b6e99; margin-top: 1em; }
section.head-detail:target { display: block; }
table.full { border-collapse: collapse; font-family: "DejaVu Sans Mono", Menlo, Consolas,
  monospace; font-variant-numeric: tabular-nums; margin: 0.5em 0; }
table.full th, table.full td { border: 1px solid #bbb; padding: 0.1em 0.4em; }
table.full td { text-align: right; }
table.full thead th { background: #e8f1f5; }
table.full tbody th { text-align: left; background: #f4f4f4; }
pre.command { background: #f6f8fa; padding: 0.5em 0.8em; overflow-x: auto; }
p.implicit { margin: 1em 0 0.2em; font-style: italic; }
.grid .layer > .name .mark { font-weight: normal; font-style: italic; font-size: 0.85em; }
""".strip()


# A heat cell of qkvcalc.render.html (an embedded explanation's weights) as that writer makes it.
HEAT_STYLE = re.compile(r'style="background: rgb\((\d+),(\d+),(\d+)\); color: (#fff|#000)"')


class Palette:
    """Each shade on the page is one CSS class, written once in the page's <style>, in place of
    a style attribute on every cell (the colours are the same; the page is some 1 MB smaller
    for 72 heads of 12 tokens)."""

    def __init__(self) -> None:
        self.names: dict[tuple[int, int, int, str], str] = {}

    def name(self, rgb: tuple[int, int, int], text: str = "#000") -> str:
        key = (*rgb, text)
        if key not in self.names:
            self.names[key] = f"s{len(self.names)}"
        return self.names[key]

    def weight(self, weight: float) -> str:
        """The class of a weight's cell: the HTML writer's own colours (html.heat)."""
        r, g, b, text = heat(float(weight))
        return self.name((r, g, b), text)

    def signed(self, weight: float, top: float) -> str:
        """The class of an implicit matrix's cell: |W| / top as the writer's blue when
        positive, the same depth in red when negative (white for 0 or NaN)."""
        w = abs(float(weight)) / top if top > 0 and np.isfinite(weight) else 0.0
        r, g, b, text = heat(min(w, 1.0))
        if np.isfinite(weight) and weight < 0:
            r, g, b = (int(255 - min(w, 1.0) * (255 - c)) for c in (200, 40, 40))
        return self.name((r, g, b), text)

    def classed(self, fragment: str) -> str:
        """An HTML writer's fragment with each heat style attribute made a class."""
        return HEAT_STYLE.sub(
            lambda m: f'class="{self.name((int(m[1]), int(m[2]), int(m[3])), m[4])}"', fragment
        )

    def css(self) -> str:
        return "\n".join(
            f".{name} {{ background: rgb({r},{g},{b}); color: {text} }}"
            for (r, g, b, text), name in self.names.items()
        )


# End tags HTML lets a page leave out (a cell's, a row's before another or the table part's end,
# a list item's before another or the list's end): the browser's document is the same without
# them, but for the white space between two rows, which no browser shows.
OPTIONAL_END = re.compile(r"</t[dh]>|</tr>\n?(?=<tr|</t(?:body|head|able)>)|</li>(?=<li|</[ou]l>)")


def compact(html: str) -> str:
    """A page's HTML without its optional end tags (OPTIONAL_END). Safe for escaped text: every
    "<" in text or attributes is "&lt;", so the pattern only meets tags."""
    return OPTIONAL_END.sub("", html)


def _t(lang: str, key: str, **params: Any) -> str:
    return escape(translate(key, lang, **params))


def _anchor(layer: int, head: int) -> str:
    return f"l{layer}h{head}"


def _number(weight: float, top: float | None) -> str:
    """A weight with three decimals; an implicit matrix's cell (top not None), signed and of
    any size, with four significant digits."""
    return f"{weight:.3f}" if top is None else f"{weight:.4g}"


def _shade(palette: Palette, top: float | None) -> Any:
    """A cell's class: a weight's (top None), or an implicit matrix's signed one."""
    return palette.weight if top is None else (lambda w: palette.signed(w, top))


def _mini(
    grid: np.ndarray, labels: Sequence[str], palette: Palette, top: float | None = None
) -> str:
    shade = _shade(palette, top)
    rows = []
    for i, row in enumerate(grid):
        cells = "".join(
            f'<td class="{shade(w)}" title="{labels[i]} → {labels[j]}: {_number(w, top)}"></td>'
            for j, w in enumerate(row)
        )
        rows.append(f"<tr>{cells}</tr>")
    return f'<table class="mini">{"".join(rows)}</table>'


def _full(
    grid: np.ndarray, labels: Sequence[str], lang: str, palette: Palette, top: float | None = None
) -> str:
    shade = _shade(palette, top)
    head = "".join(f'<th scope="col">{label}</th>' for label in labels)
    body = []
    for i, row in enumerate(grid):
        cells = "".join(f'<td class="{shade(w)}">{_number(w, top)}</td>' for w in row)
        body.append(f'<tr><th scope="row">{labels[i]}</th>{cells}</tr>')
    caption = _t(lang, "heads.weights_caption" if top is None else "heads.implicit_caption")
    return (
        f'<div style="overflow-x: auto"><table class="full"><caption>{caption}</caption>'
        f"<thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _legend(run: Any, index: int, lang: str, top: float) -> str:
    """What an implicit layer's colours mean, `top` its largest |W| (escaped)."""
    kind = run.implicit[index]
    return _t(
        lang, "heads.implicit_legend_html", layer=index, kind=kind, largest=shown_largest(top)
    )


def heads_html(
    run: Any,
    lang: str = "en",
    explanations: Mapping[tuple[int, int], str] | None = None,
    limit: int | None = None,
    refused: Mapping[tuple[int, int], str] | None = None,
) -> str:
    """The page. `explanations` maps (layer, head) — layer from 0, head from 1 — to an HTML
    fragment of that head's explanation (qkvcalc's HTML writer, standalone=False); without
    one, the head's section says how to write its problem (`limit`: the number of heads up to
    which explanations are embedded, named in that sentence); `refused` maps a head whose
    problem could not be explained to the reason, which its section gives instead."""
    explanations = explanations or {}
    refused = refused or {}
    tokens = [str(t) for t in run.tokens]
    labels = [escape(safe(t, 40)) for t in tokens]
    palette = Palette()
    tops = {i: largest(layer) for i, layer in zip(run.layers, run.weights, strict=True)}
    body = [
        f'<h1 id="grid">{escape(title(run, lang))}</h1>',
        *[f"<p>{escape(other.text(lang))}</p>" for other in (*run.others, *run.notes)],
        f"<p>{_t(lang, 'heads.html_hint')}</p>",
        f"<p>{_t(lang, 'heads.tokens')}: "
        + " ".join(f"<code>{label}</code>" for label in labels)
        + "</p>",
        '<div class="grid">',
    ]
    count = sum(len(layer) for layer in run.weights)
    for index, layer in zip(run.layers, run.weights, strict=True):
        top = tops[index] if index in run.implicit else None
        name = _t(lang, "heads.layer", layer=index)
        if top is not None:
            body.append(f'<p class="implicit">{_legend(run, index, lang, top)}</p>')
            name += f'<br><span class="mark">{_t(lang, "heads.implicit")}</span>'
        body.append('<div class="layer">')
        body.append(f'<span class="name">{name}</span>')
        for h, grid in enumerate(layer, 1):
            name = _t(lang, "heads.head_title", layer=index, head=h)
            body.append(
                f'<a class="head" href="#{_anchor(index, h)}" title="{name}" aria-label="{name}">'
                f'<span class="label">{_t(lang, "heads.head_label", head=h)}</span>'
                f"{_mini(grid, labels, palette, top)}</a>"
            )
        body.append("</div>")
    body.append("</div>")
    for index, layer in zip(run.layers, run.weights, strict=True):
        top = tops[index] if index in run.implicit else None
        for h, grid in enumerate(layer, 1):
            legend = [] if top is None else [f"<p>{_legend(run, index, lang, top)}</p>"]
            body += [
                f'<section class="head-detail" id="{_anchor(index, h)}">',
                f"<h2>{_t(lang, 'heads.head_title', layer=index, head=h)}</h2>",
                f'<p><a href="#grid">{_t(lang, "heads.back")}</a></p>',
                *legend,
                _full(grid, labels, lang, palette, top),
                f"<p>{_t(lang, 'heads.command')}</p>",
                f'<pre class="command">{escape(command(run, index, h))}'
                f" &gt; head.json\nqkvcalc explain head.json</pre>",
            ]
            found = explanations.get((index, h))
            if found is not None:
                body.append(palette.classed(found))
            elif (index, h) in refused:
                reason = refused[(index, h)]
                body.append(f"<p>{_t(lang, 'heads.not_explained', reason=reason)}</p>")
            else:
                body.append(f"<p>{_t(lang, 'heads.no_explanation', limit=limit, count=count)}</p>")
            body.append("</section>")
    style = "\n".join([STYLE, *([EXPLAINED] if explanations else []), palette.css()])  # once
    head = [
        "<!DOCTYPE html>",
        f'<html lang="{escape(lang)}">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>qkvcalc · {_t(lang, 'heads.page_title')} · {escape(safe(run.model))}</title>",
        f"<style>\n{style}\n</style>",
        "</head>",
        "<body>",
    ]
    return "\n".join([*head, compact("\n".join(body)), "</body>", "</html>", ""])


def heads_text(
    run: Any, lang: str = "en", width: int = 100, color: bool = False, ascii_only: bool = False
) -> str:
    """The terminal's grid as text of `width` columns (coloured when `color`)."""
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.terminal import to_text

    table = heads_table(run, lang, width, ascii_only)
    return to_text(table, RenderOptions(lang=lang, width=width, color=color))
