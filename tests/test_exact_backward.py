"""--exact with --backward: the backward stages that stay rational are fractions (with
`grad_output` given: dO, each head's cut of d(concat), d(concat) = dO·W_Oᵀ, db_O = Σᵢ dOᵢ,
dA = dO·Vᵀ), worked out here with Python's fractions from the input alone; the rest (whatever
reads the weights A) has no exact value; the exact budget counts the backward's products."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction as F

import numpy as np

from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from qkvcalc.run.exact import products_needed

DOC = {
    "x": [[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 1, 1]],
    "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
    "wk": [[0, 1, 0, 1], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0]],
    "wv": [["1/2", 0, 0, 0], [0, 1, 0, 0], [0, 0, "1/3", 0], [0, 0, 0, 1]],
    "wo": [[1, 0], [0, 1], [1, 1], [0, -1]],
    "bo": [1, 2],
    "heads": 2,
    "mask": "causal",
    "grad_output": [["1/2", 0], [0, 1], [1, "-3/4"]],
}


def fractions(rows):
    return [[F(str(v)) for v in row] for row in rows]


def matmul(a, b):
    return [
        [sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
        for i in range(len(a))
    ]


def transposed(a):
    return [list(col) for col in zip(*a, strict=True)]


def exact_trace(doc):
    return run(replace(Problem.from_mapping(doc, exact=True), backward=True))


def as_fractions(stage):
    assert stage.exact is not None, stage.id
    return [list(row) for row in stage.exact]


def test_the_rational_gradients_are_fractions():
    trace = exact_trace(DOC)
    d_o = fractions(DOC["grad_output"])
    wo = fractions(DOC["wo"])
    v = matmul(fractions(DOC["x"]), fractions(DOC["wv"]))
    assert as_fractions(trace.stage("grad_output")) == d_o
    d_concat = matmul(d_o, transposed(wo))
    assert as_fractions(trace.stage("grad_concat")) == d_concat
    assert as_fractions(trace.stage("grad_bo")) == [[sum(col) for col in zip(*d_o, strict=True)]]
    for h in (1, 2):
        cut = [row[2 * (h - 1) : 2 * h] for row in d_concat]
        assert as_fractions(trace.stage("grad_output", h)) == cut
        v_h = [row[2 * (h - 1) : 2 * h] for row in v]
        d_a = matmul(cut, transposed(v_h))
        stage = trace.stage("grad_weights", h)
        assert as_fractions(stage) == d_a
        assert np.allclose(stage.value, np.array(d_a, dtype=float), atol=0, rtol=1e-15)
        assert any(c.denominator > 1 for row in d_a for c in row)  # a real fraction among them
    # what reads the weights is not rational: no exact value, and no stage claims one wrongly
    for sid in ("grad_v", "softmax_rowdot", "grad_scores", "grad_q", "grad_k"):
        for h in (1, 2):
            assert trace.stage(sid, h).exact is None, (sid, h)
    for sid in ("grad_wo", "grad_wq", "grad_wv", "grad_x"):
        assert trace.stage(sid).exact is None, sid


def test_from_a_target_no_gradient_is_rational():
    doc = {k: v for k, v in DOC.items() if k != "grad_output"} | {"target": [[0, 0]] * 3}
    trace = exact_trace(doc)
    grads = [s for s in trace.stages if s.id.startswith("grad_")]
    assert grads and all(s.exact is None for s in grads)
    assert trace.stage("v", 1).exact is not None  # the forward's rational stages still are


def test_the_exact_arithmetic_of_da_is_in_fractions():
    from qkvcalc import render

    text = render(exact_trace(DOC), "txt", width=200)
    lines = [line.strip() for line in text.splitlines()]
    sums = [line for line in lines if line.startswith(("dA[", "d(concat)["))]
    assert len(sums) == 2 * 9 + 3 * 4  # every cell of both heads' dA and of d(concat)
    assert "d(concat)[1,1] = (1/2)×1 + 0×0 = 1/2" in sums  # dO's 1/2 as a fraction
    assert not any("." in line for line in sums), sums


def test_the_budget_counts_the_backward_products():
    p = replace(Problem.from_mapping(DOC, exact=True), backward=True)
    plain = replace(p, backward=False)
    n, m, heads, d_v, d_out = 3, 3, 2, 2, 2
    assert products_needed(p) - products_needed(plain) == heads * n * m * d_v + n * d_out * 4
    # forward alone within the budget, the backward's dA = dO·Vᵀ past it: exact is given up
    n = 25
    wide = {
        "x": [[1]] * n,
        "wq": [[1]],
        "wk": [[1]],
        "wv": [[1] * 200],
        "grad_output": [[1] * 200] * n,
    }
    assert Problem.from_mapping(wide | {"grad_output": None}, exact=True).exact_refused is None
    refused = Problem.from_mapping(wide, exact=True).exact_refused
    assert refused is not None and refused.key == "note.exact_skipped"
    assert refused.params["count"] > 125_000
