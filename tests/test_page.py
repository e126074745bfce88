"""The interactive page (`--format html`) in a real browser: headless chromium driven by Selenium.

Pointing at a cell (the mouse, or keyboard focus) lights the cells it was computed from and shows
its arithmetic; presenter mode walks the stages by keys and keeps its place in the URL; each
head's weights are a heatmap and lines; `--lang en,ko` switches languages; no JavaScript error
reaches the console; nothing is wider than the viewport without a scroll container at 1280×720
and 1920×1080; Tab reaches everything in order with a visible focus; and with JavaScript off the
page reads as the static export. Every preset's page and a GPT-2-sized layer's go through it.

One browser session per module (the fixtures `driver` and `nojs`); skipped, saying why, where
selenium, chromium or chromedriver is missing. `QKVCALC_REGEN_GOLDEN=1` also rewrites the README's
screenshot, docs/page.png, from the same code that checks the page at 1280×720.
"""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import qkvcalc
from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.ops.table import OPS
from qkvcalc.render import RenderOptions
from qkvcalc.render.html import render_html
from qkvcalc.render.page import Cells, feeds_of
from tests import browser
from tests.conftest import ROOT

REASON = browser.missing()  # why the browser tests skip here, or None

PRESETS = sorted(path.stem for path in (ROOT / "presets").glob("*.json"))
REGEN = os.environ.get("QKVCALC_REGEN_GOLDEN") == "1"
SIZES = [(1280, 720), (1920, 1080)]


# ---- the pages and the browsers -----------------------------------------------------------


# beyond the presets: softcap, sinks, q/k norms and a window on LLaMA's rotary heads, as a
# whole run, in decode steps and in tiles (every op the plan has today reaches a page)
MODERN = {"softcap": 5.0, "sinks": [0.5, -0.25], "q_norm": [1.0, 0.5], "k_norm": [0.5, 1.0]}
EXTRA = {
    "modern": {**MODERN, "window": 2},
    "modern-decode": {**MODERN, "decode": 2},
    "modern-tiles": {**MODERN, "tiles": 2},
}


