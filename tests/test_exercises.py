"""The solution notebook is the single source; the generator makes the student version."""

import os

import nbformat
import pytest
from helpers import ROOT
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_utils import files
from course_utils.tools import exercises
from course_utils.tools.exercise_format import ANSWER_STUB, CODE_STUB, strip_solutions
from course_utils.tools.exercises import make_exercise, render_exercise
from course_utils.tools.solutions import BEGIN, END, ExerciseFormatError, regions

SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))


def test_every_solution_has_an_exercise_and_back():
    exercise_names = {p.name for p in (ROOT / "exercises").glob("*.ipynb")}
    assert SOLUTIONS, "no solution notebooks"
    assert exercise_names == {p.name for p in SOLUTIONS}


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_committed_exercise_equals_what_the_generator_produces(solution):
    committed = (ROOT / "exercises" / solution.name).read_text(encoding="utf-8")
    assert committed == render_exercise(solution), "run: course-exercises"


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda p: p.name)
def test_exercise_has_no_outputs_and_no_solution_code(solution):
    student = nbformat.read(ROOT / "exercises" / solution.name, as_version=4)
    for cell in student.cells:
        assert BEGIN not in cell.source and END not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    hidden = [line.strip() for cell in nbformat.read(solution, as_version=4).cells
              for region in regions(cell.source) for line in region.lines if line.strip()]
    text = "\n".join(cell.source for cell in student.cells)
    leaked = [line for line in hidden if line in text]
    assert not leaked, f"solution lines left in the exercise: {leaked}"


def notebook(*cells):
    return new_notebook(cells=list(cells))


def test_code_region_becomes_not_implemented_at_the_same_indent():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n"
    student = strip_solutions(notebook(new_code_cell(source)))
    assert student.cells[0].source == f"def f(x):\n    {CODE_STUB}"


def test_markdown_region_becomes_an_answer_prompt():
    source = "Why?\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION"
    student = strip_solutions(notebook(new_markdown_cell(source)))
    assert student.cells[0].source == f"Why?\n\n{ANSWER_STUB}"


def test_outputs_and_counts_are_cleared():
    cell = new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\nprint(x)")
    cell.outputs = [nbformat.v4.new_output("stream", text="1\n")]
    cell.execution_count = 3
    student = strip_solutions(notebook(cell))
    assert student.cells[0].outputs == [] and student.cells[0].execution_count is None
    assert student.metadata.get("course") is None


def test_a_figures_description_of_the_worked_run_is_not_copied_to_students():
    # the description says what the solution's run drew: its translations, its numbers
    drawn = new_code_cell("### BEGIN SOLUTION\nplot()\n### END SOLUTION")
    drawn.metadata["mystnb"] = {"image": {"alt": "Heatmap: kleiner reads young and boy."}}
    sized = new_code_cell("### BEGIN SOLUTION\nplot()\n### END SOLUTION")
    sized.metadata["mystnb"] = {"image": {"alt": "A figure.", "width": "80%"}}
    student = strip_solutions(notebook(drawn, sized))
    assert "mystnb" not in student.cells[0].metadata
    assert student.cells[1].metadata["mystnb"] == {"image": {"width": "80%"}}


