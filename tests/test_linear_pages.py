"""Sentences on the linear-attention layers' pages are about those layers, not softmax attention.

A linear-attention layer (Gated DeltaNet, Kimi Delta Attention, lightning attention) compares no
pair of tokens: there is no Q·Kᵀ stage. Its K note says how its tokens meet instead — through
the state, each token reading what it and the tokens before it wrote — and that is checked
against the layer's own implicit weights (W[t, s] = 0 for every later token s).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.i18n import Msg
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run

LINEAR = ["deltanet", "kda", "lightning"]


def _notes(trace, sid: str, head=None) -> list[str]:
    return [note.key for note in trace.stage(sid, head).notes]


@pytest.mark.parametrize("name", LINEAR)
def test_the_key_note_speaks_of_the_state_and_it_holds(name):
    trace = run(Problem.from_mapping(presets.load(name)))
    assert not any(stage.id == "scores" for stage in trace.stages)  # no pair is compared
    notes = _notes(trace, "k")
    assert "note.self_attention_state" in notes and "note.self_attention" not in notes
    weights = trace.stage("weights").value
    n = weights.shape[0]
    assert np.all(weights[np.triu_indices(n, 1)] == 0)  # nothing from a later token
    assert np.any(weights[np.tril_indices(n, -1)] != 0)  # earlier tokens are read


def test_softmax_attention_keeps_its_note():
    trace = run(Problem.from_mapping(presets.load("sentence")))
    assert "note.self_attention" in _notes(trace, "k")


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_page_in_both_languages(lang):
    problem = Problem.from_mapping(presets.load("deltanet"))
    page = json.loads(qkvcalc.render(run(problem), "json", lang=lang))
    (k,) = [stage for stage in page["stages"] if stage["id"] == "k"]
    assert Msg("note.self_attention_state").text(lang) in k["notes"]
    assert Msg("note.self_attention").text(lang) not in k["notes"]
