"""How the linear-attention layers round in a low-precision dtype (--dtype; the words are
qkvcalc.ops.rounding's): the rules their ops share, each module attaching them to its own ops.

The two families round their state differently, as transformers' code does:

    Gated DeltaNet (Qwen3-Next's torch_recurrent_gated_delta_rule) and Kimi Delta Attention
    (Kimi Linear's recurrent_kimi_delta_attention), --policy eager: q, k, v, g and β are cast to
    float32 first, l2norm and the scale of q̂ are taken in float32 after that cast, the state is
    kept in float32 token after token, and only the output is cast back to the dtype.
    MiniMax's linear layer (MiniMaxLightningAttention), every policy: no cast at all, so
    the state is kept in the dtype and rounded at every step.

--policy naive: a hand-written layer, every tensor in the dtype (the state too). Each op's
result is rounded (`rnd`: r.f32 for float32 work, r.to for the dtype); an elementwise product
or a sum over a row, as torch writes them ((S * k[:, None]).sum(-2)), rounds the products and
then the sum (the sum accumulated in float32, as torch sums a bfloat16 or float16 tensor).

The implicit weights W and the chunked (blocked) form are never formed by the recurrent layer:
they are shown in float32, each the op applied exactly (float64) to the dtype's operands, then
rounded to float32 once (`shown`), to be read beside the recurrent output.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Params
from qkvcalc.ops.rounding import SAID, SHOWN, Out, Rounding, Rule

Round = Callable[[Any], np.ndarray]


def working(r: Rounding, upcast: bool) -> Round:
    """What each op's result is rounded to: float32 where the layer casts to float32 first
    (`upcast`, under eager), else the dtype (kept in float32 under scaled float8, as every
    computed stage is)."""
    if upcast and r.policy != "naive":
        return r.f32
    return r.keep if r.policy != "naive" else r.to


def summed(rnd: Round, terms: np.ndarray, axis: int) -> np.ndarray:
    """The products `terms` rounded, then summed over `axis` (accumulated wide) and rounded."""
    return rnd(np.sum(rnd(terms), axis=axis))


def delta_step(
    prev: np.ndarray, k: np.ndarray, v: np.ndarray, g: Any, beta: float, rnd: Round
) -> np.ndarray:
    """One token of the delta rule as transformers writes it, each op rounded by `rnd`:
    S = S·e^g (g one number, or one per Key channel: each row its own); m = (S * k).sum(−2);
    δ = (v − m)·β; S + k·δᵀ. [d_k, d_v]."""
    decay = rnd(np.exp(np.asarray(g, dtype=np.float64)))
    decayed = rnd(prev * (decay[:, None] if decay.ndim else decay))
    memory = summed(rnd, decayed * k[:, None], 0)
    delta = rnd(rnd(v - memory) * beta)
    return rnd(decayed + rnd(k[:, None] * delta[None, :]))


def read(q: np.ndarray, states: Sequence[np.ndarray], rnd: Round) -> np.ndarray:
    """Row t: (S_t * q_t[:, None]).sum(−2), each product and the sum rounded by `rnd`."""
    return np.stack([summed(rnd, s * q[t][:, None], 0) for t, s in enumerate(states)])


def l2norm_rule(eps: float, upcast: str, naive: str) -> Rule:
    """l2norm(x)·scale: eager (after the layer's cast to float32, `upcast` its note): x·rsqrt(Σx²
    + ε) in float32 then times the scale in float32, kept in float32 (the layer's own);
    naive: x², the sum, + 10⁻⁶, the root, the division and the scale each in the dtype."""

    def rule(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
        x, scale = ops[0], float(params["scale"])
        # torch multiplies (and adds) a Python number as it is, the result rounded
        if r.policy == "naive":
            total = summed(r.to, x * x, 1)[:, None]
            value = r.to(x / r.to(np.sqrt(r.to(total + eps))))
            value = value if scale == 1.0 else r.to(value * scale)
            said = naive if scale != 1.0 else naive + "_unscaled"
            return Out(value, notes=(Msg(said, dtype=str(r.dtype)),))
        total = summed(r.f32, x * x, 1)[:, None]
        # torch's rsqrt in float32: the root rounded, then its reciprocal rounded
        inverse = r.f32(1 / r.f32(np.sqrt(r.f32(total + eps))))
        value = r.f32(x * inverse)
        value = value if scale == 1.0 else r.f32(value * r.f32(np.float64(scale)))
        said = upcast if scale != 1.0 else upcast + "_unscaled"  # K's norm: no scale to name
        return Out(value, SAID, notes=(Msg(said, dtype=r.kept or str(r.dtype)),))

    return rule


def step_rule(
    split: Callable[[np.ndarray, int], tuple[Any, float]], upcast: bool, eager: str, naive: str
) -> Rule:
    """S_t from S_(t−1), k̂, v and the gates (`split`: the gates' row t as (g, β)): the state in
    float32 (`upcast`, under eager) or in the dtype; `eager`, `naive`: the notes' keys."""

    def rule(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
        prev, k, v, gates = ops
        t = params["t"]
        g, beta = split(gates, t)
        rnd = working(r, upcast)
        value = delta_step(prev, k[t], v[t], g, beta, rnd)
        wide = upcast and r.policy != "naive"
        note = Msg(naive if r.policy == "naive" else eager, dtype=str(r.dtype))
        return Out(value, SAID if wide else r.kept, notes=(note,))

    return rule


def read_rule(upcast: bool, eager: str, naive: str, drops: tuple[str, ...]) -> Rule:
    """o_t = S_tᵀ·q̂_t: in float32 then cast to the dtype once (`upcast`, under eager: the
    layer's `.to(initial_dtype)`), or in the dtype; `drops`: the keys of the output's notes that
    compare it in float64 with W·V and the chunked form (the dtype's numbers are not float64's)."""

    def rule(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
        q, states = ops[0], ops[1:]
        if upcast and r.policy != "naive":
            value = r.keep(read(q, states, r.f32))
            key = eager
        else:
            value = read(q, states, working(r, False))
            key = naive if r.policy == "naive" else eager
        return Out(value, r.kept, notes=(Msg(key, dtype=r.kept or str(r.dtype)),), drops=drops)

    return rule


def shown(compute: Callable[[Sequence[np.ndarray], Params], np.ndarray], key: str) -> Rule:
    """A stage the recurrent layer never forms (W, the chunked form): the op applied exactly to
    the dtype's operands, rounded to float32 once, shown to be read (its note `key` says so)."""

    def rule(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
        value = r.f32(compute([np.asarray(o, dtype=np.float64) for o in ops], params))
        return Out(value, SHOWN, notes=(Msg(key, dtype=str(r.dtype)),))

    return rule
