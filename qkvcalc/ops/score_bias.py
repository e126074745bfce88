"""A bias added to the scaled scores of each head, before the mask: ALiBi's −slope·|i − j|
(BLOOM, MPT: the farther a key, the lower its score, with no position added to X), a bias
given (T5's relative position bias), or both as one B.

    "alibi": true (the paper's slopes for H heads) or [slope_1, …, slope_H]
    "score_bias": an n×m matrix (every head) or H of them

    B = −slope·|pos_i − pos_j| (+ the bias given)          stage `score_bias`
    S + B                                                  stage `biased`
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import to_matrix, to_vector
from qkvcalc.labels import shape_text, shown
from qkvcalc.ops.base import Candidate, Feature, Logits, Mistakes, Sizes
from qkvcalc.ops.op import Literals, Op, Params, nothing
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan.specs import Spec, ref
from qkvcalc.records import NamedTuple


class Bias(NamedTuple):
    alibi: np.ndarray | None  # [H] slopes
    alibi_exact: tuple[Fraction | None, ...] | None
    alibi_given: bool
    table: np.ndarray | None  # [H, n, m]: the bias given
    table_exact: tuple[Any, ...] | None  # per head: its exact rows, or None


def alibi_slopes(heads: int) -> tuple[list[float], list[Fraction | None]]:
    """The ALiBi paper's slopes for H heads: for H a power of two, 2^(−8/H), 2^(−16/H), …;
    otherwise those of the nearest smaller power of two, then every other slope of twice
    that many (the odd ones), as BLOOM and the paper's code do. Exact where rational."""
    closest = 1 << (heads.bit_length() - 1)  # the largest power of two ≤ H

    def series(count: int, step: int) -> list[tuple[float, Fraction | None]]:
        # slopes 2^(−8k/count) for k in `step`-spaced exponents
        out = []
        for k in range(1, step * count + 1, step):
            power = Fraction(8 * k, count)
            exact = Fraction(1, 2**power.numerator) if power.denominator == 1 else None
            out.append((2.0 ** (-float(power)), exact))
        return out

    slopes = series(closest, 1)
    if closest != heads:
        slopes += series(2 * closest, 2)[: heads - closest]
    return [s for s, _ in slopes], [e for _, e in slopes]


# ---- reading the keys ---------------------------------------------------------------------------


def _alibi(raw: Any, heads: int) -> tuple[np.ndarray, tuple[Fraction | None, ...], bool] | None:
    if raw is False or raw is None:
        return None
    if raw is True:
        slopes, exact = alibi_slopes(heads)
        return np.array(slopes), tuple(exact), False
    if isinstance(raw, list | tuple | np.ndarray):
        vector = to_vector(
            list(raw) if not isinstance(raw, np.ndarray) else raw, "alibi", exact=True
        )
        values = vector.values[0]
        if values.size != heads:
            raise QkvcalcError("alibi.count", count=values.size, heads=heads)
        assert vector.exact is not None
        return values, tuple(vector.exact[0]), True
    raise QkvcalcError("alibi.kind", value=shown(raw))


def _table(raw: Any, sizes: Sizes) -> tuple[np.ndarray, tuple[Any, ...] | None]:
    heads, n, m, exact = sizes.heads, sizes.n, sizes.m, sizes.exact
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    three = (
        isinstance(raw, list | tuple)
        and raw
        and isinstance(raw[0], list | tuple)
        and raw[0]
        and isinstance(raw[0][0], list | tuple)
    )
    matrices = [to_matrix(b, "score_bias", exact=exact) for b in (raw if three else [raw])]
    shapes = {mat.values.shape for mat in matrices}
    if shapes != {(n, m)} or (three and len(matrices) != heads):
        got = (len(matrices), *matrices[0].values.shape) if three else matrices[0].values.shape
        raise QkvcalcError("score_bias.shape", shape=shape_text(got), n=n, m=m, heads=heads)
    values = np.stack([mat.values for mat in matrices])
    exact_values = tuple(mat.exact for mat in matrices) if exact else None
    if not three:
        values = np.broadcast_to(values, (heads, n, m))
        exact_values = None if exact_values is None else exact_values * heads
    return values, exact_values


