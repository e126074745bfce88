"""Grading a student's matrices against a Trace, cell by cell, with mistakes traced to their start.

Tolerance. A cell is right when it agrees with the true value to the precision the quiz shows:
within half a unit of the last shown decimal (precision 2: |answer − value| ≤ 0.005), so
`4.95`, `4.9497` and `7/sqrt(2)` are all right for 7/√2. From |value| = 10 up the tolerance
grows with the value (0.5·10^−p·|value|/10: the same p + 2 significant figures), because a
hand calculation of a large exponential keeps significant figures, not decimals. Infinite
values (a masked score, −∞) must be given exactly.

Carried mistakes. Each stage is recomputed from the student's *own* earlier answers with the
engine's functions (K from the problem, Kᵀ from their K, Q·Kᵀ from their Q and Kᵀ, … the
weights from their exponentials, the output from their weights and V). A cell that misses the
true value but matches that recomputation is "carried": the student did this step right and
the mistake came from earlier; its origins are the student's own wrong cells it depends on. A
cell that matches the recomputation while every cell it depends on was right (only rounded)
is right. Stages the student was not asked are filled in from their earlier answers, so a
mistake in K is still found in the weights when Q·Kᵀ was skipped.

Nothing here prints or formats: verdicts are data that the session and the report put into
words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from qkvcalc.engine import apply_mask, normalise, project, softmax_parts
from qkvcalc.errors import QkvcalcError
from qkvcalc.quiz.mistakes import Mistake, recognise
from qkvcalc.trace import Stage, Trace

# Stage ids a student can be asked for, in the order of a head's calculation.
GRADABLE = ("q", "k", "v", "kt", "scores", "scaled", "masked", "exp", "weights", "output", "concat")
DEFAULT_STAGES = ("q", "k", "v", "scores", "scaled", "weights", "output")

# How a cell is named in prompts and verdicts: K[2,1], Q·Kᵀ[1,2], A[3,1].
SYMBOLS = {
    "q": "Q",
    "k": "K",
    "v": "V",
    "kt": "Kᵀ",
    "scores": "Q·Kᵀ",
    "scaled": "S",
    "masked": "S+M",
    "exp": "E",
    "weights": "A",
    "output": "out",
    "concat": "concat",
}

# The shape of each stage in the paper's letters, for messages about a wrong-shaped answer.
SHAPES = {
    "q": "n×d_k",
    "k": "m×d_k",
    "v": "m×d_v",
    "kt": "d_k×m",
    "scores": "n×m",
    "scaled": "n×m",
    "masked": "n×m",
    "exp": "n×m",
    "weights": "n×m",
    "output": "n×d_v",
    "concat": "n×H·d_v",
}

RIGHT, WRONG, CARRIED, MISSING = "right", "wrong", "carried", "missing"
VERDICTS = (RIGHT, CARRIED, WRONG, MISSING)


# ---- tolerance -------------------------------------------------------------------------------


def tolerance(expected: float, precision: int) -> float:
    """How far an answer may be from `expected` and still be right at `precision` decimals."""
    half_unit = 0.5 * 10.0**-precision
    # a hair of slack, so that a value rounded to `precision` decimals is never refused
    return half_unit * max(1.0, abs(expected) / 10.0) * (1 + 1e-9) + 1e-12


def agrees(answer: float, expected: float, precision: int) -> bool:
    if not (math.isfinite(answer) and math.isfinite(expected)):
        return answer == expected
    return abs(answer - expected) <= tolerance(expected, precision)


# ---- stage keys: "k" for one head, "2/k" for head 2 of several ---------------------------------


def stage_key(stage: Stage) -> str:
    return stage.id if stage.head is None else f"{stage.head}/{stage.id}"


def split_key(key: str) -> tuple[str, int | None]:
    """'2/scores' -> ('scores', 2); 'scores' -> ('scores', None)."""
    head, _, sid = key.rpartition("/")
    return sid, (int(head) if head else None)


def stage_keys(trace: Trace) -> dict[str, Stage]:
    """Every stage a student could be graded on, by key, in the trace's order."""
    return {stage_key(s): s for s in trace.stages if s.id in GRADABLE}


