"""The result plots of notebooks 1 and 4 show what their sections read off them: each is one
call in the notebook, so what it must draw is stated here (the figure rules, width and type
size, are ``tests/test_figure_rules.py``'s, which draws these figures too)."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex

from course_utils.colours import BLUE, ORANGE
from course_utils.exposure_bias import PositionAccuracy, plot_accuracy_by_position
from course_utils.metrics import BleuComparison, Interval, LengthComparison
from course_utils.plotting import (
    plot_bleu_by_length,
    plot_loss_curves,
)
from course_utils.training import History
from course_utils.views.intro import linear_recall, plot_bottleneck, plot_energies_and_weights
from course_utils.views.scores import plot_bleu_gains


def fading_recall(longest: int = 30) -> list[np.ndarray]:
    """Like notebook 1's measurement: of a sequence of T words, the last ones survive best."""
    return [np.exp(-(np.arange(n, 0, -1) - 1) / 2.5) * min(1.0, 4 / n)
            for n in range(1, longest + 1)]


def histories() -> dict[str, History]:
    """Five epochs of two models, the training loss above the validation loss at first."""
    epochs = [1, 2, 3, 4, 5]
    return {
        "attention": History(epochs, [3.9, 2.4, 2.0, 1.7, 1.4], [2.6, 2.1, 1.9, 1.8, 1.7]),
        "vanilla": History(epochs, [4.2, 2.9, 2.5, 2.2, 1.9], [3.1, 2.6, 2.4, 2.3, 2.2]),
    }


def comparison(empty_long: bool = False) -> LengthComparison:
    """BLEU by length as ``compare_by_length`` returns it for notebook 4's two models."""
    bleu = {"vanilla": {"< 10": Interval(25.6, 21.5, 30.0), "10-20": Interval(20.3, 19.0, 21.7),
                        "> 20": Interval(9.6, 6.9, 12.2)},
            "attention": {"< 10": Interval(32.0, 27.8, 36.7), "10-20": Interval(29.7, 27.8, 31.3),
                          "> 20": Interval(16.0, 12.7, 19.4)}}
    if empty_long:
        bleu["vanilla"]["> 20"] = bleu["attention"]["> 20"] = None
    return LengthComparison(models=("vanilla", "attention"), baseline="vanilla",
                            counts={"< 10": 179, "10-20": 767, "> 20": 0 if empty_long else 54},
                            bleu=bleu, gain={}, gain_growth={},
                            confidence=0.95, resamples=1000)


def position_accuracy() -> PositionAccuracy:
    """Like notebook 4's measurement on 1,000 test sentences: both ways right at position 1,
    free running falling further behind; few references reach the last positions."""
    positions = np.arange(1, 31)
    sentences = np.where(positions <= 12, 1000.0, 1000.0 * np.exp(-(positions - 12) / 3))
    forced = np.clip(0.88 - 0.02 * positions, 0.55, 1) + 0.01 * (positions % 3)
    free = 0.88 * np.exp(-(positions - 1) / 8)
    return PositionAccuracy(sentences, forced, free)


def length_data():
    """Translation data whose training sentences are as long as Multi30k's (about 13 tokens,
    a few over 20)."""
    from course_utils.text import build_translation_data

    rng = np.random.default_rng(0)
    lengths = np.clip(rng.normal(13, 4, 400).round().astype(int), 3, 40)
    raw = {"train": [(" ".join(["w"] * n), " ".join(["v"] * max(1, n - 1))) for n in lengths]}
    return build_translation_data(raw, min_freq=1)


def bar_heights(ax) -> list[float]:
    return [round(p.get_height(), 6) for p in ax.patches]


def test_the_bottleneck_plot_shows_mean_recall_under_its_ceiling_and_one_lengths_words():
    recall = fading_recall()
    fig = plot_bottleneck(recall, state_dim=16, word_dim=4, show_length=20)
    left, right = fig.axes
    measured, ceiling = left.get_lines()
    np.testing.assert_allclose(measured.get_ydata(), [r.mean() for r in recall])
    lengths = np.arange(1, 31)
    np.testing.assert_allclose(ceiling.get_ydata(), np.minimum(1, 16 / (4 * lengths)))
    assert "d / (4T)" in ceiling.get_label() and "d = 16" in measured.get_label()
    np.testing.assert_allclose(bar_heights(right), recall[19].round(6))  # T = 20, word by word
    assert right.get_title() == "T = 20: which words survive"
    plt.close(fig)


