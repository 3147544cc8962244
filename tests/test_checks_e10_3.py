"""E10.3 checks: full marks for the solution and for right answers written another way, zero for
the untouched exercise and for shortcuts, a named mistake for the usual errors."""

import re
import string

import nbformat
import numpy as np
import pytest
from helpers import ROOT, judged_by_grader, notebook_functions

from course_utils.checks import NOT_IMPLEMENTED, get_exercise
from course_utils.checks import e10_3 as checks

SOLUTION = ROOT / "solutions" / "E10.3-reading-attention-heatmaps.ipynb"
EXERCISE = ROOT / "exercises" / "E10.3-reading-attention-heatmaps.ipynb"
NOTEBOOK_5 = ROOT / "notebooks" / "05_reading_attention_heatmaps.ipynb"


def cells(path):
    return nbformat.read(path, as_version=4).cells


def test_solution_scores_full_marks_and_exercise_scores_zero():
    solution = notebook_functions(SOLUTION)
    for result in checks.EXERCISE.grade(solution):
        assert result.passed, result
    for check in checks.EXERCISE.checks.values():
        assert judged_by_grader(check, solution[check.target]).passed, check.name
    for result in checks.EXERCISE.grade(notebook_functions(EXERCISE)):
        assert result.points == 0 and result.message == NOT_IMPLEMENTED
    exercise = get_exercise("E10.3")
    assert exercise.auto_points == 9 and exercise.max_points == 14
    assert {name: c.points for name, c in exercise.checks.items()} == {
        "fertility": 2, "jump_distribution": 4, "punctuation_mass": 3}
    assert {name: q.points for name, q in exercise.manual.items()} == {
        "fertility_in_your_model": 1, "jumps_in_your_model": 1, "punctuation_in_your_model": 1,
        "probes": 1, "comparison": 1}


def test_the_headers_points_table_and_the_answer_cells_agree_with_the_checks():
    notebook = cells(SOLUTION)
    table = dict(re.findall(r"^\| (\d)\. .*? \| (\d|–) \| ", notebook[0].source, re.M))
    parts = [*checks.EXERCISE.checks.values(), *checks.EXERCISE.manual.values()]
    assert [float(table[str(n)]) for n in range(2, 10)] == [part.points for part in parts]
    answers = {c.metadata["course"]["manual"]: c.metadata["course"]["points"]
               for c in notebook if "manual" in c.metadata.get("course", {})}
    assert answers == {name: q.points for name, q in checks.EXERCISE.manual.items()}


def test_the_exercise_reads_the_students_own_model_and_a_test_set_notebook_5_did_not():
    exercise = "\n".join(c.source for c in cells(EXERCISE))
    notebook_5 = "\n".join(c.source for c in cells(NOTEBOOK_5))
    assert "find_or_train_exercise_checkpoint(" in exercise
    assert 'split = "test_2017_flickr"' in exercise and "test_2017_flickr" not in notebook_5
    assert "def my_probes():" in exercise  # the student writes the probe sentences


def test_the_graded_measures_are_not_in_the_library_or_notebook_5():
    import course_utils.alignment as library

    notebook_5 = "\n".join(c.source for c in cells(NOTEBOOK_5))
    for name in checks.EXERCISE.checks:
        assert not hasattr(library, name) and f"def {name}(" not in notebook_5


def test_each_measures_question_asks_about_the_students_own_outputs():
    questions = {c.id: c.source for c in cells(EXERCISE)}
    for cell in ("c019", "c038", "c040"):  # Parts 5, 6 and 7
        assert "From **your** output" in questions[cell], cell


# ------------------------------------------------------- the known matrices and their answers


def loops_fertility(weights):
    return [sum(row[j] for row in weights) for j in range(len(weights[0]))]


def loops_jumps(weights):
    aligned = [max(range(len(row)), key=lambda j: row[j]) for row in weights]
    jumps = [b - a for a, b in zip(aligned, aligned[1:])]
    return {j: jumps.count(j) / len(jumps) for j in set(jumps)}


def test_the_hand_computed_answers_are_right_and_say_what_each_measure_means():
    for name, weights in checks.MATRICES.items():
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, err_msg=name)
        np.testing.assert_allclose(checks.FERTILITY[name], loops_fertility(weights.tolist()))
        expected, got = checks.JUMPS[name], loops_jumps(weights.tolist())
        assert expected.keys() == got.keys() and all(
            np.isclose(expected[k], got[k]) for k in got), name
        marks = [t in {".", ",", "!", '"', "--"} for t in checks.TOKENS[name]]
        np.testing.assert_allclose(checks.PUNCTUATION_MASS[name],
                                   [sum(w for w, m in zip(row, marks) if m) for row in weights])
        # fertility shares out the output: the columns add up to the number of output steps
        assert np.isclose(sum(checks.FERTILITY[name]), len(weights))
    assert checks.JUMPS["diagonal"] == {1: 1.0} and checks.JUMPS["reversal"] == {-1: 1.0}
    assert checks.JUMPS["verb-final"][-1] > 0  # the verb moved to the end: one jump back
    assert checks.FERTILITY["tall"][1] > 2  # two steps stay on word 1: read twice over


