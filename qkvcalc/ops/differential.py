"""Differential attention (DiffLlama; Ye et al., "Differential Transformer", 2024): the heads
work in pairs, and each pair subtracts one attention map from the other, so that the attention
both maps give to irrelevant keys (the "noise") cancels out.

    "differential": {"lambda": λ, "lambda_init": λ_init, "eps": ε (default 1e-5)}

With H heads (H even), head i pairs with head i + H/2 (i = 1 … H/2); both read the values
V''ᵢ = [Vᵢ | V_{i+H/2}] side by side (2·d_v columns). Per pair i, after every head's weights:

    diff_weights   Δᵢ = Aᵢ − λ·A_{i+H/2}                    n×m
    diff_v         V''ᵢ = [Vᵢ | V_{i+H/2}]                   m×2d_v
    diff_output    Dᵢ = Δᵢ·V''ᵢ                              n×2d_v
    diff_norm      Nᵢ = Dᵢ / √(mean(Dᵢ²) + ε)   (each row)   n×2d_v
    diff_scaled    (1 − λ_init)·Nᵢ                           the concat reads these

The concat joins the H/2 pairs' 2·d_v columns: H·d_v, as wide as H plain heads, so W_O keeps
its shape. Each head's own output A·V is still computed (the plain head's), and unused.

transformers' DiffLlamaAttention computes the same: two attention calls over the two halves of
V (split along the K/V heads, so that query head i's halves are exactly Vᵢ and V_{i+H/2}),
then `out₁ − λ·out₂` over the two halves of the heads, an RMSNorm of 2·head_dim without a
weight, times (1 − λ_init). Its λ = e^(Σ λ_q1·λ_k1) − e^(Σ λ_q2·λ_k2) + λ_init and
λ_init = 0.8 − 0.6·e^(−0.3·layer) are read here as the two numbers (qkvcalc extract computes
them as the module does, its sums in float32).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import cell, positive
from qkvcalc.labels import shown
from qkvcalc.ops import row_rms
from qkvcalc.ops.base import Candidate, Feature, JoinWords, Mistakes, Sizes
from qkvcalc.ops.op import Back, Feeds, Op, Params, Shapes, same_cell, whole_row
from qkvcalc.ops.rounding import SHOWN, Out, Rounding, product
from qkvcalc.plan.specs import Ref, Spec, d, dim_labels, span
from qkvcalc.records import NamedTuple

SETTINGS = ("lambda", "lambda_init", "eps")
EPS = 1e-5  # DiffLlamaConfig's rms_norm_eps
PAIR = "pair"  # the unit its pair stages' head number counts (Spec.unit): 'pair 1 of 2'


class Differential(NamedTuple):
    lam: float  # λ: how much of the second map is taken away
    init: float  # λ_init: the norm's output is scaled by 1 − λ_init
    eps: float  # the group norm's ε
    eps_given: bool  # the echo repeats it only when it was given


# ---- reading the key ----------------------------------------------------------------------------


def _number(raw: Any, field: str) -> float:
    """One number (a list is refused: [0.5, 7] is not λ = 0.5)."""
    return cell(raw, field, "", False).value


def _read(raw: Any, sizes: Sizes) -> Differential:
    if not isinstance(raw, dict):
        raise QkvcalcError("differential.not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            known = ", ".join(SETTINGS)
            raise QkvcalcError("differential.unknown_key", key=shown(key), known=known)
    if "lambda" not in raw or "lambda_init" not in raw:
        raise QkvcalcError("differential.needs_both")
    if sizes.heads % 2:
        raise QkvcalcError("differential.heads_odd", heads=sizes.heads)
    lam = _number(raw["lambda"], "differential.lambda")
    init = _number(raw["lambda_init"], "differential.lambda_init")
    eps = EPS
    if "eps" in raw:
        eps = float(positive(raw["eps"], "differential.eps").value)
    return Differential(lam, init, eps, "eps" in raw)


def _echo(diff: Differential) -> dict[str, Any]:
    out: dict[str, Any] = {"lambda": diff.lam, "lambda_init": diff.init}
    if diff.eps_given:
        out["eps"] = diff.eps
    return out


# ---- the stages ---------------------------------------------------------------------------------


def _pair(p: Any, diff: Differential, i: int) -> list[Spec]:
    """Pair i's stages: Δ = Aᵢ − λ·A_{i+H/2}, V'' = [Vᵢ | V_{i+H/2}], D = Δ·V'', its norm, its
    scaling."""
    j = i + p.heads // 2
    rows, keys, wide = p.tokens, p.source_tokens, dim_labels(2 * p.d_v)
    maps = Spec(
        "diff_weights",
        i,
        "diff_maps",
        (("weights", i), ("weights", j)),
        f"Δ_{i} = A_{i} − λ·A_{j}",
        rows,
        keys,
        params={"lambda": diff.lam},
        notes=(Msg("note.diff_pair", i=i, j=j, lam=f"{diff.lam:.6g}"),),
        symbol="Δ",
        letters="n×m",
        hint=("hint.diff_weights", {"head": i, "partner": j}),
    )
    values = Spec(
        "diff_v",
        i,
        "diff_join",
        (("v", i), ("v", j)),
        f"V''_{i} = [V_{i} | V_{j}]",
        keys,
        wide,
        notes=(Msg("note.diff_v", i=i, j=j, first=span(0, p.d_v), second=span(p.d_v, p.d_v)),),
        symbol="V''",
        letters="m×2d_v",
        hint=("hint.diff_v", {"head": i, "partner": j}),
    )
    output = Spec(
        "diff_output",
        i,
        "matmul",
        (maps.ref, values.ref),
        "D = Δ·V''",
        rows,
        wide,
        names=("Δ", "V''"),
        inner=keys,
        cell="D[{i},{j}]",
        symbol="D",
        letters="n×2d_v",
        hint=("hint.output", {}),
    )
    return [maps, values, output, *_norm(diff, i, output)]


def _norm(diff: Differential, i: int, output: Spec) -> list[Spec]:
    norm = Spec(
        "diff_norm",
        i,
        "group_rms",
        (output.ref,),
        "N = D / √(mean(D²) + ε)",
        output.rows,
        output.cols,
        params={"eps": diff.eps},
        notes=(Msg("note.diff_norm", eps=f"{diff.eps:g}", width=len(output.cols)),),
        symbol="N",
        letters="n×2d_v",
        hint=("hint.diff_norm", {}),
    )
    factor = 1 - diff.init
    scaled = Spec(
        "diff_scaled",
        i,
        "diff_scale",
        (norm.ref,),
        f"(1 − λ_init)·N = {factor:.6g}·N",
        output.rows,
        output.cols,
        params={"factor": factor},
        notes=(Msg("note.diff_scaled", init=f"{diff.init:.6g}", factor=f"{factor:.6g}"),),
        symbol="out_diff",
        letters="n×2d_v",
        hint=("hint.diff_scaled", {}),
    )
    return [norm, scaled]


def _joined(p: Any, diff: Differential, heads: list[Ref]) -> tuple[list[Spec], list[Ref]]:
    """After every head: each pair's stages; the concat reads the pairs' scaled outputs, not
    the heads' own (`heads`)."""
    specs: list[Spec] = []
    reads: list[Ref] = []
    for i in range(1, p.heads // 2 + 1):
        pair = [replace(spec, unit=PAIR) for spec in _pair(p, diff, i)]  # its head counts pairs
        specs += pair
        reads.append(pair[-1].ref)  # its scaled output
    return specs, reads


# ---- the operations -----------------------------------------------------------------------------


def _maps(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] − λ·[n, m] -> [n, m]
    return ops[0] - params["lambda"] * ops[1]


def _maps_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    return g, -params["lambda"] * g


def _join(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [m, d_v] | [m, d_v] -> [m, 2·d_v]
    return np.hstack([ops[0], ops[1]])


def _join_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    width = shapes[0][1]
    yield j // width, i, j % width


def _join_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    width = ops[0].shape[1]
    return g[:, :width], g[:, width:]


def _scale(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return params["factor"] * ops[0]


def _scale_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    return (params["factor"] * g,)


def _two_cells(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j


# ---- the backward's own stages (the walk plans them: Op.plan_back) ------------------------------


def _maps_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """dAᵢ = dΔ and dA_{i+H/2} = −λ·dΔ: each map's gradient, for its softmax's backward."""
    first, second = (back.by[r] for r in at.operands)
    lam = at.params["lambda"]
    return [
        Spec(
            "grad_weights",
            first.head,
            "copy",
            (g,),
            f"dA_{first.head} = dΔ_{at.head}",
            at.rows,
            at.cols,
            topic="grad_weights.diff_first",
            symbol="dA",
            letters=at.letters,
        ),
        Spec(
            "grad_weights",
            second.head,
            "diff_scale",
            (g,),
            f"dA_{second.head} = −λ·dΔ_{at.head}",
            at.rows,
            at.cols,
            params={"factor": -lam},
            topic="grad_weights.diff_second",
            symbol="dA",
            letters=at.letters,
        ),
    ]


def _join_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """dVᵢ and dV_{i+H/2}: the two halves of dV''."""
    out = []
    for k, r in enumerate(at.operands):
        v = back.by[r]
        width = len(v.cols)
        cols = slice(k * width, (k + 1) * width)
        out.append(
            Spec(
                f"grad_{v.id}",
                v.head,
                "cut",
                (g,),
                f"{d(v.symbol)}_{v.head} = dV''_{at.head}[:, {span(cols.start, width)}]",
                v.rows,
                v.cols,
                params={"cols": cols},
                topic="grad_v.diff",
                symbol=d(v.symbol),
                letters=v.letters,
            )
        )
    return out


# ---- each cell's arithmetic ---------------------------------------------------------------------


def _maps_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.6 − 0.3 × 0.25 = 0.525"""
    a, b = (float(o[i, j]) for o in stage.operands)
    lam = float(stage.params["lambda"])
    left = (
        f"{style.at(i + 1, j + 1)}{style.num(a)} {style.minus} "
        f"{style.factor(lam)}{style.times}{style.factor(b)}"
    )
    n = style.shown
    return style.line(left, n(a) - n(lam) * n(b), float(stage.value[i, j]), result)


def _scale_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.8 × 1.2649 = 1.0119"""
    (x,) = stage.operands
    c, v = float(stage.params["factor"]), float(x[i, j])
    left = f"{style.at(i + 1, j + 1)}{style.factor(c)}{style.times}{style.factor(v)}"
    return style.line(left, style.shown(c) * style.shown(v), float(stage.value[i, j]), result)


def _scale_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.8 × 0.25 = 0.2: the gradient coming in times the constant."""
    g = stage.operands[-1]
    c, gij = float(stage.params["of"]["factor"]), float(g[i, j])
    left = f"{style.at(i + 1, j + 1)}{style.factor(c)}{style.times}{style.factor(gij)}"
    return style.line(left, style.shown(c) * style.shown(gij), float(stage.value[i, j]), result)


# ---- the quiz's named mistakes ------------------------------------------------------------------


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """λ left out (Aᵢ − A_{i+H/2}), or the second map added instead of taken away."""
    if len(stage.operands) != 2:
        return []
    first, second = stage.operands
    lam = stage.params["lambda"]
    found: list[Candidate] = [
        ("diff_lambda_missing", Msg("mistake.diff_lambda_missing"), first - second),
        ("diff_added", Msg("mistake.diff_added"), first + lam * second),
    ]
    return found


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----------------------
#
# eager is DiffLlama's eager attention: it never forms Δ. Each head's weights (the dtype's)
# multiply V'' in its own attention call (summed in float32, rounded); λ, a tensor in the dtype,
# times the second head's output, rounded; the first's less that, rounded; then the group norm
# (torch's RMSNorm without a weight: float32 inside, rounded once) and (1 − λ_init) times it, a
# Python number, in float32, rounded. naive follows the stages, every op in the dtype: Δ = Aᵢ −
# λ·A_{i+H/2} (the product and the difference each rounded), D = Δ·V'' as any product, the norm
# by hand. --policy sdpa is refused (DiffLlama would call the kernel twice).


def _num(x: float) -> str:
    return f"{x:.6g}".replace("-", "−")


def _lowp_maps(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    first, second = ops
    lam = r.to(np.float64(params["lambda"]))  # DiffLlama's λ: a tensor in the dtype
    said = {"dtype": str(r.dtype), "lam": _num(float(lam))}
    held = {"lambda": float(lam)}  # what the cell arithmetic shows
    if r.policy == "naive":
        value = r.to(r.work(first) - r.work(r.to(r.work(lam) * r.work(second))))
        return Out(value, notes=(Msg("precision.diff_maps_naive", **said),), params=held)

    def pair(operands: Sequence[np.ndarray], rounding: Rounding) -> Out:
        return _lowp_pair(first, second, lam, operands[1], rounding)

    shown = r.f32(r.work(first) - r.work(lam) * r.work(second))
    note = Msg("precision.diff_maps_eager", **said)
    return Out(shown, SHOWN, notes=(note,), params=held, product=pair)


def _lowp_pair(
    first: np.ndarray, second: np.ndarray, lam: np.ndarray, v: np.ndarray, r: Rounding
) -> Out:
    """D as DiffLlama computes it: Aᵢ·V'' and A_{i+H/2}·V'' (each its own attention call),
    then the first less λ times the second, each rounded."""
    one, two = product(first, v, None, r), product(second, v, None, r)
    taken = r.keep(r.work(lam) * r.work(two.value))
    value = r.keep(r.work(one.value) - r.work(taken))
    note = Msg("precision.diff_output_eager", dtype=r.kept or str(r.dtype))
    return Out(value, r.kept, notes=(note, *one.notes, *two.notes))


def _lowp_join(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    return Out(np.hstack(list(ops)), r.kept)  # the two heads' values side by side: moved


def _lowp_scale(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # (1 − λ_init) * the norm: torch multiplies a tensor by a Python number in float32
    factor = params["factor"]
    value = r.keep(r.work(ops[0]) * r.work(factor))
    said = {"factor": _num(float(np.float32(factor))), "dtype": r.kept or str(r.dtype)}
    return Out(value, r.kept, notes=(Msg("precision.diff_scale", **said),))


# ---- the torch script, the header ---------------------------------------------------------------


def _torch(p: Any, diff: Differential, literal: Callable[[Any], str]) -> list[str]:
    return [
        "# Differential attention (DiffLlama): head i pairs with head i + H/2, both read",
        "# V'' = [V_i | V_{i+H/2}]; (A_i - lambda * A_{i+H/2}) @ V'', an RMSNorm of each row,",
        "# times (1 - lambda_init). transformers: two attention calls over the halves of V.",
        f"lam, lam_init, eps = {diff.lam!r}, {diff.init!r}, {diff.eps!r}",
        "half = H // 2",
        "v_all = v.repeat_interleave(H // G, dim=1)  # [1, H, m, d_v]",
        "v_pair = torch.cat([v_all[:, :half], v_all[:, half:]], dim=-1)  # [1, H/2, m, 2*d_v]",
        "heads = (weights[:, :half] - lam * weights[:, half:]) @ v_pair  # [1, H/2, n, 2*d_v]",
        "heads = heads / torch.sqrt(heads.pow(2).mean(-1, keepdim=True) + eps)",
        "heads = (1 - lam_init) * heads  # the concat below joins the H/2 pairs",
    ]


def _header(diff: Differential) -> list[tuple[str, dict[str, Any]]]:
    return [("ui.variant.differential", {"lam": f"{diff.lam:.6g}", "init": f"{diff.init:.6g}"})]


FEATURE = Feature(
    name="differential",
    read=_read,
    # its pairs are joined after the heads' outputs, where the gate would multiply each head's
    # output: the two are not computed together (DiffLlama has no gate)
    refuses=(("wg", "differential.with_gate"),),
    ops=(
        Op(
            "diff_maps",
            _maps,
            _two_cells,
            backward=_maps_back,
            work=_maps_work,
            plan_back=_maps_grads,
            overflow=lambda params: False,
            lowp=_lowp_maps,
            torch=lambda params, names, lit: (
                f"{names[0]} - {lit.num(params['lambda'])} * {names[1]}"
            ),
        ),
        Op(
            "diff_join",
            _join,
            _join_feeds,
            backward=_join_back,
            plan_back=_join_grads,
            overflow=lambda params: False,
            lowp=_lowp_join,
            torch=lambda params, names, lit: f"torch.hstack([{names[0]}, {names[1]}])",
        ),
        Op(
            "group_rms",
            row_rms.forward,
            whole_row,
            exact_stops="note.exact_stops_root",
            rowwise=True,
            grad_reads=True,
            backward=row_rms.backward,
            grad_formula=lambda into, out, x, params: (
                f"ρ·{out} − {x}·ρ³·mean({x} ⊙ {out}), ρ = 1/√(mean({x}²) + ε)"
            ),
            work=row_rms.work,
            grad_work=row_rms.grad_work,
            overflow=lambda params: False,
            lowp=row_rms.lowp("precision.diff_norm_eager", "precision.diff_norm_naive"),
            torch=row_rms.torch_rms,
        ),
        Op(
            "diff_scale",
            _scale,
            same_cell,
            rowwise=True,
            backward=_scale_back,
            grad_formula=lambda into, out, x, params: f"{params['factor']:.6g}·{out}",
            grad_work=_scale_grad_work,
            work=_scale_work,
            overflow=lambda params: False,
            lowp=_lowp_scale,
            torch=lambda params, names, lit: f"{lit.num(params['factor'])} * {names[0]}",
        ),
    ),
    mistakes=(Mistakes("diff_maps", ("diff_lambda_missing", "diff_added"), _mistakes),),
    elements=lambda diff, n, m, d_k: n * m // 2 + 4 * n * d_k + m * d_k,
    header=_header,
    echo=_echo,
    joined=_joined,
    joined_words=JoinWords(
        "concat(pair_1, …, pair_H/2)",
        "concat.pairs",
        "note.concat_columns_pairs",
        "ui.concat_span_pair",
        "hint.concat_pairs",
        "grad_output.pair",
        "output.final_pairs",
        "output.concat_pairs",
    ),
    torch_heads=_torch,
    torch_weights=True,
    torch_module_gap="it has no differential attention: each head's own map alone",
    no_decode="differential.decode",
    no_train="differential.train",
    no_tiles="differential.tiles",
    no_sdpa="precision.sdpa_differential",
)
