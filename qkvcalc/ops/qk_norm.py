"""q/k norm (Qwen3, Gemma 3, OLMo 2, Cohere, StableLM, Phi, HunYuan): each head's q and k rows
normalised, then scaled by a learned weight per dimension, so that no query or key can grow the
logits without bound.

    "q_norm": [w…] (d_k numbers, one vector for every head) or H rows of d_k (one per query
    head; k_norm: G rows, one per K/V head), "norm_eps": ε (default 1e-6),
    "qk_norm": {"kind": "rms" | "layer", "over": "head" | "projection",
                "bias": {"q": […], "k": […]}, "after_rope": false}

    RMSNorm(x)   = x / √(mean(x²) + ε) · w                        (kind "rms", the default)
    LayerNorm(x) = (x − μ) / √(mean((x − μ)²) + ε) · w + b        (kind "layer")

"over": "projection" takes μ and the mean of the squares over the whole projection row, all
heads' H·d_k (G·d_k) numbers (OLMo 2), with weights of that length; "after_rope": true puts the
norm after the rotation (HunYuan). Stages `q_norm`, `k_norm`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import positive, to_matrix
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes, Turn
from qkvcalc.ops.op import Literals, Op, Params, whole_row
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan.specs import Const, Spec, dim_labels, head_slices
from qkvcalc.records import NamedTuple

KINDS = ("rms", "layer")
OVER = ("head", "projection")
SETTINGS = ("kind", "over", "bias", "after_rope")


class Norms(NamedTuple):
    q: np.ndarray | None  # as given: [d_k], [H, d_k], or over the projection [H·d_k]
    k: np.ndarray | None  # [d_k], [G, d_k] or [G·d_k]
    eps: float
    kind: str = "rms"
    over: str = "head"
    q_bias: np.ndarray | None = None  # LayerNorm only, the shapes of q and k
    k_bias: np.ndarray | None = None
    after_rope: bool = False
    given: bool = False  # whether "qk_norm" was given (the echo repeats it)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm of each row (Qwen3's q/k norm): x / √(mean(x²) + ε) · w."""
    # [n, d_k] / [n, 1] * [d_k] -> [n, d_k]
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    """LayerNorm of each row (Cohere's, StableLM's, Phi's q/k norm): (x − μ)/σ · w + b."""
    mu, sigma = _mu_sigma(x, eps)
    return (x - mu) / sigma * weight + bias


