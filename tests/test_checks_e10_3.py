"""E10.3 checks: full marks for the solution, zero for the untouched exercise, a named
mistake for the usual errors."""

import numpy as np
import pytest
from helpers import ROOT, notebook_functions

from course_utils.checks import NOT_IMPLEMENTED, get_exercise
from course_utils.checks import e10_3 as checks

SOLUTION = ROOT / "solutions" / "E10.3-reading-attention-heatmaps.ipynb"
EXERCISE = ROOT / "exercises" / "E10.3-reading-attention-heatmaps.ipynb"


def test_solution_scores_full_marks_and_exercise_scores_zero():
    assert all(r.passed for r in checks.EXERCISE.grade(notebook_functions(SOLUTION)))
    for result in checks.EXERCISE.grade(notebook_functions(EXERCISE)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED
    exercise = get_exercise("E10.3")
    assert exercise.auto_points == 9 and exercise.max_points == 14
    assert set(exercise.manual) == {"patterns", "word_order"}


def test_the_known_matrices_hold_the_patterns_they_are_named_for():
    m = checks.MATRICES
    assert m["diagonal"].argmax(1).tolist() == [0, 1, 2, 3]
    assert m["verb-final"].argmax(1).tolist() == [0, 1, 3, 2]
    assert m["reversal"].argmax(1).tolist() == [3, 2, 1, 0]
    for name, weights in m.items():
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, err_msg=name)


def message(check, fn):
    result = check(fn)
    assert not result.passed
    return result.message


def test_hard_alignment_mistakes_are_named():
    per_column = message(checks.check_hard_alignment, lambda w: w.argmax(axis=0))
    # square test matrices cannot tell the axes apart when symmetric; the tall one can
    assert "return one per output step (row)" in per_column
    transposed_square = message(checks.check_hard_alignment,
                                lambda w: w.argmax(axis=0) if w.shape[0] == w.shape[1]
                                else w.argmax(axis=1))
    assert "the arg max of each column" in transposed_square
    assert "1-based" in message(checks.check_hard_alignment, lambda w: w.argmax(axis=1) + 1)
    assert "smallest weight" in message(checks.check_hard_alignment, lambda w: w.argmin(axis=1))
    assert "did you forget `return`" in message(checks.check_hard_alignment, lambda w: None)
    hard_coded = message(checks.check_hard_alignment, lambda w: np.array([0, 1, 2, 3]))
    assert "wrong position for output steps [2, 3] of the verb-final matrix" in hard_coded


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the mean of no steps, on purpose
def test_monotonicity_mistakes_are_named():
    def strict(w):
        a = w.argmax(axis=1)
        return float(np.mean(np.diff(a) > 0)) if len(a) > 1 else 1.0

    def count(w):
        return int(np.sum(np.diff(w.argmax(axis=1)) >= 0))

    def no_single_case(w):
        return float(np.mean(np.diff(w.argmax(axis=1)) >= 0))

    def backwards(w):
        a = w.argmax(axis=1)
        return float(np.mean(np.diff(a) < 0)) if len(a) > 1 else 0.0

    assert "a[i+1] >= a[i]" in message(checks.check_monotonicity, strict)
    assert "share of steps" in message(checks.check_monotonicity, count)
    assert "single output step" in message(checks.check_monotonicity, no_single_case)
    assert "go backwards" in message(checks.check_monotonicity, backwards)


def crossing_finder(condition, adjacent_only=False, reverse=False):
    def find_crossings(w):
        a = w.argmax(axis=1)
        pairs = [(i, k) for i in range(len(a)) for k in range(i + 1, len(a))
                 if condition(a[i], a[k]) and (k == i + 1 or not adjacent_only)]
        return [(k, i) for i, k in pairs] if reverse else pairs
    return find_crossings


def test_crossing_mistakes_are_named_and_neighbours_only_gets_partial_credit():
    assert checks.check_crossings(crossing_finder(lambda x, y: x > y)).passed
    ties = message(checks.check_crossings, crossing_finder(lambda x, y: x >= y))
    assert "a[i] > a[k], not >=" in ties
    reversed_pairs = message(checks.check_crossings, crossing_finder(lambda x, y: x > y,
                                                                     reverse=True))
    assert "i < k" in reversed_pairs
    neighbours = checks.check_crossings(crossing_finder(lambda x, y: x > y, adjacent_only=True))
    assert neighbours.points == 1 and "neighbouring steps only" in neighbours.message
    assert "list of pairs" in message(checks.check_crossings, lambda w: 3)


def test_many_to_one_mistakes_are_named():
    def finder(compare=np.greater_equal, fixed=None, keep_single=False):
        def many_to_one(w, threshold=0.3):
            t = fixed if fixed is not None else threshold
            groups = {}
            for step, row in enumerate(w):
                strong = np.flatnonzero(compare(row, t))
                if len(strong) >= (1 if keep_single else 2):
                    groups[step] = strong.tolist()
            return groups
        return many_to_one

    assert checks.check_many_to_one(finder()).passed
    assert "use >=" in message(checks.check_many_to_one, finder(compare=np.greater))
    assert "threshold argument" in message(checks.check_many_to_one, finder(fixed=0.3))
    assert "two or more" in message(checks.check_many_to_one, finder(keep_single=True))
    assert "must return a dict" in message(checks.check_many_to_one, lambda w, t=0.3: [])


def test_checks_do_not_depend_on_the_input_being_left_alone():
    def destructive(w):
        result = w.argmax(axis=1)
        w[:] = 0  # changes the caller's matrix: the check passes copies
        return result

    assert checks.check_hard_alignment(destructive).passed


def test_monotonicity_must_handle_a_matrix_with_no_rows():
    def nan_when_empty(w):
        a = np.asarray(w).argmax(axis=1)
        return float(np.mean(np.diff(a) >= 0)) if len(a) > 1 else (1.0 if len(a) else np.nan)

    result = checks.check_monotonicity(nan_when_empty)
    assert result.points == 0
    assert "with no output step at all (empty (no output steps) matrix)" in result.message
    assert "1.0" in result.message


def test_crossings_given_as_source_positions_are_named():
    def source_positions(w):
        a = np.asarray(w).argmax(axis=1)
        return [(int(a[i]), int(a[k])) for i in range(len(a)) for k in range(i + 1, len(a))
                if a[i] > a[k]]

    result = checks.check_crossings(source_positions)
    assert result.points == 0 and "return the output steps themselves" in result.message


def test_many_to_one_positions_must_be_increasing():
    def reversed_positions(w, threshold=0.3):
        return {step: sorted(np.flatnonzero(row >= threshold).tolist(), reverse=True)
                for step, row in enumerate(np.asarray(w))
                if np.sum(row >= threshold) >= 2}

    result = checks.check_many_to_one(reversed_positions)
    assert result.points == 1 and "increasing order" in result.message


def test_a_crash_names_the_matrix_it_was_given():
    def breaks_on_wide(w):
        if w.shape[1] > w.shape[0]:
            raise IndexError("my loop went past the last row")
        return np.asarray(w).argmax(axis=1)

    result = checks.check_hard_alignment(breaks_on_wide)
    assert result.points == 0
    assert "raised IndexError: my loop went past the last row" in result.message
    assert "when given the wide matrix, shape (3, 6)" in result.message
