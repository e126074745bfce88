"""Hostile and broken input, through the real program: every case exits 2 with one message.

The corpus is tests/data/bad/ (one small file per case; MANIFEST.tsv says what each is, how it
is fed — as a file argument, piped to stdin, or as command-line arguments — and a phrase its
message must contain). Pathological inputs too big to keep (a 200 MB file, 100,000 levels of
nesting, a billion claimed elements) are generated into tmp_path here.

The corpus runs through the real program inside one process of its own (tests/inprocess.py),
a sample of it as a process per run; every such process has its address space capped
(RLIMIT_AS), so a blow-up fails the test instead of the machine, and a generous timeout that
only guards against a hang: nothing here asserts speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import PINNED_ENV, ROOT, run_qkvcalc
from tests.inprocess import run_batch

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


def real_run(case: Case, mode: str) -> subprocess.CompletedProcess:
    """One corpus run as its own `python -m qkvcalc` process, its address space capped."""
    with contextlib.ExitStack() as files:
        stdin = files.enter_context((BAD / case.file).open("rb")) if mode == "stdin" else None
        return run_qkvcalc(
            *argv_of(case, mode), stdin=stdin, timeout=HANG_GUARD, preexec_fn=cap_memory
        )


@pytest.fixture(scope="module")
def corpus_results() -> dict[tuple[str, str], subprocess.CompletedProcess]:
    """Every corpus run, each as `python -m qkvcalc` would do it, all inside one real process
    (tests/inprocess.py: fresh standard streams on the case's files, the environment put back
    after each) whose address space is capped; test_a_sample_of_the_corpus_as_real_processes
    checks that a process of its own per run gives the very same results."""
    jobs = [
        {"argv": argv_of(case, mode), "stdin": str(BAD / case.file) if mode == "stdin" else None}
        for case, mode in RUNS
    ]
    results = run_batch(jobs, timeout=HANG_GUARD * len(RUNS) / 4, preexec_fn=cap_memory)
    return {(case.file, mode): got for (case, mode), got in zip(RUNS, results, strict=True)}


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


# Real processes for a sample: every kind of feeding (a file argument, stdin, the command line),
# and every eighth run besides, so the corpus' in-process runs are known to be the program's.
SAMPLE = sorted(
    {
        *RUNS[::8],
        *(next(run for run in RUNS if run[1] == mode) for mode in ("file", "stdin", "args")),
    },
    key=RUNS.index,
)


@pytest.mark.parametrize(("case", "mode"), SAMPLE, ids=[f"{c.file}-{m}" for c, m in SAMPLE])
def test_a_sample_of_the_corpus_as_real_processes(corpus_results, case: Case, mode: str):
    proc = real_run(case, mode)
    assert_one_clean_message(proc, case.expect)
    inside = corpus_results[(case.file, mode)]
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        inside.returncode,
        inside.stdout,
        inside.stderr,
    )


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


def test_a_scale_above_one_that_overflows_the_scores_is_refused():
    """Finite scores (1e300) times a given scale of 1e10: the scaled stage is where the
    overflow happens, and the message says so. (A scale of at most 1 cannot overflow.)"""
    doc = _doc(x=[[1e150, 0], [0, 1]])
    doc["scale"] = 1e10
    proc = run_qkvcalc(
        "explain", input=json.dumps(doc), env={"PYTHONWARNINGS": "default"}, timeout=HANG_GUARD
    )
    assert_one_clean_message(proc, "overflow float64 at Q·Kᵀ × 1e+10")


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


# ---- input text shown safely in every format ------------------------------------------------

HOSTILE_TOKENS = [
    "\x1b[31mred\x1b[0m",  # a colour change
    "\x1b]0;owned\x07",  # an OSC sequence that retitles the terminal, ended by BEL
    "[bold red]x[/]",  # rich markup
    "\x9b2J\u202e\u2028\r\x08",  # a C1 CSI, a right-to-left override, a line separator, CR, BS
    "<script>alert(1)</script>&amp;",  # HTML and SVG
    "\\input{/etc/passwd} $x$ % # _ ^ ~ {",  # LaTeX
    '"""+__import__("os").system("touch owned")+"""',  # the torch script's Python
    "| a | b |\n# h",  # a Markdown table cell and heading
    "\ud800",  # a lone surrogate: valid in JSON text, not encodable as UTF-8
    "k" * 1000,  # a 1,000-character name
]
RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\u202e", "\r", "\x08", "\ud800")


def hostile_problem() -> dict:
    """Every hostile name as a token; the first query has every key masked, so its name also
    goes into a warning sentence; the preset-like name and description are hostile too."""
    n = len(HOSTILE_TOKENS)
    return {
        "tokens": HOSTILE_TOKENS,
        "x": [[1, i] for i in range(n)],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "mask": [[0] * n] + [[int(j <= i) for j in range(n)] for i in range(1, n)],
        "name": "\x1b]0;name\x07[blink]n[/]",
        "description": "[red]desc[/] \x1b[2J",
    }


def render_hostile(fmt: str, color: bool) -> str:
    from qkvcalc.input.problem import Problem
    from qkvcalc.render import RenderOptions, render
    from qkvcalc.run.engine import run

    trace = run(Problem.from_mapping(hostile_problem()))
    assert trace.warnings  # the fully masked row's name is in a sentence too
    return render(trace, fmt, RenderOptions(color=color, width=100))


def markdown_tables_keep_their_shape(text: str) -> None:
    """In every Markdown table, each row has the same number of unescaped cell separators."""
    widths: list[int] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            widths.append(len(re.findall(r"(?<!\\)\|", line)))
        elif widths:
            assert len(set(widths)) == 1, widths
            widths = []


FORMAT_NAMES = ["table", "json", "markdown", "latex", "html", "svg", "torch"]


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_hostile_text_is_shown_literally(fmt):
    text = render_hostile(fmt, color=False)
    assert not [c for c in RAW_CONTROLS if c in text], fmt
    text.encode("utf-8")  # writable: no lone surrogate left
    if fmt == "table":
        assert "[bold red]x[/]" in text and "[red]desc[/]" in text  # markup shown, not obeyed
        assert "\\x1b[31mred" in text and "\\x1b]0;owned\\x07" in text  # escapes made visible
        assert max(len(line) for line in text.splitlines()) <= 100  # the long name abbreviated
    elif fmt == "json":
        doc = json.loads(text)
        assert doc["problem"]["tokens"] == HOSTILE_TOKENS  # escaped by JSON, read back exactly
    elif fmt == "markdown":
        markdown_tables_keep_their_shape(text)
    elif fmt == "latex":
        assert "\\input{/etc/passwd}" not in text
    elif fmt in ("html", "svg"):
        # the page's own two scripts (its data, escaped; its code) and no other
        assert text.count("<script") == (2 if fmt == "html" else 0)
        assert "alert(1)</script>" not in text
    elif fmt == "torch":
        import ast

        tree = ast.parse(text)  # still a Python script: no name broke out of its string
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "system"]
        assert not calls


def test_hostile_text_in_colour_changes_only_colours():
    """With colour on, the only escape sequences are rich's own SGR colour codes (ESC [ … m):
    no OSC (retitling), no cursor movement, no screen clearing from the input."""
    text = render_hostile("table", color=True)
    assert "\x07" not in text and "\x9b" not in text and "\x1b]" not in text
    sequences = set(re.findall(r"\x1b\[[0-9;]*([A-Za-z])", text))
    assert sequences <= {"m"}, sequences
    assert "\\x1b[31mred" in text and "[bold red]x[/]" in text


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_hostile_text_through_the_program(tmp_path, fmt):
    """The real program, writing to a pipe: exit 0, and the bytes it writes are safe."""

    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile_problem()))  # ensure_ascii: the surrogate as \ud800
    proc = run_qkvcalc("explain", str(path), "--format", fmt, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [c for c in RAW_CONTROLS if c in proc.stdout], fmt
    assert "\ufffd" not in proc.stdout  # nothing had to be replaced to be written
    assert proc.stderr == ""


def test_hostile_text_in_error_messages():
    """Text echoed in a message (here a key and a number) is escaped, never sent raw."""
    doc = {**_doc(), "\x1b]0;owned\x07": 1}
    proc = run_qkvcalc("explain", input=json.dumps(doc))
    assert_one_clean_message(proc, "\\x1b]0;owned\\x07")
    proc = run_qkvcalc("explain", input=json.dumps(_doc(x=[["\x1b[2J", 1], [0, 1]])))
    assert_one_clean_message(proc, "\\x1b[2J")
    proc = run_qkvcalc("explain", "no\x1b[31msuch-file.json")
    assert_one_clean_message(proc, "no\\x1b[31msuch-file.json")


# ---- issue 14: --output, the standard streams, the environment ------------------------------

ROOT_USER = os.geteuid() == 0


def _proc(*args: str, **kw) -> subprocess.CompletedProcess:
    return run_qkvcalc(*args, timeout=HANG_GUARD, preexec_fn=kw.pop("preexec_fn", cap_memory), **kw)


def test_output_never_follows_a_planted_temporary_symlink(tmp_path):
    """The old temporary name was predictable (.out.md.qkvcalc-tmp) and opened through a
    symlink: a link planted under that name made qkvcalc overwrite the file it points to."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / ".out.md.qkvcalc-tmp").symlink_to(victim)
    proc = _proc("explain", "--preset", "doc", "--output", str(tmp_path / "out.md"))
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "out.md").is_file() and not (tmp_path / "out.md").is_symlink()
    assert "# Attention" in (tmp_path / "out.md").read_text()
    leftovers = {p.name for p in tmp_path.iterdir()} - {"victim", ".out.md.qkvcalc-tmp", "out.md"}
    assert not leftovers  # the random temporary file is gone


