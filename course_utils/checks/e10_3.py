"""Checks for exercise E10.3: reading attention heatmaps.

Students write four pattern finders; each check runs the student's function on hand-made
attention matrices whose answers are known (a diagonal, a verb-final reordering, a reversal,
matrices taller and wider than square, a phrase read by one word) and on random ones, compares
with :mod:`course_utils.alignment`, and names the likely mistake without printing the answer:

- ``hard_alignment(weights)``: the source position each output step attends to most;
- ``monotonicity(weights)``: the share of consecutive steps that do not move backwards;
- ``find_crossings(weights)``: pairs ``(i, k)``, ``i < k``, aligned in the opposite order;
- ``many_to_one(weights, threshold=0.3)``: ``{output step: [source positions]}`` for steps
  giving at least ``threshold`` to each of two or more source words.

A function that calls or imports :mod:`course_utils.alignment` (notebook 5's versions, which
the checks compare against), directly or through a helper, earns nothing: the exercise is to
write them.

The written answers (the patterns found in the student's own model, the student's own probe
sentences, and that model against notebook 4's) are graded by hand. :func:`ready` and
:func:`probe_sentences` serve the cells that use the student's code on the model's
translations, so that Run All on an unfinished exercise reaches every check and the score.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils import alignment
from course_utils.checks.calling import CheckFailed, call_student, student_line
from course_utils.checks.framework import Exercise
from course_utils.checks.probes import fresh_seed

__all__ = ["EXERCISE", "MATRICES", "REFERENCE", "check_crossings", "check_hard_alignment",
           "check_many_to_one", "check_monotonicity", "probe_sentences", "ready"]

EXERCISE = Exercise("E10.3", "Reading attention heatmaps")

#: The library module that computes the answers (notebook 5's versions); students must not use it.
REFERENCE = ("course_utils.alignment",)


def _rows(*rows) -> np.ndarray:
    return np.array(rows, dtype=float)


#: Known matrices, rows = output steps. Comments give the hard alignment.
MATRICES = {
    "diagonal": np.eye(4) * 0.9 + 0.025,  # 0 1 2 3
    # "he has eaten something" -> "er hat etwas gegessen": the verb goes last
    "verb-final": _rows([0.9, 0.05, 0.05, 0.0], [0.05, 0.9, 0.05, 0.0],
                        [0.0, 0.05, 0.05, 0.9], [0.0, 0.1, 0.85, 0.05]),  # 0 1 3 2
    "reversal": np.fliplr(np.eye(4)) * 0.85 + 0.0375,  # 3 2 1 0
    # more output steps than source words; two steps stay on word 1
    "tall": _rows([0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8],
                  [0.5, 0.3, 0.2], [0.05, 0.05, 0.9]),  # 0 1 1 2 0 2
    # fewer output steps than source words
    "wide": _rows([0.1, 0.6, 0.1, 0.1, 0.05, 0.05], [0.05, 0.05, 0.1, 0.1, 0.1, 0.6],
                  [0.1, 0.1, 0.1, 0.5, 0.1, 0.1]),  # 1 5 3
    # "the boy is playing" -> "der junge spielt": one step reads two words
    "phrase": _rows([0.9, 0.1, 0.0, 0.0], [0.05, 0.9, 0.05, 0.0], [0.0, 0.05, 0.45, 0.5]),
    "one step": _rows([0.2, 0.7, 0.1]),
}


def _random_matrices(seed: int = 7) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(fresh_seed(seed))
    return {f"random {t}x{s}": rng.dirichlet(np.full(s, 0.4), size=t)
            for t, s in [(5, 7), (8, 6), (9, 9)]}


def _all_matrices() -> dict[str, np.ndarray]:
    return {**MATRICES, **_random_matrices()}


def _call(fn: Callable, weights: np.ndarray, *args, name: str = "test"):
    given = f"the {name} matrix, shape {weights.shape}"
    result = call_student(fn, weights.copy(), *args, given=given)  # a copy: changes don't count
    if result is None:
        raise CheckFailed("your function returned None: did you forget `return`?")
    return result


def _as_int_vector(result, name: str, tgt_len: int, src_len: int) -> np.ndarray:
    if hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    try:
        array = np.asarray(result)
    except (TypeError, ValueError):
        raise CheckFailed(f"hard_alignment must return an array of positions; got "
                          f"{type(result).__name__}") from None
    if array.shape == (src_len,) and src_len != tgt_len:
        raise CheckFailed(
            f"on the {name} matrix ({tgt_len} output steps x {src_len} source words) you "
            f"returned {src_len} values, one per source word: return one per output step "
            "(row), the arg max of each row")
    if array.shape != (tgt_len,):
        raise CheckFailed(f"on the {name} matrix, expected one position per output step, "
                          f"shape ({tgt_len},); got {array.shape}")
    if not np.all(np.isfinite(array.astype(float))) or not np.all(array == np.round(array)):
        raise CheckFailed("positions must be whole numbers (indices of source words)")
    return array.astype(int)


@EXERCISE.check("hard_alignment", points=2, target="hard_alignment", own_work=REFERENCE)
def check_hard_alignment(hard_alignment: Callable) -> str:
    for name, weights in _all_matrices().items():
        tgt_len, src_len = weights.shape
        got = _as_int_vector(_call(hard_alignment, weights, name=name), name, tgt_len, src_len)
        expected = weights.argmax(axis=1)
        if np.array_equal(got, expected):
            continue
        if np.array_equal(got, expected + 1):
            raise CheckFailed("positions are 0-based, like Python indices: yours look 1-based")
        if np.array_equal(got, weights.argmin(axis=1)):
            raise CheckFailed("that is each row's smallest weight; the alignment is the largest")
        if tgt_len == src_len and np.array_equal(got, weights.argmax(axis=0)):
            raise CheckFailed("that is the arg max of each column (source word); take it "
                              "along each row (output step), axis 1")
        wrong = np.flatnonzero(got != expected).tolist()
        raise CheckFailed(f"wrong position for output steps {wrong} of the {name} matrix")
    return "correct: one source position per output step, the largest weight of its row"


def _as_fraction(result, name: str) -> float:
    try:
        value = float(result)
    except (TypeError, ValueError):
        raise CheckFailed(f"monotonicity must return a number; got {type(result).__name__} "
                          f"on the {name} matrix") from None
    return value


@EXERCISE.check("monotonicity", points=2, target="monotonicity", own_work=REFERENCE)
def check_monotonicity(monotonicity: Callable) -> str:
    # no rows at all: what E10.3's search passes on when no step of a sentence is confident
    cases = {**_all_matrices(), "empty (no output steps)": np.zeros((0, 4))}
    for name, weights in cases.items():
        positions = weights.argmax(axis=1)
        got = _as_fraction(_call(monotonicity, weights, name=name), name)
        expected = alignment.monotonicity(weights) if len(weights) else 1.0
        if np.isclose(got, expected, atol=1e-9):
            continue
        if len(positions) <= 1:
            steps = "a single output step" if len(positions) else "no output step at all"
            raise CheckFailed(f"with {steps} ({name} matrix) there is nothing to compare: it "
                              "counts as monotonic, 1.0 (no division by zero, no NaN); you "
                              f"returned {got}")
        if np.isnan(got):
            raise CheckFailed(f"returned NaN on the {name} matrix")
        steps = np.diff(positions)
        if np.isclose(got, np.mean(steps > 0)):
            raise CheckFailed("staying on the same source word is not a step backwards: "
                              "count a[i+1] >= a[i]")
        if np.isclose(got, np.sum(steps >= 0)):
            raise CheckFailed("return the share of steps (between 0 and 1), not their number")
        if np.isclose(got, 1 - expected):
            raise CheckFailed("that is the share of steps that go backwards; we want the "
                              "share that do not")
        raise CheckFailed(f"wrong value on the {name} matrix")
    return "correct: 1.0 on a diagonal, 0.0 on a reversal, in between for reorderings"


def _pair_list(result) -> list[tuple[int, int]]:
    try:
        pairs: list[tuple[int, ...]] = [tuple(int(x) for x in pair) for pair in result]
    except (TypeError, ValueError):
        raise CheckFailed("find_crossings must return a list of pairs (i, k) of output "
                          f"steps; got {type(result).__name__}") from None
    if any(len(p) != 2 for p in pairs):
        raise CheckFailed("each crossing is a pair (i, k) of two output steps")
    return [(p[0], p[1]) for p in pairs]


def _as_pairs(pairs: list[tuple[int, int]], name: str) -> set[tuple[int, int]]:
    if len(set(pairs)) != len(pairs):
        raise CheckFailed(f"a pair is listed twice on the {name} matrix")
    return set(pairs)


def _source_pairs(weights: np.ndarray, pairs: set[tuple[int, int]]) -> set[tuple[int, int]]:
    positions = weights.argmax(axis=1)
    return {(int(positions[i]), int(positions[k])) for i, k in pairs}


@EXERCISE.check("find_crossings", points=3, target="find_crossings", own_work=REFERENCE)
def check_crossings(find_crossings: Callable) -> str:
    answers = {name: (weights, _pair_list(_call(find_crossings, weights, name=name)),
                      set(alignment.crossings(weights)))
               for name, weights in _all_matrices().items()}
    # source positions instead of output steps: judged over all matrices, since on a single
    # one the pairs can also read as steps given in the wrong order
    def as_sources(weights: np.ndarray, got: list, expected: set) -> bool:
        sources = _source_pairs(weights, expected)
        return set(got) in (sources, {(b, a) for a, b in sources})

    if (any(set(got) != expected for _, got, expected in answers.values())
            and all(as_sources(*answer) for answer in answers.values())):
        raise CheckFailed("those are the source positions the steps read; return the output "
                          "steps themselves, the row numbers (i, k)")
    for name, (weights, pair_list, expected) in answers.items():
        got = _as_pairs(pair_list, name)
        positions = weights.argmax(axis=1)
        if got == expected:
            continue
        if {(k, i) for i, k in got} == expected:
            raise CheckFailed("give each pair in output order, (i, k) with i < k")
        if got == expected | {(i, k) for i in range(len(positions))
                              for k in range(i + 1, len(positions))
                              if positions[i] == positions[k]}:
            raise CheckFailed("two steps on the same source word do not cross: "
                              "a[i] > a[k], not >=")
        adjacent = {(i, k) for i, k in expected if k == i + 1}
        if got == adjacent:
            raise CheckFailed("you compare neighbouring steps only; every pair i < k can "
                              f"cross (the {name} matrix has crossings further apart)",
                              points=1)
        missing, extra = len(expected - got), len(got - expected)
        raise CheckFailed(f"on the {name} matrix: {missing} crossing pair(s) missing, "
                          f"{extra} pair(s) that do not cross")
    return "correct: every pair of output steps aligned in the opposite order"


def _as_groups(result, name: str) -> dict[int, list[int]]:
    """The student's groups as given (positions in their order, not sorted)."""
    if not isinstance(result, dict):
        raise CheckFailed("many_to_one must return a dict {output step: [source positions]}; "
                          f"got {type(result).__name__}")
    try:
        return {int(step): [int(p) for p in sources] for step, sources in result.items()}
    except (TypeError, ValueError):
        raise CheckFailed("many_to_one's values must be lists of source positions") from None


