"""E10.1 checks: full marks for the solution, zero for the untouched exercise, and a useful,
answer-free message for each common mistake of the batched, padded form."""

import importlib
import sys

import nbformat
import numpy as np
import pytest
from helpers import ROOT, judged_by_grader, notebook_functions
from nbclient import NotebookClient

import course_utils
import course_utils.attention as A
from course_utils.attention import additive_attention as reference_attention
from course_utils.attention import softmax as sm
from course_utils.checks import NOT_IMPLEMENTED, get_exercise
from course_utils.checks import e10_1 as checks
from course_utils.checks.probes import run_seed

SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"
EXERCISE = ROOT / "exercises" / "E10.1-attention-by-hand.ipynb"

# The answers, as they could appear in a message; no failing message may contain them.
ANSWERS = ["1.367", "1.810", "0.281", "0.437", "0.438", "0.718", "0.719", "1.36", "0.28", "0.72"]


def assert_no_answer(message: str) -> None:
    leaked = [number for number in ANSWERS if number in message]
    assert not leaked, f"message gives away {leaked}: {message}"


SOLVED = notebook_functions(SOLUTION)


def test_solution_scores_full_marks():
    results = checks.EXERCISE.grade(SOLVED)
    assert [r.name for r in results] == ["energies", "softmax", "context", "most_attended",
                                         "winner"]
    assert all(r.passed for r in results), results
    assert sum(r.points for r in results) == checks.EXERCISE.auto_points == 8


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_solution_scores_full_marks_on_fresh_inputs_judged_by_the_grader(seed):
    for check in checks.EXERCISE.checks.values():
        result = judged_by_grader(check, SOLVED[check.target], seed=seed)
        assert result.passed, result


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

    def compute_energies(S, H, W_s, W_h, v):
        raise NotImplementedError

    assert checks.try_run(compute_energies, 1, 2, 3, 4, 5) is None
    assert "`compute_energies` is not written yet" in capsys.readouterr().out

    def softmax(energies, mask):
        return energies

    assert checks.try_run(softmax, None, None) is None
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


@pytest.mark.parametrize("check, student, expected", [
    (checks.check_energies, lambda *a: {"e": 1}, "must return numbers; got a dict"),
    (checks.check_softmax, lambda e, mask: "abc", "must return numbers; got a str"),
    (checks.check_softmax, lambda e, mask: [[1], [1, 2]], "must return numbers; got a list"),
    (checks.check_context, lambda w, H: [[1], [1, 2]], "must return numbers; got a list"),
    (checks.check_most_attended, lambda w: "3", "as integers (an int array); got str"),
    (checks.check_winner, lambda *a: [[1], [1, 2]], "as integers (an int array); got list"),
])
def test_bad_return_types_are_reported_not_raised(check, student, expected):
    result = check(student)
    assert result.points == 0 and expected in result.message, result.message


# ------------------------------------------------------------------- Part 1: energies


def queries(S, W_s):  # (B, 1, attn_dim): the right queries, for the mistakes below
    return (S @ W_s.T)[:, None, :]


def no_tanh(S, H, W_s, W_h, v):
    return (queries(S, W_s) + H @ W_h.T) @ v


def swapped_matrices(S, H, W_s, W_h, v):
    return np.tanh((S @ W_h.T)[:, None, :] + H @ W_s.T) @ v


def hard_coded(S, H, W_s, W_h, v):
    return np.tanh(np.array([[[1.5, 0.5], [0.5, 1.5], [1.5, 1.5]]])) @ np.ones(2)


def energies_with_an_extra_axis(S, H, W_s, W_h, v):
    return (np.tanh(queries(S, W_s) + H @ W_h.T) @ v)[..., None]


def no_return(S, H, W_s, W_h, v):
    np.tanh(queries(S, W_s) + H @ W_h.T) @ v


def no_v(S, H, W_s, W_h, v):
    return np.tanh(queries(S, W_s) + H @ W_h.T).sum(axis=2)


def v_inside_tanh(S, H, W_s, W_h, v):
    return np.tanh(v * (queries(S, W_s) + H @ W_h.T)).sum(axis=2)


def v_dot_inside_tanh(S, H, W_s, W_h, v):
    return np.tanh((queries(S, W_s) + H @ W_h.T) @ v)


def missing_transpose(S, H, W_s, W_h, v):
    keys = H @ W_h
    return np.tanh(queries(S, W_s) + keys) @ v


