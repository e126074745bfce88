"""A JSON trace's "input" gives every weight in the rows layout and says `"layout": "rows"`,
whatever layout the problem was given in: a feature's own weights too. Before, the gate's W_G,
Gated DeltaNet's and Kimi Delta Attention's projections and lightning's gate were echoed out × in
for a torch-layout problem, under "rows", so the trace could not be run again (a message about
W_G's shape) or ran a different layer. Each case here gives its problem in the torch layout,
writes the JSON trace, runs its "input" again and gets the same output."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.test_arith_invariant import GDN_LAYER, KDA_LAYER
from tests.test_gate import DOC as GATE
from tests.test_lightning import FULL as LIGHTNING

CORE = ("wq", "wk", "wv", "wo")
# each case: the problem in the rows layout, its feature, and that feature's keys given out × in
# in the torch layout (as nn.Linear stores them)
CASES: dict[str, tuple[dict[str, Any], str | None, tuple[str, ...]]] = {
    "gate": (GATE, None, ("wg",)),
    "lightning": (LIGHTNING, "lightning", ("gate",)),
    "gated_delta": (GDN_LAYER, "gated_delta", ("wa", "wb", "wz")),
    "kimi_delta": (KDA_LAYER, "kimi_delta", ("wf_a", "wf_b", "wb", "wg_a", "wg_b")),
}


def _torch_layout(doc: dict[str, Any], feature: str | None, keys: tuple[str, ...]) -> dict:
    def out_by_in(value: Any) -> list:
        return np.asarray(value, dtype=float).T.tolist()

    turned = {**doc, "layout": "torch", **{k: out_by_in(doc[k]) for k in CORE if k in doc}}
    if feature is None:
        turned.update({k: out_by_in(doc[k]) for k in keys})
    else:
        inner = dict(doc[feature])
        inner.update({k: out_by_in(inner[k]) for k in keys})
        turned[feature] = inner
    return turned


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_torch_layout_problems_json_trace_runs_again_to_the_same_output(case):
    doc, feature, keys = CASES[case]
    torch_doc = _torch_layout(doc, feature, keys)
    trace = run(Problem.from_mapping(torch_doc))
    # the torch layout reads the same layer as the rows layout
    np.testing.assert_allclose(trace.output, run(Problem.from_mapping(doc)).output, atol=1e-12)
    echoed = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))["input"]
    assert echoed["layout"] == "rows"
    again = run(Problem.from_mapping(echoed))
    np.testing.assert_allclose(again.output, trace.output, rtol=0, atol=1e-12)
    # and the feature's weights are the rows-layout ones, in, out
    given = doc if feature is None else doc[feature]
    said = echoed if feature is None else echoed[feature]
    for key in keys:
        assert np.shape(said[key]) == np.shape(given[key]), key
