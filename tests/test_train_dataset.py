"""`qkvcalc train` on a data set (issue 39): examples sharing one set of weights, the loss
their mean; held-out examples shown before and after; --compare-scale; the run's sentences,
each checked against the run's own numbers; the terminal's progress and log-scale bars; and
--output by extension. The descent is checked against a PyTorch loop written here."""

from __future__ import annotations

import itertools
import json
import sys

import numpy as np
import pytest
import torch

from qkvcalc.input import presets
from qkvcalc.input.dataset import merged, split
from qkvcalc.input.problem import Problem
from qkvcalc.render import RenderOptions
from qkvcalc.render.train import about, log_decades, run_notes, sparkline
from qkvcalc.run.engine import run
from qkvcalc.run.train import train
from tests.conftest import in_process, one_message, run_qkvcalc, spawn_qkvcalc

EN = RenderOptions(lang="en")


def referent() -> dict:
    return presets.load("referent")


def torch_losses(doc: dict, steps: int, lr: float, scale: float | None = None) -> list[float]:
    """Mean loss over the examples, plain gradient descent, the same η: a loop of our own."""
    top, examples, _ = split(doc)
    w = {
        k: torch.tensor(np.array(top[k], dtype=float), requires_grad=True)
        for k in ("wq", "wk", "wv")
    }
    out = []
    for _ in range(steps + 1):
        total = 0
        for example in examples:
            e = merged(top, example)
            x = torch.tensor(np.array(e["x"], dtype=float))
            src = torch.tensor(np.array(e.get("source", e["x"]), dtype=float))
            q, k, v = x @ w["wq"], src @ w["wk"], src @ w["wv"]
            s = scale if scale is not None else 1 / np.sqrt(q.shape[1])
            a = torch.softmax(q @ k.T * s, dim=-1)
            total = (
                total
                + 0.5 * ((a @ v - torch.tensor(np.array(e["target"], dtype=float))) ** 2).sum()
            )
        loss = total / len(examples)
        out.append(float(loss))
        grads = torch.autograd.grad(loss, list(w.values()))
        with torch.no_grad():
            for (name, tensor), g in zip(list(w.items()), grads, strict=True):
                w[name] = (tensor - lr * g).requires_grad_()
    return out


# ---- the data set: the loss is the mean, the descent is torch's --------------------------------


def test_every_step_s_loss_equals_a_torch_loop_of_the_mean_loss():
    t = train(referent(), steps=20, lr=0.5)
    np.testing.assert_allclose(t.losses, torch_losses(referent(), 20, 0.5), rtol=0, atol=1e-9)
    assert len(t.examples) == 5 and len(t.heldout) == 1
    assert t.losses[0] == pytest.approx(np.mean(t.first.each), abs=1e-15)


def test_a_lone_problem_trains_as_before():
    """A document without examples is the one problem (its loss its own, no mean)."""
    doc = presets.load("learn")
    assert train(doc, steps=3).losses == train(Problem.from_mapping(doc), steps=3).losses


