"""Checks for exercise E10.3: reading attention heatmaps.

Students write three measures of an attention matrix that :mod:`course_utils.alignment` does not
have. Each check runs the student's function on hand-made matrices whose answers are known (a
diagonal, a verb-final reordering, a reversal, matrices taller and wider than square, a phrase
read by one word) and on random ones drawn afresh in every graded run, and names the likely
mistake without printing the answer:

- ``fertility(weights)``: the total attention each source position receives over the output;
- ``jump_distribution(weights)``: ``{jump: share}`` of the moves ``a[i + 1] - a[i]`` between
  consecutive steps' aligned (arg max) source positions;
- ``punctuation_mass(weights, source_tokens)``: per output step, the weight left on source
  tokens that are punctuation.

The answers for the known matrices are constants, written by hand. The answers for the random
matrices come from :mod:`course_utils.checks.hidden_e10_3`, which the student handout leaves
out: in a handout the checks run the known matrices only (and say that the grader adds random
ones), so that no copy of the answers ships with the exercise. A function that calls or imports
:mod:`course_utils.alignment` or that module, directly or through a helper, earns nothing: the
exercise is to write the measures.

The written answers (what each measure finds in the student's own model on the 2017 test set,
the student's own probe sentences, and that model against notebook 4's) are graded by hand.
:func:`ready` and :func:`probe_sentences` serve the cells that use the student's code on the
model's translations, so that Run All on an unfinished exercise reaches every check and the
score.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from types import ModuleType

import numpy as np

from course_utils.checks.calling import CheckFailed, call_student, student_line
from course_utils.checks.framework import Exercise
from course_utils.checks.hints import raise_named
from course_utils.checks.probes import fresh_seed

HIDDEN: ModuleType | None
try:  # the grader's answers for random matrices; a student handout has no such module
    import course_utils.checks.hidden_e10_3 as HIDDEN
except ImportError:
    HIDDEN = None


def _graders() -> ModuleType:
    """The grader's answers. Only the random matrices ask for them, and those are drawn only
    where the answers are."""
    if HIDDEN is None:
        raise RuntimeError("this copy of the course has no course_utils/checks/hidden_e10_3.py")
    return HIDDEN

__all__ = ["EXERCISE", "MATRICES", "REFERENCE", "check_fertility", "check_jump_distribution",
           "check_punctuation_mass", "probe_sentences", "ready"]

EXERCISE = Exercise("E10.3", "Reading attention heatmaps")

#: The library module of notebook 5's alignment measures, and the grader's answers (where this
#: copy of the course has them): a function that uses either scores 0.
REFERENCE = ("course_utils.alignment",) + (("course_utils.checks.hidden_e10_3",) if HIDDEN else ())


def _rows(*rows) -> np.ndarray:
    return np.array(rows, dtype=float)


#: Known matrices, rows = output steps. Comments give the hard alignment (arg max of each row).
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

#: Hand-computed answers for the known matrices (the tests hold the checks to them).
FERTILITY = {
    "diagonal": [1.0, 1.0, 1.0, 1.0],
    "verb-final": [0.95, 1.1, 1.0, 0.95],
    "reversal": [1.0, 1.0, 1.0, 1.0],
    "tall": [1.65, 2.05, 2.3],
    "wide": [0.25, 0.75, 0.3, 0.7, 0.25, 0.75],
    "phrase": [0.95, 1.05, 0.5, 0.5],
    "one step": [0.2, 0.7, 0.1],
}
JUMPS = {
    "diagonal": {1: 1.0},
    "verb-final": {1: 1 / 3, 2: 1 / 3, -1: 1 / 3},
    "reversal": {-1: 1.0},
    "tall": {1: 0.4, 0: 0.2, -2: 0.2, 2: 0.2},
    "wide": {4: 0.5, -2: 0.5},
    "phrase": {1: 0.5, 2: 0.5},
    "one step": {},  # a single step: no jump at all
}
#: Source tokens for the known matrices (one per column), and the weight each output step
#: leaves on the punctuation among them.
TOKENS = {
    "diagonal": ["a", "dog", "runs", "."],
    "verb-final": ["he", "has", "eaten", "something"],
    "reversal": ["stop", ",", "go", "."],
    "tall": ["yes", ",", "t-shirt"],
    "wide": ["a", "man", "'s", "hat", "!", "."],
    "phrase": ["the", "boy", "--", "playing"],
    "one step": [".", "a", ","],
}
PUNCTUATION_MASS = {
    "diagonal": [0.025, 0.025, 0.025, 0.925],
    "verb-final": [0.0, 0.0, 0.0, 0.0],
    "reversal": [0.925, 0.075, 0.925, 0.075],
    "tall": [0.2, 0.8, 0.6, 0.1, 0.3, 0.05],
    "wide": [0.1, 0.7, 0.2],
    "phrase": [0.0, 0.05, 0.45],
    "one step": [0.3],
}

#: Words and punctuation the random cases draw their source tokens from: words with a hyphen or
#: an apostrophe are words; a token is punctuation when every character of it is.
_WORDS = ("a", "man", "t-shirt", "'s", "dog", "red", "o'clock", "in")
_MARKS = (".", ",", "!", "?", "--", '"', ":", "(")


def _random_cases(seed: int = 7) -> dict[str, tuple[np.ndarray, list[str]]]:
    rng = np.random.default_rng(fresh_seed(seed))
    cases = {}
    for t, s in [(5, 7), (8, 6), (9, 9)]:
        weights = rng.dirichlet(np.full(s, 0.4), size=t)
        marks = rng.random(s) < 0.35
        marks[rng.integers(s)] = True  # at least one punctuation mark
        tokens = [str(rng.choice(_MARKS if m else _WORDS)) for m in marks]
        cases[f"random {t}x{s}"] = (weights, tokens)
    return cases


def _cases() -> dict[str, tuple[np.ndarray, list[str]]]:
    """The known matrices, then (where the grader's answers are) three random ones."""
    known = {name: (weights, TOKENS[name]) for name, weights in MATRICES.items()}
    return {**known, **(_random_cases() if HIDDEN else {})}


def _passed(what: str) -> str:
    """The message of a passed check; in a handout, it says what the grader adds."""
    if HIDDEN:
        return f"correct: {what}"
    return (f"correct on the {len(MATRICES)} known matrices: {what} (when graded, it also "
            "runs on random matrices drawn afresh)")


def _call(fn: Callable, weights: np.ndarray, *args, name: str = "test"):
    given = f"the {name} matrix, shape {weights.shape}"
    result = call_student(fn, weights.copy(), *args, given=given)  # a copy: changes don't count
    if result is None:
        raise CheckFailed("your function returned None: did you forget `return`?")
    return result


def _vector(result, what: str, name: str, weights: np.ndarray, length: int) -> np.ndarray:
    if hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    try:
        array = np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"return an array of numbers, {what}; got "
                          f"{type(result).__name__}") from None
    tgt_len, src_len = weights.shape
    other = src_len if length == tgt_len else tgt_len
    if array.shape == (other,) and other != length:
        raise CheckFailed(f"on the {name} matrix ({tgt_len} output steps x {src_len} source "
                          f"words) you returned {other} values: return one {what}")
    if array.shape != (length,):
        raise CheckFailed(f"on the {name} matrix, expected one value {what}, shape "
                          f"({length},); got {array.shape}")
    return array


