"""The named mistakes of `qkvcalc check`, each as the right pipeline with that one mistake put in:
a table of small functions, one per stable mistake id, each taking the reference pipeline's
steps (qkvcalc.check.reference.Steps) and returning them with one step replaced.

A mutant that cannot run on a problem (Q·K where d_k ≠ m) raises there, never broadcasts, and
says nothing about that problem: a person's einsum may broadcast where a matmul raises.
`nondeterministic` is not a mutant: it is found by calling the function twice.

(These belong, in time, with the quiz's named mistakes in each op's own module, qkvcalc/ops/;
they are kept here meanwhile, written over the plain steps.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from qkvcalc.check.reference import RIGHT, Stages, Steps, run, same_shape

_allowed = RIGHT.allowed


def _column_exp(s: np.ndarray) -> np.ndarray:
    top = np.max(s, axis=0, keepdims=True)
    return np.exp(s - np.where(np.isfinite(top), top, 0.0))


def _column_normalise(e: np.ndarray) -> np.ndarray:
    total = e.sum(axis=0, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _causal(tri: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any, int, int], Any]:
    """A causal mask built with `tri` instead of the lower triangle; a matrix mask as it is."""

    def allowed(mask: Any, n: int, m: int) -> Any:
        if isinstance(mask, str):
            return tri(np.ones((n, m), dtype=bool))
        return _allowed(mask, n, m)

    return allowed


def _inverted(mask: Any, n: int, m: int) -> Any:
    allowed = _allowed(mask, n, m)
    return None if allowed is None else ~allowed


def _interleaved(outputs: list[np.ndarray]) -> np.ndarray:
    return np.stack(outputs, axis=2).reshape(outputs[0].shape[0], -1)  # column j·H + h


MUTANTS: dict[str, Callable[[Steps], Steps]] = {
    # softmax down each column (dim=0) instead of along each row
    "softmax_axis": lambda s: s._replace(exp=_column_exp, normalise=_column_normalise),
    # Q·Kᵀ not scaled at all
    "no_scale": lambda s: s._replace(factor=lambda given, d_k: 1.0),
    # divided by d_k instead of √d_k
    "scale_dk": lambda s: s._replace(factor=lambda given, d_k: 1 / d_k if given is None else given),
    # the factor applied twice
    "scale_twice": lambda s: s._replace(scale=lambda x, f: x * f * f),
    # the weights multiplied by the factor, after a softmax of the unscaled scores
    "scale_after_softmax": lambda s: s._replace(
        scale=lambda x, f: x, after=lambda w, f, allowed: w * f
    ),
    # Q·K: K used as it is, not turned (it runs only when d_k = m)
    "kt_missing": lambda s: s._replace(kt=lambda k: k),
    # K·Qᵀ: the scores turned on their side (n = m)
    "scores_transposed": lambda s: s._replace(scores=lambda q, kt: (q @ kt).T),
    # Aᵀ·V instead of A·V (n = m)
    "weights_transposed": lambda s: s._replace(apply=lambda w, v: w.T @ v),
    # the mask left out
    "mask_ignored": lambda s: s._replace(allowed=lambda mask, n, m: None),
    # True read as "blocked"
    "mask_inverted": lambda s: s._replace(allowed=_inverted),
    # a causal mask that hides the diagonal too: a token may not see itself
    "causal_diagonal": lambda s: s._replace(allowed=_causal(lambda a: np.tril(a, -1))),
    # a causal mask turned to the future (the upper triangle)
    "causal_transposed": lambda s: s._replace(allowed=_causal(np.triu)),
    # softmax of the unmasked scores, then the masked weights set to 0 (rows no longer sum to 1)
    "mask_after_softmax": lambda s: s._replace(
        mask=lambda x, allowed: x,
        after=lambda w, f, allowed: w if allowed is None else w * same_shape(w, allowed),
    ),
    # a fully masked row: 0/0 = NaN
    "masked_row_nan": lambda s: s._replace(normalise=lambda e: e / e.sum(axis=1, keepdims=True)),
    # a finite fill (finfo.min): a fully masked row gets equal weights
    "masked_row_uniform": lambda s: s._replace(
        mask=lambda x, allowed: np.where(same_shape(x, allowed), x, np.finfo(np.float64).min)
    ),
    # e^s without subtracting the row maximum: large scores overflow to inf/inf = NaN
    "no_max_shift": lambda s: s._replace(exp=np.exp),
    # head h takes every H-th column (h, h + H, …) instead of the h-th slice
    "heads_split": lambda s: s._replace(split=lambda x, h, parts: x[:, h::parts]),
    # the heads' outputs interleaved column by column instead of laid side by side
    "heads_concat": lambda s: s._replace(concat=_interleaved),
    # K/V heads repeated as a whole (tile) instead of each in turn (repeat_interleave)
    "gqa_repeat": lambda s: s._replace(kv_head=lambda h, heads, groups: h % groups),
    # RoPE's pairs taken the other way: (2t, 2t + 1) where the model rotates (t, t + R/2)
    # (rotate_half), or the reverse (d_k ≥ 4: with one pair the two are the same)
    "rope_pairs": lambda s: s._replace(
        rotate=lambda x, positions, rope: RIGHT.rotate(
            x, positions, {**rope, "style": "pairs" if rope["style"] == "half" else "half"}
        )
    ),
    # X·Wᵀ: the weights read as PyTorch stores them (out×in)
    "layout_transposed": lambda s: s._replace(
        project=lambda x, w, b: x @ w.T if b is None else x @ w.T + b
    ),
    # the biases left out
    "bias_missing": lambda s: s._replace(project=lambda x, w, b: x @ w),
    # W_O left out: the output is the concatenated heads
    "wo_missing": lambda s: s._replace(finish=lambda c, wo, bo, project: c),
}

MISTAKE_IDS = (*MUTANTS, "nondeterministic")


def mutant(mistake: str, problem: dict[str, Any]) -> Stages | None:
    """The stages of `problem` with `mistake` put in; None where that cannot run."""
    try:
        return run(problem, MUTANTS[mistake](RIGHT))
    except (ValueError, IndexError):
        return None
