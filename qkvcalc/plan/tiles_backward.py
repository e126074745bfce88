"""FlashAttention-2's backward (--tiles B --backward): one head's gradients one block of keys at a
time, from what the tiled forward saved (its last running maximum and sum), never holding a
whole row of weights.

    LSE = m + log ℓ                               `lse`, per query row (the forward's last m, ℓ)
    D   = rowsum(dO ⊙ O)                          `rowdot_o` (= Σⱼ Aᵢⱼ·dAᵢⱼ, the softmax's r)
    per block b of keys (the forward's blocks):
        P_b  = e^(S_b − LSE)                      `block_p`: the block's weights, recomputed
        dV_b = P_bᵀ·dO                            `grad_v_acc`: the block's rows of dV
        dP_b = dO·V_bᵀ                            `block_grad_p`
        dS_b = P_b ⊙ (dP_b − D)                   `block_grad_s`: the block's columns of dS
        the block's columns back through each stage between the scores and the logits (the
        mask, a cap, a bias, the scaling: all elementwise), each by its own op's backward
        dQ_b = dQ_{b−1} + d(Q·Kᵀ)_b·K_b           `grad_q_acc`: dQ accumulated over the blocks
        dK_b = d(Q·Kᵀ)_bᵀ·Q                       `grad_k_acc`: the block's rows of dK
    then dV and dK the blocks' rows one under another, dQ = dQ_last, with the plain backward's
    ids (grad_v, grad_q, grad_k), so that the rest of the backward (a rotation, a norm, the
    weights, the input) is the plain one's (qkvcalc.plan.backward).

Why the blocks go back through the elementwise stages one block at a time (and are not first
put together into the whole gradient of the logits): so that dQ and dK accumulate block by
block, as the kernel does (FlashAttention-2 folds the scaling, and a cap's slope, into dS_b
in the same way), and each block shows its six stages in order (docs/json-trace.md) with the
chain between them. Each of those stages runs the plain backward's op (`block_back`: the same
Op.backward, on the block's columns), so the pipeline stays one.

`attend` (L = −Σᵢ log Aᵢ,ₜᵢ, the loss on the weights): no dO, so no dV and no dV_b; dP_b is the
gradient of the loss at the block's own weights (−1 / P_b[i, tᵢ] where the target key tᵢ is in
the block, 0 elsewhere), and D = A[i, tᵢ]·(−1 / A[i, tᵢ]) (−1, or 0 for a query without a
target), from the target's weight e^(S[i, tᵢ] − LSE). The rest of the schedule is the same.

A masked cell has P = 0, so dS and every gradient of it are exactly 0; a query whose every key
is masked has LSE = −∞ and a row of zeros. A sink (a feature that starts the online softmax at
m₀ = σ, ℓ₀ = 1) is inside LSE: the sink's share of a row is e^(σ − LSE), and its gradient
reads LSE and D (the feature's `grads` hook is given this head's `lse` and `rowdot_o`).

A note on the head's last stage compares dQ, dK and dV with the plain backward's (the same
problem without tiles, its specs executed again by qkvcalc.plan.reference).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids, reference
from qkvcalc.plan.gap import gap
from qkvcalc.plan.specs import Const, Ref, Spec, d, dim_labels, ref
from qkvcalc.plan.tiles import Block, blocks


def tiled_head(
    p: Problem, by: dict[Ref, Spec], h: int | None, flows: bool
) -> tuple[list[Spec], dict[str, Ref], Spec, Spec]:
    """One head's backward in blocks, up to dQ and dK of what the scores read (and dV): its
    specs, the refs of dV (when the loss flows through the output), and the q and k sides."""
    cuts = blocks(p)
    last = len(cuts)
    logits, scores, q_ref, k_ref = _reads(by, h)
    q_side, k_side = by[q_ref], by[k_ref]
    specs = [_lse(p, h, last), _rowdot(p, h, flows, logits)]
    for b, cols in enumerate(cuts, start=1):
        specs += _block(Block(p, h, b, last, cols), by, flows, logits, scores, q_ref, k_ref)
    refs: dict[str, Ref] = {}
    if flows:
        specs.append(_stacked("grad_v", h, "grad_v_acc", last, by[("v", h)], "dV"))
        refs["v"] = ("grad_v", h)
    specs.append(_grad_q(h, last, q_side))
    specs.append(_stacked(f"grad_{k_side.id}", h, "grad_k_acc", last, k_side, "dK"))
    return specs, refs, q_side, k_side


def _reads(by: dict[Ref, Spec], h: int | None) -> tuple[Spec, Spec, Ref, Ref]:
    """What the head's blocks read in the forward: the logits (what the softmax read), the
    scores Q·Kᵀ under them, and the refs of the q and k sides of the scores."""
    first_scores = by[ref("block_scores", h, None, 1)]
    logits = by[first_scores.operands[0]]
    scores = _scores(by, logits)
    q_ref, kt_ref = scores.operands
    assert not isinstance(q_ref, Const) and not isinstance(kt_ref, Const)
    k_ref = by[kt_ref].operands[0]
    assert not isinstance(k_ref, Const)
    return logits, scores, q_ref, k_ref


def _scores(by: dict[Ref, Spec], logits: Spec) -> Spec:
    at = logits
    while at.id != ids.SCORES:
        first = at.operands[0]
        assert not isinstance(first, Const)
        at = by[first]
    return at


def _lse(p: Problem, h: int | None, last: int) -> Spec:
    """LSE = m + log ℓ, per query row, from the forward's last running maximum and sum."""
    return Spec(
        "lse",
        h,
        "lse",
        (ref("running_max", h, None, last), ref("running_sum", h, None, last)),
        f"LSE = m_{last} + log ℓ_{last}",
        p.tokens,
        ("LSE",),
        notes=(Msg("note.tiles_lse"),),
        symbol="LSE",
        cell="LSE[{i}]",
        letters="n×1",
    )


