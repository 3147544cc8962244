"""Notebook 4's heatmap read in class: the sentence is chosen by a rule, and its reading
(diagonal, crossing, one-to-many, what the hard alignment keeps) follows from the weights."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_utils.translation import Translation
from course_utils.views.heatmap_reading import (
    best_translated_reordering,
    plot_reading,
    read_alignment,
)

ENGLISH = "a man sits on the red chair in the park".split()  # 10 tokens


def translation(german: str, hard: list[int], weight: float = 0.9) -> Translation:
    """German words, each reading English position ``hard[i]`` with ``weight``, the rest
    spread evenly."""
    words = german.split()
    rows = np.full((len(words), len(ENGLISH)), (1 - weight) / (len(ENGLISH) - 1))
    rows[np.arange(len(words)), hard] = weight
    return Translation(ENGLISH, words, german, torch.tensor(rows, dtype=torch.float32))


DIAGONAL = translation("ein mann sitzt auf dem roten stuhl in dem park", list(range(10)))
# "in dem park" written before "auf dem roten stuhl": two phrases swapped
SWAPPED = translation("ein mann sitzt in dem park auf dem roten stuhl",
                      [0, 1, 2, 7, 8, 9, 3, 4, 5, 6])
REFERENCE = "Ein Mann sitzt auf dem roten Stuhl im Park."


# the same swap in a worse translation (a word wrong): the better one is shown
SWAPPED_WORSE = translation("ein hund sitzt in dem park auf dem roten stuhl",
                            [0, 1, 2, 7, 8, 9, 3, 4, 5, 6])


def test_the_sentence_shown_is_the_best_translated_one_with_a_crossing():
    outputs = [DIAGONAL, SWAPPED_WORSE, SWAPPED]
    index, crossing = best_translated_reordering(outputs, [REFERENCE] * 3)
    assert index == 2 and crossing is not None
    i, k = crossing.steps
    assert i < k and crossing.positions[0] > crossing.positions[1]


def test_without_a_crossing_the_best_translated_readable_sentence_is_shown():
    worse = translation("ein hund sitzt auf dem roten stuhl in dem park", list(range(10)))
    index, crossing = best_translated_reordering([worse, DIAGONAL], [REFERENCE] * 2)
    assert (index, crossing) == (1, None)
    assert best_translated_reordering([DIAGONAL], [REFERENCE], min_tokens=11) == (0, None)


def test_the_reading_names_the_crossing_and_what_the_hard_alignment_drops():
    _, crossing = best_translated_reordering([SWAPPED], [REFERENCE])
    lines = read_alignment(SWAPPED, crossing)
    assert lines[0] == f"EN: {' '.join(ENGLISH)}"
    assert any(line.startswith("crossing: ") for line in lines)
    assert "keeps 90% of a row's weight on average (from 90% to 90%)" in " ".join(lines)
    assert lines[-1].endswith("none")  # every English word is some German word's arg max


def test_one_to_many_and_unread_words_are_reported():
    # "sits" read by two German words; "a" read by none
    doubled = translation("mann sitzt gerade auf dem roten stuhl in dem park",
                          [1, 2, 2, 3, 4, 5, 6, 7, 8, 9])
    text = "\n".join(read_alignment(doubled))
    assert "one-to-many: 'sitzt' + 'gerade' all read 'sits' most" in text
    assert "English words no German word reads most: 'a'" in text
    assert "100% of consecutive German words move forward" in text


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="one reference per output"):
        best_translated_reordering([DIAGONAL], [])
    vanilla = Translation(ENGLISH, ["ein"], "ein", None)
    with pytest.raises(ValueError, match="no attention"):
        best_translated_reordering([vanilla], [REFERENCE])


def test_the_heatmap_read_marks_each_rows_hard_alignment_and_outlines_the_crossing():
    _, crossing = best_translated_reordering([SWAPPED], [REFERENCE])
    fig = plot_reading(SWAPPED, crossing, title="Test sentence 3")
    ax = fig.axes[0]
    [dots] = [c for c in ax.collections if c.get_label() == "hard alignment"]
    columns = np.floor(dots.get_offsets()[:, 0])  # one dot per German word, in its arg max
    assert list(columns) == [0, 1, 2, 7, 8, 9, 3, 4, 5, 6]
    outlined = sorted((int(p.get_y()), int(p.get_x())) for p in ax.patches
                      if p.get_edgecolor()[:3] != (1.0, 1.0, 1.0) and not p.get_fill())
    assert outlined == sorted(crossing.cells) and outlined
    assert ax.get_title().startswith("Test sentence 3: “ein mann sitzt in dem park")
    assert "(dots: the hard alignment)" in ax.get_title()
    plt.close(fig)