def projections_left_out(S, H, W_s, W_h, v):
    return np.tanh(S[:, None, :] + H) @ v


def W_s_left_out(S, H, W_s, W_h, v):
    return np.tanh(S[:, None, :] + H @ W_h.T) @ v


def W_h_left_out(S, H, W_s, W_h, v):
    return np.tanh(queries(S, W_s) + H) @ v


def query_as_s_transpose_W_s(S, H, W_s, W_h, v):
    return np.tanh((S @ W_s)[:, None, :] + H @ W_h.T) @ v


def weights_not_energies(S, H, W_s, W_h, v):
    exps = np.exp(np.tanh(queries(S, W_s) + H @ W_h.T) @ v)
    return exps / exps.sum(axis=1, keepdims=True)


def query_not_broadcast(S, H, W_s, W_h, v):  # right for a batch of one, as E10.1's
    return np.tanh(S @ W_s.T + H @ W_h.T) @ v


def keys_on_the_wrong_axis(S, H, W_s, W_h, v):
    return np.tanh(queries(S, W_s) + W_h @ H) @ v


def queries_on_the_wrong_axis(S, H, W_s, W_h, v):
    return np.tanh((W_s @ S)[:, None, :] + H @ W_h.T) @ v


def first_sentence_for_all(S, H, W_s, W_h, v):
    return np.tanh((W_s @ S[0])[None, None, :] + H @ W_h.T) @ v


@pytest.mark.parametrize(
    "student, points, expected",
    [
        (no_tanh, 0, "the tanh is missing"),
        (swapped_matrices, 0, "W_s and W_h are swapped"),
        (hard_coded, 1, "is something specific to E10.1 (a batch of one, 2 dimensions) built in?"),
        (first_sentence_for_all, 1, "sentences 2, 3 of 3 are off: is something specific to E10.1"),
        (energies_with_an_extra_axis, 0, "must return shape (1, 3) (one energy per sentence and "
                                         "position); got (1, 3, 1)"),
        (no_return, 0, "returned None: did you forget `return`?"),
        (no_v, 0, "v is not used"),
    ],
)
def test_energy_mistakes_get_a_hint_and_partial_points(student, points, expected):
    result = checks.check_energies(student)
    assert result.points == points
    assert expected in result.message, result.message
    assert_no_answer(result.message)


@pytest.mark.parametrize(
    "student, expected",
    [
        (v_inside_tanh, "v is inside the tanh"),  # right on E10.1, where v = [1, 1]
        (v_dot_inside_tanh, "v is inside the tanh"),
        (missing_transpose, "`encoder_states @ W_h` needs a transpose"),
        (projections_left_out, "the projections are left out"),
        (W_s_left_out, "W_s is left out"),
        (W_h_left_out, "W_h is left out"),
        (query_as_s_transpose_W_s, "the query is s^T W_s"),
        (weights_not_energies, "these are weights, not energies"),
        (query_not_broadcast, "the queries are not broadcast over the positions"),
        (keys_on_the_wrong_axis, "the keys are projected along the wrong axis"),
        (queries_on_the_wrong_axis, "the queries are projected along the wrong axis"),
    ],
)
def test_named_mistakes_get_no_points_and_their_hint(student, expected):
    result = checks.check_energies(student)
    assert result.points == 0, result
    assert expected in result.message, result.message
    assert_no_answer(result.message)


def test_a_query_not_broadcast_is_right_for_one_sentence_and_named_on_a_batch():
    """The batch's own mistake: E10.1's batch of one hides it, a batch of three raises, and
    the message says why, not NumPy's "operands could not be broadcast"."""
    inputs = checks._args(checks.INPUTS)
    np.testing.assert_allclose(query_not_broadcast(*inputs), SOLVED["compute_energies"](*inputs))
    message = checks.check_energies(query_not_broadcast).message
    assert message.startswith("right on E10.1, but on a padded batch of 3 sentences")
    assert "(B, 1, attn_dim)" in message and "could not be broadcast" not in message


def test_missing_transpose_is_explained_with_the_shapes_not_numpys_error():
    message = checks.check_energies(missing_transpose).message
    assert "encoder_states is (B, T_x, enc_dim) = (3, 6, 5)" in message
    assert "W_h is (attn_dim, enc_dim) = (4, 5)" in message
    assert "gufunc" not in message and "mismatch" not in message


