"""Under ``course-grade``, every exercise: the worked solution keeps full marks, the untouched
student version scores 0 (every part "not implemented yet"), and the same solution with each
graded function or class run from text by ``exec`` (the shortcut a student takes with
``exec(inspect.getsource(...))`` of the library) scores 0, saying why. One batch per exercise."""

import nbformat
import pytest
from helpers import ROOT, calibrated_limits

from course_utils.checks import exercise_ids, get_exercise, notebook_of
from course_utils.tools.grading import grade_folder
from course_utils.tools.solutions import shortcuts

LIMITS = calibrated_limits(cell_seconds=120, total_seconds=500)
NOT_WRITTEN = "graded code must be written in this notebook's cells"


@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_the_solution_scores_full_marks_the_untouched_exercise_and_exec_of_the_answer_zero(
        exercise_id, tmp_path):
    exercise = get_exercise(exercise_id)
    solution = notebook_of(exercise_id, ROOT / "solutions")
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(nbformat.read(solution, as_version=4), subs / "honest.ipynb")
    (subs / "untouched.ipynb").write_bytes(notebook_of(exercise_id, ROOT / "exercises").read_bytes())
    shortcut, taken = shortcuts(exercise_id)["exec"]
    assert taken == sorted(exercise.checks)
    nbformat.write(shortcut, subs / "shortcut.ipynb")
    results = {r.student: r for r in grade_folder(exercise_id, subs, tmp_path / "out",
                                                  limits=LIMITS, progress=False)}
    honest, blank, cheat = results["honest"], results["untouched"], results["shortcut"]
    assert honest.status == "graded", honest.notes
    assert honest.total() == exercise.auto_points, (honest.points, honest.messages)
    assert all(honest.points[part] == check.points for part, check in exercise.checks.items())
    assert blank.total() == 0 and set(blank.messages) == set(exercise.checks)
    assert all("not implemented" in m for m in blank.messages.values()), blank.messages
    assert cheat.status == "graded" and cheat.total() == 0, (cheat.points, cheat.messages)
    for part, message in cheat.messages.items():
        assert NOT_WRITTEN in message and "runs code from `<string>`" in message, (part, message)


def test_the_librarys_source_run_by_exec_scores_zero_for_that_part_and_what_uses_it(tmp_path):
    """E10.1's softmax taken from ``course_utils.attention`` by ``inspect.getsource`` + ``exec``:
    softmax scores 0, and so does ``winner``, which calls it; the rest keep their points. The
    same for the solution's own softmax run by ``get_ipython().run_cell``: in the kernel's
    history, but not a cell of the submission."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for student, source in {
        "lazy": ("import inspect\nimport course_utils.attention\n"
                 "exec(inspect.getsource(course_utils.attention.softmax))"),
        "run_cell": None,
    }.items():
        notebook = nbformat.read(notebook_of("E10.1", ROOT / "solutions"), as_version=4)
        (cell,) = [c for c in notebook.cells if c.source.startswith("def softmax(")]
        cell.source = source or f"get_ipython().run_cell({cell.source!r}, store_history=True)"
        nbformat.write(notebook, subs / f"{student}.ipynb")
    results = grade_folder("E10.1", subs, tmp_path / "out", limits=LIMITS, progress=False)
    for result in results:
        assert result.points == {"energies": 3, "softmax": 0, "context": 1, "most_attended": 1,
                                 "winner": 0}, (result.student, result.messages)
        assert NOT_WRITTEN in result.messages["softmax"]
        assert "(through `softmax`)" in result.messages["winner"]
