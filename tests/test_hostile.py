"""Hostile and broken input, through the real program: every case exits 2 with one message.

The corpus is tests/data/bad/ (one small file per case; MANIFEST.tsv says what each is, how it
is fed — as a file argument, piped to stdin, or as command-line arguments — and a phrase its
message must contain). Pathological inputs too big to keep (a 200 MB file, 100,000 levels of
nesting, a billion claimed elements) are generated into tmp_path here.

Each run is a real `python -m qkvcalc` process with its address space capped (RLIMIT_AS), so
a blow-up fails the test instead of the machine, and a generous timeout that only guards
against a hang: nothing here asserts speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PINNED_ENV, ROOT, run_qkvcalc

BAD = Path(__file__).resolve().parent / "data" / "bad"
MEMORY_CAP = 2 * 1024**3  # bytes of address space a child may map
HANG_GUARD = 20  # seconds; a guard against hangs, not a speed requirement
ESCAPES = ("\x1b", "\x07", "\x9b")  # ESC, BEL, CSI: what would let input drive the terminal


def cap_memory() -> None:
    """preexec_fn: the child may map at most MEMORY_CAP bytes (a blow-up is a MemoryError)."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@dataclass(frozen=True)
class Case:
    file: str
    via: str  # file | stdin | both | args
    expect: str
    what: str

    def runs(self) -> list[str]:
        return {"both": ["file", "stdin"], "file": ["file"], "stdin": ["stdin"]}.get(
            self.via, ["args"]
        )


def manifest() -> list[Case]:
    lines = (BAD / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    return [Case(*line.split("\t")) for line in lines if line and not line.startswith("#")]


CASES = manifest()
RUNS = [(case, mode) for case in CASES for mode in case.runs()]


def argv_of(case: Case, mode: str) -> list[str]:
    if mode == "file":
        return ["explain", str(BAD / case.file)]
    if mode == "stdin":
        return ["explain"]
    return [a.replace("{data}", str(BAD)) for a in json.loads((BAD / case.file).read_text())]


@pytest.fixture(scope="module")
def corpus_results() -> dict[tuple[str, str], subprocess.CompletedProcess]:
    """Every corpus run, a few processes at a time (started from this thread, so preexec_fn is
    safe): stdin from the case file, stdout and stderr into temporary files."""
    results: dict[tuple[str, str], subprocess.CompletedProcess] = {}
    env = {**os.environ, **PINNED_ENV}
    batch = max(2, min(8, (os.cpu_count() or 2) * 2))
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, len(RUNS), batch):
            with contextlib.ExitStack() as files:
                running = []
                for k, (case, mode) in enumerate(RUNS[start : start + batch]):
                    out = files.enter_context(Path(tmp, f"{k}.out").open("w+b"))
                    err = files.enter_context(Path(tmp, f"{k}.err").open("w+b"))
                    stdin = (
                        files.enter_context((BAD / case.file).open("rb"))
                        if mode == "stdin"
                        else subprocess.DEVNULL
                    )
                    argv = [sys.executable, "-m", "qkvcalc", *argv_of(case, mode)]
                    proc = subprocess.Popen(
                        argv,
                        stdin=stdin,
                        stdout=out,
                        stderr=err,
                        env=env,
                        cwd=ROOT,
                        preexec_fn=cap_memory,
                    )
                    running.append((case, mode, proc, out, err))
                for case, mode, proc, out, err in running:
                    try:
                        proc.wait(timeout=HANG_GUARD)
                    except subprocess.TimeoutExpired:
                        proc.kill()  # reported by the test as a wrong exit code
                        proc.wait()
                    out.seek(0)
                    err.seek(0)
                    results[(case.file, mode)] = subprocess.CompletedProcess(
                        proc.args,
                        proc.returncode,
                        out.read().decode("utf-8", "replace"),
                        err.read().decode("utf-8", "replace"),
                    )
    return results


