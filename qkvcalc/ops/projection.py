"""A matrix product, as on the board: Q = X·W_Q + b_Q (a projection, `project`) and the
products that are not projections (`matmul`: the weighted sum A·V, the output projection).
Each cell is one row times one column."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix
from qkvcalc.ops.op import (
    Asked,
    Back,
    Candidate,
    Feeds,
    Literals,
    Op,
    Params,
    Shapes,
    rows_of,
    turned,
)
from qkvcalc.ops.rounding import Out, Rounding, product
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Ref, Spec, bias_params, d, dim_labels
from qkvcalc.records import NamedTuple


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return x @ w if b is None else x @ w + b


class Learned(NamedTuple):
    """What a head's projection of the layer's input is a slice of: the learned weight
    W_{letter} (the whole of it, [d_model, width], in the row layout) and the columns the head
    reads of it and of its bias. The backward gathers each head's gradient into the whole
    weight's (`_gather`)."""

    letter: str
    weight: np.ndarray
    cols: slice
    notes: tuple[Msg, ...] = ()  # what its gradient's stage says besides (a column order)
    topic: str = ""  # the words of the gradient of what it reads, when not its own (dX's)


def sliced(letter: str, weight: Matrix, bias: Matrix | None, cols: slice) -> dict[str, Any]:
    """The params of a head's projection X·W_{letter}[:, cols] + b_{letter}[cols]: its bias,
    and the weight it is a slice of."""
    return {**bias_params(bias, cols), "learned": Learned(letter, weight.values, cols)}


def learned(spec: Spec) -> Learned | None:
    """The weight a stage is a head's slice of, when it is a projection of the layer's input
    (Q, K, V, a feature's): the backward's walk stops there and gathers over the heads."""
    found: Learned | None = spec.params.get("learned")
    return found


