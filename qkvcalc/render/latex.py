"""The LaTeX rendering: a standalone article that compiles with pdflatex.

Each stage is a section with its formula, its explanation, its matrix as an amsmath bmatrix
(a matrix product as A·B = C when the three fit on the page), its notes and each cell's
arithmetic as a flalign* block from the left margin (arith.stage_extras with
Style.of(opts, latex=True): the same notes and arithmetic as every other format, in TeX's
symbols). Exponentials in the catalog's sentences (e^s) are set as math (tex_prose), never
one in a value a sentence mentions: a token's e^(a_b_c) is text (tex_message).

All text goes through `tex_escape`: TeX's special characters become their escapes, the math
symbols of the catalogs become TeX, and any other character pdflatex cannot set becomes a
visible code such as [U+1F600], so that every input compiles. Hangul is set with kotex
(Debian's texlive-lang-korean): a Korean document loads it; an English one that quotes Hangul
(a preset's reference, a token) loads it if it is installed and otherwise says, in place of
each quoted run, that it is missing: an English handout compiles without Korean fonts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from string import Formatter
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from qkvcalc.i18n import Msg, _words, catalog, plural, plural_spec
from qkvcalc.ops import features
from qkvcalc.render import RenderOptions
from qkvcalc.render.arith import Style
from qkvcalc.render.document import StageView, TableView, final_view, stage_view
from qkvcalc.render.text import pick, safe, summary

if TYPE_CHECKING:
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
    "⌊": r"$\lfloor$",
    "⌋": r"$\rfloor$",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "\u00a0": r"\nobreakspace{}",
    "≈": r"$\approx$",
    "ℓ": r"$\ell$",
    "Σ": r"$\Sigma$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "≠": r"$\neq$",
    "±": r"$\pm$",
    "÷": r"$\div$",
    "θ": r"$\theta$",
    "φ": r"$\varphi$",
    "ω": r"$\omega$",
    "σ": r"$\sigma$",
    "ε": r"$\varepsilon$",
    "′": r"$'$",
    "⊙": r"$\odot$",
    "∂": r"$\partial$",
    "½": r"$\frac{1}{2}$",
    "ρ": r"$\rho$",
    "λ": r"$\lambda$",
    "Δ": r"$\Delta$",
    "β": r"$\beta$",
    "⋯": r"$\cdots$",
    "⁻": r"\textsuperscript{-}",
    "³": r"\textsuperscript{3}",
    **{sub: rf"\textsubscript{{{letter}}}" for sub, letter in zip("ᵢⱼₜ", "ijt", strict=True)},
    **{chr(0x2080 + d): rf"\textsubscript{{{d}}}" for d in range(10)},
    # the other superscript digits (10¹⁰): ¹ and ⁰, ⁴–⁹ (² and ³ are above)
    "⁰": r"\textsuperscript{0}",
    "¹": r"\textsuperscript{1}",
    **{chr(0x2070 + d): rf"\textsuperscript{{{d}}}" for d in range(4, 10)},
}


# Latin Extended-A letters that T1 fonts do not have, which utf8 input refuses ("Unicode
# character ŉ (U+0149) not set up for use with LaTeX"): Ħ ħ ĸ Ŀ ŀ ŉ Ŧ ŧ ſ
_NOT_IN_T1 = "\u0126\u0127\u0138\u013f\u0140\u0149\u0166\u0167\u017f"


def _settable(char: str) -> bool:
    """Characters pdflatex sets directly (utf8 input, T1 fonts, kotex for Hangul)."""
    code = ord(char)
    return (
        0x20 <= code < 0x7F
        or (0xC0 <= code <= 0x17F and char not in "×÷" + _NOT_IN_T1)
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
        elif char == "\u0302" and out and len(out[-1]) == 1 and out[-1].isalpha():
            out[-1] = rf"\^{{{out[-1]}}}"  # a combining hat on the letter before: k̂
        elif _settable(char):
            out.append(char)
        else:
            out.append(rf"\texttt{{[U+{ord(char):04X}]}}")
    return "".join(out)


# An exponential in a sentence: e^s, e^0, e^(s − max), e^(m_(b−1) − m_b); set as math when
# what it raises is made of these characters only (never a token's text).
_POWER = re.compile(r"e\^(\((?:[^()]|\([^()]*\))*\)|[A-Za-z0-9]+)")
_MATH_SAFE = re.compile(r"[A-Za-z0-9_()\[\],.·−+ ∞]+")


def _power_tex(exponent: str) -> str | None:
    """'(m_(b−1) − m_b)' -> 'e^{m_{b-1} - m_{b}}'; None when it holds anything else."""
    inner = exponent[1:-1] if exponent.startswith("(") else exponent
    if not _MATH_SAFE.fullmatch(inner):
        return None
    inner = re.sub(r"_\(([^()]*)\)", r"_{\1}", inner)
    inner = re.sub(r"_([A-Za-z0-9]+)", r"_{\1}", inner)
    inner = inner.replace("−", "-").replace("∞", r"\infty ").replace("·", r"\cdot ")
    return f"e^{{{inner.strip()}}}"


# A value a sentence mentions, held apart while the sentence's own exponentials are found.
_HELD = re.compile("\ue000(\\d+)\ue001")


def tex_prose(text: str, held: Sequence[tuple[str, bool]] = ()) -> str:
    """A catalog sentence as LaTeX: escaped as tex_escape does, with its exponentials (e^s,
    e^(s − max)) set as math rather than as a caret.

    `held`: the values the sentence mentions, which `text` holds as placeholders (see
    tex_message), each with whether it is a number. Only the sentence's own text and numbers
    can become math: a value that is text (a token, a name) is always escaped as text."""

    def filled(part: str) -> str:
        return _HELD.sub(lambda m: held[int(m.group(1))][0], part)

    def numbers_only(part: str) -> str:  # text values stay placeholders: not _MATH_SAFE
        return _HELD.sub(
            lambda m: held[int(m.group(1))][0] if held[int(m.group(1))][1] else m.group(0), part
        )

    out, start = [], 0
    for match in _POWER.finditer(text):
        power = _power_tex(numbers_only(match.group(1)))
        if power is None:
            continue
        out += [tex_escape(filled(text[start : match.start()])), f"${power}$"]
        start = match.end()
    out.append(tex_escape(filled(text[start:])))
    return "".join(out)


def _hold(key: str, lang: str, params: dict[str, Any], held: list[tuple[str, bool]]) -> str:
    """The sentence under `key` with each value it mentions as a placeholder into `held` (a
    Msg value, or a list of them, is expanded the same way: its own text stays the catalog's)."""
    template = catalog(lang).get(key) or catalog("en")[key]
    formatter = Formatter()
    out = []
    for literal, field, spec, conversion in formatter.parse(template):
        out.append(literal)
        if field is None:
            continue
        raw = params.get(field)
        if not spec and conversion is None and isinstance(raw, Msg):
            out.append(_hold(raw.key, lang, raw.params, held))
            continue
        if not spec and conversion is None and _msgs(raw):
            out.append(", ".join(_hold(m.key, lang, m.params, held) for m in raw))
            continue
        value, _ = formatter.get_field(field, (), {k: _words(v, lang) for k, v in params.items()})
        value = formatter.convert_field(value, conversion)
        forms = plural_spec(spec or "")
        if forms is not None:  # the noun of a count is the sentence's own words, not a value
            out.append(plural(value, *forms))
            continue
        number = isinstance(raw, (int, float, np.integer, np.floating)) and not isinstance(
            raw, bool
        )
        held.append((formatter.format_field(value, spec or ""), number))
        out.append(f"\ue000{len(held) - 1}\ue001")
    return "".join(out)


def _msgs(value: Any) -> TypeGuard[list[Msg]]:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Msg) for v in value)


