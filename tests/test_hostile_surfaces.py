"""Hostile input on the surfaces added since the first corpora (issue 41's fourth corpus and
the residue of rounds two and three): the backward and its tiles, `train`, .npz members,
checkpoints, the writers. Every case goes through the real program (a process of its own
where its exit code, streams, memory or signals are what is tested) and ends in one message,
exit 2 (130 for Ctrl-C), nothing on stdout, nothing left behind.

The small corpus of typed command lines is in tests/data/bad/ (test_hostile.py runs it); what
needs a file made at run time, a FIFO, a pipe or a signal is here.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import PINNED_ENV, ROOT, run_qkvcalc
from tests.test_hostile import HANG_GUARD, assert_one_clean_message, cap_memory


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _run(*args: str, **kw):
    return run_qkvcalc(*args, timeout=HANG_GUARD, preexec_fn=cap_memory, **kw)


# ---- the tiled backward ------------------------------------------------------------------


def _far_target(tmp_path: Path) -> Path:
    """Query 1's target key scores 2000/√2 below its other key: its weight underflows to 0."""
    doc = {
        "x": [[1, 0], [0, 1]],
        "wq": [[2000, 0], [0, 2000]],
        "wk": [[1, 0], [0, 1]],
        "wv": [[1, 0], [0, 1]],
        "attend": [2, 1],
    }
    return _write(tmp_path / "far.json", doc)


def _huge_sink(tmp_path: Path) -> Path:
    """A sink of 10⁶: every key's weight underflows beside it."""
    doc = {
        "x": [[1, 0], [0, 1], [1, 1]],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 0], [0, 1]],
        "wv": [[1, 0], [0, 1]],
        "sinks": [1e6],
        "attend": [1, 2, 1],
    }
    return _write(tmp_path / "sink.json", doc)


@pytest.mark.parametrize("make", [_far_target, _huge_sink], ids=["underflow", "sink"])
@pytest.mark.parametrize("tiles", ["1", "2"])
def test_a_tiled_backward_whose_target_weight_underflows_is_the_plain_ones_message(
    tmp_path, make, tiles
):
    """−log A at a weight that underflows to 0: dA = −1/A has no double, so the plain backward
    refuses it as an overflow; the tiled one (D = A·(−1/A)) ended in ZeroDivisionError."""
    path = make(tmp_path)
    plain = _run("explain", str(path), "--backward", "--format", "json")
    assert_one_clean_message(plain, "overflow float64")
    tiled = _run("explain", str(path), "--backward", "--tiles", tiles, "--format", "json")
    assert_one_clean_message(tiled, "overflow float64 at D = A[i, tᵢ]")


# ---- where the output goes -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["missing/trained.json", ".", "/dev/full"])
def test_train_output_that_cannot_be_written_is_said_before_anything_is_printed(tmp_path, where):
    """A folder missing or a directory is refused before the descent; /dev/full is written
    before the training is printed. Each printed the whole training to stdout first."""
    target = where if where.startswith("/") else str(tmp_path / where)
    proc = _run("train", "--preset", "learn", "--steps", "3", "--output", target)
    assert_one_clean_message(proc, "cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file left


@pytest.mark.parametrize(
    "command", [["explain", "--preset", "doc"], ["train", "--preset", "learn", "--steps", "2"]]
)
@pytest.mark.parametrize("device", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_output_onto_dev_stdout_into_a_pipe_is_what_stdout_gets(command, device):
    """`--output /dev/stdout | …` ended in "No such file or directory": the link leads to
    "pipe:[…]", no path. The descriptor itself is written now, as the shell set it up."""
    plain = _run(*command, "--format", "json")
    assert plain.returncode == 0, plain.stderr
    proc = _run(*command, "--format", "json", "--output", device)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == plain.stdout and proc.stdout.startswith("{")


def test_output_onto_dev_stdout_appended_to_a_file_keeps_what_it_held(tmp_path):
    """`>> file`: the text goes after what the file held, as the shell opened it (a file
    replaced through /dev/stdout's link would lose it)."""
    path = tmp_path / "log.txt"
    path.write_text("before\n")
    with path.open("a") as out:
        argv = [sys.executable, "-m", "qkvcalc", "explain", "--preset", "doc", "-f", "txt"]
        subprocess.run(
            [*argv, "-o", "/dev/stdout"],
            stdout=out,
            check=True,
            cwd=ROOT,
            env={**os.environ, **PINNED_ENV},
            timeout=HANG_GUARD,
        )
    alone = _run("explain", "--preset", "doc", "-f", "txt")
    assert path.read_text() == "before\n" + alone.stdout


# ---- .npz members that lie -----------------------------------------------------------------

_PEAK = """
import resource, subprocess, sys
proc = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.buffer.write(proc.stdout)
sys.stderr.buffer.write(proc.stderr)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(proc.returncode)
"""


def run_measured(*args: str) -> tuple[subprocess.CompletedProcess, int]:
    """`python -m qkvcalc ARGS` as the only child of a fresh process, which reports the most
    memory it ever held (its peak resident size, in kB): bounded memory, measured, not timed."""
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, sys.executable, "-m", "qkvcalc", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **PINNED_ENV},
        cwd=ROOT,
        timeout=HANG_GUARD * 3,
    )
    *message, peak = proc.stderr.splitlines(keepends=True)
    result = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout, "".join(message))
    return result, int(peak)


