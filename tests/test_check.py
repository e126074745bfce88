"""`qkvcalc check`: a person's own attention code graded, the mistake named, the smallest problem.

The reference pipeline its mutants are built on is held equal to qkvcalc.explain, stage by
stage; each file of tests/data/check/ is a person's function with one mistake put in (named by
its file) or a right one; the CLI is run as a real process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import qkvcalc
from qkvcalc.check import problems as P
from qkvcalc.check import reference as R
from qkvcalc.check.mutants import MISTAKE_IDS, MUTANTS, mutant
from qkvcalc.check.verdict import check_function
from qkvcalc.errors import QkvcalcError

DATA = Path(__file__).parent / "data" / "check"
ROOT = Path(__file__).resolve().parent.parent
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed")

EVERYTHING = ["x", "wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", "heads", "kv_heads", "mask"]
X_SIG = P.match(
    "f",
    [
        P.Param(n, "POSITIONAL_OR_KEYWORD", i > 3)
        for i, n in enumerate([*EVERYTHING, "causal", "scale"])
    ],
)
QKV_SIG = P.match(
    "f",
    [
        P.Param(n, "POSITIONAL_OR_KEYWORD", i > 2)
        for i, n in enumerate(["q", "k", "v", "mask", "causal", "scale"])
    ],
)


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QKVCALC_LANG": "en", "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "qkvcalc", "check", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


# ---- the reference pipeline is explain's attention ------------------------------------------


@pytest.mark.parametrize("sig", [X_SIG, QKV_SIG], ids=["x", "qkv"])
def test_the_reference_pipeline_gives_explains_every_stage(sig):
    for case in P.cases(sig, 60, seed=3):
        trace = qkvcalc.explain(**case.problem)
        mine = R.run(case.problem)
        shown = {R.key(s.id, s.head): s.value for s in trace.stages if s.id not in ("x", "split")}
        assert set(mine) == set(shown), case.name
        for name, value in shown.items():
            np.testing.assert_allclose(mine[name], value, rtol=1e-12, atol=1e-12, err_msg=name)


def test_every_mutant_parts_from_the_right_answer_on_some_problem():
    """A mutant that never differs could never be named."""
    planned = [c.problem for c in P.cases(X_SIG, 60, seed=1) + P.cases(QKV_SIG, 60, seed=1)]
    planned.append({**_rope_problem("half"), "mask": "causal"})  # RoPE's pairing (--stages)
    for mistake in MUTANTS:
        differs = False
        for case in planned:
            wrong = mutant(mistake, case)
            right = R.run(case)["output"]
            if wrong is not None and wrong["output"].shape == right.shape:
                differs |= not np.allclose(wrong["output"], right, equal_nan=True)
        assert differs, mistake


def test_the_mistake_ids_are_designs():
    assert set(MISTAKE_IDS) == {
        "softmax_axis",
        "no_scale",
        "scale_dk",
        "scale_twice",
        "scale_after_softmax",
        "kt_missing",
        "scores_transposed",
        "weights_transposed",
        "mask_ignored",
        "mask_inverted",
        "causal_diagonal",
        "causal_transposed",
        "mask_after_softmax",
        "masked_row_nan",
        "masked_row_uniform",
        "no_max_shift",
        "heads_split",
        "heads_concat",
        "gqa_repeat",
        "rope_pairs",
        "layout_transposed",
        "bias_missing",
        "wo_missing",
        "nondeterministic",
    }


# ---- a person's files --------------------------------------------------------------------------


def _function(path: Path) -> str:
    """The corpus writes its functions under three names, in three styles."""
    source = path.read_text(encoding="utf-8")
    return next(n for n in ("sdpa", "multi_head", "attention") if f"def {n}(" in source)


def _corpus(mistake: str) -> list[Path]:
    return sorted(p for p in DATA.glob(f"{mistake}*.py") if p.stem in (mistake, f"{mistake}_2"))


BUGGY = [
    pytest.param(
        path, id=path.stem, marks=[needs_torch] if "import torch" in path.read_text() else []
    )
    for mistake in sorted(set(MISTAKE_IDS) - {"nondeterministic", "rope_pairs"})
    for path in _corpus(mistake)
]  # rope_pairs: a function gets no RoPE, so its two are checked from their stages (below)


def test_each_mistake_has_two_implementations_written_differently():
    for mistake in MISTAKE_IDS:
        files = _corpus(mistake)
        assert len(files) == 2, mistake
        assert _function(files[0]) != _function(files[1]), mistake


@pytest.mark.parametrize("path", BUGGY)
def test_each_mistake_is_named_and_shown_on_a_problem_of_at_most_three_tokens(path):
    mistake = path.stem.removesuffix("_2")
    verdict = check_function(path, _function(path), problems=30)
    assert verdict.verdict == "wrong"
    assert verdict.mistake == mistake
    assert verdict.smallest is not None and verdict.first is not None
    p = verdict.smallest.problem
    tokens = len(p["q"] if "q" in p else p["x"])
    assert tokens <= 3
    # dimension at most 2 per head (d_model is 2·H where the heads' bug needs two columns each)
    heads, groups = p.get("heads", 1), p.get("kv_heads", p.get("heads", 1))
    widths = (
        [np.shape(p["q"])[1], np.shape(p["v"])[1]]
        if "q" in p
        else [np.shape(p["wq"])[1] // heads, np.shape(p["wv"])[1] // groups]
    )
    assert max(widths) <= 2 and ("q" in p or np.shape(p["x"])[1] <= 2 * heads)
    # the smallest problem shows it: their answer there is the mutant's, not the right one
    right = R.run(p)
    assert verdict.theirs is not None and verdict.theirs.output is not None
    theirs = verdict.theirs.output
    assert theirs.shape != right["output"].shape or not np.allclose(
        theirs, right["output"], equal_nan=True
    )
    assert np.allclose(theirs, mutant(mistake, p)["output"], equal_nan=True)


@pytest.mark.parametrize(
    ("file", "function"),
    [
        ("right_qkv", "attention"),
        ("right_heads", "attention"),
        ("right_tuple", "attention"),
        ("right_stages", "attention"),
        ("right_einsum", "sdpa"),
        ("right_loops_heads", "attention"),
        pytest.param("right_masked_fill", "attention", marks=needs_torch),
        pytest.param("right_torch_linear", "multi_head", marks=needs_torch),
        pytest.param("right_torch", "attention", marks=needs_torch),
        pytest.param("right_torch_heads", "mha", marks=needs_torch),
    ],
)
def test_a_right_function_is_judged_right(file, function):
    verdict = check_function(DATA / f"{file}.py", function)
    assert (verdict.verdict, verdict.mistake, verdict.raised) == ("right", None, [])


@pytest.mark.parametrize("file", ["right_qkv", "right_heads", "right_einsum", "right_loops_heads"])
def test_a_right_function_stays_right_over_two_hundred_random_problems(file):
    path = DATA / f"{file}.py"
    verdict = check_function(path, _function(path), problems=200, seed=7)
    assert verdict.verdict == "right" and verdict.problems_tried == 200


def test_the_corpus_holds_forty_implementations_ten_of_them_right():
    files = [p for p in DATA.glob("*.py")]
    right = [p for p in files if p.stem.startswith("right")]
    wrong = [p for m in MISTAKE_IDS for p in _corpus(m)]
    assert len(right) >= 10 and len(right) + len(wrong) >= 40


def test_a_function_that_returns_its_stages_is_graded_stage_by_stage():
    verdict = check_function(DATA / "stages_no_scale.py", "attention")
    assert verdict.mistake == "no_scale"
    assert verdict.first is not None and verdict.first.stage == "scaled"  # before the output


@pytest.mark.parametrize(
    "file", ["nondeterministic", pytest.param("nondeterministic_2", marks=needs_torch)]
)
def test_dropout_left_on_is_nondeterministic_not_a_wrong_number(file):
    path = DATA / f"{file}.py"
    verdict = check_function(path, _function(path))
    assert (verdict.verdict, verdict.mistake) == ("wrong", "nondeterministic")


def test_a_raise_is_theirs_and_does_not_end_the_search():
    verdict = check_function(DATA / "raises.py", "attention")
    assert verdict.verdict == "error"
    assert verdict.raised and all(kind == "NotImplementedError" for _, kind, _ in verdict.raised)
    assert "homework" in verdict.raised[0][2]
    assert {name for name, _, _ in verdict.raised} >= {"mask", "causal"}


def test_a_function_that_never_returns_meets_the_time_limit():
    with pytest.raises(QkvcalcError) as err:
        check_function(DATA / "hangs.py", "attention", time_limit=1)
    assert err.value.msg.key == "check.timed_out"


def test_what_their_code_prints_does_not_reach_the_answers(tmp_path):
    file = tmp_path / "noisy.py"
    file.write_text(
        (DATA / "right_qkv.py")
        .read_text()
        .replace("    return w @ v", "    print('debugging', w)\n    return w @ v")
    )
    assert check_function(file, "attention").verdict == "right"


def test_their_input_reads_nothing_never_the_requests(tmp_path):
    file = tmp_path / "asks.py"
    file.write_text("def attention(q, k, v):\n    input('scale? ')\n    return q\n")
    verdict = check_function(file, "attention", problems=3)
    assert verdict.verdict == "error" and verdict.problems_tried == 3
    assert [kind for _, kind, _ in verdict.raised] == ["EOFError"] * 3


def test_a_module_that_imports_torch_gets_tensors(tmp_path):
    if not HAS_TORCH:
        pytest.skip("torch is not installed")
    file = tmp_path / "typed.py"
    file.write_text(
        "import torch\n\ndef attention(q, k, v):\n"
        "    assert isinstance(q, torch.Tensor) and q.dtype == torch.float64\n"
        "    return torch.softmax(q @ k.T / q.shape[1] ** 0.5, dim=-1) @ v\n"
    )
    assert check_function(file, "attention").verdict == "right"


# ---- the command line, as a real process ------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("missing.py:attention", "No such file"),
        ("right_qkv.py:nowhere", "has no function 'nowhere'"),
        ("bad_signature.py:attention", "parameter 'a'"),
        ("bad_signature.py:attention_extra", "parameter 'temperature'"),
        ("bad_signature.py:attention_table", "not a function"),
        ("returns_text.py:attention", "returned a str"),
        ("returns_text.py:attention_no_output", "returned a dict without 'output'"),
        ("returns_text.py:attention_triple", "returned a tuple of 3"),
        (
            "wrong_shape.py:attention",
            "output of shape 3×3 on the problem 'doc', where the output is 3×2",
        ),
        (
            "wrong_shape.py:attention_stages",
            "output of shape 2×3 on the problem 'doc', where the output is 3×2",
        ),
        ("right_qkv.py", "FILE.py:FUNCTION"),
        ("", "Name the function to check"),
        ("--preset doc", "--preset goes with --stages"),
        ("--stages x.npz", "--stages needs the problem"),
        ("right_qkv.py:attention --problems 0", "--problems must be from 1 to 10,000"),
        ("right_qkv.py:attention --time-limit nan", "--time-limit must be a number"),
        ("right_qkv.py:attention --time-limit -1", "--time-limit must be a number"),
    ],
)
def test_unusable_input_is_one_message_and_exit_2(target, words):
    done = _cli(*target.split(), cwd=DATA)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert words in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_hang_through_the_cli_is_exit_2_naming_the_limit():
    done = _cli("hangs.py:attention", "--time-limit", "1", cwd=DATA)
    assert done.returncode == 2 and done.stdout == ""
    assert "did not return within 1 s on the problem '1×1'" in done.stderr
    assert "--time-limit" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_cli_names_the_mistake_and_works_the_smallest_problem_out():
    done = _cli(str(DATA / "softmax_axis.py") + ":attention", "--no-color")
    assert done.returncode == 1, done.stderr
    assert "softmax_axis" in done.stdout and "First difference" in done.stdout
    assert "The smallest problem that shows it" in done.stdout
    assert "Softmax, part 2" in done.stdout  # worked out as explain shows it
    assert "✗" in done.stdout  # their number beside the right one


def test_a_right_function_exits_0():
    done = _cli(str(DATA / "right_qkv.py") + ":attention")
    assert done.returncode == 0 and "is right" in done.stdout


def test_korean():
    done = _cli(str(DATA / "mask_inverted.py") + ":attention", "--lang", "ko", "--no-color")
    assert done.returncode == 1
    assert "마스크를 반대로 읽었습니다" in done.stdout


def test_the_json_document():
    done = _cli(str(DATA / "kt_missing.py") + ":attention", "--format", "json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) == {
        "schema",
        "verdict",
        "problems_tried",
        "mistake",
        "first",
        "smallest",
        "raised",
        "message",
    }
    assert doc["schema"] == "qkvcalc.check/1"
    assert (doc["verdict"], doc["mistake"], doc["problems_tried"]) == ("wrong", "kt_missing", 40)
    assert set(doc["first"]) == {"stage", "head", "cell", "theirs", "right"}
    assert doc["raised"] and set(doc["raised"][0]) == {"problem", "type", "message"}
    # the smallest problem is a problem of the input format: explain takes it as it is
    trace = qkvcalc.explain(**doc["smallest"])
    i, j = doc["first"]["cell"]
    assert trace.output[i - 1, j - 1] == pytest.approx(doc["first"]["right"])


def test_the_json_of_a_right_function():
    doc = json.loads(_cli(str(DATA / "right_qkv.py") + ":attention", "-f", "json").stdout)
    assert doc["verdict"] == "right" and doc["mistake"] is None and doc["first"] is None
    assert doc["smallest"] is None and doc["raised"] == []


def test_explain_does_not_load_checks_modules():
    code = (
        "import sys; from qkvcalc.cli import make_app; make_app('explain'); "
        "print([m for m in sys.modules if 'check' in m and m.startswith('qkvcalc')])"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "[]"


# ---- --stages: their tensors, no code run ------------------------------------------------------


def _stages_of(**fields) -> dict[str, np.ndarray]:
    trace = qkvcalc.explain(**fields)
    return {R.key(s.id, s.head): s.value for s in trace.stages if s.id != "x"}


def test_stages_right_and_wrong(tmp_path):
    right = _stages_of(**{k: v for k, v in _sentence().items() if k != "mask"}, mask="causal")
    np.savez(tmp_path / "right.npz", **right)
    done = _cli("--stages", str(tmp_path / "right.npz"), "--preset", "sentence")
    assert done.returncode == 0, done.stderr
    wrong = dict(right)
    wrong["scaled"] = right["scores"]  # not scaled
    (tmp_path / "wrong.json").write_text(
        json.dumps({k: v.tolist() for k, v in wrong.items() if k in ("scores", "scaled")})
    )
    done = _cli("--stages", str(tmp_path / "wrong.json"), "--preset", "sentence", "-f", "json")
    doc = json.loads(done.stdout)
    assert (done.returncode, doc["verdict"], doc["mistake"]) == (1, "wrong", "no_scale")
    assert doc["first"]["stage"] == "scaled"


def test_stages_from_qkvcalcs_own_trace_json(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    trace = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "explain", "--preset", "multihead", "-f", "json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    (tmp_path / "trace.json").write_text(trace)
    done = _cli("--stages", str(tmp_path / "trace.json"), "--preset", "multihead")
    assert done.returncode == 0, done.stderr


def test_stages_that_name_no_stage_of_the_problem(tmp_path):
    (tmp_path / "odd.json").write_text(json.dumps({"atention": [[1.0]]}))
    done = _cli("--stages", str(tmp_path / "odd.json"), "--preset", "doc")
    assert done.returncode == 2 and done.stdout == ""
    assert "'atention'" in done.stderr


class _Planted:
    """Unpickled, it would make a folder: the proof that a stages file never runs code."""

    def __init__(self, where: Path) -> None:
        self.where = where

    def __reduce__(self):
        return (os.mkdir, (str(self.where),))


def test_a_stages_file_never_runs_code(tmp_path):
    planted = tmp_path / "ran"
    np.savez(tmp_path / "planted.npz", output=np.array([_Planted(planted)], dtype=object))
    done = _cli("--stages", str(tmp_path / "planted.npz"), "--preset", "doc")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "cannot be read" in done.stderr and "Traceback" not in done.stderr
    assert not planted.exists()


def _sentence() -> dict:
    return {
        k: v
        for k, v in json.loads((ROOT / "presets" / "sentence.json").read_text()).items()
        if k in ("x", "wq", "wk", "wv", "mask")
    }


# ---- RoPE's pairing: named from a person's stages ----------------------------------------------


def _rope_problem(style: str, **extra) -> dict:
    """Three tokens, d_k = 4 (two pairs: with one pair "half" and "pairs" are the same turn)."""
    eye = np.eye(4).tolist()
    return {
        "x": [[1, 0, 2, 1], [0, 1, 1, 2], [2, 1, 0, 1]],
        "wq": eye,
        "wk": [[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]],
        "wv": eye,
        "rope": {"theta": 100, "style": style},
        **extra,
    }


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"rope": {"theta": 100, "style": "pairs"}},
        {"rope": {"theta": 100, "style": "half", "dims": 2}},
        {"rope": {"theta": 100, "style": "pairs", "attention_factor": 1.5}},
        {"rope": {"style": "half", "inv_freq": [1, 0.25]}},
        {"positions": [3, 5, 9], "mask": "causal"},
        {
            "wq": np.hstack([np.eye(4), np.ones((4, 4))]).tolist(),
            "wo": np.ones((8, 4)).tolist(),
            "heads": 2,
            "kv_heads": 1,
        },
    ],
    ids=["half", "pairs", "partial", "factor", "inv_freq", "positions", "gqa"],
)
def test_the_reference_turns_q_and_k_as_explains_rope_does(extra):
    from qkvcalc.check.stages import _fields

    trace = qkvcalc.explain(**{**_rope_problem("half"), **extra})
    mine = R.run(_fields(trace.problem))
    shown = {R.key(s.id, s.head): s.value for s in trace.stages if s.id not in ("x", "split")}
    assert set(mine) == set(shown)
    for name, value in shown.items():
        np.testing.assert_allclose(mine[name], value, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=p.stem, marks=[needs_torch] if "import torch" in p.read_text() else [])
        for p in _corpus("rope_pairs")
    ],
)
def test_rope_pairs_is_named_from_the_stages_of_each_implementation(path, tmp_path):
    """Each implementation pairs neighbours: wrong for a rotate_half model (named, its q_rot
    first), right for a model that pairs neighbours itself."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the corpus is this repository's own test data
    problem = _rope_problem("half", mask="causal")
    arrays = (np.array(problem[k], dtype=np.float64) for k in ("x", "wq", "wk", "wv"))
    np.savez(tmp_path / "theirs.npz", **getattr(module, _function(path))(*arrays, theta=100.0))
    for style, verdict in (("half", "wrong"), ("pairs", "right")):
        (tmp_path / f"{style}.json").write_text(
            json.dumps({**problem, "rope": {"theta": 100, "style": style}})
        )
        done = _cli(
            "--stages", str(tmp_path / "theirs.npz"), str(tmp_path / f"{style}.json"), "-f", "json"
        )
        doc = json.loads(done.stdout)
        assert doc["verdict"] == verdict, (style, done.stderr)
        if verdict == "wrong":
            assert done.returncode == 1 and doc["mistake"] == "rope_pairs"
            assert doc["first"]["stage"] == "q_rot" and doc["first"]["cell"][0] == 2  # t2 turns
        else:
            assert done.returncode == 0 and doc["mistake"] is None
