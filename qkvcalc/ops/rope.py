"""Rotary position embedding, RoPE (RoFormer; LLaMA, GPT-NeoX, Qwen …): each head's q and k
turned, pair of dimensions by pair, by an angle that grows with the token's position, so that
q_i·k_j depends on the distance pos_i − pos_j and not on where the two tokens sit.

    "rope": θ, or true, or {"theta": θ, "style": "half" | "pairs", "dims": R,
                             "inv_freq": [ω…], "attention_factor": f}

    pair k of the first R dimensions turns by the angle pos·ω_k, ω_k = θ^(−2k/R):
    a′ = f·(a·cos − b·sin),  b′ = f·(b·cos + a·sin)       stages `q_rot`, `k_rot`

"half" pairs dimension i with i + R/2 (rotate_half, as LLaMA), "pairs" 2i with 2i + 1 (GPT-J,
Meta's original code); the dimensions past R pass through (partial rotary: GPT-NeoX, Phi).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive, to_vector
from qkvcalc.labels import safe, shown
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.ops.op import Feeds, Literals, Op, Params, Shapes
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan.specs import Ref, Spec, dim_labels, positions_text
from qkvcalc.records import NamedTuple

KEYS = ("theta", "style", "dims", "inv_freq", "attention_factor")


class Rope(NamedTuple):
    """Rotary position embedding of each head's q and k: the first `dims` dimensions rotate
    in pairs (style "half": i with i + dims/2; "pairs": 2i with 2i + 1) by position × inv_freq."""

    theta: float
    style: str
    dims: int
    inv_freq: np.ndarray  # [dims/2]: the frequency of each pair
    attention_factor: float
    inv_freq_given: bool

    def angles(self, positions: np.ndarray) -> np.ndarray:
        # [n] × [dims/2] -> [n, dims/2], in float64
        return positions.astype(np.float64)[:, None] * self.inv_freq[None, :]


# ---- the rotation, in numpy ---------------------------------------------------------------------


def partner(j: int, dims: int, style: str) -> int:
    """The dimension that rotates with dimension j (0-based): j ± dims/2 ("half", as
    rotate_half), or its neighbour j ^ 1 ("pairs", 2i with 2i + 1). Beyond dims: itself."""
    if j >= dims:
        return j
    if style == "pairs":
        return j ^ 1
    half = dims // 2
    return j + half if j < half else j - half


def pair_index(j: int, dims: int, style: str) -> int:
    """Which frequency (0-based) dimension j rotates with."""
    return j // 2 if style == "pairs" else j % (dims // 2)


def rotate(x: np.ndarray, angles: np.ndarray, style: str, dims: int, factor: float) -> np.ndarray:
    """RoPE: each pair (a, b) of the first `dims` dimensions turned by its angle θ,
    a' = a·cos θ − b·sin θ, b' = b·cos θ + a·sin θ (times the attention factor); the other
    dimensions pass through."""
    # [n, d_k], [n, dims/2] -> [n, d_k]
    cos, sin = factor * np.cos(angles), factor * np.sin(angles)
    out = x.copy()
    if style == "half":
        first, second = slice(0, dims // 2), slice(dims // 2, dims)
    else:
        first, second = slice(0, dims, 2), slice(1, dims, 2)
    a, b = x[:, first], x[:, second]
    out[:, first] = a * cos - b * sin
    out[:, second] = b * cos + a * sin
    return out


def _other_pairs(style: str, dims: int) -> tuple[list[int], list[int]]:
    """qkvcalc check's pipeline step `pairs` with the mistake rope_pairs put in: the dimensions
    that turn together, pair by pair (as `partner` pairs them), in the style the model does not
    use."""
    other = "pairs" if style == "half" else "half"
    first = [j for j in range(dims) if j < partner(j, dims, other)]
    return first, [partner(j, dims, other) for j in first]


# ---- reading the key ----------------------------------------------------------------------------


def _read(raw: Any, sizes: Sizes) -> Rope | None:
    if raw is False:
        return None
    if raw is True:
        raw = {}
    elif isinstance(raw, int | float | str) and not isinstance(raw, bool):
        raw = {"theta": raw}
    if not isinstance(raw, dict):
        raise QkvcalcError("rope.not_object", value=shown(raw))
    for key in raw:
        if key not in KEYS:
            raise QkvcalcError("rope.unknown_key", key=str(key), known=", ".join(KEYS))
    theta = positive(raw.get("theta", 10000), "rope.theta").value
    style = raw.get("style", "half")
    if style not in ("half", "pairs"):
        raise QkvcalcError("rope.style", value=shown(style))
    dims = int(positive(raw.get("dims", sizes.d_k), "rope.dims", integer=True).value)
    if dims % 2 or dims > sizes.d_k:
        raise QkvcalcError("rope.dims", dims=dims, d_k=sizes.d_k)
    if "inv_freq" in raw:
        inv_freq = to_vector(raw["inv_freq"], "rope.inv_freq").values[0]
        if inv_freq.size != dims // 2:
            raise QkvcalcError(
                "variant.length",
                field="rope.inv_freq",
                length=inv_freq.size,
                count=dims // 2,
                what="dims/2",
            )
        given = True
    else:
        inv_freq = theta ** (-np.arange(0, dims, 2, dtype=np.float64) / dims)
        given = False
    factor = positive(raw.get("attention_factor", 1), "rope.attention_factor").value
    return Rope(theta, style, dims, inv_freq, factor, given)


def _echo(rope: Rope) -> dict[str, Any]:
    out: dict[str, Any] = {"theta": rope.theta, "style": rope.style, "dims": rope.dims}
    if rope.inv_freq_given:
        out["inv_freq"] = rope.inv_freq.tolist()
    if rope.attention_factor != 1:
        out["attention_factor"] = rope.attention_factor
    return out


# ---- the operation ------------------------------------------------------------------------------


def _compute(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d_k] -> [n, d_k], row i turned by the angles of position i
    angles = params["angles"] if rows is None else params["angles"][rows]
    return rotate(ops[0], angles, params["style"], params["dims"], params["factor"])


def _backward(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # a rotation's transpose is the rotation back: each pair of ∂L/∂x′ turned by −φ (times f)
    return (rotate(g, -params["angles"], params["style"], params["dims"], params["factor"]),)


def _grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[2,1]: 0.5×cos(1) + 0.25×sin(1) = 0.4805: a gradient turned back by −φ with its
    partner (a dimension past the rotary ones passes through)."""
    p = stage.params["of"]
    dims, kind = p["dims"], p["style"]
    if j >= dims:
        return None
    g = stage.operands[-1]
    k, other = pair_index(j, dims, kind), partner(j, dims, kind)
    phi = float(p["angles"][i, k])
    angle = style.num(phi)
    cos, sin = (r"\cos", r"\sin") if style.latex else ("cos", "sin")
    first = j < other  # the first of its pair: a = g_a·cos φ + g_b·sin φ
    sign = "+" if first else style.minus
    ga, gb = float(g[i, j]), float(g[i, other])
    turned = (
        f"{style.num(ga)}{style.times}{cos}({angle}) {sign} "
        f"{style.factor(gb)}{style.times}{sin}({angle})"
    )
    n, shown_phi = style.shown, style.shown(phi)
    shown = n(ga) * math.cos(shown_phi) + (1 if first else -1) * n(gb) * math.sin(shown_phi)
    if p["factor"] != 1:
        turned = f"{style.num(p['factor'])}{style.times}({turned})"
        shown *= n(p["factor"])
    return style.line(f"{style.at(i + 1, j + 1)}{turned}", shown, float(stage.value[i, j]), result)


