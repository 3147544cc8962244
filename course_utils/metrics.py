"""Measuring seq2seq models: batched greedy decoding of a dataset, exact match, accuracy by
length, and how well attention aligns with a known alignment."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from sacrebleu.metrics import BLEU

from course_utils.data import Pair, collate
from course_utils.models import Decoded, Seq2Seq

__all__ = [
    "LENGTH_BUCKETS",
    "BleuResult",
    "accuracy_by_length",
    "bleu_by_length",
    "corpus_bleu",
    "alignment_score",
    "correct",
    "exact_match",
    "greedy_decode_pairs",
    "reversal_alignment",
]


def greedy_decode_pairs(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    device: torch.device | str = "cpu",
    batch_size: int = 256,
    max_len: int | None = None,
) -> Decoded:
    """Greedy outputs for every pair's source, in the order of ``pairs``.

    Sources are decoded in batches of similar length (little padding); results are put back
    in the original order.
    """
    if not pairs:
        raise ValueError("no pairs to decode")
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    tokens: list = [None] * len(pairs)
    lengths = [0] * len(pairs)
    attention: list | None = [None] * len(pairs)
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        batch = collate([pairs[i] for i in chunk])
        decoded = model.greedy_decode(batch.src.to(device), batch.src_lengths, max_len)
        batch_lengths = decoded.lengths.tolist()
        for k, i in enumerate(chunk):
            tokens[i] = decoded.tokens[k]
            lengths[i] = batch_lengths[k]
            if decoded.attention is None:
                attention = None
            else:
                attention[i] = decoded.attention[k]
    return Decoded(tokens, torch.tensor(lengths), attention)


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


def alignment_score(attention, expected_positions: Sequence[int]) -> float:
    """Mean attention weight on the expected source position of each output step.

    ``attention``: ``(out_len, src_len)``; ``expected_positions[i]`` is the source position
    that output step ``i`` should read. 1.0 means all weight on the right place; a uniform
    spread over ``n`` positions scores ``1 / n``. Steps beyond ``len(expected_positions)``
    (such as the EOS step) are ignored.
    """
    weights = np.asarray(attention.cpu() if hasattr(attention, "cpu") else attention)
    if weights.ndim != 2:
        raise ValueError(f"attention must be (out_len, src_len); got {weights.shape}")
    steps = min(len(expected_positions), weights.shape[0])
    if steps == 0:
        raise ValueError("no output step to score")
    positions = np.asarray(expected_positions[:steps])
    if positions.min() < 0 or positions.max() >= weights.shape[1]:
        raise ValueError(f"expected positions must lie in [0, {weights.shape[1]})")
    return float(weights[np.arange(steps), positions].mean())


def reversal_alignment(src_len: int) -> list[int]:
    """For reversal, output step i reads source position ``src_len - 1 - i``: the anti-diagonal."""
    return list(range(src_len - 1, -1, -1))


# ------------------------------------------------------------------------------------ BLEU

#: Source-length buckets of the lesson, in tokens: (name, shortest, longest).
LENGTH_BUCKETS = (("< 10", 0, 9), ("10-20", 10, 20), ("> 20", 21, 10**9))


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
