"""The grader's answers to E10.2's automatically graded parts, for the inputs drawn afresh in each
graded run.

A student's copy of the course (``course-handout``) leaves out every ``checks/hidden_*.py``:
there, :mod:`course_utils.checks.word_errors` and :mod:`course_utils.checks.bleu_by_length`
check their fixed cases, whose answers are constants stored in those modules, and say that the
grader adds fresh cases. The grader runs from the course's repository, where this module is. A
submission that calls this module earns nothing for the part (it is one of the checks'
``own_work`` modules).
"""

from __future__ import annotations

import sacrebleu

__all__ = ["bleu_by_bucket", "tally", "word_differences"]


def tally(words: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for word in words:
        counts[word] = counts.get(word, 0) + 1
    return counts


def word_differences(hypothesis: list[str], reference: list[str], *, sets: bool = False) -> dict:
    """The three lists for two word lists (``sets``: a known mistake, counts ignored)."""
    said, wanted = tally(hypothesis), tally(reference)
    if sets:
        said, wanted = dict.fromkeys(said, 1), dict.fromkeys(wanted, 1)
    short: list[str] = []
    over: list[str] = []
    for word in sorted(set(said) | set(wanted)):
        gap = wanted.get(word, 0) - said.get(word, 0)
        short += [word] * max(gap, 0)
        over += [word] * max(-gap, 0)
    looping = sorted(w for w in said if tally(hypothesis)[w] > max(1, tally(reference).get(w, 0)))
    return {"missing": short, "extra": over, "repeated": looping}


def bleu_by_bucket(hypotheses, references, lengths, buckets, bounds) -> dict:
    """Corpus BLEU per bucket (``None`` for an empty one), ``bounds`` the buckets' limits."""
    out: dict[str, float | None] = {}
    for name, (low, high) in zip(buckets, bounds):
        chosen = [i for i, n in enumerate(lengths) if low <= n <= high]
        out[name] = (sacrebleu.corpus_bleu([hypotheses[i] for i in chosen],
                                           [[references[i] for i in chosen]]).score
                     if chosen else None)
    return out
