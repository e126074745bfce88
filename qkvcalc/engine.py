"""The engine: scaled dot-product attention, one recorded stage at a time.

    output = softmax(Q·Kᵀ · scale + M) · V,   Q = X·W_Q + b_Q,  K = S·W_K + b_K,  V = S·W_V + b_V

with S = X (self-attention) or the source (cross-attention). numpy only: no printing, no rich,
no typer. `run` returns a Trace whose stages a renderer shows; shape comments use the paper's
names (n queries, m keys, d_model, d_k and d_v per head, H heads, G key/value heads).
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np

from qkvcalc import exact_budget
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.problem import Problem
from qkvcalc.trace import Stage, Trace, resolve

# ---- the math, as on the board --------------------------------------------------------------


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return x @ w if b is None else x @ w + b


def allowed_keys(p: Problem) -> np.ndarray | None:
    """[n, m] bool, True where query i may attend to key j; None when nothing is masked."""
    allowed = None
    if p.mask_kind == "causal":  # lower-triangular, aligned top-left (as is_causal=True)
        allowed = np.tril(np.ones((p.n, p.m), dtype=bool))
    elif p.mask is not None:
        allowed = p.mask.copy()
    if p.key_padding is not None:  # [m] -> broadcast over every query row
        allowed = (
            np.broadcast_to(p.key_padding, (p.n, p.m)).copy()
            if allowed is None
            else (allowed & p.key_padding)
        )
    return allowed


def softmax_parts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stable softmax over each row, with its parts: (row max, e^(s - max), row sum, weights).

    A row whose every entry is -inf (all keys masked) has no maximum; it gets max 0,
    exponentials 0, sum 0 and weights 0 (what PyTorch's SDPA returns) instead of 0/0 = NaN.
    """
    # [n, m] -> [n], [n, m], [n], [n, m]
    row_max = np.max(s, axis=1, initial=-np.inf)
    row_max[np.isneginf(row_max)] = 0.0  # a row with every key masked
    e = shifted_exp(s, row_max)
    row_sum = e.sum(axis=1)
    return row_max, e, row_sum, normalise(e, row_sum)


def shifted_exp(s: np.ndarray, row_max: np.ndarray) -> np.ndarray:
    # [n, m] - [n, 1] -> [n, m]: each ≤ 1, so e^s cannot overflow; e^(−∞) = 0
    return np.exp(s - row_max[:, None])


def normalise(e: np.ndarray, row_sum: np.ndarray) -> np.ndarray:
    # [n, m] / [n, 1] -> [n, m]; a row that sums to 0 (every key masked) stays 0
    if row_sum.all():
        return e / row_sum[:, None]
    return np.divide(e, row_sum[:, None], out=np.zeros_like(e), where=row_sum[:, None] != 0)


