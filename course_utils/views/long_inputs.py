"""Long inputs made from Multi30k itself: consecutive test captions joined into one source.

Taught in notebook 4, section 11 ("Where the paper's effect lives: long inputs").

The paper's Figure 2 (Bahdanau et al. 2014, section 5.1) plots BLEU against sentence length up to
about 60 words: the fixed-context RNNencdec models fall steadily as sentences grow, RNNsearch-50
holds its score to about 50 words. Multi30k's captions are too short to look there: 54 of the
2016 test set's 1,000 English captions exceed 20 tokens, the longest has 33 (and the longest
of the 29,000 training captions, 40). Joining ``k``
consecutive captions of a test split into one source, and their German references into one
reference, builds inputs of 60 tokens and more from the same data, translated by the same
models, whose every part the models can translate on its own. The construction follows two
precedents that concatenate parallel sentences to study long inputs: Kondo et al. (2021,
"Sentence Concatenation Approach to Data Augmentation for Neural Machine Translation", NAACL
Student Research Workshop) and Varis and Bojar (2021, "Sequence Length is a Domain: Length-based
Overfitting in Transformer Models", EMNLP). The second also warns what such inputs measure
besides the bottleneck: a model trained on short sentences meets lengths it never saw, so both
models may fall, whatever their context.

Each caption keeps its own final punctuation (a joined source reads "A dog runs. A man sits.");
:func:`joined_pairs` groups the captions without overlap, ``k`` at a time for each ``k``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from course_utils.metrics import Bucket, Interval, LengthComparison
from course_utils.plotting import MIN_FONTSIZE, NOTEBOOK_WIDTH, model_colour

__all__ = ["JoinedPair", "joined_pairs", "length_ratios", "plot_bleu_against_length",
           "sentences_written"]


@dataclass(frozen=True)
class JoinedPair:
    """``parts`` consecutive captions of a test split, from index ``first``, joined into one
    English ``source`` and one German ``reference``."""

    source: str
    reference: str
    parts: int
    first: int


def joined_pairs(pairs: Sequence[tuple[str, str]], group_sizes: Sequence[int] = (1, 2, 3, 4, 5, 6)
                 ) -> list[JoinedPair]:
    """For each ``k`` of ``group_sizes``: the raw ``(english, german)`` ``pairs`` of a split, in
    order and without overlap, ``k`` at a time (captions ``0..k-1``, ``k..2k-1``, ...; a last
    group of fewer than ``k`` is left out), each group joined with a space on both sides."""
    sizes = [int(k) for k in group_sizes]
    if not sizes or any(k < 1 for k in sizes) or len(set(sizes)) != len(sizes):
        raise ValueError(f"group_sizes must be distinct whole numbers of at least 1; got "
                         f"{list(group_sizes)}")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(
                isinstance(text, str) and text.strip() for text in pair)):
            raise ValueError(f"pairs must be (english, german) sentences; pair {i} is "
                             f"{str(pair)[:80]}")
    joined = []
    for k in sizes:
        for first in range(0, len(pairs) - k + 1, k):
            group = pairs[first:first + k]
            joined.append(JoinedPair(" ".join(e.strip() for e, _ in group),
                                     " ".join(g.strip() for _, g in group), k, first))
    return joined


def length_ratios(output_lengths: Mapping[str, Sequence[int]], reference_lengths: Sequence[int],
                  source_lengths: Sequence[int], buckets: Sequence[Bucket]) -> str:
    """A table: per bucket of source lengths, each model's output length as a share of the
    references' (the sum over the bucket's sentences), in percent. Below 100, the model writes
    less than there is to translate: BLEU's brevity penalty then takes its share, and a model
    that stops after the first caption of a joined input shows here first."""
    n = len(reference_lengths)
    if len(source_lengths) != n or any(len(v) != n for v in output_lengths.values()):
        raise ValueError(f"every model's output lengths, the reference lengths and the source "
                         f"lengths must hold one number per sentence ({n})")
    models = list(output_lengths)
    lines = ["output length as a share of the reference's, by source length (%)",
             f"{'tokens':8s}{'sentences':>10s}" + "".join(f"{m:>12s}" for m in models)]
    for name, shortest, longest in buckets:
        chosen = [i for i, length in enumerate(source_lengths) if shortest <= length <= longest]
        if not chosen:
            continue
        wanted = sum(reference_lengths[i] for i in chosen)
        shares = [100 * sum(output_lengths[m][i] for i in chosen) / wanted for m in models]
        lines.append(f"{name:8s}{len(chosen):10d}" + "".join(f"{v:12.0f}" for v in shares))
    return "\n".join(lines)


def sentences_written(outputs: Mapping[str, Sequence[str]], joined: Sequence[JoinedPair]) -> str:
    """A table: for each number of captions joined, how many sentences each model's outputs hold
    on average (counted by their full stops, question and exclamation marks), against the
    references'. One sentence for several captions: the model merges them, or drops some."""
    sizes = sorted({p.parts for p in joined})

    def count(text: str) -> int:
        return max(1, sum(text.count(mark) for mark in ".!?"))

    lines = ["sentences per output (by their final marks), by captions joined",
             f"{'captions':>8s}{'references':>12s}" + "".join(f"{m:>12s}" for m in outputs)]
    for k in sizes:
        chosen = [i for i, p in enumerate(joined) if p.parts == k]
        wanted = sum(count(joined[i].reference) for i in chosen) / len(chosen)
        said = [sum(count(outputs[m][i]) for i in chosen) / len(chosen) for m in outputs]
        lines.append(f"{k:8d}{wanted:12.1f}" + "".join(f"{v:12.1f}" for v in said))
    return "\n".join(lines)


