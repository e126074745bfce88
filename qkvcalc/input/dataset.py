"""A data set for `qkvcalc train`: several examples that share one set of weights.

    {"wq": …, "wk": …, "wv": …, "heads": …, "scale": …,          the shared keys
     "examples": [{"tokens": …, "x": …, "target": … | "attend": …}, …],
     "heldout":  [{"tokens": …, "x": …, "target": …}, …]}          never trained on

Each example is a problem of its own: its keys over the top level's (its own tokens, X, mask
and loss; a loss it gives replaces the top level's, and an X without tokens drops the top
level's tokens). The weights are the top level's alone: an example that gives one is refused,
since every example is multiplied by the same W_Q. `explain` (and every command that reads
one problem) reads a data set as its first example.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from qkvcalc.errors import QkvcalcError
from qkvcalc.input.fields import STAND_INS, known_key
from qkvcalc.input.loss import KEYS as LOSS_KEYS

SETS = ("examples", "heldout")
SHARED = ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo", *STAND_INS)  # the weights, given once
MAX_EXAMPLES = 1_000


def set_key(key: object) -> str | None:
    if isinstance(key, str):
        word = key.lower().replace("_", "").replace("-", "").replace(" ", "")
        return {"examples": "examples", "heldout": "heldout"}.get(word)
    return None


def is_dataset(raw: Any) -> bool:
    return isinstance(raw, Mapping) and any(set_key(k) == "examples" for k in raw)


def split(raw: Mapping[Any, Any]) -> tuple[dict[Any, Any], list[dict], list[dict]]:
    """The top level (the shared keys), the examples and the held-out examples, each an
    example's own keys; one message for a set that is not a list of objects."""
    top: dict[Any, Any] = {}
    sets: dict[str, list[dict]] = {"examples": [], "heldout": []}
    for key, value in raw.items():
        name = set_key(key)
        if name is None:
            top[key] = value
            continue
        if not isinstance(value, list) or (name == "examples" and not value):
            raise QkvcalcError("dataset.not_list", key=name)
        if len(value) > MAX_EXAMPLES:
            raise QkvcalcError("dataset.too_many", key=name, count=len(value), limit=MAX_EXAMPLES)
        for k, example in enumerate(value):
            if not isinstance(example, Mapping):
                raise QkvcalcError("dataset.not_object", key=name, index=k + 1)
            for field in example:
                if known_key(field) in SHARED or set_key(field) is not None:
                    raise QkvcalcError("dataset.shared", key=name, index=k + 1, field=str(field))
        sets[name] = [dict(e) for e in value]
    return top, sets["examples"], sets["heldout"]


def merged(top: Mapping[Any, Any], example: Mapping[Any, Any]) -> dict[Any, Any]:
    """One example as a problem: its keys over the top level's."""
    own = {known_key(k) for k in example}
    drop = set()
    if own & set(LOSS_KEYS):  # its loss replaces the top level's, whichever key that was
        drop |= set(LOSS_KEYS)
    if "x" in own and "tokens" not in own:  # its X, not the top level's tokens
        drop.add("tokens")
    base = {k: v for k, v in top.items() if known_key(k) not in drop | own}
    return {**base, **example}


def first_example(raw: Any) -> Any:
    """What a command that reads one problem reads of a data set: its first example."""
    if not is_dataset(raw):
        return raw
    top, examples, _ = split(raw)
    return merged(top, examples[0])
