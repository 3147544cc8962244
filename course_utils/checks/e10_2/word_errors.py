"""E10.2's error-analysis scaffolding, judged: ``word_differences(hypothesis, reference)``.

The student's function compares one translation with its reference word by word and returns the
raw material of an error analysis: the reference words the translation leaves out (``missing``:
omissions and wrong words), the words it adds (``extra``: insertions, wrong words, repetitions)
and the words it repeats more often than the reference does (``repeated``: a decoder looping).
Words are lowercased runs of letters and digits (``re.findall(r"\\w+", text.lower())``), counted
with their multiplicity; the lists are sorted.

The check calls it on sentences drawn from the run's seed
(:func:`~course_utils.checks.probes.fresh_seed`), so values typed into the notebook do not
pass, and names the usual mistakes: case kept,
punctuation kept, sets instead of counts, the two lists swapped, repeats the reference shares.
The answers for fresh sentences are the grader's (:mod:`course_utils.checks.e10_2.hidden`); a
student handout, which has no such module, checks the fixed sentences against :data:`KNOWN`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import numpy as np

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.probes import fixed_or_fresh, said_when_graded
from course_utils.checks.registry import known_answers, load_hidden

__all__ = ["KEYS", "KNOWN", "judge_word_differences"]

KEYS = ("missing", "extra", "repeated")
_VOCABULARY = ("ein", "mann", "hund", "frau", "läuft", "über", "eine", "straße", "im", "park",
               "rotes", "hemd", "der", "die", "das", "spielt")


#: the grader's answers for fresh inputs (:mod:`.hidden`); a student handout has none
HIDDEN = load_hidden("E10.2")

#: The fixed cases' answers (``fresh_seed`` gives the bases 120 to 123 in a notebook), and the
#: lists of three known mistakes on them, stored (``known.json``): a handout has no
#: :mod:`.hidden` to compute them
KNOWN: dict[int, dict[str, dict[str, list[str]]]] = known_answers("E10.2")["word_differences"]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _case(seed: int) -> tuple[str, str]:
    """A reference and a translation of it with words dropped, changed and repeated, with
    capitals and punctuation as a detokenized output has them."""
    rng = np.random.default_rng(seed)
    reference = [str(w) for w in rng.choice(_VOCABULARY, size=9, replace=False)]
    reference[5] = reference[1]  # a word the reference says twice
    # omissions, the first word's always (the translation's capital then falls on another
    # word), never the twice-said word's (said twice in both: no loop)
    hypothesis = [w for k, w in enumerate(reference) if k in (1, 5)
                  or (k > 0 and rng.random() > 0.25)]
    hypothesis = [("blaues" if k not in (0, 4) and rng.random() < 0.15 else w)
                  for k, w in enumerate(hypothesis)]  # wrong words
    loop = int(rng.integers(0, max(len(hypothesis), 1)))
    hypothesis[loop:loop] = hypothesis[loop:loop + 2] * 2  # a phrase said again, twice
    ref = " ".join(reference).capitalize() + "."
    hyp = " ".join(hypothesis).capitalize().replace(" im ", " im, ") + " ."
    return hyp, ref


def _clean(got: object, where: str) -> dict[str, list[str]]:
    if not isinstance(got, dict):
        raise CheckFailed(f"word_differences must return a dict with the keys {list(KEYS)}; got "
                          f"{type(got).__name__} for {where}")
    if set(got) != set(KEYS):
        raise CheckFailed(f"the keys must be {list(KEYS)}; got {sorted(map(str, got))}")
    out = {}
    for key in KEYS:
        value = got[key]
        if not isinstance(value, (list, tuple)) or not all(isinstance(w, str) for w in value):
            raise CheckFailed(f"{key!r} must be a list of words (strings); got "
                              f"{type(value).__name__} for {where}")
        out[key] = list(value)
    return out


def _answers(hypothesis: str, reference: str, base: int) -> tuple[dict, dict]:
    """The right lists and three known mistakes' lists: the grader's, or the stored ones for a
    fixed case (``base``) where the grader's module is absent."""
    if HIDDEN is None:
        known = KNOWN[base]
        return known["right"], known
    hyp, ref = _words(hypothesis), _words(reference)
    return HIDDEN.word_differences(hyp, ref), {
        "lowercase": HIDDEN.word_differences(re.findall(r"\w+", hypothesis),
                                             re.findall(r"\w+", reference)),
        "split": HIDDEN.word_differences(hypothesis.lower().split(), reference.lower().split()),
        "sets": HIDDEN.word_differences(hyp, ref, sets=True)}


def _mistakes(right: dict, wrong: dict) -> list[tuple[dict, str]]:
    return [
        ({"missing": right["extra"], "extra": right["missing"], "repeated": right["repeated"]},
         "`missing` and `extra` are swapped: missing words are in the reference and not (or not "
         "as often) in the translation"),
        (wrong["lowercase"],
         "lowercase both texts first: 'Ein' at the start of one sentence is the same word as "
         "'ein' inside the other"),
        (wrong["split"], "punctuation sticks to the words ('hund.' is not 'hund'): take the words "
                         "with re.findall(r\"\\w+\", text.lower()), not .split()"),
        (wrong["sets"],
         "a word counts as many times as it occurs: a translation that says 'hund' twice where "
         "the reference says it once has one extra 'hund' (sets lose the counts)"),
    ]


def _same(got: dict, want: dict, keys: tuple[str, ...] = KEYS) -> bool:
    return all(got[k] == want[k] for k in keys)


def judge_word_differences(word_differences: Callable) -> str:
    bases = [120 + k for k in range(4)]
    for base in bases:
        hypothesis, reference = _case(fixed_or_fresh(base, HIDDEN))
        where = f"hypothesis {hypothesis!r}, reference {reference!r}"
        got = _clean(call_student(word_differences, hypothesis, reference, given=where), where)
        want, known = _answers(hypothesis, reference, base)
        if _same(got, want):
            continue
        for wrong, hint in _mistakes(want, known):
            if _same(got, wrong, ("missing", "extra")) and not _same(wrong, want,
                                                                      ("missing", "extra")):
                raise CheckFailed(f"{hint} (for {where})")
        for key in ("missing", "extra"):
            if sorted(got[key]) == want[key] and got[key] != want[key]:
                raise CheckFailed(f"right words in {key!r}, but sort the list (for {where})")
        if not _same(got, want, ("missing", "extra")):
            raise CheckFailed(f"for {where}: expected missing {want['missing']} and extra "
                              f"{want['extra']}; got {got['missing']} and {got['extra']}")
        hyp_counts = Counter(_words(hypothesis))
        if sorted(set(got["repeated"])) == sorted(w for w, n in hyp_counts.items() if n > 1) \
                != want["repeated"]:
            raise CheckFailed(f"`repeated` keeps only the words the translation says more often "
                              f"than the reference does (a word the reference also repeats is "
                              f"no loop): expected {want['repeated']}, got {got['repeated']}",
                              points=2)
        raise CheckFailed(f"`missing` and `extra` are right, but `repeated` should be the "
                          f"sorted words said more than once and more often than in the "
                          f"reference: expected {want['repeated']}, got {got['repeated']} (for "
                          f"{where})", points=2)
    done = (f"the right missing, extra and repeated words on {len(bases)} translations with "
            "omissions, wrong words and a repeated phrase")
    return said_when_graded(done, HIDDEN, "translations")
