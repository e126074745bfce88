"""What a feature module declares: one optional mechanism of attention, everything about it in
one place (micrograd keeps an op's forward and backward side by side; a feature keeps its
input key, its stage, its operations, its cell arithmetic, its sentences' keys, its worksheet
policy, its PyTorch lines and its JSON echo side by side).

Each layer reads the features through the registry (qkvcalc.features.REGISTRY) and never names
one: the input layer calls `read`, the plan calls `logits`, the op table merges `ops`, the
writers call `work`, `header` and `echo`, the torch script `torch_logits`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from qkvcalc.run.op import Op

if TYPE_CHECKING:
    import numpy as np

    from qkvcalc.i18n import Msg
    from qkvcalc.input.problem import Problem
    from qkvcalc.plan.specs import Ref, Spec


class Sizes(NamedTuple):
    """What a feature's key is checked against while the problem is read."""

    n: int
    m: int
    heads: int
    d_k: int
    exact: bool
    mask_kind: str  # "none", "causal" or "custom"


class Logits(NamedTuple):
    """Where a head's logits stand when a feature adds its stage after them: the stage read
    (its ref and how the quiz names it), the formula so far, the labels of rows and columns,
    the decode step (None outside a decode run) and the shape in the paper's letters."""

    h: int | None
    ref: Ref
    symbol: str
    formula: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    step: int | None
    letters: str


# the reading line under a head's weights, of the stage `ref` (with `extra` columns after
# the keys' named so): what a feature's weights stage may say instead of the plain one
Reading = Callable[["Ref", tuple[str, ...]], "Callable[..., Any] | None"]

# the cell arithmetic of one op: (stage, i, j, style, exact, result) -> the line, or None; the
# style is the writer's (qkvcalc.render.arith.Style): how numbers and symbols are written
Work = Callable[..., "str | None"]


@dataclass(frozen=True)
class Feature:
    name: str  # its key in the input format (the fields table, qkvcalc.input.fields, lists it)
    read: Callable[[Any, Sizes], Any]  # the key's value, checked (a QkvcalcError if it is wrong)
    ops: tuple[Op, ...] = ()  # the operations its stages are
    # its stage on a head's logits (after the scaling and score bias, before the mask)
    logits: Callable[[Problem, Any, Logits], Spec] | None = None
    # how it changes a head's softmax: the planned exp and weights stages in, its own out
    softmax: Callable[[Problem, Any, Spec, Spec, Reading], tuple[Spec, Spec]] | None = None
    # the causal mask narrowed: given pos_i − pos_j ([n, m]), the keys it still allows
    causal: Callable[[Any, np.ndarray], np.ndarray] | None = None
    mask_notes: Callable[[Any], tuple[Msg, ...]] | None = None  # what it says on the mask
    # attention in tiles: where the online softmax starts, (m₀, ℓ₀) of head h (−∞, 0 without)
    tiles_start: Callable[[Any, int | None], tuple[float, float]] | None = None
    work: Mapping[str, Work] = field(default_factory=dict)  # op name -> its cell arithmetic
    lazy_stages: int = 0  # the n×m stages it adds to each head (the size budget counts them)
    header: Callable[[Any], tuple[str, dict[str, Any]]] | None = None  # the run's header line
    echo: Callable[[Any], Any] = lambda value: value  # its value in a JSON trace's "input"
    worksheet_notes: tuple[str, ...] = ()  # its notes that tell no result (a worksheet keeps)
    # --format torch: the lines that turn `scores` ([1, H, n, m], scaled and biased) into this
    # feature's logits when the attention is written out (SDPA has no place for it)
    torch_logits: Callable[[Any, Callable[[float], str]], list[str]] | None = None
    # … and the lines that make `weights` [1, H, n, m] from the masked `scores` instead of
    # torch.softmax (given the value and how to write an array as an ASCII literal)
    torch_softmax: Callable[[Any, Callable[[Any], str]], list[str]] | None = None
    torch_module_gap: str = ""  # why nn.MultiheadAttention cannot check it
    # --format torch: the lines that narrow `causal` ([n, m] bool) given `distance` (pos_i − pos_j)
    torch_mask: Callable[[Any], list[str]] | None = None