def _rowdot(p: Problem, h: int | None, flows: bool, logits: Spec) -> Spec:
    """D = rowsum(dO ⊙ O), the softmax's row term; with `attend` (no dO), A[i, tᵢ]·(−1 / A[i, tᵢ])
    from the target's weight."""
    if flows:
        return Spec(
            "rowdot_o",
            h,
            "rowdot",
            (("grad_output", h), (ids.OUTPUT, h)),
            "D = rowsum(dO ⊙ O)",
            p.tokens,
            ("D",),
            notes=(Msg("note.tiles_rowdot_o"),),
            symbol="D",
            cell="D[{i}]",
            letters="n×1",
        )
    assert p.loss is not None
    return Spec(
        "rowdot_o",
        h,
        "attend_rowdot",
        (logits.ref, ("lse", h)),
        "D = A[i, tᵢ]·(−1 / A[i, tᵢ])",
        p.tokens,
        ("D",),
        params={"targets": tuple(p.loss.targets())},
        topic="rowdot_o.attend",
        symbol="D",
        cell="D[{i}]",
        letters="n×1",
    )


def _grad_q(h: int | None, last: int, q_side: Spec) -> Spec:
    """The gradient of the scores' q side: dQ as the blocks left it, after the last."""
    return Spec(
        f"grad_{q_side.id}",
        h,
        "copy",
        (ref("grad_q_acc", h, None, last),),
        f"{d(q_side.symbol)} = dQ_{last}",
        q_side.rows,
        q_side.cols,
        topic="grad_q_side.tiles",
        symbol=d(q_side.symbol),
        letters=q_side.letters,
    )


