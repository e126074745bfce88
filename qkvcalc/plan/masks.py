"""Which keys each query may attend to: the causal mask by positions (narrowed by a feature),
a 0/1 mask given, and the padding of keys, as one [n, m] boolean matrix (True = may attend)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from qkvcalc.ops import features

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem


def allowed_keys(p: Problem) -> np.ndarray | None:
    """[n, m] bool, True where query i may attend to key j; None when nothing is masked: the
    keys allowed by position, the mask and the padding (`given_keys`), then those a feature
    keeps of them, chosen from the numbers (a sparse attention's top-k)."""
    allowed = given_keys(p)
    for feature, value in features.active(p):
        if feature.select is not None:
            allowed = feature.select(p, value, allowed)
    return allowed


def given_keys(p: Problem) -> np.ndarray | None:
    """[n, m] bool, True where query i may attend to key j by the mask given (before a feature
    selects); None when nothing is masked.

    Causal: key j is allowed iff its position is at most the query's (with the default
    positions, lower-triangular aligned top-left, as is_causal=True), and a feature may narrow
    it further (by the distance pos_i − pos_j, or by the positions themselves)."""
    allowed = None
    v = p.variants
    if p.mask_kind == "causal":
        # [n, 1] vs [1, m] -> [n, m]
        distance = v.positions[:, None] - v.key_positions[None, :]
        allowed = distance >= 0
        for feature, value in features.active(p):
            if feature.causal is not None:
                allowed &= feature.causal(value, distance, v.positions, v.key_positions)
    elif p.mask is not None:
        allowed = p.mask.copy()
    if p.key_padding is not None:  # [m] -> broadcast over every query row
        allowed = (
            np.broadcast_to(p.key_padding, (p.n, p.m)).copy()
            if allowed is None
            else (allowed & p.key_padding)
        )
    return allowed
