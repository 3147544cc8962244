"""Export the exercises as nbgrader source notebooks (``course-exercises --nbgrader OUT``).

For courses that already run `nbgrader <https://nbgrader.readthedocs.io>`_. Each solution
notebook in ``solutions/`` becomes ``OUT/source/<exercise>/<name>.ipynb`` (nbgrader's course
layout, one assignment per exercise, e.g. ``E10.1``), next to an ``OUT/nbgrader_config.py``.
The cells keep their text; what changes is nbgrader's cell metadata (schema 3):

- a code cell with a ``### BEGIN SOLUTION`` region (the course uses nbgrader's own markers) is a
  **solution cell** (``solution``, not graded, editable);
- a written answer (a Markdown solution cell marked ``course: {manual: NAME, points: N}``) is a
  **manually graded answer** worth the question's points;
- the cell where the student runs a part's check (``e10_1.check_energies(compute_energies)``)
  becomes that part's **autograded test cell** (locked), worth the part's points. It runs the
  same check through :func:`course_utils.checks.nbgrader_points`, whose value is the points the
  check gives: nbgrader takes a test cell's numeric value as its score (partial credit), so
  each part earns under nbgrader what it earns under ``course-grade``;
- prose and the score cell at the end are locked (read-only); other code cells stay editable.

``nbgrader generate_assignment`` then writes the student version; the configuration written next
to the notebooks gives it the course's own stubs, so it reads as the notebooks in ``exercises/``.
Autograde at smoke-test scale, as ``course-grade`` does:
``COURSE_QUICK=1 nbgrader autograde E10.1``.
"""

from __future__ import annotations

import ast
import copy
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat

from course_utils.checks import Check, get_exercise
from course_utils.files import current_umask
from course_utils.tools.exercise_format import (
    ANSWER_STUB,
    CODE_STUB,
    NBFORMAT_VERSION,
    notebook_text,
    strip_solutions,
)
from course_utils.tools.solutions import ExerciseFormatError, regions

__all__ = ["autograded_cell_source", "called_check", "checks_by_call", "export_nbgrader",
           "nbgrader_source"]

SCHEMA_VERSION = 3
_EXERCISE_ID = re.compile(r"^(E\d+\.\d+)-")

CONFIG = f'''\
# nbgrader configuration for the Day 10 exercises, written by `course-exercises --nbgrader`.
# Run nbgrader's commands in this folder, e.g.
#     nbgrader generate_assignment E10.1
#     COURSE_QUICK=1 nbgrader autograde E10.1
# The notebooks run in the course's kernel ("bahdanau-day10"): register it where nbgrader runs
# (`python -m course_utils.tools.kernel --user` in the course's environment).
c = get_config()  # noqa: F821 (nbgrader defines it)

# The student version nbgrader releases reads as the course's own exercises/.
c.ClearSolutions.code_stub = {{"python": {CODE_STUB!r}}}
c.ClearSolutions.text_stub = {ANSWER_STUB!r}

# Autograde with COURSE_QUICK=1 (smoke-test scale, as course-grade does): E10.2's and E10.3's
# models then train in seconds, and the checks call the student's functions on inputs of their
# own. Without it, E10.2 trains two models for minutes and runs past this limit per cell.
c.Execute.timeout = 120
'''


def _nbgrader(grade_id: str, *, solution: bool = False, grade: bool = False,
              locked: bool = False, points: float | None = None) -> dict:
    meta: dict = {"grade": grade, "grade_id": grade_id, "locked": locked,
                  "schema_version": SCHEMA_VERSION, "solution": solution}
    if points is not None:
        meta["points"] = points
    return meta


def checks_by_call(exercise_id: str) -> dict[str, Check]:
    """``{"check_energies": <its Check>}``: how the notebook's check cells call each part (by
    the names the exercise's checks module gives them)."""
    modules = {sys.modules[check.body.__module__]
               for check in get_exercise(exercise_id).checks.values()}
    return {name: value for module in modules for name, value in vars(module).items()
            if isinstance(value, Check) and value.exercise == exercise_id}


