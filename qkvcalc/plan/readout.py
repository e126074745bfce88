"""Attention read out in words and in geometry: pure functions (numpy only) that the stages call.

- strongest_keys: one query's strongest keys as whole percentages, masked keys marked as
  masked. Rounding: the weights of the row's unmasked keys are turned into whole percentages
  by the largest-remainder method, so they add up to 100 (0 for a row whose every key is
  masked), and equal weights get equal percentages (a row where they cannot all take the
  last points adds up to a little less); the keys not listed are summed into `rest`, so
  top + rest is the row's total as well.
- score_geometry: one score as two lengths and an angle, q·k = |q|·|k|·cos θ.
- aligned_and_strongest: the key a query points along most closely, and the key it scores
  highest with; when they differ, the lesson is that a dot product weighs length too.
- softmax_row, scale_comparison: one row's weights with and without the scale, side by side.
- dot_product_spread: a Monte-Carlo estimate of the variance of q·k when q and k have
  independent components of mean 0 and variance 1 (≈ d_k), and of q·k/√d_k (≈ 1): the
  reason the scale is a *square* root.

The *_msg functions put a result into catalog messages (qkvcalc.i18n.Msg); numbers in them
are formatted by `fmt`, which a renderer may replace (e.g. render.text.fmt at its precision).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.labels import rounded
from qkvcalc.records import NamedTuple

Formatter = Callable[[float], str]
MAX_MASKED_NAMES = 5  # masked keys named in a reading line; more are summed up as "…"


def _fmt(value: float) -> str:
    """4 decimals, integers as integers: 7.0 -> '7', 0.94868 -> '0.9487'."""
    if math.isfinite(value) and abs(value - round(value)) <= 1e-9 * max(1.0, abs(value)):
        return str(round(value))
    return rounded(value, 4)


def _allowed(weights: np.ndarray, allowed_row: np.ndarray | Sequence[bool] | None) -> np.ndarray:
    if allowed_row is None:
        return np.ones(weights.shape, dtype=bool)
    allowed = np.asarray(allowed_row, dtype=bool)
    if allowed.shape != weights.shape:
        raise ValueError(f"allowed_row has shape {allowed.shape}, weights {weights.shape}")
    return allowed


# ---- (a) the reading line ------------------------------------------------------------------


def whole_percentages(weights: np.ndarray) -> np.ndarray:
    """Non-negative weights as whole percentages that add up to 100 (largest remainder: round
    every share down, then give the missing points to the largest remainders). Equal weights
    get equal percentages: the keys of one weight take the next points together, or, when
    fewer points are left than they are, none of them does and the rest stay missing, so such
    a row adds up to a little less than 100. All zeros stay all zeros."""
    w = np.asarray(weights, dtype=np.float64)
    total = float(w.sum())
    if w.size == 0 or total <= 0 or not math.isfinite(total):
        return np.zeros(w.shape, dtype=np.int64)
    order = np.argsort(-w, kind="stable")
    exact = w / total * 100.0
    floor = np.floor(exact).astype(np.int64)
    missing = 100 - int(floor.sum())
    ranked = w[order]
    gaps = ranked[:-1] - ranked[1:]  # ≥ 0: neighbours in descending order
    if np.all(gaps > 2e-12 * np.maximum(np.abs(ranked[:-1]), np.abs(ranked[1:]))):
        # no two weights equal, even up to rounding noise (a real layer's rows): each key is
        # a group of its own, and the largest remainders, earlier key first on a tie, gain
        by_remainder = np.lexsort((np.arange(w.size), -(exact - floor)))
        floor[by_remainder[:missing]] += 1
        return floor
    # the keys of each weight (equal up to rounding noise), each group given one share
    groups: list[list[int]] = []
    for j in order.tolist():
        if groups and math.isclose(w[j], w[groups[-1][0]], rel_tol=1e-12, abs_tol=0.0):
            groups[-1].append(j)
        else:
            groups.append([j])
    for keys in groups:
        exact[keys] = exact[keys[0]]
    floor = np.floor(exact).astype(np.int64)
    missing = 100 - int(floor.sum())
    # the largest remainders first; on equal remainders, the earlier key first
    groups.sort(key=lambda keys: (-(exact[keys[0]] - floor[keys[0]]), keys[0]))
    for keys in groups:
        if len(keys) > missing:
            break
        floor[keys] += 1
        missing -= len(keys)
    return floor


class Share(NamedTuple):
    """One key in a reading line: its column, its token, its weight, and its whole percentage."""

    key: int
    token: str
    weight: float
    percent: int

    @property
    def small(self) -> bool:
        """Positive but rounded to 0%: shown as <1%, never as 0."""
        return self.percent == 0 and self.weight > 0


class Reading(NamedTuple):
    """One query's strongest keys (largest weight first; a tie keeps key order), the share of
    the unmasked keys not listed, and the masked keys (in key order)."""

    top: tuple[Share, ...]
    rest: int
    rest_count: int
    masked: tuple[str, ...]
    rest_weight: float = 0.0  # the weight of the keys not listed (positive: never said as 0%)
    equal: bool = False  # every unmasked key has the same weight

    @property
    def all_masked(self) -> bool:
        return not self.top

    @property
    def total(self) -> int:
        """100, or 0 when every key is masked."""
        return sum(s.percent for s in self.top) + self.rest

    def items(self) -> list[tuple[str, int | None]]:
        """(token, percent) for the listed keys, then (token, None) for each masked key."""
        return [(s.token, s.percent) for s in self.top] + [(t, None) for t in self.masked]


def strongest_keys(
    weights_row: np.ndarray | Sequence[float],
    allowed_row: np.ndarray | Sequence[bool] | None,
    tokens: Sequence[str],
    k: int = 3,
) -> Reading:
    """The `k` strongest keys of one query. `weights_row` is the query's row of attention
    weights (m numbers), `allowed_row` its row of the mask (True = may attend; None: no mask),
    `tokens` the m key names. Masked keys are never among the strongest: they are listed in
    `masked`, to be shown as masked, not as 0."""
    w = np.asarray(weights_row, dtype=np.float64)
    if w.ndim != 1 or len(tokens) != w.size:
        raise ValueError(f"{w.size} weights for {len(tokens)} tokens")
    if k < 1:
        raise ValueError("k must be at least 1")
    allowed = _allowed(w, allowed_row)
    masked = tuple([str(tokens[j]) for j in np.flatnonzero(~allowed).tolist()])
    open_keys = np.flatnonzero(allowed)
    if open_keys.size == 0 or float(w[open_keys].sum()) <= 0:
        # every key masked: the weights are all 0 (PyTorch's convention), nothing to read
        return Reading((), 0, 0, tuple(str(t) for t in tokens))
    if open_keys.size == k + 1:  # "the others" would be one key: name it instead
        k += 1
    percents = whole_percentages(w[open_keys])
    order = np.argsort(-w[open_keys], kind="stable")
    top = tuple(
        Share(
            int(open_keys[i]), str(tokens[open_keys[i]]), float(w[open_keys[i]]), int(percents[i])
        )
        for i in order[:k]
    )
    rest_ids = order[k:]
    shares = w[open_keys]
    equal = open_keys.size > 1 and bool(np.all(shares == shares[0]))
    rest_weight = float(shares[rest_ids].sum())
    return Reading(
        top, int(percents[rest_ids].sum()), int(rest_ids.size), masked, rest_weight, equal
    )


def _key_parts(reading: Reading) -> list[Msg]:
    """The strongest keys with their percentages ("I 62%", "cats <1%"), then the rest's share."""
    parts = [
        Msg("ui.reading_key_small", token=s.token)
        if s.small
        else Msg("ui.reading_key", token=s.token, percent=s.percent)
        for s in reading.top
    ]
    if reading.rest_count and reading.rest == 0 and reading.rest_weight > 0:
        parts.append(Msg("ui.reading_rest_small"))  # above 0: "<1%", never "0%"
    elif reading.rest_count:
        parts.append(Msg("ui.reading_rest", percent=reading.rest))
    return parts