def test_output_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    out = tmp_path / "out.json"
    out.write_text("{}")
    out.chmod(0o640)
    assert _proc("explain", "--preset", "doc", "--output", str(out)).returncode == 0
    assert (out.stat().st_mode & 0o777) == 0o640
    assert json.loads(out.read_text())["schema"] == "qkvcalc.trace/1"


def test_output_through_a_symlink_writes_the_file_it_points_to(tmp_path):
    """A careful user's expectation, as `echo … > link`: the link stays a link and the file it
    points to gets the new content."""
    real = tmp_path / "real.md"
    real.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert _proc("explain", "--preset", "doc", "--output", str(link)).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("# Attention")


def test_output_onto_a_fifo_writes_into_it(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    proc = _proc("explain", "--preset", "doc", "--output", str(fifo))
    got = reader.communicate(timeout=HANG_GUARD)[0]
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got)["schema"] == "qkvcalc.trace/1"
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # still a FIFO, not replaced by a file


def test_four_runs_onto_one_output_leave_one_runs_whole_file(cli, tmp_path):
    """Four processes at once write the same --output, each through a temporary file of its own
    renamed into place: the file left is one run's whole output, byte for byte, and no
    temporary file is left. Every command writes through this one writer (extract and heads
    too), so explain's quick runs stand for them all."""
    rng = np.random.default_rng(14)
    problems, alone = [], []
    for k in range(4):  # four problems, and what each run writes when it is the only one
        problems.append(tmp_path / f"problem-{k}.json")
        x, wq, wk, wv = (rng.integers(-3, 4, shape).tolist() for shape in [(48, 8)] + [(8, 8)] * 3)
        problems[-1].write_text(json.dumps({"x": x, "wq": wq, "wk": wk, "wv": wv}))
        alone.append(tmp_path / f"alone-{k}.json")
        result = cli("explain", str(problems[-1]), "--format", "json", "--output", str(alone[-1]))
        assert result.exit_code == 0, result.stderr
    wholes = {path.read_bytes() for path in alone}
    assert len(wholes) == 4 and min(map(len, wholes)) > 100_000
    out = tmp_path / "out.json"
    argv = [sys.executable, "-m", "qkvcalc", "explain", "--format", "json", "--output", str(out)]
    procs = [
        subprocess.Popen(
            [*argv, str(problem)],
            cwd=ROOT,
            env={**os.environ, **PINNED_ENV},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=cap_memory,
        )
        for problem in problems
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=HANG_GUARD)
        assert proc.returncode == 0, err
    assert out.read_bytes() in wholes
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == sorted(p.name for p in [*alone, *problems, out])