def _npy_header(count: int) -> bytes:
    import io

    buffer = io.BytesIO()
    header = {"descr": "<f8", "fortran_order": False, "shape": (count,)}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


def lying_npz(path: Path, inflated: int, claimed: int, method: int = 8) -> Path:
    """An archive of one member, x.npy: a header, then `inflated` bytes of zeros, deflated
    (method 8) or bzip2'd (12); its zip headers claim `claimed` bytes."""
    import bz2
    import struct
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, -15) if method == 8 else bz2.BZ2Compressor(9)
    head = _npy_header(inflated // 8)
    parts, crc, left, zeros = [packer.compress(head)], zlib.crc32(head), inflated, bytes(1 << 24)
    while left > 0:
        piece = zeros[: min(left, len(zeros))]
        parts.append(packer.compress(piece))
        crc, left = zlib.crc32(piece, crc), left - len(piece)
    data = b"".join([*parts, packer.flush()])
    name, sizes = b"x.npy", (crc, len(data), claimed, 5)
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, method, 0, 0, *sizes, 0) + name
    central = (
        struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, method, 0, 0, *sizes, 0, 0, 0, 0, 0, 0)
        + name
    )
    end = struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(data), 0
    )
    path.write_bytes(local + data + central + end)
    return path


def test_lying_npz_of_a_deflated_300_mb_member_is_refused_in_bounded_memory(tmp_path):
    """The headers claim 1,000 bytes; zipfile's read(-1) asked zlib for up to 2 GB at once and
    held all 300 MB (a 1 GB one: 2 GB). Now inflated a megabyte at a time, against the claim
    and --max-bytes."""
    path = lying_npz(tmp_path / "bomb.npz", 300_000_000, 1000)
    assert path.stat().st_size < 1_000_000
    proc, peak_kb = run_measured("explain", str(path))
    assert peak_kb < 150_000, peak_kb
    assert_one_clean_message(proc, "bomb.npz[x]")


def test_an_npz_member_inflated_past_max_bytes_is_refused_as_it_inflates(tmp_path):
    """What the headers claim counts against --max-bytes before a byte is inflated (the same
    message as a file too large); within the limit, the member is read."""
    path = lying_npz(tmp_path / "big.npz", 50_000_000, 50_000_000)
    proc = _run("explain", str(path), "--max-bytes", "60000000")
    assert proc.returncode == 2 and "larger than" not in proc.stderr  # within the limit: read
    small = _run("explain", str(path), "--max-bytes", "1000000")
    assert_one_clean_message(small, "larger than 1000000 bytes")


def test_a_bzip2_member_is_refused_by_its_method_before_it_inflates(tmp_path):
    """bzip2 inflates a whole read in one call (4 kB of it can be gigabytes); numpy writes
    only stored and deflated members."""
    path = lying_npz(tmp_path / "bz.npz", 100_000_000, 1000, method=12)
    proc, peak_kb = run_measured("explain", str(path))
    assert_one_clean_message(proc, "compressed with bzip2")
    assert peak_kb < 150_000, peak_kb


def test_an_npz_of_200000_members_is_refused_from_its_end_record(tmp_path):
    """The count the archive's (zip64) end record gives, before zipfile lists 200,000
    members (1.3 s and 190 MB): the message names the count and the limit."""
    from tests.test_hostile import _npz

    path = _npz(tmp_path / "many.npz", [(f"m{i}.npy", b"") for i in range(200_000)])
    proc, peak_kb = run_measured("explain", str(path))
    assert_one_clean_message(proc, "holds 200000 members; a problem has at most 100 keys")
    assert peak_kb < 120_000, peak_kb


