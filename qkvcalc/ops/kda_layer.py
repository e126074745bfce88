"""What a Kimi Delta Attention layer adds around its core (Kimi Linear's KimiLinearDeltaAttention):
the pieces of its forward before and after the delta rule, as stages of each head. The core and
the keys are its feature module's; what is the same as Gated DeltaNet's layer is gdn_layer.py's
(the causal convolution and SiLU, softplus and σ, the RMS norm, the gated product).

    conv    Q_c = SiLU(conv(Q)), K_c, V_c alike (gdn_layer.conv_stages)
    f_a     F_a = X·W_fa           (f_a_proj: d_model → r, shared by the heads: made once,
            before them, shared_stages)
    f       F = F_a·W_fb           (f_b_proj: r → H·d_k, the head's d_k columns), or F = X·W_f
            with the projection in one (Ling 3.0's f_proj: no f_a)
    b       b = X·W_b              (b_proj: the head's column)
    gates   g[t, c] = −e^(A_log)·softplus(F[t, c] + dt_bias[c]),  β = σ(b)
            (KimiLinearForgetGate: one decay per Key channel; A_log one per head, dt_bias one
            per channel); with lower_bound b (Ling 3.0's kda_safe_gate):
            g[t, c] = b·σ(e^(A_log)·(F[t, c] + dt_bias[c])), in (b, 0)
    g_a     G_a = X·W_ga           (g_a_proj: d_model → r, made once before the heads too)
    z       Z = G_a·W_gb           (g_b_proj: r → H·d_v, the head's d_v columns), or Z = X·W_z
            with the projection in one (Ling 3.0's g_proj: no g_a)
    normed  o / √(mean(o²) + ε) · w       (KimiLinearRMSNormGated, per head)
    gated   normed ⊙ σ(Z)                 (its activation is sigmoid, not SiLU)

Each product of X (or of F_a, G_a) names the learned weight it slices (`sliced`), so that the
backward gathers dW_fa, dW_fb (or dW_f), dW_b, dW_ga, dW_gb (or dW_z); the gates' backward
(dF, db, each head's dA_log and d(dt_bias)) is this module's, the convolution's and the gated
norm's gdn_layer.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.ops import gdn_layer
from qkvcalc.ops import rounding as lowp
from qkvcalc.ops.op import Back, Feeds, Literals, Op, Params, Shapes
from qkvcalc.ops.projection import sliced
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels

# ---- the stages --------------------------------------------------------------------------------


LETTERS = {"f_a": "n×r", "f": "n×d_k", "b": "n×1", "g_a": "n×r", "z": "n×d_v"}


def _product(
    sid: str,
    h: int | None,
    left: tuple[Ref, str],
    learned: tuple[str, np.ndarray, slice],
    weight: str,
    rows: Any,
    whole: bool = False,
) -> Spec:
    """`sid` = left·weight (a product of the layer's: `learned`, the letter of the learned
    weight it slices, the whole weight and the head's columns, whose gradient the backward
    gathers); `whole`: F or Z straight from X, the projection in one (its own topic)."""
    ref, name = left
    letter, full, cols = learned
    w = np.asarray(full, dtype=np.float64)[:, cols]
    symbol = {"f_a": "F_a", "g_a": "G_a"}.get(sid, sid.upper() if sid != "b" else "b")
    return Spec(
        sid,
        h,
        "project",
        (ref, Const(np.ascontiguousarray(w))),
        f"{symbol} = {name}·{weight}",
        rows,
        dim_labels(w.shape[1]) if sid != "b" else ("b",),
        params=sliced(letter, Matrix(np.asarray(full, dtype=np.float64)), None, cols),
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
        before = [_product("f", h, x, ("f", value.wf, cols), f"W_f{label}{cut}", rows, True)]
    else:  # from the low-rank F_a, made once before the heads (shared_stages)
        f_ref = (("f_a", None), "F_a")
        before = [_product("f", h, f_ref, ("fb", value.wf_b, cols), f"W_fb{label}{cut}", rows)]
    one = f"[:, {col + 1}]" if p.heads > 1 else ""
    b = _product("b", h, x, ("b", value.wb, slice(col, col + 1)), f"W_b{label}{one}", rows)
    a_log, bound = float(value.a_log[col]), value.lower_bound
    rate = f"{gdn_layer.rate(a_log):.6g}"
    if bound is None:
        formula = f"g = −e^({a_log:.4g})·softplus(F + dt_bias{cut}),  β = σ(b)"
        note = Msg("note.kda_gates_made", a_log=f"{a_log:.6g}", decay=rate)
    else:
        formula = f"g = {bound_text(bound)}·σ(e^({a_log:.4g})·(F + dt_bias{cut})),  β = σ(b)"
        note = Msg(
            "note.kda_gates_bounded", a_log=f"{a_log:.6g}", decay=rate, bound=bound_text(bound)
        )
    dt_bias = np.asarray(value.dt_bias[cols], dtype=np.float64)[None, :]
    params: dict[str, Any] = {"a_log": a_log}
    if bound is not None:
        params["lower_bound"] = bound
    if value.kept_float32:  # Ling 3.0's: A_log and dt_bias in float32 under --dtype
        params["float32"] = True
    made = Spec(
        "gates",
        h,
        "kda_gates",
        (before[-1].ref, b.ref, Const(dt_bias, float32=value.kept_float32)),
        formula,
        rows,
        (*(f"g_{c}" for c in range(1, p.d_k + 1)), "β"),
        params=params,
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
        z = _product("z", h, x, ("z", value.wz, cols), f"W_z{label}{cut}", p.tokens, True)
    else:  # from the low-rank G_a, made once before the heads (shared_stages)
        g_a = (("g_a", None), "G_a")
        z = _product("z", h, g_a, ("gb", value.wg_b, cols), f"W_gb{label}{cut}", p.tokens)
    return [z, *gdn_layer.gated_norm(p, value, h, output, z.ref, "sigmoid", "kda")]


def shared_stages(p: Any, value: Any) -> list[Spec]:
    """The low-rank halves every head reads, made once before the heads: F_a = X·W_fa
    (f_a_proj) and G_a = X·W_ga (g_a_proj), when given."""
    x = gdn_layer._x(p)
    label = "ᵀ" if value.layout == "torch" else ""
    out = []
    for sid, letter, weight in (("f_a", "fa", value.wf_a), ("g_a", "ga", value.wg_a)):
        if weight is not None:
            whole = slice(0, weight.shape[1])
            out.append(_product(sid, None, x, (letter, weight, whole), f"W_{letter}{label}",
                                p.tokens))  # fmt: skip
    return out


# ---- the operation -----------------------------------------------------------------------------


def bounded(f: np.ndarray, a_log: float, dt_bias: Any, bound: float) -> np.ndarray:
    """g = bound·σ(e^(A_log)·(f + dt_bias)), elementwise: in (bound, 0) (Ling 3.0's
    kda_safe_gate)."""
    return bound * gdn_layer.sigmoid(gdn_layer.rate(a_log) * (f + dt_bias))


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
    dtype; naive every op in the dtype (gdn_layer's words). Ling 3.0's layer (`float32`) as
    its own model rounds it (_ling_gates). A bounded decay in any other layer is refused: no
    model qkvcalc reads computes one, so there is no rounding to follow."""
    f, b, dt_bias = ops
    beta = gdn_layer.beta_of(b[:, 0], 1.0, r)
    if params.get("float32"):
        return _ling_gates(f, dt_bias[0], beta, params, r)
    if params.get("lower_bound") is not None:
        raise QkvcalcError("precision.kda_bounded")
    g = gdn_layer.decay_of(f, params["a_log"], dt_bias[0], r)
    return gdn_layer.gates_out(g, beta, r, "kda_gates")


