"""A plain numpy attention pipeline made of named steps, so that a mistake can be put into one
step (each op's `in_code`, gathered by qkvcalc.check.mutants) and the rest run as it should.

Its stages are keyed as a person's stage dict is: the stage id for one head ("weights"), the id
and the head for several ("weights@h2"), then "concat" and "output". tests/test_check.py holds
it equal to qkvcalc.explain's trace on every kind of problem `check` tries, stage by stage: it
is the same attention, written as steps to be swapped, not a second definition of it.

A problem here is a plain dict of the input format's fields: either `q`, `k`, `v` or `x`,
`wq`, `wk`, `wv` (with optional `wo`, `bq`, `bk`, `bv`, `bo`, `heads`, `kv_heads`), and
optional `mask` ("causal" or a boolean n×m matrix, True = may attend) and `scale`, and
optional `rope`: {"theta": θ, "style": "half" | "pairs", "dims": R (d_k when left out),
"inv_freq": [R/2 numbers] (θ^(−2t/R) when left out), "attention_factor": f (1 when left out)}
with optional `positions` and `key_positions` (each query's and key's position; 0, 1, 2 … when
left out), which turns each head's q and k (stages `q_rot`, `k_rot`) before Q·Kᵀ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from qkvcalc.ops.mask import same_shape
from qkvcalc.plan import ids
from qkvcalc.records import NamedTuple

Stages = dict[str, np.ndarray]
WEIGHTS = ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")


def key(stage_id: str, head: int | None) -> str:
    """How a stage is named in a stage dict: "weights", or "weights@h2" for head 2."""
    return stage_id if head is None else f"{stage_id}@h{head}"


def _project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    return x @ w if b is None else x @ w + b  # [n, d_in] @ [d_in, d_out] -> [n, d_out]


def _split(m: np.ndarray, h: int, parts: int) -> np.ndarray:
    width = m.shape[1] // parts
    return m[:, h * width : (h + 1) * width]  # head h (0-based) takes the h-th slice of columns


def _kv_head(h: int, heads: int, kv_heads: int) -> int:
    return h // (heads // kv_heads)  # consecutive query heads share one K/V head


def _factor(given: float | None, d_k: int) -> float:
    return 1 / math.sqrt(d_k) if given is None else given


def _allowed(mask: Any, n: int, m: int) -> np.ndarray | None:
    if mask is None:
        return None
    if isinstance(mask, str):  # "causal": lower-triangular, aligned top-left
        return np.tril(np.ones((n, m), dtype=bool))
    return np.asarray(mask, dtype=bool)


def _mask(s: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    return np.where(same_shape(s, allowed), s, -np.inf)


def _pairs(style: str, dims: int) -> tuple[list[int], list[int]]:
    """Which dimensions turn together: pair t is (t, t + R/2) for "half" (rotate_half) or
    (2t, 2t + 1) for "pairs"; the first list holds each pair's a, the second its b."""
    half = dims // 2
    if style == "half":
        return [t for t in range(half)], [t + half for t in range(half)]
    return [2 * t for t in range(half)], [2 * t + 1 for t in range(half)]


