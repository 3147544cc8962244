"""Scoring seq2seq outputs: exact match, accuracy by length, corpus BLEU (overall and by
source-length bucket, with bootstrap confidence intervals).

Taught in notebook 4, sections 3 and 4 ("Test BLEU", "Short against long sentences", with
paired-bootstrap intervals); exact match and accuracy by length in notebook 3, sections 3 and 6.

Only scores live here: decoding is in :mod:`course_utils.decoding`, and the reversal task's
alignment score in :mod:`course_utils.reversal`."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from sacrebleu.metrics import BLEU

from course_utils.data import Pair

if TYPE_CHECKING:  # only annotated: the scores need no model code at run time
    from course_utils.decoding import Decoded

__all__ = [
    "LENGTH_BUCKETS",
    "Bucket",
    "BleuComparison",
    "BleuResult",
    "Interval",
    "LengthComparison",
    "accuracy_by_length",
    "bleu_by_length",
    "bucket_of",
    "compare_bleu",
    "compare_by_length",
    "corpus_bleu",
    "correct",
    "exact_match",
    "length_buckets",
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

#: A bucket of source lengths: (name, shortest, longest), in tokens, both ends included.
Bucket = tuple[str, int, int]


def length_buckets(width: int, last: int) -> tuple[Bucket, ...]:
    """Buckets of ``width`` tokens from 0, the last one open: ``length_buckets(10, 60)`` gives
    ``0-9``, ``10-19``, ..., ``50-59`` and ``60+``."""
    if int(width) < 1 or int(last) < int(width) or int(last) % int(width):
        raise ValueError(f"width must be at least 1 and last a multiple of it, at least width; "
                         f"got width={width}, last={last}")
    inner = tuple((f"{low}-{low + width - 1}", low, low + width - 1)
                  for low in range(0, int(last), int(width)))
    return (*inner, (f"{last}+", int(last), 10**9))


def _check_buckets(buckets: Sequence[Bucket]) -> tuple[Bucket, ...]:
    """``buckets`` as a tuple, or a ValueError: named uniquely, in order, not overlapping."""
    buckets = tuple(buckets)
    if not buckets:
        raise ValueError("buckets must hold at least one (name, shortest, longest) bucket")
    for name, shortest, longest in buckets:
        if not 0 <= shortest <= longest:
            raise ValueError(f"bucket {name!r} must have 0 <= shortest <= longest; got "
                             f"{shortest} and {longest}")
    if len({name for name, _, _ in buckets}) != len(buckets):
        raise ValueError(f"bucket names must differ; got {[b[0] for b in buckets]}")
    for (name, _, end), (after, start, _) in zip(buckets, buckets[1:]):
        if start <= end:
            raise ValueError(f"buckets must be in order and not overlap: {after!r} starts at "
                             f"{start}, before {name!r} ends ({end})")
    return buckets


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


# ------------------------------------------------------------- confidence intervals for BLEU


@dataclass(frozen=True)
class Interval:
    """A statistic and its bootstrap confidence interval (percentile method)."""

    value: float  # computed on the sentences themselves, not on a resample
    low: float
    high: float

    def excludes(self, value: float = 0.0) -> bool:
        """Whether the interval leaves ``value`` out (e.g. 0: a gain that is not noise)."""
        return not self.low <= value <= self.high

    def format(self, sign: bool = False) -> str:
        """``"12.5 [3.9, 22.6]"``, one decimal (``sign``: ``"+12.5 [+3.9, +22.6]"``)."""
        f = "+.1f" if sign else ".1f"
        value, low, high = (round(x, 1) + 0.0 for x in (self.value, self.low, self.high))
        return f"{value:{f}} [{low:{f}}, {high:{f}}]"  # + 0.0: no "-0.0"

    def __str__(self) -> str:
        return self.format()


def _sentence_statistics(bleu: BLEU, hypotheses: Sequence[str],
                         references: Sequence[str]) -> np.ndarray:
    """sacreBLEU's per-sentence counts, ``(n, 2 + 2 * max_order)``: hypothesis and reference
    length, then matching and total n-grams per order. Summing rows and scoring the sums gives
    corpus BLEU exactly (a test holds this), which is what makes resampling cheap. These are
    the statistics sacreBLEU's own paired bootstrap resamples (``sacrebleu --paired-bs``)."""
    return np.asarray(bleu._extract_corpus_statistics(list(hypotheses), [list(references)]),
                      dtype=np.int64)


def _score(bleu: BLEU, summed: np.ndarray) -> float:
    return float(bleu._compute_score_from_stats([int(x) for x in summed]).score)


