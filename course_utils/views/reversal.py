"""What notebook 3 shows of its reversal models, one call per figure or table.

- :func:`reversal_data` (section 1): the vocabulary and the training and held-out pairs, with a
  few examples printed;
- :func:`show_training` (section 3): the epoch table, the loss and exact-match curves;
- :func:`show_alignments` and :func:`alignment_summary` (section 4): heatmaps of held-out
  sequences scored against the known anti-diagonal, and the score over the held-out set;
- :func:`plot_emerging` (section 5): one sequence's attention at the epochs ``train`` kept;
- :func:`bottleneck_experiment` and :func:`plot_bottleneck` (section 6): the attention and the
  fixed-context (vanilla) model trained on the same budget, exact match by sequence length.

The models, the training loop and the decoding are the lesson's own (:mod:`course_utils.models`,
:mod:`course_utils.training`, :mod:`course_utils.decoding`); this module only measures and draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from course_utils.data import Pair, Vocab
from course_utils.decoding import Decoded, greedy_decode_pairs
from course_utils.metrics import accuracy_by_length, exact_match
from course_utils.models import Seq2Seq, build_model
from course_utils.plotting import plot_attention
from course_utils.reversal import (
    ReversalConfig,
    alignment_score,
    bottleneck_config,
    make_reversal_pairs,
    reversal_alignment,
    reversal_vocab,
)
from course_utils.training import History, seed_everything, train

__all__ = ["Bottleneck", "alignment_summary", "bottleneck_experiment", "plot_bottleneck",
           "plot_emerging", "reversal_data", "show_alignments", "show_training"]


def reversal_data(config: ReversalConfig, examples: int = 3) -> tuple[Vocab, list[Pair],
                                                                      list[Pair]]:
    """``(vocab, train_pairs, held_out_pairs)`` of ``config``'s sizes (seeds 1 and 2, drawn
    independently), with their sizes and ``examples`` training pairs printed."""
    vocab = reversal_vocab(config.n_symbols)
    train_pairs = make_reversal_pairs(config.n_train, config.min_len, config.max_len, vocab, seed=1)
    val_pairs = make_reversal_pairs(config.n_val, config.min_len, config.max_len, vocab, seed=2)
    print(f"{len(vocab)} tokens ({config.n_symbols} symbols and {len(vocab) - config.n_symbols} "
          f"special ones); {len(train_pairs):,} training and {len(val_pairs):,} held-out pairs, "
          f"lengths {config.min_len} to {config.max_len}")
    for source, target in train_pairs[:examples]:
        print(" ".join(vocab.decode(source)), "  ->  ", " ".join(vocab.decode(target)))
    return vocab, train_pairs, val_pairs


def show_training(history: History, device: torch.device | str = "cpu") -> Figure:
    """Print the epoch table; draw the loss (log scale) and held-out exact match, with a 99%
    line; print when 99% was first reached."""
    if not history.epoch:
        raise ValueError("the history holds no epoch: train first")
    print(f"{'epoch':>5s} {'train loss':>11s} {'val loss':>9s} {'exact match':>12s} "
          f"{'seconds':>8s}")
    for row in zip(history.epoch, history.train_loss, history.val_loss, history.val_exact_match,
                   history.seconds):
        print(f"{row[0]:5d} {row[1]:11.4f} {row[2]:9.4f} {row[3]:12.1%} {row[4]:8.1f}")
    fig, (loss, exact) = plt.subplots(1, 2, figsize=(8, 3.4), layout="constrained")
    loss.plot(history.epoch, history.train_loss, "o-", label="training")
    loss.plot(history.epoch, history.val_loss, "s-", label="held-out")
    loss.set(xlabel="epoch", ylabel="cross-entropy per token", yscale="log", title="Loss")
    loss.legend()
    exact.plot(history.epoch, 100 * np.array(history.val_exact_match), "o-", color="C2",
               zorder=3, label="held-out")
    # the 99% line in red over the green data, named at its left end where the data is low,
    # with room above it so that it does not sit on the axis' top edge
    exact.axhline(99, color="C3", ls="--", lw=1.5, label="99%", zorder=4)
    exact.text(0.02, 99, "99%", transform=exact.get_yaxis_transform(), color="C3",
               va="bottom", ha="left", zorder=4)
    exact.set(xlabel="epoch", ylabel="exact match (%)", ylim=(0, 115), yticks=range(0, 101, 20),
              title="Held-out sequences reversed perfectly")
    exact.legend(loc="lower right")
    reached = [s for s, x in zip(history.seconds, history.val_exact_match) if x >= 0.99]
    where = torch.device(device).type
    print(f"final held-out exact match: {history.val_exact_match[-1]:.1%}; "
          + (f"99% first reached after {reached[0]:.0f} s on {where}" if reached
             else "99% not reached in this run"))
    return fig


def _rows(vocab: Vocab, output: Sequence[int], weights: np.ndarray | torch.Tensor) -> list[str]:
    """Row labels: the model's output symbols, and ``<eos>`` for the step that ended it."""
    return vocab.decode(list(output)) + (["<eos>"] if weights.shape[0] > len(output) else [])


