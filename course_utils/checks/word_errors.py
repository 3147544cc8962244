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
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.probes import fresh_seed

__all__ = ["KEYS", "judge_word_differences"]

KEYS = ("missing", "extra", "repeated")
_VOCABULARY = ("ein", "mann", "hund", "frau", "läuft", "über", "eine", "straße", "im", "park",
               "rotes", "hemd", "der", "die", "das", "spielt")


def _tally(words: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts


def _expected(hypothesis: list[str], reference: list[str], *, sets: bool = False) -> dict:
    """The three lists for two word lists (``sets``: a known mistake, counts ignored)."""
    said, wanted = _tally(hypothesis), _tally(reference)
    if sets:
        said, wanted = dict.fromkeys(said, 1), dict.fromkeys(wanted, 1)
    short: list[str] = []
    over: list[str] = []
    for word in sorted(set(said) | set(wanted)):
        gap = wanted.get(word, 0) - said.get(word, 0)
        short += [word] * max(gap, 0)
        over += [word] * max(-gap, 0)
    looping = sorted(w for w in said if _tally(hypothesis)[w] > max(1, _tally(reference).get(w, 0)))
    return {"missing": short, "extra": over, "repeated": looping}


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


def _mistakes(hypothesis: str, reference: str) -> list[tuple[dict, str]]:
    hyp, ref = _words(hypothesis), _words(reference)
    right = _expected(hyp, ref)
    split = _expected(hypothesis.lower().split(), reference.lower().split())
    return [
        ({"missing": right["extra"], "extra": right["missing"], "repeated": right["repeated"]},
         "`missing` and `extra` are swapped: missing words are in the reference and not (or not "
         "as often) in the translation"),
        (_expected(re.findall(r"\w+", hypothesis), re.findall(r"\w+", reference)),
         "lowercase both texts first: 'Ein' at the start of one sentence is the same word as "
         "'ein' inside the other"),
        (split, "punctuation sticks to the words ('hund.' is not 'hund'): take the words with "
                "re.findall(r\"\\w+\", text.lower()), not .split()"),
        (_expected(hyp, ref, sets=True),
         "a word counts as many times as it occurs: a translation that says 'hund' twice where "
         "the reference says it once has one extra 'hund' (sets lose the counts)"),
    ]


def _same(got: dict, want: dict, keys: tuple[str, ...] = KEYS) -> bool:
    return all(got[k] == want[k] for k in keys)


def judge_word_differences(word_differences: Callable) -> str:
    seeds = [fresh_seed(120 + k) for k in range(4)]
    for seed in seeds:
        hypothesis, reference = _case(seed)
        where = f"hypothesis {hypothesis!r}, reference {reference!r}"
        got = _clean(call_student(word_differences, hypothesis, reference, given=where), where)
        want = _expected(_words(hypothesis), _words(reference))
        if _same(got, want):
            continue
        for wrong, hint in _mistakes(hypothesis, reference):
            if _same(got, wrong, ("missing", "extra")) and not _same(wrong, want,
                                                                      ("missing", "extra")):
                raise CheckFailed(f"{hint} (for {where})")
        for key in ("missing", "extra"):
            if sorted(got[key]) == want[key] and got[key] != want[key]:
                raise CheckFailed(f"right words in {key!r}, but sort the list (for {where})")
        if not _same(got, want, ("missing", "extra")):
            raise CheckFailed(f"for {where}: expected missing {want['missing']} and extra "
                              f"{want['extra']}; got {got['missing']} and {got['extra']}")
        hyp_counts = _tally(_words(hypothesis))
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
    return (f"the right missing, extra and repeated words on {len(seeds)} translations with "
            "omissions, wrong words and a repeated phrase")