def tex_message(key: str, lang: str, /, **params: Any) -> str:
    """The catalog sentence `key` as LaTeX: its exponentials as math, every text value it
    mentions (a token, a name) as text, whatever that text holds (a token e^(a_b_c))."""
    held: list[tuple[str, bool]] = []
    return tex_prose(_hold(key, lang, params, held), held)


# ---- formulas: the engine writes them in plain Unicode; TeX wants its own spelling ----------

_WORDS = re.compile(
    r"(?<![A-Za-z\\])("
    + "|".join(
        ("softmax", "concat", "output", "source", "max", "heads", "head", "tanh", "pos", "mean")
    )
    + "".join(f"|{word}" for word in features.words())  # each feature's own
    + r")(?![A-Za-z])"
)
_FORMULA = [
    ("·", r" \cdot "),
    ("ᵀ", r"^\top"),
    ("−", "-"),
    ("×", r"\times"),
    ("→", r"\to"),
    ("…", r"\ldots "),  # the space ends the control word: 1\ldots H, not \ldotsH
    ("–", r"\text{--}"),
    ("∞", r"\infty "),
    ("ℓ", r"\ell "),
    ("Σ", r"\sum "),
]


# What the backward pass's formulas and arithmetic add, in math mode: ⊙, ∂, ½, Greek letters,
# powers, and subscript letters and digits (Aᵢⱼ -> A_{ij}).
_MATH = {
    "·": r" \cdot ",
    "ᵀ": r"^\top ",
    "…": r"\ldots ",
    "−": "-",
    "∞": r"\infty ",
    "×": r"\times ",
    "⊙": r" \odot ",
    "∂": r"\partial ",
    "½": r"\tfrac{1}{2}",
    "²": "^2",
    "³": "^3",
    "√": r"\surd ",
    "Σ": r"\sum ",
    "ρ": r"\rho ",
    "λ": r"\lambda ",
    "Δ": r"\Delta ",
    "β": r"\beta ",
    "⋯": r"\cdots ",
    "φ": r"\varphi ",
    "θ": r"\theta ",
    "σ": r"\sigma ",
    "ε": r"\varepsilon ",
    "ℓ": r"\ell ",
    "≈": r"\approx ",
    "≠": r"\neq ",
}
_SUBSCRIPTS = {
    **dict(zip("ᵢⱼₜ", "ijt", strict=True)),
    **{chr(0x2080 + d): str(d) for d in range(10)},
}
_SUBSCRIPT_RUN = re.compile("[" + "".join(_SUBSCRIPTS) + "]+")


