"""The norm over the joined heads (BitNet's attn_sub_norm): after every head, each token's row of
all the heads' outputs side by side (H·d_v numbers) divided by its root mean square and times
a learned weight, before W_O mixes them.

    "sub_norm": [H·d_v] (the weight), "sub_norm_eps": ε (optional, 1e-5: BitNet's rms_norm_eps)
    after every head:  sub_rms     r = √(mean(concat(out_1, …, out_H)²) + ε), one per row
                       sub_normed  head h's output / r × its columns of the weight
    then the concat and W_O as for any layer.

transformers' BitNetAttention computes the same as `self.attn_sub_norm(attn_output)` on the
heads joined, then `self.o_proj`. Its ops are lightning attention's norm over the joined heads
(qkvcalc/ops/lightning.py: the root, its application, their backward), with BitNet's words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import to_vector
from qkvcalc.labels import shown
from qkvcalc.ops import lightning
from qkvcalc.ops import rounding as lowp
from qkvcalc.ops.base import Candidate, Feature, Learns, Mistakes, Sizes
from qkvcalc.ops.op import Op, Params
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Ref, Spec, dim_labels, ref
from qkvcalc.records import NamedTuple

EPS = 1e-5  # BitNetConfig's rms_norm_eps
RMS, NORMED, GRAD_WEIGHT = "sub_rms", "sub_normed", "grad_sub_norm"


class SubNorm(NamedTuple):
    weight: np.ndarray  # [H·d_v]
    eps: float
    eps_given: bool
    heads: int


# ---- reading the keys ---------------------------------------------------------------------------


def _read(given: dict[str, Any], sizes: Sizes) -> SubNorm:
    if "sub_norm" not in given:
        raise QkvcalcError("sub_norm.eps_alone")
    w = to_vector(given["sub_norm"], "sub_norm").values[0]
    width = sizes.heads * sizes.d_v
    if w.shape[0] != width:
        raise QkvcalcError(
            "sub_norm.length", length=w.shape[0], width=width, heads=sizes.heads, d_v=sizes.d_v
        )
    eps = given.get("sub_norm_eps", EPS)
    if isinstance(eps, bool) or not isinstance(eps, int | float) or not 0 < eps < float("inf"):
        raise QkvcalcError("sub_norm.eps", value=shown(eps))
    weight = np.asarray(w, dtype=np.float64)
    return SubNorm(weight, float(eps), "sub_norm_eps" in given, sizes.heads)


def _echo(value: SubNorm) -> dict[str, Any]:
    out: dict[str, Any] = {"sub_norm": value.weight.tolist()}
    if value.eps_given:
        out["sub_norm_eps"] = value.eps
    return out


# ---- what `qkvcalc train` steps of it (Feature.learns): the norm's weight, w_sub -------------


def _moved(value: SubNorm, weights: dict[str, np.ndarray]) -> SubNorm:
    """The norm with the weight of `weights` in place of its own (plain floats)."""
    if "wsub" not in weights:
        return value
    return value._replace(weight=np.array(weights["wsub"], dtype=float).reshape(-1))


LEARNS = Learns(
    ("wsub",),  # the weight, 1 × H·d_v (shown as w_sub; --freeze sub_norm takes it too)
    lambda value: {"wsub": value.weight[None, :]},
    lambda value: {"wsub": GRAD_WEIGHT},
    lambda value, name, grad: grad,  # already 1 × H·d_v, the weight's layout
    _moved,
    also=(("subnorm", "wsub"),),  # --freeze sub_norm: the input's key for the weight
)


# ---- the stages ---------------------------------------------------------------------------------


def _joined(p: Any, value: SubNorm, heads: list[Ref]) -> tuple[list[Spec], list[Ref]]:
    """After every head: each row's root over the heads side by side, then each head's output
    divided by it, times its columns of the weight."""
    width = p.heads * p.d_v
    rms = Spec(
        RMS,
        None,
        "sub_rms",
        tuple(heads),
        "r = √(mean(concat(out_1, …, out_H)²) + ε)",
        p.tokens,
        ("r",),
        params={"eps": value.eps, "normed": NORMED},
        notes=(Msg("note.sub_rms", eps=f"{value.eps:g}", width=width),),
        symbol="r",
        letters="n×1",
    )
    specs = [rms]
    for h, head in enumerate(heads, start=1):
        cols = slice((h - 1) * p.d_v, h * p.d_v)
        specs.append(
            Spec(
                NORMED,
                h,
                "sub_norm_apply",
                (head, rms.ref),
                f"out_N = out / r ⊙ w[{cols.start + 1}–{cols.stop}]",
                p.tokens,
                dim_labels(p.d_v),
                params={"weight": value.weight[cols], "eps": value.eps},
                symbol="out_N",
                letters="n×d_v",
            )
        )
    return specs, [s.ref for s in specs[1:]]


def _grads(p: Any, value: SubNorm, softmaxes: list[tuple[Ref, Ref]]) -> list[Spec]:
    """The weight's gradient: dw = Σᵢ d(out_N)ᵢ ⊙ outᵢ / rᵢ, each head's columns side by side."""
    heads = range(1, p.heads + 1)
    reads = [r for h in heads for r in (ref(f"grad_{NORMED}", h), ref(ids.OUTPUT, h))]
    return [
        Spec(
            GRAD_WEIGHT,
            None,
            "norm_weight_grad",
            (ref(RMS), *reads),
            "dw = Σᵢ d(out_N)ᵢ ⊙ outᵢ / rᵢ",
            ("dw",),
            dim_labels(len(value.weight)),
            symbol="dw",
            cell="dw[{j}]",
            letters="1×H·d_v",
        )
    ]


# ---- the quiz's named mistake -------------------------------------------------------------------


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """Each head normalized by its own root (d_v numbers), not the root of the joined row."""
    w, eps = stage.params["weight"], stage.params["eps"]
    found: list[Candidate] = []
    for out in versions(stage.reads[0][0]):
        own = np.sqrt((out * out).mean(axis=1, keepdims=True) + eps)
        found.append(("sub_norm_per_head", Msg("mistake.sub_norm_per_head"), out / own * w))
    return found


# ---- how it rounds in a low-precision dtype (--dtype): BitNetRMSNorm, the same steps as
# MiniMaxRMSNorm (the input in float32, x·rsqrt(mean(x²) + ε) in float32, cast to the dtype,
# then the weight in the dtype times it): lightning's rules, said of BitNet ----


def _lowp_rms(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    out = lightning._lowp_rms(ops, params, r)
    if r.policy == "naive":
        return out
    return out._replace(notes=(Msg("precision.sub_rms_eager", dtype=r.kept or str(r.dtype)),))


def _lowp_apply(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    out = lightning._lowp_apply(ops, params, r)
    if r.policy == "naive":
        return out
    note = Msg("precision.sub_normed_eager", dtype=r.kept or str(r.dtype))
    return out._replace(notes=(note,))


# ---- the torch script, the header ---------------------------------------------------------------


def _torch(p: Any, value: SubNorm, literal: Callable[[Any], str]) -> list[str]:
    return [
        "# The norm over the joined heads (BitNet's attn_sub_norm): each token's H*d_v outputs",
        "# side by side, an RMSNorm with its weight, before o_proj.",
        f"w_sub = t({literal(value.weight)})  # [H*d_v]",
        "joined = heads[0].transpose(0, 1).reshape(n, H * d_v)",
        f"joined = joined * torch.rsqrt(joined.pow(2).mean(-1, keepdim=True) + {value.eps!r})",
        "heads = (w_sub * joined).reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
    ]


def _header(value: SubNorm) -> list[tuple[str, dict[str, Any]]]:
    return [("ui.variant.sub_norm", {"eps": f"{value.eps:g}"})]


def _op(name: str, base: str, lowp_rule: Any, exact_stops: str = "") -> Op:
    """Lightning's op `base` under BitNet's name, with BitNet's rounding rule."""
    found = next(op for op in lightning.FEATURE.ops if op.name == base)
    return found._replace(name=name, lowp=lowp_rule, exact_stops=exact_stops or found.exact_stops)


FEATURE = Feature(
    name="sub_norm",
    keys=("sub_norm", "sub_norm_eps"),
    read=_read,
    ops=(
        _op("sub_rms", "joint_rms", _lowp_rms, "note.exact_stops_root"),
        # the backward's ops (rms_share, rms_back, norm_weight_grad) are lightning's own,
        # named by its plan_back rules: the op table finds them among every feature's
        _op("sub_norm_apply", "rms_apply", _lowp_apply),
    ),
    mistakes=(Mistakes("sub_norm_apply", ("sub_norm_per_head",), _mistakes),),
    elements=lambda value, n, m, d_k: n + n * len(value.weight) // value.heads,
    header=_header,
    echo=_echo,
    joined=_joined,
    joins=lambda value: True,
    grads=_grads,
    torch_heads=_torch,
    torch_grads=(("dw_sub", "w_sub", GRAD_WEIGHT, True),),
    torch_module_gap="it has no norm over the joined heads: it joins the heads as they are",
    refuses=(("wg", "sub_norm.with_gate"), ("differential", "sub_norm.with_differential")),
    learns=LEARNS,
)