# ---- checkpoints -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "fifo"),
    [
        ("extract", "model.safetensors.index.json"),
        ("heads", "model.safetensors.index.json"),
        ("extract", "config.json"),
        ("heads", "tokenizer_config.json"),
    ],
)
def test_a_checkpoint_file_that_is_a_fifo_is_named_before_anything_opens_it(
    tmp_path, command, fifo
):
    """A named pipe in a checkpoint folder: opening it waits for a writer that never comes
    (extract and heads hung). Every entry's type is looked at first (stat, nothing opened)."""
    pytest.importorskip("transformers")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    config = {"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2, "vocab_size": 64}
    if fifo != "config.json":
        _write(folder / "config.json", config)
    os.mkfifo(folder / fifo)
    layer = ["--layer", "0"] if command == "extract" else []
    proc = run_qkvcalc(command, str(folder), *layer, "--ids", "1 2 3", timeout=120)
    assert_one_clean_message(proc, f"holds '{fifo}', which is not a file")


# ---- train ----------------------------------------------------------------------------------

MLA = {  # docs/input-format.md's example of multi-head latent attention, with a loss
    "x": [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]],
    "heads": 2,
    "mla": {
        "wq_a": [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
        "q_a_norm": [1, 2, 0.5],
        "wq_b": [[1, 0, 0, 1, 0, 1, 1, 0], [0, 1, 1, 0, 1, 0, 0, 1], [1, 1, 0, 0, 0, 0, 1, 1]],
        "wkv_a": [[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 1]],
        "kv_a_norm": [1, 1],
        "wkv_b": [[1, 0, 1, 0, 1, 1, 0, 1], [0, 1, 0, 1, 1, 0, 1, 0]],
        "rope_dims": 2,
    },
    "rope": {"theta": 100, "dims": 2},
    "mask": "causal",
    "attend": [1, 1, 2],
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_train_on_latent_attention_trains_its_latents_weights(tmp_path, lang):
    """It said "--freeze names every weight the problem has", with no --freeze given; then it
    refused MLA in one message; since 2026-12-07 train steps the latents' weights."""
    path = _write(tmp_path / "mla.json", MLA)
    proc = _run("train", str(path), "--lang", lang, "--steps", "2", "--lr", "0.05")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "W_UK" in proc.stdout and "names every weight" not in proc.stdout


# ---- quiz answer sheets ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cells", "expect"),
    [
        ([[True, False]], "q[1,1] is true/false where a number belongs"),
        ([["a", "b"]], "q[1,1]: 'a' is not a number"),
        ([["\ud800", None]], "q[1,1]: '\\ud800' is not a number"),
    ],
    ids=["booleans", "strings", "surrogate"],
)
def test_an_answer_sheet_without_one_number_is_refused_not_graded(tmp_path, cells, expect):
    """Every answer true/false or words: no answer to grade, so no report of wrong cells
    (exit 1) but one message (exit 2). A typo among numbers is still graded unreadable."""
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"q": cells, "k": [["x", None]]}))
    proc = _run("quiz", "--preset", "doc", "--answers", str(path))
    assert_one_clean_message(proc, expect)
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"q": cells, "k": [[1, None]]}))
    graded = _run("quiz", "--preset", "doc", "--answers", str(mixed))
    assert graded.returncode == 1 and "cannot be read" in graded.stdout


# ---- worksheets ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["txt", "markdown", "html"])
def test_an_exact_worksheet_does_not_print_an_answer_in_a_note(fmt):
    """The doc example's scaled score is 7/√2, and the note on exact surds said "such as
    7/√2 … 7/√2 = 7√2/2" on the worksheet that leaves that cell blank."""
    key = _run("explain", "--preset", "doc", "--exact", "--format", fmt)
    assert "7/√2" in key.stdout or "7/\\sqrt" in key.stdout or "7/&radic;" in key.stdout
    sheet = _run("explain", "--preset", "doc", "--exact", "--worksheet", "--format", fmt)
    assert sheet.returncode == 0, sheet.stderr
    assert "7/√2" not in sheet.stdout and "7√2" not in sheet.stdout


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 0}, "n_head"),
        (
            {
                "model_type": "llama",
                "num_hidden_layers": 1,
                "hidden_size": 8,
                "intermediate_size": 16,
                "num_attention_heads": 2,
                "num_key_value_heads": 0,
            },
            "num_key_value_heads",
        ),
    ],
    ids=["gpt2-n_head", "llama-kv-heads"],
)
def test_a_config_of_zero_heads_names_its_key_as_config_json_writes_it(tmp_path, config, key):
    """GPT-2's 0 heads were refused as "num_attention_heads" (transformers' name for n_head,
    not in the file); 0 key/value heads were not checked at all."""
    pytest.importorskip("transformers")
    folder = tmp_path / "zero"
    folder.mkdir()
    _write(folder / "config.json", {**config, "vocab_size": 64})
    proc = run_qkvcalc("extract", str(folder), "--layer", "0", "--ids", "1 2", timeout=120)
    assert_one_clean_message(proc, f"{key} in its config.json is 0")


