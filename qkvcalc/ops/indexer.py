"""The DeepSeek sparse-attention indexer (DSA: DeepSeek-V3.2, GLM-MoE-DSA): beside multi-head
latent attention, a light scorer picks, for each query, the `top_k` keys it may attend to; every
other key is masked, as the causal mask masks the future. It needs `mla` (it reads the query
latent).

    "indexer": {"wq": W_IQ [r_q, H_I·D] (from C_Q; [d_model, H_I·D] when mla has no query
                latent), "wk": W_IK [d_model, D], "k_norm": [D], "k_norm_bias": [D],
                "eps": ε (1e-6), "weights": W_w [d_model, H_I], "heads": H_I,
                "rope_style": "half" | "pairs", "top_k": k}

    q_I = C_Q·W_IQ             stage `index_q`     (H_I index heads of D numbers)
    k_I = LayerNorm(X·W_IK)    stages `index_k`, `index_k_norm` (one key, shared by the heads)
    the first d_R numbers of each index head and of k_I turned by RoPE (the problem's
    frequencies, the indexer's own pairing)   stages `index_q_rot`, `index_k_rot`
    w = X·W_w                  stage `index_weights`
    I[i,j] = Σ_h (w[i,h]/√H_I)·ReLU(q_I[i,h]·k_I[j]/√D)        stage `index_scores`
    I + M (the causal mask)    stage `index_masked`
    the top_k keys of each row (ties: the earlier key)          stage `index_topk` (1 = kept)
    M_I = 0 where kept, −∞ elsewhere                             stage `index_mask`

and each head's `masked` stage masks what M_I masks too: the attention after it is MLA's own.
transformers' DeepseekV32Indexer (and GlmMoeDsaIndexer) computes the same on the CPU: the
reference kernel's Hadamard rotation of q and k (orthogonal: q·k unchanged) and its FP8 scoring
are skipped there, and here. The indexer runs under torch.no_grad(): the top-k is not
differentiable and no gradient reaches its weights through the loss (DeepSeek trains it with a
loss of its own), so a backward pass would hold the selection fixed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace as dataclass_replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix, positive, to_matrix, to_vector
from qkvcalc.labels import safe, shape_text, shown
from qkvcalc.ops import mask as mask_ops
from qkvcalc.ops import mla, qk_norm
from qkvcalc.ops import projection as projection_ops
from qkvcalc.ops import rounding as lowp
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes
from qkvcalc.ops.op import Feeds, Literals, Op, Params, Shapes, rows_of, whole_row
from qkvcalc.ops.rope import TORCH_ROTATE, pair_index, partner, rotate, torch_turn
from qkvcalc.ops.rope import _lowp as rope_lowp
from qkvcalc.plan.specs import Const, Ref, Spec, dim_labels
from qkvcalc.records import NamedTuple

KEYS = ("wq", "wk", "k_norm", "k_norm_bias", "eps", "weights", "heads", "rope_style", "top_k")
REQUIRED = ("wq", "wk", "weights", "heads", "top_k")


class Indexer(NamedTuple):
    """The indexer's weights, in the rows layout (y = x·W)."""

    wq: Matrix  # [r_q, H_I·D] (from C_Q), or [d_model, H_I·D] (from X)
    wk: Matrix  # [d_model, D]
    k_norm: np.ndarray  # [D]: the LayerNorm's weight
    k_bias: np.ndarray  # [D]: its bias
    eps: float
    weights: Matrix  # [d_model, H_I]
    heads: int  # H_I
    dim: int  # D
    rope: int  # d_R: the first d_R numbers of each index head and of k_I turn
    style: str  # "half" (DeepSeek-V3.2) or "pairs" (GLM-MoE-DSA)
    top_k: int
    from_latent: bool  # q_I reads C_Q (mla's query latent), else X
    layout: str  # as given (its weights are held, and echoed, in the rows layout)

    @property
    def scale(self) -> float:
        return float(self.dim) ** -0.5

    @property
    def weight_scale(self) -> float:
        return float(self.heads) ** -0.5


# ---- reading the key ----------------------------------------------------------------------------


def _field(key: str) -> str:
    """How a message names a field of the object: indexer.top_k."""
    return f"indexer.{key}"


def _fail(rule: str, /, **params: Any) -> QkvcalcError:
    return QkvcalcError(f"indexer.{rule}", **params)