def apply_mask(s: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    # [n, m] where allowed, else -inf
    return np.where(allowed, s, -np.inf)


# ---- recording the stages --------------------------------------------------------------------


def dim_labels(count: int) -> tuple[str, ...]:
    """The labels of a dimension's columns: '1', '2', … (1-based, as a teacher counts)."""
    return tuple(str(j + 1) for j in range(count))


def _token_text(name: str, limit: int = 40) -> str:
    """A token name inside a sentence (a warning), as every format shows it: control characters
    (terminal escape sequences) as visible escapes, a very long name cut short with …"""
    shown = "".join(
        c.encode("unicode_escape").decode("ascii") if unicodedata.category(c)[0] == "C" else c
        for c in name[: 4 * limit]  # a name of millions of characters: only what is shown
    )
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _span(first: int, count: int) -> str:
    """1-based inclusive column range: columns 3–4 (or just 3)."""
    return f"{first + 1}" if count == 1 else f"{first + 1}–{first + count}"


def _check_finite(stage: Stage) -> Stage:
    ok = np.isfinite(stage.value)
    if not ok.all():
        i, j = (int(t) + 1 for t in np.argwhere(~ok)[0])
        raise QkvcalcError("overflow", stage=stage.formula, row=i, col=j, head=stage.head or 1)
    return stage


class _Recorder:
    def __init__(self, p: Problem) -> None:
        self.p = p
        self.stages: list[Stage] = []
        self.warnings: list[Msg] = []

    def add(self, stage: Stage) -> np.ndarray:
        """Record a stage whose value is held, and return that value."""
        assert isinstance(stage.data, np.ndarray)
        self.record(stage)
        return stage.data

    def record(self, stage: Stage) -> None:
        """Record a stage, checking it for overflow first if it can overflow.

        Kᵀ is K turned; finite scores scaled by at most 1 stay finite; the mask writes only −∞
        over finite logits; e^(s − max) of finite or −∞ logits lies in [0, 1], and so do the
        weights. Every other stage is checked (the scores always are).
        """
        exempt = stage.id in ("kt", "masked", "exp", "weights") or (
            stage.id == "scaled" and stage.scale is not None and abs(stage.scale) <= 1
        )
        if not exempt:
            _check_finite(stage)
        self.stages.append(stage)

    def projection(
        self,
        sid: str,
        head: int | None,
        inputs: np.ndarray,
        src_name: str,
        weight: str,
        cols: slice,
        bias: str,
        rows: tuple[str, ...],
        full: bool,
        notes: tuple[Msg, ...] = (),
    ) -> np.ndarray:
        p = self.p
        w = getattr(p, f"w{sid}").values[:, cols]
        b_m = getattr(p, f"b{sid}")
        b = None if b_m is None else b_m.values[0, cols]
        span = "" if full else f"[:, {_span(cols.start, cols.stop - cols.start)}]"
        formula = f"{sid.upper()} = {src_name}·{weight}{span}"
        if b is not None:
            formula += f" + {bias}" + (
                "" if full else f"[{_span(cols.start, cols.stop - cols.start)}]"
            )
        return self.add(
            Stage(
                sid,
                head,
                formula,
                project(inputs, w, b),
                rows,
                dim_labels(w.shape[1]),
                "matmul",
                inputs=(inputs, w),
                names=(src_name, f"{weight}{span}"),
                inner=dim_labels(w.shape[0]),
                bias=b,
                cell=sid.upper() + "[{i},{j}]",
                notes=notes,
            )
        )

    def head(self, h: int | None, allowed: np.ndarray | None) -> np.ndarray:
        """One head's stages, from Q, K, V to its output. Returns [n, d_v]."""
        p = self.p
        hh = h or 1
        g = p.kv_head_of(hh)
        qs = slice((hh - 1) * p.d_k, hh * p.d_k)
        ks = slice((g - 1) * p.d_k, g * p.d_k)
        vs = slice((g - 1) * p.d_v, g * p.d_v)
        full = h is None
        src = "source" if p.cross else "X"
        shared: tuple[Msg, ...] = ()
        if p.kv_heads < p.heads:
            first, last = p.query_heads_of(g)
            shared = (Msg("note.kv_shared", kv_head=g, first=first, last=last),)
        if p.projected:
            assert p.x is not None
            source = p.source.values if p.source is not None else p.x.values
            q = self.projection("q", h, p.x.values, "X", "W_Q", qs, "b_Q", p.tokens, full)
            k = self.projection(
                "k", h, source, src, "W_K", ks, "b_K", p.source_tokens, full, shared
            )
            v = self.projection(
                "v", h, source, src, "W_V", vs, "b_V", p.source_tokens, full, shared
            )
        else:
            assert p.q is not None and p.k is not None and p.v is not None
            for sid, mat, cols, rows in (
                ("q", p.q, qs, p.tokens),
                ("k", p.k, ks, p.source_tokens),
                ("v", p.v, vs, p.source_tokens),
            ):
                span = "" if full else f"[:, {_span(cols.start, cols.stop - cols.start)}]"
                self.add(
                    Stage(
                        sid,
                        h,
                        f"{sid.upper()}{span}",
                        mat.values[:, cols],
                        rows,
                        dim_labels(cols.stop - cols.start),
                        "input" if full else "slice",
                        notes=shared if sid != "q" else (),
                    )
                )
            q, k, v = p.q.values[:, qs], p.k.values[:, ks], p.v.values[:, vs]

        # [m, d_k] -> [d_k, m]: the inner dimensions of Q·Kᵀ must meet
        kt = self.add(
            Stage("kt", h, "Kᵀ", k.T, dim_labels(p.d_k), p.source_tokens, "transpose", inputs=(k,))
        )
        # [n, d_k] @ [d_k, m] -> [n, m]
        scores = self.add(
            Stage(
                "scores",
                h,
                "Q·Kᵀ",
                q @ kt,
                p.tokens,
                p.source_tokens,
                "matmul",
                inputs=(q, kt),
                names=("Q", "Kᵀ"),
                inner=dim_labels(p.d_k),
                cell="q_{i}·k_{j}",
                notes=(Msg("note.cross_axes", n=p.n, m=p.m),) if p.cross else (),
            )
        )
        if p.scale_given is None:
            root = math.isqrt(p.d_k)
            formula, text = "Q·Kᵀ / √d_k", f"√{p.d_k}"
            note = Msg(
                "note.scale_default",
                d_k=p.d_k,
                root=text,
                value=str(root) if root * root == p.d_k else f"{math.sqrt(p.d_k):.4f}",
            )
        else:
            formula, text = f"Q·Kᵀ × {p.scale_given.value:g}", ""
            note = Msg("note.scale_given", scale=f"{p.scale:g}", d_k=p.d_k)

        # The stages after the scores are recorded as recipes, recomputed from the scores when
        # shown, so a trace holds one n×m matrix per head rather than five (trace.Matrix).
        def scaled_of(rows: np.ndarray | None = None) -> np.ndarray:
            # [n, m] * scalar -> [n, m] (or the rows asked for)
            return (scores if rows is None else scores[rows]) * p.scale

        self.record(
            Stage(
                "scaled",
                h,
                formula,
                scaled_of,
                p.tokens,
                p.source_tokens,
                "scale",
                inputs=(scores,),
                scale=p.scale,
                scale_text=text,
                notes=(note,),
            )
        )
        logits_of = scaled_of
        if allowed is not None:
            mask = allowed  # a name the recipe below can rely on being set

            def masked_of(rows: np.ndarray | None = None) -> np.ndarray:
                # [n, m] where allowed, else -inf
                return apply_mask(resolve(scaled_of, rows), mask if rows is None else mask[rows])

            notes = [Msg("note.mask_convention")]
            if p.mask_kind == "causal" and p.n != p.m:
                notes.append(Msg("note.causal_topleft", n=p.n, m=p.m))
            self.record(
                Stage(
                    "masked",
                    h,
                    formula + " + M",
                    masked_of,
                    p.tokens,
                    p.source_tokens,
                    "mask",
                    inputs=(scaled_of,),
                    allowed=allowed,
                    notes=tuple(notes),
                )
            )
            logits_of = masked_of
        row_max, _, row_sum, weights = softmax_parts(resolve(logits_of))
        dead = np.flatnonzero(row_sum == 0)
        if dead.size:
            names = ", ".join(_token_text(p.tokens[i]) for i in dead[:10])
            names += " …" if dead.size > 10 else ""
            key = "warn.fully_masked_head" if h else "warn.fully_masked"
            self.warnings.append(Msg(key, rows=names, head=hh, count=int(dead.size)))

        def exp_of(rows: np.ndarray | None = None) -> np.ndarray:
            return shifted_exp(resolve(logits_of, rows), row_max if rows is None else row_max[rows])

        def weights_of(rows: np.ndarray | None = None) -> np.ndarray:
            return normalise(resolve(exp_of, rows), row_sum if rows is None else row_sum[rows])

        self.record(
            Stage(
                "exp",
                h,
                "e^(s − max)",
                exp_of,
                p.tokens,
                p.source_tokens,
                "exp",
                inputs=(logits_of,),
                row_max=row_max,
            )
        )
        self.record(
            Stage(
                "weights",
                h,
                "A = softmax(" + formula + (" + M)" if allowed is not None else ")"),
                weights_of,
                p.tokens,
                p.source_tokens,
                "softmax",
                inputs=(exp_of,),
                row_sum=row_sum,
            )
        )
        # [n, m] @ [m, d_v] -> [n, d_v]
        return self.add(
            Stage(
                "output",
                h,
                "A·V",
                weights @ v,
                p.tokens,
                dim_labels(p.d_v),
                "matmul",
                inputs=(weights_of, v),
                names=("A", "V"),
                inner=p.source_tokens,
                cell="out[{i},{j}]",
            )
        )


def _with_exact(trace: Trace) -> Trace:
    """--exact: the rational stages as fractions too (qkvcalc.exact, loaded only when asked)."""
    p = trace.problem
    if p.exact_refused is not None:  # qkvcalc.exact_budget gave up before any fraction was made
        return exact_budget.skipped(trace, p.exact_refused)
    first = p.x if p.x is not None else p.q
    if first is None or first.exact is None:
        return trace
    from qkvcalc.exact import attach_exact

    return attach_exact(trace)


# Overflow is not a warning here: every stage is checked (_check_finite) and an overflow
# becomes one QkvcalcError, so numpy's RuntimeWarnings would only repeat it on stderr.
@np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")
def run(p: Problem) -> Trace:
    """Compute attention for a validated Problem and record every stage (with the exact
    fractions of the rational stages when the problem was read in exact mode)."""
    rec = _Recorder(p)
    if p.x is not None:
        rec.add(
            Stage("x", None, "X", p.x.values, p.tokens, dim_labels(p.x.values.shape[1]), "input")
        )
    if p.source is not None:
        rec.add(
            Stage(
                "source",
                None,
                "source",
                p.source.values,
                p.source_tokens,
                dim_labels(p.source.values.shape[1]),
                "input",
            )
        )
    allowed = allowed_keys(p)
    if not p.multihead:
        rec.head(None, allowed)
        return _with_exact(Trace(p, tuple(rec.stages), tuple(rec.warnings)))

    # The split: which columns of W_Q, W_K, W_V (or of Q, K, V) each head reads, as the first
    # (a) and last (b) column of each slice, and the K/V head g it shares. [H, 7]
    split = np.array(
        [
            [
                (h - 1) * p.d_k + 1,
                h * p.d_k,
                (p.kv_head_of(h) - 1) * p.d_k + 1,
                p.kv_head_of(h) * p.d_k,
                (p.kv_head_of(h) - 1) * p.d_v + 1,
                p.kv_head_of(h) * p.d_v,
                p.kv_head_of(h),
            ]
            for h in range(1, p.heads + 1)
        ],
        dtype=np.float64,
    )
    names = ("W_Q", "W_K", "W_V") if p.projected else ("Q", "K", "V")
    rec.add(
        Stage(
            "split",
            None,
            f"{names[0]}, {names[1]}, {names[2]} → h = 1…H",
            split,
            dim_labels(p.heads),  # rows: heads; columns: first and last column of each slice, g
            (*(f"{n} {end}" for n in names for end in "ab"), "g"),
            "split",
            names=names,
            notes=(Msg("note.split", heads=p.heads, kv_heads=p.kv_heads, d_k=p.d_k, d_v=p.d_v),),
        )
    )
    outs = [rec.head(h, allowed) for h in range(1, p.heads + 1)]
    # H × [n, d_v] -> [n, H·d_v]
    concat = rec.add(
        Stage(
            "concat",
            None,
            "concat(head_1, …, head_H)",
            np.hstack(outs),
            p.tokens,
            dim_labels(p.heads * p.d_v),
            "concat",
            inputs=tuple(outs),
            notes=(
                Msg(
                    "note.concat_columns",
                    spans=[
                        Msg("ui.concat_span", head=h, cols=_span((h - 1) * p.d_v, p.d_v))
                        for h in range(1, p.heads + 1)
                    ],
                ),
            ),
        )
    )
    if p.wo is None:
        rec.add(
            Stage(
                "output",
                None,
                "output = concat",
                concat,
                p.tokens,
                dim_labels(concat.shape[1]),
                "copy",
                inputs=(concat,),
                topic="output.concat",
            )
        )
    else:
        bo = None if p.bo is None else p.bo.values[0]
        # [n, H·d_v] @ [H·d_v, d_out] + [d_out] -> [n, d_out]
        rec.add(
            Stage(
                "output",
                None,
                "output = concat·W_O" + (" + b_O" if bo is not None else ""),
                project(concat, p.wo.values, bo),
                p.tokens,
                dim_labels(p.wo.values.shape[1]),
                "matmul",
                inputs=(concat, p.wo.values),
                names=("concat", "W_O"),
                inner=dim_labels(concat.shape[1]),
                bias=bo,
                cell="out[{i},{j}]",
                topic="output.final",
            )
        )
    return _with_exact(Trace(p, tuple(rec.stages), tuple(rec.warnings)))
