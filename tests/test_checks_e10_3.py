"""E10.3 checks: full marks for the solution, zero for the untouched exercise, a named
mistake for the usual errors."""

import re

import nbformat
import numpy as np
import pytest
from helpers import ROOT, judged_by_grader, notebook_functions

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
    assert {name: q.points for name, q in exercise.manual.items()} == {
        "patterns": 2, "probes": 2, "comparison": 1}


def test_the_headers_points_table_and_the_answer_cells_agree_with_the_checks():
    notebook = nbformat.read(SOLUTION, as_version=4)
    table = dict(re.findall(r"^\| (\d)\. .*? \| (\d|–) \| ", notebook.cells[0].source, re.M))
    parts = [*checks.EXERCISE.checks.values(), *checks.EXERCISE.manual.values()]
    assert [float(table[str(n)]) for n in range(2, 9)] == [part.points for part in parts]
    answers = {c.metadata["course"]["manual"]: c.metadata["course"]["points"]
               for c in notebook.cells if "manual" in c.metadata.get("course", {})}
    assert answers == {name: q.points for name, q in checks.EXERCISE.manual.items()}


def test_the_exercise_reads_the_students_own_model_and_a_test_set_notebook_5_did_not():
    exercise = "\n".join(c.source for c in nbformat.read(EXERCISE, as_version=4).cells)
    notebook_5 = "\n".join(c.source for c in nbformat.read(
        ROOT / "notebooks" / "05_reading_attention_heatmaps.ipynb", as_version=4).cells)
    assert "find_or_train_exercise_checkpoint(" in exercise
    assert 'split = "test_2017_flickr"' in exercise and "test_2017_flickr" not in notebook_5
    assert "def my_probes():" in exercise  # the student writes the probe sentences


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


# ------------------------------------------------------- the student's own work, not notebook 5's

DELEGATING = """
import numpy as np
from course_utils.alignment import crossings
from course_utils.alignment import hard_alignment as argmax_rows
from course_utils.alignment import many_to_one as split_rows
from course_utils.alignment import monotonicity as reference_monotonicity


def hard_alignment(weights):
    return argmax_rows(weights)


def monotonicity(weights):
    if len(weights) == 0:  # the library refuses a matrix with no rows; the check asks for 1.0
        return 1.0
    return reference_monotonicity(weights)


def find_crossings(weights):
    return crossings(weights)


def many_to_one(weights, threshold=0.3):
    return split_rows(weights, threshold)
"""


def delegating() -> dict:
    namespace: dict = {}
    exec(DELEGATING, namespace)  # as a notebook cell defines them
    return namespace


@pytest.mark.parametrize("part, uses", [
    ("hard_alignment", "uses `argmax_rows`, which is `course_utils.alignment.hard_alignment`"),
    ("monotonicity", "uses `reference_monotonicity`, which is "
                     "`course_utils.alignment.monotonicity`"),
    ("find_crossings", "uses `crossings`, which is `course_utils.alignment.crossings`"),
    ("many_to_one", "uses `split_rows`, which is `course_utils.alignment.many_to_one`"),
])
def test_a_function_that_hands_the_work_to_notebook_5s_versions_scores_zero(part, uses):
    check = checks.EXERCISE.checks[part]
    function = delegating()[check.target]
    for result in (check(function), judged_by_grader(check, function)):
        assert result.points == 0
        assert uses in result.message
        assert "reference implementation" in result.message
        assert "Write it yourself" in result.message


def test_a_call_to_the_reference_by_any_route_scores_zero():
    def find_crossings(weights):
        import importlib

        module = importlib.import_module("course_utils." + "alignment")
        return getattr(module, "crossings")(weights)  # noqa: B009 - a route the code hides

    def monotonicity(weights):
        return 1.0 if len(weights) < 2 else my_helper(weights)

    def my_helper(weights):
        from course_utils import alignment
        return alignment.monotonicity(weights)

    crossing = checks.check_crossings(find_crossings)
    assert crossing.points == 0 and "calls `course_utils.alignment.crossings`" in crossing.message
    helped = checks.check_monotonicity(monotonicity)
    assert helped.points == 0 and "course_utils.alignment.monotonicity" in helped.message


def test_the_solution_is_its_own_work_though_the_notebook_imports_the_library():
    solution = notebook_functions(SOLUTION)
    setup = nbformat.read(SOLUTION, as_version=4).cells[1].source
    imports = [line for line in setup.splitlines() if "course_utils.alignment" in line]
    assert imports  # the notebook uses the library's word classes and entropy in Parts 6-8
    exec("\n".join(imports), solution)
    for check in checks.EXERCISE.checks.values():
        assert check(solution[check.target]).passed, check.name
        assert judged_by_grader(check, solution[check.target]).passed, check.name


# ------------------------------------ the cells that run the student's functions on the model


def test_ready_says_which_function_to_write_first_and_never_raises(capsys):
    solution = notebook_functions(SOLUTION)
    untouched = notebook_functions(EXERCISE)
    names = ("hard_alignment", "monotonicity", "find_crossings", "many_to_one")
    assert checks.ready(*(solution[n] for n in names))
    assert capsys.readouterr().out == ""

    def forgot_return(weights):
        weights.argmax(axis=1)

    def crashes(weights):
        return weights[10]

    assert not checks.ready(solution["hard_alignment"], untouched["monotonicity"],
                            forgot_return, crashes, None)
    printed = capsys.readouterr().out
    assert "`monotonicity` is not written yet" in printed
    assert "`forgot_return` returned None: did you forget `return`?" in printed
    assert "`crashes` raised IndexError" in printed and "weights[10]" in printed
    assert "is not a function" in printed and "hard_alignment" not in printed


def test_probe_sentences_are_a_dict_of_sentences_or_nothing_with_a_reason(capsys):
    def mine():
        return {"verb last": ("a girl smiles when her mother takes a picture .",)}

    assert checks.probe_sentences(mine) == {
        "verb last": ["a girl smiles when her mother takes a picture ."]}
    untouched = notebook_functions(EXERCISE)["my_probes"]
    assert checks.probe_sentences(untouched) == {}
    assert "`my_probes` is not written yet" in capsys.readouterr().out
    for wrong, says in [(["a dog runs ."], "must return a dict {phenomenon: [English sentences]}; "
                                           "got list"),
                        ({}, "got dict (empty)"),
                        ({"compound": "a soccer ball ."}, "must be a list of English sentences"),
                        ({"compound": []}, "at least one"),
                        ({"compound": ["a dog runs .", 3]}, "got list")]:
        assert checks.probe_sentences(lambda wrong=wrong: wrong) == {}
        assert says in capsys.readouterr().out


def test_the_librarys_source_pasted_in_and_renamed_scores_nothing(tmp_path, monkeypatch):
    # the handout ships course_utils' source: a copy of it, renamed, is not the student's work
    import importlib
    import inspect

    import course_utils.alignment as library

    copy = inspect.getsource(library).replace("weights", "w").replace("def crossings(",
                                                                        "def find_crossings(")
    (tmp_path / "pasted_alignment.py").write_text(copy)
    monkeypatch.syspath_prepend(str(tmp_path))
    pasted = importlib.import_module("pasted_alignment")
    for check, name in [(checks.check_monotonicity, "monotonicity"),
                        (checks.check_crossings, "find_crossings"),
                        (checks.check_many_to_one, "many_to_one")]:
        result = check(getattr(pasted, name))
        assert result.points == 0 and "is a copy of `course_utils.alignment." in result.message, (
            name, result.message)
    # a one-line answer is what an honest student writes too: not compared
    assert checks.check_hard_alignment(pasted.hard_alignment).passed
