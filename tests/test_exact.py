"""--exact: the rational stages as fractions, checked against Python's fractions.

The reference here is a naive loop over fractions.Fraction written from DESIGN.md (row vectors,
Q = X·W_Q + b, heads split columns in order, query head h reads K/V head ⌈h·G/H⌉). Numbers are
read with Fraction() itself, not with qkvcalc's grammar. Scaled scores over an irrational √d_k
are checked through their written form p/√D: p²/D = score²/d_k, the sign, and D the smallest.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qkvcalc.i18n import Msg
from qkvcalc.input.numbers import parse_number
from qkvcalc.input.problem import Problem
from qkvcalc.ops.rational import Surd, over_root, split_square
from qkvcalc.render import RenderOptions
from qkvcalc.render.json_doc import trace_json
from qkvcalc.render.terminal import render_text
from qkvcalc.run import exact as exact_mod
from qkvcalc.run.engine import run
from qkvcalc.run.exact import MAX_PRODUCTS

SURD = re.compile(r"^(-?\d+)/√(\d+)$")
RATIONAL_STAGES = ("q", "k", "v", "kt", "scores")
DECIMAL_STAGES = ("exp", "weights", "output", "concat")

# ---- the reference: fractions in plain loops ------------------------------------------------


def frac(v) -> Fraction:
    """A number of the input format as the person typed it: 0.1 is 1/10, "1/3" is 1/3."""
    return Fraction(repr(v)) if isinstance(v, float) else Fraction(v)


def fmat(rows) -> list[list[Fraction]]:
    rows = rows if isinstance(rows[0], list) else [rows]
    return [[frac(v) for v in row] for row in rows]


def matmul(a, b):
    return [
        [sum((a[i][t] * b[t][j] for t in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def plus_bias(a, bias):
    return a if bias is None else [[v + bias[j] for j, v in enumerate(row)] for row in a]


def cols(a, first, count):
    return [row[first : first + count] for row in a]


def reference(doc: dict) -> dict:
    """(id, head) -> the exact matrix of q, k, v, kt, scores, and of scaled when rational."""
    heads = doc.get("heads", 1)
    kv_heads = doc.get("kv_heads", heads)
    direct = "q" in doc
    if direct:
        q_all, k_all, v_all = (fmat(doc[name]) for name in ("q", "k", "v"))
    else:
        x = fmat(doc["x"])
        src = fmat(doc["source"]) if "source" in doc else x
        bq, bk, bv = (fmat(doc[b])[0] if b in doc else None for b in ("bq", "bk", "bv"))
        q_all = plus_bias(matmul(x, fmat(doc["wq"])), bq)
        k_all = plus_bias(matmul(src, fmat(doc["wk"])), bk)
        v_all = plus_bias(matmul(src, fmat(doc["wv"])), bv)
    d_k = len(q_all[0]) // heads
    d_v = len(v_all[0]) // kv_heads
    multi = heads > 1 or "wo" in doc
    out = {}
    for h in range(1, heads + 1):
        g = math.ceil(h * kv_heads / heads)
        key = h if multi else None
        q = cols(q_all, (h - 1) * d_k, d_k)
        k = cols(k_all, (g - 1) * d_k, d_k)
        v = cols(v_all, (g - 1) * d_v, d_v)
        kt = [list(c) for c in zip(*k, strict=True)]
        scores = matmul(q, kt)
        out.update(
            {("q", key): q, ("k", key): k, ("v", key): v, ("kt", key): kt, ("scores", key): scores}
        )
        if "scale" in doc:
            out[("scaled", key)] = [[s * frac(doc["scale"]) for s in row] for row in scores]
        out[("d_k", key)] = d_k
    return out


def check_scaled_cell(cell, score: Fraction, d_k: int) -> None:
    """cell is score/√d_k exactly: a Fraction when √d_k is rational, else p/√D, D smallest."""
    root = math.isqrt(d_k)
    if root * root == d_k or score == 0:
        assert cell == score / root
        return
    assert isinstance(cell, Surd)
    p, big_d = (int(t) for t in SURD.match(str(cell)).groups())
    assert Fraction(p * p, big_d) == score * score / d_k
    assert (p > 0) == (score > 0)
    assert not any(big_d % (f * f) == 0 and p % f == 0 for f in range(2, math.isqrt(big_d) + 1))


def as_float(cell) -> float:
    return float(cell)


# ---- problems of small integers, fraction strings and decimals --------------------------

numbers = st.one_of(
    st.integers(-3, 3),
    st.builds(lambda a, b: f"{a}/{b}", st.integers(-5, 5), st.integers(1, 6)),
    st.integers(-30, 30).map(lambda k: f"{k / 10:.1f}"),
    st.sampled_from([0.5, -1.25, 0.1, "-0.05", "2.5"]),
)


def matrix(draw, rows, width):
    return [[draw(numbers) for _ in range(width)] for _ in range(rows)]


@st.composite
def exact_problems(draw):
    n = draw(st.integers(1, 3))
    heads = draw(st.sampled_from([1, 1, 2]))
    kv_heads = draw(st.sampled_from([g for g in (1, 2) if heads % g == 0]))
    d_k = draw(st.sampled_from([1, 2, 3, 4]))
    d_v = draw(st.integers(1, 2))
    doc: dict = {"heads": heads, "kv_heads": kv_heads}
    if draw(st.booleans()):
        d_model = draw(st.integers(1, 3))
        cross = draw(st.booleans())
        m = draw(st.integers(1, 3)) if cross else n
        doc |= {
            "x": matrix(draw, n, d_model),
            "wq": matrix(draw, d_model, heads * d_k),
            "wk": matrix(draw, d_model, kv_heads * d_k),
            "wv": matrix(draw, d_model, kv_heads * d_v),
        }
        if cross:
            doc["source"] = matrix(draw, m, d_model)
        for bias, width in (("bq", heads * d_k), ("bk", kv_heads * d_k), ("bv", kv_heads * d_v)):
            if draw(st.booleans()):
                doc[bias] = [draw(numbers) for _ in range(width)]
    else:
        m = draw(st.integers(1, 3))
        doc |= {
            "q": matrix(draw, n, heads * d_k),
            "k": matrix(draw, m, kv_heads * d_k),
            "v": matrix(draw, m, kv_heads * d_v),
        }
    doc["mask"] = draw(st.sampled_from(["none", "causal"]))
    if draw(st.booleans()):
        doc["scale"] = draw(st.sampled_from(["1/2", "1/3", "0.25", 2, "-3/7"]))
    return doc


@settings(max_examples=150, deadline=None)
@given(exact_problems())
def test_exact_stages_match_a_naive_loop_over_fractions(doc):
    trace = run(Problem.from_mapping(doc, exact=True))
    ref = reference(doc)
    for stage in trace.stages:
        key = (stage.id, stage.head)
        if stage.id in RATIONAL_STAGES:
            assert [list(row) for row in stage.exact] == ref[key], key
        elif stage.id == "scaled":
            scores = ref[("scores", stage.head)]
            if "scale" in doc:
                assert [list(row) for row in stage.exact] == ref[key]
            else:
                for row, score_row in zip(stage.exact, scores, strict=True):
                    for cell, score in zip(row, score_row, strict=True):
                        check_scaled_cell(cell, score, ref[("d_k", stage.head)])
        elif stage.id == "masked":
            scaled = trace.stage("scaled", stage.head).exact
            for i, row in enumerate(stage.exact):
                for j, cell in enumerate(row):
                    assert cell == (scaled[i][j] if stage.allowed[i, j] else -math.inf)
        elif stage.id in DECIMAL_STAGES:
            assert stage.exact is None
        # the decimal the engine computed always agrees with the exact value
        if stage.exact is not None:
            for i, row in enumerate(stage.exact):
                for j, cell in enumerate(row):
                    assert math.isclose(
                        as_float(cell), stage.value[i, j], rel_tol=1e-9, abs_tol=1e-12
                    ), (key, i, j)


@settings(max_examples=60, deadline=None)
@given(exact_problems())
def test_json_exact_strings_parse_back_to_the_same_value(doc):
    trace = run(Problem.from_mapping(doc, exact=True))
    stages = trace_json(trace, RenderOptions(exact=True))["stages"]
    assert len(stages) == len(trace.stages)
    for out, stage in zip(stages, trace.stages, strict=True):
        if stage.exact is None:
            assert "exact" not in out
            continue
        assert len(out["exact"]) == len(out["value"])
        for text_row, cells in zip(out["exact"], stage.exact, strict=True):
            for text, cell in zip(text_row, cells, strict=True):
                if text == "-inf":
                    assert cell == -math.inf
                elif "√" in text:  # irrational: the string reads back to the same value
                    number = parse_number(text, "exact")
                    assert math.isclose(number.value, float(cell), rel_tol=1e-12)
                else:
                    assert parse_number(text, "exact").exact == cell


def test_a_surd_string_parses_as_written():
    assert math.isclose(parse_number("7/√2", "exact").value, 7 / math.sqrt(2))


@settings(max_examples=30, deadline=None)
@given(exact_problems())
def test_without_exact_no_stage_carries_fractions(doc):
    trace = run(Problem.from_mapping(doc))
    assert all(stage.exact is None for stage in trace.stages)
    assert not any(note.key.startswith("note.exact") for s in trace.stages for note in s.notes)


# ---- scaled scores: d_k = 1, 2, 4, 8 and a given scale --------------------------------


def scaled_of(score, d_k: int, **extra):
    """The exact scaled score of a one-token problem whose Q·Kᵀ is `score`."""
    q = [[score] + [0] * (d_k - 1)]
    k = [[1] + [0] * (d_k - 1)]
    trace = run(Problem.from_mapping({"q": q, "k": k, "v": [[1]], **extra}, exact=True))
    assert trace.stage("scores").exact == ((frac(score),),)
    return trace.stage("scaled")


@pytest.mark.parametrize(
    ("score", "d_k", "text", "value"),
    [
        (7, 1, "7", 7.0),
        (7, 2, "7/√2", 7 / math.sqrt(2)),
        (7, 4, "7/2", 3.5),
        (7, 8, "7/√8", 7 / math.sqrt(8)),  # 7/(2√2): no smaller root with a whole numerator
        (6, 8, "3/√2", 6 / math.sqrt(8)),  # √8 = 2√2, so 6/√8 = 3/√2
        (-3, 8, "-3/√8", -3 / math.sqrt(8)),
        ("1/3", 2, "1/√18", 1 / (3 * math.sqrt(2))),  # (1/3)/√2 = 1/√18
        (0, 2, "0", 0.0),
        (5, 9, "5/3", 5 / 3),
        (4, 12, "2/√3", 4 / math.sqrt(12)),  # √12 = 2√3
    ],
)
def test_scaled_scores_over_root_dk(score, d_k, text, value):
    stage = scaled_of(score, d_k)
    ((cell,),) = stage.exact
    assert str(cell) == text
    assert math.isclose(float(cell), value, rel_tol=1e-15)
    assert math.isclose(stage.value[0, 0], value, rel_tol=1e-12)
    surd_note = Msg("note.exact_surd", d_k=d_k)
    assert (surd_note in stage.notes) == ("√" in text)


@pytest.mark.parametrize(
    ("scale", "text"), [("1/3", "7/3"), (0.5, "7/2"), ("-2/5", "-14/5"), ("0.1", "7/10"), (2, "14")]
)
def test_a_rational_scale_gives_fractions(scale, text):
    stage = scaled_of(7, 2, scale=scale)
    assert str(stage.exact[0][0]) == text
    assert stage.exact[0][0] == 7 * frac(scale)


def test_an_irrational_scale_leaves_the_scaled_scores_decimal():
    stage = scaled_of(7, 2, scale="1/sqrt(3)")
    assert stage.exact is None
    assert [n.key for n in stage.notes if n.key.startswith("note.exact")] == [
        "note.exact_scale_irrational"
    ]
    assert math.isclose(stage.value[0, 0], 7 / math.sqrt(3), rel_tol=1e-12)


def test_split_square_and_over_root():
    for d in range(1, 200):
        r, s = split_square(d)
        assert r * r * s == d
        assert not any(s % (f * f) == 0 for f in range(2, math.isqrt(s) + 1))
    assert over_root(Fraction(7), 8) == Surd(Fraction(7, 2), 2)
    assert over_root(Fraction(6), 4) == Fraction(3)


# ---- irrational inputs, softmax, big problems --------------------------------------------


def test_cells_that_depend_on_a_square_root_have_no_exact_value():
    # X = [√2, 1/2]: Q = X·I keeps 1/2 exact; K's first column is √2·0 + (1/2)·1 = 1/2 exactly
    doc = {
        "x": [["sqrt(2)", "1/2"]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[0, 1], [1, 0]],
        "wv": [[1, 0], [0, 1]],
    }
    trace = run(Problem.from_mapping(doc, exact=True))
    assert trace.stage("x").exact == ((None, Fraction(1, 2)),)
    assert trace.stage("q").exact == ((None, Fraction(1, 2)),)
    assert trace.stage("k").exact == ((Fraction(1, 2), None),)
    assert trace.stage("scores").exact == ((None,),)  # √2·(1/2) + (1/2)·√2 = √2
    assert Msg("note.exact_partial") in trace.stage("q").notes
    out = trace_json(trace, RenderOptions(exact=True))
    q_json = next(s for s in out["stages"] if s["id"] == "q")
    assert q_json["exact"] == [[None, "1/2"]]
    json.dumps(out, allow_nan=False)


def test_softmax_stages_carry_no_exact_and_a_note_says_why():
    doc = {
        "x": [[1, "1/2"], [0, 2]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "heads": 2,
        "wo": [[1], [1]],
        "mask": "causal",
    }
    trace = run(Problem.from_mapping(doc, exact=True))
    for stage in trace.stages:
        if stage.id in DECIMAL_STAGES:
            assert stage.exact is None
        if stage.id == "exp":
            assert Msg("note.exact_stops") in stage.notes
            assert "Lindemann" in Msg("note.exact_stops").text("en")
    assert trace.stage("masked", 1).exact[0][1] == -math.inf


def test_a_big_problem_skips_exact_with_a_note():
    n, d = 40, 40  # 40·40·120 products for the projections alone
    doc = {
        "x": [[(i + j) % 5 for j in range(d)] for i in range(n)],
        "wq": [[(i * j) % 3 for j in range(d)] for i in range(d)],
    }
    doc["wk"] = doc["wv"] = doc["wq"]
    trace = run(Problem.from_mapping(doc, exact=True))
    assert all(stage.exact is None for stage in trace.stages)
    notes = trace.stages[0].notes
    assert any(
        note.key == "note.exact_skipped"
        and note.params["limit"] == MAX_PRODUCTS
        and note.params["count"] > MAX_PRODUCTS
        for note in notes
    )


def test_the_limit_counts_products(monkeypatch):
    doc = {"x": [[1, 2]], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]], "wv": [[1, 0], [1, 1]]}
    problem = Problem.from_mapping(doc, exact=True)
    needed = exact_mod.products_needed(problem)  # 2·(2+2+2) projections + 1·(2+1) scores
    assert needed == 15
    monkeypatch.setattr(exact_mod, "MAX_PRODUCTS", needed)
    assert run(problem).stage("scores").exact is not None
    monkeypatch.setattr(exact_mod, "MAX_PRODUCTS", needed - 1)
    assert run(problem).stage("scores").exact is None


# ---- what a user sees ---------------------------------------------------------------------


def test_cli_doc_preset_exact_shows_the_surd_beside_its_decimal(cli):
    result = cli("explain", "--preset", "doc", "--exact")
    assert result.exit_code == 0, result.output
    assert "7/√2 ≈ 4.9497" in result.stdout
    assert "[1,1]: 7 / √2 = 7/√2 ≈ 4.9497" in result.stdout
    assert "Lindemann" in result.stdout


def test_cli_without_exact_shows_decimals_only(cli):
    result = cli("explain", "--preset", "doc")
    assert result.exit_code == 0
    assert "7/√2" not in result.stdout
    assert "[1,1]: 7 / √2 = 4.9497" in result.stdout


def test_cli_json_exact(qkvcalc_proc):
    proc = qkvcalc_proc("explain", "--preset", "doc", "--exact", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    by_id = {s["id"]: s for s in doc["stages"]}
    assert by_id["scaled"]["exact"] == [["7/√2"]]
    assert by_id["scores"]["exact"] == [["7"]]
    assert by_id["k"]["exact"] == [["1", "3"]]
    for sid in ("exp", "weights", "output"):
        assert "exact" not in by_id[sid]
    assert any("Lindemann" in note for note in by_id["exp"]["notes"])


def test_terminal_shows_fractions_and_their_arithmetic():
    doc = {
        "tokens": ["a"],
        "x": [["1/2", "0.1"]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, "1/3"], [0, 1]],
        "wv": [[1, 0], [0, 1]],
        "bq": ["-1/4", 0],
    }
    trace = run(Problem.from_mapping(doc, exact=True))
    text = render_text(trace, RenderOptions(exact=True, color=False, width=100))
    assert "Q[1,1] = (1/2)×1 + (1/10)×0 + (-1/4) = 1/4" in text
    assert "K[1,2] = (1/2)×(1/3) + (1/10)×1 = 4/15" in text
    # Q·Kᵀ = (1/4)·(1/2) + (1/10)·(4/15) = 1/8 + 2/75 = 91/600, over √2: 91/√720000
    assert "q₁·k₁ = (1/4)×(1/2) + (1/10)×(4/15) = 91/600" in text
    assert f"91/√720000 ≈ {91 / 600 / math.sqrt(2):.4f}" in text
    plain = render_text(trace, RenderOptions(exact=False, color=False, width=100))
    assert "91/600" not in plain and "0.1517" in plain


def test_korean_notes_exist_for_every_exact_key():
    from qkvcalc.catalog.en import MESSAGES as en
    from qkvcalc.catalog.ko import MESSAGES as ko
    from qkvcalc.ops.table import OPS

    keys = [key for key in en if key.startswith("note.exact")]
    # every note an operation gives where exactness stops, and exact mode's own five
    assert {op.exact_stops for op in OPS.values() if op.exact_stops} <= set(keys)
    assert len(keys) >= 5
    for key in keys:
        assert key in ko
        assert set(re.findall(r"\{(\w+)", en[key])) == set(re.findall(r"\{(\w+)", ko[key]))


@pytest.mark.parametrize(
    ("fmt", "scaled"),
    [
        ("table", "7 / √2 = 7/√2 ≈ 4.9497"),
        ("markdown", "7 / √2 = 7/√2 ≈ 4.9497"),
        ("html", "7 / √2 = 7/√2 ≈ 4.9497"),
        ("latex", r"\frac{7}{\sqrt{2}} = 7/\sqrt{2} \approx 4.9497"),
    ],
)
def test_every_format_writes_the_exact_arithmetic(fmt, scaled):
    """--exact reaches the arithmetic of the handouts too, not only the terminal."""
    from qkvcalc.input import presets
    from qkvcalc.render import render

    trace = run(Problem.from_mapping(presets.load("doc"), exact=True))
    text = render(trace, fmt, RenderOptions(exact=True, color=False))
    assert scaled in text
    plain = render(trace, fmt, RenderOptions(exact=False, color=False))
    assert "/√2 ≈" not in plain and r"/\sqrt{2} \approx" not in plain  # no exact cell


def test_a_trace_computed_exactly_is_shown_exactly_by_every_writer():
    """explain(..., exact=True) then render(t, fmt): the fractions and surds show without a
    second exact=True, in every writer, in a notebook and through rich; a decimal trace does not
    show them, and exact=False still turns them off."""
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    import qkvcalc

    doc = {"x": [1, 2], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]], "wv": [[1, 0], [1, 1]]}
    exact = qkvcalc.explain(**doc, exact=True)
    plain = qkvcalc.explain(**doc)
    assert exact.exact and not plain.exact
    cell = {"latex": r"7/\sqrt{2} \approx 4.9497"}  # the scaled score's cell, as each writes it
    for fmt in ("table", "txt", "markdown", "html", "latex"):
        assert cell.get(fmt, "7/√2 ≈ 4.9497") in qkvcalc.render(exact, fmt), fmt
        assert cell.get(fmt, "7/√2 ≈ 4.9497") not in qkvcalc.render(plain, fmt), fmt
    assert "7/√2 ≈" not in qkvcalc.render(exact, "markdown", exact=False)  # the cells: decimals
    assert "7/√2 ≈ 4.9497" in exact._repr_html_()
    console = Console(width=60, record=True, color_system=None)
    table = Table("the trace")
    table.add_row(exact)
    console.print(Panel(exact))
    console.print(table)
    shown = console.export_text()
    assert "7/√2 ≈ 4.9497" in shown and max(len(line) for line in shown.splitlines()) <= 60