def keys_the_check_cannot_name(S, H, W_s, W_h, v):
    keys = W_h @ H.T  # fits no batch: (attn_dim, enc_dim) @ (enc_dim, T_x, B)
    return np.tanh(queries(S, W_s) + keys) @ v


def test_a_shape_error_the_check_cannot_name_lists_the_shapes_and_the_line():
    result = checks.check_energies(keys_the_check_cannot_name)
    assert result.points == 0
    assert "on the E10.1 inputs the shapes do not fit together" in result.message
    assert "at `keys = W_h @ H.T" in result.message
    assert "encoder_states (1, 3, 2)" in result.message
    assert "the keys W_h h_bj are (B, T_x, attn_dim) = (1, 3, 2)" in result.message
    assert "gufunc" not in result.message


def test_energies_are_computed_at_padded_positions_too():
    """The mask is the softmax's job: compute_energies has no mask, and the check expects an
    energy wherever there is a state, padding included (it holds numbers too)."""
    general = checks._general_inputs()
    assert not general["mask"].all() and general["mask"].any(axis=1).all()
    assert np.all(general["encoder_states"][~general["mask"]] != 0)
    assert checks.check_energies(SOLVED["compute_energies"]).passed


# -------------------------------------------------------------------- Part 2: softmax


def no_shift(e, mask):
    exps = np.exp(np.where(mask, e, -np.inf))
    return exps / exps.sum(axis=1, keepdims=True)


def min_shifted(e, mask):
    exps = np.exp(e - np.where(mask, e, np.inf).min(axis=1, keepdims=True)) * mask
    return exps / exps.sum(axis=1, keepdims=True)


def mean_shifted(e, mask):
    exps = np.exp(e - e.mean(axis=1, keepdims=True)) * mask
    return exps / exps.sum(axis=1, keepdims=True)


def one_shift_for_the_batch(e, mask):
    scores = np.where(mask, e, -np.inf)
    exps = np.exp(scores - scores.max())
    return exps / exps.sum(axis=1, keepdims=True)


def over_the_columns(e, mask):
    scores = np.where(mask, e, -np.inf)
    exps = np.exp(scores - scores.max(axis=0, keepdims=True))
    return exps / exps.sum(axis=0, keepdims=True)


def mask_ignored(e, mask):
    exps = np.exp(e - e.max(axis=1, keepdims=True))
    return exps / exps.sum(axis=1, keepdims=True)


def mask_after_the_softmax(e, mask):
    return mask_ignored(e, mask) * mask


def mask_inverted(e, mask):
    return SOLVED["softmax"](e, ~mask)


def padding_set_to_zero(e, mask):
    return mask_ignored(np.where(mask, e, 0.0), mask)


def unnormalised(e, mask):
    scores = np.where(mask, e, -np.inf)
    return np.exp(scores - scores.max(axis=1, keepdims=True))


def padding_a_large_negative_number(e, mask):  # exp(-1e9 - max) is exactly 0: right
    scores = np.where(mask, e, -1e9)
    exps = np.exp(scores - scores.max(axis=1, keepdims=True))
    return exps / exps.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("student, case", [
    (no_shift, "on energies near 1000, [1000, 1001, 1002], exp() overflows"),
    (min_shifted, "on energies far apart, [0, 1000], exp() still overflows"),
    (mean_shifted, "on energies far apart, [-1500, 0, 1500], exp() still overflows"),
    (one_shift_for_the_batch, "one shift for the whole batch is not enough"),
])
def test_a_softmax_that_overflows_or_underflows_keeps_one_point_and_gets_the_shift_hint(
        student, case):
    with np.errstate(all="ignore"):
        result = checks.check_softmax(student)
    assert result.points == 1 and not result.passed
    assert case in result.message, result.message
    assert "Subtract each sentence's largest energy" in result.message


@pytest.mark.parametrize("student, hint", [
    (over_the_columns, "the softmax runs over the wrong axis"),
    (mask_ignored, "padded positions get weight: the mask is not applied"),
    (mask_after_the_softmax, "the mask is applied after the softmax"),
    (mask_inverted, "the mask is the wrong way round"),
    (padding_set_to_zero, "the padding's energies are set to 0"),
    (unnormalised, "not 1: divide each sentence's exponentials by their own sum"),
])
def test_softmax_mistakes_with_the_mask_or_the_axis_are_named_and_earn_nothing(student, hint):
    with np.errstate(all="ignore"):
        result = checks.check_softmax(student)
    assert result.points == 0 and hint in result.message, result.message
    assert_no_answer(result.message)


