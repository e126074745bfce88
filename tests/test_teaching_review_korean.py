"""The teaching review of 2026-12-06, second pass: F17 (what X is in an extracted layer), F19
(no leftover Korean particles in any catalog line), F24 (Korean help, per call) and F28 (an
irrational value is never written with "="). Each test failed on the code before its fix."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from pathlib import Path

import pytest

from tests.conftest import in_process

# ---- F28: an irrational value is "≈", a whole one "=" -----------------------------------------

_EQUATED = re.compile(r"(√[\w(]+|scale) = (−?[0-9]+\.[0-9]+)")


def _markdown(*args: str, lang: str = "en") -> str:
    result = in_process("explain", *args, "--format", "markdown", "--lang", lang)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize(
    "args",
    [
        ("--preset", "sentence", "--exact"),
        ("--preset", "sentence"),
        ("--preset", "sentence", "--scale", "1/sqrt(8)", "--exact"),
        ("--preset", "sentence", "--scale", "1/3"),
    ],
)
def test_f28_no_irrational_or_rounded_value_after_an_equals_sign(args, lang):
    text = _markdown(*args, lang=lang)
    if "--exact" not in args:  # decimals: the cells' arithmetic is rounded, as a note says
        text = "\n".join(line for line in text.splitlines() if line.startswith("> "))
    # √d_k = 1.414, scale = 0.353553: a decimal after "=" is only said of an exact value
    assert not _EQUATED.findall(text), _EQUATED.findall(text)


def test_f28_the_temperature_of_d_k_2_is_about_1_414_and_of_d_k_64_is_8():
    assert "T = √d_k ≈ 1.414." in _markdown("--preset", "sentence", "--exact")
    assert f"T = √d_k = {math.isqrt(64)}." in _markdown("--preset", "dk64")
    assert "T = √d_k ≈ 1.414입니다" in _markdown("--preset", "sentence", lang="ko")


@pytest.mark.parametrize(
    ("scale", "value", "said"),
    [("0.5", Fraction(1, 2), "="), ("1/3", Fraction(1, 3), "≈"), ("1/sqrt(8)", None, "≈")],
)
def test_f28_a_given_scale_is_equal_only_when_its_decimal_is_it(scale, value, said):
    text = _markdown("--preset", "sentence", "--scale", scale)
    shown = re.search(r"scale ([=≈]) (\S+) \(given\)", text)
    assert shown, text
    decimal = Fraction(shown[2])
    exact = value is not None and decimal == value
    assert shown[1] == ("=" if exact else "≈") == said


# ---- F19: no Korean particle left as a dual form, in the catalog or in what a run prints -------

_DUAL = re.compile(r"\((?:은|는|이|가|을|를|와|과|으)\)")
PRESETS = sorted(p.stem for p in (Path(__file__).parent.parent / "presets").glob("*.json"))


def test_f19_no_korean_catalog_line_has_a_dual_particle():
    from qkvcalc.catalog.ko import MESSAGES as KO

    found = {key: text for key, text in KO.items() if _DUAL.search(text)}
    assert not found, found


@pytest.mark.parametrize("preset", PRESETS)
def test_f19_no_dual_particle_in_any_korean_preset_page(preset):
    result = in_process("explain", "--preset", preset, "--format", "txt", "--lang", "ko")
    assert result.returncode == 0, result.stderr
    assert not _DUAL.findall(result.stdout), _DUAL.findall(result.stdout)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("quiz", "--preset", "multihead", "--stages", "scors"), "'scores' 단계를 뜻했나요?"),
        (("quiz", "--preset", "multihead", "--stages", "3/scores"), "3번 헤드가 없습니다"),
        (("explain", "--preset", "sentence", "--head", "3"), "3번 헤드는 없습니다"),
        (("explain", "--preset", "sentence", "--mask", "casual"), '"causal" 마스크를 뜻했나요?'),
        (("explain", "--preset", "sentence", "--shuffle", "1 x 2"), "--shuffle의 'x':"),
    ],
)
def test_f19_korean_messages_are_built_around_the_value(args, said):
    result = in_process(*args, "--lang", "ko")
    assert result.returncode == 2 and not result.stdout
    assert said in result.stderr and not _DUAL.search(result.stderr), result.stderr


# ---- F24: Korean help, typer's and click's own words included, per call ----------------------

# what typer and click write in English into a help page or a usage error
TYPER_ENGLISH = (
    "Show this message and exit.",
    "Usage:",
    "Options",
    "Arguments",
    "Commands",
    "[default:",
    "[required]",
    "Try '",
    "for help",
    "Error:",
    "No such option",
)
HELP_COMMANDS = [(), ("explain",), ("quiz",), ("extract",), ("train",), ("presets", "show")]


def _korean_words() -> set[str]:
    """Every Latin word the Korean catalog itself writes (option values, names, formats)."""
    from qkvcalc.catalog.ko import MESSAGES as KO

    return {w for text in KO.values() for w in re.findall(r"[A-Za-z]{3,}", text)}


def _english_left(text: str) -> list[str]:
    """Latin words of a Korean help page that no Korean catalog line writes, option names,
    metavars (<int>, {model}, ORDER, the usage line's OPTIONS) and the program's name left out."""
    text = re.sub(r"--?[a-z][\w-]*|<[^>]*>|\{[^}]*\}|\b[A-Z]{2,}\b|python -m", " ", text)
    return sorted(set(re.findall(r"[A-Za-z]{3,}", text)) - _korean_words())


@pytest.mark.parametrize("command", HELP_COMMANDS)
def test_f24_korean_help_in_process_then_english_again_without_a_leak(command):
    english = in_process(*command, "--help")
    korean = in_process(*command, "--help", "--lang", "ko") if command else None
    korean = korean or in_process("--help", env={"QKVCALC_LANG": "ko"})
    again = in_process(*command, "--help")
    assert english.returncode == korean.returncode == again.returncode == 0
    for word in TYPER_ENGLISH:
        assert word not in korean.stdout, (word, korean.stdout)
    assert "사용법:" in korean.stdout and "이 도움말을 보여 주고 끝냅니다." in korean.stdout
    assert not _english_left(korean.stdout), _english_left(korean.stdout)
    assert not re.search(r"[가-힣]", english.stdout + again.stdout)  # no Korean leaks out
    assert again.stdout == english.stdout


def test_f24_defaults_and_required_are_korean_in_a_real_process():
    from tests.conftest import run_qkvcalc

    result = run_qkvcalc("extract", "--lang", "ko", "--help")
    assert result.returncode == 0, result.stderr
    assert "[기본값: auto]" in result.stdout and "[필수]" in result.stdout
    for word in TYPER_ENGLISH:
        assert word not in result.stdout, word
    assert not _english_left(result.stdout), _english_left(result.stdout)


@pytest.mark.parametrize(
    ("args", "korean"),
    [
        (("--lang", "ko", "--help"), "이런 옵션은 없습니다: --lang"),
        (("explain", "--lang", "ko", "--prest", "doc"), "(가능한 옵션: --precision, --preset"),
    ],
)
def test_f24_a_usage_error_of_a_korean_run_is_korean(args, korean):
    from tests.conftest import run_qkvcalc

    result = run_qkvcalc(*args)
    assert result.returncode == 2 and not result.stdout
    assert korean in result.stderr and "사용법:" in result.stderr, result.stderr
    assert "도움말: '" in result.stderr and "오류: " in result.stderr
    for word in TYPER_ENGLISH:
        assert word not in result.stderr, word
    english = run_qkvcalc(*(a if a != "ko" else "en" for a in args))
    assert "Error: No such option" in english.stderr and "for help." in english.stderr


# a Latin letter (W_Q, d_k, Kᵀ) or a number right before a particle: the particle its Korean
# reading takes (큐는, 케이를, 엘은, 엠과, 일로, 팔을); fractions are read denominator first
_FORMULA_PARTICLE = re.compile(
    r"(?<![A-Za-z0-9_./])([A-Za-z](?:_[A-Za-z0-9]+)?ᵀ?|[0-9]+)"
    r"(은|는|이|가|을|를|과|와|으로|로)(?=[\s.,:;)(]|$)"
)
_CLOSED = set("LMNR013678")  # read with a final consonant: 엘, 엠, 엔, 알, 영, 일, 삼, 육, 칠, 팔
_RIEUL = set("LR178")  # a final ㄹ: 로, not 으로


def wrong_formula_particles(text: str) -> list[str]:
    found = []
    for m in _FORMULA_PARTICLE.finditer(text):
        word, particle = m.groups()
        last = "T" if word.endswith("ᵀ") else word[-1].upper()
        closed = last in _CLOSED
        right = {
            "은": closed, "는": not closed, "이": closed, "가": not closed, "을": closed,
            "를": not closed, "과": closed, "와": not closed,
            "으로": closed and last not in _RIEUL, "로": not closed or last in _RIEUL,
        }[particle]  # fmt: skip
        if not right:
            found.append(m.group())
    return found


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("W_Q은 학습됩니다", True),
        ("W_Q는 학습됩니다", False),
        ("Kᵀ을 곱합니다", True),
        ("Kᵀ를 곱합니다", False),
        ("L은 손실입니다", False),
        ("n이 토큰 수", False),
        ("M와 더합니다", True),
        ("8로 나눕니다", False),
        ("2으로 나눕니다", True),
    ],
)
def test_f19_the_formula_particle_check_reads_letters_as_korean_does(text, wrong):
    assert bool(wrong_formula_particles(text)) is wrong


def test_f19_every_particle_after_a_letter_or_a_number_is_the_right_one():
    from qkvcalc.catalog.ko import MESSAGES as KO

    found = {key: bad for key, text in KO.items() if (bad := wrong_formula_particles(text))}
    assert not found, found


def test_f24_plain_help_says_default_and_required_in_korean_too():
    """typer's plain help (TYPER_USE_RICH=0) writes them through gettext: Korean under --lang
    ko, typer's English otherwise."""
    from tests.conftest import run_qkvcalc

    plain = {"TYPER_USE_RICH": "0"}
    korean = run_qkvcalc("extract", "--lang", "ko", "--help", env=plain)
    assert korean.returncode == 0, korean.stderr
    assert "[기본값: auto]" in korean.stdout and "[필수]" in korean.stdout
    assert "[default" not in korean.stdout and "[required]" not in korean.stdout
    english = run_qkvcalc("extract", "--help", env=plain)
    assert "[default: auto]" in english.stdout and "[required]" in english.stdout
