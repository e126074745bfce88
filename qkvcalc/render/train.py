"""What `qkvcalc train` shows: the losses as a table and a sparkline, the weights before and
after with what each moved, the attention weights before and after (for `attend`: where each
query's target weight went), and the "qkvcalc.train/1" JSON document.

Renderers format; they compute nothing: every number shown is one a Training holds
(qkvcalc.run.train). Each is rounded as `fmt` rounds it, and a sentence says "=" only when the
number shown is the number itself, else "≈".
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np
from rich.console import Group
from rich.text import Text

from qkvcalc.i18n import translate
from qkvcalc.input.fields import DISPLAY
from qkvcalc.labels import display_width, safe
from qkvcalc.render import RenderOptions
from qkvcalc.render.json_doc import dumps, input_json, matrix_json
from qkvcalc.render.terminal import beside, matrix_lines, to_text
from qkvcalc.render.text import fmt, sub

if TYPE_CHECKING:
    from qkvcalc.input.problem import Problem
    from qkvcalc.run.train import Training

SCHEMA = "qkvcalc.train/1"
BARS = "▁▂▃▄▅▆▇█"
TABLE_ROWS = 24  # a loss table of more steps shows its first and last ones
SPARK_POINTS = 60  # a sparkline of more steps shows this many, evenly spaced


def _t(opts: RenderOptions, key: str, /, **params: object) -> str:
    return translate(key, opts.lang, **params)


def about(value: float, precision: int) -> str:
    """'= 0.25' when the number shown is the number itself, else '≈ 0.2500'."""
    shown = fmt(value, precision)
    same = shown not in ("NaN", "∞", "-∞") and float(shown) == value
    return f"{'=' if same else '≈'} {shown}"


def percent(value: float) -> str:
    """A weight as a percentage, to the whole percent (rounded, as f-strings round)."""
    return f"{100 * value:.0f}%"


def number(value: float) -> str:
    """A number as given (η): its shortest exact decimal, 0.5 not 0.500000000000000."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


def side_by_side(blocks: Sequence[list[Text]], width: int) -> list[Text]:
    """Blocks beside one another when they fit in `width` columns, else one under another."""
    lines = beside(blocks)
    if max(display_width(line.plain) for line in lines) <= width:
        return lines
    out: list[Text] = []
    for k, block in enumerate(blocks):
        out += ([Text("")] if k else []) + list(block)
    return out


def names(keys: Sequence[str]) -> str:
    return ", ".join(DISPLAY.get(k, k) for k in keys)


def sparkline(values: Sequence[float], points: int = SPARK_POINTS) -> str:
    """One bar per value (▁ the lowest, █ the highest); more values than `points`: that many,
    evenly spaced, the first and the last among them."""
    if len(values) > points:
        picks = np.linspace(0, len(values) - 1, points).round().astype(int)
        values = [values[k] for k in picks]
    low, high = min(values), max(values)
    if high == low:
        return BARS[0] * len(values)
    top = len(BARS) - 1
    return "".join(BARS[round((v - low) / (high - low) * top)] for v in values)


# ---- the terminal (table, txt) --------------------------------------------------------------


def _rule(title: str) -> Text:
    return Text(f"━━ {title} ", style="bold")


def header_lines(training: Training, opts: RenderOptions) -> list[Text]:
    p = training.start
    lines = [_rule(title(p, opts))]
    lr = number(training.lr)
    if training.interrupted:
        said = _t(opts, "train.stopped", done=training.done, steps=training.steps, lr=lr)
        lines.append(Text(said))
    else:
        lines.append(Text(_t(opts, "train.header", steps=training.steps, lr=lr)))
    assert p.loss is not None
    lines.append(Text(_t(opts, f"train.loss_{p.loss.kind}")))
    lines.append(Text(_t(opts, "train.learned", names=names(training.learned))))
    if training.frozen:
        lines.append(Text(_t(opts, "train.frozen", names=names(training.frozen))))
    unreached = [k for k in _present(training) if k not in training.learned + training.frozen]
    if unreached:
        lines.append(Text(_t(opts, "train.unreached", names=names(unreached))))
    return lines


