"""Moses tokenization for English and German, and building a translation dataset from text.

Taught in notebook 4, section 1 ("The data").

Moses (sacremoses) splits punctuation and clitics the way the MT community has for decades;
detokenization undoes it, so that BLEU can be computed on plain text with sacreBLEU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sacremoses import MosesDetokenizer, MosesTokenizer

from course_utils.data import Pair, Vocab

__all__ = ["Tokenizer", "TranslationData", "build_translation_data"]


class Tokenizer:
    """Moses tokenizer and detokenizer for one language (``"en"`` or ``"de"``)."""

    def __init__(self, lang: str, lowercase: bool = True) -> None:
        if lang not in ("en", "de"):
            raise ValueError(f"lang must be 'en' or 'de'; got {lang!r}")
        self.lang = lang
        self.lowercase = lowercase
        self._tokenizer = MosesTokenizer(lang=lang)
        self._detokenizer = MosesDetokenizer(lang=lang)

    def __call__(self, text: str) -> list[str]:
        text = text.lower() if self.lowercase else text
        return self._tokenizer.tokenize(text.strip(), escape=False)

    def detokenize(self, tokens: Sequence[str]) -> str:
        return self._detokenizer.detokenize(list(tokens))

    def settings(self) -> dict[str, Any]:
        """What rebuilds this tokenizer (saved in checkpoints): language and lowercasing."""
        return {"lang": self.lang, "lowercase": self.lowercase}

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Tokenizer:
        unknown = set(settings) - {"lang", "lowercase"}
        if unknown or "lang" not in settings or "lowercase" not in settings:
            raise ValueError(
                f"tokenizer settings need 'lang' and 'lowercase'; got {dict(settings)}")
        return cls(str(settings["lang"]), bool(settings["lowercase"]))


@dataclass
class TranslationData:
    """Token-id pairs for each split, the vocabularies, and the raw references for BLEU."""

    src_vocab: Vocab
    tgt_vocab: Vocab
    pairs: dict[str, list[Pair]]  # split -> (source ids, target ids)
    raw: dict[str, list[tuple[str, str]]]  # split -> (source text, reference text)
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer

    def tokenizer_settings(self) -> dict[str, dict[str, Any]]:
        """Both tokenizers' settings, as checkpoints store them."""
        return {"source": self.src_tokenizer.settings(), "target": self.tgt_tokenizer.settings()}


def build_translation_data(
    raw: dict[str, list[tuple[str, str]]],
    *,
    train_split: str = "train",
    min_freq: int = 2,
    lowercase: bool = True,
    src_lang: str = "en",
    tgt_lang: str = "de",
) -> TranslationData:
    """Tokenize every split, build vocabularies on ``train_split`` only, encode to ids."""
    if train_split not in raw:
        raise ValueError(f"raw has no {train_split!r} split to build the vocabularies on")
    src_tok, tgt_tok = Tokenizer(src_lang, lowercase), Tokenizer(tgt_lang, lowercase)
    tokenized = {
        split: [(src_tok(s), tgt_tok(t)) for s, t in pairs] for split, pairs in raw.items()
    }
    src_vocab = Vocab.build((s for s, _ in tokenized[train_split]), min_freq=min_freq)
    tgt_vocab = Vocab.build((t for _, t in tokenized[train_split]), min_freq=min_freq)
    pairs = {
        split: [(src_vocab.encode(s), tgt_vocab.encode(t)) for s, t in items if s]
        for split, items in tokenized.items()
    }
    return TranslationData(src_vocab, tgt_vocab, pairs, raw, src_tok, tgt_tok)