def _feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    other = partner(j, params["dims"], params["style"])
    if other != j:
        yield 0, i, other


def _work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[2,1]: 0×cos(1) − 1×sin(1) = −0.8415   (φ = 1×1): a dimension turned with its partner
    by the angle of its pair. Dimensions past the rotary ones pass through (no arithmetic)."""
    p = stage.params
    dims, kind = p["dims"], p["style"]
    if j >= dims:
        return None
    (x,) = stage.operands
    k, other = pair_index(j, dims, kind), partner(j, dims, kind)
    theta = float(p["angles"][i, k])
    pos, omega = int(p["positions"][i]), float(p["inv_freq"][k])
    cos, sin = (r"\cos", r"\sin") if style.latex else ("cos", "sin")
    angle = style.num(theta)
    xa, xb = float(x[i, j]), float(x[i, other])
    a, b = style.factor(xa), style.factor(xb)
    first = j < other if kind == "half" else j % 2 == 0  # a′ = a·cos − b·sin; b′ = b·cos + a·sin
    n, shown_theta = style.shown, style.shown(theta)
    shown = n(xa) * math.cos(shown_theta) + (-1 if first else 1) * n(xb) * math.sin(shown_theta)
    if first:
        turned = f"{a}{style.times}{cos}({angle}) {style.minus} {b}{style.times}{sin}({angle})"
    else:
        turned = f"{a}{style.times}{cos}({angle}) + {b}{style.times}{sin}({angle})"
    if p["factor"] != 1:
        turned = f"{style.num(p['factor'])}{style.times}({turned})"
        shown *= n(p["factor"])
    angle_said = f"φ = {pos}{style.times}{style.num(omega)}"  # θ is the angle between q and k
    if style.latex:
        angle_said = rf"\varphi = {pos}{style.times}{style.num(omega)}"
    left = f"{style.at(i + 1, j + 1)}{turned}"
    line = style.line(left, shown, float(stage.value[i, j]), result)
    return type(line)(f"{line}   ({angle_said})", line.approx)


# ---- the stages ---------------------------------------------------------------------------------


def _turn(p: Any, rope: Rope, at: Turn) -> Spec:
    """q_rot (or k_rot): the side's rows, each turned at its own position."""
    if at.step is not None:  # a decode step: its new rows, at their positions
        notes: tuple[Msg, ...] = (
            Msg("note.decode_rope", positions=", ".join(map(str, at.positions.tolist()))),
        )
    elif at.side == "Q":
        notes = _notes(p, rope, at)
    else:
        notes = (Msg("note.rope_keys", positions=positions_text(at.rows, at.positions)),)
    return Spec(
        f"{at.side.lower()}_rot",
        at.h,
        "rope",
        (at.ref,),
        f"{at.side}_rot = RoPE({at.side}, pos)",
        at.rows,
        dim_labels(p.d_k),
        params={
            "style": rope.style,
            "dims": rope.dims,
            "factor": rope.attention_factor,
            "angles": rope.angles(at.positions),
            "positions": at.positions,
            "inv_freq": rope.inv_freq,
            "theta": None if rope.inv_freq_given else rope.theta,  # how --dtype makes inv_freq
        },
        notes=notes,
        symbol=f"{at.side}_rot",
        hint=("hint.rope", {"src": at.symbol}),
        letters=at.letters,
    )