@EXERCISE.check("many_to_one", points=2, target="many_to_one", own_work=REFERENCE)
def check_many_to_one(many_to_one: Callable) -> str:
    cases = [(name, w, 0.3) for name, w in _all_matrices().items()]
    # a row with exactly the threshold twice, and a stricter threshold
    cases.append(("boundary", _rows([0.3, 0.3, 0.4], [0.9, 0.05, 0.05]), 0.3))
    cases.append(("phrase (threshold 0.5)", MATRICES["phrase"], 0.5))
    for name, weights, threshold in cases:
        got = _as_groups(_call(many_to_one, weights, threshold, name=name), name)
        expected = alignment.many_to_one(weights, threshold)
        if got == expected:
            continue
        if {step: sorted(sources) for step, sources in got.items()} == expected:
            raise CheckFailed("the right groups, but list each step's source positions in "
                              "increasing order, as the question asks", points=1)
        if any(len(v) < 2 for v in got.values()):
            raise CheckFailed("only output steps that read two or more source words belong "
                              "in the result")
        strict = {step: [p for p in sources if weights[step, p] > threshold]
                  for step, sources in expected.items()}
        if got == {step: sources for step, sources in strict.items() if len(sources) > 1}:
            raise CheckFailed("a weight equal to the threshold counts: use >=")
        if threshold != 0.3 and got == alignment.many_to_one(weights, 0.3):
            raise CheckFailed("use the threshold argument, not a fixed number")
        raise CheckFailed(f"wrong groups on the {name} matrix")
    return "correct: the steps that read several source words, and which ones"


