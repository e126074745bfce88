"""What a Kimi Delta Attention layer adds around its core (Kimi Linear's KimiLinearDeltaAttention):
the pieces of its forward before and after the delta rule, as stages of each head. The core and
the keys are its feature module's; what is the same as Gated DeltaNet's layer is gdn_layer.py's
(the causal convolution and SiLU, softplus and σ, the RMS norm, the gated product).

    conv    Q_c = SiLU(conv(Q)), K_c, V_c alike (gdn_layer.conv_stages)
    f_a     F_a = X·W_fa           (f_a_proj: d_model → r, shared by the heads)
    f       F = F_a·W_fb           (f_b_proj: r → H·d_k, the head's d_k columns), or F = X·W_f
            with the projection in one (Ling 3.0's f_proj: no f_a)
    b       b = X·W_b              (b_proj: the head's column)
    gates   g[t, c] = −e^(A_log)·softplus(F[t, c] + dt_bias[c]),  β = σ(b)
            (KimiLinearForgetGate: one decay per Key channel; A_log one per head, dt_bias one
            per channel); with lower_bound b (Ling 3.0's kda_safe_gate):
            g[t, c] = b·σ(e^(A_log)·(F[t, c] + dt_bias[c])), in (b, 0)
    g_a     G_a = X·W_ga           (g_a_proj: d_model → r)
    z       Z = G_a·W_gb           (g_b_proj: r → H·d_v, the head's d_v columns), or Z = X·W_z
            with the projection in one (Ling 3.0's g_proj: no g_a)
    normed  o / √(mean(o²) + ε) · w       (KimiLinearRMSNormGated, per head)
    gated   normed ⊙ σ(Z)                 (its activation is sigmoid, not SiLU)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.ops import gdn_layer
from qkvcalc.ops.op import Feeds, Literals, Op, Params, Shapes
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels

# ---- the stages --------------------------------------------------------------------------------


LETTERS = {"f_a": "n×r", "f": "n×d_k", "b": "n×1", "g_a": "n×r", "z": "n×d_v"}


def _product(
    sid: str,
    h: int | None,
    left: tuple[Ref, str],
    w: np.ndarray,
    weight: str,
    rows: Any,
    whole: bool = False,
) -> Spec:
    """`sid` = left·weight (a product of the layer's, w already the head's columns); `whole`: F
    or Z straight from X, the projection in one (its own topic)."""
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
        topic=f"kda_{sid}_whole" if whole else f"kda_{sid}",
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


def bound_text(bound: float) -> str:
    """The bounded decay's b as the formulas write numbers: −3, not -3."""
    return f"{bound:g}".replace("-", "−")


def gate_stages(p: Any, value: Any, h: int | None) -> list[Spec]:
    """F_a = X·W_fa, F = F_a·W_fb (the head's d_k columns), b = X·W_b (its column), then each
    channel's g and β from them."""
    col = (h or 1) - 1
    x = gdn_layer._x(p)
    cols, cut, label = _cuts(p, value, h, p.d_k)
    rows = p.tokens
    if value.wf is not None:  # the projection in one (Ling 3.0's f_proj)
        before = [_product("f", h, x, value.wf[:, cols], f"W_f{label}{cut}", rows, True)]
    else:
        f_a = _product("f_a", h, x, value.wf_a, f"W_fa{label}", rows)
        f_ref = (f_a.ref, "F_a")
        before = [f_a, _product("f", h, f_ref, value.wf_b[:, cols], f"W_fb{label}{cut}", rows)]
    one = f"[:, {col + 1}]" if p.heads > 1 else ""
    b = _product("b", h, x, value.wb[:, col : col + 1], f"W_b{label}{one}", rows)
    a_log, bound = float(value.a_log[col]), value.lower_bound
    rate = f"{math.exp(a_log):.6g}"
    if bound is None:
        formula = f"g = −e^({a_log:.4g})·softplus(F + dt_bias{cut}),  β = σ(b)"
        note = Msg("note.kda_gates_made", a_log=f"{a_log:.6g}", decay=rate)
    else:
        formula = f"g = {bound_text(bound)}·σ(e^({a_log:.4g})·(F + dt_bias{cut})),  β = σ(b)"
        note = Msg(
            "note.kda_gates_bounded", a_log=f"{a_log:.6g}", decay=rate, bound=bound_text(bound)
        )
    made = Spec(
        "gates",
        h,
        "kda_gates",
        (before[-1].ref, b.ref, Const(np.asarray(value.dt_bias[cols], dtype=np.float64)[None, :])),
        formula,
        rows,
        (*(f"g_{c}" for c in range(1, p.d_k + 1)), "β"),
        params={"a_log": a_log} if bound is None else {"a_log": a_log, "lower_bound": bound},
        notes=(note,),
        topic="kda_gates_made" if bound is None else "kda_gates_bounded",
        symbol="g,β",
        letters="n×(d_k+1)",
    )
    return [*before, b, made]


