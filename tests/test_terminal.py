"""The terminal layout: what render.terminal.Block promises at any width.

The golden files pin the layout at 100 columns; these tests hold at every width: no line is
wider than the console, paragraphs wrap under their own indent, a wrapped note hangs clear of its
bullet, tables are cut rather than wrapped, and rules span the width exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text

import qkvcalc
from qkvcalc.input import presets
from qkvcalc.render import RenderOptions
from qkvcalc.render.terminal import Block, make_console, render_text, to_text
from qkvcalc.render.text import display_width
from tests.strategies import problems


def _lines(block: Block, width: int) -> list[str]:
    opts = RenderOptions(width=width, color=False)
    return to_text(block, opts).rstrip("\n").split("\n")


def test_a_paragraph_wraps_under_its_indent():
    words = " ".join(f"word{k}" for k in range(30))
    lines = _lines(Block().para(words, indent=2), 30)
    assert len(lines) > 3
    assert all(line.startswith("  word") for line in lines)
    assert all(display_width(line) <= 30 for line in lines)
    assert " ".join(line.strip() for line in lines) == words


def test_a_wrapped_note_hangs_clear_of_its_bullet():
    note = " ".join(["attention"] * 12)
    lines = _lines(Block().para(note, indent=2, bullet=Text("•")), 32)
    assert lines[0].startswith("  • attention")
    assert len(lines) > 1
    assert all(line.startswith("    attention") for line in lines[1:])  # under the text


def test_a_multi_line_paragraph_keeps_its_lines_and_one_bullet():
    lines = _lines(Block().para("first\nsecond", indent=2, bullet=Text("•")), 40)
    assert lines == ["  • first", "    second"]


def test_a_table_line_is_cut_at_the_edge_not_wrapped():
    lines = _lines(Block().cut(Text("x" * 50), indent=2), 20)
    assert lines == ["  " + "x" * 18]


def test_cutting_does_not_change_the_block_for_a_wider_console():
    block = Block().cut([Text("y" * 30)])
    assert _lines(block, 10) == ["y" * 10]
    assert _lines(block, 40) == ["y" * 30]


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("width", [8, 31, 80])
def test_a_rule_spans_the_width_exactly(center, width):
    title = Text("3/10  Key projection  ·  K = X·W_K")
    *above, line = _lines(Block().rule(title, "cyan", center=center), width)
    assert display_width(line) == width
    assert ("Key" in line) or ("…" in line) or above
    assert all(display_width(text) <= width for text in above)
    if not center:  # a stage's title wraps between its parts (then words), never cut
        assert " ".join([*above, line]).count("K = X·W_K") == (width > 12)
        assert bool(above) == (width < 40)
    if center:
        left, right = line.split(" ", 1)[0], line.rsplit(" ", 1)[1]
        assert abs(len(left) - len(right)) <= 1


def test_a_korean_paragraph_wraps_by_display_width():
    text = " ".join(["어텐션은"] * 20)
    lines = _lines(Block().para(text, indent=2), 30)
    assert len(lines) > 1
    assert all(display_width(line) <= 30 for line in lines)


@settings(max_examples=40, deadline=None)
@given(
    width=st.integers(min_value=1, max_value=160),
    preset=st.sampled_from(["doc", "sentence", "padding", "multihead", "gqa", "cross"]),
    lang=st.sampled_from(["en", "ko"]),
)
def test_no_line_of_a_preset_is_wider_than_the_console(width, preset, lang):
    trace = qkvcalc.explain(**presets.load(preset))
    text = render_text(trace, RenderOptions(width=width, lang=lang, color=False))
    assert max(display_width(line) for line in text.split("\n")) <= width


def test_a_block_draws_at_the_width_of_the_console_that_prints_it():
    """A Block is laid out when drawn, so the step mode and Trace.__rich__ fit any console."""
    block = Block().para(" ".join(["softmax"] * 20))
    for width in (30, 90):
        console = make_console(RenderOptions(width=width, color=False))
        with console.capture() as capture:
            console.print(block)
        lines = capture.get().rstrip("\n").split("\n")
        assert max(map(display_width, lines)) <= width
        assert max(map(display_width, lines)) > width - len("softmax ") - 1


def _through_rich(renderable, opts: RenderOptions) -> str:
    """What rich prints of a rendering, its lines' trailing spaces dropped (as colourless text
    is written)."""
    console = make_console(opts)
    with console.capture() as capture:
        console.print(renderable, crop=False)
    return "\n".join(line.rstrip() for line in capture.get().split("\n"))


@settings(max_examples=60, deadline=None)
@given(
    doc=problems(max_n=4, max_d=4),
    width=st.integers(min_value=1, max_value=140),
    lang=st.sampled_from(["en", "ko"]),
    worksheet=st.booleans(),
)
def test_colourless_text_is_what_rich_prints(doc, width, lang, worksheet):
    """Colourless text is joined from the Blocks' lines (to_text), without rich's pass over
    their segments: character for character what rich prints of the same rendering."""
    from qkvcalc.render.terminal import render_trace

    trace = qkvcalc.explain(**doc)
    opts = RenderOptions(width=width, lang=lang, color=False, worksheet=worksheet)
    rendering = render_trace(trace, opts)
    assert to_text(rendering, opts) == _through_rich(rendering, opts)


@pytest.mark.parametrize("preset", presets.names())
def test_colourless_text_of_every_preset_is_what_rich_prints(preset):
    from qkvcalc.render.terminal import render_trace

    trace = qkvcalc.explain(**presets.load(preset))
    for width in (40, 100):
        opts = RenderOptions(width=width, color=False)
        rendering = render_trace(trace, opts)
        assert to_text(rendering, opts) == _through_rich(rendering, opts)


_WORDS = st.sampled_from(["a", "qkv", "softmax", "어텐션은", "가중치", "Q·Kᵀ", "√d_k", "1×1", "—"])


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(st.tuples(_WORDS, st.sampled_from([" ", "  ", "   "])), max_size=40),
    lead=st.sampled_from(["", " ", "  "]),
    width=st.integers(min_value=1, max_value=60),
)
def test_paragraphs_wrap_exactly_as_rich_wraps_them(words, lead, width):
    """Block wraps a paragraph of one style itself (render.terminal._wrap): line for line what
    rich's Text.wrap makes of it, folded long words included."""
    from qkvcalc.render.terminal import _wrap

    text = Text(lead + "".join(word + gap for word, gap in words), style="italic")
    console = make_console(RenderOptions(width=80, color=False))
    ours = _wrap(text, width, console)
    theirs = text.wrap(console, width)
    assert [line.plain for line in ours] == [line.plain for line in theirs]
    assert all(line.style == "italic" for line in ours)