def _row_times_column(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    # row i of A times column j of B
    yield from ((0, i, t) for t in range(shapes[0][1]))
    yield from ((1, t, j) for t in range(shapes[1][0]))


def _exact_matmul(ops: Sequence[Any], params: Params) -> Any:
    from qkvcalc.ops import rational as exact

    return exact.matmul(ops[0], ops[1], params.get("bias_exact")), ()


def _project(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d_model] @ [d_model, d_k] + [d_k] -> [n, d_k]
    return project(rows_of(ops[0], rows), ops[1], params.get("bias"))


def _product_back(ops: Sequence[np.ndarray], params: Params, out: np.ndarray, g: np.ndarray) -> Any:
    # out = A·B (+ b): ∂A = g·Bᵀ, ∂B = Aᵀ·g (the bias's ∂b = the column sums of g)
    a, b = ops
    return g @ b.T, a.T @ g


def _projection_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """The gradients of out = R·W (+ b), W given (W_O on the concat): d(R) = dO·Wᵀ, then
    dW = Rᵀ·dO (in the layout W was given in: --layout torch, out × in, turned) and db.

    The walk meets one projection: the output's. Those of X (Q, K, V, a feature's) read the
    layer's input, and their gradients are gathered over the heads after the walk."""
    read_ref, weight = at.operands
    read, grad, p = back.by[read_ref], back.by[g].symbol, back.problem
    name = at.names[1].removesuffix("ᵀ")  # W_O: as given, turned or not
    into = f"d({read.symbol})"  # a word (the concat), in brackets
    torch = p.layout == "torch"
    outer, inner = read.letters.split("×")[1], at.letters.split("×")[1]
    specs = [
        Spec(
            f"grad_{read.id}",
            at.head,
            "matmul_nt",
            (g, weight),
            f"{into} = {grad}·{name}ᵀ",
            read.rows,
            read.cols,
            names=(grad, name),
            inner=at.cols,
            symbol=into,
            letters=read.letters,
        ),
        Spec(
            f"grad_w{name.removeprefix('W_').lower()}",
            at.head,
            "matmul_tn",
            (g, read_ref) if torch else (read_ref, g),
            f"d{name} = {grad}ᵀ·{read.symbol}" if torch else f"d{name} = {read.symbol}ᵀ·{grad}",
            at.cols if torch else read.cols,
            read.cols if torch else at.cols,
            names=(grad, read.symbol) if torch else (read.symbol, grad),
            inner=at.rows,
            symbol=f"d{name}",
            letters=f"{inner}×{outer}" if torch else f"{outer}×{inner}",
            notes=(Msg("note.grad_layout_torch"),) if torch else (),
        ),
    ]
    if at.params.get("bias") is not None:
        width = len(at.cols)
        bias = "b_" + name.removeprefix("W_")
        specs.append(bias_grad(f"grad_b{bias[2:].lower()}", [g], (slice(None),), width, bias))
    return specs


def bias_grad(
    sid: str, grads: Sequence[Ref], cols: tuple[slice, ...], width: int, name: str, grad: str = ""
) -> Spec:
    """db = the column sums of the gradient of what the bias was added to (each head's
    columns of it: `cols`)."""
    grad = grad or f"d{name[-1]}"
    cols = tuple(slice(0, width) if c.stop is None else c for c in cols)
    return Spec(
        sid,
        None,
        "bias_grad",
        tuple(grads),
        f"d{name} = Σᵢ (row i of {grad})",
        ("",),
        dim_labels(width),
        params={"cols": cols, "width": width},
        symbol=f"d{name}",
        cell=f"d{name}" + "[{j}]",
        inner=(),
        letters="1×out",
    )


# ---- gathered over the heads: a learned weight's gradient, and its share of dX ----------------


class Share(NamedTuple):
    """One way the layer's input reaches the loss: through W_{letter}'s columns of each head
    (`cols`), whose products' gradients are `grads`, written `grad` (dQ, or dZ_G)."""

    letter: str
    weight: np.ndarray
    cols: tuple[slice, ...]
    grad: str
    grads: tuple[Ref, ...]


def _gather(back: Back, heads: Sequence[Spec], grads: Sequence[Ref]) -> tuple[list[Spec], Share]:
    """A learned weight's gradient from its heads' (`heads`: each a slice of it, `grads`:
    their gradients): dW = Xᵀ·[dP_1 … dP_H], each head's in its columns (a key/value head
    shared by several query heads sums theirs), db = the column sums, and the weight's share
    of dX, dP·Wᵀ (summed over the heads)."""
    first = heads[0]
    slices = [learned(s) for s in heads]
    whole = slices[0]
    assert whole is not None
    read = back.by[first.operands[0]]
    cols = tuple(w.cols for w in slices if w is not None)
    width, letter, grad = whole.weight.shape[1], whole.letter, d(first.symbol)
    x = first.names[0]  # how its formula names what it reads: X, (X + PE), source
    specs = [_weight_grad(back.problem, read, x, grads, cols, width, letter, grad)]
    if whole.notes:
        specs[0] = replace(specs[0], notes=(*specs[0].notes, *whole.notes))
    if first.params.get("bias") is not None:
        specs.append(bias_grad(f"grad_b{letter.lower()}", grads, cols, width, f"b_{letter}", grad))
    return specs, Share(letter, whole.weight, cols, grad, tuple(grads))


def _weight_grad(
    p: Any,
    read: Spec,
    x: str,
    grads: Sequence[Ref],
    cols: tuple[slice, ...],
    width: int,
    letter: str,
    grad: str,
) -> Spec:
    """dW = Xᵀ·dP: the rows of X (or the source; `x`, as the formulas name it) against each
    head's gradient, in the layout the weight was given in (--layout torch: out × in, turned)."""
    torch = p.layout == "torch"
    out = dim_labels(width)
    inner = read.letters.split("×")[-1] if "×" in read.letters else "d_model"  # r_q for C_Q
    return Spec(
        f"grad_w{letter.lower()}",
        None,
        "weight_grad",
        (read.ref, *grads),
        f"dW_{letter} = {x}ᵀ·{grad}" if not torch else f"dW_{letter} = ({grad})ᵀ·{x}",
        out if torch else read.cols,
        read.cols if torch else out,
        params={"cols": cols, "width": width, "torch": torch},
        inner=read.rows,
        symbol=f"dW_{letter}",
        letters=f"out×{inner}" if torch else f"{inner}×out",
        notes=_weight_notes(p, f"W_{letter}", cols),
        hint=("hint.grad_weight_torch" if torch else "hint.grad_weight", {"x": x, "p": grad[1:]}),
    )


def _weight_notes(p: Any, weight: str, cols: tuple[slice, ...]) -> tuple[Msg, ...]:
    """The heads' columns side by side; a key/value head's columns read by several query
    heads (GQA: fewer column blocks than heads) get their gradients summed."""
    notes: list[Msg] = []
    blocks = len({(c.start, c.stop) for c in cols})
    if blocks < len(cols):  # GQA: the K/V heads' columns, not the queries'
        if blocks > 1:
            notes.append(Msg("note.grad_kv_heads_side_by_side", heads=blocks, weight=weight))
        notes.append(Msg("note.grad_kv_shared", per=len(cols) // blocks, weight=weight))
    elif len(cols) > 1:
        notes.append(Msg("note.grad_heads_side_by_side", heads=len(cols), weight=weight))
    if p.layout == "torch":
        notes.append(Msg("note.grad_layout_torch"))
    return tuple(notes)


class Named(NamedTuple):
    """How the plan names an input's gradient: its stage id, the input's name (X, source), the
    gradient's shape in letters, and the notes the plan adds beside it (X + PE's)."""

    sid: str
    name: str
    letters: str
    notes: tuple[Msg, ...] = ()


def input_grad(read: Spec, named: Named, feeds: Sequence[str], shares: Sequence[Share]) -> Spec:
    """dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ: X reaches the loss by every projection that reads
    it (`feeds`: their letters; `shares`: those the loss reaches), and the chain rule adds
    the paths (each summed over the heads)."""
    name = named.name
    terms = " + ".join(f"{share.grad}·W_{share.letter}ᵀ" for share in shares)
    letters = [share.letter for share in shares]
    notes = (_paths_note(name, feeds, letters), *named.notes)
    return Spec(
        named.sid,
        None,
        "input_grad",
        tuple(g for share in shares for g in share.grads),
        f"d{name} = {terms}",
        read.rows,
        read.cols,
        params={
            "paths": tuple((share.weight, share.cols) for share in shares),
            "grads": tuple(share.grad for share in shares),
        },
        names=tuple(share.letter for share in shares),
        symbol=f"d{name}",
        letters=named.letters,
        notes=notes,
        hint=("hint.grad_input" if len(shares) > 1 else "hint.grad_input_one", {"terms": terms}),
        topic=_one_path(named.sid, feeds, letters),
    )


def _one_path(sid: str, feeds: Sequence[str], reach: Sequence[str]) -> str:
    """The why of an input that reaches the loss by one path alone (X, which feeds W_Q alone in
    cross-attention; the source, which feeds W_K and W_V, by W_K under `attend`): nothing for
    the chain rule to add. "": the plain why, which adds the paths."""
    one = {
        "grad_x": (["Q"], ["Q"], "grad_x.one"),
        "grad_source": (["K", "V"], ["K"], "grad_source.one"),
    }
    fed, reached, topic = one.get(sid, ([], [], ""))
    return topic if (list(feeds), list(reach)) == (fed, reached) else ""


def _paths_note(name: str, feeds: Sequence[str], reach: Sequence[str]) -> Msg:
    """What X (or the source) feeds, and which of those paths reach this loss."""
    said = {"x": name, "count": len(feeds), "names": ", ".join(feeds)}
    if len(reach) == len(feeds):
        return Msg("note.grad_paths" if len(feeds) > 1 else "note.grad_path_one", **said)
    key = "note.grad_paths_some" if len(reach) > 1 else "note.grad_path_one_of"
    return Msg(key, reach=", ".join(reach), reached=len(reach), **said)


def _product_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """The gradients of out = A·B: dB = Aᵀ·dO and dA = dO·Bᵀ, each a product of its own.

    A·V (the weighted sum) gives dV first, then dA. Q·Kᵀ reads K turned (its Kᵀ stage): the
    turn is folded into the products, dQ = d(Q·Kᵀ)·K and dK = d(Q·Kᵀ)ᵀ·Q, so Kᵀ gets no
    gradient of its own; the query's side comes first, as a teacher writes them."""
    a_ref, b_ref = at.operands
    a, b, grad = back.by[a_ref], back.by[b_ref], back.by[g].symbol
    h = at.head
    if not back.ops[b.op].turns:
        first = at.id == ids.OUTPUT  # the weighted sum's two gradients have a hint each
        return [
            Spec(
                f"grad_{b.id}",
                h,
                "matmul_tn",
                (a_ref, g),
                f"{d(b.symbol)} = {a.symbol}ᵀ·{grad}",
                b.rows,
                b.cols,
                names=(a.symbol, grad),
                inner=a.rows,
                symbol=d(b.symbol),
                letters=b.letters,
                hint=("hint.grad_v", {}) if first else None,
            ),
            Spec(
                f"grad_{a.id}",
                h,
                "matmul_nt",
                (g, b_ref),
                f"{d(a.symbol)} = {grad}·{b.symbol}ᵀ",
                a.rows,
                a.cols,
                names=(grad, b.symbol),
                inner=b.cols,
                symbol=d(a.symbol),
                letters=a.letters,
                hint=("hint.grad_weights", {}) if first else None,
            ),
        ]
    k_ref = b.operands[0]
    k = back.by[k_ref]
    return [
        Spec(
            f"grad_{a.id}",
            h,
            "matmul",
            (g, k_ref),
            f"{d(a.symbol)} = {grad}·{k.symbol}",
            a.rows,
            a.cols,
            names=(grad, k.symbol),
            inner=at.cols,
            symbol=d(a.symbol),
            letters=a.letters,
            topic=ids.TOPIC_GRAD_Q_SIDE,
            hint=("hint.grad_q_side", {"k": k.symbol}),
        ),
        Spec(
            f"grad_{k.id}",
            h,
            "matmul_tn",
            (g, a_ref),
            f"{d(k.symbol)} = {grad}ᵀ·{a.symbol}",
            k.rows,
            k.cols,
            names=(grad, a.symbol),
            inner=at.rows,
            symbol=d(k.symbol),
            letters=k.letters,
            topic=ids.TOPIC_GRAD_K_SIDE,
            hint=("hint.grad_k_side", {"q": a.symbol}),
        ),
    ]


# ---- each cell's arithmetic, as the writers write it out (given their Style) ----


def _product_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """One row times one column: q₁·k₂ = 1×1 + 2×0 = 1 (plus the bias, when there is one)."""
    a, b = stage.operands
    n = len(a[i])
    ea = eb = None
    if exact is not None and len(stage.operands_exact) == 2:
        ea, eb = stage.operands_exact
    rows = [style.exact_cell(ea, i, t) for t in range(n)]
    cols = [style.exact_cell(eb, t, j) for t in range(n)]
    terms, total = style.products(a[i], b[:, j], rows, cols)
    if stage.bias is not None:
        bias = stage.bias_exact[j] if exact is not None and stage.bias_exact else None
        terms += f" + {style.exact_factor(bias, float(stage.bias[j]))}"
        total += style.shown(float(stage.bias[j]), bias)
    left = f"{style.label(stage.cell, i + 1, j + 1)} = {terms}"
    return style.line(left, total, float(stage.value[i, j]), result)


# ---- the named mistakes the quiz looks for at its stages ----


_PROJECTED = {ids.Q: ("Q", "W_Q", "wq"), ids.K: ("K", "W_K", "wk"), ids.V: ("V", "W_V", "wv")}


def _projection_mistakes(asked: Asked) -> list[Candidate]:
    """Q, K, V: X·Wᵀ for a square W (or X·W as written, when W was given out×in)."""
    p, stage = asked.problem, asked.stage
    said = _PROJECTED.get(stage.id)
    if said is None or not stage.is_product or not p.projected or p.x is None:
        return []
    name, w, key = said
    weight = getattr(p, key)
    if weight is None:  # the latents stand in for W_Q, W_K, W_V: their own mistakes say it
        return []
    full = weight.values
    if full.shape[0] != full.shape[1]:
        return []  # Wᵀ does not fit where W goes
    width = p.d_k if key != "wv" else p.d_v
    head = stage.head or 1
    group = head if key == "wq" else p.kv_head_of(head)
    cols = slice((group - 1) * width, group * width) if stage.head is not None else slice(None)
    src = p.source if (key != "wq" and p.source is not None) else p.x
    value = src.values @ full.T[:, cols]
    if stage.bias is not None:
        value = value + stage.bias
    x = "source" if src is p.source else "X"
    if p.layout == "torch":
        msg = Msg("mistake.weight_torch_layout", name=name, w=w, x=x)
        return [("weight_torch_layout", msg, value)]
    return [("weight_transposed", Msg("mistake.weight_transposed", name=name, w=w, x=x), value)]


def _matmul_mistakes(asked: Asked) -> list[Candidate]:
    """Q·K instead of Q·Kᵀ, K·Qᵀ (rows are keys); in the backward, dQ without the scale."""
    from qkvcalc.ops.scale import grad_scale_missing

    if asked.stage.id != ids.SCORES:
        return grad_scale_missing(asked)
    found: list[Candidate] = []
    for q in asked.versions(ids.Q):
        for k in asked.versions(ids.K):
            right = q @ k.T
            if q.shape[1] == k.shape[0] and turned(q @ k, right):
                found.append(("k_not_transposed", Msg("mistake.k_not_transposed"), q @ k))
            if turned(k @ q.T, right):
                found.append(("scores_transposed", Msg("mistake.scores_transposed"), k @ q.T))
    return found


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_product(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # accumulated in float32 (the bias added there), rounded once: both policies alike
    return product(ops[0], ops[1], params.get("bias"), r)


# ---- in PyTorch (--format torch) ----


def torch_product(params: Params, names: Sequence[str], lit: Literals) -> str:
    """`A @ B`, `+ b` when the stage adds a bias."""
    bias = params.get("bias")
    return f"{names[0]} @ {names[1]}" + ("" if bias is None else f" + {lit.array(bias)}")


OPS: tuple[Op, ...] = (
    Op(
        "project",
        _project,
        _row_times_column,
        _exact_matmul,
        product=True,
        backward=_product_back,
        work=_product_work,
        mistake_ids=("weight_transposed", "weight_torch_layout"),
        mistakes=_projection_mistakes,
        lowp=_lowp_product,
        plan_back=_projection_grads,
        gather=_gather,
        in_code={  # a person's code (qkvcalc check): its pipeline's steps, replaced
            # X·Wᵀ: the weights read as PyTorch stores them (out×in)
            "layout_transposed": {"project": lambda x, w, b: x @ w.T if b is None else x @ w.T + b},
            # the biases left out
            "bias_missing": {"project": lambda x, w, b: x @ w},
            # W_O left out: the output is the concatenated heads
            "wo_missing": {"finish": lambda c, wo, bo, project: c},
        },
        torch=torch_product,
    ),
    Op(
        "matmul",
        _project,
        _row_times_column,
        _exact_matmul,
        product=True,
        backward=_product_back,
        work=_product_work,
        mistake_ids=("k_not_transposed", "scores_transposed", "grad_scale_missing"),
        mistakes=_matmul_mistakes,
        lowp=_lowp_product,
        plan_back=_product_grads,
        in_code={  # a person's code (qkvcalc check): its pipeline's steps, replaced
            # K·Qᵀ: the scores turned on their side (n = m)
            "scores_transposed": {"scores": lambda q, kt: (q @ kt).T},
            # Aᵀ·V instead of A·V (n = m)
            "weights_transposed": {"apply": lambda w, v: w.T @ v},
        },
        torch=torch_product,
    ),
)