def assert_one_clean_message(proc: subprocess.CompletedProcess, expect: str = "") -> None:
    """Exit 2; nothing on stdout; one message (a line, or typer's one usage paragraph) on
    stderr that contains `expect`; no traceback; no escape bytes that a terminal would obey."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    err = proc.stderr
    assert "Traceback" not in err and "Exception" not in err, err[-2000:]
    assert "Warning" not in err, err  # numpy's RuntimeWarning never rides along
    messages = re.findall(r"^(?:error|Error)\b", err, flags=re.MULTILINE)
    assert len(messages) == 1, err
    assert err.endswith("\n") and len(err) < 3000, err[:3000]
    assert not any(c in err for c in ESCAPES), repr(err)
    assert expect in err, (expect, err)


# ---- the corpus -------------------------------------------------------------------------------


def test_corpus_is_big_and_described():
    """At least 60 cases, each file in the manifest and each manifest line a file, all small."""
    files = {p.name for p in BAD.iterdir()} - {"MANIFEST.tsv"}
    assert len(CASES) >= 60
    assert files == {case.file for case in CASES}
    assert all(case.expect and case.what for case in CASES)
    assert all(case.via in ("file", "stdin", "both", "args") for case in CASES)
    assert max((BAD / f).stat().st_size for f in files) < 50_000


@pytest.mark.parametrize(("case", "mode"), RUNS, ids=[f"{c.file}-{m}" for c, m in RUNS])
def test_bad_input_is_one_clear_message(corpus_results, case: Case, mode: str):
    assert_one_clean_message(corpus_results[(case.file, mode)], case.expect)


# ---- pathological inputs, made at run time ------------------------------------------------


def _doc(**fields) -> dict:
    base = {"x": [[1, 2], [0, 1]], "wq": [[1, 0], [0, 1]], "wk": [[1, 1], [0, 1]]}
    return {**base, "wv": [[1, 0], [1, 1]], **fields}


@pytest.fixture(scope="module")
def file_200mb(tmp_path_factory) -> Path:
    """200 MB of a plausible input: one long row of zeros (never fully read)."""
    path = tmp_path_factory.mktemp("big") / "big.json"
    chunk = b"0, " * (1 << 20)
    with path.open("wb") as f:
        f.write(b'{"x": [[')
        while f.tell() < 200_000_000:
            f.write(chunk)
        f.write(b"0]]}")
    return path


def test_200mb_file_is_refused_before_it_is_read(file_200mb):
    proc = run_qkvcalc("explain", str(file_200mb), timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert_one_clean_message(proc, "larger than 100000000 bytes")


def test_200mb_on_a_pipe_is_refused(file_200mb):
    """Piped (cat big.json | qkvcalc explain): no size to look at, so the reading stops at
    the limit."""
    cat = subprocess.Popen(["cat", str(file_200mb)], stdout=subprocess.PIPE)
    try:
        proc = run_qkvcalc("explain", stdin=cat.stdout, timeout=HANG_GUARD, preexec_fn=cap_memory)
    finally:
        cat.stdout.close()
        cat.kill()
        cat.wait()
    assert_one_clean_message(proc, "--max-bytes")


@pytest.mark.parametrize("opener", ["[", '{"x": '], ids=["lists", "objects"])
def test_100000_levels_of_nesting(tmp_path, opener):
    closer = "]" if opener == "[" else "}"
    text = ('{"x": ' if opener == "[" else "") + opener * 100_000 + closer * 100_000
    text += "}" if opener == "[" else ""
    path = tmp_path / "deep.json"
    path.write_text(text)
    proc = run_qkvcalc("explain", str(path), timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert_one_clean_message(proc, "nested too deeply")
    proc = run_qkvcalc("explain", input=text, timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert_one_clean_message(proc, "nested too deeply")


def test_a_billion_claimed_elements(tmp_path):
    """A 400 kB file whose first row (10,000 numbers) and 100,000 rows claim a billion."""
    doc = _doc(x=[[0] * 10_000] + [[0]] * 99_999)
    proc = run_qkvcalc("explain", input=json.dumps(doc), timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert_one_clean_message(proc, "1000000000 numbers")


def test_small_input_whose_scores_would_not_fit(tmp_path):
    """20,000 one-number tokens: a 300 kB input whose 20,000×20,000 score stages need 16 GB."""
    doc = {"q": [[1]] * 20_000, "k": [[1]] * 20_000, "v": [[1]] * 20_000}
    proc = run_qkvcalc("explain", input=json.dumps(doc), timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert_one_clean_message(proc, "--max-elements")


def test_max_elements_is_an_override(tmp_path):
    """The same limit, raised, lets a problem through that the lowered one refuses."""
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_doc()))
    assert run_qkvcalc("explain", str(path), "--max-elements", "20").returncode == 2
    ok = run_qkvcalc("explain", str(path), "--max-elements", "200", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["schema"] == "qkvcalc.trace/1"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("9**9**9", None),
        ("1e999999999", None),
        ("9" * 60, 1e60),  # long but valid: (1e60)² in Q·Kᵀ is still finite
        ("sqrt(" * 8 + "2" + ")" * 8, 2 ** (1 / 256)),  # the deepest nesting allowed
        ("sqrt(" * 9 + "2" + ")" * 9, None),  # one deeper
        ("(" * 50_000 + "1" + ")" * 50_000, None),
        ("1" * 1_000_000, None),
        ("__import__('os').system('touch /tmp/qkvcalc-owned')", None),
    ],
    ids=[
        "power-tower",
        "huge-exponent",
        "60-digits",
        "sqrt-8-deep",
        "sqrt-9-deep",
        "parens-50000",
        "digits-1e6",
        "import-os",
    ],
)
def test_expensive_expressions_end_at_once(text, value):
    """Whitelist parsing: an expression is a small number or is refused, and is never run."""
    proc = run_qkvcalc(
        "explain",
        "--format",
        "json",
        input=json.dumps(_doc(x=[[text, 2], [0, 1]])),
        timeout=HANG_GUARD,
        preexec_fn=cap_memory,
    )
    assert not Path("/tmp/qkvcalc-owned").exists()
    if value is None:
        assert_one_clean_message(proc)
    else:
        assert proc.returncode == 0, proc.stderr
        x = next(s for s in json.loads(proc.stdout)["stages"] if s["id"] == "x")
        assert x["value"][0][0] == pytest.approx(value, rel=1e-15)


# ---- numbers that overflow --------------------------------------------------------------------


def test_overflow_is_refused_with_a_reason_and_no_numpy_warning():
    proc = run_qkvcalc(
        "explain",
        input=json.dumps(_doc(x=[[1e200, 1e200], [0, 1]])),
        env={"PYTHONWARNINGS": "default"},
        timeout=HANG_GUARD,
    )
    assert_one_clean_message(proc, "overflow float64 at Q·Kᵀ")


def test_large_finite_scores_are_softmaxed_stably():
    """Scores near 1e5 (and far apart): e^s overflows, e^(s − max) does not. The weights are
    the one-hot rows the limit says, every row sums to 1, and nothing is NaN."""
    import numpy as np

    import qkvcalc

    with np.errstate(all="raise"):  # the engine must not even warn (it guards its own math)
        trace = qkvcalc.explain(
            x=[[1e5, 0], [0, 1e5], [1, 1]],
            wq=[[1, 0], [0, 1]],
            wk=[[1, 0], [0, 1]],
            wv=[[1, 0], [0, 1]],
        )
    w = trace.stage("weights").value
    assert np.isfinite(w).all() and np.allclose(w.sum(axis=1), 1)
    # rows 1 and 2: their own key's score (≈7e9) beats the others by ~7e9: exactly one-hot
    assert w[0].tolist() == [1, 0, 0] and w[1].tolist() == [0, 1, 0]
    # row 3: keys 1 and 2 tie (≈7.07e4) far above key 3 (≈1.41): one half each
    assert w[2].tolist() == [0.5, 0.5, 0]
