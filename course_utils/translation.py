"""Multi30k English-German translation: settings, data, translating and scoring.

Notebooks 4 and 5 and exercises E10.2 and E10.3 share these: :func:`multi30k_config` picks
the settings for the current scale, :func:`load_pairs` and :func:`prepare_data` load (and
tokenize) the splits, :class:`Translator` (from a checkpoint, or :func:`translate` with the
data) turns raw English sentences into German text plus the attention that produced it, and
:func:`evaluate_bleu` scores a model on a test split with sacreBLEU.

Under ``COURSE_QUICK`` the data come from the small sample committed with the tests, so smoke
tests need no download; the real configurations read the full data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from course_utils.checkpoints import (
    MULTI30K_RUN,
    MULTI30K_SMALL_RUN,
    EpochSaver,
    RunFolder,
    display_path,
    load_checkpoint,
    save_checkpoint,
)
from course_utils.config import scaled
from course_utils.data import BOS, EOS, PAD, Vocab, collate
from course_utils.decoding import translate_ids
from course_utils.metrics import BleuResult, bleu_by_length, corpus_bleu
from course_utils.models import Seq2Seq, build_model
from course_utils.multi30k import load_sample_split, load_split
from course_utils.tensors import eval_mode
from course_utils.text import Tokenizer, TranslationData, build_translation_data
from course_utils.training import RunConfig, seed_everything, train

__all__ = [
    "TEST_SPLITS",
    "Multi30kConfig",
    "Translation",
    "Translator",
    "evaluate_bleu",
    "exercise_config",
    "find_or_train_attention_checkpoints",
    "load_pairs",
    "multi30k_config",
    "prepare_data",
    "score_comparison_config",
    "small_config",
    "translate",
]

TEST_SPLITS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")


@dataclass(frozen=True)
class Multi30kConfig(RunConfig):
    """Settings of the translation task: the data (vocabulary, case, how much) and the run."""

    name: str = "cpu"
    embed_dim: int = 128
    hidden_dim: int = 192
    attention_dim: int = 192
    # l of the deep output layer: steps get no cheaper below 128 on a CPU, dearer above
    # (benchmarks/bench_output_layer.py)
    maxout_dim: int = 128
    dropout: float = 0.2
    batch_size: int = 64
    lr: float = 2e-3
    epochs: int = 5
    min_freq: int = 2
    lowercase: bool = True
    max_train: int | None = None  # use only the first N training pairs
    max_eval: int | None = None  # and the first N of each evaluation split
    sample: bool = False  # read the committed sample (tests/data) instead of the full data

    def train_options(self) -> dict:
        # greedy exact match means nothing for translation and costs a decoding per epoch
        return {**super().train_options(), "measure_exact_match": False}


#: Both models in 10-12 minutes on a 2-core CPU (``benchmarks/bench_multi30k_budget.py``).
CPU = Multi30kConfig("cpu")
#: One H100-class GPU.
GPU = replace(CPU, name="gpu", embed_dim=256, hidden_dim=512, attention_dim=512, maxout_dim=256,
              dropout=0.3, batch_size=128, lr=1.5e-3, epochs=12, bf16=True)
#: Seconds, for CI: the committed sample (1,500 training pairs, 100 of each other split).
QUICK = replace(CPU, name="quick", embed_dim=32, hidden_dim=48, attention_dim=48, maxout_dim=32,
                epochs=1, max_train=1500, max_eval=100, sample=True)


def multi30k_config() -> Multi30kConfig:
    return scaled(quick=QUICK, cpu=CPU, gpu=GPU)


def small_config(config: Multi30kConfig) -> Multi30kConfig:
    """A smaller run of ``config`` for when notebook 4's models are missing: two epochs on
    at most 10,000 sentences (a few minutes on a CPU)."""
    return replace(config, name=f"{config.name}-small", epochs=min(config.epochs, 2),
                   max_train=min(config.max_train or 10_000, 10_000))


def exercise_config(config: Multi30kConfig) -> Multi30kConfig:
    """Exercise E10.2's budget for training both models in the exercise itself: at most four
    epochs on at most the first 15,000 training sentences, the model sizes of ``config``.
    Both models together train in minutes on a 2-core CPU (the E10.2 solution measures it);
    under ``COURSE_QUICK`` (and so under ``course-grade``) the smoke-test run is smaller still."""
    return replace(config, name=f"{config.name}-e10.2", epochs=min(config.epochs, 4),
                   max_train=min(config.max_train or 15_000, 15_000))


def score_comparison_config(config: Multi30kConfig) -> Multi30kConfig:
    """Notebook 6's budget for comparing score functions on Multi30k: three epochs on at most
    the first 10,000 training sentences, a smaller encoder (``hidden_dim`` at most 128) whose
    outputs (``2 * hidden_dim``) the decoder state matches, so that every score, dot included,
    fits the same model. Minutes per model on a 2-core CPU (notebook 6 measures it)."""
    hidden = min(config.hidden_dim, 128)
    return replace(config, name=f"{config.name}-scores", epochs=min(config.epochs, 3),
                   max_train=min(config.max_train or 10_000, 10_000), hidden_dim=hidden,
                   attention_dim=min(config.attention_dim, 2 * hidden))


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
    paths = _complete(MULTI30K_RUN, config.epochs)
    if paths is not None:
        return paths
    small = small_config(config)
    print(f"Notebook 4's attention checkpoints are not in {display_path(MULTI30K_RUN.path)}: "
          f"run notebook 4 to use its full model. Meanwhile this uses a smaller attention "
          f"model ({small.epochs} epochs on {small.max_train:,} sentences), saved in "
          f"{display_path(MULTI30K_SMALL_RUN.path)}. Every cell runs with it, but its "
          f"alignments are too rough for the examples the text discusses (it shows no "
          f"clear reordering or crossing): for those, and for E10.3's written answers, run "
          f"notebook 4 first.")
    paths = _complete(MULTI30K_SMALL_RUN, small.epochs)
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
    history = train(model, data.pairs["train"], data.pairs["val"], **small.train_options(),
                    device=device, description="small attention model", on_epoch_end=save_epoch)
    save_checkpoint(MULTI30K_SMALL_RUN.checkpoint("attention"), model, data.src_vocab,
                    data.tgt_vocab, history, tokenizers=data.tokenizer_settings(),
                    extra={"config": small.name})
    return MULTI30K_SMALL_RUN.epoch_checkpoints()


@dataclass
class Translation:
    """One translated sentence, its tokens and the attention that produced it."""

    source_tokens: list[str]
    output_tokens: list[str]
    text: str  # detokenized output
    # (rows, len(source_tokens)): one row per output token, plus a last row for the step that
    # produced EOS (absent if decoding hit max_len first); None for the vanilla model
    attention: torch.Tensor | None
    unknown: list[str] = field(default_factory=list)  # source tokens the model maps to <unk>

    @property
    def finished(self) -> bool:
        """Whether decoding produced EOS (the attention then has its extra last row)."""
        return self.attention is not None and self.attention.shape[0] == len(
            self.output_tokens) + 1

    @property
    def row_labels(self) -> list[str]:
        """One label per attention row: the output tokens, then ``<eos>`` if finished."""
        return [*self.output_tokens, EOS] if self.finished else list(self.output_tokens)

    @property
    def word_attention(self) -> np.ndarray:
        """``(len(output_tokens), len(source_tokens))``: the rows of the output words only,
        the matrix the alignment analysis reads."""
        if self.attention is None:
            raise ValueError("this model has no attention (a vanilla seq2seq model)")
        return self.attention[: len(self.output_tokens)].numpy()


def _check_sentences(sentences: Sequence[str], name: str = "sentences") -> list[str]:
    if isinstance(sentences, str):
        raise TypeError(f"{name} must be a list of strings; got one string (wrap it in [...])")
    items: list[object] = list(sentences)
    bad = [i for i, s in enumerate(items) if not isinstance(s, str)]
    if bad:
        raise TypeError(f"{name} must be strings; items {bad} are not")
    return [str(s) for s in items]


@dataclass
class Translator:
    """A trained model with the vocabularies and tokenizers it was trained with.

    Build one with :meth:`from_checkpoint` (a file saved by notebook 4) or :meth:`from_data`.
    """

    model: Seq2Seq
    src_vocab: Vocab
    tgt_vocab: Vocab
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    @classmethod
    def from_data(cls, model: Seq2Seq, data: TranslationData,
                  device: torch.device | str = "cpu") -> Translator:
        return cls(model.to(device).eval(), data.src_vocab, data.tgt_vocab, data.src_tokenizer,
                   data.tgt_tokenizer, torch.device(device))

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: torch.device | str = "cpu") -> Translator:
        """Load a translation checkpoint (saved with its tokenizer settings, as notebook 4
        saves them)."""
        checkpoint = load_checkpoint(path, device=device)
        if checkpoint.tokenizers is None:
            raise ValueError(f"{path} has no tokenizer settings: it is not a translation model "
                             "(e.g. notebook 3's reversal model); load one saved by notebook 4")
        try:
            source = Tokenizer.from_settings(checkpoint.tokenizers["source"])
            target = Tokenizer.from_settings(checkpoint.tokenizers["target"])
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: its tokenizer settings are damaged ({error})") from None
        return cls(checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, source,
                   target, torch.device(device))

    def _tokenize(self, sentences: Sequence[str]) -> list[list[str]]:
        tokenized = [self.src_tokenizer(s) for s in _check_sentences(sentences)]
        empty = [i for i, tokens in enumerate(tokenized) if not tokens]
        if empty:
            raise ValueError(f"sentences {empty} have no tokens to translate")
        return tokenized

    def unknown_words(self, tokens: Sequence[str]) -> list[str]:
        return [t for t in tokens if t not in self.src_vocab.stoi]

    def translate(self, sentences: Sequence[str], beam_size: int = 1) -> list[Translation]:
        """Translate raw English sentences: per sentence, tokens, German text, attention."""
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1; got {beam_size}")
        tokenized = self._tokenize(sentences)
        decoded = translate_ids(self.model, [self.src_vocab.encode(t) for t in tokenized],
                                beam_size=beam_size, device=self.device)
        results = []
        for i, tokens in enumerate(tokenized):
            # one token per id (no EOS in the ids), so rows of the attention line up with tokens
            output = self.tgt_vocab.decode(decoded.tokens[i], strip=False)
            words = [t for t in output if t not in (PAD, BOS)]  # as decode(strip=True) does
            attention = decoded.attention[i] if decoded.attention is not None else None
            results.append(Translation(tokens, output, self.tgt_tokenizer.detokenize(words),
                                       attention, self.unknown_words(tokens)))
        return results

    @torch.no_grad()
    def force(self, sentences: Sequence[str], references: Sequence[str],
              batch_size: int = 128) -> list[Translation]:
        """The attention the model pays while reading the given German ``references``
        (teacher forcing), so that two models can be compared on the same output words."""
        tokenized = self._tokenize(sentences)
        references = _check_sentences(references, "references")
        if len(references) != len(tokenized):
            raise ValueError(f"need one reference per sentence; got {len(references)} "
                             f"references for {len(tokenized)} sentences")
        if not self.model.uses_attention:
            raise ValueError("this model has no attention (a vanilla seq2seq model)")
        targets = [self.tgt_tokenizer(r) for r in references]
        results = []
        with eval_mode(self.model):
            for start in range(0, len(tokenized), batch_size):
                chunk = range(start, min(start + batch_size, len(tokenized)))
                batch = collate([(self.src_vocab.encode(tokenized[i]),
                                  self.tgt_vocab.encode(targets[i])) for i in chunk])
                _, attention = self.model(batch.src.to(self.device), batch.src_lengths,
                                          batch.tgt_in.to(self.device))
                attention = attention.float().cpu()
                for row, i in enumerate(chunk):
                    matrix = attention[row, : len(targets[i]) + 1, : len(tokenized[i])]
                    results.append(Translation(tokenized[i], targets[i], references[i],
                                               matrix, self.unknown_words(tokenized[i])))
        return results


def translate(
    model: Seq2Seq,
    data: TranslationData,
    sentences: Sequence[str],
    beam_size: int = 1,
    device: torch.device | str = "cpu",
) -> list[Translation]:
    """Translate raw English sentences; per sentence: tokens, German text, attention."""
    return Translator.from_data(model, data, device).translate(sentences, beam_size)


@dataclass
class Evaluation:
    bleu: BleuResult
    by_length: dict[str, BleuResult | None]
    hypotheses: list[str]
    references: list[str]
    source_lengths: list[int]


def evaluate_bleu(
    model: Seq2Seq,
    data: TranslationData,
    split: str,
    beam_size: int = 1,
    device: torch.device | str = "cpu",
) -> Evaluation:
    """sacreBLEU of ``model`` on ``split`` (detokenized output against the raw references),
    overall and by source-length bucket."""
    sources = [s for s, _ in data.raw[split]]
    references = [r for _, r in data.raw[split]]
    outputs = translate(model, data, sources, beam_size=beam_size, device=device)
    hypotheses = [o.text for o in outputs]
    lengths = [len(o.source_tokens) for o in outputs]
    return Evaluation(
        corpus_bleu(hypotheses, references, lowercase=data.src_tokenizer.lowercase),
        bleu_by_length(hypotheses, references, lengths, lowercase=data.src_tokenizer.lowercase),
        hypotheses, references, lengths,
    )
