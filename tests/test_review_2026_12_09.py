"""A fresh-eyes review of the sentences added for DeepSeek-V4's compressed entries (compress, its
indexer): each test runs what printed a sentence that was false or unclear in some case (one
token per entry, a single entry, the indexer's own mask, positions given, top-1, mla's one
key/value head on the same page) and fails on the old text."""

from __future__ import annotations

import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.render import RenderOptions, render
from tests.conftest import one_message, run_qkvcalc
from tests.test_compress import problem, sparse
from tests.test_exports import _pdflatex, needs_pdflatex


def _page(doc: dict, lang: str = "en") -> str:
    return render(qkvcalc.explain(**doc), "txt", RenderOptions(width=400, lang=lang))


def _notes(trace, sid: str, lang: str = "en", head: int | None = None) -> list[str]:
    return [n.text(lang) for n in trace.stage(sid, head).notes]


def test_one_token_per_entry_reads_in_the_singular():
    """m = 1 printed "one entry per 1 tokens" and "Each window of 1 rows … rows 1 to 1"."""
    doc, _ = problem(1, m=1, n=4)
    page = _page(doc)
    assert "one entry per 1 token, after" in page and "One entry per 1 token, 4 numbers" in page
    assert "Each window of 1 row is one entry's" in page
    assert "1 tokens" not in page and "1 rows" not in page and "rows 1 to 1" not in page


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_single_entry_names_no_second_or_third(lang):
    """With ⌊n/m⌋ = 1 the notes said "the next m feed C2, and so on" and "C2 at m, C3 at 2·m"."""
    doc, _ = problem(1, m=4, n=4)
    trace = qkvcalc.explain(**doc)
    assert trace.stage("comp_pooled").rows == ("C1",)
    for sid in ("comp_weights", "comp_rot"):
        for text in _notes(trace, sid, lang):
            assert "C2" not in text and "C3" not in text, text
    assert "C⌈t/4⌉" in _notes(trace, "comp_weights", lang)[0]