@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_output_onto_a_device_writes_to_it_and_leaves_it_a_device(device):
    """/dev/null succeeds (as a normal user it used to fail creating /dev/.null.qkvcalc-tmp;
    as root it would have replaced the device with a file); /dev/full is one message."""
    proc = _proc("explain", "--preset", "doc", "--output", device)
    assert stat.S_ISCHR(os.stat(device).st_mode)
    assert not any(name.endswith(".qkvcalc-tmp") for name in os.listdir("/dev"))
    if device == "/dev/null":
        assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    else:
        assert_one_clean_message(proc, "No space left on device")


@pytest.mark.skipif(not ROOT_USER, reason="runs the program as nobody, which needs root")
def test_output_onto_dev_null_as_a_normal_user(tmp_path):
    """As nobody (who cannot create files in /dev), --output /dev/null works.

    The probe imports qkvcalc as nobody, as the run below does: where nobody cannot read the
    clone's folder (or run the interpreter), or would import another copy of qkvcalc than this
    clone's, the test skips and says so."""
    as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    probe = subprocess.run(
        [*as_nobody, sys.executable, "-c", "import qkvcalc.cli; print(qkvcalc.__file__)"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, **PINNED_ENV},
        timeout=HANG_GUARD,
    )  # fmt: skip
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"nobody cannot import qkvcalc from {ROOT}: {last}")
    if not Path(probe.stdout.strip()).is_relative_to(ROOT):
        pytest.skip(f"nobody imports another qkvcalc ({probe.stdout.strip()}), not {ROOT}'s")
    proc = subprocess.run(
        [*as_nobody, sys.executable, "-m", "qkvcalc", "explain", "--preset", "doc",
         "--output", "/dev/null"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, **PINNED_ENV},
        timeout=HANG_GUARD,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_output_under_a_file_is_one_message(tmp_path):
    parent = tmp_path / "file.json"
    parent.write_text("{}")
    proc = _proc("explain", "--preset", "doc", "--output", str(parent / "x.md"))
    assert_one_clean_message(proc, "Not a directory")
    assert parent.read_text() == "{}"


def _closing(fd: int):
    def preexec() -> None:
        cap_memory()
        os.close(fd)

    return preexec


@pytest.mark.parametrize(
    ("args", "fd", "expect"),
    [
        (("explain", "--preset", "doc"), 1, "cannot write to standard output"),
        (("explain",), 0, "no input"),
    ],
    ids=["stdout-closed", "stdin-closed-no-input"],
)
def test_a_closed_standard_stream_is_one_message(args, fd, expect):
    proc = _proc(*args, preexec_fn=_closing(fd))
    assert_one_clean_message(proc, expect)


def test_closed_stdin_with_a_preset_runs():
    proc = _proc("explain", "--preset", "doc", "--format", "json", preexec_fn=_closing(0))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "qkvcalc.trace/1"


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_stdout_on_a_full_disk_is_one_message(fmt):
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "qkvcalc", "explain", "--preset", "doc", "--format", fmt],
            stdout=full, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            cwd=ROOT, env={**os.environ, **PINNED_ENV}, timeout=HANG_GUARD,
        )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == "error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("how", ["full", "closed"])
