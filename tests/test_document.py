"""Every writer says the same words of a stage: the document model (qkvcalc.render.document).

The JSON document, the Markdown page and the terminal are three writers of one model: a
stage's title, formula and why come from its StageHeading, in the page's language. These
tests read what each writer put out (not the model itself) and compare them, for every
preset in English and Korean, so a writer that spells a stage its own way fails here.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import ROOT

PRESETS = sorted(p.stem for p in (ROOT / "presets").glob("*.json"))
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def _markdown_headings(text: str) -> list[tuple[int, int, str]]:
    """(number, total, title and place) of each `## k/N · …` heading of a Markdown page."""
    out = []
    for line in text.splitlines():
        match = re.match(r"## (\d+)/(\d+) · (.*)$", line)
        if match:
            out.append((int(match[1]), int(match[2]), _MD_ESCAPE.sub(r"\1", match[3])))
    return out


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name", PRESETS)
def test_json_and_markdown_give_each_stage_the_same_title(cli, name, lang):
    as_json = cli("explain", "--preset", name, "--format", "json", "--lang", lang)
    as_md = cli("explain", "--preset", name, "--format", "markdown", "--lang", lang)
    assert as_json.exit_code == 0 and as_md.exit_code == 0, as_json.stderr + as_md.stderr
    stages = json.loads(as_json.stdout)["stages"]
    headings = _markdown_headings(as_md.stdout)
    assert [h[0] for h in headings] == list(range(1, len(stages) + 1))
    assert {h[1] for h in headings} == {len(stages)}
    for stage, (_, _, said) in zip(stages, headings, strict=True):
        # the page adds where the stage is (" · head 2", a decode step) after the title
        assert said == stage["title"] or said.startswith(stage["title"] + " · "), stage["id"]


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("name", ["doc", "sentence", "diff", "deltanet"])
def test_json_and_the_terminal_give_each_stage_the_same_words(cli, name, lang):
    """Each stage's title, formula and why, as JSON has them, are on the terminal's screen, in
    order (the terminal wraps its sentences at its reading width: compared word by word)."""
    as_json = cli("explain", "--preset", name, "--format", "json", "--lang", lang)
    shown = cli(
        "explain", "--preset", name, "--lang", lang, env={"COLUMNS": "4000", "NO_COLOR": "1"}
    )
    assert as_json.exit_code == 0 and shown.exit_code == 0, as_json.stderr + shown.stderr
    screen = " ".join(shown.stdout.split())
    at = 0
    for stage in json.loads(as_json.stdout)["stages"]:
        for said in (stage["title"], stage["formula"], stage["explanation"]):
            words = " ".join(said.split())
            found = screen.find(words, at)
            assert found >= 0, (stage["id"], stage["head"], words)
        at = screen.find(stage["title"], at)