def _ling_gates(
    f: np.ndarray, dt_bias: np.ndarray, beta: np.ndarray, params: Params, r: Any
) -> Any:
    """Ling 3.0's BailingHybridForgetGate: A_log and dt_bias kept in float32 (its checkpoint's
    _keep_in_fp32_modules_strict), F.float() + dt_bias, e^(A_log), then b·σ(e^(A_log)·(…)) (or
    −e^(A_log)·softplus(…)), every op in float32, and g cast to the dtype
    (its `.to(hidden_states.dtype)`); naive every op in the dtype, its parameters too."""
    naive = r.policy == "naive"
    rnd = r.to if naive else r.f32
    bound = params.get("lower_bound")
    shifted = rnd(f + rnd(dt_bias))
    rate = rnd(np.exp(rnd(np.asarray(params["a_log"], dtype=np.float64))))
    if bound is None:
        g = rnd(-rate * rnd(gdn_layer.softplus(shifted)))
    else:
        g = rnd(rnd(bound) * rnd(gdn_layer.sigmoid(rnd(rate * shifted))))
    value = np.column_stack([r.keep(g), beta])
    topic = "kda_gates" if bound is None else "kda_bounded"
    if naive:
        return lowp.Out(value, notes=(Msg(f"precision.{topic}_naive", dtype=str(r.dtype)),))
    note = Msg(f"precision.{topic}_float32", dtype=r.kept or str(r.dtype))
    return lowp.Out(value, r.kept, notes=(note,))


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
    inner = gdn_layer.rate(a_log) * (x + dt_bias)
    sig = float(gdn_layer.sigmoid(np.array([inner]))[0])
    written = s(bound) * float(
        gdn_layer.sigmoid(np.array([gdn_layer.rate(s(a_log)) * (s(x) + s(dt_bias))]))[0]
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


# ---- the backward pass (--backward): the gates made from X ---------------------------------------


def _gates_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """g[t, c] = −e^(A_log)·softplus(F[t, c] + dt_bias[c]) (or bound·σ(e^(A_log)·(F + dt_bias))),
    β = σ(b), from d(g, β) (`g`): dF = dg ⊙ ∂g/∂F, db = dβ·σ(b)·(1 − σ(b)) (gdn_layer's), and the
    head's A_log and dt_bias: dA_log = Σ_t Σ_c dg·∂g/∂A_log, d(dt_bias)[c] = Σ_t dF[t, c]."""
    f_ref, b_ref, dt_bias = at.operands
    f = back.by[f_ref]
    bound = at.params.get("lower_bound")
    slope = (
        "−e^(A_log)·σ(F + dt_bias)" if bound is None else "b·e^(A_log)·σ'(e^(A_log)·(F + dt_bias))"
    )
    grad_f = Spec(
        "grad_f",
        at.head,
        "kda_gates_back_f",
        (f_ref, dt_bias, g),
        f"dF = dg ⊙ {slope}",
        at.rows,
        f.cols,
        params=at.params,
        topic="kda_grad_f",
        symbol="dF",
        letters="n×d_k",
    )
    grad_b = Spec(
        "grad_b",
        at.head,
        "gates_back_b",
        (b_ref, g),
        "db = dβ ⊙ σ(b)·(1 − σ(b))",
        at.rows,
        ("b",),
        params={},
        topic="kda_grad_b",
        symbol="db",
        letters="n×1",
    )
    decay = Spec(
        "grad_decay",
        at.head,
        "kda_decay_grads",
        (f_ref, dt_bias, g, grad_f.ref),
        "dA_log = Σ_t Σ_c dg·∂g/∂A_log,  d(dt_bias)[c] = Σ_t dF[t, c]",
        ("d",),
        ("A_log", *(f"dt_bias_{c}" for c in range(1, len(f.cols) + 1))),
        params=at.params,
        topic="kda_grad_decay",
        symbol="dA_log,d(dt_bias)",
        cell="d[{i},{j}]",
        letters="1×(1+d_k)",
    )
    return [grad_f, grad_b, decay]


def _slopes(f: np.ndarray, dt_bias: np.ndarray, params: Params) -> tuple[np.ndarray, np.ndarray]:
    """∂g/∂F and ∂g/∂A_log of every cell."""
    rate, x = gdn_layer.rate(params["a_log"]), f + dt_bias
    bound = params.get("lower_bound")
    if bound is None:
        return -rate * gdn_layer._softplus_slope(x), gdn_layer.decay(f, params["a_log"], dt_bias)
    s = gdn_layer.sigmoid(rate * x)
    inner = bound * s * (1 - s) * rate
    return inner, inner * x


def _gates_back_f(ops: Sequence[np.ndarray], params: Params, rows: Any) -> np.ndarray:
    f, dt_bias, g = ops
    return g[:, :-1] * _slopes(f, dt_bias[0], params)[0]


def _decay_grads(ops: Sequence[np.ndarray], params: Params, rows: Any) -> np.ndarray:
    f, dt_bias, g, df = ops
    by_log = float((g[:, :-1] * _slopes(f, dt_bias[0], params)[1]).sum())
    return np.concatenate([[by_log], df.sum(axis=0)])[None, :]


def _back_f_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, 0, j
    yield 2, i, j


def _decay_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    for t in range(shapes[0][0]):
        if j == 0:
            for c in range(shapes[0][1]):
                yield 0, t, c
                yield 1, 0, c
                yield 2, t, c
        else:
            yield 3, t, j - 1


def _back_f_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.5×(−0.7) = −0.35 (dg times ∂g/∂F, shown as its number)"""
    f, dt_bias, g = stage.operands
    slope = float(_slopes(f[i : i + 1, j], dt_bias[0, j], stage.params)[0][0])
    dg = float(g[i, j])
    left = f"{style.at(i + 1, j + 1)}{style.factor(dg)}{style.times}{style.factor(slope)}"
    return style.line(left, style.shown(dg) * style.shown(slope), float(stage.value[i, j]), result)


def _decay_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,1]: 0.5×(−0.3) + … (dg·∂g/∂A_log over the tokens and channels); [1,c+1]: the column c
    of dF added over the tokens"""
    f, dt_bias, g, df = stage.operands
    fs, s, t = style.factor, style.shown, style.times
    if j == 0:
        by_log = _slopes(f, dt_bias[0], stage.params)[1]
        pairs = [(float(g[r, c]), float(by_log[r, c])) for r in range(f.shape[0])
                 for c in range(f.shape[1])]  # fmt: skip
        terms = [f"{fs(x)}{t}{fs(y)}" for x, y in pairs]
        worked = sum(s(x) * s(y) for x, y in pairs)
    else:
        values = [float(v) for v in df[:, j - 1]]
        terms, worked = [fs(v) for v in values], sum(s(v) for v in values)
    left = f"{style.at(i + 1, j + 1)}" + " + ".join(terms)
    return style.line(left, worked, float(stage.value[i, j]), result)


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
        plan_back=_gates_grads,
        lowp=_lowp_gates,
    ),
    Op("kda_gates_back_f", _gates_back_f, _back_f_feeds, work=_back_f_work),
    Op("kda_decay_grads", _decay_grads, _decay_feeds, work=_decay_work),
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
