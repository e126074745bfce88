"""The interactive page as a new user met it (headless chromium, Selenium; skipped, saying why,
where it is missing): the note on a cell no longer hides the notes under its table; a masked dS
cell's note says it is 0 because of the mask (it spoke of marked cells); the heatmap follows the
forward weights, not the backward stages; the buttons are in the page's sans-serif, not serif;
a link to #present=N is followed on the page, not only on load."""

from __future__ import annotations

import re

import pytest

import qkvcalc
from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.render import RenderOptions
from qkvcalc.render.html import render_html
from tests import browser

REASON = browser.missing()


def _backward() -> qkvcalc.Trace:
    return qkvcalc.explain(**{**presets.load("sentence"), "backward": True, "attend": [1, 1, 2]})


def test_a_masked_ds_cell_says_the_mask_made_it_0():
    html = render_html(_backward(), RenderOptions())
    whys = dict(
        re.findall(r'data-stage="grad_scaled" data-cell="([\d,]+)"[^>]*data-why="(\w+)"', html)
    )
    assert whys["1,2"] == whys["1,3"] == whys["2,3"] == "masked_grad"  # the causal mask's cells
    assert whys["2,1"] == "none"
    # a cell with nothing marked is never told about "the marked cells"
    for cell in re.findall(r"<td[^>]*data-why=\"none\"[^>]*>", html):
        assert "data-from=" in cell, cell
    assert "0" in translate("page.why_masked_grad", "en")


@pytest.fixture(scope="module")
def driver():
    if REASON is not None:
        pytest.skip(REASON)
    session = browser.browser(js=True)
    yield session
    session.quit()


@pytest.fixture(scope="module")
def backward_page(tmp_path_factory):
    path = tmp_path_factory.mktemp("page") / "backward.html"
    path.write_text(render_html(_backward(), RenderOptions()), encoding="utf-8")
    return path


def test_the_heatmap_follows_the_forward_weights(driver, backward_page):
    browser.show(driver, backward_page)
    order = driver.execute_script(
        "return [...document.querySelectorAll('.qkvcalc > section')]"
        ".map(s => s.dataset.picture ? 'PICTURE' : s.dataset.stage)"
    )
    at = order.index("PICTURE")
    assert order[at - 1] == "weights", order
    assert all(not sid.startswith("grad_") for sid in order[:at]), order


def test_the_note_on_a_cell_never_covers_the_notes_under_its_table(driver, backward_page):
    browser.show(driver, backward_page)
    covered = driver.execute_script(
        """
        const out = [];
        for (const cell of document.querySelectorAll('section td[data-cell]')) {
          cell.focus();
          const note = document.querySelector('.qkv-arith').getBoundingClientRect();
          for (const list of cell.closest('section').querySelectorAll('ul.notes')) {
            const box = list.getBoundingClientRect();
            if (box.top < note.bottom && note.top < box.bottom &&
                box.left < note.right && note.left < box.right) out.push(cell.id);
          }
        }
        return out;
        """
    )
    assert covered == []


def test_the_buttons_are_in_a_sans_serif(driver, backward_page):
    browser.show(driver, backward_page)
    fonts = driver.execute_script(
        "return [...document.querySelectorAll('button')].map(b => getComputedStyle(b).fontFamily)"
    )
    assert fonts and all("serif" not in f.replace("sans-serif", "") for f in fonts), fonts
    assert all("sans-serif" in f for f in fonts), fonts


def test_a_link_to_present_n_is_followed_on_the_page(driver, backward_page):
    browser.show(driver, backward_page)
    driver.execute_script("location.hash = '#present=3'")
    current = driver.execute_script(
        "await new Promise(r => setTimeout(r, 200));"
        "const s = document.querySelector('section.qkv-current');"
        "return [document.body.classList.contains('qkv-present'),"
        " [...document.querySelectorAll('.qkvcalc > section')].indexOf(s)]"
    )
    assert current == [True, 2]
    driver.execute_script("location.hash = '#present=5'")
    later = driver.execute_script(
        "await new Promise(r => setTimeout(r, 200));"
        "return [...document.querySelectorAll('.qkvcalc > section')]"
        ".indexOf(document.querySelector('section.qkv-current'))"
    )
    assert later == 4


def _heads_run(layers: int, heads: int, n: int):
    """What heads_html reads of a run: random weights whose rows sum to 1."""
    import numpy as np

    from qkvcalc.extract.heads import HeadsRun

    rng = np.random.default_rng(0)
    weights = rng.random((layers, heads, n, n))
    weights /= weights.sum(-1, keepdims=True)
    return HeadsRun(
        model="some/model",
        source="some/model",
        arch="gpt2",
        dtype="float32",
        ids=list(range(n)),
        tokens=[f"t{k}" for k in range(1, n + 1)],
        weights=list(weights),
    )


@pytest.mark.parametrize("width", [1280, 1920])
def test_every_layers_heads_stay_on_one_row(driver, tmp_path, width):
    from qkvcalc.render.heads import heads_html

    page = tmp_path / "heads.html"
    page.write_text(heads_html(_heads_run(2, 12, 12)), encoding="utf-8")
    browser.show(driver, page, width, 720, ready=False)
    rows = driver.execute_script(
        "return [...document.querySelectorAll('.grid .layer')].map(layer =>"
        " new Set([...layer.querySelectorAll('a.head')].map(a => a.offsetTop)).size)"
    )
    assert rows == [1, 1], rows  # 12 heads wrapped as 11 + 1 before
