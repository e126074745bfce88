"""The backward pass of a head is micrograd's walk over its forward stages (plan.backward.walk):
each stage hands its gradient on by its own op. What that promises, over every feature and loss:
a gradient is planned only after what it reads, every stage between a head's output and its
Q, K and V gets exactly one gradient (but the exponentials and Kᵀ, which the softmax and the
product fold into their own, and tables of given numbers), and an op with a backward of its
own is all a new stage needs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.ops.op import Op
from qkvcalc.ops.projection import learned
from qkvcalc.ops.table import OPS
from qkvcalc.plan import backward as bw
from qkvcalc.plan import ids, reference
from qkvcalc.plan.schedule import plan
from qkvcalc.plan.specs import Const, Spec
from tests.test_backward import FEATURES, LOSSES, backward_trace, make

FOLDED = ("exp", "sink_exp", "transpose")  # their readers' ops take their gradients


def _between(specs: dict, root: Spec) -> set:
    """The forward stages a head's output reads, down to (and with) its Q, K and V."""
    found: set = set()
    todo = [root]
    while todo:
        spec = todo.pop()
        if spec.ref in found:
            continue
        found.add(spec.ref)
        if learned(spec) is not None:  # a projection of X: its gradient is gathered
            continue
        todo += [specs[o] for o in spec.operands if not isinstance(o, Const) and o in specs]
    return found


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("feature", [f for f in FEATURES if f != "tiles"])
def test_every_stage_of_a_head_gets_one_gradient_after_what_it_reads(feature, loss):
    t = backward_trace(make(feature, loss, seed=3))
    specs = [s.spec for s in t.stages]
    forward = {s.ref: s for s in specs if not s.id.startswith(("grad_", "softmax_rowdot"))}
    made = [s for s in specs if s.ref not in forward or s.id.startswith("grad_")]
    position = {s.ref: k for k, s in enumerate(specs)}
    for spec in made:  # a gradient reads only what is planned before it
        for o in spec.operands:
            if not isinstance(o, Const):
                assert position[o] < position[spec.ref], (spec.ref, o)
    grads = [s.ref for s in made if s.id.startswith("grad_")]
    assert len(grads) == len(set(grads)), "a gradient planned twice"
    heads = sorted({s.head for s in specs if s.head is not None}) or [None]
    for h in heads:
        out = forward[(ids.OUTPUT, h)]
        for ref in _between(forward, out):
            stage = forward[ref]
            has = (f"grad_{stage.id}", h) in set(grads)
            if not stage.operands:  # a table of given numbers (a score bias): not learned
                continue
            if stage.op in FOLDED or (loss == "attend" and stage.id in (ids.OUTPUT, ids.V)):
                assert not has, ref  # folded into its reader's, or not on the loss's path
            elif stage.head == h:
                assert has, f"{ref} of head {h} got no gradient ({stage.op})"


def test_a_new_stage_with_a_backward_of_its_own_is_walked_through(monkeypatch):
    """An op the walk has never seen, put between the scaling and the softmax, gets its
    gradient by its own backward (∂(3·S) = 3·∂, one stage), with nothing of plan/backward.py
    changed; and the walked dQ is the loss's gradient (finite differences of L = Σ G ⊙ O)."""

    def triple(ops, params, rows):
        return ops[0] * 3 if rows is None else ops[0][rows] * 3

    op = Op(
        "triple",
        triple,
        rowwise=True,
        backward=lambda ops, params, out, g: (3 * g,),
        grad_formula=lambda into, out, operand, params: f"3·{out}",
    )
    monkeypatch.setitem(OPS, "triple", op)
    p = Problem.from_mapping(make("plain", "target", seed=5))
    forward = list(plan(p))
    by = {s.ref: s for s in forward}
    scaled, exp, out = by[(ids.SCALED, None)], by[("exp", None)], by[(ids.OUTPUT, None)]
    tripled = replace(scaled, id="tripled", op="triple", operands=(scaled.ref,), symbol="T")
    forward[forward.index(exp)] = replace(exp, operands=(tripled.ref,))
    forward.insert(forward.index(scaled) + 1, tripled)
    by = {s.ref: s for s in forward}
    g = np.random.default_rng(0).normal(size=(len(out.rows), len(out.cols)))
    start = Spec(
        "grad_output", None, "table", (), "dO", out.rows, out.cols, symbol="dO", params={"table": g}
    )
    made, grads = bw.walk(p, by, [by[out.ref]], {out.ref: start.ref}, made=[start])
    order = [s.id for s in made]
    assert order.index("grad_tripled") < order.index("grad_scaled") < order.index("grad_scores")
    back = next(s for s in made if s.id == "grad_scaled")
    assert back.op == "back" and back.formula == "dS = 3·dT"
    assert grads[(ids.Q, None)] == ("grad_q", None) and grads[(ids.K, None)] == ("grad_k", None)

    values = reference.forward([*forward, start, *made], reference.nothing)
    q_ref = (ids.Q, None)
    after = forward[forward.index(by[q_ref]) + 1 :]

    def loss(q: np.ndarray) -> float:
        moved = reference.forward(after, lambda r: q if r == q_ref else values[r])
        return float((g * moved[out.ref]).sum())

    q, eps = values[q_ref], 1e-6
    numeric = np.zeros_like(q)
    for i, j in np.ndindex(q.shape):
        up, down = q.copy(), q.copy()
        up[i, j] += eps
        down[i, j] -= eps
        numeric[i, j] = (loss(up) - loss(down)) / (2 * eps)
    np.testing.assert_allclose(values[("grad_q", None)], numeric, rtol=1e-6, atol=1e-8)