def _read(given: dict[str, Any], sizes: Sizes) -> Bias | None:
    alibi = _alibi(given.get("alibi"), sizes.heads)
    table = _table(given["score_bias"], sizes) if "score_bias" in given else None
    if alibi is None and table is None:
        return None
    return Bias(
        alibi=None if alibi is None else alibi[0],
        alibi_exact=None if alibi is None else alibi[1],
        alibi_given=bool(alibi and alibi[2]),
        table=None if table is None else table[0],
        table_exact=None if table is None else table[1],
    )


def _echo(bias: Bias) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if bias.alibi is not None:
        out["alibi"] = bias.alibi if bias.alibi_given else True
    if bias.table is not None:
        out["score_bias"] = bias.table
    return out


def _header(bias: Bias) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    if bias.alibi is not None:
        out.append(("ui.variant.alibi", {}))
    if bias.table is not None:
        out.append(("ui.variant.score_bias", {}))
    return out


# ---- the operation ------------------------------------------------------------------------------


def _distance(params: Params, rows: np.ndarray | None) -> np.ndarray:
    positions = params["positions"] if rows is None else params["positions"][rows]
    return np.abs(positions[:, None] - params["key_positions"][None, :])


def _compute(ops: Any, params: Params, rows: np.ndarray | None) -> np.ndarray:
    # −slope · |pos_i − pos_j|: [n, 1] − [1, m] -> [n, m]
    return -params["slope"] * _distance(params, rows).astype(np.float64)


def _exact(ops: Any, params: Params) -> Any:
    slope = params.get("slope_exact")
    if slope is None:
        return None, ()
    rows = _distance(params, None).tolist()
    return tuple(tuple(-slope * int(d) for d in row) for row in rows), ()