def reading_msg(query: str, reading: Reading) -> Msg:
    """The reading line: "cats → I 62%, cats 31%, love 7%", masked keys named after it."""
    if reading.all_masked:
        return Msg("note.reading_all_masked", query=query)
    count = len(reading.top) + reading.rest_count
    if reading.equal:  # 34% / 33% / 33% would hide that they are the same
        key = "note.reading_equal_with_masked" if reading.masked else "note.reading_equal"
        return Msg(
            key, query=query, count=count, masked=", ".join(reading.masked[:MAX_MASKED_NAMES])
        )
    parts = _key_parts(reading)
    if not reading.masked:
        return Msg("note.reading", query=query, keys=parts)
    names = ", ".join(reading.masked[:MAX_MASKED_NAMES])
    if len(reading.masked) > MAX_MASKED_NAMES:
        names += ", …"
    return Msg("note.reading_with_masked", query=query, keys=parts, masked=names)


def reading_msgs(
    weights: np.ndarray,
    allowed: np.ndarray | None,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    k: int = 3,
) -> list[Msg]:
    """The reading line of every query of one head: `weights` is n×m, `allowed` the n×m mask
    (True = may attend; None: no mask)."""
    w = np.asarray(weights, dtype=np.float64)
    return [
        reading_msg(
            str(query_tokens[i]),
            strongest_keys(w[i], None if allowed is None else allowed[i], key_tokens, k),
        )
        for i in range(w.shape[0])
    ]


