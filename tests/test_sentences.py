"""Sentences that were false or misleading (issue: every sentence true), each held to what it
says now, in both languages, on the run where it is printed."""

from __future__ import annotations

import re

import pytest

from qkvcalc.i18n import translate
from tests.conftest import run_qkvcalc


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_in_a_rope_run_theta_is_only_the_angle_between_a_query_and_a_key(lang):
    """θ meant three things in a RoPE run (the base, the rotation, the angle between q and k):
    the base is called the base, the rotation φ."""
    text = run_qkvcalc("explain", "--preset", "rope", "--lang", lang).stdout
    assert "θ =" not in text.replace("cos θ =", "")  # no θ set to a value but cos θ's
    assert re.search(r"\(φ = 3×1\)", text)
    assert ("base 10000" if lang == "en" else "밑 10000") in text
    for said in re.findall(r".{0,12}θ.{0,3}", text):
        assert "cos θ" in said or "θ:" in said or "θ입" in said or "θ)" in said, said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_longer_vector_gives_a_bigger_score_only_when_the_angle_is_acute(lang):
    why = translate("stage.scores.why", lang)
    assert ("sign of cos θ" if lang == "en" else "cos θ의 부호") in why


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_top_left_causal_note_points_to_causal_align(lang):
    note = translate("note.causal_topleft", lang, n=2, m=4)
    assert '"causal_align": "bottom-right"' in note and "0/1" not in note


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_score_bias_is_not_both_unlearned_and_learned(lang):
    why = translate("stage.score_bias.why", lang)
    assert "rather than learned" not in why
    assert ("a bias given" if lang == "en" else "주어진 바이어스") in why


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_q_norm_cites_only_models_that_norm_per_head(lang):
    """OLMo 2 normalises the whole projection before the split into heads, not each head."""
    assert "OLMo" not in translate("stage.q_norm.why", lang)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_tiled_run_says_its_whole_score_table_is_shown_for_reference(lang):
    text = " ".join(run_qkvcalc("explain", "--preset", "tiles", "--lang", lang).stdout.split())
    said = " ".join(translate("note.tiles_whole", lang).split()[:6])
    scores = text.index(translate("stage.scores.title", lang))
    scaled = text.index(translate("stage.scaled.title", lang), scores)
    assert scores < text.index(said) < scaled  # under the scores, before any block


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_exact_says_equal_weights_stay_in_decimals(lang):
    """--exact shows the weights of equal scores as decimals: the note says 1/k and says so."""
    note = translate("note.exact_stops", lang)
    assert "1/k" in note
    assert ("decimals" if lang == "en" else "소수로") in note.split("1/k")[1]
