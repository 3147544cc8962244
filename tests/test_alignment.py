"""Alignment analysis on hand-made attention matrices whose answers are known."""

import numpy as np
import pytest
import torch

from course_utils.alignment import (
    PATTERNS,
    confident_steps,
    crossings,
    find_examples,
    hard_alignment,
    many_to_one,
    monotonicity,
    one_to_many,
    step_entropy,
    word_class,
)

DIAGONAL = np.eye(4) * 0.9 + 0.025  # each row: 0.925 on the diagonal, 0.025 elsewhere
# "he has something eaten" order in German: "er hat etwas gegessen" from "he has eaten
# something": the verb moves to the end, so the last two outputs cross
REORDERED = np.array([
    [0.9, 0.05, 0.05, 0.0],  # er       <- he
    [0.05, 0.9, 0.05, 0.0],  # hat      <- has
    [0.0, 0.05, 0.05, 0.9],  # etwas    <- something (source position 3)
    [0.0, 0.1, 0.85, 0.05],  # gegessen <- eaten (source position 2): jumps back
])
# "the boy is playing" -> "der junge spielt": one output word reads "is playing"
MANY_TO_ONE = np.array([
    [0.9, 0.1, 0.0, 0.0],  # der    <- the
    [0.05, 0.9, 0.05, 0.0],  # junge  <- boy
    [0.0, 0.05, 0.45, 0.5],  # spielt <- is + playing
])
# "skateboarding" -> "fährt skateboard": two output words read one source word
ONE_TO_MANY = np.array([
    [0.9, 0.1],  # er        <- he
    [0.1, 0.9],  # fährt     <- skateboarding
    [0.05, 0.95],  # skateboard <- skateboarding
])


def test_hard_alignment_is_the_argmax_per_output_step():
    assert hard_alignment(DIAGONAL).tolist() == [0, 1, 2, 3]
    assert hard_alignment(REORDERED).tolist() == [0, 1, 3, 2]
    assert hard_alignment(torch.tensor(REORDERED)).tolist() == [0, 1, 3, 2]


def test_monotonic_alignment_scores_one_and_a_reordering_scores_less():
    assert monotonicity(DIAGONAL) == 1.0
    assert monotonicity(REORDERED) == pytest.approx(2 / 3)
    assert monotonicity(np.fliplr(np.eye(3))) == 0.0  # reversal: always backwards
    assert monotonicity(np.array([[1.0, 0.0]])) == 1.0
    assert monotonicity(ONE_TO_MANY) == 1.0  # staying on a word is not going back


def test_unconfident_steps_can_be_left_out():
    blurred = REORDERED.copy()
    blurred[3] = [0.3, 0.2, 0.3, 0.2]  # the verb's step is spread out: no alignment to trust
    assert confident_steps(blurred, 0.5).tolist() == [0, 1, 2]
    assert monotonicity(blurred, min_weight=0.5) == 1.0
    assert crossings(blurred, min_weight=0.5) == []
    assert crossings(blurred) != []


def test_crossings_find_the_reordered_pair():
    assert crossings(DIAGONAL) == []
    assert crossings(REORDERED) == [(2, 3)]
    assert len(crossings(np.fliplr(np.eye(4)))) == 6  # every pair crosses


def test_many_to_one_finds_the_output_word_that_reads_a_phrase():
    assert many_to_one(MANY_TO_ONE) == {2: [2, 3]}
    assert many_to_one(DIAGONAL) == {}
    assert many_to_one(MANY_TO_ONE, threshold=0.5) == {}
    with pytest.raises(ValueError, match=r"threshold must be in \[1e-09, 0.5\]"):
        many_to_one(MANY_TO_ONE, threshold=0.7)


def test_one_to_many_finds_the_source_word_read_by_several_outputs():
    assert one_to_many(ONE_TO_MANY) == {1: [1, 2]}
    assert one_to_many(DIAGONAL) == {}
    assert one_to_many(ONE_TO_MANY, min_weight=0.92) == {}  # only one step that sure


