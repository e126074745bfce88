"""The plan of attention in tiles: FlashAttention's online softmax, one block of keys at a time.

For each block b of B keys (the last one may be shorter), per query row:

    S_b = the block's scores                       m_b = max(m_{b−1}, max S_b)
    c_b = e^(m_{b−1} − m_b)                        E_b = e^(S_b − m_b)
    ℓ_b = ℓ_{b−1}·c_b + Σ E_b                      O_b = O_{b−1}·c_b + E_b·V_b

with m_0 = −∞, ℓ_0 = 0, O_0 = 0; then out = O_last / ℓ_last. No stage holds a whole row of
weights. The correction c_b multiplies every earlier term by e^(m_{b−1} − m_b), so in the end
each e^(s − m_j) has become e^(s − m_last): as if the final maximum had been subtracted all
along, which is the ordinary stable softmax; the closing note measures the difference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.ops import features
from qkvcalc.plan import reference
from qkvcalc.plan.gap import gap
from qkvcalc.plan.specs import Operand, Ref, Spec, dim_labels, ref, span


def blocks(p: Problem) -> list[slice]:
    """The keys of each block: B at a time, the last block what is left."""
    assert p.tiles is not None
    return [slice(a, min(a + p.tiles, p.m)) for a in range(0, p.m, p.tiles)]


@dataclass(frozen=True)
class Block:
    """Block b (1-based) of one head's keys, as its stages say it: the keys' columns and their
    labels, the note that names them, and the refs of this block's stages and the one before."""

    p: Problem
    h: int | None
    b: int
    count: int  # how many blocks the head's keys make
    cols: slice

    @property
    def keys(self) -> tuple[str, ...]:
        return self.p.source_tokens[self.cols]

    @property
    def said(self) -> str:  # the keys' columns, 1-based: "3–4"
        return span(self.cols.start, self.cols.stop - self.cols.start)

    def note(self) -> Msg:
        return Msg("note.tiles_block", block=self.b, blocks=self.count, keys=self.said)

    def at(self, sid: str) -> Ref:
        return ref(sid, self.h, None, self.b)

    def before(self, sid: str) -> Ref:
        return ref(sid, self.h, None, self.b - 1)

    def hint(self, key: str) -> tuple[str, dict[str, Any]]:
        """The quiz's hint of a stage that carries the state on: from the block before to b."""
        return key, {"block": self.b, "before": self.b - 1}

    def spec(
        self,
        sid: str,
        op: str,
        operands: tuple[Operand, ...],
        formula: str,
        rows: tuple[str, ...],
        cols: tuple[str, ...],
        **rest: Any,
    ) -> Spec:
        """A stage of this block (of this head)."""
        return Spec(sid, self.h, op, operands, formula, rows, cols, block=self.b, **rest)


def tile_stages(
    p: Problem, h: int | None, logits: Ref, v_ref: Ref, plain: Callable[[], list[Spec]]
) -> list[Spec]:
    """One head's softmax and output over blocks of keys, instead of exp, weights and A·V;
    `plain` gives the head's stages in the ordinary run, which the closing note compares."""
    out: list[Spec] = _start(p, h)  # a state before the first block, when a feature sets one
    cuts = blocks(p)
    for b, cols in enumerate(cuts, start=1):
        block = Block(p, h, b, len(cuts), cols)
        first = b == 1 and not out  # no state before it: m_0 = −∞, ℓ_0 = 0, O_0 = 0
        out += _block_scores(block, logits)
        out += _running_max(block, first)
        out += _running_sums(block, first, v_ref)
    out.append(_output(p, h, len(cuts), plain))
    return out


def _block_scores(block: Block, logits: Ref) -> list[Spec]:
    """S_b, the block's columns of the logits, and its rows' maxima."""
    n, b = block.p.tokens, block.b
    return [
        block.spec(
            "block_scores",
            "block",
            (logits,),
            f"S_{b} = S[:, {block.said}]",
            n,
            block.keys,
            params={"cols": block.cols},
            notes=(block.note(),),
            symbol=f"S_{b}",
            letters="n×B",
        ),
        block.spec(
            "block_max",
            "block_max",
            (block.at("block_scores"),),
            f"max S_{b}",
            n,
            ("max",),
            symbol=f"max S_{b}",
            letters="n×1",
            hint=("hint.block_max", {"block": b}),
        ),
    ]


def _running_max(block: Block, first: bool) -> list[Spec]:
    """m_b, the running maximum, and c_b, the correction of what came before when it grew."""
    n, b = block.p.tokens, block.b
    return [
        block.spec(
            "running_max",
            "running_max",
            (block.at("block_max"),)
            if first
            else (block.before("running_max"), block.at("block_max")),
            f"m_{b} = max S_1" if first else f"m_{b} = max(m_{b - 1}, max S_{b})",
            n,
            ("m",),
            notes=(Msg("note.tiles_running_max"),) if first else (),
            symbol=f"m_{b}",
            letters="n×1",
            hint=block.hint("hint.running_max"),
        ),
        block.spec(
            "correction",
            "correction",
            (block.at("running_max"),)
            if first
            else (block.before("running_max"), block.at("running_max")),
            f"c_{b} = e^(m_{b - 1} − m_{b})" if not first else "c_1 = e^(−∞ − m_1) = 0",
            n,
            ("c",),
            notes=(Msg("note.tiles_correction_first" if first else "note.tiles_correction"),),
            symbol=f"c_{b}",
            letters="n×1",
            hint=block.hint("hint.correction"),
        ),
    ]


