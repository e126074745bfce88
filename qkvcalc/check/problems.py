"""What `qkvcalc check` asks a person's function: their parameters matched by name to the roles
of attention (q, k, v or x, wq, wk, wv …), and the problems it tries, small to large.

A problem is a dict of the input format's fields (numpy arrays), what qkvcalc.explain and the
reference pipeline read; a Case adds what the function is passed, by its own parameter names.
Plain numpy; nothing here runs the person's code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError

# role -> the parameter names that mean it (matched case-insensitively)
ROLES: dict[str, tuple[str, ...]] = {
    "q": ("q", "query", "queries"),
    "k": ("k", "key", "keys"),
    "v": ("v", "value", "values"),
    "x": ("x",),
    "wq": ("wq", "w_q"),
    "wk": ("wk", "w_k"),
    "wv": ("wv", "w_v"),
    "wo": ("wo", "w_o"),
    "bq": ("bq", "b_q"),
    "bk": ("bk", "b_k"),
    "bv": ("bv", "b_v"),
    "bo": ("bo", "b_o"),
    "heads": ("heads", "num_heads", "n_heads"),
    "kv_heads": ("kv_heads", "num_kv_heads", "n_kv_heads"),
    "mask": ("mask", "attn_mask", "attention_mask"),
    "causal": ("causal", "is_causal"),
    "scale": ("scale",),
}
QKV = ("q", "k", "v")
XW = ("x", "wq", "wk", "wv")
OPTIONAL = {
    "qkv": ("mask", "causal", "scale"),
    "x": ("wo", "bq", "bk", "bv", "bo", "heads", "kv_heads", "mask", "causal", "scale"),
}


@dataclass(frozen=True)
class Param:
    """One parameter of the person's function, as the child process reads its signature."""

    name: str
    kind: str  # inspect's: POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD, KEYWORD_ONLY, VAR_…
    has_default: bool


@dataclass(frozen=True)
class Signature:
    """The function's parameters by role: which it takes, under which names, which it needs."""

    style: str  # "qkv" (q, k, v given) or "x" (x and the weights)
    names: dict[str, str]  # role -> parameter name
    required: frozenset[str]  # roles without a default
    positional: frozenset[str] = frozenset()  # roles that must be passed by position

    def takes(self, role: str) -> bool:
        return role in self.names

    def optional(self, role: str) -> bool:
        return role in self.names and role not in self.required


def match(function: str, params: list[Param]) -> Signature:
    """The roles of `params`, or the error that says why the function cannot be called."""
    by_name = {alias: role for role, aliases in ROLES.items() for alias in aliases}
    names: dict[str, str] = {}
    required: set[str] = set()
    positional: set[str] = set()
    for param in params:
        if param.kind in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            continue
        role = by_name.get(param.name.lower())
        if role is None or role in names:
            if param.has_default:
                continue
            raise QkvcalcError("check.unknown_parameter", function=function, name=param.name)
        names[role] = param.name
        if not param.has_default:
            required.add(role)
        if param.kind == "POSITIONAL_ONLY":
            positional.add(role)
    style = "qkv" if all(r in names for r in QKV) else "x" if all(r in names for r in XW) else ""
    if not style or (style == "qkv" and any(r in names for r in XW)):
        given = ", ".join(p.name for p in params) or "—"
        raise QkvcalcError("check.no_roles", function=function, params=given)
    extra = sorted(set(names) - set(QKV if style == "qkv" else XW) - set(OPTIONAL[style]))
    if extra:
        raise QkvcalcError("check.unknown_parameter", function=function, name=names[extra[0]])
    return Signature(style, names, frozenset(required), frozenset(positional))


@dataclass(frozen=True)
class Case:
    """One problem the function is asked: its name (what it tries), the problem's fields, and
    the arguments by role (None: left out, so that the function's default applies)."""

    name: str
    problem: dict[str, Any]
    args: dict[str, Any] = field(default_factory=dict)
    flags: tuple[Any, ...] = ()  # how it was made (sizes, Flags, leave_out): to shrink it


