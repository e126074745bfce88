"""What a Gated DeltaNet layer adds around its core (Qwen3-Next, Qwen3.5): the pieces of
transformers' Qwen3NextGatedDeltaNet.forward before and after the delta rule, as stages of each
head. The core (l2norm, the state, the weights, the chunked form) is its own module's; the keys
are read and checked there.

    conv    Q_c = SiLU(conv(Q)), K_c, V_c alike: a causal depthwise convolution over the tokens,
            each column with its own kernel of K taps (conv1d with groups = channels, padded
            by K − 1 on the left), then SiLU(x) = x·σ(x)
            Q_c[t, c] = SiLU(Σ_r w[r, c]·Q[t − K + 1 + r, c])   (rows before the first: 0)
    ab      [a, b] = X·[W_a, W_b]   (the head's column of each)
    gates   g = −e^(A_log)·softplus(a + dt_bias),  β = σ(b)     (softplus(x) = ln(1 + e^x),
            x itself above 20, as torch's; β = 2·σ(b) in OLMo-Hybrid: beta_scale)
    z       Z = X·W_z   (the head's d_v columns)
    normed  o / √(mean(o²) + ε) · w          (the head's core output, per token; w as given)
    gated   normed ⊙ SiLU(Z)                 (the concat reads it)

Kimi Delta Attention's whole layer (kda_layer.py) shares the convolution, the decay's
−e^(A_log)·softplus(a + dt_bias) (one per Key channel there), σ, and the gated norm, which
multiplies by σ(Z) there (`act` "sigmoid" of the gated stage).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.ops import rounding as lowp
from qkvcalc.ops.hooks import Learns
from qkvcalc.ops.op import Back, Feeds, Literals, Op, Params, Shapes
from qkvcalc.ops.projection import sliced
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels, ref

SOFTPLUS_THRESHOLD = 20.0  # torch's F.softplus: x itself above it


# ---- the numbers (float64 numpy) ---------------------------------------------------------------


def sigmoid(x: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def silu(x: np.ndarray) -> np.ndarray:
    return x * sigmoid(x)


def softplus(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > SOFTPLUS_THRESHOLD, x, np.log1p(np.exp(np.minimum(x, SOFTPLUS_THRESHOLD))))


def conv(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """[n, c], [K, c] -> [n, c]: out[t] = Σ_r kernel[r]·x[t − K + 1 + r] (0 before the first row),
    before the SiLU."""
    taps, n = kernel.shape[0], x.shape[0]
    out = np.zeros_like(x, dtype=np.float64)
    for r in range(taps):
        shift = taps - 1 - r  # the tap r reads the row `shift` tokens back
        if shift < n:
            out[shift:] += kernel[r] * x[: n - shift]
    return out


def rate(a_log: float) -> float:
    """e^(A_log), ∞ past float64 (math.exp would raise): the gates made from it are then not
    finite, and the run says so in one message (a step of train that grew A_log too far)."""
    try:
        return math.exp(a_log)
    except OverflowError:
        return math.inf


def decay(a: np.ndarray, a_log: float, dt_bias: Any) -> np.ndarray:
    """g = −e^(A_log)·softplus(a + dt_bias), elementwise (dt_bias a number, or one per column)."""
    return -rate(a_log) * softplus(a + dt_bias)


def gates(ab: np.ndarray, a_log: float, dt_bias: float, beta_scale: float = 1.0) -> np.ndarray:
    """[n, 2] of (a, b) -> [n, 2] of (g, β), β = beta_scale·σ(b)."""
    return np.column_stack([decay(ab[:, 0], a_log, dt_bias), beta_scale * sigmoid(ab[:, 1])])


# what multiplies the normed output: SiLU(Z), or σ(Z) (Kimi Delta Attention)
ACTS = {"silu": silu, "sigmoid": sigmoid}


def rms_normed(o: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return o / np.sqrt((o * o).mean(axis=1, keepdims=True) + eps) * weight


# ---- the stages --------------------------------------------------------------------------------


def _x(p: Any) -> tuple[Ref, str]:
    return (("x_pe", None), "(X + PE)") if p.variants.pe is not None else (("x", None), "X")


def conv_stages(
    p: Any, kernel: np.ndarray, h: int | None, topic: str = "gdn_conv", float32: bool = False
) -> list[Spec]:
    """Head h's Q, K and V each through the causal convolution and SiLU: its columns of the
    kernel (q | k | v, as the layer lays its channels); `topic`: whose layer says it;
    `float32`: the model keeps conv1d in float32 under a low-precision dtype (Ling 3.0)."""
    col = (h or 1) - 1
    width_k = p.heads * p.d_k
    taps = kernel.shape[0]
    out = []
    for sid, start, width, letters in (
        ("q", col * p.d_k, p.d_k, "n×d_k"),
        ("k", width_k + col * p.d_k, p.d_k, "n×d_k"),
        ("v", 2 * width_k + col * p.d_v, p.d_v, "n×d_v"),
    ):
        big = sid.upper()
        out.append(
            Spec(
                f"{sid}_conv",
                h,
                "conv_silu",
                (
                    ref(sid, h),
                    Const(np.ascontiguousarray(kernel[:, start : start + width]), float32=float32),
                ),
                f"{big}_c = SiLU(conv({big}; K = {taps}))",
                p.tokens,
                dim_labels(width),
                params={"taps": taps, "float32": True} if float32 else {"taps": taps},
                notes=(Msg("note.gdn_conv", taps=taps, back=taps - 1),) if sid == "q" else (),
                topic=topic,
                symbol=f"{big}_c",
                letters=letters,
            )
        )
    return out


def gate_stages(p: Any, value: Any, h: int | None) -> list[Spec]:
    """a = X·W_a, b = X·W_b (the head's column of each: slices of the learned W_a, W_b, whose
    gradients the backward gathers), then g and β from them."""
    col = (h or 1) - 1
    x_ref, x_name = _x(p)
    label = "ᵀ" if value.layout == "torch" else ""
    cut = f"[:, {col + 1}]" if p.heads > 1 else ""
    made_of = []
    for letter, whole in (("a", value.wa), ("b", value.wb)):
        w = np.ascontiguousarray(whole[:, col : col + 1])
        made_of.append(
            Spec(
                letter,
                h,
                "project",
                (x_ref, Const(w)),
                f"{letter} = {x_name}·W_{letter}{label}{cut}",
                p.tokens,
                (letter,),
                params=sliced(letter, Matrix(np.asarray(whole, float)), None, slice(col, col + 1)),
                names=(x_name, f"W_{letter}{cut}"),
                inner=dim_labels(w.shape[0]),
                cell=f"{letter}[{{i}},{{j}}]",
                topic=f"gdn_{letter}",
                symbol=letter,
                letters="n×1",
            )
        )
    a_log, dt_bias = float(value.a_log[col]), float(value.dt_bias[col])
    scale = float(getattr(value, "beta_scale", 1.0))  # OLMo-Hybrid's 2: β in (0, 2)
    params = {"a_log": a_log, "dt_bias": dt_bias} | ({"beta_scale": scale} if scale != 1 else {})
    notes = [Msg("note.gdn_gates", a_log=f"{a_log:.6g}", decay=f"{rate(a_log):.6g}")]
    if scale != 1:
        notes.append(Msg("note.gdn_beta_scale", scale=f"{scale:g}"))
    made = Spec(
        "gates",
        h,
        "gdn_gates",
        tuple(s.ref for s in made_of),
        f"g = −e^({a_log:.4g})·softplus(a + {dt_bias:.4g}),  β = "
        + ("σ(b)" if scale == 1 else f"{scale:g}·σ(b)"),
        p.tokens,
        ("g", "β"),
        params=params,
        notes=tuple(notes),
        topic="gdn_gates",
        symbol="g,β",
        letters="n×2",
    )
    return [*made_of, made]


def norm_stages(p: Any, value: Any, h: int | None, output: Ref) -> list[Spec]:
    """Z = X·W_z (the head's columns), the core output RMS-normed times w, then ⊙ SiLU(Z)."""
    col = (h or 1) - 1
    x_ref, x_name = _x(p)
    cols = slice(col * p.d_v, (col + 1) * p.d_v)
    w = np.ascontiguousarray(value.wz[:, cols])
    label = "ᵀ" if value.layout == "torch" else ""
    cut = f"[:, {cols.start + 1}…{cols.stop}]" if p.heads > 1 else ""
    rows, labels = p.tokens, dim_labels(p.d_v)
    z = Spec(
        "z",
        h,
        "project",
        (x_ref, Const(w)),
        f"Z = {x_name}·W_z{label}{cut}",
        rows,
        labels,
        params=sliced("Z", Matrix(value.wz, None), None, cols),  # the backward gathers dW_z
        names=(x_name, f"W_z{cut}"),
        inner=dim_labels(w.shape[0]),
        cell="Z[{i},{j}]",
        symbol="Z",
        letters="n×d_v",
    )
    return [z, *gated_norm(p, value, h, output, z.ref)]


def gated_norm(
    p: Any, value: Any, h: int | None, output: Ref, z: Ref, act: str = "silu", topic: str = "gdn"
) -> list[Spec]:
    """The core output RMS-normed times w (value.norm, value.norm_eps), then ⊙ act(Z): SiLU
    (Gated DeltaNet) or σ (Kimi Delta Attention); `topic`: whose layer says it."""
    rows, labels = p.tokens, dim_labels(p.d_v)
    normed = Spec(
        "normed",
        h,
        "gdn_rms",
        (output, Const(np.asarray(value.norm, dtype=np.float64)[None, :])),
        f"N = out / √(mean(out²) + {value.norm_eps:g}) ⊙ w",
        rows,
        labels,
        # Kimi Linear's norm keeps its weight's product in float32 (its rounding rule reads it)
        params={"eps": value.norm_eps} | ({"strict": True} if topic == "kda" else {}),
        notes=(Msg("note.gdn_norm_weight"),),
        topic=f"{topic}_normed",
        symbol="N",
        letters="n×d_v",
    )
    gated = Spec(
        "gated",
        h,
        "silu_gate",
        (normed.ref, z),
        f"N ⊙ {'SiLU' if act == 'silu' else 'σ'}(Z)",
        rows,
        labels,
        params={} if act == "silu" else {"act": act},
        topic=f"{topic}_gated",
        symbol="out_Z",
        letters="n×d_v",
    )
    return [normed, gated]


# ---- the backward pass (--backward): the gated norm ---------------------------------------------


def _gated_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """out_Z = N ⊙ act(Z), from d(out_Z) (`g`): dN = d(out_Z) ⊙ act(Z) and
    dZ = d(out_Z) ⊙ N ⊙ act'(Z) (SiLU's: σ(z)·(1 + z·(1 − σ(z))); σ's: σ(z)·(1 − σ(z)))."""
    normed_ref, z_ref = at.operands
    normed, z = back.by[normed_ref], back.by[z_ref]
    act = at.params.get("act", "silu")
    name = "SiLU" if act == "silu" else "σ"
    return [
        Spec(
            f"grad_{normed.id}",
            at.head,
            "gated_back",
            (g, z_ref),
            f"dN = d(out_Z) ⊙ {name}(Z)",
            at.rows,
            at.cols,
            params={"act": act},
            topic="gdn_grad_normed",
            symbol="dN",
            letters="n×d_v",
        ),
        Spec(
            f"grad_{z.id}",
            at.head,
            "gated_back_z",
            (g, normed_ref, z_ref),
            f"dZ = d(out_Z) ⊙ N ⊙ {name}'(Z)",
            at.rows,
            at.cols,
            params={"act": act},
            topic="gdn_grad_z",
            symbol="dZ",
            letters="n×d_v",
        ),
    ]


def _act_grad(z: np.ndarray, act: str) -> np.ndarray:
    s = sigmoid(z)
    return s * (1 + z * (1 - s)) if act == "silu" else s * (1 - s)


def _gated_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    g, z = ops
    return g * ACTS[params["act"]](z)


def _gated_back_z(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    g, normed, z = ops
    return g * normed * _act_grad(z, params["act"])


def _rms_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # y = x·ρ·w, ρ = (mean(x²) + ε)^(−½): dx = ρ·(w ⊙ dy) − x·ρ³·mean(x ⊙ w ⊙ dy)
    x, weight = ops[0], ops[1][0]
    rho = 1 / np.sqrt((x * x).mean(axis=1, keepdims=True) + params["eps"])
    scaled = weight * g  # w ⊙ dy
    dx = rho * scaled - x * rho**3 * (x * scaled).mean(axis=1, keepdims=True)
    return dx, (x * rho * g).sum(axis=0, keepdims=True)  # and the weight's, [1, d]


def norm_weight_grad(p: Any, eps: float) -> Spec:
    """dw = Σ_heads Σᵢ dNᵢ ⊙ outᵢ·ρᵢ: the gated norm's weight, shared by every head."""
    heads: list[int | None] = list(range(1, p.heads + 1)) if p.multihead else [None]
    reads = tuple(r for h in heads for r in (ref("grad_normed", h), ref("output", h)))
    return Spec(
        "grad_norm",
        None,
        "gated_norm_weight_grad",
        reads,
        "dw = Σₕ Σᵢ dNᵢ ⊙ outᵢ / √(mean(outᵢ²) + ε)",
        ("dw",),
        dim_labels(p.d_v),
        params={"eps": eps},
        symbol="dw",
        cell="dw[{j}]",
        letters="1×d_v",
    )


def _norm_weight(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    total = np.zeros((1, ops[0].shape[1]))
    for dn, out in zip(ops[::2], ops[1::2], strict=True):
        rho = 1 / np.sqrt((out * out).mean(axis=1, keepdims=True) + params["eps"])
        total += (dn * out * rho).sum(axis=0, keepdims=True)
    return total


def _norm_weight_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for k in range(0, len(shapes), 2):
        for row in range(shapes[k][0]):
            yield k, row, j
            yield from ((k + 1, row, c) for c in range(shapes[k + 1][1]))


def _three_cells(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((k, i, j) for k in range(len(shapes)))


def _gated_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5×0.3112 = 0.1556 (d(out_Z) times act(Z), act(Z) shown as its number)"""
    g, z = (float(o[i, j]) for o in stage.operands)
    act = float(ACTS[stage.params["act"]](np.array([z]))[0])
    f, s = style.factor, style.shown
    left = f"{style.at(i + 1, j + 1)}{f(g)}{style.times}{f(act)}"
    return style.line(left, s(g) * s(act), float(stage.value[i, j]), result)


def _gated_back_z_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5×0.88×0.7 = 0.308 (d(out_Z)·N·act'(Z), act'(Z) shown as its number)"""
    g, normed, z = (float(o[i, j]) for o in stage.operands)
    slope = float(_act_grad(np.array([z]), stage.params["act"])[0])
    f, s, t = style.factor, style.shown, style.times
    left = f"{style.at(i + 1, j + 1)}{f(g)}{t}{f(normed)}{t}{f(slope)}"
    return style.line(left, s(g) * s(normed) * s(slope), float(stage.value[i, j]), result)


def _rms_grad_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.79×1.1×0.5 − 0.4×0.49×0.2 = …: ρ·w_j·dy − x·ρ³·mean(x ⊙ w ⊙ dy)"""
    x, weight, g = stage.operands[0], stage.operands[1][0], stage.operands[-1]
    rho = float(1 / np.sqrt((x[i] * x[i]).mean() + stage.params["of"]["eps"]))
    m = float((x[i] * weight * g[i]).mean())
    f, s, t = style.factor, style.shown, style.times
    w, gij, xij = float(weight[j]), float(g[i, j]), float(x[i, j])
    left = (
        f"{style.at(i + 1, j + 1)}{style.num(rho)}{t}{f(w)}{t}{f(gij)} {style.minus} "
        f"{f(xij)}{t}{style.num(rho**3)}{t}{f(m)}"
    )
    worked = s(rho) * s(w) * s(gij) - s(xij) * s(rho**3) * s(m)
    return style.line(left, worked, float(stage.value[i, j]), result)


def _norm_weight_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """dw[2] = 0.5×0.4×1.26 + …: each token's dN·out·ρ in that column, every head's, added"""
    eps = float(stage.params["eps"])
    f, s, t = style.factor, style.shown, style.times
    terms, worked = [], 0.0
    for dn, out in zip(stage.operands[::2], stage.operands[1::2], strict=True):
        for row in range(out.shape[0]):
            rho = float(1 / np.sqrt((out[row] * out[row]).mean() + eps))
            a, b = float(dn[row, j]), float(out[row, j])
            terms.append(f"{f(a)}{t}{f(b)}{t}{style.num(rho)}")
            worked += s(a) * s(b) * s(rho)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = " + " + ".join(terms)
    return style.line(left, worked, float(stage.value[i, j]), result)


# ---- the backward pass (--backward): the convolution and the gates made from X ----------------


def _conv_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """Q_c = SiLU(u), u = conv(Q) with the taps w, from dQ_c (`g`): e = dQ_c ⊙ SiLU'(u), then
    dQ[s, c] = Σ_r w[r, c]·e[s + K − 1 − r, c] (the taps turned round, rows past the last: 0) and
    the taps' own gradient dw[r, c] = Σ_t e[t, c]·Q[t − K + 1 + r, c] (a stage of its own)."""
    x_ref, kernel = at.operands
    x = back.by[x_ref]
    big = x.symbol
    taps = at.params["taps"]
    grad = Spec(
        f"grad_{x.id}",
        at.head,
        "conv_back",
        (x_ref, kernel, g),
        f"d{big}[s] = Σ_r w[r] ⊙ e[s + {taps - 1} − r],  e = d{big}_c ⊙ SiLU'(conv({big}))",
        x.rows,
        x.cols,
        params={"taps": taps},
        notes=(Msg("note.gdn_grad_conv", taps=taps),),
        topic="gdn_grad_conv",
        symbol=f"d{big}",
        letters=x.letters,
    )
    tapped = Spec(
        f"grad_{x.id}_taps",
        at.head,
        "conv_taps_back",
        (x_ref, kernel, g),
        f"dw_{x.id}[r] = Σ_t e[t] ⊙ {big}[t − {taps - 1} + r]",
        tuple(f"r{r + 1}" for r in range(taps)),
        x.cols,
        params={"taps": taps},
        topic="gdn_grad_taps",
        symbol=f"dw_{x.id}",
        cell=f"dw_{x.id}[{{i}},{{j}}]",
        letters="K×" + x.letters.split("×")[-1],
    )
    return [grad, tapped]


def _silu_slope(u: np.ndarray) -> np.ndarray:
    s = sigmoid(u)
    return s * (1 + u * (1 - s))


def _conv_e(x: np.ndarray, kernel: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * _silu_slope(conv(x, kernel))


def _conv_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    x, kernel, g = ops
    e = _conv_e(x, kernel, g)
    taps, n = kernel.shape[0], x.shape[0]
    out = np.zeros_like(x, dtype=np.float64)
    for r in range(taps):
        shift = taps - 1 - r  # tap r carried row s to row s + shift
        if shift < n:
            out[: n - shift] += kernel[r] * e[shift:]
    return out


def _conv_taps_back(ops: Sequence[np.ndarray], params: Params, rows: Any) -> np.ndarray:
    x, kernel, g = ops
    e = _conv_e(x, kernel, g)
    taps, n = kernel.shape[0], x.shape[0]
    out = np.zeros(kernel.shape)
    for r in range(taps):
        shift = taps - 1 - r
        if shift < n:
            out[r] = (e[shift:] * x[: n - shift]).sum(axis=0)
    return out


def _conv_back_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    taps, n = params["taps"], shapes[0][0]
    for r in range(taps):
        t = i + taps - 1 - r
        if t < n:
            yield 1, r, j
            yield 2, t, j
            yield from _conv_feeds(t, j, shapes, params)


def _conv_taps_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    taps, n = params["taps"], shapes[0][0]
    for t in range(taps - 1 - i, n):
        yield 2, t, j
        yield 0, t - taps + 1 + i, j
        yield from _conv_feeds(t, j, shapes, params)


def _slope_at(stage: Any, t: int, j: int) -> float:
    x, kernel, _ = stage.operands
    u = conv(x[:, j : j + 1], kernel[:, j : j + 1])[t, 0]
    return float(_silu_slope(np.array([u]))[0])


def _conv_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5×(0.3×0.9) + 1×(−0.2×1.1) = … (each tap w[r] times e = dQ_c·SiLU'(u) of the
    row it carried this one to, SiLU'(u) shown as its number)"""
    x, kernel, g = stage.operands
    taps, n = stage.params["taps"], x.shape[0]
    f, s, t = style.factor, style.shown, style.times
    terms, worked = [], 0.0
    for r in range(taps):
        row = i + taps - 1 - r
        if row < n:
            w, dg, slope = float(kernel[r, j]), float(g[row, j]), _slope_at(stage, row, j)
            terms.append(f"{f(w)}{t}({f(dg)}{t}{f(slope)})")
            worked += s(w) * (s(dg) * s(slope))
    left = f"{style.at(i + 1, j + 1)}" + " + ".join(terms)
    return style.line(left, worked, float(stage.value[i, j]), result)


def _conv_taps_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: (0.3×0.9)×0.4 + … (each token's e = dQ_c·SiLU'(u) times the row this tap read)"""
    x, _, g = stage.operands
    taps, n = stage.params["taps"], x.shape[0]
    f, s, t = style.factor, style.shown, style.times
    terms, worked = [], 0.0
    for row in range(taps - 1 - i, n):
        dg, slope, read = (
            float(g[row, j]),
            _slope_at(stage, row, j),
            float(x[row - taps + 1 + i, j]),
        )
        terms.append(f"({f(dg)}{t}{f(slope)}){t}{f(read)}")
        worked += s(dg) * s(slope) * s(read)
    left = f"{style.at(i + 1, j + 1)}" + (" + ".join(terms) if terms else "0")
    return style.line(left, worked, float(stage.value[i, j]), result)


def _gates_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """g = −e^(A_log)·softplus(a + dt_bias), β = s·σ(b), from d(g, β) (`g`): da = dg·(−e^(A_log))·
    σ(a + dt_bias) (softplus' = σ; 1 above 20, as torch's), db = dβ·s·σ(b)·(1 − σ(b)); and the
    head's own learned numbers: dA_log = Σ_t dg_t·g_t, d(dt_bias) = Σ_t da_t."""
    a_ref, b_ref = at.operands
    scale = at.params.get("beta_scale", 1.0)
    grad_a, grad_b = (
        Spec(
            f"grad_{letter}",
            at.head,
            f"gates_back_{letter}",
            (read, g),
            formula,
            at.rows,
            (letter,),
            params=at.params,
            topic=f"gdn_grad_{letter}",
            symbol=f"d{letter}",
            letters="n×1",
        )
        for letter, read, formula in (
            ("a", a_ref, "da = dg ⊙ (−e^(A_log))·σ(a + dt_bias)"),
            ("b", b_ref, "db = dβ ⊙ " + ("" if scale == 1 else f"{scale:g}·") + "σ(b)·(1 − σ(b))"),
        )
    )
    decay = Spec(
        "grad_decay",
        at.head,
        "decay_grads",
        (at.ref, g, grad_a.ref),
        "dA_log = Σ_t dg_t·g_t,  d(dt_bias) = Σ_t da_t",
        ("d",),
        ("A_log", "dt_bias"),
        params={},
        topic="gdn_grad_decay",
        symbol="dA_log,d(dt_bias)",
        cell="d[{i},{j}]",
        letters="1×2",
    )
    return [grad_a, grad_b, decay]


def _softplus_slope(x: np.ndarray) -> np.ndarray:
    return np.where(x > SOFTPLUS_THRESHOLD, 1.0, sigmoid(x))


def _gates_back_a(ops: Sequence[np.ndarray], params: Params, rows: Any) -> np.ndarray:
    a, g = ops
    slope = _softplus_slope(a[:, 0] + params["dt_bias"])
    return (g[:, 0] * -rate(params["a_log"]) * slope)[:, None]


def _gates_back_b(ops: Sequence[np.ndarray], params: Params, rows: Any) -> np.ndarray:
    b, g = ops  # dβ: the last column of d(g, β) (Kimi Delta Attention's too)
    s = sigmoid(b[:, 0])
    return (g[:, -1] * params.get("beta_scale", 1.0) * s * (1 - s))[:, None]


def _decay_grads(ops: Sequence[np.ndarray], params: Params, rows: Any) -> np.ndarray:
    made, g, da = ops
    return np.array([[float((g[:, 0] * made[:, 0]).sum()), float(da[:, 0].sum())]])


def _gates_back_a_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, 0
    yield 1, i, 0


def _gates_back_b_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, 0
    yield 1, i, shapes[1][1] - 1


def _decay_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for t in range(shapes[0][0]):
        if j == 0:
            yield 0, t, 0
            yield 1, t, 0
        else:
            yield 2, t, 0


def _gates_back_a_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.5×(−1.6487)×σ(1.3) = 0.5×(−1.6487)×0.7858 = … (σ of a + dt_bias as its number)"""
    a, g = stage.operands
    params = stage.params
    x = float(a[i, 0]) + params["dt_bias"]
    minus, slope = -rate(params["a_log"]), float(_softplus_slope(np.array([x]))[0])
    f, s, t = style.factor, style.shown, style.times
    dg = float(g[i, 0])
    left = f"{style.at(i + 1, j + 1)}{f(dg)}{t}{f(minus)}{t}{f(slope)}"
    return style.line(left, s(dg) * s(minus) * s(slope), float(stage.value[i, j]), result)


def _gates_back_b_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.3×0.2403 = 0.0721 (dβ times s·σ(b)·(1 − σ(b)) as its number)"""
    b, g = stage.operands
    sig = float(sigmoid(np.array([float(b[i, 0])]))[0])
    slope = stage.params.get("beta_scale", 1.0) * sig * (1 - sig)
    f, s = style.factor, style.shown
    db = float(g[i, -1])
    left = f"{style.at(i + 1, j + 1)}{f(db)}{style.times}{f(slope)}"
    return style.line(left, s(db) * s(slope), float(stage.value[i, j]), result)


def _decay_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.5×(−0.3) + … (dg_t·g_t over the tokens); [1,2]: 0.1 + … (da_t over the tokens)"""
    made, g, da = stage.operands
    f, s, t = style.factor, style.shown, style.times
    if j == 0:
        pairs = [(float(g[r, 0]), float(made[r, 0])) for r in range(made.shape[0])]
        terms = [f"{f(x)}{t}{f(y)}" for x, y in pairs]
        worked = sum(s(x) * s(y) for x, y in pairs)
    else:
        values = [float(v) for v in da[:, 0]]
        terms, worked = [f(v) for v in values], sum(s(v) for v in values)
    left = f"{style.at(i + 1, j + 1)}" + " + ".join(terms)
    return style.line(left, worked, float(stage.value[i, j]), result)


# ---- what `qkvcalc train` steps of a whole layer (Feature.learns) ------------------------------

GATHERED = ("conv", "a_log", "dt_bias")  # gradients gathered from every head's stages


def heads_of(p: Any) -> list[int | None]:
    """The heads' labels of the per-head stages: 1 … H, or None when there are none."""
    return list(range(1, p.heads + 1)) if p.multihead else [None]


def taps_grad(p: Any, value: Any, find: Any, heads: Sequence[int | None]) -> np.ndarray | None:
    """d(conv): the heads' taps' gradients in the kernel's columns (q | k | v, as the layer lays
    its channels) [K, 2·H·d_k + H·d_v]; None when a head's is not there."""
    whole = np.zeros(value.conv.shape)
    width_k = p.heads * p.d_k
    for k, h in enumerate(heads):
        for sid, start, width in (
            ("q", k * p.d_k, p.d_k),
            ("k", width_k + k * p.d_k, p.d_k),
            ("v", 2 * width_k + k * p.d_v, p.d_v),
        ):
            found = find(f"grad_{sid}_taps", h)
            if found is None:
                return None
            whole[:, start : start + width] = found.value
    return whole


def _gather(p: Any, value: Any, name: str, find: Any) -> np.ndarray | None:
    """d(conv) from every head's taps; dA_log (1 × H) and d(dt_bias) (1 × H, or 1 × H·d_k with
    one per Key channel) from every head's grad_decay row [dA_log, d(dt_bias)…]."""
    heads = heads_of(p)
    if name == "conv":
        return taps_grad(p, value, find, heads)
    rows = [find("grad_decay", h) for h in heads]
    if any(r is None for r in rows):
        return None
    both = np.stack([r.value[0] for r in rows])  # [H, 1 + one head's dt_bias]
    return both[:, :1].T.copy() if name == "a_log" else both[:, 1:].reshape(1, -1)


def learns(fields: dict[str, str]) -> Learns:
    """What train steps of a whole layer: `fields` maps each name train gives a weight to the
    field of the layer's value that holds it, in the order shown. Each is held as the value
    holds it (the rows layout; a vector, A_log, dt_bias, the norm's weight, as 1 × its length)
    and moved back into that shape; the gradient of a weight of X (W_a, W_z …) is its gathered
    stage grad_<name>, the norm's weight's grad_norm, and the taps', A_log's and dt_bias's are
    gathered from every head's."""

    def weights(value: Any) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name, field in fields.items():
            held = getattr(value, field)
            if held is not None:
                array = np.asarray(held, dtype=np.float64)
                out[name] = array[None, :] if array.ndim == 1 else array
        return out

    def moved(value: Any, new: dict[str, np.ndarray]) -> Any:
        return value._replace(
            **{
                fields[name]: np.array(w, dtype=np.float64).reshape(
                    np.shape(getattr(value, fields[name]))
                )
                for name, w in new.items()
            }
        )

    return Learns(
        tuple(fields),
        weights,
        lambda value: {name: f"grad_{name}" for name in weights(value) if name not in GATHERED},
        lambda value, name, grad: grad,  # in the matrix's layout already (rows)
        moved,
        gather=_gather,
    )


# ---- the operations ----------------------------------------------------------------------------


def _conv(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return silu(conv(ops[0], ops[1]))


def _ab(ops: Sequence[np.ndarray]) -> np.ndarray:
    """[n, 2] of (a, b) from the stages a and b ([n, 1] each)."""
    return np.column_stack([ops[0][:, 0], ops[1][:, 0]])


def _gates(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return gates(_ab(ops), params["a_log"], params["dt_bias"], params.get("beta_scale", 1.0))


def _rms(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return rms_normed(ops[0], ops[1][0], params["eps"])


def _silu_gate(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return ops[0] * ACTS[params.get("act", "silu")](ops[1])


def _conv_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    taps = params["taps"]
    for r in range(taps):
        t = i - taps + 1 + r
        if t >= 0:
            yield 0, t, j
            yield 1, r, j


def _gates_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield j, i, 0  # g reads a, β reads b


def _rms_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield from ((0, i, c) for c in range(shapes[0][1]))
    yield 1, 0, j


def _two_cells(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j


def _silu_name(style: Any) -> str:
    return r"\mathrm{SiLU}" if style.latex else "SiLU"


def _link(style: Any, left: float, right: float) -> str:
    """' = ' between two sides written from the numbers shown when they agree at the shown
    precision (within 0.4 of its last digit), else ' ≈ '."""
    close = abs(left - right) <= 0.4 * 10.0**-style.precision
    return " = " if close else style.approx


def _silu_of(x: float) -> float:
    return float(silu(np.array([x]))[0])


def _conv_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[3,1]: 0.5×1 + 0.25×2 = 1.0000; SiLU(1.0000) = 0.7311 (the taps over this token and the
    K − 1 before it; the rows before the first are 0 and left out)"""
    x, kernel = stage.operands
    taps = stage.params["taps"]
    f, s = style.factor, style.shown
    pairs = [
        (float(kernel[r, j]), float(x[i - taps + 1 + r, j]))
        for r in range(taps)
        if i - taps + 1 + r >= 0
    ]
    worked = sum(s(a) * s(b) for a, b in pairs)
    summed = float(sum(a * b for a, b in pairs))
    inner = " + ".join(f"{f(a)}{style.times}{f(b)}" for a, b in pairs)
    first = f"{inner}{style.sign(worked, summed)}{style.num(summed)}"
    left = f"{style.at(i + 1, j + 1)}{first}; {_silu_name(style)}({style.num(summed)})"
    return style.line(left, _silu_of(s(summed)), float(stage.value[i, j]), result)


def _gates_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: −e^(0.5)×softplus(0.3 + 1) = −1.6487×1.5410 = −2.5407;
    [2,2]: σ(0.4) = 0.5987"""
    x, value = float(stage.operands[j][i, 0]), float(stage.value[i, j])
    if j == 1:
        return sigmoid_line(style, i, j, x, value, result, stage.params.get("beta_scale", 1.0))
    return decay_line(style, i, j, x, stage.params["a_log"], stage.params["dt_bias"], value, result)


def sigmoid_line(
    style: Any, i: int, j: int, x: float, value: float, result: str, scale: float = 1.0
) -> str:
    """[i,j]: σ(x) = value (scale·σ(x) with a scale other than 1: OLMo-Hybrid's 2·σ(b))"""
    sigma = r"\sigma" if style.latex else "σ"
    times = f"{style.factor(scale)}{style.times}" if scale != 1 else ""
    left = f"{style.at(i + 1, j + 1)}{times}{sigma}({style.num(x)})"
    shown = style.shown(scale) * float(sigmoid(np.array([style.shown(x)]))[0])
    return style.line(left, shown, value, result)


def decay_line(
    style: Any, i: int, j: int, x: float, a_log: float, dt_bias: float, value: float, result: str
) -> str:
    """[i,j]: −e^(A_log)×softplus(x + dt_bias) = −e^(A_log)×softplus(…) = g"""
    s, f = style.shown, style.factor
    decay, plus = rate(a_log), float(softplus(np.array([x + dt_bias]))[0])
    written = -rate(s(a_log)) * float(softplus(np.array([s(x) + s(dt_bias)]))[0])
    middle = -s(decay) * s(plus)
    left = (
        f"{style.at(i + 1, j + 1)}{style.minus}{style.exp(style.num(a_log))}{style.times}"
        f"softplus({style.num(x)} + {style.num(dt_bias)}){_link(style, written, middle)}"
        f"{style.minus}{f(decay)}{style.times}{f(plus)}"
    )
    return style.line(left, middle, value, result)


def _rms_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.4 / √0.2500 × 1.1 = 0.8800 (the row's mean of squares + ε under the root)"""
    o, weight = stage.operands
    eps = float(stage.params["eps"])
    mean = float((o[i] * o[i]).mean())
    s, f = style.shown, style.factor
    root = style.root("√" + style.num(mean + eps))
    left = f"{style.at(i + 1, j + 1)}{style.num(float(o[i, j]))} / {root}{style.times}"
    left += f(float(weight[0, j]))
    radicand = s(mean + eps)
    # a root shown as √0.0000 (a row of zeros: ε alone under it) divides by nothing shown: ≈
    shown = (
        s(float(o[i, j])) / math.sqrt(radicand) * s(float(weight[0, j]))
        if radicand > 0
        else math.nan
    )
    return style.line(left, shown, float(stage.value[i, j]), result)


def _silu_gate_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.88 × SiLU(0.5) = 0.88 × 0.3112 = 0.2739 (σ in place of SiLU with `act` sigmoid)"""
    normed, z = (float(o[i, j]) for o in stage.operands)
    s, f = style.shown, style.factor
    sigma = stage.params.get("act") == "sigmoid"
    name = (r"\sigma" if style.latex else "σ") if sigma else _silu_name(style)
    of = ACTS["sigmoid" if sigma else "silu"]
    act = float(of(np.array([z]))[0])
    written, middle = s(normed) * float(of(np.array([s(z)]))[0]), s(normed) * s(act)
    left = f"{style.at(i + 1, j + 1)}{f(normed)}{style.times}{name}({style.num(z)})"
    left += f"{_link(style, written, middle)}{f(normed)}{style.times}{f(act)}"
    return style.line(left, middle, float(stage.value[i, j]), result)


# ---- in PyTorch (--format torch): the same steps as the numpy above ----

TORCH_ACTS = """\
def sigmoid(z):
    \"\"\"1 / (1 + e^-z), written as qkvcalc does so that e^(-|z|) never overflows.\"\"\"
    e = torch.exp(-z.abs())
    return torch.where(z >= 0, 1 / (1 + e), e / (1 + e))


def silu(x):
    return x * sigmoid(x)


def softplus(x):
    \"\"\"log(1 + e^x), x itself above 20 (as F.softplus).\"\"\"
    return torch.where(x > 20.0, x, torch.log1p(torch.exp(torch.clamp(x, max=20.0))))


def decay(a, a_log, dt_bias):
    \"\"\"g = -e^(A_log) * softplus(a + dt_bias).\"\"\"
    return -math.exp(a_log) * softplus(a + dt_bias)
"""
_TORCH_DEFS = """\
def conv_silu(x, kernel):
    \"\"\"The causal depthwise convolution (0 before the first row), then SiLU.\"\"\"
    taps, n = kernel.shape[0], x.shape[0]
    out = torch.zeros_like(x)
    for r in range(taps):
        shift = taps - 1 - r
        if shift < n:
            out[shift:] += kernel[r] * x[: n - shift]
    return silu(out)


def gdn_gates(ab, a_log, dt_bias, beta_scale):
    \"\"\"[n, 2] of (a, b) -> [n, 2] of (g, beta).\"\"\"
    return torch.stack([decay(ab[:, 0], a_log, dt_bias), beta_scale * sigmoid(ab[:, 1])], dim=1)


def rms_normed(o, weight, eps):
    return o / torch.sqrt((o * o).mean(dim=1, keepdim=True) + eps) * weight
"""


def _torch_gates(params: Params, names: Sequence[str], lit: Literals) -> str:
    numbers = (params["a_log"], params["dt_bias"], params.get("beta_scale", 1.0))
    ab = f"torch.cat([{names[0]}, {names[1]}], dim=1)"
    return f"gdn_gates({ab}, {', '.join(lit.array(x) for x in numbers)})"


def _torch_silu_gate(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"{names[0]} * {params.get('act', 'silu')}({names[1]})"


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----------------------


def _lowp_conv(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """SiLU(conv(x)): conv1d in the dtype (each output's taps summed in float32, rounded once),
    then SiLU in float32, rounded (naive: x·σ(x) by hand, each op rounded). A conv1d the model
    keeps in float32 (`float32`: Ling 3.0's) takes x to float32 and its float32 taps, SiLU in
    float32 too, and rounds once to the dtype after it (naive: its taps in the dtype, as the
    rest)."""
    x, kernel = ops
    if params.get("float32") and r.policy != "naive":
        value = r.keep(r.f32(silu(r.f32(conv(x, kernel)))))
        note = Msg("precision.conv_float32", dtype=r.kept or str(r.dtype))
        return lowp.Out(value, r.kept, notes=(note,))
    mixed = r.keep(conv(x, kernel))
    if r.policy == "naive":
        value = r.to(mixed * r.to(sigmoid(mixed)))
        return lowp.Out(value, notes=(Msg("precision.conv_naive", dtype=str(r.dtype)),))
    value = r.keep(silu(r.work(mixed).astype(np.float64)))
    return lowp.Out(
        value, r.kept, notes=(Msg("precision.conv_eager", dtype=r.kept or str(r.dtype)),)
    )


def decay_of(a: np.ndarray, a_log: Any, dt_bias: Any, r: lowp.Rounding) -> np.ndarray:
    """g = −e^(A_log)·softplus(a + dt_bias) from a in the dtype: eager as both layers write it
    (A_log and dt_bias parameters in the dtype, `.float()`: every op in float32); naive every op
    in the dtype."""
    rnd = r.to if r.policy == "naive" else r.f32
    shifted = rnd(a + r.to(np.asarray(dt_bias, dtype=np.float64)))
    rate = rnd(np.exp(r.to(np.asarray(a_log, dtype=np.float64))))
    return rnd(-rate * rnd(softplus(shifted)))


def beta_of(b: np.ndarray, scale: float, r: lowp.Rounding) -> np.ndarray:
    """β = σ(b) in the dtype (b.sigmoid(): in float32, rounded; naive the same op), times the
    scale (OLMo-Hybrid's 2: exact)."""
    beta = r.keep(sigmoid(b)) if r.policy != "naive" else r.to(sigmoid(b))
    return beta if scale == 1.0 else r.keep(beta * scale)


def gates_out(g: np.ndarray, beta: np.ndarray, r: lowp.Rounding, said: str = "gates") -> lowp.Out:
    """[g | β] as the layer holds them: g in float32 under eager (the layer computes it from
    `.float()`), β in the dtype; both in the dtype under naive (`said`: the notes' stem)."""
    value = np.column_stack([g, beta])
    if r.policy == "naive":
        return lowp.Out(value, notes=(Msg(f"precision.{said}_naive", dtype=str(r.dtype)),))
    note = Msg(f"precision.{said}_eager", dtype=r.kept or str(r.dtype))
    return lowp.Out(value, lowp.SAID, notes=(note,))


def _lowp_gates(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    ab = _ab(ops)
    g = decay_of(ab[:, 0], params["a_log"], params["dt_bias"], r)
    return gates_out(g, beta_of(ab[:, 1], float(params.get("beta_scale", 1.0)), r), r)


def _lowp_norm(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """The gated norm's N = out / √(mean(out²) + ε) ⊙ w. Qwen3-Next (eager): in float32, cast back
    to the dtype, then w (in the dtype) times it, rounded. Kimi Linear (`strict`): w.float() times
    the float32 norm, kept in float32 until after the product by act(Z). naive: every op in the
    dtype."""
    o, w = ops[0], r.to(ops[1])
    eps = params["eps"]
    if r.policy == "naive":
        mean = r.to(np.mean(r.to(o * o), axis=1, keepdims=True))
        value = r.to(r.to(o / r.to(np.sqrt(r.to(mean + eps)))) * w)
        return lowp.Out(value, notes=(Msg("precision.gated_norm_naive", dtype=str(r.dtype)),))
    mean = r.f32(np.mean(r.f32(o * o), axis=1, keepdims=True))
    normed = r.f32(o * r.f32(1 / r.f32(np.sqrt(r.f32(mean + eps)))))  # torch's rsqrt
    if params.get("strict"):
        value = r.f32(w * normed)
        note = Msg("precision.gated_norm_strict", dtype=str(r.dtype))
        return lowp.Out(value, lowp.SAID, notes=(note,))
    value = r.keep(w * r.keep(normed))
    return lowp.Out(
        value, r.kept, notes=(Msg("precision.gated_norm_eager", dtype=r.kept or str(r.dtype)),)
    )


def _lowp_gated(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """N ⊙ act(Z): act(Z.float()) in float32 times N, cast to the dtype once; naive: act(Z) in
    the dtype, the product rounded."""
    act = ACTS[params.get("act", "silu")]
    n, z = ops
    if r.policy == "naive":
        value = r.to(n * r.to(act(z)))
        return lowp.Out(value, notes=(Msg("precision.gated_naive", dtype=str(r.dtype)),))
    value = r.keep(r.f32(n * r.f32(act(z))))
    return lowp.Out(
        value, r.kept, notes=(Msg("precision.gated_eager", dtype=r.kept or str(r.dtype)),)
    )


OPS = (
    Op(
        "conv_silu",
        _conv,
        _conv_feeds,
        overflow=lambda params: False,
        work=_conv_work,
        torch=lambda params, names, lit: f"conv_silu({names[0]}, {names[1]})",
        torch_defs=TORCH_ACTS + "\n\n" + _TORCH_DEFS,
        plan_back=_conv_grads,
        lowp=_lowp_conv,
    ),
    Op(
        "gdn_gates",
        _gates,
        _gates_feeds,
        work=_gates_work,
        torch=_torch_gates,
        torch_defs=TORCH_ACTS + "\n\n" + _TORCH_DEFS,
        plan_back=_gates_grads,
        lowp=_lowp_gates,
    ),
    Op(
        "gdn_rms",
        _rms,
        _rms_feeds,
        overflow=lambda params: False,
        work=_rms_work,
        torch=lambda params, names, lit: (
            f"rms_normed({names[0]}, {names[1]}[0], {lit.num(params['eps'])})"
        ),
        torch_defs=_TORCH_DEFS,
        backward=_rms_back,
        grad_formula=lambda into, out, x, params: (
            f"ρ·(w ⊙ {out}) − {x}·ρ³·mean({x} ⊙ w ⊙ {out}), ρ = 1/√(mean({x}²) + ε)"
        ),
        grad_work=_rms_grad_work,
        grad_reads=True,
        lowp=_lowp_norm,
    ),
    Op(
        "silu_gate",
        _silu_gate,
        _two_cells,
        work=_silu_gate_work,
        torch=_torch_silu_gate,
        torch_defs=TORCH_ACTS,
        plan_back=_gated_grads,
        lowp=_lowp_gated,
    ),
    Op("gated_back", _gated_back, _two_cells, work=_gated_back_work),
    Op("gated_back_z", _gated_back_z, _three_cells, work=_gated_back_z_work),
    Op("gated_norm_weight_grad", _norm_weight, _norm_weight_feeds, work=_norm_weight_work),
    Op("conv_back", _conv_back, _conv_back_feeds, work=_conv_back_work),
    Op("conv_taps_back", _conv_taps_back, _conv_taps_feeds, work=_conv_taps_work),
    Op("gates_back_a", _gates_back_a, _gates_back_a_feeds, work=_gates_back_a_work),
    Op("gates_back_b", _gates_back_b, _gates_back_b_feeds, work=_gates_back_b_work),
    Op("decay_grads", _decay_grads, _decay_feeds, work=_decay_work),
)
