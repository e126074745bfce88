"""The package as users get it: a wheel that carries the presets, light imports, clean layers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (found,) = out.glob("qkvcalc-*.whl")
    return found


def test_wheel_carries_every_preset(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for preset in (ROOT / "presets").glob("*.json"):
        assert f"qkvcalc/presets/{preset.name}" in names


def test_installed_wheel_finds_its_presets_away_from_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "100", "NO_COLOR": "1"}
    code = (
        "import qkvcalc, qkvcalc.input.presets as p; "
        f"assert qkvcalc.__file__.startswith({str(site)!r}), qkvcalc.__file__; "
        "print(p.preset_dir()); print(p.names())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert str(site) in result.stdout and "'doc'" in result.stdout
    run = subprocess.run(
        [sys.executable, "-m", "qkvcalc", "explain", "--preset", "doc"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and "q₁·k₁ = 1×1 + 2×3 = 7" in run.stdout


def test_engine_imports_neither_rich_nor_typer():
    code = (
        "import sys, qkvcalc.run.engine, qkvcalc.input.problem, qkvcalc.input.parse\n"
        "import qkvcalc.input.sources, qkvcalc.plan, qkvcalc.run.exact\n"
        "bad = [m for m in ('rich', 'typer') if m in sys.modules]\nassert not bad, bad\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr


def _imports(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_each_layer_imports_only_what_it_may():
    """What ruff's per-file ignores cannot say (they switch the whole banned-api rule off for a
    file): click is never imported, typer only by the CLI, rich only by the renderers, the CLI,
    the step mode, the studio and the quiz's terminal side."""
    package = ROOT / "qkvcalc"
    cli = {p.relative_to(package).as_posix() for p in (package / "cli").glob("*.py")}
    terminal_side = {"quiz/session.py", "quiz/report.py", "quiz/new.py"}
    for path in package.rglob("*.py"):
        name = path.relative_to(package).as_posix()
        roots = {module.split(".")[0] for module in _imports(path)}
        assert not any(m == "click" or m.startswith("typer._click") for m in _imports(path)), name
        if "typer" in roots:
            assert name in cli, f"{name} imports typer"
        if "rich" in roots:
            allowed = name in cli | terminal_side or name.startswith(
                ("render/", "interactive/", "studio/")
            )
            assert allowed, f"{name} imports rich"


@pytest.mark.skipif(
    shutil.which("ruff") is None and not (Path(sys.executable).parent / "ruff").exists(),
    reason="ruff is not installed (pip install -e '.[test]')",
)
def test_ruff_lint_and_banned_imports_hold():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    formatted = subprocess.run(
        [ruff, "format", "--check", "qkvcalc", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    result = subprocess.run(
        [ruff, "check", "qkvcalc", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_command_is_documented_in_the_readme():
    """sqlite-utils' habit: a command nobody can find in the README might as well not exist."""
    from typer.main import get_command

    from qkvcalc.cli import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    group = get_command(app)
    for name in group.commands:  # type: ignore[attr-defined]
        assert f"qkvcalc {name}" in readme, f"`qkvcalc {name}` is not in README.md"


def readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run the tests", 1)[1]
    block = section.split("```bash\n", 1)[1].split("\n```", 1)[0]
    return "\n".join(line for line in block.splitlines() if not line.startswith("#")).strip()


def test_ci_runs_the_readme_test_command_then_mypy():
    """CI (.ci/run) runs exactly the README's test command, in parallel (pytest-xdist, from
    the test extra), and then mypy on the whole package ([tool.mypy] in pyproject.toml): mypy
    takes 40-70 s, so it runs beside pytest in CI rather than inside it."""
    command = readme_test_command()
    assert "-m pytest -n auto" in command and "'.[test]'" in command
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in lines
    after = lines[lines.index(command) + 1 :]
    assert ".venv/bin/python -m mypy" in after
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    test_extra = pyproject.split("\ntest = [", 1)[1].split("]", 1)[0]
    assert '"pytest-xdist' in test_extra and '"mypy' in test_extra