@pytest.mark.skipif(
    np.finfo(np.longdouble).max <= np.finfo(np.float64).max,
    reason="this machine's long double is float64: nothing beyond its range",
)
@pytest.mark.parametrize("via", ["npz", "npy"])
def test_a_long_double_beyond_float64_is_refused_by_its_cell_without_a_warning(tmp_path, via):
    """1e4000 as a long double was cast to inf with numpy's "overflow encountered in cast"
    on stderr, then called "inf is not a finite number"."""
    x = np.array([[1, 2], [np.longdouble("1e4000"), 1]], dtype=np.longdouble)
    eye = "1 0; 0 1"
    if via == "npz":
        np.savez(tmp_path / "p.npz", x=x, wq=np.eye(2), wk=np.eye(2), wv=np.eye(2))
        args = [str(tmp_path / "p.npz")]
    else:
        np.save(tmp_path / "x.npy", x)
        args = ["--x", str(tmp_path / "x.npy"), "--wq", eye, "--wk", eye, "--wv", eye]
    proc = _run("explain", *args)
    assert_one_clean_message(proc, "X[2,1]: 1e+4000 is too large")


# ---- Ctrl-C ---------------------------------------------------------------------------------

_LATE_CTRL_C = """
import os, signal, sys
import qkvcalc.cli as cli
run = cli._run
def run_then_ctrl_c():
    code = run()
    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the command ends, its output written
    return code
cli._run = run_then_ctrl_c
sys.argv = ["qkvcalc", *sys.argv[1:]]
from qkvcalc.launch import main
main()
"""


def test_ctrl_c_right_after_a_fast_exact_run_exits_130_without_a_traceback():
    """A Ctrl-C that lands as a fast run ends (--exact on the doc example is over in a tenth
    of a second) was a traceback, or lost in the interpreter's shutdown (exit 0)."""
    proc = subprocess.run(
        [sys.executable, "-c", _LATE_CTRL_C, "explain", "--preset", "doc", "--exact"],
        capture_output=True,
        text=True,
        env={**os.environ, **PINNED_ENV},
        cwd=ROOT,
        timeout=HANG_GUARD,
    )
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    assert proc.stdout == _run("explain", "--preset", "doc", "--exact").stdout


# ---- LaTeX ------------------------------------------------------------------------------------

_NASTY = ["\\", "{", "}", "%", "#", "^", "~", "$", "&", "_", "a\nb", "\\end{document}"]


@pytest.mark.skipif(
    not shutil.which("pdflatex"),
    reason="pdflatex is not installed (Debian: texlive-latex-base texlive-latex-extra lmodern)",
)
@pytest.mark.parametrize("where", ["tokens", "name"])
def test_latex_of_hostile_text_compiles(tmp_path, where):
    """TeX's specials and a newline in the tokens, and in the name and description, with the
    Latin letters T1 fonts lack (ŉ, ħ, ſ …: utf8 input stopped on them), compile and show."""
    x = [[1, 0]] * len(_NASTY)
    doc = {"x": x, "wq": [[1, 0], [0, 1]], "wk": [[1, 0], [0, 1]], "wv": [[1, 0], [0, 1]]}
    lacking = "\u0126\u0127\u0138\u013f\u0140\u0149\u0166\u0167\u017f"
    if where == "tokens":
        doc["tokens"] = [*_NASTY[:-1], lacking]
    else:
        doc |= {"name": "".join(_NASTY), "description": lacking + "".join(_NASTY)}
    _write(tmp_path / "p.json", doc)
    made = _run(
        "explain", str(tmp_path / "p.json"), "--format", "latex", "-o", str(tmp_path / "p.tex")
    )
    assert made.returncode == 0, made.stderr
    proc = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "p.tex"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout.decode("utf-8", "replace")[-1500:]
    assert (tmp_path / "p.pdf").stat().st_size > 0


# ---- big inputs -------------------------------------------------------------------------------


def test_a_wide_x_is_checked_against_w_q_before_its_entries_are_read():
    """`{"x": [[0, … 40 million]], "wq": [[1]] …}` (80 MB) converted all 40 M entries of X
    before W_Q's rows were compared with X's width: 13 s and 700 MB, now 3 s and 500 MB (the
    JSON text and its lists). X's first row gives its width; no entry of it is read."""
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.input.problem import Problem
    from tests.test_hostile import _Unread

    doc = {"x": [_Unread([0] * 200_000)], "wq": [[1]], "wk": [[1]], "wv": [[1]]}
    with pytest.raises(QkvcalcError, match=r"the width of X .* is 200000"):
        Problem.from_mapping(doc)