def test_stderr_that_cannot_be_written_keeps_exit_2(how):
    """Bad input with stderr on /dev/full (or closed): the message is lost, the code is not."""
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "qkvcalc", "explain", "--preset", "nope"],
            stdout=subprocess.PIPE, stderr=full if how == "full" else subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, cwd=ROOT, env={**os.environ, **PINNED_ENV},
            timeout=HANG_GUARD, preexec_fn=_closing(2) if how == "closed" else None,
        )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == b""


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONIOENCODING": "ascii"},
        {"PYTHONIOENCODING": "latin-1"},
        {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
    ],
    ids=["ascii", "latin-1", "C-locale"],
)
@pytest.mark.parametrize("fmt", ["table", "json", "html"])
def test_a_stdout_that_is_not_utf8_gets_escapes_not_a_traceback(env, fmt):
    proc = run_qkvcalc(
        "explain", "--preset", "sentence", "--lang", "ko", "--format", fmt, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == ""
    if "latin-1" not in env.values():  # (run_qkvcalc reads stdout as UTF-8)
        proc.stdout.encode("ascii")
    if fmt == "json":
        assert json.loads(proc.stdout)["schema"] == "qkvcalc.trace/1"  # escapes JSON can read


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}])
def test_an_error_on_a_stderr_that_is_not_utf8(env):
    """A Korean message on an ASCII stderr: one line, exit 2, no traceback."""
    proc = run_qkvcalc("explain", "--preset", "nope", "--lang", "ko", env=env)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr and "nope" in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("columns", ["0", "²", "-3", "abc", "99999999999999999999"])