def test_the_bottleneck_plot_refuses_recall_that_is_not_one_value_per_word():
    with pytest.raises(ValueError, match="one value per position"):
        plot_bottleneck([np.ones(1), np.ones(3)], state_dim=16, word_dim=4, show_length=1)
    with pytest.raises(ValueError, match="show_length must be between 1 and 30"):
        plot_bottleneck(fading_recall(), state_dim=16, word_dim=4, show_length=31)


def test_energies_and_weights_show_the_same_winner_and_room_for_a_negative_energy():
    energies = np.array([1.5232, 2.0052, -0.9242])
    weights = np.exp(energies) / np.exp(energies).sum()
    fig = plot_energies_and_weights(energies, weights, ["h1", "h2", "h3"], step=2)
    left, right = fig.axes
    assert bar_heights(left) == list(energies.round(6))
    np.testing.assert_allclose(bar_heights(right), weights, atol=1e-6)
    for ax in (left, right):  # the winner, h_2, is the orange bar in both panels
        assert [to_hex(p.get_facecolor()) for p in ax.patches] == [BLUE.lower(), ORANGE.lower(),
                                                                  BLUE.lower()]
    assert left.get_title() == "Energies $e_{2j}$" and "alpha_{2j}" in right.get_title()
    assert left.get_ylim()[0] < 1.3 * energies.min()  # the printed -0.92 stays inside
    plt.close(fig)
    with pytest.raises(ValueError, match="one weight per energy"):
        plot_energies_and_weights(energies, weights[:2], ["h1", "h2", "h3"])


def test_loss_curves_draw_training_and_validation_of_each_model_in_its_colour():
    fig = plot_loss_curves(histories(), title="same budget")
    [ax] = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"attention: training", "attention: validation",
                          "vanilla: training", "vanilla: validation"}
    assert to_hex(lines["attention: validation"].get_color()) == BLUE.lower()
    assert to_hex(lines["vanilla: training"].get_color()) == ORANGE.lower()
    assert lines["vanilla: training"].get_linestyle() == "--"
    assert lines["vanilla: validation"].get_linestyle() == "-"
    assert list(lines["attention: validation"].get_ydata()) == [2.6, 2.1, 1.9, 1.8, 1.7]
    assert list(ax.get_xticks()) == [1, 2, 3, 4, 5] and ax.get_title() == "same budget"
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one epoch"):
        plot_loss_curves({"attention": History()})


def test_bleu_by_length_draws_the_baseline_first_with_each_interval_and_bucket_size():
    fig = plot_bleu_by_length(comparison())
    [ax] = fig.axes
    assert bar_heights(ax) == [25.6, 20.3, 9.6, 32.0, 29.7, 16.0]  # vanilla's bars, then attention's
    assert [to_hex(p.get_facecolor()) for p in ax.patches] == [ORANGE.lower()] * 3 + [BLUE.lower()] * 3
    # each error bar spans its interval: the lines of the bars' vertical error segments
    spans = sorted(tuple(np.round(seg[:, 1], 6)) for c in ax.collections for seg in c.get_segments())
    assert (21.5, 30.0) in spans and (12.7, 19.4) in spans
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["< 10 tokens\n(179 sentences)", "10-20 tokens\n(767 sentences)",
                      "> 20 tokens\n(54 sentences)"]
    assert ax.get_ylabel() == "BLEU (95% interval)"
    plt.close(fig)


def test_an_empty_bucket_is_drawn_empty_not_refused():
    fig = plot_bleu_by_length(comparison(empty_long=True))
    assert bar_heights(fig.axes[0])[2] == 0.0
    plt.close(fig)


def test_accuracy_by_position_draws_both_ways_over_positions_enough_references_reach():
    accuracy = position_accuracy()
    fig = plot_accuracy_by_position(accuracy, min_sentences=20)
    ax, counts = fig.axes
    forced, free = ax.get_lines()
    reached = accuracy.sentences >= 20
    # below, how many references reach each position shown: the weight behind each point
    assert [bar.get_height() for bar in counts.patches] == list(accuracy.sentences[reached])
    assert list(forced.get_xdata()) == list(accuracy.positions[reached])
    assert reached.sum() < len(reached)  # the rarely reached positions are left out
    np.testing.assert_allclose(forced.get_ydata(), accuracy.teacher_forced[reached])
    np.testing.assert_allclose(free.get_ydata(), accuracy.free_running[reached])
    assert "teacher-forced" in forced.get_label() and "free-running" in free.get_label()
    assert ax.get_ylim() == (0.0, 1.0)
    plt.close(fig)
    with pytest.raises(ValueError, match="lower min_sentences"):
        plot_accuracy_by_position(accuracy, min_sentences=5000)


