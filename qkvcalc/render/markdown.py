"""The Markdown rendering: the whole derivation as a document that reads well on GitHub.

Per stage: a heading with its number and title, the formula as $…$ math, the explanation,
the matrix as a GitHub table with its rows and columns labelled (a matrix product also as a
display equation A·B = C when it is small), the notes, and each cell's arithmetic (arith.py,
the same logic as the terminal) in a code block.

Text from the input (token names) is escaped with `md_escape`, so a `|` or a `*` in a token
neither breaks a table nor turns into emphasis.
"""

from __future__ import annotations

import re

import numpy as np

from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style, split_rows, stage_extras
from qkvcalc.render.latex import bmatrix, tex_formula, tex_product
from qkvcalc.render.text import columns_that_fit, corners, fmt, safe, summary
from qkvcalc.trace import Stage, Trace

CELL_WIDTH = 3  # what a table column costs beyond its number: " | "

# CommonMark lets a backslash escape any ASCII punctuation; these are the ones that can start
# markup inside a line or a table cell (a link needs its [, a list or heading a line start,
# which escaped text never has), plus $ for GitHub's math and | for tables.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|$~&])")


def md_escape(text: str) -> str:
    """Text shown literally in Markdown (tables included): markup characters escaped."""
    return _MD_SPECIAL.sub(r"\\\1", safe(text, 10_000))


def _prose(text: str) -> str:
    """A catalog sentence: escaped, except underscores inside words (d_k stays d_k; an
    underscore between letters never starts emphasis)."""
    return re.sub(r"(?<=\w)\\_(?=\w)", "_", md_escape(text))


def _t(opts: RenderOptions, key: str, **params: object) -> str:
    return _prose(translate(key, opts.lang, **params))


def _cell(value: float, precision: int) -> str:
    return "−∞" if np.isneginf(value) else fmt(value, precision)


def md_table(
    value: np.ndarray | Stage,
    name: str,
    rows: tuple[str, ...],
    cols: tuple[str, ...],
    opts: RenderOptions,
) -> tuple[list[str], int, int]:
    """A GitHub table of a matrix (corners only when big); also how many rows and columns
    were hidden."""
    row_ids, col_ids, shown, hidden = corners(
        value, opts.max_rows, columns_that_fit(rows, opts, CELL_WIDTH)
    )
    head = [f"**{md_escape(name)}**" if name else " "] + [
        "…" if j is None else md_escape(cols[j]) for j in col_ids
    ]
    lines = [
        "| " + " | ".join(head) + " |",
        "|:--" + "|--:" * len(col_ids) + "|",
    ]
    for i in row_ids:
        if i is None:
            cells = ["⋮"] * (len(col_ids) + 1)
        else:
            cells = [md_escape(rows[i])] + [
                "…" if j is None else _cell(float(shown[i][j]), opts.precision) for j in col_ids
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, *hidden


def _product(stage: Stage, opts: RenderOptions) -> list[str]:
    """A small matrix product as one display equation: Q = X·W_Q = [..]·[..] = [..]."""
    if not stage.is_product:
        return []
    cols = len(stage.inner) + 2 * len(stage.cols)  # A [n, inner] · B [inner, cols] = [n, cols]
    if cols * (opts.precision + 4) + 40 > opts.width or max(len(stage.rows), len(stage.inner)) > 8:
        return []
    parts = [tex_formula(stage.formula), tex_product(stage, opts), bmatrix(stage, opts)[0]]
    # GitHub reads \\ in a $$ block only at the end of a line: bmatrix keeps one row a line
    return ["$$", " = ".join(parts), "$$"]


def render_stage(stage: Stage, number: int, total: int, trace: Trace, opts: RenderOptions) -> str:
    title = _t(opts, stage.title.key)
    if stage.head:
        title += " · " + _t(opts, "ui.head", head=stage.head)
    rows, cols = stage.shape
    out = [
        f"## {number}/{total} · {title}",
        f"${tex_formula(stage.formula)}$ · {rows}×{cols}",
        _t(opts, stage.why.key),
    ]
    product = _product(stage, opts)
    if product:
        out.append("\n".join(product))
    table, hidden_rows, hidden_cols = md_table(stage, stage.name, stage.rows, stage.cols, opts)
    if stage.in_words:  # sentences, as in the terminal: which columns each head reads
        out.append("\n".join("- " + _prose(row.text(opts.lang)) for row in split_rows(stage)))
    else:
        out.append("\n".join(table))
    extras = stage_extras(stage, trace, (hidden_rows, hidden_cols), Style.of(opts), opts)
    if extras.notes:
        out.append("\n".join(f"> {_prose(note.text(opts.lang))}" for note in extras.notes))
    if extras.has_arithmetic:
        out.append(f"**{_t(opts, 'ui.arithmetic')}**")
    if extras.rows:
        out.append(
            "\n".join("- " + ("⋮" if r is None else _prose(r.text(opts.lang))) for r in extras.rows)
        )
    if extras.work:
        # the lines hold numbers and the engine's symbols only, never input text
        out.append("```text\n" + "\n".join(extras.work) + "\n```")
    return "\n\n".join(out)


def render_markdown(trace: Trace, opts: RenderOptions) -> str:
    """The whole derivation as GitHub-flavoured Markdown."""
    out = [
        f"# {_t(opts, 'export.title')}",
        "$$\\mathrm{softmax}\\left(\\frac{Q K^\\top}{\\sqrt{d_k}} + M\\right) V$$",
        *(_prose(line) for line in summary(trace, opts.lang)),
    ]
    total = len(trace.stages)
    out += [render_stage(stage, k, total, trace, opts) for k, stage in enumerate(trace.stages, 1)]
    final = trace.stage("output")
    out.append(f"## {_t(opts, 'ui.output_final')}")
    out += [f"> **{_t(opts, 'ui.warning')}**: {_prose(w.text(opts.lang))}" for w in trace.warnings]
    out.append("\n".join(md_table(final.value, "", final.rows, final.cols, opts)[0]))
    return "\n\n".join(out) + "\n"
