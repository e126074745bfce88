"""The torch rendering (--format torch): a short, runnable PyTorch script of the same problem.

The script rebuilds the problem in float64 from the input numbers (in the layout they were
given: `X @ W` for the rows layout, `F.linear(X, W, b)` for PyTorch's out×in), calls
F.scaled_dot_product_attention and, wherever nn.MultiheadAttention can represent the problem
(one head or several, Q/K/V given, grouped-query, a custom scale, with or without W_O), the
module with its weights set, or a comment that says why it cannot. It prints each output and
how far it is from qkvcalc's, and exits 1 with the difference when one is beyond 1e-9 (relative
to the largest output). It needs torch >= 2.0, as the `torch` extra says: a custom scale is
folded into q (SDPA's scale= came in 2.1) and grouped-query K/V heads are repeated
(enable_gqa= came in 2.5). Its comments translate the mask between PyTorch's three conventions.

This module writes code; it computes no attention. Every number in the script is written
with repr (it round-trips exactly) and every text from the input (token names, the problem's
name) goes into an ASCII-only Python string literal (text_literal), never into a comment and
never onto the first two lines, where Python would read it as the file's encoding, so no input
can break out of a string or change how the file is read.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from qkvcalc.i18n import plural
from qkvcalc.ops import features
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids
from qkvcalc.plan.specs import Const
from qkvcalc.render import RenderOptions

if TYPE_CHECKING:
    from qkvcalc.trace import Trace


def num(value: float) -> str:
    """A number as Python source: integers as integers, the rest exactly (repr round-trips)."""
    value = float(value)
    if not math.isfinite(value):  # repr would write inf or nan, which Python cannot read
        return "math.nan" if math.isnan(value) else ("math.inf" if value > 0 else "-math.inf")
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def text_literal(text: str) -> str:
    """A string from the input as an ASCII-only Python literal (ascii: every other character,
    a lone surrogate included, as an escape), which reads back as the same string whatever
    else the file holds."""
    return ascii(str(text))


def literal(matrix: np.ndarray, indent: str = "    ") -> str:
    """A nested list literal, one row per line when there is more than one row (a 3-D array:
    one matrix per head)."""
    if matrix.ndim == 3:
        return "[\n" + "".join(f"{indent}{literal(m, indent * 2)},\n" for m in matrix) + "]"
    if matrix.ndim == 1:
        return "[" + ", ".join(num(v) for v in matrix) + "]"
    rows = ["[" + ", ".join(num(v) for v in row) + "]" for row in matrix]
    if len(rows) == 1:
        return f"[{rows[0]}]"
    return "[\n" + "".join(f"{indent}{row},\n" for row in rows) + "]"


def flags(matrix: np.ndarray) -> str:
    """A boolean matrix as a literal of 1s and 0s."""
    return literal(matrix.astype(np.float64))


MASK_CONVENTIONS = """\
# Masks: PyTorch has three conventions for the same thing. qkvcalc's 1 = "may attend".
#   F.scaled_dot_product_attention(attn_mask=<bool>): True = MAY attend   -> pass `allowed`
#   nn.MultiheadAttention(attn_mask=<bool>, key_padding_mask=<bool>): True = BLOCKED
#                                                                          -> pass `~allowed`
#   an additive float mask (accepted by both): 0 = may attend, -inf = blocked
#       -> torch.zeros(n, m, dtype=torch.float64).masked_fill(~allowed, float("-inf"))
# Passing an SDPA mask to nn.MultiheadAttention unchanged inverts it: the most common mistake."""


def _mha_obstacles(trace: Trace) -> list[str]:
    """Why nn.MultiheadAttention cannot represent this problem (empty when it can).

    The module can take Q, K, V given directly (identity projections), grouped-query attention
    (each K/V head's weights repeated for the query heads that read it), a custom scale (folded
    into the query projection) and no W_O (an identity out_proj). What it cannot change is its
    one width: embed_dim is the width of the query input, of every projection and of out_proj.
    """
    p = trace.problem
    out = []
    e = p.heads * p.d_k
    if p.projected and p.d_model != e:
        out.append(
            f"d_model = {p.d_model} but H*d_k = {e}: the module's embed_dim is both the width of "
            "its query input and of its query projection"
        )
    if p.heads * p.d_v != e:
        out.append(
            f"H*d_v = {p.heads * p.d_v} but H*d_k = {e}: the module projects values to "
            "embed_dim too"
        )
    if p.wo is not None and p.wo.values.shape[1] != p.heads * p.d_v:
        r, c = p.wo.values.shape
        out.append(f"W_O is {r}x{c}; the module's out_proj is square (embed_dim x embed_dim)")
    return out


def render_torch(trace: Trace, opts: RenderOptions) -> str:
    """The script as text. `opts` is accepted for the common signature; numbers are exact."""
    p = trace.problem
    lines = _preamble(trace) + _inputs(trace)
    mask_lines, sdpa_args, masked, written_out = _mask(trace)
    lines += mask_lines + _scale_and_groups(trace, sdpa_args)
    attention, sdpa_args = _attention(trace, sdpa_args, masked, written_out)
    lines += attention
    if p.decode is not None and not written_out:
        lines.extend(_decoded(trace, sdpa_args))
    lines.extend(_plan_applied(trace))
    # ---- nn.MultiheadAttention ------------------------------------------------------------
    lines.append("")
    obstacles = _mha_obstacles(trace) + _variant_obstacles(trace)
    if obstacles:
        lines.append("# nn.MultiheadAttention cannot represent this problem:")
        lines.extend(f"#   - {why}." for why in obstacles)
    else:
        lines.extend(_mha_block(trace, masked))
    if p.backward:
        lines.extend(_backward(trace))
    return "\n".join(lines + _VERDICT) + "\n"