def test_held_out_weights_equal_explain_with_the_start_and_the_trained_weights(tmp_path):
    result = in_process("train", "--preset", "referent", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    held = doc["heldout"][0]
    top, _, heldout = split(referent())
    for when, weights in (
        ("before", doc["steps"][0]["weights"]),
        ("after", doc["steps"][-1]["weights"]),
    ):
        example = {**merged(top, heldout[0]), **weights, "layout": "rows"}
        example.pop("name", None)
        shown = in_process("explain", "-", "--format", "json", input=json.dumps(example))
        assert shown.returncode == 0, shown.stderr
        trace = json.loads(shown.stdout)
        stage = next(s for s in trace["stages"] if s["id"] == "weights")
        np.testing.assert_allclose(held[when]["weights"], stage["value"], rtol=0, atol=1e-12)
    assert held["tokens"] == heldout[0]["source_tokens"]
    assert held["loss_after"] < held["loss_before"]


def test_attending_to_the_animal_is_what_lowers_the_loss():
    """The preset's claim: the held-out sentence's animal gets most of the weight after
    training (it did not before), on a sentence never trained on."""
    t = train(referent())
    held = t.heldout[0]
    animal = held.problem.source_tokens.index("bird")
    assert held.before[0, 0].argmax() != animal and held.after[0, 0].argmax() == animal
    # no W_V alone fits every example: with attention kept uniform the loss stays above 0.05
    frozen = train(referent(), steps=200, freeze="wq,wk")
    assert frozen.losses[-1] > 0.05 > t.losses[-1]


def test_the_trained_document_goes_on_training(tmp_path):
    out = tmp_path / "trained.json"
    assert (
        in_process("train", "--preset", "referent", "-o", str(out), "--steps", "5").returncode == 0
    )
    doc = json.loads(out.read_text())
    assert len(doc["examples"]) == 5 and len(doc["heldout"]) == 1
    again = train(doc, steps=5)
    straight = train(referent(), steps=10)
    np.testing.assert_allclose(again.losses, straight.losses[5:], rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"examples": []}, "examples must be a list of examples"),
        ({"examples": [1]}, "examples[1] must be an object"),
        ({"examples": [{"x": [[1, 0, 0, 0, 0]], "wq": [[1]]}]}, "examples[1] gives wq"),
        ({"heldout": [{"source": [[1, 2]]}]}, "heldout[1]"),
    ],
)
def test_a_bad_data_set_is_one_message(change, fragment):
    doc = {**referent(), **change}
    one_message(in_process("train", "-", input=json.dumps(doc)), fragment)


# ---- --compare-scale -----------------------------------------------------------------------------


def test_compare_scale_s_unscaled_curve_equals_torch_with_scale_1():
    t = train(referent(), steps=15, compare_scale=True)
    assert t.unscaled is not None
    np.testing.assert_allclose(t.unscaled.losses, torch_losses(referent(), 15, 0.5, scale=1.0),
                               rtol=0, atol=1e-9)  # fmt: skip
    np.testing.assert_allclose(t.losses, torch_losses(referent(), 15, 0.5), rtol=0, atol=1e-9)
    assert t.unscaled.first.weights["wq"].tolist() == t.first.weights["wq"].tolist()  # one start


@pytest.mark.parametrize(
    "args",
    [
        ("--preset", "referent"),
        ("--preset", "learn"),
        ("--preset", "dk64", "--target", "0 0; 0 0; 0 0; 0 0"),
    ],
)
def test_the_compare_sentence_is_chosen_by_the_two_curves(args):
    result = in_process("train", *args, "--compare-scale", "--format", "json")
    if "dk64" in args:  # Q, K and V given: nothing to train
        assert result.returncode == 2
        return
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    mine, other = doc["losses"][-1], doc["unscaled"]["losses"][-1]
    said = next(n for n in doc["notes"] if n.startswith("From the same weights"))
    if mine < other:
        assert "the scaled run's loss is lower" in said
        assert f", by a factor of {other / mine:.3g}." in said
    else:
        assert "the unscaled run's loss is lower" in said
        assert f", by a factor of {mine / other:.3g}." in said
    first_other = doc["unscaled"]["losses"][0]
    assert f"and from {about(first_other, 4)} to {about(other, 4)} with scale 1" in said
    assert "--compare-scale trains again" not in " ".join(doc["notes"])
    text = in_process("train", *args, "--compare-scale").stdout
    assert "L, scale 1" in text and "scale 1:" in text


def test_compare_scale_refuses_a_scale_of_1():
    doc = {**presets.load("learn"), "scale": 1}
    one_message(in_process("train", "-", "--compare-scale", input=json.dumps(doc)), "already 1")


# ---- the run's sentences (F09, F10, F11, F18) -------------------------------------------


def test_f09_attend_is_said_to_be_a_shortcut_and_several_heads_are_warned():
    notes = run_notes(train(Problem.from_mapping(presets.load("learn")), steps=2), EN)
    assert any(n.startswith("attend is a teaching shortcut") for n in notes)
    doc = presets.load("multihead")
    doc.pop("name")
    doc["attend"] = [1] * len(doc["x"])
    notes = run_notes(train(Problem.from_mapping(doc), steps=2), EN)
    assert any(
        "With 2 heads, attend pushes every head" in n or "heads, attend pushes" in n for n in notes
    )
    assert not any("shortcut" in n for n in run_notes(train(referent(), steps=2), EN))


