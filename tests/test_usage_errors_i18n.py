"""click's own usage errors in the language of the call: "Invalid value for …", "Missing
argument …", "Option … requires an argument.", extra arguments, an unknown command. The click
typer bundles writes them in English (no gettext); qkvcalc.cli.usage says them again from the
catalog. A Korean call shows them in Korean, in a real process and in this one, and an English
call after it shows click's own English, word for word (no leak between calls)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import in_process, run_qkvcalc

# what click writes in English into a usage error
CLICK_ENGLISH = (
    "Invalid value",
    "Missing",
    "requires",
    "is not",
    "Got unexpected",
    "No such",
    "Choose from",
    "Usage:",
    "Try '",
    "Error:",
)

CASES = [
    # (arguments, click's English message, what the Korean one says)
    (
        ("explain", "--preset", "doc", "--precision", "abc"),
        "Invalid value for '--precision': 'abc' is not a valid int range.",
        "'--precision'의 값이 올바르지 않습니다: 'abc': 올바른 정수 값이 아닙니다.",
    ),
    (
        ("explain", "--preset", "doc", "--precision", "99"),
        "Invalid value for '--precision': 99 is not in the range 0<=x<=15.",
        "'--precision'의 값이 올바르지 않습니다: 99: 허용 범위 0<=x<=15 밖입니다.",
    ),
    (
        ("explain", "--preset", "doc", "--detail", "zzz"),
        "Invalid value for '--detail': 'zzz' is not one of 'full', 'brief'.",
        "'--detail'의 값이 올바르지 않습니다: 'zzz': 'full', 'brief' 중 하나여야 합니다.",
    ),
    (("heads",), "Missing argument 'model'.", "인자가 빠졌습니다: 'model'"),
    (
        ("explain", "--preset"),
        "Option '--preset' requires an argument.",
        "'--preset' 옵션에는 값이 하나 필요합니다.",
    ),
    (
        ("explain", "a", "b", "c"),
        "Got unexpected extra argument(s) (b c)",
        "예상하지 못한 인자가 더 있습니다: b c",
    ),
    (("nosuch",), "No such command 'nosuch'.", "이런 명령은 없습니다: 'nosuch'"),
]


def _korean_ok(stderr: str, korean: str) -> None:
    assert f"오류: {korean}" in stderr, stderr
    # the usage line and where to find help, as click shows them (not for an option's missing
    # value: click knows no command there, in English as well)
    if "옵션에는" not in korean:
        assert "사용법:" in stderr and "도움말: '" in stderr, stderr
    for word in CLICK_ENGLISH:
        assert word not in stderr, (word, stderr)


def _english_ok(stderr: str, english: str) -> None:
    assert f"Error: {english}" in stderr, stderr
    if "requires" not in english:
        assert "Usage:" in stderr and "for help." in stderr, stderr
    assert not re.search(r"[가-힣]", stderr), stderr


@pytest.mark.parametrize(("args", "english", "korean"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_korean_then_english_in_one_process(args, english, korean):
    before = in_process(*args)
    ko = in_process(*args, env={"QKVCALC_LANG": "ko"})
    again = in_process(*args)
    assert before.returncode == ko.returncode == again.returncode == 2
    assert not ko.stdout and not again.stdout
    _korean_ok(ko.stderr, korean)
    _english_ok(again.stderr, english)
    assert again.stderr == before.stderr


@pytest.mark.parametrize(
    ("args", "english", "korean"), CASES[:4], ids=[" ".join(c[0]) for c in CASES[:4]]
)
def test_a_real_process_says_them_in_korean(args, english, korean):
    ko = run_qkvcalc(*args, env={"QKVCALC_LANG": "ko"})
    assert ko.returncode == 2 and not ko.stdout
    _korean_ok(ko.stderr, korean)
    with_lang = run_qkvcalc(*args, "--lang", "ko") if args != ("heads",) else ko
    _korean_ok(with_lang.stderr, korean)
    en = run_qkvcalc(*args, env={"QKVCALC_LANG": "en"})
    _english_ok(en.stderr, english)


def test_missing_option_and_its_choices():
    """No qkvcalc option is required today; click's "Missing option" (with a choice's list)
    is said in Korean too, and in English exactly as click writes it."""
    from typer._click.exceptions import MissingParameter

    from qkvcalc.cli.usage import message

    plain = MissingParameter(param_hint="'--mode'", param_type="option")
    assert message(plain, "en") == plain.format_message() == "Missing option '--mode'."
    assert message(plain, "ko") == "옵션이 빠졌습니다: '--mode'"
    listed = MissingParameter(message="Choose from:\n\tfull,\n\tbrief", param_hint="'--d'",
                              param_type="argument")  # fmt: skip
    assert message(listed, "en") == listed.format_message()
    assert (
        message(listed, "ko") == "인자가 빠졌습니다: '--d' 다음 중에서 고르세요:\n\tfull,\n\tbrief"
    )


def test_a_message_of_another_shape_is_shown_as_click_wrote_it():
    from typer._click.exceptions import UsageError

    from qkvcalc.cli.usage import message

    err = UsageError("Something else entirely")
    assert message(err, "ko") == message(err, "en") == "Something else entirely"
