"""Scoring seq2seq outputs: exact match, accuracy by length, corpus BLEU (overall and by
source-length bucket).

Only scores live here: decoding is in :mod:`course_utils.decoding`, and the reversal task's
alignment score in :mod:`course_utils.reversal`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sacrebleu.metrics import BLEU

from course_utils.data import Pair
from course_utils.models import Decoded

__all__ = [
    "LENGTH_BUCKETS",
    "BleuResult",
    "accuracy_by_length",
    "bleu_by_length",
    "bucket_of",
    "corpus_bleu",
    "correct",
    "exact_match",
]


def correct(decoded: Decoded, pairs: Sequence[Pair]) -> list[bool]:
    """Per pair: is the output exactly the target?"""
    if len(decoded.tokens) != len(pairs):
        raise ValueError(f"{len(decoded.tokens)} outputs for {len(pairs)} pairs")
    return [list(out) == list(target) for out, (_, target) in zip(decoded.tokens, pairs)]


def exact_match(decoded: Decoded, pairs: Sequence[Pair]) -> float:
    """Fraction of outputs that equal their target exactly."""
    hits = correct(decoded, pairs)
    return sum(hits) / len(hits)


def accuracy_by_length(decoded: Decoded, pairs: Sequence[Pair]) -> dict[int, float]:
    """Exact match per source length: ``{length: accuracy}``, sorted by length."""
    by_length: dict[int, list[bool]] = defaultdict(list)
    for hit, (source, _) in zip(correct(decoded, pairs), pairs):
        by_length[len(source)].append(hit)
    return {n: float(np.mean(hits)) for n, hits in sorted(by_length.items())}


# ------------------------------------------------------------------------------------ BLEU

#: Source-length buckets of the lesson, in tokens: (name, shortest, longest).
LENGTH_BUCKETS = (("< 10", 0, 9), ("10-20", 10, 20), ("> 20", 21, 10**9))


def bucket_of(length: int) -> str:
    """The name of the :data:`LENGTH_BUCKETS` bucket a source of ``length`` tokens falls in."""
    for name, shortest, longest in LENGTH_BUCKETS:
        if shortest <= length <= longest:
            return name
    raise ValueError(f"length must be >= 0; got {length}")


@dataclass(frozen=True)
class BleuResult:
    score: float  # corpus BLEU, 0-100
    signature: str  # sacreBLEU's signature: how the score was computed
    n: int  # sentences


def corpus_bleu(
    hypotheses: Sequence[str], references: Sequence[str], lowercase: bool = False
) -> BleuResult:
    """Corpus BLEU with sacreBLEU, on detokenized hypotheses against raw references.

    sacreBLEU tokenizes both sides itself (``13a``), so scores are comparable across papers;
    ``lowercase=True`` for models trained on lowercased text (the signature says ``c:lc``).
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("no sentences to score")
    bleu = BLEU(lowercase=lowercase)
    score = bleu.corpus_score(list(hypotheses), [list(references)])
    return BleuResult(score.score, str(bleu.get_signature()), len(hypotheses))


def bleu_by_length(
    hypotheses: Sequence[str],
    references: Sequence[str],
    source_lengths: Sequence[int],
    lowercase: bool = False,
) -> dict[str, BleuResult | None]:
    """Corpus BLEU per source-length bucket (``< 10``, ``10-20``, ``> 20`` tokens).

    A bucket with no sentence maps to ``None``.
    """
    if not len(hypotheses) == len(references) == len(source_lengths):
        raise ValueError("hypotheses, references and source_lengths must have the same length")
    results: dict[str, BleuResult | None] = {}
    for name, shortest, longest in LENGTH_BUCKETS:
        chosen = [i for i, n in enumerate(source_lengths) if shortest <= n <= longest]
        results[name] = (
            corpus_bleu([hypotheses[i] for i in chosen], [references[i] for i in chosen],
                        lowercase)
            if chosen else None
        )
    return results
