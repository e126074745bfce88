"""The exports for slides and handouts: Markdown, LaTeX, HTML and SVG.

- Golden files of every export of the `doc` and `sentence` presets, in English and Korean
  (tests/golden/<preset>.<lang>.<md|tex|html|svg>). After a deliberate change of a rendering,
  regenerate them with `QKVCALC_REGEN_GOLDEN=1 python -m pytest tests/test_exports.py`, then
  read `git diff tests/golden` before committing.
- The LaTeX exports are compiled by pdflatex (skipped, with the reason, when pdflatex or, for
  Korean, kotex is missing: Debian's texlive-latex-base, texlive-latex-extra, lmodern and
  texlive-lang-korean provide them; .ci/run installs them).
- The HTML export is opened in real headless Chromium (Debian's chromium; skipped with the
  reason when it is absent), and the page it builds must hold every stage and the numbers of
  an independent, naive computation (tests/naive.py).
- Markdown is read back by an independent parser (markdown-it-py, which rich depends on), so
  a `|` or a `*` in a token can be shown not to break a table.
- --output picks the format from the extension and never leaves a partial file behind.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import qkvcalc
from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.render import FORMATS, RenderOptions
from qkvcalc.render.html import render_html
from qkvcalc.render.latex import render_latex, tex_escape
from qkvcalc.render.markdown import render_markdown
from qkvcalc.render.svg import render_svg
from qkvcalc.render.text import fmt, safe
from tests.conftest import GOLDEN, ROOT
from tests.naive import naive

REGEN = os.environ.get("QKVCALC_REGEN_GOLDEN") == "1"
EXPORTS = {"markdown": "md", "latex": "tex", "html": "html", "svg": "svg"}
# An SVG is the txt rendering in a picture: checked against it (test_svg_holds_the_text_of_
# the_txt_rendering), not against a golden file of its own that pins the same text again.
GOLDEN_EXPORTS = {name: ext for name, ext in EXPORTS.items() if name != "svg"}
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PDFLATEX = shutil.which("pdflatex")

PRESETS = sorted(path.stem for path in (ROOT / "presets").glob("*.json"))
SENTENCE = presets.load("sentence")
NASTY_TOKENS = [
    "a_b %c",
    "x & y # z",
    "{brace}",
    "back\\slash",
    "^caret~",
    "$dollar$",
    "a|b",
    "*star*",
    "<script>alert(1)</script>",
    "a--b",
    "naïve",
    "토큰",
    "😀",
    "esc\x1b[31m",
]


def trace_of(doc: dict):
    fields = {k: v for k, v in doc.items() if k not in ("name", "description", "reference")}
    return qkvcalc.explain(**fields)


def nasty_doc(count: int = len(NASTY_TOKENS)) -> dict:
    """A causal problem whose token names hold every character that means something in
    Markdown, LaTeX or HTML (and an escape sequence, Hangul, an emoji)."""
    tokens = (NASTY_TOKENS * (count // len(NASTY_TOKENS) + 1))[:count]
    x = [[(i % 3) - 1, (i * 2 % 5) - 2] for i in range(count)]
    return {
        "tokens": tokens,
        "x": x,
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "mask": "causal",
    }


# ---- golden files --------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("preset", ["doc", "sentence"])
@pytest.mark.parametrize("fmt_name", list(GOLDEN_EXPORTS))
def test_export_matches_its_golden_file(cli, fmt_name, preset, lang):
    result = cli("explain", "--preset", preset, "--format", fmt_name, "--lang", lang)
    assert result.exit_code == 0, result.stderr
    golden = GOLDEN / f"{preset}.{lang}.{EXPORTS[fmt_name]}"
    if REGEN:
        golden.write_text(result.stdout, encoding="utf-8")
    assert golden.exists(), f"no golden file {golden.name}: regenerate it and read it"
    assert result.stdout == golden.read_text(encoding="utf-8")


def test_every_export_is_registered():
    for fmt_name in EXPORTS:
        assert fmt_name in FORMATS


# ---- --output ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ext,fmt_name",
    [(".md", "markdown"), (".tex", "latex"), (".html", "html"), (".svg", "svg"), (".json", "json")],
)
def test_output_picks_the_format_from_the_extension(cli, tmp_path, ext, fmt_name):
    target = tmp_path / f"lesson{ext}"
    written = cli("explain", "--preset", "sentence", "--output", str(target))
    assert written.exit_code == 0, written.stderr
    assert written.stdout == ""
    printed = cli("explain", "--preset", "sentence", "--format", fmt_name)
    assert target.read_text(encoding="utf-8") == printed.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_format_wins_over_the_extension(cli, tmp_path):
    target = tmp_path / "notes.md"
    result = cli("explain", "--preset", "doc", "--format", "json", "--output", str(target))
    assert result.exit_code == 0, result.stderr
    assert target.read_text(encoding="utf-8").startswith("{")


def _assert_failed_cleanly(result, tmp_path: Path, *names: str) -> None:
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_bad_input_writes_no_file(cli, tmp_path):
    target = tmp_path / "lesson.md"
    result = cli(
        "explain",
        "--x",
        "1 2",
        "--wq",
        "1 0",
        "--wk",
        "1 1; 0 1",
        "--wv",
        "1 0; 1 1",
        "--output",
        str(target),
    )
    _assert_failed_cleanly(result, tmp_path)
    assert "W_Q" in result.stderr


def test_an_unwritable_target_leaves_no_partial_file(cli, tmp_path):
    # the rename onto a directory fails after the temporary file was written: it must go
    (tmp_path / "lesson.md").mkdir()
    result = cli("explain", "--preset", "doc", "--output", str(tmp_path / "lesson.md"))
    _assert_failed_cleanly(result, tmp_path, "lesson.md")
    assert (tmp_path / "lesson.md").is_dir() and not any((tmp_path / "lesson.md").iterdir())
    assert "lesson.md" in result.stderr


def test_a_missing_folder_is_an_error_not_a_traceback(cli, tmp_path):
    result = cli("explain", "--preset", "doc", "--output", str(tmp_path / "no" / "lesson.md"))
    _assert_failed_cleanly(result, tmp_path)


def test_an_unknown_extension_names_the_known_ones(cli, tmp_path):
    result = cli("explain", "--preset", "doc", "--output", str(tmp_path / "lesson.pdf"))
    _assert_failed_cleanly(result, tmp_path)
    assert ".pdf" in result.stderr and ".tex" in result.stderr and "--format" in result.stderr


def test_an_existing_file_is_replaced_whole(cli, tmp_path):
    target = tmp_path / "lesson.md"
    target.write_text("old notes " * 10_000, encoding="utf-8")
    result = cli("explain", "--preset", "doc", "--output", str(target))
    assert result.exit_code == 0, result.stderr
    assert "old notes" not in target.read_text(encoding="utf-8")


# ---- Markdown --------------------------------------------------------------------------------


def _tables(markdown: str) -> list[list[list[str]]]:
    """Every table of a Markdown document, read by markdown-it-py: rows of cell texts (a cell
    that became markup other than bold reads '<markup …>')."""
    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    tables: list[list[list[str]]] = []
    inside = False
    for token in md.parse(markdown):
        if token.type in ("table_open", "table_close"):
            inside = token.type == "table_open"
            if inside:
                tables.append([])
        elif inside and token.type == "tr_open":
            tables[-1].append([])
        elif inside and token.type == "inline":
            children = token.children or []
            kinds = {child.type for child in children} - {"strong_open", "strong_close"}
            text = "".join(c.content for c in children if c.type in ("text", "text_special"))
            tables[-1][-1].append(text if kinds <= {"text", "text_special"} else f"<{kinds}>")
    return tables


def test_markdown_tables_are_read_back_as_written():
    text = render_markdown(trace_of(SENTENCE), RenderOptions())
    tables = _tables(text)
    assert tables[0][0] == ["X", "1", "2"]
    assert [row[0] for row in tables[0][1:]] == ["I", "love", "cats"]
    naive_weights = naive(SENTENCE)[("weights", None)]
    weights_table = next(t for t in tables if t[0][0] == "A")
    assert weights_table[0] == ["A", "I", "love", "cats"]
    for row, expected in zip(weights_table[1:], naive_weights, strict=True):
        assert row[1:] == [fmt(w, 4) for w in expected]


token_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\t\x0b\x0c"),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(token_text, min_size=2, max_size=2))
def test_markdown_tokens_never_break_a_table(tokens):
    doc = {**nasty_doc(2), "tokens": tokens}
    text = render_markdown(trace_of(doc), RenderOptions())
    tables = _tables(text)
    assert tables
    for table in tables:
        width = len(table[0])
        assert all(len(row) == width for row in table)
    # the input table: its first column shows each token literally (a table cell is trimmed)
    assert [row[0] for row in tables[0][1:]] == [safe(t, 10_000).strip() for t in tokens]
    # and the softmax rows name each token as written, not as markup
    for i, token in enumerate(tokens):
        line = next(line for line in text.splitlines() if line.startswith(f"- row {i + 1} ("))
        shown = _text_of(MarkdownIt("commonmark").render(line))
        assert f"row {i + 1} ({safe(token)})" in shown


def _text_of(html: str) -> str:
    parser = _TextParser()
    parser.feed(html)
    assert not parser.markup, f"token became markup: {parser.markup}"
    return "".join(parser.text)


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.markup: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in ("ul", "li", "p"):
            self.markup.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_markdown_has_the_formulas_as_math():
    text = render_markdown(trace_of(SENTENCE), RenderOptions())
    assert r"$Q \cdot K^\top$" in text
    assert r"$Q \cdot K^\top / \sqrt{d_k} + M$" in text
    assert text.count("\\begin{bmatrix}") == text.count("\\end{bmatrix}") > 0


# ---- LaTeX -----------------------------------------------------------------------------------


def _pdflatex(tex: str, where: Path) -> str:
    """Compile and return the log; fail with the log's errors when pdflatex fails."""
    source = where / "lesson.tex"
    source.write_text(tex, encoding="utf-8")
    proc = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", source.name],
        cwd=where,
        capture_output=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    log = (where / "lesson.log").read_text(encoding="utf-8", errors="replace")
    errors = [line for line in log.splitlines() if line.startswith("!")]
    assert proc.returncode == 0, errors or log[-2000:]
    assert (where / "lesson.pdf").stat().st_size > 1000
    assert "Missing character" not in log, "a character was dropped"
    return log


