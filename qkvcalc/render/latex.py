"""The LaTeX rendering: a standalone article that compiles with pdflatex.

Each stage is a section with its formula, its explanation, its matrix as an amsmath bmatrix
(a matrix product as A·B = C when the three fit on the page), its notes and each cell's
arithmetic as an align* block (arith.stage_extras with Style.of(opts, latex=True): the
same notes and arithmetic as every other format, in TeX's symbols).

All text goes through `tex_escape`: TeX's special characters become their escapes, the math
symbols of the catalogs become TeX, and any other character pdflatex cannot set becomes a
visible code such as [U+1F600], so that every input compiles. Hangul is set with kotex
(Debian's texlive-lang-korean), loaded only when the document contains Hangul.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style, split_rows, stage_extras
from qkvcalc.render.text import corners, fmt, pick, safe, summary
from qkvcalc.trace import Stage, Trace

# A page of \small text holds about this many matrix columns (the label column aside).
MAX_COLS = 8
# A product A·B = C is written out in full when its three matrices have at most this many
# columns together and rows each.
OPERAND_COLS = 9
OPERAND_ROWS = 8

_TEXT_SPECIAL = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "_": r"\_\allowbreak{}",
    "^": r"\textasciicircum{}",
    "~": r"\textasciitilde{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\textquotedbl{}",
    "-": "-{}",  # no -- or --- ligatures from a token such as "a--b"
    "`": r"\textasciigrave{}",
}
# Symbols the catalogs and formulas use, as TeX that works in text (math wrapped in $…$).
_SYMBOLS = {
    "·": r"$\cdot$",
    "×": r"$\times$",
    "−": r"$-$",
    "∞": r"$\infty$",
    "√": r"$\surd$",
    "ᵀ": r"\textsuperscript{T}",
    "²": r"\textsuperscript{2}",
    "…": r"\ldots{}",
    "⋮": r"$\vdots$",
    "→": r"$\to$",
    "–": "--",
    "—": "---",
    "⌈": r"$\lceil$",
    "⌉": r"$\rceil$",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "\u00a0": r"\nobreakspace{}",
    "≈": r"$\approx$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "≠": r"$\neq$",
    "±": r"$\pm$",
    "÷": r"$\div$",
    "θ": r"$\theta$",
    "Σ": r"$\Sigma$",
    **{chr(0x2080 + d): rf"\textsubscript{{{d}}}" for d in range(10)},
}


def _settable(char: str) -> bool:
    """Characters pdflatex sets directly (utf8 input, T1 fonts, kotex for Hangul)."""
    code = ord(char)
    return (
        0x20 <= code < 0x7F
        or (0xC0 <= code <= 0x17F and char not in "×÷")
        or 0xAC00 <= code <= 0xD7A3  # Hangul syllables
        or 0x3131 <= code <= 0x318E  # Hangul compatibility jamo
    )


def tex_escape(text: str) -> str:
    """Any text as LaTeX text mode that shows it literally and always compiles."""
    out = []
    for char in text:
        if char in _TEXT_SPECIAL:
            out.append(_TEXT_SPECIAL[char])
        elif char in _SYMBOLS:
            out.append(_SYMBOLS[char])
        elif _settable(char):
            out.append(char)
        else:
            out.append(rf"\texttt{{[U+{ord(char):04X}]}}")
    return "".join(out)


# ---- formulas: the engine writes them in plain Unicode; TeX wants its own spelling ----------

_WORDS = re.compile(r"(?<![A-Za-z\\])(softmax|concat|output|source|max|heads|head)(?![A-Za-z])")
_FORMULA = [
    ("·", r" \cdot "),
    ("ᵀ", r"^\top"),
    ("−", "-"),
    ("×", r"\times"),
    ("→", r"\to"),
    ("…", r"\ldots "),  # the space ends the control word: 1\ldots H, not \ldotsH
    ("–", r"\text{--}"),
]


def tex_formula(formula: str) -> str:
    """The engine's plain formula as TeX math: 'Q·Kᵀ / √d_k' -> 'Q \\cdot K^\\top / \\sqrt{d_k}'.
    The formulas come from the engine (never from the input), so a few rules cover them all."""
    tex = re.sub(r"√([A-Za-z0-9_]+)", lambda m: rf"\sqrt{{{m.group(1)}}}", formula)
    tex = re.sub(r"e\^\(([^()]*)\)", r"e^{\1}", tex)
    tex = _WORDS.sub(lambda m: rf"\mathrm{{{m.group(1)}}}", tex)
    tex = re.sub(r"\\mathrm\{(head|max)\}_(\w)", r"\\mathrm{\1}_{\2}", tex)
    for plain, code in _FORMULA:
        tex = tex.replace(plain, code)
    return re.sub(r"  +", " ", tex).strip()


# ---- matrices ---------------------------------------------------------------------------------


def _cell(value: float, precision: int) -> str:
    return r"-\infty" if np.isneginf(value) else fmt(value, precision).replace("−", "-")


def bmatrix(value: np.ndarray | Stage, opts: RenderOptions) -> tuple[str, int, int]:
    """A matrix as a bmatrix, eliding its middle rows and columns; also how many are hidden."""
    row_ids, col_ids, shown, hidden = corners(value, opts.max_rows, MAX_COLS)
    lines = []
    for i in row_ids:
        if i is None:
            cells = [r"\ddots" if j is None else r"\vdots" for j in col_ids]
        else:
            cells = [
                r"\cdots" if j is None else _cell(float(shown[i][j]), opts.precision)
                for j in col_ids
            ]
        lines.append(" & ".join(cells))
    body = " \\\\\n".join(lines)
    return "\\begin{bmatrix}\n" + body + "\n\\end{bmatrix}", *hidden


def _labels(names: tuple[str, ...], limit: int) -> str:
    """The labels of the rows (or columns) shown, in plain text: 'I, love, cats'."""
    return ", ".join("…" if k is None else safe(names[k]) for k in pick(len(names), limit))


def _operands_fit(stage: Stage) -> bool:
    if stage.op != "matmul" or not stage.names:
        return False
    cols = len(stage.inner) + 2 * len(stage.cols)  # A [n, inner] · B [inner, cols] = [n, cols]
    return cols <= OPERAND_COLS and max(len(stage.rows), len(stage.inner)) <= OPERAND_ROWS


def tex_product(stage: Stage, opts: RenderOptions) -> str:
    """A matmul stage's operands as TeX: [A] \\cdot [B] (+ [b]). Markdown uses it too."""
    a, b = stage.operands
    product = bmatrix(a, opts)[0] + r" \cdot " + bmatrix(b, opts)[0]
    if stage.bias is not None:
        product += " + " + bmatrix(stage.bias[None, :], opts)[0]
    return product