def test_an_unusable_columns_is_ignored(columns):
    plain = run_qkvcalc("explain", "--preset", "doc", env={"COLUMNS": "80"})
    proc = run_qkvcalc("explain", "--preset", "doc", env={"COLUMNS": columns})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]
    assert proc.stdout == plain.stdout  # the default width, as if COLUMNS were not set
    usage = run_qkvcalc("explain", "--heads", "x", env={"COLUMNS": columns})
    assert_one_clean_message(usage, "not a valid")


def test_a_usage_message_does_not_echo_a_5000_digit_value():
    proc = _proc("explain", "--preset", "doc", "--heads", "9" * 5000)
    assert_one_clean_message(proc, "--heads")
    assert len(proc.stderr) < 600


# ---- issue 14: limits that cost nothing until they are needed -------------------------------


@pytest.mark.parametrize("limit", ["1000000000000", "10000000000000000000"])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_a_huge_max_bytes_allocates_only_what_the_input_holds(limit, via):
    """--max-bytes 1e12 read(limit + 1) up front: a terabyte asked for a 300-byte file (out of
    memory under the cap), and an OverflowError at 1e19."""
    doc = BAD.parent.parent.parent / "presets" / "doc.json"
    args = ["explain", "--max-bytes", limit, "--format", "json"]
    given = {"input": doc.read_bytes()} if via == "stdin" else {}
    proc = _proc(*args, "-" if via == "stdin" else str(doc), **given)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["schema"] == "qkvcalc.trace/1"


class _Unread(list):
    """A long list whose entries must not be read: only its length (and its first entry, which
    says what kind of list it is) may be asked."""

    def __iter__(self):
        raise AssertionError("the entries were read before the length was checked")

    def __getitem__(self, index):
        if index != 0:
            raise AssertionError("an entry was read before the length was checked")
        return super().__getitem__(0)


@pytest.mark.parametrize(
    ("field", "value", "expect"),
    [
        ("key_padding", _Unread([1] * 100), "key_padding is 100 long"),
        ("tokens", _Unread(["a"] * 100), "names in tokens is 100"),
        ("mask", [_Unread([1] * 100), _Unread([1] * 100)], "mask is 2×100"),
    ],
    ids=["key_padding", "tokens", "mask-rows"],
)
def test_lengths_are_checked_before_entries_are_read(field, value, expect):
    """25 M key_padding entries, a 25 M-entry mask row, 10 M token names for a 2-token input:
    each entry used to be converted first (4 s, 800 MB) and the length checked after."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.input.problem import Problem

    with pytest.raises(QkvcalcError, match=re.escape(expect)):
        Problem.from_mapping(_doc(**{field: value}))


def test_25_million_key_padding_entries_are_refused_by_their_count(tmp_path):
    path = tmp_path / "padding.json"
    path.write_text(json.dumps(_doc(key_padding=[1] * 2_500_000)))
    proc = _proc("explain", str(path))
    assert_one_clean_message(proc, "key_padding is 2500000 long but the number of keys is m = 2")


def test_quiz_answers_of_1e308_and_minus_infinity_grade_without_numpy_warnings():
    sheet = {
        "q": [["1e308", "-inf"]],
        "k": [[1e308, "-inf"]],
        "scores": "-inf",
        "scaled": 1e308,
        "exp": "-inf",
        "weights": "1e308",
        "output": [[1e308, "-inf"]],
    }
    proc = run_qkvcalc(
        "quiz", "--preset", "doc", "--answers", "-", input=json.dumps(sheet),
        env={"PYTHONWARNINGS": "default"}, timeout=HANG_GUARD,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""


@pytest.mark.parametrize("typed", ["²", "١", "9" * 5000])
def test_a_whole_number_in_new_that_int_refuses_is_asked_again(typed):
    """`qkvcalc new` asks for whole numbers (tokens, widths, heads): '²' is a digit to
    str.isdigit but not to int, and 5,000 digits are past int()'s limit; both are asked again."""
    import io

    from rich.console import Console

    from qkvcalc.quiz.new import Entry

    screen = io.StringIO()
    answers = iter([typed, "2"])
    entry = Entry(Console(file=screen, width=100), lambda prompt: next(answers), "en")
    assert entry.whole("new.heads", 1, 1024) == 2
    assert "whole number" in screen.getvalue()


# ---- issue 14: --exact decides before it starts ------------------------------------------------

