"""`qkvcalc train`: plain gradient descent on a problem's weights, from its `attend` or `target`.

Each step runs the problem forward and backward (qkvcalc.run.engine.run with backward=True),
reads the loss L and the gradient of every weight from that trace, and moves each weight that
is not frozen by W ← W − η·∂L/∂W. W_Q, W_K, W_V, W_O and the biases b_Q, b_K, b_V, b_O that the
problem has are learned; a weight the loss does not reach (W_V and W_O under `attend`, which
reads the attention weights alone) has no gradient stage and does not move. A feature that
stands in for W_Q, W_K, W_V (multi-head latent attention) says which matrices it has in their
place and where their gradients are (Feature.learns): W_DQ, w_CQ, W_UQ (or W_Q), W_DKV, W_KR,
w_CKV, W_UK, W_UV, each stepped by the same rule; so does a linear layer of its own weights
around its core (a norm's weight w_norm, the output gating's W_G, a gated norm's W_z; a whole
Gated DeltaNet or Kimi Delta Attention layer's convolution taps w_conv, the gates' weights,
A_log and dt_bias, each head's share gathered into one weight). A
feature that chooses each query's keys (a sparse attention's top-k) runs again at every step
with its own weights as given: a choice has no gradient.

    L = ½·Σ(O − T)²                      `target`
    L = −Σ_heads Σᵢ log A[i, tᵢ]         `attend`

Nothing here prints: a Training holds the numbers (every step's loss, weights and attention
weights, the trained Problem), and qkvcalc.render.train shows them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input import dataset
from qkvcalc.input.cells import Matrix
from qkvcalc.input.fields import DISPLAY
from qkvcalc.input.limits import MAX_ELEMENTS
from qkvcalc.input.numbers import Number
from qkvcalc.input.problem import Problem
from qkvcalc.labels import shown
from qkvcalc.ops import features
from qkvcalc.ops.hooks import Learns
from qkvcalc.plan import ids
from qkvcalc.run.engine import run
from qkvcalc.trace import Trace

LEARNED = ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")  # in the order they are shown
DEFAULT_STEPS = 20
MAX_STEPS = 10_000
DEFAULT_LR = 0.5


@dataclass(frozen=True, eq=False)  # it holds arrays: a Snapshot equals only itself
class Snapshot:
    """The problem after `step` updates (0: as given): its loss, every learned matrix it has
    (rows layout, a bias as 1×out) and its attention weights [H, n, m]."""

    step: int
    loss: float  # of a data set: the mean of its examples' losses
    weights: dict[str, np.ndarray]
    attention: np.ndarray  # of a data set: its first example's
    attentions: tuple[np.ndarray, ...] = ()  # every example's, in order
    each: tuple[float, ...] = ()  # every example's loss, in order


@dataclass(frozen=True, eq=False)
class HeldOut:
    """A held-out example, run with the weights before training and after: never trained on."""

    problem: Problem
    loss_before: float | None  # None: the example gives no loss
    loss_after: float | None
    before: np.ndarray  # its attention weights [H, n, m]
    after: np.ndarray


@dataclass(frozen=True, eq=False)
class Training:
    """A run of gradient descent: `snapshots` 0 … N (N updates; fewer than asked when it was
    interrupted), the learning rate, what was frozen, what the loss moved, and the trained
    problem (`problem`), which `qkvcalc explain` runs as any other."""

    start: Problem
    problem: Problem
    lr: float
    steps: int  # the updates asked for
    frozen: tuple[str, ...]
    learned: tuple[str, ...]  # the matrices the loss has a gradient for and that were not frozen
    snapshots: tuple[Snapshot, ...]
    interrupted: bool = False
    examples: tuple[Problem, ...] = ()  # a data set's examples as they started; () for one
    heldout: tuple[HeldOut, ...] = ()
    unscaled: Training | None = None  # --compare-scale: the same start, trained with scale 1

    @property
    def losses(self) -> list[float]:
        return [s.loss for s in self.snapshots]

    @property
    def done(self) -> int:
        """The updates made."""
        return len(self.snapshots) - 1

    @property
    def first(self) -> Snapshot:
        return self.snapshots[0]

    @property
    def last(self) -> Snapshot:
        return self.snapshots[-1]

    def moved(self, name: str) -> np.ndarray:
        """What a matrix moved in all: its last value minus its first."""
        return self.last.weights[name] - self.first.weights[name]

    def change(self, k: int, name: str) -> np.ndarray:
        """What update k (1 … N) moved a matrix by: −η·∂L/∂W at snapshot k − 1."""
        return self.snapshots[k].weights[name] - self.snapshots[k - 1].weights[name]

    @property
    def unmoved(self) -> list[str]:
        """The learned matrices that no update moved: their gradient was exactly 0 each time."""
        steps = range(1, self.done + 1)
        return [n for n in self.learned if not any(np.any(self.change(k, n)) for k in steps)]

    @property
    def rose(self) -> int:
        """The updates after which the loss was larger than before."""
        losses = self.losses
        return sum(b > a for a, b in itertools.pairwise(losses))


def _learners(p: Problem) -> list[tuple[Learns, Any]]:
    """What train steps of the features that have learned numbers of their own, each with its
    value: the one that stands in for W_Q, W_K and W_V first (multi-head latent attention's
    latents' weights), then a linear layer's own (a norm's weight, the output gating's W_G, a
    gated norm's W_z and weight)."""
    return [(f.learns, value) for f, value in features.active(p) if f.learns is not None]


def _owner(p: Problem, name: str) -> tuple[Learns, Any] | None:
    """The feature whose learned matrix `name` is (with its value); None: a Problem field."""
    return next(((lr, v) for lr, v in _learners(p) if name in lr.names), None)


def weights_of(p: Problem) -> dict[str, np.ndarray]:
    """The learned matrices this problem has, by name, in the order they are shown (the rows
    layout; a feature's own in place of W_Q, W_K, W_V, then W_O, b_O, then a layer's own)."""
    learners = _learners(p)
    stand = features.projecting(p)
    out: dict[str, np.ndarray] = {}
    after: dict[str, np.ndarray] = {}
    for learns, value in learners:
        mine = stand is not None and learns is stand[0].learns
        (out if mine else after).update(learns.weights(value))
    for name in LEARNED:
        m = getattr(p, name)
        if m is not None and name not in out:
            out[name] = m.values
    return out | after


def present(p: Problem) -> tuple[str, ...]:
    """The learned matrices this problem has."""
    return tuple(weights_of(p))


def known(p: Problem) -> tuple[str, ...]:
    """The names --freeze knows for this problem (those it may have)."""
    names: list[str] = []
    stand = features.projecting(p)
    learners = _learners(p)
    for learns, _ in learners:
        if stand is not None and learns is stand[0].learns:
            names += learns.names
    names += [name for name in LEARNED if name not in names]
    for learns, _ in learners:
        names += [name for name in learns.names if name not in names]
    return tuple(names)


def spellings(p: Problem) -> dict[str, str]:
    """Other words --freeze takes for this problem's names (a feature's input key for one, and
    each name as shown: 'w_norm' for norm), lowercased without underscores."""
    names = known(p)
    out = {DISPLAY.get(n, n).lower().replace("_", ""): n for n in names}
    for learns, _ in _learners(p):
        out |= dict(learns.also)
    return {word: name for word, name in out.items() if word not in names}


def gradient(trace: Trace, name: str) -> np.ndarray | None:
    """∂L/∂ of the weight `name` in its own layout (rows: the trace's problem is), from its
    gradient stage, or gathered from several (each head's share of a layer's convolution taps,
    A_log, dt_bias: Learns.gather); None: the loss does not reach it."""
    p = trace.problem
    owner = _owner(p, name)
    if owner is None:
        stage = trace.find(ids.GRAD_OF[name])
        return None if stage is None else stage.value
    learns, value = owner
    sid = learns.stages(value).get(name)
    if sid is None:
        assert learns.gather is not None, name
        return learns.gather(p, value, name, trace.find)
    stage = trace.find(sid)
    return None if stage is None else learns.grad(value, name, stage.value)


def placed(p: Problem, weights: Mapping[str, np.ndarray]) -> Problem:
    """p with these matrices (by name, rows layout) in place of its own: W_O and the biases
    as Problem's fields, a feature's (the latents' weights, a layer's norm) in its value."""
    owned = {name for learns, value in _learners(p) for name in learns.weights(value)}
    plain: dict[str, Any] = {k: Matrix(np.array(v)) for k, v in weights.items() if k not in owned}
    out = replace(p, **plain)
    stood: dict[str, Any] = {}
    for feature, value in features.active(p):
        learns = feature.learns
        mine = {} if learns is None else learns.weights(value)
        if learns is not None and mine.keys() & weights.keys():
            stood[feature.name] = learns.moved(value, {k: weights[k] for k in mine if k in weights})
    if stood:
        out = replace(out, variants=replace(p.variants, features={**p.variants.features, **stood}))
    return out


def parse_freeze(
    text: str | Iterable[str] | None,
    names: Sequence[str] = LEARNED,
    spelled: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """'wq,wv' (or 'wq wv', or a list) as names; an unknown name is one message. `names`: those
    the problem may have (multi-head latent attention's: wdq, wuq …); `spelled`: other words for
    them (w_norm for norm: spellings)."""
    if text is None:
        return ()
    words = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    spelled = spelled or {}
    out: list[str] = []
    for word in words:
        name = str(word).strip().lower().replace("_", "")
        name = name if name in names else spelled.get(name, name)
        if name not in names:
            raise QkvcalcError("train.freeze_unknown", name=word, names=", ".join(names))
        if name not in out:
            out.append(name)
    return tuple(out)


def parse_steps(text: str | int | None) -> int:
    """--steps as typed: a whole number from 1 to MAX_STEPS (None: the default)."""
    if text is None:
        return DEFAULT_STEPS
    word = text.strip() if isinstance(text, str) else text
    if isinstance(word, str) and word.isascii() and word.isdigit() and len(word) <= 9:
        word = int(word)
    if isinstance(word, bool) or not isinstance(word, int) or not 1 <= word <= MAX_STEPS:
        raise QkvcalcError("train.steps", value=shown(text), limit=f"{MAX_STEPS:,}")
    return word


def parse_lr(text: str | float | None) -> float:
    """--lr as typed: a finite number greater than 0 (None: the default)."""
    if text is None:
        return DEFAULT_LR
    value: float | None = None
    if isinstance(text, str):
        word = text.strip()
        with suppress(ValueError):
            value = float(word) if word.isascii() else None
    elif isinstance(text, int | float) and not isinstance(text, bool):
        value = float(text)
    if value is None or not math.isfinite(value) or value <= 0:
        raise QkvcalcError("train.lr", value=shown(text))
    return value


def loss_of(trace: Trace) -> float:
    """L of the trace's problem: ½·Σ(O − T)² (`target`) or −Σ log A[i, tᵢ] over the heads
    (`attend`)."""
    loss = trace.problem.loss
    assert loss is not None
    if loss.kind == "target":
        assert loss.matrix is not None
        return 0.5 * float(np.sum((trace.output - loss.matrix.values) ** 2))
    a = attention(trace)
    with np.errstate(divide="ignore"):
        return -float(sum(np.log(head[i, t]) for head in a for i, t in loss.targets()))


def attention(trace: Trace) -> np.ndarray:
    """The attention weights, [H, n, m] whatever the number of heads."""
    w = trace.weights
    return w if w.ndim == 3 else w[None]


def _check(p: Problem, steps: int, frozen: Sequence[str]) -> tuple[str, ...]:
    """The problem can be trained this way: the trainable matrices, or one message."""
    # first what no loss would change: a layer train cannot go through, then the loss
    for feature, _ in features.active(p):  # one whose own numbers train cannot move yet
        if feature.no_train:
            raise QkvcalcError(feature.no_train)
    for feature, value in features.active(p):
        refused = feature.no_train_when(value) if feature.no_train_when else ""
        if refused:
            raise QkvcalcError(refused)
    if p.loss is None or p.loss.kind not in ("attend", "target"):  # dL/dO alone has no L
        raise QkvcalcError("train.loss", given=p.loss.kind if p.loss else Msg("train.loss_none"))
    stand = features.projecting(p)  # one that stands in for W_Q, W_K, W_V says what train steps
    assert stand is None or stand[0].learns is not None, stand[0].name
    if not p.projected:
        raise QkvcalcError("train.no_weights")
    if p.decode is not None or p.tiles is not None:
        raise QkvcalcError("train.schedule", option="decode" if p.decode is not None else "tiles")
    has = present(p)
    missing = [name for name in frozen if name not in has]
    if missing:
        raise QkvcalcError("train.freeze_missing", names=", ".join(missing), has=", ".join(has))
    free = [name for name in has if name not in frozen]
    if not free:
        raise QkvcalcError("train.all_frozen")
    numbers = sum(w.size for w in weights_of(p).values()) + p.heads * p.n * p.m
    if numbers * (steps + 1) > MAX_ELEMENTS:
        raise QkvcalcError(
            "train.too_big", steps=steps, numbers=numbers, limit=MAX_ELEMENTS,
            most=max(1, MAX_ELEMENTS // numbers - 1),
        )  # fmt: skip
    return tuple(free)


def gradients(trace: Trace, names: Sequence[str]) -> dict[str, np.ndarray]:
    """∂L/∂W of each matrix named that the loss reaches (rows layout: the trace's problem is)."""
    out: dict[str, Any] = {}
    for name in names:
        value = gradient(trace, name)
        if value is not None:
            out[name] = value
    return out


def step(p: Problem, grads: dict[str, np.ndarray], lr: float) -> Problem:
    """The problem with each matrix W of `grads` moved to W − η·∂L/∂W."""
    now = weights_of(p)
    moved: dict[str, np.ndarray] = {}
    for name, grad in grads.items():
        w = now[name]
        moved[name] = w - lr * grad.reshape(w.shape)
    return placed(p, moved)


class Descent:
    """Gradient descent, one update at a time: `run()` makes every update asked for, and
    `result()` is the Training of those made so far (the CLI asks for it after a Ctrl-C).

    With `examples` (a data set), every example is a problem with the same weights: the loss
    is the mean of theirs, and so is every gradient; `problem` is the first of them."""

    def __init__(
        self,
        problem: Problem,
        steps: int = DEFAULT_STEPS,
        lr: float = DEFAULT_LR,
        freeze: str | Iterable[str] | None = None,
        examples: Sequence[Problem] = (),
        heldout: Sequence[Problem] = (),
    ) -> None:
        # a number from Python is held to the same rules as one typed
        self.steps, self.lr = parse_steps(steps), parse_lr(lr)
        self.frozen = parse_freeze(freeze, known(problem), spellings(problem))
        given = list(examples) or [problem]
        free = [_check(p, self.steps, self.frozen) for p in given]
        self.free = free[0]
        _check_total(given, self.steps)
        # the rows layout, so that every gradient comes as the weight is stored; not --exact
        self.starts = [replace(without_fractions(p), layout="rows", backward=True) for p in given]
        self.start = self.starts[0]
        self.currents = list(self.starts)
        self.current = self.start
        self.dataset = bool(examples)
        self.heldout = [replace(without_fractions(p), layout="rows") for p in heldout]
        self.snapshots: list[Snapshot] = []
        self.learned: tuple[str, ...] = ()

    def updates(self) -> Iterator[Snapshot]:
        """Snapshot 0 (the problem as given), then one after each update."""
        traces = [run(p) for p in self.currents]
        self.learned = tuple(
            name for name in self.free if any(gradient(t, name) is not None for t in traces)
        )
        if not self.learned:  # `attend` with W_Q and W_K frozen: W_V alone would not move
            raise QkvcalcError("train.nothing_reached", names=", ".join(self.free))
        while True:
            snapshot = self._snapshot(len(self.snapshots), traces)
            if not np.isfinite(snapshot.loss):
                raise QkvcalcError("train.diverged", step=snapshot.step, lr=self.lr)
            self.snapshots.append(snapshot)
            yield snapshot
            if snapshot.step == self.steps:
                return
            grads = mean_gradients(traces, self.learned, self.current)
            self.currents = [step(p, grads, self.lr) for p in self.currents]
            self.current = self.currents[0]
            try:
                traces = [run(p) for p in self.currents]
            except QkvcalcError as err:  # the weights grew until a number overflowed
                if err.msg.key == "loss.attend_masked":  # a choice of keys moved with them
                    raise QkvcalcError(
                        "train.attend_hidden", step=snapshot.step + 1, **err.msg.params
                    ) from None
                if err.msg.key != "overflow":
                    raise
                raise QkvcalcError("train.diverged", step=snapshot.step + 1, lr=self.lr) from None

    def run(self) -> Training:
        for _ in self.updates():
            pass
        return self.result()

    def result(self, interrupted: bool = False, unscaled: Training | None = None) -> Training:
        """The Training of the updates made; the trained problem is the last snapshot's."""
        trained = self._at(self.snapshots[-1] if self.snapshots else None)
        return Training(
            start=replace(self.start, backward=False),
            problem=replace(trained, backward=False),
            lr=self.lr,
            steps=self.steps,
            frozen=self.frozen,
            learned=self.learned,
            snapshots=tuple(self.snapshots),
            interrupted=interrupted,
            examples=tuple(replace(p, backward=False) for p in self.starts) if self.dataset else (),
            heldout=tuple(self._held_out(p) for p in self.heldout) if self.snapshots else (),
            unscaled=unscaled,
        )

    def _held_out(self, p: Problem) -> HeldOut:
        """A held-out example with the first and the last snapshot's weights."""
        before, after = (
            run(with_weights(p, s.weights)) for s in (self.snapshots[0], self.snapshots[-1])
        )
        has_loss = p.loss is not None and p.loss.kind in ("attend", "target")
        return HeldOut(
            problem=p,
            loss_before=loss_of(before) if has_loss else None,
            loss_after=loss_of(after) if has_loss else None,
            before=attention(before).copy(),
            after=attention(after).copy(),
        )

    def _at(self, snapshot: Snapshot | None) -> Problem:
        meta = _trained_meta(self.start)
        if snapshot is None:
            return replace(self.start, meta=meta)
        return placed(replace(self.start, meta=meta), snapshot.weights)

    def _snapshot(self, number: int, traces: Sequence[Trace]) -> Snapshot:
        p = self.current
        weights = {name: w.copy() for name, w in weights_of(p).items()}
        each = tuple(loss_of(t) for t in traces)
        attentions = tuple(attention(t).copy() for t in traces)
        return Snapshot(number, float(np.mean(each)), weights, attentions[0], attentions, each)


def with_weights(p: Problem, weights: dict[str, np.ndarray]) -> Problem:
    """p with these weights (rows layout): a held-out example at a snapshot."""
    return placed(replace(p, layout="rows"), weights)


def mean_gradients(
    traces: Sequence[Trace], names: Sequence[str], p: Problem
) -> dict[str, np.ndarray]:
    """∂L/∂W of the mean loss: the mean of every example's gradient (0 where the loss of an
    example does not reach a matrix)."""
    out: dict[str, np.ndarray] = {}
    for name in names:
        total = np.zeros_like(weights_of(p)[name])
        for trace in traces:
            grad = gradients(trace, [name]).get(name)
            if grad is not None:
                total = total + grad.reshape(total.shape)
        out[name] = total / len(traces)
    return out


def _check_total(problems: Sequence[Problem], steps: int) -> None:
    """A data set's snapshots, all examples together, stay within the limit."""
    if len(problems) < 2:
        return
    p = problems[0]
    numbers = sum(w.size for w in weights_of(p).values())
    numbers += sum(q.heads * q.n * q.m for q in problems)
    if numbers * (steps + 1) > MAX_ELEMENTS:
        raise QkvcalcError(
            "train.too_big", steps=steps, numbers=numbers, limit=MAX_ELEMENTS,
            most=max(1, MAX_ELEMENTS // numbers - 1),
        )  # fmt: skip


def _trained_meta(p: Problem) -> dict[str, str]:
    """What the trained problem says of itself: no longer the preset it started from
    (edited_from), or the name it had; the description and reference described the start."""
    if p.preset is not None:
        return {"edited_from": p.preset}
    return {"name": p.meta["name"]} if "name" in p.meta else {}


def without_fractions(p: Problem) -> Problem:
    """p as float64 numbers only: training moves the weights by float arithmetic, so no step
    after the first has the fractions a typed problem has, and every step is run alike (the
    decimals rounded from numpy's values, never from exact ones; no --exact)."""
    out: dict[str, Any] = {}
    for name in ("x", "source", *LEARNED):
        m = getattr(p, name)
        if m is not None and m.exact is not None:
            out[name] = Matrix(m.values)
    plain = replace(p, exact=False, exact_refused=None, **out)
    own = {k: w for learns, value in _learners(plain) for k, w in learns.weights(value).items()}
    return placed(plain, own) if own else plain  # a feature's weights as plain floats too


def descents(
    doc: Mapping[Any, Any],
    steps: int | str | None = DEFAULT_STEPS,
    lr: float | str | None = DEFAULT_LR,
    freeze: str | Iterable[str] | None = None,
    compare_scale: bool = False,
) -> list[Descent]:
    """The descent a document asks for (a problem, or a data set: qkvcalc.input.dataset), and
    with `compare_scale` a second one from the same start with scale 1."""
    steps, lr = parse_steps(steps), parse_lr(lr)
    out = [_descent(doc, steps, lr, freeze)]
    if compare_scale:
        if features.mixing(out[0].start) is not None:  # a linear layer: no scores to scale
            raise QkvcalcError("train.compare_scale_mixer")
        if out[0].start.scale == 1:
            raise QkvcalcError("train.compare_scale_one")
        out.append(_descent(doc, steps, lr, freeze, scale=1))
    return out


def one_problem(doc: Mapping[Any, Any]) -> None:
    """Validate a document that is one problem, as training reads it (Problem.from_mapping); a
    set of examples is left to the training's own reading, example by example."""
    if not dataset.is_dataset(doc):
        Problem.from_mapping(doc)


def _descent(
    doc: Mapping[Any, Any],
    steps: int,
    lr: float,
    freeze: str | Iterable[str] | None,
    scale: float | None = None,
) -> Descent:
    at = {"scale": scale} if scale is not None else {}
    if not dataset.is_dataset(doc):
        return Descent(Problem.from_mapping({**doc, **at}), steps, lr, freeze)
    top, examples, heldout = dataset.split(doc)

    def problems(name: str, docs: list[dict]) -> list[Problem]:
        out = []
        for k, example in enumerate(docs):
            try:
                out.append(Problem.from_mapping({**dataset.merged(top, example), **at}))
            except QkvcalcError as err:
                raise err.within("dataset.in_example", key=name, index=k + 1) from None
        return out

    made = problems("examples", examples)
    return Descent(made[0], steps, lr, freeze, made, problems("heldout", heldout))


def train(
    problem: Problem | Mapping[Any, Any],
    steps: int = DEFAULT_STEPS,
    lr: float = DEFAULT_LR,
    freeze: str | Iterable[str] | None = None,
    compare_scale: bool = False,
) -> Training:
    """`steps` updates of gradient descent with learning rate `lr`, the matrices named in
    `freeze` ('wq,wv' or ['wq', 'wv']) kept as they are. `problem`: a Problem, or a document
    (a problem, or a data set of examples sharing the weights: its loss is their mean);
    `compare_scale`: trained again from the same start with scale 1 (`Training.unscaled`)."""
    if isinstance(problem, Problem):
        found = [Descent(problem, steps, lr, freeze)]
        if compare_scale:
            if features.mixing(problem) is not None:  # a linear layer: no scores to scale
                raise QkvcalcError("train.compare_scale_mixer")
            if problem.scale == 1:
                raise QkvcalcError("train.compare_scale_one")
            one = replace(problem, scale_given=Number(1.0, Fraction(1)))
            found.append(Descent(one, steps, lr, freeze))
    else:
        found = descents(problem, steps, lr, freeze, compare_scale)
    unscaled = found[1].run() if len(found) > 1 else None
    found[0].run()
    return found[0].result(unscaled=unscaled)