def _mu_sigma(row: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Each row's mean μ and σ = √(mean((x − μ)²) + ε): [n, 1] each."""
    mu = np.mean(row, axis=1, keepdims=True)
    return mu, np.sqrt(np.mean((row - mu) ** 2, axis=1, keepdims=True) + eps)


# ---- reading the keys -------------------------------------------------------------------------


def _settings(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise QkvcalcError("qk_norm.not_object", value=shown(raw))
    for key in raw:
        if key not in SETTINGS:
            raise QkvcalcError("qk_norm.unknown_key", key=shown(key), known=", ".join(SETTINGS))
    kind, over = raw.get("kind", "rms"), raw.get("over", "head")
    if kind not in KINDS:
        raise QkvcalcError("qk_norm.kind", value=shown(kind))
    if over not in OVER:
        raise QkvcalcError("qk_norm.over", value=shown(over))
    after = raw.get("after_rope", False)
    if not isinstance(after, bool):
        raise QkvcalcError("qk_norm.after_rope", value=shown(after))
    bias = raw.get("bias")
    if bias is not None:
        if kind != "layer":
            raise QkvcalcError("qk_norm.bias_needs_layer")
        if not isinstance(bias, dict) or not set(bias) <= {"q", "k"}:
            raise QkvcalcError("qk_norm.bias_not_object", value=shown(bias))
    return {"kind": kind, "over": over, "after_rope": after, "bias": bias or {}}


def _weights(raw: Any, field: str, d_k: int, count: int, over: str, letter: str) -> np.ndarray:
    """One side's weights (or biases), checked against d_k and the heads of its side."""
    values = to_matrix(raw, field).values
    if over == "projection":
        if values.shape != (1, count * d_k):
            raise QkvcalcError(
                "qk_norm.projection_shape",
                field=field,
                shape=shape_text(values.shape),
                count=count,
                d_k=d_k,
                width=count * d_k,
                letter=letter,
            )
        return values[0]
    if values.shape == (1, d_k):
        return values[0]
    if values.shape != (count, d_k):
        flat = values.shape[0] == 1  # a list of numbers: say how many
        raise QkvcalcError(
            "qk_norm.length" if flat else "qk_norm.shape",
            length=values.shape[1],
            field=field,
            shape=shape_text(values.shape),
            count=count,
            d_k=d_k,
            letter=letter,
        )
    return values


def _read(given: dict[str, Any], sizes: Sizes) -> Norms | None:
    eps = positive(given["norm_eps"], "norm_eps").value if "norm_eps" in given else 1e-6
    s = _settings(given["qk_norm"]) if "qk_norm" in given else _settings({})
    if "q_norm" not in given and "k_norm" not in given:
        if "qk_norm" in given:
            raise QkvcalcError("qk_norm.needs_weights")
        return None
    counts = {"q": sizes.heads, "k": sizes.kv_heads}
    letters = {"q": "H", "k": "G"}

    def side(name: str, raw: Any, field: str) -> np.ndarray | None:
        if raw is None:
            return None
        return _weights(raw, field, sizes.d_k, counts[name], s["over"], letters[name])

    q = side("q", given.get("q_norm"), "q_norm")
    k = side("k", given.get("k_norm"), "k_norm")
    q_bias = side("q", s["bias"].get("q"), "qk_norm.bias.q")
    k_bias = side("k", s["bias"].get("k"), "qk_norm.bias.k")
    for b, w, name in ((q_bias, q, "q"), (k_bias, k, "k")):
        if b is not None and w is None:
            raise QkvcalcError("qk_norm.bias_without_weight", side=name)
    return Norms(
        q, k, eps, s["kind"], s["over"], q_bias, k_bias, s["after_rope"], "qk_norm" in given
    )


def _echo(norms: Norms) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if norms.q is not None:
        out["q_norm"] = norms.q
    if norms.k is not None:
        out["k_norm"] = norms.k
    out["norm_eps"] = norms.eps
    if norms.given:
        bias = {s: b for s, b in (("q", norms.q_bias), ("k", norms.k_bias)) if b is not None}
        out["qk_norm"] = {
            "kind": norms.kind,
            "over": norms.over,
            "after_rope": norms.after_rope,
            **({"bias": {s: b.tolist() for s, b in bias.items()}} if bias else {}),
        }
    return out


def _of_head(values: np.ndarray | None, over: str, index: int, d_k: int) -> np.ndarray | None:
    """The numbers of head `index` (1-based; its K/V head for k): the one vector, its row, or
    its d_k numbers of the projection's."""
    if values is None:
        return None
    if over == "projection":
        return values[(index - 1) * d_k : index * d_k]
    return values[index - 1] if values.ndim == 2 else values


# ---- the ops ----------------------------------------------------------------------------------


def _stats_rows(ops: Sequence[np.ndarray], rows: np.ndarray | None) -> np.ndarray:
    """Where a row's statistics come from: the row itself, or (over the projection) the whole
    projection row, the second operand."""
    if len(ops) == 1:
        return ops[0]
    return ops[1] if rows is None else ops[1][rows]


def _compute_rms(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    full = _stats_rows(ops, rows)
    return (
        ops[0]
        / np.sqrt(np.mean(full * full, axis=1, keepdims=True) + params["eps"])
        * (params["weight"])
    )


def _compute_layer(
    ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None
) -> np.ndarray:
    mu, sigma = _mu_sigma(_stats_rows(ops, rows), params["eps"])
    return (ops[0] - mu) / sigma * params["weight"] + params["bias"]


def _backward(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # y = x·ρ·w with ρ = 1/√(mean(x²) + ε): ∂x = ρ·(w ⊙ g) − x·ρ³·mean(x ⊙ w ⊙ g)
    x = ops[0]
    wg = g * params["weight"]
    rho = 1 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + params["eps"])
    return (rho * wg - x * rho**3 * np.mean(x * wg, axis=1, keepdims=True),)


def _backward_layer(
    ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray
) -> Any:
    # x̂ = (x − μ)·ρ, y = x̂·w + b: ∂x = ρ·(w ⊙ g − mean(w ⊙ g) − x̂·mean(x̂ ⊙ w ⊙ g))
    x = ops[0]
    mu, sigma = _mu_sigma(x, params["eps"])
    rho, wg = 1 / sigma, g * params["weight"]
    hat = (x - mu) * rho
    mean_wg = np.mean(wg, axis=1, keepdims=True)
    return (rho * (wg - mean_wg - hat * np.mean(hat * wg, axis=1, keepdims=True)),)


def _grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.6325×1×0.5 − 2×0.253×0.1 = 0.1: ρ = 1/√(mean(x²) + ε) of the row, and
    m = mean(x ⊙ w ⊙ g), the part of the gradient that moves the row's length."""
    x, g = stage.operands[0], stage.operands[-1]
    weight, eps = stage.params["of"]["weight"], stage.params["of"]["eps"]
    rho = float(1 / np.sqrt(np.mean(x[i] * x[i]) + eps))
    m = float(np.mean(x[i] * weight * g[i]))
    t, w, gij, xij = style.times, float(weight[j]), float(g[i, j]), float(x[i, j])
    first = f"{style.num(rho)}{t}{style.factor(w)}{t}{style.factor(gij)}"
    second = f"{style.factor(xij)}{t}{style.num(rho**3)}{t}{style.factor(m)}"
    n = style.shown
    shown = n(rho) * n(w) * n(gij) - n(xij) * n(rho**3) * n(m)
    left = f"{style.at(i + 1, j + 1)}{first} {style.minus} {second}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _grad_work_layer(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.8944 × (0.5 − 0.2 − 1.3416×0.1) = 0.1: ρ = 1/σ of the row, (w ⊙ g)ⱼ, its
    mean over the row, x̂ⱼ and mean(x̂ ⊙ w ⊙ g)."""
    x, g = stage.operands[0], stage.operands[-1]
    weight, eps = stage.params["of"]["weight"], stage.params["of"]["eps"]
    mu, sigma = _mu_sigma(x[i : i + 1], eps)
    rho = float(1 / sigma[0, 0])
    wg = g[i] * weight
    hat = (x[i] - mu[0, 0]) * rho
    t, m, n = style.times, style.minus, style.shown
    parts = float(wg[j]), float(np.mean(wg)), float(hat[j]), float(np.mean(hat * wg))
    inner = (
        f"{style.num(parts[0])} {m} {style.factor(parts[1])} {m} "
        f"{style.factor(parts[2])}{t}{style.factor(parts[3])}"
    )
    shown = n(rho) * (n(parts[0]) - n(parts[1]) - n(parts[2]) * n(parts[3]))
    left = f"{style.at(i + 1, j + 1)}{style.num(rho)} {t} ({inner})"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 2 / 1.5811 × 1 = 1.2649: the cell over its row's root mean square, times w."""
    x = stage.operands[0]
    full = stage.operands[-1]  # over the projection: the whole projection row
    rms = float(np.sqrt(np.mean(full[i] * full[i]) + stage.params["eps"]))
    weight = float(stage.params["weight"][j])
    cell = style.divided(style.num(float(x[i, j])), style.num(rms))
    left = f"{style.at(i + 1, j + 1)}{cell} {style.times} {style.factor(weight)}"
    below = style.shown(rms)  # shown as 0 at a low precision: the line can only say ≈
    shown = style.shown(float(x[i, j])) / below * style.shown(weight) if below else float("inf")
    return style.line(left, shown, float(stage.value[i, j]), result)


def _work_layer(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: (2 − 0.5) / 1.118 × 1 + 0 = 1.3416: the cell less its row's mean μ, over σ, times
    w, plus b."""
    x, full = stage.operands[0], stage.operands[-1]
    mu, sigma = _mu_sigma(full[i : i + 1], stage.params["eps"])
    top = f"({style.num(float(x[i, j]))} {style.minus} {style.factor(float(mu[0, 0]))})"
    cell = style.divided(top, style.num(float(sigma[0, 0])))
    w, b = float(stage.params["weight"][j]), float(stage.params["bias"][j])
    left = f"{style.at(i + 1, j + 1)}{cell} {style.times} {style.factor(w)} + {style.factor(b)}"
    n = style.shown
    below = n(float(sigma[0, 0]))  # shown as 0 at a low precision: the line can only say ≈
    top_shown = n(float(x[i, j])) - n(float(mu[0, 0]))
    shown = top_shown / below * n(w) + n(b) if below else float("inf")
    return style.line(left, shown, float(stage.value[i, j]), result)


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The weight forgotten (x / RMS(x)), and the root of the sum instead of the mean."""
    if len(stage.operands) > 1:  # over the projection: the row's statistics are not the head's
        return []
    weight, eps = stage.params["weight"], stage.params["eps"]
    found: list[Candidate] = []
    for x in versions(stage.reads[0][0]):
        bare = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)
        found.append(("norm_weight_missing", Msg("mistake.norm_weight_missing"), bare))
        length = x / np.sqrt(np.sum(x * x, axis=1, keepdims=True) + eps) * weight
        msg = Msg("mistake.norm_sum_not_mean", d_k=x.shape[1])
        if "over" in stage.params:  # a latent's norm (multi-head latent attention): r_kv, r_q
            msg = Msg("mistake.mla_norm_sum_not_mean", over=stage.params["over"], count=x.shape[1])
        found.append(("norm_sum_not_mean", msg, length))
    return found


def _mistakes_layer(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The mean not subtracted (RMSNorm's x / √(mean(x²) + ε) · w + b), and the bias forgotten."""
    if len(stage.operands) > 1:
        return []
    weight, bias, eps = stage.params["weight"], stage.params["bias"], stage.params["eps"]
    found: list[Candidate] = []
    for x in versions(stage.reads[0][0]):
        rms = x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight + bias
        found.append(("layernorm_mean_kept", Msg("mistake.layernorm_mean_kept"), rms))
        if np.any(bias != 0):
            unbiased = layer_norm(x, weight, np.zeros_like(bias), eps)
            found.append(
                ("layernorm_bias_missing", Msg("mistake.layernorm_bias_missing"), unbiased)
            )
    return found


# ---- the stage --------------------------------------------------------------------------------


def _full_rows(p: Any, side: str) -> np.ndarray:
    """The whole projection row of every token (all heads): X·W + b, or the Q/K given."""
    if not p.projected:
        return np.asarray((p.q if side == "Q" else p.k).values)
    x = p.x.values + (p.variants.pe if p.variants.pe is not None else 0)
    src = p.source.values if p.cross else x
    weight, bias = (p.wq, p.bq) if side == "Q" else (p.wk, p.bk)
    out = (x if side == "Q" else src) @ weight.values
    return out + bias.values[0] if bias is not None else out


def _turn(p: Any, norms: Norms, at: Turn) -> Spec | None:
    weights, biases = (norms.q, norms.q_bias) if at.side == "Q" else (norms.k, norms.k_bias)
    if weights is None:
        return None
    h = at.h or 1
    index = h if at.side == "Q" else head_slices(p, h).g
    operands: tuple[Any, ...] = (at.ref,)
    if norms.over == "projection":
        if p.backward:
            raise QkvcalcError("qk_norm.projection_backward")
        if at.step is not None:
            raise QkvcalcError("qk_norm.projection_decode")
        operands = (at.ref, Const(_full_rows(p, at.side)))
    weight = _of_head(weights, norms.over, index, p.d_k)
    params: dict[str, Any] = {"weight": weight, "eps": norms.eps}
    name = "RMSNorm"
    if norms.kind == "layer":
        bias = _of_head(biases, norms.over, index, p.d_k)
        params["bias"] = np.zeros(p.d_k) if bias is None else bias
        name = "LayerNorm"
    op = "rmsnorm" if norms.kind == "rms" else "layernorm"
    notes = [Msg(f"note.{op}", eps=f"{norms.eps:g}")]
    if norms.over == "projection":
        notes.append(Msg("note.qk_norm_projection", width=operands[1].value.shape[1]))
    if norms.after_rope:
        notes.append(Msg("note.qk_norm_after_rope"))
    side = at.side.lower()
    return Spec(
        f"{side}_norm",
        at.h,
        op,
        operands,
        f"{at.side}_norm = {name}({at.symbol})",
        at.rows,
        dim_labels(p.d_k),
        params=params,
        notes=tuple(notes),
        hint=(f"hint.{op}", {"src": at.symbol}),
        symbol=f"{at.side}_norm",
        letters=at.letters,
        topic="" if norms.kind == "rms" else f"{side}_layernorm",
    )


def _header(norms: Norms) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = [
        ("ui.variant.qk_norm" if norms.kind == "rms" else "ui.variant.qk_layernorm", {})
    ]
    if norms.over == "projection":
        out.append(("ui.variant.qk_norm_projection", {}))
    if any(w is not None and w.ndim == 2 for w in (norms.q, norms.k)):
        out.append(("ui.variant.qk_norm_per_head", {}))
    if norms.after_rope:
        out.append(("ui.variant.qk_norm_after_rope", {}))
    return out


def _torch(
    p: Any, norms: Norms, literal: Callable[[Any], str], num: Callable[[float], str]
) -> list[str]:
    out = []
    eps = num(norms.eps)
    sides = (("q", norms.q, norms.q_bias, "n", "H"), ("k", norms.k, norms.k_bias, "m", "G"))
    for name, weight, bias, rows, count in sides:
        if weight is None:
            continue
        w = f"t({literal(weight)})" + ("[:, None, :]" if weight.ndim == 2 else "")
        x = name
        if norms.over == "projection":  # [1, heads, rows, d_k] -> [rows, heads·d_k] and back
            out.append(f"{name}_all = {name}[0].transpose(0, 1).reshape({rows}, -1)")
            x = f"{name}_all"
        if norms.kind == "rms":
            out.append(f"# RMSNorm of {name}: x / sqrt(mean(x^2) + eps) * w")
            out.append(f"{x} = {x} / torch.sqrt({x}.pow(2).mean(-1, keepdim=True) + {eps}) * {w}")
        else:
            b = (
                "0"
                if bias is None
                else f"t({literal(bias)})" + ("[:, None, :]" if bias.ndim == 2 else "")
            )
            out.append(f"# LayerNorm of {name}: (x - mean) / sqrt(var + eps) * w + b")
            out.append(f"{x} = {x} - {x}.mean(-1, keepdim=True)")
            out.append(
                f"{x} = {x} / torch.sqrt({x}.pow(2).mean(-1, keepdim=True) + {eps}) * {w} + {b}"
            )
        if norms.over == "projection":
            out.append(f"{name} = {x}.reshape({rows}, {count}, d_k).transpose(0, 1).unsqueeze(0)")
    return out


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_rms(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """eager and sdpa: transformers' RMSNorm (LLaMA's, Qwen3's): the row in float32, mean(x²),
    1/√(mean + ε) and x times it in float32, rounded to the dtype, then the weight (in the dtype)
    times that, rounded. naive, x / √(mean(x²) + ε) written by hand: x², the mean, + ε, the
    square root, the division and the weight's product each rounded to the dtype."""
    x, full = ops[0], _stats_rows(ops, None)
    # the weight as a parameter in the dtype (in float32 beside scaled float8, as FP8 recipes
    # keep a norm's weight)
    w, eps = r.keep(np.asarray(params["weight"], dtype=np.float64)), params["eps"]
    if r.policy == "naive":
        mean = r.to(r.work(r.to(full * full)).mean(axis=1, keepdims=True))
        normed = r.to(x / r.to(np.sqrt(r.to(mean + eps))))
        note = Msg("precision.rmsnorm_naive", dtype=str(r.dtype))
    else:
        wide = r.work(full)
        mean = r.f32(np.mean(wide * wide, axis=1, keepdims=True))
        inverse = r.f32(1 / np.sqrt(r.work(r.f32(mean + eps))))
        normed = r.keep(r.work(x) * r.work(inverse))
        note = Msg("precision.rmsnorm_eager", dtype=r.kept or str(r.dtype))
    return Out(r.keep(r.work(w) * r.work(normed)), r.kept, notes=(note,))


def _lowp_layer(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    """eager and sdpa: as F.layer_norm computes it on the CPU (StableLM's, Phi's q/k norm): in
    float32, μ and r = 1/√(mean((x − μ)²) + ε), then x·r + (−r·μ), times the weight, plus the
    bias (the parameters in the dtype), each step rounded to float32, and the result rounded to
    the dtype once (x·r − r·μ is how torch's kernel writes x − μ: where they cancel, its float32
    rounding shows). naive, written by hand:
    μ, x − μ, its square, their mean, + ε, the root, the division, the product by the weight
    and the bias added each rounded to the dtype."""
    x, full = ops[0], _stats_rows(ops, None)
    w = r.keep(np.asarray(params["weight"], dtype=np.float64))
    b = r.keep(np.asarray(params["bias"], dtype=np.float64))
    eps = params["eps"]
    if r.policy == "naive":
        mu = r.to(r.work(full).mean(axis=1, keepdims=True))
        spread = r.to(r.work(r.to(np.square(r.to(full - mu)))).mean(axis=1, keepdims=True))
        normed = r.to(r.to(x - mu) / r.to(np.sqrt(r.to(spread + eps))))
        out = r.to(r.to(normed * w) + b)
        return Out(out, notes=(Msg("precision.layernorm_naive", dtype=str(r.dtype)),))
    wide = r.work(full)
    mu = r.f32(np.mean(wide, axis=1, keepdims=True))
    spread = r.f32(np.mean(np.square(r.work(r.f32(wide - r.work(mu)))), axis=1, keepdims=True))
    inverse = r.f32(1 / np.sqrt(r.work(r.f32(spread + eps))))
    shift = r.f32(-inverse * mu)
    normed = r.f32(r.f32(r.work(x) * r.work(inverse)) + r.work(shift))
    out = r.keep(r.f32(r.work(normed) * r.work(w)) + r.work(b))
    return Out(out, r.kept, notes=(Msg("precision.layernorm_eager", dtype=r.kept or str(r.dtype)),))


# ---- in PyTorch (--format torch): the statistics from the row, or the whole projection's ----

_TORCH_DEFS = """\
def rms_norm(x, stats, eps, weight):
    \"\"\"x / sqrt(mean(stats^2) + eps) * weight, stats: the row itself or its projection's.\"\"\"
    return x / torch.sqrt((stats * stats).mean(dim=1, keepdim=True) + eps) * weight


def layer_norm(x, stats, eps, weight, bias):
    \"\"\"(x - mu) / sigma * weight + bias, mu and sigma of the row or its projection's.\"\"\"
    mu = stats.mean(dim=1, keepdim=True)
    sigma = torch.sqrt(((stats - mu) ** 2).mean(dim=1, keepdim=True) + eps)
    return (x - mu) / sigma * weight + bias
"""


def _torch_norm(params: Params, names: Sequence[str], lit: Literals) -> str:
    x, stats = names[0], names[-1]
    args = f"{x}, {stats}, {lit.num(params['eps'])}, {lit.array(params['weight'])}"
    if "bias" in params:
        return f"layer_norm({args}, {lit.array(params['bias'])})"
    return f"rms_norm({args})"


FEATURE = Feature(
    name="qk_norm",
    keys=("q_norm", "k_norm", "norm_eps", "qk_norm"),
    read=_read,
    ops=(
        Op(
            "rmsnorm",
            _compute_rms,
            whole_row,
            exact_stops="note.exact_stops_root",
            rowwise=True,
            grad_reads=True,
            backward=_backward,
            grad_formula=lambda into, out, x, params: (
                f"ρ·(w ⊙ {out}) − {x}·ρ³·mean({x} ⊙ w ⊙ {out})"
            ),
            grad_work=_grad_work,
            work=_work,
            lowp=_lowp_rms,
            torch=_torch_norm,
            torch_defs=_TORCH_DEFS,
        ),
        Op(
            "layernorm",
            _compute_layer,
            whole_row,
            exact_stops="note.exact_stops_root",
            rowwise=True,
            grad_reads=True,
            backward=_backward_layer,
            grad_formula=lambda into, out, x, params: (
                f"ρ·(w ⊙ {out} − mean(w ⊙ {out}) − x̂·mean(x̂ ⊙ w ⊙ {out}))"
            ),
            grad_work=_grad_work_layer,
            lowp=_lowp_layer,
            work=_work_layer,
            torch=_torch_norm,
            torch_defs=_TORCH_DEFS,
        ),
    ),
    turn=_turn,
    late_turn=lambda norms: norms.after_rope,
    mistakes=(
        Mistakes("rmsnorm", ("norm_weight_missing", "norm_sum_not_mean"), _mistakes),
        Mistakes("layernorm", ("layernorm_mean_kept", "layernorm_bias_missing"), _mistakes_layer),
    ),
    elements=lambda norms, n, m, d_k: (
        (norms.q is not None) * n * d_k + (norms.k is not None) * m * d_k
    ),
    header=_header,
    echo=_echo,
    words=("RMSNorm", "LayerNorm"),
    worksheet_notes=(
        "note.rmsnorm",
        "note.layernorm",
        "note.qk_norm_projection",
        "note.qk_norm_after_rope",
        "note.exact_stops_root",
    ),
    torch_qk=_torch,
    torch_module_gap="it has no q/k norm between its projections and Q·Kᵀ",
)
