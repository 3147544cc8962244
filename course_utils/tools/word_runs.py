"""Runs of words two texts share: how a copied written answer is found.

A written answer is compared with another text (a lecture's prose, the worked answer, another
student's answer) as runs of consecutive words: each word lower-cased and compatibility-normalised
(:func:`words`), punctuation, Markdown markup and formulas (``$...$``, notation rather than
sentences) left out. A run of many words that two texts share is rarely chance; how many is the
caller's threshold: the answer search counts a worked answer found where a student reads at 10
words (:data:`course_utils.tools.answer_search.SHINGLE_WORDS`), the written answers' page flags
an answer repeating another text at 8 (:data:`course_utils.tools.grading.answers.RUN`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["Word", "runs", "runs_of", "words"]



class Word(NamedTuple):
    """A word as compared (``text``), and where it stands in the text it was read from."""

    text: str
    start: int
    end: int


#: A word: letters and digits; a formula, left out: ``$...$``.
_WORD, _FORMULA = re.compile(r"[^\W_]+"), re.compile(r"\$[^$]*\$")


def words(text: str) -> list[Word]:
    """Each word of ``text`` outside its formulas: a run of letters and digits, lower-cased and
    compatibility-normalised, with its span in ``text``."""
    blanked = _FORMULA.sub(lambda formula: " " * len(formula.group()), text)
    return [Word(unicodedata.normalize("NFKC", m.group()).lower(), *m.span())
            for m in _WORD.finditer(blanked)]


def runs(texts: Sequence[str], length: int) -> set[tuple[str, ...]]:
    """Every run of ``length`` consecutive words of ``texts`` (the words, as :func:`words`
    gives their ``text``)."""
    return {tuple(texts[i:i + length]) for i in range(len(texts) - length + 1)}


def runs_of(text: str, length: int) -> set[tuple[str, ...]]:
    """Every run of ``length`` consecutive words in ``text``."""
    return runs([word.text for word in words(text)], length)