def _close(a, b) -> bool:
    return np.shape(a) == np.shape(b) and bool(np.allclose(a, b, atol=1e-6))


# ------------------------------------------------------------------------------ fertility


@EXERCISE.check("fertility", points=2, target="fertility", own_work=REFERENCE)
def check_fertility(fertility: Callable) -> str:
    # matrices that are not square first: there a sum over the wrong axis has the wrong length
    cases = sorted(_cases().items(), key=lambda case: case[1][0].shape[0] == case[1][0].shape[1])
    for name, (weights, _) in cases:
        tgt_len, src_len = weights.shape
        got = _vector(_call(fertility, weights, name=name), "per source word", name, weights,
                      src_len)
        expected = (np.array(FERTILITY[name]) if name in FERTILITY
                    else _graders().fertility(weights))
        if _close(got, expected):
            continue
        winners = np.eye(src_len)[weights.argmax(axis=1)]  # one-hot rows of the arg max
        raise_named(got, [
            (expected / tgt_len, "you divided by the number of output steps: fertility is the "
                                 "total a source word receives, not its mean"),
            (winners.sum(axis=0), "that counts the steps whose largest weight is the word (hard "
                                  "alignment); fertility adds up the weights themselves"),
        ], _close)
        wrong = np.flatnonzero(~np.isclose(got, expected, atol=1e-6)).tolist()
        raise CheckFailed(f"wrong fertility for source positions {wrong} of the {name} matrix")
    return _passed("each source word's total attention, summed over the output steps")


