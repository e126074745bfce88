"""Help without rich (TYPER_USE_RICH=0: click's own formatter) shows a help text as written: the
escapes that keep rich from reading `[models]` or `[i, tᵢ]` as markup are undone, so plain help
and rich help both read `qkvcalc[models]` and `A[i, tᵢ]`, never `qkvcalc\\[models]`. typer
reads TYPER_USE_RICH once, when it is imported: each help here is a real process."""

from __future__ import annotations

import pytest

from qkvcalc.cli.common import unescape
from tests.conftest import run_qkvcalc

CASES = [
    # (the command, what its help says as written)
    (("extract",), "qkvcalc[models]"),
    (("heads",), "qkvcalc[models]"),
    (("train",), "A[i, tᵢ]"),
]


@pytest.mark.parametrize("rich", ["0", "1"])
@pytest.mark.parametrize(
    ("command", "written"), CASES, ids=[" ".join(c) or "qkvcalc" for c, _ in CASES]
)
def test_help_shows_brackets_as_written(rich, command, written):
    result = run_qkvcalc(*command, "--help", env={"TYPER_USE_RICH": rich, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    joined = " ".join(result.stdout.replace("│", " ").split())
    assert written in joined, result.stdout
    assert "\\[" not in result.stdout, result.stdout


def test_unescape_undoes_rich_s_escape_and_only_it():
    from rich.markup import escape

    for text in ("qkvcalc[models]", "A[i, tᵢ]", "a \\[x] b", "[b]bold[/b]", "no tags [1, 2]"):
        assert unescape(escape(text)) == text
    assert unescape("qkvcalc\\[models]") == "qkvcalc[models]"
    assert unescape("W[0]") == "W[0]"  # not a tag: never escaped, left alone