@pytest.mark.parametrize("overlap", [False, True])
def test_the_row_to_entry_rule_in_the_note_is_the_tables(overlap):
    """The note's rule (row t feeds C⌈t/m⌉; with overlap, its Ca half C(⌈t/m⌉ + 1), 0 where
    there is none) against where comp_weights has its shares."""
    m, n = 2, 7
    doc, _ = problem(3, m=m, n=n, overlap=overlap)
    trace = qkvcalc.explain(**doc)
    shares = trace.stage("comp_weights").value
    count, width = n // m, 4
    text = _notes(trace, "comp_weights")[0]
    assert "C⌈t/2⌉" in text and (("C(⌈t/2⌉ + 1)" in text) == overlap), text
    for t in range(1, count * m + 1):
        own = -(-t // m)
        cols = slice(width, 2 * width) if overlap else slice(0, width)
        assert own <= count and np.all(shares[t - 1, cols] > 0)
        if overlap:
            nxt = shares[t - 1, :width]
            assert np.all(nxt > 0) if own + 1 <= count else np.all(nxt == 0), (t, nxt)


def test_the_compressed_values_are_not_named_c_kv_beside_the_key_value_head():
    """The pool's values were called C_KV, and so is mla's normalised key/value head, two other
    numbers on the same page."""
    doc, _ = problem(2, m=3, n=7)
    trace = qkvcalc.explain(**doc)
    assert trace.stage("comp_kv").formula.startswith("C_E = X·W_C")
    assert "C_E" in trace.stage("comp_pooled").formula
    assert "C_KV" not in trace.stage("comp_pooled").formula
    page = _page(doc)
    assert "rows of C_E, each times its share" in page
    assert "C_KV = X·W_C" not in page and "C_KV = RMSNorm(c_KV)" in page


@pytest.mark.parametrize("m", [1, 3])
def test_the_visibility_note_counts_from_zero_and_says_when_there_is_none(m):
    """It said "C1 to C⌊(p + 1)/m⌋" with no word that p starts at 0 (the rows are t1, t2 …),
    nor that the range is empty for p + 1 < m; here each row of the mask against it."""
    doc, _ = problem(2, m=m, n=7)
    trace = qkvcalc.explain(**doc)
    note = next(t for t in _notes(trace, "masked", "en", 1) if t.startswith("The entries' columns"))
    assert "position p (t1 at 0)" in note and f"(none while p + 1 < {m})" in note, note
    ko = next(t for t in _notes(trace, "masked", "ko", 1) if t.startswith("항목의 열"))
    assert "위치 p(t1이 0)" in ko and f"p + 1 < {m}이면 하나도 없습니다" in ko, ko
    entries = trace.stage("masked", 1).value[:, 7:]
    for row in range(7):
        seen = np.flatnonzero(np.isfinite(entries[row]))
        assert list(seen) == list(range((row + 1) // m)), (row, seen)


def test_the_indexers_mask_note_speaks_of_its_own_columns():
    """idx_masked (entries only) said "may read" and "the window and the causal mask hold for
    the tokens' columns", of a table with no tokens' columns."""
    doc, _ = sparse(3, m=2, top_k=1)
    trace = qkvcalc.explain(**doc)
    assert trace.stage("idx_masked").cols == ("C1", "C2", "C3", "C4", "C5")
    (en,) = _notes(trace, "idx_masked")
    (ko,) = _notes(trace, "idx_masked", "ko")
    assert "tokens' columns" not in en and "may choose an entry" in en, en
    assert "(none while p + 1 < 2)" in en and "become −∞" in en, en
    assert "토큰의 열" not in ko and "고를 수 있습니다" in ko, ko
    masked = trace.stage("idx_masked").value
    assert np.all(np.isinf(masked[0])) and np.isfinite(masked[1, 0])


def test_top_one_keeps_one_score():
    doc, _ = sparse(3, m=2, top_k=1)
    (en,) = _notes(qkvcalc.explain(**doc), "idx_topk")
    assert en.startswith("Each row keeps 1 score, the largest among the visible entries"), en


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_header_says_no_m_keys_beside_compress_m(lang):
    """The header said "one entry per 3 tokens, after the tokens' m keys": m there is the key
    count (7), on a line whose m was compress.m."""
    doc, _ = problem(2, m=3, n=7)
    head = _page(doc, lang).splitlines()[:6]
    text = " ".join(head)
    if lang == "en":
        assert "compressed keys: one entry per 3 tokens, after the tokens' keys" in text, text
        assert "m keys" not in text
    else:
        assert "압축 Key: 토큰의 Key 뒤에, 토큰 3개마다 항목 하나" in text, text
        assert "Key m개" not in text


def test_the_overlap_why_says_an_entry_sums_more_than_one_window():
    """'An entry sums up m tokens' and 'a softmax over the slots of its window': with overlap
    an entry pools 2·m slots of two windows."""
    doc, _ = problem(3, m=2, n=7, overlap=True)
    trace = qkvcalc.explain(**doc)
    assert trace.stage("comp_weights").value[:, :4].any()  # the Ca half feeds the next entry
    page = " ".join(_page(doc).split())
    assert "An entry sums up m tokens," not in page
    assert "a window of m tokens (with overlapping windows, halves of two)" in page
    assert "over its slots (the tokens of its window; with overlapping windows, of its two)" in page


def test_positions_not_from_zero_are_refused(tmp_path):
    """Given positions 5 … 11 the mask let t1 (p = 5) read C2, pooled from t4 … t6, while the
    note said an entry is read only once its whole window is at or before p."""
    doc, _ = problem(2, m=3, n=7)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc | {"positions": list(range(5, 12))}), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), "positions 0 to 6", "leave out positions")
    ko = run_qkvcalc("explain", str(path), "--lang", "ko")
    one_message(ko, "위치 0부터 6까지", "positions와 key_positions를 빼세요")
    same = qkvcalc.explain(**(doc | {"positions": list(range(7))}))
    assert np.allclose(same.output, qkvcalc.explain(**doc).output)


