"""Multi30k English-German translation: settings, data, translating and scoring.

Notebooks 4 and 5 and exercise E10.2 share these: :func:`multi30k_config` picks the
settings for the current scale, :func:`prepare_data` loads and tokenizes the splits,
:func:`translate` turns raw English sentences into German text (plus attention), and
:func:`evaluate_bleu` scores a model on a test split with sacreBLEU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from course_utils.config import scaled
from course_utils.data import BOS, PAD
from course_utils.decoding import translate_ids
from course_utils.metrics import BleuResult, bleu_by_length, corpus_bleu
from course_utils.models import ModelConfig, Seq2Seq
from course_utils.multi30k import load_split
from course_utils.text import TranslationData, build_translation_data

__all__ = [
    "TEST_SPLITS",
    "Multi30kConfig",
    "Translation",
    "evaluate_bleu",
    "multi30k_config",
    "prepare_data",
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
    source_tokens: list[str]
    output_tokens: list[str]
    text: str  # detokenized output
    # (rows, len(source_tokens)): one row per output token, plus a last row for the step that
    # produced EOS (absent if decoding hit max_len first); None for the vanilla model
    attention: torch.Tensor | None


def translate(
    model: Seq2Seq,
    data: TranslationData,
    sentences: Sequence[str],
    beam_size: int = 1,
    device: torch.device | str = "cpu",
) -> list[Translation]:
    """Translate raw English sentences; per sentence: tokens, German text, attention."""
    tokenized = [data.src_tokenizer(s) for s in sentences]
    empty = [i for i, tokens in enumerate(tokenized) if not tokens]
    if empty:
        raise ValueError(f"sentences {empty} have no tokens to translate")
    decoded = translate_ids(model, [data.src_vocab.encode(t) for t in tokenized],
                            beam_size=beam_size, device=device)
    results = []
    for i, tokens in enumerate(tokenized):
        # one token per id (no EOS in the ids), so rows of the attention line up with tokens
        output = data.tgt_vocab.decode(decoded.tokens[i], strip=False)
        words = [t for t in output if t not in (PAD, BOS)]  # as decode(strip=True) does
        attention = decoded.attention[i] if decoded.attention is not None else None
        results.append(Translation(tokens, output, data.tgt_tokenizer.detokenize(words),
                                   attention))
    return results


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