# ---- (b) a score as geometry ---------------------------------------------------------------


class Geometry(NamedTuple):
    """q·k = |q|·|k|·cos θ for one query and one key. cos is None when q or k is the zero
    vector (the angle is undefined and the score is 0)."""

    dot: float
    q_norm: float
    k_norm: float
    cos: float | None

    @property
    def product(self) -> float:
        """|q|·|k|·cos θ, which equals the dot product."""
        return 0.0 if self.cos is None else self.q_norm * self.k_norm * self.cos

    @property
    def agrees(self) -> bool:
        """The check q·k = |q||k|cos θ, to float64 rounding."""
        return math.isclose(self.product, self.dot, rel_tol=1e-9, abs_tol=1e-12)

    @property
    def angle_degrees(self) -> float | None:
        return None if self.cos is None else math.degrees(math.acos(self.cos))


def score_geometry(
    q_row: np.ndarray | Sequence[float], k_row: np.ndarray | Sequence[float]
) -> Geometry:
    """|q|, |k|, cos θ and q·k of one query row and one key row (both d_k long)."""
    q = np.asarray(q_row, dtype=np.float64)
    k = np.asarray(k_row, dtype=np.float64)
    if q.shape != k.shape or q.ndim != 1:
        raise ValueError(f"q is {q.shape} and k is {k.shape}: both must be d_k long")
    dot = float(q @ k)
    q_norm, k_norm = float(np.linalg.norm(q)), float(np.linalg.norm(k))
    if q_norm == 0 or k_norm == 0:
        return Geometry(dot, q_norm, k_norm, None)
    cos = float(np.clip(dot / (q_norm * k_norm), -1.0, 1.0))
    return Geometry(dot, q_norm, k_norm, cos)


def geometry_msg(query: str, key: str, g: Geometry, fmt: Formatter = _fmt) -> Msg:
    """One score as lengths and an angle, with the product worked out."""
    if g.cos is None:
        return Msg("note.geometry_zero", query=query, key=key)
    q_norm, k_norm, cos, value = (fmt(v) for v in (g.q_norm, g.k_norm, g.cos, g.product))
    redone = float(q_norm) * float(k_norm) * float(cos)  # the product of the numbers shown
    return Msg(
        "note.geometry" if fmt(redone) == value else "note.geometry_approx",
        query=query,
        key=key,
        q_norm=q_norm,
        k_norm=k_norm,
        cos=cos,
        value=value,
    )


class Alignment(NamedTuple):
    """For one query: the key it points along most closely (largest cos θ) and the key with
    its largest score, among the keys it may attend to."""

    aligned: int
    strongest: int
    aligned_geometry: Geometry
    strongest_geometry: Geometry

    @property
    def differ(self) -> bool:
        return self.aligned != self.strongest


