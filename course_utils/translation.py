"""Multi30k English-German translation: settings, data, translating and scoring.

Notebooks 4 and 5 and exercise E10.2 share these: :func:`multi30k_config` picks the
settings for the current scale, :func:`prepare_data` loads and tokenizes the splits,
:class:`Translator` (from a checkpoint, or :func:`translate` with the data) turns raw English
sentences into German text plus the attention that produced it, and
:func:`evaluate_bleu` scores a model on a test split with sacreBLEU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from course_utils.config import runs_dir, scaled
from course_utils.data import BOS, EOS, PAD, Vocab, collate
from course_utils.decoding import translate_ids
from course_utils.metrics import BleuResult, bleu_by_length, corpus_bleu
from course_utils.models import ModelConfig, Seq2Seq, build_model
from course_utils.multi30k import load_split
from course_utils.text import Tokenizer, TranslationData, build_translation_data
from course_utils.training import load_checkpoint, save_checkpoint, seed_everything, train

__all__ = [
    "TEST_SPLITS",
    "Multi30kConfig",
    "Translation",
    "Translator",
    "attention_checkpoints",
    "epoch_checkpoints",
    "evaluate_bleu",
    "multi30k_config",
    "prepare_data",
    "small_config",
    "translate",
]

TEST_SPLITS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")


@dataclass(frozen=True)
class Multi30kConfig:
    name: str
    embed_dim: int = 128
    hidden_dim: int = 192
    attention_dim: int = 192
    dropout: float = 0.2
    min_freq: int = 2
    lowercase: bool = True
    batch_size: int = 64
    lr: float = 2e-3
    epochs: int = 5
    bf16: bool = False
    max_train: int | None = None  # use only the first N training pairs (smoke tests)
    max_eval: int | None = None  # and the first N of each evaluation split

    def model_config(self, data: TranslationData, attention: bool) -> ModelConfig:
        return ModelConfig(len(data.src_vocab), len(data.tgt_vocab), self.embed_dim,
                           self.hidden_dim, self.attention_dim, attention, self.dropout)


#: Both models in at most 30 minutes on a 2-core CPU.
CPU = Multi30kConfig("cpu")
#: One H100-class GPU.
GPU = replace(CPU, name="gpu", embed_dim=256, hidden_dim=512, attention_dim=512, dropout=0.3,
              batch_size=128, lr=1.5e-3, epochs=12, bf16=True)
#: Seconds, for CI.
QUICK = replace(CPU, name="quick", embed_dim=32, hidden_dim=48, attention_dim=48, epochs=1,
                max_train=1500, max_eval=100)


def multi30k_config() -> Multi30kConfig:
    return scaled(quick=QUICK, cpu=CPU, gpu=GPU)


def small_config(config: Multi30kConfig) -> Multi30kConfig:
    """A smaller run of ``config`` for when notebook 4's models are missing: two epochs on
    at most 10,000 sentences (a few minutes on a CPU)."""
    return replace(config, name=f"{config.name}-small", epochs=min(config.epochs, 2),
                   max_train=min(config.max_train or 10_000, 10_000))


def epoch_checkpoints(directory: str | Path) -> dict[int, Path]:
    """``{epoch: path}`` of the per-epoch checkpoints saved in ``directory/epochs``."""
    paths = {}
    for path in Path(directory).glob("epochs/attention-epoch*.pt"):
        suffix = path.stem.removeprefix("attention-epoch")
        if suffix.isdigit():
            paths[int(suffix)] = path
    return dict(sorted(paths.items()))


def attention_checkpoints(
    config: Multi30kConfig,
    device: torch.device | str = "cpu",
    directory: str | Path | None = None,
) -> dict[int, Path]:
    """Notebook 4's attention model after each epoch: ``{epoch: path}`` (0 = untrained; the
    last one is the final model).

    If notebook 4 has not saved them (in ``directory``, default ``runs_dir()/"multi30k"``),
    says so and trains a smaller model (:func:`small_config`) once, saving its checkpoints
    in ``runs_dir()/"multi30k-small"``, so that notebook 5 and E10.3 can run on their own.
    """
    directory = Path(directory) if directory is not None else runs_dir() / "multi30k"
    paths = epoch_checkpoints(directory)
    if paths and max(paths) == config.epochs and (directory / "attention.pt").exists():
        return paths
    small = small_config(config)
    fallback = runs_dir() / "multi30k-small"
    print(f"Notebook 4's attention checkpoints are not in {directory}: run notebook 4 to "
          f"use its full model. Meanwhile this uses a smaller attention model ({small.epochs} "
          f"epochs on {small.max_train:,} sentences), saved in {fallback}.")
    paths = epoch_checkpoints(fallback)
    if paths and max(paths) == small.epochs:
        print("Found it from an earlier run.")
        return paths
    print("Training it now (a few minutes on a CPU) ...")
    data = prepare_data(small, splits=("train", "val"))
    seed_everything(0)
    model = build_model(small.model_config(data, attention=True))

    def save_epoch(epoch, model, history):
        save_checkpoint(fallback / "epochs" / f"attention-epoch{epoch}.pt", model,
                        data.src_vocab, data.tgt_vocab, history,
                        extra={"config": small.name, "lowercase": small.lowercase})

    save_epoch(0, model, None)
    train(model, data.pairs["train"], data.pairs["val"], epochs=small.epochs,
          batch_size=small.batch_size, lr=small.lr, device=device, bf16=small.bf16,
          description="small attention model", on_epoch_end=save_epoch)
    return epoch_checkpoints(fallback)


def prepare_data(config: Multi30kConfig, splits: Sequence[str] = ("train", "val", *TEST_SPLITS)):
    """Load, tokenize and encode the splits; vocabularies come from the training split."""
    raw = {split: load_split(split) for split in splits}
    if config.max_train is not None:
        raw["train"] = raw["train"][: config.max_train]
    if config.max_eval is not None:
        raw = {s: (p if s == "train" else p[: config.max_eval]) for s, p in raw.items()}
    return build_translation_data(raw, min_freq=config.min_freq, lowercase=config.lowercase)


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


def _check_sentences(sentences, name: str = "sentences") -> list[str]:
    if isinstance(sentences, str):
        raise TypeError(f"{name} must be a list of strings; got one string (wrap it in [...])")
    sentences = list(sentences)
    bad = [i for i, s in enumerate(sentences) if not isinstance(s, str)]
    if bad:
        raise TypeError(f"{name} must be strings; items {bad} are not")
    return sentences


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
        """Load a checkpoint saved with :func:`course_utils.training.save_checkpoint`."""
        checkpoint = load_checkpoint(path, device=device)
        lowercase = checkpoint.extra.get("lowercase")
        if lowercase is None:  # checkpoints name their configuration
            known = {c.name: c for c in (CPU, GPU, QUICK)}
            config = known.get(checkpoint.extra.get("config"))
            lowercase = config.lowercase if config is not None else not any(
                token != token.lower() for token in checkpoint.src_vocab.itos)
        return cls(checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab,
                   Tokenizer("en", lowercase), Tokenizer("de", lowercase), torch.device(device))

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
        was_training = self.model.training
        self.model.eval()
        results = []
        try:
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
        finally:
            self.model.train(was_training)
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
