"""The safe number grammar of the input format, parsed by a whitelist (never eval).

    number  := sign? product
    product := factor (('*' | '/') factor)*
    factor  := DECIMAL | 'sqrt' '(' number ')' | '√' DECIMAL | '√' '(' number ')' | '(' number ')'

DECIMAL is an integer or decimal with an optional exponent (`3`, `-0.5`, `-3e-2`). So `1/2`,
`sqrt(2)`, `1/sqrt(2)`, `-3e-2` and `(1/2)*sqrt(3)` are numbers; `9**9**9`, `1e999999`,
names and calls other than sqrt are not. Each number keeps its exact value (a Fraction) while
it stays rational, for --exact.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import NoReturn

from qkvcalc.errors import QkvcalcError
from qkvcalc.records import NamedTuple

MAX_TEXT = 64  # characters in one number
MAX_DEPTH = 8  # nested parentheses or sqrt
MAX_EXPONENT = 400  # |e| in 1e400: beyond it a float is 0 or inf anyway

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<sqrt>sqrt|√)|(?P<op>[-+*/()×÷]))"
)


class Number(NamedTuple):
    value: float
    exact: Fraction | None  # None once a square root made it irrational


def _sqrt_exact(q: Fraction) -> Fraction | None:
    a, b = math.isqrt(q.numerator), math.isqrt(q.denominator)
    return Fraction(a, b) if a * a == q.numerator and b * b == q.denominator else None


class _Parser:
    def __init__(self, text: str, field: str) -> None:
        self.text, self.field = text, field
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if not match:
                self.fail()
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.i = 0
        self.depth = 0

    def fail(self) -> NoReturn:
        raise QkvcalcError("number.grammar", field=self.field, text=self.text)

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        self.i += 1
        return tok

    def number(self) -> Number:
        sign = 1
        while self.peek() in (("op", "-"), ("op", "+")):
            if self.take()[1] == "-":
                sign = -sign
        value = self.product()
        exact = None if value.exact is None else sign * value.exact
        return Number(sign * value.value, exact)

    def product(self) -> Number:
        left = self.factor()
        while self.peek()[0] == "op" and self.peek()[1] in "*/×÷":
            op = self.take()[1]
            right = self.factor()
            if op in "*×":
                value = left.value * right.value
                exact = None if None in (left.exact, right.exact) else left.exact * right.exact  # type: ignore[operator]
            else:
                if right.value == 0:
                    raise QkvcalcError("number.zero_division", field=self.field, text=self.text)
                value = left.value / right.value
                exact = None if None in (left.exact, right.exact) else left.exact / right.exact  # type: ignore[operator]
            left = Number(value, exact)
        return left

    def factor(self) -> Number:
        kind, text = self.take()
        if kind == "num":
            exponent = text.lower().partition("e")[2]
            if exponent and abs(int(exponent)) > MAX_EXPONENT:
                raise QkvcalcError("number.not_finite", field=self.field, text=self.text)
            return Number(float(text), Fraction(text))
        if kind == "sqrt" and text == "√" and self.peek()[0] == "num":
            radicand = self.factor()  # √2, as qkvcalc itself writes 7/√2
            assert radicand.exact is not None
            exact = _sqrt_exact(radicand.exact)
            return Number(math.sqrt(radicand.value), exact)
        if kind == "sqrt" or (kind, text) == ("op", "("):
            is_sqrt = kind == "sqrt"
            if is_sqrt and self.take() != ("op", "("):
                self.fail()
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QkvcalcError(
                    "number.too_deep", field=self.field, text=self.text, limit=MAX_DEPTH
                )
            inner = self.number()
            self.depth -= 1
            if self.take() != ("op", ")"):
                self.fail()
            if not is_sqrt:
                return inner
            if inner.value < 0:
                raise QkvcalcError("number.negative_sqrt", field=self.field, text=self.text)
            exact = None if inner.exact is None else _sqrt_exact(inner.exact)
            return Number(math.sqrt(inner.value), exact)
        self.fail()


def parse_number(text: str, field: str) -> Number:
    """Parse one number written as text, e.g. '1/sqrt(2)'. Raises QkvcalcError naming `field`."""
    if len(text) > MAX_TEXT:
        raise QkvcalcError("number.too_long", field=field, limit=MAX_TEXT)
    parser = _Parser(text, field)
    if not parser.tokens:
        raise QkvcalcError("number.empty", field=field)
    result = parser.number()
    if parser.peek()[0] != "end":
        parser.fail()
    if not math.isfinite(result.value):
        raise QkvcalcError("number.not_finite", field=field, text=text)
    return result


def exact_of_float(value: float) -> Fraction:
    """The decimal a person most likely typed: 0.1 -> 1/10 (from the shortest repr)."""
    return Fraction(repr(float(value)))
