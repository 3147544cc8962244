"""The sequence-reversal task of notebook 3: its data, its alignment score, its settings.

Reversal has a known correct alignment, so it shows what attention learns: output step i
(counted from 0) must read source position ``n - 1 - i``, the anti-diagonal.
:func:`make_reversal_pairs` makes the data, :func:`alignment_score` measures how much
attention lies on the anti-diagonal, and :func:`reversal_config` picks the settings for the
current scale (notebook 3 and the benchmarks use them).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from course_utils.config import scaled
from course_utils.data import SPECIALS, Pair, Vocab
from course_utils.models import ModelSizes
from course_utils.tensors import to_numpy
from course_utils.training import RunConfig, TrainConfig

__all__ = [
    "BOTTLENECK",
    "REVERSAL",
    "SCORE_COMPARISON",
    "ReversalConfig",
    "alignment_score",
    "bottleneck_config",
    "make_reversal_pairs",
    "reversal_alignment",
    "reversal_config",
    "reversal_vocab",
    "score_comparison_config",
]


# ----------------------------------------------------------------------------------- data


def reversal_vocab(n_symbols: int = 26) -> Vocab:
    """Symbols ``a, b, c, ...`` (then ``s26, s27, ...``) plus the special tokens."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    return Vocab([letters[i] if i < 26 else f"s{i}" for i in range(n_symbols)])


def make_reversal_pairs(
    n: int, min_len: int, max_len: int, vocab: Vocab, seed: int = 0
) -> list[Pair]:
    """``n`` random sequences of symbols (lengths uniform in ``[min_len, max_len]``) and
    their reversals. Deterministic for a given seed."""
    if not 1 <= min_len <= max_len:
        raise ValueError(f"need 1 <= min_len <= max_len; got {min_len}, {max_len}")
    symbols = list(range(len(SPECIALS), len(vocab)))
    if not symbols:
        raise ValueError("the vocabulary has no symbols besides the special tokens")
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        source = [rng.choice(symbols) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((source, source[::-1]))
    return pairs


# ------------------------------------------------------------------------ alignment score


def reversal_alignment(src_len: int) -> list[int]:
    """For reversal, output step i reads source position ``src_len - 1 - i``: the anti-diagonal.

    Positions count from 0 here; counted from 1, as in notebook 3, step i reads ``n - i + 1``.
    """
    return list(range(src_len - 1, -1, -1))


def alignment_score(attention: object, expected_positions: Sequence[int]) -> float:
    """Mean attention weight on the expected source position of each output step.

    ``attention``: ``(out_len, src_len)`` (array or tensor); ``expected_positions[i]`` is the
    source position that output step ``i`` should read. 1.0 means all weight on the right
    place; a uniform spread over ``n`` positions scores ``1 / n``. Steps beyond
    ``len(expected_positions)`` (such as the EOS step) are ignored.
    """
    weights = to_numpy(attention)
    if weights.ndim != 2:
        raise ValueError(f"attention must be (out_len, src_len); got {weights.shape}")
    steps = min(len(expected_positions), weights.shape[0])
    if steps == 0:
        raise ValueError("no output step to score")
    positions = np.asarray(expected_positions[:steps])
    if positions.min() < 0 or positions.max() >= weights.shape[1]:
        raise ValueError(f"expected positions must lie in [0, {weights.shape[1]})")
    return float(weights[np.arange(steps), positions].mean())


# ------------------------------------------------------------------------------- settings


@dataclass(frozen=True, kw_only=True)
class ReversalConfig(RunConfig):
    """Settings of the reversal task: the run's parts (:class:`RunConfig`: ``name``, ``model``,
    ``train``) with this task's defaults, then the data (symbols, lengths, sizes)."""

    n_symbols: int = 20  # distinct symbols a, b, c, ...
    min_len: int = 5  # the shortest sequence, in symbols
    max_len: int = 20  # the longest
    n_train: int = 12_000  # training pairs, lengths drawn uniformly in [min_len, max_len]
    n_val: int = 1_000  # held-out pairs, drawn with another seed
    # l = n / 2, the paper's ratio (l = 500 for n = 1000)
    model: ModelSizes = ModelSizes(embed_dim=32, hidden_dim=96, attention_dim=96, maxout_dim=48)
    train: TrainConfig = TrainConfig(epochs=6)


#: The CPU configuration: >= 99% held-out exact match in well under a minute on 2 cores.
REVERSAL = ReversalConfig()

#: Smoke-test scale (COURSE_QUICK): seconds.
QUICK = REVERSAL.replace(name="quick", max_len=10, n_train=600, n_val=100, embed_dim=16,
                         hidden_dim=32, attention_dim=32, maxout_dim=16, epochs=2)

#: On a GPU: more data and larger batches, same task.
GPU = REVERSAL.replace(name="gpu", n_train=50_000, batch_size=256, hidden_dim=128,
                       attention_dim=128, maxout_dim=64, epochs=8)


def reversal_config() -> ReversalConfig:
    """The configuration for the current scale: quick, CPU or GPU."""
    return scaled(quick=QUICK, cpu=REVERSAL, gpu=GPU)


#: The bottleneck experiment: attention and vanilla models, same budget, lengths up to 32.
BOTTLENECK = REVERSAL.replace(name="bottleneck", min_len=2, max_len=32, n_train=16_000,
                              n_val=2_000)
BOTTLENECK_QUICK = QUICK.replace(name="bottleneck-quick", min_len=2, max_len=12, epochs=1)
BOTTLENECK_GPU = GPU.replace(name="bottleneck-gpu", min_len=2, max_len=40, n_val=2_000,
                             n_train=60_000)


def bottleneck_config() -> ReversalConfig:
    """Settings for comparing the vanilla and attention models as sequences grow."""
    return scaled(quick=BOTTLENECK_QUICK, cpu=BOTTLENECK, gpu=BOTTLENECK_GPU)


#: Notebook 6's controlled experiment: eight models (four scores, two orders) times three seeds,
#: so each run is small: about 20 seconds on 2 CPU cores.
SCORE_COMPARISON = REVERSAL.replace(name="scores", n_train=4_000, n_val=500, embed_dim=32,
                                    hidden_dim=64, attention_dim=64, maxout_dim=32, epochs=8)
SCORE_COMPARISON_QUICK = QUICK.replace(name="scores-quick", n_train=400, n_val=60, epochs=2)
SCORE_COMPARISON_GPU = GPU.replace(name="scores-gpu", n_train=20_000, n_val=1_000, epochs=8)


def score_comparison_config() -> ReversalConfig:
    """Settings for comparing score functions and orders of operations on reversal."""
    return scaled(quick=SCORE_COMPARISON_QUICK, cpu=SCORE_COMPARISON, gpu=SCORE_COMPARISON_GPU)

