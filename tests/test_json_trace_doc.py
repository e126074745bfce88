"""docs/json-trace.md documents every stage id there is, and its sample orders are the real ones.

A stage id a preset or a feature's problem makes, absent from docs/json-trace.md, is a stage
a reader of the JSON cannot look up; an order written there by hand and never run drifts
away from the code. Both are read from real runs here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import qkvcalc
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.test_gate import DOC as GATE
from tests.test_mla import latent_problem
from tests.test_precision_newops import NEW_OPS

DOC = (Path(__file__).resolve().parent.parent / "docs" / "json-trace.md").read_text("utf-8")
DOCUMENTED = set(re.findall(r"`([a-z_0-9]+)`", DOC))
FEATURES: dict[str, dict[str, Any]] = {
    "gate": GATE,
    "mla": latent_problem(),
    "mla_query_projection": latent_problem(lora=False),
    "mla_decode": latent_problem(decode=2),
    **{name: doc for name, doc in NEW_OPS.items() if doc is not None},
}


def _trace(name: str) -> Any:
    if name in FEATURES:
        return qkvcalc.explain(**FEATURES[name])
    return run(Problem.from_mapping(presets.load(name)))


def _ids(trace: Any) -> list[str]:
    return list(dict.fromkeys(stage.id for stage in trace.stages))


def _listed(trace: Any) -> list[str]:
    """The trace's stages as the samples write them: id, then /head, then @step or @block."""
    out = []
    for stage in trace.stages:
        word = stage.id
        if stage.head is not None:
            word += f"/{stage.head}"
        at = stage.step if stage.step is not None else stage.block
        if at is not None:
            word += f"@{at}"
        out.append(word)
    return out


# "For the `NAME` preset …:" then a fenced block of the stages in order
SAMPLE = re.compile(r"For the\s+`([a-z0-9]+)`\s+preset[^:]*:\s*```\n(.*?)```", re.S)


@pytest.mark.parametrize("name", [*presets.names(), *FEATURES])
def test_every_stage_id_is_documented(name):
    missing = [sid for sid in _ids(_trace(name)) if sid not in DOCUMENTED]
    assert not missing, f"{name}: docs/json-trace.md does not name {missing}"


def test_the_samples_are_the_real_orders():
    samples = SAMPLE.findall(DOC)
    assert len(samples) >= 7, "the sample orders were not found: did their wording change?"
    for name, block in samples:
        written = [word.strip() for word in block.replace("\n", " ").split(",") if word.strip()]
        assert written == _listed(_trace(name)), name