def test_padding_gets_exactly_zero_weight_and_rows_sum_to_one():
    energies = np.array([[1.0, 2.0, 3.0], [5.0, 4.0, 1000.0]])
    mask = np.array([[True, True, True], [True, True, False]])
    weights = SOLVED["softmax"](energies, mask)
    assert weights[1, 2] == 0.0
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    assert checks.check_softmax(padding_a_large_negative_number).passed


def test_stable_softmax_passes_and_every_extreme_case_sinks_the_naive_one():
    assert checks.check_softmax(SOLVED["softmax"]).passed
    with np.errstate(all="ignore"):
        for energies, _ in checks.EXTREME_ENERGIES:
            assert not checks._survives(no_shift, energies)
        assert checks._survives(one_shift_for_the_batch, checks.EXTREME_ENERGIES[0][0])


# -------------------------------------------------------------------- Part 3: context


@pytest.mark.parametrize(
    "student, expected",
    [
        (lambda w, H: H.mean(axis=1), "plain average"),
        (lambda w, H: H.sum(axis=1), "unweighted sum"),
        (lambda w, H: w @ H, "returns shape (1, 1, 2): `weights @ encoder_states` multiplies"),
        (lambda w, H: (w[:, :, None] * H).sum(axis=2), "the sum ran over the states' entries"),
        (lambda w, H: (w[:, :, None] * H).sum(axis=0), "the sum ran over the sentences"),
        (lambda w, H: np.ones((len(w), 7)), "must return shape (1, 2)"),
        (lambda w, H: (w[:, :, None] * H).sum(axis=1) + 0.1, "c_1 is off: c_b = sum_j"),
    ],
)
def test_context_mistakes_are_named(student, expected):
    result = checks.check_context(student)
    assert result.points == 0 and expected in result.message, result.message
    assert_no_answer(result.message)


def test_a_plain_average_that_includes_padding_is_named_on_the_padded_batch():
    def average_of_every_position(w, H):
        return H.mean(axis=1) if len(w) > 1 else (w[:, :, None] * H).sum(axis=1)

    result = checks.check_context(average_of_every_position)
    assert result.points == 0 and "padding included" in result.message, result.message


# --------------------------------------------------------------- Part 4a: most_attended


@pytest.mark.parametrize("student, expected", [
    (lambda w: w.argmax(axis=1), "0-based"),
    (lambda w: int(np.argmax(w)) + 1, "got a single int on the E10.1 inputs: np.argmax "
                                      "without axis= reads the whole batch"),
    (lambda w: w.argmax(axis=0) + 1, "the arg max ran down each column, over the sentences"),
    (lambda w: w.argmax(axis=1) + 1.0, "as integers (an int array); got float64"),
    (lambda w: np.full(len(w), w.shape[1]), "is a padded (or missing) position"),
])
def test_most_attended_mistakes_are_named(student, expected):
    result = checks.check_most_attended(student)
    assert result.points == 0 and expected in result.message, result.message


def test_an_arg_max_over_the_sentences_is_named_where_the_shape_cannot_tell():
    def by_column_where_square(w):
        return w.argmax(axis=0) + 1 if w.shape[0] == w.shape[1] else w.argmax(axis=1) + 1

    result = checks.check_most_attended(by_column_where_square)
    assert result.points == 0 and "down each column, over the sentences" in result.message


def test_most_attended_may_return_a_list_of_ints():
    assert checks.check_most_attended(lambda w: [int(np.argmax(r)) + 1 for r in w]).passed


# ------------------------------------------------------- the student's own work, in NumPy


def softmax_via_alias(e, mask):
    return np.stack([sm(row) for row in e])


def softmax_via_module(e, mask):
    return A.softmax(np.where(mask, e, -np.inf), axis=1)


def softmax_via_package(e, mask):
    return course_utils.softmax(np.where(mask, e, -np.inf), axis=1)


def my_helper(e):
    return sm(e, axis=1)


def softmax_via_helper(e, mask):
    return my_helper(np.where(mask, e, -np.inf))


def softmax_via_import_module(e, mask):  # no course_utils name in sight: caught while it runs
    return importlib.import_module("course_utils.attention").softmax(
        np.where(mask, e, -np.inf), axis=1)


def softmax_with_a_branch_never_taken(e, mask):  # caught by reading the code
    if e.size > 10_000:
        return sm(e)
    return SOLVED["softmax"](e, mask)


