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
from itertools import pairwise
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
ROUNDING = 1e-9  # a loss that rose by less than this share of the largest: float rounding


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


def log_decades(values: Sequence[float]) -> int:
    """How many decades positive values span, when that is 2 or more (else 0): a sparkline on
    a linear scale would show one tall bar and the rest at the bottom."""
    low, high = min(values), max(values)
    if low <= 0 or not np.isfinite(high):
        return 0
    decades = int(np.floor(np.log10(high / low)))
    return decades if decades >= 2 else 0


def sparkline(
    values: Sequence[float],
    points: int = SPARK_POINTS,
    log: bool = False,
    bounds: tuple[float, float] | None = None,
) -> str:
    """One bar per value (▁ the lowest, █ the highest, or `bounds`' low and high: two runs on
    one scale); more values than `points`: that many, evenly spaced, the first and the last
    among them. `log`: the bars by log10 of the values."""
    if len(values) > points:
        picks = np.linspace(0, len(values) - 1, points).round().astype(int)
        values = [values[k] for k in picks]
    low, high = bounds if bounds is not None else (min(values), max(values))
    if log:
        values = [float(np.log10(v)) for v in values]
        low, high = float(np.log10(low)), float(np.log10(high))
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
    # a matrix whose gradient was exactly 0 at every update did not learn: the notes say why
    unmoved = training.unmoved if training.done else []
    moved = [k for k in training.learned if k not in unmoved]
    if moved:
        lines.append(Text(_t(opts, "train.learned", names=names(moved))))
    if training.frozen:
        lines.append(Text(_t(opts, "train.frozen", names=names(training.frozen))))
    unreached = [k for k in _present(training) if k not in training.learned + training.frozen]
    if unreached:
        lines.append(Text(_t(opts, "train.unreached", names=names(unreached))))
    lines += [Text(said) for said in run_notes(training, opts)]
    return lines


def run_notes(training: Training, opts: RenderOptions) -> list[str]:
    """What this run shows, in sentences chosen by its own numbers: a data set's mean, what a
    feature's numbers do in training (a sparse top-k's, left as given), that `attend` is a
    shortcut, the matrices that did not move and why, a loss that grew, and what
    --compare-scale's two runs show (or that it exists)."""
    p = training.start
    assert p.loss is not None
    out: list[str] = []
    if training.examples:
        out.append(_t(opts, "train.dataset", count=len(training.examples)))
        if training.heldout:
            out.append(_t(opts, "train.dataset_heldout", count=len(training.heldout)))
    from qkvcalc.ops import features  # here: a plain problem's run loads no feature

    for f, value in features.active(p):
        said = f.train_note(value) if callable(f.train_note) else f.train_note
        if said:
            out.append(_t(opts, said))
    if p.loss.kind == "attend":
        out.append(_t(opts, "train.attend_shortcut"))
        if p.heads > 1:
            out.append(_t(opts, "train.attend_heads", heads=p.heads))
    unmoved = training.unmoved
    if unmoved and training.done:
        weights = training.first.attentions or (training.first.attention,)
        one_key = all(_one_key_each(q) for q in training.examples or (p,)) and all(
            np.all((a == 0) | (a == 1))
            for a in weights  # and nothing else takes a share
        )
        key = (
            "train.unmoved_one_key"
            if one_key and set(unmoved) <= {"wq", "wk", "bq", "bk"}
            else "train.unmoved"
        )
        out.append(_t(opts, key, names=names(unmoved)))
    out += rise_notes(training, opts)
    if training.unscaled is not None:
        out.append(compare_sentence(training, opts))
    elif (
        p.scale != 1
        and features.mixing(p) is None
        and not all(_one_key_each(q) for q in training.examples or (p,))
    ):
        out.append(scale_hint(p, opts))
    return out