def _has_kotex() -> bool:
    kpsewhich = shutil.which("kpsewhich")
    if kpsewhich is None:
        return False
    found = subprocess.run([kpsewhich, "kotex.sty"], capture_output=True, text=True, timeout=60)
    return bool(found.stdout.strip())


needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None,
    reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-extra lmodern)",
)


@needs_pdflatex
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("preset", PRESETS)
def test_latex_export_compiles(tmp_path, preset, lang):
    if lang == "ko" and not _has_kotex():
        pytest.skip("kotex is not installed (Debian: texlive-lang-korean): Korean LaTeX needs it")
    _pdflatex(render_latex(trace_of(presets.load(preset)), RenderOptions(lang=lang)), tmp_path)


@needs_pdflatex
def test_latex_with_every_special_character_in_the_tokens_compiles(tmp_path):
    if not _has_kotex():
        pytest.skip("kotex is not installed (Debian: texlive-lang-korean): a token is Hangul")
    tex = render_latex(trace_of(nasty_doc()), RenderOptions(max_rows=20))
    assert r"\usepackage{kotex}" in tex  # Hangul in a token brings kotex, even in English
    _pdflatex(tex, tmp_path)


@needs_pdflatex
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(token_text, min_size=12, max_size=12))
def test_latex_compiles_whatever_the_tokens(tmp_path_factory, tokens):
    tokens = [t for t in tokens if not re.search("[\uac00-\ud7a3\u3131-\u318e]", t)]
    doc = {**nasty_doc(len(tokens)), "tokens": tokens} if len(tokens) > 1 else nasty_doc(2)
    _pdflatex(
        render_latex(trace_of(doc), RenderOptions(max_rows=20)), tmp_path_factory.mktemp("tex")
    )