def test_the_solutions_build_record_is_not_copied_but_other_course_metadata_is():
    solution = notebook(new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION"))
    solution.metadata["course"] = {"built_with": {"torch": "2.13.0+cpu"}}
    assert "course" not in strip_solutions(solution).metadata
    solution.metadata["course"] = {"built_with": {"torch": "2.13.0+cpu"}, "note": "kept"}
    assert strip_solutions(solution).metadata["course"] == {"note": "kept"}
    assert solution.metadata["course"]["built_with"]  # the solution itself is left alone


@pytest.mark.parametrize(
    "source, message",
    [
        ("### BEGIN SOLUTION\nx = 1\n", r"cell 0, line 1: '### BEGIN SOLUTION' is never closed"),
        ("x = 1\n### END SOLUTION\n", r"cell 0, line 2: '### END SOLUTION' without"),
        (
            "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION\n",
            r"cell 0, line 2: '### BEGIN SOLUTION' inside the region opened on line 1",
        ),
        ("x = 1  ### BEGIN SOLUTION\n", r"line 1: a marker must stand alone on its line"),
        ("x = 1\n", r"no '### BEGIN SOLUTION' regions found"),
    ],
)
def test_unbalanced_markers_are_refused(source, message):
    with pytest.raises(ExerciseFormatError, match=message):
        strip_solutions(notebook(new_code_cell(source)), name="bad.ipynb")


@pytest.mark.parametrize("marker", [
    "###BEGIN SOLUTION", "### begin solution", "## BEGIN SOLUTION", "#### BEGIN SOLUTION",
    "# Begin Solution", "### BEGIN_SOLUTION", "### END SOLUTIONS", "### end solution",
])
@pytest.mark.parametrize("kind", ["code", "markdown"])
def test_a_near_miss_marker_is_refused_never_copied_to_students(marker, kind):
    make = new_code_cell if kind == "code" else new_markdown_cell
    source = f"def f():\n    {marker}\n    return 42\n    ### END SOLUTION\n"
    if "END" in marker.upper():
        source = f"### BEGIN SOLUTION\nsecret = 42\n{marker}\n"
    with pytest.raises(ExerciseFormatError, match=r"bad.ipynb, cell 0, line \d: .* looks like a "
                                                 r"solution marker but is not one"):
        strip_solutions(notebook(make(source)), name="bad.ipynb")


def test_a_marker_in_a_raw_cell_is_refused():
    from nbformat.v4 import new_raw_cell

    nb = notebook(new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n"),
                  new_raw_cell("### BEGIN SOLUTION\nthe answer is 42\n### END SOLUTION\n"))
    with pytest.raises(ExerciseFormatError, match=r"cell 1 \(raw cell\), line 1: solution "
                                                 r"markers work only in code and Markdown"):
        strip_solutions(nb, name="bad.ipynb")


def test_prose_that_only_mentions_solutions_is_left_alone():
    nb = notebook(new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n"),
                  new_markdown_cell("At the end, the solution notebook shows one way to begin."))
    student = strip_solutions(nb)
    assert student.cells[1].source.startswith("At the end")


def test_written_files_follow_the_umask_not_the_temporary_file_mode(tmp_path):
    from course_utils.files import write_text_atomically

    old = os.umask(0o022)
    try:
        write_text_atomically(tmp_path / "out.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o644


def test_refused_notebook_writes_nothing(tmp_path):
    solution = tmp_path / "bad.ipynb"
    nbformat.write(notebook(new_code_cell("### BEGIN SOLUTION\n")), solution)
    target = tmp_path / "out" / "bad.ipynb"
    with pytest.raises(ExerciseFormatError):
        make_exercise(solution, target)
    assert not target.exists()


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    solution = tmp_path / "s.ipynb"
    nbformat.write(notebook(new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")), solution)
    target = tmp_path / "e.ipynb"
    target.write_text("old")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        make_exercise(solution, target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.ipynb", "s.ipynb"]


def test_command_line_builds_then_reports_up_to_date(tmp_path, capsys):
    solutions, out = tmp_path / "solutions", tmp_path / "exercises"
    solutions.mkdir()
    nbformat.write(
        notebook(new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")),
        solutions / "E1.ipynb",
    )
    args = ["--solutions", str(solutions), "--exercises", str(out)]
    assert exercises.main([*args, "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert exercises.main(args) == 0
    assert exercises.main([*args, "--check"]) == 0
    (solutions / "E2.ipynb").write_text(
        nbformat.writes(notebook(new_code_cell("### END SOLUTION")))
    )
    assert exercises.main(args) == 2
    assert "E2.ipynb, cell 0, line 1" in capsys.readouterr().err


def test_e10_1_cells_that_show_a_result_go_through_try_run():
    """Run All must not stop at a part that is not written yet: outside its definition and its
    check, a student's function is only called through ``e10_1.try_run``."""
    import re

    from course_utils.checks import get_exercise

    student = nbformat.read(ROOT / "exercises" / "E10.1-attention-by-hand.ipynb", as_version=4)
    targets = [check.target for check in get_exercise("E10.1").checks.values()]
    shown = set()
    for cell in student.cells:
        source = cell.source
        if cell.cell_type != "code" or source.startswith("def ") or "e10_1.check_" in source:
            continue
        for target in targets:
            assert not re.search(rf"\b{target}\(", source), f"call it via try_run: {source}"
        shown |= set(re.findall(r"e10_1\.try_run\((\w+)", source))
    assert shown == set(targets)