def title(p: Problem, opts: RenderOptions) -> str:
    """'qkvcalc train · learn', or without a name of its own 'qkvcalc train'."""
    name = _name(p)
    return _t(opts, "train.title", name=name) if name else _t(opts, "train.title_unnamed")


def _name(p: Problem) -> str:
    return safe(p.meta.get("name") or p.meta.get("edited_from") or "")


def _present(training: Training) -> list[str]:
    return list(training.first.weights)


def loss_lines(training: Training, opts: RenderOptions) -> list[Text]:
    """The loss at every step (the first and last ones of many), then the sparkline."""
    losses = training.losses
    lines = [Text(""), _rule(_t(opts, "train.losses"))]
    col_step, col_loss, col_change = (
        _t(opts, key) for key in ("train.col_step", "train.col_loss", "train.col_change")
    )
    rows = [(col_step, col_loss, col_change)]
    count = len(losses)
    shown = list(range(count))
    if count > TABLE_ROWS:
        half = TABLE_ROWS // 2
        shown = [*range(half), -1, *range(count - half, count)]
    for k in shown:
        if k < 0:
            rows.append(("⋮", _t(opts, "train.elided", count=count - TABLE_ROWS), ""))
            continue
        change = "" if k == 0 else fmt(losses[k] - losses[k - 1], opts.precision)
        rows.append((str(k), fmt(losses[k], opts.precision), change))
    widths = [max(display_width(r[c]) for r in rows if r[0] != "⋮") for c in range(3)]
    for r, row in enumerate(rows):
        if row[0] == "⋮":
            lines.append(Text(f"{'⋮':>{widths[0]}}  {row[1]}", style="dim"))
            continue
        cells = [" " * (w - display_width(c)) + c for c, w in zip(row, widths, strict=True)]
        lines.append(Text("  ".join(cells).rstrip(), style="bold" if r == 0 else ""))
    first, last = losses[0], losses[-1]
    lines.append(Text(""))
    lines.append(Text(sparkline(losses), style="cyan"))
    lines.append(
        Text(
            _t(
                opts,
                "train.spark",
                first=f"L{sub(0)} {about(first, opts.precision)}",
                last=f"L{_subs(training.done)} {about(last, opts.precision)}",
            )
        )
    )
    return lines