def norm_stages(p: Any, value: Any, h: int | None, output: Ref) -> list[Spec]:
    """G_a = X·W_ga, Z = G_a·W_gb (the head's d_v columns), then the core output RMS-normed
    times w and ⊙ σ(Z) (gdn_layer's gated norm with σ)."""
    cols, cut, label = _cuts(p, value, h, p.d_v)
    x = gdn_layer._x(p)
    if value.wz is not None:  # the projection in one (Ling 3.0's g_proj)
        before = [_product("z", h, x, value.wz[:, cols], f"W_z{label}{cut}", p.tokens, True)]
    else:
        g_a = _product("g_a", h, x, value.wg_a, f"W_ga{label}", p.tokens)
        z = _product("z", h, (g_a.ref, "G_a"), value.wg_b[:, cols], f"W_gb{label}{cut}", p.tokens)
        before = [g_a, z]
    z_ref = before[-1].ref
    return [*before, *gdn_layer.gated_norm(p, value, h, output, z_ref, "sigmoid", "kda")]


# ---- the operation -----------------------------------------------------------------------------


def bounded(f: np.ndarray, a_log: float, dt_bias: Any, bound: float) -> np.ndarray:
    """g = bound·σ(e^(A_log)·(f + dt_bias)), elementwise: in (bound, 0) (Ling 3.0's
    kda_safe_gate)."""
    return bound * gdn_layer.sigmoid(math.exp(a_log) * (f + dt_bias))


def made_gates(
    f: np.ndarray, b: np.ndarray, a_log: float, dt_bias: np.ndarray, bound: float | None = None
) -> np.ndarray:
    """[n, d_k], [n, 1] -> [n, d_k + 1]: each channel's g (bounded by `bound` when given), then
    β."""
    g = gdn_layer.decay(f, a_log, dt_bias) if bound is None else bounded(f, a_log, dt_bias, bound)
    return np.column_stack([g, gdn_layer.sigmoid(b[:, 0])])