def test_the_korean_missing_keys_message_has_no_leftover_particle(tmp_path):
    doc, _ = problem(0)
    del doc["compress"]["bias"]
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = run_qkvcalc("explain", str(path), "--lang", "ko")
    one_message(done, "compress에 빠진 키: bias.")
    assert "(가)" not in done.stderr


def test_the_quiz_says_which_bias_was_left_out(tmp_path):
    """It said "each gate gets its token's place in the window's bias"."""
    from qkvcalc.ops.compress import pool_weights

    doc, _ = problem(2, m=3, n=7)
    gate = qkvcalc.explain(**doc).stage("comp_gate").value
    wrong = pool_weights(gate, np.zeros((3, 4)), 3, False)
    problem_path, sheet = tmp_path / "p.json", tmp_path / "a.json"
    problem_path.write_text(json.dumps(doc), encoding="utf-8")
    sheet.write_text(json.dumps({"comp_weights": np.round(wrong, 4).tolist()}), encoding="utf-8")
    done = run_qkvcalc(
        "quiz", str(problem_path), "--stages", "comp_weights", "--answers", str(sheet),
        env={"COLUMNS": "400"},
    )  # fmt: skip
    assert "each gate gets the bias of its token's place in the window, a row of B" in done.stdout


@needs_pdflatex
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_sparse_layers_latex_compiles_with_floors_and_the_indexers_pooled_symbol(
    tmp_path, lang
):
    """--format latex wrote K_I_w (a double subscript: pdflatex stopped) and ⌊ ⌋ as
    [U+230A] [U+230B] in the entries' count and visibility notes."""
    doc, _ = sparse(3, m=2, top_k=1)
    tex = render(qkvcalc.explain(**doc), "latex", RenderOptions(lang=lang))
    assert "K_{I,w} = " in tex and "K_I_w" not in tex
    assert "U+230" not in tex and r"$\lfloor$" in tex
    log = _pdflatex(tex, tmp_path)
    assert "Double subscript" not in log


# ---- mla's one key/value head (shared_kv): backward, train and decode's sentences ----------


def test_one_head_reads_the_shared_head_in_every_head_not_each_of_one():
    """With H = 1 the backward said "read whole as … by each of the 1 head" (and in Korean a
    fixed particle after any symbol); the order note said "a step puts each back", under
    --backward, where a step reads as a decode step: it is qkvcalc train that puts them back."""
    from tests.test_mla_shared_kv_backward import make_doc

    doc = make_doc(7, heads=1, latent=True, turn=True)
    trace = qkvcalc.explain(**doc, backward=True)
    en = " ".join(_page(doc | {"backward": True}).split())
    ko = " ".join(_page(doc | {"backward": True}, "ko").split())
    assert trace.find("grad_c_kv_norm") is not None
    assert "in every head (1 head)" in en and "each of the 1 head" not in en
    assert "모든 헤드(헤드 1개)가 이를 통째로 읽습니다" in ko and "헤드 1개 각각에서" not in ko
    assert "qkvcalc train puts each column back where wkv_a holds it" in en
    assert "a step puts each back" not in en
    assert "qkvcalc train은 각 열을 wkv_a에서의 자리로 돌려놓습니다" in ko


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_cache_says_it_holds_the_rows_turned_under_vo_rope(lang):
    """The cache's why said "C_KV of every token so far" while under vo_rope it holds C_KV's
    rows turned at their positions (t2's cached row is not C_KV's)."""
    from tests.test_mla_shared_kv import _decoded_doc

    doc = _decoded_doc(True, True, vo_rope=True)
    trace = qkvcalc.explain(**doc, decode=2)
    whole = qkvcalc.explain(**doc)
    cache = trace.stage("c_kv_cache", step=trace.problem.n - 2).value
    assert not np.allclose(cache, whole.stage("c_kv_norm").value)  # the rows are turned
    text = " ".join(render(trace, "txt", RenderOptions(width=400, lang=lang)).split())
    if lang == "en":
        assert "each token's row of C_KV so far (with vo_rope, turned at its position" in text
        assert "C_KV of every token so far" not in text
    else:
        assert "vo_rope에서는 토큰의 위치에서 돌린 행으로" in text
