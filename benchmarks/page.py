"""The interactive page of a GPT-2-small layer: its size, and how soon chromium has it ready,
as a ratio to loading the same document without its script (the static export).

    .venv/bin/python benchmarks/page.py             # 5 loads of each (medians are shown)
    .venv/bin/python benchmarks/page.py --runs 9

The layer is benchmarks/bench.py's: n = 1024 tokens, d_model = 768, 12 heads, W_O, causal,
random numbers, rendered with `--detail brief` (what `qkvcalc explain layer.json --detail brief
--output page.html` writes). Each load opens the file in one headless chromium session (Selenium,
tests/browser.py, the browser tests' own code) from about:blank: the static page's time is until
it has loaded, the interactive page's until its script has marked it ready (every cell's handlers,
the keyboard, the pictures of the weights drawn). Loads alternate, so a busy machine slows both.

Targets (the exit status is 1 when one is missed): the page under 5 MB, ready within 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MAX_BYTES = 5 * 1024 * 1024
MAX_READY = 2.0


def gpt2_layer_pages(folder: Path) -> tuple[Path, Path, float]:
    """The interactive and the static page of the layer, and the seconds the page took to write."""
    import numpy as np

    import qkvcalc
    from qkvcalc.render import RenderOptions
    from qkvcalc.render.html import render_html

    rng = np.random.default_rng(2019)
    n, d = 1024, 768
    x = rng.standard_normal((n, d)).astype(np.float32)
    wq, wk, wv, wo = ((rng.standard_normal((d, d)) * 0.02).astype(np.float32) for _ in range(4))
    trace = qkvcalc.explain(x, wq, wk, wv, wo=wo, heads=12, mask="causal")
    opts = RenderOptions(detail="brief")
    start = time.perf_counter()
    page = render_html(trace, opts)
    took = time.perf_counter() - start
    static = render_html(trace, opts, interactive=False)
    paths = folder / "gpt2-page.html", folder / "gpt2-static.html"
    paths[0].write_text(page, encoding="utf-8")
    paths[1].write_text(static, encoding="utf-8")
    return paths[0], paths[1], took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="loads of each page (default 5)")
    args = parser.parse_args()
    from tests import browser

    reason = browser.missing()
    if reason is not None:
        print(f"cannot measure: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="qkvcalc-page-") as tmp:
        print("writing the pages of a GPT-2-small layer …", file=sys.stderr)
        page, static, took = gpt2_layer_pages(Path(tmp))
        sizes = page.stat().st_size, static.stat().st_size
        driver = browser.browser(js=True)
        try:
            browser.show(driver, page)  # warm-up: the file cache and the browser's
            browser.show(driver, static, ready=False)
            ready, loaded, ratios = [], [], []
            for r in range(args.runs):
                print(f"round {r + 1}/{args.runs} …", file=sys.stderr)
                loaded.append(browser.show(driver, static, ready=False))
                ready.append(browser.show(driver, page))
                ratios.append(ready[-1] / loaded[-1])
        finally:
            driver.quit()
    size_ok, ready_ok = sizes[0] < MAX_BYTES, statistics.median(ready) < MAX_READY
    print(f"medians of {args.runs} loads in headless chromium\n")
    print(f"{'case':34} {'MB':>6} {'load s':>7} {'× static':>8}  target")
    print(f"{'static page (no script)':34} {sizes[1] / 1e6:6.2f} {statistics.median(loaded):7.3f}")
    verdict = "ok" if size_ok and ready_ok else "MISSED"
    print(
        f"{'interactive page, until ready':34} {sizes[0] / 1e6:6.2f} "
        f"{statistics.median(ready):7.3f} {statistics.median(ratios):8.2f}  "
        f"< 5 MB, ready < {MAX_READY} s: {verdict}"
    )
    print(f"\n(writing the interactive page took {took:.2f} s in Python)")
    return 0 if size_ok and ready_ok else 1


if __name__ == "__main__":
    sys.exit(main())