def scale_hint(p: Problem, opts: RenderOptions) -> str:
    """What the scale is on this problem (√d_k, or the problem's own), and --compare-scale."""
    root = about(p.d_k**0.5, opts.precision)
    if p.scale_given is None:
        return _t(opts, "train.scale_hint", dk=p.d_k, root=root)
    default = about(p.d_k**-0.5, opts.precision)
    return _t(opts, "train.scale_hint_given", scale=f"{p.scale:.4g}", default=default)


def rise_notes(training: Training, opts: RenderOptions) -> list[str]:
    """A loss that rose at some update, said with its numbers: grown past its start and still
    growing (diverging: by how much, and at the last step); come back up from its lowest; or
    risen on the way down. A short enough step against a gradient that is not 0 always lowers
    the loss, so each rise is a step η made too long."""
    losses = training.losses
    rises = [b - a for a, b in pairwise(losses) if b > a]
    if not training.done or not rises or max(rises) <= ROUNDING * max(losses):
        return []  # a rise of the float's last digits is rounding, not a step too long
    said = {"rose": training.rose, "done": training.done, "lr": number(training.lr)}
    first, last = losses[0], losses[-1]
    low = int(np.argmin(losses))
    if last > first and (last > losses[-2] or low == 0):  # above its start, and never below it
        ratio = times_text(last / first) if first > 0 else "∞"
        step = times_text(last / losses[-2]) if losses[-2] > 0 else "∞"
        return [_t(opts, "train.diverging", ratio=ratio, last=step, **said)]
    if last > losses[low]:  # came down (low > 0), then back up
        at = {"low": about(losses[low], opts.precision), "step": low}
        return [_t(opts, "train.rose_back", last=about(last, opts.precision), **at, **said)]
    return [_t(opts, "train.rose_some", last=about(last, opts.precision), **said)]


def times_text(ratio: float) -> str:
    """A factor as a sentence says it, 3 significant digits: '2.35', '1.11 × 10⁷'."""
    if ratio < 1e4:
        return f"{ratio:.3g}"
    mantissa, exponent = f"{ratio:.2e}".split("e")
    return f"{mantissa} × 10{_sup(int(exponent))}"