def test_the_steps_around_the_heads_are_the_ops_own(monkeypatch):
    """One walk from the layer's output: W_O's projection plans d(concat), dW_O and db_O, and
    the concat each head's columns, each by its own op. An op the walk has never seen, put
    between the concat and W_O, is walked through by its own backward: d(concat) is then
    3·dO·W_Oᵀ, and each head's dO its columns of that (as the numbers say, not the names)."""
    calls: list = []
    for name in ("project", "concat"):
        own = OPS[name]

        def recorded(back, at, g, own=own):
            calls.append(at.ref)
            return own.plan_back(back, at, g)

        monkeypatch.setitem(OPS, name, own._replace(plan_back=recorded))
    monkeypatch.setitem(
        OPS,
        "triple",
        Op(
            "triple",
            lambda ops, params, rows: 3 * (ops[0] if rows is None else ops[0][rows]),
            rowwise=True,
            backward=lambda ops, params, out, g: (3 * g,),
            grad_formula=lambda into, out, operand, params: f"3·{out}",
        ),
    )
    doc = make("wo", "target", seed=4)  # two heads, then W_O and b_O
    doc["bo"] = np.random.default_rng(2).normal(size=len(doc["wo"][0])).tolist()
    p = Problem.from_mapping(doc)
    forward = list(plan(p))
    by = {s.ref: s for s in forward}
    concat, out = by[("concat", None)], by[(ids.OUTPUT, None)]
    tripled = replace(concat, id="tripled", op="triple", operands=(concat.ref,), symbol="T")
    forward.insert(forward.index(concat) + 1, tripled)
    forward[forward.index(out)] = out = replace(out, operands=(tripled.ref, out.operands[1]))
    by = {s.ref: s for s in forward}
    g = np.random.default_rng(1).normal(size=(len(out.rows), len(out.cols)))
    start = Spec(
        "grad_output", None, "table", (), "dO", out.rows, out.cols, symbol="dO", params={"table": g}
    )
    made, grads = bw.walk(p, by, [out], {out.ref: start.ref}, made=[start])
    assert calls == [out.ref, concat.ref]  # the projections of X are gathered after the walk
    order = [s.id for s in made]
    assert order[:4] == ["grad_tripled", "grad_wo", "grad_bo", "grad_concat"]
    assert [s.ref for s in made if s.op == "cut"] == [("grad_output", 1), ("grad_output", 2)]
    assert all((side, h) in grads for side in (ids.Q, ids.K, ids.V) for h in (1, 2))

    values = reference.forward([*forward, start, *made], reference.nothing)
    w_o = out.operands[1].value
    d_concat = 3 * g @ w_o.T
    np.testing.assert_allclose(values[("grad_concat", None)], d_concat, rtol=1e-12)
    np.testing.assert_allclose(values[("grad_wo", None)], values[tripled.ref].T @ g, rtol=1e-12)
    np.testing.assert_allclose(values[("grad_bo", None)], g.sum(axis=0, keepdims=True), rtol=1e-12)
    width = len(by[(ids.OUTPUT, 1)].cols)
    for h in (1, 2):
        cols = slice((h - 1) * width, h * width)
        np.testing.assert_allclose(values[("grad_output", h)], d_concat[:, cols], rtol=1e-12)


