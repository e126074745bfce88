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
__all__ = ["Problem", "QkvcalcError", "Trace", "__version__", "explain", "extract"]

if TYPE_CHECKING:
    from qkvcalc.errors import QkvcalcError
    from qkvcalc.problem import Problem
    from qkvcalc.trace import Trace


def explain(x: Any = None, wq: Any = None, wk: Any = None, wv: Any = None, **options: Any) -> Trace:
    """Compute attention for these numbers and return the Trace of every stage.

    Takes the fields of the input format (DESIGN.md) as keyword arguments: lists, nested lists
    or numpy arrays for matrices, ``mask="causal"``, ``heads=2``, ``wo=…``, ``tokens=[…]`` …
    Raises QkvcalcError with a message that names the field, the shapes and the rule.
    """
    from qkvcalc.engine import run
    from qkvcalc.problem import Problem

    fields = {"x": x, "wq": wq, "wk": wk, "wv": wv, **options}
    return run(Problem.from_mapping({k: v for k, v in fields.items() if v is not None}))


def __getattr__(name: str) -> Any:
    if name == "QkvcalcError":
        from qkvcalc.errors import QkvcalcError

        return QkvcalcError
    if name == "Problem":
        from qkvcalc.problem import Problem

        return Problem
    if name == "extract":
        # the package qkvcalc.extract, which is callable: qkvcalc.extract(model, layer=…)
        import importlib

        return importlib.import_module("qkvcalc.extract")
    if name == "Trace":
        from qkvcalc.trace import Trace

        return Trace
    raise AttributeError(f"module 'qkvcalc' has no attribute {name!r}")