@given(st.text())
def test_tex_escape_leaves_no_special_character_bare(text):
    escaped = tex_escape(text)
    # drop every control sequence and its braces; what is left must be plain text
    bare = re.sub(r"\\[A-Za-z]+|\\[{}$&%#_ ]|[{}]|\$[^$]*\$", "", escaped)
    assert not set(bare) & set("\\{}$&%#^_~"), (text, escaped)
    assert all(
        ord(c) < 0x7F or 0xC0 <= ord(c) <= 0x17F or 0x3131 <= ord(c) <= 0xD7A3 for c in escaped
    )


def test_latex_is_a_standalone_amsmath_document():
    tex = render_latex(trace_of(SENTENCE), RenderOptions())
    assert tex.startswith("%") and r"\documentclass" in tex
    assert r"\usepackage{amsmath}" in tex and r"\usepackage[utf8]{inputenc}" in tex
    assert tex.rstrip().endswith(r"\end{document}")
    assert tex.count(r"\begin{bmatrix}") == tex.count(r"\end{bmatrix}") > 10
    # the arithmetic from the left margin, a line each (flalign*: & line &&)
    assert tex.count(r"\begin{flalign*}") == tex.count(r"\end{flalign*}") > 5
    assert r"& q_{1} \cdot k_{1} = 1\times 1 + 2\times 3 = 7 &&" in tex
    assert r"\frac{7}{\sqrt{2}} = 4.9497 &&" in tex
    assert r"\usepackage{kotex}" not in tex