def test_the_projections_of_x_are_gathered_by_their_ops_own_rule(monkeypatch):
    """Each learned weight that X is projected through (W_Q, W_K, W_V and the gate's W_G, in
    plan order) is gathered by the projection's own rule (Op.gather), once, from its heads'
    stages in head order. Its numbers, against loops over the heads: each head's X^T·dP in
    its columns (GQA's shared K/V heads summed), db the column sums, dX every path added."""
    calls: list = []
    own = OPS["project"]

    def recorded(back, heads, grads):
        calls.append((learned(heads[0]).letter, [s.ref for s in heads]))
        return own.gather(back, heads, grads)

    monkeypatch.setitem(OPS, "project", own._replace(gather=recorded))
    doc = make("gqa", "target", seed=6)  # four query heads; two K/V heads, each shared by two
    rng = np.random.default_rng(7)
    doc["kv_heads"] = 2
    d_model, heads = len(doc["x"][0]), doc["heads"]
    doc["wk"] = rng.normal(size=(d_model, 2 * 4)).tolist()
    doc["wv"] = rng.normal(size=(d_model, 2 * 3)).tolist()
    doc["bk"] = rng.normal(size=2 * 4).tolist()
    doc["wg"] = rng.normal(size=(d_model, heads * 3)).tolist()
    doc["bg"] = rng.normal(size=heads * 3).tolist()
    doc["target"] = rng.normal(size=(len(doc["x"]), heads * 3)).tolist()
    t = backward_trace(doc)
    each = list(range(1, heads + 1))
    assert calls == [
        ("Q", [(ids.Q, h) for h in each]),
        ("K", [(ids.K, h) for h in each]),
        ("V", [(ids.V, h) for h in each]),
        ("G", [("gate_logits", h) for h in each]),
    ]
    x = np.asarray(doc["x"])
    d_x = np.zeros_like(x)
    for letter, grad, width in (("q", "grad_q", 4), ("k", "grad_k", 4), ("v", "grad_v", 3),
                                ("g", "grad_gate_logits", 3)):  # fmt: skip
        weight = np.asarray(doc[f"w{letter}"])
        d_w = np.zeros_like(weight)
        d_b = np.zeros(weight.shape[1])
        for h in each:
            block = (h - 1) // 2 if letter in "kv" else h - 1  # K/V head g = ⌈h·G/H⌉
            cols = slice(block * width, (block + 1) * width)
            d_p = t.stage(grad, h).value
            d_w[:, cols] += x.T @ d_p
            d_b[cols] += d_p.sum(axis=0)
            d_x += d_p @ weight[:, cols].T
        np.testing.assert_allclose(t.stage(f"grad_w{letter}").value, d_w, rtol=1e-12)
        if f"b{letter}" in doc:
            np.testing.assert_allclose(t.stage(f"grad_b{letter}").value.ravel(), d_b, rtol=1e-12)
    np.testing.assert_allclose(t.stage("grad_x").value, d_x, rtol=1e-12, atol=1e-12)


def test_the_stages_after_a_heads_output_are_walked_by_their_ops(monkeypatch):
    """The concat gives each head its columns of d(concat), then walks back from there to the
    head's output through what a feature put after it, each stage by its own op: the gate's
    `gate_mul` and `sigmoid`, once a head, head 1's before head 2's cut. An op the walk has
    never seen, put between a head's gated output and the concat, is walked through by its own
    backward (3·), and the gate's gradients then carry the factor 3."""
    from tests.test_gate import DOC

    calls: list = []
    for name in ("gate_mul", "sigmoid"):
        own = OPS[name]

        def recorded(back, at, g, own=own):
            calls.append(at.ref)
            return own.plan_back(back, at, g)

        monkeypatch.setitem(OPS, name, own._replace(plan_back=recorded))
    monkeypatch.setitem(
        OPS,
        "triple",
        Op(
            "triple",
            lambda ops, params, rows: 3 * (ops[0] if rows is None else ops[0][rows]),
            rowwise=True,
            backward=lambda ops, params, out, g: (3 * g,),
            grad_formula=lambda into, out, operand, params: f"3·{out}",
        ),
    )
    p = Problem.from_mapping({**DOC, "target": np.ones((len(DOC["x"]), 2)).tolist()})
    forward = list(plan(p))
    by = {s.ref: s for s in forward}
    concat, out = by[("concat", None)], by[(ids.OUTPUT, None)]
    gated = [by[("gated", h)] for h in (1, 2)]
    tripled = [replace(s, id="tripled", op="triple", operands=(s.ref,), symbol="T") for s in gated]
    for s, t in zip(gated, tripled, strict=True):
        forward.insert(forward.index(s) + 1, t)
    forward[forward.index(concat)] = replace(concat, operands=tuple(t.ref for t in tripled))
    by = {s.ref: s for s in forward}
    g = np.random.default_rng(3).normal(size=(len(out.rows), len(out.cols)))
    start = Spec(
        "grad_output", None, "table", (), "dO", out.rows, out.cols, symbol="dO", params={"table": g}
    )
    made, grads = bw.walk(p, by, [out], {out.ref: start.ref}, made=[start])
    assert calls == [("gated", 1), ("gate", 1), ("gated", 2), ("gate", 2)]
    ids_made = [s.ref for s in made]
    for h in (1, 2):  # each head: its cut, 3·, then the gate's, before the next head's cut
        head = [r for r in ids_made if r[1] == h][:5]
        assert head == [("grad_tripled", h), ("grad_gated", h), ("grad_output", h),
                        ("grad_gate", h), ("grad_gate_logits", h)]  # fmt: skip
    assert ids_made.index(("grad_gate_logits", 1)) < ids_made.index(("grad_tripled", 2))
    assert all(("gate_logits", h) in grads and (ids.Q, h) in grads for h in (1, 2))

    values = reference.forward([*forward, start, *made], reference.nothing)
    d_concat = g @ out.operands[1].value.T
    width = len(gated[0].cols)
    for h in (1, 2):
        d_gated = 3 * d_concat[:, (h - 1) * width : h * width]
        gate, head_out = values[("gate", h)], values[(ids.OUTPUT, h)]
        np.testing.assert_allclose(values[("grad_output", h)], d_gated * gate, rtol=1e-12)
        d_z = d_gated * head_out * gate * (1 - gate)
        np.testing.assert_allclose(values[("grad_gate_logits", h)], d_z, rtol=1e-12)
