"""The largest difference between two computations of the same values, as a note says it: the
reference runs, the tiles, decoding and the linear layers' chunked forms all report one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qkvcalc.i18n import Msg

ROUNDING = 1e-12  # relative to the values' size: a difference below it is rounding alone


def gap(a: np.ndarray | Sequence[np.ndarray], b: np.ndarray | Sequence[np.ndarray]) -> Msg | str:
    """The largest difference between two computations of the same values, as a note says it:
    a difference of rounding alone as the bound it is under ("below 1e-12"), the same on every
    machine (the last bits of a sum depend on its order, and so on the BLAS library); a larger
    one as its value, 2 significant digits."""
    pairs: list[tuple[np.ndarray, np.ndarray]] = (
        list(zip(a, b, strict=True))
        if isinstance(a, list | tuple) and isinstance(b, list | tuple)
        else [(np.asarray(a), np.asarray(b))]
    )
    most = max(float(np.max(np.abs(x - y), initial=0.0)) for x, y in pairs)
    size = max(max(float(np.max(np.abs(x), initial=0.0)) for x, _ in pairs), 1.0)
    if most <= ROUNDING * size:
        return Msg("ui.gap_rounding", bound=f"{ROUNDING:.0e}")
    return f"{most:.1e}"