EXERCISE.manual_question(
    "patterns",
    points=2,
    prompt="One example each of monotonic alignment, reordering and many-to-one alignment from "
           "your own model's translations of the 2017 Flickr test set, with the sentence and the "
           "cells that show it.",
)
EXERCISE.manual_question(
    "probes",
    points=2,
    prompt="Your own probe sentences (a clause where German puts the verb last; a compound "
           "noun): what your model wrote, what its heatmaps show, and what that says about the "
           "word order and the compounds it learned.",
)
EXERCISE.manual_question(
    "comparison",
    points=1,
    prompt="Your model against notebook 4's on the same sentences: what yours does that "
           "notebook 4's does not (focus, reordering, unknown words), and why, from how each "
           "was trained.",
)


# ------------------------------------------- the cells that use the student's functions


#: A small attention matrix for :func:`ready`: a diagonal with one step reading two words.
_SAMPLE = _rows([0.8, 0.1, 0.1], [0.1, 0.45, 0.45], [0.1, 0.1, 0.8])


def ready(*functions: object) -> bool:
    """Whether each of the student's pattern finders runs (and returns something) on a small
    attention matrix. When one does not (not written yet, a crash, no ``return``), says which
    and returns False: the cells that run them over the model's translations then skip that
    search instead of stopping Run All."""
    problems = []
    for function in functions:
        name = getattr(function, "__name__", None) or type(function).__name__
        if not callable(function):
            problems.append(f"`{name}` is not a function: run the cell that defines it")
            continue
        try:
            result = function(_SAMPLE.copy())
        except NotImplementedError:
            problems.append(f"`{name}` is not written yet")
            continue
        except Exception as error:  # the student's code: say what and where, never stop
            problems.append(f"`{name}` raised {type(error).__name__}: {error}"
                            f"{student_line(error)}")
            continue
        if result is None:
            problems.append(f"`{name}` returned None: did you forget `return`?")
    if problems:
        print("Skipped here until your functions run: " + "; ".join(problems)
              + ". Their checks above say what to fix.")
    return not problems