TINY_EXPONENT = "1e-400*1e-400*1e-400"  # 1e-1200: its Q·Kᵀ has a 4800-digit denominator
PRIMES_60 = [f"1/{10**59 + k}" for k in (151, 447, 513, 637, 831, 939)]  # unrelated 60 digits


@pytest.mark.parametrize(
    "doc",
    [
        _doc(x=[[TINY_EXPONENT, 1], [1, 2]], wq=[["1e-400", 1], [1, "1e-400"]]),
        {
            "x": [PRIMES_60, PRIMES_60[::-1]],
            "wq": [PRIMES_60] * 6,
            "wk": [PRIMES_60[::-1]] * 6,
            "wv": [PRIMES_60] * 6,
        },
    ],
    ids=["1e-1200", "60-digit-denominators"],
)
def test_exact_fractions_too_long_to_print_are_given_up_before_they_are_made(doc):
    """Once a crash on printing (a fraction over 4300 digits) or minutes of arithmetic: now the
    decimals at once, with a note that says why there are no fractions."""
    proc = _proc("explain", "--exact", "--format", "json", input=json.dumps(doc))
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert not any("exact" in stage for stage in out["stages"])
    assert "digits" in out["stages"][0]["notes"][-1]
    table = _proc("explain", "--exact", input=json.dumps(doc), env={"COLUMNS": "300"})
    assert table.returncode == 0 and "Exact fractions left out" in table.stdout


def test_a_big_problem_gives_up_exact_mode_without_making_a_fraction(monkeypatch):
    """A problem past the budget by its shapes is read as decimals only: no input number is
    turned into a fraction (a BERT-size layer used to make 2.8 million, 14 s, then give up)."""
    import qkvcalc.input.cells
    import qkvcalc.input.numbers
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    def no_fractions(value):
        raise AssertionError("a fraction was made")

    monkeypatch.setattr(qkvcalc.input.cells, "exact_of_float", no_fractions)
    monkeypatch.setattr(qkvcalc.input.numbers, "exact_of_float", no_fractions)
    rng = __import__("numpy").random.default_rng(0)
    doc = {k: rng.standard_normal((64, 64)).tolist() for k in ("x", "wq", "wk", "wv")}
    problem = Problem.from_mapping(doc, exact=True)
    assert problem.exact_refused is not None and problem.x.exact is None
    trace = run(problem)
    assert "multiplications" in trace.stages[0].notes[-1].text("en")


@pytest.mark.parametrize("name", ["doc", "sentence", "multihead", "gqa", "cross", "padding"])
def test_the_presets_still_run_exactly(name):
    from qkvcalc.input import presets
    from qkvcalc.input.exact_budget import refusal
    from qkvcalc.input.fields import canonical_key

    doc = {canonical_key(k): v for k, v in presets.load(name).items()}
    assert refusal(doc) is None


# ---- issue 14: token names -------------------------------------------------------------------