def show_alignments(model: Seq2Seq, vocab: Vocab, pairs: Sequence[Pair],
                    device: torch.device | str = "cpu", lengths: Sequence[int] = (8,),
                    longest: bool = True) -> list[Figure]:
    """Heatmaps of the first pair of each of ``lengths`` among ``pairs`` (the nearest length
    there is) and, with ``longest``, of the longest pair; each titled with its alignment score
    (the mean weight on the right position, :func:`course_utils.reversal.alignment_score`), which
    is printed as well."""
    if not pairs:
        raise ValueError("no pairs to draw")
    chosen = [min(pairs, key=lambda p: abs(len(p[0]) - n)) for n in lengths]
    pairs = chosen + ([max(pairs, key=lambda p: len(p[0]))] if longest else [])
    decoded = greedy_decode_pairs(model, list(pairs), device=device)
    if decoded.attention is None:
        raise ValueError("the model has no attention to draw (a vanilla model?)")
    figures = []
    for (source, _), output, weights in zip(pairs, decoded.tokens, decoded.attention):
        score = alignment_score(weights, reversal_alignment(len(source)))
        title = f"length {len(source)}: alignment score {score:.2f}"
        fig = plot_attention(weights, vocab.decode(list(source)), _rows(vocab, output, weights),
                             title=title, annotate=len(source) <= 10)
        figures.append(fig)
        print(title)  # each figure's score, in words as well
    return figures


def alignment_summary(model: Seq2Seq, pairs: Sequence[Pair],
                      device: torch.device | str = "cpu") -> Decoded:
    """Print the held-out set's mean alignment score against uniform attention's, and its exact
    match; return the decoded set."""
    held_out = greedy_decode_pairs(model, list(pairs), device=device)
    if held_out.attention is None:
        raise ValueError("the model has no attention to score (a vanilla model?)")
    scores = np.array([alignment_score(w, reversal_alignment(len(s)))
                       for w, (s, _) in zip(held_out.attention, pairs)])
    uniform = np.mean([1 / len(s) for s, _ in pairs])
    print(f"mean alignment score {scores.mean():.3f} (median {np.median(scores):.3f}); "
          f"uniform attention would score {uniform:.3f}")
    print(f"held-out exact match {exact_match(held_out, list(pairs)):.1%}")
    return held_out


