"""The HTML rendering: semantic tables with a small stylesheet, for a projector and a notebook.

Real <table> elements (not a picture of a terminal) so a page can be searched, zoomed,
copied into a spreadsheet and read aloud by a screen reader. The attention weights get a
blue background that deepens with the weight, but the number is always printed in the cell:
colour never carries information alone. The stylesheet sets its own light colours, so the
page reads the same on a light projector and in a dark notebook theme.

`render_html(trace, opts, standalone=True)` gives a whole page; `standalone=False` gives a
fragment (one <div> with a scoped <style>) for Jupyter's _repr_html_. Every piece of text,
from the input or the catalogs, goes through html.escape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

import numpy as np

from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style
from qkvcalc.render.document import (
    StageView,
    TableView,
    final_view,
    plain_cell,
    product_fits_width,
    stage_view,
)
from qkvcalc.render.text import columns_that_fit, place, safe, summary

if TYPE_CHECKING:
    from qkvcalc.render.page import Cells
    from qkvcalc.trace import Stage, Trace

CELL_WIDTH = 3  # a column's width beyond its number, in characters (padding)

STYLE = """
.qkvcalc { color: #111; background: #fff; font-family: system-ui, -apple-system, "Segoe UI",
  "Noto Sans", "Noto Sans KR", "Malgun Gothic", sans-serif; line-height: 1.45; padding: 0.5em; }