def energies_via_reference(S, H, W_s, W_h, v):
    return np.stack([reference_attention(s, h, W_s, W_h, v).energies for s, h in zip(S, H)])


def energies_via_lambda(S, H, W_s, W_h, v):
    attend = lambda s, h: A.additive_attention(s, h, W_s, W_h, v)  # noqa: E731
    return np.stack([attend(s, h).energies for s, h in zip(S, H)])


def energies_via_the_checks_own_loop(S, H, W_s, W_h, v):
    return checks.per_sentence_energies(S, H, W_s, W_h, v)


def context_via_reference(weights, H):
    return np.einsum("bj,bjd->bd", sm(np.log(weights), axis=1), H)


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
        (checks.check_energies, energies_via_the_checks_own_loop, "`course_utils.checks.e10_1"),
        (checks.check_context, context_via_reference, "uses `sm`"),
    ],
)
def test_calling_the_course_reference_earns_nothing_and_says_write_it_in_numpy(check, student,
                                                                              uses):
    result = check(student)
    assert result.points == 0
    assert uses in result.message, result.message
    assert "Write it yourself with NumPy" in result.message


def test_watching_for_the_reference_restores_everything_even_when_the_student_raises():
    events = []

    def profiler(frame, event, arg):
        events.append(event)

    def cheat_then_crash(e, mask):
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
    assert checks.check_softmax(min_shifted).points == 1  # and the checks still work


def test_a_crash_in_student_code_is_reported():
    result = checks.check_softmax(lambda e, mask: 1 / 0)
    assert result.points == 0
    assert "`softmax` raised ZeroDivisionError" in result.message


def test_inputs_are_not_modified_by_students():
    def vandal(S, H, W_s, W_h, v):
        H[:] = 0
        S[:] = 0
        raise NotImplementedError

    def mask_vandal(e, mask):
        mask[:] = False
        e[:] = 0
        return SOLVED["softmax"](e + 1, ~mask)

    checks.check_energies(vandal)
    checks.check_softmax(mask_vandal)
    np.testing.assert_array_equal(checks.INPUTS["encoder_states"], [[[1, 0], [0, 1], [1, 1]]])
    np.testing.assert_array_equal(checks.INPUTS["decoder_states"], [[0.5, 0.5]])
    assert checks.INPUTS["mask"].all()


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


def test_the_course_pages_numbers_are_a_batch_of_one():
    """E10.1's inputs, a batch of one sentence, give the course page's e_1j, alpha_1j, c_1."""
    (s,), (H,) = checks.INPUTS["decoder_states"], checks.INPUTS["encoder_states"]
    assert s.tolist() == [0.5, 0.5] and H.tolist() == [[1, 0], [0, 1], [1, 1]]
    energies = SOLVED["compute_energies"](*checks._args(checks.INPUTS))
    np.testing.assert_allclose(energies, [reference_attention(s, H, np.eye(2), np.eye(2),
                                                              np.ones(2)).energies])


# ------------------------------------------------------ E10.1's answers are the student's


NOTEBOOK_1 = ROOT / "notebooks" / "01_bottleneck_and_attention_by_hand.ipynb"


def test_notebook_1_works_its_own_example_not_e10_1():
    notebook = nbformat.read(NOTEBOOK_1, as_version=4)
    text = "\n".join(c.source + (cell_text(c) if c.cell_type == "code" else "")
                     for c in notebook.cells)
    e10_1 = reference_attention(checks.INPUTS["decoder_states"][0],
                                checks.INPUTS["encoder_states"][0], np.eye(2), np.eye(2),
                                np.ones(2))
    answers = [f"{x:.4f}" for x in (*e10_1.energies, *e10_1.weights, *e10_1.context)]
    leaked = [number for number in answers if number in text]
    assert not leaked, f"notebook 1 shows E10.1's answers: {leaked}"
    assert "np.array([0.5, 0.5])" not in text, "notebook 1 sets up E10.1's inputs"
    assert "## 4. A worked example, step by step" in text


def test_most_attended_through_the_alignment_module_earns_nothing():
    from course_utils.alignment import hard_alignment

    def most_attended(weights):
        return hard_alignment(weights) + 1

    result = checks.check_most_attended(most_attended)
    assert result.points == 0 and "course_utils.alignment" in result.message, result.message


# ---------------------------------------------------------------- Part 4: winner, any query


