"""The output gate (Qwen3-Next, Qwen3.5): each head's output multiplied, cell by cell, by a gate
that the token itself decides, before the heads are joined and W_O mixes them. A gate near 0
silences that column of the head for that token; near 1 it lets it through.

    "wg": d_model × H·d_v (in the problem's layout), "bg": H·d_v (optional),
    "gate_act": "sigmoid" (the default) or "softplus" (optional)
    per head h:  gate_logits  Z_G = X·W_G[:, cols of h] + b_G[cols of h]
                 gate         G = σ(Z_G) = 1 / (1 + e^(−Z_G))
                              (gate_act "softplus": G = softplus(Z_G) = ln(1 + e^(Z_G)))
                 gated        out ⊙ G                       (the concat reads it)

transformers' Qwen3-Next computes the same as `attn_output * torch.sigmoid(gate)`, its gate the
second half of each head's columns of q_proj; here W_G is a matrix of its own. Laguna's gate is
`F.softplus(self.g_proj(hidden_states).float()).to(attn_output.dtype)`: positive, unbounded,
computed in float32 and rounded to the model's dtype.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.cells import Matrix, to_matrix, to_vector
from qkvcalc.labels import shape_text
from qkvcalc.ops.base import Candidate, Feature, Mistakes, Sizes
from qkvcalc.ops.op import Back, Feeds, Op, Params, Shapes, same_cell
from qkvcalc.ops.projection import sliced
from qkvcalc.ops.rounding import Out, Rounding
from qkvcalc.plan.specs import Ref, Spec, columns_of, dim_labels, span
from qkvcalc.records import NamedTuple


class Gate(NamedTuple):
    w: Matrix  # [d_model, H·d_v], in the row layout
    b: Matrix | None  # [1, H·d_v]
    heads: int
    layout: str  # as the user gave W_G: its echo and the torch script write it that way
    act: str = "sigmoid"  # gate_act: "sigmoid" (Qwen3-Next) or "softplus" (Laguna)


ACTS = ("sigmoid", "softplus")


def sigmoid(z: np.ndarray) -> np.ndarray:
    # [n, d] -> [n, d], each in (0, 1); e^(−|z|) never overflows
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def softplus(z: np.ndarray) -> np.ndarray:
    # [n, d] -> [n, d], each > 0: ln(1 + e^z), as ln(e^0 + e^z) that never overflows
    return np.logaddexp(0.0, z)


# ---- reading the keys ---------------------------------------------------------------------------


def _read(given: dict[str, Any], sizes: Sizes) -> Gate:
    if "wg" not in given:
        raise QkvcalcError("gate.bias_alone" if "bg" in given else "gate.act_alone")
    act = given.get("gate_act", "sigmoid")
    if act not in ACTS:
        raise QkvcalcError("gate.act", given=shown_value(act), acts=", ".join(ACTS))
    if sizes.d_model is None:
        raise QkvcalcError("gate.needs_x")
    w = to_matrix(given["wg"], "wg", exact=sizes.exact)
    rows, cols = sizes.d_model, sizes.heads * sizes.d_v
    as_given = w.values.shape
    if sizes.layout == "torch":  # PyTorch stores nn.Linear.weight as [out, in]
        w = Matrix(w.values.T.copy(), tuple(zip(*w.exact, strict=True)) if w.exact else None)
    if w.values.shape != (rows, cols):
        want = (cols, rows) if sizes.layout == "torch" else (rows, cols)
        raise QkvcalcError(
            "gate.shape",
            shape=shape_text(as_given),
            want=shape_text(want),
            heads=sizes.heads,
            d_v=sizes.d_v,
            layout=sizes.layout,
        )
    b = None
    if "bg" in given:
        b = to_vector(given["bg"], "bg", exact=sizes.exact)
        if b.values.shape[1] != cols:
            raise QkvcalcError("gate.bias_shape", length=b.values.shape[1], cols=cols)
    return Gate(w, b, sizes.heads, sizes.layout, act)


def shown_value(value: Any) -> str:
    """A value as a message quotes it: a string in quotes, anything else as JSON writes it."""
    return f'"{value}"' if isinstance(value, str) else json.dumps(value, default=str)


def _echo(gate: Gate) -> dict[str, Any]:
    """The keys again, W_G in the rows layout whatever layout it was given in (a JSON trace's
    "input" says "layout": "rows" of every weight)."""
    out: dict[str, Any] = {"wg": gate.w.values}
    if gate.b is not None:
        out["bg"] = gate.b.values[0]
    if gate.act != "sigmoid":
        out["gate_act"] = gate.act
    return out


# ---- the stages ---------------------------------------------------------------------------------


def _cols(p: Any, h: int | None) -> slice:
    return slice(((h or 1) - 1) * p.d_v, (h or 1) * p.d_v)


def _x(p: Any) -> tuple[Ref, str]:
    return (("x_pe", None), "(X + PE)") if p.variants.pe is not None else (("x", None), "X")


def _stages(p: Any, gate: Gate, h: int | None, output: Spec) -> list[Spec]:
    """Z_G = X·W_G (its columns of head h) + b_G, G = σ(Z_G) (or softplus(Z_G)), then
    out ⊙ G."""
    cols = _cols(p, h)
    x_ref, x_name = _x(p)
    cut = f"[:, {span(cols.start, p.d_v)}]"
    label = "W_Gᵀ" if gate.layout == "torch" else "W_G"
    formula = f"Z_G = {x_name}·{label}{cut}"
    if gate.b is not None:
        formula += f" + b_G[{span(cols.start, p.d_v)}]"
    w = columns_of(gate.w, cols)
    soft = gate.act == "softplus"
    logits = Spec(
        "gate_logits",
        h,
        "project",
        (x_ref, w),
        formula,
        output.rows,
        output.cols,
        params=sliced("G", gate.w, gate.b, cols),
        names=(x_name, f"{label}{cut}"),
        topic="gate_logits_softplus" if soft else "",
        inner=dim_labels(w.value.shape[0]),
        cell="Z_G[{i},{j}]",
        symbol="Z_G",
        letters="n×d_v",
        hint=(
            "hint.proj_bias" if gate.b is not None else "hint.proj",
            {"x": x_name, "w": f"W_G{cut}", "b": "b_G"},
        ),
    )
    squashed = Spec(
        "gate",
        h,
        gate.act,
        (logits.ref,),
        "G = softplus(Z_G)" if soft else "G = σ(Z_G)",
        output.rows,
        output.cols,
        topic="gate_softplus" if soft else "",
        symbol="G",
        letters="n×d_v",
        hint=("hint.gate_softplus" if soft else "hint.gate", {}),
    )
    gated = Spec(
        "gated",
        h,
        "gate_mul",
        (output.ref, squashed.ref),
        f"{output.symbol} ⊙ G",
        output.rows,
        output.cols,
        params={"act": "softplus"} if soft else {},
        topic="gated_softplus" if soft else "",
        symbol="out_G",
        letters=output.letters,
        hint=("hint.gated", {"out": output.symbol}),
    )
    return [logits, squashed, gated]


def _gated_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """out_G = out ⊙ G, from d(out_G) (`g`): dO = d(out_G) ⊙ G and dG = d(out_G) ⊙ out."""
    out_ref, gate_ref = at.operands
    out, gate, h = back.by[out_ref], back.by[gate_ref], at.head
    rows, cols = at.rows, at.cols
    return [
        Spec(
            f"grad_{out.id}",
            h,
            "gate_back",
            (g, gate_ref),
            "dO = d(out_G) ⊙ G",
            rows,
            cols,
            topic="grad_output.gated",
            symbol="dO",
            letters="n×d_v",
        ),
        Spec(
            f"grad_{gate.id}",
            h,
            "gate_back",
            (g, out_ref),
            "dG = d(out_G) ⊙ out",
            rows,
            cols,
            symbol="dG",
            letters="n×d_v",
        ),
    ]


def _sigmoid_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """G = σ(Z_G), from dG (`g`): dZ_G = dG ⊙ G ⊙ (1 − G), from G itself."""
    logits = back.by[at.operands[0]]
    return [
        Spec(
            f"grad_{logits.id}",
            at.head,
            "sigmoid_back",
            (g, at.ref),
            "dZ_G = dG ⊙ G ⊙ (1 − G)",
            at.rows,
            at.cols,
            symbol="dZ_G",
            letters="n×d_v",
        )
    ]


def _softplus_grads(back: Back, at: Spec, g: Ref) -> list[Spec]:
    """G = softplus(Z_G), from dG (`g`): dZ_G = dG ⊙ σ(Z_G), from Z_G (softplus' = σ)."""
    logits = back.by[at.operands[0]]
    return [
        Spec(
            f"grad_{logits.id}",
            at.head,
            "softplus_back",
            (g, logits.ref),
            "dZ_G = dG ⊙ σ(Z_G)",
            at.rows,
            at.cols,
            topic="grad_gate_logits_softplus",
            symbol="dZ_G",
            letters="n×d_v",
        )
    ]


# ---- the operations -----------------------------------------------------------------------------


def _sigmoid(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return sigmoid(ops[0])


def _softplus(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    return softplus(ops[0])


def _softplus_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    # dG ⊙ σ(Z_G): softplus'(z) = e^z / (1 + e^z) = σ(z)
    grad, z = ops
    return grad * sigmoid(z)


def _times(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> np.ndarray:
    # [n, d] ⊙ [n, d] -> [n, d]
    return ops[0] * ops[1]


def _sigmoid_back(ops: Sequence[np.ndarray], params: Params, rows: np.ndarray | None) -> Any:
    # dG ⊙ G ⊙ (1 − G): σ'(z) = σ(z)·(1 − σ(z))
    grad, g = ops
    return grad * g * (1 - g)


def _two_cells(i: int, j: int, shapes: Shapes, params: Params) -> Feeds:
    yield 0, i, j
    yield 1, i, j


def _sigmoid_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: σ(0.7) = 1 / (1 + e^(−0.7)) = 0.6682"""
    (z,) = stage.operands
    zij = float(z[i, j])
    s = style.num(zij)
    negated = s.lstrip("-−") if s.startswith(("-", "−")) else s if zij == 0 else f"{style.minus}{s}"
    denominator = f"1 + {style.exp(negated)}"
    inner = style.divided("1", denominator if style.latex else f"({denominator})")
    sigma = r"\sigma" if style.latex else "σ"
    shown = 1 / (1 + math.exp(-style.shown(zij))) if style.shown(zij) > -700 else 0.0
    left = f"{style.at(i + 1, j + 1)}{sigma}({s}) = {inner}"
    return style.line(left, shown, float(stage.value[i, j]), result)


def _softplus_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: softplus(0.7) = ln(1 + e^(0.7)) = 1.1032"""
    (z,) = stage.operands
    zij = float(z[i, j])
    s = style.num(zij)
    ln = r"\ln" if style.latex else "ln"
    name = r"\operatorname{softplus}" if style.latex else "softplus"
    left = f"{style.at(i + 1, j + 1)}{name}({s}) = {ln}(1 + {style.exp(s)})"
    shown = float(softplus(np.array(style.shown(zij))))
    return style.line(left, shown, float(stage.value[i, j]), result)


def _softplus_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5 × σ(0.7) = 0.3341"""
    d, z = (float(o[i, j]) for o in stage.operands)
    sigma = r"\sigma" if style.latex else "σ"
    left = f"{style.at(i + 1, j + 1)}{style.factor(d)}{style.times}{sigma}({style.num(z)})"
    shown = style.shown(d) * float(sigmoid(np.array(style.shown(z))))
    return style.line(left, shown, float(stage.value[i, j]), result)


def _times_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 3 × 0.6682 = 2.0046"""
    a, b = (float(o[i, j]) for o in stage.operands)
    left = f"{style.at(i + 1, j + 1)}{style.factor(a)}{style.times}{style.factor(b)}"
    return style.line(left, style.shown(a) * style.shown(b), float(stage.value[i, j]), result)


def _sigmoid_back_work(stage: Any, i: int, j: int, style: Any, exact: Any, result: str) -> str:
    """[1,2]: 0.5 × 0.6682 × (1 − 0.6682) = 0.1109"""
    d, g = (float(o[i, j]) for o in stage.operands)
    f = style.factor
    left = (
        f"{style.at(i + 1, j + 1)}{f(d)}{style.times}{f(g)}{style.times}"
        f"(1 {style.minus} {style.num(g)})"
    )
    n = style.shown
    return style.line(left, n(d) * n(g) * (1 - n(g)), float(stage.value[i, j]), result)


def _mistakes(stage: Any, versions: Callable[[str], list[np.ndarray]]) -> list[Candidate]:
    """The gate forgotten (the head's output as it was), or Z_G used as the gate without σ
    (without softplus); a softplus gate taken for the usual σ(Z_G)."""
    soft = stage.spec.params.get("act") == "softplus"
    tail = "_softplus" if soft else ""
    found: list[Candidate] = []
    for out in versions(stage.reads[0][0]):
        found.append(("gate_missing", Msg(f"mistake.gate_missing{tail}"), out))
        for z in versions("gate_logits"):  # Z_G itself as the gate: σ (softplus) left out
            found.append(("gate_not_squashed", Msg(f"mistake.gate_not_squashed{tail}"), out * z))
            if soft:  # σ(Z_G), the usual gate, in place of softplus(Z_G)
                found.append(("gate_sigmoid", Msg("mistake.gate_sigmoid"), out * sigmoid(z)))
    return found


def _torch(p: Any, gate: Gate, literal: Callable[[Any], str]) -> list[str]:
    torch_layout = gate.layout == "torch"
    w = gate.w.values.T if torch_layout else gate.w.values
    shape = "[H*d_v, d_model]" if torch_layout else "[d_model, H*d_v]"
    soft = gate.act == "softplus"
    out = [
        "# The output gate: each head's output times softplus(X·W_G + b_G), its own columns"
        if soft
        else "# The output gate: each head's output times sigmoid(X·W_G + b_G), its own columns",
        "# (Laguna: attn_output * F.softplus(gate); softplus(z) = ln(1 + e^z))."
        if soft
        else "# (Qwen3-Next: attn_output * torch.sigmoid(gate)).",
        f"W_G = t({literal(w)})  # {shape}",
    ]
    product = "X @ W_G.T" if torch_layout else "X @ W_G"
    if gate.b is not None:
        out.append(f"b_G = t({literal(gate.b.values[0])})")
        product += " + b_G"
    out += [
        f"z_G = {product}  # [n, H*d_v]",
        "gate = torch.logaddexp(z_G, torch.zeros_like(z_G))"
        if soft
        else "gate = torch.sigmoid(z_G)",
        "heads = heads * gate.reshape(n, H, d_v).transpose(0, 1).unsqueeze(0)",
    ]
    return out


def _header(gate: Gate) -> list[tuple[str, dict[str, Any]]]:
    key = "ui.variant.gate_softplus" if gate.act == "softplus" else "ui.variant.gate"
    return [(key, {"bias": " + b_G" if gate.b is not None else ""})]


# ---- how it rounds in a low-precision dtype (--dtype; qkvcalc.ops.rounding) ----


def _lowp_sigmoid(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # torch.sigmoid of the dtype's gate logits: in float32, rounded (every policy alike)
    return Out(r.keep(sigmoid(r.work(ops[0]))), r.kept)


def _lowp_softplus(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # Laguna: F.softplus(g_proj(x).float()).to(dtype): in float32, rounded (every policy alike)
    return Out(r.keep(softplus(r.work(ops[0]))), r.kept)


def _lowp_times(ops: Sequence[np.ndarray], params: Params, r: Rounding) -> Out:
    # out ⊙ G: in float32, rounded
    return Out(r.keep(r.work(ops[0]) * r.work(ops[1])), r.kept)


# ---- in PyTorch (--format torch) ----

TORCH_SIGMOID = """\
def sigmoid(z):
    \"\"\"1 / (1 + e^-z), written as qkvcalc does so that e^(-|z|) never overflows.\"\"\"
    e = torch.exp(-z.abs())
    return torch.where(z >= 0, 1 / (1 + e), e / (1 + e))
"""

TORCH_SOFTPLUS = """\
def softplus(z):
    \"\"\"ln(1 + e^z), written as ln(e^0 + e^z) so that it never overflows.\"\"\"
    return torch.logaddexp(z, torch.zeros_like(z))
"""


FEATURE = Feature(
    name="wg",  # its weight's key names it among the features a problem uses
    keys=("wg", "bg", "gate_act"),
    read=_read,
    ops=(
        Op(
            "sigmoid",
            _sigmoid,
            same_cell,
            rowwise=True,
            overflow=lambda params: False,
            exact_stops="note.exact_stops_sigmoid",
            work=_sigmoid_work,
            lowp=_lowp_sigmoid,
            plan_back=_sigmoid_grads,
            torch=lambda params, names, lit: f"sigmoid({names[0]})",
            torch_defs=TORCH_SIGMOID,
        ),
        Op(
            "softplus",
            _softplus,
            same_cell,
            rowwise=True,
            overflow=lambda params: False,
            exact_stops="note.exact_stops_softplus",
            work=_softplus_work,
            lowp=_lowp_softplus,
            plan_back=_softplus_grads,
            torch=lambda params, names, lit: f"softplus({names[0]})",
            torch_defs=TORCH_SOFTPLUS,
        ),
        Op(
            "gate_mul",
            _times,
            _two_cells,
            work=_times_work,
            lowp=_lowp_times,
            plan_back=_gated_grads,
            torch=lambda params, names, lit: f"{names[0]} * {names[1]}",
        ),
        # the backward's two products, d(out_G) ⊙ G and d(out_G) ⊙ out: the same product, with
        # no named mistakes of the forward's
        Op("gate_back", _times, _two_cells, work=_times_work),
        Op(
            "sigmoid_back",
            _sigmoid_back,
            _two_cells,
            overflow=lambda params: False,
            work=_sigmoid_back_work,
        ),
        Op(
            "softplus_back",
            _softplus_back,
            _two_cells,
            overflow=lambda params: False,
            work=_softplus_back_work,
        ),
    ),
    mistakes=(
        Mistakes("gate_mul", ("gate_missing", "gate_not_squashed", "gate_sigmoid"), _mistakes),
    ),
    elements=lambda gate, n, m, d_k: 3 * n * gate.w.values.shape[1] // gate.heads,
    header=_header,
    echo=_echo,
    after_output=_stages,
    torch_heads=_torch,
    torch_grads=(("dW_G", "W_G", "grad_wg", False), ("db_G", "b_G", "grad_bg", True)),
    torch_module_gap="it has no output gate: it joins the heads as they are",
    no_decode="gate.decode",
    no_train="gate.train",
)