.qkvcalc h1 { font-size: 1.6em; margin: 0.2em 0; }
.qkvcalc h2 { font-size: 1.3em; margin: 1.6em 0 0.3em; padding-top: 0.4em;
  border-top: 3px solid #0b6e99; }
.qkvcalc h2 .num { color: #0b6e99; margin-right: 0.5em; }
.qkvcalc summary { cursor: pointer; } .qkvcalc summary h2 { display: inline-block; }
.qkvcalc h3 { font-size: 1em; margin: 0.8em 0 0.2em; }
.qkvcalc .formula { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: 1.1em; }
.qkvcalc .shape { color: #555; margin-left: 0.8em; }
.qkvcalc .why { font-style: italic; max-width: 50em; }
.qkvcalc .product { display: flex; flex-wrap: wrap; align-items: center; gap: 0.6em; }
.qkvcalc .product .op { font-size: 1.4em; font-weight: bold; }
.qkvcalc .scroll { overflow-x: auto; }
.qkvcalc table.matrix { border-collapse: collapse; margin: 0.4em 0;
  font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-variant-numeric: tabular-nums; }
.qkvcalc table.matrix th, .qkvcalc table.matrix td { padding: 0.15em 0.6em;
  border: 1px solid #bbb; }
.qkvcalc table.matrix td { text-align: right; }
.qkvcalc table.matrix thead th { background: #e8f1f5; }
.qkvcalc table.matrix th.name { color: #0b6e99; }
.qkvcalc table.matrix tbody th { text-align: left; background: #f4f4f4; }
.qkvcalc td.neginf { color: #777; }
.qkvcalc td.blank { min-width: 5em; height: 1.9em; border: 1px solid #555; background: #fff; }
.qkvcalc td.gap, .qkvcalc th.gap { color: #777; text-align: center; }
.qkvcalc ul.notes { color: #333; }
.qkvcalc .warning { background: #fff3cd; border-left: 4px solid #b58100; padding: 0.3em 0.6em; }
.qkvcalc pre.work { background: #f6f8fa; padding: 0.5em 0.8em; border-radius: 4px;
  overflow-x: auto; font-size: 0.95em; }
""".strip()

PAGE_STYLE = """
body { margin: 0 auto; max-width: 72em; padding: 1em 2em; background: #fff; font-size: 20px; }
""".strip()


def _t(opts: RenderOptions, key: str, **params: object) -> str:
    return escape(translate(key, opts.lang, **params))


def _label(text: str) -> str:
    return escape(safe(text))


def heat(weight: float) -> tuple[int, int, int, str]:
    """The colours of a weight in [0, 1]: its background, white to deep blue, as (r, g, b), and
    the text colour readable on it (the heads page writes the same shades as classes)."""
    w = min(max(weight, 0.0), 1.0) if weight == weight else 0.0  # NaN (--dtype): unshaded
    r, g, b = (int(255 - w * (255 - c)) for c in (30, 90, 200))
    return r, g, b, "#fff" if w > 0.55 else "#000"


def _heat(weight: float) -> str:
    """A background for a weight in [0, 1], with readable text on it."""
    r, g, b, text = heat(weight)
    return f"background: rgb({r},{g},{b}); color: {text}"


def html_table(
    view: TableView, opts: RenderOptions, attrs: Callable[[int, int], str] | None = None
) -> str:
    """A labelled <table> of a matrix (corners only when big); `attrs` gives each value cell's
    attributes on the interactive page (qkvcalc.render.page)."""
    head = [f'<th scope="col" class="name">{escape(view.name)}</th>']
    for j in view.col_ids:
        head.append(
            '<th class="gap">…</th>'
            if j is None
            else f'<th scope="col">{_label(view.cols[j])}</th>'
        )
    body = []
    for i in view.row_ids:
        if i is None:
            body.append(
                "<tr>"
                + '<th class="gap">⋮</th>'
                + '<td class="gap">⋮</td>' * len(view.col_ids)
                + "</tr>"
            )
            continue
        cells = [f'<th scope="row">{_label(view.rows[i])}</th>']
        for j in view.col_ids:
            if j is None:
                cells.append('<td class="gap">…</td>')
                continue
            if view.blank:  # a worksheet: an empty box to write in
                cells.append('<td class="blank"></td>')
                continue
            text = escape(plain_cell(view, i, j, opts))
            weight = view.weight(i, j)
            extra = attrs(i, j) if attrs is not None else ""
            if np.isneginf(float(view.shown[i][j])):
                cells.append(f'<td class="neginf"{extra}>{text}</td>')
            elif weight is not None:
                cells.append(f'<td style="{_heat(weight)}"{extra}>{text}</td>')
            else:
                cells.append(f"<td{extra}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        '<table class="matrix">\n<thead><tr>'
        + "".join(head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(body)
        + "\n</tbody>\n</table>"
    )


def _max_cols(rows: Sequence[str], opts: RenderOptions) -> int:
    return columns_that_fit(rows, opts, CELL_WIDTH)


def _product(view: StageView, opts: RenderOptions, page: Cells | None = None) -> str | None:
    """A small matrix product side by side: A · B = C."""
    if view.product is None or view.table is None:
        return None
    ops = ['<span class="op">·</span>', '<span class="op">+</span>']
    parts = []
    for k, operand in enumerate(view.product):
        if k:
            parts.append(ops[min(k - 1, 1)])
        lit = page.operand_attrs(f"{view.number}.{k}", operand) if page else None
        parts.append(html_table(operand, opts, lit))
    table = view.table._replace(heat=False)
    attrs = page.stage_attrs(view.stage, view.number, table, True) if page else None
    parts += ['<span class="op">=</span>', html_table(table, opts, attrs)]
    return '<div class="product">\n' + "\n".join(parts) + "\n</div>"


def render_stage(
    stage: Stage,
    number: int,
    total: int,
    trace: Trace,
    opts: RenderOptions,
    page: Cells | None = None,
    folded: bool = False,
) -> str:
    """A stage as a <section>; `folded`, as a <details> whose <summary> is its heading (a
    notebook's view: the stages closed, each opened by a click)."""
    view = stage_view(
        stage,
        number,
        total,
        trace,
        opts,
        max_cols=_max_cols(stage.rows, opts),
        product_fits=product_fits_width(stage, opts),
        style=Style.of(opts),
    )
    title = escape(view.title) + (" · " + escape(view.head) if view.head else "")
    head_attr = f' data-head="{stage.head}"' if stage.head else ""
    head_attr += f' data-step="{stage.step}"' if stage.step is not None else ""
    head_attr += f' data-block="{stage.block}"' if stage.block is not None else ""
    if page is not None:  # what the script's note on a cell names it by
        head_attr = f' id="{page.prefix}stage-{number}"' + head_attr
        head_attr += f' data-name="{escape(stage.name)}"'
        head_attr += f' data-place="{escape(place(stage, opts.lang))}"' if view.head else ""
    tag = "details" if folded else "section"
    heading = f'<h2><span class="num">{number}/{total}</span>{title}</h2>'
    out = [
        f'<{tag} class="stage" data-stage="{escape(stage.id)}"{head_attr}>',
        f"<summary>{heading}</summary>" if folded else heading,
        f'<p><span class="formula">{escape(view.formula)}</span>'
        f'<span class="shape">{view.shape}</span></p>',
        f'<p class="why">{escape(view.why)}</p>',
    ]
    if view.table is None:  # sentences, as in the terminal: which columns each head reads
        items = "".join(f"<li>{escape(line)}</li>" for line in view.words)
        out.append(f'<ul class="rows">{items}</ul>')
    else:
        for given in view.givens:  # a worksheet's weights, when A · B = C is not shown
            out.append(f'<div class="scroll">\n{html_table(given, opts)}\n</div>')
        shown = _product(view, opts, page)
        if shown is None:
            attrs = page.stage_attrs(stage, number, view.table, False) if page else None
            shown = html_table(view.table, opts, attrs)
        out.append(f'<div class="scroll">\n{shown}\n</div>')
    if view.notes:
        items = "".join(f"<li>{escape(note.text(opts.lang))}</li>" for note in view.notes)
        out.append(f'<ul class="notes">{items}</ul>')
    if view.row_sentences or view.work:
        out.append(f"<h3>{_t(opts, 'ui.arithmetic')}</h3>")
    if view.row_sentences:
        lines = ("⋮" if row is None else escape(row.text(opts.lang)) for row in view.row_sentences)
        out.append('<ul class="rows">' + "".join(f"<li>{line}</li>" for line in lines) + "</ul>")
    if view.work:
        out.append('<pre class="work">' + escape("\n".join(view.work)) + "</pre>")
    out.append(f"</{tag}>")
    return "\n".join(out)


def _body(
    trace: Trace,
    opts: RenderOptions,
    page: Cells | None = None,
    shown: bool = True,
    folded: bool = False,
    styled: bool = True,
) -> str:
    problem, *preset = (escape(line) for line in summary(trace, opts.lang, opts.worksheet))
    root = f' data-page="{page.prefix}"' if page is not None else ""
    root += "" if shown else " hidden"
    out = [
        f'<div class="qkvcalc" lang="{escape(opts.lang)}"{root}>',
        *([f"<style>\n{STYLE}\n</style>"] if styled else []),
        "<header>",
        f"<h1>{_t(opts, 'export.title')}</h1>",
        f'<p class="formula">{escape(_formula(trace)[0])}</p>',
        f"<p>{problem}</p>",
        *(f"<p>{line}</p>" for line in preset),
    ]
    out.append("</header>")
    total = len(trace.stages)
    out += [
        render_stage(stage, k, total, trace, opts, page, folded)
        for k, stage in enumerate(trace.stages, 1)
    ]
    final = trace.final
    final_id = ""
    if page is not None:  # the note on a cell of the final table names it as the output stage
        final_id = f' id="{page.prefix}final" data-name="{escape(final.name)}"'
    out.append(f'<section class="final" data-stage="final"{final_id}>')
    out.append(f"<h2>{_t(opts, 'ui.output_final')}</h2>")
    for warning in trace.warnings:
        out.append(
            f'<p class="warning"><strong>{_t(opts, "ui.warning")}</strong>: '
            f"{escape(warning.text(opts.lang))}</p>"
        )
    view = final_view(trace, opts, _max_cols(final.rows, opts))
    table = html_table(view, opts, page.final_attrs(view) if page else None)
    out += [f'<div class="scroll">\n{table}\n</div>', "</section>", "</div>"]
    return "\n".join(out)


def render_html(
    trace: Trace,
    opts: RenderOptions | None = None,
    standalone: bool = True,
    interactive: bool | None = None,
    folded: bool = False,
    styled: bool = True,
) -> str:
    """The whole derivation as an HTML page (standalone) or a <div> fragment (a notebook;
    `folded`: each stage a <details> closed under its heading, the output open; `styled=False`:
    without its scoped <style>, for a page that holds many fragments and STYLE once).

    A standalone page is interactive (qkvcalc.render.page) unless `interactive=False` or it is
    a worksheet: the same document with each cell's sources and arithmetic in its attributes,
    one inline script and the data it reads. opts.langs of two languages (`--lang en,ko`) puts
    the document in each language on the page, the first shown, the script switching them."""
    opts = opts or RenderOptions()
    if interactive is None:
        interactive = standalone and not opts.worksheet
    langs = (opts.langs or (opts.lang,)) if interactive else (opts.lang,)
    if not standalone:
        return _body(trace, opts, folded=folded, styled=styled)
    if interactive:
        from qkvcalc.render import page

        bodies = [
            _body(trace, each, page.Cells(trace, each, f"{each.lang}-"), k == 0)
            for k, each in enumerate(opts._replace(lang=lang) for lang in langs)
        ]
        body = "\n".join([*bodies, page.data_block(trace, opts, langs), page.script()])
        style = f"{PAGE_STYLE}\n{page.STYLE}"
    else:
        body, style = _body(trace, opts), PAGE_STYLE
    lang = langs[0]
    name = trace.problem.meta.get("name")
    title = translate("export.title", lang) + (f" · {safe(name)}" if name else "")
    return "\n".join(
        [
            "<!DOCTYPE html>",
            f'<html lang="{escape(lang)}">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>qkvcalc · {escape(title)}</title>",
            f"<style>\n{style}\n</style>",
            "</head>",
            "<body>",
            body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _formula(trace: Trace) -> tuple[str, str]:
    """The layer's formula in the header (plain, TeX): softmax attention's, or a linear
    layer's own."""
    from qkvcalc.ops import features  # here: the error path imports this module light

    return features.formula(trace.problem)
