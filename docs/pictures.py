"""Every picture in docs/, made by qkvcalc's own SVG export: `python docs/pictures.py`.

It rewrites docs/doc.svg, docs/decode-step.svg and docs/tiles-block.svg from today's program;
`python docs/pictures.py FOLDER` writes them into FOLDER instead. tests/test_docs.py compares
what it makes with the files here, and checks that no other picture is in docs/ but
docs/page.png, the interactive page's screenshot, which the browser tests make with their own
code (`QKVCALC_REGEN_GOLDEN=1 python -m pytest tests/test_page.py -k readme`).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import qkvcalc
from qkvcalc.input import presets


def part(trace, keep) -> qkvcalc.Trace:
    """The trace with only the stages `keep` accepts (a picture of part of a run)."""
    return dataclasses.replace(trace, stages=tuple(s for s in trace.stages if keep(s)))


def pictures() -> dict[str, str]:
    """File name in docs/ -> its SVG text."""
    decode = qkvcalc.explain(**presets.load("decode"))
    tiles = qkvcalc.explain(**presets.load("tiles"))
    return {
        # the whole run of `qkvcalc explain --preset doc --output docs/doc.svg`
        "doc.svg": qkvcalc.render(qkvcalc.explain(**presets.load("doc")), "svg"),
        # decode step 2 (Q, K_cache, V_cache, scores, mask, softmax, output) and the final output
        "decode-step.svg": qkvcalc.render(
            part(decode, lambda s: s.step == 2 or (s.id == "output" and s.step is None)), "svg"
        ),
        # block 2 of the tiles (scores, max, running max, correction, exp, sum, acc) and output
        "tiles-block.svg": qkvcalc.render(
            part(tiles, lambda s: s.block == 2 or s.id == "output"), "svg"
        ),
    }


def main(folder: Path) -> None:
    for name, text in pictures().items():
        (folder / name).write_text(text, encoding="utf-8")
        print(f"wrote {folder / name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
