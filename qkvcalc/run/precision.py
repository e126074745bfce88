"""The precision lab: the plan run again in a low-precision dtype (`--dtype`, `--policy`).

One more interpreter of the plan, beside the engine (float64) and exact mode (fractions). The
plain run gives every stage's float64 twin (from the unrounded inputs); then each stage is
computed from the dtype's numbers as the policy's backend computes it (each op's own rule,
`Op.lowp`, read through qkvcalc.run.lowp), and kept with its twin and its error: in all,
against the twin, and added, its own rounding against its op applied exactly to its own
rounded operands. The summary names the first cell that turned inf or NaN, with why, and the
stage that added most error.

numpy (and ml_dtypes, through lowp) only: no printing, no rich, no typer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.ops import features
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Const, Ref
from qkvcalc.run import lowp
from qkvcalc.run.engine import _last_uses
from qkvcalc.run.engine import run as run_plain
from qkvcalc.trace import Cache, Data, Error, Precision, Recipe, Stage, Trace, resolve


def check(p: Problem, dtype: str, policy: str) -> None:
    """What --dtype can run today; anything else one message naming the option."""
    if dtype not in lowp.DTYPES:
        raise QkvcalcError("precision.dtype_unknown", value=dtype, known=", ".join(lowp.DTYPES))
    if policy not in lowp.POLICIES:
        raise QkvcalcError("precision.policy_unknown", value=policy, known=", ".join(lowp.POLICIES))
    if policy == "sdpa" and dtype.startswith("float8"):
        raise QkvcalcError("precision.sdpa_float8", dtype=dtype)
    if policy == "sdpa":
        for feature, _ in features.active(p):
            if isinstance(feature.no_sdpa, str) and feature.no_sdpa:
                raise QkvcalcError(feature.no_sdpa)
            if feature.no_sdpa:
                raise QkvcalcError("precision.sdpa_feature", feature=feature.name)
    for option, on in (
        ("--exact", p.exact),
        ("--backward", p.backward),
    ):
        if on:
            raise QkvcalcError("precision.with_option", option=option, dtype=dtype)


@np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore")
def run(p: Problem, dtype: str | None = None, policy: str | None = None) -> Trace:
    """Compute attention for a validated Problem in `dtype` under `policy` (by default the
    problem's own, else bfloat16 and eager), every stage beside its float64 twin."""
    dtype = dtype or p.dtype or "bfloat16"
    policy = policy or p.policy or "eager"
    check(p, dtype, policy)
    plain = run_plain(p)
    for stage in plain.stages:
        if lowp.rule(stage.op) is None:
            owner = next(
                (f for f, _ in features.active(p) if stage.op in {o.name for o in f.ops}), None
            )
            if owner is None:
                raise QkvcalcError("precision.op_unsupported", stage=stage.formula, op=stage.op)
            raise QkvcalcError(
                "precision.feature_unsupported",
                feature="/".join(owner.keys or (owner.name,)),
                stage=stage.formula,
                op=stage.op,
            )
    # sdpa: torch's CPU flash kernel where d_k = d_v, else its math kernel
    kernel = ("flash" if p.d_k == p.d_v else "math") if policy == "sdpa" else ""
    rounding = lowp.Rounding(lowp.numpy_dtype(dtype), policy, kernel=kernel)
    state = _State(plain.cache)
    if any(f.lowp_policy for f, _ in features.active(p)):
        state.fp8_kept = "precision.fp8_kept_layer"
    last = _last_uses(tuple(stage.spec for stage in plain.stages))
    stages: list[Stage] = []
    for k, stage in enumerate(plain.stages):
        stages.append(_stage(stage, rounding, state))
        state.release(k, last)
    if p.decode is not None or p.tiles is not None:
        _against_whole(p, dtype, policy, stages)
    summary = _summary(stages, rounding, dtype, policy, p, state.unfinite)
    dead = [] if policy == "sdpa" else _dead_rows(stages, rounding)
    if dead:  # where a fully masked row's weights differ from the float64 twin's 0
        kept = tuple(w for w in plain.warnings if not w.key.startswith("warn.fully_masked"))
        warnings = kept + tuple(dead)
    else:
        warnings = plain.warnings
    return replace(plain, stages=tuple(stages), warnings=warnings, precision=summary)


def _against_whole(p: Problem, dtype: str, policy: str, stages: list[Stage]) -> None:
    """The stacked decode steps, or the tiles' O / ℓ, of each head against the same attention
    computed all at once in the same dtype and policy (the problem run again without --decode or
    --tiles): what the note says in place of the plain run's, which compares float64's."""
    whole = run(replace(p, decode=None, tiles=None), dtype, policy)
    key = "precision.decode_whole" if p.decode is not None else "precision.tiles_whole"
    for k, stage in enumerate(stages):
        if stage.topic not in ("output.decode", "output.tiles"):
            continue
        theirs = whole.stage(ids.OUTPUT, stage.head).value
        d = np.abs(stage.value - theirs)
        ulps = d / lowp.ulp(theirs, lowp.numpy_dtype(dtype))
        same = np.isfinite(d) & (d == 0)
        note = Msg(
            key,
            dtype=dtype,
            policy=policy,
            same=int(same.sum()),
            cells=int(d.size),
            gap=_number(float(np.max(d, initial=0.0))),
            ulp=_number(float(np.max(ulps, initial=0.0)), 3),
        )
        stages[k] = replace(stage, notes=(*stage.notes, note))


def _dead_rows(stages: list[Stage], r: lowp.Rounding) -> list[Msg]:
    """A query whose every key is masked: what its weights are in the dtype (equal, or NaN),
    where the float64 twin's are 0 (the plain run's warning said the twin's)."""
    said = []
    for stage in stages:
        if stage.op != lowp.MASK or stage.allowed is None:
            continue
        dead = np.flatnonzero(~stage.allowed.any(axis=1))
        if not dead.size:
            continue
        # the weights of the same head and step; in tiles (no weights) the head's output
        found = next(
            (
                s
                for s in stages
                if (s.op == lowp.SOFTMAX or s.topic == "output.tiles")
                and (s.head, s.step) == (stage.head, stage.step)
            ),
            None,  # a feature's own softmax (its weights of such a row are its own to say)
        )
        if found is None or not found.value[dead].any():  # 0, as the float64 twin's
            continue
        made = found.value
        nan = bool(np.isnan(made[dead]).any())
        said.append(
            Msg(
                "precision.fully_masked_nan" if nan else "precision.fully_masked_equal",
                rows=", ".join(stage.rows[i] for i in dead[:10]) + (" …" if dead.size > 10 else ""),
                head=stage.head or 1,
                dtype=str(r.dtype),
            )
        )
    return said


class _State:
    """The values computed so far (each whole while a later stage reads it), and what the
    trace keeps of each: an n×m stage as its dtype's own numbers (2 bytes a cell in bfloat16),
    given back as float64 when shown, as the engine keeps a recipe."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.values: dict[Ref, np.ndarray] = {}
        self.data: dict[Ref, Data] = {}
        self.finite = True  # no value so far is inf or NaN (the remarks hold)
        self.unfinite: set[Ref] = set()  # the stages with a value that is inf or NaN
        self.ops: dict[Ref, str] = {}  # the op of each stage so far
        self.inside: set[Ref] = set()  # sdpa: the stages the kernel keeps in float32
        # a stage the model never forms: how a product that reads it first is computed instead
        self.through: dict[Ref, Callable[[Sequence[np.ndarray], lowp.Rounding], lowp.Out]] = {}
        # the keys each query keeps as the dtype chose them (a sparse attention's top-k), which
        # every later mask applies in place of the float64 choice the plan folded in
        self.keeps: np.ndarray | None = None
        # what a stage kept in float32 under scaled float8 is said with (a layer that is not
        # softmax attention reads float8 only in its projections)
        self.fp8_kept = "precision.fp8_kept"

    def keep(
        self,
        stage: Stage,
        value: np.ndarray,
        stored: np.dtype[Any],
        r: lowp.Rounding,
        meant: bool = False,
    ) -> Data:
        self.values[stage.ref] = value
        bad = ~np.isfinite(value)
        # a stage whose −∞ is what it says (a mask of 0 and −∞ built from the keys kept, its
        # rule's `meant`) turned nothing inf or NaN
        if bad.any() and not (meant and (value[bad] == -np.inf).all()):
            self.finite = False
            self.unfinite.add(stage.ref)
        data: Data = value
        if stage.spec.lazy:
            compact = r.narrow(value, stored)  # the cast's own array, where it made value

            def compute(rows: np.ndarray | None) -> np.ndarray:
                return (compact if rows is None else compact[rows]).astype(np.float64)

            data = Recipe(compute, self.cache)
        self.data[stage.ref] = data
        return data

    def value_of(self, ref: Ref) -> np.ndarray:
        return self.values[ref] if ref in self.values else resolve(self.data[ref])

    def release(self, done: int, last: dict[Ref, int]) -> None:
        for ref in [r for r in self.values if last.get(r, -1) <= done]:
            del self.values[ref]
            self.through.pop(ref, None)


def _constant(o: Const, given: bool, r: lowp.Rounding) -> np.ndarray:
    """A constant operand as the model holds it: the problem's own numbers as given (rounding
    them is that stage's), a parameter the model keeps in float32 (Const.float32) in float32
    (naive, written with every tensor in the dtype: in the dtype), any other in the dtype."""
    if given:
        return o.value
    return r.f32(o.value) if o.float32 and r.policy != "naive" else r.to(o.value)


def _stage(stage: Stage, r: lowp.Rounding, state: _State) -> Stage:
    """One stage in the dtype: its value, its exact twin on the same operands, its errors."""
    entry = lowp.rule(stage.op)
    assert entry is not None  # run() refused an op without a rule
    given = OPS[stage.op].given  # the problem's own numbers: rounding them is this stage's
    operands = [
        _constant(o, given, r) if isinstance(o, Const) else state.value_of(o) for o in stage.reads
    ]
    state.ops[stage.ref] = stage.op
    reads = [state.ops.get(o) for o in stage.reads if not isinstance(o, Const)]
    turned = any(OPS[o].turns for o in reads if o is not None)  # Q·Kᵀ reads K turned
    if r.policy == "sdpa" and OPS[stage.op].product and turned:
        r = r.within()
    # sdpa: what reads a stage the kernel computes inside itself is inside it too (a score
    # bias added as a float attn_mask), up to the product that leaves it (A·V)
    inside = any(o in state.inside for o in stage.reads if not isinstance(o, Const))
    if r.policy == "sdpa" and not OPS[stage.op].product and inside:
        r = r.within()
    if state.keeps is not None and stage.op == lowp.MASK and stage.allowed is not None:
        # a head's mask: the keys the dtype's top-k kept (what the model masks with)
        stage = replace(
            stage, spec=replace(stage.spec, params={**stage.params, "allowed": state.keeps})
        )
    first = stage.reads[0] if stage.reads and not isinstance(stage.reads[0], Const) else None
    through = state.through.get(first) if OPS[stage.op].product and first else None
    if through is not None:  # a product of a stage the model never forms (DiffLlama's Δ·V'')
        entry = _instead(through)
    out = entry(operands, stage.params, r)
    if out.product is not None:
        state.through[stage.ref] = out.product
    chose = []
    if out.keeps is not None:
        state.keeps = out.keeps
        chose = [_chosen(out.keeps, stage.value > 0, stage, r)]
    if r.policy == "sdpa" and out.stored == "float32":
        state.inside.add(stage.ref)
    if stage.op == lowp.SPLIT:  # which columns each head reads: no numbers to round
        state.values[stage.ref] = out.value
        state.data[stage.ref] = out.value
        return replace(stage, data=out.value)
    ideal = entry(operands, stage.params, r.exact()).value
    twin = stage.data
    f32 = np.dtype(np.float32)
    # errors in the units of what the stage is kept in; scaled float8 counts them all in the
    # float8 format's units (at each value's size), so that its stages can be compared
    unit = f32 if out.stored and not r.scaled else r.dtype
    error = _errors(out.value, stage.value, ideal, unit, out.scale)
    del ideal
    held = f32 if out.stored else r.dtype if out.scale == 1 else np.dtype(np.float64)
    data = state.keep(stage, out.value, held, r, out.meant)
    if out.stored == lowp.ACCUMULATOR and not r.scaled:
        kept = Msg("precision.tiles_kept")
    elif out.stored == lowp.INSIDE and not r.scaled:
        kept = Msg("precision.softmax_inside")
    elif out.stored in (lowp.SHOWN, lowp.SAID):  # its own note says why it is in float32
        kept = None
    elif r.scaled:
        kept = Msg(state.fp8_kept, dtype=str(r.dtype))
    elif r.policy == "sdpa":
        kept = Msg("precision.sdpa_kept", kernel=r.kernel)
    else:
        kept = Msg("precision.stored_f32")
    notes = [*out.notes, *chose, *([kept] if out.stored and kept is not None else [])]
    if stage.op == lowp.MASK and out.stored != lowp.SAID:  # (SAID: the rule's note says it)
        # −1e9 under naive, else finfo.min added (float32's where scaled float8 keeps scores)
        fill = {"naive": "−1e9", "sdpa": "−∞"}.get(r.policy) or _number(r.finfo_min())
        notes.append(Msg(f"precision.mask_{r.policy}", fill=fill, dtype=r.kept or str(r.dtype)))
    details = out.details or {}
    if out.params:  # the parameters as the dtype held them: what the cell arithmetic shows
        float64 = stage.params  # the twin's, computed from these
        stage = replace(stage, spec=replace(stage.spec, params={**stage.params, **out.params}))
        stage = replace(stage, twin_params=float64)
    said = "precision.stage_exact" if error.max_abs == 0 else "precision.stage_error"
    notes.append(Msg(said, **_error_words(error, r)))
    return replace(
        stage,
        data=data,
        inputs=tuple(
            state.data[o] if not isinstance(o, Const) else v
            for o, v in zip(stage.reads, operands, strict=True)
        ),
        twin=twin,
        error=error,
        notes=(*(n for n in _notes(stage, state) if n.key not in out.drops), *notes),
        row_max=details.get("row_max", stage.row_max),
        row_sum=details.get("row_sum", stage.row_sum),
    )


def _chosen(mine: np.ndarray, twins: np.ndarray, stage: Stage, r: lowp.Rounding) -> Msg:
    """Which queries keep other keys in the dtype than in the float64 twin (the first few, each
    with the keys it dropped and took), or that every query keeps the same ones."""
    rows = np.flatnonzero((mine != twins).any(axis=1))
    if not rows.size:
        return Msg("precision.selection_same", dtype=str(r.dtype))

    def keys(i: int, which: np.ndarray) -> str:
        return ", ".join(stage.cols[j] for j in np.flatnonzero(which[i])) or "—"

    said = "; ".join(
        f"{stage.rows[i]}: {keys(i, twins & ~mine)} → {keys(i, mine & ~twins)}" for i in rows[:6]
    ) + (" …" if rows.size > 6 else "")
    return Msg("precision.selection_changed", dtype=str(r.dtype), count=int(rows.size), rows=said)


def _instead(through: Callable[[Sequence[np.ndarray], lowp.Rounding], lowp.Out]) -> lowp.Rule:
    """A product's rule that computes it as its first operand's op says (`Out.product`)."""

    def rule(operands: Sequence[np.ndarray], params: Any, r: lowp.Rounding) -> lowp.Out:
        return through(operands, r)

    return rule


def _notes(stage: Stage, state: _State) -> tuple[Msg, ...]:
    """The spec's notes, and its remarks on these numbers: the dtype's (the plain run made
    them from float64's). Left out where they would not hold: the weights' read-out (it says a
    fully masked row has no weight, which eager's finite fill gives some) and any remark once a
    value is inf or NaN (a percentage of NaN)."""
    spec = stage.spec
    if spec.remarks is None or stage.op == lowp.SOFTMAX or not state.finite:
        return spec.notes
    if stage.topic in ("output.decode", "output.tiles"):  # float64's run against the dtype's:
        return spec.notes  # the note of the same run in the dtype says it (_against_whole)
    return spec.notes + spec.remarks(state.value_of)


def _errors(
    value: np.ndarray, twin: np.ndarray, ideal: np.ndarray, unit: Any, scale: float = 1.0
) -> Error:
    """max_abs and max_ulp against the twin, added_ulp against the op done exactly on the same
    operands: over the cells whose reference is finite (a mask's own −∞ aside); inf where a
    value turned inf or NaN. A tensor stored with a scale s (scaled float8): its unit in the
    last place is s × the dtype's at |x| / s.

    One temporary for the differences: a NaN among the counted cells makes the largest NaN,
    said as inf. Unscaled, each difference is divided by the power of two that starts its
    reference's binade (clamped at the dtype's smallest normal exponent, `_binade`) and the
    largest quotient times 2^(the dtype's mantissa bits): exactly the largest difference over
    `lowp.ulp`, both being powers of two apart, with one array less made per reference.

    Worked a block of rows at a time (`_BLOCK` cells): the temporaries stay in the processor's
    cache, about twice as fast on a 1024×1024 stage; the largest over the blocks is the
    largest over all."""
    import ml_dtypes

    info = ml_dtypes.finfo(unit)
    value, twin, ideal = np.asarray(value), np.asarray(twin), np.asarray(ideal)
    if value.ndim != 2 or value.size <= _BLOCK:
        return _block_errors(value, twin, ideal, unit, info, scale)
    rows = max(1, _BLOCK // value.shape[1])
    parts = [
        _block_errors(
            value[i : i + rows], twin[i : i + rows], ideal[i : i + rows], unit, info, scale
        )
        for i in range(0, value.shape[0], rows)
    ]
    return Error(*(max(part[k] for part in parts) for k in range(3)))


# the cells _errors works at a time (3 float64 temporaries of 256 KiB each)
_BLOCK = 32768


def _block_errors(
    value: np.ndarray, twin: np.ndarray, ideal: np.ndarray, unit: Any, info: Any, scale: float
) -> Error:
    """_errors of one block of rows (`info`: the unit's ml_dtypes.finfo)."""
    d = np.subtract(value, twin)
    np.abs(d, out=d)
    live = np.isfinite(twin)
    max_abs = _worst(d, live)
    if scale == 1:
        d /= _binade(twin, info.minexp)
        max_ulp = _worst(d, live) * 2.0**info.nmant
    else:
        d /= lowp.ulp(twin / scale, unit) * scale
        max_ulp = _worst(d, live)
    np.subtract(value, ideal, out=d)
    np.abs(d, out=d)
    if scale == 1:
        d /= _binade(ideal, info.minexp)
        added = _worst(d, np.isfinite(ideal)) * 2.0**info.nmant
    else:
        d /= lowp.ulp(ideal / scale, unit) * scale
        added = _worst(d, np.isfinite(ideal))
    return Error(max_abs, max_ulp, added)


def _worst(d: np.ndarray, live: np.ndarray) -> float:
    """The largest of d over the live cells; inf where one is NaN (a value turned NaN)."""
    worst = float(d.max(where=live, initial=0.0))
    return math.inf if math.isnan(worst) else worst


def _binade(x: np.ndarray, minexp: int) -> np.ndarray:
    """2^max(b, minexp) for each |x| in the binade 2^b (inf where x is inf or NaN): float64's
    exponent bits kept, its sign and mantissa cleared, in one new array."""
    bits = np.bitwise_and(np.asarray(x, dtype=np.float64).view(np.int64), 0x7FF0000000000000)
    out = bits.view(np.float64)
    np.maximum(out, 2.0**minexp, out=out)
    return out


def _number(value: float, digits: int = 6) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:,.{digits}g}".replace("-", "−")


def _error_words(error: Error, r: lowp.Rounding) -> dict[str, str]:
    return {
        "dtype": str(r.dtype),
        "abs": _number(error.max_abs),
        "ulp": _number(error.max_ulp, 3),
        "added": _number(error.added_ulp, 3),
    }


def _summary(
    stages: list[Stage], r: lowp.Rounding, dtype: str, policy: str, p: Problem, unfinite: set[Ref]
) -> Precision:
    """The first cell that turned inf or NaN (stage order, 1-based), with why, and the stage
    that added most error. `unfinite`: the stages with such a cell (the others are not searched)."""
    said = f"precision.policy.{policy}" + ("_fp8" if r.float8 else "")
    if policy == "sdpa":
        said = f"precision.policy.sdpa_{r.kernel}"
    # a layer that is not softmax attention says how it is computed in its own words
    own = [dict(f.lowp_policy) for f, _ in features.active(p) if f.lowp_policy]
    if own:
        said = own[0][policy + ("_fp8" if r.scaled else "")]
    notes = [Msg(said, dtype=dtype)]
    if p.tiles is not None:  # how the tiles keep their state
        kind = "naive" if policy == "naive" else "math" if r.kernel == "math" else "flash"
        kind = "fp8" if r.scaled else kind
        notes.append(Msg(f"precision.tiles.{kind}", dtype=dtype))
    if p.decode is not None:
        notes.append(Msg("precision.decode", dtype=dtype))
    notes.append(Msg("precision.approx", dtype=dtype))
    first = None
    for stage in stages:
        if stage.error is None or stage.ref not in unfinite:
            continue
        bad_cells = ~np.isfinite(stage.value)
        if r.policy == "sdpa" and stage.op == lowp.MASK and stage.allowed is not None:
            bad_cells &= stage.allowed  # the mask's own −∞ aside
        bad = np.argwhere(bad_cells)
        if bad.size:
            i, j = (int(t) for t in bad[0])
            first = (stage.id, stage.head, (i + 1, j + 1))
            notes.append(_why(stage, i, j, r))
            break
    scored = [s for s in stages if s.error is not None]
    top = max(scored, key=lambda s: _rank(s.error.added_ulp if s.error else 0.0), default=None)
    most = None if top is None else (top.id, top.head)
    if top is not None and top.error is not None:
        notes.append(
            Msg(
                "precision.most_added",
                stage=top.formula,
                head=top.head or 1,
                added=_number(top.error.added_ulp, 3),
                dtype=dtype,
            )
        )
    return Precision(dtype, policy, first, most, tuple(notes))


def _rank(x: float) -> float:
    return math.inf if math.isnan(x) else x


def _why(stage: Stage, i: int, j: int, r: lowp.Rounding) -> Msg:
    """Why cell (i, j) of the stage is inf or NaN, in words a student can repeat."""
    import ml_dtypes

    top = float(ml_dtypes.finfo(np.float32 if r.scaled else r.dtype).max)
    got = float(stage.value[i, j])
    where = {
        "stage": stage.formula,
        "head": stage.head or 1,
        "row": i + 1,
        "col": j + 1,
        "dtype": r.kept or str(r.dtype),
        "max": _number(top),
        "got": _number(got),
    }
    operands = stage.operands
    if stage.op == lowp.MASK and r.policy == "naive":
        return Msg("precision.why.fill", fill="−1e9", **where)
    if stage.op == lowp.MASK:
        s = float(operands[0][i, j])
        fill = r.finfo_min()
        return Msg("precision.why.mask", score=_number(s), fill=_number(fill), **where)
    if stage.op in lowp.SOFTMAX_OPS and math.isnan(got):
        return Msg("precision.why.nan_row", **where)
    entry = lowp.rule(stage.op)
    assert entry is not None
    exact = entry(operands, stage.params, r.exact()).value
    return Msg("precision.why.overflow", exact=_number(float(exact[i, j])), **where)