def tex_math(text: str) -> str:
    """The engine's own Unicode in math mode (a formula, a line of arithmetic): each symbol as
    its TeX command, a run of subscripts as one subscript. Input text never reaches here raw
    (a token is escaped as text first)."""
    text = _SUBSCRIPT_RUN.sub(
        lambda m: "_{" + "".join(_SUBSCRIPTS[c] for c in m.group(0)) + "}", text
    )
    text = re.sub("([A-Za-z])\u0302", r"\\hat{\1}", text)  # a combining hat: k̂ -> \hat{k}
    return "".join(_MATH.get(char, char) for char in text)


def tex_formula(formula: str) -> str:
    """The engine's plain formula as TeX math: 'Q·Kᵀ / √d_k' -> 'Q \\cdot K^\\top / \\sqrt{d_k}'.
    The formulas come from the engine (never from the input), so a few rules cover them all."""
    tex = re.sub(r"√([A-Za-z0-9_]+)", lambda m: rf"\sqrt{{{m.group(1)}}}", formula)
    tex = re.sub(r"e\^\(([^()]*)\)", r"e^{\1}", tex)
    tex = _WORDS.sub(lambda m: rf"\mathrm{{{m.group(1)}}}", tex)
    tex = re.sub(r"\\mathrm\{(head|max)\}_(\w)", r"\\mathrm{\1}_{\2}", tex)
    # two subscripts as one: k_I_norm -> k_{I,norm}, q_I_rot -> q_{I,rot}
    tex = re.sub(r"\b([A-Za-z])_([A-Za-z])_(rot|norm)\b", r"\1_{\2,\\mathrm{\3}}", tex)
    tex = re.sub(r"\b([A-Za-z])_([A-Za-z])_([a-z])\b", r"\1_{\2,\3}", tex)  # K_I_w -> K_{I,w}
    tex = re.sub(r"([A-Z])_(rot|norm|cache|cap|chunk)", r"\1_{\\mathrm{\2}}", tex)
    tex = re.sub(r"_\(([^()]*)\)", r"_{\1}", tex)  # A_(s+1): a subscript in parentheses
    tex = re.sub(r"_([A-Za-z]{2,})", r"_{\\mathrm{\1}}", tex)  # λ_init: a word as a subscript
    for plain, code in _FORMULA:
        tex = tex.replace(plain, code)
    return re.sub(r"  +", " ", tex_math(tex)).strip()


