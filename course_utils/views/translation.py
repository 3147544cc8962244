"""Notebook 4's tables, figures and checkpoint bookkeeping, so that its cells show the training
and the comparison rather than the printing.

- :func:`describe_splits`, :func:`describe_vocabularies`, :func:`describe_lengths` and
  :func:`plot_sentence_lengths` (section 1): the data, the tokenizers' vocabularies, the
  sentences' lengths;
- :func:`start_epoch_checkpoints` and :func:`save_final_checkpoints` (section 2): the attention
  model saved after every epoch (notebook 5 watches its alignments form) and both models at the
  end, where notebook 5 and the exercises read them;
- :func:`bleu_table` (section 3): test BLEU per test set and model, and each gain;
- :func:`side_by_side` (section 6): sentences of chosen lengths with every model's output.

The task's settings and data are :mod:`course_utils.translation_setup`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from course_utils.checkpoints import MULTI30K_RUN, EpochSaver, display_path, save_checkpoint
from course_utils.metrics import LENGTH_BUCKETS, BleuResult
from course_utils.models import Seq2Seq
from course_utils.text import TranslationData
from course_utils.training import History
from course_utils.translation_setup import Multi30kConfig

__all__ = ["ScoredOutputs", "bleu_table", "describe_lengths", "describe_splits",
           "describe_vocabularies", "plot_sentence_lengths", "save_final_checkpoints",
           "side_by_side", "start_epoch_checkpoints"]


def describe_splits(data: TranslationData, examples: int = 3) -> str:
    """Notebook 4, section 1: each split's number of sentence pairs, then the first
    ``examples`` training pairs as raw text."""
    lines = [f"{'split':18s}{'sentences':>10s}"]
    lines += [f"{split:18s}{len(pairs):10,d}" for split, pairs in data.raw.items()]
    for english, german in data.raw.get("train", [])[:examples]:
        lines += ["", f"EN: {english}", f"DE: {german}"]
    return "\n".join(lines)


def describe_vocabularies(data: TranslationData, config: Multi30kConfig, example: int = 1) -> str:
    """Notebook 4, section 1: training pair ``example`` as the tokenizers split it, the size of
    each vocabulary (tokens seen at least ``config.min_freq`` times in training, and the four
    special tokens), and the share of validation tokens that are ``<unk>`` on each side."""
    english, german = data.raw["train"][example]
    lines = [f"EN tokens: {data.src_tokenizer(english)}",
             f"DE tokens: {data.tgt_tokenizer(german)}",
             "", f"vocabulary: {len(data.src_vocab):,} English and {len(data.tgt_vocab):,} German "
             f"tokens (min_freq {config.min_freq}, 4 special tokens each)"]
    for name, vocab, side in [("English", data.src_vocab, 0), ("German", data.tgt_vocab, 1)]:
        ids = [i for pair in data.pairs["val"] for i in pair[side]]
        unknown = sum(i == vocab.unk_id for i in ids) / max(len(ids), 1)
        lines.append(f"{name} validation tokens that are <unk>: {unknown:.1%}")
    return "\n".join(lines)


def _training_lengths(data: TranslationData) -> tuple[np.ndarray, np.ndarray]:
    """Tokens per training sentence: ``(English, German)``, one entry per pair."""
    if not data.pairs.get("train"):
        raise ValueError("the data hold no training pairs to measure")
    return (np.array([len(s) for s, _ in data.pairs["train"]]),
            np.array([len(t) for _, t in data.pairs["train"]]))


def describe_lengths(data: TranslationData) -> str:
    """Notebook 4, section 1: the mean length of a training sentence on each side, and the
    share of training sources in each of the :data:`~course_utils.metrics.LENGTH_BUCKETS`
    that section 4 scores separately."""
    source, target = _training_lengths(data)
    lines = [f"mean length: English {source.mean():.1f} tokens, German {target.mean():.1f} tokens"]
    for name, low, high in LENGTH_BUCKETS:
        share = np.mean((source >= low) & (source <= high))
        lines.append(f"source length {name:6s}: {share:6.1%} of training sentences")
    return "\n".join(lines)


def plot_sentence_lengths(data: TranslationData) -> Figure:
    """Notebook 4, section 1: histograms of the training sentences' lengths in tokens,
    English and German side by side at each length (not overlaid), with dotted lines at the
    edges of the length buckets."""
    source, target = _training_lengths(data)
    fig, ax = plt.subplots(figsize=(8, 3.4), layout="constrained")
    longest = int(max(source.max(), target.max()))
    bins = list(range(max(45, longest + 1)))  # one bar per length; the last bar holds two
    # two opaque bars per length, side by side: neither hides the other
    ax.hist([source, target], bins=bins, color=["C0", "C1"],
            label=["English (source)", "German (target)"])
    edges = [low for _, low, _ in LENGTH_BUCKETS[1:]]
    for edge in edges:
        ax.axvline(edge - 0.5, color="k", ls=":", lw=1)
    names = " / ".join(name for name, _, _ in LENGTH_BUCKETS)
    ax.set(xlabel="tokens per sentence", ylabel="training sentences",
           title=f"Sentence lengths in Multi30k (dotted: the {names} buckets)",
           xlim=(0, bins[-1]), xticks=range(0, bins[-1] + 1, 5))
    ax.legend()
    return fig


def start_epoch_checkpoints(model: Seq2Seq, data: TranslationData,
                            config: Multi30kConfig) -> EpochSaver:
    """Notebook 4, section 2: save the untrained attention ``model`` now (epoch 0) in
    ``MULTI30K_RUN``, and return the ``on_epoch_end`` callback that saves it after every
    epoch of :func:`~course_utils.training.train`, so that notebook 5 can watch its
    alignments form."""
    save_epoch = EpochSaver(MULTI30K_RUN, data.src_vocab, data.tgt_vocab,
                            tokenizers=data.tokenizer_settings(), extra={"config": config.name})
    save_epoch(0, model, None)
    return save_epoch


def save_final_checkpoints(models: Mapping[str, Seq2Seq], histories: Mapping[str, History],
                           data: TranslationData, config: Multi30kConfig) -> str:
    """Notebook 4, section 2: save each trained model (``"attention"``, ``"vanilla"``) with
    its vocabularies, tokenizer settings and history in ``MULTI30K_RUN``, where notebook 5
    and the exercises read them; return a line per model (its training time, from its
    history, and its final validation loss) and one for both."""
    if set(models) != set(histories) or any(not histories[n].epoch for n in histories):
        raise ValueError(f"need a trained history per model; got models {sorted(models)} and "
                         f"histories {({n: len(h.epoch) for n, h in histories.items()})}")
    lines, total, devices = [], 0.0, set()
    for name, model in models.items():
        history = histories[name]
        save_checkpoint(MULTI30K_RUN.checkpoint(name), model, data.src_vocab, data.tgt_vocab,
                        history, tokenizers=data.tokenizer_settings(),
                        extra={"config": config.name})
        total += history.seconds[-1]
        devices.add(next(model.parameters()).device.type)
        lines.append(f"{name:9s}: trained in {history.seconds[-1] / 60:.1f} min, final "
                     f"validation loss {history.val_loss[-1]:.3f}")
    lines.append(f"both models: {total / 60:.1f} min on {', '.join(sorted(devices))}; "
                 f"saved in {display_path(MULTI30K_RUN.path)}")
    return "\n".join(lines)


class ScoredOutputs(Protocol):
    """What :func:`course_utils.translation.evaluate_bleu` returns, as far as the tables
    below read it."""

    bleu: BleuResult
    hypotheses: list[str]
    references: list[str]
    source_lengths: list[int]


def bleu_table(evaluations: Mapping[tuple[str, str], ScoredOutputs],
               baseline: str = "vanilla") -> str:
    """Notebook 4, section 3: test BLEU per test set (a row) and model (a column, the
    ``baseline`` first), each other model's gain over the baseline, and sacreBLEU's signature.
    ``evaluations`` maps ``(model, split)`` to the result of ``evaluate_bleu``."""
    models = list(dict.fromkeys(m for m, _ in evaluations))
    splits = list(dict.fromkeys(s for _, s in evaluations))
    if baseline not in models or len(models) < 2:
        raise ValueError(f"need the baseline {baseline!r} and at least one other model; "
                         f"got models {models}")
    missing = [(m, s) for m in models for s in splits if (m, s) not in evaluations]
    if missing:
        raise ValueError(f"every model needs every split; missing {missing}")
    others = [m for m in models if m != baseline]
    gains = ["gain"] if len(others) == 1 else [f"gain {m}" for m in others]
    columns = [baseline, *others]
    lines = [f"{'test set':18s}{'sentences':>10s}" + "".join(f"{m:>{len(m) + 2}s}" for m in columns)
             + "".join(f"{g:>{len(g) + 3}s}" for g in gains)]
    for split in splits:
        scores = {m: evaluations[m, split].bleu.score for m in columns}
        row = f"{split:18s}{evaluations[baseline, split].bleu.n:10d}"
        row += "".join(f"{scores[m]:{len(m) + 2}.1f}" for m in columns)
        row += "".join(f"{scores[m] - scores[baseline]:+{len(g) + 3}.1f}"
                       for m, g in zip(others, gains))
        lines.append(row)
    lines += ["", f"sacreBLEU signature: {evaluations[others[0], splits[0]].bleu.signature}"]
    return "\n".join(lines)


def side_by_side(sources: Sequence[str], evaluations: Mapping[str, ScoredOutputs],
                 near_lengths: Sequence[int] = (7, 14, 24)) -> str:
    """Notebook 4, section 6: for each of ``near_lengths``, the source sentence whose length
    (in tokens) is closest to it, its reference and each model's translation."""
    if not evaluations:
        raise ValueError("evaluations must map at least one model's name to its outputs")
    first = next(iter(evaluations.values()))
    if any(len(e.hypotheses) != len(sources) for e in evaluations.values()):
        raise ValueError(f"need one output per source sentence ({len(sources)}) from each model")
    lengths = np.array(first.source_lengths)
    blocks = []
    for target in near_lengths:
        i = int(np.argmin(np.abs(lengths - target)))
        lines = [f"source ({lengths[i]} tokens): {sources[i]}",
                 f"  {'reference:':11s}{first.references[i]}"]
        lines += [f"  {name + ':':11s}{e.hypotheses[i]}" for name, e in evaluations.items()]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
