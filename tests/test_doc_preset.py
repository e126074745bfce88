"""The canonical first run: the doc preset's numbers, as the source article computes them."""

import math

import numpy as np

from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run


def trace_of(name):
    return run(Problem.from_mapping(presets.load(name)))


def test_doc_preset_is_the_articles_example():
    doc = presets.load("doc")
    assert doc["x"] == [1, 2]
    assert doc["wq"] == [[1, 0], [0, 1]]
    assert doc["wk"] == [[1, 1], [0, 1]]
    assert doc["wv"] == [[1, 0], [1, 1]]


def test_doc_preset_numbers():
    t = trace_of("doc")
    assert t.stage("q").value.tolist() == [[1, 2]]
    assert t.stage("k").value.tolist() == [[1, 3]]
    assert t.stage("v").value.tolist() == [[3, 2]]
    assert t.stage("kt").value.tolist() == [[1], [3]]
    assert t.stage("scores").value.tolist() == [[7]]
    assert math.isclose(t.stage("scaled").value[0, 0], 7 / math.sqrt(2), rel_tol=1e-15)
    assert t.stage("weights").value.tolist() == [[1]]
    assert t.output.tolist() == [[3, 2]]
    assert [s.id for s in t.stages] == [
        "x",
        "q",
        "k",
        "v",
        "kt",
        "scores",
        "scaled",
        "exp",
        "weights",
        "output",
    ]


def test_sentence_preset_is_causal():
    t = trace_of("sentence")
    w = t.stage("weights").value
    assert np.allclose(w.sum(axis=1), 1)
    assert np.all(w[np.triu_indices(3, k=1)] == 0)
    assert t.problem.tokens == ("I", "love", "cats")