def test_f10_f11_a_matrix_that_cannot_move_and_a_loss_that_grows_are_said():
    result = in_process("train", "--preset", "doc", "--target", "0 0", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    losses = doc["losses"]
    steps = doc["steps"]
    unmoved = [k for k in doc["learned"] if steps[0]["weights"][k] == steps[-1]["weights"][k]]
    assert set(unmoved) == {"wq", "wk"}  # one key: A ≡ 1, no gradient
    notes = " ".join(doc["notes"])
    assert "W_Q, W_K did not move at all: each query has a single key" in notes
    rose = sum(b > a for a, b in itertools.pairwise(losses))
    assert losses[-1] > losses[0]
    assert f"The loss rose at {rose} of the {len(losses) - 1} steps" in notes
    ratio = losses[-1] / losses[0]
    mantissa, exponent = f"{ratio:.2e}".split("e")  # 3 significant digits, as 1.11 × 10⁷
    assert float(mantissa) * 10 ** int(exponent) == pytest.approx(ratio, rel=5e-3)
    sup = str(int(exponent)).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    said = f"{ratio:.3g}" if ratio < 1e4 else f"{mantissa} × 10{sup}"
    assert f"ended {said} times its start" in notes
    assert "e+" not in notes
    assert "--compare-scale" not in notes  # one key: the scale changes nothing here
    calm = json.loads(in_process("train", "--preset", "doc", "--target", "0 0", "--lr", "0.1",
                                 "--format", "json").stdout)  # fmt: skip
    if calm["losses"][-1] < calm["losses"][0]:
        assert not any("rose at" in n for n in calm["notes"])


def test_f10_the_learned_line_names_only_what_moved():
    """One key: A ≡ 1 whatever the scores, so W_Q and W_K get no gradient (autograd says 0
    exactly): the page says W_V learned, and why the other two did not move."""
    result = run_qkvcalc("train", "--preset", "doc", "--target", "0 0", "--format", "txt")
    assert result.returncode == 0, result.stderr
    doc = presets.load("doc")
    w = {
        k: torch.tensor(np.array(doc[k], dtype=float), requires_grad=True)
        for k in ("wq", "wk", "wv")
    }
    x = torch.tensor(np.array(doc["x"], dtype=float)).reshape(1, -1)  # one token: a row
    q, k, v = x @ w["wq"], x @ w["wk"], x @ w["wv"]
    o = torch.softmax(q @ k.T / np.sqrt(2), dim=-1) @ v
    grads = torch.autograd.grad(0.5 * (o**2).sum(), list(w.values()))
    zero = [name for name, g in zip(w, grads, strict=True) if not g.any()]
    assert zero == ["wq", "wk"]
    assert "Learned: W_V.\n" in result.stdout
    assert "Learned: W_Q" not in result.stdout
    assert "W_Q, W_K did not move at all: each query has a single key" in result.stdout
    learn = run_qkvcalc("train", "--preset", "learn", "--steps", "2", "--format", "txt")
    assert "Learned: W_Q, W_K.\n" in learn.stdout  # both moved: both named


def test_f11_a_diverging_loss_says_its_factor_per_step():
    """doc, one key, a target: O = x·W_V, so each step multiplies O − T by 1 − η·|x|² and the
    loss by its square, (1 − 0.5·5)² = 2.25: the note says so, from the run's last step."""
    doc = presets.load("doc")
    x = np.array(doc["x"], dtype=float).ravel()  # one token
    factor = (1 - 0.5 * float(x @ x)) ** 2
    result = run_qkvcalc("train", "--preset", "doc", "--target", "0 0", "--format", "json")
    losses = json.loads(result.stdout)["losses"]
    assert losses[-1] / losses[-2] == pytest.approx(factor)
    notes = " ".join(json.loads(result.stdout)["notes"])
    assert f"(×{factor:.3g} at the last step)" in notes
    assert "(×2.25 at the last step)" in notes


def test_f11_a_loss_that_came_back_up_is_said_with_its_lowest_and_its_end():
    """referent at η = 2: the loss falls, then climbs back (ending below its start, so it is
    not 'diverging'); the note names the lowest step and the end, from torch's own loop."""
    result = run_qkvcalc("train", "--preset", "referent", "--lr", "2", "--steps", "40",
                         "--format", "json")  # fmt: skip
    doc = json.loads(result.stdout)
    theirs = torch_losses(referent(), 40, 2.0)
    np.testing.assert_allclose(doc["losses"], theirs, rtol=1e-9, atol=1e-12)
    rose = sum(b > a for a, b in itertools.pairwise(theirs))
    low = int(np.argmin(theirs))
    assert theirs[0] > theirs[-1] > theirs[low] and rose > 0
    notes = " ".join(doc["notes"])
    assert (
        f"The loss rose at {rose} of the 40 steps: it came down to L {about(theirs[low], 4)} at "
        f"step {low}, then ended at L {about(theirs[-1], 4)}."
    ) in notes
    assert "η = 2 was too large: try a smaller --lr" in notes


def test_f11_a_loss_that_rose_on_the_way_down_is_said():
    result = run_qkvcalc("train", "--preset", "learn", "--lr", "5", "--format", "json")
    doc = json.loads(result.stdout)
    losses = doc["losses"]
    rose = sum(b > a for a, b in itertools.pairwise(losses))
    assert rose > 0 and losses[-1] == min(losses)
    notes = " ".join(doc["notes"])
    assert (
        f"The loss rose at {rose} of the 20 steps before it came down to L {about(losses[-1], 4)}"
        in notes
    )
    calm = json.loads(in_process("train", "--preset", "learn", "--format", "json").stdout)
    assert all(b < a for a, b in itertools.pairwise(calm["losses"]))
    assert not any("rose at" in n for n in calm["notes"])


@pytest.mark.parametrize(
    ("losses", "said"),
    [
        # above its start at every step, falling at the last: still 'grown past its start'
        (
            [1.0, 3.0, 2.0],
            "The loss rose at 1 of the 2 steps and ended 2 times its start (×0.667 at",
        ),
        # a rise of the float's last digits is rounding: nothing said
        ([1.0, 0.5, 0.5 * (1 + 1e-15)], None),
    ],
)
def test_f11_the_rise_notes_read_the_losses_as_given(losses, said):
    """The renderer says what the losses are, whatever they are (snapshots' losses set here)."""
    from dataclasses import replace

    run = train(Problem.from_mapping(presets.load("learn")), steps=len(losses) - 1)
    snaps = tuple(replace(s, loss=v) for s, v in zip(run.snapshots, losses, strict=True))
    notes = " ".join(run_notes(replace(run, snapshots=snaps), EN))
    if said is None:
        assert "rose" not in notes
    else:
        assert said in notes


def test_f18_train_says_how_to_see_the_scale_s_effect():
    notes = run_notes(train(referent(), steps=2), EN)
    assert any("--compare-scale trains again" in n for n in notes)


def test_f18_train_says_what_the_scale_is_on_this_problem():
    """The note names d_k and √d_k from the problem's own W_Q (or its given scale), and says
    nothing of the scale where it changes nothing (scale 1; one key per query)."""
    doc = presets.load("learn")
    d_k = np.array(doc["wq"]).shape[1]
    root = np.sqrt(d_k)
    said = ("= " if float(f"{root:.4f}") == root else "≈ ") + f"{root:.4f}".rstrip("0").rstrip(".")
    result = run_qkvcalc("train", "--preset", "learn", "--steps", "2", "--format", "json")
    notes = " ".join(json.loads(result.stdout)["notes"])
    assert f"divided by √d_k = √{d_k} {said}:" in notes
    assert "--compare-scale trains again from the same start with scale 1" in notes
    given = {k: v for k, v in doc.items() if k != "name"} | {"scale": 0.5}
    result = run_qkvcalc("train", "-", "--steps", "2", "--format", "json", input=json.dumps(given))
    notes = " ".join(json.loads(result.stdout)["notes"])
    assert f"multiplied by the problem's scale, 0.5 (1/√d_k would be ≈ {1 / root:.4f})" in notes
    for quiet in ({**given, "scale": 1}, {**given, "x": [[1, 0, 0, 0]], "tokens": ["a"],
                                           "attend": [1]}):  # fmt: skip
        result = run_qkvcalc("train", "-", "--steps", "2", "--format", "json",
                             input=json.dumps(quiet))  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert not any("√d_k" in n for n in json.loads(result.stdout)["notes"])
    # the sentence's claim: for random vectors the spread of q·k grows like √d_k
    rng = np.random.default_rng(0)
    for width in (4, 64):
        q, k = rng.standard_normal((2, 20000, width))
        assert np.std((q * k).sum(axis=1)) / np.sqrt(width) == pytest.approx(1, abs=0.05)


# ---- the terminal: log scale, progress; --output by extension ---------------------------


def test_a_loss_spanning_decades_is_drawn_on_a_log_scale():
    losses = [1e4 * 0.1**k for k in range(6)]
    assert log_decades(losses) == 5
    linear, log = sparkline(losses), sparkline(losses, log=True)
    assert linear.count("▁") >= 4  # the old view: one tall bar, the rest at the bottom
    assert log == "█▇▅▄▂▁"  # even steps down: 7 levels over 5 decades
    result = in_process("train", "--preset", "doc", "--target", "0 0")
    assert "(The bars are on a log scale: the loss spans" in result.stdout
    assert log_decades([1.0, 0.5]) == 0


def test_a_long_run_shows_progress_on_a_terminal_only():
    import pexpect

    args = "train --preset referent --steps 300"  # 1,500 example runs: a few seconds
    child = spawn_qkvcalc(shell=f"TERM=xterm-256color {sys.executable} -m qkvcalc {args}")
    child.expect_exact("Training")
    child.expect_exact("━━ qkvcalc train · referent", timeout=120)
    child.expect(pexpect.EOF, timeout=120)
    child.close()
    assert child.exitstatus == 0
    piped = run_qkvcalc("train", "--preset", "referent", "--steps", "300", timeout=180)
    assert piped.returncode == 0 and piped.stderr == ""
    assert "Training" not in piped.stdout.split("━━")[0]


@pytest.mark.parametrize(
    ("name", "start"),
    [("loss.svg", "<?xml"), ("page.html", "<!DOCTYPE html>"), ("run.txt", "━━ qkvcalc train")],
)
def test_output_writes_the_format_its_extension_names(tmp_path, name, start):
    out = tmp_path / name
    result = in_process("train", "--preset", "learn", "--steps", "3", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8").startswith(start)


def test_output_refuses_an_extension_train_does_not_write(tmp_path):
    out = tmp_path / "x.tex"
    one_message(in_process("train", "--preset", "learn", "-o", str(out)), "x.tex", ".svg")
    assert not out.exists()


def test_the_preset_s_held_out_sentence_is_shown():
    text = in_process("train", "--preset", "referent").stdout
    t = train(referent())
    held = t.heldout[0]
    after = f"{100 * held.after[0, 0].max():.0f}%"
    assert f"'it' gives most of its weight to 'bird': {after}" in text
    assert np.isclose(run(t.problem).weights.sum(), 1.0)


def test_the_svg_draws_both_curves_with_compare_scale():
    import xml.etree.ElementTree as ET

    result = in_process("train", "--preset", "referent", "--compare-scale", "--format", "svg")
    assert result.returncode == 0, result.stderr
    root = ET.fromstring(result.stdout.split("\n", 1)[1])
    lines = root.findall("{http://www.w3.org/2000/svg}polyline")
    assert len(lines) == 2
    t = train(referent(), compare_scale=True)
    for line, losses in zip(lines, (t.losses, t.unscaled.losses), strict=True):
        ys = [float(p.split(",")[1]) for p in line.get("points").split()]
        assert len(ys) == len(losses)
        assert np.argmax(ys) == np.argmin(losses)  # SVG's y grows downward


def test_referent64_s_reference_is_what_its_run_shows():
    """At d_k = 64 the unscaled softmax starts saturated and learns less through the output."""
    t = train(presets.load("referent64"), compare_scale=True)
    assert t.unscaled is not None
    unscaled = [float(a[0, 0].max()) for a in t.unscaled.first.attentions]
    assert sum(w > 0.99 for w in unscaled) == 4 and f"{min(unscaled):.2f}" == "0.90"
    scaled = np.concatenate([a[0, 0] for a in t.first.attentions])
    assert scaled.min() >= 0.17 and scaled.max() <= 0.83
    assert (f"{t.losses[0]:.4f}", f"{t.losses[-1]:.4f}") == ("0.3085", "0.0108")
    assert (f"{t.unscaled.losses[0]:.4f}", f"{t.unscaled.losses[-1]:.3f}") == ("0.4017", "0.179")
    held = t.heldout[0]
    assert (f"{100 * held.before[0, 0, 1]:.0f}", f"{100 * held.after[0, 0, 1]:.0f}") == ("10", "63")
    reference = presets.load("referent64")["reference"]
    for said in ("≈ 0.3085 to ≈ 0.0108", "≈ 0.4017 to ≈ 0.179", "'bird' 10%, then 63%"):
        assert said in reference


def test_a_loss_option_on_a_data_set_is_refused_not_ignored():
    one_message(
        in_process("train", "--preset", "referent", "--target", "1 0 0"), "--target", "data set"
    )


def test_python_s_train_takes_a_data_set_and_compare_scale():
    import qkvcalc

    t = qkvcalc.train(referent(), steps=3, compare_scale=True)
    assert len(t.examples) == 5 and t.unscaled is not None
    np.testing.assert_allclose(t.losses, torch_losses(referent(), 3, 0.5), rtol=0, atol=1e-9)


def test_f09_f11_docs_train_md_says_what_the_runs_show():
    """docs/train.md's figures for several heads under attend and for a loss that grows are
    the runs' own."""
    from pathlib import Path

    text = " ".join((Path(__file__).parent.parent / "docs" / "train.md").read_text().split())
    result = run_qkvcalc("train", "--preset", "multihead", "--attend", "1 1 2", "--lr", "0.1",
                         "--format", "json")  # fmt: skip
    doc = json.loads(result.stdout)
    first, last = doc["steps"][0], doc["steps"][-1]
    assert first["step"] == 0 and last["step"] == 20
    heads = train(Problem.from_mapping({**presets.load("multihead"), "attend": [1, 1, 2]}),
                  steps=20, lr=0.1)  # fmt: skip
    a, b = heads.first.attention, heads.last.attention  # [H, n, m]; 'love' is query 2, 'I' key 1
    said = [f"{100 * a[h, 1, 0]:.0f}% → {100 * b[h, 1, 0]:.0f}% in head {h + 1}" for h in (0, 1)]
    assert f"('love' → 'I': {said[0]}, {said[1]})" in text
    # every head moved toward each query's one target key
    assert all(b[h, i, t] > a[h, i, t] for h in (0, 1) for i, t in enumerate((0, 0, 1)))
    notes = " ".join(doc["notes"])
    assert "With 2 heads, attend pushes every head toward the same key for each query" in notes
    grows = json.loads(run_qkvcalc("train", "--preset", "doc", "--target", "0 0", "--format",
                                   "json").stdout)["losses"]  # fmt: skip
    mantissa, exponent = f"{grows[-1]:.2e}".split("e")
    assert f"from {grows[0]:g} to about {mantissa} × 10⁷ after 20 steps" in text
    assert int(exponent) == 7
    calm = json.loads(run_qkvcalc("train", "--preset", "doc", "--target", "0 0", "--lr", "0.1",
                                  "--format", "json").stdout)["losses"]  # fmt: skip
    assert f"({calm[0]:g}, {calm[1]:.4g}, {calm[2]:.5g}, …)" in text
    assert calm[1] / calm[0] == pytest.approx(0.25) and calm[2] / calm[1] == pytest.approx(0.25)