def _matrix(raw: Any, key: str, shape: tuple[int, int | None], layout: str, exact: bool,
            rule: str, **said: Any) -> Matrix:  # fmt: skip
    """A weight of the indexer in the rows layout, its rows (and columns, when fixed) checked."""
    m = to_matrix(raw, f"indexer.{key}", exact=exact)
    given = m.values.shape
    if layout == "torch":  # nn.Linear's [out, in]
        exact_t = tuple(zip(*m.exact, strict=True)) if m.exact else None
        m = Matrix(m.values.T.copy(), exact_t)
    rows, cols = shape
    if m.values.shape[0] != rows or (cols is not None and m.values.shape[1] != cols):
        want = (rows, "…" if cols is None else cols)
        want_text = " × ".join(str(w) for w in (want[::-1] if layout == "torch" else want))
        raise _fail(rule, field=f"indexer.{key}", shape=shape_text(given), want=want_text,
                    layout=layout, **said)  # fmt: skip
    return m


def _vector(raw: Any, key: str, length: int, default: float) -> np.ndarray:
    if raw is None:
        return np.full(length, default)
    v = to_vector(raw, f"indexer.{key}").values[0]
    if v.size != length:
        raise _fail("norm_length", field=f"indexer.{key}", length=v.size, dim=length)
    return v


def _read(raw: Any, sizes: Sizes) -> Indexer:
    latent = sizes.stood
    if not isinstance(latent, mla.Latent):
        raise _fail("needs_mla")
    if not isinstance(raw, dict):
        raise _fail("not_object", value=shown(raw))
    for key in raw:
        if key not in KEYS:
            raise _fail("unknown_key", key=shown(key), known=", ".join(KEYS))
    missing = [key for key in REQUIRED if key not in raw]
    if missing:
        raise _fail("missing", missing=", ".join(missing))
    assert sizes.d_model is not None  # mla reads X
    heads = int(positive(raw["heads"], _field("heads"), integer=True).value)
    top_k = int(positive(raw["top_k"], _field("top_k"), integer=True).value)
    style = raw.get("rope_style", "half")
    if style not in ("half", "pairs"):
        raise _fail("rope_style", value=shown(style))
    from_latent = latent.q_norm is not None
    q_rows = latent.q_norm.size if latent.q_norm is not None else sizes.d_model
    wq = _matrix(raw["wq"], "wq", (q_rows, None), sizes.layout, sizes.exact, "q_rows",
                 what="C_Q" if from_latent else "X")  # fmt: skip
    cols = wq.values.shape[1]
    if cols % heads or cols // heads < latent.rope:
        raise _fail("q_width", cols=cols, heads=heads, rope=latent.rope)
    dim = cols // heads
    wk = _matrix(raw["wk"], "wk", (sizes.d_model, dim), sizes.layout, sizes.exact, "shape",
                 dim=dim, heads=heads)  # fmt: skip
    weights = _matrix(raw["weights"], "weights", (sizes.d_model, heads), sizes.layout,
                      sizes.exact, "shape", dim=dim, heads=heads)  # fmt: skip
    eps = float(positive(raw["eps"], _field("eps")).value) if "eps" in raw else 1e-6
    return Indexer(
        wq, wk, _vector(raw.get("k_norm"), "k_norm", dim, 1.0),
        _vector(raw.get("k_norm_bias"), "k_norm_bias", dim, 0.0), eps, weights, heads, dim,
        latent.rope, style, top_k, from_latent, sizes.layout,
    )  # fmt: skip


def _echo(ix: Indexer) -> dict[str, Any]:
    """The key again, in the rows layout, as plain lists (a JSON trace's "input", which gives
    every weight in the rows layout and says so, whatever layout they were given in)."""

    def laid(m: Matrix) -> list[Any]:
        return m.values.tolist()

    return {
        "wq": laid(ix.wq),
        "wk": laid(ix.wk),
        "k_norm": ix.k_norm.tolist(),
        "k_norm_bias": ix.k_bias.tolist(),
        "eps": ix.eps,
        "weights": laid(ix.weights),
        "heads": ix.heads,
        "rope_style": ix.style,
        "top_k": ix.top_k,
    }


# ---- the numbers --------------------------------------------------------------------------------


