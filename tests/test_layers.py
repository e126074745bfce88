"""The package's layers, read from its source: no module imports itself back, directly or
through others, with imports inside functions counted (only those under `if TYPE_CHECKING:`,
which never run, are left out), and the layers sit in the folders DESIGN of the package names.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "qkvcalc"


def _module_names() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under `if TYPE_CHECKING:` (imports for annotations only)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def import_graph() -> dict[str, set[str]]:
    """Each qkvcalc module → the qkvcalc modules it imports (at module level or in a function).
    `from qkvcalc.plan import notes` is an import of qkvcalc.plan.notes when that is a module."""
    modules = _module_names()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        skipped = _type_checking_only(tree)
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for target in targets:
                found = known(target)
                if found is None or found == name:
                    continue
                graph[name].add(found)
                # importing a.b.c runs the package a.b's __init__ first (but a module's own
                # packages are already running when it is imported: no edge to them)
                parent = found.rpartition(".")[0]
                while parent and parent in modules and not name.startswith(parent + "."):
                    graph[name].add(parent)
                    parent = parent.rpartition(".")[0]
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_finds_a_cycle_when_there_is_one():
    """The checker itself: a planted circle a → b → c → a is found, a chain is not."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_walk_reads_function_level_and_relative_imports():
    graph = import_graph()
    # qkvcalc/__init__.py imports the engine inside explain(): that edge must be seen
    assert "qkvcalc.run.engine" in graph["qkvcalc"]
    # a Trace prints itself with the terminal writer, imported inside __rich_console__
    assert "qkvcalc.render.terminal" in graph["qkvcalc.trace"]
    # `from qkvcalc.plan import decode, pipeline` names modules, not the package
    assert {"qkvcalc.plan.decode", "qkvcalc.plan.pipeline"} <= graph["qkvcalc.plan.schedule"]
    # importing qkvcalc.plan.specs runs qkvcalc/plan/__init__.py first: an edge to it too
    assert "qkvcalc.plan" in graph["qkvcalc.ops.softcap"]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles (function-level imports counted):\n" + "\n".join(
        " ↔ ".join(c) for c in found
    )


@pytest.mark.parametrize(
    ("layer", "may_not_import"),
    [
        ("qkvcalc.input", ("qkvcalc.plan", "qkvcalc.run", "qkvcalc.render", "qkvcalc.cli")),
        ("qkvcalc.ops", ("qkvcalc.run", "qkvcalc.render", "qkvcalc.cli", "qkvcalc.quiz")),
        ("qkvcalc.plan", ("qkvcalc.render", "qkvcalc.cli", "qkvcalc.quiz")),
        ("qkvcalc.trace", ("qkvcalc.run", "qkvcalc.cli", "qkvcalc.quiz")),
        ("qkvcalc.run", ("qkvcalc.render", "qkvcalc.cli", "qkvcalc.quiz")),
        ("qkvcalc.render", ("qkvcalc.cli",)),
    ],
)
def test_data_flows_one_way(layer: str, may_not_import: tuple[str, ...]):
    """input → ops and plan → run → trace → render → cli: no layer reaches up to a later one
    (the trace reads the op table, never the interpreters that run it)."""
    graph = import_graph()
    for module, targets in graph.items():
        if module == layer or module.startswith(layer + "."):
            bad = sorted(t for t in targets if t.startswith(may_not_import))
            assert not bad, f"{module} imports {bad}"


def test_the_package_root_holds_only_what_every_layer_shares():
    """The layers live in their folders (input/, plan/, run/, render/, cli/ …); the root keeps
    the public entry points and the few modules every layer reads."""
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root == [
        "__init__.py",
        "__main__.py",
        "errors.py",
        "i18n.py",
        "labels.py",
        "launch.py",
        "records.py",
        "select.py",
        "trace.py",
    ]


def _naming(word: str) -> list[str]:
    """The package files outside the feature modules, the catalogs and extract/ that name `word`
    (the core op modules of qkvcalc/ops/ are searched: they know no feature)."""
    from qkvcalc.ops.features import every

    own = {f"ops/{f.read.__module__.rpartition('.')[2]}.py" for f in every()}
    own |= {"ops/__init__.py", "ops/features.py"}  # the package's index and the registry
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in own or rel.startswith(("catalog/", "extract/")):
            continue
        if re.search(rf"\b{word}\b", path.read_text(encoding="utf-8"), re.IGNORECASE):
            found.append(rel)
    return found


def test_a_plug_in_feature_is_named_only_by_the_fields_table():
    """Every feature of the registry is written in its module: outside the feature modules, the
    catalogs and extract/, its name appears in the fields table (its key, and its option) alone,
    and so do the mechanisms the plug-in issue names (RoPE and ALiBi among them). The core op
    modules (qkvcalc/ops/projection.py, softmax.py …) are searched too: they know no feature."""
    from qkvcalc.ops.features import every

    names = {f.name for f in every()}
    assert names >= {"qk_norm", "rope", "score_bias", "softcap", "window", "sinks", "mla"}
    # check's reference pipeline is a second, naive attention written as a person writes it
    # (qkvcalc/check/reference.py), held equal to explain's: it turns q and k itself, RoPE being
    # the one feature whose mistake `qkvcalc check` names (rope_pairs, DESIGN's list)
    naive = {"rope": {"check/reference.py", "check/stages.py"}}
    for word in sorted(names | {"softcap", "rope", "alibi", "window", "sinks", "mla", "gate"}):
        places = set(_naming(word))
        assert places <= {"input/fields.py", *naive.get(word, ())}, (word, places)


