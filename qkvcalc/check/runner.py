"""The child process of `qkvcalc check`: it imports the person's FILE.py (as pytest imports a test
file: its folder first on sys.path), and calls FUNCTION on each problem the parent sends.

    python -m qkvcalc.check.runner FILE FUNCTION (numpy|torch)

One JSON object a line each way, on descriptors of its own: the person's code may print (it
goes to standard error) or read standard input (it reads nothing). The parent sends
{"args": [[name, value, positional]]}, a matrix as {"matrix": rows, "bool": b}. The child
answers with plain numbers only: {"output": rows, "weights": rows | null, "stages": {id: rows}
| null}, or {"raised": {"type", "message"}}, or {"unusable": {"type"}} for a return value it
cannot read. Nothing is pickled: the parent reads JSON, never objects the person's code made.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

MAX_CELLS = 1_000_000  # a returned array larger than this is not sent back


def _load(path: str, function: str) -> Any:
    file = Path(path).resolve()
    sys.path.insert(0, str(file.parent))
    name = file.stem if file.stem.isidentifier() else "checked_module"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _params(fn: Any) -> list[list[Any]]:
    sig = inspect.signature(fn)
    return [[p.name, p.kind.name, p.default is not p.empty] for p in sig.parameters.values()]


def _value(raw: Any, use_torch: bool) -> Any:
    if not isinstance(raw, dict):
        return raw
    import numpy as np

    array = np.array(raw["matrix"], dtype=bool if raw["bool"] else np.float64)
    if use_torch:
        import torch

        return torch.from_numpy(array)
    return array


def _rows(value: Any) -> list[Any]:
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu()
        if getattr(value, "is_complex", lambda: False)():
            raise TypeError("complex")
        value = value.double().numpy()
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind not in "biuf":
        raise TypeError(str(array.dtype))
    if array.size > MAX_CELLS:
        raise TypeError("too large")
    result: list[Any] = array.astype(np.float64).tolist()
    return result


def _answer(result: Any) -> dict[str, Any]:
    """The function's return value as plain numbers, or what it was when it cannot be read."""
    try:
        if isinstance(result, dict):
            stages = {str(k): _rows(v) for k, v in result.items()}
            return {"output": stages.get("output"), "weights": None, "stages": stages}
        if isinstance(result, tuple):
            if len(result) != 2:
                return {"unusable": {"type": f"tuple of {len(result)}"}}
            return {"output": _rows(result[0]), "weights": _rows(result[1]), "stages": None}
        return {"output": _rows(result), "weights": None, "stages": None}
    except (TypeError, ValueError) as err:
        return {"unusable": {"type": type(result).__name__, "detail": str(err)[:200]}}


def _raised(err: BaseException) -> dict[str, Any]:
    return {"raised": {"type": type(err).__name__, "message": str(err)[:2000]}}


def serve(path: str, function: str, use_torch: bool) -> None:
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    os.dup2(2, 1)  # the person's prints go to standard error, never into the answers
    sys.stdout = sys.stderr
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)  # an input() of theirs reads nothing (EOFError), never a request
    os.close(quiet)

    def send(message: dict[str, Any]) -> None:
        channel.write(json.dumps(message) + "\n")
        channel.flush()

    try:
        module = _load(path, function)
    except BaseException as err:  # their module raised as it was imported: theirs to see
        send({"import_raised": _raised(err)["raised"]})
        return
    fn = getattr(module, function, None)
    if fn is None:
        names = sorted(n for n, v in vars(module).items() if inspect.isfunction(v))
        send({"no_function": names})
        return
    try:
        params = _params(fn)
    except (TypeError, ValueError):
        send({"not_callable": type(fn).__name__})
        return
    send({"params": params})
    for line in requests:
        request = json.loads(line)
        positional, keywords = [], {}
        for name, raw, by_position in request["args"]:
            value = _value(raw, use_torch)
            if by_position:
                positional.append(value)
            else:
                keywords[name] = value
        try:
            result = fn(*positional, **keywords)
            answer = _answer(result)
        except BaseException as err:  # theirs: reported with the problem it raised on
            answer = _raised(err)
        send(answer)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], sys.argv[3] == "torch")