def _gates(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    f, b, dt_bias = ops
    return made_gates(f, b, params["a_log"], dt_bias[0], params.get("lower_bound"))


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
    a_log, bound = stage.params["a_log"], stage.params.get("lower_bound")
    if bound is not None:
        return bounded_line(style, i, j, (float(f[i, j]), float(dt_bias[0, j])), a_log, bound,
                            value, result)  # fmt: skip
    return gdn_layer.decay_line(
        style, i, j, float(f[i, j]), a_log, float(dt_bias[0, j]), value, result
    )


def _lowp_gates(ops: Sequence[np.ndarray], params: Params, r: Any) -> Any:
    """g per Key channel in float32 from F.float() (KimiLinearForgetGate), β = σ(b) in the
    dtype; naive every op in the dtype (gdn_layer's words). Ling 3.0's bounded decay
    (`lower_bound`) is refused: its model keeps conv1d, A_log and dt_bias in float32 in a
    low-precision checkpoint (`_keep_in_fp32_modules_strict`), which these rules do not follow."""
    if params.get("lower_bound") is not None:
        raise QkvcalcError("precision.kda_bounded")
    f, b, dt_bias = ops
    g = gdn_layer.decay_of(f, params["a_log"], dt_bias[0], r)
    return gdn_layer.gates_out(g, gdn_layer.beta_of(b[:, 0], 1.0, r), r, "kda_gates")


def bounded_line(
    style: Any,
    i: int,
    j: int,
    f_dt: tuple[float, float],
    a_log: float,
    bound: float,
    value: float,
    result: str,
) -> str:
    """[i,j]: b×σ(e^(A_log)×(F + dt_bias)) = b×σ(…) = g"""
    s, f = style.shown, style.factor
    x, dt_bias = f_dt
    inner = math.exp(a_log) * (x + dt_bias)
    sig = float(gdn_layer.sigmoid(np.array([inner]))[0])
    written = s(bound) * float(
        gdn_layer.sigmoid(np.array([math.exp(s(a_log)) * (s(x) + s(dt_bias))]))[0]
    )
    middle = s(bound) * s(sig)
    sigma = r"\sigma" if style.latex else "σ"
    link = gdn_layer._link(style, written, middle)
    left = (
        f"{style.at(i + 1, j + 1)}{f(bound)}{style.times}{sigma}({style.exp(style.num(a_log))}"
        f"{style.times}({style.num(x)} + {style.num(dt_bias)})){link}{f(bound)}{style.times}"
        f"{f(sig)}"
    )
    return style.line(left, middle, value, result)


# ---- in PyTorch (--format torch): each channel's g, then beta ----


def _torch_gates(params: Params, names: Sequence[str], lit: Literals) -> str:
    f, b, dt_bias = names
    a_log, bound = lit.num(params["a_log"]), params.get("lower_bound")
    g = (
        f"decay({f}, {a_log}, {dt_bias}[0])"
        if bound is None
        else f"{lit.num(bound)} * sigmoid(math.exp({a_log}) * ({f} + {dt_bias}[0]))"
    )
    return f"torch.hstack([{g}, sigmoid({b}[:, 0])[:, None]])"


OPS = (
    Op(
        "kda_gates",
        _gates,
        _gates_feeds,
        work=_gates_work,
        torch=_torch_gates,
        torch_defs=gdn_layer.TORCH_ACTS,
        lowp=_lowp_gates,
    ),
)


# ---- the torch lines ---------------------------------------------------------------------------


def torch_gates(value: Any, literal: Any, num: Any) -> list[str]:
    """g [1, H, n, d_k] and beta [1, H, n] made from X, as KimiLinearForgetGate (or Ling 3.0's
    BailingHybridForgetGate: f_proj in one, the bounded decay) and b_proj."""
    if value.wf is not None:
        weights = [f"W_f = t({literal(value.wf)})  # [d_model, H*d_k]"]
        product = "X @ W_f"
    else:
        weights = [
            f"W_fa = t({literal(value.wf_a)})  # [d_model, r]",
            f"W_fb = t({literal(value.wf_b)})  # [r, H*d_k]",
        ]
        product = "X @ W_fa @ W_fb"
    if value.lower_bound is None:
        said = f"# g = -exp(A_log) * softplus({product} + dt_bias), beta = sigmoid(X @ W_b)"
        g = "g = (-A_log.exp()[:, None, None] * F.softplus(a)).unsqueeze(0)  # [1, H, n, d_k]"
    else:
        bound = num(value.lower_bound)
        said = (
            f"# g = {bound} * sigmoid(exp(A_log) * ({product} + dt_bias)), beta = sigmoid(X @ W_b)"
        )
        g = f"g = ({bound} * torch.sigmoid(A_log.exp()[:, None, None] * a)).unsqueeze(0)"
    return [
        "# g and beta made from X (forget_gate, b_proj): one decay per Key channel,",
        said,
        *weights,
        f"A_log = t({literal(value.a_log)})  # [H]",
        f"dt_bias = t({literal(value.dt_bias)})  # [H*d_k]",
        f"W_b = t({literal(value.wb)})  # [d_model, H]",
        f"a = ({product} + dt_bias).reshape(n, H, d_k).transpose(0, 1)  # [H, n, d_k]",
        g,
        "beta = torch.sigmoid(X @ W_b).T.unsqueeze(0)  # [1, H, n]",
    ]


def torch_norm(value: Any, literal: Any, num: Any) -> list[str]:
    """The gated RMSNorm after the core (KimiLinearRMSNormGated): σ(Z), not SiLU."""
    if value.wz is not None:
        weights = [f"W_z = t({literal(value.wz)})  # [d_model, H*d_v]"]
        product = "X @ W_z"
    else:
        weights = [
            f"W_ga = t({literal(value.wg_a)})  # [d_model, r]",
            f"W_gb = t({literal(value.wg_b)})  # [r, H*d_v]",
        ]
        product = "X @ W_ga @ W_gb"
    return [
        "# The gated RMSNorm (KimiLinearRMSNormGated): each head's output over its root mean",
        f"# square, times w, times sigmoid(Z), Z = {product} (the head's columns).",
        *weights,
        f"w_norm = t({literal(value.norm)})  # [d_v]",
        f"z = ({product}).reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
        f"heads = heads * torch.rsqrt(heads.pow(2).mean(-1, keepdim=True) + {num(value.norm_eps)})",
        "heads = heads * w_norm * torch.sigmoid(z)",
    ]
