"""E10.2's Part 6a, ``word_differences``: right in any style earns the points, a wrong answer
loses them with a named hint, values typed in do not pass. (Its attention model, the student's
own from notebooks 2 and 3, is tested in ``tests/test_yours.py``.)"""

import re
from collections import Counter

import pytest
from helpers import ROOT, judged_by_grader, notebook_functions

from course_utils.checks import NOT_IMPLEMENTED
from course_utils.checks import e10_2 as checks
from course_utils.checks.e10_2.word_errors import _case
from course_utils.models import ModelConfig


def functions(name):
    namespace = notebook_functions(ROOT / name / "E10.2-vanilla-vs-attention.ipynb")
    namespace["re"] = re
    return namespace


SOLUTION, EXERCISE = functions("solutions"), functions("exercises")
CONFIG = ModelConfig(src_vocab_size=17, tgt_vocab_size=15, embed_dim=6, hidden_dim=5,
                     attention_dim=4, dropout=0.0, maxout_dim=3)


# --------------------------------------------------------------- Part 7a: word_differences


def counted(hypothesis, reference):  # the right answer in another style than the solution's
    said = Counter(re.findall(r"\w+", hypothesis.lower()))
    wanted = Counter(re.findall(r"\w+", reference.lower()))
    return {"missing": sorted((wanted - said).elements()),
            "extra": sorted((said - wanted).elements()),
            "repeated": sorted(w for w, n in said.items() if n > 1 and n > wanted[w])}


def variant(words=lambda t: re.findall(r"\w+", t.lower()), sets=False, swap=False,
            repeats=None, unsorted=False):
    def word_differences(hypothesis, reference):
        said, wanted = Counter(words(hypothesis)), Counter(words(reference))
        if sets:
            said, wanted = Counter(set(said)), Counter(set(wanted))
        out = {"missing": sorted((wanted - said).elements()),
               "extra": sorted((said - wanted).elements()),
               "repeated": sorted(w for w, n in said.items() if n > 1 and n > wanted[w])}
        if repeats:
            out["repeated"] = repeats(said, wanted)
        if swap:
            out["missing"], out["extra"] = out["extra"], out["missing"]
        if unsorted:
            out["missing"] = out["missing"][::-1]
        return out
    return word_differences


#: (student, points, hint) for the usual mistakes of word_differences, with or without the
#: grader's answers.
MISTAKES = [
    (variant(words=lambda t: re.findall(r"\w+", t)), 0, "lowercase both texts first"),
    (variant(words=lambda t: t.lower().split()), 0, "punctuation sticks to the words"),
    (variant(sets=True), 0, "sets lose the counts"),
    (variant(swap=True), 0, "`missing` and `extra` are swapped"),
    (variant(unsorted=True), 0, "sort the list"),
    (variant(repeats=lambda said, wanted: sorted(w for w, n in said.items() if n > 1)), 2,
     "a word the reference also repeats is no loop"),
]


def test_word_differences_right_in_any_style_earns_the_points():
    assert SOLUTION["word_differences"]("Ein hund, ein hund läuft.", "Ein Hund rennt.") == {
        "missing": ["rennt"], "extra": ["ein", "hund", "läuft"], "repeated": ["ein", "hund"]}
    for student in (SOLUTION["word_differences"], counted):
        assert checks.check_word_differences(student).passed
        assert judged_by_grader(checks.check_word_differences, student).passed


@pytest.mark.parametrize("student, points, hint", [
    *MISTAKES,
    (lambda h, r: {"missing": [], "extra": []}, 0, "the keys must be"),
    (lambda h, r: "ein hund", 0, "must return a dict"),
])
def test_word_differences_mistakes_lose_points_with_a_named_hint(student, points, hint):
    result = checks.check_word_differences(student)
    assert result.points == points and hint in result.message, result.message


def test_values_typed_in_for_one_run_fail_on_another():
    hypothesis, reference = _case(120)
    typed = counted(hypothesis, reference)
    assert not checks.check_word_differences(lambda h, r: typed).passed
    assert judged_by_grader(checks.check_word_differences, lambda h, r: typed, seed=7).points == 0


def test_the_untouched_exercise_scores_zero_on_word_differences():
    result = checks.check_word_differences(EXERCISE["word_differences"])
    assert result.points == 0 and result.message == NOT_IMPLEMENTED


@pytest.mark.parametrize("student, points, hint", MISTAKES)
def test_without_the_graders_answers_the_fixed_sentences_check_and_name_mistakes(
        monkeypatch, student, points, hint):
    """A handout has no checks/e10_2/hidden.py: word_differences is checked on the fixed
    sentences, whose answers are stored, names the same mistakes, and says that the grader
    adds fresh sentences."""
    from course_utils.checks.e10_2 import word_errors

    monkeypatch.setattr(word_errors, "HIDDEN", None)
    for right in (SOLUTION["word_differences"], counted):
        result = checks.check_word_differences(right)
        assert result.passed and "fresh translations" in result.message, result
    result = checks.check_word_differences(student)
    assert result.points == points and hint in result.message, result.message


def test_answers_recited_from_the_stored_constants_fail_when_graded():
    from course_utils.checks.e10_2 import word_errors

    def recited(hypothesis, reference):
        for base in word_errors.KNOWN:
            if (hypothesis, reference) == _case(base):
                return word_errors.KNOWN[base]["right"]
        return {"missing": [], "extra": [], "repeated": []}

    assert checks.check_word_differences(recited).passed  # the fixed sentences, in a notebook
    assert judged_by_grader(checks.check_word_differences, recited, seed=7).points == 0


def test_calling_the_graders_answers_earns_nothing():
    from course_utils.checks.e10_2 import hidden

    def borrowed(hypothesis, reference):
        return hidden.word_differences(re.findall(r"\w+", hypothesis.lower()),
                                             re.findall(r"\w+", reference.lower()))

    result = checks.check_word_differences(borrowed)
    assert result.points == 0 and "the course's own code" in result.message, result