def plot_bleu_against_length(comparison: LengthComparison, *, longest_trained: int | None = None,
                             title: str = "BLEU against source length") -> Figure:
    """Two panels over the buckets of ``comparison`` (one a column, labelled with its number of
    sentences): above, each model's BLEU with its bootstrap interval as a band; below, each
    model's gain over the baseline with its paired interval, against zero. ``longest_trained``:
    the longest training source, marked where the buckets pass it."""
    buckets = list(comparison.counts)
    others = [m for m in comparison.models if m != comparison.baseline]
    x = np.arange(len(buckets))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(NOTEBOOK_WIDTH, 5.6), sharex=True,
                                      height_ratios=(3, 2), layout="constrained")
    for k, name in enumerate([comparison.baseline, *others]):
        shown = _present(comparison.bleu[name], buckets)
        colour = model_colour(name, k)
        top.plot([i for i, _ in shown], [s.value for _, s in shown], marker="o", color=colour,
                 label=name)
        top.fill_between([i for i, _ in shown], [s.low for _, s in shown],
                         [s.high for _, s in shown], color=colour, alpha=0.2, linewidth=0)
    level = f"{comparison.confidence:.0%}"
    top.set(ylabel=f"BLEU ({level} interval)", title=title, ylim=(0, None))
    # BLEU falls with length: the lower left is free, the upper right holds the marker's label
    top.legend(loc="lower left")
    for k, name in enumerate(others, start=1):
        gains = _present(comparison.gain[name], buckets)
        values = np.array([g.value for _, g in gains])
        errors = np.array([[g.value - g.low for _, g in gains],
                           [g.high - g.value for _, g in gains]])
        bottom.errorbar([i for i, _ in gains], values, yerr=errors, marker="s", capsize=3,
                        color=model_colour(name, k), label=f"{name} minus {comparison.baseline}")
    bottom.axhline(0, color="0.3", linewidth=0.8)
    bottom.set(ylabel=f"gain in BLEU\n(paired {level} interval)")
    bottom.legend(loc="upper right")
    bottom.set_xticks(x, [f"{b}\n({comparison.counts[b]})" for b in buckets])
    bottom.set_xlabel("source length in tokens (sentences)")
    if longest_trained is not None:
        names = [i for i, b in enumerate(buckets) if _starts(b) > longest_trained]
        if names:
            for ax in (top, bottom):
                ax.axvline(names[0] - 0.5, color="0.4", linestyle="--", linewidth=1)
            top.annotate(f"longer than any training\ncaption ({longest_trained} tokens)",
                         (names[0] - 0.4, 0.97), xycoords=("data", "axes fraction"),
                         va="top", fontsize=MIN_FONTSIZE, color="0.3")
    return fig


def _present(by_bucket: Mapping[str, Interval | None], buckets: Sequence[str]
             ) -> list[tuple[int, Interval]]:
    """(position, interval) of each bucket that has sentences."""
    return [(i, value) for i, b in enumerate(buckets)
            if (value := by_bucket.get(b)) is not None]


def _starts(bucket: str) -> int:
    """The shortest length of a bucket named ``"20-29"`` or ``"60+"``."""
    return int(bucket.split("-")[0].rstrip("+"))