def called_check(source: str, calls: dict[str, Check]) -> Check | None:
    """The part a check cell runs: a cell whose only statement is ``module.check_x(target)``."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return None
    if len(body) != 1 or not isinstance(body[0], ast.Expr):
        return None
    call = body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in calls):
        return None
    check = calls[call.func.attr]
    if [ast.unparse(a) for a in call.args] != [check.target] or call.keywords:
        return None
    return check


def _defined_name(source: str) -> str | None:
    """The first function or class a cell defines (the name of a solution cell's grade id)."""
    match = re.search(r"^(?:def|class)\s+(\w+)", source, re.MULTILINE)
    return match.group(1) if match else None


def autograded_cell_source(exercise_id: str, part: str, points: float) -> str:
    """The autograded test cell of one part."""
    unit = "point" if points == 1 else "points"
    return (f"# Autograded by nbgrader: part {part!r}, {points:g} {unit}. The same check as "
            "course-grade's;\n# the value below is the points it gives (nbgrader's partial "
            "credit).\n"
            "from course_utils.checks import nbgrader_points\n\n"
            f"nbgrader_points({exercise_id!r}, {part!r}, globals())")


def nbgrader_source(solution: nbformat.NotebookNode, exercise_id: str,
                    name: str = "notebook") -> nbformat.NotebookNode:
    """The nbgrader source notebook of one exercise, from its solution notebook."""
    strip_solutions(solution, name)  # refuses unbalanced or misspelt markers, as for exercises/
    exercise = get_exercise(exercise_id)
    calls = checks_by_call(exercise_id)
    notebook = nbformat.from_dict(nbformat.v4.new_notebook(
        metadata={k: v for k, v in solution.metadata.items() if k not in ("widgets", "course")}))
    tested: dict[str, int] = {}
    answered: dict[str, int] = {}
    ids: set[str] = set()
    for index, original in enumerate(solution.cells):
        cell = copy.deepcopy(original)
        for key in ("execution", "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
        where = f"{name}, cell {index}"
        own_id = f"cell_{cell.get('id') or index}"
        solved = bool(regions(cell.source, where))
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            check = None if solved else called_check(cell.source, calls)
            if solved:
                grade_id = f"solution_{_defined_name(cell.source) or own_id}"
                cell.metadata.nbgrader = _nbgrader(grade_id, solution=True)
            elif check is not None:
                if check.name in tested:
                    raise ExerciseFormatError(
                        f"{where}: part {check.name!r} is checked again (first in cell "
                        f"{tested[check.name]}); keep one check cell per part")
                tested[check.name] = index
                cell.source = autograded_cell_source(exercise_id, check.name, check.points)
                cell.metadata.nbgrader = _nbgrader(f"test_{check.name}", grade=True,
                                                   locked=True, points=check.points)
            elif ".EXERCISE.grade(" in cell.source:
                cell.metadata.nbgrader = _nbgrader("score", locked=True)
        elif cell.cell_type == "markdown":
            if solved:
                manual = cell.metadata.get("course", {}).get("manual")
                question = exercise.manual.get(manual) if isinstance(manual, str) else None
                if question is None:
                    raise ExerciseFormatError(
                        f"{where}: a written answer must name its question in the cell's "
                        f"metadata, course: {{manual: NAME, points: N}}, with NAME one of "
                        f"{sorted(exercise.manual)}; got {cell.metadata.get('course')!r}")
                if cell.metadata["course"].get("points") != question.points:
                    raise ExerciseFormatError(
                        f"{where}: the answer to {manual!r} says "
                        f"{cell.metadata['course'].get('points')!r} points; its question in "
                        f"{exercise_id}'s checks is worth {question.points:g}")
                if manual in answered:
                    raise ExerciseFormatError(f"{where}: a second answer to {manual!r} (first "
                                              f"in cell {answered[manual]})")
                answered[manual] = index
                cell.metadata.nbgrader = _nbgrader(f"answer_{manual}", solution=True,
                                                   grade=True, points=question.points)
            else:
                cell.metadata.nbgrader = _nbgrader(own_id, locked=True)
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            if grade_id in ids:
                raise ExerciseFormatError(f"{where}: two cells would have the nbgrader id "
                                          f"{grade_id!r}")
            ids.add(grade_id)
        notebook.cells.append(cell)
    missing = [f"no check cell calls part {part!r}" for part in exercise.checks
               if part not in tested]
    missing += [f"no written answer is marked for question {q!r}" for q in exercise.manual
                if q not in answered]
    if missing:
        raise ExerciseFormatError(f"{name}: " + "; ".join(missing))
    return notebook


def _writable_target(out: Path) -> None:
    """Refuse an ``OUT`` that is a file, a folder with something in it, or not writable."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise FileExistsError(f"{out} exists and is not a folder; give a new folder")
    if out.is_dir() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; give a new or empty folder (nothing was "
                              "written)")
    parent = out.resolve().parent
    if not parent.is_dir():
        raise FileNotFoundError(f"{parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"cannot write in {parent}")


def export_nbgrader(solutions: Path, out: Path) -> list[Path]:
    """Write every exercise of ``solutions`` as an nbgrader source notebook under ``out``.

    ``out`` must be new or empty. Everything is written into a temporary folder next to it,
    then moved into place in one step: a failure leaves nothing behind. Returns the notebooks.
    """
    solutions, out = Path(solutions), Path(out)
    paths = sorted(solutions.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no solution notebooks (*.ipynb) in {solutions}")
    _writable_target(out)
    texts: dict[Path, str] = {}
    for path in paths:
        match = _EXERCISE_ID.match(path.name)
        if match is None:
            raise ExerciseFormatError(f"{path.name}: the file name must start with its exercise "
                                      "id, e.g. E10.1-attention-by-hand.ipynb")
        solution = nbformat.read(path, as_version=NBFORMAT_VERSION)
        notebook = nbgrader_source(solution, match.group(1), path.name)
        texts[Path("source") / match.group(1) / path.name] = notebook_text(notebook)
    parent = out.resolve().parent
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        for relative, text in texts.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_text(text, encoding="utf-8")
        (staging / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
        staging.chmod(0o777 & ~current_umask())  # mkdtemp makes the folder private
        os.replace(staging, out)  # onto a missing or empty folder, in one step
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return [out / relative for relative in texts]

