"""The own-work rule judges the code that runs, never the layout of an honest notebook.

Graded with ``course-grade``, every exercise: the worked solution laid out as students lay out
their own work (an import at the top of an answer cell; every answer in one cell with its
imports, in a notebook of the student's own making, with no cell of the handout's) keeps full
marks; the same answers ``exec``'d into a dict of the student's own and called through it (the
route by which the library's source once scored full marks) score 0 on every part, with a message
that names what ran. E10.1 is graded with a user-wide ``python3`` kernelspec of another Python in
``JUPYTER_PATH`` (what Anaconda installs), which the calibration must not start."""

import ast
import json
import re

import nbformat
import pytest
from helpers import ROOT, calibrated_limits
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_utils.checks import exercise_ids, get_exercise, notebook_of
from course_utils.checks.records import RECORD_MIME
from course_utils.tools.colab import is_setup_cell
from course_utils.tools.grading import grade_folder
from course_utils.tools.grading.shards import read_record

LIMITS = calibrated_limits(cell_seconds=120, total_seconds=500)
NOT_WRITTEN = "graded code must be written in this notebook's cells"


def _solution(exercise_id: str) -> nbformat.NotebookNode:
    return nbformat.read(notebook_of(exercise_id, ROOT / "solutions"), as_version=4)


def _imports(notebook: nbformat.NotebookNode) -> str:
    """The import statements of the notebook's first code cell after the setup cell."""
    first = next(c for c in notebook.cells if c.cell_type == "code" and not is_setup_cell(c))
    tree = ast.parse(first.source)
    return "\n".join(ast.get_source_segment(first.source, node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom)))


def _answers(exercise_id: str) -> tuple[str, list[str]]:
    """The solution's import lines, and the source of every code cell that defines a graded
    function or class, in order."""
    notebook = _solution(exercise_id)
    targets = {check.target for check in get_exercise(exercise_id).checks.values()}
    cells = [c.source for c in notebook.cells if c.cell_type == "code"
             and targets & set(re.findall(r"^(?:def|class) (\w+)", c.source, re.M))]
    return _imports(notebook), cells


def one_cell_of_its_own(exercise_id: str) -> nbformat.NotebookNode:
    """A notebook of the student's own making: a title, then every answer in one cell with its
    imports and a comment; no cell of the handout's but, for a part judged on a record of the
    student's own run (E10.3's finds), the cell that ran its check, saved with its output."""
    imports, cells = _answers(exercise_id)
    source = f"# my answers to {exercise_id}\n{imports}\n\n\n" + "\n\n\n".join(cells)
    ran = [c for c in _solution(exercise_id).cells if c.cell_type == "code"
           and any(RECORD_MIME in o.get("data", {}) for o in c.outputs)]
    return new_notebook(cells=[new_markdown_cell(f"# {exercise_id}, my way"),
                               new_code_cell(source), *ran])


def run_through_a_dict(exercise_id: str) -> nbformat.NotebookNode:
    """The answers' text ``exec``'d into a dict, and each graded name defined by calling
    through that dict: code the kernel never compiled from a cell."""
    imports, cells = _answers(exercise_id)
    text = imports + "\n\n" + "\n\n".join(cells)
    lines = [imports, "", "_answers = {}", f"exec({text!r}, _answers)", ""]
    for check in get_exercise(exercise_id).checks.values():
        name = check.target
        if re.search(rf"^class {name}\b", text, re.M):
            lines.append(f"class {name}(_answers[{name!r}]):\n    pass\n")
        else:
            lines.append(f"def {name}(*args, **kwargs):\n"
                         f"    return _answers[{name!r}](*args, **kwargs)\n")
    return new_notebook(cells=[new_code_cell("\n".join(dict.fromkeys(lines)))])


def imports_in_an_answer_cell(exercise_id: str) -> nbformat.NotebookNode:
    """The worked solution with ``import numpy as np`` as the first line of each answer cell
    (the issue's first row, for every answer)."""
    notebook = _solution(exercise_id)
    targets = {check.target for check in get_exercise(exercise_id).checks.values()}
    for cell in notebook.cells:
        if cell.cell_type == "code" and targets & set(
                re.findall(r"^(?:def|class) (\w+)", cell.source, re.M)):
            cell.source = "import numpy as np\n" + cell.source
    return notebook


@pytest.fixture
def foreign_python3_kernelspec(tmp_path, monkeypatch):
    """A ``python3`` kernelspec of another Python, first in ``JUPYTER_PATH``: a kernel that
    dies at once, as one of a Python that lacks the course would."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": ["/bin/false", "-f", "{connection_file}"], "display_name": "Python 3 (other)",
        "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))


def _grade(exercise_id: str, variants: dict, tmp_path, **options) -> dict:
    subs = tmp_path / "subs"
    subs.mkdir()
    for student, notebook in variants.items():
        nbformat.write(notebook, subs / f"{student}.ipynb")
    return {r.student: r for r in grade_folder(exercise_id, subs, tmp_path / "out",
                                               limits=LIMITS, progress=False, **options)}


def _assert_full(exercise, result):
    assert result.status == "graded", result.notes
    assert result.points == {p: c.points for p, c in exercise.checks.items()}, result.messages


def _assert_refused(exercise, result):
    assert result.status == "graded", result.notes
    assert result.total() == 0, (result.points, result.messages)
    for part, message in result.messages.items():
        assert NOT_WRITTEN in message and "runs code from `<string>`" in message, (part, message)


def test_e10_1_layouts_with_a_foreign_python3_kernel_in_jupyter_path(
        tmp_path, foreign_python3_kernelspec):
    exercise = get_exercise("E10.1")
    results = _grade("E10.1", {"imports": imports_in_an_answer_cell("E10.1"),
                               "own": one_cell_of_its_own("E10.1"),
                               "through_dict": run_through_a_dict("E10.1")},
                     tmp_path, calibrate=True)
    _assert_full(exercise, results["imports"])
    _assert_full(exercise, results["own"])
    _assert_refused(exercise, results["through_dict"])
    calibration = read_record(tmp_path / "out")["calibration"]
    assert calibration["failed"] is None and calibration["kernel_seconds"] > 0, calibration


@pytest.mark.parametrize("exercise_id", [e for e in exercise_ids() if e != "E10.1"])
def test_each_exercise_in_one_cell_of_its_own_scores_full_and_through_a_dict_zero(
        exercise_id, tmp_path):
    exercise = get_exercise(exercise_id)
    results = _grade(exercise_id, {"own": one_cell_of_its_own(exercise_id),
                                   "through_dict": run_through_a_dict(exercise_id)}, tmp_path)
    _assert_full(exercise, results["own"])
    _assert_refused(exercise, results["through_dict"])