def aligned_and_strongest(
    q_row: np.ndarray | Sequence[float],
    keys: np.ndarray,
    allowed_row: np.ndarray | Sequence[bool] | None = None,
) -> Alignment | None:
    """The best-aligned and the highest-scoring key of one query (`keys` is m×d_k). None when
    no key is allowed or the query is the zero vector (no angle to speak of). A zero key has no
    direction, so it is never the best-aligned one. All keys at once: a GPT-2-sized layer asks
    this of 12 × 1,024 queries."""
    q = np.asarray(q_row, dtype=np.float64)
    ks = np.asarray(keys, dtype=np.float64)
    if ks.ndim != 2 or q.shape != ks.shape[1:]:
        raise ValueError(f"q is {q.shape} and the keys {ks.shape}: both must be d_k wide")
    candidates = np.flatnonzero(_allowed(np.zeros(ks.shape[0]), allowed_row))
    q_norm = float(np.linalg.norm(q))
    if candidates.size == 0 or q_norm == 0:
        return None
    dots = ks[candidates] @ q
    k_norms = np.linalg.norm(ks[candidates], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = np.where(k_norms == 0, -np.inf, np.clip(dots / (q_norm * k_norms), -1.0, 1.0))
    aligned = int(candidates[np.argmax(cos)])
    strongest = int(candidates[np.argmax(dots)])
    return Alignment(
        aligned, strongest, score_geometry(q, ks[aligned]), score_geometry(q, ks[strongest])
    )


def alignment_msg(query: str, tokens: Sequence[str], a: Alignment, fmt: Formatter = _fmt) -> Msg:
    """The lesson of a query whose best-aligned key is not its strongest one."""
    ga, gs = a.aligned_geometry, a.strongest_geometry
    return Msg(
        "note.geometry_lesson",
        query=query,
        aligned=tokens[a.aligned],
        cos_aligned=fmt(ga.cos if ga.cos is not None else 0.0),
        strongest=tokens[a.strongest],
        cos_strongest=fmt(gs.cos if gs.cos is not None else 0.0),
        k_aligned=fmt(ga.k_norm),
        k_strongest=fmt(gs.k_norm),
    )


# ---- (c) why scale, shown --------------------------------------------------------------------


def softmax_row(
    logits: np.ndarray | Sequence[float], allowed_row: np.ndarray | Sequence[bool] | None = None
) -> np.ndarray:
    """Stable softmax of one row: masked keys get exactly 0; a row with every key masked is all
    0 (as PyTorch's scaled_dot_product_attention returns)."""
    s = np.asarray(logits, dtype=np.float64)
    allowed = _allowed(s, allowed_row)
    out = np.zeros(s.shape, dtype=np.float64)
    if not allowed.any():
        return out
    top = float(s[allowed].max())
    e = np.exp(s[allowed] - top)
    out[allowed] = e / e.sum()
    return out


class ScaleComparison(NamedTuple):
    """One row's weights with the scale (`scaled`) and without it (`unscaled`, scale 1)."""

    scale: float
    scaled: np.ndarray
    unscaled: np.ndarray

    @property
    def temperature(self) -> float:
        """Multiplying scores by c is a softmax at temperature T = 1/c."""
        return 1.0 / self.scale

    @property
    def peak_scaled(self) -> float:
        return float(self.scaled.max())

    @property
    def peak_unscaled(self) -> float:
        return float(self.unscaled.max())


def scale_comparison(
    scores_row: np.ndarray | Sequence[float],
    d_k: int,
    allowed_row: np.ndarray | Sequence[bool] | None = None,
    scale: float | None = None,
) -> ScaleComparison:
    """The weights of one row of raw scores Q·Kᵀ with the scale (1/√d_k unless `scale` is
    given) and without it."""
    s = np.asarray(scores_row, dtype=np.float64)
    c = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    return ScaleComparison(c, softmax_row(s * c, allowed_row), softmax_row(s, allowed_row))


def scale_shown_msg(
    query: str,
    tokens: Sequence[str],
    comparison: ScaleComparison,
    allowed_row: np.ndarray | Sequence[bool] | None = None,
    key: str = "note.why_scale_shown",
    said: dict[str, str] | None = None,
    k: int = 3,
) -> Msg:
    """Why scale, shown for one query: its reading line without and with the scale (`key`
    the sentence, `said` what else it names, such as a given scale)."""

    def keys(weights: np.ndarray) -> Msg | list[Msg]:
        reading = strongest_keys(weights, allowed_row, tokens, k)
        if reading.all_masked:
            return Msg("ui.reading_none")
        if reading.equal:  # as the reading line says it: not 34% / 33% / 33%
            return Msg("ui.reading_equal", count=len(reading.top) + reading.rest_count)
        return _key_parts(reading)

    return Msg(
        key,
        query=query,
        unscaled=keys(comparison.unscaled),
        scaled=keys(comparison.scaled),
        **(said or {}),
    )


def dot_product_spread(d_k: int, samples: int = 20000, seed: int = 0) -> tuple[float, float]:
    """Monte Carlo: the variance of q·k and of q·k/√d_k over `samples` pairs q, k whose d_k
    components are independent, of mean 0 and variance 1. Expect ≈ d_k and ≈ 1."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, d_k))
    k = rng.standard_normal((samples, d_k))
    dots = np.einsum("ij,ij->i", q, k)
    return float(dots.var()), float((dots / math.sqrt(d_k)).var())
