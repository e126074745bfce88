"""--help as the user reads it: the options in their groups' panels (explain's 45 were one flat
list), in English and in Korean; the top-level help with every command's whole summary (no
"..."); no Korean line of help cut short with "…". (That --help loads no numpy, rich help
included, is tests/test_signals.py's.)"""

from __future__ import annotations

import re

import pytest

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from tests.conftest import run_qkvcalc

CATALOGS = {"en": EN, "ko": KO}
EXPLAIN_PANELS = ("source", "inline", "modern", "show", "display", "limits", "view")
PANEL_TOP = re.compile(r"╭─ (.+?) ─+╮")


def _help(*args: str, lang: str = "en", columns: int = 100) -> str:
    result = run_qkvcalc(*args, "--help", env={"QKVCALC_LANG": lang, "COLUMNS": str(columns)})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _squeezed(text: str) -> str:
    """The help's words, without the panels' borders and the wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_explain_help_shows_its_options_in_their_groups_panels(lang):
    shown = PANEL_TOP.findall(_help("explain", lang=lang))
    wanted = [CATALOGS[lang][f"help.panel.{group}"] for group in EXPLAIN_PANELS]
    assert [title for title in shown if title in wanted] == wanted, shown
    assert CATALOGS[lang]["help.panel.arguments"] in shown


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_each_option_sits_in_its_own_groups_panel(lang):
    text = _help("explain", lang=lang)
    panels = dict(re.findall(r"╭─ (.+?) ─+╮\n(.*?)╰", text, re.S))
    catalog = CATALOGS[lang]
    assert "--preset" in panels[catalog["help.panel.source"]]
    assert "--rope " in panels[catalog["help.panel.modern"]]
    assert "--no-color" in panels[catalog["help.panel.display"]]
    assert "--max-bytes" in panels[catalog["help.panel.limits"]]
    assert "--step" in panels[catalog["help.panel.view"]]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_top_help_shows_every_commands_whole_summary(lang):
    text = _help(lang=lang)
    assert "..." not in text.replace("[ARGS]...", "")
    words = _squeezed(text)
    for command in ("explain", "quiz", "new", "extract", "heads", "train", "presets"):
        summary = CATALOGS[lang][f"help.{command}"].replace("\\", "")
        assert " ".join(summary.split()) in words, command


@pytest.mark.parametrize("columns", [100, 120])
@pytest.mark.parametrize("command", ["explain", "quiz", "train"])
def test_no_korean_help_line_is_cut_short(command, columns):
    # rich measured a wrapped line's trailing space in characters, not columns: at 100 columns
    # explain's --grad-output and --lang lost a word to "…" (a word wider than its column, on
    # a narrower terminal, still ends in "…", in English too)
    text = _help(command, lang="ko", columns=columns)
    assert not re.search(r"… *│", text), text
    assert all(len(line) <= columns for line in text.splitlines())


def test_help_shows_brackets_literally():
    # "A[i, tᵢ]" and "qkvcalc[models]" are text, not rich markup
    assert "A[i, tᵢ]" in _squeezed(_help("explain"))
    assert "qkvcalc[models]" in _squeezed(_help())
