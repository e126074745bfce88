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
carried cell counts as right for its step (`counted`: right + carried) and keeps its own
verdict, so a report can say that its number is not the true one. A
cell that matches the recomputation while every cell it depends on was right (only rounded)
is right. Stages the student was not asked are filled in from their earlier answers, so a
mistake in K is still found in the weights when Q·Kᵀ was skipped.

Nothing here prints or formats: verdicts are data that the session and the report put into
words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.labels import closest
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids
from qkvcalc.quiz.mistakes import Mistake, recognise
from qkvcalc.quiz.tolerance import agrees
from qkvcalc.trace import Stage, Trace

# The stages asked when the quiz is not told which (--stages): a head's main steps; and, of
# a decode run or a tiled one, those of the others it has (qkvcalc.plan.ids).
DEFAULT_STAGES = ids.QUIZ_DEFAULT
MORE_DEFAULT_STAGES = ids.QUIZ_MORE
BACKWARD_DEFAULT_STAGES = ids.QUIZ_BACKWARD  # with --backward, instead

RIGHT, WRONG, CARRIED, MISSING = "right", "wrong", "carried", "missing"
VERDICTS = (RIGHT, CARRIED, WRONG, MISSING)


# ---- stage keys: "k" for one head, "2/k" for head 2 of several ---------------------------------


def key_of(sid: str, head: int | None, step: int | None = None, block: int | None = None) -> str:
    """'k', '2/k' (head 2); a decode step's or a block's stage adds '@s1' or '@b2':
    '2/running_max@b2'."""
    key = sid if head is None else f"{head}/{sid}"
    if step is not None:
        key += f"@s{step}"
    if block is not None:
        key += f"@b{block}"
    return key


def stage_key(stage: Stage) -> str:
    return key_of(stage.id, stage.head, stage.step, stage.block)


def split_key(key: str) -> tuple[str, int | None]:
    """'2/scores' -> ('scores', 2); 'scores' -> ('scores', None); 'running_max@b2' ->
    ('running_max', None)."""
    head, _, sid = key.partition("@")[0].rpartition("/")
    return sid, (int(head) if head else None)


def stage_keys(trace: Trace) -> dict[str, Stage]:
    """Every stage a student could be graded on (or is given, as Q, K, V typed in directly),
    by key, in the trace's order: the plan names each one's shape in the paper's letters."""
    return {stage_key(s): s for s in trace.stages if s.letters}


def askable(stage: Stage) -> bool:
    """Stages given in the problem (Q, K, V typed in directly) have nothing to work out."""
    return not OPS[stage.op].given


def _unknown(name: str, known: list[str]) -> QkvcalcError:
    """--stages NAME names no stage of the quiz: the error, with the closest stage when one is
    close ('scors' → 'scores', '2/scors' → '2/scores')."""
    head_text, slash, sid = name.rpartition("/")
    close = closest(sid, known)
    if close is not None and close != sid:
        suggestion = head_text + slash + close
        return QkvcalcError(
            "quiz.stage_unknown_suggest", name=name, close=suggestion, known=", ".join(known)
        )
    return QkvcalcError("quiz.stage_unknown", name=name, known=", ".join(known))


def _no_place(given: str, sid: str, keys: dict[str, Stage]) -> QkvcalcError:
    """--stages scores@s99 names a step (or block of keys) the stage does not have: the error,
    with the steps and blocks it has (or that it has none: choose it by its id alone)."""
    places = [
        key.partition("@")[2]
        for key, stage in keys.items()
        if stage.id == sid and "@" in key  # every head has the same steps and blocks
    ]
    if not places:
        return QkvcalcError("quiz.stage_no_places", name=given, sid=sid, bare=given.split("@")[0])
    shown = ", ".join(f"@{place}" for place in dict.fromkeys(places))
    return QkvcalcError("quiz.stage_no_place", name=given, sid=sid, places=shown)