def _preamble(trace: Trace) -> list[str]:
    """The script's first lines (no input text on the first two), its imports, and t()."""
    p = trace.problem
    H, G = p.heads, p.kv_heads  # the paper's names
    n, m, d_k, d_v = p.n, p.m, p.d_k, p.d_v
    lines: list[str] = []
    add = lines.append
    # The first two lines hold no input text: Python reads an encoding declaration from a
    # comment there (PEP 263), and "coding:unicode_escape" would make the file's backslash
    # escapes live, so that a token's literal closes early and what follows runs. A preset's
    # name is one of qkvcalc's own; any other name is a string literal further down.
    title = f" (preset {p.preset})" if p.preset is not None else ""
    add(f"# qkvcalc --format torch{title}: the same attention in PyTorch, float64.")
    add("# Run it with: python this_script.py   (needs torch >= 2.0, as qkvcalc[torch])")
    add("# It exits 1, printing the difference, if PyTorch and qkvcalc disagree by more than")
    add("# 1e-9 times the larger of 1 and the largest |value| compared.")
    add(
        f"# n = {n} {plural(n, 'query', 'queries')}, m = {m} {plural(m, 'key', 'keys')}, "
        f"d_k = {d_k}, d_v = {d_v} per head, H = {H} {plural(H, 'head', 'heads')}, "
        f"G = {G} key/value {plural(G, 'head', 'heads')}."
    )
    add("import math")
    add("import sys")
    add("")
    add("try:")
    add("    import torch")
    add("    import torch.nn.functional as F")
    add("except ModuleNotFoundError:  # one sentence instead of a traceback")
    add('    sys.exit("This script needs PyTorch (2.0 or later): pip install torch")')
    add("")
    add("")
    if p.backward:  # every number given is a leaf of autograd's graph, so it gets a .grad
        add("def t(rows):")
        add("    return torch.tensor(rows, dtype=torch.float64, requires_grad=True)")
    else:
        add("def t(rows):")
        add("    return torch.tensor(rows, dtype=torch.float64)")
    add("")
    add("")
    return lines


def _inputs(trace: Trace) -> list[str]:
    """The tokens, X and the weights (or Q, K, V given), Q, K, V, and their heads' views."""
    p = trace.problem
    torch_layout = p.layout == "torch"
    H, G = p.heads, p.kv_heads
    n, m, d_k, d_v = p.n, p.m, p.d_k, p.d_v
    lines: list[str] = []
    add = lines.append
    if "name" in p.meta and p.preset is None:
        add(f"problem_name = {text_literal(p.meta['name'])}")
    add(f"tokens = [{', '.join(text_literal(t) for t in p.tokens)}]")
    if p.cross or not p.projected:
        add(f"source_tokens = [{', '.join(text_literal(t) for t in p.source_tokens)}]")

    # ---- Q, K, V --------------------------------------------------------------------------
    stand_in = features.projecting(p)
    if stand_in is not None and stand_in[0].torch_projections is not None:
        assert p.x is not None
        add(f"X = t({literal(p.x.values)})  # [n, d_model]")
        if p.variants.pe is not None:
            add(f"PE = t({literal(p.variants.pe)})  # the position encoding, [n, d_model]")
            add("X = X + PE")
        lines.extend(stand_in[0].torch_projections(p, stand_in[1], literal, num))
    elif p.projected:
        assert p.x is not None and p.wq is not None and p.wk is not None and p.wv is not None
        add(f"X = t({literal(p.x.values)})  # [n, d_model]")
        if p.variants.pe is not None:
            add(f"PE = t({literal(p.variants.pe)})  # the position encoding, [n, d_model]")
            if p.backward:
                add("X_given = X  # the leaf: d(X + PE)/dX is the identity")
            add("X = X + PE  # only X gets it, never a source")
        src = "X"
        if p.source is not None:
            add(f"S = t({literal(p.source.values)})  # source: [m, d_model], keys and values")
            src = "S"
        if torch_layout:
            add("# Weights as nn.Linear stores them: [out, in]; F.linear(x, W, b) = x @ W.T + b.")
        else:
            add("# Weights in the rows layout: Q = X @ W_Q (nn.Linear would store W_Q.T).")
        shapes = {"wq": "H*d_k", "wk": "G*d_k", "wv": "G*d_v"}
        for name, label in (("wq", "W_Q"), ("wk", "W_K"), ("wv", "W_V")):
            w = getattr(p, name).values
            shape = f"[{shapes[name]}, d_model]" if torch_layout else f"[d_model, {shapes[name]}]"
            add(f"{label} = t({literal(w.T if torch_layout else w)})  # {shape}")
        for name, label in (("bq", "b_Q"), ("bk", "b_K"), ("bv", "b_V")):
            b = getattr(p, name)
            if b is not None:
                add(f"{label} = t({literal(b.values[0])})")
        for out, label, inputs, bias in (
            ("Q", "W_Q", "X", "bq"),
            ("K", "W_K", src, "bk"),
            ("V", "W_V", src, "bv"),
        ):
            add(_linear(out, inputs, label, getattr(p, bias) is not None, torch_layout))
    else:
        assert p.q is not None and p.k is not None and p.v is not None
        add(f"Q = t({literal(p.q.values)})  # [n, H*d_k], given directly")
        add(f"K = t({literal(p.k.values)})  # [m, G*d_k]")
        add(f"V = t({literal(p.v.values)})  # [m, G*d_v]")
    add("")
    add("# Heads: [n, H*d_k] -> [batch=1, H, n, d_k]; head h takes columns (h-1)*d_k+1 .. h*d_k.")
    add(f"n, m, H, G, d_k, d_v = {n}, {m}, {H}, {G}, {d_k}, {d_v}")
    add("q = Q.view(n, H, d_k).transpose(0, 1).unsqueeze(0)")
    add("k = K.view(m, G, d_k).transpose(0, 1).unsqueeze(0)")
    add("v = V.view(m, G, d_v).transpose(0, 1).unsqueeze(0)")
    add("")
    lines.extend(_variants_on_q_and_k(trace))

    return lines


