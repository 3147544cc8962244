"""E10.1 checks: full marks for the solution, zero for the untouched exercise, and a useful,
answer-free message for each common mistake."""

import importlib
import sys

import nbformat
import numpy as np
import pytest
from helpers import ROOT, notebook_functions
from nbclient import NotebookClient

import course_utils
import course_utils.attention as A
from course_utils.attention import additive_attention as reference_attention
from course_utils.attention import softmax as sm
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
    assert [r.name for r in results] == ["energies", "softmax", "context", "most_attended",
                                         "winner"]
    assert all(r.passed for r in results), results
    assert sum(r.points for r in results) == checks.EXERCISE.auto_points == 8


def test_untouched_exercise_scores_zero_with_not_implemented():
    results = checks.EXERCISE.grade(notebook_functions(EXERCISE))
    assert len(results) == 5
    for result in results:
        assert result.points == 0
        assert result.message == NOT_IMPLEMENTED


def run_in_fresh_kernel(notebook):
    """Execute ``notebook`` top to bottom in a new kernel, as Run All does; errors recorded."""
    NotebookClient(notebook, timeout=120, allow_errors=True, kernel_name="python3").execute()
    return notebook


def cell_text(cell) -> str:
    return "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                   for o in cell.outputs)


def assert_every_cell_ran_without_error(notebook):
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, f"did not run: {cell.source[:60]}"
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"{cell.source[:60]}: {errors[0].ename}: {errors[0].evalue}"
        assert "Traceback" not in cell_text(cell), cell.source[:60]


def check_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code" and "e10_1.check_" in c.source]


def score_cell(notebook):
    (cell,) = [c for c in notebook.cells if c.cell_type == "code" and ".grade(" in c.source]
    return cell


def test_untouched_exercise_runs_every_cell_and_scores_zero_of_eight():
    """Run All on the student notebook: every check prints FAIL, no cell errors, score 0 / 8."""
    notebook = run_in_fresh_kernel(nbformat.read(EXERCISE, as_version=4))
    assert_every_cell_ran_without_error(notebook)
    cells = check_cells(notebook)
    assert len(cells) == 5
    for cell in cells:
        assert "[FAIL]" in cell_text(cell) and "not implemented yet" in cell_text(cell)
    score = cell_text(score_cell(notebook))
    assert score.count("[FAIL]") == 5
    assert "automatic points: 0 / 8" in score


def solution_source(name):
    """The solution's cell that defines ``name``."""
    cells = nbformat.read(SOLUTION, as_version=4).cells
    (cell,) = [c for c in cells if c.cell_type == "code" and c.source.startswith(f"def {name}(")]
    return cell.source


def test_half_done_exercise_shows_the_parts_done_and_checks_the_rest():
    """softmax and most_attended written, energies and context not: the two written parts pass
    although the results they would be given (energies, weights) do not exist yet."""
    notebook = nbformat.read(EXERCISE, as_version=4)
    for cell in notebook.cells:
        for name in ("softmax", "most_attended"):
            if cell.cell_type == "code" and cell.source.startswith(f"def {name}("):
                cell.source = solution_source(name)
    run_in_fresh_kernel(notebook)
    assert_every_cell_ran_without_error(notebook)
    texts = [cell_text(c) for c in check_cells(notebook)]
    assert ["[PASS]" in t for t in texts] == [False, True, False, True, False]
    score = cell_text(score_cell(notebook))
    assert "automatic points: 3 / 8" in score
    shown = "".join(cell_text(c) for c in notebook.cells if c.cell_type == "code")
    assert "`compute_energies` is not written yet" in shown
    assert "`softmax` not run here: its argument `energies` is None" in shown


def test_try_run_returns_the_result_or_explains_in_one_line(capsys):
    assert checks.try_run(lambda e: e * 2, 3) == 6
    assert capsys.readouterr().out == ""

    def compute_energies(s, H, W_s, W_h, v):
        raise NotImplementedError

    assert checks.try_run(compute_energies, 1, 2, 3, 4, 5) is None
    assert "`compute_energies` is not written yet" in capsys.readouterr().out

    def softmax(energies):
        return energies

    assert checks.try_run(softmax, None) is None
    assert "its argument `energies` is None" in capsys.readouterr().out

    def compute_context(weights, encoder_states):
        return weights @ encoder_states

    assert checks.try_run(compute_context, np.ones(3), np.ones((2, 2))) is None
    out = capsys.readouterr().out
    assert "`compute_context` raised ValueError" in out
    assert "at `return weights @ encoder_states`" in out


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


def v_inside_tanh(s, H, W_s, W_h, v):
    return np.tanh(v * (W_s @ s + H @ W_h.T)).sum(axis=1)


def v_dot_inside_tanh(s, H, W_s, W_h, v):
    return np.tanh((W_s @ s + H @ W_h.T) @ v)


