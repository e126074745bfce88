"""Differential attention (DiffLlama), the op module qkvcalc/ops/differential.py: head i pairs
with head i + H/2, (Aᵢ − λ·A_{i+H/2})·[Vᵢ | V_{i+H/2}], each row RMS-normalised and scaled by
1 − λ_init, the pairs joined by the concat. Checked against a naive loop written here, against
PyTorch written as transformers' DiffLlamaAttention computes it (two attention calls over the
halves of V, chunked along the K/V heads) with autograd for every gradient, in every format,
in the quiz (its two named mistakes) and as bad input. tests/test_extract_new.py checks
extract against transformers' own module."""

from __future__ import annotations

import json

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import one_message, run_qkvcalc

MISTAKE_IDS = {"diff_lambda_missing", "diff_added"}  # tests/test_feature_mistakes.py reads it

RNG = np.random.default_rng(37)
N, D_MODEL, H, G, D = 5, 3, 4, 2, 2
LAM, INIT, EPS = 0.37, 0.2, 1e-5
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, G * D)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, G * D)).tolist(),
    "wo": RNG.standard_normal((H * D, 3)).tolist(),
    "heads": H,
    "kv_heads": G,
    "differential": {"lambda": LAM, "lambda_init": INIT},
    "mask": "causal",
}


def naive(doc: dict) -> np.ndarray:
    """Loops, as on paper: every head's causal softmax map; for pair i (0-based, i < H/2) and
    each output cell, Σⱼ (Aᵢ[r,j] − λ·A_{i+H/2}[r,j]) · V''[j, c] with V'' the two K/V heads'
    values side by side (query head h reads K/V head h // (H/G)); then each row over its root
    mean square, times 1 − λ_init; the pairs side by side, times W_O."""
    x, wq, wk, wv, wo = (np.asarray(doc[k], float) for k in ("x", "wq", "wk", "wv", "wo"))
    heads, groups = doc["heads"], doc["kv_heads"]
    diff = doc["differential"]
    lam, init = float(diff["lambda"]), float(diff["lambda_init"])
    n, d = x.shape[0], wq.shape[1] // heads
    maps = np.zeros((heads, n, n))
    values = []
    for h in range(heads):
        g = h // (heads // groups)
        q, k = x @ wq[:, h * d : (h + 1) * d], x @ wk[:, g * d : (g + 1) * d]
        values.append(x @ wv[:, g * d : (g + 1) * d])
        for r in range(n):
            scores = [float(q[r] @ k[j]) / np.sqrt(d) for j in range(r + 1)]
            e = [np.exp(s - max(scores)) for s in scores]
            for j in range(r + 1):
                maps[h, r, j] = e[j] / sum(e)
    half = heads // 2
    concat = np.zeros((n, heads * d))
    for i in range(half):
        both = np.hstack([values[i], values[i + half]])  # [n, 2d]
        for r in range(n):
            row = [
                sum((maps[i, r, j] - lam * maps[i + half, r, j]) * both[j, c] for j in range(n))
                for c in range(2 * d)
            ]
            root = np.sqrt(sum(v * v for v in row) / len(row) + EPS)
            for c in range(2 * d):
                concat[r, i * 2 * d + c] = (1 - init) * row[c] / root
    return concat @ wo


def test_differential_attention_equals_a_naive_loop():
    trace = qkvcalc.explain(**DOC)
    assert np.allclose(trace.output, naive(DOC), atol=1e-12)
    for i in (1, 2):
        j = i + H // 2
        delta = trace.stage("diff_weights", i).value
        a_i, a_j = trace.stage("weights", i).value, trace.stage("weights", j).value
        assert np.array_equal(delta, a_i - LAM * a_j)
        both = np.hstack([trace.stage("v", i).value, trace.stage("v", j).value])
        assert np.array_equal(trace.stage("diff_v", i).value, both)
    concat = trace.stage("concat").value
    assert concat.shape == (N, H * D)
    assert np.array_equal(concat, np.hstack([trace.stage("diff_scaled", i).value for i in (1, 2)]))


