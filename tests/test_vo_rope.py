"""RoPE on the values and back on the output (VO-RoPE, DeepSeek-V4), the feature module
qkvcalc/ops/vo_rope.py: each head's V turned at its key's position j, its output turned back at
its query's position i. Checked against loops written here, against the relative-position
identity it teaches (the rotary columns of the output are Σⱼ Aᵢⱼ·R(j − i)·vⱼ), against PyTorch
with autograd for every gradient (under GQA, with sinks and a window), in the torch script, in
the quiz (its named mistakes), under --dtype, and as bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import qkvcalc
from qkvcalc.input.problem import Problem
from qkvcalc.quiz.mistakes import recognise
from qkvcalc.render import RenderOptions, render
from qkvcalc.run.engine import run
from tests.conftest import one_message, run_qkvcalc

MISTAKE_IDS = {"vo_rope_not_turned_back", "vo_rope_turned_forward"}

RNG = np.random.default_rng(37)
N, D_MODEL, H, G, D = 5, 3, 2, 1, 6
THETA, DIMS = 50.0, 4
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, G * D)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, G * D)).tolist(),
    "wo": RNG.standard_normal((H * D, 2)).tolist(),
    "heads": H,
    "kv_heads": G,
    "mask": "causal",
    "window": 3,
    "sinks": [0.3, -0.4],
    "rope": {"theta": THETA, "style": "pairs", "dims": DIMS},
    "vo_rope": True,
}


def turn(row: np.ndarray, position: float) -> np.ndarray:
    """One row's first DIMS columns turned at `position`, pairs (2i, 2i + 1)."""
    out = row.copy()
    for k in range(DIMS // 2):
        phi = position * THETA ** (-2 * k / DIMS)
        a, b = row[2 * k], row[2 * k + 1]
        c, s = math.cos(phi), math.sin(phi)
        out[2 * k], out[2 * k + 1] = a * c - b * s, b * c + a * s
    return out


def naive(doc: dict) -> tuple[np.ndarray, list[np.ndarray]]:
    """Loops, as on paper: q and k turned, V turned at j, the sink in the softmax over the
    window, each output row turned back at i; the heads joined and W_O."""
    x, wq, wk, wv, wo = (np.asarray(doc[k], float) for k in ("x", "wq", "wk", "wv", "wo"))
    heads, window, sinks = doc["heads"], doc["window"], doc["sinks"]
    n = x.shape[0]
    joined, maps = np.zeros((n, heads * D)), []
    k = np.array([turn(r, j) for j, r in enumerate(x @ wk)])
    v = np.array([turn(r, j) for j, r in enumerate(x @ wv)])
    for h in range(heads):
        q = np.array([turn(r, i) for i, r in enumerate(x @ wq[:, h * D : (h + 1) * D])])
        a = np.zeros((n, n))
        for i in range(n):
            seen = [j for j in range(n) if i - window < j <= i]
            s = [float(q[i] @ k[j]) / math.sqrt(D) for j in seen]
            top = max([*s, sinks[h]])
            total = sum(math.exp(t - top) for t in s) + math.exp(sinks[h] - top)
            for j, t in zip(seen, s, strict=True):
                a[i, j] = math.exp(t - top) / total
            joined[i, h * D : (h + 1) * D] = turn(a[i] @ v, -i)
        maps.append(a)
    return joined @ wo, maps


def test_the_values_and_the_output_turn_as_loops_written_here():
    trace = qkvcalc.explain(**DOC)
    want, maps = naive(DOC)
    assert np.allclose(trace.output, want, atol=1e-12)
    for h in (1, 2):
        assert np.allclose(trace.stage("weights", h).value, maps[h - 1], atol=1e-14)
        assert np.allclose(trace.stage("v_rot", h).value, trace.stage("k_rot", h).value) is False
    same = qkvcalc.explain(**(DOC | {"wv": DOC["wk"]}))  # K = V before the turn: V_rot = K_rot
    assert np.array_equal(same.stage("v_rot", 1).value, same.stage("k_rot", 1).value)


def test_the_output_mixes_the_values_by_their_relative_position():
    """O_back,i = Σⱼ Aᵢⱼ·R(j − i)·vⱼ: the values turned by j − i, the sum then taken as is."""
    trace = qkvcalc.explain(**DOC)
    v = trace.stage("v", 1).value
    for h in (1, 2):
        a, back = trace.stage("weights", h).value, trace.stage("out_back", h).value
        for i in range(N):
            relative = sum(a[i, j] * turn(v[j], j - i) for j in range(N))
            assert np.allclose(back[i], relative, atol=1e-13)
        out = trace.stage("output", h).value
        assert np.array_equal(back[:, DIMS:], out[:, DIMS:])  # past R: through both turns
    moved = qkvcalc.explain(**(DOC | {"positions": [7, 8, 9, 10, 11]}))  # every position + 7
    assert np.allclose(moved.output, trace.output, atol=1e-12)


def test_a_problem_without_it_differs():
    plain = qkvcalc.explain(**{k: v for k, v in DOC.items() if k != "vo_rope"})
    assert not np.allclose(plain.output, qkvcalc.explain(**DOC).output, atol=1e-3)
    assert all(s.id not in ("v_rot", "out_back") for s in plain.stages)


torch = pytest.importorskip("torch", reason="the PyTorch oracle needs torch (pip install torch)")


def _rope(x, positions):
    """The first DIMS columns of x [..., rows, d] turned, pairs, as DeepSeek-V4 writes it."""
    inv = THETA ** (-torch.arange(0, DIMS, 2, dtype=torch.float64) / DIMS)
    ang = positions.to(torch.float64)[:, None] * inv[None, :]
    cos, sin = ang.cos().repeat_interleave(2, -1), ang.sin().repeat_interleave(2, -1)
    rope, rest = x[..., :DIMS], x[..., DIMS:]
    half = torch.stack((-rope[..., 1::2], rope[..., 0::2]), dim=-1).flatten(-2)
    return torch.cat([rope * cos + half * sin, rest], dim=-1)


def _torch_layer(doc: dict):
    """The layer in torch (float64) with autograd: eager attention with a sink over the window,
    V turned, the output turned back by −i (apply_rotary_pos_emb with −sin)."""
    t = {
        k: torch.tensor(doc[k], dtype=torch.float64, requires_grad=True)
        for k in ("x", "wq", "wk", "wv", "wo", "sinks")
    }
    pos = torch.arange(N)
    q = _rope((t["x"] @ t["wq"]).view(N, H, D).transpose(0, 1), pos)
    k = _rope(t["x"] @ t["wk"], pos)
    v = _rope(t["x"] @ t["wv"], pos)
    s = q @ k.T / math.sqrt(D)
    i, j = torch.arange(N)[:, None], torch.arange(N)[None, :]
    s = s.masked_fill(~((j <= i) & (j > i - doc["window"])), float("-inf"))
    full = torch.cat([s, t["sinks"].view(H, 1, 1).expand(H, N, 1)], dim=-1)
    a = torch.softmax(full, dim=-1)[..., :-1]
    out = _rope(a @ v, -pos)
    return out.transpose(0, 1).reshape(N, H * D) @ t["wo"], t


def test_the_turns_and_their_gradients_equal_pytorch_and_autograd():
    target = RNG.standard_normal((N, 2))
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
        ("grad_sinks", "sinks"),
    ):
        want = leaves[leaf].grad.numpy()
        got = trace.stage(sid).value
        assert np.allclose(np.reshape(got, want.shape), want, atol=1e-12), sid