# ------------------------------------------------------------------------------ jumps


def _shares(result, name: str) -> dict[int, float]:
    if not isinstance(result, dict):
        raise CheckFailed("jump_distribution must return a dict {jump: share}; got "
                          f"{type(result).__name__}")
    shares = {}
    for key, value in result.items():
        try:
            jump, share = float(key), float(value)
        except (TypeError, ValueError):
            raise CheckFailed("keys are jumps (whole numbers), values their shares (numbers); "
                              f"got {key!r}: {value!r} on the {name} matrix") from None
        if jump != round(jump):
            raise CheckFailed(f"a jump is a whole number of source positions; got {key!r}")
        shares[int(jump)] = share
    return shares


def _same(a: dict[int, float], b: dict[int, float]) -> bool:
    keys = {k for k, v in a.items() if v} | {k for k, v in b.items() if v}
    return all(np.isclose(a.get(k, 0.0), b.get(k, 0.0), atol=1e-6) for k in keys) and (
        bool(a) == bool(b))


def _unsigned(shares: dict[int, float]) -> dict[int, float]:
    """The shares of jump sizes, the sign dropped (a known mistake)."""
    out: dict[int, float] = {}
    for jump, share in shares.items():
        out[abs(jump)] = out.get(abs(jump), 0.0) + share
    return out


@EXERCISE.check("jump_distribution", points=4, target="jump_distribution", own_work=REFERENCE)
def check_jump_distribution(jump_distribution: Callable) -> str:
    cases = {name: weights for name, (weights, _) in _cases().items()}
    cases["empty (no output steps)"] = np.zeros((0, 4))
    for name, weights in cases.items():
        got = _shares(_call(jump_distribution, weights, name=name), name)
        expected = (JUMPS[name] if name in JUMPS
                    else {} if len(weights) < 2 else _graders().jump_shares(weights))
        if _same(got, expected):
            continue
        jumps = max(len(weights) - 1, 0)
        if not jumps:
            steps = "a single output step" if len(weights) else "no output step at all"
            raise CheckFailed(f"with {steps} ({name} matrix) there is no jump: return an "
                              f"empty dict; you returned {got}")
        counts = {k: v * jumps for k, v in expected.items()}
        if _same(got, counts):
            raise CheckFailed("those are counts of each jump: divide by the number of jumps, "
                              "so that the shares add up to 1", points=2)
        if _same(got, {-k: v for k, v in expected.items()}):
            raise CheckFailed("the signs are flipped: a jump is a[i + 1] - a[i], positive when "
                              "the next step reads further right in the source")
        if _same(got, _unsigned(expected)):
            raise CheckFailed("keep the sign: a jump back (to the left) is negative, and that is "
                              "what shows a reordering")
        if _same(got, {k: v / (1 - expected.get(0, 0.0)) for k, v in expected.items() if k}):
            raise CheckFailed("staying on the same source word is a jump of 0, and it counts")
        if HIDDEN and weights.shape[1] > 1 and _same(
                got, _graders().shares(np.diff(weights.argmax(axis=0)))):
            raise CheckFailed("those positions are the arg max of each column; the aligned "
                              "position of a step is the arg max of its row (axis 1)")
        raise CheckFailed(f"wrong shares on the {name} matrix")
    return _passed("the share of each jump between consecutive steps' aligned positions")


# ------------------------------------------------------------------------------ punctuation


@EXERCISE.check("punctuation_mass", points=3, target="punctuation_mass", own_work=REFERENCE)
def check_punctuation_mass(punctuation_mass: Callable) -> str:
    for name, (weights, tokens) in _cases().items():
        tgt_len = weights.shape[0]
        got = _vector(_call(punctuation_mass, weights, list(tokens), name=name),
                      "per output step", name, weights, tgt_len)
        expected = (np.array(PUNCTUATION_MASS[name]) if name in PUNCTUATION_MASS
                    else _graders().punctuation_mass(weights, list(tokens)))
        if _close(got, expected):
            continue
        raise_named(got, [*_punctuation_mistakes(weights, tokens),
                          (1 - expected, "that is the weight on the words; we want what is "
                                         "left on punctuation")], _close)
        raise CheckFailed(f"wrong mass for output steps "
                          f"{np.flatnonzero(~np.isclose(got, expected, atol=1e-6)).tolist()} "
                          f"of the {name} matrix (its tokens: {' '.join(tokens)})")
    return _passed("each step's weight on the source punctuation")