def test_every_key_value_head_count_gives_the_naive_result():
    """G = H (each head its own K/V) and G = 1 (one K/V head for all, which DiffLlama refuses
    and qkvcalc computes as the same rule: both heads of a pair read that one V)."""
    for groups in (1, H):
        doc = DOC | {"kv_heads": groups}
        doc["wk"] = RNG.standard_normal((D_MODEL, groups * D)).tolist()
        doc["wv"] = RNG.standard_normal((D_MODEL, groups * D)).tolist()
        assert np.allclose(qkvcalc.explain(**doc).output, naive(doc), atol=1e-12), groups


torch = pytest.importorskip("torch", reason="the PyTorch oracle needs torch (pip install torch)")


def _torch_layer(doc: dict):
    """transformers' DiffLlamaAttention.forward in float64 (no RoPE), returning (output, leaves):
    V chunked in two halves along the K/V heads, each repeated twice, two attention calls,
    their outputs side by side, then the two halves of the heads subtracted."""
    t = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in ("x", "wq", "wk", "wv", "wo")
    }
    n, heads, groups = len(doc["x"]), doc["heads"], doc["kv_heads"]
    q = (t["x"] @ t["wq"]).view(1, n, heads, -1).transpose(1, 2)
    k = (t["x"] @ t["wk"]).view(1, n, groups, -1).transpose(1, 2)
    v = (t["x"] @ t["wv"]).view(1, n, groups, -1).transpose(1, 2)
    v1, v2 = (part.repeat(1, 2, 1, 1) for part in torch.chunk(v, 2, dim=1))
    k = k.repeat_interleave(heads // groups, dim=1)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    scores = (q @ k.transpose(2, 3) / q.shape[-1] ** 0.5).masked_fill(~causal, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out1 = weights @ v1.repeat_interleave(heads // groups, dim=1)
    out2 = weights @ v2.repeat_interleave(heads // groups, dim=1)
    out = torch.cat([out1, out2], dim=-1).transpose(1, 2)  # [1, n, H, 2d]
    first, second = torch.chunk(out, 2, dim=2)
    out = first - LAM * second
    out = out / torch.sqrt(out.pow(2).mean(-1, keepdim=True) + EPS) * (1 - INIT)
    return out.reshape(n, -1) @ t["wo"], t


def test_differential_attention_and_its_gradients_equal_pytorch_and_autograd():
    target = RNG.standard_normal((N, 3))
    out, leaves = _torch_layer(DOC)
    (0.5 * ((out - torch.tensor(target)) ** 2).sum()).backward()
    trace = qkvcalc.explain(**DOC, target=target.tolist(), backward=True)
    assert np.allclose(trace.output, out.detach().numpy(), atol=1e-12)
    for sid, leaf in (
        ("grad_wq", "wq"),
        ("grad_wk", "wk"),
        ("grad_wv", "wv"),
        ("grad_wo", "wo"),
        ("grad_x", "x"),
    ):
        want = leaves[leaf].grad.numpy()
        assert np.allclose(trace.stage(sid).value, want, atol=1e-12), sid


def test_the_torch_script_checks_differential_attention_and_its_gradients(tmp_path):
    from tests.inprocess import run_script

    for backward in (False, True):
        path = tmp_path / f"check{backward}.py"
        trace = qkvcalc.explain(**DOC, target=np.zeros((N, 3)).tolist(), backward=backward)
        text = render(trace, "torch", RenderOptions(width=100, color=False))
        assert "lam * weights[:, half:]" in text
        path.write_text(text, encoding="utf-8")
        result = run_script(str(path))
        assert result["returncode"] == 0, result["stderr"]
        assert "OK: PyTorch agrees" in result["stdout"]


def test_every_format_shows_the_differential_stages():
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 3)).tolist(), backward=True)
    data = json.loads(render(trace, "json", RenderOptions(width=100, color=False)))
    ids = [(s["id"], s["head"]) for s in data["stages"]]
    for sid in ("diff_weights", "diff_v", "diff_output", "diff_norm", "diff_scaled"):
        assert (sid, 1) in ids and (sid, 2) in ids and (sid, 3) not in ids, sid
    for sid in ("grad_diff_scaled", "grad_diff_weights", "grad_diff_v"):
        assert (sid, 1) in ids and (sid, 2) in ids, sid
    assert data["input"]["differential"] == {"lambda": LAM, "lambda_init": INIT}
    for fmt in ("table", "txt", "markdown", "latex", "html", "svg"):
        for lang in ("en", "ko"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert "λ" in text or "lambda" in text, (fmt, lang)


def test_the_difference_arithmetic_holds_for_the_numbers_shown():
    trace = qkvcalc.explain(**DOC)
    text = render(trace, "txt", RenderOptions(width=100, color=False))
    start = text.index("one map minus λ times the other")
    lines = [
        line.strip()
        for line in text[start:].split("pair's values side by side")[0].splitlines()
        if "]:" in line
    ]
    assert len(lines) == N * N
    signs = set()
    for line in lines:  # [2,1]: 0.5000 − 0.3700×0.8808 = 0.1741 (≈ where it fails)
        body = line.split("]: ", 1)[1].replace("−", "-")
        sign = "≈" if "≈" in body else "="
        left, shown = body.rsplit(sign, 1)
        a, rest = left.split(" - ", 1)
        lam, b = rest.split("×")
        holds = abs(float(a) - float(lam) * float(b) - float(shown)) <= 0.5e-4 + 1e-12
        assert holds == (sign == "="), line
        signs.add(sign)
    assert "=" in signs


@pytest.mark.parametrize("mistake", sorted(MISTAKE_IDS))
def test_the_quiz_names_a_differential_mistake(mistake):
    trace = run(Problem.from_mapping(DOC))
    a_1, a_3 = trace.stage("weights", 1).value, trace.stage("weights", 3).value
    wrong = a_1 - a_3 if mistake == "diff_lambda_missing" else a_1 + LAM * a_3
    found = recognise(trace, "1/diff_weights", np.round(wrong, 4), {}, 4)
    assert found is not None and found.id == mistake
    assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    truth = trace.stage("diff_weights", 1).value
    assert recognise(trace, "1/diff_weights", np.round(truth, 4), {}, 4) is None


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"heads": 3, "kv_heads": 3}, ("even number of heads", "heads is 3")),
        ({"differential": {"lambda": 1}}, ("needs both lambda",)),
        ({"differential": {"lambda": 1, "lambda_init": 0, "beta": 2}}, ('no key "beta"',)),
        ({"differential": 0.5}, ("must be an object",)),
        ({"decode": 1}, ("not computed step by step",)),
        ({"tiles": 2}, ("leave out --tiles",)),
        # the gate was read and its stages made, but the pair's join read the heads' ungated
        # outputs: the run said nothing and gave the output without the gate
        (
            {"wg": np.ones((D_MODEL, H * D)).tolist()},
            ("output gate (wg)", "leave out wg and bg, or differential"),
        ),
    ],
)
def test_bad_differential_input_is_one_message(tmp_path, change, fragments):
    doc = DOC | change
    if doc["heads"] == 3:
        doc["wq"] = RNG.standard_normal((D_MODEL, 3 * D)).tolist()
        doc["wk"] = doc["wv"] = RNG.standard_normal((D_MODEL, 3 * D)).tolist()
        doc["wo"] = RNG.standard_normal((3 * D, 3)).tolist()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), *fragments)