def missing_transpose(s, H, W_s, W_h, v):
    keys = H @ W_h
    return np.tanh(W_s @ s + keys) @ v


def projections_left_out(s, H, W_s, W_h, v):
    return np.tanh(s + H) @ v


def W_h_left_out(s, H, W_s, W_h, v):
    return np.tanh(W_s @ s + H) @ v


def wrong_product(s, H, W_s, W_h, v):
    keys = W_h @ H  # fits no inputs: (attn_dim, enc_dim) @ (src_len, enc_dim)
    return np.tanh(W_s @ s + keys.T) @ v


@pytest.mark.parametrize(
    "student, points, expected",
    [
        (no_tanh, 0, "the tanh is missing"),
        (swapped_matrices, 0, "W_s and W_h are swapped"),
        (hard_coded, 1, "is something specific to E10.1 built in?"),
        (energies_as_column, 0, "must return shape (3,) (one energy per encoder state); got (3, 1)"),
        (no_return, 0, "returned None: did you forget `return`?"),
        (no_v, 0, "v is not used"),
    ],
)
def test_energy_mistakes_get_a_hint_and_partial_points(student, points, expected):
    result = checks.check_energies(student)
    assert result.points == points
    assert expected in result.message
    assert_no_answer(result.message)


@pytest.mark.parametrize(
    "student, expected",
    [
        (v_inside_tanh, "v is inside the tanh"),  # right on E10.1, where v = [1, 1]
        (v_dot_inside_tanh, "v is inside the tanh"),
        (missing_transpose, "`encoder_states @ W_h` needs a transpose"),
        (projections_left_out, "the projections are left out"),
        (W_h_left_out, "W_h is left out"),
    ],
)
def test_named_mistakes_get_no_points_and_their_hint(student, expected):
    result = checks.check_energies(student)
    assert result.points == 0, result
    assert expected in result.message
    assert_no_answer(result.message)


def test_missing_transpose_is_explained_with_the_shapes_not_numpys_error():
    message = checks.check_energies(missing_transpose).message
    assert "encoder_states is (src_len, enc_dim) = (6, 5)" in message
    assert "W_h is (attn_dim, enc_dim) = (4, 5)" in message
    assert "encoder_states @ W_h.T" in message
    assert "gufunc" not in message and "mismatch" not in message


def test_a_shape_error_the_check_cannot_name_lists_the_shapes_and_the_line():
    result = checks.check_energies(wrong_product)
    assert result.points == 0
    assert "on the E10.1 inputs the shapes do not fit together" in result.message
    assert "at `keys = W_h @ H" in result.message
    assert "encoder_states (3, 2)" in result.message and "encoder_states @ W_h.T" in result.message
    assert "gufunc" not in result.message


def naive_softmax(e):
    return np.exp(e) / np.exp(e).sum()


def min_shifted_softmax(e):
    exps = np.exp(e - e.min())
    return exps / exps.sum()


def mean_shifted_softmax(e):
    exps = np.exp(e - e.mean())
    return exps / exps.sum()


def unnormalised(e):
    return np.exp(e - e.max())


def test_softmax_that_overflows_gets_partial_points_and_the_shift_hint():
    result = checks.check_softmax(naive_softmax)
    assert result.points == 1 and "Subtract the largest energy" in result.message
    assert "energies near 1000, [1000, 1001, 1002], exp() overflows" in result.message


@pytest.mark.parametrize("student, case", [
    (min_shifted_softmax, "[0, 1000]"),
    (mean_shifted_softmax, "[-1500, 0, 1500]"),
])
def test_softmax_shifted_by_the_wrong_energy_fails_the_stability_check(student, case):
    result = checks.check_softmax(student)
    assert result.points == 1 and not result.passed
    assert f"on energies far apart, {case}, exp() still overflows" in result.message
    assert "Subtract the largest energy" in result.message


def test_stable_softmax_gives_finite_weights_on_every_extreme_case():
    def stable(e):
        exps = np.exp(e - e.max())
        return exps / exps.sum()

    assert checks.check_softmax(stable).passed
    for energies, _ in checks._EXTREME_ENERGIES:  # each case must sink the naive softmax
        assert not checks._survives(naive_softmax, energies)


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


# ------------------------------------------------------- the student's own work, in NumPy


def softmax_via_alias(e):
    return sm(e)


def softmax_via_module(e):
    return A.softmax(e)


def softmax_via_package(e):
    return course_utils.softmax(e)


def my_helper(e):
    return sm(e)


def softmax_via_helper(e):
    return my_helper(e)


def softmax_via_import_module(e):  # no course_utils name in sight: caught while it runs
    return importlib.import_module("course_utils.attention").softmax(e)


def softmax_with_a_branch_never_taken(e):  # caught by reading the code
    if e.size > 10_000:
        return sm(e)
    exps = np.exp(e - e.max())
    return exps / exps.sum()