def _mask(trace: Trace) -> tuple[list[str], list[str], bool, bool]:
    """The mask's lines, SDPA's arguments so far, whether a mask applies, and whether the
    steps are written out (a feature SDPA has no place for, or the backward's weights)."""
    p = trace.problem
    lines: list[str] = []
    add = lines.append
    add(MASK_CONVENTIONS)
    sdpa_args = ["q", "k", "v"]
    mask_parts: list[str] = []
    v = p.variants
    # a feature with a stage on the logits that SDPA has no place for: the steps written out
    written_out = any(
        f.torch_logits or f.torch_softmax or f.torch_weights for f, _ in features.active(p)
    )
    written_out = written_out or p.backward  # the backward reads each head's weights
    narrowed = [
        line for f, value in features.active(p) if f.torch_mask for line in f.torch_mask(value)
    ]
    selecting = [  # a feature that keeps some of the allowed keys (a sparse attention's top-k)
        line
        for f, value in features.active(p)
        if f.torch_select
        for line in f.torch_select(p, value, literal, num)
    ]
    by_position = bool(narrowed or selecting) or v.positions_given or v.causal_align != "top-left"
    if p.mask_kind == "causal" and by_position:
        add(f"positions = torch.tensor({v.positions.tolist()})")
        add(f"key_positions = torch.tensor({v.key_positions.tolist()})")
        add("distance = positions[:, None] - key_positions[None, :]  # pos_i - pos_j")
        add("causal = distance >= 0  # key j is allowed when pos_j <= pos_i")
        for line in narrowed:  # a feature's own narrowing of the causal mask
            add(line)
        mask_parts.append("causal")
    elif p.mask_kind == "causal":
        if p.key_padding is None and _biases(trace) is None and not written_out:
            add("# Causal: query i sees keys 1..i, aligned top-left (is_causal=True builds it).")
            sdpa_args.append("is_causal=True")
        add("causal = torch.ones(n, m, dtype=torch.bool).tril()  # top-left, as is_causal")
        mask_parts.append("causal")
    elif p.mask is not None:
        add(f"custom = torch.tensor({flags(p.mask)}, dtype=torch.bool)  # 1 = may attend")
        mask_parts.append("custom")
    if p.key_padding is not None:
        add(
            f"key_padding = torch.tensor({flags(p.key_padding)}, dtype=torch.bool)"
            "  # 1 = real token, 0 = padding"
        )
        mask_parts.append("key_padding")
    masked = bool(mask_parts or selecting)
    if masked:
        if mask_parts:
            add("allowed = " + " & ".join(mask_parts) + "  # [n, m] (a [m] row broadcasts)")
            add("allowed = allowed.expand(n, m)")
        else:
            add("allowed = torch.ones(n, m, dtype=torch.bool)")
        lines.extend(selecting)
        if "is_causal=True" not in sdpa_args:
            sdpa_args.append("attn_mask=allowed")
        if any(w.key.startswith("warn.fully_masked") for w in trace.warnings):
            add("# Some query rows have every key masked: SDPA returns 0 there (so does qkvcalc);")
            add("# nn.MultiheadAttention's own softmax returns NaN (0/0) for those rows.")
    else:
        add("# No mask here: every query attends to every key.")
    return lines, sdpa_args, masked, written_out


def _scale_and_groups(trace: Trace, sdpa_args: list[str]) -> list[str]:
    """A scale given (q scaled so SDPA's 1/√d_k makes it), and grouped-query K/V repeated;
    SDPA's arguments changed in place."""
    p = trace.problem
    H, G = p.heads, p.kv_heads
    lines: list[str] = []
    add = lines.append
    add("# scale: SDPA divides by sqrt(d_k), as qkvcalc does by default.")
    q_arg = "q"
    if p.scale_given is not None:
        add(f"scale = {num(p.scale)}  # given, instead of 1/sqrt(d_k)")
        add("# SDPA's scale= needs torch 2.1; scaling q by scale*sqrt(d_k) is the same product.")
        q_arg = "q * (scale * d_k**0.5)"
    sdpa_args[0] = q_arg
    if G != H:
        add("# Grouped-query: query head h reads K/V head ceil(h*G/H): repeat each K/V head H/G")
        add("# times (repeat_interleave), which is what enable_gqa=True (torch 2.5) does.")
        sdpa_args[1:3] = [
            "k.repeat_interleave(H // G, dim=1)",
            "v.repeat_interleave(H // G, dim=1)",
        ]
    add("")

    return lines


def _attention(
    trace: Trace, sdpa_args: list[str], masked: bool, written_out: bool
) -> tuple[list[str], list[str]]:
    """SDPA (or the steps written out), what features do to the heads, the concat, W_O, and
    the output checked against qkvcalc's; and SDPA's arguments as called (a score bias is its
    float attn_mask, which the decoding check below reuses)."""
    p = trace.problem
    torch_layout = p.layout == "torch"
    lines: list[str] = []
    add = lines.append
    # ---- SDPA (or, with a feature SDPA has no place for, the steps written out), W_O --------
    add("# [1, H, n, d_k], [1, G, m, d_k], [1, G, m, d_v] -> [1, H, n, d_v]")
    layers = [
        f.torch_layer(p, value, literal, num)
        for f, value in features.active(p)
        if f.torch_layer is not None
    ]
    if layers:  # a layer that is not softmax attention (a linear-attention layer)
        lines.extend(layers[0])
        written_out = True
    elif written_out:
        lines.extend(_written_out(trace, sdpa_args, masked))
    else:
        bias_lines, sdpa_args = _score_bias(trace, sdpa_args, masked)
        lines.extend(bias_lines)
        call = f"heads = F.scaled_dot_product_attention({', '.join(sdpa_args)})"
        if len(call) > 99:
            call = (
                "heads = F.scaled_dot_product_attention(\n"
                + "".join(f"    {a},\n" for a in sdpa_args)
                + ")"
            )
        add(call)
    for feature, value in features.active(p):  # what changes each head before the concat
        if feature.torch_heads is not None:
            lines.extend(feature.torch_heads(p, value, literal))
    add("concat = heads[0].transpose(0, 1).reshape(n, H * d_v)  # head 1's columns first")
    if p.wo is not None:
        w = p.wo.values
        shape = "[d_out, H*d_v]" if torch_layout else "[H*d_v, d_out]"
        add(f"W_O = t({literal(w.T if torch_layout else w)})  # {shape}")
        if p.bo is not None:
            add(f"b_O = t({literal(p.bo.values[0])})")
        add(_linear("output", "concat", "W_O", p.bo is not None, torch_layout))
    else:
        add("output = concat")
    twin = trace.final.twin_value  # a --dtype run: the script checks its float64 twin
    if twin is None:
        add(f"expected = t({literal(trace.output)})  # qkvcalc's output")
    else:
        add(f"expected = t({literal(twin)})  # qkvcalc's output's float64 twin")
    add("tolerance = 1e-9 * max(1.0, expected.abs().max().item())")
    add("differences = {}")
    add("tolerances = {}  # a gradient's own: 1e-9 relative to its largest value")
    add("")
    said = (
        "attention, its steps written out in torch"
        if written_out
        else "F.scaled_dot_product_attention"
    )
    add(f'print("the output of {said}:")')
    add("for token, row in zip(tokens, output.tolist()):")
    add("    print(repr(token), row)  # repr: a control character in a token is shown, not run")
    check = "torch" if written_out else "SDPA"
    add(f'differences["{check}"] = (output - expected).abs().max().item()')
    add(f'print("max |{check} - qkvcalc| =", differences["{check}"])')

    return lines, sdpa_args