def test_train_refuses_differential_attention(tmp_path):
    path = tmp_path / "diff.json"
    path.write_text(json.dumps(DOC | {"target": np.zeros((N, 3)).tolist()}), encoding="utf-8")
    one_message(run_qkvcalc("train", str(path)), "does not learn through differential")


@pytest.mark.parametrize("lam", [-0.5, 0.0, 0.5, 1.5])
def test_what_the_page_says_of_delta_holds_for_every_lambda(lam):
    """The pages said 'a row of Δ no longer sums to 1' (false at λ = 0), that the attention both
    maps give to the same keys cancels and that raising the second map's weight lowers Δ (false
    at λ ≤ 0: with λ = −0.5 the second map is added). Now: each row of Δ sums to 1 − λ (0 where
    every key is masked), a cell is negative only with λ > 0, and the page says 'with λ > 0'."""
    mask = np.tril(np.ones((N, N), dtype=int))
    mask[2] = 0  # query 3 sees no key: its weights, and its row of Δ, are 0
    doc = DOC | {"differential": {"lambda": lam, "lambda_init": INIT}, "mask": mask.tolist()}
    trace = qkvcalc.explain(**doc, target=np.zeros((N, 3)).tolist(), backward=True)
    for pair in (1, 2):
        delta = trace.stage("diff_weights", pair).value
        sums = delta.sum(axis=1)
        assert np.allclose(sums[2], 0) and np.allclose(np.delete(sums, 2), 1 - lam)
        if lam <= 0:
            assert delta.min() >= 0
        first, second = trace.stage("weights", pair).value, trace.stage("weights", pair + 2).value
        assert np.allclose(delta, first - lam * second)  # raising A_second[r, c] moves Δ by −λ
    text = " ".join(render(trace, "txt", RenderOptions(width=100, color=False)).split())
    assert "so a row of Δ sums to 1 − λ (0 where every key is masked)" in text
    assert "no longer sums to 1" not in text
    assert "with λ > 0, raising its weight lowers Δ" in text