def causal(n: int, m: int) -> np.ndarray:
    return np.tril(np.ones((n, m), dtype=bool))


def arguments(sig: Signature, p: dict[str, Any], leave_out: bool) -> dict[str, Any] | None:
    """What the function is passed for problem `p` (by role), or None when it cannot be asked
    it (a mask it takes no parameter for). `leave_out`: optional parameters the problem does
    not need are left out (their defaults), else passed their neutral value."""
    core = QKV if sig.style == "qkv" else XW
    args: dict[str, Any] = {role: p[role] for role in core}
    for role in ("wo", "bq", "bk", "bv", "bo"):
        if role in p:
            if not sig.takes(role):
                return None
            args[role] = p[role]
    heads = p.get("heads", 1)
    for role, value, neutral in (
        ("heads", heads, 1),
        ("kv_heads", p.get("kv_heads", heads), heads),
    ):
        if sig.takes(role):
            if value != neutral or not (leave_out and sig.optional(role)):
                args[role] = value
        elif value != neutral:
            return None
    if not _mask_arguments(sig, p, args, leave_out):
        return None
    if p.get("scale") is not None:
        if not sig.takes("scale"):
            return None
        args["scale"] = p["scale"]
    elif sig.takes("scale") and not (leave_out and sig.optional("scale")):
        args["scale"] = 1 / math.sqrt(_d_k(p))
    return args


def _mask_arguments(
    sig: Signature, p: dict[str, Any], args: dict[str, Any], leave_out: bool
) -> bool:
    mask, (n, m) = p.get("mask"), _n_m(p)
    if isinstance(mask, str) and sig.takes("causal"):
        args["causal"] = True
    elif mask is not None:
        if not sig.takes("mask"):
            return False
        args["mask"] = causal(n, m) if isinstance(mask, str) else mask
    elif sig.takes("causal") and not (leave_out and sig.optional("causal")):
        args["causal"] = False
    if "mask" not in args and sig.takes("mask"):
        if not sig.optional("mask"):
            args["mask"] = np.ones((n, m), dtype=bool)  # every key allowed (the problem's mask)
        elif not leave_out:
            args["mask"] = None
    return True


def _n_m(p: dict[str, Any]) -> tuple[int, int]:
    if "q" in p:
        return len(p["q"]), len(p["k"])
    return len(p["x"]), len(p["x"])


def _d_k(p: dict[str, Any]) -> int:
    if "q" in p:
        return int(np.shape(p["q"])[1])
    return int(np.shape(p["wq"])[1]) // int(p.get("heads", 1))


@dataclass(frozen=True)
class Flags:
    """What a problem has besides its sizes: kept when a problem is made smaller."""

    mask: str = "none"  # none | causal | matrix | empty_row (a matrix with a fully masked row)
    scale: float | None = None  # a scale other than 1/√d_k, when given
    values: str = "small"  # small | ties | large | tiny
    heads: int = 1
    kv_heads: int = 1
    wo: bool = False
    bias: bool = False


_SPREAD = {
    "small": (-3, 4, 1.0),
    "ties": (0, 2, 1.0),
    "large": (-3, 4, 20.0),
    "tiny": (-3, 4, 1e-3),
}


def _numbers(rng: np.random.Generator, shape: tuple[int, ...], values: str) -> np.ndarray:
    low, high, factor = _SPREAD[values]
    return rng.integers(low, high, size=shape).astype(np.float64) * factor


