"""Notebook 1's bottleneck measurement and its two result plots: what one final state
remembers, and one decoding step's energies beside its weights."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import ArrayLike

from course_utils.colours import BLUE
from course_utils.plotting import MIN_FONTSIZE, NOTEBOOK_WIDTH, plot_weights
from course_utils.tensors import to_numpy

__all__ = ["linear_recall", "plot_bottleneck", "plot_energies_and_weights"]


def plot_energies_and_weights(
    energies: ArrayLike, weights: ArrayLike, labels: Sequence[str], *, step: int | str = "i"
) -> Figure:
    """Notebook 1, section 4: one decoding step's energies beside its softmax weights, a bar
    per encoder state, the winner highlighted in both. ``step`` is the ``i`` of the titles'
    :math:`e_{ij}` and :math:`\\alpha_{ij}`."""
    energies, weights = to_numpy(energies).astype(float), to_numpy(weights).astype(float)
    if energies.shape != weights.shape:
        raise ValueError(f"need one weight per energy; got energies of shape {energies.shape} "
                         f"and weights of shape {weights.shape}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(NOTEBOOK_WIDTH, 3.2), layout="constrained")
    # room below a negative bar for its printed value
    plot_weights(energies, labels, ax=left, title=f"Energies $e_{{{step}j}}$", ylabel="energy",
                 ylim=(min(0.0, 1.4 * float(energies.min())), 1.0))
    plot_weights(weights, labels, ax=right, title=rf"Weights $\alpha_{{{step}j}}$")
    _ticks_inside(left)
    return fig


def linear_recall(
    encode: Callable[[np.ndarray], np.ndarray], seq_len: int, n_sequences: int, *,
    word_dim: int = 4, seed: int = 0,
) -> np.ndarray:
    """Notebook 1, section 1: how much of each word a sequence's final state still holds.

    Draws ``n_sequences`` sequences of ``seq_len`` random ``word_dim``-dimensional words,
    encodes them with ``encode`` (``(n, seq_len, word_dim)`` to final states ``(n, d)``), fits
    the best linear read-out of every word from the final state (and a bias) by least squares
    on the first half of the sequences, and scores it on the second half. Returns the
    :math:`R^2` of each word position, averaged over its ``word_dim`` numbers: ``(seq_len,)``,
    1 for perfect recall, 0 for no better than the mean."""
    if seq_len < 1 or word_dim < 1:
        raise ValueError(f"seq_len and word_dim must be at least 1; got {seq_len} and {word_dim}")
    if n_sequences < 4:
        raise ValueError(f"n_sequences must be at least 4 (half to fit, half to score); "
                         f"got {n_sequences}")
    rng = np.random.default_rng(seed + seq_len)
    words = rng.normal(size=(n_sequences, seq_len, word_dim))  # (n, T, word_dim)
    states = np.asarray(encode(words), dtype=float)
    if states.ndim != 2 or states.shape[0] != n_sequences:
        raise ValueError(f"encode must return one final state per sequence, shape "
                         f"({n_sequences}, d); got {states.shape}")
    features = np.hstack([states, np.ones((n_sequences, 1))])  # (n, d + 1): a bias too
    targets = words.reshape(n_sequences, -1)  # (n, T * word_dim)
    half = n_sequences // 2
    readout, *_ = np.linalg.lstsq(features[:half], targets[:half], rcond=None)
    residual = ((features[half:] @ readout - targets[half:]) ** 2).mean(axis=0)
    r2 = 1 - residual / targets[half:].var(axis=0)  # (T * word_dim,)
    return r2.reshape(seq_len, word_dim).mean(axis=1)


def _ticks_inside(ax: Axes) -> None:
    """Keep only the y ticks within the axes' limits (no label hangs, unseen, outside them)."""
    low, high = ax.get_ylim()
    ax.set_yticks([t for t in ax.get_yticks() if low <= t <= high])


def plot_bottleneck(
    recall: Sequence[ArrayLike], *, state_dim: int, word_dim: int, show_length: int = 20
) -> Figure:
    """Notebook 1, section 1: how much of a sequence one final state remembers.

    ``recall[k]`` holds the :math:`R^2` of each word of sequences of length ``k + 1`` (one
    value per position). Left: the mean against the length, under the ceiling that
    ``state_dim`` numbers put on any linear read-out of ``word_dim * T`` numbers. Right: the
    value per position for sequences of ``show_length`` words."""
    values = [to_numpy(r).astype(float) for r in recall]  # values[T - 1]: (T,)
    if [len(r) for r in values] != list(range(1, len(values) + 1)):
        raise ValueError("recall[k] must hold one value per position of a sequence of k + 1 "
                         f"words; got lengths {[len(r) for r in values][:5]} ...")
    if not 1 <= show_length <= len(values):
        raise ValueError(f"show_length must be between 1 and {len(values)}; got {show_length}")
    lengths = np.arange(1, len(values) + 1)
    fig, (left, right) = plt.subplots(1, 2, figsize=(NOTEBOOK_WIDTH, 3.6), layout="constrained")
    left.plot(lengths, [r.mean() for r in values], "o-", color=BLUE,
              label=f"measured: random RNN, d = {state_dim}")
    left.plot(lengths, np.minimum(1, state_dim / (word_dim * lengths)), "k--",
              label=f"ceiling: min(1, d / ({word_dim}T))")
    left.set(xlabel="sentence length T", ylabel="fraction recovered ($R^2$)",
             title="What one final state remembers", ylim=(0, 1.05))
    left.legend(loc="upper right", fontsize=MIN_FONTSIZE)  # over the flat tails
    right.bar(np.arange(1, show_length + 1), values[show_length - 1], color=BLUE)
    right.set(xlabel="word position j", ylabel="$R^2$ for word j", ylim=(0, 1.05),
              title=f"T = {show_length}: which words survive",
              xticks=sorted({1, *range(5, show_length + 1, 5)}))
    for ax in (left, right):
        _ticks_inside(ax)
    return fig
