"""Hypothesis strategies for attention problems in the input format (row layout)."""

from __future__ import annotations

from hypothesis import strategies as st

small_ints = st.integers(min_value=-3, max_value=3).map(float)
floats = st.floats(
    min_value=-4, max_value=4, allow_nan=False, allow_infinity=False, allow_subnormal=False
)
numbers = st.one_of(small_ints, floats)


def matrix(draw, rows, cols, elements=numbers):
    return [[draw(elements) for _ in range(cols)] for _ in range(rows)]


@st.composite
def problems(draw, max_n=5, max_d=4, multihead=True, cross=True, extras=True):
    """A valid problem: sizes, heads, GQA, cross-attention, biases, W_O, every mask kind."""
    n = draw(st.integers(1, max_n))
    d_model = draw(st.integers(1, max_d))
    heads = draw(st.sampled_from([1, 2, 4])) if multihead else 1
    kv_heads = draw(st.sampled_from([g for g in (1, 2, 4) if heads % g == 0]))
    d_k = draw(st.integers(1, 3))
    d_v = draw(st.integers(1, 3))
    is_cross = cross and draw(st.booleans())
    m = draw(st.integers(1, max_n)) if is_cross else n
    doc: dict = {
        "x": matrix(draw, n, d_model),
        "wq": matrix(draw, d_model, heads * d_k),
        "wk": matrix(draw, d_model, kv_heads * d_k),
        "wv": matrix(draw, d_model, kv_heads * d_v),
        "heads": heads,
        "kv_heads": kv_heads,
    }
    if is_cross:
        doc["source"] = matrix(draw, m, d_model)
    mask_kind = draw(st.sampled_from(["none", "causal", "custom"]))
    if mask_kind == "custom":
        doc["mask"] = matrix(draw, n, m, st.sampled_from([0, 1]))
    else:
        doc["mask"] = mask_kind
    if extras:
        if draw(st.booleans()):
            doc["key_padding"] = [draw(st.sampled_from([0, 1])) for _ in range(m)]
        if draw(st.booleans()):
            doc["scale"] = draw(st.sampled_from([0.5, 1.0, 0.125, 2.0]))
        for bias, cols in (("bq", heads * d_k), ("bk", kv_heads * d_k), ("bv", kv_heads * d_v)):
            if draw(st.booleans()):
                doc[bias] = [draw(numbers) for _ in range(cols)]
        if draw(st.booleans()):
            d_out = draw(st.integers(1, 4))
            doc["wo"] = matrix(draw, heads * d_v, d_out)
            if draw(st.booleans()):
                doc["bo"] = [draw(numbers) for _ in range(d_out)]
    return doc
