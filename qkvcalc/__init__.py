"""qkvcalc: a step-by-step calculator for Transformer attention.

    >>> import qkvcalc
    >>> trace = qkvcalc.explain(
    ...     x=[1, 2], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]]
    ... )
    >>> trace.output.tolist()
    [[3.0, 2.0]]

This module imports nothing heavy, so ``qkvcalc --version`` and ``--help`` stay instant;
numpy is loaded on first use. ``qkvcalc.extract(model_or_path, layer=L, input_ids=[…])``
takes one layer of a Hugging Face model as a problem (the extra ``qkvcalc[models]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = [
    "Problem",
    "QkvcalcError",
    "Trace",
    "__version__",
    "explain",
    "extract",
    "format_for",
    "render",
    "train",
]

if TYPE_CHECKING:
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.input.problem import Problem
    from qkvcalc.trace import Trace


def explain(
    x: Any = None,
    wq: Any = None,
    wk: Any = None,
    wv: Any = None,
    *,
    exact: bool = False,
    backward: bool = False,
    max_elements: int | None = None,
    dtype: str | None = None,
    policy: str | None = None,
    **fields: Any,
) -> Trace:
    """Compute attention for these numbers and return the Trace of every stage.

    Takes the fields of the input format (docs/input-format.md) as keyword arguments: lists,
    nested lists, numpy arrays or torch tensors (any device or dtype) for matrices,
    ``mask="causal"``, ``heads=2``, ``wo=…``, ``tokens=[…]`` … ``exact=True`` keeps the
    rational stages as fractions (as ``--exact``); ``backward=True`` adds the backward pass's
    stages, from the loss the fields give (``target=…``, ``grad_output=…`` or ``attend=[…]``;
    as ``--backward``); ``max_elements`` bounds the numbers the
    problem may hold (``--max-elements``). ``dtype="bfloat16"`` (float32, float16) computes
    every stage as the hardware does in that dtype, beside its float64 twin, under ``policy``
    ("eager", the default, or "naive"; as ``--dtype``, ``--policy``).
    Raises QkvcalcError with a message that names the field, the shapes and the rule.
    """
    from qkvcalc.input.limits import MAX_ELEMENTS
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.engine import run

    given = {"x": x, "wq": wq, "wk": wk, "wv": wv, "dtype": dtype, "policy": policy, **fields}
    doc = {k: v for k, v in given.items() if v is not None}
    limit = MAX_ELEMENTS if max_elements is None else max_elements
    problem = Problem.from_mapping(doc, exact=exact, max_elements=limit)
    if backward:
        from dataclasses import replace

        problem = replace(problem, backward=True)
    if problem.dtype is not None:
        from qkvcalc.run.precision import run as run_in

        return run_in(problem)
    return run(problem)


def train(
    problem: Any = None,
    *,
    steps: int | None = None,
    lr: float | None = None,
    freeze: Any = None,
    compare_scale: bool = False,
    **fields: Any,
) -> Any:
    """Gradient descent on a problem's weights (as ``qkvcalc train``): a Problem, or the fields
    of the input format as keyword arguments (with ``attend=[…]`` or ``target=…``), or a data
    set (``examples=[…]``, ``heldout=[…]``: the loss is the examples' mean). Returns a
    Training (qkvcalc.run.train): ``.losses``, ``.snapshots`` (each step's loss and weights),
    ``.problem`` (the trained Problem), ``.heldout``, and with ``compare_scale=True``
    ``.unscaled`` (the same start trained with scale 1). ``steps`` (default 20), ``lr`` (η,
    default 0.5) and ``freeze`` ("wq,wv" or a list) as the command's options.
    Raises QkvcalcError with a message that names the option or field and the rule.
    """
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.train import DEFAULT_LR, DEFAULT_STEPS
    from qkvcalc.run.train import train as descend

    if not isinstance(problem, Problem):
        given = {**({} if problem is None else dict(problem)), **fields}
        problem = {k: v for k, v in given.items() if v is not None}
    return descend(
        problem,
        DEFAULT_STEPS if steps is None else steps,
        DEFAULT_LR if lr is None else lr,
        freeze,
        compare_scale,
    )


def format_for(path: str) -> str:
    """The format a file name asks for: 'handout.md' -> 'markdown' (as ``--output``)."""
    from qkvcalc.render import format_for as pick

    return pick(path)


def __getattr__(name: str) -> Any:
    if name == "QkvcalcError":
        from qkvcalc.errors import QkvcalcError

        return QkvcalcError
    if name == "Problem":
        from qkvcalc.input.problem import Problem

        return Problem
    if name == "render":  # the renderers' package, which is itself callable: render(trace, fmt)
        import qkvcalc.render

        return qkvcalc.render
    if name == "extract":
        # the package qkvcalc.extract, which is callable: qkvcalc.extract(model, layer=…)
        import importlib

        return importlib.import_module("qkvcalc.extract")
    if name == "Trace":
        from qkvcalc.trace import Trace

        return Trace
    raise AttributeError(f"module 'qkvcalc' has no attribute {name!r}")
