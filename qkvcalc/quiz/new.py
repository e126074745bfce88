"""`qkvcalc new`: a problem typed in step by step at a terminal, each answer checked as it comes.

The number of tokens and their names, d_model, d_k, d_v and the heads H (with several heads,
the key/value heads G, a divisor of H); then X, W_Q, W_K, W_V row by row (a row of the wrong
length is asked again, with the rule it breaks), and with several heads W_O (H·d_v×d_model,
when wanted); then the mask. A cell is named as everywhere else in qkvcalc: W_V[1,1].
The result is a document of the input format, numbers kept as typed: a plain integer or
decimal becomes a JSON number, `1/2` or `sqrt(2)` stays a string of the safe grammar.
Prompts go to the console given (the CLI uses standard error, so the JSON on standard output
stays clean).
"""

from __future__ import annotations

import json
import re
from typing import Any

from rich.console import Console
from rich.text import Text

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.input.numbers import parse_number
from qkvcalc.quiz.session import Ask

MAX_TOKENS = 64
MAX_WIDTH = 64
MAX_HEADS = 16
_CELLS = re.compile(r"[\s,;]+")
_PLAIN_INT = re.compile(r"-?\d+")
_PLAIN_DECIMAL = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def json_number(text: str) -> int | float | str:
    """How a typed number is saved: 3 -> 3, -0.5 -> -0.5, '1/sqrt(2)' stays text (exact)."""
    if _PLAIN_INT.fullmatch(text):
        return int(text)
    if _PLAIN_DECIMAL.fullmatch(text):
        return float(text)
    return text


def problem_json(doc: dict[str, Any]) -> str:
    """The document as the presets are written: one key per line, a matrix on one line."""
    lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in doc.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


class Entry:
    """The questions of `qkvcalc new`, in order; `run` returns the input-format document."""

    def __init__(self, console: Console, ask: Ask, lang: str) -> None:
        self.console, self.ask, self.lang = console, ask, lang

    def t(self, key: str, **params: Any) -> str:
        return translate(key, self.lang, **params)

    def tell(self, key: str, style: str = "yellow", **params: Any) -> None:
        self.console.print(Text("  " + self.t(key, **params), style=style))

    def prompt(self, key: str, **params: Any) -> str:
        return self.ask(Text(self.t(key, **params) + " "))

    # ---- single answers ------------------------------------------------------------------------
    def whole(
        self, key: str, low: int, high: int, default: int | None = None, **params: Any
    ) -> int:
        while True:
            text = self.prompt(key, default="" if default is None else f" [{default}]", **params)
            if not text and default is not None:
                return default
            if text.isascii() and text.isdigit() and len(text) <= 9 and low <= int(text) <= high:
                return int(text)
            self.tell("new.whole_bad", value=text, low=low, high=high)

    def yes(self, key: str, default: bool, **params: Any) -> bool:
        yes_words = self.t("new.yes_words").split(",")
        no_words = self.t("new.no_words").split(",")
        while True:
            text = self.prompt(key, **params).lower()
            if not text:
                return default
            if text in yes_words:
                return True
            if text in no_words:
                return False
            self.tell("new.yes_no")

    def names(self, n: int) -> list[str]:
        default = [f"t{i + 1}" for i in range(n)]
        while True:
            text = self.prompt("new.names", n=n, default=" ".join(default))
            names = text.split()
            if not names:
                return default
            if len(names) == n:
                return names
            self.tell("new.names_count", count=len(names), n=n)

    # ---- matrices, row by row ------------------------------------------------------------------
    def row(self, name: str, i: int, rows: int, cols: int, rule: str) -> list[int | float | str]:
        """Row i (1-based) of a rows×cols matrix: asked again until it has cols numbers."""
        while True:
            text = self.prompt("new.row", matrix=name, row=i, rows=rows, cols=cols)
            cells = [c for c in _CELLS.split(text) if c]
            if len(cells) != cols:
                self.tell(
                    "new.row_length",
                    matrix=name,
                    row=i,
                    length=len(cells),
                    rule=rule,
                    rows=rows,
                    cols=cols,
                )
                continue
            try:
                for j, cell in enumerate(cells):
                    parse_number(cell, f"{name}[{i},{j + 1}]")
            except QkvcalcError as err:
                self.tell("new.cell_bad", reason=err.message(self.lang))
                continue
            return [json_number(c) for c in cells]

    def matrix(self, name: str, rows: int, cols: int, rule: str) -> list[list[int | float | str]]:
        self.console.print(
            Text(self.t("new.matrix", matrix=name, rule=rule, rows=rows, cols=cols), style="bold")
        )
        return [self.row(name, i + 1, rows, cols, rule) for i in range(rows)]

    def mask_row(self, i: int, n: int) -> list[int]:
        while True:
            text = self.prompt("new.mask_row", row=i, rows=n, cols=n)
            cells = [c for c in _CELLS.split(text) if c]
            if len(cells) == n and all(c in ("0", "1") for c in cells):
                return [int(c) for c in cells]
            self.tell("new.mask_row_bad", row=i, cols=n)

    def mask(self, n: int) -> str | list[list[int]]:
        while True:
            text = self.prompt("new.mask").lower()
            if text in ("", "none"):
                return "none"
            if text == "causal":
                return "causal"
            if text in ("matrix", "m"):
                return [self.mask_row(i + 1, n) for i in range(n)]
            self.tell("new.mask_bad", value=text)

    def kv_heads(self, heads: int) -> int:
        """G, the key/value heads: a divisor of H (Enter: G = H, every head its own K and V)."""
        divisors = [g for g in range(1, heads + 1) if heads % g == 0]
        while True:
            g = self.whole("new.kv_heads", 1, heads, default=heads, heads=heads)
            if g in divisors:
                return g
            listed = ", ".join(str(d) for d in divisors)
            self.tell("new.kv_heads_bad", value=g, heads=heads, divisors=listed)

    # ---- the whole problem ---------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.console.print(Text(self.t("new.intro"), style="bold"))
        n = self.whole("new.tokens", 1, MAX_TOKENS)
        tokens = self.names(n)
        d_model = self.whole("new.d_model", 1, MAX_WIDTH)
        d_k = self.whole("new.d_k", 1, MAX_WIDTH)
        d_v = self.whole("new.d_v", 1, MAX_WIDTH, default=d_k)
        heads = self.whole("new.heads", 1, MAX_HEADS, default=1)
        kv_heads = self.kv_heads(heads) if heads > 1 else 1
        per = "" if heads == 1 else "H·"
        per_kv = "" if kv_heads == 1 else ("H·" if kv_heads == heads else "G·")
        doc: dict[str, Any] = {"tokens": tokens}
        doc["x"] = self.matrix("X", n, d_model, "n×d_model")
        doc["wq"] = self.matrix("W_Q", d_model, heads * d_k, f"d_model×{per}d_k")
        doc["wk"] = self.matrix("W_K", d_model, kv_heads * d_k, f"d_model×{per_kv}d_k")
        doc["wv"] = self.matrix("W_V", d_model, kv_heads * d_v, f"d_model×{per_kv}d_v")
        if heads > 1 and self.yes("new.wo_ask", default=True):
            doc["wo"] = self.matrix("W_O", heads * d_v, d_model, "H·d_v×d_model")
        if heads > 1:
            doc["heads"] = heads
        if kv_heads != heads:
            doc["kv_heads"] = kv_heads
        doc["mask"] = self.mask(n)
        return doc