def probe_sentences(my_probes: object) -> dict[str, list[str]]:
    """The student's probe sentences, ``my_probes()``, as ``{phenomenon: [English sentences]}``;
    when the part is not written yet, or returns something else, says so and gives ``{}``."""
    if not callable(my_probes):
        print("`my_probes` is not a function: run the cell that defines it")
        return {}
    try:
        probes = my_probes()
    except NotImplementedError:
        print("`my_probes` is not written yet: write your sentences, then run this cell again")
        return {}
    except Exception as error:  # the student's code: say what and where, never stop
        print(f"`my_probes` raised {type(error).__name__}: {error}{student_line(error)}")
        return {}
    if not isinstance(probes, dict) or not probes:
        print(f"my_probes must return a dict {{phenomenon: [English sentences]}}; got "
              f"{type(probes).__name__}{' (empty)' if probes == {} else ''}")
        return {}
    checked: dict[str, list[str]] = {}
    for phenomenon, sentences in probes.items():
        if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)) or not all(
                isinstance(s, str) and s.strip() for s in sentences) or not sentences:
            print(f"my_probes()[{phenomenon!r}] must be a list of English sentences (strings, "
                  f"at least one); got {type(sentences).__name__}: {str(sentences)[:80]}")
            return {}
        checked[str(phenomenon)] = list(sentences)
        if len(sentences) < 2:
            print(f"my_probes()[{phenomenon!r}] has one sentence; the part asks for at least two "
                  "of each kind, so that one odd translation does not decide what you conclude")
    return checked