def _notes(p: Any, rope: Rope, at: Turn) -> tuple[Msg, ...]:
    """How the rotation pairs the dimensions, the frequency of each pair, and the positions."""
    starts = range(0, rope.dims, 2) if rope.style == "pairs" else range(rope.dims // 2)
    pairs = [
        f"({j + 1},{partner(j, rope.dims, rope.style) + 1}) ω={rope.inv_freq[k]:.4g}"
        for k, j in enumerate(starts)
    ]
    notes = [
        Msg(
            "note.rope_pairs_" + rope.style,
            dims=rope.dims,
            half=rope.dims // 2,
            d_k=p.d_k,
            pairs=", ".join(pairs[:8]) + (" …" if len(pairs) > 8 else ""),
        ),
        Msg("note.rope_angle", positions=positions_text(at.rows, at.positions)),
    ]
    if rope.dims < p.d_k:
        notes.append(Msg("note.rope_partial", dims=rope.dims, d_k=p.d_k, first=rope.dims + 1))
    if rope.attention_factor != 1:
        notes.append(Msg("note.rope_factor", factor=f"{rope.attention_factor:g}"))
    return tuple(notes)


def _shift(p: Any, rope: Rope, h: int | None, before_q: Ref, before_k: Ref) -> Any:
    """A remark on the scores that shows RoPE's point: the score of a query and a key moved by
    the same offset stays the same (it depends only on the distance between their positions).
    It turns the last query and the first key, as they were before the rotation, again."""
    v = p.variants
    i, j = p.n - 1, 0
    pos_i, pos_j = int(v.positions[i]), int(v.key_positions[j])
    offset = 5

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        q, k = value_of(before_q)[i : i + 1], value_of(before_k)[j : j + 1]

        def score(a: int, b: int) -> float:
            turned_q = rotate(
                q, rope.angles(np.array([a])), rope.style, rope.dims, rope.attention_factor
            )
            turned_k = rotate(
                k, rope.angles(np.array([b])), rope.style, rope.dims, rope.attention_factor
            )
            return float(turned_q[0] @ turned_k[0])

        here, moved = score(pos_i, pos_j), score(pos_i + offset, pos_j + offset)
        return (
            Msg(
                "note.rope_shift",
                query=safe(p.tokens[i]),
                key=safe(p.source_tokens[j]),
                pos_q=pos_i,
                pos_k=pos_j,
                offset=offset,
                moved_q=pos_i + offset,
                moved_k=pos_j + offset,
                score=f"{here:.6g}",
                moved=f"{moved:.6g}",
                distance=pos_i - pos_j,
            ),
        )

    return remark


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The other pairing of the dimensions (half for pairs, pairs for half: they differ from
    four rotary dimensions on), and each pair turned backwards, by −θ."""
    p = stage.params
    style, dims, factor, angles = p["style"], p["dims"], p["factor"], p["angles"]
    other = "pairs" if style == "half" else "half"
    found: list[Candidate] = []
    for x in versions(stage.reads[0][0]):
        if dims >= 4:
            msg = Msg("mistake.rope_other_pairing_" + style, half=dims // 2)
            found.append(("rope_other_pairing", msg, rotate(x, angles, other, dims, factor)))
        back = rotate(x, -angles, style, dims, factor)
        found.append(("rope_turned_back", Msg("mistake.rope_turned_back"), back))
    return found


# ---- --format torch -----------------------------------------------------------------------------


def _torch(
    p: Any, rope: Rope, literal: Callable[[Any], str], num: Callable[[float], str]
) -> list[str]:
    r, v = rope, p.variants
    out = [
        f"# RoPE ({r.style}): the first {r.dims} dims of each head turn by position x frequency;",
        "# 'half' pairs dim i with i + dims/2 (rotate_half), 'pairs' 2i with 2i+1 (GPT-J).",
        f"inv_freq = t({literal(r.inv_freq)})",
        "",
        "",
        "def rope(x, positions):",
        "    # [1, heads, rows, d_k], [rows] -> the same, turned",
        "    angles = positions.to(torch.float64)[:, None] * inv_freq[None, :]",
        f"    cos, sin = {num(r.attention_factor)} * angles.cos(), "
        f"{num(r.attention_factor)} * angles.sin()",
        "    out = x.clone()",
    ]
    if r.style == "half":
        out += [
            f"    a, b = x[..., : {r.dims // 2}], x[..., {r.dims // 2} : {r.dims}]",
            f"    out[..., : {r.dims // 2}] = a * cos - b * sin",
            f"    out[..., {r.dims // 2} : {r.dims}] = b * cos + a * sin",
        ]
    else:
        out += [
            f"    a, b = x[..., 0:{r.dims}:2], x[..., 1:{r.dims}:2]",
            f"    out[..., 0:{r.dims}:2] = a * cos - b * sin",
            f"    out[..., 1:{r.dims}:2] = b * cos + a * sin",
        ]
    return [
        *out,
        "    return out",
        "",
        "",
        f"q = rope(q, torch.tensor({v.positions.tolist()}))",
        f"k = rope(k, torch.tensor({v.key_positions.tolist()}))",
        "",
    ]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) --------------------


def _lowp_angles(params: Params, r: Rounding) -> tuple[np.ndarray, np.ndarray, list[Msg], Params]:
    """cos and sin of each row's angles as the policy computes them, and what is said of it.
    eager (transformers' rotary embedding): position × inv_freq in float32, cos and sin in
    float32 times the attention factor, then rounded to the dtype. naive (a layer that keeps
    its positions and inv_freq in the dtype, as transformers' did before its issue 29285):
    the positions, inv_freq, their product, cos and sin each rounded to the dtype."""
    pos = np.asarray(params["positions"], dtype=np.float64)
    factor = params["factor"]
    notes: list[Msg] = []
    if r.policy == "naive":
        held = r.to(pos)
        moved = np.flatnonzero(held != pos) if r.rounds else np.array([], dtype=int)
        if moved.size:
            notes.append(
                Msg(
                    "precision.rope_positions",
                    dtype=str(r.dtype),
                    positions=", ".join(f"{pos[i]:g} → {held[i]:g}" for i in moved[:8])
                    + (" …" if moved.size > 8 else ""),
                )
            )
        omega = r.to(params["inv_freq"])
        angles = r.to(r.work(held)[:, None] * r.work(omega)[None, :])
        cos, sin = r.to(r.to(np.cos(angles)) * factor), r.to(r.to(np.sin(angles)) * factor)
        return cos, sin, notes, {"positions": held, "inv_freq": omega, "angles": angles}
    notes.append(Msg("precision.rope_float32", dtype=r.kept or str(r.dtype)))
    inv_freq = r.f32(params["inv_freq"])
    if params.get("theta") is not None and r.rounds:
        # transformers: 1 / θ^(arange(0, R, 2) / R), each step in float32
        step = r.f32(np.arange(0, params["dims"], 2) / params["dims"])
        inv_freq = r.f32(1 / r.f32(float(np.float32(params["theta"])) ** step))
    angles = r.f32(r.work(pos)[:, None] * r.work(inv_freq)[None, :])
    cos = r.keep(r.f32(r.work(r.f32(np.cos(angles))) * r.work(factor)))
    sin = r.keep(r.f32(r.work(r.f32(np.sin(angles))) * r.work(factor)))
    return cos, sin, notes, {"inv_freq": inv_freq, "angles": angles}


def _lowp(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """x·cos + rotate(x)·sin as transformers' apply_rotary_pos_emb writes it: each product
    and the sum rounded to the dtype (kept in float32 under scaled float8)."""
    x = ops[0]
    cos, sin, notes, held = _lowp_angles(params, r)
    dims = params["dims"]
    if params["style"] == "half":
        first, second = slice(0, dims // 2), slice(dims // 2, dims)
    else:
        first, second = slice(0, dims, 2), slice(1, dims, 2)
    a, b = x[:, first], x[:, second]

    def times(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return r.keep(r.work(u) * r.work(v))

    out = x.copy()
    out[:, first] = r.keep(r.work(times(a, cos)) + r.work(times(-b, sin)))
    out[:, second] = r.keep(r.work(times(b, cos)) + r.work(times(a, sin)))
    return Out(out, r.kept, notes=tuple(notes), params=held)


# ---- in PyTorch (--format torch): the same turn ----

TORCH_ROTATE = """\
def rotate(x, angles, style, dims, factor):
    \"\"\"RoPE: each pair (a, b) of the first dims turned by its angle, times the factor.\"\"\"
    cos, sin = factor * torch.cos(angles), factor * torch.sin(angles)
    if style == "half":
        first, second = slice(0, dims // 2), slice(dims // 2, dims)
    else:
        first, second = slice(0, dims, 2), slice(1, dims, 2)
    a, b = x[:, first], x[:, second]
    out = x.clone()
    out[:, first] = a * cos - b * sin
    out[:, second] = b * cos + a * sin
    return out
"""


def torch_turn(params: Params, lit: Literals) -> str:
    """The arguments after x and the angles: style, dims, factor."""
    return f"{params['style']!r}, {int(params['dims'])}, {lit.num(params['factor'])}"


def _torch_rope(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"rotate({names[0]}, {lit.array(params['angles'])}, {torch_turn(params, lit)})"


FEATURE = Feature(
    name="rope",
    read=_read,
    ops=(
        Op(
            "rope",
            _compute,
            _feeds,
            exact_stops="note.exact_stops_rope",
            rowwise=True,
            backward=_backward,
            grad_formula=lambda into, out, x, params: f"R(−φ)·{out}",
            grad_work=_grad_work,
            work=_work,
            lowp=_lowp,
            # a person's code (qkvcalc check): the pairs taken the other way
            in_code={"rope_pairs": {"pairs": _other_pairs}},
            torch=_torch_rope,
            torch_defs=TORCH_ROTATE,
        ),
    ),
    turn=_turn,
    scores_notes=lambda rope: (Msg("note.rope_scores"),),
    scores_remark=_shift,
    mistakes=(Mistakes("rope", ("rope_other_pairing", "rope_turned_back"), _mistakes),),
    elements=lambda rope, n, m, d_k: (n + m) * d_k,
    header=lambda r: [
        ("ui.variant.rope", {"theta": f"{r.theta:g}", "style": r.style, "dims": r.dims})
    ],
    echo=_echo,
    order_reason="shuffle.by_rope",
    words=("RoPE",),
    worksheet_notes=(
        "note.rope_pairs_half",
        "note.rope_pairs_pairs",
        "note.rope_angle",
        "note.rope_keys",
        "note.rope_partial",
        "note.rope_factor",
        "note.rope_scores",
        "note.decode_rope",
        "note.exact_stops_rope",
    ),
    torch_qk=_torch,
    torch_module_gap="it has no rotary embedding between its projections and Q·Kᵀ",
)
