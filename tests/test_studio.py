"""qkvcalc studio: the app driven with Textual's Pilot (its widget ids: in-KEY-I-J, stage-ID,
stage-ID-hH, arith, why, error), checked against qkvcalc.explain of the problem as edited; the
command on a real pseudo-terminal (pexpect); --serve answering a browser.

Each Pilot test runs its own event loop (asyncio.run): no pytest plug-in is needed."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import html
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Static

import qkvcalc
from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import translate
from qkvcalc.input import presets
from qkvcalc.render.text import fmt
from qkvcalc.studio import Studio
from tests.conftest import ROOT, spawn_qkvcalc

SIZE = (160, 50)


def drive(app: Studio, script: Callable[[Any], Awaitable[None]]) -> None:
    """Run `app` headless at SIZE and play `script(pilot)` on it."""

    async def main() -> None:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await script(pilot)

    asyncio.run(main())


def cells(app: Studio, wid: str) -> list[list[str]]:
    table = app.query_one(f"#{wid}", DataTable)
    return [
        [str(table.get_cell_at((r, c))) for c in range(len(table.columns))]
        for r in range(table.row_count)
    ]


def text(app: Studio, wid: str) -> str:
    return str(app.query_one(f"#{wid}", Static).render())


def shown(matrix: np.ndarray) -> list[list[str]]:
    """A matrix as the terminal writes its numbers (4 decimals)."""
    return [[fmt(float(v), 4) for v in row] for row in np.atleast_2d(matrix)]


def plain(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k not in ("name", "description", "reference")}


async def type_into(pilot: Any, wid: str, value: str) -> None:
    box = pilot.app.query_one(f"#{wid}")
    box.focus()
    await pilot.pause()
    box.value = value
    await pilot.press("enter")
    await pilot.pause()


def test_an_edit_of_x11_gives_the_output_of_the_edited_problem():
    doc = presets.load("doc")
    app = Studio(doc)
    before = shown(qkvcalc.explain(**plain(doc)).output)
    edited = copy.deepcopy(plain(doc))
    edited["x"] = [[4, 2]]
    after = shown(qkvcalc.explain(**edited).output)
    assert before != after

    async def script(pilot: Any) -> None:
        assert cells(app, "stage-output") == before
        await type_into(pilot, "in-x-1-1", "4")
        assert cells(app, "stage-output") == after
        # the cell that changed is marked with its old value
        assert f"{before[0][0]} → {after[0][0]}" in text(app, "stage-output-was")
        assert text(app, "error") == ""

    drive(app, script)


def test_every_stage_table_holds_the_numbers_of_the_trace():
    doc = presets.load("sentence")
    trace = qkvcalc.explain(**plain(doc))

    async def script(pilot: Any) -> None:
        for stage in trace.stages:
            if not stage.in_words:
                assert cells(pilot.app, f"stage-{stage.id}") == shown(stage.value), stage.id

    drive(Studio(doc), script)


def test_a_bad_entry_keeps_the_numbers_and_shows_the_clis_message():
    doc = presets.load("sentence")
    bad = copy.deepcopy(plain(doc))
    bad["x"][0][1] = "abc"
    with pytest.raises(QkvcalcError) as caught:
        qkvcalc.explain(**bad)
    message = f"{translate('cli.error_prefix', 'en')}: {caught.value.message('en')}"
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        before = cells(app, "stage-output")
        await type_into(pilot, "in-x-1-2", "abc")
        assert text(app, "error") == message
        assert cells(app, "stage-output") == before
        assert app.query_one("#in-x-1-2").value == "abc"  # nothing typed is lost
        # another cell can still be edited, and computes from the last good numbers
        await type_into(pilot, "in-wv-1-1", "7")
        good = copy.deepcopy(plain(doc))
        good["wv"][0][0] = 7
        assert cells(app, "stage-output") == shown(qkvcalc.explain(**good).output)
        assert text(app, "error") == ""

    drive(app, script)


def test_a_ragged_or_misfitting_entry_is_refused_with_the_shapes():
    doc = presets.load("sentence")
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        before = cells(app, "stage-output")
        await type_into(pilot, "opt-heads", "5")
        assert "heads = 5" in text(app, "error")
        assert cells(app, "stage-output") == before

    drive(app, script)


def test_the_focused_score_cells_arithmetic_holds_its_operands():
    doc = presets.load("sentence")
    trace = qkvcalc.explain(**plain(doc))
    q = next(s for s in trace.stages if s.id == "q").value
    k = next(s for s in trace.stages if s.id == "k").value
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        table = app.query_one("#stage-scores", DataTable)
        table.focus()
        await pilot.pause()
        table.move_cursor(row=1, column=2)
        await pilot.pause()
        arith = text(app, "arith")
        assert arith.startswith("q₂·k₃")
        pairs = re.findall(r"\(?(-?[\d.]+)\)?×\(?(-?[\d.]+)\)?", arith)
        found = [float(v) for pair in pairs for v in pair]
        operands = [float(v) for pair in zip(q[1], k[2], strict=True) for v in pair]
        assert found == pytest.approx(operands, abs=5e-5)
        assert text(app, "why") == translate("stage.scores.why", "en")

    drive(app, script)


def test_a_multi_head_problem_shows_each_heads_stages():
    doc = presets.load("multihead")
    trace = qkvcalc.explain(**plain(doc))

    async def script(pilot: Any) -> None:
        for stage in trace.stages:
            if stage.id == "weights":
                wid = f"stage-weights-h{stage.head}"
                assert cells(pilot.app, wid) == shown(stage.value)
        assert {s.head for s in trace.stages if s.id == "weights"} == {1, 2}

    drive(Studio(doc), script)


def test_changing_heads_rebuilds_the_stages():
    doc = presets.load("sentence")
    edited = {**plain(doc), "heads": 2}
    trace = qkvcalc.explain(**edited)

    async def script(pilot: Any) -> None:
        assert not pilot.app.query("#stage-weights-h2")
        await type_into(pilot, "opt-heads", "2")
        weights = [s for s in trace.stages if s.id == "weights"]
        for stage in weights:
            assert cells(pilot.app, f"stage-weights-h{stage.head}") == shown(stage.value)
        assert cells(pilot.app, "stage-output") == shown(trace.output)

    drive(Studio(doc), script)


def test_korean_shows_korean():
    doc = presets.load("doc")
    app = Studio(doc, lang="ko")

    async def script(pilot: Any) -> None:
        assert text(app, "why") == translate("stage.x.why", "ko")
        assert "단계 1/" in text(app, "status")
        title = str(app.query_one("#stage-output-box").query_one(".stage-title").render())
        assert translate("stage.output.title", "ko") in title
        await type_into(pilot, "in-x-1-1", "abc")
        assert text(app, "error").startswith(translate("cli.error_prefix", "ko") + ": ")

    drive(app, script)


def test_the_screen_shows_the_problem_and_the_stages():
    """A snapshot of the screen's text (the SVG screenshot's): titles, boxes and numbers."""
    doc = presets.load("doc")
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        svg = app.export_screenshot()
        screen = html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
        for key in ("studio.inputs", "studio.options", "stage.x.title", "stage.q.title"):
            assert translate(key, "en").split(":")[0] in screen, key
        assert "X  1×2" in screen and "W_Q  2×2" in screen
        assert "stage 1 of 10" in screen
        # the tables' rows are drawn, not only their headers: 7/√2, the scaled score
        scaled = shown(qkvcalc.explain(**plain(doc)).stages[6].value)[0][0]
        assert scaled == "4.9497" and scaled in screen

    drive(app, script)


def test_every_table_is_as_tall_as_its_rows_at_a_projectors_size():
    """At 120×36 (a 1280×720 page's terminal), eleven stages of three rows: each table holds
    its header and every row (the stages scroll), none squeezed to its header."""
    app = Studio(presets.load("sentence"))

    async def script(pilot: Any) -> None:
        for table in app.query(DataTable):
            assert table.size.height == table.row_count + 1, table.id
            box = app.query_one(f"#{table.id}-box")  # the title (after a blank line) above it
            assert box.size.height >= table.size.height + 2, table.id

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            await script(pilot)

    asyncio.run(main())


def test_at_1280x720_a_stage_and_its_arithmetic_are_on_screen_together():
    """A 1280×720 browser page holds about 133×37 cells: the stage stepped to, and the cell
    chosen in it, are shown whole beside the arithmetic and the why, with no scrolling."""
    doc = presets.load("sentence")
    app = Studio(doc)

    def inside(inner: Any, outer: Any) -> bool:
        return inner.region.area > 0 and outer.region.intersection(inner.region) == inner.region

    async def script(pilot: Any) -> None:
        stages = app.query_one("#stages")
        await pilot.press("escape", *["space"] * 9)  # to stage 10: the weights
        await pilot.pause()
        weights = app.query_one("#stage-weights", DataTable)
        assert inside(weights, stages)
        weights.focus()
        await pilot.pause()
        assert inside(weights, stages)
        from qkvcalc.render.arith import Style, cell_work

        stage = next(s for s in qkvcalc.explain(**plain(doc)).stages if s.id == "weights")
        assert text(app, "arith") == cell_work(stage, 0, 0, Style())  # what the writers print
        for wid in ("arith", "why"):
            assert inside(app.query_one(f"#{wid}"), app.screen), wid

    async def main() -> None:
        async with app.run_test(size=(133, 37)) as pilot:
            await pilot.pause()
            await script(pilot)

    asyncio.run(main())


@pytest.mark.parametrize("size", [(160, 45), (133, 37)])
@pytest.mark.parametrize("name", ["doc", "multihead"])
def test_every_stage_and_its_arithmetic_fit_a_projectors_screen(name: str, size: tuple[int, int]):
    """At a 1280×720 projector's terminal (160×45 cells at 8×16 px; 133×37 in the browser of
    --serve), every stage stepped to, its table focused: the whole table is on screen in the
    stages' pane, and the chosen cell's arithmetic and the stage's why are whole in the panel
    under it, with no scrolling (the why is shown, not a click away: it fits)."""
    app = Studio(presets.load(name))

    def inside(inner: Any, outer: Any) -> bool:
        return inner.region.area > 0 and outer.region.intersection(inner.region) == inner.region

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("escape")
            stages, panel = app.query_one("#stages"), app.query_one("#panel")
            for k, table in enumerate(app.session.tables):
                app.action_step_to(k)
                await pilot.pause()
                shown = app.query_one(f"#{table.wid}")
                if isinstance(shown, DataTable):
                    shown.focus()
                    await pilot.pause()
                    want = app.session.arithmetic(table, 0, 0)
                    for _ in range(40):  # a busy machine shows the focused cell a frame later
                        if text(app, "arith") == want:
                            break
                        await pilot.pause(0.05)
                    assert text(app, "arith") == want
                for _ in range(40):  # a busy machine lays the scroll out a frame or two later
                    if inside(shown, stages):
                        break
                    await pilot.pause(0.05)
                assert inside(shown, stages), (k + 1, table.wid)
                for wid in ("arith", "why"):
                    assert inside(app.query_one(f"#{wid}"), panel), (k + 1, table.wid, wid)
                assert text(app, "why") == app.session.why(table)
                assert panel.scroll_offset.y == 0
                app.set_focus(None)
                await pilot.pause()

    asyncio.run(main())


def test_undo_puts_the_last_good_problem_back():
    doc = presets.load("sentence")
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        before = cells(app, "stage-output")
        await type_into(pilot, "in-wq-2-1", "3")
        assert cells(app, "stage-output") != before
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert cells(app, "stage-output") == before
        assert app.query_one("#in-wq-2-1").value == str(plain(doc)["wq"][1][0])
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert text(app, "error") == translate("studio.nothing_to_undo", "en")

    drive(app, script)


def test_s_saves_the_edited_problem_through_the_safe_writer(tmp_path: Path):
    doc = presets.load("doc")
    target = tmp_path / "mine.json"
    app = Studio(doc, save_to=target)

    async def script(pilot: Any) -> None:
        await type_into(pilot, "in-x-1-2", "1/2")
        await pilot.press("escape", "s")
        await pilot.pause()

    drive(app, script)
    saved = json.loads(target.read_text(encoding="utf-8"))
    assert saved["x"] == [[1, "1/2"]]
    assert saved.get("edited_from") == "doc" and "name" not in saved  # no longer the preset
    trace = qkvcalc.explain(**{k: v for k, v in saved.items() if k != "edited_from"})
    assert shown(trace.output) == shown(qkvcalc.explain(**{**plain(doc), "x": [[1, 0.5]]}).output)
    assert not [p for p in tmp_path.iterdir() if p.name != "mine.json"]  # no temporary left


def test_a_file_that_cannot_be_saved_is_a_message_and_the_studio_goes_on(tmp_path: Path):
    app = Studio(presets.load("doc"), save_to=tmp_path)  # a folder: no file can be written there

    async def script(pilot: Any) -> None:
        await pilot.press("escape", "s")
        await pilot.pause()
        assert text(app, "error").startswith("error: ")
        assert str(tmp_path) in text(app, "error")
        assert app.is_running

    drive(app, script)


def test_token_names_are_shown_as_text_never_as_markup():
    doc = {**plain(presets.load("sentence")), "tokens": ["[b]I[/b]", "[red]love", "cats"]}
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        svg = app.export_screenshot()
        screen = html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
        assert "[b]I[/b]" in screen and "[red]love" in screen

    drive(app, script)


def test_arrays_from_an_npz_file_are_edited_as_numbers(tmp_path: Path):
    doc = plain(presets.load("sentence"))
    arrays = {k: np.asarray(v, dtype=float) for k, v in doc.items() if k in ("x", "wq", "wk", "wv")}
    app = Studio({**doc, **arrays})

    async def script(pilot: Any) -> None:
        assert app.query_one("#in-x-1-1").value == str(doc["x"][0][0])
        await type_into(pilot, "in-x-1-1", "2")
        edited = copy.deepcopy(doc)
        edited["x"][0][0] = 2
        assert cells(app, "stage-output") == shown(qkvcalc.explain(**edited).output)

    drive(app, script)


def test_q_is_typed_in_a_box_and_quits_outside_one():
    app = Studio(presets.load("doc"))

    async def script(pilot: Any) -> None:
        box = app.query_one("#in-x-1-1")
        box.focus()
        await pilot.pause()
        await pilot.press("end", "q")
        await pilot.pause()
        assert box.value == "1q" and app.is_running
        await pilot.press("escape", "q")
        await pilot.pause()

    drive(app, script)
    assert not app.is_running


def test_the_step_keys_move_through_the_stages():
    doc = presets.load("multihead")
    trace = qkvcalc.explain(**plain(doc))
    app = Studio(doc)
    total = len(trace.stages)

    async def script(pilot: Any) -> None:
        await pilot.press("escape", "space", "space")
        await pilot.pause()
        assert text(app, "status").startswith(f"stage 3 of {total}")
        assert text(app, "why") == translate(trace.stages[2].why.key, "en")
        await pilot.press("n")  # the first stage of head 2
        await pilot.pause()
        first_h2 = next(n for n, s in enumerate(trace.stages, 1) if s.head == 2)
        assert text(app, "status").startswith(f"stage {first_h2} of {total}")
        await pilot.press("end")
        await pilot.pause()
        assert text(app, "status").startswith(f"stage {total} of {total}")
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.query_one("#help").has_class("shown")

    drive(app, script)


def test_a_large_matrix_brings_its_next_rows_on_screen():
    """16 tokens: the first rows have boxes at start, and ↓ past them brings the next ones."""
    rng = np.random.default_rng(0)
    doc = {
        "x": rng.integers(-3, 4, (16, 8)).tolist(),
        **{k: rng.integers(-2, 3, (8, 4)).tolist() for k in ("wq", "wk", "wv")},
    }
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        assert app.query("#in-x-1-1") and not app.query("#in-x-9-1")
        app.query_one("#in-x-8-1").focus()
        await pilot.pause()
        await pilot.press("down")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "in-x-9-1"
        await type_into(pilot, "in-x-9-1", "10")
        edited = copy.deepcopy(doc)
        edited["x"][8][0] = 10
        assert cells(app, "stage-output") == shown(qkvcalc.explain(**edited).output)

    drive(app, script)


def test_a_wide_stage_shows_its_first_and_last_columns_as_the_terminal_does():
    rng = np.random.default_rng(1)
    doc = {"x": rng.integers(-3, 4, (3, 20)).tolist()}
    doc |= {k: rng.integers(-2, 3, (20, 2)).tolist() for k in ("wq", "wk", "wv")}
    app = Studio(doc)

    async def script(pilot: Any) -> None:
        table = app.query_one("#stage-x", DataTable)
        labels = [str(column.label) for column in table.columns.values()]
        middle = labels.index("…")
        assert 0 < middle < len(labels) - 1 < 20
        x = np.array(doc["x"])
        kept = list(range(middle)) + list(range(20 - (len(labels) - middle - 1), 20))
        rows = cells(app, "stage-x")
        assert [[r[c] for c in range(len(r)) if c != middle] for r in rows] == shown(x[:, kept])
        assert all(r[middle] == "…" for r in rows)

    drive(app, script)


# ---- the command -------------------------------------------------------------------------------


def test_the_command_in_a_real_terminal_shows_the_doc_numbers_and_quits():
    child = spawn_qkvcalc("studio", "--preset", "doc")
    output = shown(qkvcalc.explain(**plain(presets.load("doc"))).output)[0]

    def read_until(wanted: str) -> str:
        seen = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and wanted not in seen:
            try:
                seen += child.read_nonblocking(65536, timeout=1)
            except Exception:  # pexpect.TIMEOUT: nothing new yet
                continue
        assert wanted in seen, seen[-2000:]
        return seen

    first = read_until("stage 1 of 10")
    assert "4.9497" in first  # 7/√2, the scaled score: a number no box holds, only a table
    child.send("\x1b")  # Esc: out of the boxes, and the step keys move through the stages
    time.sleep(0.5)
    child.send("\x1b[F")  # End: the last stage, the output
    read_until("stage 10 of 10")
    last = read_until(translate("stage.output.title", "en"))  # scrolled to, with its numbers
    assert all(number in last for number in output)
    child.sendcontrol("q")
    child.expect(pexpect_eof())
    child.close()
    assert child.exitstatus == 0


def test_with_stdin_and_stderr_elsewhere_the_studio_still_uses_the_terminal(tmp_path: Path):
    """`echo | qkvcalc studio --preset doc 2> log`: the keys still come from the terminal and
    the screen is drawn there (as --step reads its keys from /dev/tty), not into the pipe and
    the log; Ctrl+Q quits. Before, it drew into the log and never saw a key."""
    log = tmp_path / "log"
    command = f"echo | {shlex.quote(sys.executable)} -m qkvcalc studio --preset doc 2> {log}"
    child = spawn_qkvcalc(shell=command)
    child.expect_exact("stage 1 of 10", timeout=60)
    time.sleep(0.5)
    child.sendcontrol("q")
    child.expect(pexpect_eof(), timeout=30)
    child.close()
    assert child.exitstatus == 0
    assert log.read_text() == ""


def test_no_terminal_at_all_is_one_message_not_a_hang():
    """No terminal (a new session, standard input /dev/null): exit 2 and the message, at once;
    it used to draw into standard error and wait for keys for ever."""
    result = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "studio", "--preset", "doc"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "QKVCALC_LANG": "en"},
        timeout=60,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: " + translate("studio.no_terminal", "en")


def pexpect_eof() -> Any:
    import pexpect

    return pexpect.EOF


def _studio(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qkvcalc", "studio", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "QKVCALC_LANG": "en"},
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_command_refuses_standard_input_with_a_message():
    result = _studio("-")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: " + translate("studio.stdin", "en")


def test_a_problem_that_does_not_compute_is_refused_before_the_screen(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**plain(presets.load("sentence")), "heads": 5}))
    with pytest.raises(QkvcalcError) as caught:
        qkvcalc.explain(**json.loads(bad.read_text()))
    result = _studio(str(bad))
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: " + caught.value.message("en")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_serve_answers_a_browser_on_127_0_0_1():
    pytest.importorskip("textual_serve")
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "qkvcalc",
            "studio",
            "--preset",
            "doc",
            "--serve",
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        first = server.stdout.readline() if server.stdout else ""
        assert f"http://127.0.0.1:{port}" in first
        page = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    page = answer.read().decode("utf-8")
                break
            except OSError:
                time.sleep(0.2)
        assert "qkvcalc studio" in page
        _browser_sees_the_app(server.pid, port)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _children(pid: int) -> list[str]:
    """The command lines of process `pid`'s children (Linux's /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                found.append(
                    Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                )
    return found


