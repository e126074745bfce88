"""English plurals: a count before a noun reads "1 token" and "2 tokens". The catalog writes
such a noun as a placeholder, {n} {n:token|tokens} (qkvcalc/i18n.py); Korean needs none, its
counters do not inflect. Each English sentence that prints a count before a noun is rendered
with 1 and with 2 here, and the noun after the count is checked."""

from __future__ import annotations

import re
import string

import numpy as np
import pytest

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from qkvcalc.i18n import Msg, plural, translate

# (key, the count's placeholder, the noun after it for 1, for any other count)
COUNTED = [
    ("shuffle.not_a_permutation", "n", "token", "tokens"),
    ("warn.tokens_dropped", "rows", "row", "rows"),
    ("vector.not_flat", "rows", "row", "rows"),
    ("precision.stage_error", "ulp", "unit", "units"),
    ("precision.most_added", "added", "unit", "units"),
    ("precision.decode_whole", "cells", "cell", "cells"),
    ("precision.tiles_whole", "cells", "cell", "cells"),
    ("note.rounded", "precision", "decimal", "decimals"),
    ("quiz.intro", "precision", "decimal", "decimals"),
    ("quiz.sheet_key_head", "heads", "head", "heads"),
    ("mistake.norm_sum_not_mean", "d_k", "dimension", "dimensions"),
    ("mistake.v_norm_sum_not_mean", "d_v", "dimension", "dimensions"),
    ("mistake.mla_norm_sum_not_mean", "count", "dimension", "dimensions"),
    ("note.causal_bottomright", "n", "query", "queries"),
    ("note.causal_bottomright", "m", "key", "keys"),
    ("positions.not_list", "count", "whole number", "whole numbers"),
    ("positions.length", "length", "entry", "entries"),
    ("variant.length", "length", "number", "numbers"),
    ("qk_norm.shape", "d_k", "number", "numbers"),
    ("qk_norm.length", "length", "number", "numbers"),
    ("qk_norm.projection_shape", "width", "number", "numbers"),
    ("note.attn_temperature_llama4", "floor_scale", "position", "positions"),
    ("attn_temperature.count", "count", "factor", "factors"),
    ("attn_temperature.count", "n", "query", "queries"),
    ("note.mla_c_q", "rank", "number", "numbers"),
    ("note.mla_c_kv", "rank", "number", "numbers"),
    ("note.mla_k_rope", "heads", "head", "heads"),
    ("note.mla_cache", "tokens", "token", "tokens"),
    ("mla.kv_heads", "heads", "head", "heads"),
    ("mla.rows", "rows", "column", "columns"),
    ("mla.rows", "rows", "row", "rows"),
    ("mla.norm_length", "length", "number", "numbers"),
    ("mla.q_width", "cols", "column", "columns"),
    ("note.mla_shared_norm", "width", "column", "columns"),
    ("mla.kv_a_width", "cols", "column", "columns"),
    ("mla.kv_b_width", "cols", "column", "columns"),
    ("mla.shared_width", "cols", "column", "columns"),
    ("note.mla_shared_kv", "heads", "head", "heads"),
    ("note.grad_shared_whole", "heads", "head", "heads"),
    ("note.mla_shared_cache", "heads", "head", "heads"),
    ("note.mla_shared_cache", "tokens", "token", "tokens"),
    ("note.mla_shared_cache_rope", "heads", "head", "heads"),
    ("note.mla_shared_cache_rope", "tokens", "token", "tokens"),
    ("note.mla_shared_cache_turned", "heads", "head", "heads"),
    ("note.mla_shared_cache_turned", "tokens", "token", "tokens"),
    ("ui.variant.indexer", "heads", "index head", "index heads"),
    ("note.index_q", "heads", "index head", "index heads"),
    ("note.index_q", "dim", "number", "numbers"),
    ("note.index_k", "dim", "number", "numbers"),
    ("note.index_k", "heads", "index head", "index heads"),
    ("note.index_weights", "heads", "weight", "weights"),
    ("note.index_scores", "heads", "index head", "index heads"),
    ("note.index_topk", "m", "key", "keys"),
    ("note.indexer_folded", "top_k", "key", "keys"),
    ("indexer.q_width", "cols", "column", "columns"),
    ("indexer.shape", "heads", "index head", "index heads"),
    ("indexer.norm_length", "length", "number", "numbers"),
    ("extract.layer", "count", "layer", "layers"),
    ("extract.too_big_float64", "tokens", "token", "tokens"),
    ("extract.too_many_positions", "positions", "token", "tokens"),
    ("extract.too_many_table_positions", "positions", "row", "rows"),
    ("note.gdn_grad_conv", "taps", "tap", "taps"),
    ("extract.too_many_table_positions", "positions", "token", "tokens"),
    ("extract.description", "n", "token", "tokens"),
    ("extract.description_kv_shared", "n", "token", "tokens"),
    ("extract.description_linear", "n", "token", "tokens"),
    ("extract.description_kda", "n", "token", "tokens"),
    ("extract.description_block", "n", "token", "tokens"),
    ("heads.head", "count", "head", "heads"),
    ("check.right", "count", "problem", "problems"),
    ("check.error", "total", "problem", "problems"),
    ("ui.variant.tiles", "tiles", "key", "keys"),
    ("note.decode_prefill", "count", "token", "tokens"),
    ("note.decode_memory", "tokens", "token holds", "tokens hold"),
    ("note.decode_bottom_right", "keys", "key", "keys"),
    ("note.decode_equal", "steps", "step", "steps"),
    ("decode.range", "n", "token", "tokens"),
    ("train.trained_description", "done", "step", "steps"),
    ("train.trained_description_unnamed", "done", "step", "steps"),
    ("train.elided", "count", "step", "steps"),
    ("loss.attend_count", "n", "query", "queries"),
    ("loss.attend_count_typed", "n", "query", "queries"),
    ("note.loss_attend", "count", "target key", "target keys"),
    ("note.loss_attend_head", "count", "target key", "target keys"),
    ("train.dataset", "count", "example", "examples"),
    ("train.diverging", "done", "step", "steps"),
    ("train.rose_back", "done", "step", "steps"),
    ("train.rose_some", "done", "step", "steps"),
    ("train.log_scale", "decades", "decade", "decades"),
    ("train.compare_lower", "done", "step", "steps"),
    ("train.compare_higher", "done", "step", "steps"),
    ("gated_delta.shape_flat", "count", "number", "numbers"),
    ("kimi_delta.beta_flat", "count", "number", "numbers"),
    ("kimi_delta.g_flat", "count", "number", "numbers"),
    ("gated_delta.cross", "n", "row", "rows"),
    ("lightning.cross", "n", "row", "rows"),
    ("kimi_delta.cross", "n", "row", "rows"),
    ("note.lightning_rms", "width", "number", "numbers"),
    ("lightning.length", "length", "number", "numbers"),
    ("note.sub_rms", "width", "number", "numbers"),
    ("sub_norm.length", "length", "number", "numbers"),
    ("ui.variant.gdn_conv", "taps", "tap", "taps"),
    ("note.gdn_conv", "taps", "tap", "taps"),
    ("gated_delta.vector", "length", "number", "numbers"),
    ("kimi_delta.vector", "length", "number", "numbers"),
    ("note.diff_norm", "width", "column", "columns"),
    ("input.blank_start", "count", "byte", "bytes"),
    ("array.truncated", "need", "byte", "bytes"),
    ("array.truncated", "have", "byte", "bytes"),
    ("note.reading_equal", "count", "key", "keys"),
    ("note.comp_kv", "m", "token", "tokens"),
    ("note.comp_kv", "width", "number", "numbers"),
    ("note.comp_kv_overlap", "width", "column", "columns"),
    ("note.comp_kv_overlap", "m", "token", "tokens"),
    ("note.comp_weights", "m", "row", "rows"),
    ("ui.variant.compress", "m", "token", "tokens"),
    ("ui.variant.compress_overlap", "m", "token", "tokens"),
    ("note.idx_topk", "top_k", "score", "scores"),
    ("note.reading_equal_with_masked", "count", "unmasked key", "unmasked keys"),
    ("ui.reading_equal", "count", "key", "keys"),
    ("note.comp_grad_bias", "count", "window", "windows"),
    ("note.grad_shared_rows", "count", "share", "shares"),
]


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def render(key: str, count_name: str, count: int, lang: str = "en") -> str:
    params = {name: f"⟨{name}⟩" for name in fields(EN[key]) | fields(KO[key])}
    params[count_name] = count
    return translate(key, lang, **params)