# the script's last lines: every difference against its tolerance, exit 1 on any mismatch
_VERDICT = [
    "",
    "# NaN is never within the tolerance: 'not d <= tolerance' catches it too.",
    "limits = {name: tolerances.get(name, tolerance) for name in differences}",
    "failed = {name: d for name, d in differences.items() if not d <= limits[name]}",
    "if failed:",
    "    for name, d in failed.items():",
    '        print(f"MISMATCH: max |{name} - qkvcalc| = {d!r}", file=sys.stderr)',
    '        print(f"(the tolerance is {limits[name]!r})", file=sys.stderr)',
    "    sys.exit(1)",
    "# the largest difference of all, and the tolerance of its own check",
    "worst = max(differences, key=lambda name: differences[name])",
    "largest, tolerance = differences[worst], limits[worst]",
    'print(f"OK: PyTorch agrees with qkvcalc: largest difference {largest!r} '
    '(max |{worst} - qkvcalc|), its tolerance {tolerance!r}")',
]


def _gradients(trace: Trace) -> list[tuple[str, str, np.ndarray]]:
    """What the script compares after autograd: (name, the torch tensor whose .grad it reads,
    qkvcalc's gradient in that tensor's shape). A head's columns are set side by side as the
    script's heads are (a layout, no arithmetic); per head dQ, dK and dV under grouped-query
    attention are left to dW_K, dW_V and dX, which hold their sums."""
    p = trace.problem
    heads: list[int | None] = list(range(1, p.heads + 1)) if p.multihead else [None]
    flows = p.loss is not None and p.loss.kind != "attend"
    out: list[tuple[str, str, np.ndarray]] = []

    def side_by_side(sid: str) -> np.ndarray:
        return np.concatenate([trace.stage(sid, h).value for h in heads], axis=1)

    if flows:
        out.append(("dO", "output", trace.stage(ids.GRAD_OUTPUT).value))
    wo = trace.find(ids.GRAD_WO)  # W_O reaches the loss unless it is `attend`
    if wo is not None:
        out.append(("dW_O", "W_O", wo.value))
    for k, h in enumerate(heads):
        if features.mixing(p) is not None:  # a linear layer: no weights A; its q, k, v are
            break  # turned (silu) after Q, K, V, which dQ, dK, dV below compare
        label = "" if h is None else f" (head {h})"
        out.append((f"dA{label}", f"weights[0, {k}]", _grad_weights(trace, h)))
        # the script's per-head v is what A·V reads (turned by a feature: V_rot), so dV of
        # each head is compared there only when A·V reads V itself (else dV below holds it)
        if flows and p.kv_heads == p.heads and h is not None and _reads_v(trace, h):
            out.append((f"dV{label}", f"v[0, {k}]", trace.stage(ids.GRAD_V, h).value))
    out.append(("dQ", "Q", side_by_side(ids.GRAD_Q)))
    if p.kv_heads == p.heads:
        out.append(("dK", "K", side_by_side(ids.GRAD_K)))
        if flows:
            out.append(("dV", "V", side_by_side(ids.GRAD_V)))
    if p.projected:
        stand_in = features.projecting(p) is not None  # its own weights: torch_compared
        for letter, weight in (("Q", ids.GRAD_WQ), ("K", ids.GRAD_WK), ("V", ids.GRAD_WV)):
            if stand_in:
                break
            stage = trace.find(weight)  # dW_V: not with `attend`
            if stage is not None:
                out.append((f"dW_{letter}", f"W_{letter}", stage.value))
        x = "X_given" if p.variants.pe is not None else "X"
        out.append(("dX", x, trace.stage(ids.GRAD_X).value))
        if p.cross:
            out.append(("dsource", "S", trace.stage(ids.GRAD_SOURCE).value))
    biases = {ids.GRAD_OF[name] for name in ("bq", "bk", "bv", "bo")}
    for stage in trace.stages:  # the biases' gradients, one row each: db_Q is b_Q's
        if stage.id in biases:
            out.append((stage.symbol, stage.symbol[1:], stage.value[0]))
    for feature, _ in features.active(p):  # a feature's own weights, leaves of the graph
        for name, tensor, sid, vector in feature.torch_grads:
            found = trace.find(sid)
            if found is not None:
                out.append((name, tensor, found.value[0] if vector else found.value))
    for feature, value in features.active(p):  # what a feature's weights became in the script
        if feature.torch_compared is not None:
            out += feature.torch_compared(p, value, trace.find)
    for feature, value in features.active(p):  # a feature's own learned numbers
        if feature.torch_leaf is not None and feature.grads is not None:
            name, tensor = feature.torch_leaf
            for spec in feature.grads(p, value, []):
                out.append((name, tensor, trace.stage(spec.id).value[0]))
    return out


