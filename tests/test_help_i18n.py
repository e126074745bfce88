"""The command-line help speaks the language asked for: every option's help and every command's
description comes from the catalogs (help.* keys), in Korean under --lang ko, QKVCALC_LANG=ko or
a Korean locale, in English otherwise. Real processes: the help language is fixed when
qkvcalc.cli is imported (qkvcalc.launch reads --lang before that), so an in-process runner
would only ever see one language."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from tests.conftest import PINNED_ENV, ROOT

HANGUL = re.compile(r"[가-힣]")
KOREAN_ENV = {"QKVCALC_LANG": "ko"}
ENGLISH_ENV = {"LANG": "C", "LC_ALL": "", "LC_MESSAGES": "", "QKVCALC_LANG": ""}
HELP_KEYS = [*sorted(key for key in EN if key.startswith("help.")), "step.option_help"]

# the command's own description and one option of it that only that command shows
COMMANDS = {
    "explain": ("help.explain", "help.explain.max_elements"),
    "quiz": ("help.quiz", "help.quiz.precision"),
    "extract": ("help.extract", "help.extract.layer"),
    "heads": ("help.heads", "help.heads.head"),
}


def squeeze(text: str) -> str:
    """The text without whitespace and the panels' borders: the help formatter wraps lines
    wherever it likes."""
    return "".join(re.sub("[│╭╮╰╯─]", "", text).split())


def test_every_help_key_is_a_sentence_in_both_languages():
    # the keys this file relies on exist, and the Korean is not the English left in place
    for key in HELP_KEYS:
        assert EN[key].strip() and KO[key].strip(), key
        if re.search(r"[A-Za-z]{3,}", EN[key]):
            assert HANGUL.search(KO[key]), (key, KO[key])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_in_korean(qkvcalc_proc, command):
    result = qkvcalc_proc(command, "--help", env=KOREAN_ENV)
    assert result.returncode == 0, result.stderr
    shown = squeeze(result.stdout)
    assert HANGUL.search(result.stdout)
    for key in COMMANDS[command]:
        assert squeeze(KO[key]) in shown, (key, result.stdout)
    leaked = [key for key in HELP_KEYS if squeeze(EN[key]) in shown]
    assert not leaked, (leaked, result.stdout)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_in_english(qkvcalc_proc, command):
    result = qkvcalc_proc(command, "--help", env=ENGLISH_ENV)
    assert result.returncode == 0, result.stderr
    shown = squeeze(result.stdout)
    for key in COMMANDS[command]:
        assert squeeze(EN[key]) in shown, (key, result.stdout)
    assert not HANGUL.search(result.stdout), result.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_lang_on_the_command_line_sets_the_help_language(qkvcalc_proc, command):
    korean = qkvcalc_proc(command, "--lang", "ko", "--help", env=ENGLISH_ENV)
    assert korean.returncode == 0, korean.stderr
    shown = squeeze(korean.stdout)
    for key in COMMANDS[command]:
        assert squeeze(KO[key]) in shown, (key, korean.stdout)
    assert not [key for key in HELP_KEYS if squeeze(EN[key]) in shown], korean.stdout
    english = qkvcalc_proc(command, "--help", "--lang=en", env=KOREAN_ENV)
    assert english.returncode == 0, english.stderr
    assert not HANGUL.search(english.stdout), english.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["explain", "--lang", "ko", "--help"], "ko"),
        (["--lang=en"], "en"),
        (["explain", "--lang", "fr"], None),  # typer will say what is wrong with it
        (["explain", "--lang"], None),
        (["explain", "--", "--lang", "ko"], None),  # after --, arguments are not options
        (["explain", "--tokens", "--lang ko"], None),  # one argument that only mentions it
    ],
)
def test_the_launcher_finds_lang_before_the_commands_are_built(args, expected):
    from qkvcalc.launch import lang_option

    assert lang_option(args) == expected


def test_a_korean_locale_is_enough(qkvcalc_proc):
    result = qkvcalc_proc("--help", env={"LANG": "ko_KR.UTF-8", "LC_ALL": "", "QKVCALC_LANG": ""})
    assert result.returncode == 0, result.stderr
    shown = squeeze(result.stdout)
    assert squeeze(KO["help.version"]) in shown and squeeze(EN["help.version"]) not in shown


# Every command's description and every parameter's help, read from the click command tree
# that typer builds: a help= string written into the code instead of the catalog shows up here.
WALK = """
import json
from typer.main import get_command
from qkvcalc.cli import app

def walk(cmd, path):
    yield path, cmd.help
    for param in cmd.params:
        yield f"{path} {param.name}", getattr(param, "help", None)
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        yield from walk(sub, f"{path} {name}")

print(json.dumps(list(walk(get_command(app), "qkvcalc"))))
"""


def help_tree(env: dict[str, str]) -> list[tuple[str, str | None]]:
    result = subprocess.run(
        [sys.executable, "-c", WALK],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, **PINNED_ENV, **env},
    )
    assert result.returncode == 0, result.stderr
    return [tuple(pair) for pair in json.loads(result.stdout)]


def test_every_help_text_of_every_command_comes_from_the_catalog():
    korean = help_tree(KOREAN_ENV)
    english = help_tree(ENGLISH_ENV)
    assert [path for path, _ in korean] == [path for path, _ in english]
    names = {path for path, _ in korean}
    assert {"qkvcalc explain", "qkvcalc quiz", "qkvcalc new", "qkvcalc presets show"} <= names
    catalog_ko = {squeeze(text) for text in KO.values()}
    catalog_en = {squeeze(text) for text in EN.values()}
    for (path, ko_text), (_, en_text) in zip(korean, english, strict=True):
        assert ko_text and en_text, f"{path} has no help"
        # as rich's markup reads it: "\[i, tᵢ]" is shown "[i, tᵢ]"
        ko_text, en_text = ko_text.replace("\\[", "["), en_text.replace("\\[", "[")
        assert squeeze(ko_text) in catalog_ko and HANGUL.search(ko_text), (path, ko_text)
        assert squeeze(en_text) in catalog_en and not HANGUL.search(en_text), (path, en_text)