# ---- matrices ---------------------------------------------------------------------------------


def bmatrix(view: TableView, style: Style) -> str:
    """A matrix as a bmatrix, its middle rows and columns elided (\\vdots, \\cdots)."""
    lines = []
    for i in view.row_ids:
        if i is None:
            cells = [r"\ddots" if j is None else r"\vdots" for j in view.col_ids]
        else:
            cells = [r"\cdots" if j is None else _marked(view, i, j, style) for j in view.col_ids]
        lines.append(" & ".join(cells))
    body = " \\\\\n".join(lines)
    return "\\begin{bmatrix}\n" + body + "\n\\end{bmatrix}"


def _marked(view: TableView, i: int, j: int, style: Style) -> str:
    """Each query's largest weight in bold: the shading of the other formats, in print."""
    text = view.cell(i, j, style)
    return rf"\mathbf{{{text}}}" if view.strongest(i, j) else text


def _labels(names: Sequence[str], limit: int) -> str:
    """The labels of the rows (or columns) shown, in plain text: 'I, love, cats'."""
    return ", ".join("…" if k is None else safe(names[k]) for k in pick(len(names), limit))


def operands_fit(stage: Stage) -> bool:
    """A product A·B = C is written out when its three matrices fit a page of \\small text."""
    if not stage.is_product:
        return False
    cols = len(stage.inner) + 2 * len(stage.cols)  # A [n, inner] · B [inner, cols] = [n, cols]
    return cols <= OPERAND_COLS and max(len(stage.rows), len(stage.inner)) <= OPERAND_ROWS


def tex_product(operands: list[TableView], style: Style) -> str:
    """A product's operands as TeX: [A] \\cdot [B] (+ [b]). Markdown uses it too."""
    product = bmatrix(operands[0], style) + r" \cdot " + bmatrix(operands[1], style)
    if len(operands) > 2:
        product += " + " + bmatrix(operands[2], style)
    return product


def _equation(view: StageView, style: Style) -> str:
    """The display equation of a stage: formula = matrix (or formula = A·B = C)."""
    assert view.table is not None
    parts = [tex_formula(view.formula)]
    if view.product is not None:
        parts.append(tex_product(view.product, style))
    parts.append(bmatrix(view.table, style))
    return "\\[\n" + "\n= ".join(parts) + "\n\\]"


# ---- the document ---------------------------------------------------------------------------


def _t(opts: RenderOptions, key: str, /, **params: object) -> str:
    return tex_message(key, opts.lang, **params)


def _said(msg: Msg, opts: RenderOptions) -> str:
    return tex_message(msg.key, opts.lang, **msg.params)


def _itemize(items: Iterable[str]) -> str:
    # \item{} : an item that starts with "[" (a token) is not read as \item's optional label
    return (
        "\\begin{itemize}\n"
        + "\n".join(rf"\item{{}} {item}" for item in items)
        + "\n\\end{itemize}"
    )


def _align(work: list[str]) -> str:
    """Arithmetic lines as a flalign* block: each line from the left margin, as it is written
    on the board (lines of different lengths centred on their '=' read as a ragged column)."""
    lines = [f"& {tex_math(line)} &&" for line in work]
    return "\\begin{flalign*}\n" + " \\\\\n".join(lines) + "\n\\end{flalign*}"


