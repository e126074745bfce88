"""What `qkvcalc check` shows: the verdict in words, the first difference, the smallest problem
worked out as `qkvcalc explain` shows it, and the person's numbers beside the right ones at the
stage where they part; or the "qkvcalc.check/1" JSON document.

Returns text; prints nothing. Numbers are formatted here, never computed: the right ones come
from qkvcalc.explain (the worked problem) and the reference pipeline (qkvcalc.check).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qkvcalc.check.grade import pieces
from qkvcalc.check.reference import run
from qkvcalc.check.verdict import Verdict, problem_fields
from qkvcalc.i18n import translate
from qkvcalc.render import RenderOptions, render
from qkvcalc.render.json_doc import dumps, number_json
from qkvcalc.render.text import fmt

SCHEMA = "qkvcalc.check/1"


def message(v: Verdict, function: str, lang: str) -> str:
    """The verdict in one paragraph."""
    t = lambda key, **kw: translate(key, lang, **kw)  # noqa: E731
    if v.verdict == "right" and v.stages_file:
        return t("check.right_stages", function=function)
    if v.verdict == "right":
        return t("check.right", function=function, count=v.problems_tried)
    if v.verdict == "error":
        return t("check.error", function=function, count=len(v.raised), total=v.problems_tried)
    if v.mistake is not None:
        return (
            t("check.wrong_named", function=function, mistake=v.mistake)
            + " "
            + t(f"check.mistake.{v.mistake}")
        )
    return t("check.wrong_unnamed", function=function)


def _first_json(v: Verdict) -> dict[str, Any] | None:
    if v.first is None:
        return None
    f = v.first
    number = lambda x: number_json(x) if isinstance(x, float) else x  # noqa: E731
    return {
        "stage": f.stage,
        "head": f.head,
        "cell": None if f.cell is None else list(f.cell),
        "theirs": number(f.theirs),
        "right": number(f.right),
    }


def check_json(v: Verdict, function: str, lang: str) -> str:
    doc = {
        "schema": SCHEMA,
        "verdict": v.verdict,
        "problems_tried": v.problems_tried,
        "mistake": v.mistake,
        "first": _first_json(v),
        "smallest": None if v.smallest is None else problem_fields(v.smallest),
        "raised": [{"problem": p, "type": kind, "message": text} for p, kind, text in v.raised],
        "message": message(v, function, lang),
    }
    return dumps(doc, indent=1) + "\n"


def _where(v: Verdict, lang: str) -> str:
    f = v.first
    assert f is not None
    head = "" if f.head is None else translate("check.at_head", lang, head=f.head)
    if f.cell is None:
        shape = lambda s: "×".join(str(n) for n in s)  # noqa: E731
        return translate(
            "check.first_shape",
            lang,
            stage=f.stage,
            head=head,
            theirs=shape(f.theirs),
            right=shape(f.right),
        )
    return translate(
        "check.first_cell",
        lang,
        stage=f.stage,
        head=head,
        row=f.cell[0],
        col=f.cell[1],
        theirs=fmt(f.theirs),
        right=fmt(f.right),
    )


def _beside(v: Verdict, lang: str, precision: int) -> list[str]:
    """The stage where they part, the person's numbers beside the right ones, cell by cell."""
    assert v.smallest is not None and v.theirs is not None and v.first is not None
    found = {
        name: (theirs, right) for name, theirs, right in pieces(v.theirs, run(v.smallest.problem))
    }
    name = v.first.stage if v.first.head is None else f"{v.first.stage}@h{v.first.head}"
    theirs, right = found.get(name, found.get(v.first.stage, (None, None)))
    if theirs is None or right is None:
        return []
    if theirs.ndim == 3 and v.first.head is not None:  # (output, weights) of several heads
        theirs, right = theirs[v.first.head - 1], right[v.first.head - 1]
    if theirs.shape != right.shape:
        return []
    lines = [translate("check.beside_title", lang, stage=name)]
    yours, ok = translate("check.yours", lang), translate("check.right_word", lang)
    for i in range(right.shape[0]):
        cells = []
        for j in range(right.shape[1]):
            a, b = fmt(float(theirs[i, j]), precision), fmt(float(right[i, j]), precision)
            same = np.isclose(theirs[i, j], right[i, j], rtol=1e-5, atol=1e-9, equal_nan=True)
            cells.append(b if same else f"{a} ✗ ({ok} {b})")
        lines.append(f"  [{i + 1}] " + "   ".join(cells))
    lines.append(translate("check.beside_legend", lang, yours=yours))
    return lines


def check_text(v: Verdict, function: str, opts: RenderOptions) -> str:
    """The check in words and tables, for a terminal or a text file."""
    lang = opts.lang
    mark = {"right": "✓", "wrong": "✗", "error": "!"}[v.verdict]
    lines = [f"{mark} {message(v, function, lang)}"]
    if v.first is not None:
        lines.append(_where(v, lang))
    for problem, kind, text in v.raised[:5]:
        lines.append(
            translate(
                "check.raised_line",
                lang,
                problem=problem,
                type=kind,
                message=text.splitlines()[0] if text else "",
            )
        )
    if len(v.raised) > 5:
        lines.append(translate("check.raised_more", lang, count=len(v.raised) - 5))
    if v.smallest is not None and v.first is not None:
        import qkvcalc

        lines += ["", translate("check.smallest_title", lang), ""]
        trace = qkvcalc.explain(**v.smallest.problem)
        lines.append(render(trace, "table", opts).rstrip("\n"))
        lines += ["", *_beside(v, lang, opts.precision)]
    return "\n".join(lines) + "\n"