def _bootstrapped(bleu: BLEU, hypotheses: Sequence[str], references: Sequence[str],
                  picks: np.ndarray) -> tuple[float, np.ndarray]:
    """Corpus BLEU of the sentences, and of each resample (a row of ``picks``: indices)."""
    stats = _sentence_statistics(bleu, hypotheses, references)
    return _score(bleu, stats.sum(0)), np.array([_score(bleu, row) for row in
                                                  stats[picks].sum(1)])


def _interval(value: float, draws: np.ndarray, confidence: float) -> Interval:
    """``value`` with the central ``confidence`` range of its finite bootstrap ``draws``."""
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        return Interval(float(value), float("nan"), float("nan"))
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return Interval(float(value), float(low), float(high))


@dataclass(frozen=True)
class LengthComparison:
    """BLEU by source-length bucket for models translating the same sentences, with bootstrap
    intervals. Built by :func:`compare_by_length`; ``print`` it for a table."""

    models: tuple[str, ...]
    baseline: str
    counts: dict[str, int]  # sentences per bucket
    bleu: dict[str, dict[str, Interval | None]]  # model -> bucket -> BLEU (None: empty bucket)
    gain: dict[str, dict[str, Interval | None]]  # model -> bucket -> BLEU minus the baseline's
    gain_growth: dict[str, Interval | None]  # model -> gain on the last minus on the first
    confidence: float
    resamples: int

    def __str__(self) -> str:
        level = f"{self.confidence:.0%}"
        buckets = list(self.counts)
        lines = [f"BLEU by source length, with {level} bootstrap intervals "
                 f"({self.resamples} resamples of each bucket's sentences)"]
        header = f"{'bucket':8s}{'sentences':>10s}" + "".join(f"{m:>20s}" for m in self.models)
        others = [m for m in self.models if m != self.baseline]
        header += "".join(f"{'gain ' + m:>22s}" for m in others)
        lines.append(header)
        for b in buckets:
            row = f"{b:8s}{self.counts[b]:10d}"
            row += "".join(f"{_cell(self.bleu[m][b]):>20s}" for m in self.models)
            row += "".join(f"{_cell(self.gain[m][b], sign=True):>22s}" for m in others)
            lines.append(row)
        short, long = buckets[0], buckets[-1]
        for m in others:
            lines.append(f"{m}: gain on {long!r} minus gain on {short!r}: "
                         f"{_cell(self.gain_growth[m], sign=True)} BLEU")
        return "\n".join(lines)


def _cell(interval: Interval | None, sign: bool = False) -> str:
    if interval is None:
        return "-"
    return interval.format(sign)


def _comparison_models(hypotheses: Mapping[str, Sequence[str]], n: int, baseline: str | None,
                       confidence: float, resamples: int) -> tuple[tuple[str, ...], str]:
    """The checks :func:`compare_by_length` and :func:`compare_bleu` share: the model names
    and the baseline, or a ValueError naming what is wrong."""
    if not hypotheses:
        raise ValueError("hypotheses must map at least one model name to its outputs")
    for model, outputs in hypotheses.items():
        if len(outputs) != n:
            raise ValueError(f"model {model!r} has {len(outputs)} hypotheses for {n} references")
    if n == 0:
        raise ValueError("no sentences to score")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95); got {confidence}")
    if int(resamples) < 1:
        raise ValueError(f"resamples must be at least 1; got {resamples}")
    models = tuple(hypotheses)
    baseline = models[0] if baseline is None else baseline
    if baseline not in hypotheses:
        raise ValueError(f"baseline {baseline!r} is not one of the models {list(models)}")
    return models, baseline


