"""`explain --step` (the hand-written pager) against `qkvcalc studio` (Textual), measured for the
decision of issue 40, item 5 (docs/cli.md, "--step and the studio"):

    .venv/bin/python benchmarks/step_vs_studio.py            # 7 runs of each, medians
    .venv/bin/python benchmarks/step_vs_studio.py --runs 15

Each run starts the command on a pseudo-terminal of 100×50 (pexpect, as the tests do), waits
for its first screen (the doc preset: --step's "the problem — 10 stages follow", the studio's
"stage 1 of 10"), then quits (q; Ctrl+Q) and waits for the exit: the seconds to the first
screen, and to the end. Then what each does with a problem piped in (`cat doc.json | …`, the
keys still from the terminal), and what stays on the terminal after it ends. The load average
is printed: a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "QKVCALC_LANG": "en", "TERM": "xterm-256color"}
DOC = ROOT / "presets" / "doc.json"
PY = sys.executable

STEP = (f"{PY} -m qkvcalc explain --preset doc --step", "the problem — 10 stages follow", "q")
STUDIO = (f"{PY} -m qkvcalc studio --preset doc", "stage 1 of 10", "\x11")  # Ctrl+Q


def run(command: str, marker: str, quit_key: str) -> tuple[float, float, str, int | None]:
    """(seconds to the first screen, seconds to the exit, what the terminal showed, exit)."""
    import pexpect

    start = time.perf_counter()
    child = pexpect.spawn(
        "bash", ["-c", command], env=ENV, encoding="utf-8", timeout=60, dimensions=(50, 100)
    )
    child.expect_exact(marker)
    first = time.perf_counter() - start
    time.sleep(0.3)  # the screen settles before the key
    child.send(quit_key)
    child.expect(pexpect.EOF)
    end = time.perf_counter() - start
    seen = (child.before or "") + (child.after if isinstance(child.after, str) else "")
    child.close()
    return first, end, seen, child.exitstatus


def piped(command: str) -> tuple[int | None, str]:
    """The command with the doc problem on standard input (`cat doc.json | …`): its exit status
    and the last of what it wrote, after q / Ctrl+Q (keys still come from the terminal)."""
    import pexpect

    child = pexpect.spawn(
        "bash",
        ["-c", f"cat {DOC} | {command}"],
        env=ENV,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 100),
    )
    seen = ""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and child.isalive():
        try:
            seen += child.read_nonblocking(65536, timeout=1)
        except pexpect.TIMEOUT:
            if seen:
                break
        except pexpect.EOF:
            break
    if child.isalive():
        child.send("q")
        child.sendcontrol("q")
        child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, " ".join(seen.split())[-160:]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of "
        f"{args.runs}; seconds"
    )
    print(f"{'':28} {'first screen':>12} {'min':>6} {'to exit':>8}")
    for name, case in (("explain --step (pager)", STEP), ("studio (Textual)", STUDIO)):
        firsts, ends = [], []
        for _ in range(args.runs):
            first, end, _, status = run(*case)
            assert status == 0, (name, status)
            firsts.append(first)
            ends.append(end)
        print(
            f"{name:28} {statistics.median(firsts):12.2f} {min(firsts):6.2f}"
            f" {statistics.median(ends):8.2f}"
        )
    print()
    step_status, step_seen = piped(f"{PY} -m qkvcalc explain --step")
    print(f"cat doc.json | explain --step: exit {step_status}; ends with: {step_seen!r}")
    studio_status, studio_seen = piped(f"{PY} -m qkvcalc studio -")
    print(f"cat doc.json | studio -:       exit {studio_status}; ends with: {studio_seen!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