def _punctuation_mistakes(weights: np.ndarray, tokens: list[str]) -> list:
    """(result, hint) for the known mistakes of marking punctuation: a mark inside a word
    (t-shirt), only the full stop, and the share of punctuation tokens instead of the weight
    on them. Each wrong result is the right one computed from a wrong set of marks, so it is
    built from the grader's answer, where this copy of the course has it."""
    if not HIDDEN:
        return []
    inside = ["." if any(ch in string.punctuation for ch in t) else "w" for t in tokens]
    stops = ["." if t == "." else "w" for t in tokens]
    marks = _graders().punctuation_mass(np.eye(len(tokens)), list(tokens))
    tgt_len = weights.shape[0]
    right = _graders().punctuation_mass(weights, list(tokens))
    with_inside = _graders().punctuation_mass(weights, inside)
    only_stops = _graders().punctuation_mass(weights, stops)
    return [
        (with_inside if not _close(with_inside, right) else None,
         "a word with a hyphen or an apostrophe (t-shirt, 's) is a word: a token is "
         "punctuation only when every character of it is"),
        (only_stops if "." in tokens and not _close(only_stops, right) else None,
         "you count only the full stop: commas, quotes and the other marks are punctuation "
         "too (string.punctuation lists them)"),
        (np.full(tgt_len, marks.mean()), "that is the share of punctuation tokens; add up "
                                         "each step's weights on them"),
    ]


EXERCISE.manual_question(
    "fertility_in_your_model",
    points=1,
    prompt="Your model's fertility on the 2017 test set: the English words it reads least and "
           "most, and one of your translations where a word with low fertility is missing from "
           "the German (or a high one is repeated).",
)
EXERCISE.manual_question(
    "jumps_in_your_model",
    points=1,
    prompt="Your model's jump distribution on the 2017 test set: how often it moves one word "
           "right, stays, skips or goes back, and what one of your largest backward jumps is "
           "(a reordering German needs, or a repeated or dropped word).",
)
EXERCISE.manual_question(
    "punctuation_in_your_model",
    points=1,
    prompt="Where your model leaves attention on the source punctuation: which output words "
           "(by kind, and the step that writes <eos>) give it the most, with numbers from your "
           "run, and what that attention is doing there.",
)
EXERCISE.manual_question(
    "probes",
    points=1,
    prompt="Your own probe sentences (a clause where German puts the verb last; a compound "
           "noun): what your model wrote, what its heatmaps show, and what that says about the "
           "word order and the compounds it learned.",
)
EXERCISE.manual_question(
    "comparison",
    points=1,
    prompt="Your model against notebook 4's on the same sentences, with your three measures: "
           "what yours does that notebook 4's does not, and why, from how each was trained.",
)


# ------------------------------------------- the cells that use the student's functions


#: A small attention matrix and its tokens for :func:`ready`.
_SAMPLE = _rows([0.8, 0.1, 0.1], [0.1, 0.45, 0.45], [0.1, 0.1, 0.8])
_SAMPLE_TOKENS = ["a", "dog", "."]
_NEEDS_TOKENS = ("punctuation_mass",)


def ready(*functions: object) -> bool:
    """Whether each of the student's measures runs (and returns something) on a small
    attention matrix. When one does not (not written yet, a crash, no ``return``), says which
    and returns False: the cells that run them over the model's translations then skip that
    measure instead of stopping Run All."""
    problems = []
    for function in functions:
        name = getattr(function, "__name__", None) or type(function).__name__
        if not callable(function):
            problems.append(f"`{name}` is not a function: run the cell that defines it")
            continue
        extra = (list(_SAMPLE_TOKENS),) if name in _NEEDS_TOKENS else ()
        try:
            result = function(_SAMPLE.copy(), *extra)
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
