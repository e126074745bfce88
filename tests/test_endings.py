"""How a command ends where the user ends it: a reader that goes away early (`| head -c 100`)
ends every command quietly with 0, as explain did and extract did not (1); Ctrl-C in the step
mode leaves the shell's prompt on a line of its own, not on the status line."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pexpect
import pytest

from tests.conftest import PINNED_ENV, ROOT, interrupt_at_prompt

PYTHON = sys.executable


def _head_c_100(command: str, cwd=ROOT) -> subprocess.CompletedProcess:
    """`COMMAND | head -c 100` through bash; its stdout is what head printed, and the last line
    of stderr the command's exit status."""
    line = f'{command} | head -c 100 >/dev/null; echo "status=${{PIPESTATUS[0]}}" >&2'
    return subprocess.run(
        ["bash", "-c", line],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **PINNED_ENV},
        timeout=300,
    )


def _ended_quietly(done: subprocess.CompletedProcess) -> None:
    *said, status = done.stderr.strip().splitlines()
    assert status == "status=0", done.stderr
    assert not [line for line in said if line.strip()], said


def test_explain_into_head_c_ends_with_0():
    _ended_quietly(_head_c_100(f"{PYTHON} -m qkvcalc explain --preset gqa --format json"))


@pytest.fixture(scope="module")
def small_gpt2(tmp_path_factory):
    """A GPT-2 of random weights whose one layer's problem is far more than a pipe holds."""
    transformers = pytest.importorskip("transformers", reason="extract needs qkvcalc[models]")
    pytest.importorskip("torch", reason="extract needs qkvcalc[models]")
    folder = tmp_path_factory.mktemp("gpt2")
    config = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=64, vocab_size=50, n_positions=32, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    transformers.GPT2Model(config).save_pretrained(folder)
    return folder


def test_extract_into_head_c_ends_with_0(small_gpt2):
    done = _head_c_100(f"{PYTHON} -m qkvcalc extract {small_gpt2} --layer 0 --ids '1 2 3'")
    _ended_quietly(done)


def test_ctrl_c_in_the_step_mode_leaves_the_prompt_on_a_line_of_its_own():
    child = pexpect.spawn(
        PYTHON,
        ["-m", "qkvcalc", "explain", "--preset", "doc", "--step"],
        env={**os.environ, **PINNED_ENV, "TERM": "xterm"},
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=60,
        dimensions=(24, 80),
    )
    child.expect_exact("the problem — 10 stages follow")
    interrupt_at_prompt(child)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    # where the shell's prompt goes: after the last character written, the cursor shown again
    shown = re.sub(r"\x1b\[\?25[hl]", "", child.before)
    assert shown.endswith("\n"), repr(shown[-120:])
