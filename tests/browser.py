"""A headless chromium driven by Selenium, for the interactive page's tests (tests/test_page.py)
and the README's screenshot of the page (docs/page.png, made by the same code).

`missing()` says why a browser cannot be had here (None when it can); `browser(js=…)` starts
one session; `show(driver, path, width, height)` opens a page at that viewport size and waits
until its script says it is ready (or, without JavaScript, until it has loaded).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    if CHROMIUM is None:
        return "chromium is not installed (Debian: chromium)"
    if CHROMEDRIVER is None:
        return "chromedriver is not installed (Debian: chromium-driver)"
    return None


def browser(js: bool = True) -> Any:
    """A headless chromium session (JavaScript off when `js` is False) that keeps its console."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM or ""
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,720",
        "--hide-scrollbars",
    ):
        options.add_argument(arg)
    if not js:
        options.add_experimental_option(
            "prefs", {"profile.managed_default_content_settings.javascript": 2}
        )
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER or ""), options=options)


def viewport(driver: Any, width: int, height: int) -> None:
    """The page's viewport exactly width × height CSS pixels (what a screenshot shows)."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )


def show(
    driver: Any,
    page: Path,
    width: int = 1280,
    height: int = 720,
    fragment: str = "",
    ready: bool = True,
) -> float:
    """Open `page` at this viewport; the seconds until its script said it was ready (`ready`:
    the page's data-qkv-ready) or, for a page or a browser without scripts, until it loaded."""
    viewport(driver, width, height)
    driver.get("about:blank")
    start = time.perf_counter()
    driver.get(page.resolve().as_uri() + fragment)  # returns once the page has loaded
    deadline = start + 30
    while ready and time.perf_counter() < deadline:
        if driver.execute_script("return document.documentElement.dataset.qkvReady") == "1":
            break
        time.sleep(0.01)
    return time.perf_counter() - start


def screenshot(driver: Any, target: Path) -> tuple[int, int]:
    """The viewport as a PNG at `target`; its size in pixels, read from the file."""
    target.write_bytes(driver.get_screenshot_as_png())
    head = target.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