def turn_blocks(x: np.ndarray, angles: np.ndarray, params: Params) -> np.ndarray:
    """Each block of `width` columns (an index head) with its first `dims` turned by RoPE."""
    # [n, blocks·width], [n, dims/2] -> the same shape
    out = x.copy()
    width = params["width"]
    for b in range(x.shape[1] // width):
        block = slice(b * width, (b + 1) * width)
        out[:, block] = rotate(
            x[:, block], angles, params["style"], params["dims"], params["factor"]
        )
    return out


def relu_scores(q: np.ndarray, k: np.ndarray, params: Params) -> np.ndarray:
    """Each index head's ReLU(q·k/√D): [n, H_I·D], [m, D] -> [n, H_I, m]."""
    heads, dim = params["heads"], params["dim"]
    qh = q.reshape(q.shape[0], heads, dim)
    return np.maximum(np.einsum("nhd,md->nhm", qh, k) * params["scale"], 0.0)


def index_scores(q: np.ndarray, k: np.ndarray, w: np.ndarray, params: Params) -> np.ndarray:
    """I = Σ_h (w_h/√H_I)·ReLU(q_h·k/√D): [n, H_I·D], [m, D], [n, H_I] -> [n, m]."""
    return np.einsum("nh,nhm->nm", w * params["weight_scale"], relu_scores(q, k, params))


def keep_top(scores: np.ndarray, k: int) -> np.ndarray:
    """1 at the k largest scores of each row, 0 elsewhere ([n, m]); a masked key (−∞) is never
    kept, and of equal scores the earlier key goes first (a stable sort)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    kept = np.zeros(scores.shape)
    np.put_along_axis(kept, order, 1.0, axis=1)
    return np.where(np.isfinite(scores), kept, 0.0)


def _rope(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return turn_blocks(rows_of(ops[0], rows), rows_of(params["angles"], rows), params)


def _scores(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, H_I·D], [m, D], [n, H_I] -> [n, m]
    return index_scores(rows_of(ops[0], rows), ops[1], rows_of(ops[2], rows), params)


def _top(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return keep_top(rows_of(ops[0], rows), params["top_k"])


def _mask(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # 1/0 -> 0/−∞
    return np.where(rows_of(ops[0], rows) > 0, 0.0, -np.inf)


def _rope_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    width, dims = params["width"], params["dims"]
    start, own = j - j % width, j % width
    other = partner(own, dims, params["style"])
    if other != own:
        yield 0, i, start + other


def _score_feeds(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of q_I, row j of k_I, row i of the weights
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, j, t) for t in range(shapes[1][1]))
    yield from ((2, i, h) for h in range(shapes[2][1]))


def _same(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j


# ---- the cell arithmetic ------------------------------------------------------------------------


def _rope_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str | None:
    """[2,5]: 0.5×cos(1) − 0.25×sin(1) = 0.0598   (φ = 1×1): as RoPE's, in its index head."""
    p = stage.params
    width, dims, kind = p["width"], p["dims"], p["style"]
    own = j % width
    if own >= dims:
        return None
    (x,) = stage.operands
    other = j - own + partner(own, dims, kind)
    k = pair_index(own, dims, kind)
    theta = float(p["angles"][i, k])
    pos, omega = int(p["positions"][i]), float(p["inv_freq"][k])
    cos, sin = (r"\cos", r"\sin") if style.latex else ("cos", "sin")
    angle = style.num(theta)
    xa, xb = float(x[i, j]), float(x[i, other])
    a, b = style.factor(xa), style.factor(xb)
    first = own < partner(own, dims, kind)
    n, at = style.shown, style.shown(theta)
    total = n(xa) * math.cos(at) + (-1 if first else 1) * n(xb) * math.sin(at)
    sign = style.minus if first else "+"
    turned = f"{a}{style.times}{cos}({angle}) {sign} {b}{style.times}{sin}({angle})"
    if p["factor"] != 1:
        turned = f"{style.num(p['factor'])}{style.times}({turned})"
        total *= n(p["factor"])
    phi = r"\varphi" if style.latex else "φ"
    line = style.line(f"{style.at(i + 1, j + 1)}{turned}", total, float(stage.value[i, j]), result)
    return type(line)(f"{line}   ({phi} = {pos}{style.times}{style.num(omega)})", line.approx)


def _score_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[2,1]: 0.7071×ReLU(0.5) + 0.7071×ReLU(−0.25) = 0.3536: each index head's weight (÷ √H_I)
    times the ReLU of its q·k (÷ √D), summed over the heads."""
    q, k, w = stage.operands
    p = stage.params
    dim = p["dim"]
    relu = r"\mathrm{ReLU}" if style.latex else "ReLU"
    n = style.shown
    terms, total = [], 0.0
    for h in range(p["heads"]):
        weight = float(w[i, h]) * p["weight_scale"]
        score = float(q[i, h * dim : (h + 1) * dim] @ k[j]) * p["scale"]
        terms.append(f"{style.factor(weight)}{style.times}{relu}({style.num(score)})")
        total += n(weight) * max(n(score), 0.0)
    left = f"{style.at(i + 1, j + 1)}" + " + ".join(terms)
    return style.line(left, total, float(stage.value[i, j]), result)


def _top_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[3,1]: 0.2500 → #2/3 ≤ k (2) → 1: second largest of the row's three allowed keys, within
    the top 2: kept."""
    (scores,) = stage.operands
    row = scores[i]
    s = float(row[j])
    if not np.isfinite(s):
        return f"{style.at(i + 1, j + 1)}{style.num(s)} → {result}"
    allowed = int(np.isfinite(row).sum())
    ahead = int((row > s).sum() + (row[:j] == s).sum())  # larger, or equal and earlier
    top_k = stage.params["top_k"]
    # its place among the row's allowed keys, against k
    place = ("\\le" if style.latex else "≤") if ahead < top_k else ">"
    number = r"\#" if style.latex else "#"  # its place: #2 of 3 allowed keys
    said = f"{number}{ahead + 1}/{allowed} {place} k ({top_k})"
    return f"{style.at(i + 1, j + 1)}{style.num(s)} → {said} → {result}"


def _mask_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[3,1]: kept 1 → 0 (a key not kept: −∞)."""
    return f"{style.at(i + 1, j + 1)}{style.num(float(stage.operands[0][i, j]))} → {result}"


# ---- the named mistakes -------------------------------------------------------------------------


def _score_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The heads' ReLU scores summed without their weights w (the per-head weights left out),
    and the weights applied to q·k before the ReLU (ReLU left out)."""
    p = stage.params
    found: list[Candidate] = []
    for q in versions(stage.reads[0][0]):
        for k in versions(stage.reads[1][0]):
            if q.shape[1] != p["heads"] * p["dim"] or k.shape[1] != p["dim"]:
                continue
            ones = np.full((q.shape[0], p["heads"]), 1 / p["weight_scale"])
            found.append(("index_weights_missing", Msg("mistake.index_weights_missing"),
                          index_scores(q, k, ones, p)))  # fmt: skip
            qh = q.reshape(q.shape[0], p["heads"], p["dim"])
            raw = np.einsum("nhd,md->nhm", qh, k) * p["scale"]
            for w in versions(stage.reads[2][0]):
                if w.shape == (q.shape[0], p["heads"]):
                    plain = np.einsum("nh,nhm->nm", w * p["weight_scale"], raw)
                    found.append(("index_relu_missing", Msg("mistake.index_relu_missing"), plain))
    return found


def _top_mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """Every allowed key kept (the top-k ignored), or a top-k taken per index head, of each
    head's own weighted ReLU scores, and the keys any head chose kept (instead of the top-k of
    their sum)."""
    p = stage.params
    found: list[Candidate] = []
    for scores in versions(stage.reads[0][0]):
        found.append(("index_topk_ignored", Msg("mistake.index_topk_ignored", top_k=p["top_k"]),
                      np.where(np.isfinite(scores), 1.0, 0.0)))  # fmt: skip
    per_head = p.get("per_head")
    if per_head is not None:
        q_sid, k_sid, w_sid = per_head
        for q, k, w in zip(versions(q_sid), versions(k_sid), versions(w_sid), strict=False):
            heads = relu_scores(q, k, p["of"]) * (w * p["of"]["weight_scale"])[:, :, None]
            allowed = np.isfinite(stage.operands[0])
            union = np.zeros(allowed.shape)
            for h in range(heads.shape[1]):
                union = np.maximum(union, keep_top(np.where(allowed, heads[:, h], -np.inf),
                                                   p["top_k"]))  # fmt: skip
            found.append(("index_topk_per_head", Msg("mistake.index_topk_per_head"), union))
    return found


# ---- the stages ---------------------------------------------------------------------------------


def _x(p: Any) -> tuple[Ref, str]:
    return (("x_pe", None), "(X + PE)") if p.variants.pe is not None else (("x", None), "X")


def _project(sid: str, operand: Ref, name: str, weight: Matrix, w_name: str, p: Any,
             symbol: str, letters: str, notes: tuple[Msg, ...] = ()) -> Spec:  # fmt: skip
    return Spec(
        sid,
        None,
        "project",
        (operand, Const(weight.values, weight.exact)),
        f"{symbol} = {name}·{w_name}",
        p.tokens,
        dim_labels(weight.values.shape[1]),
        names=(name, w_name),
        inner=dim_labels(weight.values.shape[0]),
        cell=symbol + "[{i},{j}]",
        symbol=symbol,
        letters=letters,
        notes=notes,
        hint=("hint.proj", {"x": name, "w": w_name, "b": ""}),
    )


def _turn(sid: str, source: Ref, src: str, ix: Indexer, turn: Any, p: Any, blocks: int) -> Spec:
    """q_I's (or k_I's) first d_R numbers of each index head turned, at the tokens' positions."""
    symbol = "q_I_rot" if sid == "index_q_rot" else "k_I_rot"
    positions = p.variants.positions
    return Spec(
        sid,
        None,
        "index_rope",
        (source,),
        f"{symbol} = RoPE({src}, pos)",
        p.tokens,
        dim_labels(blocks * ix.dim),
        params={
            "style": ix.style,
            "dims": ix.rope,
            "width": ix.dim,
            "factor": turn.attention_factor,
            "angles": turn.angles(positions),
            "positions": positions,
            "inv_freq": turn.inv_freq,
        },
        notes=(Msg(f"note.index_rope_{ix.style}", rope=ix.rope, dim=ix.dim, half=ix.rope // 2),),
        symbol=symbol,
        letters="n×H_I·D" if blocks > 1 else "n×D",
        hint=("hint.index_rope", {"src": src}),
    )


def stages(p: Any, ix: Indexer, x_ref: Ref, x_name: str, allowed: np.ndarray | None) -> list[Spec]:
    """The indexer's stages before the heads, from X and the query latent to M_I (`allowed`:
    the keys the mask allows before the indexer chooses, None: all)."""
    if ix.from_latent:
        q_source, q_name = ("c_q_norm", None), "C_Q"
    else:
        q_source, q_name = x_ref, x_name
    q = _project("index_q", q_source, q_name, ix.wq, "W_IQ", p, "q_I", "n×H_I·D",
                 (Msg("note.index_q", heads=ix.heads, dim=ix.dim, source=q_name),))  # fmt: skip
    k = _project("index_k", x_ref, x_name, ix.wk, "W_IK", p, "k_I", "n×D",
                 (Msg("note.index_k", dim=ix.dim, heads=ix.heads),))  # fmt: skip
    norm = Spec(
        "index_k_norm",
        None,
        "layernorm",
        (k.ref,),
        "k_I_norm = LayerNorm(k_I)",
        p.tokens,
        dim_labels(ix.dim),
        params={"weight": ix.k_norm, "bias": ix.k_bias, "eps": ix.eps},
        notes=(Msg("note.layernorm", eps=f"{ix.eps:g}"),),
        hint=("hint.layernorm", {"src": "k_I"}),
        symbol="k_I_norm",
        letters="n×D",
    )
    specs = [q, k, norm]
    q_ref, k_ref, q_symbol, k_symbol = q.ref, norm.ref, "q_I", "k_I_norm"
    turn = p.variants.features.get("rope")
    if turn is not None:
        q_rot = _turn("index_q_rot", q.ref, "q_I", ix, turn, p, ix.heads)
        k_rot = _turn("index_k_rot", norm.ref, "k_I_norm", ix, turn, p, 1)
        specs += [q_rot, k_rot]
        q_ref, k_ref, q_symbol, k_symbol = q_rot.ref, k_rot.ref, q_rot.symbol, k_rot.symbol
    w = _project("index_weights", x_ref, x_name, ix.weights, "W_w", p, "w", "n×H_I",
                 (Msg("note.index_weights", heads=ix.heads),))  # fmt: skip
    specs.append(w)
    of = {"heads": ix.heads, "dim": ix.dim, "scale": ix.scale, "weight_scale": ix.weight_scale}
    scores = Spec(
        "index_scores",
        None,
        "index_score",
        (q_ref, k_ref, w.ref),
        "I = Σ_h (w_h/√H_I)·ReLU(q_h·kᵀ/√D)",
        p.tokens,
        p.source_tokens,
        params=of,
        notes=(Msg("note.index_scores", heads=ix.heads, dim=ix.dim, q=q_symbol, k=k_symbol),),
        symbol="I",
        letters="n×m",
        hint=("hint.index_scores", {}),
    )
    specs.append(scores)
    per_head = (q_ref[0], k_ref[0], w.id)
    return [*specs, *_chosen(p, ix, scores.ref, allowed, {"per_head": per_head, "of": of})]


def _chosen(p: Any, ix: Indexer, scores: Ref, allowed: np.ndarray | None, reads: Params
            ) -> list[Spec]:  # fmt: skip
    """I + M (with a mask), each row's top-k, and the mask M_I it gives (`reads`: the stages
    the quiz's per-head mistake reads, and the scores' parameters)."""
    specs: list[Spec] = []
    chosen_from, symbol = scores, "I"
    if allowed is not None:
        specs.append(
            Spec(
                "index_masked",
                None,
                "mask",
                (scores,),
                "I + M",
                p.tokens,
                p.source_tokens,
                # `wide`: the indexer's scores are float32's (--dtype's mask rule keeps them so)
                params={"allowed": allowed, "wide": True},
                notes=(Msg("note.index_masked"),),
                symbol="I+M",
                letters="n×m",
                hint=("hint.masked", {"src": "I"}),
            )
        )
        chosen_from, symbol = ("index_masked", None), "I+M"
    top = Spec(
        "index_topk",
        None,
        "top_k",
        (chosen_from,),
        f"top-{ix.top_k}({symbol})",
        p.tokens,
        p.source_tokens,
        # `before`: the keys allowed before it chooses (--dtype's rule keeps its choice in them)
        params={"top_k": ix.top_k, "before": allowed, **reads},
        notes=(Msg("note.index_topk", top_k=ix.top_k, m=p.m),),
        symbol="keep",
        letters="n×m",
        hint=("hint.index_topk", {"top_k": ix.top_k, "src": symbol}),
        remarks=_ties(chosen_from, ix.top_k, p.tokens),
    )
    kept = Spec(
        "index_mask",
        None,
        "index_mask",
        (top.ref,),
        "M_I = 0 where kept, −∞ elsewhere",
        p.tokens,
        p.source_tokens,
        notes=(Msg("note.index_mask"),),
        symbol="M_I",
        letters="n×m",
        hint=("hint.index_mask", {}),
    )
    return [*specs, top, kept]


def tied_rows(scores: np.ndarray, k: int) -> list[int]:
    """The rows (0-based) where equal scores straddle the cut: the k-th largest allowed score
    equals the next one, so which of them are kept is a rule (here: the earlier keys), not the
    numbers."""
    out = []
    for i, row in enumerate(scores):
        finite = np.sort(row[np.isfinite(row)])[::-1]
        if finite.size > k and finite[k - 1] == finite[k]:
            out.append(i)
    return out


def _ties(source: Ref, k: int, tokens: tuple[str, ...]) -> Callable[..., tuple[Msg, ...]]:
    """A note on the top-k where a tie straddles the cut (torch.topk breaks such ties in an
    order of its own)."""

    def remark(value_of: Callable[[Ref], np.ndarray]) -> tuple[Msg, ...]:
        rows = tied_rows(value_of(source), k)
        if not rows:
            return ()
        said = ", ".join(f"{i + 1} ({safe(tokens[i])})" for i in rows[:8]) + (
            " …" if len(rows) > 8 else ""
        )
        return (Msg("note.index_tie", rows=said, count=len(rows)),)

    return remark


def _before_heads(p: Any, ix: Indexer, x_ref: Ref, x_name: str, allowed: Any) -> list[Spec]:
    return stages(p, ix, x_ref, x_name, allowed)


# the ops the selection is worked out with at plan time: the stages' own
def _table() -> dict[str, Op]:
    ops = (*projection_ops.OPS, *mask_ops.OPS, *qk_norm.FEATURE.ops, *OPS)
    return {op.name: op for op in ops}


def _select(p: Any, ix: Indexer, allowed: np.ndarray | None) -> np.ndarray:
    """The keys each query keeps ([n, m] bool): the indexer's stages run with their own ops
    (what the `index_topk` stage shows), and the keys allowed before."""
    assert p.x is not None
    x_ref, x_name = _x(p)
    values: dict[Any, np.ndarray] = {("x", None): p.x.values}
    if p.variants.pe is not None:
        values[("x_pe", None)] = p.x.values + p.variants.pe
    latent = p.variants.features["mla"]
    table = _table()
    for spec in (*mla.shared(p, latent, x_ref, x_name), *stages(p, ix, x_ref, x_name, allowed)):
        operands = [o.value if isinstance(o, Const) else values[o] for o in spec.operands]
        values[spec.ref] = table[spec.op].compute(operands, spec.params, None)
    kept = values[("index_topk", None)] > 0
    return kept if allowed is None else kept & allowed


# ---- the backward pass: the choice held fixed --------------------------------------------------


def _back_notes(p: Any, ix: Indexer, specs: list[Spec]) -> list[Spec]:
    """The note that the backward holds the indexer's choice fixed, on the first gradient that
    goes back through a head's mask (M_I is in that mask; the first gradient stage without
    one): the top-k has no gradient, and the indexer's weights get none from this loss."""
    said = Msg("note.indexer_grad", top_k=ix.top_k, reads="C_Q, X" if ix.from_latent else "X")
    at = next((k for k, s in enumerate(specs) if s.params.get("op") == "mask"), 0)
    out = list(specs)
    out[at] = dataclass_replace(out[at], notes=(*out[at].notes, said))
    return out


# ---- --format torch -----------------------------------------------------------------------------


def _torch(p: Any, ix: Indexer, literal: Callable[[Any], str], num: Callable[[float], str]
           ) -> list[str]:  # fmt: skip
    """Lines that narrow `allowed` ([n, m] bool) to the indexer's top-k, from X (and C_Q)."""
    latent = p.variants.features["mla"]
    out = [
        "# The sparse-attention indexer (DSA): ReLU(q_I . k_I / sqrt(D)) per index head, weighted",
        "# by w / sqrt(H_I), summed; each query keeps its top_k allowed keys (ties: the earlier).",
        f"W_IQ = t({literal(ix.wq.values)})  # [r_q or d_model, H_I*D]",
        f"W_IK = t({literal(ix.wk.values)})  # [d_model, D]",
        f"W_w = t({literal(ix.weights.values)})  # [d_model, H_I]",
        f"H_I, D, top_k = {ix.heads}, {ix.dim}, {ix.top_k}",
    ]
    if ix.from_latent:
        out.append(f"q_src = rms_norm(X @ t({literal(latent.wq_a.values)}), "
                   f"t({literal(latent.q_norm)}))  # C_Q")  # fmt: skip
    else:
        out.append("q_src = X")
    out += [
        "q_I = (q_src @ W_IQ).view(n, H_I, D)",
        f"k_I = torch.nn.functional.layer_norm(X @ W_IK, (D,), t({literal(ix.k_norm)}), "
        f"t({literal(ix.k_bias)}), {num(ix.eps)})",
    ]
    turn = p.variants.features.get("rope")
    if turn is not None:
        half = ix.rope // 2
        first, second = (
            (f"..., :{half}", f"..., {half}:{ix.rope}")
            if ix.style == "half"
            else (f"..., 0:{ix.rope}:2", f"..., 1:{ix.rope}:2")
        )
        out += [
            f"angles_I = torch.tensor({p.variants.positions.tolist()}, dtype=torch.float64)"
            f"[:, None] * t({literal(turn.inv_freq)})[None, :]",
            f"cos_I, sin_I = angles_I.cos() * {num(turn.attention_factor)}, "
            f"angles_I.sin() * {num(turn.attention_factor)}",
            "",
            "",
            "def turn_I(x, cos, sin):",
            f"    out, a, b = x.clone(), x[{first}], x[{second}]",
            f"    out[{first}], out[{second}] = a * cos - b * sin, b * cos + a * sin",
            "    return out",
            "",
            "",
            "q_I = turn_I(q_I, cos_I[:, None, :], sin_I[:, None, :])",
            "k_I = turn_I(k_I, cos_I, sin_I)",
        ]
    out += [
        "relu = torch.relu(torch.einsum('nhd,md->nhm', q_I, k_I) * D**-0.5)",
        "index = torch.einsum('nh,nhm->nm', (X @ W_w) * H_I**-0.5, relu)  # [n, m]",
        "index = index.masked_fill(~allowed, float('-inf'))",
        "order = torch.sort(index, dim=1, descending=True, stable=True).indices[:, :top_k]",
        "kept = torch.zeros(n, m, dtype=torch.bool).scatter(1, order, True)",
        "allowed = allowed & kept  # the indexer's mask folded into the attention's",
    ]
    return out


def _header(ix: Indexer) -> list[tuple[str, dict[str, Any]]]:
    return [("ui.variant.indexer", {"heads": ix.heads, "dim": ix.dim, "top_k": ix.top_k,
                                    "style": ix.style})]  # fmt: skip


# ---- in PyTorch (--format torch) ----

_TORCH_DEFS = """\
def turn_blocks(x, angles, style, dims, factor, width):
    \"\"\"Each block of width columns (an index head) with its first dims turned by RoPE.\"\"\"
    out = x.clone()
    for b in range(x.shape[1] // width):
        block = slice(b * width, (b + 1) * width)
        out[:, block] = rotate(x[:, block], angles, style, dims, factor)
    return out


def index_scores(q, k, w, heads, dim, scale, weight_scale):
    \"\"\"I = sum_h (w_h * weight_scale) * ReLU(q_h . k * scale): [n, m].\"\"\"
    qh = q.reshape(q.shape[0], heads, dim)
    relu = torch.clamp(torch.einsum("nhd,md->nhm", qh, k) * scale, min=0.0)
    return torch.einsum("nh,nhm->nm", w * weight_scale, relu)


def keep_top(scores, k):
    \"\"\"1 at each row's k largest scores (the earlier key first of equals), never at -inf.\"\"\"
    order = torch.sort(-scores, dim=1, stable=True).indices[:, :k]
    kept = torch.zeros_like(scores).scatter_(1, order, 1.0)
    return torch.where(torch.isfinite(scores), kept, 0.0)
"""


def _torch_rope(params: Params, names: Sequence[str], lit: Literals) -> str:
    angles = lit.array(params["angles"])
    return f"turn_blocks({names[0]}, {angles}, {torch_turn(params, lit)}, {params['width']})"


def _torch_scores(params: Params, names: Sequence[str], lit: Literals) -> str:
    sizes = f"{params['heads']}, {params['dim']}, {lit.num(params['scale'])}"
    return f"index_scores({', '.join(names)}, {sizes}, {lit.num(params['weight_scale'])})"


def _torch_mask(params: Params, names: Sequence[str], lit: Literals) -> str:
    return f"torch.where({names[0]} > 0, torch.zeros_like({names[0]}), -math.inf)"


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----------------------


def _lowp_rope(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """Each index head's block turned as RoPE's own rule turns a head (apply_rotary_pos_emb on
    the dtype's q_I and k_I: cos and sin in float32 rounded to the dtype, each product and the
    sum rounded)."""
    x, width = ops[0], params["width"]
    out, said = x.copy(), None
    for b in range(x.shape[1] // width):
        block = slice(b * width, (b + 1) * width)
        said = rope_lowp([x[:, block]], params, r)
        out[:, block] = said.value
    assert said is not None
    return lowp.Out(out, said.stored, notes=said.notes)


def _lowp_scores(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """I = Σ_h (w_h/√H_I)·ReLU(q_h·k/√D). eager (DeepseekV32Indexer's CPU path): q.float() @
    k.float() times 1/√D, ReLU, w.float() times 1/√H_I, and the sum over the heads (a matmul),
    each in float32: the scores kept in float32. naive: every op in the dtype."""
    q, k, w = ops
    heads, dim = params["heads"], params["dim"]
    rnd = r.to if r.policy == "naive" else r.f32
    qh = q.reshape(q.shape[0], heads, dim)
    scores = rnd(np.einsum("nhd,md->nhm", qh, k))  # each head's q·k summed in float32
    scores = np.maximum(rnd(scores * params["scale"]), 0.0)
    weights = rnd(w * params["weight_scale"])
    value = rnd(np.einsum("nh,nhm->nm", weights, scores))
    if r.policy == "naive":
        return lowp.Out(value, notes=(Msg("precision.index_scores_naive", dtype=str(r.dtype)),))
    note = Msg("precision.index_scores_eager", dtype=r.kept or str(r.dtype))
    return lowp.Out(value, lowp.SAID, notes=(note,))


def _lowp_top(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """The top-k of the dtype's scores (ties: the earlier key), within the keys allowed before:
    the choice every head's mask then applies (`keeps`)."""
    kept = keep_top(ops[0], params["top_k"]) > 0
    before = params.get("before")
    if before is not None:
        kept &= before
    return lowp.Out(kept.astype(np.float64), keeps=kept)


def _lowp_mask(ops: Sequence[np.ndarray], params: Params, r: lowp.Rounding) -> lowp.Out:
    """0 where kept, −∞ elsewhere: nothing to round (its −∞ meant, not an overflow)."""
    return lowp.Out(np.where(ops[0] > 0, 0.0, -np.inf), meant=True)


OPS: tuple[Op, ...] = (
    Op(
        "index_rope",
        _rope,
        _rope_feeds,
        rowwise=True,
        overflow=lambda params: False,
        work=_rope_work,
        torch=_torch_rope,
        torch_defs=TORCH_ROTATE + "\n\n" + _TORCH_DEFS,
        lowp=_lowp_rope,
    ),
    Op(
        "index_score",
        _scores,
        _score_feeds,
        rowwise=True,
        work=_score_work,
        torch=_torch_scores,
        torch_defs=_TORCH_DEFS,
        lowp=_lowp_scores,
    ),
    Op(
        "top_k",
        _top,
        whole_row,
        rowwise=True,
        overflow=lambda params: False,
        work=_top_work,
        torch=lambda params, names, lit: f"keep_top({names[0]}, {params['top_k']})",
        torch_defs=_TORCH_DEFS,
        lowp=_lowp_top,
    ),
    Op(
        "index_mask",
        _mask,
        _same,
        rowwise=True,
        overflow=lambda params: False,
        work=_mask_work,
        torch=_torch_mask,
        lowp=_lowp_mask,
    ),
)


FEATURE = Feature(
    name="indexer",
    read=_read,
    ops=OPS,
    mistakes=(
        Mistakes("index_score", ("index_weights_missing", "index_relu_missing"), _score_mistakes),
        Mistakes("top_k", ("index_topk_ignored", "index_topk_per_head"), _top_mistakes),
    ),
    # before the heads, counted with each (a bound): q_I twice, k_I three times, w, four n×m
    elements=lambda ix, n, m, d_k: (
        2 * n * ix.heads * ix.dim + 3 * n * ix.dim + n * ix.heads + 4 * n * m
    ),
    header=_header,
    echo=_echo,
    words=("ReLU", "RoPE", "LayerNorm"),
    mask_notes=lambda ix: (Msg("note.indexer_folded", top_k=ix.top_k),),
    worksheet_notes=(
        "note.index_q",
        "note.index_k",
        "note.index_weights",
        "note.index_rope_half",
        "note.index_rope_pairs",
        "note.index_masked",
        "note.index_mask",
        "note.indexer_folded",
    ),
    torch_module_gap="it has no indexer that chooses each query's keys",
    before_heads=_before_heads,
    select=_select,
    torch_select=_torch,
    no_decode="indexer.decode",
    back_notes=_back_notes,
    train_note="train.indexer_fixed",
)
