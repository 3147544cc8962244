"""The grader's answers to E10.3's measures, for the random matrices drawn in each graded run.

A student's copy of the course (``course-handout``) leaves out every ``checks/hidden_*.py``:
there, :mod:`course_utils.checks.e10_3` checks the known matrices, whose answers are constants
written by hand, and says that the grader adds random ones. The grader runs from the course's
repository, where this module is, and judges every run on known and fresh random matrices
alike. A submission that calls this module earns nothing for the part (it is one of the check's
``own_work`` modules).
"""

from __future__ import annotations

import string

import numpy as np

__all__ = ["fertility", "jump_shares", "moves", "punctuation_mass", "shares"]


def fertility(weights: np.ndarray) -> np.ndarray:
    """Each source word's total attention over the output steps (a column's total)."""
    return np.einsum("ts->s", weights)


def moves(weights: np.ndarray) -> np.ndarray:
    """``a[i + 1] - a[i]`` for the arg max ``a`` of each row; empty for fewer than two rows."""
    if len(weights) < 2:
        return np.zeros(0, int)
    return np.convolve(weights.argmax(axis=1), [1, -1], mode="valid")


def shares(values: np.ndarray) -> dict[int, float]:
    """``{value: share}`` of a sequence of whole numbers; ``{}`` when it is empty."""
    found, counts = np.unique(values, return_counts=True)
    return {int(v): c / counts.sum() for v, c in zip(found, counts)}


def jump_shares(weights: np.ndarray) -> dict[int, float]:
    """The answer of ``jump_distribution``: the share of each move between aligned positions."""
    return shares(moves(weights))


def punctuation_mass(weights: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Each output step's weight on the source tokens made only of punctuation characters."""
    marks = np.array([set(token) <= set(string.punctuation) for token in tokens], float)
    return weights @ marks