def _mask(rng: np.random.Generator, kind: str, n: int, m: int) -> Any:
    if kind == "causal":
        return "causal"
    if kind == "none":
        return None
    allowed = rng.random((n, m)) < 0.6
    allowed[np.arange(n), rng.integers(0, m, size=n)] = True  # every row sees a key …
    if kind == "empty_row":
        allowed[(n - 1) // 2] = False  # … but one
    return allowed


def make(
    style: str, rng: np.random.Generator, n: int, m: int, d: tuple[int, int, int], flags: Flags
) -> dict[str, Any]:
    """A problem of n queries and m keys, d = (d_model, d_k, d_v) (d_k, d_v per head)."""
    d_model, d_k, d_v = d
    heads, groups = flags.heads, flags.kv_heads
    p: dict[str, Any] = {}
    if style == "qkv":
        p["q"] = _numbers(rng, (n, d_k), flags.values)
        p["k"] = _numbers(rng, (m, d_k), flags.values)
        p["v"] = _numbers(rng, (m, d_v), flags.values)
    else:
        m = n
        p["x"] = _numbers(rng, (n, d_model), flags.values)
        widths = {"q": heads * d_k, "k": groups * d_k, "v": groups * d_v}
        for name, width in widths.items():
            p["w" + name] = _numbers(rng, (d_model, width), "small")
            if flags.bias:
                p["b" + name] = _numbers(rng, (width,), "small")
        if flags.wo:
            p["wo"] = _numbers(rng, (heads * d_v, d_model), "small")
            if flags.bias:
                p["bo"] = _numbers(rng, (d_model,), "small")
        if heads > 1:
            p["heads"] = heads
        if groups != heads:
            p["kv_heads"] = groups
    mask = _mask(rng, flags.mask, n, m)
    if mask is not None:
        p["mask"] = mask
    if flags.scale is not None:
        p["scale"] = flags.scale
    return p


# the doc example: X ("I love cats") and its weights, as the preset `sentence`
DOC_X = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 1.0]])
DOC_W = {
    "wq": np.array([[1.0, 0.0], [0.0, 1.0]]),
    "wk": np.array([[1.0, 1.0], [0.0, 1.0]]),
    "wv": np.array([[1.0, 0.0], [1.0, 1.0]]),
}


def _doc(style: str, mask: str | None) -> dict[str, Any]:
    if style == "qkv":
        p: dict[str, Any] = {name: DOC_X @ DOC_W["w" + name] for name in "qkv"}
    else:
        p = {"x": DOC_X, **DOC_W}
    if mask is not None:
        p["mask"] = mask
    return p


def _planned(sig: Signature) -> list[tuple[str, Any, Flags]]:
    """The problems every check tries first, small to large: (name, sizes, flags)."""
    x = sig.style == "x"
    rand = (4, 4, (3, 2, 5)) if x else (2, 4, (3, 3, 2))
    plan: list[tuple[str, Any, Flags]] = [
        ("1×1", (1, 1, (1, 1, 1)), Flags()),
        ("doc", "doc", Flags()),
        ("doc, causal", "doc", Flags(mask="causal")),
        ("square", (3, 3, (3, 3, 3)), Flags()),
        ("random shapes", rand, Flags()),
        ("ties", (3, 3, (2, 2, 2)), Flags(values="ties")),
        ("large values", (3, 3, (2, 2, 2)), Flags(values="large")),
        ("tiny values", (3, 3, (2, 2, 2)), Flags(values="tiny")),
        ("causal", (4, 4, (3, 3, 2)), Flags(mask="causal")),
        ("mask", (3, 4, (2, 2, 3)), Flags(mask="matrix")),
        ("fully masked row", (3, 4, (2, 2, 2)), Flags(mask="empty_row")),
        ("scale", (3, 3, (2, 2, 2)), Flags(scale=0.5)),
    ]
    if x:
        plan += [
            ("heads", (3, 3, (4, 2, 2)), Flags(heads=2, kv_heads=2)),
            ("heads, causal", (3, 3, (4, 2, 2)), Flags(heads=2, kv_heads=2, mask="causal")),
            ("grouped-query", (3, 3, (4, 2, 2)), Flags(heads=4, kv_heads=2)),
            ("W_O", (3, 3, (2, 2, 2)), Flags(wo=True)),
            ("heads, W_O", (3, 3, (4, 2, 2)), Flags(heads=2, kv_heads=2, wo=True)),
            ("biases", (3, 3, (2, 2, 2)), Flags(bias=True, wo=True)),
        ]
    return plan


