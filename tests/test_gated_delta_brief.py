"""What makes a long linear-attention layer quick to explain and to extract (issue 37's benchmark):

- `--detail brief` on a page lays out of each head's per-token states the first two and the
  last once a head has more than RenderOptions.max_rows of them, the last with a note that
  says which are left out and how to see them; JSON, `--detail full` and short layers keep
  every state;
- the engine's `output_only` run (extract's check) computes the final output from the stages
  it depends on alone, the same numbers as the whole run;
- extract runs a module that holds a grouped convolution on one thread, the thread
  count restored after."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.run.engine import run
from qkvcalc.select import brief_steps, select
from tests.conftest import in_process

RNG = np.random.default_rng(2037)
N, D_MODEL, H, D_K, D_V = 15, 4, 2, 3, 2
MOST = RenderOptions().max_rows  # 12: a head with more states than this is summed up
DOC = {
    "x": RNG.standard_normal((N, D_MODEL)).tolist(),
    "wq": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wk": RNG.standard_normal((D_MODEL, H * D_K)).tolist(),
    "wv": RNG.standard_normal((D_MODEL, H * D_V)).tolist(),
    "wo": RNG.standard_normal((H * D_V, D_MODEL)).tolist(),
    "heads": H,
    "mask": "causal",
    "gated_delta": {
        "g": (-np.log1p(np.exp(RNG.standard_normal((N, H))))).round(6).tolist(),
        "beta": (1 / (1 + np.exp(-RNG.standard_normal((N, H))))).round(6).tolist(),
    },
}
STATE = re.compile(r"the state after this token · head \d+ · token (\d+)")  # its heading


def explain(tmp_path, *args: str) -> str:
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(DOC), encoding="utf-8")
    result = in_process("explain", str(path), "--no-color", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def shown_states(text: str) -> list[int]:
    return [int(t) for t in STATE.findall(text)]


@pytest.mark.parametrize("fmt", ["txt", "markdown", "html"])
def test_brief_shows_each_heads_first_two_states_and_the_last(tmp_path, fmt):
    brief = explain(tmp_path, "--detail", "brief", "--format", fmt)
    assert shown_states(brief) == [1, 2, N] * H
    words = " ".join(brief.split())
    for head in range(1, H + 1):  # the note, once a head, under its last state
        assert words.count(f"--stages state --head {head} --detail full") == 1
    if fmt == "txt":
        said = f"S_3 … S_{N - 1}, the states after tokens 3 to {N - 1}, {N - 3} of this head's {N}."
        assert words.count(said) == H
    # the rest of the page is all there: the weights, the chunked form, the output
    full = explain(tmp_path, "--format", fmt)
    assert shown_states(full) == list(range(1, N + 1)) * H
    if fmt != "html":  # the page's stages numbered k/total: all but the states left out
        totals = {int(t) for t in re.findall(r"\b\d+/(\d+) ", brief)}
        whole = {int(t) for t in re.findall(r"\b\d+/(\d+) ", full)}
        assert totals and totals == {t - H * (N - 3) for t in whole}
    if fmt == "txt":  # the weights, the chunked form, the output
        for word in ("W[t,s] = β_s·k̂_sᵀ", "O_chunk = chunked", "o_t = S_tᵀ·q̂_t"):
            assert brief.count(word) == full.count(word) > 0


@pytest.mark.parametrize("fmt", ["txt", "markdown"])
def test_the_python_render_is_brief_as_the_command_line_is(tmp_path, fmt):
    """render(trace, fmt, detail="brief") through the public API lays the states out as
    `explain --detail brief` does, word for word; detail="full" keeps every state."""
    import qkvcalc

    trace = qkvcalc.explain(**DOC)
    brief = qkvcalc.render(trace, fmt, detail="brief")
    assert shown_states(brief) == [1, 2, N] * H
    assert brief.strip() == explain(tmp_path, "--detail", "brief", "--format", fmt).strip()
    assert shown_states(qkvcalc.render(trace, fmt)) == list(range(1, N + 1)) * H
    # JSON and torch hold every stage, brief or not
    doc = json.loads(qkvcalc.render(trace, "json", detail="brief"))
    assert sum(stage["id"] == "state" for stage in doc["stages"]) == N * H


def test_what_the_note_says_is_how_to_see_them(tmp_path):
    wanted = explain(tmp_path, "--stages", "state", "--head", "2", "--detail", "full")
    assert shown_states(wanted) == list(range(1, N + 1))
    ko = explain(tmp_path, "--detail", "brief", "--lang", "ko")
    assert len(re.findall(r"· 토큰 \d+", ko)) == 3 * H
    assert f"이 헤드의 {N}개 중 {N - 3}개입니다" in " ".join(ko.split())


def test_the_stages_left_out_and_the_rest_are_the_whole_runs():
    trace = run(Problem.from_mapping(DOC))
    short = brief_steps(trace, MOST)
    gone = [s for s in trace.stages if s.id == "state" and 3 <= (s.step or 0) <= N - 1]
    assert len(short.stages) == len(trace.stages) - len(gone) == len(trace.stages) - H * (N - 3)
    kept = [s for s in trace.stages if not any(s is g for g in gone)]
    for mine, theirs in zip(short.stages, kept, strict=True):
        assert mine.spec is theirs.spec and mine.value is theirs.value
        extra = len(mine.notes) - len(theirs.notes)
        assert extra == (1 if mine.id == "state" and mine.step == N else 0)
    assert (short.output == trace.output).all()
    assert short.stage("state", 1, step=5) is trace.stage("state", 1, step=5)  # still found
    # a head's states, chosen: summed up the same way; a head of few states is left as it is
    chosen = brief_steps(select(trace, "state", 1), MOST)
    assert [s.step for s in chosen.stages] == [1, 2, N]
    assert brief_steps(trace, N) is trace


def test_short_layers_json_and_step_keep_every_state(tmp_path):
    preset = run(Problem.from_mapping(presets.load("deltanet")))
    assert brief_steps(preset, MOST) is preset  # the preset's few tokens: all shown
    doc = json.loads(explain(tmp_path, "--detail", "brief", "--format", "json"))
    steps = [s["step"] for s in doc["stages"] if s["id"] == "state"]
    assert steps == list(range(1, N + 1)) * H


@pytest.mark.parametrize(
    "source", ["doc", "gqa", "multihead", "deltanet", "kda", "lightning", "dsa", "diff", DOC]
)
def test_the_output_only_run_computes_the_same_output(source):
    problem = Problem.from_mapping(presets.load(source) if isinstance(source, str) else source)
    whole, alone = run(problem), run(problem, output_only=True)
    assert np.array_equal(alone.output, whole.output)
    refs = [s.ref for s in whole.stages]
    assert [s.ref for s in alone.stages] == [r for r in refs if r in {s.ref for s in alone.stages}]
    if source in ("deltanet", DOC):  # the implicit weights and the chunked form: not needed
        assert {s.id for s in alone.stages}.isdisjoint({"weights", "chunked"})
        assert len(alone.stages) < len(whole.stages)


def test_a_module_that_holds_a_grouped_convolution_runs_on_one_thread():
    torch = pytest.importorskip("torch")
    from qkvcalc.extract.runner import one_thread_convolutions

    class Mixer(torch.nn.Module):  # as Gated DeltaNet: F.conv1d with its Conv1d's weight
        def __init__(self) -> None:
            super().__init__()
            self.conv1d = torch.nn.Conv1d(6, 6, 3, groups=6, padding=2, dtype=torch.float64)
            self.proj = torch.nn.Linear(6, 6, dtype=torch.float64)

        def forward(self, x):
            seen.append(torch.get_num_threads())
            y = torch.nn.functional.conv1d(x, self.conv1d.weight, padding=2, groups=6)
            return self.proj(y.transpose(1, 2))

    seen: list[int] = []
    mixer = Mixer()
    model = torch.nn.Sequential(torch.nn.Identity(), mixer)
    x = torch.randn(1, 6, 9, dtype=torch.float64)
    own = torch.get_num_threads()
    torch.set_num_threads(2)  # two, so that one is a change
    try:
        with torch.no_grad():
            plain = model(x)
            with one_thread_convolutions(model):
                again = model(x)
        assert seen == [2, 1]
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(own)
    assert torch.allclose(plain, again, rtol=1e-15, atol=0)
    assert not mixer._forward_pre_hooks and not mixer._forward_hooks  # its hooks removed