def askable(stage: Stage) -> bool:
    """Stages given in the problem (Q, K, V typed in directly) have nothing to work out."""
    return stage.op not in ("input", "slice")


def select_keys(trace: Trace, names: Iterable[str] | None) -> list[str]:
    """The keys that `--stages q,k,2/scores` picks, in the trace's order.

    A bare id picks that stage in every head (and the final output, for `output`);
    `h/id` picks one head's. None means the default stages.
    """
    keys = stage_keys(trace)
    wanted = list(DEFAULT_STAGES if names is None else names)
    known = sorted({split_key(k)[0] for k, s in keys.items() if askable(s)}, key=GRADABLE.index)
    picked: set[str] = set()
    for name in wanted:
        name = name.strip().lower()
        head_text, _, sid = name.rpartition("/")
        head = int(head_text) if head_text.isdigit() else None
        if sid not in GRADABLE or (head_text and head is None):
            raise QkvcalcError("quiz.stage_unknown", name=name, known=", ".join(known))
        matches = [k for k, s in keys.items() if s.id == sid and (head is None or s.head == head)]
        if head is not None and not matches:
            raise QkvcalcError("quiz.stage_unknown", name=name, known=", ".join(known))
        picked.update(k for k in matches if askable(keys[k]))
    chosen = [k for k in keys if k in picked]
    if not chosen and names is not None:
        raise QkvcalcError("quiz.stages_none", names=", ".join(wanted), known=", ".join(known))
    return chosen


# ---- verdicts --------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class CellRef:
    """One cell of one stage (0-based i, j). Refs sort by stage order, then row, then column."""

    order: int
    key: str
    i: int
    j: int

    @property
    def stage_id(self) -> str:
        return split_key(self.key)[0]

    @property
    def head(self) -> int | None:
        return split_key(self.key)[1]

    @property
    def label(self) -> str:
        """'K[2,1]' (1-based); the head, when there are several, is said beside it."""
        return f"{SYMBOLS[self.stage_id]}[{self.i + 1},{self.j + 1}]"


@dataclass(frozen=True)
class CellVerdict:
    ref: CellRef
    verdict: str  # right | wrong | carried | missing
    answer: float | None  # None: not answered
    expected: float  # the true value
    own: float  # what the student's own earlier answers give for this cell
    origins: tuple[CellRef, ...] = ()  # carried: the student's first wrong cells it came from


@dataclass(frozen=True)
class StageGrade:
    key: str
    stage: Stage
    cells: tuple[CellVerdict, ...]  # row by row
    mistake: Mistake | None = None  # the classic mistake that explains the wrong cells

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.cells)

    @property
    def total(self) -> int:
        return len(self.cells)

    @property
    def status(self) -> str:
        """right (every cell), missing (no cell answered), else wrong."""
        if self.count(RIGHT) == self.total:
            return RIGHT
        if self.count(MISSING) == self.total:
            return MISSING
        return WRONG


@dataclass(frozen=True)
class Report:
    stages: tuple[StageGrade, ...]
    precision: int

    @property
    def all_right(self) -> bool:
        return all(g.status == RIGHT for g in self.stages)

    def count(self, verdict: str) -> int:
        return sum(g.count(verdict) for g in self.stages)

    @property
    def total(self) -> int:
        return sum(g.total for g in self.stages)


# ---- the grader --------------------------------------------------------------------------------

Origins = list[list[frozenset[CellRef]]]