def _browser_sees_the_app(server: int, port: int) -> None:
    """Chromium opens the page, its terminal connects, and the server starts the studio on the
    same problem for it (the page draws the app on a canvas: its text is not in the page)."""
    from tests.browser import browser, missing

    if missing() is not None:
        pytest.skip(missing())
    assert not [c for c in _children(server) if " studio " in c]  # none before a browser asks
    driver = browser()
    try:
        driver.get(f"http://127.0.0.1:{port}/")
        assert "qkvcalc studio" in driver.page_source
        deadline = time.monotonic() + 60
        started: list[str] = []
        while time.monotonic() < deadline and not started:
            time.sleep(0.5)
            started = [c for c in _children(server) if " studio " in c and "--preset doc" in c]
        assert started, _children(server)
        time.sleep(3)  # the app is up and stays up: the page shows no 'Session ended'
        ended = driver.execute_script(
            "return getComputedStyle(document.querySelector('.closed-dialog')).display"
        )
        assert ended == "none"
        assert [c for c in _children(server) if " studio " in c]
    finally:
        driver.quit()


def test_explain_never_loads_textual():
    """The studio's framework is loaded by the studio alone: explain starts as it did."""
    probe = (
        "import sys; from qkvcalc.launch import main; sys.argv = ['qkvcalc', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('textual', 'qkvcalc.studio')\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(heavy)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "explain", "--preset", "doc"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "Q·Kᵀ" in result.stdout
    assert result.stdout.rstrip().endswith("LOADED []")


STUDIO = (sys.executable, "-m", "qkvcalc", "studio")


@pytest.mark.parametrize(
    ("host", "key"),
    [("localhost", "studio.serving_local"), ("127.0.0.2", "studio.serving_local")],
)
def test_serve_says_who_can_reach_it(host: str, key: str):
    pytest.importorskip("textual_serve")
    port = _free_port()
    server = subprocess.Popen(
        [*STUDIO, "--preset", "doc", "--serve", "--host", host, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "QKVCALC_LANG": "en"},
    )
    try:
        assert server.stdout is not None
        lines = [server.stdout.readline().strip() for _ in range(2)]
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert lines[0] == translate("studio.serving", "en", host=host, port=port)
    assert lines[1] == translate(key, "en", host=host, port=port)


def test_a_named_host_is_announced_as_open_to_whoever_reaches_it():
    from qkvcalc.cli.studio import _loopback

    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("localhost")
    assert not _loopback("0.0.0.0") and not _loopback("192.168.1.20")
    assert not _loopback("classroom.example")


def test_serve_without_textual_serve_is_one_message():
    probe = (
        "import sys\n"
        "sys.modules['textual_serve'] = sys.modules['textual_serve.server'] = None\n"
        "from qkvcalc.launch import main; sys.argv = ['qkvcalc', *sys.argv[1:]]; main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "studio", "--preset", "doc", "--serve"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "QKVCALC_LANG": "en"},
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == "error: " + translate("studio.serve_missing", "en")