def test_the_naming_check_sees_a_name():
    assert _naming("alibi") == ["input/fields.py"]  # its key, and its option
    assert "plan/pipeline.py" in _naming("Spec")
    assert "ops/base.py" in _naming("Feature")  # the core of ops/ is searched


def _asked_by_literal() -> list[str]:
    """Where code outside the plan and the op modules names a stage by a literal of its
    own: a lookup (.stage, .find, .variants) with a string, or a comparison with a stage id."""
    from qkvcalc.plan import ids

    names = {v for k, v in vars(ids).items() if k.isupper() and isinstance(v, str)}
    names -= {ids.Q, ids.K, ids.V}  # also input keys and variable names: asked through ids
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("plan/", "ops/", "catalog/", "extract/", "input/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("stage", "find", "variants")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.append(f"{rel}:{node.lineno} asks for {node.args[0].value!r}")
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    for const in ast.walk(side):
                        if isinstance(const, ast.Constant) and const.value in names:
                            found.append(f"{rel}:{node.lineno} compares with {const.value!r}")
    return found


def test_no_stage_is_asked_for_by_a_literal_outside_the_plan():
    """Writers, the quiz and the trace name a stage through qkvcalc.plan.ids (or the trace's
    own trace.final, trace.weights), so that an id is spelled where the plan writes it."""
    assert _asked_by_literal() == []


def test_the_ids_the_other_layers_ask_for_are_the_plans():
    """Every id of qkvcalc.plan.ids is a stage some preset's plan makes."""
    from qkvcalc.input import presets
    from qkvcalc.input.problem import Problem
    from qkvcalc.ops import features
    from qkvcalc.plan import ids
    from qkvcalc.plan.schedule import plan

    made, topics = set(), set()
    for name in presets.names():
        problem = Problem.from_mapping(presets.load(name))
        made |= {spec.id for spec in plan(problem)}
        refused = any(f.no_backward for f, _ in features.active(problem))  # no gradients yet
        if problem.decode is None and not refused:  # and its backward's (a target), in tiles too
            d_out = problem.wo.values.shape[1] if problem.wo is not None else None
            d_out = d_out or problem.heads * problem.d_v
            own = {k: v for k, v in presets.load(name).items() if k != "attend"}
            doc = own | {"target": [[0] * d_out] * problem.n}
            specs = plan(replace(Problem.from_mapping(doc), backward=True))
            made |= {spec.id for spec in specs}
            topics |= {spec.topic for spec in specs}
    named = {k: v for k, v in vars(ids).items() if k.isupper() and isinstance(v, str)}
    asked = {v for k, v in named.items() if not k.startswith("TOPIC_") and not k.endswith("_OP")}
    assert asked <= made, asked - made
    # an _OP is the name of an op the plan gives its stages, which the op table holds
    from qkvcalc.ops.table import OPS

    asked_ops = {v for k, v in named.items() if k.endswith("_OP")}
    assert asked_ops and asked_ops <= set(OPS), asked_ops - set(OPS)
    # a TOPIC_ is a stage's catalog topic (when it is not its id), which some plan gives
    asked_topics = {v for k, v in named.items() if k.startswith("TOPIC_")}
    assert asked_topics <= topics, asked_topics - topics


def _marks_set_by_ops(package: Path = PACKAGE) -> list[str]:
    """Where an op or feature module sets a Spec's schedule marks (`step`, `block`, `lazy`)
    itself: a call to Spec (or a helper that makes one) with one of them as a keyword."""
    found = []
    for path in sorted((package / "ops").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name.split(".")[-1] not in ("Spec", "replace_spec", "replace", "_project"):
                continue
            for kw in node.keywords:
                if kw.arg in ("step", "block", "lazy"):
                    found.append(f"ops/{path.name}:{node.lineno} {name}(…, {kw.arg}=…)")
    return found


def test_the_schedules_stamp_step_block_and_laziness_never_an_op():
    """A decode step, a block of keys, a stage computed again when shown: the schedule that
    made the stages from the template says so (plan/pipeline, plan/decode and plan/tiles, through
    plan.specs.stamped); an op or feature builds its stages without them."""
    assert _marks_set_by_ops() == []


def test_the_marks_check_sees_a_mark(tmp_path):
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "f.py").write_text(
        "Spec('x', None, 'add', (), 'f', (), (), step=1)\n", encoding="utf-8"
    )
    assert _marks_set_by_ops(tmp_path) == ["ops/f.py:1 Spec(…, step=…)"]