def _work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: −0.5×|1 − 0| = −0.5"""
    p = stage.params
    exact_slope = p.get("slope_exact") if style.exact else None
    slope = style.exact_factor(exact_slope, p["slope"]) if style.exact else None
    slope = slope or style.num(p["slope"])
    pos, key = int(p["positions"][i]), int(p["key_positions"][j])
    distance = f"|{pos} {style.minus} {key}|"
    shown = -style.shown(p["slope"], exact_slope) * abs(pos - key)
    left = f"{style.at(i + 1, j + 1)}-{slope}{style.times}{distance}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """ALiBi's bias with the wrong sign, +slope·|i − j|, or without the absolute value,
    −slope·(i − j) (the same as the truth where every key is at or before its query)."""
    p = stage.params
    slope = p["slope"]
    signed = (p["positions"][:, None] - p["key_positions"][None, :]).astype(np.float64)
    said = f"{slope:.6g}"
    return [
        ("alibi_sign", Msg("mistake.alibi_sign", slope=said), slope * np.abs(signed)),
        ("alibi_signed_distance", Msg("mistake.alibi_signed_distance"), -slope * signed),
    ]


# ---- the stages ---------------------------------------------------------------------------------


def table(p: Any, bias: Bias, h: int | None) -> np.ndarray:
    """The whole run's score bias B of head h, [n, m]: ALiBi's −slope·|i − j|, a bias given,
    or both added (what the stage score_bias holds; a decode step holds its rows of it)."""
    v, hh = p.variants, (h or 1) - 1
    out = np.zeros((p.n, p.m))
    if bias.alibi is not None:
        distance = np.abs(v.positions[:, None] - v.key_positions[None, :])
        out = out - float(bias.alibi[hh]) * distance.astype(np.float64)
    if bias.table is not None:
        out = out + bias.table[hh]
    return out


def _stages(p: Any, bias: Bias, at: Logits) -> list[Spec]:
    """B of head h (in a decode step: its rows, against the keys cached so far), then S + B."""
    v, hh = p.variants, (at.h or 1) - 1
    take = slice(None) if at.take is None else at.take
    end = p.m if at.end is None else at.end
    common: dict[str, Any] = {"symbol": "B", "letters": at.letters}
    if bias.alibi is not None and bias.table is None:
        slope = float(bias.alibi[hh])
        b = Spec(
            "score_bias",
            at.h,
            "alibi",
            (),
            f"B = -{slope:.6g}·|i − j|",
            at.rows,
            at.cols,
            params={
                "slope": slope,
                "slope_exact": bias.alibi_exact[hh] if bias.alibi_exact is not None else None,
                "positions": v.positions[take],
                "key_positions": v.key_positions[:end],
            },
            notes=(
                Msg(
                    "note.alibi_given" if bias.alibi_given else "note.alibi_recipe",
                    slope=f"{slope:.6g}",
                    heads=p.heads,
                ),
                Msg("note.alibi_bloom"),
            ),
            hint=("hint.alibi", {}),
            **common,
        )
    else:  # a bias given as numbers, with ALiBi's added in when both are (one B)
        exact = None
        if bias.alibi is not None:
            notes = (Msg("note.alibi_and_bias", slope=f"{float(bias.alibi[hh]):.6g}"),)
        else:
            notes = (Msg("note.score_bias"),)
            exact = bias.table_exact[hh] if bias.table_exact is not None else None
            if exact is not None and at.take is not None:
                exact = tuple(tuple(exact[int(i)][:end]) for i in at.take)
        b = Spec(
            "score_bias",
            at.h,
            "table",
            (),
            "B",
            at.rows,
            at.cols,
            params={"table": table(p, bias, at.h)[take][:, :end], "table_exact": exact},
            notes=notes,
            **common,
        )
    biased = Spec(
        "biased",
        at.h,
        "add",
        (at.ref, ref("score_bias", at.h, at.step)),
        at.formula + " + B",
        at.rows,
        at.cols,
        symbol="S+B",
        letters=at.letters,
        hint=("hint.biased", {}),
    )
    return [b, biased]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp(ops: Any, params: Params, r: Rounding) -> Out:
    # −slope·|i − j| in float32, rounded to the dtype once, as BLOOM builds its alibi tensor
    # (slopes × positions in float32, then .to(dtype)); every policy adds it as it is
    return Out(r.keep(r.work(-params["slope"]) * r.work(_distance(params, None))), r.kept)


# ---- in PyTorch (--format torch): −slope·|pos_i − pos_j| ----


def _torch_alibi(params: Params, names: Sequence[str], lit: Literals) -> str:
    pos, keys = lit.array(params["positions"]), lit.array(params["key_positions"])
    return f"-{lit.num(params['slope'])} * ({pos}[:, None] - {keys}[None, :]).abs()"


FEATURE = Feature(
    name="score_bias",
    keys=("alibi", "score_bias"),
    read=_read,
    ops=(
        Op(
            "alibi",
            _compute,
            nothing,
            _exact,
            rowwise=True,
            work=_work,
            lowp=_lowp,
            torch=_torch_alibi,
        ),
    ),
    logits=_stages,
    mistakes=(Mistakes("alibi", ("alibi_sign", "alibi_signed_distance"), _mistakes),),
    elements=lambda bias, n, m, d_k: n * m,
    lazy_stages=1,
    header=_header,
    echo=_echo,
    order_reason="shuffle.by_bias",
    worksheet_notes=(
        "note.alibi_recipe",
        "note.alibi_given",
        "note.alibi_bloom",
        "note.alibi_and_bias",
        "note.score_bias",
    ),
    torch_bias=lambda p, bias, h: ("ALiBi: -slope*|pos_i - pos_j|", table(p, bias, h)),
    torch_module_gap="a score bias would go in as a float attn_mask of shape (H, n, m); this "
    "script checks the bias with SDPA, which takes it the same way",
)