def _equation(stage: Stage, opts: RenderOptions) -> tuple[str, int, int]:
    """The display equation of a stage: formula = matrix (or formula = A·B = C)."""
    result, hidden_rows, hidden_cols = bmatrix(stage, opts)
    parts = [tex_formula(stage.formula)]
    if _operands_fit(stage):
        parts.append(tex_product(stage, opts))
    parts.append(result)
    return "\\[\n" + "\n= ".join(parts) + "\n\\]", hidden_rows, hidden_cols


# ---- the document ---------------------------------------------------------------------------


def _t(opts: RenderOptions, key: str, **params: object) -> str:
    return tex_escape(translate(key, opts.lang, **params))


def _itemize(items: Iterable[str]) -> str:
    return "\\begin{itemize}\n" + "\n".join(rf"\item {item}" for item in items) + "\n\\end{itemize}"


def _align(work: list[str]) -> str:
    """Arithmetic lines as an align* block, aligned at their first '='."""
    lines = []
    for line in work:
        before, eq, after = line.partition(" = ")
        lines.append(f"{before} &= {after}" if eq else f"& {line}")
    return "\\begin{align*}\n" + " \\\\\n".join(lines) + "\n\\end{align*}"


def render_stage(stage: Stage, number: int, total: int, trace: Trace, opts: RenderOptions) -> str:
    title = _t(opts, stage.title.key)
    if stage.head:
        title += r" \quad " + _t(opts, "ui.head", head=stage.head)
    lines = [
        rf"\section*{{{number}/{total}\quad {title}}}",
        _t(opts, stage.why.key),
    ]
    equation, hidden_rows, hidden_cols = _equation(stage, opts)
    if stage.op == "split":  # sentences, as in the terminal: which columns each head reads
        equation = _itemize(tex_escape(row.text(opts.lang)) for row in split_rows(stage))
    lines.append(equation)
    rows = _t(opts, "export.rows", labels=_labels(stage.rows, opts.max_rows))
    cols = _t(opts, "export.cols", labels=_labels(stage.cols, MAX_COLS))
    lines.append(rf"{{\small {rows} \quad {cols}}}")
    style = Style.of(opts, latex=True)
    extras = stage_extras(stage, trace, (hidden_rows, hidden_cols), style, opts)
    if extras.notes:
        lines.append(_itemize(tex_escape(note.text(opts.lang)) for note in extras.notes))
    if extras.has_arithmetic:
        lines.append(rf"\subsection*{{{_t(opts, 'ui.arithmetic')}}}")
    if extras.rows:
        rows_said = (
            r"$\vdots$" if r is None else tex_escape(r.text(opts.lang)) for r in extras.rows
        )
        lines.append(_itemize(rows_said))
    if extras.work:
        lines.append(_align(extras.work))
    return "\n\n".join(lines) + "\n"


