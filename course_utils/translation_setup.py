"""Multi30k English-German translation: the settings, the data, and notebook 4's checkpoints.

:func:`multi30k_config` picks the settings for the current scale (:data:`CPU`, :data:`GPU`,
or :data:`QUICK` under ``COURSE_QUICK``), and :func:`small_config`, :func:`exercise_config`
and :func:`translation_scores_config` the smaller budgets of notebook 5, exercise E10.2 and
notebook 6; :func:`load_pairs` and :func:`prepare_data` load (and tokenize) the splits;
:func:`find_or_train_attention_checkpoints` finds notebook 4's attention model after each
epoch, or trains a small one; :func:`find_or_train_exercise_checkpoint` chooses the model
exercise E10.3 reads (the student's own from E10.2, else notebook 4's) and says whose it is.

Notebook 4's tables, figures and checkpoint bookkeeping are :mod:`course_utils.views.translation`;
using a trained model (translating, BLEU on a test split) is :mod:`course_utils.translation`.

Under ``COURSE_QUICK`` the data come from the small sample committed with the tests (a student
handout carries it in ``data/``), so smoke tests need no download; the real configurations read
the full data (from ``MULTI30K_DIR``, the copy a handout bundles, or a download: see
:mod:`course_utils.multi30k`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from course_utils.checkpoints import (
    E10_2_RUN,
    MULTI30K_RUN,
    MULTI30K_SMALL_RUN,
    EpochSaver,
    RunFolder,
    display_path,
    save_checkpoint,
)
from course_utils.config import scaled
from course_utils.models import ModelSizes, build_model
from course_utils.multi30k import load_sample_split, load_split
from course_utils.setup import runs_hint
from course_utils.text import TranslationData, build_translation_data
from course_utils.training import RunConfig, TrainConfig, seed_everything, train

__all__ = [
    "CPU",
    "GPU",
    "QUICK",
    "TEST_SPLITS",
    "ExerciseCheckpoint",
    "Multi30kConfig",
    "exercise_config",
    "find_or_train_attention_checkpoints",
    "find_or_train_exercise_checkpoint",
    "load_pairs",
    "multi30k_config",
    "prepare_data",
    "small_config",
    "translation_scores_config",
]

TEST_SPLITS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")


@dataclass(frozen=True, kw_only=True)
class Multi30kConfig(RunConfig):
    """Settings of the translation task: the run's parts (:class:`RunConfig`: ``name``,
    ``model``, ``train``) with this task's defaults, then the data (vocabulary, case, how much)."""

    # maxout_dim, l of the deep output layer: steps get no cheaper below 128 on a CPU, dearer
    # above (benchmarks/bench_output_layer.py)
    model: ModelSizes = ModelSizes(embed_dim=128, hidden_dim=192, attention_dim=192,
                                   maxout_dim=128, dropout=0.2)
    # greedy exact match means nothing for translation and costs a decoding per epoch
    train: TrainConfig = TrainConfig(lr=2e-3, measure_exact_match=False)
    min_freq: int = 2  # a word seen fewer times in the training set is <unk>
    lowercase: bool = True  # lower-case both languages before tokenizing
    max_train: int | None = None  # use only the first N training pairs
    max_eval: int | None = None  # and the first N of each evaluation split
    sample: bool = False  # read the small sample (multi30k.sample_dir()), not the full data


#: Both models in 11.5-14 minutes on a 2-core CPU (benchmarks/bench_multi30k_budget.py, notebook 4).
CPU = Multi30kConfig(name="cpu")
#: One H100-class GPU.
GPU = CPU.replace(name="gpu", embed_dim=256, hidden_dim=512, attention_dim=512, maxout_dim=256,
                  dropout=0.3, batch_size=128, lr=1.5e-3, epochs=12, bf16=True)
#: Seconds, for CI: the committed sample (1,500 training pairs, 100 of each other split).
QUICK = CPU.replace(name="quick", embed_dim=32, hidden_dim=48, attention_dim=48, maxout_dim=32,
                    epochs=1, max_train=1500, max_eval=100, sample=True)


def multi30k_config() -> Multi30kConfig:
    return scaled(quick=QUICK, cpu=CPU, gpu=GPU)


def small_config(config: Multi30kConfig) -> Multi30kConfig:
    """A smaller run of ``config`` for when notebook 4's models are missing: two epochs on
    at most 10,000 sentences (a few minutes on a CPU)."""
    return config.replace(name=f"{config.name}-small", epochs=min(config.train.epochs, 2),
                   max_train=min(config.max_train or 10_000, 10_000))


def exercise_config(config: Multi30kConfig) -> Multi30kConfig:
    """Exercise E10.2's budget for training both models in the exercise itself: at most four
    epochs on at most the first 15,000 training sentences, the model sizes of ``config``.
    Both models together train in minutes on a 2-core CPU (the E10.2 solution measures it);
    under ``COURSE_QUICK`` (and so under ``course-grade``) the smoke-test run is smaller still."""
    return config.replace(name=f"{config.name}-e10.2", epochs=min(config.train.epochs, 4),
                   max_train=min(config.max_train or 15_000, 15_000))


def translation_scores_config(config: Multi30kConfig) -> Multi30kConfig:
    """Notebook 6's budget for comparing score functions on Multi30k: three epochs on at most
    the first 10,000 training sentences, a smaller encoder (``hidden_dim`` at most 128) whose
    outputs (``2 * hidden_dim``) the decoder state matches, so that every score, dot included,
    fits the same model. Minutes per model on a 2-core CPU (notebook 6 measures it)."""
    hidden = min(config.model.hidden_dim, 128)
    return config.replace(name=f"{config.name}-scores", epochs=min(config.train.epochs, 3),
                   max_train=min(config.max_train or 10_000, 10_000), hidden_dim=hidden,
                   attention_dim=min(config.model.attention_dim, 2 * hidden))


