"""--format torch applies the plan: every op a forward plan can hold says how its stage is computed
in PyTorch (Op.torch), and the script's stages, run in torch, are qkvcalc's own, stage by stage.

The plans walked: every preset as itself, decoding (--decode 1), in tiles (--tiles 2) and with
--backward, and every feature combination of the backward tests; each variant a preset refuses
is left out (its message is tested where the refusal is). Each stage the script assigns is
compared with the value qkvcalc recorded for it (its float64 twin under --dtype), to 1e-9
relative to the stage's largest entry; −∞ and NaN where qkvcalc has them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from qkvcalc.errors import QkvcalcError
from qkvcalc.input import presets
from qkvcalc.input.dataset import first_example
from qkvcalc.input.problem import Problem
from qkvcalc.ops import flash_grads, grads, loss
from qkvcalc.ops.table import OPS
from qkvcalc.render.torch_script import forward_stages, plan_lines, stage_name
from qkvcalc.run.engine import run
from tests.test_backward import FEATURES, make
from tests.test_gate_softplus import DOC as SOFTPLUS_GATE

# the ops of the backward pass alone: the script's gradients are autograd's (the check of
# qkvcalc's), so these need no torch rule; the walk below checks none is in a forward plan
BACKWARD_ONLY = {
    *grads.OPS,
    *flash_grads.OPS,
    *(op.name for op in loss.OPS),  # where the gradient starts (dO, or dA with attend)
    "mla_norm_weight",  # dw of a latent's RMSNorm weight
    "sink_grad",
    "sink_grad_tiles",
    "gate_back",
    "sigmoid_back",
    "softplus_back",
    # the linear layers' backward: their states' gradients, dQ, dK, dV (and dg, dβ), the norms'
    "gdn_grad_state",
    "gdn_grad_q",
    "gdn_grad_k",
    "gdn_grad_v",
    "gdn_grad_gates",
    "gated_back",
    "gated_back_z",
    "gated_norm_weight_grad",
    # the whole Gated DeltaNet layer's: through the convolution (dQ, d(taps)), the gates (da, db,
    # dA_log and d(dt_bias))
    "conv_back",
    "conv_taps_back",
    "gates_back_a",
    "gates_back_b",
    "decay_grads",
    "kda_gates_back_f",  # Kimi Delta Attention's: dF and each head's dA_log, d(dt_bias)
    "kda_decay_grads",
    "lightning_grad_state",
    "lightning_grad_q",
    "lightning_grad_k",
    "lightning_grad_v",
    "rms_share",
    "rms_back",
    "norm_weight_grad",
    # DeepSeek-V4's compressed entries: the pool's backward (dP and dC_E, the position bias dB)
    "pool_sum_grad",
    "pool_bias_grad",
}

VARIANTS: dict[str, dict[str, Any]] = {
    "": {},
    " --decode 1": {"decode": 1},
    " --tiles 2": {"tiles": 2},
}


def _traces() -> dict[str, Any]:
    out = {}
    for name in sorted(presets.names()):
        doc = first_example(presets.load(name))
        for said, extra in VARIANTS.items():
            try:
                out[f"{name}{said}"] = run(Problem.from_mapping({**doc, **extra}))
            except QkvcalcError:  # the preset refuses it (a linear layer has no decode yet)
                continue
        try:
            out[f"{name} --backward"] = run(replace(Problem.from_mapping(doc), backward=True))
        except QkvcalcError:
            continue
    # the output gate with gate_act softplus (Laguna's): no preset has it
    out["gate_act softplus --backward"] = run(
        replace(
            Problem.from_mapping({**SOFTPLUS_GATE, "grad_output": [[1.0, -0.5]] * 4}), backward=True
        )
    )
    for feature in FEATURES:
        out[f"feature {feature}"] = run(
            replace(Problem.from_mapping(make(feature, "target", 1)), backward=True)
        )
    return out


TRACES = _traces()


def test_every_op_but_the_backward_passes_has_a_torch_rule():
    missing = sorted(
        name for name, op in OPS.items() if op.torch is None and name not in BACKWARD_ONLY
    )
    assert not missing, f"ops without Op.torch: {missing}"
    assert set(OPS) >= BACKWARD_ONLY


def test_every_forward_stage_walked_has_a_rule_and_no_backward_op_is_forward():
    seen = set()
    for key, trace in TRACES.items():
        for stage in forward_stages(trace):
            assert OPS[stage.op].torch is not None, f"{key}: {stage.id} ({stage.op})"
            assert stage.op not in BACKWARD_ONLY, f"{key}: {stage.id} ({stage.op})"
            seen.add(stage.op)
    # the walk reaches the ops it is meant to check: the core's, tiles', decoding's, the layers'
    for op in (
        "project",
        "softmax",
        "acc",
        "qk",
        "delta_step",
        "kda_chunked",
        "lightning_step",
        "softplus",
    ):
        assert op in seen, op


def _run_plan(trace: Any) -> dict[str, Any]:
    torch = pytest.importorskip("torch")
    import math

    defs, steps = plan_lines(trace, {})  # every constant written out
    space: dict[str, Any] = {"torch": torch, "math": math}
    exec(compile("\n\n\n".join([*defs, "\n".join(steps)]), "<plan>", "exec"), space)
    return space


@pytest.mark.parametrize("key", sorted(TRACES))
def test_the_plan_in_torch_gives_every_stage_qkvcalc_computed(key):
    trace = TRACES[key]
    space = _run_plan(trace)
    for stage in forward_stages(trace):
        want = stage.twin_value if stage.twin_value is not None else stage.value
        got = space[stage_name(stage.ref)].detach().numpy()
        assert got.shape == want.shape, f"{stage.id} h{stage.head}: {got.shape} {want.shape}"
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        scale = max(1.0, float(np.abs(want[finite]).max(initial=0.0)))
        np.testing.assert_allclose(
            got[finite], want[finite], rtol=0, atol=1e-9 * scale, err_msg=f"{key}: {stage.ref}"
        )


def test_a_wrong_rule_is_caught_stage_by_stage(monkeypatch):
    """The check above can fail: a softmax rule that forgets the row sum's guard still gives
    numbers, and the weights stage is where they part from qkvcalc's."""
    trace = TRACES["doc"]
    wrong = OPS["softmax"]._replace(torch=lambda params, names, lit: f"{names[0]} * 2")
    monkeypatch.setitem(OPS, "softmax", wrong)
    space = _run_plan(trace)
    stage = trace.stage("weights")
    assert not np.allclose(space[stage_name(stage.ref)].numpy(), stage.value)


def test_a_large_problem_writes_each_constant_once_and_checks_only_its_output():
    """48 tokens, 4 heads, causal, RoPE: the stages hold far more numbers than the script writes
    (STAGES_WRITTEN), so only the output is checked; the heads' one mask and one table of
    angles are written once, and X is the script's own."""
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.torch_script import render_torch

    rng = np.random.default_rng(3)
    n, d = 48, 8
    doc = {
        "x": rng.integers(-3, 4, (n, d)).tolist(),
        **{w: rng.integers(-2, 3, (d, d)).tolist() for w in ("wq", "wk", "wv")},
        "heads": 4,
        "mask": "causal",
        "rope": {"theta": 10000},
    }
    text = render_torch(run(Problem.from_mapping(doc)), RenderOptions())
    assert "stage_check(" not in text
    assert "too many numbers to write here" in text
    assert text.count('torch.tensor([[c == "1" for c in row]') == 1  # the mask, once
    assert "s_x = X.detach()" in text
    turns = [line for line in text.splitlines() if line.startswith("s_") and " = rotate(" in line]
    assert len(turns) == 8  # q and k of 4 heads, every one reading the same angles
    assert len({line.split(", ")[1] for line in turns}) == 1