def _reads_v(trace: Trace, head: int) -> bool:
    """Whether head's A·V reads the head's V as it was projected: its gradient dV came from
    A·V itself, not back through a feature's stage after V (a turn of it, V_rot; rows stacked
    under it, whose gradient is some rows of what A·V read)."""
    found = trace.find(ids.GRAD_V, head)
    return found is None or (found.op != ids.BACK_OP and "rows" not in found.params)


def _grad_weights(trace: Trace, head: int | None) -> np.ndarray:
    """dA of a head: its stage, or in tiles (no whole dA) the blocks' dP_b side by side, in the
    order of their keys (a layout, no arithmetic)."""
    whole = trace.find(ids.GRAD_WEIGHTS, head)
    if whole is not None:
        return whole.value
    blocks = [s for s in trace.stages if s.id == ids.BLOCK_GRAD_P and s.head == head]
    return np.concatenate([s.value for s in sorted(blocks, key=lambda s: s.block or 0)], axis=1)


def _backward(trace: Trace) -> list[str]:
    """The loss as the problem gives it, autograd in float64, and every gradient qkvcalc
    computed against torch's (each printed; a mismatch fails the script)."""
    p = trace.problem
    assert p.loss is not None
    compared = _gradients(trace)
    out = [
        "",
        "# ---- the backward pass: the same loss, autograd's gradients against qkvcalc's ----",
    ]
    # a tensor computed from the leaves keeps its gradient only when asked to
    kept = dict.fromkeys(
        name.split("[")[0] for _, name, _ in compared if name not in ("W_O", "b_O")
    )
    leaves = {*_LEAVES, *(g[1] for f, _ in features.active(p) for g in f.torch_grads)}
    out += [f"{name}.retain_grad()" for name in kept if name not in leaves]
    if p.loss.kind == "target":
        assert p.loss.matrix is not None
        out += [
            f"T = t({literal(p.loss.matrix.values)})  # the target output",
            "loss = 0.5 * ((output - T) ** 2).sum()  # L = 1/2 * sum (O - T)^2",
            "loss.backward()",
        ]
    elif p.loss.kind != "attend":  # grad_output: dL/dO given
        assert p.loss.matrix is not None
        out += [
            f"dO = t({literal(p.loss.matrix.values)})  # dL/dO, given",
            "output.backward(dO)",
            "loss = None",
        ]
    else:
        targets = ", ".join(f"({i}, {t})" for i, t in p.loss.targets())
        out += [
            f"targets = [{targets}]  # (query, key), 0-based: the key each query should attend to",
            "# L = -sum_i log A[i, t_i], summed over the heads",
            "loss = -sum(weights[0, h, i, j].log() for h in range(H) for i, j in targets)",
            "loss.backward()",
        ]
    out += [
        "if loss is not None:",
        '    print("loss L =", loss.item())',
        "",
        "",
        "def compare(name, got, want):",
        '    """torch\'s gradient against qkvcalc\'s, printed; the difference is kept."""',
        "    want = torch.tensor(want, dtype=torch.float64)",
        "    got = torch.zeros_like(want) if got is None else got.detach()",
        "    differences[name] = (got - want).abs().max().item()",
        "    tolerances[name] = 1e-9 * max(1.0, want.abs().max().item())",
        "    size = want.abs().max().item()",
        '    print(f"{name}: max |autograd - qkvcalc| = {differences[name]!r} (largest {size!r})")',
        "",
        "",
        'print("gradients, autograd against qkvcalc:")',
    ]
    for name, tensor, want in compared:
        grad = f"{tensor}.grad" if "[" not in tensor else _indexed_grad(tensor)
        out.append(f"compare({text_literal(name)}, {grad}, {literal(want)})")
    return out


