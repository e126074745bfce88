"""How long `qkvcalc check` takes on a right function: the issue's budget is under 5 s for the
default problems (40: the planned ones, then random ones), the whole command in a fresh process.

    .venv/bin/python benchmarks/check.py            # 3 runs of each case, medians shown
    .venv/bin/python benchmarks/check.py --runs 7

The cases: a numpy function of q, k, v (mask, causal, scale), a numpy multi-head function of x
and the weights (heads, grouped-query, W_O, biases), and, when torch is installed, PyTorch's
scaled_dot_product_attention, whose child must import torch: a floor, `python -c "import
torch"`, is timed in the same rounds and the budget is for the time beyond it. Exit 0 when
every median is under the budget.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "check"
BUDGET = 5.0
CASES = [
    ("numpy q, k, v", "right_qkv.py:attention"),
    ("numpy x, heads, GQA, W_O", "right_heads.py:attention"),
    ("torch sdpa", "right_torch.py:attention"),
]


def _timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{command}: exit {done.returncode}\n{done.stderr.decode()[-500:]}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = True
    print(f"{'case':28} {'median':>8} {'floor':>8}  budget {BUDGET:g} s beyond the floor")
    for name, target in CASES:
        torch = "torch" in name
        if torch and importlib.util.find_spec("torch") is None:
            print(f"{name:28} {'skipped':>8}  (torch is not installed)")
            continue
        times, floors = [], []
        for _ in range(args.runs):
            check = [sys.executable, "-m", "qkvcalc", "check", str(DATA / target), "-f", "json"]
            times.append(_timed(check, env))
            floors.append(_timed([sys.executable, "-c", "import torch"], env) if torch else 0.0)
        median, floor = statistics.median(times), statistics.median(floors)
        within = median - floor < BUDGET
        ok &= within
        print(f"{name:28} {median:7.2f}s {floor:7.2f}s  {'ok' if within else 'OVER'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
