"""An English LaTeX handout compiles without kotex (Debian's texlive-lang-korean): the doc,
pronoun and sentence presets quote a Korean article title in their reference, and the README's
handout (`--preset sentence --output lesson.tex`) names only texlive-latex-base,
texlive-latex-extra and lmodern. Compiled by the real pdflatex, once as installed and once with
kotex's name changed in the document's test for it (what a TeX without kotex finds)."""

from __future__ import annotations

import re

import pytest

from qkvcalc.i18n import translate
from qkvcalc.render.latex import tex_escape
from tests.conftest import run_qkvcalc
from tests.test_exports import _has_kotex, _pdflatex, needs_pdflatex

QUOTING = ["doc", "pronoun", "sentence"]  # English presets whose reference holds Hangul


def _handout(preset: str, tmp_path, lang: str = "en") -> str:
    """The README's handout: `qkvcalc explain --preset PRESET --output lesson.tex`."""
    out = tmp_path / "made.tex"
    result = run_qkvcalc("explain", "--preset", preset, "--lang", lang, "--output", str(out))
    assert result.returncode == 0, result.stderr
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("preset", QUOTING)
def test_an_english_handout_never_requires_kotex(tmp_path, preset):
    tex = _handout(preset, tmp_path)
    assert re.search("[\uac00-\ud7a3]", tex), "the preset no longer quotes Hangul"
    loads = [line for line in tex.splitlines() if r"\usepackage{kotex}" in line]
    assert loads and all(line.startswith(r"\IfFileExists{kotex.sty}") for line in loads), loads


@needs_pdflatex
@pytest.mark.parametrize("preset", QUOTING)
def test_an_english_handout_compiles_where_kotex_is_missing(tmp_path, preset):
    tex = _handout(preset, tmp_path).replace(
        r"\IfFileExists{kotex.sty}", r"\IfFileExists{kotex-absent.sty}"
    )
    log = _pdflatex(tex, tmp_path)
    assert "kotex" not in log
    missing = tex_escape(translate("export.hangul_without_kotex", "en"))
    assert missing in tex


@needs_pdflatex
def test_an_english_handout_sets_the_hangul_where_kotex_is_installed(tmp_path):
    if not _has_kotex():
        pytest.skip("kotex is not installed (Debian: texlive-lang-korean)")
    log = _pdflatex(_handout("sentence", tmp_path), tmp_path)
    assert "kotex.sty" in log


def test_a_korean_handout_still_requires_kotex(tmp_path):
    tex = _handout("sentence", tmp_path, "ko")
    assert "\n\\usepackage{kotex}" in tex
