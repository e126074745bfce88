"""quiz --stages with a step or block that does not exist (scores@s99) names the step that
does not exist and the steps and blocks that do; it said "no stage 'scores'" and then listed
scores among the stages to choose from."""

from __future__ import annotations

import pytest

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from qkvcalc.input import presets
from tests.conftest import one_message


def _places(preset: str, sid: str) -> list[str]:
    import qkvcalc
    from qkvcalc.quiz.grade import stage_keys

    keys = stage_keys(qkvcalc.explain(**presets.load(preset)))
    return list(dict.fromkeys("@" + k.partition("@")[2] for k in keys if k.startswith(sid + "@")))


@pytest.mark.parametrize(
    ("preset", "asked", "sid"),
    [("decode", "scores@s99", "scores"), ("decode", "scores@b1", "scores"),
     ("tiles", "block_exp@b9", "block_exp")],
)  # fmt: skip
def test_a_missing_step_is_named_with_the_steps_there_are(cli, preset, asked, sid):
    result = cli("quiz", "--preset", preset, "--stages", asked, "--template")
    places = _places(preset, sid)
    assert len(places) > 1
    one_message(result, f"--stages {asked}:", ", ".join(places))
    assert f"no stage '{sid}'" not in result.stderr


def test_a_stage_without_steps_says_to_choose_it_by_its_id(cli):
    result = cli("quiz", "--preset", "gqa", "--stages", "2/scores@s1", "--template")
    one_message(result, "--stages 2/scores@s1:", "choose it as 2/scores")


def test_the_korean_names_the_steps_too(cli):
    result = cli("quiz", "--preset", "decode", "--stages", "scores@s99", "--lang", "ko")
    one_message(result, "scores@s99", ", ".join(_places("decode", "scores")))
    assert "단계" in result.stderr


def test_both_languages_have_the_sentences():
    for key in ("quiz.stage_no_place", "quiz.stage_no_places"):
        assert EN[key] and KO[key] and EN[key] != KO[key]


def test_a_step_that_exists_is_still_chosen(cli):
    result = cli("quiz", "--preset", "decode", "--stages", "scores@s1", "--template")
    assert result.exit_code == 0 and '"scores@s1"' in result.stdout
