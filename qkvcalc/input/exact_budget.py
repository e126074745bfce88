"""Whether --exact can finish: decided from the shapes and the digits of the input, before a
single fraction is made.

Exact arithmetic costs what its numbers cost. Fractions of a few digits multiply in
microseconds; fractions of a thousand digits take a millisecond each, and a sum of terms with
unrelated denominators (1/p for 60-digit p) grows by every term's digits: a few rows of such
numbers run for minutes, or end in a fraction too long for Python to print (over 4300 digits).
So the budget bounds both the count of multiplications and the size of the numbers:

1. From the shapes alone (the rows and first rows the input claims): the multiplications the
   exact stages take (Q, K, V, then Q·Kᵀ and its scaling, per head). Past MAX_PRODUCTS the
   input's numbers are never read as fractions, so giving up costs nothing (a BERT-size layer
   used to spend 14 s making 2.8 million fractions only to print that it gave up).
2. From the numbers' digits (read from their decimal spelling, without making fractions): the
   digits a cell of each exact stage can reach, bounded through the least common multiple of
   the denominators and the largest magnitudes; past MAX_DIGITS the fractions are not worth
   showing (nor printable), and the weighted work (each multiplication counted by the square of
   its digits, as CPython's multiplication and gcd cost) must stay under MAX_WORK.

`refusal(doc)` returns the note to show when exact mode is given up, or None when it can run.
Problem.from_mapping calls it (the one place) for every input, --exact or not: under the budget
the problem keeps its numbers' fractions, so the decimals shown of its rational stages are their
exact values rounded (qkvcalc.run.exact); with --exact the Problem carries the note to the trace.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from qkvcalc.i18n import Msg

MAX_PRODUCTS = 100_000  # multiplications of fractions (qkvcalc.run.exact's own limit, the same)
MAX_DIGITS = 1000  # digits of a cell, numerator and denominator together
DIGIT_UNIT = 50  # up to about this many digits a multiplication costs what a small one does
MAX_WORK = 2 * MAX_PRODUCTS  # multiplications, each weighted by (1 + (digits / DIGIT_UNIT)²)


# ---- 1. shapes ---------------------------------------------------------------------------------


def _rows_cols(value: Any) -> tuple[int, int]:
    """The rows and columns a matrix claims by its length and first row (nothing else read)."""
    shape = getattr(value, "shape", None)
    if shape is not None:  # a numpy array from a Python caller
        return (int(shape[0]), int(shape[1])) if len(shape) == 2 else (1, int(shape[0]))
    if not isinstance(value, list | tuple) or not value:
        return 0, 0
    first = value[0]
    return (len(value), len(first)) if isinstance(first, list | tuple) else (1, len(value))


def _whole(value: Any, default: int) -> int:
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip()) if len(value.strip()) <= 9 else default
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    )


class _Shapes:
    """The sizes the exact stages work with, as the input claims them."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        torch = doc.get("layout") == "torch"

        def cols(name: str) -> int:
            rows, columns = _rows_cols(doc.get(name))
            return rows if torch else columns

        self.heads = _whole(doc.get("heads", 1), 1)
        if "q" in doc:  # Q, K, V given directly: nothing to project
            self.n, _ = _rows_cols(doc.get("q"))
            self.m, _ = _rows_cols(doc.get("k"))
            self.d_model, self.cq, self.ck, self.cv = 0, *(_rows_cols(doc.get(k))[1] for k in "qkv")
        else:
            self.n, self.d_model = _rows_cols(doc.get("x"))
            self.m = _rows_cols(doc.get("source"))[0] if "source" in doc else self.n
            self.cq, self.ck, self.cv = cols("wq"), cols("wk"), cols("wv")
        self.d_k = max(1, self.cq // self.heads)
        self.kv_heads = _whole(doc.get("kv_heads", self.heads), self.heads)
        self.grad_output = doc.get("grad_output") is not None  # where --backward can start
        self.d_out = cols("wo") if doc.get("wo") is not None else 0

    def products(self) -> dict[str, int]:
        """Multiplications per exact stage (scaled: one per score). With `grad_output` given,
        the backward's rational stages too (counted whether or not --backward is asked, which
        the input does not say): d(concat) = dO·W_Oᵀ and each head's dA = dO·Vᵀ."""
        found = {
            "q": self.n * self.d_model * self.cq,
            "k": self.m * self.d_model * self.ck,
            "v": self.m * self.d_model * self.cv,
            "scores": self.heads * self.n * self.m * self.d_k,
            "scaled": self.heads * self.n * self.m,
        }
        if self.grad_output:
            d_v = max(1, self.cv // self.kv_heads)
            found["grad_weights"] = self.heads * self.n * self.m * d_v
            if self.d_out:
                found["grad_concat"] = self.n * self.d_out * self.heads * d_v
        return found


# ---- 2. digits ---------------------------------------------------------------------------------


class _Digits:
    """Of a matrix: log10 of the lcm of its denominators (bounded above) and of its largest
    magnitude. A decimal's denominator divides 10^k, k read from its spelling; a fraction
    written as text (1/7, 1/sqrt(2)) is parsed by the number grammar."""

    def __init__(self, raw: Any) -> None:
        from qkvcalc.input.numbers import parse_number

        tens = 0  # decimals: the lcm of their denominators divides 10^tens
        others: set[int] = set()  # denominators of fractions written as text
        biggest = 0.0
        for cell in _cells(raw):
            if isinstance(cell, str):
                try:
                    number = parse_number(cell, "")
                except ValueError:  # a QkvcalcError: the validation names it later
                    continue
                biggest = max(biggest, abs(number.value))
                if number.exact is not None and number.exact.denominator > 1:
                    others.add(number.exact.denominator)
                continue
            try:
                value = float(cell)
            except (TypeError, ValueError, OverflowError):
                continue
            if not math.isfinite(value):
                continue
            biggest = max(biggest, abs(value))
            tens = max(tens, _decimal_places(value))
        lcm = math.lcm(*others) if others else 1
        self.den = tens + lcm.bit_length() * math.log10(2)
        self.top = math.log10(biggest) if biggest > 0 else 0.0


def _decimal_places(value: float) -> int:
    """k such that the decimal a person typed (the shortest repr) is an integer over 10^k."""
    mantissa, _, exponent = repr(value).partition("e")
    places = len(mantissa.partition(".")[2].rstrip("0"))
    return max(0, places - int(exponent or 0))


def _cells(raw: Any) -> Iterator[Any]:
    if hasattr(raw, "tolist"):
        raw = raw.tolist()
    if not isinstance(raw, list | tuple):
        yield raw
        return
    for row in raw:
        if isinstance(row, list | tuple):
            yield from row
        else:
            yield row


def _log_sum(*logs: float) -> float:
    """log10 of a sum of terms given by their log10s (an upper bound: max + log10(count))."""
    return max(logs) + math.log10(len(logs))


def stage_digits(doc: Mapping[str, Any], shapes: _Shapes) -> dict[str, float]:
    """An upper bound on the digits (numerator and denominator) of a cell of each exact stage.

    A cell of A·B (+ b) has a denominator dividing den(A)·den(B)·den(b) and a magnitude at most
    (inner dimension)·max|A|·max|B| + max|b|; its numerator is the magnitude times the
    denominator. Q·Kᵀ is the same again with Q and K; the scale multiplies in its own."""
    digits: dict[str, float] = {}
    logs: dict[str, tuple[float, float]] = {}  # stage: (log10 denominator, log10 magnitude)
    if "q" in doc:
        for sid in ("q", "k", "v"):
            d = _Digits(doc.get(sid))
            logs[sid] = (d.den, d.top)
    else:
        x = _Digits(doc.get("x"))
        src = _Digits(doc.get("source")) if "source" in doc else x
        inner = math.log10(max(1, shapes.d_model))
        for sid, inputs in (("q", x), ("k", src), ("v", src)):
            w, b = _Digits(doc.get(f"w{sid}")), _Digits(doc.get(f"b{sid}"))
            den = inputs.den + w.den + b.den
            top = _log_sum(inner + inputs.top + w.top, b.top)
            logs[sid] = (den, top)
    for sid, (den, top) in logs.items():
        digits[sid] = 2 * den + max(0.0, top) + 1
    (qden, qtop), (kden, ktop) = logs["q"], logs["k"]
    sden, stop = qden + kden, math.log10(shapes.d_k) + qtop + ktop
    digits["scores"] = 2 * sden + max(0.0, stop) + 1
    scale = doc.get("scale")
    scale_den, scale_top = (0.0, 0.0) if scale is None else _scale_logs(scale)
    digits["scaled"] = 2 * (sden + scale_den) + max(0.0, stop + scale_top) + 1
    if shapes.grad_output:  # dA = dO·Vᵀ (and d(concat) = dO·W_Oᵀ): products of two inputs
        g = _Digits(doc.get("grad_output"))
        vden, vtop = logs["v"]
        stages = [("grad_weights", vden, vtop, max(1, shapes.cv // shapes.kv_heads))]
        if shapes.d_out:
            stages.append(("grad_concat", *_weight_logs(doc.get("wo")), shapes.d_out))
        for sid, den, top, inner in stages:
            total_den, total_top = g.den + den, math.log10(inner) + g.top + top
            digits[sid] = 2 * total_den + max(0.0, total_top) + 1
    return digits


def _weight_logs(raw: Any) -> tuple[float, float]:
    d = _Digits(raw)
    return d.den, d.top


def _scale_logs(scale: Any) -> tuple[float, float]:
    d = _Digits([[scale]])
    return d.den, d.top


# ---- the decision ------------------------------------------------------------------------------


def refusal(doc: Mapping[str, Any]) -> Msg | None:
    """The note that says why --exact is given up for this input (the fields of the input
    format, canonical keys), or None when the exact stages can be computed in good time."""
    shapes = _Shapes(doc)
    products = shapes.products()
    count = sum(products.values())
    if count > MAX_PRODUCTS:
        return Msg("note.exact_skipped", count=count, limit=MAX_PRODUCTS)
    digits = stage_digits(doc, shapes)
    most = max(digits.values())
    if most > MAX_DIGITS:
        return Msg("note.exact_skipped_digits", digits=round(most), limit=MAX_DIGITS)
    work = sum(products[sid] * (1 + (digits[sid] / DIGIT_UNIT) ** 2) for sid in products)
    if work > MAX_WORK:
        return Msg("note.exact_skipped_work", count=count, digits=round(most))
    return None