@pytest.mark.parametrize(("key", "name", "one", "other"), COUNTED, ids=lambda v: str(v))
def test_a_count_of_one_takes_the_singular_and_two_the_plural(key, name, one, other):
    single, double = render(key, name, 1), render(key, name, 2)
    assert re.search(rf"\b1 {re.escape(one)}\b", single), single
    assert not re.search(rf"\b1 {re.escape(other)}\b", single), single
    assert re.search(rf"\b2 {re.escape(other)}\b", double), double
    assert not re.search(rf"\b2 {re.escape(one)}\b", double), double


@pytest.mark.parametrize(("key", "name", "one", "other"), COUNTED, ids=lambda v: str(v))
def test_korean_says_the_count_alone(key, name, one, other):
    # Korean counters do not inflect: its sentence shows the count, and no English noun
    for count in (1, 2):
        text = render(key, name, count, "ko")
        # no plural's forms left (token|tokens); a bar between spaces is text: [Ca | Cb]
        assert str(count) in text and not re.search(r"\S\|\S", text), text
        assert f"{count} {one}" not in text and f"{count} {other}" not in text, text


def test_every_plural_in_the_catalog_is_checked_here():
    found = set()
    for key, template in EN.items():
        for _, name, spec, _ in string.Formatter().parse(template):
            if spec and "|" in spec:
                found.add((key, name, *spec.split("|")))
    assert found == set(COUNTED)


