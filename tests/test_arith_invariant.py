"""Issue 25, item 2: every '=' holds for the numbers shown.

Each preset × {plain, --exact, --precision 2, 8 and 10, --decode 1 (where the preset allows it),
--tiles 2}
× {en, ko} is rendered as the colourless table (--detail full, in-process, wide enough that no
arithmetic line wraps). Every arithmetic line (the cells' arithmetic, the softmax's row
sentences, the |q|·|k|·cos θ read-out) is parsed by the small evaluator below (an ast walker:
numbers, + − × · /, parentheses, e^( ), exp, √n, tanh, tanh², cos, sin, max, |a − b|, -∞;
never eval) and each '=' between two numeric sides is checked: the left side, evaluated from
the numbers shown, gives the shown right side at the shown precision. A '≈' need not. A
line, or a side of one, that the evaluator does not understand fails the test (listed).
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import pytest

from tests.conftest import PINNED_ENV, ROOT

PRESETS = sorted(p.stem for p in (ROOT / "presets").glob("*.json"))
OPTIONS = {
    "plain": [],
    "exact": ["--exact"],
    "precision2": ["--precision", "2"],
    "precision8": ["--precision", "8"],  # where a slack for floating-point noise passes for
    "precision10": ["--precision", "10"],  # a digit shown, if it is not kept far below it
    "decode1": ["--decode", "1"],
    "tiles2": ["--tiles", "2"],
}


def _allows(preset: str, option: str) -> bool:
    """--decode needs self-attention from X with a causal mask; a preset that decodes or
    tiles already cannot take the other."""
    doc = json.loads((ROOT / "presets" / f"{preset}.json").read_text(encoding="utf-8"))
    if "dtype" in doc and option == "exact":
        return False  # --dtype refuses it (one message, tests/test_precision.py)
    if "differential" in doc and option in ("decode1", "tiles2"):
        return False  # refused (one message, tests/test_differential.py)
    if "gated_delta" in doc and option in ("decode1", "tiles2"):
        return False  # refused (one message, tests/test_gated_delta.py)
    if "indexer" in doc and option == "decode1":
        return False  # refused (one message, tests/test_indexer.py)
    if "kimi_delta" in doc and option in ("decode1", "tiles2"):
        return False  # refused (one message, tests/test_kimi_delta.py)
    if "lightning" in doc and option in ("decode1", "tiles2"):
        return False  # refused (one message, tests/test_lightning.py)
    if option == "decode1":
        causal = doc.get("mask") == "causal" and "source" not in doc and "x" in doc
        return causal and "tiles" not in doc
    return option != "tiles2" or "decode" not in doc


def _precision(option: str) -> int:
    return int(option.removeprefix("precision")) if option.startswith("precision") else 4


CASES = [
    (preset, option, lang)
    for preset in PRESETS
    for option in OPTIONS
    if _allows(preset, option)
    for lang in ("en", "ko")
]

# Beyond the presets: every feature's own lines and the backward's, forward and back.
FEATURES = {
    "sinks": [1.5],
    "q_norm": [1, 0.5],
    "k_norm": [0.5, 1],
    "softcap": 3,
    "rope": 10000,
    "alibi": True,
    "attend": [1, 1, 2],
}
# … and the LayerNorm kind of q/k norm (with its bias) and the attention temperature
LAYER_FEATURES = {
    "q_norm": [1, 0.5],
    "k_norm": [0.5, 1],
    "qk_norm": {"kind": "layer", "bias": {"q": [0.1, -0.2], "k": [0, 0.3]}},
    "attn_temperature": [1, 1.25, 1.5],
    "attend": [1, 1, 2],
}
# … and differential attention (two heads as one pair), its backward from a target
DIFFERENTIAL = {
    "heads": 2,
    "differential": {"lambda": "1/2", "lambda_init": "1/5"},
    "target": [[1, 0], [0, 1], [1, 1]],
}
FEATURE_SETS = {
    "features": FEATURES,
    "features_layer": LAYER_FEATURES,
    "features_differential": DIFFERENTIAL,
}
FEATURE_CASES = [
    (option, lang) for option in ("plain", "exact", "precision2") for lang in ("en", "ko")
]

# ---- a small safe evaluator ------------------------------------------------------------------

_FUNCS = {
    "exp": math.exp,
    "sqrt": math.sqrt,
    "tanh": math.tanh,
    "tanh2": lambda v: math.tanh(v) ** 2,
    "cos": math.cos,
    "sin": math.sin,
    "abs": abs,
    "max": lambda *v: max(v),
    "ReLU": lambda v: max(v, 0.0),  # the sparse-attention indexer's index scores
    # Gated DeltaNet's layer (qkvcalc/ops/gdn_layer.py): σ, SiLU, softplus (torch's threshold)
    "sigmoid": lambda v: 1 / (1 + math.exp(-v)),
    "SiLU": lambda v: v / (1 + math.exp(-v)),
    "softplus": lambda v: v if v > 20 else math.log1p(math.exp(v)),
}


class NotUnderstood(ValueError):
    pass


def _to_python(text: str) -> str:
    """The shown math as Python's expression syntax, for ast.parse only (never evaluated)."""
    t = text.strip()
    t = t.replace("-∞", " NEG_INF ").replace("∞", " POS_INF ").replace("NaN", " NAN ")
    t = t.replace("−", "-").strip().replace("×", "*").replace("·", "*")
    t = t.replace("tanh²(", "tanh2(").replace("e^(", "exp(").replace("σ(", "sigmoid(")
    t = re.sub(r"√(\d+(?:\.\d+)?)", r"sqrt(\1)", t)
    t = re.sub(r"\|([^|]*)\|", r"abs(\1)", t)
    if re.search(r"[^0-9A-Za-z_.+\-*/(), ]", t):
        raise NotUnderstood(text)
    return t


