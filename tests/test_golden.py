"""Golden renders of every bundled preset at a pinned width, colourless, in English.

A golden file changes only with a reviewed diff: after a deliberate change of the rendering,
regenerate with `QKVCALC_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py`, then read
`git diff tests/golden` before committing. A preset without a golden file fails, so a new
preset cannot ship unseen.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import GOLDEN, ROOT

PRESETS = sorted(p.stem for p in (ROOT / "presets").glob("*.json"))
REGEN = os.environ.get("QKVCALC_REGEN_GOLDEN") == "1"


def normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


@pytest.mark.parametrize("name", PRESETS)
def test_preset_table_matches_its_golden_render(cli, name):
    result = cli("explain", "--preset", name)
    assert result.exit_code == 0, result.stderr
    golden = GOLDEN / f"{name}.table.txt"
    text = normalise(result.stdout)
    if REGEN:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"no golden render for preset {name}: regenerate and review it"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "args"),
    [("sentence", ("--attend", "1 1 2")), ("mla", ()), ("dsa", ())],  # mla, dsa: own targets
    ids=["sentence", "mla", "dsa"],
)
def test_a_backward_run_matches_its_golden_render(cli, name, args):
    """The backward pass (--backward) of the sentence preset from `attend`, and of multi-head
    latent attention's (through its latents, to every latent weight) from its target, with the
    sparse-attention indexer's choice held fixed too (dsa): every
    gradient stage, its arithmetic and notes (the loss, √d_k shown by its gradients), pinned
    the same way."""
    result = cli("explain", "--preset", name, *args, "--backward")
    assert result.exit_code == 0, result.stderr
    golden = GOLDEN / f"{name}.backward.table.txt"
    text = normalise(result.stdout)
    if REGEN:
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), "no golden render of the backward run: regenerate and review it"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", PRESETS)
def test_preset_runs_in_every_format(cli, name):
    """Every preset in every format, brief: the goldens pin two presets' exports, this runs
    all six through all seven formats."""
    from qkvcalc.render import FORMATS

    for fmt in FORMATS:
        result = cli("explain", "--preset", name, "--format", fmt, "--detail", "brief")
        assert result.exit_code == 0, (fmt, result.stderr)
        assert name in result.stdout, fmt  # the preset is named in every format


def test_every_golden_render_belongs_to_a_preset():
    assert {path.name.split(".")[0] for path in GOLDEN.glob("*.table.txt")} == set(PRESETS)


def test_no_golden_render_holds_a_difference_made_of_rounding_alone():
    """A difference of rounding alone (two computations of the same numbers: the chunked and
    the recurrent forms, W·V and the output) depends on the order of a sum, and so on the
    machine's BLAS and CPU: the kda golden held "is 2.2e-16", which another machine printed as
    5.6e-17. Such a difference is said as the bound it is under ("below 1e-12"), so that every
    render is the same everywhere; no golden render may hold a figure under 1e-12."""
    import re

    tiny = re.compile(r"\b\d\.\de-(1[3-9]|[2-9]\d)\b")
    for golden in sorted(p for p in GOLDEN.rglob("*") if p.is_file()):
        found = tiny.findall(golden.read_text(encoding="utf-8"))
        assert not found, f"{golden.name} holds a difference of rounding alone"