def plot_emerging(history: History, source: Sequence[int], vocab: Vocab) -> Figure:
    """The attention of the first snapshot sequence at every epoch ``train`` kept, with its
    alignment score (printed as well); one colour bar. Rows are cut to the source length (an
    untrained model's output has no particular length)."""
    epochs = sorted(history.snapshots)
    if not epochs:
        raise ValueError("the history holds no attention snapshots: pass snapshot_pairs and "
                         "snapshot_epochs to train")
    ncols = 2 if len(epochs) == 4 else len(epochs)  # a 2 x 2 grid for the usual four
    nrows = -(-len(epochs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(8, 3.8 * nrows), layout="constrained",
                             squeeze=False)
    scores = []
    for ax, epoch in zip(axes.flat, epochs):
        weights = history.snapshots[epoch][0]
        rows = min(weights.shape[0], len(source))
        score = alignment_score(weights, reversal_alignment(len(source)))
        scores.append(f"epoch {epoch}: score {score:.2f}")
        plot_attention(weights[:rows], vocab.decode(list(source)),
                       [str(i + 1) for i in range(rows)], ax=ax, annotate=False, colorbar=False,
                       title=scores[-1])
    print("; ".join(scores))  # the panels' scores, in words as well
    for ax in list(axes.flat)[len(epochs):]:
        ax.remove()
    fig.colorbar(axes.flat[0].collections[0], ax=axes, shrink=0.6,
                 label="attention weight α (square-root scale)")
    return fig


@dataclass
class Bottleneck:
    """Section 6's two models: exact match by length and the training history of each."""

    by_length: dict[str, dict[int, float]]
    histories: dict[str, History]


def bottleneck_experiment(vocab: Vocab, device: torch.device | str = "cpu",
                          config: ReversalConfig | None = None) -> Bottleneck:
    """Train the attention and the vanilla model on the same data and budget (``config``, by
    default :func:`course_utils.reversal.bottleneck_config`: lengths 2 to 32 at the current
    scale); print each one's parameters, held-out exact match and training time."""
    config = config or bottleneck_config()
    train_pairs = make_reversal_pairs(config.n_train, config.min_len, config.max_len, vocab,
                                      seed=11)
    val_pairs = make_reversal_pairs(config.n_val, config.min_len, config.max_len, vocab, seed=12)
    result = Bottleneck({}, {})
    device = torch.device(device)
    for name, attention in [("attention", True), ("vanilla", False)]:
        seed_everything(0)
        model = build_model(config.model_config(vocab, vocab, attention=attention)).to(device)
        history = train(model, train_pairs, val_pairs, config, device=device, description=name)
        decoded = greedy_decode_pairs(model, val_pairs, device=device)
        result.by_length[name] = accuracy_by_length(decoded, val_pairs)
        result.histories[name] = history
        print(f"{name:9s}: {sum(p.numel() for p in model.parameters()):,} parameters, held-out "
              f"exact match {history.val_exact_match[-1]:.1%}, trained in "
              f"{history.seconds[-1]:.0f} s")
    return result


def plot_bottleneck(result: Bottleneck) -> Figure:
    """Exact match by sequence length and held-out loss by epoch, one line per model; print
    each model's exact match on sequences longer than 20."""
    fig, (by_length, loss) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
    for (name, accuracy), marker in zip(result.by_length.items(), "os"):
        lengths, values = zip(*sorted(accuracy.items()))
        by_length.plot(lengths, 100 * np.array(values), marker + "-", label=name)
        history = result.histories[name]
        loss.plot(history.epoch, history.val_loss, marker + "-", label=name)
    by_length.set(xlabel="sequence length", ylabel="exact match (%)", ylim=(-2, 102),
                  title="Reversed perfectly, by length")
    by_length.legend(loc="lower left")
    loss.set(xlabel="epoch", ylabel="held-out loss per token", yscale="log",
             title="Same budget, different architecture")
    loss.legend()
    for name, accuracy in result.by_length.items():
        long_ones = [a for n, a in accuracy.items() if n > 20]
        print(f"{name:9s}: exact match on lengths > 20: "
              + (f"{np.mean(long_ones):.1%}" if long_ones else "no sequence longer than 20"))
    return fig
