"""RoPE on the values and back on the output (VO-RoPE; DeepSeek-V4): each head's values are
turned as its keys are, at the key's position j, and each head's output is turned back at the
query's position i, by −i. It rides on the problem's `rope` (its pairs, its R dimensions, its
frequencies and attention factor) and needs it.

    "vo_rope": true

    V_rot  = RoPE(V, j)      the first R columns of each value row, turned at its key's position
    O      = A·V_rot
    O_back = RoPE(O, −i)     the first R columns of each output row, turned back at its query's

What it means: in the rotary columns O_back,i = Σ_j A_ij·R(−i)·R(j)·v_j = Σ_j A_ij·R(j − i)·v_j,
so each value reaches the output turned by the distance between its key and the query, not by
where the two sit: the values take a relative position as Q·Kᵀ does. The columns past R pass
through both turns. DeepSeek-V4's one key/value head is both K and V (`wv` = `wk`, one K/V
head): its values are then the keys after their norm AND their rotation, which is V_rot here.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.labels import shown
from qkvcalc.ops import rope as rotary
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.plan.specs import Spec, dim_labels, positions_text
from qkvcalc.records import NamedTuple


class VoRope(NamedTuple):
    """The values turned at their key's position and the output turned back (no numbers of its
    own: the rotation is the problem's `rope`)."""


def _read(raw: Any, sizes: Sizes) -> VoRope | None:
    if raw is False:
        return None
    if raw is not True:
        raise QkvcalcError("vo_rope.value", value=shown(raw))
    return VoRope()


def _rope(p: Any) -> rotary.Rope:
    """The problem's rotation (the registry has already refused vo_rope without it), whose R
    dimensions must fit in a head's values."""
    turn: rotary.Rope = p.variants.features["rope"]
    if turn.dims > p.d_v:
        raise QkvcalcError("vo_rope.d_v", dims=turn.dims, d_v=p.d_v)
    return turn


def _params(turn: rotary.Rope, positions: np.ndarray) -> dict[str, Any]:
    """The rope op's parameters for these positions (negative ones turn back)."""
    return {
        "style": turn.style,
        "dims": turn.dims,
        "factor": turn.attention_factor,
        "angles": turn.angles(positions),
        "positions": positions,
        "inv_freq": turn.inv_freq,
        "theta": None if turn.inv_freq_given else turn.theta,  # how --dtype makes inv_freq
    }


# ---- the stages ---------------------------------------------------------------------------------


def _turn_v(p: Any, value: VoRope, at: Turn) -> Spec:
    """V_rot: each value row turned at its key's position, as the keys are (the rope op)."""
    if p.tiles is not None and p.backward:  # FlashAttention-2's blocks read V as projected
        raise QkvcalcError("vo_rope.tiles_backward")
    turn = _rope(p)
    return Spec(
        "v_rot",
        at.h,
        "rope",
        (at.ref,),
        f"V_rot = RoPE({at.symbol}, pos)",
        at.rows,
        dim_labels(p.d_v),
        params=_params(turn, at.positions),
        notes=(
            Msg(
                "note.vo_rope_v",
                dims=turn.dims,
                d_v=p.d_v,
                positions=positions_text(at.rows, at.positions),
            ),
        ),
        symbol="V_rot",
        hint=("hint.rope", {"src": at.symbol}),
        letters=at.letters,
    )


def _after(p: Any, value: VoRope, h: int | None, output: Spec) -> list[Spec]:
    """O_back: each output row turned back at its query's position, by −i."""
    turn = _rope(p)
    positions = np.asarray(p.variants.positions)
    return [
        Spec(
            "out_back",
            h,
            "turn_back",
            (output.ref,),
            f"O_back = RoPE({output.symbol}, −pos)",
            output.rows,
            output.cols,
            params=_params(turn, -positions),
            notes=(
                Msg(
                    "note.vo_rope_back",
                    dims=turn.dims,
                    positions=positions_text(output.rows, positions),
                ),
                Msg("note.vo_rope_relative"),
            ),
            symbol="O_back",
            hint=("hint.vo_rope_back", {"src": output.symbol}),
            letters=output.letters,
        )
    ]


# ---- the op: the rope op's rotation by −i, under its own name ----------------------------------


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The output left as A·V_rot (not turned back), and turned on by +i instead of back."""
    p = stage.params
    found: list[Candidate] = []
    for out in versions(stage.reads[0][0]):
        found.append(("vo_rope_not_turned_back", Msg("mistake.vo_rope_not_turned_back"), out))
        forward = rotary.rotate(out, -p["angles"], p["style"], p["dims"], p["factor"])
        found.append(("vo_rope_turned_forward", Msg("mistake.vo_rope_turned_forward"), forward))
    return found


TURN_BACK = rotary.FEATURE.ops[0]._replace(
    name="turn_back",
    grad_formula=lambda into, out, x, params: f"R(i·ω)·{out}",
    in_code=MappingProxyType({}),  # qkvcalc check's mistakes are the rope op's
)


# ---- --format torch -----------------------------------------------------------------------------


def _torch_v(p: Any, value: VoRope, literal: Any, num: Callable[[float], str]) -> list[str]:
    """After rope's lines (its `rope(x, positions)`): V turned at the keys' positions."""
    return [
        "# VO-RoPE (DeepSeek-V4): V turned as K is, at the keys' positions",
        f"v = rope(v, torch.tensor({p.variants.key_positions.tolist()}))",
    ]


def _torch_heads(p: Any, value: VoRope, literal: Callable[[Any], str]) -> list[str]:
    return [
        "# … and each head's output turned back at its query's position (-i)",
        f"heads = rope(heads, -torch.tensor({p.variants.positions.tolist()}))",
    ]


FEATURE = Feature(
    name="vo_rope",
    read=_read,
    ops=(TURN_BACK,),
    turn_v=_turn_v,
    after_output=_after,
    mistakes=(
        Mistakes("turn_back", ("vo_rope_not_turned_back", "vo_rope_turned_forward"), _mistakes),
    ),
    elements=lambda value, n, m, d_k: (n + m) * d_k,
    header=lambda value: [("ui.variant.vo_rope", {})],
    echo=lambda value: True,
    order_reason="shuffle.by_rope",
    words=("RoPE",),
    worksheet_notes=("note.vo_rope_v", "note.vo_rope_back", "note.vo_rope_relative"),
    torch_qk=_torch_v,
    torch_heads=_torch_heads,
    torch_module_gap="it turns no values and no output",
    no_decode="vo_rope.decode",
    needs=(("rope", "vo_rope.needs_rope"),),
)