def _preamble(korean: bool, title: str) -> str:
    packages = [
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage[T1]{fontenc}",
        r"\IfFileExists{lmodern.sty}{\usepackage{lmodern}}{}  % scalable fonts (Debian's lmodern)",
        r"\usepackage[margin=2cm]{geometry}",
        r"\usepackage{amsmath}",
    ]
    if korean:
        packages.append(r"\usepackage{kotex}  % Hangul: Debian's texlive-lang-korean")
    return "\n".join(
        [
            "% Made by qkvcalc. Compile with: pdflatex FILE.tex",
            r"\documentclass[11pt]{article}",
            *packages,
            r"\setcounter{MaxMatrixCols}{20}",
            r"\setlength{\parindent}{0pt}",
            r"\setlength{\parskip}{0.5em}",
            r"\allowdisplaybreaks",
            r"\emergencystretch=3em",
            r"\pagestyle{empty}",
            r"\begin{document}",
            "",
            rf"{{\Large\bfseries {title}}}",
            "",
        ]
    )


def render_latex(trace: Trace, opts: RenderOptions) -> str:
    """The whole derivation as a standalone LaTeX document."""
    head = [tex_escape(line) for line in summary(trace, opts.lang)]
    total = len(trace.stages)
    body = [render_stage(stage, k, total, trace, opts) for k, stage in enumerate(trace.stages, 1)]
    final = trace.stage("output")
    result, _, _ = bmatrix(final.value, opts)
    ending = [rf"\section*{{{_t(opts, 'ui.output_final')}}}"]
    for warning in trace.warnings:
        ending.append(
            rf"\textbf{{{_t(opts, 'ui.warning')}}}: {tex_escape(warning.text(opts.lang))}"
        )
    ending.append("\\[\n" + result + "\n\\]")
    title = _t(opts, "export.title")
    document = "\n\n".join([*head, *body, *ending])
    korean = opts.lang == "ko" or re.search("[\uac00-\ud7a3\u3131-\u318e]", document) is not None
    return _preamble(korean, title) + "\n" + document + "\n\n\\end{document}\n"
