"""The lesson's library: what the day's notebooks build, made fast and tested.

Small modules, one idea each, in the order the day meets them:

- :mod:`course_utils.attention`: the NumPy reference (energies, softmax, context), the PyTorch
  ``BahdanauAttention`` and the ``Attention`` base it shares with the other scores (masking,
  softmax, context)
- :mod:`course_utils.scores`: the other score functions (dot, general, scaled dot) behind the
  same interface
- :mod:`course_utils.models`: the GRU encoder, the attention and fixed-context decoders, and the
  ``Seq2Seq`` model that joins them
- :mod:`course_utils.data`: vocabulary, length-bucketed padded batches
- :mod:`course_utils.training`: the training loop, its history, attention snapshots, run settings
- :mod:`course_utils.decoding`: greedy decoding of a dataset, beam search
- :mod:`course_utils.reversal`: notebook 3's reversal task: data, alignment score, settings
- :mod:`course_utils.multi30k`, :mod:`course_utils.text`: Multi30k (download, or its committed
  sample) and Moses tokenization
- :mod:`course_utils.translation_setup`: the English-to-German task's settings (presets at
  each scale), its data, and notebook 4's checkpoints (or a small model trained in their place)
- :mod:`course_utils.translation`: using a trained English-to-German model: the
  ``Translator``, BLEU on a test set
- :mod:`course_utils.metrics`: exact match, accuracy by length, BLEU with bootstrap intervals
- :mod:`course_utils.alignment`: reading attention as an alignment (monotonic, reordering,
  many-to-one, entropy) and finding examples of each
- :mod:`course_utils.plotting`: attention heatmaps (one or a grid), weight bar charts, and the
  diagrams of :mod:`course_utils.diagrams`
- :mod:`course_utils.explorer`: the interactive translation and attention explorer
- :mod:`course_utils.checkpoints`: safe checkpoints, and the names of run folders and files
- :mod:`course_utils.config`: ``COURSE_QUICK`` scale and device choice
- :mod:`course_utils.precision`: mixed precision chosen for the card (bfloat16, or float16 with
  loss scaling on a T4), and the device in words
- :mod:`course_utils.setup`: what every notebook's setup cell calls: where it runs (Colab,
  Kaggle, Binder, a machine of one's own), ``ready()``, ``keep_runs_on_drive()``
- :mod:`course_utils.tensors`: tensor to NumPy, and an eval-mode context that restores the mode
- :mod:`course_utils.files`: atomic writes (nothing half-written on failure)

Two folders are not the lesson: :mod:`course_utils.checks` holds the exercise checks students
call, and :mod:`course_utils.tools` the tools that run the course (grading, the exercise
generator, the nbgrader export, the website, the notebook runner, the kernel).
"""

import importlib

__version__ = "0.1.0"

#: Printed once per notebook kernel, at the first import, under ``COURSE_QUICK``: the numbers
#: of a smoke-test run (BLEU 0.0, looping translations) say nothing about the method.
SMOKE_SCALE_NOTE = ("smoke-test scale (COURSE_QUICK=1): do not interpret these numbers; "
                    "unset COURSE_QUICK for the real run")


def _announce_scale() -> None:
    import os
    import sys

    # Only in a notebook kernel: tests, scripts and the grader's own process stay quiet.
    # (config.quick_mode() imports PyTorch; this runs on import, so it reads the variable here.)
    if "ipykernel" in sys.modules and os.environ.get("COURSE_QUICK", "").strip().lower() in {
            "1", "true", "yes", "on"}:
        print(SMOKE_SCALE_NOTE)


_announce_scale()

# Exports load on first use (PEP 562), so that light modules such as the grader's worker do
# not pay for importing PyTorch and matplotlib.
_EXPORTS = {
    "AttentionResult": "course_utils.attention",
    "BahdanauAttention": "course_utils.attention",
    "additive_attention": "course_utils.attention",
    "entropy": "course_utils.attention",
    "softmax": "course_utils.attention",
    "get_device": "course_utils.config",
    "quick_mode": "course_utils.config",
    "runs_dir": "course_utils.config",
    "scaled": "course_utils.config",
    "plot_attention": "course_utils.plotting",
    "plot_attention_grid": "course_utils.plotting",
    "plot_decoding_step": "course_utils.plotting",
    "plot_encoder_decoder": "course_utils.plotting",
    "plot_weights": "course_utils.plotting",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'course_utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
