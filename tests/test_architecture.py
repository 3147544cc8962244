"""The package's shape: the lesson's library reads on its own, each notebook's views lean on it,
the checks and the tools live apart.

Read from the source, not from an import at run time: every ``import`` and ``from ... import``
statement of every module, including those inside functions (imported on first use).
"""

import ast
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "course_utils"
MODULES = sorted(PACKAGE.rglob("*.py"))
LIBRARY_FOLDERS = {PACKAGE}  # the lesson's library: the package's top level
VIEWS = PACKAGE / "views"  # each notebook's tables and figures, made with the library
MAX_LINES = 500


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES = {module_name(p): p for p in MODULES}


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """``(module, names)`` for every import in ``path``: ``names`` are what ``from X import``
    takes (empty for a plain ``import X``)."""
    found = []
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(
        ".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            found.append((base, [alias.name for alias in node.names]))
    return found


def course_imports(path: Path) -> set[str]:
    """The course_utils modules that ``path`` imports (a ``from package import module`` counts
    as the module)."""
    targets = set()
    for module, names in imports(path):
        if not module.startswith("course_utils"):
            continue
        targets.add(module)
        targets.update(f"{module}.{n}" for n in names if f"{module}.{n}" in NAMES)
    return targets & set(NAMES)


def test_the_lessons_library_never_imports_the_views_the_checks_or_the_tools():
    for path in MODULES:
        if path.parent not in LIBRARY_FOLDERS:
            continue
        reached = {t for t in course_imports(path) if t.startswith(
            ("course_utils.views", "course_utils.checks", "course_utils.tools"))}
        assert not reached, f"{module_name(path)} (the lesson's library) imports {reached}"


def test_the_views_import_the_library_and_nothing_of_the_checks_or_the_tools():
    views = [path for path in MODULES if path.parent == VIEWS]
    assert views, "the notebooks' views are in course_utils/views"
    for path in views:
        reached = {t for t in course_imports(path)
                   if t.startswith(("course_utils.checks", "course_utils.tools"))}
        assert not reached, f"{module_name(path)} (a notebook's view) imports {reached}"


def test_the_checks_never_import_the_tools():
    for path in MODULES:
        if module_name(path).startswith("course_utils.checks"):
            reached = {t for t in course_imports(path) if t.startswith("course_utils.tools")}
            assert not reached, f"{module_name(path)} imports the tools: {reached}"


def test_no_module_imports_from_the_package_it_belongs_to():
    """No arrow back up: a module of ``checks/`` or ``tools/grading/`` imports its siblings,
    never their package's ``__init__``, which only gathers names."""
    for path in MODULES:
        if path.name == "__init__.py":
            continue
        own_package = module_name(path).rpartition(".")[0]
        if own_package == "course_utils":
            continue  # the library's __init__ imports nothing of the package at import time
        for module, _ in imports(path):
            assert module != own_package, (
                f"{module_name(path)} imports from its own package's __init__ ({module})")


def test_there_is_no_import_cycle():
    graph = {name: course_imports(path) - {name} for name, path in NAMES.items()}
    # a package's __init__ is imported before any of its modules: not an edge back
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycle = trail[trail.index(target):] + [target] if target in trail else [
                    node, target]
                pytest.fail(f"import cycle: {' -> '.join(cycle)}")
            if target not in state:
                visit(target, [*trail, target])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_no_module_imports_another_modules_private_name():
    for path in MODULES:
        for module, names in imports(path):
            if not module.startswith("course_utils") or module == module_name(path):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{module_name(path)} imports {private} from {module}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_reads_in_one_sitting(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_LINES})"


def test_a_student_listing_the_package_sees_the_lesson_first():
    """``ls course_utils``: the day's modules and three folders, the notebooks' views, the checks
    and the tools, beside the Multi30k sample (package data, no module)."""
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == ["checks", "tools", "views"]
    for tool in ("grading", "sandbox", "memcg", "nbgrader", "book", "execute", "kernel",
                 "exercises"):
        assert not (PACKAGE / f"{tool}.py").exists(), f"{tool}.py belongs in course_utils/tools"


MAP = ROOT / "ARCHITECTURE.md"
#: the packages a name in the map may be read from, most specific first
MAP_PACKAGES = ("course_utils.tools.grading", "course_utils.tools", "course_utils.checks",
                "course_utils.views", "course_utils")


def resolve(name: str) -> object | None:
    """``name`` as the map writes it (``batch.grade_folder``, ``Check.probe``,
    ``tools/grading/cli.main``) resolved to the object it names, or None."""
    import importlib

    dotted = name.replace("/", ".")
    if dotted.startswith("course_utils."):
        dotted = dotted[len("course_utils."):]
    parts = dotted.split(".")
    for package in MAP_PACKAGES:
        for split in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join([package, *parts[:split]]))
            except ImportError:
                continue
            try:
                for attr in parts[split:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                break
            return obj
    # a class named without its module (``Check.probe``, ``Seq2Seq.forward``): any module's
    for module in (m for m in NAMES if not m.endswith("__main__")):
        try:
            obj = importlib.import_module(module)
            for attr in parts:
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            continue
        return obj
    return None


def test_the_maintainers_map_names_only_what_exists():
    """Every ``module.function`` ARCHITECTURE.md tells a reader to open is there."""
    import re

    names = set(re.findall(r"`([A-Za-z_][\w/]*\.[A-Za-z_][\w.]*)`", MAP.read_text()))
    names = {n for n in names if not n.endswith((".py", ".md", ".csv", ".png", ".html", ".json",
                                                ".ipynb"))}
    assert len(names) > 40, "the map's two paths name the functions a reader opens"
    missing = sorted(n for n in names if resolve(n) is None)
    assert not missing, f"ARCHITECTURE.md names what does not exist: {missing}"


def test_the_maintainers_map_lists_every_module():
    """Every module of the package is named in ARCHITECTURE.md (in code: ``handout``,
    ``checks/e10_2/``), its package's ``__init__`` by the package's name."""
    import re

    words = {word for quoted in re.findall(r"`([^`]+)`", MAP.read_text())
             for word in re.split(r"\W+", quoted) if word}
    missing = sorted(name for name in NAMES if name != "course_utils"
                     and not name.endswith("__main__") and name.rpartition(".")[2] not in words)
    assert not missing, f"ARCHITECTURE.md does not name these modules: {missing}"

