"""Reading an attention matrix as an alignment between output and source tokens.

Taught in notebook 5, sections 2 to 4 (alignment patterns, word order, entropy); notebook 4,
section 7 reads one translation with it.

``weights`` is ``(tgt_len, src_len)``: row i is the attention of output step i. These
functions turn it into the notions a translator uses. Directions are named the way a
translator reads them, from source (English) to output (German):

- :func:`hard_alignment`: the source position each output token attends to most (argmax);
- :func:`monotonicity`: how much of the alignment moves forward through the source (1.0 for a
  perfectly monotonic, diagonal-like alignment; lower when the order changes);
- :func:`crossings`: pairs of output steps whose source positions are in the opposite order,
  the footprint of reordering (such as a German verb moved to the end of the clause);
- :func:`many_to_one`: one output word that reads several source words at once
  (``is playing`` -> ``spielt``);
- :func:`one_to_many`: one source word that several output words align to
  (``skateboarding`` -> ``fährt skateboard``);
- :func:`step_entropy`: entropy of each row, how focused each decoding step is;
- :func:`word_class`: content word, function word or punctuation, for German output tokens;
- :func:`find_examples`: the clearest examples of each pattern in many translations.

Every function takes ``min_weight`` or ``threshold`` where attention that is too spread out
to call an alignment should not count.
"""

from __future__ import annotations

import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike  # arrays, nested lists, or tensors (they have __array__)

from course_utils.attention import entropy
from course_utils.tensors import to_numpy

__all__ = [
    "GERMAN_FUNCTION_WORDS",
    "PATTERNS",
    "Example",
    "confident_steps",
    "crossings",
    "find_examples",
    "hard_alignment",
    "many_to_one",
    "monotonicity",
    "one_to_many",
    "step_entropy",
    "word_class",
]


def _matrix(weights: ArrayLike) -> np.ndarray:
    weights = to_numpy(weights).astype(float)
    if weights.ndim != 2 or 0 in weights.shape:
        raise ValueError(f"weights must be a non-empty (tgt_len, src_len) matrix; "
                         f"got shape {weights.shape}")
    if np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise ValueError("weights must be finite and non-negative (rows of attention weights)")
    return weights


def _check_fraction(name: str, value: float, low: float = 0.0, high: float = 1.0) -> None:
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}]; got {value}")


def hard_alignment(weights: ArrayLike) -> np.ndarray:
    """For each output step, the source position with the largest weight: ``(tgt_len,)``."""
    return _matrix(weights).argmax(axis=1)


def confident_steps(weights: ArrayLike, min_weight: float = 0.0) -> np.ndarray:
    """Output steps whose largest weight is at least ``min_weight``, in order."""
    _check_fraction("min_weight", min_weight)
    matrix = _matrix(weights)
    return np.flatnonzero(matrix.max(axis=1) >= min_weight)


def monotonicity(weights: ArrayLike, min_weight: float = 0.0) -> float:
    """Share of consecutive (confident) output steps whose hard alignment does not move
    backwards through the source.

    1.0: the alignment only moves forward (or stays); 0.0: it always jumps back. With fewer
    than two steps to compare the alignment counts as monotonic.
    """
    steps = confident_steps(weights, min_weight)
    positions = hard_alignment(weights)[steps]
    if len(positions) < 2:
        return 1.0
    return float(np.mean(np.diff(positions) >= 0))


def crossings(weights: ArrayLike, min_weight: float = 0.0) -> list[tuple[int, int]]:
    """Pairs ``(i, k)``, ``i < k``, of (confident) output steps aligned to source positions
    in the opposite order (``a[i] > a[k]``): each pair is one reordering of two words."""
    steps = confident_steps(weights, min_weight)
    positions = hard_alignment(weights)
    return [(int(i), int(k)) for n, i in enumerate(steps) for k in steps[n + 1:]
            if positions[i] > positions[k]]


