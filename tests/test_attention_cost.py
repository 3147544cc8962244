"""Notebook 2's measurements, sections 5 to 7: what a mask does to padding, the keys computed once
per sentence, and attention's cost in T_y * T_x."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_utils.attention import BahdanauAttention
from course_utils.views.attention_cost import (
    CostGrid,
    plot_attention_cost,
    show_padding_masks,
    time_attention_grid,
    time_keys_once,
)


def test_padding_takes_weight_without_a_mask_and_none_with_it(capsys):
    fig = show_padding_masks(BahdanauAttention)
    out = capsys.readouterr().out
    assert "every padded position has weight exactly 0: True" in out
    assert "gets the context it gets alone: True" in out
    unmasked = [float(x) for x in out.split("[")[1].split("]")[0].split()]
    assert unmasked[0] == 0.0 and all(x > 0 for x in unmasked[1:])  # padding took weight
    assert len(fig.axes) == 3  # two heatmaps and their one colour bar
    plt.close(fig)


def test_a_module_that_ignores_the_mask_is_shown_to(capsys):
    class NoMask(BahdanauAttention):
        def forward(self, decoder_state, encoder_outputs, mask=None, keys=None):
            return super().forward(decoder_state, encoder_outputs, None, keys)

    plt.close(show_padding_masks(NoMask))
    assert "weight exactly 0: False" in capsys.readouterr().out


def test_bad_lengths_are_refused():
    with pytest.raises(ValueError, match="positive sentence lengths"):
        show_padding_masks(BahdanauAttention, lengths=(3, 0))


def test_keys_computed_once_give_identical_weights():
    timing = time_keys_once(quick=True, repeats=1)
    assert timing.identical
    assert timing.seconds_once > 0 and timing.seconds_every_step > 0
    assert "identical weights: True" in str(timing) and "speed-up" in str(timing)


def test_the_fitted_exponent_of_a_cost_proportional_to_ty_tx_is_one():
    lengths = (10, 20, 40)
    seconds = 1e-6 * np.outer(lengths, lengths)
    assert CostGrid(lengths, seconds, 32, "cpu").exponent == pytest.approx(1.0)
    assert CostGrid(lengths, seconds ** 0.5, 32, "cpu").exponent == pytest.approx(0.5)


def test_the_grid_times_every_pair_of_lengths_and_draws_them():
    grid = time_attention_grid([2, 4], width=8, batch=2, repeats=1)
    assert grid.seconds.shape == (2, 2) and (grid.seconds > 0).all()
    fig = plot_attention_cost(grid)
    assert [ax.get_xlabel() for ax in fig.axes[:2]] == ["$T_y \\cdot T_x$", "source length $T_x$"]
    plt.close(fig)
    with pytest.raises(ValueError, match="two or more"):
        time_attention_grid([4])


def test_a_decoder_predicts_only_at_the_positions_asked_for():
    from course_utils.models import ModelConfig, build_model

    model = build_model(ModelConfig(9, 11, embed_dim=4, hidden_dim=3, attention_dim=5,
                                    maxout_dim=2)).eval()
    decoder = model.decoder
    states, contexts = torch.randn(2, 3, 3), torch.randn(2, 3, 6)
    embedded = decoder.embed(torch.tensor([[2, 5, 6], [2, 7, 0]]))
    assert torch.equal(embedded, decoder.embedding(torch.tensor([[2, 5, 6], [2, 7, 0]])))
    positions = torch.tensor([[True, True, True], [True, True, False]])
    every = decoder.predict(states, contexts, embedded)
    assert torch.equal(decoder.predict(states, contexts, embedded, positions), every[positions])
