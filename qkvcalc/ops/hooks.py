"""The records the layers hand a feature's hooks (Sizes, Turn, Logits, Reading) and the small
ones a feature declares beside its Feature (Mistakes, JoinWords). The input layer and the plan
build them on every run; Feature itself (qkvcalc.ops.base: 64 fields, a NamedTuple that takes
about 1.5 ms to create) is loaded with the first feature module a problem uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qkvcalc.records import NamedTuple

if TYPE_CHECKING:
    import numpy as np

    from qkvcalc.ops.op import Candidate
    from qkvcalc.plan.specs import Ref


class Sizes(NamedTuple):
    """What a feature's key is checked against while the problem is read."""

    n: int
    m: int
    heads: int
    d_k: int
    exact: bool
    mask_kind: str  # "none", "causal" or "custom"
    kv_heads: int  # G: the K/V heads (a per-head key norm has one row each)
    d_model: int | None = None  # X's width (None when q, k, v are given directly)
    d_v: int = 0  # the width of one head's values and output
    layout: str = "rows"  # how weights are given: "rows" (X·W) or "torch" (out × in)
    # the value of the feature that stands in for W_Q, W_K, W_V (multi-head latent attention),
    # None without one: what a feature that reads its stages is checked against
    stood: Any = None


class Turn(NamedTuple):
    """Where one side of a head stands when a feature turns it (a norm, a rotation: stages
    after the projections, before Kᵀ): the stage read and its symbol so far ('Q', 'K_norm'),
    the side ('Q' or 'K'), the labels of its rows and their positions, the decode step (None
    outside a decode run) and the shape in the paper's letters."""

    h: int | None
    ref: Ref
    symbol: str
    side: str
    rows: tuple[str, ...]
    positions: np.ndarray
    step: int | None
    letters: str


class Logits(NamedTuple):
    """Where a head's logits stand when a feature adds its stages after them: the stage read
    (its ref and how the quiz names it), the formula so far, the labels of rows and columns,
    the decode step (None outside a decode run), the shape in the paper's letters, and in a
    decode step the rows of its queries and how many keys are cached (None: all of them)."""

    h: int | None
    ref: Ref
    symbol: str
    formula: str
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    step: int | None
    letters: str
    take: np.ndarray | None = None
    end: int | None = None


# the reading line under a head's weights, of the stage `ref` (with `extra` columns after
# the keys' named so): what a feature's weights stage may say instead of the plain one
Reading = Callable[["Ref", tuple[str, ...]], "Callable[..., Any] | None"]


class Mistakes(NamedTuple):
    """The classic mistakes at a stage of op `op` (the quiz names one when a student's matrix
    fits it alone): their stable ids, and how to work their matrices out from the stage and
    the versions of an earlier stage (`versions(stage id)`: the student's own, then the true
    one), so that a mistake on top of an earlier one is still recognised."""

    op: str
    ids: tuple[str, ...]
    build: Callable[[Any, Callable[[str], list[np.ndarray]]], list[Candidate]]


class JoinWords(NamedTuple):
    """How the concat and its backward name the parts a feature joins after every head
    (Feature.joined) instead of the heads: the concat's formula, its topic (stage.<topic>.title
    and .why), its note on the columns and each part's span in it ({head}, {cols}), its hint,
    the topic of each part's columns of d(concat) in the backward, and the topics of the
    output after them (W_O's, or the joined parts' with no W_O)."""

    formula: str
    topic: str
    note: str
    span: str
    hint: str
    back_topic: str
    final_topic: str  # W_O's (the output projection's) topic
    joined_topic: str  # the output's topic with no W_O


class Learns(NamedTuple):
    """What `qkvcalc train` steps of a feature's own learned numbers: one that stands in for W_Q,
    W_K and W_V (multi-head latent attention's latents' weights), or a linear layer's after its
    core (a norm's weight, W_G, W_z) or around it (a whole linear layer's convolution taps, the
    gates' weights, A_log and dt_bias): every name its learned numbers can have, in the order
    they are shown; given its value, those it has (name -> matrix, the rows layout, a vector
    such as a norm's weight as 1×r) and each one's gradient stage; a gradient stage's numbers
    set in its matrix's layout (value, name, numbers); and the value with some of them moved."""

    names: tuple[str, ...]
    weights: Callable[[Any], dict[str, np.ndarray]]
    stages: Callable[[Any], dict[str, str]]
    grad: Callable[[Any, str, np.ndarray], np.ndarray]
    moved: Callable[[Any, dict[str, np.ndarray]], Any]
    also: tuple[tuple[str, str], ...] = ()  # another word --freeze takes for a name: its input key
    # a gradient made of several stages, for a name `stages` leaves out (each head's share of a
    # convolution's taps, of A_log and dt_bias): given the problem, the value, the name and how
    # to find a stage by id and head, the gradient in its matrix's layout, or None when the loss
    # reaches none of it
    gather: Callable[[Any, Any, str, Callable[..., Any]], np.ndarray | None] | None = None
