"""Sentences that were false or misleading (issue: every sentence true), each held to what it
says now, in both languages, on the run where it is printed."""

from __future__ import annotations

import json
import re

import pytest

from qkvcalc.i18n import translate
from qkvcalc.input.presets import load
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.conftest import in_process


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_in_a_rope_run_theta_is_only_the_angle_between_a_query_and_a_key(lang):
    """θ meant three things in a RoPE run (the base, the rotation, the angle between q and k):
    the base is called the base, the rotation φ."""
    text = in_process("explain", "--preset", "rope", "--lang", lang).stdout
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
    text = " ".join(in_process("explain", "--preset", "tiles", "--lang", lang).stdout.split())
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


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_quiz_says_only_the_shifted_exponentials_cannot_overflow(lang):
    """It said 'e^s cannot overflow'; e^s can (e^710 does), e^(s − row max) ≤ 1 cannot."""
    text = translate("mistake.exp_not_shifted", lang)
    if lang == "en":
        assert "e^s cannot" not in text and "e^(s − row max) cannot overflow" in text
        assert "where e^s can" in text
    else:
        assert "e^s는 오버플로할 수 있지만" in text and "e^(s − 행 최댓값)은 1을 넘지 않아" in text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_decode_with_a_source_says_its_k_and_v_are_computed_once(tmp_path, lang):
    """Cross-attention has a cache too (the encoder's K and V, computed once, reused at every
    step): the message said 'there is no cache to build'."""
    problem = {
        "x": [[1, 0], [0, 1]],
        "source": [[1, 1], [2, 0], [0, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 0], [0, 1]],
        "wv": [[1, 0], [0, 1]],
    }
    path = tmp_path / "cross.json"
    path.write_text(json.dumps(problem))
    result = in_process("explain", str(path), "--decode", "1", "--lang", lang)
    assert result.returncode == 2
    err = " ".join(result.stderr.split())
    assert "no cache to build" not in err
    said = (
        "computed once and reused at every step" if lang == "en" else "한 번 계산해 모든 단계에서"
    )
    assert said in err


PLURAL_AFTER_ONE = re.compile(r"(?<![\d.,/])1 (?:K/V )?(?:heads|tokens|blocks|slopes|keys|rows)\b")
I2 = [[1, 0], [0, 1]]
THREE = {"x": [[1, 0], [0, 1], [1, 1]], "wq": I2, "wk": I2, "wv": I2}


@pytest.mark.parametrize(
    ("problem", "args"),
    [
        (THREE, ("--decode", "1")),  # a prefill of one token
        # one K/V head for two query heads (d_k = 1), decoding
        (
            {**THREE, "wk": [[1], [0]], "wv": [[0], [1]], "heads": 2, "kv_heads": 1},
            ("--decode", "1"),
        ),
        ({**THREE, "target": [[0, 0]] * 3}, ("--tiles", "9", "--backward")),  # one block
        ({**THREE, "alibi": True, "mask": "causal"}, ()),  # the paper's recipe for one head
    ],
)
def test_one_is_never_followed_by_a_plural(tmp_path, problem, args):
    """'1 K/V heads', 'recipe for 1 heads', 'the first 1 tokens', 'The 1 blocks' totals'."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(problem))
    result = in_process("explain", str(path), *args, "--detail", "full")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert not PLURAL_AFTER_ONE.findall(text), PLURAL_AFTER_ONE.findall(text)


def test_a_slope_count_error_says_no_1_heads(tmp_path):
    problem = {"x": [[1, 2]], "wq": [[1, 0], [0, 1]], "wk": [[1, 0], [0, 1]]}
    path = tmp_path / "alibi.json"
    path.write_text(json.dumps({**problem, "wv": [[1, 0], [0, 1]], "alibi": [1, 2]}))
    err = " ".join(in_process("explain", str(path)).stderr.split())
    assert "heads = 1" in err and not PLURAL_AFTER_ONE.findall(err), err


@pytest.mark.parametrize("prefill", [0, 1, 2, 3])
def test_the_decode_score_count_is_the_cells_the_run_computes(prefill):
    """The prefill's scores said 'All n×m pairs are computed at once' (it computes P×P), and a
    step's said the rows hold n(n + 1)/2 scores, leaving out the P(P − 1)/2 cells above the
    prefill's diagonal that it computes and masks. Counted here on the run itself."""
    doc = {k: v for k, v in load("decode").items() if k not in ("name", "description", "reference")}
    problem = Problem.from_mapping({**doc, "decode": prefill})
    trace = run(problem)
    n = problem.n
    cells = sum(s.shape[0] * s.shape[1] for s in trace.stages if s.id == "scores")
    assert cells == n * (n + 1) // 2 + prefill * (prefill - 1) // 2
    steps = [s for s in trace.stages if s.id == "scores"]
    for lang in ("en", "ko"):
        for stage in steps:
            why = stage.why.text(lang)
            if stage.step == 0:
                assert "n×m" not in why and "P×P" in why
            else:
                assert "n(n + 1)/2" in why and "P(P − 1)/2" in why


def test_a_scale_of_zero_or_below_is_said_for_what_it_does_not_as_a_temperature():
    """T = 1/c is a temperature for c > 0 only: 'a smaller c flattens the weights' is false for
    c < 0, where a smaller c sharpens them toward the smallest score, and c = 0 has no T."""
    for scale, said, lang in (
        ("-1", "A negative scale turns the scores' order round", "en"),
        ("0", "A scale of 0 makes every scaled score 0", "en"),
        ("-1", "음수 scale은 스코어의 순서를 뒤집습니다", "ko"),
        ("0", "scale 0은 Q와 K가 무엇이든", "ko"),
    ):
        result = in_process(
            "explain", "--preset", "sentence", "--scale", scale, "--lang", lang,
            env={"COLUMNS": "400"},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert said in result.stdout
        assert (
            "temperature T = 1/c" not in result.stdout and "온도(temperature)" not in result.stdout
        )
    positive = in_process(
        "explain", "--preset", "sentence", "--scale", "0.5", env={"COLUMNS": "400"}
    )
    assert "temperature T = 1/c" in positive.stdout