def trace_of(name: str) -> qkvcalc.Trace:
    if name in EXTRA:
        return qkvcalc.explain(**{**presets.load("llama"), **EXTRA[name]})
    return qkvcalc.explain(**presets.load(name))


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """Every preset's page, the sentence in both languages and a hostile one, written once."""
    folder = tmp_path_factory.mktemp("pages")
    out = {}
    for name in [*PRESETS, *EXTRA]:
        out[name] = folder / f"{name}.html"
        out[name].write_text(render_html(trace_of(name), RenderOptions()), encoding="utf-8")
    both = RenderOptions(langs=("en", "ko"))
    out["both"] = folder / "both.html"
    out["both"].write_text(render_html(trace_of("sentence"), both), encoding="utf-8")
    hostile = {**presets.load("sentence"), "tokens": ["</script><b>x", "<!--", "a&b"]}
    out["hostile"] = folder / "hostile.html"
    out["hostile"].write_text(render_html(qkvcalc.explain(**hostile)), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def driver():
    if REASON is not None:
        pytest.skip(REASON)
    session = browser.browser(js=True)
    yield session
    session.quit()


@pytest.fixture(scope="module")
def nojs():
    if REASON is not None:
        pytest.skip(REASON)
    session = browser.browser(js=False)
    yield session
    session.quit()


def errors(session) -> list[str]:
    """The console's errors since the last call (every test ends with none)."""
    return [e["message"] for e in session.get_log("browser") if e["level"] == "SEVERE"]


@pytest.fixture
def page(driver, pages):
    """Open a page by name (at 1280×720); after the test, the console holds no error."""
    errors(driver)

    def open_page(name: str, width: int = 1280, height: int = 720, fragment: str = "") -> Path:
        browser.show(driver, pages[name], width, height, fragment)
        assert driver.execute_script("return document.documentElement.dataset.qkvReady") == "1"
        return pages[name]

    yield open_page
    assert errors(driver) == []


def js(driver, code: str, *args):
    return driver.execute_script(code, *args)


def point(driver, cell_id: str, how: str = "focus") -> tuple[set[str], str]:
    """Point at a cell (focus it, or move the mouse over it): the ids lit, the note's text."""
    cell = driver.find_element("id", cell_id)
    if how == "mouse":
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(driver).move_to_element(cell).perform()
    else:
        js(driver, "arguments[0].focus()", cell)
    lit = js(driver, "return [...document.querySelectorAll('.qkv-from')].map(e => e.id)")
    note = driver.find_element("css selector", ".qkv-arith")
    assert note.is_displayed()
    return set(lit), note.text


def number_of(trace: qkvcalc.Trace, sid: str, head=None, **kw) -> int:
    stage = trace.stage(sid, head, **kw)
    return next(k for k, s in enumerate(trace.stages, 1) if s is stage)


def ids(prefix: str, table: int | str, cells) -> set[str]:
    return {f"{prefix}c{table}-{i}-{j}" for i, j in cells}


# ---- pointing at a cell ---------------------------------------------------------------------


@pytest.mark.parametrize("name", [*PRESETS, *EXTRA])
def test_the_pages_sources_are_each_ops_own_rule(name):
    """feeds_of (the sources a cell names) is the op's own `feeds`, cell for cell, for every
    stage of every preset: its numpy shortcuts for products and whole rows included."""
    trace = trace_of(name)
    cells = Cells(trace, RenderOptions())
    for stage in trace.stages:
        op = OPS[stage.op]
        shapes = cells._shapes(stage)
        rows, cols = stage.shape
        for i in range(rows):
            for j in range(cols):
                mine = feeds_of(op, i, j, shapes, stage.params).tolist()
                assert mine == [list(f) for f in op.feeds(i, j, shapes, stage.params)], stage.id


def test_a_score_lights_its_row_of_q_and_column_of_kt(driver, page):
    """Q·Kᵀ[2,3] = q₂·k₃: row 2 of Q and column 3 of Kᵀ light up; the note is its sum."""
    page("sentence")
    trace = trace_of("sentence")
    q, kt, scores = (number_of(trace, s) for s in ("q", "kt", "scores"))
    for how in ("mouse", "focus"):
        lit, note = point(driver, f"en-c{scores}-2-3", how)
        stage_cells = {i for i in lit if re.fullmatch(r"en-c\d+-\d+-\d+", i)}
        assert stage_cells == ids("en-", q, [(2, 1), (2, 2)]) | ids("en-", kt, [(1, 3), (2, 3)])
        assert "q₂·k₃ = 0×1 + 1×2 = 2" in note
        assert note.startswith("Q·Kᵀ[2,3] = 2")


def test_a_weight_lights_its_row_of_exponentials_and_shows_the_division(driver, page):
    page("sentence")
    trace = trace_of("sentence")
    exp, weights = number_of(trace, "exp"), number_of(trace, "weights")
    lit, note = point(driver, f"en-c{weights}-2-1")
    assert lit == ids("en-", exp, [(2, 1), (2, 2), (2, 3)])  # the row's sum reads the whole row
    assert "[2,1]: 1 / 1.2431 = 0.8044" in note


def test_an_exponential_lights_the_row_its_maximum_came_from(driver, page):
    page("sentence")
    trace = trace_of("sentence")
    masked, exp = number_of(trace, "masked"), number_of(trace, "exp")
    lit, note = point(driver, f"en-c{exp}-3-2")
    assert lit == ids("en-", masked, [(3, 1), (3, 2), (3, 3)])
    assert "e^(0.7071 − 2.8284) = 0.1199" in note


def test_the_final_table_is_the_output_stages_own(driver, page):
    page("sentence")
    output = number_of(trace_of("sentence"), "output")
    lit, note = point(driver, "en-cF-2-1")
    assert lit == {f"en-c{output}-2-1"}
    assert note.startswith("A·V[2,1] = 2.6089") and translate("page.why_copy", "en") in note


def test_a_masked_score_says_why_and_lights_nothing(driver, page):
    page("sentence")
    masked = number_of(trace_of("sentence"), "masked")
    lit, note = point(driver, f"en-c{masked}-1-3")
    assert lit == set()
    assert translate("page.why_masked", "en") in note


def test_a_projection_lights_the_row_of_x_and_the_column_of_w_beside_it(driver, page):
    page("sentence")
    trace = trace_of("sentence")
    x, q = number_of(trace, "x"), number_of(trace, "q")
    lit, note = point(driver, f"en-c{q}-3-2")
    # X's own table, and X and W_Q as the product X · W_Q = Q shows them
    assert lit == ids("en-", x, [(3, 1), (3, 2)]) | ids("en-", f"{q}.0", [(3, 1), (3, 2)]) | ids(
        "en-", f"{q}.1", [(1, 2), (2, 2)]
    )
    assert "Q[3,2] = 1×0 + 1×1 = 1" in note


def test_a_decode_step_reads_the_cache_and_a_tile_its_running_maximum(driver, page):
    page("decode")
    trace = trace_of("decode")
    step = 2
    scores = number_of(trace, "scores", step=step)
    cache = number_of(trace, "k_cache", step=step)
    lit, _ = point(driver, f"en-c{scores}-1-2")
    assert ids("en-", cache, [(2, j) for j in range(1, trace.problem.d_k + 1)]) <= lit
    page("tiles")
    trace = trace_of("tiles")
    total = number_of(trace, "running_sum", block=2)
    biggest = number_of(trace, "running_max", block=2)
    lit, note = point(driver, f"en-c{total}-1-1")
    before = number_of(trace, "running_sum", block=1)
    assert f"en-c{before}-1-1" in lit  # ℓ₁, carried
    assert "ℓ₂[1]" in note
    lit, _ = point(driver, f"en-c{biggest}-1-1")
    assert f"en-c{number_of(trace, 'running_max', block=1)}-1-1" in lit


@pytest.mark.parametrize("name", [*PRESETS, *EXTRA])
def test_every_cell_of_every_preset_points_at_shown_cells(driver, page, name):
    """Each value cell: pointed at, it lights exactly the existing cells its data-from names
    (never itself, never a later stage), and the note is its arithmetic or why it has none."""
    page(name)
    check_every_cell(driver)


EVERY_CELL = """
const out = [];
const stride = arguments[0];
const stageOf = id => id.split('-')[1].slice(1).split('.')[0];
const cells = document.querySelectorAll('td[data-cell]');
for (let k = 0; k < cells.length; k += stride) {
  const cell = cells[k];
  cell.focus();
  const lit = [...document.querySelectorAll('.qkv-from')].map(e => e.id);
  const note = document.querySelector('.qkv-arith');
  const here = stageOf(cell.id);
  out.push({
    id: cell.id, lit: lit.length, hidden: note.hidden,
    text: note.textContent, arith: cell.dataset.arith || '', why: cell.dataset.why || '',
    later: lit.filter(i => here !== 'F' && Number(stageOf(i)) > Number(here)).length,
    self: lit.includes(cell.id), from: cell.dataset.from || '',
  });
}
return out;
"""


def check_every_cell(driver, stride: int = 1) -> None:
    """Each value cell (every `stride`-th): pointed at, it lights existing cells of earlier
    stages only, never itself, and its note is its arithmetic or why it has none."""
    report = js(driver, EVERY_CELL, stride)
    assert report, "no value cells"
    for cell in report:
        assert not cell["hidden"] and not cell["self"] and cell["later"] == 0, cell
        if cell["arith"]:
            assert cell["arith"] in cell["text"], cell
        else:
            assert translate(f"page.why_{cell['why']}", "en") in cell["text"], cell
        assert (cell["lit"] > 0) == bool(cell["from"]), cell


def test_the_data_block_cannot_be_closed_by_a_token():
    doc = {**presets.load("sentence"), "tokens": ["</script><b>x", "<!--", "a&b\u2028"]}
    html = render_html(qkvcalc.explain(**doc))
    block = html.split('<script type="application/json" id="qkv-data">', 1)[1]
    block = block.split("</script>", 1)[0]
    assert "<" not in block and ">" not in block and "&" not in block and "\u2028" not in block
    data = json.loads(block)
    assert data["pictures"]["queries"][:2] == ["</script><b>x", "<!--"]


def test_hostile_tokens_stay_text(driver, page):
    page("hostile")
    text = js(driver, "return document.querySelector('.qkvcalc').innerText")
    assert "</script><b>x" in text and "<!--" in text
    assert js(driver, "return document.querySelectorAll('b').length") == 0
    assert js(driver, "return document.querySelectorAll('script').length") == 2


# ---- presenter mode -------------------------------------------------------------------------


def keys(driver, *pressed: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for key in pressed:
        chain.send_keys(key)
    chain.perform()


def slide(driver) -> tuple[bool, list[int], str]:
    """(presenter mode on, the 1-based numbers of the visible sections, the URL fragment)."""
    state = js(
        driver,
        """
        const root = document.querySelector('.qkvcalc:not([hidden])');
        const all = [...root.querySelectorAll(':scope > section')];
        return [document.body.classList.contains('qkv-present'),
                all.map((s, k) => s.offsetParent !== null ? k + 1 : 0).filter(Boolean),
                location.hash];
        """,
    )
    return state[0], state[1], state[2]


def test_presenter_mode_walks_the_stages_by_keys(driver, page):
    from selenium.webdriver.common.keys import Keys

    page("sentence")
    total = len(trace_of("sentence").stages) + 2  # the stages, the pictures, the final output
    on, shown, _ = slide(driver)
    assert not on and len(shown) == total
    keys(driver, "p")
    assert slide(driver) == (True, [1], "#present=1")
    keys(driver, Keys.ARROW_RIGHT, " ")
    assert slide(driver) == (True, [3], "#present=3")
    keys(driver, Keys.BACKSPACE)
    assert slide(driver)[1] == [2]
    keys(driver, Keys.ARROW_LEFT, Keys.ARROW_LEFT)  # back from the first stays on the first
    assert slide(driver)[1] == [1]
    keys(driver, "1", "0", Keys.ENTER)
    assert slide(driver) == (True, [10], "#present=10")
    keys(driver, Keys.END)
    assert slide(driver)[1] == [total]
    keys(driver, Keys.HOME)
    assert slide(driver)[1] == [1]
    keys(driver, Keys.ENTER, Keys.ENTER, "b")  # the keys of --step: Enter next, b back
    assert slide(driver)[1] == [2]
    keys(driver, "q")
    assert not slide(driver)[0]
    keys(driver, "p", Keys.HOME)
    keys(driver, "?")
    help_box = driver.find_element("css selector", ".qkv-help")
    assert help_box.is_displayed() and translate("page.key_next", "en") in help_box.text
    keys(driver, Keys.ESCAPE)
    assert not help_box.is_displayed() and slide(driver)[0]
    keys(driver, Keys.ESCAPE)
    on, shown, fragment = slide(driver)
    assert not on and len(shown) == total and fragment == ""


@pytest.mark.parametrize("name,field", [("decode", "step"), ("tiles", "block")])
def test_brackets_walk_a_decode_run_step_by_step_and_tiles_block_by_block(
    driver, page, name, field
):
    trace = trace_of(name)
    groups = [getattr(s, field) for s in trace.stages]
    firsts = [k + 1 for k, g in enumerate(groups) if g is not None and g not in groups[:k]]
    assert len(firsts) >= 2
    page(name)
    keys(driver, "p")
    seen = []
    for _ in firsts:
        keys(driver, "]")
        seen.append(slide(driver)[1][0])
    assert seen == firsts
    keys(driver, "]")  # past the last step: stays
    assert slide(driver)[1] == [firsts[-1]]
    keys(driver, "\ue014")  # → into the last step, then [ back to its start
    keys(driver, "[")
    assert slide(driver)[1] == [firsts[-1]]
    keys(driver, "[")
    assert slide(driver)[1] == [firsts[-2]]


def test_presenter_mode_comes_back_from_the_fragment_and_the_button(driver, page):
    page("sentence", fragment="#present=4")
    assert slide(driver) == (True, [4], "#present=4")
    heading = driver.find_element("css selector", "section.qkv-current h2").text
    assert heading.startswith(f"4/{len(trace_of('sentence').stages)}")
    button = driver.find_element("css selector", "[data-qkv=present]")
    button.click()
    assert not slide(driver)[0]
    button.click()
    assert slide(driver)[:2] == (True, [4])


# ---- the pictures ----------------------------------------------------------------------------


def test_each_head_as_a_heatmap_and_as_lines_and_a_line_opens_its_cell(driver, page):
    page("multihead")
    trace = trace_of("multihead")
    n, m = trace.problem.n, trace.problem.m
    picture = driver.find_element("css selector", "section.qkv-picture")
    heads = picture.find_elements("css selector", "button[data-head]")
    assert [b.text for b in heads] == [
        translate("page.head", "en", head=h) for h in range(1, trace.problem.heads + 1)
    ]
    assert len(picture.find_elements("css selector", "svg[data-view=heatmap] rect")) == n * m
    assert picture.find_element("css selector", ".legend").is_displayed()
    heads[1].click()
    assert heads[1].get_attribute("aria-pressed") == "true"
    weights = trace.weights[1]
    shades = js(
        driver,
        "return [...document.querySelectorAll('svg[data-view=heatmap] rect')]"
        ".map(r => r.querySelector('title').textContent.split(': ').pop())",
    )
    assert [float(s) for s in shades] == pytest.approx(weights.ravel(), abs=1e-4)
    picture.find_element("css selector", "button[data-view=lines]").click()
    lines = picture.find_elements("css selector", "svg[data-view=lines] line")
    assert len(lines) == int((weights > 0).sum())
    target = lines[-1]
    i, j = (int(v) for v in target.get_attribute("data-cell").split(","))
    js(driver, "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", target)
    focused = js(driver, "return document.activeElement")
    assert focused.get_attribute("data-stage") == "weights"
    assert focused.get_attribute("data-head") == "2"
    assert focused.get_attribute("data-cell") == f"{i},{j}"
    note = driver.find_element("css selector", ".qkv-arith").text
    assert focused.get_attribute("data-arith") in note


def test_the_picture_by_keyboard(driver, page):
    from selenium.webdriver.common.keys import Keys

    page("sentence")
    first = driver.find_element("css selector", "svg[data-view=heatmap] rect[tabindex='0']")
    assert first.get_attribute("data-cell") == "1,1"
    js(driver, "arguments[0].focus()", first)
    keys(driver, Keys.ARROW_DOWN, Keys.ARROW_RIGHT)
    assert js(driver, "return document.activeElement.dataset.cell") == "2,2"
    keys(driver, Keys.ENTER)
    focused = js(driver, "return document.activeElement")
    assert focused.get_attribute("data-stage") == "weights"
    assert focused.get_attribute("data-cell") == "2,2"


def test_a_decode_runs_picture_opens_each_steps_own_cell(driver, page):
    page("decode")
    trace = trace_of("decode")
    n = trace.problem.n
    last = max(s.step for s in trace.stages if s.step is not None)
    square = driver.find_element("css selector", f"svg[data-view=heatmap] rect[data-cell='{n},1']")
    js(driver, "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", square)
    focused = js(driver, "return document.activeElement")
    assert focused.get_attribute("data-stage") == "weights"
    assert focused.get_attribute("data-step") == str(last)
    assert focused.get_attribute("data-cell") == "1,1"  # the last step holds one query


def test_a_run_in_tiles_has_no_picture(driver, page):
    page("tiles")
    assert driver.find_elements("css selector", "section.qkv-picture") == []


# ---- two languages ---------------------------------------------------------------------------


def test_both_languages_on_one_page_with_a_switch(driver, page):
    page("both")
    title = driver.find_element("css selector", ".qkvcalc:not([hidden]) h1")
    assert title.text == translate("export.title", "en")
    button = driver.find_element("css selector", "[data-qkv=lang]")
    assert button.text == "한국어"
    button.click()
    title = driver.find_element("css selector", ".qkvcalc:not([hidden]) h1")
    assert title.text == translate("export.title", "ko")
    assert "lang=ko" in js(driver, "return location.hash")
    assert js(driver, "return document.documentElement.lang") == "ko"
    assert driver.find_element("css selector", "[data-qkv=present]").text == translate(
        "page.present", "ko"
    )
    lit, _ = point(driver, "ko-c6-2-3")  # the Korean page's own cells light up
    assert lit and all(i.startswith("ko-") for i in lit)
    picture = driver.find_element("css selector", ".qkvcalc:not([hidden]) section.qkv-picture h2")
    assert picture.text == translate("page.picture_title", "ko")
    keys(driver, "p")
    assert "present=1" in js(driver, "return location.hash")
    button.click()
    assert (
        driver.find_element("css selector", ".qkvcalc:not([hidden])").get_attribute("lang") == "en"
    )
    assert slide(driver)[:2] == (True, [1])


# ---- layout: two screens, keyboard only ----------------------------------------------------

OVERFLOW_FUNCTION = """
function overflow() {
  const width = document.documentElement.clientWidth;
  const wide = [];
  for (const table of document.querySelectorAll('table')) {
    if (table.offsetParent === null) continue;
    const box = table.getBoundingClientRect();
    if (box.right <= width + 1 && box.left >= -1) continue;
    let up = table.parentElement, held = false;
    while (up && up !== document.body) {
      const style = getComputedStyle(up);
      if (['auto', 'scroll'].includes(style.overflowX) &&
          up.getBoundingClientRect().right <= width + 1) { held = true; break; }
      up = up.parentElement;
    }
    if (!held) wide.push(table.closest('section') ? table.closest('section').id : '?');
  }
  return [document.documentElement.scrollWidth, width, wide];
}
"""
OVERFLOW = OVERFLOW_FUNCTION + "return overflow();"
VIEWPORT = "return [window.innerWidth, window.innerHeight];"
# Every screen of presenter mode in one script: measured, then Space to the next, by the page's
# own key handler (a WebDriver key press costs 15 ms a screen, and a page has up to 98 screens;
# the real keys are test_presenter_mode_walks_the_stages_by_keys').
EVERY_SCREEN = (
    OVERFLOW_FUNCTION
    + """
const screens = document.querySelectorAll('.qkvcalc:not([hidden]) > section').length;
const seen = [];
for (let k = 0; k < screens; k++) {
  seen.push(overflow());
  document.dispatchEvent(new KeyboardEvent('keydown', {key: ' ', bubbles: true}));
}
return [screens, seen];
"""
)


@pytest.mark.parametrize("width,height", SIZES)
@pytest.mark.parametrize("name", [*PRESETS, *EXTRA, "both"])
def test_nothing_is_wider_than_the_screen_without_a_scroll_bar(driver, page, name, width, height):
    """The document, then every screen of presenter mode: no table reaches past the viewport
    but inside a scroll container, nor does the page, at a viewport of this size (read from
    the page, in both modes: a screenshot of it is that size, test_the_readme_screenshot…)."""
    page(name, width, height)
    scroll_width, client, wide = js(driver, OVERFLOW)
    assert wide == [] and scroll_width <= client, ("document", wide, scroll_width, client)
    assert js(driver, VIEWPORT) == [width, height]
    keys(driver, "p")
    assert js(driver, VIEWPORT) == [width, height]
    screens, seen = js(driver, EVERY_SCREEN)
    assert screens == len(seen) > 1
    for screen, (scroll_width, client, wide) in enumerate(seen, start=1):
        assert wide == [] and scroll_width <= client, (screen, wide, scroll_width, client)
    assert slide(driver)[1] == [screens]


def test_the_readme_screenshot_is_made_here(driver, page, tmp_path):
    """docs/page.png: the sentence page at 1280×720 with an output cell pointed at, the row of A
    and the column of V it came from lit beside A·V (rewritten with QKVCALC_REGEN_GOLDEN=1);
    the README shows it."""
    page("sentence")
    output = number_of(trace_of("sentence"), "output")
    section = driver.find_element("id", f"en-stage-{output}")
    js(driver, "arguments[0].scrollIntoView({block: 'start'}); window.scrollBy(0, -40)", section)
    lit, note = point(driver, f"en-c{output}-2-1", "mouse")
    assert ids("en-", f"{output}.0", [(2, 1), (2, 2), (2, 3)]) <= lit
    assert ids("en-", f"{output}.1", [(1, 1), (2, 1), (3, 1)]) <= lit
    assert "out[2,1] = 0.8044×3 + 0.1956×1 + 0×2" in note
    target = ROOT / "docs" / "page.png" if REGEN else tmp_path / "page.png"
    assert browser.screenshot(driver, target) == (1280, 720)
    made = ROOT / "docs" / "page.png"
    assert made.exists() and made.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "(docs/page.png)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_keyboard_only_reaches_the_controls_then_each_table_in_order(driver, page):
    from selenium.webdriver.common.keys import Keys

    page("sentence")
    js(driver, "document.activeElement.blur(); window.focus()")
    expected = js(
        driver,
        """
        const out = [...document.querySelectorAll('.qkv-bar button')].map(b => b.dataset.qkv);
        const order = '.qkvcalc:not([hidden]) table, .qkv-picture button, ' +
                      '.qkv-picture [data-cell][tabindex="0"]';
        for (const el of document.querySelectorAll(order)) {
          if (el.tagName === 'BUTTON') { out.push('button:' + el.textContent); continue; }
          if (el.tagName !== 'TABLE') { out.push('mark:' + el.dataset.cell); continue; }
          const first = el.querySelector('td[data-cell]');
          if (first) out.push(first.id);
        }
        return out;
        """,
    )
    seen = []
    for _ in expected:
        keys(driver, Keys.TAB)
        seen.append(
            js(
                driver,
                """
                const el = document.activeElement;
                const style = getComputedStyle(el);
                const visible = style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
                const name = el.tagName === 'BUTTON'
                  ? (el.dataset.qkv || 'button:' + el.textContent)
                  : el.tagName === 'td' || el.tagName === 'TD' ? el.id : 'mark:' + el.dataset.cell;
                return [name, visible];
                """,
            )
        )
    assert [name for name, _ in seen] == expected
    assert all(visible for _, visible in seen), seen
    # inside a table the arrows move from cell to cell, each pointed at as it is reached
    first = next(name for name in expected if name.startswith("en-c6-"))
    driver.find_element("id", first).click()
    keys(driver, Keys.ARROW_RIGHT, Keys.ARROW_DOWN)
    assert js(driver, "return document.activeElement.id") == "en-c6-2-2"
    assert "q₂·k₂" in driver.find_element("css selector", ".qkv-arith").text


# ---- without JavaScript ----------------------------------------------------------------------


class _Text(HTMLParser):
    """The text a reader sees, outside scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skip = 0
        self.out: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)


def words(html: str) -> list[str]:
    parser = _Text()
    parser.feed(html)
    return " ".join(parser.out).split()


@pytest.mark.parametrize("name", ["sentence", "both", "multihead"])
def test_without_javascript_the_page_reads_as_the_static_export(nojs, pages, tmp_path, name):
    trace = trace_of("sentence" if name == "both" else name)
    static = tmp_path / "static.html"
    static.write_text(render_html(trace, RenderOptions(), interactive=False), encoding="utf-8")
    seen = {}
    for label, path in (("static", static), ("page", pages[name])):
        browser.show(nojs, path, ready=False)
        seen[label] = nojs.find_element("css selector", "body").text.split()
    assert seen["page"] == seen["static"]
    assert nojs.find_elements("css selector", ".qkv-bar, .qkv-picture, .qkv-arith") == []
    # and the file holds the static export's text, word for word, outside its scripts
    interactive = pages[name].read_text(encoding="utf-8")
    if name != "both":
        assert words(interactive) == words(static.read_text(encoding="utf-8"))


# ---- a GPT-2-sized layer ---------------------------------------------------------------------


def gpt2_sized(tokens: int = 1024) -> qkvcalc.Trace:
    """A GPT-2-small layer's shapes (d_model 768, 12 heads, W_O, causal), random numbers."""
    rng = np.random.default_rng(2019)
    d = 768
    x = rng.standard_normal((tokens, d))
    wq, wk, wv, wo = (rng.standard_normal((d, d)) * 0.02 for _ in range(4))
    return qkvcalc.explain(x, wq, wk, wv, wo=wo, heads=12, mask="causal")


def test_a_gpt2_sized_page_is_small_and_interactive_quickly(driver, tmp_path):
    trace = gpt2_sized()
    opts = RenderOptions(detail="brief")
    page = tmp_path / "gpt2.html"
    page.write_text(render_html(trace, opts), encoding="utf-8")
    static = tmp_path / "gpt2-static.html"
    static.write_text(render_html(trace, opts, interactive=False), encoding="utf-8")
    size = page.stat().st_size
    assert size < 5 * 1024 * 1024, f"{size / 1e6:.2f} MB"
    errors(driver)
    loaded = browser.show(driver, static, ready=False)  # the floor: the same page, no script
    ready = browser.show(driver, page)
    print(f"static page loaded after {loaded:.2f} s, the page interactive after {ready:.2f} s")
    assert ready < 3 * loaded, f"interactive after {ready:.2f} s ({loaded:.2f} s static)"
    weights = number_of(trace, "weights", 12)
    lit, note = point(driver, f"en-c{weights}-1024-1")
    exp = number_of(trace, "exp", 12)
    assert f"en-c{exp}-1024-1" in lit and f"en-c{exp}-1024-1024" in lit
    assert translate("page.why_none", "en") in note  # --detail brief writes no arithmetic
    picture = driver.find_element("css selector", "section.qkv-picture")
    assert "64 of 1024" in picture.text
    check_every_cell(driver, stride=7)  # 1 cell in 7 of its 10,912: the same checks
    for width, height in SIZES:
        browser.viewport(driver, width, height)
        scroll_width, client, wide = js(driver, OVERFLOW)
        assert wide == [] and scroll_width <= client, (width, wide, scroll_width, client)
        assert browser.screenshot(driver, tmp_path / f"gpt2-{width}.png") == (width, height)
    assert errors(driver) == []


# ---- the command line --------------------------------------------------------------------------


def test_lang_en_ko_writes_both_languages_on_one_page(cli):
    result = cli("explain", "--preset", "sentence", "--lang", "ko,en", "--format", "html")
    assert result.exit_code == 0, result.stderr
    roots = re.findall(
        r'<div class="qkvcalc" lang="(\w+)" data-page="(\w+)-"( hidden)?>', result.stdout
    )
    assert roots == [("ko", "ko", ""), ("en", "en", " hidden")]
    assert '<html lang="ko">' in result.stdout
    one = cli("explain", "--preset", "sentence", "--lang", "ko", "--format", "html").stdout
    assert one.count('class="qkvcalc"') == 1 and '"langs":["ko"]' in one


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_two_languages_are_for_the_html_page_only(cli, fmt):
    result = cli("explain", "--preset", "sentence", "--lang", "en,ko", "--format", fmt)
    assert result.exit_code == 2 and result.stdout == ""
    assert translate("page.two_langs_html", "en", langs="en,ko", format=fmt) in result.stderr


def test_a_worksheet_page_has_no_script(cli):
    result = cli("explain", "--preset", "sentence", "--worksheet", "--format", "html")
    assert (
        result.exit_code == 0
        and "<script" not in result.stdout
        and "data-arith" not in result.stdout
    )