def _rotate(
    x: np.ndarray,
    positions: np.ndarray,
    rope: dict[str, Any],
    pairs: Callable[[str, int], tuple[list[int], list[int]]],
) -> np.ndarray:
    """RoPE written out pair by pair: pair t of the first R dimensions, as `pairs` takes them,
    turned by the angle position × inv_freq[t]."""
    # [n, d_k], [n] -> [n, d_k]
    dims = int(rope["dims"]) if "dims" in rope else x.shape[1]
    f = float(rope.get("attention_factor", 1))
    inv_freq = rope.get("inv_freq") or [rope["theta"] ** (-2 * t / dims) for t in range(dims // 2)]
    first, second = pairs(rope["style"], dims)
    out = np.array(x, dtype=np.float64)
    for i, position in enumerate(positions):
        for t, freq in enumerate(inv_freq):
            a, b = first[t], second[t]
            angle = float(position) * float(freq)
            c, s = math.cos(angle), math.sin(angle)
            out[i, a] = f * (x[i, a] * c - x[i, b] * s)
            out[i, b] = f * (x[i, b] * c + x[i, a] * s)
    return out


def _exp(s: np.ndarray) -> np.ndarray:
    top = np.max(s, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a fully masked row: e^(−∞) = 0 everywhere
    return np.exp(s - top)


def _normalise(e: np.ndarray) -> np.ndarray:
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)  # a masked row: 0


def _apply(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    return w @ v  # [n, m] @ [m, d_v] -> [n, d_v]


def _concat(outputs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(outputs, axis=1)


class Steps(NamedTuple):
    """The pipeline's steps; a mutant is these with one replaced."""

    project: Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray] = _project
    split: Callable[[np.ndarray, int, int], np.ndarray] = _split
    kv_head: Callable[[int, int, int], int] = _kv_head
    pairs: Callable[[str, int], tuple[list[int], list[int]]] = _pairs
    kt: Callable[[np.ndarray], np.ndarray] = np.transpose
    scores: Callable[[np.ndarray, np.ndarray], np.ndarray] = np.matmul
    factor: Callable[[float | None, int], float] = _factor
    scale: Callable[[np.ndarray, float], np.ndarray] = np.multiply
    allowed: Callable[[Any, int, int], np.ndarray | None] = _allowed
    mask: Callable[[np.ndarray, np.ndarray], np.ndarray] = _mask
    exp: Callable[[np.ndarray], np.ndarray] = _exp
    normalise: Callable[[np.ndarray], np.ndarray] = _normalise
    # after the softmax: the weights as they are (a mutant scales or masks them here)
    after: Callable[[np.ndarray, float, np.ndarray | None], np.ndarray] = lambda w, f, a: w
    apply: Callable[[np.ndarray, np.ndarray], np.ndarray] = _apply
    concat: Callable[[list[np.ndarray]], np.ndarray] = _concat
    # the concatenated heads to the output: · W_O (+ b_O) with the step `project`, when given
    finish: Callable[..., np.ndarray] = lambda c, wo, bo, project: (
        c if wo is None else project(c, wo, bo)
    )


RIGHT = Steps()


def _head(steps: Steps, q: np.ndarray, k: np.ndarray, v: np.ndarray, p: dict[str, Any]) -> Stages:
    """One head: [n, d_k], [m, d_k], [m, d_v] -> its stages, up to its output [n, d_v]."""
    out: Stages = {"q": q, "k": k, "v": v}
    rope = p.get("rope")
    if rope is not None:
        positions = p.get("positions", range(q.shape[0]))
        key_positions = p.get("key_positions", range(k.shape[0]))
        out["q_rot"] = q = _rotate(q, np.asarray(positions), rope, steps.pairs)
        out["k_rot"] = k = _rotate(k, np.asarray(key_positions), rope, steps.pairs)
    out["kt"] = steps.kt(k)
    out["scores"] = steps.scores(q, out["kt"])
    factor = steps.factor(p.get("scale"), q.shape[1])
    out["scaled"] = s = steps.scale(out["scores"], factor)
    allowed = steps.allowed(p.get("mask"), q.shape[0], k.shape[0])
    if allowed is not None:
        out["masked"] = s = steps.mask(s, allowed)
    out["exp"] = steps.exp(s)
    out["weights"] = steps.after(steps.normalise(out["exp"]), factor, allowed)
    out["output"] = steps.apply(out["weights"], v)
    return out


def run(p: dict[str, Any], steps: Steps = RIGHT) -> Stages:
    """Every stage of problem `p`, computed with `steps`."""
    with np.errstate(all="ignore"):
        if "q" in p:
            q, k, v = (np.asarray(p[name], dtype=np.float64) for name in ("q", "k", "v"))
            return _head(steps, q, k, v, p)
        return _projected(p, steps)


def _projected(p: dict[str, Any], steps: Steps) -> Stages:
    x = np.asarray(p["x"], dtype=np.float64)
    arrays = {n: np.asarray(p[n], dtype=np.float64) for n in WEIGHTS if p.get(n) is not None}
    heads = int(p.get("heads") or 1)
    groups = int(p.get("kv_heads") or heads)
    whole = {name: steps.project(x, arrays["w" + name], arrays.get("b" + name)) for name in "qkv"}
    if heads == 1 and arrays.get("wo") is None:
        return _head(steps, whole["q"], whole["k"], whole["v"], p)
    stages: Stages = {}
    outputs = []
    for h in range(heads):
        g = steps.kv_head(h, heads, groups)
        q = steps.split(whole["q"], h, heads)
        k, v = steps.split(whole["k"], g, groups), steps.split(whole["v"], g, groups)
        one = _head(steps, q, k, v, p)
        stages.update({key(sid, h + 1): value for sid, value in one.items()})
        outputs.append(one["output"])
    stages["concat"] = steps.concat(outputs)
    stages["output"] = steps.finish(
        stages["concat"], arrays.get("wo"), arrays.get("bo"), steps.project
    )
    return stages


def weights(stages: Stages) -> np.ndarray:
    """The attention weights: [n, m] for one head, [H, n, m] for several."""
    if ids.WEIGHTS in stages:
        return stages["weights"]
    heads = sorted(int(k.partition("@h")[2]) for k in stages if k.startswith("weights@h"))
    return np.stack([stages[key("weights", h)] for h in heads])
