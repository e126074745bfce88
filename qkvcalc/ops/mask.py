"""The mask: a score where the key is allowed, −∞ where it is not (so its weight is 0)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.ops.op import Asked, Candidate, Feeds, Literals, Op, Params, Shapes, rows_of
from qkvcalc.ops.rounding import SAID, Out, Rounding
from qkvcalc.plan import ids


def apply_mask(s: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    # [n, m] where allowed, else −∞
    return np.where(allowed, s, -np.inf)


def _allowed_cell(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # a masked cell is −∞ whatever its score was
    if params["allowed"][i, j]:
        yield 0, i, j


def _exact_mask(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.masked(ops[0], params["allowed"]), ()


def _mask(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, m] where allowed, else −∞
    return apply_mask(ops[0], rows_of(params["allowed"], rows))


# ---- the named mistakes the quiz looks for at its stages ----


def mask_variants(problem: Any, allowed: np.ndarray) -> list[np.ndarray]:
    """The mask read the wrong way round: the complement, and for a causal mask the future."""
    wrong = [~allowed]
    if problem.mask_kind == "causal":
        wrong.append(np.triu(np.ones(allowed.shape, dtype=bool)))
    return wrong


def mask_msgs(problem: Any, allowed: np.ndarray) -> tuple[Msg, Msg]:
    """The sentences of the mask left out and of the mask read the wrong way round."""
    blocked = int((~allowed).sum())
    causal = problem.mask_kind == "causal"
    missing = Msg("mistake.mask_missing", count=blocked)
    inverted = Msg("mistake.mask_inverted_causal" if causal else "mistake.mask_inverted")
    return missing, inverted


def _masked_mistakes(asked: Asked) -> list[Candidate]:
    allowed = asked.stage.allowed
    if allowed is None:
        return []
    missing, inverted = mask_msgs(asked.problem, allowed)
    found: list[Candidate] = []
    for s in asked.versions(ids.SCALED):
        found.append(("mask_missing", missing, s))
        found.extend(
            ("mask_inverted", inverted, apply_mask(s, w))
            for w in mask_variants(asked.problem, allowed)
        )
    return found


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


NAIVE_FILL = -1e9  # the Annotated Transformer's −1e9 (masked_fill refuses it in float16)


def _lowp_mask(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    s, allowed = ops[0], params["allowed"]
    if params.get("wide") and r.policy != "naive":
        # scores a layer keeps in float32 (a sparse attention's selector): the fill added in float32
        fill = r.finfo_min()
        said = f"{fill:.6g}".replace("-", "−")
        note = Msg("precision.mask_wide", fill=said, dtype=r.kept or str(r.dtype))
        return Out(np.where(allowed, s, r.f32(r.work(s) + r.work(fill))), SAID, notes=(note,))
    if r.policy == "naive":  # torch.where(mask, s, −1e9): the fill itself, in the dtype
        return Out(np.where(allowed, s, r.to(NAIVE_FILL)))
    if r.policy == "sdpa":  # a boolean mask is −∞ to scaled_dot_product_attention (float32)
        return Out(np.where(allowed, s, -np.inf), "float32")
    # eager: the dtype's most negative finite number added (in float32, rounded)
    fill = r.finfo_min()
    return Out(np.where(allowed, s, r.keep(r.work(s) + r.work(fill))), r.kept)


# ---- the mistakes a person's code makes here (qkvcalc check: its pipeline's steps, replaced) ----


def same_shape(s: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The mask, when it has the scores' shape (a mutant's turned scores raise, never broadcast)."""
    if s.shape != allowed.shape:
        raise ValueError(f"a mask of {allowed.shape} on scores of {s.shape}")
    return allowed


def _causal_as(tri: Callable[[np.ndarray], np.ndarray]) -> Callable[[Any, int, int], Any]:
    """The keys a query may see, with a causal mask built by `tri` instead of the lower
    triangle (a 0/1 matrix mask as it is)."""

    def allowed(mask: Any, n: int, m: int) -> Any:
        if isinstance(mask, str):
            return tri(np.ones((n, m), dtype=bool))
        return None if mask is None else np.asarray(mask, dtype=bool)

    return allowed


IN_CODE: dict[str, dict[str, Callable[..., Any]]] = {
    # the mask left out
    "mask_ignored": {"allowed": lambda mask, n, m: None},
    # True read as "blocked": where(mask, -inf, s)
    "mask_inverted": {"mask": lambda s, allowed: np.where(same_shape(s, allowed), -np.inf, s)},
    # a causal mask that hides the diagonal too: a token may not see itself
    "causal_diagonal": {"allowed": _causal_as(lambda a: np.tril(a, -1))},
    # a causal mask turned to the future (the upper triangle)
    "causal_transposed": {"allowed": _causal_as(np.triu)},
    # softmax of the unmasked scores, then the masked weights set to 0 (rows no longer sum to 1)
    "mask_after_softmax": {
        "mask": lambda s, allowed: s,
        "after": lambda w, f, allowed: w if allowed is None else w * same_shape(w, allowed),
    },
    # a finite fill (finfo.min, −1e9): a fully masked row gets equal weights
    "masked_row_uniform": {
        "mask": lambda s, allowed: np.where(same_shape(s, allowed), s, np.finfo(np.float64).min)
    },
}


# ---- in PyTorch (--format torch): −∞ where the key is not allowed ----


def _torch_mask(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"{names[0]}.masked_fill(~{lit.flags(params['allowed'])}, -math.inf)"


OPS: tuple[Op, ...] = (
    Op(
        "mask",
        _mask,
        _allowed_cell,
        _exact_mask,
        rowwise=True,
        overflow=lambda p: False,
        backward=lambda ops, params, out, g: (np.where(params["allowed"], g, 0.0),),
        # [M ≠ −∞]: 1 where the key is allowed, 0 where it is masked (an Iverson bracket)
        grad_formula=lambda into, out, x, params: f"{out} ⊙ [M ≠ −∞]",
        mistake_ids=("mask_missing", "mask_inverted"),
        mistakes=_masked_mistakes,
        lowp=_lowp_mask,
        in_code=IN_CODE,
        torch=_torch_mask,
    ),
)
