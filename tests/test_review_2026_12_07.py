"""A fresh-eyes review of the sentences added on 2026-12-07 found these false or misleading in
some case; each test fails on the old text."""

from __future__ import annotations

import json

import pytest

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from tests.conftest import run_qkvcalc


def _json(*args: str) -> dict:
    done = run_qkvcalc("explain", *args, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _notes(doc: dict, stage_id: str) -> list[str]:
    return [note for s in doc["stages"] if s["id"] == stage_id for note in s.get("notes", [])]


def test_lightnings_ratio_in_a_dtype_is_said_exactly_not_rounded_with_an_equals():
    """It said "e^(−λ) = 0.605469" of bfloat16's 0.60546875: an "=" that did not hold, and a
    number that read as e^(−0.5) (≈ 0.606531)."""
    doc = _json("--preset", "lightning", "--dtype", "bfloat16")
    said = [n for s in doc["stages"] for n in s.get("notes", []) if "the ratio r" in n]
    assert said and all("r = 0.60546875 (bfloat16's e^(−λ)" in n for n in said), said[:1]


@pytest.mark.parametrize(("stage", "scaled"), [("q_l2", True), ("k_l2", False)])
def test_the_l2_norms_dtype_note_names_the_scale_only_where_there_is_one(stage, scaled):
    """Both norms' notes said "and the scale", but only the Queries are scaled (1/√d_k)."""
    notes = [n for n in _notes(_json("--preset", "deltanet", "--dtype", "bfloat16"), stage)]
    said = [n for n in notes if "cast to float32" in n]
    assert len(said) == 1 and ("the scale" in said[0]) is scaled, said


def test_the_policy_lines_name_the_recurrent_rule_as_the_decoding_path():
    """The eager policy called torch_recurrent_gated_delta_rule "the torch fallback"; a prompt
    runs the chunked rule (also in float32), the recurrent one when decoding."""
    for key in ("precision.policy.gated_delta.eager", "precision.policy.kimi_delta.eager"):
        assert "decoding" in EN[key] and "chunk" in EN[key] and "also in float32" in EN[key]
        assert "torch fallback" not in EN[key] and "대체 경로" not in KO[key]


def test_a_top_k_tie_is_said_to_be_qkvcalcs_rule_not_torchs():
    key = "precision.selection_changed"
    assert "torch.topk does not promise" in EN[key] and "as the model would" in EN[key]
    assert "보장하지 않습니다" in KO[key] and "주의를 기울" not in KO[key]


def test_a_linear_layer_has_no_scores_to_rescale_though_it_may_scale_q():
    """--compare-scale on a linear layer said it had "no 1/√d_k", but Gated DeltaNet scales q̂."""
    assert "scales q̂" in EN["train.compare_scale_mixer"]
    assert "no 1/√d_k" not in EN["train.compare_scale_mixer"]


def test_w_z_is_one_name_in_its_gradients_why():
    assert "W_z" not in EN["stage.grad_wz.why"] and "W_z" not in KO["stage.grad_wz.why"]


def test_the_korean_brief_gradient_note_says_the_states_after_each_token():
    assert "다음 상태의 기울기" not in KO["note.brief_grad_steps"]
    assert "뒤 상태에 대한 기울기" in KO["note.brief_grad_steps"]


def test_the_fill_is_the_most_negative_finite_number_in_korean_too():
    assert "가장 음수인" in KO["precision.mask_wide"]
