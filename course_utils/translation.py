"""Multi30k English-German translation with a trained model: translating, and scoring.

:class:`Translator` (from a checkpoint, or :func:`translate` with the data) turns raw English
sentences into German text plus the attention that produced it, and :func:`evaluate_bleu`
scores a model on a test split with sacreBLEU. Notebooks 4 to 6 and exercises E10.2 and
E10.3 share them.

The settings, the data and notebook 4's checkpoints live in
:mod:`course_utils.translation_setup`; the few of those names the notebooks import are
re-exported here, so that a notebook imports the translation task from one module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from course_utils.checkpoints import load_checkpoint
from course_utils.data import BOS, EOS, PAD, Vocab, collate
from course_utils.decoding import translate_ids
from course_utils.metrics import BleuResult, bleu_by_length, corpus_bleu
from course_utils.models import Seq2Seq
from course_utils.tensors import eval_mode
from course_utils.text import Tokenizer, TranslationData

# Re-exported: the notebooks import these from here, with the Translator and evaluate_bleu.
from course_utils.translation_setup import (
    TEST_SPLITS,
    ExerciseCheckpoint,
    exercise_config,
    find_or_train_attention_checkpoints,
    find_or_train_exercise_checkpoint,
    load_pairs,
    multi30k_config,
    prepare_data,
    translation_scores_config,
)

__all__ = ["TEST_SPLITS", "Evaluation", "ExerciseCheckpoint", "Translation", "Translator",
           "evaluate_bleu", "exercise_config", "find_or_train_attention_checkpoints",
           "find_or_train_exercise_checkpoint", "load_pairs", "multi30k_config", "prepare_data",
           "translate", "translation_scores_config"]


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
