"""The Markdown rendering: the whole derivation as a document that reads well on GitHub.

Per stage: a heading with its number and title, the formula as $…$ math, the explanation,
the matrix as a GitHub table with its rows and columns labelled (a matrix product also as a
display equation A·B = C when it is small), the notes, and each cell's arithmetic (arith.py,
the same logic as the terminal) in a code block.

Text from the input (token names) is escaped with `md_escape`, so a `|` or a `*` in a token
neither breaks a table nor turns into emphasis, and a sentence that starts with one (the
problem's name, a note on a query) cannot open a block there (`md_line_start`): `# X` is not a
heading, `1. X` not a list.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

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
from qkvcalc.render.latex import bmatrix, tex_formula, tex_product
from qkvcalc.render.text import columns_that_fit, safe, summary

if TYPE_CHECKING:
    from qkvcalc.trace import Stage, Trace

CELL_WIDTH = 3  # what a table column costs beyond its number: " | "

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that can start
# markup inside a line or a table cell (a link needs its [, a list or heading a line start,
# which escaped text never has), plus $ for GitHub's math and | for tables.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|$~&])")


def md_escape(text: str) -> str:
    """Text shown literally in Markdown (tables included): markup characters escaped."""
    return _MD_SPECIAL.sub(r"\\\1", safe(text, 10_000))


# What can open a block at a line's start (CommonMark): a heading's #, a list's -, + or 1. / 1),
# a setext underline's = or -, a quote's > (md_escape has it), and 4 spaces (a code block).
_BLOCK_START = re.compile(r"^( *)(?:([#+=-])|(\d{1,9})([.)]))")


def md_line_start(text: str) -> str:
    """Escaped text that starts a line (a paragraph, a list item, a quoted note) and cannot
    open a block there: `# X` stays text, not a heading; `1. X` not a list."""
    match = _BLOCK_START.match(text)
    if match is not None:
        spaces, mark, number, dot = match.groups()
        marker = f"\\{mark}" if mark else f"{number}\\{dot}"
        text = "&#32;" * len(spaces) + marker + text[match.end() :]
    elif text.startswith(" "):
        rest = text.lstrip(" ")
        text = "&#32;" * (len(text) - len(rest)) + rest
    return text


def _prose(text: str) -> str:
    """A catalog sentence: escaped, except underscores inside words (d_k stays d_k; an
    underscore between letters never starts emphasis). Every sentence starts a line, so
    whatever it starts with (a token's `# X`) cannot open a block."""
    return md_line_start(re.sub(r"(?<=\w)\\_(?=\w)", "_", md_escape(text)))


def _t(opts: RenderOptions, key: str, **params: object) -> str:
    return _prose(translate(key, opts.lang, **params))


def md_table(view: TableView, opts: RenderOptions) -> list[str]:
    """A GitHub table of a matrix (corners only when big)."""
    head = [f"**{md_escape(view.name)}**" if view.name else " "] + [
        "…" if j is None else md_escape(view.cols[j]) for j in view.col_ids
    ]
    lines = [
        "| " + " | ".join(head) + " |",
        "|:--" + "|--:" * len(view.col_ids) + "|",
    ]
    for i in view.row_ids:
        if i is None:
            cells = ["⋮"] * (len(view.col_ids) + 1)
        else:
            cells = [md_escape(view.rows[i])] + [
                "…" if j is None else _marked(md_escape(plain_cell(view, i, j, opts)), view, i, j)
                for j in view.col_ids
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _marked(text: str, view: TableView, i: int, j: int) -> str:
    """A page without colour: each query's largest weight in bold."""
    return f"**{text}**" if view.strongest(i, j) else text


def _max_cols(rows: tuple[str, ...], opts: RenderOptions) -> int:
    return columns_that_fit(rows, opts, CELL_WIDTH)


def _product(view: StageView, opts: RenderOptions) -> list[str]:
    """A small matrix product as one display equation: Q = X·W_Q = [..]·[..] = [..]."""
    if view.product is None or view.table is None:
        return []
    style = Style.of(opts, latex=True)
    parts = [
        tex_formula(view.formula),
        tex_product(view.product, style),
        bmatrix(view.table, style),
    ]
    # GitHub reads \\ in a $$ block only at the end of a line: bmatrix keeps one row a line
    return ["$$", " = ".join(parts), "$$"]


def render_stage(stage: Stage, number: int, total: int, trace: Trace, opts: RenderOptions) -> str:
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
    title = _prose(view.title) + (" · " + _prose(view.head) if view.head else "")
    out = [
        f"## {number}/{total} · {title}",
        f"${tex_formula(view.formula)}$ · {view.shape}",
        _prose(view.why),
    ]
    product = _product(view, opts)
    if product:
        out.append("\n".join(product))
    out += ["\n".join(md_table(given, opts)) for given in view.givens]  # a worksheet's weights
    if view.table is None:  # sentences, as in the terminal: which columns each head reads
        out.append("\n".join("- " + _prose(line) for line in view.words))
    else:
        out.append("\n".join(md_table(view.table, opts)))
    if view.notes:
        out.append("\n".join(f"> {_prose(note.text(opts.lang))}" for note in view.notes))
    if view.row_sentences or view.work:
        out.append(f"**{_t(opts, 'ui.arithmetic')}**")
    if view.row_sentences:
        out.append(
            "\n".join(
                "- " + ("⋮" if r is None else _prose(r.text(opts.lang))) for r in view.row_sentences
            )
        )
    if view.work:
        # the lines hold numbers and the engine's symbols only, never input text
        out.append("```text\n" + "\n".join(view.work) + "\n```")
    return "\n\n".join(out)


def render_markdown(trace: Trace, opts: RenderOptions) -> str:
    """The whole derivation as GitHub-flavoured Markdown."""
    out = [
        f"# {_t(opts, 'export.title')}",
        f"$${_formula(trace)[1]}$$",
        *(_prose(line) for line in summary(trace, opts.lang, opts.worksheet)),
    ]
    total = len(trace.stages)
    out += [render_stage(stage, k, total, trace, opts) for k, stage in enumerate(trace.stages, 1)]
    final = trace.final
    out.append(f"## {_t(opts, 'ui.output_final')}")
    out += [f"> **{_t(opts, 'ui.warning')}**: {_prose(w.text(opts.lang))}" for w in trace.warnings]
    out.append("\n".join(md_table(final_view(trace, opts, _max_cols(final.rows, opts)), opts)))
    return "\n\n".join(out) + "\n"


def _formula(trace: Trace) -> tuple[str, str]:
    """The layer's formula in the header (plain, TeX): softmax attention's, or a linear
    layer's own."""
    from qkvcalc.ops import features  # here: the error path imports this module light

    return features.formula(trace.problem)
