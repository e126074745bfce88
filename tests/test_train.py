"""`qkvcalc train`: gradient descent from `attend` or `target` (qkvcalc/run/train.py), its
renderings and its command line, with real processes where the terminal, files or signals are
part of what is tested."""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import qkvcalc
from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from qkvcalc.errors import QkvcalcError
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.plan import ids
from qkvcalc.render import RenderOptions
from qkvcalc.render.train import about, render_train_text, sparkline, train_json
from qkvcalc.run.engine import run
from qkvcalc.run.train import DEFAULT_LR, DEFAULT_STEPS, Descent, train, without_fractions
from tests.conftest import PINNED_ENV, ROOT, in_process, one_message, run_qkvcalc, spawn_qkvcalc

IT, CAT = 4, 1  # 'it' and 'cat' in the learn preset's sentence (0-based)


def learn() -> Problem:
    return Problem.from_mapping(presets.load("learn"))


def rng_problem(seed: int = 3, **extra) -> dict:
    """Two heads, W_O and every bias, a target output: every learned matrix has a gradient."""
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((3, 4)).round(2).tolist(),
        "wq": rng.standard_normal((4, 4)).round(2).tolist(),
        "wk": rng.standard_normal((4, 4)).round(2).tolist(),
        "wv": rng.standard_normal((4, 4)).round(2).tolist(),
        "wo": rng.standard_normal((4, 3)).round(2).tolist(),
        "bq": [0.1, -0.2, 0.0, 0.3],
        "bk": [0.0, 0.1, 0.2, -0.1],
        "bv": [0.2, 0.0, -0.1, 0.1],
        "bo": [0.0, 0.5, -0.5],
        "heads": 2,
        "target": rng.standard_normal((3, 3)).round(2).tolist(),
        **extra,
    }


# ---- the learn preset and the descent ----------------------------------------------------------


def test_the_learn_preset_starts_with_it_looking_elsewhere():
    a = run(learn()).weights
    assert a[IT].argmax() != CAT  # its largest weight is not on 'cat'
    assert a[IT, CAT] < 0.2


def test_the_defaults_make_it_put_most_of_its_weight_on_cat():
    t = train(learn())  # 20 steps, η = 0.5
    assert (DEFAULT_STEPS, DEFAULT_LR) == (20, 0.5)
    assert t.done == 20 and len(t.losses) == 21
    assert t.last.attention[0, IT, CAT] > 0.5
    assert t.last.attention[0, IT].argmax() == CAT
    assert run(t.problem).weights[IT, CAT] > 0.5  # the trained problem itself, run again


def test_after_ten_steps_it_already_puts_more_than_half_on_cat():
    t = train(learn(), steps=10)
    assert t.last.attention[0, IT, CAT] > 0.5


def test_the_loss_falls_at_every_step_for_a_small_learning_rate():
    losses = train(learn(), steps=40, lr=0.05).losses
    assert all(b < a for a, b in itertools.pairwise(losses)), losses


def test_the_loss_is_the_attend_loss_of_each_snapshot():
    t = train(learn(), steps=3)
    for snap in t.snapshots:
        assert snap.loss == pytest.approx(-np.log(snap.attention[0, IT, CAT]), rel=1e-12)


def test_each_step_is_w_minus_eta_times_the_backward_traces_gradient():
    doc = rng_problem()
    lr = 0.03
    t = train(Problem.from_mapping(doc), steps=2, lr=lr)
    assert set(t.learned) == {"wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo"}
    for k in (1, 2):
        before = t.snapshots[k - 1].weights
        problem = Problem.from_mapping(
            {**doc, **{name: w.tolist() if name[0] == "w" else w[0].tolist()
                       for name, w in before.items()}}
        )  # fmt: skip
        trace = run(replace(without_fractions(problem), backward=True))  # as train runs it
        for name, w in before.items():
            grad = trace.stage(ids.GRAD_OF[name]).value.reshape(w.shape)
            np.testing.assert_array_equal(t.snapshots[k].weights[name], w - lr * grad)


def test_a_target_loss_falls_and_is_half_the_squared_error():
    doc = rng_problem()
    t = train(Problem.from_mapping(doc), steps=30, lr=0.02)
    assert t.losses[-1] < 0.5 * t.losses[0]
    out = run(Problem.from_mapping(doc)).output
    assert t.losses[0] == pytest.approx(0.5 * np.sum((out - np.array(doc["target"])) ** 2))