def test_huge_token_names_cost_what_is_shown(tmp_path):
    """Three names of 3 million characters each (one of them accents): 59 s once, escaping and
    measuring every character of names a table shows 23 columns of."""
    names = ["a" * 3_000_000, "\x1b" * 3_000_000, "c\u0301" * 1_500_000]
    path = tmp_path / "names.json"
    path.write_text(json.dumps(_doc(x=[[1, 2], [0, 1], [1, 1]], tokens=names)))
    proc = _proc("explain", str(path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "aaaa…" in proc.stdout and "\\x1b\\x1b" in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) < 400


def _columns(line: str) -> int:
    """Columns of a line of Latin text, box lines and accents, measured independently."""
    import unicodedata

    return sum(0 if unicodedata.combining(c) else 1 for c in line)


def test_combining_marks_take_no_column_in_a_table():
    """'é' written as e + U+0301 is one column wide: the rows of a table stay aligned."""
    from qkvcalc.input.problem import Problem
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.terminal import render_text
    from qkvcalc.run.engine import run

    tokens = ["cafe\u0301", "nai\u0308ve\u0301\u0301", "x"]
    trace = run(Problem.from_mapping(_doc(x=[[1, 2], [0, 1], [1, 1]], tokens=tokens)))
    text = render_text(trace, RenderOptions(color=False, width=100, detail="brief"))
    rows = [line for line in text.splitlines() if line.strip().startswith(("cafe", "nai", "x "))]
    assert rows
    ends = {_columns(line.rstrip()) for line in rows[:3]}  # the X table's three rows
    assert len(ends) == 1, rows[:3]
    assert "cafe\u0301" in text  # shown, not escaped


def test_arabic_letter_mark_and_tag_characters_are_escaped_in_json():
    """U+061C (a bidirectional mark) and the tag characters U+E0000–U+E007F (invisible text)
    were left raw in JSON; now they are \\u escapes (a tag as its surrogate pair)."""
    from qkvcalc.input.problem import Problem
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.json_doc import render_json
    from qkvcalc.run.engine import run

    tokens = ["a\u061cb", "\U000e0041\U000e007f", "ok"]
    trace = run(Problem.from_mapping(_doc(x=[[1, 2], [0, 1], [1, 1]], tokens=tokens)))
    text = render_json(trace, RenderOptions())
    assert "\u061c" not in text and "\U000e0041" not in text and "\U000e007f" not in text
    assert "\\u061c" in text and "\\udb40\\udc41" in text
    assert json.loads(text)["problem"]["tokens"] == tokens


# ---- round three (issue 20): numpy files, step counts, typed lines, answer sheets ------------


@pytest.mark.parametrize("field", ["decode", "tiles"])
def test_decode_or_tiles_as_a_5000_digit_string_is_one_message(tmp_path, field):
    path = tmp_path / "p.json"
    doc = _doc(x=[[1, 2], [0, 1], [1, 1]], **{field: "9" * 5000})
    path.write_text(json.dumps(doc))
    assert_one_clean_message(_proc("explain", str(path)), field)


@pytest.mark.parametrize("option", ["--tiles", "--decode"])
def test_random_with_a_zero_option_is_refused_not_ignored(option):
    assert_one_clean_message(_proc("explain", "--random", option, "0"), option)


def _npz(path: Path, members: list[tuple[str, bytes]]) -> Path:
    import io
    import warnings
    import zipfile

    made = io.BytesIO()  # in memory, then one write: 200,000 members in 1.7 s, not 2.6 s
    with zipfile.ZipFile(made, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: that is the case
        for name, data in members:
            archive.writestr(name, data)
    path.write_bytes(made.getvalue())
    return path


def _npy_bytes(array) -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_an_npz_with_two_members_of_one_name_is_refused(tmp_path):
    import numpy as np

    path = _npz(
        tmp_path / "dup.npz",
        [
            ("x.npy", _npy_bytes(np.eye(2))),
            ("wq.npy", _npy_bytes(np.eye(2))),
            ("wk.npy", _npy_bytes(np.eye(2))),
            ("wv.npy", _npy_bytes(np.eye(2))),
            ("x.npy", _npy_bytes(np.eye(2) * 5)),
        ],
    )
    assert_one_clean_message(_proc("explain", str(path)), "'x.npy'")


def test_an_npz_of_200000_members_is_refused_before_any_is_read(tmp_path):
    path = _npz(tmp_path / "many.npz", [(f"m{i}.npy", b"") for i in range(200_000)])
    proc = run_qkvcalc("explain", str(path), timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert_one_clean_message(proc, "200000 members")


def _zero_size_npy(descr: str, count: int = 10**12) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({count},), }}"
    header = header.ljust(117) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


@pytest.mark.parametrize("descr", ["<U0", "|S0", "|V0"])
def test_npy_items_of_zero_bytes_claiming_10_12_elements_are_refused(tmp_path, descr):
    path = _npz(tmp_path / "zero.npz", [("tokens.npy", _zero_size_npy(descr))])
    assert_one_clean_message(_proc("explain", str(path)), "1000000000000")
    npy = tmp_path / "zero.npy"
    npy.write_bytes(_zero_size_npy(descr))
    assert_one_clean_message(_proc("explain", "--preset", "doc", "--x", str(npy)), "")


def test_an_answer_cell_with_a_lone_surrogate_is_reported_not_a_traceback(tmp_path):
    template = _proc("quiz", "--preset", "doc", "--template")
    sheet = json.loads(template.stdout)
    first, second = list(sheet)[:2]
    sheet[first][0][0] = "\ud800"
    sheet[second][0][0] = 0  # a number too: a sheet of no number at all is refused (below)
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(sheet))  # ensure_ascii: the file holds the escape \ud800
    for fmt in ("table", "json"):
        proc = _proc("quiz", "--preset", "doc", "--answers", str(path), "--format", fmt)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert "\\ud800" in proc.stdout or fmt == "json"


