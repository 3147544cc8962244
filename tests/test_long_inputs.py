"""Long inputs from Multi30k itself (notebook 4, section 11): consecutive test captions joined
into one source and one reference, each group once, none overlapping; BLEU against source length
drawn over the whole range with each model's interval and the paired gain; and the output's
length against the reference's, which shows a model that stops early."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_utils.metrics import compare_by_length, length_buckets
from course_utils.views.long_inputs import (
    joined_pairs,
    length_ratios,
    plot_bleu_against_length,
    sentences_written,
)

PAIRS = [(f"A dog {i} runs.", f"Ein Hund {i} rennt.") for i in range(7)]


def test_consecutive_captions_are_joined_in_order_without_overlap():
    joined = joined_pairs(PAIRS, group_sizes=(1, 3))
    ones = [p for p in joined if p.parts == 1]
    threes = [p for p in joined if p.parts == 3]
    assert [p.source for p in ones] == [e for e, _ in PAIRS]
    assert [p.first for p in threes] == [0, 3]  # caption 6 makes no group of three
    assert threes[1].source == "A dog 3 runs. A dog 4 runs. A dog 5 runs."
    assert threes[1].reference == "Ein Hund 3 rennt. Ein Hund 4 rennt. Ein Hund 5 rennt."


@pytest.mark.parametrize("sizes, pairs, message", [
    ((0, 2), PAIRS, "at least 1"),
    ((2, 2), PAIRS, "distinct"),
    ((), PAIRS, "group_sizes"),
    ((1,), [("a dog", "")], "pair 0"),
    ((1,), ["a dog"], "pair 0"),
])
def test_bad_input_is_refused_by_name(sizes, pairs, message):
    with pytest.raises(ValueError, match=message):
        joined_pairs(pairs, group_sizes=sizes)


def test_length_ratios_say_which_model_writes_too_little():
    table = length_ratios({"vanilla": [5, 5, 10], "attention": [10, 20, 40]}, [10, 20, 40],
                          [8, 30, 60], length_buckets(10, 60))
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:]}
    assert rows == {"0-9": ["1", "50", "100"], "30-39": ["1", "25", "100"],
                    "60+": ["1", "25", "100"]}
    with pytest.raises(ValueError, match="one number per sentence"):
        length_ratios({"a": [1]}, [1, 2], [1, 2], length_buckets(10, 20))


def test_the_figure_draws_each_models_bleu_and_the_paired_gain_over_the_whole_range():
    rng = np.random.default_rng(0)
    words = "a man in a blue shirt rides a bike down a busy street".split()
    refs = [" ".join(rng.choice(words, size=n)) for n in rng.integers(5, 60, size=300)]
    lengths = [len(r.split()) for r in refs]
    noisy = [" ".join(w if rng.random() > 0.4 else "x" for w in r.split()) for r in refs]
    comparison = compare_by_length({"vanilla": noisy, "attention": refs}, refs, lengths,
                                   baseline="vanilla", buckets=length_buckets(10, 50),
                                   resamples=50)
    fig = plot_bleu_against_length(comparison, longest_trained=40)
    top, bottom = fig.axes
    labels = [line.get_label() for line in top.get_lines()]
    assert labels[:2] == ["vanilla", "attention"]
    assert len(top.collections) == 2  # one interval band per model
    ticks = [t.get_text() for t in bottom.get_xticklabels()]
    assert ticks[0].startswith("0-9") and ticks[-1].startswith("50+")
    # the dashed line stands before the first bucket past the longest training caption
    assert any(abs(line.get_xdata()[0] - 4.5) < 1e-9 for line in top.get_lines()
               if line.get_linestyle() == "--")
    assert "minus vanilla" in bottom.get_legend().get_texts()[0].get_text()
    plt.close(fig)


def test_the_sentences_written_show_a_model_that_merges_the_captions():
    joined = joined_pairs(PAIRS, group_sizes=(1, 3))
    merged = [p.source.replace(". ", ", ") for p in joined]  # one sentence for every input
    table = sentences_written({"merges": merged, "keeps": [p.source for p in joined]}, joined)
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines()[2:]}
    assert rows == {"1": ["1.0", "1.0", "1.0"], "3": ["3.0", "1.0", "3.0"]}
