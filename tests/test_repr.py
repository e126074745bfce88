"""How a Stage and a Trace show themselves in Python and in a notebook: a Stage's repr says
what it is in one short line (id, head, shape, title, formula; never its arrays or the
dataclass's internals: it was 785 characters of `object at 0x…`), and a Trace's HTML in a
notebook folds each stage under its heading (a 6,800-pixel document was nothing folded)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

import qkvcalc
from qkvcalc.input import presets


@pytest.fixture(scope="module")
def multihead():
    return qkvcalc.explain(**presets.load("multihead"))


def test_a_stage_repr_is_one_short_line_saying_what_it_is(multihead):
    stage = multihead.stage("weights", head=2)
    shown = repr(stage)
    rows, cols = stage.value.shape
    assert shown.startswith("<Stage weights head=2 ") and shown.endswith(">")
    assert f"{rows}×{cols}" in shown
    assert repr(stage.title.text("en")) in shown and stage.formula in shown
    assert "\n" not in shown and len(shown) < 100, shown
    assert "0x" not in shown and "array" not in shown


@pytest.mark.parametrize("preset", ["doc", "decode", "tiles"])
def test_every_stage_repr_is_short(preset):
    trace = qkvcalc.explain(**presets.load(preset))
    for stage in trace.stages:
        shown = repr(stage)
        assert len(shown) < 160 and "\n" not in shown and "0x" not in shown, shown
        if stage.step is not None:
            assert f" step={stage.step}" in shown
        if stage.block is not None:
            assert f" block={stage.block}" in shown


class _Folds(HTMLParser):
    """The stages a fragment folds (<details data-stage=…> with a <summary>), and whether the
    output section stands outside every fold."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.folded: list[str] = []
        self.summaries = 0
        self.final_folded: bool | None = None

    def handle_starttag(self, tag, attrs):
        named = dict(attrs)
        if tag == "details":
            self.folded.append(named.get("data-stage", ""))
        if tag == "summary" and self.open and self.open[-1] == "details":
            self.summaries += 1
        if named.get("data-stage") == "final":
            self.final_folded = "details" in self.open
        if tag not in ("br", "meta", "col", "input"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (tag, self.open[-5:])
        self.open.pop()


def test_a_trace_in_a_notebook_folds_each_stage_under_its_heading(multihead):
    parser = _Folds()
    parser.feed(multihead._repr_html_())
    assert parser.folded == [stage.id for stage in multihead.stages]
    assert parser.summaries == len(multihead.stages)
    assert parser.final_folded is False  # the output is shown, unfolded
    assert parser.open == []


def test_a_standalone_page_keeps_its_stages_open(multihead):
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.html import render_html

    assert "<details" not in render_html(multihead, RenderOptions(), interactive=False)