def compare_by_length(
    hypotheses: Mapping[str, Sequence[str]],
    references: Sequence[str],
    source_lengths: Sequence[int],
    *,
    baseline: str | None = None,
    lowercase: bool = False,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
    buckets: Sequence[Bucket] = LENGTH_BUCKETS,
) -> LengthComparison:
    """Corpus BLEU per source-length bucket (the lesson's :data:`LENGTH_BUCKETS`, or
    ``buckets``, e.g. :func:`length_buckets`) for each model, with bootstrap intervals.

    ``hypotheses`` maps a model name to its outputs for the same sentences (``references``,
    ``source_lengths``). Each bucket's sentences are resampled with replacement ``resamples``
    times; every model is scored on the same resample (a *paired* bootstrap, as in
    ``sacrebleu --paired-bs``), so the gain over ``baseline`` (the first model by default) has
    its own interval, narrower than the two scores' intervals suggest; and per model, how much
    larger the gain is in the last bucket than in the first, in BLEU points. (No share of the
    first bucket's BLEU lost by the last: a proportional drop favours whichever model starts
    higher, so it cannot tell a bottleneck from a better model.)
    """
    n = len(references)
    if hypotheses and len(source_lengths) != n:
        raise ValueError(f"{len(source_lengths)} source lengths for {n} references")
    models, baseline = _comparison_models(hypotheses, n, baseline, confidence, resamples)
    buckets = _check_buckets(buckets)

    bleu = BLEU(lowercase=lowercase)
    rng = np.random.default_rng(seed)
    lengths = np.asarray(source_lengths)
    counts: dict[str, int] = {}
    # only for buckets with sentences: the score on them, and the scores of the resamples
    scores: dict[str, dict[str, float]] = {m: {} for m in models}
    samples: dict[str, dict[str, np.ndarray]] = {m: {} for m in models}
    for name, shortest, longest in buckets:
        chosen = np.flatnonzero((lengths >= shortest) & (lengths <= longest)).tolist()
        counts[name] = len(chosen)
        if not len(chosen):
            continue
        picks = rng.integers(0, len(chosen), size=(int(resamples), len(chosen)))
        for m in models:
            scores[m][name], samples[m][name] = _bootstrapped(
                bleu, [hypotheses[m][i] for i in chosen], [references[i] for i in chosen], picks)

    def interval(value: float, draws: np.ndarray) -> Interval:
        return _interval(value, draws, confidence)

    names = [name for name, _, _ in buckets]
    short, long = names[0], names[-1]
    ends = short in scores[baseline] and long in scores[baseline]  # same buckets for every model
    result_bleu = {m: {b: interval(scores[m][b], samples[m][b]) if b in scores[m] else None
                       for b in names} for m in models}
    gain: dict[str, dict[str, Interval | None]] = {}
    growth: dict[str, Interval | None] = {}
    for m in models:
        if m == baseline:
            continue
        gain[m] = {b: interval(scores[m][b] - scores[baseline][b],
                               samples[m][b] - samples[baseline][b]) if b in scores[m] else None
                   for b in names}
        if not ends:
            growth[m] = None
            continue
        growth[m] = interval(
            (scores[m][long] - scores[baseline][long])
            - (scores[m][short] - scores[baseline][short]),
            (samples[m][long] - samples[baseline][long])
            - (samples[m][short] - samples[baseline][short]))
    return LengthComparison(models, baseline, counts, result_bleu, gain, growth, confidence,
                            int(resamples))


@dataclass(frozen=True)
class BleuComparison:
    """Corpus BLEU of models translating the same sentences, with paired-bootstrap intervals.
    Built by :func:`compare_bleu`; ``print`` it for a table."""

    models: tuple[str, ...]
    baseline: str
    sentences: int
    bleu: dict[str, Interval]  # model -> corpus BLEU
    gain: dict[str, Interval]  # model (not the baseline) -> BLEU minus the baseline's
    confidence: float
    resamples: int

    def __str__(self) -> str:
        level = f"{self.confidence:.0%}"
        lines = [f"corpus BLEU on {self.sentences} sentences, with {level} paired-bootstrap "
                 f"intervals ({self.resamples} resamples)",
                 f"{'model':16s}{'BLEU':>20s}{'gain over ' + self.baseline:>28s}"]
        for m in self.models:
            gain = self.gain[m].format(sign=True) if m in self.gain else "-"
            lines.append(f"{m:16s}{self.bleu[m].format():>20s}{gain:>28s}")
        return "\n".join(lines)


def compare_bleu(hypotheses: Mapping[str, Sequence[str]], references: Sequence[str], *,
                 baseline: str | None = None, lowercase: bool = False, confidence: float = 0.95,
                 resamples: int = 1000, seed: int = 0) -> BleuComparison:
    """Corpus BLEU of each model on the same sentences, and its gain over ``baseline`` (the
    first model by default), with paired-bootstrap intervals: the sentences are resampled with
    replacement ``resamples`` times and every model is scored on the same resample, as
    ``sacrebleu --paired-bs`` does. A gain whose interval leaves out 0 is more than the luck of
    which sentences were in the test set; it says nothing about the luck of training (seeds)."""
    n = len(references)
    models, baseline = _comparison_models(hypotheses, n, baseline, confidence, resamples)
    bleu = BLEU(lowercase=lowercase)
    picks = np.random.default_rng(seed).integers(0, n, size=(int(resamples), n))
    scores, samples = {}, {}
    for m in models:
        scores[m], samples[m] = _bootstrapped(bleu, hypotheses[m], references, picks)
    return BleuComparison(
        models, baseline, n, {m: _interval(scores[m], samples[m], confidence) for m in models},
        {m: _interval(scores[m] - scores[baseline], samples[m] - samples[baseline], confidence)
         for m in models if m != baseline},
        confidence, int(resamples))