def render_stage(stage: Stage, number: int, total: int, trace: Trace, opts: RenderOptions) -> str:
    style = Style.of(opts, latex=True)
    view = stage_view(
        stage,
        number,
        total,
        trace,
        opts,
        max_cols=MAX_COLS,
        product_fits=operands_fit(stage),
        style=style,
    )
    title = tex_escape(view.title)
    if view.head:
        title += r" \quad " + tex_escape(view.head)
    lines = [
        rf"\section*{{{number}/{total}\quad {title}}}",
        tex_prose(view.why),
    ]
    if view.table is None:  # sentences, as in the terminal: which columns each head reads
        lines.append(_itemize(tex_escape(line) for line in view.words))
    else:
        for given in view.givens:  # a worksheet's weights, when A·B = C is not written out
            lines.append(
                "\\[\n" + tex_formula(given.name) + " = " + bmatrix(given, style) + "\n\\]"
            )
        lines.append(_equation(view, style))
    rows = _t(opts, "export.rows", labels=_labels(stage.rows, opts.max_rows))
    cols = _t(opts, "export.cols", labels=_labels(stage.cols, MAX_COLS))
    lines.append(rf"{{\small {rows} \quad {cols}}}")
    if view.notes:
        lines.append(_itemize(_said(note, opts) for note in view.notes))
    if view.row_sentences or view.work:
        lines.append(rf"\subsection*{{{_t(opts, 'ui.arithmetic')}}}")
    if view.row_sentences:
        rows_said = (
            r"$\vdots$" if r is None else tex_escape(r.text(opts.lang)) for r in view.row_sentences
        )
        lines.append(_itemize(rows_said))
    if view.work:
        lines.append(_align(view.work))
    return "\n\n".join(lines) + "\n"


# A run of Hangul: syllables and jamo, with the spaces and punctuation between them
_HANGUL = "\uac00-\ud7a3\u3131-\u318e"
_HANGUL_RUN = re.compile(f"[{_HANGUL}]+(?:[ ?!.,:;'’]+[{_HANGUL}]+)*")


def _korean_packages(korean: str | None) -> list[str]:
    r"""kotex for a Korean document ("required"); for an English one that quotes Hangul (a
    preset's reference, a token), kotex if installed, else each quoted run (\qkvhangul) shows
    `korean`, the sentence that says it is missing: an English handout needs no Korean fonts."""
    if korean is None:
        return []
    if korean == "required":
        return [r"\usepackage{kotex}  % Hangul: Debian's texlive-lang-korean"]
    return [
        rf"\newcommand{{\qkvhangul}}[1]{{\mbox{{{korean}}}}}  % quoted Hangul, without kotex",
        r"\IfFileExists{kotex.sty}{\usepackage{kotex}\renewcommand{\qkvhangul}{}}{}"
        "  % with it: Debian's texlive-lang-korean",
    ]


def _preamble(korean: str | None, title: str) -> str:
    packages = [
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage[T1]{fontenc}",
        r"\IfFileExists{lmodern.sty}{\usepackage{lmodern}}{}  % scalable fonts (Debian's lmodern)",
        r"\usepackage[margin=2cm]{geometry}",
        r"\usepackage{amsmath}",
        *_korean_packages(korean),
    ]
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
    head = [tex_escape(line) for line in summary(trace, opts.lang, opts.worksheet)]
    total = len(trace.stages)
    body = [render_stage(stage, k, total, trace, opts) for k, stage in enumerate(trace.stages, 1)]
    result = bmatrix(final_view(trace, opts, MAX_COLS), Style.of(opts, latex=True))
    ending = [rf"\section*{{{_t(opts, 'ui.output_final')}}}"]
    for warning in trace.warnings:
        ending.append(rf"\textbf{{{_t(opts, 'ui.warning')}}}: {_said(warning, opts)}")
    ending.append("\\[\n" + result + "\n\\]")
    title = _t(opts, "export.title")
    document = "\n\n".join([*head, *body, *ending])
    korean = None
    if opts.lang == "ko":
        korean = "required"
    elif _HANGUL_RUN.search(document) is not None:
        korean = tex_escape(_t(opts, "export.hangul_without_kotex"))
        document = _HANGUL_RUN.sub(lambda run: rf"\qkvhangul{{{run[0]}}}", document)
    return _preamble(korean, title) + "\n" + document + "\n\n\\end{document}\n"
