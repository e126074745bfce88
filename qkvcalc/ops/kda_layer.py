"""What a Kimi Delta Attention layer adds around its core (Kimi Linear's KimiLinearDeltaAttention):
the pieces of its forward before and after the delta rule, as stages of each head. The core and
the keys are its feature module's; what is the same as Gated DeltaNet's layer is gdn_layer.py's
(the causal convolution and SiLU, softplus and σ, the RMS norm, the gated product).

    conv    Q_c = SiLU(conv(Q)), K_c, V_c alike (gdn_layer.conv_stages)
    f_a     F_a = X·W_fa           (f_a_proj: d_model → r, shared by the heads)
    f       F = F_a·W_fb           (f_b_proj: r → H·d_k, the head's d_k columns)
    b       b = X·W_b              (b_proj: the head's column)
    gates   g[t, c] = −e^(A_log)·softplus(F[t, c] + dt_bias[c]),  β = σ(b)
            (KimiLinearForgetGate: one decay per Key channel; A_log one per head, dt_bias one
            per channel)
    g_a     G_a = X·W_ga           (g_a_proj: d_model → r)
    z       Z = G_a·W_gb           (g_b_proj: r → H·d_v, the head's d_v columns)
    normed  o / √(mean(o²) + ε) · w       (KimiLinearRMSNormGated, per head)
    gated   normed ⊙ σ(Z)                 (its activation is sigmoid, not SiLU)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops import gdn_layer
from qkvcalc.ops.op import Feeds, Op, Params, Shapes
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels

# ---- the stages --------------------------------------------------------------------------------


LETTERS = {"f_a": "n×r", "f": "n×d_k", "b": "n×1", "g_a": "n×r", "z": "n×d_v"}


def _product(
    sid: str, h: int | None, left: tuple[Ref, str], w: np.ndarray, weight: str, rows: Any
) -> Spec:
    """`sid` = left·weight (a product of the layer's, w already the head's columns)."""
    ref, name = left
    symbol = {"f_a": "F_a", "g_a": "G_a"}.get(sid, sid.upper() if sid != "b" else "b")
    return Spec(
        sid,
        h,
        "project",
        (ref, Const(np.ascontiguousarray(w))),
        f"{symbol} = {name}·{weight}",
        rows,
        dim_labels(w.shape[1]) if sid != "b" else ("b",),
        params={},
        names=(name, weight),
        inner=dim_labels(w.shape[0]),
        cell=f"{symbol}[{{i}},{{j}}]",
        topic=f"kda_{sid}",
        symbol=symbol,
        letters=LETTERS[sid],
    )


def _cuts(p: Any, value: Any, h: int | None, width: int) -> tuple[slice, str, str]:
    """Head h's columns of a weight `width` per head, how a formula names them, and ᵀ when the
    weights were given out × in."""
    col = (h or 1) - 1
    cols = slice(col * width, (col + 1) * width)
    cut = f"[:, {cols.start + 1}…{cols.stop}]" if p.heads > 1 else ""
    return cols, cut, "ᵀ" if value.layout == "torch" else ""


def gate_stages(p: Any, value: Any, h: int | None) -> list[Spec]:
    """F_a = X·W_fa, F = F_a·W_fb (the head's d_k columns), b = X·W_b (its column), then each
    channel's g and β from them."""
    col = (h or 1) - 1
    x = gdn_layer._x(p)
    cols, cut, label = _cuts(p, value, h, p.d_k)
    rows = p.tokens
    f_a = _product("f_a", h, x, value.wf_a, f"W_fa{label}", rows)
    f = _product("f", h, (f_a.ref, "F_a"), value.wf_b[:, cols], f"W_fb{label}{cut}", rows)
    one = f"[:, {col + 1}]" if p.heads > 1 else ""
    b = _product("b", h, x, value.wb[:, col : col + 1], f"W_b{label}{one}", rows)
    a_log = float(value.a_log[col])
    made = Spec(
        "gates",
        h,
        "kda_gates",
        (f.ref, b.ref, Const(np.asarray(value.dt_bias[cols], dtype=np.float64)[None, :])),
        f"g = −e^({a_log:.4g})·softplus(F + dt_bias{cut}),  β = σ(b)",
        rows,
        (*(f"g_{c}" for c in range(1, p.d_k + 1)), "β"),
        params={"a_log": a_log},
        notes=(Msg("note.kda_gates_made", a_log=f"{a_log:.6g}", decay=f"{math.exp(a_log):.6g}"),),
        topic="kda_gates_made",
        symbol="g,β",
        letters="n×(d_k+1)",
    )
    return [f_a, f, b, made]


def norm_stages(p: Any, value: Any, h: int | None, output: Ref) -> list[Spec]:
    """G_a = X·W_ga, Z = G_a·W_gb (the head's d_v columns), then the core output RMS-normed
    times w and ⊙ σ(Z) (gdn_layer's gated norm with σ)."""
    cols, cut, label = _cuts(p, value, h, p.d_v)
    g_a = _product("g_a", h, gdn_layer._x(p), value.wg_a, f"W_ga{label}", p.tokens)
    z = _product("z", h, (g_a.ref, "G_a"), value.wg_b[:, cols], f"W_gb{label}{cut}", p.tokens)
    return [g_a, z, *gdn_layer.gated_norm(p, value, h, output, z.ref, "sigmoid", "kda")]


# ---- the operation -----------------------------------------------------------------------------


def made_gates(f: np.ndarray, b: np.ndarray, a_log: float, dt_bias: np.ndarray) -> np.ndarray:
    """[n, d_k], [n, 1] -> [n, d_k + 1]: each channel's g, then β."""
    return np.column_stack([gdn_layer.decay(f, a_log, dt_bias), gdn_layer.sigmoid(b[:, 0])])


def _gates(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    f, b, dt_bias = ops
    return made_gates(f, b, params["a_log"], dt_bias[0])


def _gates_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # g[i, j] reads F[i, j] and dt_bias[j]; β (the last column) reads b[i]
    if j < shapes[0][1]:
        yield 0, i, j
        yield 2, 0, j
    else:
        yield 1, i, 0


def _gates_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: −e^(0.5)×softplus(0.3 + 1) = −1.6487×1.5410 = −2.5407 (channel 1's g);
    [2,5]: σ(0.4) = 0.5987 (β, the last column)"""
    f, b, dt_bias = stage.operands
    value = float(stage.value[i, j])
    if j == f.shape[1]:
        return gdn_layer.sigmoid_line(style, i, j, float(b[i, 0]), value, result)
    a_log = stage.params["a_log"]
    return gdn_layer.decay_line(
        style, i, j, float(f[i, j]), a_log, float(dt_bias[0, j]), value, result
    )


def _lowp_gates(ops: Sequence[np.ndarray], params: Params, r: Any) -> Any:
    """g per Key channel in float32 from F.float() (KimiLinearForgetGate), β = σ(b) in the
    dtype; naive every op in the dtype (gdn_layer's words)."""
    f, b, dt_bias = ops
    g = gdn_layer.decay_of(f, params["a_log"], dt_bias[0], r)
    return gdn_layer.gates_out(g, gdn_layer.beta_of(b[:, 0], 1.0, r), r, "kda_gates")


OPS = (Op("kda_gates", _gates, _gates_feeds, work=_gates_work, lowp=_lowp_gates),)


# ---- the torch lines ---------------------------------------------------------------------------


def torch_gates(value: Any, literal: Any) -> list[str]:
    """g [1, H, n, d_k] and beta [1, H, n] made from X, as KimiLinearForgetGate and b_proj."""
    return [
        "# g and beta made from X (KimiLinearForgetGate, b_proj): one decay per Key channel,",
        "# g = -exp(A_log) * softplus(X @ W_fa @ W_fb + dt_bias), beta = sigmoid(X @ W_b)",
        f"W_fa = t({literal(value.wf_a)})  # [d_model, r]",
        f"W_fb = t({literal(value.wf_b)})  # [r, H*d_k]",
        f"A_log = t({literal(value.a_log)})  # [H]",
        f"dt_bias = t({literal(value.dt_bias)})  # [H*d_k]",
        f"W_b = t({literal(value.wb)})  # [d_model, H]",
        "a = (X @ W_fa @ W_fb + dt_bias).reshape(n, H, d_k).transpose(0, 1)  # [H, n, d_k]",
        "g = (-A_log.exp()[:, None, None] * F.softplus(a)).unsqueeze(0)  # [1, H, n, d_k]",
        "beta = torch.sigmoid(X @ W_b).T.unsqueeze(0)  # [1, H, n]",
    ]


def torch_norm(value: Any, literal: Any, num: Any) -> list[str]:
    """The gated RMSNorm after the core (KimiLinearRMSNormGated): σ(Z), not SiLU."""
    return [
        "# The gated RMSNorm (KimiLinearRMSNormGated): each head's output over its root mean",
        "# square, times w, times sigmoid(Z), Z = X @ W_ga @ W_gb (the head's columns).",
        f"W_ga = t({literal(value.wg_a)})  # [d_model, r]",
        f"W_gb = t({literal(value.wg_b)})  # [r, H*d_v]",
        f"w_norm = t({literal(value.norm)})  # [d_v]",
        "z = (X @ W_ga @ W_gb).reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
        f"heads = heads * torch.rsqrt(heads.pow(2).mean(-1, keepdim=True) + {num(value.norm_eps)})",
        "heads = heads * w_norm * torch.sigmoid(z)",
    ]
