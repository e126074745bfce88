"""The plug-in features' named mistakes (each feature module's `mistakes`): a wrong matrix per
classic mistake at a feature's stage is recognised with its id, only that one, and said in both
languages; the right matrix names nothing.

Each wrong matrix is worked out here with plain loops from the earlier stage's true values (the
mistake's own formula, written independently of qkvcalc's feature modules).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import MISTAKE_IDS, recognise
from qkvcalc.run.engine import run
from tests.conftest import run_qkvcalc
from tests.test_compress import MISTAKE_IDS as COMPRESS_IDS
from tests.test_differential import MISTAKE_IDS as DIFF_IDS
from tests.test_gate import MISTAKE_IDS as GATE_IDS
from tests.test_gate_softplus import MISTAKE_IDS as SOFTPLUS_GATE_IDS
from tests.test_gated_delta import MISTAKE_IDS as GDN_IDS
from tests.test_indexer import MISTAKE_IDS as INDEXER_IDS
from tests.test_kimi_delta import MISTAKE_IDS as KDA_IDS
from tests.test_lightning import MISTAKE_IDS as LIGHTNING_IDS
from tests.test_mla import MISTAKE_IDS as MLA_IDS
from tests.test_sub_norm import MISTAKE_IDS as SUB_NORM_IDS
from tests.test_v_norm import MISTAKE_IDS as V_NORM_IDS
from tests.test_vo_rope import MISTAKE_IDS as VO_ROPE_IDS

# One head of d_k = 4 (so RoPE's two pairings differ), every feature with a mistake at once:
# q/k norm → RoPE → ALiBi → softcap → a sink, no mask (keys after a query too).
PROBLEM = {
    "tokens": ["a", "b", "c"],
    "x": [[1, 2, 0, 1], [0, 1, 1, 0], [2, 0, 1, 1]],
    "wq": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
    "wk": [[0, 1, 0, 1], [1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0]],
    "wv": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
    "q_norm": [1, 2, 0.5, 1],
    "k_norm": [1, 1, 1, 1],
    "rope": {"theta": 100},
    "alibi": [0.5],
    "softcap": 2,
    "sinks": [5],
}
EPS = 1e-6


def rotate(x, angles, pairs):
    """Each pair (a, b) turned by its angle: a·cos − b·sin, b·cos + a·sin; `pairs` lists the
    (first, second) dimension of each pair, in the order of the frequencies."""
    out = x.copy()
    for i in range(x.shape[0]):
        for k, (a, b) in enumerate(pairs):
            c, s = math.cos(angles[i][k]), math.sin(angles[i][k])
            out[i, a] = x[i, a] * c - x[i, b] * s
            out[i, b] = x[i, b] * c + x[i, a] * s
    return out


HALF, NEIGHBOURS = [(0, 2), (1, 3)], [(0, 1), (2, 3)]


def wrong_matrices(trace):
    """(stage key, the wrong matrix, the mistake's id, words of its English sentence)."""
    q = trace.stage("q").value
    q_norm = trace.stage("q_norm").value
    angles = [[pos * 100 ** (-2 * k / 4) for k in range(2)] for pos in range(3)]
    minus = [[-a for a in row] for row in angles]
    biased = trace.stage("biased").value
    capped = trace.stage("capped").value
    exp = trace.stage("exp").value
    w = np.array([1, 2, 0.5, 1])

    def rms(row, over):
        return math.sqrt(sum(v * v for v in row) / over + EPS)

    bare = np.array([[v / rms(row, 4) for v in row] for row in q])
    length = np.array([[v / rms(row, 1) * w[j] for j, v in enumerate(row)] for row in q])
    top = [max(row) for row in capped]
    shifted = np.array(
        [
            [math.exp(v - t) for v in row] + [math.exp(5 - t)]
            for row, t in zip(capped, top, strict=True)
        ]
    )
    plain = np.array([[v / sum(row[:-1]) for v in row[:-1]] for row in exp])
    return [
        ("q_norm", bare, "norm_weight_missing", "without the weight"),
        ("q_norm", length, "norm_sum_not_mean", "the root of the mean"),
        ("q_rot", rotate(q_norm, angles, NEIGHBOURS), "rope_other_pairing", "i + 2"),
        ("q_rot", rotate(q_norm, minus, HALF), "rope_turned_back", "turns each pair by −φ"),
        (
            "score_bias",
            np.array([[0.5 * abs(i - j) for j in range(3)] for i in range(3)]),
            "alibi_sign",
            "B = −0.5·|i − j|",
        ),
        (
            "score_bias",
            np.array([[-0.5 * (i - j) for j in range(3)] for i in range(3)]),
            "alibi_signed_distance",
            "without the absolute value",
        ),
        ("capped", 2 * np.tanh(biased), "softcap_inner_missing", "c·tanh(S) = 2·tanh(S)"),
        ("capped", np.tanh(biased / 2), "softcap_outer_missing", "between −1 and 1"),
        ("exp", shifted, "sink_max_forgotten", "the scores' maximum alone"),
        ("weights", plain, "sink_left_out", "the softmax without the sink"),
    ]


# The LayerNorm kind of the q/k norm (Cohere, StableLM, Phi): its weights and bias per head.
LAYER = {
    **{k: PROBLEM[k] for k in ("tokens", "x", "wq", "wk", "wv")},
    "q_norm": [1, 2, 0.5, 1],
    "k_norm": [1, 1, 1, 1],
    "qk_norm": {"kind": "layer", "bias": {"q": [0.5, 0, -1, 0.25]}},
}


def layer_wrong_matrices(trace):
    """The LayerNorm's mistakes at q_norm, worked out with loops from the true q."""
    q = trace.stage("q").value
    w, b = [1, 2, 0.5, 1], [0.5, 0, -1, 0.25]
    kept, unbiased = np.zeros_like(q), np.zeros_like(q)
    for i, row in enumerate(q):
        mean = sum(row) / 4
        sigma = math.sqrt(sum((v - mean) ** 2 for v in row) / 4 + EPS)
        rms = math.sqrt(sum(v * v for v in row) / 4 + EPS)
        for j, v in enumerate(row):
            kept[i, j] = v / rms * w[j] + b[j]
            unbiased[i, j] = (v - mean) / sigma * w[j]
    return [
        ("q_norm", kept, "layernorm_mean_kept", "subtracts the mean"),
        ("q_norm", unbiased, "layernorm_bias_missing", "leave out the bias"),
    ]


FEATURE_IDS = (
    {case[2] for case in wrong_matrices(run(Problem.from_mapping(PROBLEM)))}
    | {case[2] for case in layer_wrong_matrices(run(Problem.from_mapping(LAYER)))}
    | MLA_IDS  # multi-head latent attention's, tested in tests/test_mla.py
    | GATE_IDS  # the output gate's, tested in tests/test_gate.py
    | SOFTPLUS_GATE_IDS  # the softplus gate's, tested in tests/test_gate_softplus.py
    | V_NORM_IDS  # the norm on V's, tested in tests/test_v_norm.py
    | DIFF_IDS  # differential attention's, tested in tests/test_differential.py
    | GDN_IDS  # Gated DeltaNet's, tested in tests/test_gated_delta.py
    | INDEXER_IDS  # the sparse-attention indexer's, tested in tests/test_indexer.py
    | KDA_IDS  # Kimi Delta Attention's, tested in tests/test_kimi_delta.py
    | LIGHTNING_IDS  # lightning attention's, tested in tests/test_lightning.py
    | SUB_NORM_IDS  # the norm over the joined heads', tested in tests/test_sub_norm.py
    | VO_ROPE_IDS  # the output's turn back's, tested in tests/test_vo_rope.py
    | COMPRESS_IDS  # the compressed entries' shares', tested in tests/test_compress.py
)


@pytest.mark.parametrize("case", range(2))
def test_a_layernorm_mistake_is_named(case):
    trace = run(Problem.from_mapping(LAYER))
    key, wrong, mistake_id, words = layer_wrong_matrices(trace)[case]
    truth = trace.stage(key).value
    assert not np.allclose(wrong, truth, atol=1e-3)
    found = recognise(trace, key, np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake_id
    assert words in found.text("en")
    assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    assert recognise(trace, key, np.round(truth, 4), {}, 4) is None


@pytest.fixture(scope="module")
def trace():
    return run(Problem.from_mapping(PROBLEM))


def test_every_feature_mistake_has_a_case():
    from qkvcalc.ops.features import mistakes

    assert {i for m in mistakes() for i in m.ids} == FEATURE_IDS
    assert set(MISTAKE_IDS) >= FEATURE_IDS


@pytest.mark.parametrize("case", range(10))
def test_a_feature_mistake_is_named(trace, case):
    key, wrong, mistake_id, words = wrong_matrices(trace)[case]
    truth = trace.stage(key).value
    assert not np.allclose(wrong, truth, atol=1e-3)  # the mistake shows in these numbers
    found = recognise(trace, key, np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake_id
    assert words in found.text("en")
    korean = found.text("ko")
    assert korean != found.text("en") and "{" not in korean
    assert recognise(trace, key, np.round(truth, 4), {}, 4) is None  # right: nothing named


def test_a_real_quiz_process_names_a_sink_left_out(tmp_path, trace):
    """Through `qkvcalc quiz --answers`, in JSON, in both languages."""
    plain = wrong_matrices(trace)[-1][1]
    (tmp_path / "p.json").write_text(json.dumps(PROBLEM))
    (tmp_path / "a.json").write_text(json.dumps({"weights": np.round(plain, 4).tolist()}))
    for lang, words in (("en", "without the sink"), ("ko", "싱크를 뺀 소프트맥스")):
        proc = run_qkvcalc(
            "quiz",
            str(tmp_path / "p.json"),
            "--answers",
            str(tmp_path / "a.json"),
            "--format",
            "json",
            "--lang",
            lang,
        )
        assert proc.returncode == 1, proc.stderr
        stages = {s["key"]: s for s in json.loads(proc.stdout)["stages"]}
        assert stages["weights"]["mistake"] == "sink_left_out"
        assert words in stages["weights"]["mistake_text"]