@pytest.mark.parametrize("fmt", ["table", "markdown", "html", "latex"])
def test_a_big_stage_is_drawn_from_the_rows_it_shows(monkeypatch, fmt):
    """A 200×200 causal head: drawing it computes e^(s − max) (and so the weights) for the
    rows its tables show, never for all 200 (the recipes take row indices)."""
    import numpy as np

    import qkvcalc.ops.softmax
    from qkvcalc.render import render

    rng = np.random.default_rng(3)
    n = 200
    trace = qkvcalc.explain(
        x=rng.standard_normal((n, 4)),
        wq=rng.standard_normal((4, 4)),
        wk=rng.standard_normal((4, 4)),
        wv=rng.standard_normal((4, 4)),
        mask="causal",
    )
    trace.cache.clear()  # nothing computed before drawing is kept
    rows_computed = []
    real = qkvcalc.ops.softmax.shifted_exp

    def counting(s, row_max):
        rows_computed.append(s.shape[0])
        return real(s, row_max)

    monkeypatch.setattr(qkvcalc.ops.softmax, "shifted_exp", counting)
    opts = RenderOptions(width=100, color=False, detail="brief")
    render(trace, fmt, opts)
    assert rows_computed, "the exp and weights stages were drawn without their values"
    # the html page also draws each head's weights as a picture of its first queries
    from qkvcalc.render.page import PICTURE_TOKENS

    shown = max(opts.max_rows, PICTURE_TOKENS) if fmt == "html" else opts.max_rows
    assert max(rows_computed) <= shown < n


def test_a_big_mask_is_said_row_by_row_without_a_left_out_note():
    """The mask has no per-cell arithmetic, only row sentences: a mask of 81 cells must not
    claim its arithmetic was left out for being too big, in any format."""
    import numpy as np

    from qkvcalc.render.arith import Style, stage_extras

    n = 9
    trace = qkvcalc.explain(x=np.eye(n, 2), wq=np.eye(2), wk=np.eye(2), wv=np.eye(2), mask="causal")
    opts = RenderOptions()
    masked = trace.stage("masked")
    extras = stage_extras(masked, trace, (0, 0), Style.of(opts), opts)
    assert "note.no_arithmetic" not in [note.key for note in extras.notes]
    assert len(extras.rows) > 0 and extras.work == []
    scores = stage_extras(trace.stage("scaled"), trace, (0, 0), Style.of(opts), opts)
    assert "note.no_arithmetic" in [note.key for note in scores.notes]  # 81 cells: too many


def test_export_tables_measure_korean_labels_by_display_width():
    """Markdown and HTML tables leave room for the row labels by the columns they take: a
    Hangul label takes two per character."""
    from qkvcalc.render.text import columns_that_fit

    opts = RenderOptions(width=100)
    ascii_cols = columns_that_fit(["abcdefghij"], opts, 3)  # 10 columns: 8 numbers fit
    korean_cols = columns_that_fit(["가나다라마바사아자차"], opts, 3)  # 20 columns: 7 fit
    assert korean_cols < ascii_cols


@pytest.mark.parametrize("fmt", ["table", "markdown", "html", "latex"])
def test_a_split_said_in_sentences_hides_no_row(fmt):
    """The split into 16 heads is said head by head (more lines than a table shows rows): every
    head is said, so no note may say a row of it is not shown (it did, on every page but the
    terminal's, before the terminal read the same document)."""
    from qkvcalc.render import renderer

    rng = np.random.default_rng(0)
    w = {k: rng.integers(-2, 3, (32, 32)) for k in ("wq", "wk", "wv", "wo")}
    trace = qkvcalc.explain(rng.integers(-3, 4, (20, 32)), heads=16, mask="causal", **w)
    split = next(s for s in trace.stages if s.in_words)
    opts = RenderOptions(width=100, color=False, max_rows=12)
    assert len(split.value) > opts.max_rows  # more heads than a table would show rows
    page = renderer(fmt)(trace, opts)
    start = page.index("head 16: W_Q") if fmt != "latex" else page.index("head 16:")
    said = page[page.rindex("head 1:", 0, start) : start + 400]
    assert "head 1:" in said and "Not shown" not in said.split("head 16:")[1][:300]