def _running_sums(block: Block, first: bool, v_ref: Ref) -> list[Spec]:
    """E_b = e^(S_b − m_b), then the running sum ℓ_b and output O_b, the earlier ones
    corrected by c_b."""
    n, b, cols = block.p.tokens, block.b, block.said
    exp, c = block.at("block_exp"), block.at("correction")
    return [
        block.spec(
            "block_exp",
            "block_exp",
            (block.at("block_scores"), block.at("running_max")),
            f"E_{b} = e^(S_{b} − m_{b})",
            n,
            block.keys,
            symbol=f"E_{b}",
            letters="n×B",
            hint=("hint.block_exp", {"block": b}),
        ),
        block.spec(
            "running_sum",
            "running_sum",
            (exp,) if first else (block.before("running_sum"), c, exp),
            f"ℓ_{b} = Σ E_1" if first else f"ℓ_{b} = ℓ_{b - 1}·e^(m_{b - 1}−m_{b}) + Σ e^(s−m_{b})",
            n,
            ("ℓ",),
            notes=(Msg("note.tiles_running_sum"),) if first else (),
            symbol=f"ℓ_{b}",
            letters="n×1",
            hint=block.hint("hint.running_sum"),
        ),
        block.spec(
            "acc",
            "acc",
            (exp, v_ref) if first else (block.before("acc"), c, exp, v_ref),
            f"O_{b} = E_1·V[{cols}]" if first else f"O_{b} = O_{b - 1}·c_{b} + E_{b}·V[{cols}]",
            n,
            dim_labels(block.p.d_v),
            params={"rows": block.cols},
            notes=(Msg("note.tiles_acc"),) if first else (),
            symbol=f"O_{b}",
            letters="n×d_v",
            hint=block.hint("hint.acc"),
        ),
    ]


def _output(p: Problem, h: int | None, last: int, plain: Callable[[], list[Spec]]) -> Spec:
    """out = O_last / ℓ_last, with the note that compares it with the ordinary softmax."""
    return Spec(
        "output",
        h,
        "divide",
        (ref("acc", h, None, last), ref("running_sum", h, None, last)),
        f"out = O_{last} / ℓ_{last}",
        p.tokens,
        dim_labels(p.d_v),
        topic="output.tiles",
        symbol="out",
        letters="n×d_v",
        hint=("hint.tiles_output", {"block": last}),
        remarks=_same_as_softmax(h, last, plain),
    )


def _same_as_softmax(
    h: int | None, last: int, plain: Callable[[], list[Spec]]
) -> Callable[[Callable[[Ref], np.ndarray]], tuple[Msg, ...]]:
    """The closing note: the ordinary run's softmax(S)·V of this head, its stages executed
    again (qkvcalc.plan.reference), against acc / ℓ, with the largest difference."""

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        whole = reference.forward(plain(), reference.nothing)[("output", h)]
        acc = value_of(ref("acc", h, None, last))
        total = value_of(ref("running_sum", h, None, last))
        tiled = np.divide(acc, total, out=np.zeros_like(acc), where=total != 0)
        return (Msg("note.tiles_equal", blocks=last, gap=gap(whole, tiled)),)

    return remark


def _start(p: Problem, h: int | None) -> list[Spec]:
    """The online softmax's state before the first block: m₀ = −∞, ℓ₀ = 0, O₀ = 0, which the
    first block's stages take for granted — or, when a feature starts it elsewhere (a sink
    seen before every key), the three stages of block 0 that the first block then reads."""
    m0, l0 = features.tiles_start(p, h)
    if (m0, l0) == (float("-inf"), 0.0):
        return []
    n, said = p.tokens, {"m0": f"{m0:g}", "l0": f"{l0:g}"}
    start: list[Spec] = []
    for sid, value, formula, label, symbol in (
        ("running_max", np.full((p.n, 1), m0), f"m_0 = {m0:g}", ("m",), "m_0"),
        ("running_sum", np.full((p.n, 1), l0), f"ℓ_0 = {l0:g}", ("ℓ",), "ℓ_0"),
        ("acc", np.zeros((p.n, p.d_v)), "O_0 = 0", dim_labels(p.d_v), "O_0"),
    ):
        start.append(
            Spec(
                sid,
                h,
                "table",
                (),
                formula,
                n,
                label,
                params={"table": value},
                notes=(Msg("note.tiles_start", **said),) if sid == "running_max" else (),
                topic="tiles_start",
                symbol=symbol,
                letters="n×d_v" if sid == "acc" else "n×1",
                block=0,
            )
        )
    return start