@pytest.mark.parametrize(
    ("count", "noun"),
    [
        (1, "token"),
        (np.int64(1), "token"),
        ("1", "token"),
        (-1, "token"),
        (0, "tokens"),
        (2, "tokens"),
        (np.int32(11), "tokens"),
        ("1,001", "tokens"),
        (1.5, "tokens"),
    ],
)
def test_plural_picks_the_form_the_number_as_written_needs(count, noun):
    assert plural(count, "token", "tokens") == noun


def test_a_plural_inside_a_message_value_and_in_latex():
    from qkvcalc.render.latex import tex_message

    inner = Msg("train.elided", count=1)
    assert inner.text() == "1 step not shown"
    assert translate("train.elided", "en", count=3) == "3 steps not shown"
    tex = tex_message("ui.variant.tiles", "en", tiles=1)
    assert "1" in tex and "key" in tex and "keys" not in tex and "|" not in tex
    assert "keys" in tex_message("ui.variant.tiles", "en", tiles=4)


@pytest.mark.parametrize(("ids", "words"), [([5], "on 1 token:"), ([5, 7], "on 2 tokens:")])
def test_extract_describes_a_one_token_prompt_in_the_singular(tmp_path, ids, words):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import qkvcalc
    from tests.test_extract import build

    folder = tmp_path / "llama"
    build("llama").save_pretrained(folder)
    problem = qkvcalc.extract(str(folder), layer=0, input_ids=ids)
    assert words in problem["description"], problem["description"]


SIZES = {
    "doc": "n = 1 query, m = 1 key, d_k = 2, d_v = 2 per head, H = 1 head, G = 1 key/value head.",
    "multihead": "n = 3 queries, m = 3 keys, d_k = 2, d_v = 2 per head, H = 2 heads, "
    "G = 2 key/value heads.",
}


@pytest.mark.parametrize("preset", sorted(SIZES))
def test_the_torch_scripts_header_counts_its_sizes_in_english(preset):
    """The torch script's comment of its sizes gave "n = 1 queries … H = 1 heads"."""
    from qkvcalc.input import presets
    from qkvcalc.input.problem import Problem
    from qkvcalc.render import RenderOptions, render
    from qkvcalc.run.engine import run

    doc = presets.load(preset)
    trace = run(Problem.from_mapping(doc.get("examples", [doc])[0] if "examples" in doc else doc))
    script = render(trace, "torch", RenderOptions(width=100, color=False))
    assert [line for line in script.splitlines() if line.startswith("# n = ")] == [
        "# " + SIZES[preset]
    ]