# ------------------------------------------------------------------ named mistakes


def message(check, fn, points=0):
    result = check(fn)
    assert not result.passed and result.points == points, result
    return result.message


def fertility(weights):
    return np.asarray(weights).sum(axis=0)


def test_fertility_mistakes_are_named():
    # the sum of each row (always 1) has one value per output step
    assert "return one per source word" in message(checks.check_fertility,
                                                   lambda w: np.asarray(w).sum(axis=1))
    assert "not its mean" in message(checks.check_fertility, lambda w: np.asarray(w).mean(0))
    hard = message(checks.check_fertility,
                   lambda w: np.bincount(np.asarray(w).argmax(1), minlength=w.shape[1]))
    assert "adds up the weights themselves" in hard
    assert "expected one value per source word" in message(
        checks.check_fertility, lambda w: np.asarray(w).sum(axis=0)[:-1])


def shares(moves):
    values, counts = np.unique(moves, return_counts=True)
    return dict(zip(values.tolist(), (counts / counts.sum()).tolist())) if len(moves) else {}


def moves(weights):
    return np.diff(np.asarray(weights).argmax(axis=1))


def test_jump_mistakes_are_named_and_counts_get_partial_credit():
    assert "divide by the number of jumps" in message(
        checks.check_jump_distribution,
        lambda w: {k: v * (len(w) - 1) for k, v in shares(moves(w)).items()}, points=2)
    assert "signs are flipped" in message(checks.check_jump_distribution,
                                          lambda w: shares(-moves(w)))
    assert "keep the sign" in message(checks.check_jump_distribution,
                                      lambda w: shares(np.abs(moves(w))))
    assert "jump of 0, and it counts" in message(
        checks.check_jump_distribution, lambda w: shares(moves(w)[moves(w) != 0]))
    assert "arg max of each column" in message(
        checks.check_jump_distribution, lambda w: shares(np.diff(np.asarray(w).argmax(axis=0))))

    def divides_by_zero(weights):
        found = shares(moves(weights))
        return found if found else {0: float("nan")}

    assert "return an empty dict" in message(checks.check_jump_distribution, divides_by_zero)


def test_punctuation_mistakes_are_named():
    def mass(test):
        return lambda w, tokens: np.asarray(w)[:, [test(t) for t in tokens]].sum(axis=1)

    any_mark = mass(lambda t: any(ch in string.punctuation for ch in t))
    assert "t-shirt" in message(checks.check_punctuation_mass, any_mark)
    assert "only the full stop" in message(checks.check_punctuation_mass, mass(lambda t: t == "."))
    on_words = message(checks.check_punctuation_mass,
                       lambda w, t: 1 - mass(lambda x: not any(c.isalnum() for c in x))(w, t))
    assert "weight on the words" in on_words
    assert "one value per output step" in message(
        checks.check_punctuation_mass,
        lambda w, t: np.asarray(w)[:, [x in string.punctuation for x in t]].sum(axis=0))


# ------------------------------------------------- right answers in another style earn them


def test_right_answers_written_another_way_earn_full_marks():
    import torch

    def fertility_by_loops(weights):
        totals = [0.0] * len(weights[0])
        for row in weights:
            for j, w in enumerate(row):
                totals[j] += w
        return totals

    def fertility_in_torch(weights):
        return torch.as_tensor(weights).sum(dim=0)

    def jumps_in_numpy(weights):
        return {int(k): float(v) for k, v in shares(moves(weights)).items()}

    def jumps_with_numpy_keys(weights):
        found = shares(moves(weights))
        return {np.int64(k): np.float64(v) for k, v in found.items()}

    def punctuation_from_string(weights, source_tokens):
        marks = np.array([all(c in string.punctuation for c in t) for t in source_tokens])
        return np.asarray(weights) @ marks

    for check, fn in [(checks.check_fertility, fertility_by_loops),
                      (checks.check_fertility, fertility_in_torch),
                      (checks.check_jump_distribution, jumps_in_numpy),
                      (checks.check_jump_distribution, jumps_with_numpy_keys),
                      (checks.check_punctuation_mass, punctuation_from_string)]:
        assert check(fn).passed, (fn.__name__, check(fn))
        assert judged_by_grader(check, fn).passed, fn.__name__


def test_checks_do_not_depend_on_the_input_being_left_alone():
    def scribbles(weights):
        result = np.asarray(weights).sum(axis=0)
        weights[:] = 0
        return result

    assert checks.check_fertility(scribbles).passed


def test_fresh_matrices_every_graded_run_so_hard_coded_answers_fail():
    memory = {}

    def honest(weights):
        memory[weights.tobytes()] = weights.sum(axis=0)
        return weights.sum(axis=0)

    def memorised(weights):  # the answers of one graded run, written into the notebook
        return memory.get(weights.tobytes(), np.zeros(weights.shape[1]))

    assert judged_by_grader(checks.check_fertility, honest, seed=1).passed
    assert judged_by_grader(checks.check_fertility, memorised, seed=1).passed
    again = judged_by_grader(checks.check_fertility, memorised, seed=2)
    assert not again.passed and "random" in again.message