# ---- HTML --------------------------------------------------------------------------------------


class _PageParser(HTMLParser):
    """Collects the stages (data-stage), each table's cell texts, and any script element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stages: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.scripts = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and "data-stage" in a:
            self.stages.append(a["data-stage"] or "")
        elif tag == "script":
            self.scripts += 1
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _chromium_dom(page: Path, tmp_path: Path) -> str:
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: chromium)"
)


@needs_chromium
def test_html_export_in_a_real_browser_has_the_stages_and_the_numbers(tmp_path):
    doc = {**SENTENCE, "tokens": ["<script>f()</script>", "love", "a&b"]}
    trace = trace_of(doc)
    page = tmp_path / "lesson.html"
    page.write_text(render_html(trace, RenderOptions()), encoding="utf-8")
    dom = _PageParser()
    dom.feed(_chromium_dom(page, tmp_path))
    assert dom.stages == [s.id for s in trace.stages] + ["final"]
    # the token stayed text: the built page has the page's own two scripts (its data and its
    # code, qkvcalc/render/page.py), no element of the token's making
    assert dom.scripts == 2
    reference = naive(doc)
    final = dom.tables[-1]
    assert [row[0] for row in final[1:]] == doc["tokens"]
    expected = reference[("output", None)]
    assert [row[1:] for row in final[1:]] == [[fmt(v, 4) for v in r] for r in expected]
    weights = next(t for t in dom.tables if t[0][0] == "A" and len(t[0]) == 4)
    assert [row[1:] for row in weights[1:]] == [
        [fmt(w, 4) for w in r] for r in reference[("weights", None)]
    ]


@needs_chromium
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_html_golden_pages_load_in_a_browser(tmp_path, lang):
    page = tmp_path / "sentence.html"
    shutil.copy(GOLDEN / f"sentence.{lang}.html", page)
    dom = _PageParser()
    dom.feed(_chromium_dom(page, tmp_path))
    assert len(dom.stages) == 12
    assert translate("stage.weights.title", lang) in page.read_text(encoding="utf-8")


def test_html_fragment_for_a_notebook():
    trace = trace_of(SENTENCE)
    fragment = trace._repr_html_()
    assert fragment.startswith('<div class="qkvcalc"') and fragment.rstrip().endswith("</div>")
    assert "<html" not in fragment and "<body" not in fragment
    # every stage folded under its heading (a <details>), in the run's order
    folded = re.findall(r'<details class="stage" data-stage="([^"]+)"', fragment)
    assert folded[:3] == ["x", "q", "k"]


def test_html_weights_are_numbers_on_colour():
    html = render_html(trace_of(SENTENCE), RenderOptions())
    # every coloured weight cell still prints its number
    cells = re.findall(
        r'<td style="background: rgb\(\d+,\d+,\d+\); color: #[0-9a-f]+"[^>]*>([^<]*)<', html
    )
    assert len(cells) == 9 and all(re.fullmatch(r"\d+(\.\d+)?", c) for c in cells)


# ---- SVG ---------------------------------------------------------------------------------------

SVG_NS = "{http://www.w3.org/2000/svg}"


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("preset", ["doc", "sentence"])
def test_svg_holds_the_text_of_the_txt_rendering(cli, preset, lang):
    """The picture's text, line after line, is the txt rendering at the page's 100 columns
    (the txt golden pins that text), under a window title that names the preset."""
    svg = cli("explain", "--preset", preset, "--format", "svg", "--lang", lang).stdout
    txt = cli(
        "explain", "--preset", preset, "--format", "txt", "--lang", lang, env={"COLUMNS": "100"}
    ).stdout
    root = ET.fromstring(svg)
    title, *lines = ("".join(e.itertext()) for e in root.iter(f"{SVG_NS}text"))
    assert preset in title
    assert re.sub(r"\s", "", "".join(lines)) == re.sub(r"\s", "", txt)
    assert max(len(line.rstrip()) for line in txt.splitlines()) <= 100


def test_svg_is_well_formed_with_the_stages_and_colour():
    trace = trace_of({**SENTENCE, "tokens": ["<b>", "a&b", "]]>"]})
    svg = render_svg(trace, RenderOptions(color=False))  # a picture is always in colour
    root = ET.fromstring(svg)
    text = "".join(root.itertext()).replace("\xa0", " ")
    for stage in trace.stages:
        assert translate(stage.title.key, "en").split(":")[0] in text
    assert "<b>" in text and "a&b" in text and "]]>" in text
    assert re.search(r"fill=\"#[0-9a-f]{6}\"", svg)
    for row in naive(SENTENCE)[("output", None)]:
        assert all(fmt(v, 4) in text for v in row)


# ---- large inputs --------------------------------------------------------------------------


def _shown_markdown(text: str) -> tuple[int, int]:
    table = _tables(text)[0]
    return sum(row[0] != "⋮" for row in table[1:]), sum(c != "…" for c in table[0][1:])


def _shown_html(text: str) -> tuple[int, int]:
    page = _PageParser()
    page.feed(text)
    table = page.tables[0]
    return sum(row[0] != "⋮" for row in table[1:]), sum(c != "…" for c in table[0][1:])


def _shown_latex(text: str) -> tuple[int, int]:
    body = text.split("\\begin{bmatrix}", 1)[1].split("\\end{bmatrix}", 1)[0]
    rows = [line.split(" & ") for line in body.strip().split(" \\\\\n")]
    return sum("\\vdots" not in r[0] for r in rows), sum(c != "\\cdots" for c in rows[0])


@pytest.mark.parametrize(
    "render,shown,escape",
    [
        (render_markdown, _shown_markdown, str),
        (render_latex, _shown_latex, tex_escape),
        (render_html, _shown_html, str),
    ],
)
def test_large_inputs_elide_and_say_how_much(render, shown, escape):
    n = 30
    eye = [[1 if i == j else 0 for j in range(n)] for i in range(n)]
    doc = {
        "x": [[(i * j) % 5 - 2 for j in range(n)] for i in range(n)],
        "wq": eye,
        "wk": eye,
        "wv": eye,
    }
    opts = RenderOptions()
    text = render(trace_of(doc), opts)
    rows, cols = shown(text)
    assert 3 <= rows <= opts.max_rows and 2 <= cols < n
    assert escape(translate("note.hidden", "en", rows=n - rows, cols=n - cols)) in text
    reason = translate("note.too_big_cells", "en", cells=n * n, limit=opts.arithmetic_cells)
    assert escape(translate("note.no_arithmetic", "en", reason=reason)) in text
    assert "[1,1] = " not in text and "[1,1]: " not in text and "[{1},{1}]" not in text


@pytest.mark.parametrize("render", [render_markdown, render_latex, render_html])
def test_brief_detail_has_no_arithmetic(render):
    full = render(trace_of(SENTENCE), RenderOptions())
    brief = render(trace_of(SENTENCE), RenderOptions(detail="brief"))
    assert "2×3 = 7" in full.replace(r"\times ", "×")
    assert "2×3 = 7" not in brief.replace(r"\times ", "×")


# ---- the README's picture ----------------------------------------------------------------------


def test_the_readme_picture_is_a_current_run(cli, tmp_path):
    """docs/doc.svg is what `qkvcalc explain --preset doc --output docs/doc.svg` makes today
    (regenerate it with that command, or with QKVCALC_REGEN_GOLDEN=1, after reading the diff)."""
    picture = ROOT / "docs" / "doc.svg"
    target = tmp_path / "doc.svg"
    result = cli("explain", "--preset", "doc", "--output", str(target))
    assert result.exit_code == 0, result.stderr
    if REGEN:
        shutil.copy(target, picture)
    assert "docs/doc.svg" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert target.read_text(encoding="utf-8") == picture.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["markdown", "html", "latex"])
def test_the_split_is_said_in_sentences_in_every_export(cli, fmt):
    """The split stage reads as in the terminal (which columns each head takes), not as a table
    of labels: the labels would be untranslated in a Korean handout."""
    out = cli("explain", "--preset", "gqa", "--format", fmt).stdout
    assert "head 3: W" in out and "(K/V head 2)" in out
    ko = cli("explain", "--preset", "gqa", "--format", fmt, "--lang", "ko").stdout
    assert "헤드 3: W" in ko and "(K/V 헤드 2)" in ko and "K/V head" not in ko


# ---- input text lands as text, never as markup (issue 20, security 4) -----------------------
# LaTeX set a token e^(a_b_c) as math (it matched the exponentials of the catalog's sentences)
# and the document stopped compiling; Markdown made a name "# X" a heading and a note that
# starts with a token "1. X" or "> X" a list or a quote.

PAYLOAD = "PAYLOAD"
BLOCK_STARTS = [
    f"# {PAYLOAD}",
    f"1. {PAYLOAD}",
    f"2) {PAYLOAD}",
    f"> {PAYLOAD}",
    f"- {PAYLOAD}",
    f"+ {PAYLOAD}",
    f"    {PAYLOAD} indented",
    f"=== {PAYLOAD}",
    f"--- {PAYLOAD}",
    f"<div>{PAYLOAD}</div>",
    f"```{PAYLOAD}",
    f"*** {PAYLOAD}",
]
PLAIN_DOC = {
    "x": [[1, 0], [0, 1]],
    "wq": [[1, 0], [0, 1]],
    "wk": [[1, 1], [0, 1]],
    "wv": [[1, 0], [1, 1]],
    "mask": "causal",
}


def full_trace(doc: dict):
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    return run(Problem.from_mapping(doc))


def block_kinds(markdown: str) -> dict[str, int]:
    """How many blocks of each kind markdown-it-py finds (inline text aside)."""
    counts: dict[str, int] = {}
    for token in MarkdownIt("commonmark").enable(["table"]).parse(markdown):
        if token.type != "inline" and token.nesting >= 0:
            counts[token.type] = counts.get(token.type, 0) + 1
    return counts


@pytest.mark.parametrize("text", BLOCK_STARTS)
@pytest.mark.parametrize("where", ["name", "tokens"])
def test_markdown_block_markup_in_the_input_stays_text(text, where):
    plain = render_markdown(
        full_trace({**PLAIN_DOC, "name": "plain", "tokens": ["a", "b"]}), RenderOptions()
    )
    doc = {**PLAIN_DOC, "name": "plain", "tokens": ["a", "b"]}
    doc.update({"name": text} if where == "name" else {"tokens": [text, text + " 2"]})
    markdown = render_markdown(full_trace(doc), RenderOptions())
    assert block_kinds(markdown) == block_kinds(plain), markdown
    # and where the text shows, it shows as written
    md = MarkdownIt("commonmark").enable(["table"])
    shown = [
        "".join(c.content for c in token.children or [] if c.type in ("text", "text_special"))
        for token in md.parse(markdown)
        if token.type == "inline" and PAYLOAD in token.content
    ]
    assert shown and any(safe(text).strip() in line for line in shown), shown


@needs_pdflatex
def test_latex_sets_a_token_that_looks_like_an_exponential_as_text(tmp_path):
    tokens = ["e^(a_b_c)", "e^(x)", "e^2", "\\input{/etc/hostname}"]
    doc = {**nasty_doc(len(tokens)), "tokens": tokens}
    tex = render_latex(full_trace(doc), RenderOptions(max_rows=20))
    assert "$e^{a" not in tex and "$e^{x}$" not in tex and "$e^{2}$" not in tex
    assert "\\input{" not in tex  # no backslash of the input gets through
    assert "e\\textasciicircum{}(a\\_\\allowbreak{}b" in tex  # shown as the text it is
    _pdflatex(tex, tmp_path)


def test_latex_still_sets_the_catalogs_exponentials_as_math():
    tex = render_latex(full_trace(presets.load("doc")), RenderOptions())
    assert "$e^{" in tex


def test_latex_arithmetic_writes_its_greek_and_tanh_as_commands_not_tabs():
    """A raw string typed with a TAB for '\\t' wrote '<TAB>heta' and '<TAB>anh': the RoPE and
    softcap arithmetic must write \\theta and \\tanh, and no export holds a TAB."""
    from qkvcalc.render import render

    rope = qkvcalc.explain(
        x=[[1, 0], [0, 1]], wq=[[1, 0], [0, 1]], wk=[[1, 0], [0, 1]], wv=[[1, 0], [0, 1]], rope=True
    )
    capped = qkvcalc.explain(
        x=[[1, 2], [3, 1]], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]], softcap=2
    )
    rope_tex, cap_tex = render(rope, "latex"), render(capped, "latex")
    assert "\t" not in rope_tex and "\t" not in cap_tex
    assert r"(\varphi = " in rope_tex
    assert r"\tanh(" in cap_tex


line_starts = st.builds(
    lambda start, rest: start + rest,
    st.sampled_from(["", " ", "    ", "#", "##", "-", "+", "*", "=", ">", "1.", "9)", "```", "<"]),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
)


@settings(max_examples=80, deadline=None)
@given(name=line_starts, tokens=st.lists(line_starts, min_size=2, max_size=2))
def test_markdown_blocks_are_the_documents_own_whatever_the_input(name, tokens):
    plain = render_markdown(
        full_trace({**PLAIN_DOC, "name": "plain", "tokens": ["a", "b"]}), RenderOptions()
    )
    doc = {**PLAIN_DOC, "name": name or "n", "tokens": [t or "t" for t in tokens]}
    assert block_kinds(render_markdown(full_trace(doc), RenderOptions())) == block_kinds(plain)


@settings(max_examples=80, deadline=None)
@given(
    tokens=st.lists(
        st.from_regex(r"e\^(\([a-z_0-9 ,.()\[\]+]{0,8}\)|[a-z0-9_]{1,4})", fullmatch=True),
        min_size=2,
        max_size=2,
    )
)
def test_latex_math_comes_from_the_catalog_alone(tokens):
    """The exponentials set as math are the same whatever the tokens: none is a token's."""
    tex = render_latex(full_trace({**PLAIN_DOC, "tokens": tokens}), RenderOptions())
    plain = render_latex(full_trace({**PLAIN_DOC, "tokens": ["a", "b"]}), RenderOptions())
    assert tex.count("$e^{") == plain.count("$e^{")