def test_step_entropy_is_low_when_focused_and_log_n_when_uniform():
    uniform = np.full((2, 5), 0.2)
    np.testing.assert_allclose(step_entropy(uniform), np.log(5))
    assert step_entropy(np.eye(3)).tolist() == [0.0, 0.0, 0.0]
    assert step_entropy(MANY_TO_ONE)[2] > step_entropy(MANY_TO_ONE)[1]


def test_word_classes_of_german_tokens():
    assert [word_class(w) for w in ["ein", "Mann", "spielt", "im", "Schnee", ".", ","]] == [
        "function", "content", "content", "function", "content", "punctuation",
        "punctuation"]
    assert word_class("„") == "punctuation"
    assert word_class("--") == word_class("–") == word_class("...") == "punctuation"
    assert word_class("t-shirt") == "content" and word_class("&quot;") == "content"
    assert word_class("<unk>") == "content"
    with pytest.raises(ValueError, match="non-empty string"):
        word_class("")


def test_find_examples_ranks_the_clearest_case_of_each_pattern_first():
    matrices = [DIAGONAL, REORDERED, MANY_TO_ONE, ONE_TO_MANY]
    mono = find_examples(matrices, "monotonic", min_length=4)
    # forward-only and long enough: the diagonal, then the phrase read by one word (as
    # long, less confident on average)
    assert [e.index for e in mono] == [0, 2]
    assert find_examples(matrices, "monotonic", min_length=5) == []
    reordering = find_examples(matrices, "reordering")
    assert [(e.index, e.steps, e.positions) for e in reordering] == [(1, (2, 3), (3, 2))]
    assert reordering[0].score == pytest.approx(0.85)
    many = find_examples(matrices, "many-to-one")
    assert [(e.index, e.steps, e.positions) for e in many] == [(2, (2,), (2, 3))]
    assert many[0].cells == [(2, 2), (2, 3)]
    assert reordering[0].cells == [(2, 3), (3, 2)]
    one = find_examples(matrices, "one-to-many")
    assert [(e.index, e.steps, e.positions) for e in one] == [(3, (1, 2), (1,))]
    assert one[0].cells == [(1, 1), (2, 1)]
    sharper = DIAGONAL.copy()
    sharper[2:] = REORDERED[2:] * 0 + [[0, 0, 0, 1], [0, 0, 1, 0]]
    ranked = find_examples([REORDERED, sharper], "reordering", k=2)
    assert [e.index for e in ranked] == [1, 0]
    assert len(find_examples([REORDERED, sharper], "reordering", k=1)) == 1


def test_find_examples_skips_excluded_steps_and_far_crossings():
    assert find_examples([REORDERED], "reordering",
                         exclude=[[False, False, False, True]]) == []
    far = np.eye(10)[[9, 1, 2, 3, 4, 5, 6, 7, 8, 0]]  # first and last words swap
    assert find_examples([far], "reordering", max_distance=4) == []
    assert find_examples([far], "reordering", max_distance=9) != []


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"non-empty \(tgt_len, src_len\) matrix; got shape \(3,\)"):
        hard_alignment(np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        monotonicity(-np.eye(2))
    with pytest.raises(ValueError, match="finite"):
        step_entropy(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match=r"min_weight must be in \[0.0, 1.0\]"):
        crossings(DIAGONAL, min_weight=2)
    with pytest.raises(ValueError, match="pattern must be one of"):
        find_examples([DIAGONAL], "diagonal")
    with pytest.raises(ValueError, match=r"exclude needs one entry per matrix \(1\); got 2"):
        find_examples([DIAGONAL], "reordering", exclude=[[False] * 4] * 2)
    with pytest.raises(ValueError, match=r"exclude\[0\] needs one entry per output step \(4\)"):
        find_examples([DIAGONAL], "reordering", exclude=[[False]])
    assert set(PATTERNS) == {"monotonic", "reordering", "many-to-one", "one-to-many"}