def _random_flags(sig: Signature, rng: np.random.Generator) -> tuple[Any, Flags]:
    n, m = (int(v) for v in rng.integers(1, 6, size=2))
    d_k, d_v = (int(v) for v in rng.integers(1, 5, size=2))
    heads = groups = 1
    if sig.takes("heads") and rng.random() < 0.5:
        heads = int(rng.choice([2, 3, 4]))
        groups = heads
        if sig.takes("kv_heads") and rng.random() < 0.5:
            groups = int(rng.choice([g for g in (1, 2) if heads % g == 0]))
    masks = ["none"]
    masks += ["causal"] if sig.takes("causal") or sig.takes("mask") else []
    masks += ["matrix", "empty_row"] if sig.takes("mask") else []
    flags = Flags(
        mask=str(rng.choice(masks)),
        scale=0.25 * int(rng.integers(1, 8)) if sig.takes("scale") and rng.random() < 0.3 else None,
        values=str(rng.choice(["small", "small", "ties", "large", "tiny"])),
        heads=heads,
        kv_heads=groups,
        wo=sig.takes("wo") and rng.random() < 0.5,
        bias=all(sig.takes(b) for b in ("bq", "bk", "bv")) and rng.random() < 0.5,
    )
    d_model = int(rng.integers(1, 5)) * (heads if sig.style == "x" else 1)
    return (n, m, (d_model, d_k, d_v)), flags


def cases(sig: Signature, budget: int, seed: int = 0) -> list[Case]:
    """Up to `budget` problems the function can be asked, small to large, then random ones."""
    rng = np.random.default_rng(seed)
    planned = _planned(sig)
    found: list[Case] = []
    tries = 0
    while len(found) < budget and tries < budget * 20:
        if tries < len(planned):
            name, sizes, flags = planned[tries]
        else:
            name = "random"
            sizes, flags = _random_flags(sig, rng)
        tries += 1
        if flags.bias and not sig.takes("bq"):
            flags = Flags(**{**flags.__dict__, "bias": False})
        if sizes == "doc":
            problem = _doc(sig.style, None if flags.mask == "none" else flags.mask)
        else:
            n, m, d = sizes
            problem = make(sig.style, rng, n, m, d, flags)
        leave_out = len(found) % 2 == 1
        case = _case(sig, name, problem, leave_out, (sizes, flags, leave_out))
        if case is not None:
            found.append(case)
    return found


def _case(
    sig: Signature, name: str, problem: dict[str, Any], leave_out: bool, flags: tuple[Any, ...]
) -> Case | None:
    """The problem as the function is asked it; a mask it must be passed (no default) is the
    problem's mask too, every key allowed."""
    args = arguments(sig, problem, leave_out)
    if args is None:
        return None
    if problem.get("mask") is None and args.get("mask") is not None:
        problem = {**problem, "mask": args["mask"]}
    return Case(name, problem, args, flags)


def smaller(sig: Signature, case: Case, seed: int = 0) -> list[Case]:
    """Problems like `case` (its mask, scale, kind of values, heads), smallest first: fewer
    tokens, dimension 1 or 2, small integers."""
    _sizes, flags, leave_out = case.flags
    rng = np.random.default_rng(seed)
    found: list[Case] = []
    shapes = sorted(
        ((n, m, d) for n in (1, 2, 3) for m in (1, 2, 3) for d in (1, 2)),
        key=lambda s: (s[0] * s[1] + s[2], s),
    )
    for n, m, d in shapes:
        if sig.style == "x" and m != n:
            continue
        for _ in range(3):
            problem = make(sig.style, rng, n, m, (d * flags.heads, d, d), flags)
            sizes = (n, m, (d * flags.heads, d, d))
            made = _case(sig, "smallest", problem, leave_out, (sizes, flags, leave_out))
            if made is not None:
                found.append(made)
    return found
