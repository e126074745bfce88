"""Fresh problems for practice: small integers from a seed, so a quiz can be done by hand and
done again (`qkvcalc quiz --random --seed 7 --size 3,2` is the same problem every time)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError

MAX_SIZE = 8  # tokens and width: beyond this nobody works it out by hand
MAX_SEED = 2**32


def parse_size(text: str) -> tuple[int, int]:
    """'3,2' (or '3x2', '3 2') -> 3 tokens of width 2."""
    match = re.fullmatch(r"\s*(\d+)\s*[,x× ]\s*(\d+)\s*", text)
    n, d = (int(g) for g in match.groups()) if match else (0, 0)
    if not (1 <= n <= MAX_SIZE and 1 <= d <= MAX_SIZE):
        raise QkvcalcError("quiz.size", text=text, limit=MAX_SIZE)
    return n, d


def new_seed() -> int:
    """A seed for a problem nobody asked for by number (shown, so it can be done again)."""
    return int(np.random.default_rng().integers(0, 10_000))


def random_problem(seed: int, n: int, d: int) -> dict[str, Any]:
    """A problem of the input format: n tokens, d_model = d_k = d_v = d, one head, no mask.

    X takes entries in {-1, 0, 1, 2} and the weights in {-1, 0, 1}: every product is a short
    sum of small integers, and the scores stay small enough that softmax is not all 0 and 1.
    """
    if not 0 <= seed < MAX_SEED:
        raise QkvcalcError("quiz.seed", seed=seed, limit=MAX_SEED - 1)
    rng = np.random.default_rng(seed)
    x = rng.integers(-1, 3, size=(n, d))
    wq, wk, wv = (rng.integers(-1, 2, size=(d, d)) for _ in range(3))
    return {
        "tokens": [f"t{i + 1}" for i in range(n)],
        "x": x.tolist(),
        "wq": wq.tolist(),
        "wk": wk.tolist(),
        "wv": wv.tolist(),
        "mask": "none",
    }
