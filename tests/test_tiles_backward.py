"""FlashAttention-2's backward (--tiles B --backward): every gradient of the tiled run equals the
plain backward's (1e-12) and PyTorch's autograd, for blocks of 1, 2, 3 keys and one block that
holds them all, over test_backward's feature combinations and losses; the block stages come in
DESIGN's order; masked cells are exactly 0; the closing note says the largest difference."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from qkvcalc.trace import Trace
from tests.test_backward import FEATURES, LEAVES, LOSSES, make, torch_forward, torch_loss

BLOCKS = (1, 2, 3, 9)  # 9 ≥ m: one block holds every key


def backward(doc: dict[str, Any], tiles: int | None) -> Trace:
    return run(replace(Problem.from_mapping({**doc, "tiles": tiles}), backward=True))


def gradients(trace: Trace) -> dict[tuple[str, int | None], np.ndarray]:
    """The plain backward's stages that a tiled run has too: every gradient outside the softmax
    (which the tiled run computes one block at a time) and the gradients of the leaves."""
    inside = {"grad_weights", "softmax_rowdot", "grad_masked", "grad_capped", "grad_biased"}
    inside |= {"grad_scaled", "grad_scores"}
    return {
        (s.id, s.head): s.value
        for s in trace.stages
        if s.id.startswith("grad_") and s.id not in inside and s.spec.block is None
    }


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("feature", FEATURES)
def test_every_gradient_equals_the_plain_backward_and_torch(feature, loss):
    torch = pytest.importorskip("torch", reason="autograd is the oracle: pip install torch")
    doc = make(feature, loss, seed=FEATURES.index(feature) * 7 + LOSSES.index(loss))
    plain = gradients(backward(doc, None))
    t = {
        name: torch.tensor(np.array(doc[name], dtype=np.float64), requires_grad=True)
        for name in LEAVES
        if name in doc
    }
    out, weights = torch_forward(doc, t, torch)
    torch_loss(doc, out, weights, torch).backward()
    for b in BLOCKS:
        tiled = backward(doc, b)
        got = gradients(tiled)
        assert set(got) == set(plain), (b, set(got) ^ set(plain))
        for key, value in plain.items():
            np.testing.assert_allclose(got[key], value, rtol=0, atol=1e-12, err_msg=f"{b} {key}")
        checked = 0
        for name, tensor in t.items():
            if tensor.grad is None or not tensor.grad.abs().max() > 0:
                continue
            expected = tensor.grad.numpy().reshape(got[(f"grad_{name}", None)].shape)
            np.testing.assert_allclose(
                got[(f"grad_{name}", None)], expected, rtol=0, atol=1e-12, err_msg=f"{b} {name}"
            )
            checked += 1
        assert checked >= 3


def _order(trace: Trace, h: int | None) -> list[tuple[str, int | None]]:
    start = next(k for k, s in enumerate(trace.stages) if s.id == "lse" and s.head == h)
    out = []
    for s in trace.stages[start:]:
        if s.head != h or s.id == "grad_wq":  # the head's stages end, the weights' begin
            break
        out.append((s.id, s.spec.block))
    return out


@pytest.mark.parametrize("loss", LOSSES)
def test_the_block_stages_come_in_designs_order(loss):
    # causal + softcap: the softmax reads the masked logits, then back through the cap and
    # the scaling to the scores, each block's columns on their own
    doc = make("softcap", loss, 4)  # n = m = 4
    trace = backward(doc, 3)  # blocks: keys 1–3, key 4
    flows = loss != "attend"
    expected: list[tuple[str, int | None]] = [("lse", None), ("rowdot_o", None)]
    for b in (1, 2):
        expected += [("block_p", b)]
        expected += [("grad_v_acc", b)] if flows else []
        expected += [("block_grad_p", b), ("block_grad_s", b)]
        expected += [("grad_capped", b), ("grad_scaled", b), ("grad_scores", b)]
        expected += [("grad_q_acc", b), ("grad_k_acc", b)]
    expected += [("grad_v", None)] if flows else []
    expected += [("grad_q", None), ("grad_k", None)]
    assert _order(trace, None) == expected
    for b, keys in ((1, 3), (2, 1)):
        assert trace.stage("block_p", block=b).value.shape == (4, keys)
        assert trace.stage("grad_k_acc", block=b).value.shape == (keys, 4)
    # the forward's blocks come before, and no stage of the backward holds a row of weights
    assert trace.find("grad_weights") is None and trace.find("weights") is None


def test_every_head_has_its_blocks():
    doc = make("gqa", "target", 1)  # 4 query heads sharing one key/value head
    trace = backward(doc, 2)
    for h in range(1, 5):
        ids = [sid for sid, _ in _order(trace, h)]
        assert ids.count("block_p") == 2 and ids.count("grad_k_acc") == 2, h
        assert ids[-1] == "grad_k" and trace.stage("grad_v", h).value.shape == (4, 3)


def test_masked_cells_are_exactly_zero():
    doc = make("custom_mask", "target", 3)
    allowed = np.array(doc["mask"], dtype=bool)
    trace = backward(doc, 2)
    for b, cols in ((1, slice(0, 2)), (2, slice(2, 4))):
        hidden = ~allowed[:, cols]
        for sid in ("block_p", "block_grad_s", "grad_scaled", "grad_scores"):
            value = trace.stage(sid, block=b).value
            assert (value[hidden] == 0).all() and not np.signbit(value[hidden]).any(), (sid, b)


@pytest.mark.parametrize("sinks", [False, True])
def test_a_row_whose_every_key_is_masked(sinks):
    doc = make("plain", "target", 5)
    doc["mask"] = [[0, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]]
    if sinks:
        doc["sinks"] = [0.4]
    plain, tiled = backward(doc, None), backward(doc, 2)
    lse = tiled.stage("lse").value[:, 0]
    assert np.isfinite(lse[0]) == sinks  # the sink is always there: ℓ₀ = 1
    for b in (1, 2):
        assert (tiled.stage("block_p", block=b).value[0] == 0).all()
        assert (tiled.stage("block_grad_s", block=b).value[0] == 0).all()
    for key, value in gradients(plain).items():
        np.testing.assert_allclose(gradients(tiled)[key], value, rtol=0, atol=1e-12, err_msg=key)


def test_the_sinks_gradient_reads_the_log_sum_exp():
    doc = make("sinks", "grad_output", 2)
    stage = backward(doc, 2).stage("grad_sinks")
    assert [r[0] for r in stage.spec.operands] == ["lse", "rowdot_o", "lse", "rowdot_o"]
    np.testing.assert_allclose(
        stage.value, backward(doc, None).stage("grad_sinks").value, atol=1e-12
    )


@pytest.mark.parametrize("feature, loss", [("multihead", "target"), ("rope_half", "attend")])
def test_the_closing_note_says_the_largest_difference(feature, loss):
    doc = make(feature, loss, 6)
    plain, tiled = backward(doc, None), backward(doc, 1)
    heads = [None] if doc["heads"] == 1 else [1, 2]
    for h in heads:
        # the last stage of the head's backward, and what it compares: dQ, dK (and dV) of what
        # the scores read
        last = tiled.stage("grad_k", h)
        (note,) = [n for n in last.notes if n.key == "note.tiles_backward_equal"]
        sides = ["grad_q_rot", "grad_k_rot"] if "rope" in doc else ["grad_q", "grad_k"]
        sides += ["grad_v"] if loss != "attend" else []
        gap = max(
            float(np.max(np.abs(tiled.stage(sid, h).value - plain.stage(sid, h).value)))
            for sid in sides
        )
        assert note.params["gap"] == Msg("ui.gap_rounding", bound="1e-12") and gap < 1e-12
        assert note.params["blocks"] == 4


def test_the_closing_note_runs_the_plain_plan(monkeypatch):
    # the note executes the plain run's specs again (qkvcalc.plan.reference): a plain plan
    # with other numbers shows as a large difference
    from qkvcalc.plan import schedule

    doc = make("plain", "target", 7)
    other = Problem.from_mapping({**doc, "wv": (np.array(doc["wv"]) * 2).tolist()})
    real = schedule.plan

    def plan(p):
        if p.tiles is None:
            return real(replace(other, backward=True))
        return real(p)

    monkeypatch.setattr(schedule, "plan", plan)
    tiled = backward(doc, 2)
    last = tiled.stage("grad_k")
    (note,) = [n for n in last.notes if n.key == "note.tiles_backward_equal"]
    assert float(note.params["gap"]) > 1e-3


def test_explain_tiles_backward_as_a_real_process(qkvcalc_proc):
    target = "[[1, 0], [0, 1], [1, 1], [0, 0], [2, 1]]"
    proc = qkvcalc_proc("explain", "--preset", "tiles", "--target", target, "--backward")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # the terminal wraps the notes
    assert "the log-sum-exp L" in text
    said = r"the totals equal the backward without tiles .*?difference below 1e-12\)"
    assert re.search(said, text) is not None


FLASH_OPS = ("lse", "block_p", "attend_rowdot", "block_nt", "block_back", "grad_q_acc")


@pytest.mark.parametrize(
    "feature, loss", [("softcap", "target"), ("custom_mask", "attend"), ("sinks", "grad_output")]
)
def test_each_cell_reads_the_operand_cells_its_op_feeds_name(feature, loss):
    """The page and the quiz light the cells `feeds` names: nudge each operand cell and every
    cell of the value that moves must name it."""
    from qkvcalc.ops.table import OPS

    trace = backward(make(feature, loss, 8), 2)
    seen = set()
    for stage in trace.stages:
        if stage.spec.block is None and stage.op not in (*FLASH_OPS, "sink_grad_tiles"):
            continue
        op = OPS[stage.op]
        ops = [np.array(o, dtype=float) for o in stage.operands]
        shapes = [o.shape for o in ops]
        base = op.compute(ops, stage.params, None)
        for k, o in enumerate(ops):
            for a, b in np.ndindex(o.shape):
                if not np.isfinite(o[a, b]):
                    continue
                nudged = [x.copy() for x in ops]
                nudged[k][a, b] += 1e-3
                moved = np.argwhere(
                    ~np.isclose(op.compute(nudged, stage.params, None), base, rtol=0, atol=1e-12)
                )
                for i, j in moved:
                    fed = set(op.feeds(int(i), int(j), shapes, stage.params))
                    assert (k, a, b) in fed, (stage.id, stage.spec.block, (i, j), (k, a, b))
        seen.add(stage.op)
    assert {"lse", "block_p", "block_back", "grad_q_acc", "matmul_tn"} <= seen