def many_to_one(weights: ArrayLike, threshold: float = 0.3) -> dict[int, list[int]]:
    """Output steps that give at least ``threshold`` of their weight to each of two or more
    source positions, i.e. one output word made from several source words:
    ``{output step: [source positions]}``."""
    _check_fraction("threshold", threshold, 1e-9, 0.5)
    matrix = _matrix(weights)
    result = {}
    for step, row in enumerate(matrix):
        strong = np.flatnonzero(row >= threshold)
        if len(strong) > 1:
            result[step] = strong.tolist()
    return result


def one_to_many(weights: ArrayLike, min_weight: float = 0.0) -> dict[int, list[int]]:
    """Source positions that two or more (confident) output steps align to, i.e. one source
    word translated by several output words: ``{source position: [output steps]}``."""
    positions = hard_alignment(weights)
    groups: dict[int, list[int]] = {}
    for step in confident_steps(weights, min_weight):
        groups.setdefault(int(positions[step]), []).append(int(step))
    return {p: steps for p, steps in groups.items() if len(steps) > 1}


def step_entropy(weights: ArrayLike) -> np.ndarray:
    """Entropy (nats) of each output step's attention: ``(tgt_len,)``.
    0 for a step that reads one source word; ``log(src_len)`` for uniform attention."""
    return entropy(_matrix(weights), axis=1)


# ----------------------------------------------------------------------------- word classes

#: Closed-class German words (articles, pronouns, prepositions and their contractions,
#: conjunctions, auxiliaries, particles), lowercased. Everything else that is not
#: punctuation counts as a content word (nouns, full verbs, adjectives, adverbs, numbers).
GERMAN_FUNCTION_WORDS = frozenset("""
der die das den dem des ein eine einer einem einen eines kein keine keinen keinem keiner
er sie es ihr ihre ihren ihrem ihrer sein seine seinen seinem seiner sich ich du wir man
mich dich uns euch ihm ihn ihnen dies diese dieser dieses diesen diesem jemand etwas
welche welcher welches wer was
in im ins an am ans auf aus bei beim mit nach von vom zu zum zur vor hinter neben über unter
zwischen durch für gegen ohne um bis entlang während trotz wegen gegenüber innerhalb außerhalb
und oder aber sondern denn weil dass ob als wie wenn da sowie
ist sind war waren hat haben hatte wird werden wurde kann können
nicht auch noch schon sehr so
""".split())

#: The characters a punctuation token is made of: ASCII's (``string.punctuation``, all the
#: English side of Multi30k has) and German quotes, dashes and the ellipsis.
_PUNCTUATION = set(string.punctuation) | set("„“”‚‘’–—…")

WORD_CLASSES = ("content", "function", "punctuation")


def word_class(token: str) -> str:
    """``"punctuation"``, ``"function"`` (closed-class German word) or ``"content"``."""
    if not isinstance(token, str) or not token:
        raise ValueError(f"token must be a non-empty string; got {token!r}")
    if all(ch in _PUNCTUATION for ch in token):
        return "punctuation"
    return "function" if token.lower() in GERMAN_FUNCTION_WORDS else "content"


# ----------------------------------------------------------------------------- examples

PATTERNS = ("monotonic", "reordering", "many-to-one", "one-to-many")


@dataclass(frozen=True)
class Example:
    """One translation that shows a pattern: its index, a score to rank by, and the
    output steps (and source positions) that show it."""

    index: int
    pattern: str
    score: float
    steps: tuple[int, ...]
    positions: tuple[int, ...]

    @property
    def cells(self) -> list[tuple[int, int]]:
        """The ``(output step, source position)`` cells that show the pattern."""
        if len(self.steps) == len(self.positions):
            return list(zip(self.steps, self.positions))
        if len(self.steps) == 1:
            return [(self.steps[0], p) for p in self.positions]
        return [(s, self.positions[0]) for s in self.steps]