def test_the_torch_script_checks_the_turns_and_the_gradients(tmp_path):
    from tests.inprocess import run_script

    for backward in (False, True):
        extra = {"target": np.zeros((N, 2)).tolist(), "backward": True} if backward else {}
        text = render(qkvcalc.explain(**DOC, **extra), "torch", RenderOptions(width=100))
        assert "heads = rope(heads, -torch.tensor(" in text
        path = tmp_path / f"check{backward}.py"
        path.write_text(text, encoding="utf-8")
        result = run_script(str(path))
        assert result["returncode"] == 0, result["stderr"]


def test_the_dtype_turns_the_output_back_as_the_keys_are_turned():
    """bfloat16, eager: the turn back rounds as the rope op rounds q and k (transformers' LLaMA
    apply_rotary_pos_emb: cos and sin from float32 angles, cast to the dtype, x·cos +
    rotate(x)·sin in the dtype), at the angles −i·ω."""
    trace = qkvcalc.explain(**DOC, dtype="bfloat16")
    out = torch.tensor(trace.stage("output", 1).value).to(torch.bfloat16)
    f32 = torch.float32
    inv = 1.0 / torch.tensor(THETA, dtype=f32) ** (torch.arange(0, DIMS, 2, dtype=f32) / DIMS)
    ang = -torch.arange(N, dtype=torch.float32)[:, None] * inv[None, :]
    cos = ang.cos().repeat_interleave(2, -1).to(torch.bfloat16)
    sin = ang.sin().repeat_interleave(2, -1).to(torch.bfloat16)
    rope, rest = out[:, :DIMS], out[:, DIMS:]
    half = torch.stack((-rope[:, 1::2], rope[:, 0::2]), dim=-1).flatten(-2)
    want = torch.cat([rope * cos + half * sin, rest], dim=-1).double().numpy()
    assert np.mean(trace.stage("out_back", 1).value == want) >= 0.99


