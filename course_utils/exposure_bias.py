"""Teacher forcing against free running: exposure bias, measured position by position.

A seq2seq decoder is trained with **teacher forcing**: at step i it is fed the reference's
previous word y_{i-1}, whatever it would have written itself. At test time there is no
reference, so greedy decoding feeds the model its own previous output. A model that never saw
its own mistakes during training has not learnt to recover from them, so one wrong word can
pull the rest of the output off course: **exposure bias** (M. Ranzato, S. Chopra, M. Auli,
W. Zaremba, "Sequence level training with recurrent neural networks", ICLR 2016; S. Bengio,
O. Vinyals, N. Jaitly, N. Shazeer, "Scheduled sampling for sequence prediction with recurrent
neural networks", NeurIPS 2015).

:func:`accuracy_by_position` measures it on a trained model: the same sentences decoded both
ways, each output token compared with the reference token at the same position.

- :func:`teacher_forced_predictions`: at every position, the model's most likely word when
  fed the reference prefix (one forward pass, as in training, in eval mode);
- free running: :func:`course_utils.decoding.greedy_decode_pairs`, fed its own outputs;
- :func:`compare_positions`: the share of sentences right at each position, both ways;
- :func:`plot_accuracy_by_position`: both curves in one figure (notebook 4, section 8).

Until its first mistake, greedy decoding is fed exactly the reference prefix, so it predicts
what teacher forcing predicts: the two can only part after a mistake. Comparing position by
position also counts an output that is right but one word out of step (a word inserted or
dropped earlier) as wrong from there on: that is one way errors compound, and it makes this
a harsh measure of translation quality (BLEU, which matches n-grams anywhere, is the fair one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from course_utils.data import Pair, Vocab, collate
from course_utils.decoding import greedy_decode_pairs
from course_utils.models import Seq2Seq
from course_utils.tensors import eval_mode

__all__ = [
    "PositionAccuracy",
    "accuracy_by_position",
    "compare_positions",
    "plot_accuracy_by_position",
    "teacher_forced_predictions",
]


@dataclass(frozen=True)
class PositionAccuracy:
    """Token accuracy against the references at each target position.

    Position 1 is the first output word; a reference's ``<eos>`` counts as a position (ending
    at the right place is part of the translation). Index ``k`` of every array is position
    ``k + 1``.
    """

    sentences: np.ndarray  # (positions,) references that have a token at this position
    teacher_forced: np.ndarray  # (positions,) share right when fed the reference prefix
    free_running: np.ndarray  # (positions,) share right when fed its own outputs (greedy)

    @property
    def positions(self) -> np.ndarray:
        """``1 .. len(self.sentences)``."""
        return np.arange(1, len(self.sentences) + 1)

    def pooled(self, first: int, last: int) -> tuple[float, float]:
        """``(teacher-forced, free-running)`` accuracy over positions ``first..last``
        (inclusive), each position weighted by its number of sentences."""
        if not 1 <= first <= last:
            raise ValueError(f"need 1 <= first <= last; got first={first}, last={last}")
        if first > len(self.sentences):
            raise ValueError(f"no references reach position {first} (the longest has "
                             f"{len(self.sentences)} positions)")
        span = slice(first - 1, last)
        weights = self.sentences[span]
        return (float(np.average(self.teacher_forced[span], weights=weights)),
                float(np.average(self.free_running[span], weights=weights)))

    def summary(self, spans: Sequence[tuple[int, int]]) -> str:
        """One line per span of positions (those no reference reaches are left out): both
        accuracies, and the share of its position-1 accuracy each way keeps there."""
        forced_1, free_1 = self.pooled(1, 1)
        lines = []
        for first, last in spans:
            if first > len(self.sentences):
                continue
            forced, free = self.pooled(first, last)
            kept = (f"; keeps {forced / forced_1:.0%} and {free / free_1:.0%} of position 1's"
                    if forced_1 > 0 and free_1 > 0 else "")
            name = f"{first}" if first == last else f"{first}-{min(last, len(self.sentences))}"
            lines.append(f"positions {name:>5s}: teacher-forced {forced:.0%}, "
                         f"free-running {free:.0%}{kept}")
        return "\n".join(lines)


def compare_positions(
    teacher_forced: Sequence[Sequence[int]],
    free_running: Sequence[Sequence[int]],
    references: Sequence[Sequence[int]],
) -> PositionAccuracy:
    """Position-by-position accuracy of two sets of outputs against the references.

    Every argument has one token-id sequence per sentence, ``<eos>`` included where a sequence
    ended (references always end with it). A free-running output shorter than its reference
    is wrong at the positions it never reached; tokens past the reference's end are not
    scored.
    """
    if not len(teacher_forced) == len(free_running) == len(references):
        raise ValueError(f"need one sequence per sentence in each; got {len(teacher_forced)} "
                         f"teacher-forced, {len(free_running)} free-running and "
                         f"{len(references)} references")
    if not references:
        raise ValueError("no sentences to compare")
    empty = [n for n, reference in enumerate(references) if not reference]
    if empty:
        raise ValueError(f"references {empty[:5]} are empty: each needs at least <eos>")
    longest = max(map(len, references))
    sentences = np.zeros(longest)
    forced_right = np.zeros(longest)
    free_right = np.zeros(longest)
    for n, (forced, free, reference) in enumerate(zip(teacher_forced, free_running, references)):
        if len(forced) != len(reference):
            raise ValueError(f"sentence {n}: teacher forcing predicts one token per reference "
                             f"position ({len(reference)}); got {len(forced)}")
        for k, token in enumerate(reference):
            sentences[k] += 1
            forced_right[k] += forced[k] == token
            free_right[k] += k < len(free) and free[k] == token
    return PositionAccuracy(sentences, forced_right / sentences, free_right / sentences)


@torch.no_grad()
def teacher_forced_predictions(
    model: Seq2Seq, pairs: Sequence[Pair], device: torch.device | str = "cpu",
    batch_size: int = 128,
) -> list[list[int]]:
    """Per pair, the model's most likely token at every reference position (``<eos>``'s
    included) when fed the reference prefix, in eval mode (no dropout): ``len(target) + 1``
    ids per pair."""
    if not pairs:
        raise ValueError("no pairs to predict")
    predictions: list[list[int]] = []
    with eval_mode(model):
        for start in range(0, len(pairs), batch_size):
            chunk = list(pairs[start : start + batch_size])
            batch = collate(chunk).to(device)
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
            best = logits.argmax(dim=-1).cpu().tolist()  # (batch, tgt_len + 1)
            predictions += [row[: len(target) + 1] for row, (_, target) in zip(best, chunk)]
    return predictions


def accuracy_by_position(
    model: Seq2Seq, pairs: Sequence[Pair], device: torch.device | str = "cpu",
    batch_size: int = 128, max_len: int | None = None,
) -> PositionAccuracy:
    """The same sentences decoded teacher-forced and free-running (greedy), each scored
    against the reference position by position (see the module's docstring)."""
    forced = teacher_forced_predictions(model, pairs, device, batch_size)
    if max_len is None:  # one limit for every batch, so that an unfinished output is known
        max_len = 2 * max(len(source) for source, _ in pairs) + 10
    decoded = greedy_decode_pairs(model, pairs, device=device, batch_size=batch_size,
                                  max_len=max_len)
    # greedy decoding trims <eos>; put it back where the model wrote it
    free = [[*tokens, Vocab.eos_id] if len(tokens) < max_len else list(tokens)
            for tokens in decoded.tokens]
    references = [[*target, Vocab.eos_id] for _, target in pairs]
    return compare_positions(forced, free, references)


def plot_accuracy_by_position(
    accuracy: PositionAccuracy, *, min_sentences: int = 20,
    title: str = "Two ways of feeding the model",
) -> Figure:
    """Notebook 4, section 8: the share of words equal to the reference at each target
    position, teacher-forced (solid, circles) against free-running (dashed, squares), over
    the positions at least ``min_sentences`` references reach (fewer make a noisy point), and
    below it how many references reach each position."""
    shown = accuracy.sentences >= min_sentences
    if not shown.any():
        raise ValueError(f"no position is reached by {min_sentences} references (the most is "
                         f"{int(accuracy.sentences.max())}); lower min_sentences")
    positions = accuracy.positions[shown]
    fig, (ax, counts) = plt.subplots(2, 1, figsize=(7.5, 4.8), sharex=True,
                                     height_ratios=(3, 1), layout="constrained")
    ax.plot(positions, accuracy.teacher_forced[shown], "o-",
            label="teacher-forced: fed the reference's previous word")
    ax.plot(positions, accuracy.free_running[shown], "s--",
            label="free-running (greedy): fed its own previous word")
    ax.set(ylabel="share of words equal\nto the reference", ylim=(0, 1), title=title)
    ax.legend(loc="upper right")
    # how many references reach each position: the points further right rest on fewer words
    counts.bar(positions, accuracy.sentences[shown], color="0.6", width=0.7)
    counts.set(xlabel="target position i", ylabel="references\nthis long",
               xticks=[1, *range(5, int(positions[-1]) + 1, 5)])
    return fig