def _candidates(matrix: np.ndarray, pattern: str, min_weight: float, threshold: float,
                min_length: int, max_distance: int,
                ) -> Iterator[tuple[float, tuple[int, ...], tuple[int, ...]]]:
    tgt_len, src_len = matrix.shape
    if pattern == "monotonic":
        steps = confident_steps(matrix, min_weight)
        # long, confidently aligned and never moving back: a clean diagonal
        if src_len >= min_length and len(steps) >= 0.8 * tgt_len and \
                monotonicity(matrix, min_weight) == 1.0:
            positions = hard_alignment(matrix)[steps]
            yield src_len + float(matrix.max(axis=1).mean()), tuple(steps), tuple(positions)
    elif pattern == "reordering":
        pairs = crossings(matrix, min_weight)
        positions = hard_alignment(matrix)
        for i, k in pairs:
            # a local swap a reader can see (long-range crossings are mostly repeated or
            # dropped words); ranked by the confidence of the weaker of the two steps
            if k - i <= max_distance and positions[i] - positions[k] <= max_distance:
                strength = min(matrix[i].max(), matrix[k].max())
                yield float(strength), (i, k), (int(positions[i]), int(positions[k]))
    elif pattern == "many-to-one":
        for step, sources in many_to_one(matrix, threshold).items():
            row = matrix[step]
            # the words read together should be neighbours (a phrase), and share the weight
            if max(sources) - min(sources) == len(sources) - 1:
                yield float(np.sort(row[sources])[-2]), (step,), tuple(sources)
    elif pattern == "one-to-many":
        for source, readers in one_to_many(matrix, min_weight).items():
            if max(readers) - min(readers) == len(readers) - 1:  # consecutive output words
                yield float(min(matrix[s, source] for s in readers)), tuple(readers), (source,)


def find_examples(
    matrices: Sequence,
    pattern: str,
    k: int = 3,
    *,
    min_weight: float = 0.5,
    threshold: float = 0.3,
    min_length: int = 8,
    max_distance: int = 4,
    exclude: Sequence[Sequence[bool]] | None = None,
) -> list[Example]:
    """The ``k`` clearest examples of ``pattern`` among many attention matrices, best first,
    at most one per matrix.

    Args:
        matrices: ``(tgt_len, src_len)`` matrices (output words only, without the EOS row).
        pattern: one of :data:`PATTERNS`.
        min_weight: an output step counts only if its largest weight is at least this.
        threshold: for ``"many-to-one"``, the weight each source word must receive.
        min_length: for ``"monotonic"``, the shortest source worth showing.
        max_distance: for ``"reordering"``, how far apart (in output steps and in source
            positions) the two crossing words may be.
        exclude: optional, per matrix, one bool per output step to ignore (such as
            punctuation): those steps never make an example.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}; got {pattern!r}")
    if k < 1 or max_distance < 1:
        raise ValueError(f"k and max_distance must be >= 1; got k={k}, "
                         f"max_distance={max_distance}")
    if exclude is not None and len(exclude) != len(matrices):
        raise ValueError(f"exclude needs one entry per matrix ({len(matrices)}); "
                         f"got {len(exclude)}")
    best = []
    for index, weights in enumerate(matrices):
        matrix = _matrix(weights)
        skip = set()
        if exclude is not None:
            if len(exclude[index]) != matrix.shape[0]:
                raise ValueError(f"exclude[{index}] needs one entry per output step "
                                 f"({matrix.shape[0]}); got {len(exclude[index])}")
            skip = {i for i, flag in enumerate(exclude[index]) if flag}
        found = [c for c in _candidates(matrix, pattern, min_weight, threshold, min_length,
                                           max_distance)
                 if pattern == "monotonic" or not skip.intersection(c[1])]
        if found:
            score, steps, positions = max(found, key=lambda c: c[0])
            best.append(Example(index, pattern, score, steps, positions))
    best.sort(key=lambda e: (-e.score, e.index))
    return best[:k]