def _sup(number: int) -> str:
    return str(number).translate(str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"))


def _one_key_each(p: Problem) -> bool:
    """Whether every query that has a key may see exactly one (by the mask, not by numbers)."""
    from qkvcalc.plan.masks import allowed_keys

    allowed = allowed_keys(p)
    counts = np.full(p.n, p.m) if allowed is None else allowed.sum(axis=1)
    return bool(np.all(counts <= 1))


def compare_sentence(training: Training, opts: RenderOptions) -> str:
    """--compare-scale: where each run's loss ended, and which is lower (by how much)."""
    other = training.unscaled
    assert other is not None
    done = min(training.done, other.done)
    first, last, then = training.losses[0], training.losses[done], other.losses[done]
    said = {
        "first": about(first, opts.precision),
        "last": about(last, opts.precision),
        "other": about(then, opts.precision),
        "first_other": about(other.losses[0], opts.precision),
        "scale": f"{training.start.scale:.4g}",
        "done": done,
    }
    if last == then:
        return _t(opts, "train.compare_equal", **said)
    low, high = sorted((last, then))
    times = _t(opts, "train.compare_times", ratio=times_text(high / low)) if low > 0 else ""
    key = "train.compare_lower" if last < then else "train.compare_higher"
    return _t(opts, key, times=times, **said)


def title(p: Problem, opts: RenderOptions) -> str:
    """'qkvcalc train · learn', or without a name of its own 'qkvcalc train'."""
    name = _name(p)
    return _t(opts, "train.title", name=name) if name else _t(opts, "train.title_unnamed")


def _name(p: Problem) -> str:
    return safe(p.meta.get("name") or p.meta.get("edited_from") or "")


def _present(training: Training) -> list[str]:
    return list(training.first.weights)


def loss_lines(training: Training, opts: RenderOptions) -> list[Text]:
    """The loss at every step (the first and last ones of many), then the sparkline (two with
    --compare-scale: the scaled run and scale 1)."""
    losses = training.losses
    other = training.unscaled.losses if training.unscaled is not None else None
    title = "train.compare_title" if other is not None else "train.losses"
    lines = [Text(""), _rule(_t(opts, title))]
    heads = ["train.col_step", "train.col_loss", "train.col_change"]
    heads += ["train.col_unscaled"] if other is not None else []
    rows = [tuple(_t(opts, key) for key in heads)]
    count = len(losses)
    shown = list(range(count))
    if count > TABLE_ROWS:
        half = TABLE_ROWS // 2
        shown = [*range(half), -1, *range(count - half, count)]
    for k in shown:
        if k < 0:
            rows.append(
                ("⋮", _t(opts, "train.elided", count=count - TABLE_ROWS), *[""] * (len(heads) - 2))
            )
            continue
        change = "" if k == 0 else fmt(losses[k] - losses[k - 1], opts.precision)
        row = [str(k), fmt(losses[k], opts.precision), change]
        if other is not None:
            row.append(fmt(other[k], opts.precision) if k < len(other) else "")
        rows.append(tuple(row))
    columns = len(heads)
    widths = [max(display_width(r[c]) for r in rows if r[0] != "⋮") for c in range(columns)]
    for r, cols in enumerate(rows):
        if cols[0] == "⋮":
            lines.append(Text(f"{'⋮':>{widths[0]}}  {cols[1]}", style="dim"))
            continue
        cells = [" " * (w - display_width(c)) + c for c, w in zip(cols, widths, strict=True)]
        lines.append(Text("  ".join(cells).rstrip(), style="bold" if r == 0 else ""))
    lines.append(Text(""))
    every = losses + (other or [])
    decades = log_decades(every)
    if other is None:
        lines.append(Text(sparkline(losses, log=bool(decades)), style="cyan"))
    else:  # one scale for both, so that the bars compare
        bounds = (min(every), max(every))
        mine, theirs = (sparkline(v, log=bool(decades), bounds=bounds) for v in (losses, other))
        scale = f"{training.start.scale:.4g}"
        label = [_t(opts, "train.spark_scaled", scale=scale), _t(opts, "train.spark_unscaled")]
        pad = max(display_width(x) for x in label)
        for text, bars, style in ((label[0], mine, "cyan"), (label[1], theirs, "magenta")):
            lines.append(Text(text + " " * (pad - display_width(text) + 1) + bars, style=style))
    if decades:
        lines.append(Text(_t(opts, "train.log_scale", decades=decades), style="dim"))
    first, last = losses[0], losses[-1]
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


MAX_EXAMPLES_SHOWN = 4  # a data set's attention weights: its first examples'


def attention_lines(training: Training, opts: RenderOptions) -> list[Text]:
    """The attention weights before and after, per head (of a data set: per example, its
    first ones); for `attend`, each target's move."""
    p = training.start
    assert p.loss is not None
    lines = [Text(""), _rule(_t(opts, "train.attention"))]
    if p.loss.kind == "attend" and not training.examples:
        lines += target_lines(training, (0, training.done), opts)
        lines.append(Text(""))
    problems = training.examples or (p,)
    for k, example in enumerate(problems[:MAX_EXAMPLES_SHOWN]):
        if training.examples:
            tokens = " ".join(safe(t) for t in example.source_tokens)
            said = _t(opts, "train.example_title", index=k + 1, tokens=tokens)
            lines.append(Text(said, style="bold"))
        before = training.first.attentions[k] if training.examples else training.first.attention
        after = training.last.attentions[k] if training.examples else training.last.attention
        lines += before_after(example, before, after, opts)
    if len(problems) > MAX_EXAMPLES_SHOWN:
        more = len(problems) - MAX_EXAMPLES_SHOWN
        lines += [Text(_t(opts, "train.examples_elided", count=more), style="dim"), Text("")]
    return lines


def before_after(p: Problem, a: np.ndarray, b: np.ndarray, opts: RenderOptions) -> list[Text]:
    """Attention weights [H, n, m] before and after, side by side, per head."""
    lines: list[Text] = []
    half = max(24, (opts.width - 2) // 2)
    heads = a.shape[0]
    for h in range(heads):
        title = "A" if heads == 1 else f"A{_subs(h + 1)}"
        blocks = [
            matrix_lines(
                snap[h],
                f"{title} {_t(opts, key)}",
                p.tokens,
                p.source_tokens,
                opts,
                width=half,
                heat=True,
            )
            for snap, key in ((a, "train.before"), (b, "train.after"))
        ]
        lines += side_by_side(blocks, opts.width)
        lines.append(Text(""))
    return lines


def heldout_lines(training: Training, opts: RenderOptions) -> list[Text]:
    """Each held-out example: its loss before and after, where each query now puts most of
    its weight, and its attention weights before and after."""
    if not training.heldout:
        return []
    lines = [Text(""), _rule(_t(opts, "train.heldout"))]
    for k, held in enumerate(training.heldout):
        p = held.problem
        tokens = " ".join(safe(t) for t in p.source_tokens)
        lines.append(
            Text(_t(opts, "train.heldout_example", index=k + 1, tokens=tokens), style="bold")
        )
        if held.loss_before is not None and held.loss_after is not None:
            said = {"before": about(held.loss_before, opts.precision),
                    "after": about(held.loss_after, opts.precision)}  # fmt: skip
            lines.append(Text(_t(opts, "train.heldout_loss", **said)))
        lines += [Text(line) for line in top_keys(p, held.before, held.after, opts)]
        lines.append(Text(""))
        lines += before_after(p, held.before, held.after, opts)
    return lines


def top_keys(p: Problem, a: np.ndarray, b: np.ndarray, opts: RenderOptions) -> list[str]:
    """Per query (and head): the key with most weight after training, and before."""
    out = []
    for h in range(a.shape[0]):
        for i in range(a.shape[1]):
            now, then = int(np.argmax(b[h, i])), int(np.argmax(a[h, i]))
            params = {
                "query": safe(p.tokens[i]),
                "key": safe(p.source_tokens[now]),
                "after": percent(float(b[h, i, now])),
                "key_before": safe(p.source_tokens[then]),
                "before": percent(float(a[h, i, then])),
            }
            if a.shape[0] > 1:
                out.append(_t(opts, "train.heldout_top_head", head=h + 1, **params))
            else:
                out.append(_t(opts, "train.heldout_top", **params))
    return out


def train_lines(training: Training, opts: RenderOptions) -> list[Text]:
    return [
        *header_lines(training, opts),
        *loss_lines(training, opts),
        *weight_lines(training, opts),
        *attention_lines(training, opts),
        *heldout_lines(training, opts),
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
    `qkvcalc train`, to go on) reads it as any problem. Of a data set: its first example at
    the top level with the trained weights, then its examples and held-out ones as they were
    given, without weights (`qkvcalc train` goes on with it; `explain` shows the first)."""
    p = training.problem
    doc = input_json(p, opts)  # with its attend or target
    said = {"done": training.done, "lr": number(training.lr)}
    name = _name(training.start)
    if name:
        doc["description"] = _t(opts, "train.trained_description", name=name, **said)
    else:
        doc["description"] = _t(opts, "train.trained_description_unnamed", **said)
    if training.examples:
        doc["examples"] = [_example_json(e, opts) for e in training.examples]
        if training.heldout:
            doc["heldout"] = [_example_json(h.problem, opts) for h in training.heldout]
    return doc


def _example_json(p: Problem, opts: RenderOptions) -> dict[str, Any]:
    """An example in the input format, without the shared weights and metadata."""
    from qkvcalc.input.dataset import SHARED
    from qkvcalc.input.fields import META

    return {k: v for k, v in input_json(p, opts).items() if k not in SHARED and k not in META}


def _weights_json(a: np.ndarray) -> list[Any]:
    """Attention weights as the JSON says them: n×m for one head, H×n×m for several."""
    return matrix_json(a[0]) if a.shape[0] == 1 else [matrix_json(h) for h in a]


def train_json(training: Training, opts: RenderOptions) -> dict[str, Any]:
    out: dict[str, Any] = {
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
        "notes": run_notes(training, opts),
    }
    if training.heldout:
        out["heldout"] = [
            {
                "tokens": list(h.problem.source_tokens),
                "loss_before": h.loss_before,
                "loss_after": h.loss_after,
                "before": {"weights": _weights_json(h.before)},
                "after": {"weights": _weights_json(h.after)},
            }
            for h in training.heldout
        ]
    if training.unscaled is not None:
        out["unscaled"] = {
            "losses": training.unscaled.losses,
            "problem": trained_json(training.unscaled, opts),
        }
    return out


def render_train_json(training: Training, opts: RenderOptions) -> str:
    return dumps(train_json(training, opts), indent=1) + "\n"


def render_trained(training: Training, opts: RenderOptions) -> str:
    """--output without --format json: the trained problem alone."""
    return dumps(trained_json(training, opts), indent=1) + "\n"


# ---- the loss curve as SVG, and the page ------------------------------------------------------


def loss_svg(training: Training, opts: RenderOptions, width: int = 480, height: int = 200) -> str:
    """A small line plot of L against the step, every label escaped; with --compare-scale the
    run with scale 1 too, dashed, on the same axes, and a legend."""
    losses = training.losses
    other = training.unscaled.losses if training.unscaled is not None else []
    left, right, top, bottom = 64, 16, 24, 36
    low, high = min(losses + other), max(losses + other)
    span = high - low or 1.0
    last = max(1, len(losses) - 1, len(other) - 1)

    def points(values: list[float]) -> str:
        return " ".join(
            f"{left + (width - left - right) * k / last:.1f},"
            f"{top + (height - top - bottom) * (high - v) / span:.1f}"
            for k, v in enumerate(values)
        )

    title = escape(_t(opts, "train.plot_title"))
    x_label = escape(_t(opts, "train.col_step"))
    curves = f'<polyline fill="none" stroke="#1e5ac8" stroke-width="2" points="{points(losses)}"/>'
    if other:
        scaled = escape(_t(opts, "train.spark_scaled", scale=f"{training.start.scale:.4g}"))
        unscaled = escape(_t(opts, "train.spark_unscaled"))
        curves += (
            f'<polyline fill="none" stroke="#c8501e" stroke-width="2" stroke-dasharray="6 4" '
            f'points="{points(other)}"/>'
            f'<text x="{width - right}" y="{top + 4}" text-anchor="end" font-size="11" '
            f'font-family="sans-serif" fill="#1e5ac8">{scaled.rstrip(":")}</text>'
            f'<text x="{width - right}" y="{top + 18}" text-anchor="end" font-size="11" '
            f'font-family="sans-serif" fill="#c8501e">{unscaled.rstrip(":")}</text>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect width="{width}" height="{height}" fill="white"/>'
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" '
        'stroke="#555"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="#555"/>'
        f"{curves}"
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" font-size="11" '
        f'font-family="sans-serif">{escape(fmt(high, opts.precision))}</text>'
        f'<text x="{left - 6}" y="{height - bottom + 4}" text-anchor="end" font-size="11" '
        f'font-family="sans-serif">{escape(fmt(low, opts.precision))}</text>'
        f'<text x="{left}" y="{height - bottom + 16}" font-size="11" '
        'font-family="sans-serif">0</text>'
        f'<text x="{width - right}" y="{height - bottom + 16}" text-anchor="end" font-size="11" '
        f'font-family="sans-serif">{last}</text>'
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
