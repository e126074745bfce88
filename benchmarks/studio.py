"""qkvcalc studio: from a keystroke to updated tables, with Textual's Pilot on a headless screen.

    .venv/bin/python benchmarks/studio.py            # doc, and 16 tokens × d_model 64 × 2 heads
    .venv/bin/python benchmarks/studio.py --runs 21  # more edits per case (medians are shown)

Each edit types a new number into X[1,1] and presses Enter; the time runs from the key until
the app is idle again (Pilot.pause: every message handled and the screen drawn, so every table
holds the new numbers), which is what a student waits for. Its floor, measured in the same run,
is a key that changes nothing (End in the same box): what Pilot and a redraw of the screen cost
whatever the key. The studio's own time is the difference; beside it, the recomputation alone
(the problem read and run, every stage's table formatted from scratch). Targets, for the
studio's own time: 50 ms for the doc example, 250 ms for 16 × 64 × 2 heads. The machine's load
average is printed: on a shared machine every figure grows with it. The exit status is 0 when
both targets are met.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qkvcalc.input import presets
from qkvcalc.studio import Studio
from qkvcalc.studio.session import compute, stage_tables


def big_problem() -> dict:
    """16 tokens, d_model 64, two heads of d_k 32, W_O: small integers from a fixed seed."""
    rng = np.random.default_rng(0)
    d = 64
    doc = {"x": rng.integers(-3, 4, (16, d)).tolist(), "heads": 2}
    for key in ("wq", "wk", "wv", "wo"):
        doc[key] = (rng.integers(-2, 3, (d, d)) / 4).tolist()
    return doc


async def keystrokes(doc: dict, runs: int) -> tuple[list[float], list[float]]:
    """The seconds of each edit (a number and Enter) and of each key that changes nothing."""
    app = Studio(doc)
    edits, floors = [], []
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        box = app.query_one("#in-x-1-1")
        box.focus()
        await pilot.pause()
        for k in range(runs):
            start = time.perf_counter()
            await pilot.press("end")
            await pilot.pause()
            floors.append(time.perf_counter() - start)
            box.value = str(k % 3 + 2)
            start = time.perf_counter()
            await pilot.press("enter")
            await pilot.pause()
            edits.append(time.perf_counter() - start)
    return edits, floors


def recompute(doc: dict, runs: int) -> list[float]:
    app_opts = Studio(doc).session.opts
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        stage_tables(compute(doc), app_opts)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    cases = [
        ("doc preset (1 token, d_model 2)", presets.load("doc"), 0.050),
        ("16 tokens × d_model 64 × 2 heads", big_problem(), 0.250),
    ]
    met = True
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; medians of {args.runs}"
    )
    print(
        f"{'case':34} {'key → tables':>13} {'floor':>9} {'own':>9} {'recompute':>10} {'target':>7}"
    )
    for name, doc, target in cases:
        edits, floors = asyncio.run(keystrokes(doc, args.runs))
        key, floor = statistics.median(edits), statistics.median(floors)
        own = statistics.median(e - f for e, f in zip(edits, floors, strict=True))
        work = statistics.median(recompute(doc, args.runs))
        ok = own <= target
        met &= ok
        print(
            f"{name:34} {key * 1000:10.1f} ms {floor * 1000:6.1f} ms {own * 1000:6.1f} ms"
            f" {work * 1000:7.1f} ms {target * 1000:4.0f} ms  {'ok' if ok else 'MISSED'}"
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
