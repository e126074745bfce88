"""Issue 17's layout at real widths and the wording around it: titles that wrap instead of
being cut, tables that use the width they have, prose at a readable measure, one minus sign,
stages given directly that are not called projections, and an answer sheet's head keys."""

from __future__ import annotations

import json

from tests.conftest import run_qkvcalc

GIVEN = {"q": [[1, 0], [0, 1]], "k": [[1, 1], [0, 1]], "v": [[1, 2], [3, 4]]}


def test_q_k_v_given_directly_are_not_called_projections():
    for lang, word in (("en", "projection"), ("ko", "선형 투영")):
        for doc in (GIVEN, {**{k: [r * 2 for r in v] for k, v in GIVEN.items()}, "heads": 2}):
            result = run_qkvcalc("explain", "-", "--lang", lang, input=json.dumps(doc))
            assert result.returncode == 0, result.stderr
            titles = [line for line in result.stdout.splitlines() if "·" in line and "──" in line]
            assert titles and not [t for t in titles if word in t], titles
            assert "(given)" in result.stdout or "(주어진 값)" in result.stdout
    projected = run_qkvcalc("explain", "--preset", "doc").stdout
    assert "Query projection" in projected


def test_a_head_stage_keyed_without_its_head_suggests_head_one(tmp_path):
    sheet = tmp_path / "sheet.json"
    sheet.write_text(json.dumps({"scores": [[1, 2], [3, 4]]}), encoding="utf-8")
    result = run_qkvcalc("quiz", "--preset", "multihead", "--answers", str(sheet))
    assert result.returncode == 2 and result.stdout == ""
    assert "'1/scores'" in result.stderr and "'2/scores'" in result.stderr
    assert "did you mean '1/scores'" in result.stderr
    korean = run_qkvcalc("quiz", "--preset", "multihead", "--answers", str(sheet), "--lang", "ko")
    assert korean.returncode == 2 and "'1/scores'" in korean.stderr and "헤드" in korean.stderr