def test_the_preset_pages_say_nothing_false_of_its_one_pair():
    """The preset has one pair: W_O's page said 'what one pair found is mixed with what the
    others found' (there are none), and its reference that the attention both maps give to the
    same keys cancels (token I: both maps give I all their weight, and Δ = 1 − ½·1 = ½)."""
    trace = run(Problem.from_mapping(presets.load("diff")))
    delta = trace.stage("diff_weights", 1).value
    weights = trace.stage("weights", 1).value, trace.stage("weights", 2).value
    assert all(w[0, 0] == 1 for w in weights) and delta[0, 0] == 0.5
    for lang in ("en", "ko"):
        text = " ".join(
            render(trace, "txt", RenderOptions(width=100, color=False, lang=lang)).split()
        )
        assert "Δ = 1 − ½·1 = ½" in text, lang
        assert ("with two pairs or more" in text) if lang == "en" else ("쌍이 둘 이상이면" in text)


def test_lambda_is_one_number_not_the_first_of_a_list(tmp_path):
    """{"lambda": [0.5, 7]} was read as λ = 0.5, the 7 dropped without a word."""
    path = tmp_path / "bad.json"
    doc = DOC | {"differential": {"lambda": [0.5, 7], "lambda_init": INIT}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    one_message(run_qkvcalc("explain", str(path)), "differential.lambda", "a number")


def test_the_quiz_hint_names_the_pairs_heads_whatever_the_cell():
    """The hint's head numbers were the cell's row and column ('Δ[3,2] = A_3[3,2] − λ × A_2[3,2],
    head 3's weight …' for pair 1 of heads 1 and 2): the cell's i, j took their place."""
    from qkvcalc.quiz.session import hint

    trace = run(Problem.from_mapping(DOC))
    for pair, partner in ((1, 3), (2, 4)):
        for row, col in ((0, 0), (4, 1), (2, 3)):
            said = hint(trace, trace.stage("diff_weights", pair), row, col).text("en")
            cell = f"[{row + 1},{col + 1}]"
            assert f"Δ{cell} = A_{pair}{cell} − λ × A_{partner}{cell}, head {pair}'s" in said
            said = hint(trace, trace.stage("diff_v", pair), row, col).text("ko")
            assert f"헤드 {pair}의 Value" in said and f"헤드 {partner}의 Value" in said


PAIR_STAGES = ("diff_weights", "diff_v", "diff_output", "diff_norm", "diff_scaled")


def _of_pair(stage) -> bool:
    """A pair's stage or its gradient, by its id (not by what the stage says of itself)."""
    return stage.id.removeprefix("grad_") in PAIR_STAGES


def _groups(stages) -> list[str]:
    """The runs of a page's stages by what their number counts: 'pair 1', 'head 2' (a stage of
    the whole run ends a run)."""
    runs: list[str] = []
    for s in stages:
        key = None if s.head is None else f"{'pair' if _of_pair(s) else 'head'} {s.head}"
        if key is not None and (not runs or runs[-1] != key):
            runs.append(key)
        elif key is None and runs and runs[-1] != "":
            runs.append("")
    return [r for r in runs if r]


def test_the_pair_stages_read_under_a_pair_not_a_head():
    """Pair 1's stages sat under a 'Head 1 of 4' banner and said '· head 1' in their headings
    (every format, both languages); the pair's gradients too. They are the pair's."""
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 3)).tolist(), backward=True)
    pairs = [s for s in trace.stages if _of_pair(s)]
    assert {s.head for s in pairs} == {1, 2}
    text = render(trace, "txt", RenderOptions(width=100, color=False))
    for pair in (1, 2):
        assert text.count(f" Pair {pair} of 2 ") == 2  # forward, backward
    for head in (1, 2, 3, 4):
        assert text.count(f" Head {head} of 4 ") == 2
    in_pair = sum(1 for s in pairs if s.head == 1)
    in_head = sum(1 for s in trace.stages if s.head == 1 and not _of_pair(s))  # dA, dV: a head's
    for fmt, sep in (("txt", " · "), ("markdown", " · "), ("html", " · "), ("latex", r"\quad ")):
        for lang, word, other in (("en", "pair", "head"), ("ko", "쌍", "헤드")):
            page = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert page.count(f"{sep}{word} 1") == in_pair == 10, (fmt, lang)
            assert page.count(f"{sep}{other} 1") == in_head, (fmt, lang)
    ko = render(trace, "txt", RenderOptions(width=100, color=False, lang="ko"))
    assert " 쌍 1 (전체 2개) " in ko
    assert all(s.pair == _of_pair(s) for s in trace.stages)  # Stage.pair, what the pages read
    from qkvcalc.interactive.step import stage_header  # the step mode's header line

    said = [stage_header(trace.stage("diff_norm", 2), 9, 9, lang).plain for lang in ("en", "ko")]
    assert said[0].endswith(" · pair 2") and said[1].endswith(" · 쌍 2"), said


def test_the_backward_groups_each_pair_then_each_head():
    """The walk plans dA of both heads of a pair at once (and dV of both): the backward went
    pair, head 1, head 3, head 1, head 3, …; each pair and each head now reads as one group,
    the pairs first, and the gradients are the same numbers."""
    trace = qkvcalc.explain(**DOC, target=np.zeros((N, 3)).tolist(), backward=True)
    start = next(k for k, s in enumerate(trace.stages) if s.id == "grad_output")
    forward, backward = trace.stages[:start], trace.stages[start:]
    assert _groups(forward) == ["head 1", "head 2", "head 3", "head 4", "pair 1", "pair 2"]
    assert _groups(backward) == ["pair 1", "pair 2", "head 1", "head 2", "head 3", "head 4"]
    for h in (1, 2, 3, 4):  # each head's group holds its dA and its dV
        mine = [s.id for s in backward if s.head == h and not _of_pair(s)]
        assert mine[0] == "grad_weights" and mine[-1] == "grad_v", (h, mine)
