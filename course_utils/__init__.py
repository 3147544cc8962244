"""Helpers for the Day 10 course on Bahdanau (additive) attention.

Small modules, one idea each:

- :mod:`course_utils.attention`: the NumPy reference and the PyTorch ``BahdanauAttention``
- :mod:`course_utils.models`: GRU encoder, attention and vanilla decoders, greedy decoding
- :mod:`course_utils.data`: vocabulary, reversal data, length-bucketed padded batches
- :mod:`course_utils.training`: the training loop, history, attention snapshots, checkpoints
- :mod:`course_utils.metrics`: exact match, accuracy by length, alignment scores
- :mod:`course_utils.reversal`: the settings of notebook 3's reversal task
- :mod:`course_utils.plotting`: attention heatmaps and weight bar charts
- :mod:`course_utils.config`: ``COURSE_QUICK`` scale and device choice
- :mod:`course_utils.checks`: exercise checks students run and instructors grade with
- :mod:`course_utils.exercises`: generate ``exercises/`` from ``solutions/``
- :mod:`course_utils.files`: atomic writes (nothing half-written on failure)
- :mod:`course_utils.kernel`: register the Jupyter kernel the notebooks use
"""

from course_utils.attention import (
    AttentionResult,
    BahdanauAttention,
    additive_attention,
    entropy,
    softmax,
)
from course_utils.config import get_device, quick_mode, runs_dir, scaled
from course_utils.plotting import plot_attention, plot_weights

__version__ = "0.1.0"

__all__ = [
    "AttentionResult",
    "BahdanauAttention",
    "additive_attention",
    "entropy",
    "get_device",
    "plot_attention",
    "plot_weights",
    "quick_mode",
    "runs_dir",
    "scaled",
    "softmax",
]