def energies_via_reference(s, H, W_s, W_h, v):
    return reference_attention(s, H, W_s, W_h, v).energies


def energies_via_lambda(s, H, W_s, W_h, v):
    attend = lambda: A.additive_attention(s, H, W_s, W_h, v)  # noqa: E731
    return attend().energies


def context_via_reference(weights, H):
    return H.T @ sm(np.log(weights))


@pytest.mark.parametrize(
    "check, student, uses",
    [
        (checks.check_softmax, softmax_via_alias, "uses `sm`, which is "
                                                  "`course_utils.attention.softmax`"),
        (checks.check_softmax, softmax_via_module, "uses `A`, which is the module "
                                                   "`course_utils.attention`"),
        (checks.check_softmax, softmax_via_package, "uses `course_utils`, which is the package"),
        (checks.check_softmax, softmax_via_helper, "uses `sm` (through `my_helper`)"),
        (checks.check_softmax, softmax_via_import_module, "calls "
                                                          "`course_utils.attention.softmax`"),
        (checks.check_softmax, softmax_with_a_branch_never_taken, "uses `sm`"),
        (checks.check_softmax, sm, "is `course_utils.attention.softmax` itself"),
        (checks.check_energies, energies_via_reference, "uses `reference_attention`, which is "
                                                        "`course_utils.attention.additive_attention`"),
        (checks.check_energies, energies_via_lambda, "uses `A`"),
        (checks.check_context, context_via_reference, "uses `sm`"),
    ],
)
def test_calling_the_course_reference_earns_nothing_and_says_write_it_in_numpy(check, student,
                                                                              uses):
    result = check(student)
    assert result.points == 0
    assert uses in result.message
    assert "Write it yourself with NumPy" in result.message


def test_watching_for_the_reference_restores_everything_even_when_the_student_raises():
    events = []

    def profiler(frame, event, arg):
        events.append(event)

    def cheat_then_crash(e):
        importlib.import_module("course_utils.attention").softmax(e)
        raise RuntimeError("boom")

    original = A.softmax
    sys.setprofile(profiler)
    try:
        result = checks.check_softmax(cheat_then_crash)
        restored = sys.getprofile()
    finally:
        sys.setprofile(None)
    assert restored is profiler and events  # the profiler that was there kept running
    assert result.points == 0 and "calls `course_utils.attention.softmax`" in result.message
    assert A.softmax is original and course_utils.softmax is original
    assert checks.check_softmax(min_shifted_softmax).points == 1  # and the checks still work


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
    assert exercise.max_points == 11
    assert exercise.auto_points == 8
    assert {name: q.points for name, q in exercise.manual.items()} == {"predict": 1, "why": 2}
    with pytest.raises(ValueError, match="unknown exercise 'E99'; expected one of: E10.1"):
        get_exercise("E99")


@pytest.mark.parametrize("question", ["predict", "why"])
def test_solution_marks_its_manual_question_cells(question):
    cells = nbformat.read(SOLUTION, as_version=4).cells
    marked = [c for c in cells if c.metadata.get("course", {}).get("manual") == question]
    assert len(marked) == 1
    assert marked[0].metadata["course"]["points"] == checks.EXERCISE.manual[question].points


def test_the_prediction_is_asked_before_the_winner_is_computed():
    cells = nbformat.read(SOLUTION, as_version=4).cells
    where = {name: next(i for i, c in enumerate(cells) if test(c)) for name, test in {
        "predict": lambda c: c.metadata.get("course", {}).get("manual") == "predict",
        "winner": lambda c: c.source.startswith("def winner("),
        "computed": lambda c: "e10_1.SECOND_QUERY" in c.source,
        "why": lambda c: c.metadata.get("course", {}).get("manual") == "why"}.items()}
    assert where["predict"] < where["winner"] < where["computed"] < where["why"]


# ------------------------------------------------------ E10.1's answers are the student's


NOTEBOOK_1 = ROOT / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb"


def test_notebook_1_works_its_own_example_not_e10_1():
    notebook = nbformat.read(NOTEBOOK_1, as_version=4)
    text = "\n".join(c.source + (cell_text(c) if c.cell_type == "code" else "")
                     for c in notebook.cells)
    e10_1 = reference_attention(*checks._args(checks.INPUTS))
    answers = [f"{x:.4f}" for x in (*e10_1.energies, *e10_1.weights, *e10_1.context)]
    leaked = [number for number in answers if number in text]
    assert not leaked, f"notebook 1 shows E10.1's answers: {leaked}"
    assert "np.array([0.5, 0.5])" not in text, "notebook 1 sets up E10.1's inputs"
    assert "## 4. A worked example, step by step" in text


