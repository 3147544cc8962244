"""E10.1 checks: full marks for the solution, zero for the untouched exercise, and a useful,
answer-free message for each common mistake."""

import nbformat
import numpy as np
import pytest
from helpers import ROOT, notebook_functions
from nbclient import NotebookClient

from course_utils.checks import NOT_IMPLEMENTED, get_exercise
from course_utils.checks import e10_1 as checks

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
EXERCISE = ROOT / "exercises" / "E10.1-attention-by-hand.ipynb"

# The answers, as they could appear in a message; no failing message may contain them.
ANSWERS = ["1.367", "1.810", "0.281", "0.437", "0.438", "0.718", "0.719", "1.36", "0.28", "0.72"]


def assert_no_answer(message: str) -> None:
    leaked = [number for number in ANSWERS if number in message]
    assert not leaked, f"message gives away {leaked}: {message}"


def test_solution_scores_full_marks():
    results = checks.EXERCISE.grade(notebook_functions(SOLUTION))
    assert [r.name for r in results] == ["energies", "softmax", "context", "most_attended"]
    assert all(r.passed for r in results), results
    assert sum(r.points for r in results) == checks.EXERCISE.auto_points == 8


def test_untouched_exercise_scores_zero_with_not_implemented():
    results = checks.EXERCISE.grade(notebook_functions(EXERCISE))
    assert len(results) == 4
    for result in results:
        assert result.points == 0
        assert result.message == NOT_IMPLEMENTED


def test_untouched_exercise_notebook_runs_checks_without_crashing():
    """Run the student notebook in a kernel: every check cell prints FAIL, none errors."""
    notebook = nbformat.read(EXERCISE, as_version=4)
    NotebookClient(notebook, timeout=120, allow_errors=True, kernel_name="python3").execute()
    check_cells = [c for c in notebook.cells if c.cell_type == "code" and "check_" in c.source]
    assert len(check_cells) == 4
    for cell in check_cells:
        text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert not any(o.output_type == "error" for o in cell.outputs), cell.source
        assert "[FAIL]" in text and "not implemented yet" in text


def test_missing_or_wrong_kind_of_function_is_reported_not_raised():
    assert "is not defined" in checks.check_energies(None).message
    assert "expected the function `compute_energies`; got a ndarray" in (
        checks.check_energies(np.zeros(3)).message
    )
    assert checks.EXERCISE.grade({})[0].points == 0


def no_tanh(s, H, W_s, W_h, v):
    return (W_s @ s + H @ W_h.T) @ v


def swapped_matrices(s, H, W_s, W_h, v):
    return np.tanh(W_h @ s + H @ W_s.T) @ v


def hard_coded(s, H, W_s, W_h, v):
    return np.tanh(np.array([[1.5, 0.5], [0.5, 1.5], [1.5, 1.5]])) @ np.ones(2)


def energies_as_column(s, H, W_s, W_h, v):
    return (np.tanh(W_s @ s + H @ W_h.T) @ v)[:, None]


def no_return(s, H, W_s, W_h, v):
    np.tanh(W_s @ s + H @ W_h.T) @ v


def no_v(s, H, W_s, W_h, v):
    return np.tanh(W_s @ s + H @ W_h.T).sum(axis=1)


@pytest.mark.parametrize(
    "student, points, expected",
    [
        (no_tanh, 0, "the tanh is missing"),
        (swapped_matrices, 1, "which matrix multiplies which state"),
        (hard_coded, 1, "is something specific to E10.1 built in?"),
        (energies_as_column, 0, "must return shape (3,) (one energy per encoder state); got (3, 1)"),
        (no_return, 0, "returned None: did you forget `return`?"),
        (no_v, 1, "v is not used"),
    ],
)
def test_energy_mistakes_get_a_hint_and_partial_points(student, points, expected):
    result = checks.check_energies(student)
    assert result.points == points
    assert expected in result.message
    assert_no_answer(result.message)


def naive_softmax(e):
    return np.exp(e) / np.exp(e).sum()


def unnormalised(e):
    return np.exp(e - e.max())


def test_softmax_that_overflows_gets_partial_points_and_the_shift_hint():
    result = checks.check_softmax(naive_softmax)
    assert result.points == 1 and "subtract the largest energy" in result.message


def test_softmax_that_does_not_sum_to_one_is_told_so():
    result = checks.check_softmax(unnormalised)
    assert result.points == 0 and "not 1: divide by the sum" in result.message
    assert_no_answer(result.message)


@pytest.mark.parametrize(
    "student, expected",
    [
        (lambda w, H: H.mean(axis=0), "plain average"),
        (lambda w, H: H.sum(axis=0), "unweighted sum"),
        (lambda w, H: H @ np.ones(H.shape[1]), "must return shape (2,)"),
        (lambda w, H: w @ H + 0.1, "c_1, c_2 are off"),
    ],
)
def test_context_mistakes_are_named(student, expected):
    result = checks.check_context(student)
    assert result.points == 0 and expected in result.message
    assert_no_answer(result.message)


def test_zero_based_index_is_recognised():
    result = checks.check_most_attended(lambda w: int(np.argmax(w)))
    assert result.points == 0 and "0-based" in result.message


def test_most_attended_must_be_an_int():
    result = checks.check_most_attended(lambda w: np.argmax(w) + 1.0)
    assert result.points == 0 and "as an int; got float" in result.message


def test_a_crash_in_student_code_is_reported():
    result = checks.check_softmax(lambda e: 1 / 0)
    assert result.points == 0
    assert "`softmax` raised ZeroDivisionError" in result.message


def test_inputs_are_not_modified_by_students():
    def vandal(s, H, W_s, W_h, v):
        H[:] = 0
        raise NotImplementedError

    checks.check_energies(vandal)
    np.testing.assert_array_equal(checks.INPUTS["encoder_states"], [[1, 0], [0, 1], [1, 1]])


def test_exercise_registry_and_points():
    exercise = get_exercise("E10.1")
    assert exercise is checks.EXERCISE
    assert exercise.max_points == 10
    assert exercise.manual["why"].points == 2
    with pytest.raises(ValueError, match="unknown exercise 'E99'; expected one of: E10.1"):
        get_exercise("E99")


def test_solution_marks_its_manual_question_cell():
    cells = nbformat.read(SOLUTION, as_version=4).cells
    marked = [c for c in cells if c.metadata.get("course", {}).get("manual") == "why"]
    assert len(marked) == 1
    assert marked[0].metadata["course"]["points"] == checks.EXERCISE.manual["why"].points
