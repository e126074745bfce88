"""`qkvcalc train`: plain gradient descent on a problem's weights, from its `attend` or `target`.

Each step runs the problem forward and backward (qkvcalc.run.engine.run with backward=True),
reads the loss L and the gradient of every weight from that trace, and moves each weight that
is not frozen by W ← W − η·∂L/∂W. W_Q, W_K, W_V, W_O and the biases b_Q, b_K, b_V, b_O that the
problem has are learned; a weight the loss does not reach (W_V and W_O under `attend`, which
reads the attention weights alone) has no gradient stage and does not move.

    L = ½·Σ(O − T)²                      `target`
    L = −Σ_heads Σᵢ log A[i, tᵢ]         `attend`

Nothing here prints: a Training holds the numbers (every step's loss, weights and attention
weights, the trained Problem), and qkvcalc.render.train shows them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from qkvcalc import features
from qkvcalc.errors import QkvcalcError
from qkvcalc.input.cells import Matrix
from qkvcalc.input.limits import MAX_ELEMENTS
from qkvcalc.input.problem import Problem
from qkvcalc.labels import shown
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
    loss: float
    weights: dict[str, np.ndarray]
    attention: np.ndarray


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


def present(p: Problem) -> tuple[str, ...]:
    """The learned matrices this problem has."""
    return tuple(name for name in LEARNED if getattr(p, name) is not None)


def parse_freeze(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """'wq,wv' (or 'wq wv', or a list) as names; an unknown name is one message."""
    if text is None:
        return ()
    words = text.replace(",", " ").split() if isinstance(text, str) else list(text)
    out: list[str] = []
    for word in words:
        name = str(word).strip().lower().replace("_", "")
        if name not in LEARNED:
            raise QkvcalcError("train.freeze_unknown", name=word, names=", ".join(LEARNED))
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
    if p.loss is None or p.loss.kind not in ("attend", "target"):  # dL/dO alone has no L
        raise QkvcalcError("train.loss", given=p.loss.kind if p.loss else "none")
    if features.projecting(p) is not None:  # no W_Q, W_K, W_V: its latents stand in for them
        raise QkvcalcError("train.projecting")
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
    numbers = sum(getattr(p, name).values.size for name in has) + p.heads * p.n * p.m
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
        stage = trace.find(ids.GRAD_OF[name])
        if stage is not None:
            out[name] = stage.value
    return out


def step(p: Problem, grads: dict[str, np.ndarray], lr: float) -> Problem:
    """The problem with each matrix W of `grads` moved to W − η·∂L/∂W."""
    moved: dict[str, Any] = {}
    for name, grad in grads.items():
        w = getattr(p, name).values
        moved[name] = Matrix(w - lr * grad.reshape(w.shape))
    return replace(p, **moved)


class Descent:
    """Gradient descent, one update at a time: `run()` makes every update asked for, and
    `result()` is the Training of those made so far (the CLI asks for it after a Ctrl-C)."""

    def __init__(
        self,
        problem: Problem,
        steps: int = DEFAULT_STEPS,
        lr: float = DEFAULT_LR,
        freeze: str | Iterable[str] | None = None,
    ) -> None:
        # a number from Python is held to the same rules as one typed
        self.steps, self.lr = parse_steps(steps), parse_lr(lr)
        self.frozen = parse_freeze(freeze)
        self.free = _check(problem, self.steps, self.frozen)
        # the rows layout, so that every gradient comes as the weight is stored; not --exact
        self.start = replace(without_fractions(problem), layout="rows", backward=True)
        self.current = self.start
        self.snapshots: list[Snapshot] = []
        self.learned: tuple[str, ...] = ()

    def updates(self) -> Iterator[Snapshot]:
        """Snapshot 0 (the problem as given), then one after each update."""
        trace = run(self.current)
        self.learned = tuple(name for name in self.free if trace.find(ids.GRAD_OF[name]))
        if not self.learned:  # `attend` with W_Q and W_K frozen: W_V alone would not move
            raise QkvcalcError("train.nothing_reached", names=", ".join(self.free))
        while True:
            snapshot = self._snapshot(len(self.snapshots), trace)
            if not np.isfinite(snapshot.loss):
                raise QkvcalcError("train.diverged", step=snapshot.step, lr=self.lr)
            self.snapshots.append(snapshot)
            yield snapshot
            if snapshot.step == self.steps:
                return
            self.current = step(self.current, gradients(trace, self.learned), self.lr)
            try:
                trace = run(self.current)
            except QkvcalcError as err:  # the weights grew until a number overflowed
                if err.msg.key != "overflow":
                    raise
                raise QkvcalcError("train.diverged", step=snapshot.step + 1, lr=self.lr) from None

    def run(self) -> Training:
        for _ in self.updates():
            pass
        return self.result()

    def result(self, interrupted: bool = False) -> Training:
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
        )

    def _at(self, snapshot: Snapshot | None) -> Problem:
        meta = _trained_meta(self.start)
        if snapshot is None:
            return replace(self.start, meta=meta)
        moved: dict[str, Any] = {k: Matrix(v) for k, v in snapshot.weights.items()}
        return replace(self.start, meta=meta, **moved)

    def _snapshot(self, number: int, trace: Trace) -> Snapshot:
        p = self.current
        weights = {name: getattr(p, name).values.copy() for name in present(p)}
        return Snapshot(number, loss_of(trace), weights, attention(trace).copy())


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
    return replace(p, exact=False, exact_refused=None, **out)


def train(
    problem: Problem,
    steps: int = DEFAULT_STEPS,
    lr: float = DEFAULT_LR,
    freeze: str | Iterable[str] | None = None,
) -> Training:
    """`steps` updates of gradient descent with learning rate `lr`, the matrices named in
    `freeze` ('wq,wv' or ['wq', 'wv']) kept as they are."""
    return Descent(problem, steps, lr, freeze).run()