def test_the_quiz_names_the_output_not_turned_back_and_turned_forward():
    trace = run(Problem.from_mapping(DOC))
    out = trace.stage("output", 2).value
    forward = np.array([turn(r, i) for i, r in enumerate(out)])
    for wrong, said in ((out, "vo_rope_not_turned_back"), (forward, "vo_rope_turned_forward")):
        found = recognise(trace, "2/out_back", np.round(wrong, 4), {}, 4)
        assert found is not None and found.id == said
        assert found.text("ko") != found.text("en") and "{" not in found.text("ko")
    truth = trace.stage("out_back", 2).value
    assert recognise(trace, "2/out_back", np.round(truth, 4), {}, 4) is None


def test_every_format_shows_the_turns_in_both_languages():
    trace = qkvcalc.explain(**DOC)
    for lang, title in (("en", "The output turned back"), ("ko", "되돌린 출력")):
        for fmt in ("table", "markdown", "latex", "html", "json"):
            text = render(trace, fmt, RenderOptions(width=100, color=False, lang=lang))
            assert title in text, (lang, fmt)
    said = json.loads(render(trace, "json", RenderOptions()))
    assert said["input"]["vo_rope"] is True


@pytest.mark.parametrize(
    ("change", "fragments"),
    [
        ({"vo_rope": 2}, ("vo_rope must be true", "not 2")),
        ({"rope": None}, ("give rope too",)),
        (
            {"rope": {"dims": 6}, "wv": RNG.standard_normal((D_MODEL, 4)).tolist(), "wo": None},
            ("first 6 columns", "d_v = 4"),
        ),
        ({"decode": 2}, ("vo_rope", "--decode")),
        ({"tiles": 2, "target": np.zeros((N, 2)).tolist()}, ("vo_rope", "--tiles")),
    ],
)
def test_bad_input_is_one_message(tmp_path, change, fragments):
    doc = {k: v for k, v in (DOC | change).items() if v is not None}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    backward = ("--backward",) if "target" in change else ()
    one_message(run_qkvcalc("explain", str(path), *backward), *fragments)


def test_tiles_turn_as_the_whole_run():
    whole, tiles = qkvcalc.explain(**DOC), qkvcalc.explain(**DOC, tiles=2)
    assert np.allclose(tiles.output, whole.output, atol=1e-13)