class Grader:
    """Grades the stages of one Trace in order, remembering the student's answers.

    `judge(key, i, j, answer)` checks one cell against the truth and against what the student's
    own earlier answers give; `commit(key, answers)` closes a stage (None: not asked, so it is
    filled in from the student's earlier answers). Stages are taken in the trace's order; a
    stage's inputs that were never committed are committed as not asked.
    """

    def __init__(self, trace: Trace, precision: int) -> None:
        self.trace = trace
        self.precision = precision
        self.stages = stage_keys(trace)
        self.order = {key: n for n, key in enumerate(self.stages)}
        self._effective: dict[str, np.ndarray] = {}  # the student's version of each stage
        self._origins: dict[str, Origins] = {}  # per cell: the student's mistakes behind it
        self._own: dict[str, tuple[np.ndarray, Origins]] = {}

    # ---- which earlier stages a stage is computed from ----------------------------------------
    def inputs(self, key: str) -> list[str]:
        sid, head = split_key(key)
        pre = "" if head is None else f"{head}/"
        if sid == "kt":
            return [pre + "k"]
        if sid == "scores":
            return [pre + "q", pre + "kt"]
        if sid in ("scaled", "masked"):
            return [pre + ("scores" if sid == "scaled" else "scaled")]
        if sid == "exp":
            return [pre + ("masked" if pre + "masked" in self.stages else "scaled")]
        if sid == "weights":
            return [pre + "exp"]
        if sid == "concat":
            return [f"{h}/output" for h in range(1, self.trace.problem.heads + 1)]
        if sid == "output":
            return ["concat"] if self._final(key) else [pre + "weights", pre + "v"]
        return []  # q, k, v: from the problem's own numbers

    def _final(self, key: str) -> bool:
        """The multi-head output (after the concat), as opposed to one head's A·V."""
        return key == "output" and self.trace.problem.multihead

    def _feeds(self, key: str, i: int, j: int) -> Iterable[tuple[str, int, int]]:
        """The cells of the input stages that cell (i, j) of `key` is computed from."""
        sid, _ = split_key(key)
        ins = self.inputs(key)
        if sid == "kt":
            yield ins[0], j, i
        elif sid == "scores":  # q_i · column j of Kᵀ
            yield from ((ins[0], i, t) for t in range(self._shape(ins[0])[1]))
            yield from ((ins[1], t, j) for t in range(self._shape(ins[1])[0]))
        elif sid == "scaled":
            yield ins[0], i, j
        elif sid == "masked":
            stage = self.stages[key]
            if stage.allowed is None or stage.allowed[i, j]:
                yield ins[0], i, j
        elif sid in ("exp", "weights"):  # the row max, the row sum: the whole row
            yield from ((ins[0], i, t) for t in range(self._shape(ins[0])[1]))
        elif sid == "concat":
            d_v = self._shape(ins[0])[1]
            yield ins[j // d_v], i, j % d_v
        elif sid == "output" and self._final(key):
            p = self.trace.problem
            cols = range(self._shape("concat")[1]) if p.wo is not None else (j,)
            yield from (("concat", i, t) for t in cols)
        elif sid == "output":  # row i of A times column j of V
            yield from ((ins[0], i, t) for t in range(self._shape(ins[0])[1]))
            yield from ((ins[1], t, j) for t in range(self._shape(ins[1])[0]))

    def _shape(self, key: str) -> tuple[int, int]:
        return self.stages[key].shape

    # ---- recomputing a stage from the student's own earlier answers ----------------------------
    def _recompute(self, key: str) -> np.ndarray:
        stage = self.stages[key]
        p = self.trace.problem
        ins = [self._effective[k] for k in self.inputs(key)]
        sid = stage.id
        if sid == "kt":  # [m, d_k] -> [d_k, m]
            return ins[0].T
        if sid == "scores":  # [n, d_k] @ [d_k, m] -> [n, m]
            return ins[0] @ ins[1]
        if sid == "scaled":  # [n, m] * scalar
            return ins[0] * p.scale
        if sid == "masked":  # [n, m] where allowed, else -inf
            assert stage.allowed is not None
            return apply_mask(ins[0], stage.allowed)
        if sid == "exp":  # e^(s - row max), [n, m]
            return softmax_parts(ins[0])[1]
        if sid == "weights":  # [n, m] / [n, 1]; a row of zeros (all masked) stays zeros
            return normalise(ins[0], ins[0].sum(axis=1))
        if sid == "concat":  # H × [n, d_v] -> [n, H·d_v]
            return np.hstack(ins)
        if sid == "output" and self._final(key):
            if p.wo is None:
                return ins[0]
            # [n, H·d_v] @ [H·d_v, d_out] + [d_out] -> [n, d_out]
            return project(ins[0], p.wo.values, None if p.bo is None else p.bo.values[0])
        if sid == "output":  # [n, m] @ [m, d_v] -> [n, d_v]
            return ins[0] @ ins[1]
        return stage.value  # q, k, v: the problem's numbers are not the student's to get wrong

    def own(self, key: str) -> tuple[np.ndarray, Origins]:
        """This stage as the student's earlier answers give it, and, per cell, which of their
        wrong cells it depends on."""
        if key not in self._own:
            for earlier in self.inputs(key):
                if earlier not in self._effective:
                    self.commit(earlier, None)
            value = self._recompute(key)
            rows, cols = self._shape(key)
            origins = [
                [
                    frozenset().union(
                        *(self._origins[k][a][b] for k, a, b in self._feeds(key, i, j))
                    )
                    for j in range(cols)
                ]
                for i in range(rows)
            ]
            self._own[key] = (value, origins)
        return self._own[key]

    # ---- judging ---------------------------------------------------------------------------------
    def judge(self, key: str, i: int, j: int, answer: float | None) -> CellVerdict:
        own, origins = self.own(key)
        expected = float(self.stages[key].value[i, j])
        mine = float(own[i, j])
        ref = CellRef(self.order[key], key, i, j)
        if answer is None or math.isnan(answer):
            return CellVerdict(ref, MISSING, None, expected, mine)
        if agrees(answer, expected, self.precision):
            return CellVerdict(ref, RIGHT, answer, expected, mine)
        if agrees(answer, mine, self.precision):
            behind = tuple(sorted(origins[i][j]))
            # no mistake behind it: the student's rounded (right) inputs explain the difference
            return CellVerdict(ref, CARRIED if behind else RIGHT, answer, expected, mine, behind)
        return CellVerdict(ref, WRONG, answer, expected, mine)

    def commit(self, key: str, answers: np.ndarray | None) -> StageGrade | None:
        """Close a stage: grade `answers` (NaN = not answered), or, with None, fill the stage
        in from the student's earlier answers. Returns the stage's grade (None when not asked)."""
        own, own_origins = self.own(key)
        if answers is None:
            self._effective[key], self._origins[key] = own, own_origins
            return None
        rows, cols = self._shape(key)
        effective = own.copy()
        origins = [row[:] for row in own_origins]
        cells = []
        for i in range(rows):
            for j in range(cols):
                cell = self.judge(key, i, j, float(answers[i, j]))
                cells.append(cell)
                if cell.answer is not None:
                    effective[i, j] = cell.answer
                if cell.verdict == WRONG:
                    origins[i][j] = frozenset((cell.ref,))
                elif cell.verdict in (RIGHT, CARRIED):
                    origins[i][j] = frozenset(cell.origins)
        self._effective[key], self._origins[key] = effective, origins
        wrong = any(c.verdict == WRONG for c in cells)  # name the mistake (quiz/mistakes.py)
        named = (
            recognise(self.trace, key, answers, self._effective, self.precision) if wrong else None
        )
        return StageGrade(key, self.stages[key], tuple(cells), named)


def grade_sheet(
    trace: Trace, sheet: Mapping[str, np.ndarray], keys: Iterable[str], precision: int
) -> Report:
    """Grade a whole answer sheet: every stage in `keys` (a missing one has every cell missing)
    and any other stage the sheet gives; the rest are filled in from the student's answers."""
    grader = Grader(trace, precision)
    wanted = set(keys) | set(sheet)
    grades = []
    for key, stage in grader.stages.items():
        if key not in wanted:
            grader.commit(key, None)
            continue
        answers = sheet.get(key)
        if answers is None:
            answers = np.full(stage.shape, np.nan)
        grade = grader.commit(key, answers)
        assert grade is not None
        grades.append(grade)
    return Report(tuple(grades), precision)
