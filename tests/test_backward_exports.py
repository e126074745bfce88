"""Every export renders the backward stages: markdown, LaTeX (compiled by pdflatex, skipped
with the reason when it is missing), the html page (data-stage and data-cell on every gradient
cell, data-from naming the cells it was computed from), svg, txt and json; and the worksheet
leaves every gradient cell blank and the notes that state a result out."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace

import pytest

from qkvcalc import render
from qkvcalc.input import presets
from qkvcalc.input.problem import Problem
from qkvcalc.run.engine import run
from tests.test_backward import backward_trace, make

PDFLATEX = shutil.which("pdflatex")
# a feature each whose formulas bring their own symbols: ⊙ and Σⱼ (every run), −∞ (a mask),
# tanh² (softcap), φ (RoPE), ρ (q/k norm), σ (sinks), ½ (a target)
CASES = [
    ("causal", "target"),
    ("softcap", "attend"),
    ("rope_half", "grad_output"),
    ("qk_norm", "target"),
    ("sinks", "attend"),
    ("biases", "target"),
]


def sentence() -> object:
    doc = presets.load("sentence") | {"attend": [1, 1, 2]}
    return run(replace(Problem.from_mapping(doc), backward=True))


def grad_stages(trace) -> list:
    return [s for s in trace.stages if s.id.startswith("grad_") or s.id == "softmax_rowdot"]


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html", "svg", "txt"])
def test_each_export_shows_every_gradient_stage(fmt):
    trace = sentence()
    text = render(trace, fmt)
    for stage in grad_stages(trace):
        assert stage.formula.split(" = ")[0].split("[")[0] in text or fmt == "latex", stage.id
    titles = {  # dX's formula as each writes it (markdown's in TeX; its why names no terms)
        "markdown": r"dX = dQ \cdot W_Q^\top + dK \cdot W_K^\top",
        "html": "dX = dQ·W_Qᵀ + dK·W_Kᵀ",
    }
    if fmt in titles:
        assert titles[fmt] in text
    if fmt == "latex":
        assert r"A \odot (dA - r)" in text and r"\sum _{j} A_{ij} \cdot dA_{ij}" in text


def test_json_has_every_gradient_with_its_value():
    trace = sentence()
    doc = json.loads(render(trace, "json"))
    ids = [s["id"] for s in doc["stages"]]
    for stage in grad_stages(trace):
        assert stage.id in ids
    found = next(s for s in doc["stages"] if s["id"] == "grad_wq")
    assert found["value"] == trace.stage("grad_wq").value.tolist()


def test_the_page_names_each_gradient_cells_sources():
    """data-from of a gradient cell is its op's feeds: dX[1,1] reads row 1 of dQ and of dK;
    d(Q·Kᵀ)[1,1] only dS[1,1] (the scaling's backward reads no score)."""
    trace = sentence()
    page = render(trace, "html")
    number = {id(s): k for k, s in enumerate(trace.stages, 1)}

    def cell(sid: str, i: int, j: int) -> str:
        stage = trace.stage(sid)
        k = number[id(stage)]
        found = re.search(
            rf'<td id="en-c{k}-{i}-{j}" data-stage="{sid}" data-cell="{i},{j}"'
            r' data-from="([^"]*)"',
            page,
        )
        assert found, (sid, i, j)
        return found.group(1)

    q, k_ = number[id(trace.stage("grad_q"))], number[id(trace.stage("grad_k"))]
    assert cell("grad_x", 1, 1) == f"{q}:1:1-2 {k_}:1:1-2"
    scaled = number[id(trace.stage("grad_scaled"))]
    assert cell("grad_scores", 1, 1) == f"{scaled}:1:1"
    for stage in grad_stages(trace):
        assert f'data-stage="{stage.id}"' in page


def test_the_worksheet_leaves_the_gradients_blank_and_states_no_result():
    trace = sentence()
    sheet = render(trace, "txt", worksheet=True)
    key = render(trace, "txt")
    assert "The loss these numbers give" in key and "shown by its gradients" in key
    assert "The loss these numbers give" not in sheet
    assert "shown by its gradients" not in sheet
    blanks = sheet.count("______")
    gradients = sum(s.shape[0] * s.shape[1] for s in grad_stages(trace))
    forward = sum(s.shape[0] * s.shape[1] for s in trace.stages if s.id != "x") - gradients
    assert blanks == forward + gradients + trace.output.size  # every cell but X's, and the result
    tail = sheet.split("dA[i, tᵢ] = −1 / A[i, tᵢ]", 1)[1]  # from the first gradient on
    assert not re.search(r"\d\.\d{4}", tail)  # not one number of the backward is written
    assert "X feeds 3 projections (Q, K, V), but only Q, K reach" in sheet  # how the paths add


needs_pdflatex = pytest.mark.skipif(
    PDFLATEX is None,
    reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-extra lmodern)",
)


@needs_pdflatex
@pytest.mark.parametrize(("feature", "loss"), CASES)
def test_a_backward_latex_export_compiles(tmp_path, feature, loss):
    tex = render(backward_trace(make(feature, loss, seed=2)), "latex")
    assert "[U+" not in tex  # every symbol set as itself, none shown by its code point
    (tmp_path / "grad.tex").write_text(tex, encoding="utf-8")
    proc = subprocess.run(
        [PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "grad.tex"],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    log = (tmp_path / "grad.log").read_text(encoding="utf-8", errors="replace")
    assert proc.returncode == 0, [line for line in log.splitlines() if line.startswith("!")]
    assert "Missing character" not in log
    assert (tmp_path / "grad.pdf").stat().st_size > 1000
