"""Reading an attention matrix as an alignment between output and source tokens.

``weights`` is ``(tgt_len, src_len)``: row i is the attention of output step i. These
functions turn it into the notions a translator uses:

- :func:`hard_alignment`: the source position each output token attends to most (argmax);
- :func:`monotonicity`: how much of the alignment moves forward through the source (1.0 for a
  perfectly monotonic, diagonal-like alignment; lower when the order changes);
- :func:`crossings`: pairs of output steps whose source positions are in the opposite order,
  the footprint of reordering (such as a German verb moved to the end of the clause);
- :func:`many_to_one` / :func:`one_to_many`: several output tokens reading one source token,
  and one output token spreading its attention over several source tokens;
- :func:`step_entropy`: entropy of each row, how focused each decoding step is.
"""

from __future__ import annotations

import numpy as np

from course_utils.attention import entropy

__all__ = [
    "crossings",
    "hard_alignment",
    "many_to_one",
    "monotonicity",
    "one_to_many",
    "step_entropy",
]


def _matrix(weights) -> np.ndarray:
    if hasattr(weights, "detach"):
        weights = weights.detach().float().cpu().numpy()
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2 or 0 in weights.shape:
        raise ValueError(f"weights must be a non-empty (tgt_len, src_len) matrix; "
                         f"got shape {weights.shape}")
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative")
    return weights


def hard_alignment(weights) -> np.ndarray:
    """For each output step, the source position with the largest weight: ``(tgt_len,)``."""
    return _matrix(weights).argmax(axis=1)


def monotonicity(weights) -> float:
    """Share of consecutive output steps whose hard alignment does not move backwards.

    1.0: the alignment only moves forward (or stays); 0.0: it always jumps back.
    A single output step counts as monotonic.
    """
    positions = hard_alignment(weights)
    if len(positions) < 2:
        return 1.0
    return float(np.mean(np.diff(positions) >= 0))


def crossings(weights) -> list[tuple[int, int]]:
    """Pairs ``(i, k)``, ``i < k``, of output steps aligned to source positions in the
    opposite order (``a[i] > a[k]``): each pair is one reordering of two words."""
    positions = hard_alignment(weights)
    return [(i, k) for i in range(len(positions)) for k in range(i + 1, len(positions))
            if positions[i] > positions[k]]


def many_to_one(weights) -> dict[int, list[int]]:
    """Source positions read (by hard alignment) by two or more output steps:
    ``{source position: [output steps]}``."""
    groups: dict[int, list[int]] = {}
    for step, position in enumerate(hard_alignment(weights)):
        groups.setdefault(int(position), []).append(step)
    return {p: steps for p, steps in groups.items() if len(steps) > 1}


def one_to_many(weights, threshold: float = 0.3) -> dict[int, list[int]]:
    """Output steps that give at least ``threshold`` of their weight to each of two or more
    source positions: ``{output step: [source positions]}``."""
    if not 0 < threshold <= 0.5:
        raise ValueError(f"threshold must be in (0, 0.5]; got {threshold}")
    matrix = _matrix(weights)
    result = {}
    for step, row in enumerate(matrix):
        strong = np.flatnonzero(row >= threshold)
        if len(strong) > 1:
            result[step] = strong.tolist()
    return result


def step_entropy(weights) -> np.ndarray:
    """Entropy (nats) of each output step's attention: ``(tgt_len,)``."""
    return entropy(_matrix(weights), axis=1)