def test_a_crash_names_the_matrix_it_was_given():
    result = checks.check_punctuation_mass(lambda w, tokens: w[:, tokens.index("!")])
    assert not result.passed and "matrix" in result.message


# ------------------------------------------------------------------ the library is off limits


DELEGATING = """
from course_utils.alignment import hard_alignment as aligned_positions
from course_utils.alignment import word_class


def fertility(weights):
    return np.eye(weights.shape[1])[aligned_positions(weights)].sum(axis=0) * 0 + weights.sum(0)


def jump_distribution(weights):
    a = aligned_positions(weights)
    jumps = np.diff(a)
    values, counts = np.unique(jumps, return_counts=True)
    return {int(v): c / len(jumps) for v, c in zip(values, counts)}


def punctuation_mass(weights, source_tokens):
    marks = [word_class(t) == "punctuation" for t in source_tokens]
    return weights[:, marks].sum(axis=1)
"""


@pytest.mark.parametrize("part, uses", [
    ("fertility", "uses `aligned_positions`, which is `course_utils.alignment.hard_alignment`"),
    ("jump_distribution", "uses `aligned_positions`"),
    ("punctuation_mass", "uses `word_class`, which is `course_utils.alignment.word_class`"),
])
def test_a_function_that_calls_notebook_5s_library_scores_zero(part, uses):
    namespace: dict = {"np": np}
    exec(DELEGATING, namespace)  # as a notebook cell defines them
    check = checks.EXERCISE.checks[part]
    for result in (check(namespace[check.target]), judged_by_grader(check,
                                                                    namespace[check.target])):
        assert result.points == 0, result
        assert uses in result.message, result.message


def test_the_solution_is_its_own_work_though_the_notebook_imports_the_library():
    solution = notebook_functions(SOLUTION)
    setup = cells(SOLUTION)[1].source
    imports = [line for line in setup.splitlines() if "course_utils.alignment" in line]
    assert imports  # the notebook uses notebook 5's measures in Parts 5-9
    exec("\n".join(imports), solution)
    for check in checks.EXERCISE.checks.values():
        assert check(solution[check.target]).passed, check.name


# ------------------------------------ the cells that run the student's functions on the model


def test_ready_says_which_function_to_write_first_and_never_raises(capsys):
    solution = notebook_functions(SOLUTION)
    untouched = notebook_functions(EXERCISE)
    names = ("fertility", "jump_distribution", "punctuation_mass")
    assert checks.ready(*(solution[n] for n in names))
    assert capsys.readouterr().out == ""

    def forgot_return(weights):
        weights.sum(axis=0)

    def crashes(weights):
        return weights[10]

    assert not checks.ready(solution["fertility"], untouched["jump_distribution"],
                            forgot_return, crashes, None)
    printed = capsys.readouterr().out
    assert "`jump_distribution` is not written yet" in printed
    assert "`forgot_return` returned None: did you forget `return`?" in printed
    assert "`crashes` raised IndexError" in printed and "weights[10]" in printed
    assert "is not a function" in printed and "`fertility`" not in printed


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


def test_without_the_graders_answers_the_known_matrices_still_check_and_name_mistakes(
        monkeypatch):
    """A handout has no checks/hidden_e10_3.py: its checks run the known matrices (answers
    written by hand), name the usual mistakes there and say that the grader adds random ones.
    A function that only recites the known answers passes there, and fails once graded."""
    solution = notebook_functions(SOLUTION)

    def recited(weights):  # knows the seven answers by heart, nothing else
        for name, known in checks.MATRICES.items():
            if known.shape == np.shape(weights) and np.allclose(known, weights):
                return np.array(checks.FERTILITY[name])
        return np.zeros(np.shape(weights)[1])

    graded = checks.check_fertility(recited)
    assert not graded.passed and "random" in graded.message
    monkeypatch.setattr(checks, "HIDDEN", None)
    for check in checks.EXERCISE.checks.values():
        result = check(solution[check.target])
        assert result.passed and "7 known matrices" in result.message, result
    assert checks.check_fertility(recited).passed
    mean = checks.check_fertility(lambda w: np.asarray(w).sum(0) / len(w))
    assert not mean.passed and "divided by the number of output steps" in mean.message
    signs = checks.check_jump_distribution(
        lambda w: {-k: v for k, v in solution["jump_distribution"](w).items()})
    assert not signs.passed and "signs are flipped" in signs.message
    unsigned = checks.check_jump_distribution(
        lambda w: _unsigned_shares(solution["jump_distribution"](w)))
    assert not unsigned.passed and "keep the sign" in unsigned.message


def _unsigned_shares(shares):
    out = {}
    for jump, share in shares.items():
        out[abs(jump)] = out.get(abs(jump), 0.0) + share
    return out
