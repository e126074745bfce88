"""--dtype for the sparse-attention indexer (DSA): its scores as transformers' DeepseekV32Indexer
computes them on the CPU (eager: q.float() @ k.float(), ReLU, the weights in float32) or by
hand in the dtype (naive), against torch from the stage's own operands; its top-k against
torch.topk of those scores; and, where the rounding changes which keys a query keeps, that the
top-k's note names exactly those queries and every head's mask applies the dtype's choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import qkvcalc
from tests.test_indexer import dsa_problem
from tests.test_precision_torch import DTYPES, _t, _ulps

torch = pytest.importorskip("torch", reason="PyTorch is the oracle")
torch.set_num_threads(1)


def _scores(stage: Any, dt: Any, naive: bool) -> Any:
    """The index scores by torch from the stage's own q, k, w, as DeepseekV32Indexer.forward
    writes them (eager), or with every tensor in the dtype (naive)."""
    q, k, w = (_t(o, dt) for o in stage.operands)
    heads, dim = stage.params["heads"], stage.params["dim"]
    q = q.reshape(q.shape[0], heads, dim).transpose(0, 1)  # [H_I, n, D]
    if naive:
        scores = torch.relu(torch.matmul(q, k.T) * stage.params["scale"])
        weights = w * stage.params["weight_scale"]
        return torch.matmul(weights.unsqueeze(-2), scores.transpose(0, 1)).squeeze(-2)
    scores = torch.relu(torch.matmul(q.float(), k.T.float()) * stage.params["scale"])
    weights = w.float() * stage.params["weight_scale"]
    return torch.matmul(weights.unsqueeze(-2), scores.transpose(0, 1)).squeeze(-2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("policy", ["eager", "naive", "sdpa"])
def test_the_index_scores_are_the_indexers_in_that_dtype(dtype: str, policy: str) -> None:
    dt = DTYPES[dtype]
    for seed in range(12):
        trace = qkvcalc.explain(**dsa_problem(seed), dtype=dtype, policy=policy)
        stage = trace.stage("index_scores")
        theirs = _scores(stage, dt, policy == "naive").double().numpy()
        if policy == "naive" and dtype != "float32":
            assert _ulps(stage.value, theirs, dt).max() <= 1, (seed, stage.value, theirs)
        else:  # float32's numbers: torch sums the heads in an order of its own
            top = max(1.0, float(np.abs(theirs).max()))
            np.testing.assert_allclose(stage.value, theirs, rtol=1e-5, atol=1e-6 * top)


def _changed(trace: Any, plain: Any) -> np.ndarray:
    return np.flatnonzero(
        ((trace.stage("index_topk").value > 0) != (plain.stage("index_topk").value > 0)).any(1)
    )


@pytest.mark.parametrize(("dtype", "policy"), [("bfloat16", "eager"), ("float8_e4m3fn", "naive")])
def test_the_top_k_is_torchs_of_the_dtypes_scores_and_every_head_masks_with_it(
    dtype: str, policy: str
) -> None:
    """torch.topk of the dtype's masked scores (rows with a tie at the cut aside: torch orders
    ties its own way) is the kept keys; every head's mask allows exactly them; the note names
    the queries whose keys differ from the float64 twin's, and only those."""
    changed_somewhere = 0
    for seed in range(30):
        doc = dsa_problem(seed)
        plain = qkvcalc.explain(**doc)
        trace = qkvcalc.explain(**doc, dtype=dtype, policy=policy)
        masked = trace.stage("index_masked").value
        allowed = trace.stage("index_masked").allowed
        kept = trace.stage("index_topk").value > 0
        k = doc["indexer"]["top_k"]
        for i, row in enumerate(masked):
            live = np.flatnonzero(allowed[i])
            order = np.sort(row[live])[::-1]
            if len(order) > k and order[k - 1] == order[k]:
                continue  # a tie at the cut
            top = torch.topk(torch.tensor(row), min(k, len(live))).indices.numpy()
            assert set(np.flatnonzero(kept[i])) == set(top.tolist()), (seed, i)
        for h in range(1, doc["heads"] + 1):
            assert np.array_equal(trace.stage("masked", h).allowed, kept & allowed)
        rows = _changed(trace, plain)
        said = next(n for n in trace.stage("index_topk").notes if "selection" in n.key)
        if rows.size:
            changed_somewhere += 1
            assert said.key == "precision.selection_changed"
            assert said.params["count"] == rows.size
            named = [part.split(":")[0] for part in said.params["rows"].split("; ")]
            assert named == [doc["tokens"][i] for i in rows[:6]]
        else:
            assert said.key == "precision.selection_same"
    if dtype.startswith("float8"):
        assert changed_somewhere  # float8's rounding moves some query's choice in these problems


def test_a_changed_choice_changes_the_heads_attention_and_the_twin_shows_it() -> None:
    """Where the dtype keeps another key, each head's masked scores follow the dtype's choice (a
    key the twin masked keeps its score, one it kept gets the fill), and the page says so."""
    doc = dsa_problem(0)
    plain = qkvcalc.explain(**doc)
    trace = qkvcalc.explain(**doc, dtype="float8_e4m3fn", policy="naive")
    rows = _changed(trace, plain)
    assert rows.size
    kept, twin = trace.stage("index_topk").value > 0, plain.stage("index_topk").value > 0
    for h in range(1, doc["heads"] + 1):
        masked = trace.stage("masked", h)
        scores, fill = masked.operands[0], masked.value[~masked.allowed].max()
        for i in rows:
            took, dropped = kept[i] & ~twin[i], twin[i] & ~kept[i]
            assert np.array_equal(masked.value[i][took], scores[i][took])
            assert (masked.value[i][dropped] == fill).all()
    text = qkvcalc.explain(**doc, dtype="float8_e4m3fn", policy="naive")
    said = " ".join(n.text() for n in text.stage("index_topk").notes)
    assert "keeps other keys than the float64 twin" in said


def test_the_float64_twin_of_every_indexer_stage_is_the_plain_run() -> None:
    for seed in range(4):
        doc = dsa_problem(seed)
        plain = qkvcalc.explain(**doc)
        for policy in ("eager", "naive", "sdpa"):
            low = qkvcalc.explain(**doc, dtype="bfloat16", policy=policy)
            for mine, twin in zip(low.stages, plain.stages, strict=True):
                if mine.twin is not None:
                    np.testing.assert_allclose(mine.twin_value, twin.value, rtol=0, atol=1e-12)