def test_the_torch_layout_trains_the_same_weights():
    doc = rng_problem()
    rows = train(Problem.from_mapping(doc), steps=3, lr=0.02)
    turned = {k: np.array(doc[k]).T.tolist() for k in ("wq", "wk", "wv", "wo")}
    torch = train(Problem.from_mapping({**doc, **turned, "layout": "torch"}), steps=3, lr=0.02)
    assert torch.losses == rows.losses
    np.testing.assert_array_equal(torch.problem.wq.values, rows.problem.wq.values)


def test_freeze_keeps_those_matrices_bit_identical():
    doc = rng_problem()
    start = Problem.from_mapping(doc)
    t = train(start, steps=5, lr=0.02, freeze="wq,wv,bo")
    assert t.frozen == ("wq", "wv", "bo")
    for name in ("wq", "wv", "bo"):
        assert getattr(t.problem, name).values.tobytes() == getattr(start, name).values.tobytes()
        for snap in t.snapshots:
            assert snap.weights[name].tobytes() == getattr(start, name).values.tobytes()
    assert not np.array_equal(t.problem.wk.values, start.wk.values)  # the others moved
    assert not np.array_equal(t.problem.wo.values, start.wo.values)


def test_attend_does_not_move_w_v():
    t = train(learn(), steps=3)
    assert t.learned == ("wq", "wk")
    np.testing.assert_array_equal(t.problem.wv.values, learn().wv.values)


@pytest.mark.parametrize(
    ("doc", "kwargs", "key"),
    [
        ({}, {"steps": 0}, "train.steps"),
        ({}, {"steps": 10_001}, "train.steps"),
        ({}, {"lr": 0}, "train.lr"),
        ({}, {"lr": float("nan")}, "train.lr"),
        ({}, {"freeze": "wz"}, "train.freeze_unknown"),
        ({}, {"freeze": "wo"}, "train.freeze_missing"),
        ({}, {"freeze": "wq,wk,wv"}, "train.all_frozen"),
        ({}, {"freeze": "wq,wk"}, "train.nothing_reached"),
        ({"attend": None}, {}, "train.loss"),
        ({"attend": None, "grad_output": [[1, 0]] * 7}, {}, "train.loss"),
    ],
)
def test_bad_training_is_one_message(doc, kwargs, key):
    with pytest.raises(QkvcalcError) as err:
        merged = {**presets.load("learn"), **doc}
        Descent(Problem.from_mapping({k: v for k, v in merged.items() if v is not None}),
                **kwargs).run()  # fmt: skip
    assert err.value.msg.key == key


def test_q_k_v_given_directly_have_no_weights_to_train():
    doc = {"q": [[1, 0]], "k": [[1, 0]], "v": [[1, 2]], "target": [[0, 0]]}
    with pytest.raises(QkvcalcError) as err:
        train(Problem.from_mapping(doc))
    assert err.value.msg.key == "train.no_weights"


def test_a_learning_rate_far_too_large_is_one_message():
    with pytest.raises(QkvcalcError) as err:
        train(Problem.from_mapping(rng_problem()), steps=200, lr=1e6)
    assert err.value.msg.key == "train.diverged"


def test_qkvcalc_train_from_python():
    t = qkvcalc.train(**presets.load("learn"), steps=5)
    assert t.done == 5 and t.losses[-1] < t.losses[0]
    again = qkvcalc.train(learn(), steps=5)
    assert again.losses == t.losses


# ---- what is shown -----------------------------------------------------------------------------


def test_about_says_equal_only_for_the_number_itself():
    assert about(0.25, 4) == "= 0.2500"  # 0.2500 is 0.25 itself
    assert about(2.29413, 4) == "≈ 2.2941"
    assert about(3.0, 4) == "= 3"


def test_sparkline_goes_from_the_highest_bar_to_the_lowest():
    assert sparkline([3, 2, 1]) == "█▅▁"
    assert len(sparkline(list(range(500)))) == 60


def test_the_table_shows_every_loss_the_sparkline_and_where_it_went():
    t = train(learn())
    text = render_train_text(t, RenderOptions(color=False, width=100))
    for k, loss in enumerate(t.losses):
        assert re.search(rf"^\s*{k}\s+{loss:.4f}", text, re.M), (k, loss)
    a0, a1 = t.first.attention[0, IT, CAT], t.last.attention[0, IT, CAT]
    assert f"'it' → 'cat': {100 * a0:.0f}% → {100 * a1:.0f}%" in text
    assert "'it' → 'cat': 10% → 98%" in text
    assert re.search("[▁▂▃▄▅▆▇█]{21}", text)
    assert "W_Q before" in text and "ΔW_K" in text and "W_V did not move" in text