class _Tags(HTMLParser):
    """The tags of an HTML page, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


HOSTILE_TEXT = [*BLOCK_STARTS, f"<b>{PAYLOAD}</b>", f"<script>{PAYLOAD}</script>", f"&lt;{PAYLOAD}"]


@pytest.mark.parametrize("text", HOSTILE_TEXT)
def test_html_and_svg_show_hostile_names_and_tokens_as_text(text):
    plain_doc = {**PLAIN_DOC, "name": "plain", "tokens": ["a", "b"]}
    doc = {**PLAIN_DOC, "name": text, "tokens": [text, text + " 2"]}
    pages = {}
    for label, d in (("plain", plain_doc), ("hostile", doc)):
        parser = _Tags()
        parser.feed(render_html(full_trace(d), RenderOptions()))
        pages[label] = parser
    assert pages["hostile"].tags == pages["plain"].tags  # no element of the input's making
    assert any(text.strip() in chunk for chunk in pages["hostile"].text)
    svg = render_svg(full_trace(doc), RenderOptions())
    root = ET.fromstring(svg)  # well-formed XML
    plain_svg = ET.fromstring(render_svg(full_trace(plain_doc), RenderOptions()))
    # longer text takes more lines of the picture, never another kind of element
    assert {e.tag for e in root.iter()} <= {e.tag for e in plain_svg.iter()}
    assert PAYLOAD in "".join(root.itertext())
