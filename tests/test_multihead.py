"""Multi-head, W_O, cross-attention and grouped-query attention: the stages DESIGN.md fixes,
the presets' numbers checked by hand, how the terminal shows heads, and the shape errors.

The numbers of the presets are checked against closed forms a student can work out on paper
(the presets are built so that they exist), not against values qkvcalc printed.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.terminal import render_text
from qkvcalc.run.engine import run

PER_HEAD = ["q", "k", "v", "kt", "scores", "scaled", "exp", "weights", "output"]
PER_HEAD_MASKED = ["q", "k", "v", "kt", "scores", "scaled", "masked", "exp", "weights", "output"]


def trace_of(name: str):
    return run(Problem.from_mapping(presets.load(name)))


def json_of(cli, *args: str) -> dict:
    result = cli("explain", *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


# ---- stage ids and heads in the JSON output ----------------------------------------------


def test_multihead_json_has_per_head_stages_then_concat_then_the_final_output(cli):
    doc = json_of(cli, "--preset", "multihead")
    ids = [(s["id"], s["head"]) for s in doc["stages"]]
    expected = [("x", None), ("split", None)]
    for h in (1, 2):
        expected += [(sid, h) for sid in PER_HEAD]
    expected += [("concat", None), ("output", None)]
    assert ids == expected
    assert doc["problem"]["heads"] == 2 and doc["problem"]["d_k"] == 2
    final = doc["stages"][-1]
    assert final["formula"] == "output = concat·W_O"
    assert doc["output"] == final["value"]
    concat = doc["stages"][-2]["value"]
    heads = [s["value"] for s in doc["stages"] if s["id"] == "output" and s["head"]]
    # concat is head 1's columns, then head 2's
    assert concat == [r1 + r2 for r1, r2 in zip(*heads, strict=True)]
    # and the output is concat·W_O, row by row
    wo = np.array(presets.load("multihead")["wo"], dtype=float)
    np.testing.assert_allclose(np.array(concat) @ wo, doc["output"], rtol=1e-12)


def test_gqa_json_gives_query_heads_the_keys_and_values_of_their_kv_head(cli):
    doc = json_of(cli, "--preset", "gqa")
    p = doc["problem"]
    assert (p["heads"], p["kv_heads"], p["d_k"], p["mask"]) == (4, 2, 1, "causal")
    by = {(s["id"], s["head"]): s for s in doc["stages"]}
    wk = np.array(presets.load("gqa")["wk"], dtype=float)
    x = np.array(presets.load("gqa")["x"], dtype=float)
    for h, g in ((1, 1), (2, 1), (3, 2), (4, 2)):  # ⌈h·G/H⌉ with H = 4, G = 2
        assert by[("k", h)]["value"] == (x @ wk[:, g - 1 : g]).tolist()
        assert by[("masked", h)]["head"] == h
    assert by[("k", 1)]["value"] == by[("k", 2)]["value"]
    assert by[("v", 3)]["value"] == by[("v", 4)]["value"]
    assert [s["id"] for s in doc["stages"] if s["head"] == 1] == PER_HEAD_MASKED


def test_cross_json_has_a_source_stage_and_n_by_m_scores(cli):
    doc = json_of(cli, "--preset", "cross")
    p = doc["problem"]
    assert (p["n"], p["m"]) == (3, 4)
    assert p["source_tokens"] == ["the", "cat", "is", "sleeping"]
    ids = [s["id"] for s in doc["stages"]]
    assert ids[:2] == ["x", "source"] and "split" not in ids
    scores = next(s for s in doc["stages"] if s["id"] == "scores")
    assert scores["shape"] == [3, 4] and scores["head"] is None


def test_single_head_with_wo_is_multihead_form():
    trace = qkvcalc.explain(
        x=[[1, 2]],
        wq=[[1, 0], [0, 1]],
        wk=[[1, 0], [0, 1]],
        wv=[[1, 0], [0, 1]],
        wo=[[0, 1], [1, 0]],
    )
    assert [s.head for s in trace.stages if s.id == "weights"] == [1]
    assert trace.output.tolist() == [[2.0, 1.0]]  # V = [1, 2], one key, then W_O swaps them


def test_direct_qkv_has_no_projection():
    trace = qkvcalc.explain(
        q=[[1, 0, 2, 1]], k=[[1, 2], [0, 1]], v=[[1, 0], [0, 1]], heads=4, kv_heads=2
    )
    assert trace.find("x") is None
    assert {s.op for s in trace.stages if s.id in ("q", "k", "v")} == {"slice"}
    assert "W_Q" not in "".join(s.formula for s in trace.stages)


# ---- the presets' numbers, by hand -------------------------------------------------------


def test_cross_preset_numbers_by_hand():
    t = trace_of("cross")
    # Q = X (W_Q = I); K: the, cat -> 2·e1, 2·e2; is and sleeping both -> 2·e3 (W_K rows 3, 4)
    # scores: le·the = chat·cat = dort·is = dort·sleeping = 2·2 = 4, everything else 0
    # d_k = 4, so the scale is 1/2 and the live scores become 2
    e2 = math.exp(2)
    one = e2 / (e2 + 3)  # le on the: e²/(e² + 3·e⁰)
    rest = 1 / (e2 + 3)
    split = e2 / (2 * e2 + 2)  # dort on is and on sleeping
    low = 1 / (2 * e2 + 2)
    expected = [[one, rest, rest, rest], [rest, one, rest, rest], [low, low, split, split]]
    np.testing.assert_allclose(t.stage("weights").value, expected, rtol=1e-14)
    # V: the [1, 0], cat [0, 1], is [1, 1], sleeping [0, 2]
    v = np.array([[1, 0], [0, 1], [1, 1], [0, 2]], dtype=float)
    np.testing.assert_allclose(t.output, np.array(expected) @ v, rtol=1e-14)
    assert t.output[2].tolist() == pytest.approx([0.5, low * 1 + split * 3])


def test_gqa_preset_numbers_by_hand():
    t = trace_of("gqa")
    w = t.weights  # [4, 3, 3]
    # d_k = 1, so scale 1 and each score is a product of two numbers.
    # Head 1 reads K/V head 1: q = X·W_Q[:, 1] = [1, 0, 1], k = X·W_K[:, 1] = [1, 0, 1]
    # causal: 'I' sees itself (weight 1); 'love' has q = 0, so its two scores are 0 -> ½, ½
    assert w[0, 0].tolist() == [1, 0, 0]
    assert w[0, 1].tolist() == [0.5, 0.5, 0]
    e = math.e
    np.testing.assert_allclose(
        w[0, 2], [e / (2 * e + 1), 1 / (2 * e + 1), e / (2 * e + 1)], rtol=1e-14
    )
    # Head 4: q = X·[-1, 1] = [1, 1, 0]; K/V head 2: k = X·W_K[:, 2] = [2, 1, 1]
    # 'cats' has q = 0: every score 0, so a third each; 'love': scores [2, 1]
    np.testing.assert_allclose(w[3, 2], [1 / 3, 1 / 3, 1 / 3], rtol=1e-14)
    np.testing.assert_allclose(w[3, 1, :2], [e / (e + 1), 1 / (e + 1)], rtol=1e-14)
    # Causal: every head's row 'I' sees only 'I', so its output is V['I'] of its K/V head:
    # X['I'] = [1, 2], so K/V head 1 gives 1·1 + 2·1 = 3 and K/V head 2 gives 1·0 + 2·1 = 2.
    # concat = [3, 3, 2, 2]; W_O adds heads 1 + 3 into column 1 and heads 2 + 4 into column 2
    assert t.output[0].tolist() == [3 + 2, 3 + 2]


def test_multihead_preset_heads_read_their_own_columns():
    t = trace_of("multihead")
    doc = presets.load("multihead")
    x, wq = np.array(doc["x"], dtype=float), np.array(doc["wq"], dtype=float)
    assert t.stage("q", 1).value.tolist() == (x @ wq[:, :2]).tolist()
    assert t.stage("q", 2).value.tolist() == (x @ wq[:, 2:]).tolist()
    np.testing.assert_allclose(t.weights.sum(axis=2), 1, rtol=1e-14)
    assert not np.allclose(t.weights[0], t.weights[1])  # two heads, two ways of looking


# ---- the terminal -------------------------------------------------------------------------


def table(name_or_trace, **opts) -> str:
    trace = trace_of(name_or_trace) if isinstance(name_or_trace, str) else name_or_trace
    return render_text(trace, RenderOptions(color=False, width=100, **opts))


def test_each_head_is_its_own_group_in_the_terminal():
    text = table("multihead")
    first, second = text.index("Head 1 of 2"), text.index("Head 2 of 2")
    assert text.index("Split into heads") < first < second < text.index("Concatenate the heads")
    assert "Columns of the joined result, by head: head 1 → 1–2, head 2 → 3–4." in text
    assert "Output projection" in text


def test_gqa_groups_say_which_kv_head_they_read():
    text = table("gqa")
    assert "Head 2 of 4 · reads key/value head 1 (shared by query heads 1–2)" in text
    assert "Head 3 of 4 · reads key/value head 2 (shared by query heads 3–4)" in text
    assert "head 4: W_Q[:, 4], W_K[:, 2], W_V[:, 2] (K/V head 2)" in text


def test_cross_tables_are_labelled_by_queries_and_source_tokens():
    text = table("cross", detail="brief")
    scores = text[text.index("Attention scores") :]
    # Q · Kᵀ = Q·Kᵀ side by side: the result's header closes the first line
    header = next(line for line in scores.splitlines()[1:] if line.rstrip().endswith("sleeping"))
    assert header.split()[-5:] == ["Q·Kᵀ", "the", "cat", "is", "sleeping"], header
    assert "Rows are the queries (n = 3, from X), columns the keys (m = 4, from the" in text


def test_causal_cross_attention_says_it_is_aligned_top_left():
    doc = presets.load("cross") | {"mask": "causal"}
    text = table(run(Problem.from_mapping(doc)), detail="brief")
    assert "Causal mask with n = 3 and m = 4 (queries and keys): aligned top-left" in text


def test_korean_head_groups():
    text = table("gqa", lang="ko", detail="brief")
    assert "헤드 2 (전체 4개)" in text and "Key/Value 헤드 1" in text


@pytest.mark.slow
def test_a_bert_base_sized_layer_renders_elided_tables():
    rng = np.random.default_rng(12)
    d, n = 768, 12
    trace = qkvcalc.explain(
        x=rng.standard_normal((n, d)),
        wq=rng.standard_normal((d, d)) * 0.05,
        wk=rng.standard_normal((d, d)) * 0.05,
        wv=rng.standard_normal((d, d)) * 0.05,
        wo=rng.standard_normal((d, d)) * 0.05,
        bq=rng.standard_normal(d) * 0.05,
        heads=12,
        mask="causal",
    )
    text = table(trace)
    assert all(len(line.rstrip()) <= 100 for line in text.splitlines())
    assert "Head 12 of 12" in text
    assert "by head: head 1 → 1–64" in text and "head 12 → 705–768." in text
    assert "of the columns." in text  # X has 768 columns: its corners show, the middle is …
    assert "Arithmetic left out: 768 cells, more than 64 to write out." in text
    assert len(text.splitlines()) < 5000


# ---- shape errors of multi-head input ----------------------------------------------------

I4 = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
X = [[1, 2, 3, 4], [0, 1, 0, 1]]
BASE = {"x": X, "wq": I4, "wk": I4, "wv": I4}

SHAPE_ERRORS = {
    "d_k not divisible by H": (
        {"x": X, "wq": [[1, 0, 0]] * 4, "wk": [[1, 0, 0]] * 4, "wv": [[1, 0, 0]] * 4, "heads": 2},
        ["the columns of W_Q (3)", "heads = 2", "multiple of 2"],
    ),
    "kv_heads not dividing heads": (
        BASE | {"heads": 4, "kv_heads": 3},
        ["heads = 4", "kv_heads = 3", "same number of query heads"],
    ),
    "W_K of the wrong width for GQA": (
        BASE | {"wv": [[1, 0]] * 4, "heads": 4, "kv_heads": 2},
        [
            "the width of W_Q is 4, so with heads = 4 each query head has d_k = 1",
            "the width of W_K is 4, so with kv_heads = 2 each key head has d_k = 2",
            "same d_k",
        ],
    ),
    "W_O of the wrong size": (
        BASE | {"heads": 2, "wo": [[1, 0, 0]] * 3},
        ["W_O is 3×3", "the width of concat (its number of columns) is 4", "rows of W_O must be 4"],
    ),
    "W_O transposed": (
        BASE | {"heads": 2, "wo": [[1, 0, 0, 0]] * 3},
        ["W_O is 3×4", "rows of W_O must be 4", '"layout": "torch"'],
    ),
    "W_Q transposed": (
        BASE | {"wq": [[1, 0, 0, 0], [0, 1, 0, 0]]},
        [
            "W_Q is 2×4",
            "the width of X (its number of columns) is 4",
            "transposed",
            '"layout": "torch"',
        ],
    ),
    "rows layout given as torch": (
        {"x": X, "wq": [[1, 0]] * 4, "wk": [[1, 0]] * 4, "wv": [[1, 0]] * 4, "layout": "torch"},
        ["W_Q is 4×2 as given in the torch layout", 'drop "layout": "torch"'],
    ),
    "b_Q of the wrong length": (
        BASE | {"heads": 2, "bq": [1, 2, 3]},
        ["b_Q is 3 long", "the width of W_Q is 4"],
    ),
    "b_O of the wrong length": (
        BASE | {"heads": 2, "wo": I4, "bo": [1, 2]},
        ["b_O is 2 long", "the width of W_O is 4"],
    ),
    "b_O without W_O": (BASE | {"bo": [1, 2, 3, 4]}, ["b_O is given without W_O"]),
    "source of another width": (
        BASE | {"source": [[1, 2, 3]]},
        ["source is 1×3", "X is 2×4", "d_model columns"],
    ),
}


@pytest.mark.parametrize(("doc", "parts"), SHAPE_ERRORS.values(), ids=list(SHAPE_ERRORS))
def test_shape_errors_name_the_numbers_and_the_rule(doc, parts):
    with pytest.raises(QkvcalcError) as err:
        Problem.from_mapping(doc)
    for part in parts:
        assert part in str(err.value)


@pytest.mark.parametrize(
    ("args", "part"),
    [
        (["--heads", "3"], "the columns of W_Q (2) do not split into heads = 3"),
        (["--heads", "2", "--kv-heads", "4"], "heads = 2 is not a multiple of kv_heads = 4"),
        (
            ["--wo", "1 0; 0 1; 1 1"],
            "W_O is 3×2, but the width of concat (its number of columns) is 2",
        ),
        (["--wq", "1 0; 0 1; 1 1"], "W_Q is 3×2, but the width of X (its number of columns) is 2"),
    ],
)
def test_cli_shape_errors_exit_2_with_one_message(qkvcalc_proc, args, part):
    proc = qkvcalc_proc(
        "explain",
        "--x",
        "1 2; 0 1",
        "--wq",
        "1 0; 0 1",
        "--wk",
        "1 1; 0 1",
        "--wv",
        "1 0; 1 1",
        *args,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert part in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 2), (6, 3), (8, 1), (4, 4), (12, 4)])
def test_query_heads_of_is_kv_head_of_turned_round(heads, kv_heads):
    from qkvcalc.input.problem import Problem

    d = heads  # d_k = 1 per query head
    p = Problem.from_mapping(
        {
            "x": [[1.0] * d],
            "wq": np.eye(d),
            "wk": np.eye(d)[:, :kv_heads],
            "wv": np.eye(d)[:, :kv_heads],
            "heads": heads,
            "kv_heads": kv_heads,
        }
    )
    for g in range(1, kv_heads + 1):
        first, last = p.query_heads_of(g)
        assert [h for h in range(1, heads + 1) if p.kv_head_of(h) == g] == list(
            range(first, last + 1)
        )


def test_one_head_with_w_o_is_not_said_to_mix_with_other_heads():
    """One head and W_O: the output projection's page said 'what one head found is mixed with
    what the others found', of a run with no other head."""
    from qkvcalc.render import render

    trace = qkvcalc.explain(
        x=[[1, 2], [0, 1]], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]],
        wo=[[1, 0], [0, 1]],
    )  # fmt: skip
    assert trace.stage("output").spec.topic == "output.final"
    for lang, words in (
        ("en", "so with two heads or more, what one head"),
        ("ko", "헤드가 둘 이상이면"),
    ):
        text = " ".join(
            render(trace, "txt", RenderOptions(width=100, color=False, lang=lang)).split()
        )
        assert words in text, lang