def test_most_attended_through_the_alignment_module_earns_nothing():
    from course_utils.alignment import hard_alignment

    def most_attended(weights):
        return int(hard_alignment(np.atleast_2d(weights))[0]) + 1

    result = checks.check_most_attended(most_attended)
    assert result.points == 0 and "course_utils.alignment" in result.message, result.message


# ---------------------------------------------------------------- Part 4: winner, any query


def test_h3_wins_for_every_query_when_the_projections_are_the_identity_and_v_is_positive():
    """The worked answer's claim: each energy is sum_k tanh(s_k + h_jk), increasing in every
    coordinate of the key, and h_3 = [1, 1] is at least h_1 and h_2 everywhere."""
    rng = np.random.default_rng(0)
    H, eye, v = checks.INPUTS["encoder_states"], np.eye(2), checks.INPUTS["v"]
    for query in [checks.SECOND_QUERY, *rng.normal(scale=3.0, size=(500, 2))]:
        energies = reference_attention(query, H, eye, eye, v).energies
        assert energies.argmax() == 2 and energies[2] > energies[:2].max()
    second = reference_attention(checks.SECOND_QUERY, H, eye, eye, v).energies
    np.testing.assert_allclose(second, [0.443, 0.924, 1.367], atol=1e-3)
    assert H[0] @ checks.SECOND_QUERY > H[1] @ checks.SECOND_QUERY  # h_1 is more alike...
    assert second[1] > second[0]  # ...and h_2 wins over it


def right_winner(s, H, W_s, W_h, v):
    return int(np.argmax(np.tanh(W_s @ s + H @ W_h.T) @ v)) + 1


@pytest.mark.parametrize("student, hint", [
    (lambda s, H, W_s, W_h, v: right_winner(s, H, W_s, W_h, v) - 1, "0-based"),
    (lambda s, H, W_s, W_h, v: int(np.argmin(np.tanh(W_s @ s + H @ W_h.T) @ v)) + 1,
     "smallest energy"),
    (lambda s, H, W_s, W_h, v: 3, "E10.1's answer whatever it is given"),
    (lambda s, H, W_s, W_h, v: right_winner(checks.INPUTS["decoder_state"],
                                            *checks._args(checks.INPUTS)[1:]),
     "does it use its arguments"),
    (lambda s, H, W_s, W_h, v: int(np.argmax(H.sum(axis=1))) + 1, "largest sum of entries"),
    (lambda s, H, W_s, W_h, v: int(np.argmax(np.tanh(s + H) @ v)) + 1,
     "the projections are left out"),
    (lambda s, H, W_s, W_h, v: int(np.argmax(np.tanh(W_s @ s + H @ W_h.T).sum(axis=1))) + 1,
     "v is not used"),
])
def test_winner_mistakes_are_named_and_earn_nothing(student, hint):
    result = checks.check_winner(student)
    assert result.points == 0 and hint in result.message, result.message
    assert_no_answer(result.message)


def test_winner_is_right_for_any_query_and_must_be_an_int():
    assert checks.check_winner(right_winner).passed
    result = checks.check_winner(lambda *args: float(right_winner(*args)))
    assert result.points == 0 and "as an int; got float" in result.message
    result = checks.check_winner(lambda s, H, W_s, W_h, v: right_winner(s, H, W_s, W_h, v)
                                 % len(H) + 1)  # the next position: no mistake we can name
    assert result.points == 0 and "does not have the largest weight" in result.message


def test_winner_is_judged_on_fresh_queries_under_the_grader():
    from helpers import judged_by_grader

    from course_utils.checks.probes import run_seed

    check = checks.EXERCISE.checks["winner"]
    assert judged_by_grader(check, right_winner, seed=7).passed
    assert judged_by_grader(check, lambda s, H, W_s, W_h, v: 3, seed=7).points == 0
    with run_seed(1):
        first = checks._winner_cases()
    with run_seed(2):
        second = checks._winner_cases()
    assert not np.array_equal(first[-1][1]["W_s"], second[-1][1]["W_s"])


def test_winners_that_two_mistakes_explain_name_both():
    """tanh is monotone, so e_j without it and tanh(v^T ...) always share their winners: the
    hint names both rather than one by chance."""
    from helpers import judged_by_grader

    def tanh_missing(s, H, W_s, W_h, v):
        return int(np.argmax((W_s @ s + H @ W_h.T) @ v)) + 1

    check = checks.EXERCISE.checks["winner"]
    results = [judged_by_grader(check, tanh_missing, seed=seed) for seed in range(6)]
    # without the tanh the largest energy is often, not always, elsewhere: most runs catch it
    failed = [r for r in results if not r.passed]
    assert len(failed) >= 4, [r.message for r in results]
    for result in failed:
        assert result.points == 0 and "alone cannot tell them apart" in result.message, result.message
        assert "the tanh is missing" in result.message and "tanh of that dot" in result.message