def load_pairs(config: Multi30kConfig, split: str) -> list[tuple[str, str]]:
    """Raw ``(english, german)`` pairs of ``split`` as ``config`` reads them: from the sample
    or the full data, cut to ``max_train`` / ``max_eval``."""
    pairs = load_sample_split(split) if config.sample else load_split(split)
    limit = config.max_train if split == "train" else config.max_eval
    return pairs[:limit] if limit is not None else pairs


def prepare_data(
    config: Multi30kConfig, splits: Sequence[str] = ("train", "val", *TEST_SPLITS)
) -> TranslationData:
    """Load, tokenize and encode the splits; vocabularies come from the training split."""
    raw = {split: load_pairs(config, split) for split in splits}
    return build_translation_data(raw, min_freq=config.min_freq, lowercase=config.lowercase)


def _complete(run: RunFolder, epochs: int) -> dict[int, Path] | None:
    paths = run.epoch_checkpoints()
    if paths and max(paths) == epochs and run.checkpoint("attention").exists():
        return paths
    return None


def find_or_train_attention_checkpoints(
    config: Multi30kConfig, device: torch.device | str = "cpu"
) -> dict[int, Path]:
    """Notebook 4's attention model after each epoch: ``{epoch: path}`` (0 = untrained; the
    last one is the final model).

    If notebook 4 has not saved them, says so and **trains** a smaller model
    (:func:`small_config`, a few minutes on a CPU) once, in its own run folder, so that
    notebook 5 and E10.3 can run on their own; later calls find it.
    """
    paths = _complete(MULTI30K_RUN.located(), config.train.epochs)
    if paths is not None:
        return paths
    small = small_config(config)
    print(f"Notebook 4's attention checkpoints are not in {display_path(MULTI30K_RUN.path)}: "
          f"run notebook 4 to use its full model. Meanwhile this uses a smaller attention "
          f"model ({small.train.epochs} epochs on {small.max_train:,} sentences), saved in "
          f"{display_path(MULTI30K_SMALL_RUN.path)}. Every cell runs with it, but its "
          f"alignments are too rough for the examples the text discusses (it shows no "
          f"clear reordering or crossing): for those, run notebook 4 first.{runs_hint()}")
    paths = _complete(MULTI30K_SMALL_RUN.located(), small.train.epochs)
    if paths is not None:
        print("Found it from an earlier run.")
        return paths
    print("Training it now (a few minutes on a CPU) ...")
    data = prepare_data(small, splits=("train", "val"))
    seed_everything(0)
    model = build_model(small.model_config(data.src_vocab, data.tgt_vocab, attention=True))
    save_epoch = EpochSaver(MULTI30K_SMALL_RUN, data.src_vocab, data.tgt_vocab,
                            tokenizers=data.tokenizer_settings(), extra={"config": small.name})
    save_epoch(0, model, None)
    history = train(model, data.pairs["train"], data.pairs["val"], small, device=device,
                    description="small attention model", on_epoch_end=save_epoch)
    save_checkpoint(MULTI30K_SMALL_RUN.checkpoint("attention"), model, data.src_vocab,
                    data.tgt_vocab, history, tokenizers=data.tokenizer_settings(),
                    extra={"config": small.name})
    return MULTI30K_SMALL_RUN.epoch_checkpoints()


@dataclass(frozen=True)
class ExerciseCheckpoint:
    """The attention model an exercise reads, and whose it is."""

    path: Path
    #: ``"E10.2"`` (the student's own model), ``"notebook 4"``, or ``"small"`` (the smaller
    #: stand-in for notebook 4's model, see :func:`small_config`)
    whose: Literal["E10.2", "notebook 4", "small"]
    #: where the student's E10.2 model was looked for
    looked_for: Path

    @property
    def is_yours(self) -> bool:
        """Whether this is the student's own model, the one the written answers are about."""
        return self.whose == "E10.2"

    @property
    def banner(self) -> str:
        """Whose model this is, in a sentence or three (and, if not the student's, what to do)."""
        if self.is_yours:
            return f"Model analysed: your model from E10.2 ({display_path(self.path)})."
        whose = ("notebook 4's model" if self.whose == "notebook 4" else
                 "a small stand-in for notebook 4's model (notebook 4 has not been run)")
        return (f"Model analysed: {whose}, not yours. Your E10.2 model was not found at "
                f"{display_path(self.looked_for)}. Every cell runs with this one, but your "
                f"written answers must be about your own model: run E10.2 first (it saves "
                f"your model there), then run this notebook again.{runs_hint()}")


def find_or_train_exercise_checkpoint(
    config: Multi30kConfig, device: torch.device | str = "cpu"
) -> ExerciseCheckpoint:
    """The attention model exercise E10.3 analyses, and whose it is; prints its banner.

    The student's own model, saved by E10.2 in ``E10_2_RUN`` beside the exercise, when it is
    there; otherwise notebook 4's final model, found (or, when notebook 4 has not been run,
    **trained**, a few minutes on a CPU) by :func:`find_or_train_attention_checkpoints`.
    """
    looked_for = E10_2_RUN.checkpoint("attention")
    if looked_for.is_file():
        chosen = ExerciseCheckpoint(looked_for, "E10.2", looked_for)
    else:
        paths = find_or_train_attention_checkpoints(config, device)
        final = paths[max(paths)]
        small = final.parent.parent.name == MULTI30K_SMALL_RUN.name  # .../multi30k-small/epochs/
        chosen = ExerciseCheckpoint(final, "small" if small else "notebook 4", looked_for)
    print(chosen.banner)
    return chosen