def test_h3_wins_for_every_query_when_the_projections_are_the_identity_and_v_is_positive():
    """The worked answer's claim: each energy is sum_k tanh(s_k + h_jk), increasing in every
    coordinate of the key, and h_3 = [1, 1] is at least h_1 and h_2 everywhere."""
    rng = np.random.default_rng(0)
    (H,), eye, v = checks.INPUTS["encoder_states"], np.eye(2), checks.INPUTS["v"]
    second_query = checks.SECOND_QUERY[0]
    for query in [second_query, *rng.normal(scale=3.0, size=(500, 2))]:
        energies = reference_attention(query, H, eye, eye, v).energies
        assert energies.argmax() == 2 and energies[2] > energies[:2].max()
    second = reference_attention(second_query, H, eye, eye, v).energies
    np.testing.assert_allclose(second, [0.443, 0.924, 1.367], atol=1e-3)
    assert H[0] @ second_query > H[1] @ second_query  # h_1 is more alike...
    assert second[1] > second[0]  # ...and h_2 wins over it


def right_winner(S, H, W_s, W_h, v, mask):
    energies = np.where(mask, np.tanh(queries(S, W_s) + H @ W_h.T) @ v, -np.inf)
    return energies.argmax(axis=1) + 1


def winner_of(energies_of):
    def winner(S, H, W_s, W_h, v, mask):
        return np.where(mask, energies_of(S, H, W_s, W_h, v), -np.inf).argmax(axis=1) + 1
    return winner


@pytest.mark.parametrize("student, hint", [
    (lambda *a: right_winner(*a) - 1, "0-based"),
    (lambda *a: np.where(a[5], SOLVED["compute_energies"](*a[:5]), np.inf).argmin(axis=1) + 1,
     "smallest energy"),
    (lambda S, *a: np.full(len(S), 3), "E10.1's answer whatever it is given"),
    (lambda S, H, W_s, W_h, v, mask: right_winner(*checks._args(checks.INPUTS, mask=True))
     .repeat(len(S)), "does it use its arguments"),
    (winner_of(lambda S, H, W_s, W_h, v: H.sum(axis=2)), "largest sum of entries"),
    (winner_of(projections_left_out), "the projections are left out"),
    (winner_of(no_v), "v is not used"),
    (lambda S, H, W_s, W_h, v, mask: (np.tanh(queries(S, W_s) + H @ W_h.T) @ v).argmax(axis=1)
     + 1, "some winners are padded positions"),
])
def test_winner_mistakes_are_named_and_earn_nothing(student, hint):
    result = checks.check_winner(student)
    assert result.points == 0 and hint in result.message, result.message
    assert_no_answer(result.message)


def test_winner_is_right_for_any_query_and_must_return_ints():
    assert checks.check_winner(right_winner).passed
    result = checks.check_winner(lambda *args: right_winner(*args) + 0.0)
    assert result.points == 0 and "as integers (an int array); got float64" in result.message
    result = checks.check_winner(lambda *args: right_winner(*args) % args[1].shape[1] + 1)
    assert result.points == 0 and "does not have the largest weight" in result.message


def test_winner_is_judged_on_fresh_queries_under_the_grader():
    check = checks.EXERCISE.checks["winner"]
    assert judged_by_grader(check, right_winner, seed=7).passed
    assert judged_by_grader(check, lambda S, *a: np.full(len(S), 3), seed=7).points == 0
    with run_seed(1):
        first = checks._winner_cases()
    with run_seed(2):
        second = checks._winner_cases()
    assert not np.array_equal(first[-1][1]["W_s"], second[-1][1]["W_s"])
    assert all(not inputs["mask"].all() for _, inputs in first[3:])  # padded batches


def test_winners_that_two_mistakes_explain_name_both():
    """tanh is monotone, so e_j without it and tanh(v^T ...) always share their winners: the
    hint names both rather than one by chance."""
    check = checks.EXERCISE.checks["winner"]
    results = [judged_by_grader(check, winner_of(no_tanh), seed=seed) for seed in range(6)]
    # without the tanh the largest energy is often, not always, elsewhere: most runs catch it
    failed = [r for r in results if not r.passed]
    assert len(failed) >= 4, [r.message for r in results]
    for result in failed:
        assert result.points == 0 and "alone cannot tell them apart" in result.message, result.message
        assert "the tanh is missing" in result.message and "tanh of that dot" in result.message
