"""The grader's answers to E10.2's automatically graded parts, for the inputs drawn afresh in each
graded run.

A student's copy of the course (``course-handout``) leaves out every exercise's ``hidden.py``
(:func:`course_utils.tools.solutions.ships`): there,
:mod:`course_utils.checks.e10_2.word_errors` and :mod:`course_utils.checks.e10_2.bleu_curve`
check their fixed cases, whose answers are constants stored in those modules, and say that the
grader adds fresh cases. The grader runs from the course's repository, where this module is. A
submission that calls this module earns nothing for the part (it is one of the checks'
``own_work`` modules).
"""

from __future__ import annotations

from collections import Counter

import sacrebleu
import torch

__all__ = ["MISTAKES", "bleu_curve", "context_read", "context_slips", "tally",
           "word_differences"]


def context_read(outputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Part 1a: 1 at each encoder output the fixed context reads (the forward half where each
    sentence's forward GRU ends, the backward half where the backward GRU ends), 0 elsewhere:
    the gradient of the context's sum with respect to the outputs."""
    read = torch.zeros_like(outputs)
    width = outputs.shape[-1] // 2
    for row, length in enumerate(lengths.tolist()):
        read[row, length - 1, :width] = 1  # forward: its last real token
        read[row, 0, width:] = 1  # backward: right to left, it ends at the first token
    return read


def context_slips(outputs: torch.Tensor, lengths: torch.Tensor) -> list[tuple[torch.Tensor, str]]:
    """Part 1a's mistakes that read the right positions the wrong way, each with its hint."""
    width = outputs.shape[-1] // 2
    end = torch.stack([outputs[row, length - 1] for row, length in enumerate(lengths.tolist())])
    return [
        (end, "you forgot the backward direction: at the last token its half of the output has "
              "read only that token. The backward GRU reads right to left, so its final state "
              "sits at position 0"),
        (torch.cat([end[:, width:], outputs[:, 0, :width]], -1),
         "the halves are swapped: take the first half (forward) at the last real token and the "
         "second half (backward) at position 0"),
    ]


def tally(words: list[str]) -> dict[str, int]:
    """How many times each word occurs."""
    return dict(Counter(words))


def word_differences(hypothesis: list[str], reference: list[str], *, sets: bool = False) -> dict:
    """The three lists for two word lists (``sets``: a known mistake, counts ignored)."""
    said, wanted = tally(hypothesis), tally(reference)
    if sets:
        said, wanted = dict.fromkeys(said, 1), dict.fromkeys(wanted, 1)
    gaps = {word: wanted.get(word, 0) - said.get(word, 0)
            for word in sorted(set(said) | set(wanted))}
    short = [word for word, gap in gaps.items() for _ in range(gap)]
    over = [word for word, gap in gaps.items() for _ in range(-gap)]
    looping = sorted(w for w in said if tally(hypothesis)[w] > max(1, tally(reference).get(w, 0)))
    return {"missing": short, "extra": over, "repeated": looping}


#: Known mistakes in a BLEU curve, each computed by :func:`bleu_curve` when named
MISTAKES = ("strict window", "half-open window", "lower end left out", "strict minimum",
            "no minimum", "only present", "sentence average")


def bleu_curve(hypotheses, references, lengths, window, min_sentences, *,
               mistake: str | None = None) -> dict:
    """BLEU against source length (the paper's Figure 2): at each length from the shortest to
    the longest, corpus BLEU of the sentences within ``window`` tokens of it, both ends
    included, where there are at least ``min_sentences`` of them; ``mistake`` (one of
    :data:`MISTAKES`) computes that mistake instead."""
    if mistake is not None and mistake not in MISTAKES:
        raise ValueError(f"mistake must be one of {MISTAKES}; got {mistake!r}")
    low = -window + (mistake in ("strict window", "lower end left out"))
    high = window - (mistake in ("strict window", "half-open window"))
    curve: dict[int, float] = {}
    for centre in range(min(lengths), max(lengths) + 1):
        if mistake == "only present" and centre not in lengths:
            continue
        pooled = [i for i, n in enumerate(lengths) if low <= n - centre <= high]
        enough = {"strict minimum": len(pooled) > min_sentences,
                  "no minimum": len(pooled) > 0}.get(mistake or "", len(pooled) >= min_sentences)
        if not enough:
            continue
        said, meant = [hypotheses[i] for i in pooled], [references[i] for i in pooled]
        if mistake == "sentence average":
            curve[centre] = sum(sacrebleu.sentence_bleu(h, [r]).score
                                for h, r in zip(said, meant)) / len(pooled)
        else:
            curve[centre] = sacrebleu.corpus_bleu(said, [meant]).score
    return curve
