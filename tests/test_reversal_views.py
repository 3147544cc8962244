"""Notebook 3's views of its models: the training table and curves, heatmaps scored against the
known anti-diagonal, the alignment emerging, and the bottleneck experiment."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

from course_utils.models import build_model
from course_utils.reversal import BOTTLENECK_QUICK, QUICK, make_reversal_pairs, reversal_vocab
from course_utils.training import History
from course_utils.views import reversal as views


def history(exact=(0.5, 0.995), snapshots=None) -> History:
    return History(epoch=[1, 2], train_loss=[1.0, 0.1], val_loss=[0.9, 0.2],
                   val_token_accuracy=[0.5, 0.9], val_exact_match=list(exact),
                   seconds=[3.0, 6.0], snapshots=snapshots or {})


def test_the_data_view_draws_independent_sets_and_shows_examples(capsys):
    vocab, train_pairs, val_pairs = views.reversal_data(QUICK, examples=2)
    assert len(train_pairs) == QUICK.n_train and len(val_pairs) == QUICK.n_val
    assert train_pairs[:5] != val_pairs[:5]
    assert all(target == source[::-1] for source, target in train_pairs)
    out = capsys.readouterr().out
    assert f"{len(vocab)} tokens ({QUICK.n_symbols} symbols and 4 special ones)" in out
    assert out.count("  ->  ") == 2


def test_the_training_view_prints_every_epoch_and_when_99_percent_was_reached(capsys):
    plt.close(views.show_training(history()))
    out = capsys.readouterr().out
    assert "    2      0.1000    0.2000        99.5%      6.0" in out
    assert "99% first reached after 6 s on cpu" in out
    plt.close(views.show_training(history(exact=(0.5, 0.6))))
    assert "99% not reached in this run" in capsys.readouterr().out
    with pytest.raises(ValueError, match="no epoch"):
        views.show_training(History())


def test_the_99_percent_line_is_drawn_over_the_data_apart_from_the_top_edge_and_named():
    fig = views.show_training(history(exact=(0.5, 1.0)))
    exact = fig.axes[1]
    data, = (line for line in exact.get_lines() if line.get_label() == "held-out")
    target, = (line for line in exact.get_lines() if line.get_label() == "99%")
    assert target.get_zorder() > data.get_zorder()  # drawn over the data
    assert target.get_color() != data.get_color()
    top = exact.get_ylim()[1]
    assert top - 100 >= 10  # a clear band above 100%: the line is not on the axis' edge
    assert max(exact.get_yticks()) <= 100  # no tick claims more than 100%
    assert any(t.get_text() == "99%" for t in exact.texts)  # named on the axes itself
    plt.close(fig)


def test_the_emerging_view_draws_one_panel_per_snapshot_and_needs_them():
    vocab = reversal_vocab(QUICK.n_symbols)
    source = [4, 5, 6, 7]
    uniform = np.full((5, 4), 0.25)
    fig = views.plot_emerging(history(snapshots={0: [uniform], 1: [uniform]}), source, vocab)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["epoch 0: score 0.25", "epoch 1: score 0.25"]
    plt.close(fig)
    with pytest.raises(ValueError, match="no attention snapshots"):
        views.plot_emerging(history(), source, vocab)


def test_heatmaps_and_the_summary_score_a_model_against_the_anti_diagonal(capsys):
    vocab = reversal_vocab(QUICK.n_symbols)
    pairs = make_reversal_pairs(3, 3, 5, vocab, seed=0)
    model = build_model(QUICK.model_config(vocab, vocab)).eval()
    figures = views.show_alignments(model, vocab, pairs, lengths=(4,))
    assert len(figures) == 2 and all("alignment score" in f.axes[0].get_title() for f in figures)
    longest = max(len(s) for s, _ in pairs)
    assert figures[1].axes[0].get_title().startswith(f"length {longest}:")
    plt.close("all")
    views.alignment_summary(model, pairs)
    assert "uniform attention would score" in capsys.readouterr().out
    vanilla = build_model(QUICK.model_config(vocab, vocab, attention=False)).eval()
    with pytest.raises(ValueError, match="no attention"):
        views.show_alignments(vanilla, vocab, pairs)


def test_the_bottleneck_experiment_trains_both_models_on_one_budget(capsys):
    vocab = reversal_vocab(BOTTLENECK_QUICK.n_symbols)
    result = views.bottleneck_experiment(vocab, config=BOTTLENECK_QUICK)
    assert set(result.by_length) == set(result.histories) == {"attention", "vanilla"}
    assert len(result.histories["attention"].epoch) == len(result.histories["vanilla"].epoch)
    assert set(result.by_length["attention"]) == set(result.by_length["vanilla"])
    plt.close(views.plot_bottleneck(result))
    out = capsys.readouterr().out
    assert "attention:" in out and "vanilla  :" in out and "exact match on lengths > 20" in out