# tensors the script builds with t(): autograd's leaves (their .grad is kept without asking)
_LEAVES = ("X", "X_given", "S", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")


def _indexed_grad(tensor: str) -> str:
    """`weights[0, 1]` -> `weights.grad[0, 1]`: a head's slice of a kept gradient."""
    name, _, index = tensor.partition("[")
    return f"{name}.grad[{index}"


def _decoded(trace: Trace, sdpa_args: list[str]) -> list[str]:
    """The run again as decoding with a KV cache, as the decode stages do it: the prefill's
    queries at once, then one query per step against the cache of every key so far (keys and
    values appended, never recomputed), with the mask's and bias's rows and columns of that
    step; the steps' rows stacked must equal qkvcalc's output."""
    p = trace.problem
    prefill = p.decode or 0
    q, k, v = sdpa_args[:3]
    biased = any(a.startswith("attn_mask=B") for a in sdpa_args)
    mask = "B[:, rows, :end].unsqueeze(0)" if biased else "allowed[rows, :end]"
    out = [
        "",
        "# Decoding with a KV cache, as qkvcalc's decode stages: the prefill's queries at once,",
        "# then one query per step; its key and value are appended to the cache, and it attends",
        "# to every cached key (the mask's rows of this step: aligned bottom-right).",
        f"P = {prefill}  # the prefill's length",
        "k_cache, v_cache = k[:, :, :0], v[:, :, :0]",
        "decoded = []",
        "for rows in ([slice(0, P)] if P else []) + [slice(t, t + 1) for t in range(P, n)]:",
        "    end = rows.stop  # keys 1..end are cached once this step's are appended",
        "    k_cache = torch.cat([k_cache, k[:, :, rows]], dim=2)  # [1, G, end, d_k]",
        "    v_cache = torch.cat([v_cache, v[:, :, rows]], dim=2)  # [1, G, end, d_v]",
        "    decoded.append(",
        "        F.scaled_dot_product_attention(",
        f"            ({q})[:, :, rows],",
        f"            {k.replace('k.', 'k_cache.') if k != 'k' else 'k_cache'},",
        f"            {v.replace('v.', 'v_cache.') if v != 'v' else 'v_cache'},",
        f"            attn_mask={mask},",
        "        )",
        "    )",
        "decoded = torch.cat(decoded, dim=2)  # [1, H, n, d_v]: every step's rows stacked",
    ]
    after = [
        line
        for feature, value in features.active(p)
        if feature.torch_heads is not None
        for line in feature.torch_heads(p, value, literal)
    ]
    if after:  # what comes after every head (a norm over them), on the stacked rows
        swap = "heads, whole_heads = decoded, heads"
        out += [swap, *after, "decoded, heads = heads, whole_heads"]
    out.append("decoded = decoded[0].transpose(0, 1).reshape(n, H * d_v)")
    if p.wo is not None:
        out.append(_linear("decoded", "decoded", "W_O", p.bo is not None, p.layout == "torch"))
    out += [
        'differences["KV-cache decoding"] = (decoded - expected).abs().max().item()',
        'print("max |KV-cache decoding - qkvcalc| =", differences["KV-cache decoding"])',
    ]
    return out


def _variant_obstacles(trace: Trace) -> list[str]:
    """What this script checks with SDPA alone (the module has no place for it)."""
    return [f.torch_module_gap for f, _ in features.active(trace.problem) if f.torch_module_gap]


def _variants_on_q_and_k(trace: Trace) -> list[str]:
    """The features' lines on each head's q and k (a norm, a rotation), in qkvcalc's order."""
    p = trace.problem
    return [
        line
        for f, value in features.turning(p)
        if f.torch_qk is not None
        for line in f.torch_qk(p, value, literal, num)
    ]


def _score_bias(trace: Trace, sdpa_args: list[str], masked: bool) -> tuple[list[str], list[str]]:
    """A score bias (the features' own) as SDPA's additive float mask (it adds attn_mask
    after scaling), with the mask folded in as −inf."""
    biases = _biases(trace)
    if biases is None:
        return [], sdpa_args
    out = [f"# The score bias B, per head, as qkvcalc computes it{_bias_said(trace)}."]
    out.append(f"B = t({literal(biases)})  # [H, n, m]")
    if masked:
        out.append("B = B.masked_fill(~allowed, float('-inf'))  # the mask, as an additive one")
    args = [a for a in sdpa_args if not a.startswith(("attn_mask=", "is_causal="))]
    return out, [*args, "attn_mask=B.unsqueeze(0)"]


def _biases(trace: Trace) -> np.ndarray | None:
    """Each head's score bias, from the features that add one: [H, n, m] (None: no bias)."""
    p = trace.problem
    adding = [(f, value) for f, value in features.active(p) if f.torch_bias is not None]
    if not adding:
        return None
    heads = range(1, p.heads + 1) if p.multihead else [None]
    tables = [[f.torch_bias(p, value, h)[1] for f, value in adding] for h in heads]  # type: ignore[misc]
    return np.stack([np.sum(parts, axis=0) for parts in tables])


def _bias_said(trace: Trace) -> str:
    """' (…)': how the features make their bias, as a comment of the script says it."""
    p = trace.problem
    said = [f.torch_bias(p, value, None)[0] for f, value in features.active(p) if f.torch_bias]
    return "".join(f" ({how})" for how in said if how)


def _written_out(trace: Trace, sdpa_args: list[str], masked: bool) -> list[str]:
    """SDPA has no place for a feature's stage on the logits or its own softmax (FlexAttention's
    score_mod has, torch >= 2.5): the same steps in plain torch, each feature's lines after
    scaling and bias, before the mask, and its softmax's lines after it."""
    p = trace.problem
    q, k, v = sdpa_args[:3]
    out = [
        "# SDPA has no place for every step here, so the steps written out: scale, bias, the",
        "# logits' own steps, mask.",
        f"scores = ({q}) @ ({k}).transpose(-2, -1) / d_k**0.5  # [1, H, n, m]",
    ]
    biases = _biases(trace)
    if biases is not None:
        out.append(f"B = t({literal(biases)})  # [H, n, m]")
        out.append("scores = scores + B.unsqueeze(0)")
    for feature, value in features.active(p):
        if feature.torch_logits is not None:
            out += feature.torch_logits(value, num)
    if masked:
        out.append("scores = scores.masked_fill(~allowed, float('-inf'))")
    softmax = [
        line
        for f, value in features.active(p)
        if f.torch_softmax is not None
        for line in f.torch_softmax(value, literal)
    ]
    out += softmax or [
        "weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a fully masked row: 0"
    ]
    out.append(f"heads = weights @ ({v})")
    return out


def _linear(out: str, inputs: str, weight: str, bias: bool, torch_layout: bool) -> str:
    """`Q = X @ W_Q + b_Q`, or `Q = F.linear(X, W_Q, b_Q)` for weights stored out×in."""
    b = "b_" + weight[2:]
    if torch_layout:
        return f"{out} = F.linear({inputs}, {weight}" + (f", {b})" if bias else ")")
    return f"{out} = {inputs} @ {weight}" + (f" + {b}" if bias else "")


def _mha_block(trace: Trace, masked: bool) -> list[str]:
    """nn.MultiheadAttention with its weights set from the problem (out×in, as nn.Linear)."""
    p = trace.problem
    H, G = p.heads, p.kv_heads
    torch_layout = p.layout == "torch"
    e = H * p.d_k
    out = [
        "# The same layer as nn.MultiheadAttention: embed_dim = H*d_k, H heads of d_k each.",
        "# It stores each projection as nn.Linear does, [out, in]: the transpose of X @ W.",
        f"E = {e}",
        "zeros = torch.zeros(E, dtype=torch.float64)",
    ]
    zero = "torch.zeros({}, dtype=torch.float64)"  # qkvcalc's missing bias: the module's 0
    widths = (e, G * p.d_k, G * p.d_v)
    if p.projected:
        src = "S" if p.source is not None else "X"
        inputs = f"X[None], {src}[None], {src}[None]"
        kdim = vdim = p.d_model or e
        weights = [f"W_{c}" if torch_layout else f"W_{c}.T" for c in "QKV"]
        given = (p.bq, p.bk, p.bv)
        biases = [
            f"b_{c}" if b is not None else zero.format(w)
            for c, b, w in zip("QKV", given, widths, strict=True)
        ]
    else:
        out.append("# Q, K, V are given: the module's projections are identities.")
        inputs = "Q[None], K[None], V[None]"
        kdim, vdim = widths[1], widths[2]
        weights = [f"torch.eye({w}, dtype=torch.float64)" for w in widths]
        biases = [zero.format(w) for w in widths]
    if G != H:
        out += [
            "",
            "",
            "def per_query_head(w, width):",
            '    """[G*width, in] -> [H*width, in]: a K/V head for each query head reading it."""',
            "    heads = w.reshape(G, width, -1).repeat_interleave(H // G, dim=0)",
            "    return heads.reshape(H * width, -1)",
            "",
            "",
            "# Grouped-query: the module has a K/V head per query head, so each K/V head's",
            "# weights are repeated for the query heads that share it (as repeat_interleave).",
        ]
        weights[1] = f"per_query_head({weights[1]}, d_k)"
        weights[2] = f"per_query_head({weights[2]}, d_v)"
        biases[1] = f"per_query_head({biases[1]}[:, None], d_k)[:, 0]"
        biases[2] = f"per_query_head({biases[2]}[:, None], d_v)[:, 0]"
    if p.scale_given is not None:
        out.append("# The module divides by sqrt(d_k); the given scale is folded into W_Q and b_Q.")
        weights[0] = f"{weights[0]} * (scale * d_k**0.5)"
        biases[0] = f"{biases[0]} * (scale * d_k**0.5)"
    packed = kdim == vdim == e
    dims = "" if packed else f", kdim={kdim}, vdim={vdim}"
    out += [
        f"mha = torch.nn.MultiheadAttention(\n    E, H, bias=True{dims}, batch_first=True, "
        "dtype=torch.float64\n)",
        "with torch.no_grad():",
    ]
    if packed:
        out.append(f"    mha.in_proj_weight.copy_(torch.cat([{', '.join(weights)}]))")
    else:
        for name, w in zip(("q", "k", "v"), weights, strict=True):
            out.append(f"    mha.{name}_proj_weight.copy_({w})")
    out.append(f"    mha.in_proj_bias.copy_(torch.cat([{', '.join(biases)}]))")
    if p.wo is not None:
        out.append(f"    mha.out_proj.weight.copy_({'W_O' if torch_layout else 'W_O.T'})")
        out.append(f"    mha.out_proj.bias.copy_({'b_O' if p.bo is not None else 'zeros'})")
    else:
        out.append("    mha.out_proj.weight.copy_(torch.eye(E))  # no W_O: output = concat")
        out.append("    mha.out_proj.bias.zero_()")
    args = [inputs]
    if masked:
        if p.mask_kind == "causal" or p.mask is not None:
            name = "causal" if p.mask_kind == "causal" else "custom"
            args.append(f"attn_mask=~{name}")
        if p.key_padding is not None:
            args.append("key_padding_mask=~key_padding[None]")
        out.append("# nn.MultiheadAttention's boolean masks mean True = BLOCKED: hence the ~.")
    args.append("need_weights=True, average_attn_weights=False")
    live = "allowed.any(dim=1)" if masked else "torch.ones(n, dtype=torch.bool)"
    out += [
        "# mha_weights: [1, H, n, m], each head's attention weights",
        "mha_output, mha_weights = mha(\n" + "".join(f"    {a},\n" for a in args) + ")",
        'print("nn.MultiheadAttention output:")',
        "for token, row in zip(tokens, mha_output[0].tolist()):",
        "    print(repr(token), row)",
        f"live = {live}  # rows with a key to attend to (the module gives NaN for the others)",
        "gap = (mha_output[0] - expected)[live].abs()",
        'differences["MHA"] = gap.max().item() if live.any() else 0.0',
        'print("max |MHA - qkvcalc| =", differences["MHA"])',
    ]
    return out


# ---- the plan applied in torch: each stage by its op's own torch rule (Op.torch) ----------


class _Numbers:
    """How the ops' torch rules write numbers (qkvcalc.ops.op.Literals): each array of a stage's
    parameters or constants defined once as a tensor of the script, an equal one read by the
    same name (every head's mask, every head's rotation angles)."""

    def __init__(self, known: dict[str, np.ndarray]) -> None:
        self.names: dict[tuple[Any, ...], str] = {}
        self.lines: list[str] = []  # the definitions not yet written out
        for source, value in known.items():  # tensors the script holds already: X, W_O
            self.names[self._key("f", np.asarray(value, dtype=np.float64))] = source

    @staticmethod
    def _key(kind: str, value: np.ndarray) -> tuple[Any, ...]:
        return (kind, value.shape, value.tobytes())

    def _define(self, kind: str, value: np.ndarray, source: str) -> str:
        key = self._key(kind, value)
        if key not in self.names:
            self.names[key] = f"c{len(self.names) + 1}"
            self.lines.append(f"{self.names[key]} = {source}")
        return self.names[key]

    def array(self, value: Any) -> str:
        a = np.asarray(value, dtype=np.float64)
        if a.ndim == 0:
            return num(float(a))
        return self._define("f", a, f"torch.tensor({literal(a)}, dtype=torch.float64)")

    def flags(self, value: Any) -> str:
        a = np.asarray(value, dtype=bool)
        if a.ndim != 2:
            return self._define("b", a, f"torch.tensor({flags(a)}, dtype=torch.bool)")
        # a row of 0s and 1s a string: a third of a list's size (a causal 256 x 256 mask)
        rows = "".join(f'    "{"".join("1" if v else "0" for v in row)}",\n' for row in a)
        source = f'torch.tensor([[c == "1" for c in row] for row in [\n{rows}]])'
        return self._define("b", a, source)

    def num(self, value: float) -> str:
        return num(value)

    def index(self, value: Any) -> str:
        if isinstance(value, slice):
            start = "" if value.start is None else str(int(value.start))
            stop = "" if value.stop is None else str(int(value.stop))
            return f"{start}:{stop}" + ("" if value.step in (None, 1) else f":{int(value.step)}")
        if isinstance(value, int | np.integer):
            return str(int(value))
        return str([int(v) for v in np.asarray(value).ravel()])


def stage_name(ref: tuple[Any, ...]) -> str:
    """A stage's name in the script, from its id, head, step and block: s_scores_h1."""
    sid, head, *rest = ref
    name = "s_" + re.sub(r"\W", "_", str(sid))
    for letter, number in zip(("h", "t", "b"), (head, *rest), strict=False):
        if number is not None:
            name += f"_{letter}{number}"
    return name


def forward_stages(trace: Trace) -> list[Any]:
    """The stages of the forward pass, in plan order: up to the final output (a backward pass's
    gradients follow it)."""
    last = trace.final.ref
    stages = list(trace.stages)
    end = next(k for k, s in enumerate(stages) if s.ref == last)
    return stages[: end + 1]


def plan_lines(
    trace: Trace, known: dict[str, np.ndarray] | None = None
) -> tuple[list[str], list[str]]:
    """The forward plan in torch, one assignment per stage in plan order, its operands by their
    names: (the functions its ops' rules call, defined once; the assignments). `known`: the
    tensors the script holds already, by name (default: X and W_O, as the script writes them)."""
    numbers = _Numbers(_known(trace) if known is None else known)
    defs: dict[str, None] = {}
    out: list[str] = []
    for stage in forward_stages(trace):
        op = OPS[stage.op]
        assert op.torch is not None, stage.op  # every forward op has one (a test checks)
        names = [
            numbers.array(o.value) if isinstance(o, Const) else stage_name(o) for o in stage.reads
        ]
        # --dtype: the plan in float64 is the twin's, with its parameters (not the dtype's)
        params = stage.params if stage.twin_params is None else stage.twin_params
        expression = op.torch(params, names, numbers)
        for block in re.split(r"\n\n\n(?=def )", op.torch_defs.strip("\n")):
            if block:
                defs.setdefault(block.rstrip("\n"))
        out += numbers.lines
        numbers.lines = []
        where = f"{stage.id}" + ("" if stage.head is None else f", head {stage.head}")
        where += "" if stage.step is None else f", step {stage.step}"
        where += "" if stage.block is None else f", block {stage.block}"
        out.append(f"# {where}: {OPS[stage.op].name}")
        out.append(f"{stage_name(stage.ref)} = {expression}")
    return list(defs), out


def _known(trace: Trace) -> dict[str, np.ndarray]:
    """The problem's numbers the script holds already, by how the plan path reads them (its
    constants equal to them are not written again): X as given, W_O in the rows layout."""
    p = trace.problem
    known = {}
    if p.x is not None and p.variants.pe is None:  # with PE, the script's X is X + PE
        known["X.detach()"] = p.x.values
    if p.wo is not None:
        known["W_O.detach()" if p.layout != "torch" else "W_O.detach().T"] = p.wo.values
    return known


# a plan whose forward stages hold at most this many numbers has each stage's value written
# into the script and checked; a larger one (an extracted layer at n = 256) only its output
STAGES_WRITTEN = 2000


def _plan_applied(trace: Trace) -> list[str]:
    """The plan qkvcalc ran, applied in torch stage by stage with each op's own rule, and its
    output checked against qkvcalc's (the SDPA and module checks above are independent); for
    a small problem every stage too."""
    defs, steps = plan_lines(trace)
    out = [
        "",
        "# ---- qkvcalc's plan, applied in torch: every stage in plan order, by its op's rule ----",
        "# (float64 throughout; SDPA above, and the module below where it can, are the checks",
        "# that do not follow qkvcalc's steps.)",
        "",
    ]
    for block in defs:
        out += ["", block, ""]
    out += ["", *steps, f"plan_output = {stage_name(trace.final.ref)}"]
    out += [
        'differences["the plan in torch"] = (plan_output - expected).abs().max().item()',
        'print("max |the plan in torch - qkvcalc| =", differences["the plan in torch"])',
    ]
    return out + _stages_checked(trace)


def _stages_checked(trace: Trace) -> list[str]:
    """Each forward stage's value as qkvcalc computed it (its float64 twin under --dtype),
    against the plan's stage in torch: only when they are few numbers (STAGES_WRITTEN)."""
    stages = forward_stages(trace)
    if sum(rows * cols for rows, cols in (s.shape for s in stages)) > STAGES_WRITTEN:
        return ["# (qkvcalc's stages are too many numbers to write here: the output is checked.)"]
    wants = [s.value if trace.precision is None else s.twin_value for s in stages]
    out = [
        "",
        "",
        "def stage_check(name, got, want):",
        '    """A stage of the plan in torch against qkvcalc\'s: equal where qkvcalc has -inf."""',
        "    want = torch.tensor(want, dtype=torch.float64).reshape(got.shape)",
        "    same = (got == want) | (got.isnan() & want.isnan())",
        "    gap = torch.where(same, 0.0, (got - want).abs())",
        "    differences[name] = gap.max().item() if gap.numel() else 0.0",
        "    finite = want[want.isfinite()]",
        "    largest = finite.abs().max().item() if finite.numel() else 0.0",
        "    tolerances[name] = 1e-9 * max(1.0, largest)",
        "    checked.append(name)",
        "",
        "",
        "checked = []",
        "# Each stage as qkvcalc computed it, against the plan's in torch (a name says the stage)."
        if trace.precision is None
        else "# Each stage's float64 twin as qkvcalc computed it (the script runs in float64, not "
        "in the --dtype), against the plan's in torch.",
    ]
    for stage, want in zip(stages, wants, strict=True):
        if want is None:  # --dtype: a stage without a float64 twin
            continue
        where = f"stage {stage.id}" + ("" if stage.head is None else f" head {stage.head}")
        where += "" if stage.step is None else f" step {stage.step}"
        where += "" if stage.block is None else f" block {stage.block}"
        out.append(f"stage_check({text_literal(where)}, {stage_name(stage.ref)}, {literal(want)})")
    said = (
        "every one of qkvcalc's forward stages"
        if all(want is not None for want in wants)
        else "qkvcalc's forward stages that have a float64 twin"
    )
    out += [
        "largest = max(differences[name] for name in checked)",
        f'print(len(checked), "stages, {said}, against the plan\'s in torch:",',
        '      "largest difference", largest)',
    ]
    return out