def test_many_steps_elide_the_middle_of_the_table():
    t = train(learn(), steps=100, lr=0.1)
    text = render_train_text(t, RenderOptions(color=False))
    assert "77 steps not shown" in text
    assert re.search(r"^\s*100\s", text, re.M) and not re.search(r"^\s*50\s", text, re.M)


def test_the_json_document():
    t = train(learn(), steps=4)
    doc = train_json(t, RenderOptions())
    assert doc["schema"] == "qkvcalc.train/1"
    assert doc["losses"] == t.losses
    assert [s["step"] for s in doc["steps"]] == [0, 1, 2, 3, 4]
    assert doc["steps"][4]["weights"]["wq"] == t.problem.wq.values.tolist()
    assert doc["problem"]["attend"] == [None, None, None, None, 2, None, None]
    again = Problem.from_mapping(doc["problem"])
    np.testing.assert_array_equal(again.wk.values, t.problem.wk.values)


# ---- the command line (in this process; real ones for its files and its terminal) -------------


def test_the_json_documents_problem_runs_again_with_explain(tmp_path):
    result = in_process("train", "--preset", "learn", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "qkvcalc.train/1" and len(doc["losses"]) == 21
    path = tmp_path / "trained.json"
    path.write_text(json.dumps(doc["problem"]))
    again = in_process("explain", str(path), "--format", "json")
    assert again.returncode == 0, again.stderr
    weights = next(s for s in json.loads(again.stdout)["stages"] if s["id"] == "weights")
    assert weights["value"][IT][CAT] > 0.5


def test_output_writes_a_file_that_explain_reads(tmp_path):
    path = tmp_path / "trained.json"
    result = run_qkvcalc("train", "--preset", "learn", "--output", str(path))
    assert result.returncode == 0, result.stderr
    assert "'it' → 'cat'" in result.stdout  # the table is still shown
    again = run_qkvcalc("explain", str(path), "--backward", "--format", "json")
    assert again.returncode == 0, again.stderr
    stages = json.loads(again.stdout)["stages"]
    weights = next(s for s in stages if s["id"] == "weights")
    assert weights["value"][IT][CAT] > 0.5
    assert any(s["id"] == "grad_wq" for s in stages)  # the attend key came along


def test_output_with_format_json_writes_the_whole_document(tmp_path):
    path = tmp_path / "training.json"
    result = in_process("train", "--preset", "learn", "-f", "json", "-o", str(path))
    assert result.returncode == 0 and result.stdout == "", result.stderr
    assert json.loads(path.read_text())["schema"] == "qkvcalc.train/1"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--lr", "-1"], "--lr"),
        (["--lr", "abc"], "--lr"),
        (["--steps", "0"], "--steps"),
        (["--steps", "99999"], "10,000"),
        (["--steps", "2.5"], "--steps"),
        (["--freeze", "wq,wz"], "wz"),
        (["--step", "--format", "json"], "--step"),
    ],
)
def test_bad_options_exit_2_with_one_line_and_nothing_on_stdout(args, words):
    result = in_process("train", "--preset", "learn", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert words in result.stderr and "Traceback" not in result.stderr


def test_a_problem_without_attend_or_target_is_one_message():
    result = in_process("train", "--preset", "pronoun")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: {_loss_message('none')}"]


def _loss_message(given: str) -> str:
    return EN["train.loss"].format(given=given)


@pytest.mark.parametrize("fmt", ["svg", "html"])
def test_svg_and_html_draw_the_loss_curve_with_the_input_escaped(fmt, tmp_path):
    doc = {**presets.load("learn"), "name": "<b>&me</b>"}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    result = in_process("train", str(path), "--format", fmt)
    assert result.returncode == 0, result.stderr
    assert "<polyline" in result.stdout and "http://" not in result.stdout.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""
    )
    assert "<b>&me</b>" not in result.stdout
    if fmt == "html":
        assert "&lt;b&gt;&amp;me&lt;/b&gt;" in result.stdout


def test_korean_output_has_no_english_sentence_left():
    from tests.test_i18n import english_in

    result = in_process("train", "--preset", "learn", "--lang", "ko")
    assert result.returncode == 0, result.stderr
    tokens = " ".join(presets.load("learn")["tokens"])
    assert english_in(result.stdout, excuse=(tokens,)) == set()
    assert "학습 전후의 가중치" in result.stdout


