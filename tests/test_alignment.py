"""Alignment analysis on hand-made attention matrices whose answers are known."""

import numpy as np
import pytest

from course_utils.alignment import (
    crossings,
    hard_alignment,
    many_to_one,
    monotonicity,
    one_to_many,
    step_entropy,
)

DIAGONAL = np.eye(4) * 0.9 + 0.025  # each row: 0.925 on the diagonal, 0.025 elsewhere
# "he has eaten" -> "er hat gegessen": verb-final reordering of the last two outputs
REORDERED = np.array([
    [0.9, 0.05, 0.05, 0.0],  # er     <- he
    [0.05, 0.9, 0.05, 0.0],  # hat    <- has
    [0.0, 0.05, 0.05, 0.9],  # etwas  <- something (source position 3)
    [0.0, 0.1, 0.85, 0.05],  # gegessen <- eaten (source position 2): jumps back
])
MANY_TO_ONE = np.array([
    [0.8, 0.2, 0.0],
    [0.1, 0.8, 0.1],  # two output tokens both read source position 1
    [0.0, 0.7, 0.3],
])
SPLIT = np.array([
    [0.5, 0.45, 0.05],  # one output token reads two source tokens
    [0.0, 0.1, 0.9],
])


def test_hard_alignment_is_the_argmax_per_output_step():
    assert hard_alignment(DIAGONAL).tolist() == [0, 1, 2, 3]
    assert hard_alignment(REORDERED).tolist() == [0, 1, 3, 2]


def test_monotonic_alignment_scores_one_and_a_reordering_scores_less():
    assert monotonicity(DIAGONAL) == 1.0
    assert monotonicity(REORDERED) == pytest.approx(2 / 3)
    assert monotonicity(np.fliplr(np.eye(3))) == 0.0  # reversal: always backwards
    assert monotonicity(np.array([[1.0, 0.0]])) == 1.0


def test_crossings_find_the_reordered_pair():
    assert crossings(DIAGONAL) == []
    assert crossings(REORDERED) == [(2, 3)]
    assert len(crossings(np.fliplr(np.eye(4)))) == 6  # every pair crosses


def test_many_to_one_and_one_to_many():
    assert many_to_one(MANY_TO_ONE) == {1: [1, 2]}
    assert many_to_one(DIAGONAL) == {}
    assert one_to_many(SPLIT) == {0: [0, 1]}
    assert one_to_many(DIAGONAL) == {}
    with pytest.raises(ValueError, match=r"threshold must be in \(0, 0.5\]"):
        one_to_many(SPLIT, threshold=0.7)


def test_step_entropy_is_low_when_focused_and_log_n_when_uniform():
    uniform = np.full((2, 5), 0.2)
    np.testing.assert_allclose(step_entropy(uniform), np.log(5))
    assert step_entropy(np.eye(3)).tolist() == [0.0, 0.0, 0.0]
    assert step_entropy(SPLIT)[0] > step_entropy(SPLIT)[1]


def test_bad_matrices_are_clear_errors():
    with pytest.raises(ValueError, match=r"non-empty \(tgt_len, src_len\) matrix; got shape \(3,\)"):
        hard_alignment(np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        monotonicity(-np.eye(2))