def _subs(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def _labels(count: int) -> list[str]:
    return [str(j + 1) for j in range(count)]


def _matrix(value: np.ndarray, name: str, opts: RenderOptions, **kw: Any) -> list[Text]:
    rows, cols = value.shape
    return matrix_lines(value, name, _labels(rows), _labels(cols), opts, **kw)


def weight_lines(training: Training, opts: RenderOptions) -> list[Text]:
    """Each learned matrix before, after and what it moved, side by side; the others once."""
    lines = [Text(""), _rule(_t(opts, "train.weights"))]
    third = max(20, (opts.width - 4) // 3)
    for name in _present(training):
        shown = DISPLAY.get(name, name)
        before = training.first.weights[name]
        if name not in training.learned:
            lines.append(Text(_t(opts, "train.unchanged", name=shown)))
            lines += _matrix(before, shown, opts, width=third)
            continue
        after = training.last.weights[name]
        blocks = [
            _matrix(before, f"{shown} {_t(opts, 'train.before')}", opts, width=third),
            _matrix(after, f"{shown} {_t(opts, 'train.after')}", opts, width=third),
            _matrix(training.moved(name), f"Δ{shown}", opts, width=third),
        ]
        lines += side_by_side(blocks, opts.width)
        lines.append(Text(""))
    return lines


def target_lines(training: Training, snapshots: tuple[int, int], opts: RenderOptions) -> list[Text]:
    """`attend`: each target's weight at snapshot a and at snapshot b, per head."""
    p = training.start
    assert p.loss is not None
    a, b = (training.snapshots[k].attention for k in snapshots)
    out = []
    for h in range(a.shape[0]):
        for i, t in p.loss.targets():
            params = {
                "query": safe(p.tokens[i]),
                "key": safe(p.source_tokens[t]),
                "before": percent(float(a[h, i, t])),
                "after": percent(float(b[h, i, t])),
            }
            if a.shape[0] > 1:
                out.append(Text(_t(opts, "train.target_head", head=h + 1, **params)))
            else:
                out.append(Text(_t(opts, "train.target", **params)))
    return out


def attention_lines(training: Training, opts: RenderOptions) -> list[Text]:
    """The attention weights before and after, per head; for `attend`, each target's move."""
    p = training.start
    assert p.loss is not None
    lines = [Text(""), _rule(_t(opts, "train.attention"))]
    if p.loss.kind == "attend":
        lines += target_lines(training, (0, training.done), opts)
        lines.append(Text(""))
    half = max(24, (opts.width - 2) // 2)
    heads = training.first.attention.shape[0]
    for h in range(heads):
        title = "A" if heads == 1 else f"A{_subs(h + 1)}"
        blocks = [
            matrix_lines(
                snap.attention[h],
                f"{title} {_t(opts, key)}",
                p.tokens,
                p.source_tokens,
                opts,
                width=half,
                heat=True,
            )
            for snap, key in ((training.first, "train.before"), (training.last, "train.after"))
        ]
        lines += side_by_side(blocks, opts.width)
        lines.append(Text(""))
    return lines


def train_lines(training: Training, opts: RenderOptions) -> list[Text]:
    return [
        *header_lines(training, opts),
        *loss_lines(training, opts),
        *weight_lines(training, opts),
        *attention_lines(training, opts),
    ]


def render_train_text(training: Training, opts: RenderOptions) -> str:
    return to_text(Group(*train_lines(training, opts)), opts)


def update_lines(training: Training, k: int, opts: RenderOptions) -> list[Text]:
    """--step: update k (1 … N): the loss before and after it, and what it moved."""
    before, after = training.snapshots[k - 1], training.snapshots[k]
    lines = [
        _rule(_t(opts, "train.update", step=k, steps=training.done)),
        Text(
            _t(
                opts,
                "train.update_loss",
                before=f"L{_subs(k - 1)} {about(before.loss, opts.precision)}",
                after=f"L{_subs(k)} {about(after.loss, opts.precision)}",
            )
        ),
        Text(_t(opts, "train.update_rule", lr=number(training.lr))),
        Text(""),
    ]
    third = max(20, (opts.width - 4) // 3)
    for name in training.learned:
        shown = DISPLAY.get(name, name)
        lines += side_by_side(
            [
                _matrix(before.weights[name], f"{shown}", opts, width=third),
                _matrix(training.change(k, name), f"Δ{shown}", opts, width=third),
                _matrix(after.weights[name], f"{shown}'", opts, width=third),
            ],
            opts.width,
        )
        lines.append(Text(""))
    assert training.start.loss is not None
    if training.start.loss.kind == "attend":
        lines += target_lines(training, (k - 1, k), opts)
    return lines


# ---- JSON -------------------------------------------------------------------------------------


def trained_json(training: Training, opts: RenderOptions) -> dict[str, Any]:
    """The trained problem in the input format, with its loss key: `qkvcalc explain` (and
    `qkvcalc train`, to go on) reads it as any problem."""
    p = training.problem
    doc = input_json(p, opts)  # with its attend or target
    said = {"done": training.done, "lr": number(training.lr)}
    name = _name(training.start)
    if name:
        doc["description"] = _t(opts, "train.trained_description", name=name, **said)
    else:
        doc["description"] = _t(opts, "train.trained_description_unnamed", **said)
    return doc


def train_json(training: Training, opts: RenderOptions) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "losses": training.losses,
        "steps": [
            {
                "step": s.step,
                "loss": s.loss,
                "weights": {name: matrix_json(w) for name, w in s.weights.items()},
            }
            for s in training.snapshots
        ],
        "problem": trained_json(training, opts),
        "lr": training.lr,
        "frozen": list(training.frozen),
        "learned": list(training.learned),
        "interrupted": training.interrupted,
    }


def render_train_json(training: Training, opts: RenderOptions) -> str:
    return dumps(train_json(training, opts), indent=1) + "\n"


def render_trained(training: Training, opts: RenderOptions) -> str:
    """--output without --format json: the trained problem alone."""
    return dumps(trained_json(training, opts), indent=1) + "\n"


# ---- the loss curve as SVG, and the page ------------------------------------------------------


def loss_svg(training: Training, opts: RenderOptions, width: int = 480, height: int = 200) -> str:
    """A small line plot of L against the step, every label escaped."""
    losses = training.losses
    left, right, top, bottom = 64, 16, 24, 36
    low, high = min(losses), max(losses)
    span = high - low or 1.0
    last = max(1, len(losses) - 1)
    pts = " ".join(
        f"{left + (width - left - right) * k / last:.1f},"
        f"{top + (height - top - bottom) * (high - v) / span:.1f}"
        for k, v in enumerate(losses)
    )
    title = escape(_t(opts, "train.plot_title"))
    x_label = escape(_t(opts, "train.col_step"))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect width="{width}" height="{height}" fill="white"/>'
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
        'stroke="#555"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#555"/>'
        f'<polyline fill="none" stroke="#1e5ac8" stroke-width="2" points="{pts}"/>'
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" font-size="11" '
        f'font-family="sans-serif">{escape(fmt(high, opts.precision))}</text>'
        f'<text x="{left - 6}" y="{height - bottom + 4}" text-anchor="end" font-size="11" '
        f'font-family="sans-serif">{escape(fmt(low, opts.precision))}</text>'
        f'<text x="{left}" y="{height - bottom + 16}" font-size="11" '
        'font-family="sans-serif">0</text>'
        f'<text x="{width - right}" y="{height - bottom + 16}" text-anchor="end" font-size="11" '
        f'font-family="sans-serif">{len(losses) - 1}</text>'
        f'<text x="{(left + width - right) / 2:.0f}" y="{height - 6}" text-anchor="middle" '
        f'font-size="12" font-family="sans-serif">{x_label}</text>'
        f'<text x="14" y="{(top + height - bottom) / 2:.0f}" font-size="12" '
        'font-family="sans-serif">L</text>'
        f'<text x="{left}" y="{top - 8}" font-size="12" font-family="sans-serif">{title}</text>'
        "</svg>"
    )


def render_train_svg(training: Training, opts: RenderOptions) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + loss_svg(training, opts, 640, 260) + "\n"


def render_train_html(training: Training, opts: RenderOptions) -> str:
    """One self-contained page: the loss curve, then the text of the terminal rendering."""
    plain = render_train_text(training, opts._replace(color=False))
    heading = escape(title(training.start, opts))
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="{escape(opts.lang)}"><head><meta charset="utf-8">'
        f"<title>{heading}</title>"
        "<style>body{font-family:sans-serif;margin:2em}pre{font-size:13px}</style>"
        f"</head><body><h1>{heading}</h1>\n"
        f"<figure>{loss_svg(training, opts)}</figure>\n"
        f"<pre>{escape(plain)}</pre>\n</body></html>\n"
    )


TRAIN_FORMATS = {
    "table": lambda t, o: render_train_text(t, o),
    "txt": lambda t, o: render_train_text(t, o._replace(color=False)),
    "json": render_train_json,
    "svg": render_train_svg,
    "html": render_train_html,
}


def render_train(training: Training, fmt_name: str, opts: RenderOptions) -> str:
    return TRAIN_FORMATS[fmt_name](training, opts)