def _stacked(sid: str, h: int | None, acc: str, last: int, like: Spec, name: str) -> Spec:
    parts = tuple(ref(acc, h, None, b) for b in range(1, last + 1))
    said = ", ".join(f"{name}_{b}" for b in range(1, last + 1))
    return Spec(
        sid,
        h,
        "stack",
        parts,
        f"{d(like.symbol)} = [{said}]",
        like.rows,
        like.cols,
        topic=f"{acc}.total",
        symbol=d(like.symbol),
        letters=like.letters,
    )


def _block(
    block: Block,
    by: dict[Ref, Spec],
    flows: bool,
    logits: Spec,
    scores: Spec,
    q_ref: Ref,
    k_ref: Ref,
) -> list[Spec]:
    """Block b's stages: P_b, dV_b, dP_b, dS_b, the chain back to the scores, dQ_b, dK_b."""
    specs = [_weights(block), *_grad_weights(block, flows)]
    grad_s = _grad_logits(block, logits)
    specs += [grad_s, *_back_to_scores(block, by, logits, grad_s)]
    specs += _grad_q_k(block, by, scores, q_ref, k_ref)
    return specs


def _weights(block: Block) -> Spec:
    """P_b = e^(S_b − LSE): the block's weights, recomputed from the forward's LSE."""
    b = block.b
    return block.spec(
        "block_p",
        "block_p",
        (block.at("block_scores"), ("lse", block.h)),
        f"P_{b} = e^(S_{b} − LSE)",
        block.p.tokens,
        block.keys,
        notes=(block.note(),),
        symbol=f"P_{b}",
        letters="n×B",
    )


def _grad_weights(block: Block, flows: bool) -> list[Spec]:
    """dV_b = P_bᵀ·dO and dP_b = dO·V_bᵀ when the loss reads the output; else (`attend`) dP_b,
    the loss's gradient at the block's own weights."""
    p, h, b, keys = block.p, block.h, block.b, block.keys
    g_out: Ref = ("grad_output", h)
    if not flows:
        assert p.loss is not None
        cols = block.cols
        inside = frozenset(
            (i, t - cols.start) for i, t in p.loss.targets() if cols.start <= t < cols.stop
        )
        return [
            block.spec(
                "block_grad_p",
                "attend_grad",
                (block.at("block_p"),),
                f"dP_{b}[i, tᵢ] = −1 / P_{b}[i, tᵢ]",
                p.tokens,
                keys,
                params={"targets": inside},
                topic="block_grad_p.attend",
                symbol=f"dP_{b}",
                letters="n×B",
            )
        ]
    return [
        block.spec(
            "grad_v_acc",
            "matmul_tn",
            (block.at("block_p"), g_out),
            f"dV_{b} = P_{b}ᵀ·dO",
            keys,
            dim_labels(p.d_v),
            names=(f"P_{b}", "dO"),
            inner=p.tokens,
            symbol=f"dV_{b}",
            letters="B×d_v",
        ),
        block.spec(
            "block_grad_p",
            "block_nt",
            (g_out, ("v", h)),
            f"dP_{b} = dO·V[{block.said}]ᵀ",
            p.tokens,
            keys,
            params={"rows": block.cols},
            names=("dO", "V"),
            symbol=f"dP_{b}",
            letters="n×B",
        ),
    ]


def _grad_logits(block: Block, logits: Spec) -> Spec:
    """dS_b = P_b ⊙ (dP_b − D): the block's columns of the gradient of what the softmax read
    (dS_b of the scaled scores; d(S+M)_b after a mask, as without tiles)."""
    b = block.b
    name = f"{d(logits.symbol)}_{b}"
    return block.spec(
        "block_grad_s",
        "softmax_back",
        (block.at("block_p"), block.at("block_grad_p"), ("rowdot_o", block.h)),
        f"{name} = P_{b} ⊙ (dP_{b} − D)",
        block.p.tokens,
        block.keys,
        symbol=name,
        letters="n×B",
    )


