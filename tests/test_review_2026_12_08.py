"""A fresh-eyes review of the sentences added for DeepSeek-V4 (vo_rope, mla's shared_kv), Ling
3.0's precision and train found these false or unclear in some case; each test fails on the old
text."""

from __future__ import annotations

import re

import pytest

import qkvcalc
from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from tests.conftest import run_qkvcalc
from tests.test_mla_shared_kv import DOC as SHARED_KV
from tests.test_precision_linear import ling_problem


def _notes(trace, prefix: str) -> list:
    return [n for s in trace.stages for n in s.notes if getattr(n, "key", "").startswith(prefix)]


@pytest.mark.parametrize("policy", ["eager", "naive"])
def test_the_bounded_decays_dtype_note_does_not_call_the_bound_b_beside_beta_of_b(policy):
    """It said "σ and b times it …; β = σ(b)": one letter for the bound (lower_bound) and for
    β's own projection b = X·W_b, two different numbers."""
    trace = qkvcalc.explain(**ling_problem(0), dtype="bfloat16", policy=policy)
    notes = _notes(trace, "precision.kda_bounded_")
    assert notes, "no bounded-decay dtype note"
    for note in notes:
        en, ko = note.text("en"), note.text("ko")
        assert "b times it" not in en and "lower_bound" in en and "σ(b)" in en, en
        assert "b와의 곱" not in ko and "하한(lower_bound)" in ko, ko


def test_the_shared_key_value_heads_norm_is_not_called_a_latent():
    """With shared_kv the norm's note said "over the c_KV latent": c_KV there is the one
    key/value head (as wide as a query head), not a low-rank latent."""
    trace = qkvcalc.explain(**SHARED_KV)
    stage = trace.find("c_kv_norm")
    said = [n.text(lang) for n in stage.notes for lang in ("en", "ko")]
    assert not any("latent, ε" in s or "잠재 벡터 c_KV에" in s for s in said), said
    width = stage.value.shape[1]
    assert f"over the {width} columns of c_KV" in said[0], said
    assert f"{width}개 열" in said[1], said


def test_freezes_help_spells_the_names_as_learned_shows_them():
    """It said "as "Learned:" spells them (MLA's wdq, wuk, …)", but "Learned:" shows W_DQ."""
    done = run_qkvcalc("train", "--preset", "mla", "--steps", "1", "--freeze", "W_DQ")
    assert done.returncode == 0, done.stderr
    learned = re.search(r"Frozen \(--freeze, not moved\): (.*)\.", done.stdout)
    assert learned and learned.group(1) == "W_DQ", done.stdout
    assert "W_DQ or wdq" in EN["help.train.freeze"]
    assert "W_DQ 또는 wdq" in KO["help.train.freeze"]
    assert "w_norm or norm" in EN["help.train.freeze"]


def test_the_korean_norm_why_says_the_rotary_columns_are_included():
    assert "회전 열도 포함합니다" in KO["stage.mla_shared_c_kv_norm.why"]


def test_the_values_turn_is_not_said_to_make_k_and_v_one_where_they_are_two():
    """It said "(DeepSeek-V4, whose one key/value head is both K and V)" of any problem with
    vo_rope, also one whose W_K and W_V differ (tests/test_vo_rope.py's)."""
    from tests.test_vo_rope import DOC

    assert DOC["wk"] != DOC["wv"]
    stage = qkvcalc.explain(**DOC).find("v_rot", 1)
    assert stage is not None
    assert "here they may differ" in EN["stage.v_rot.why"]
    assert "여기서는 K와 V가 다를 수 있습니다" in KO["stage.v_rot.why"]