def score_comparison():
    """Notebook 6, section 7: three scores, one epoch history each, the paired gains over
    additive (the intervals of the BLEUs themselves overlap; those of the gains leave out 0)."""
    epochs = [1, 2, 3]
    histories = {"additive": History(epochs, [3.5, 2.8, 2.5], [3.1, 2.8, 2.66]),
                 "general": History(epochs, [3.7, 3.0, 2.7], [3.3, 3.0, 2.85]),
                 "dot": History(epochs, [3.6, 2.9, 2.6], [3.2, 2.9, 2.81])}
    bleu = {"additive": Interval(10.8, 10.0, 11.7), "general": Interval(9.0, 8.2, 9.7),
            "dot": Interval(9.9, 9.1, 10.7)}
    gain = {"general": Interval(-1.9, -2.4, -1.3), "dot": Interval(-1.0, -1.5, -0.5)}
    comparison = BleuComparison(("additive", "general", "dot"), "additive", 1000, bleu, gain,
                                0.95, 1000)
    return histories, comparison, {"additive": "C0", "general": "C2", "dot": "C1"}


def test_bleu_gains_draw_each_paired_gain_with_its_interval_against_zero():
    histories, comparison, colours = score_comparison()
    fig = plot_bleu_gains(histories, comparison, colours)
    losses, gains = fig.axes
    assert [line.get_label() for line in losses.get_lines()] == ["additive", "general", "dot"]
    assert [t.get_text() for t in gains.get_xticklabels()] == ["general", "dot"]
    centres = [line for line in gains.get_lines()  # not the caps (markers "_")
               if len(line.get_xdata()) == 1 and line.get_marker() != "_"]
    assert [float(line.get_ydata()[0]) for line in centres] == [-1.9, -1.0]
    assert [to_hex(line.get_color()) for line in centres] == [to_hex("C2"), to_hex("C1")]
    bars = [c for c in gains.collections if c.get_segments()]
    ends = sorted(tuple(sorted(np.asarray(seg)[:, 1])) for c in bars for seg in c.get_segments())
    assert ends == [(-2.4, -1.3), (-1.5, -0.5)]
    zero = [line for line in gains.get_lines() if list(line.get_ydata()) == [0, 0]]
    assert zero and gains.get_ylim()[0] < -2.4 and gains.get_ylim()[1] > 0
    assert "paired" in gains.get_title().lower() and "additive" in gains.get_ylabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="two or more models"):
        plot_bleu_gains(histories, BleuComparison(("additive",), "additive", 10,
                                                  {"additive": comparison.bleu["additive"]}, {},
                                                  0.95, 10), colours)


def _random_rnn(words: np.ndarray, state_dim: int = 16) -> np.ndarray:
    """Notebook 1's encoder: a random tanh RNN, (n, T, word_dim) -> final states (n, state_dim)."""
    rng = np.random.default_rng(0)
    recurrent = np.linalg.qr(rng.normal(size=(state_dim, state_dim)))[0] * 0.95
    inputs = rng.normal(size=(state_dim, words.shape[-1])) / np.sqrt(words.shape[-1])
    h = np.zeros((words.shape[0], state_dim))
    for t in range(words.shape[1]):
        h = np.tanh(h @ recurrent.T + words[:, t] @ inputs.T)
    return h


def test_one_final_state_remembers_short_sequences_and_the_last_words_of_long_ones():
    # the lesson of notebook 1, section 1: 16 numbers hold a 1-word sequence's 4 almost whole,
    # not a 30-word sequence's 120; of a long sequence, the last words survive best
    short, long = (linear_recall(_random_rnn, T, 2000) for T in (1, 30))
    assert short.shape == (1,) and short[0] > 0.9
    assert long.shape == (30,) and long.mean() < 16 / (4 * 30) + 0.05
    assert long[-3:].mean() > 0.5 > long[:10].mean()
    means = [linear_recall(_random_rnn, T, 2000).mean() for T in (2, 5, 10, 20)]
    assert means == sorted(means, reverse=True)


def test_a_state_that_keeps_every_word_recalls_every_word():
    # the read-out is the best linear one: a final state holding the words themselves scores 1
    recall = linear_recall(lambda words: words.reshape(len(words), -1), 6, 200)
    np.testing.assert_allclose(recall, 1.0, atol=1e-9)


def test_linear_recall_refuses_bad_sizes_and_a_state_per_word():
    with pytest.raises(ValueError, match="seq_len and word_dim must be at least 1"):
        linear_recall(_random_rnn, 0, 100)
    with pytest.raises(ValueError, match="n_sequences must be at least 4"):
        linear_recall(_random_rnn, 3, 2)
    with pytest.raises(ValueError, match=r"one final state per sequence, shape \(100, d\)"):
        linear_recall(lambda words: words, 3, 100)