def _back_to_scores(
    block: Block, by: dict[Ref, Spec], logits: Spec, grad_logits: Spec
) -> list[Spec]:
    """The block's columns back through each stage between the scores and the logits (a mask,
    a cap, a bias, the scaling), from the logits' gradient down to the scores'."""
    specs: list[Spec] = []
    here, grad = logits, grad_logits
    while here.id != ids.SCORES:
        first = here.operands[0]
        assert not isinstance(first, Const)
        before = by[first]
        grad = _back_through(block, here, before, grad)
        specs.append(grad)
        here = before
    return specs


def _back_through(block: Block, here: Spec, before: Spec, grad: Spec) -> Spec:
    """The block's columns of the gradient of `before`, from `grad` (the gradient of `here`,
    which read `before`), by here's own op's backward."""
    op = OPS[here.op]
    assert op.backward is not None and op.grad_formula is not None, here.op
    into = f"{d(before.symbol)}_{block.b}"
    return block.spec(
        f"grad_{before.id}",
        "block_back",
        (*here.operands, here.ref, grad.ref),
        f"{into} = {op.grad_formula(into, grad.symbol, before.symbol, here.params)}",
        block.p.tokens,
        block.keys,
        params={"op": here.op, "forward": op, "index": 0, "of": here.params, "cols": block.cols},
        topic=f"grad_back.{here.op}",
        symbol=into,
        letters="n×B",
    )


def _grad_q_k(
    block: Block, by: dict[Ref, Spec], scores: Spec, q_ref: Ref, k_ref: Ref
) -> list[Spec]:
    """dQ_b = dQ_{b−1} + d(Q·Kᵀ)_b·K_b, accumulated over the blocks, and dK_b = d(Q·Kᵀ)_bᵀ·Q,
    the block's rows of dK."""
    b, said = block.b, block.said
    ds = block.at(f"grad_{scores.id}")
    q_side, k_side = by[q_ref], by[k_ref]
    return [
        block.spec(
            "grad_q_acc",
            "grad_q_acc",
            ((ds, k_ref) if b == 1 else (block.before("grad_q_acc"), ds, k_ref)),
            f"dQ_1 = d(Q·Kᵀ)_1·K[{said}]"
            if b == 1
            else f"dQ_{b} = dQ_{b - 1} + d(Q·Kᵀ)_{b}·K[{said}]",
            q_side.rows,
            q_side.cols,
            params={"rows": block.cols},
            names=(f"d(Q·Kᵀ)_{b}", k_side.symbol),
            symbol=f"dQ_{b}",
            letters="n×d_k",
        ),
        block.spec(
            "grad_k_acc",
            "matmul_tn",
            (ds, q_ref),
            f"dK_{b} = d(Q·Kᵀ)_{b}ᵀ·{q_side.symbol}",
            block.keys,
            k_side.cols,
            names=(f"d(Q·Kᵀ)_{b}", q_side.symbol),
            inner=block.p.tokens,
            symbol=f"dK_{b}",
            letters="B×d_k",
        ),
    ]


def same_as_plain(
    h: int | None,
    blocks_count: int,
    sides: Sequence[str],
    plain: Callable[[], dict[Ref, np.ndarray]],
) -> Callable[[Callable[[Ref], np.ndarray]], tuple[Msg, ...]]:
    """The closing note: this head's dQ, dK (and dV) against the plain backward's — the same
    problem without tiles, its specs executed again — with the largest difference."""

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        whole = plain()
        most = gap([whole[(sid, h)] for sid in sides], [value_of((sid, h)) for sid in sides])
        return (Msg("note.tiles_backward_equal", blocks=blocks_count, gap=most),)

    return remark


def plain_values(specs: Callable[[], Sequence[Spec]]) -> Callable[[], dict[Ref, np.ndarray]]:
    """The values of the plain run's specs, executed once (qkvcalc.plan.reference) and kept for
    every head's note."""
    kept: dict[Ref, np.ndarray] = {}

    def values() -> dict[Ref, np.ndarray]:
        if not kept:
            kept.update(reference.forward(specs(), reference.nothing))
        return kept

    return values