def test_every_train_key_is_in_both_catalogs():
    mine = {k for k in EN if k.startswith(("train.", "help.train"))}
    assert mine and mine <= set(KO)


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")
def test_ctrl_c_prints_what_was_learned_writes_output_and_exits_130(tmp_path):
    out = tmp_path / "partial.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "qkvcalc", "train", "--preset", "learn", "--steps", "10000",
         "--lr", "0.01", "--output", str(out)],
        env={**__import__("os").environ, **PINNED_ENV},
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    maps = Path(f"/proc/{proc.pid}/maps")
    end = time.monotonic() + 60
    while "_multiarray_umath" not in maps.read_text():
        assert proc.poll() is None and time.monotonic() < end
        time.sleep(0.02)
    time.sleep(2.0)  # well into the descent (10,000 steps take half a minute)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = (s.decode() for s in proc.communicate(timeout=60))
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.strip() == "interrupted"
    match = re.search(r"stopped by Ctrl-C after step (\d+) of 10000", stdout)
    assert match, stdout[:2000]
    done = int(match.group(1))
    assert 0 < done < 10_000
    trained = json.loads(out.read_text())
    assert f"{done} steps of gradient descent" in trained["description"]


def test_step_goes_through_the_updates_on_a_terminal():
    import pexpect

    child = spawn_qkvcalc("train", "--preset", "learn", "--steps", "3", "--step")
    child.expect_exact("qkvcalc train · learn")
    child.expect_exact("Enter or Space: next update")
    child.send("\r")
    child.expect_exact("update 1 of 3")
    child.expect_exact("ΔW_Q")
    child.send(" ")
    child.expect_exact("update 2 of 3")
    child.send("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_step_past_the_last_update_shows_the_summary():
    import pexpect

    child = spawn_qkvcalc("train", "--preset", "learn", "--steps", "2", "--step")
    child.expect_exact("Enter or Space: next update")
    child.send("\r\r\r")
    child.expect_exact("The attention weights before and after")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_step_without_a_terminal_is_one_message():
    result = run_qkvcalc("train", "--preset", "learn", "--step", "--steps", "2")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_problem_without_a_name_and_a_target_loss_in_both_languages(tmp_path):
    from tests.test_i18n import english_in

    path = tmp_path / "mine.json"
    path.write_text(json.dumps(rng_problem()))
    out = tmp_path / "trained.json"
    result = in_process("train", str(path), "--steps", "3", "--lr", "0.02", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].strip() == "━━ qkvcalc train"
    assert "Learned: W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O." in result.stdout
    assert "A₂ before" in result.stdout  # each head's attention weights
    trained = json.loads(out.read_text())
    assert (
        trained["description"]
        == "Trained with qkvcalc train: 3 steps of gradient descent with η = 0.02."
    )
    assert trained["target"] == rng_problem()["target"]
    ko = in_process("train", str(path), "--steps", "3", "--lr", "0.02", "--lang", "ko")
    assert ko.returncode == 0, ko.stderr
    assert english_in(ko.stdout) == set()


def test_a_typed_loss_replaces_the_problems_own():
    """--target on the learn preset (whose loss is attend) trains toward the target instead."""
    done = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "train", "--preset", "learn", "--steps", "2",
         "--target", "; ".join(["0 0"] * 7), "--format", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert "target" in doc["problem"] and "attend" not in doc["problem"]
    assert doc["losses"][1] < doc["losses"][0]


@pytest.mark.parametrize("name", ["notes.md", "sheet.tex"])
def test_an_output_named_for_another_format_is_refused_before_training(tmp_path, name):
    """--output writes .json, .svg, .html or .txt by the name's extension (issue 41 item 8:
    tests/test_train_dataset.py); a name another format's extension is refused before training."""
    target = tmp_path / name
    result = in_process("train", "--preset", "learn", "--output", str(target))
    one_message(result, str(target), ".json", ".svg")
    assert not target.exists()
    korean = in_process("train", "--preset", "learn", "--output", str(target), "--lang", "ko")
    one_message(korean, ".json", "학습된 문제")
    kept = tmp_path / "trained.json"
    assert in_process("train", "--preset", "learn", "--output", str(kept)).returncode == 0
    assert json.loads(kept.read_text(encoding="utf-8"))["attend"]
