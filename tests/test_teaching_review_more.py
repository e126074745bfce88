"""The teaching review of 2026-12-06, again: what its first fixes (tests/test_teaching_review.py)
left behind. Each test failed on the code before this file: the tiles' log-sum-exp still called
L in the docs (F29), a count of 1 with a plural noun and a loss of −0 (F25), 배치 for a weight's
layout (F22), the chain rule "adding" one path (F07), the scaling's backward calling a given
scale "the default" (F01)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ---- F29: the log-sum-exp of the tiles' backward is LSE wherever it is written ---------------


def test_f29_the_docs_and_the_code_call_the_log_sum_exp_lse_not_l():
    """L is the loss; the tiles' backward keeps m + log ℓ per row under its own name, LSE, as
    its stage does (the loss L = −Σ log A is on the same pages)."""
    as_l = re.compile(r"(?<![\w\[])L = m \+ log|− L\)|inside L\b|forward's L\b|\bL\[1\] = ")
    files = [*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("qkvcalc/**/*.py")]
    found = [
        f"{f.relative_to(ROOT)}:{n}: {line.strip()}"
        for f in files
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
        if as_l.search(line)
    ]
    assert not found, found
