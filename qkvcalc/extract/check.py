"""Extract checks itself: the problem it is about to give must reproduce the layer.

The run that captures layer L's attention input lets that attention run once, to its output
projection (o_proj, dense …: Family.output), and keeps the projection's own output. qkvcalc's
engine (qkvcalc.explain) then computes the problem's output, and the two must agree within the
tolerance of the dtype the model ran in, relative to the largest |value| of the layer's output:

- float64: 1e-9 (the float32 steps transformers keeps are lifted, islands.py; the two agree to
  within 6.2e-16 on the tiny test models, so 1e-9 leaves room for long sequences and wide
  layers only);
- float32: 1e-4 (float32 rounds to ~6e-8 at each step; qkvcalc computes in float64);
- float16: 1e-2, bfloat16: 5e-2 (the model rounds every step to 11 or 8 bits).

A problem that misses by more is refused (extract.mismatch, naming the model type, the
transformers version and the largest difference) rather than given: a transformers release
that moved something extract reads (a renamed norm, a bias that now enters elsewhere) would
otherwise give a problem that silently computes another layer. A module layout extract does not
know (an attribute it reads missing or renamed) is refused by `layout` with the attribute named
(extract.layout), never guessed around.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError

# The transformers releases the models extra allows, each tested (pyproject.toml says the same)
TESTED = "5.23 to 5.25"

NO_LIMIT = 2**62

# Largest allowed difference, relative to the layer output's largest |value|, per run dtype
TOLERANCE = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}


def transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


@contextlib.contextmanager
def layout(model: str, model_type: str) -> Iterator[None]:
    """An attribute the family code reads that the model's modules do not have (a renamed or
    removed one in another transformers release) as the one message that names it."""
    try:
        yield
    except AttributeError as err:
        name = getattr(err, "name", None) or " ".join(str(err).split())[:200]
        raise QkvcalcError(
            "extract.layout",
            model=model,
            model_type=model_type,
            version=transformers_version(),
            attribute=name,
            tested=TESTED,
        ) from None


def _read_only(value: Any) -> Any:
    """The problem with read-only views of its arrays: qkvcalc's input takes a read-only float64
    matrix as it is, so the check copies none of the layer's weights."""
    if isinstance(value, np.ndarray):
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, dict):
        return {key: _read_only(item) for key, item in value.items()}
    return value


def difference(problem: dict[str, Any], expected: np.ndarray) -> tuple[float, float]:
    """The largest |difference| between the problem's output as qkvcalc's engine computes it
    and the layer's own output, and the largest |value| of the latter (its scale)."""
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    # no --max-elements: the run that made the problem held its n × n weights already, and
    # the engine lets a stage's array go once the stages after it are computed. Only the
    # stages the output is computed from: each as `explain` computes it (what `explain` shows
    # besides, such as a linear layer's implicit weights, the output does not depend on)
    given = {key: value for key, value in _read_only(problem).items() if value is not None}
    trace = run(Problem.from_mapping(given, max_elements=NO_LIMIT), output_only=True)
    got = np.asarray(trace.output, dtype=np.float64)
    if got.shape != expected.shape:
        return float("inf"), float(np.max(np.abs(expected), initial=0.0))
    scale = float(np.max(np.abs(expected), initial=0.0))
    return float(np.max(np.abs(got - expected), initial=0.0)), scale


def verify(
    problem: dict[str, Any],
    expected: np.ndarray,
    *,
    model: str,
    model_type: str,
    layer: int,
    dtype: str,
) -> None:
    """Refuse the problem unless its output is the layer's own `expected` output within the
    run dtype's tolerance."""
    largest, scale = difference(problem, expected)
    tolerance = TOLERANCE.get(dtype, TOLERANCE["bfloat16"])
    relative = largest / scale if scale > 0 else largest
    if not relative <= tolerance:  # NaN too
        _sparse_ties(problem, model, layer)
        raise QkvcalcError(
            "extract.mismatch",
            model=model,
            model_type=model_type,
            layer=layer,
            version=transformers_version(),
            difference=f"{largest:.3g}",
            relative=f"{relative:.2g}",
            dtype=dtype,
            tolerance=f"{tolerance:g}",
            tested=TESTED,
        )


def _sparse_ties(problem: dict[str, Any], model: str, layer: int) -> None:
    """A problem with the sparse-attention indexer whose top-k has tied scores at its cut: torch
    chose among them in an order of its own, so the layer attended to other keys (one message
    that says so, rather than a mismatch)."""
    if "indexer" not in problem:
        return
    import qkvcalc
    from qkvcalc.ops.indexer import tied_rows

    trace = qkvcalc.explain(**_read_only(problem), max_elements=NO_LIMIT)
    scores = trace.stage("index_masked").value
    rows = tied_rows(scores, int(problem["indexer"]["top_k"]))
    if rows:
        said = ", ".join(str(i + 1) for i in rows)
        raise QkvcalcError("extract.dsa_tie", model=model, layer=layer, rows=said)
