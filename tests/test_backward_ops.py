"""Each operation's backward beside its forward (qkvcalc.run.op.Op.backward, micrograd's
`_backward`): the gradient it gives each operand equals central finite differences of its own
forward, for random operands. The backward pass (--backward) is built from these; an op that
has none yet is listed, so a new one cannot arrive untested."""

from __future__ import annotations

import numpy as np
import pytest

from qkvcalc.ops.table import OPS

RNG = np.random.default_rng(7)


def _mask_case() -> tuple[list[np.ndarray], dict]:
    allowed = RNG.random((3, 4)) < 0.6
    allowed[:, 0] = True  # every row keeps a key
    return [RNG.normal(size=(3, 4))], {"allowed": allowed}


# op name -> (operands, params): the shapes each op takes
CASES = {
    "project": lambda: ([RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))], {}),
    "matmul": lambda: ([RNG.normal(size=(3, 4)), RNG.normal(size=(4, 5))], {}),
    "transpose": lambda: ([RNG.normal(size=(3, 2))], {}),
    "scale": lambda: ([RNG.normal(size=(3, 3))], {"scale": 0.7}),
    "mask": _mask_case,
    "exp": lambda: ([RNG.normal(size=(3, 4))], {}),
    "softmax": lambda: ([np.exp(RNG.normal(size=(3, 4)))], {}),
    "concat": lambda: ([RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2))], {}),
    # MLA's k = [k_R | K_C]: the shared rotary key beside a head's own columns, of other widths
    "mla_join": lambda: ([RNG.normal(size=(3, 2)), RNG.normal(size=(3, 3))], {}),
    "copy": lambda: ([RNG.normal(size=(3, 2))], {}),
    # DeepSeek-V4's one key/value head read as a head's K (or V), whole
    "mla_kv_head": lambda: ([RNG.normal(size=(3, 4))], {}),
    "add": lambda: ([RNG.normal(size=(3, 3)), RNG.normal(size=(3, 3))], {}),
    "softcap": lambda: ([RNG.normal(0, 3, size=(3, 3))], {"cap": 2.0}),
    "rope": lambda: (
        [RNG.normal(size=(3, 6))],
        {"angles": RNG.normal(size=(3, 2)), "style": "half", "dims": 4, "factor": 1.3},
    ),
    # VO-RoPE's output turned back at its query's position (DeepSeek-V4): the angles −i·ω
    "turn_back": lambda: (
        [RNG.normal(size=(3, 6))],
        {"angles": -RNG.random(size=(3, 2)), "style": "pairs", "dims": 4, "factor": 1.0},
    ),
    "rmsnorm": lambda: ([RNG.normal(size=(3, 4))], {"weight": RNG.normal(size=4), "eps": 1e-3}),
    "row_scale": lambda: ([RNG.normal(size=(3, 4))], {"factors": RNG.normal(size=3)}),
    "layernorm": lambda: (
        [RNG.normal(size=(3, 5))],
        {"weight": RNG.normal(size=5), "bias": RNG.normal(size=5), "eps": 1e-3},
    ),
    # the norm on V (Gemma 3n, Gemma 4): each row over its root mean square, no weight
    "v_rmsnorm": lambda: ([RNG.normal(size=(3, 4))], {"eps": 1e-3}),
    # differential attention: Δ = A_i − λ·A_j, V'' = [V_i | V_j], the group norm, 1 − λ_init
    "diff_maps": lambda: ([RNG.random((3, 4)), RNG.random((3, 4))], {"lambda": 0.6}),
    "diff_join": lambda: ([RNG.normal(size=(4, 2)), RNG.normal(size=(4, 2))], {}),
    "group_rms": lambda: ([RNG.normal(size=(3, 4))], {"eps": 1e-3}),
    "diff_scale": lambda: ([RNG.normal(size=(3, 4))], {"factor": 0.8}),
    # the linear-attention layers (issue 37): lightning's silu on q, k, v; Gated DeltaNet's and
    # Kimi Delta Attention's L2 norm, q's with its scale
    "silu": lambda: ([RNG.normal(0, 2, size=(3, 4))], {}),
    "l2norm": lambda: ([RNG.normal(size=(3, 4))], {"scale": 0.6}),
    # Gated DeltaNet's gated norm: a row over its root mean square, times the weight (1 × d)
    "gdn_rms": lambda: ([RNG.normal(size=(3, 4)), RNG.normal(size=(1, 4))], {"eps": 1e-3}),
    # DeepSeek-V4's compressed entries: each slot's share in its window (7 tokens, windows of
    # 2, the last token in none), and the entries pooled from the shares and the values
    "pool_softmax": lambda: (
        [RNG.normal(size=(7, 6))],
        {"bias": RNG.normal(size=(2, 6)), "m": 2, "overlap": True},
    ),
    "pool_sum": lambda: (
        [RNG.random((6, 3)), RNG.normal(size=(7, 3))],
        {"m": 2, "overlap": False},
    ),
}


def finite_differences(op, operands, params, g, k, step=1e-6):
    """∂(Σ g ⊙ op(operands))/∂operands[k], cell by cell, by central differences."""
    grad = np.zeros_like(operands[k])
    for index in np.ndindex(grad.shape):
        up = [o.copy() for o in operands]
        down = [o.copy() for o in operands]
        up[k][index] += step
        down[k][index] -= step
        hi, lo = op.compute(up, params, None), op.compute(down, params, None)
        live = np.isfinite(hi) & np.isfinite(lo)  # a masked −∞ stays −∞: it varies by nothing
        grad[index] = (np.sum(g[live] * hi[live]) - np.sum(g[live] * lo[live])) / (2 * step)
    return grad


def test_every_op_with_a_backward_has_a_case():
    assert {name for name, op in OPS.items() if op.backward is not None} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("trial", range(3))
def test_an_ops_backward_equals_finite_differences(name, trial):
    op = OPS[name]
    operands, params = CASES[name]()
    value = op.compute(operands, params, None)
    g = RNG.normal(size=value.shape)
    grads = op.backward(operands, params, value, g)
    assert len(grads) == len(operands)
    for k, grad in enumerate(grads):
        expected = finite_differences(op, operands, params, g, k)
        assert grad.shape == operands[k].shape
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-7)


def test_a_masked_cell_gets_no_gradient_through_the_softmax():
    """−∞ in: its exponential is 0, and so is the gradient that reaches it."""
    s = np.array([[1.0, -np.inf, 0.5]])
    e = OPS["exp"].compute([s], {}, None)
    g = RNG.normal(size=e.shape)
    (ds,) = OPS["exp"].backward([s], {}, e, g)
    assert ds[0, 1] == 0