def _walk(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _walk(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "NEG_INF":
        return -math.inf
    if isinstance(node, ast.Name) and node.id == "POS_INF":  # a --dtype run's overflow
        return math.inf
    if isinstance(node, ast.Name) and node.id == "NAN":  # … and what follows from it
        return math.nan
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        v = _walk(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _walk(node.left), _walk(node.right)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if isinstance(node.op, ast.Div):
            return a / b if b else math.nan
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCS
        and not node.keywords
    ):
        args = [_walk(a) for a in node.args]
        if node.func.id == "exp" and math.isnan(args[0]):
            return math.nan
        return float(_FUNCS[node.func.id](*args))
    raise NotUnderstood(ast.dump(node))


def evaluate(text: str) -> float:
    try:
        tree = ast.parse(_to_python(text), mode="eval")
    except SyntaxError as e:
        raise NotUnderstood(text) from e
    with_inf = text.count("-∞")
    value = _walk(tree)
    if with_inf and math.isnan(value):
        raise ArithmeticError(f"undefined: {text}")
    return value


def _is_label(text: str) -> bool:
    """A side that names what is computed (Q[1,2], q₁·k₂, ℓ₂[1], sum of exponentials, max,
    |q|·|k|·cos θ, φ): no number written in it outside a cell's [i,j]."""
    bare = re.sub(r"\[\d+(,\d+)?\]", "", text)
    return not re.search(r"[0-9]", bare)


# ---- the lines of a rendering ----------------------------------------------------------------

_CELL = re.compile(r"^\[\d+,\d+\]: ")
_ROW = re.compile(r"^(row \d+|\d+행) \(.*?\): ")
_MASK_ROW = re.compile(r"^(row \d+|\d+행) \(.*?\): .* → -∞$")
# --dtype: a masked cell is what its note says (finfo.min added, or −1e9), not −∞
_MASK_ROW_LOWP = re.compile(r"^(row \d+|\d+행) \(.*?\): .* (masked|마스킹됨) \(.*\)$")
_ALL_MASKED = ("every key masked, weights 0", "모든 Key가 마스킹됨, 가중치 0")
# a choice, not a sum (the indexer's top-k, the mask it gives): no '=' to check
_CHOICE = re.compile(r"^\[\d+,\d+\]: [^=≈]* → (0|1|-∞)$")
_GEOMETRY = re.compile(r"\|q\|·\|k\|·cos θ = (.*?)\.?$")


def arithmetic_lines(text: str) -> list[str]:
    """Each line of every 'Arithmetic' block, and every |q|·|k|·cos θ read-out (unwrapped)."""
    out: list[str] = []
    block = False
    note: list[str] | None = None
    for raw in [*text.splitlines(), ""]:
        if note is not None and raw.startswith("    ") and not raw.startswith("    •"):
            note.append(raw.strip())
            continue
        if note is not None:
            joined = " ".join(note)
            found = _GEOMETRY.search(joined)
            if found:
                out.append("|q|·|k|·cos θ = " + found.group(1))
            note = None
        if raw.strip() in ("Arithmetic", "계산 과정"):
            block = True
            continue
        if block and raw.startswith("    "):
            out.append(raw.strip())
            continue
        block = False
        if raw.startswith("  • "):
            note = [raw[4:].strip()]
    return out


def check_line(line: str, precision: int) -> tuple[int, str | None]:
    """(the '=' checked in this line, a failure or None). NotUnderstood if it cannot be read.
    The read-out's |q|·|k|·cos θ is written at 4 decimals whatever --precision says."""
    if line.startswith("|q|·|k|·cos θ = "):
        precision = 4
    if _MASK_ROW.match(line) or _MASK_ROW_LOWP.match(line) or line.endswith(_ALL_MASKED):
        return 0, None
    if _CHOICE.match(line):
        return 0, None
    body = _CELL.sub("", line)
    body = _ROW.sub("", body)
    checked, failure = 0, None
    for clause in re.split(r";\s+|\s{3}\(|\)$", body):
        if not clause.strip():
            continue
        parts = re.split(r" (=|≈) ", clause)
        sides, ops = parts[0::2], parts[1::2]
        if not ops:
            raise NotUnderstood(line)
        values: list[float | None] = []
        for side in sides:
            try:
                values.append(evaluate(side))
            except NotUnderstood:
                if not _is_label(side):
                    raise NotUnderstood(f"{side!r} in {line!r}") from None
                values.append(None)
        for op, a, b in zip(ops, values, values[1:], strict=False):
            if op != "=" or a is None or b is None:
                continue
            checked += 1
            unit = 10.0**-precision  # half of it, and floating-point noise far below it
            tolerance = 0.5 * unit + min(1e-12 * max(1.0, abs(b)), 1e-3 * unit)
            if not (a == b or abs(a - b) <= tolerance):
                failure = failure or f"{line}   (left side is {a!r})"
    return checked, failure


def _render(cli, preset: str, option: str, lang: str) -> str:
    """A preset's txt rendering; preset "features": the sentence preset with every feature,
    forward and backward."""
    env = {**PINNED_ENV, "COLUMNS": "4000"}
    source = ["--preset", preset]
    stdin = None
    if preset in FEATURE_SETS:
        doc = json.loads((ROOT / "presets" / "sentence.json").read_text(encoding="utf-8"))
        given = {k: v for k, v in doc.items() if k not in ("name", "description", "reference")}
        source, stdin = ["-", "--backward"], json.dumps({**given, **FEATURE_SETS[preset]})
    # the table without colour: it follows COLUMNS, where txt is a document of 100 columns
    args = ["explain", *source, "-f", "table", "--no-color", "--detail", "full", "--lang", lang]
    result = cli(*args, *OPTIONS[option], input=stdin, env=env)
    assert result.exit_code == 0, result.output[-2000:]
    return result.output


def _check_rendering(cli, preset: str, option: str, lang: str) -> None:
    _check_text(_render(cli, preset, option, lang), _precision(option))


def _check_text(text: str, precision: int) -> None:
    lines = arithmetic_lines(text)
    assert lines, "no arithmetic lines found: the extraction is broken"
    wrong, unknown, undefined, checked = [], [], [], 0
    for line in lines:
        try:
            n, failure = check_line(line, precision)
        except NotUnderstood as e:
            unknown.append(str(e))
            continue
        except ArithmeticError as e:
            if not line.endswith(" NaN"):  # said to be NaN (a --dtype run's row of −∞): true
                undefined.append(str(e))
            continue
        checked += n
        if failure:
            wrong.append(failure)
    assert not unknown, "lines the evaluator does not understand:\n" + "\n".join(unknown[:40])
    assert not undefined, "undefined expressions written as values:\n" + "\n".join(undefined)
    assert not wrong, f"{len(wrong)} '=' that the shown numbers do not give:\n" + "\n".join(
        wrong[:40]
    )
    assert checked, "no '=' was checked"


@pytest.mark.parametrize(("preset", "option", "lang"), CASES)
def test_every_equals_holds(cli, preset: str, option: str, lang: str) -> None:
    _check_rendering(cli, preset, option, lang)


@pytest.mark.parametrize("features", sorted(FEATURE_SETS))
@pytest.mark.parametrize(("option", "lang"), FEATURE_CASES)
def test_every_equals_holds_in_the_features_and_the_backward(
    cli, features: str, option: str, lang: str
) -> None:
    _check_rendering(cli, features, option, lang)


def test_the_deltanet_weights_lines_are_among_those_checked(cli) -> None:
    """The preset deltanet (in PRESETS) writes a line per cell of its implicit weights below
    the diagonal, β_s·(e^(…)×k̂_s·q̂_t − …): the test above reads and checks them."""
    lines = arithmetic_lines(_render(cli, "deltanet", "plain", "en"))
    below = [line for line in lines if "×(e^(" in line]
    assert len(below) == 3, lines  # n = 3: W[2,1], W[3,1], W[3,2]
    results = [check_line(line, 4) for line in below]  # one of them says ≈ (not checked)
    assert all(failure is None for _, failure in results) and sum(n for n, _ in results) >= 2


# A whole Gated DeltaNet layer (the keys extract gives a Qwen3-Next linear layer): the causal
# convolution, g and β made from X, the gated norm, two heads
_R = [[0.3, -1.2, 0.5], [1.1, 0.4, -0.7], [-0.2, 0.9, 1.3], [0.8, -0.5, 0.1]]
GDN_LAYER = {
    "tokens": ["a", "b", "c", "d"],
    "x": _R,
    "wq": [[0.5, -0.3, 0.2, 0.7], [0.1, 0.8, -0.6, 0.4], [-0.9, 0.2, 0.3, -0.1]],
    "wk": [[0.2, 0.6, -0.4, 0.1], [-0.7, 0.3, 0.5, 0.9], [0.4, -0.2, 0.8, -0.5]],
    "wv": [[0.6, -0.1, 0.3, 0.2], [0.2, 0.5, -0.8, 0.4], [-0.3, 0.7, 0.1, -0.6]],
    "wo": [[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [-0.1, 0.2, 0.7], [0.8, -0.3, 0.2]],
    "heads": 2,
    "mask": "causal",
    "gated_delta": {
        "conv": [[0.2 * ((c % 5) - 2) for c in range(12)], [1 - 0.1 * c for c in range(12)]],
        "wa": [[0.4, -0.6], [0.9, 0.2], [-0.3, 0.5]],
        "wb": [[-0.8, 0.3], [0.1, 0.7], [0.6, -0.4]],
        "a_log": [0.5, -1.2],
        "dt_bias": [0.3, 1.1],
        "wz": [[0.7, -0.2, 0.4, 0.1], [-0.5, 0.6, 0.3, -0.9], [0.2, 0.8, -0.7, 0.5]],
        "norm": [1.2, 0.8],
        "chunk": 2,
    },
}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_equals_holds_in_a_whole_gated_deltanet_layer(cli, lang) -> None:
    env = {**PINNED_ENV, "COLUMNS": "4000"}
    args = ["explain", "-", "-f", "table", "--no-color", "--detail", "full", "--lang", lang]
    result = cli(*args, input=json.dumps(GDN_LAYER), env=env)
    assert result.exit_code == 0, result.output[-2000:]
    lines = arithmetic_lines(result.output)
    for made in ("SiLU(", "softplus(", "σ(", " / √"):  # the layer's own stages are among them
        assert any(made in line for line in lines), made
    _check_text(result.output, 4)


# A whole Kimi Delta Attention layer (the keys extract gives a Kimi Linear KDA layer): the same
# convolution, each Key channel's g made from X through the low-rank W_fa·W_fb, β = σ(X·W_b),
# the gated norm with σ(X·W_ga·W_gb); and OLMo-Hybrid's Gated DeltaNet, β = 2·σ(b)
KDA_LAYER = {
    **{key: value for key, value in GDN_LAYER.items() if key != "gated_delta"},
    "kimi_delta": {
        "conv": GDN_LAYER["gated_delta"]["conv"],
        "wf_a": [[0.4, -0.6], [0.9, 0.2], [-0.3, 0.5]],
        "wf_b": [[0.5, -0.4, 0.2, 0.9], [-0.3, 0.6, 0.8, -0.1]],
        "a_log": [0.5, -1.2],
        "dt_bias": [0.3, 1.1, -0.4, 0.2],
        "wb": [[-0.8, 0.3], [0.1, 0.7], [0.6, -0.4]],
        "wg_a": [[0.7, -0.2], [-0.5, 0.6], [0.2, 0.8]],
        "wg_b": [[0.3, -0.9, 0.4, 0.1], [-0.6, 0.2, 0.5, 0.7]],
        "norm": [1.2, 0.8],
        "chunk": 2,
    },
}
OLMO_LAYER = {**GDN_LAYER, "gated_delta": {**GDN_LAYER["gated_delta"], "beta_scale": 2}}


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize(("layer", "made"), [(KDA_LAYER, "σ("), (OLMO_LAYER, "2×σ(")])
def test_every_equals_holds_in_a_whole_kda_and_olmo_layer(cli, layer, made, lang) -> None:
    env = {**PINNED_ENV, "COLUMNS": "4000"}
    args = ["explain", "-", "-f", "table", "--no-color", "--detail", "full", "--lang", lang]
    result = cli(*args, input=json.dumps(layer), env=env)
    assert result.exit_code == 0, result.output[-2000:]
    lines = arithmetic_lines(result.output)
    for part in ("SiLU(", "softplus(", made, " / √"):  # the layer's own stages are among them
        assert any(part in line for line in lines), part
    _check_text(result.output, 4)


def test_the_evaluator() -> None:
    assert evaluate("1×1 + 2×0") == 1
    assert evaluate("e^(-∞)") == 0
    assert evaluate("7 / √2") == pytest.approx(4.9497474683)
    assert evaluate("-0.5×|1 − 3|") == -1
    assert evaluate("50×tanh(3.5355 / 50)") == pytest.approx(50 * math.tanh(3.5355 / 50))
    assert evaluate("0.5×(1 − tanh²(1 / 2))") == pytest.approx(0.5 * (1 - math.tanh(0.5) ** 2))
    assert evaluate("max(0.5, 1.2)") == 1.2
    assert evaluate("(-2)×3") == -6
    with pytest.raises(ArithmeticError):
        evaluate("e^(-∞ − -∞)")
    with pytest.raises(NotUnderstood):
        evaluate("2^3")
    with pytest.raises(NotUnderstood):
        evaluate("__import__('os')")
    assert check_line("[1,1]: 0.3333 + 0.3333 = 0.6667", 4)[1] is not None
    assert check_line("[1,1]: 0.3333 + 0.3333 ≈ 0.6667", 4) == (0, None)
    assert check_line("Q[1,1] = 1×1 + 2×0 = 1", 4) == (1, None)
    with pytest.raises(NotUnderstood):
        check_line("[1,1]: 3 apples = 3", 4)


if __name__ == "__main__":  # a count of the lines: python -m tests.test_arith_invariant
    from typer.testing import CliRunner

    from qkvcalc.cli import app

    runner = CliRunner()

    def cli(*args, input=None, env=None):
        return runner.invoke(app, list(args), input=input, env=env, catch_exceptions=False)

    totals = {"lines": 0, "checked": 0, "wrong": 0, "unknown": 0, "undefined": 0}
    extra = [(f, o, g) for f in sorted(FEATURE_SETS) for o, g in FEATURE_CASES]
    for preset, option, lang in [*CASES, *extra]:
        precision = _precision(option)
        for line in arithmetic_lines(_render(cli, preset, option, lang)):
            totals["lines"] += 1
            try:
                n, failure = check_line(line, precision)
            except NotUnderstood as e:
                totals["unknown"] += 1
                print("?", preset, option, lang, e)
                continue
            except ArithmeticError as e:
                totals["undefined"] += 1
                print("!", preset, option, lang, e)
                continue
            totals["checked"] += n
            if failure:
                totals["wrong"] += 1
                print("✗", preset, option, lang, failure)
    print(totals, Path(__file__).name)