@pytest.mark.parametrize("args", [["new"], ["quiz", "--preset", "doc"]], ids=["new", "quiz"])
def test_stdin_from_dev_zero_is_one_message_in_bounded_memory(args):
    with open("/dev/zero", "rb") as zero:
        proc = run_qkvcalc(*args, stdin=zero, timeout=HANG_GUARD, preexec_fn=cap_memory)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "10000 characters" in proc.stderr
    assert "\x00" not in proc.stderr  # the line is not echoed back


def test_new_refuses_a_50_mb_line_without_echoing_it():
    proc = run_qkvcalc("new", input=b"7" * 50_000_000 + b"\n", timeout=HANG_GUARD)
    assert proc.returncode == 2 and "10000 characters" in proc.stderr
    assert len(proc.stderr) < 5000 and proc.stdout == ""


def test_a_name_typed_as_an_invalid_byte_is_one_message(tmp_path):
    typed = b"1\n\xff\n1\n1\n\n\n1\n1\n1\n1\nnone\nn\n"
    target = tmp_path / "new.json"
    proc = run_qkvcalc("new", str(target), input=typed, timeout=HANG_GUARD)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "not UTF-8" in proc.stderr.splitlines()[-1]
    assert not target.exists()


def test_a_stage_with_a_block_after_its_id_names_the_id_alone():
    """'running_max@b99' said "no stage 'running_max@b99'" and then listed running_max."""
    proc = _proc("explain", "--preset", "doc", "--tiles", "1", "--stages", "running_max@b99")
    assert_one_clean_message(proc, "by its id alone, running_max")
    assert "its stages are" not in proc.stderr


@pytest.mark.parametrize("endless", [["cat", "/dev/zero"], ["yes"], ["yes", " "]])
def test_an_endless_stdin_with_a_raised_max_bytes_is_refused_at_its_first_bytes(endless):
    """With --max-bytes 10¹², stdin from /dev/zero grew until memory ran out: bytes that can
    start no problem are refused after the first megabyte."""
    feed = subprocess.Popen(endless, stdout=subprocess.PIPE)
    try:
        proc = run_qkvcalc(
            "explain", "--max-bytes", "1000000000000", stdin=feed.stdout,
            timeout=HANG_GUARD, preexec_fn=cap_memory,
        )  # fmt: skip
    finally:
        feed.stdout.close()
        feed.kill()
        feed.wait()
    assert_one_clean_message(proc, "a problem is a JSON object")


def test_a_problem_of_more_than_a_megabyte_on_stdin_is_still_read(tmp_path):
    rows = [[(i * j) % 7 - 3 for j in range(64)] for i in range(600)]
    doc = {"x": rows, "wq": [[1] * 4] * 64, "wk": [[1] * 4] * 64, "wv": [[1] * 4] * 64}
    text = "\n" * 10 + json.dumps(doc, indent=40)
    assert len(text) > 1 << 20
    proc = _proc("explain", "--format", "json", "--detail", "brief", input=text)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_tiles_of_one_key_on_2000_tokens_is_decided_from_the_sizes(tmp_path):
    """--tiles 1 on 2,000 keys made 2,000 blocks, 14,000 stages, and took half a minute to
    write: refused at once with the smallest block size that fits."""
    rows = [[(i % 5) - 2, (i % 3) - 1] for i in range(2000)]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(_doc(x=rows, tiles=1)))
    proc = _proc("explain", str(path), "--format", "json")
    assert_one_clean_message(proc, "2000 blocks")
    assert "tiles = 8 or more" in proc.stderr
    fits = _proc("explain", str(path), "--tiles", "8", "--format", "json", "--detail", "brief")
    assert fits.returncode == 0, fits.stderr[-2000:]


def test_an_npy_claiming_10_200_by_10_200_is_one_message_without_a_warning(tmp_path):
    """The claimed size was counted in float64: inf, with numpy's RuntimeWarning, then int(inf)
    raised OverflowError."""
    big = 10**200
    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({big}, {big}), }}"
    header = header.ljust(-(-(len(header) + 11) // 64) * 64 - 11) + "\n"
    path = tmp_path / "huge.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
    assert_one_clean_message(_proc("explain", "--preset", "doc", "--x", str(path)), "claims")