def select_keys(trace: Trace, names: Iterable[str] | None) -> list[str]:
    """The keys that `--stages q,k,2/scores` picks, in the trace's order.

    A bare id picks that stage in every head (and the final output, for `output`), in every
    decode step and every block of keys; `h/id` picks one head's, `id@s2` one step's and
    `id@b2` one block's. None means the default stages.
    """
    keys = stage_keys(trace)
    present = list(dict.fromkeys(s.id for s in keys.values()))  # in the calculation's order
    defaults = [s for s in (*DEFAULT_STAGES, *MORE_DEFAULT_STAGES) if s in present]
    if trace.problem.backward:  # the backward's main steps, the softmax's backward among them
        softmax = [s.id for s in keys.values() if s.topic == ids.TOPIC_GRAD_LOGITS]
        defaults = [s for s in (*BACKWARD_DEFAULT_STAGES, *softmax) if s in present]
    wanted = list(defaults if names is None else names)
    known = list(dict.fromkeys(s.id for s in keys.values() if askable(s)))
    picked: set[str] = set()
    for name in wanted:
        name = name.strip().lower()
        name, at, where = name.partition("@")
        head_text, _, sid = name.rpartition("/")
        head = int(head_text) if head_text.isdigit() else None
        if sid not in present or (head_text and head is None):
            raise _unknown(name, known)
        matches = [
            k
            for k, s in keys.items()
            if s.id == sid
            and (head is None or s.head == head)
            and (not at or k.endswith("@" + where))
        ]
        if head is not None and not matches:
            heads = trace.problem.heads
            if heads == 1:  # '2/scores' on one head: its stages carry no head number
                raise QkvcalcError("quiz.stage_one_head", name=name, sid=sid)
            if not 1 <= head <= heads:
                raise QkvcalcError("quiz.stage_no_head", name=name, head=head, heads=heads)
        if at and not matches:  # scores@s99: the step (or block) is what does not exist
            raise _no_place(f"{name}@{where}", sid, keys)
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
    symbol: str = field(default="", compare=False)  # how the stage names a cell: K, Q·Kᵀ

    @property
    def stage_id(self) -> str:
        return split_key(self.key)[0]

    @property
    def head(self) -> int | None:
        return split_key(self.key)[1]

    @property
    def label(self) -> str:
        """'K[2,1]' (1-based); the head, when there are several, is said beside it."""
        return f"{self.symbol}[{self.i + 1},{self.j + 1}]"


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
    def counted(self) -> int:
        """The cells that count as right for this step: right, and carried (done right from
        the student's own earlier wrong answers)."""
        return self.count(RIGHT) + self.count(CARRIED)

    @property
    def total(self) -> int:
        return len(self.cells)

    @property
    def status(self) -> str:
        """right (every cell), carried (every cell right or carried: the step done right from
        an earlier mistake), missing (no cell answered), else wrong."""
        if self.count(RIGHT) == self.total:
            return RIGHT
        if self.counted == self.total:
            return CARRIED
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
    def counted(self) -> int:
        """Cells right for their step, the carried ones among them (StageGrade.counted)."""
        return sum(g.counted for g in self.stages)

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

    # ---- which earlier stages a stage is computed from (the plan's references) ---------------
    def _key_of(self, operand: object) -> str | None:
        """The stage key of an operand that is a gradable earlier stage, else None (a constant
        from the problem, or a stage such as X that a student is never asked for)."""
        if (
            not isinstance(operand, tuple)
            or len(operand) not in (2, 4)
            or not isinstance(operand[0], str)
        ):
            return None
        key = key_of(*operand)
        return key if key in self.stages else None

    def inputs(self, key: str) -> list[str]:
        """The gradable stages this one reads, in operand order."""
        keys = (self._key_of(o) for o in self.stages[key].reads)
        return [k for k in keys if k is not None]

    def _feeds(self, key: str, i: int, j: int) -> Iterable[tuple[str, int, int]]:
        """The cells of the input stages that cell (i, j) of `key` is computed from (the
        operation's rule, qkvcalc.ops), leaving out constants the student was given."""
        stage = self.stages[key]
        shapes = [np.shape(m) for m in stage.operands]
        for operand, a, b in OPS[stage.op].feeds(i, j, shapes, stage.params):
            source = self._key_of(stage.reads[operand])
            if source is not None:
                yield source, a, b

    def _shape(self, key: str) -> tuple[int, int]:
        return self.stages[key].shape

    # ---- recomputing a stage from the student's own earlier answers ----------------------------
    def _recompute(self, key: str) -> np.ndarray:
        """The stage's operation on the student's versions of the stages it reads (the problem's
        own numbers, Q, K and V from X, are not the student's to get wrong)."""
        stage = self.stages[key]
        keys = [self._key_of(o) for o in stage.reads]
        if not any(keys):
            return stage.value
        operands = [
            m if k is None else self._effective[k]
            for k, m in zip(keys, stage.operands, strict=True)
        ]
        return OPS[stage.op].compute(operands, stage.params, None)

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
        ref = CellRef(self.order[key], key, i, j, self.stages[key].symbol)
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
