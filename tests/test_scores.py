"""Each score function against its formula in NumPy, masks included; what they share with
Bahdanau's module; the dimension rules; and why the next day scales the dot product."""

import math

import numpy as np
import pytest
import torch

from course_utils.attention import Attention, BahdanauAttention, additive_attention, softmax
from course_utils.scores import (
    SCORES,
    DotAttention,
    GeneralAttention,
    ScaledDotAttention,
    make_attention,
)

BATCH, SRC, DIM = 3, 6, 8


def inputs(encoder_dim=DIM, decoder_dim=DIM, seed=0):
    generator = torch.Generator().manual_seed(seed)
    state = torch.randn(BATCH, decoder_dim, generator=generator, dtype=torch.float64)
    outputs = torch.randn(BATCH, SRC, encoder_dim, generator=generator, dtype=torch.float64)
    mask = torch.ones(BATCH, SRC, dtype=torch.bool)
    mask[1, 4:] = False  # a shorter sentence
    mask[2, 1:] = False  # a one-token sentence
    return state, outputs, mask


def reference(energies_of_row, state, outputs, mask):
    """NumPy: energies of each row's real tokens, softmax over them, weighted sum of h_j."""
    contexts, all_weights = [], []
    for b in range(BATCH):
        real = mask[b].numpy()
        h = outputs[b].numpy()
        e = energies_of_row(state[b].numpy(), h)
        weights = np.zeros(SRC)
        weights[real] = softmax(e[real])
        contexts.append(weights @ h)
        all_weights.append(weights)
    return np.array(contexts), np.array(all_weights)


@pytest.mark.parametrize("module, formula", [
    (lambda: DotAttention(DIM, DIM), lambda m: lambda s, h: h @ s),
    (lambda: ScaledDotAttention(DIM, DIM), lambda m: lambda s, h: h @ s / math.sqrt(DIM)),
    (lambda: GeneralAttention(DIM + 2, DIM),
     lambda m: lambda s, h: h @ m.W.weight.detach().double().numpy().T @ s),
])
def test_each_score_is_its_formula_masks_included(module, formula):
    torch.manual_seed(0)
    attention = module().double()
    state, outputs, mask = inputs(encoder_dim=attention.encoder_dim)
    outputs[1, 4:] = float("nan")  # padding never reaches the context
    context, weights = attention(state, outputs, mask)
    want_context, want_weights = reference(formula(attention), state,
                                           outputs.nan_to_num(0.0), mask)
    assert torch.allclose(weights, torch.from_numpy(want_weights))
    assert torch.allclose(context, torch.from_numpy(want_context))
    assert (weights[~mask] == 0).all()
    assert torch.allclose(weights.sum(-1), torch.ones(BATCH, dtype=torch.float64))


def test_the_additive_score_is_still_bahdanaus_and_keeps_its_weight_names():
    torch.manual_seed(0)
    attention = make_attention("additive", DIM, DIM - 2, 5).double()
    assert type(attention) is BahdanauAttention
    assert set(attention.state_dict()) == {"W_s.weight", "W_h.weight", "v.weight"}
    state, outputs, mask = inputs(decoder_dim=DIM - 2)
    context, weights = attention(state, outputs, mask)
    one = additive_attention(state[0].numpy(), outputs[0].numpy(),
                             attention.W_s.weight.detach().numpy(),
                             attention.W_h.weight.detach().numpy(),
                             attention.v.weight.detach().numpy()[0])
    assert np.allclose(weights[0].detach().numpy(), one.weights)
    assert np.allclose(context[0].detach().numpy(), one.context)


@pytest.mark.parametrize("score", SCORES)
def test_keys_computed_once_give_the_same_step(score):
    torch.manual_seed(0)
    attention = make_attention(score, DIM, DIM, 5).double()
    state, outputs, mask = inputs()
    keys = attention.project_keys(outputs)
    assert keys.shape == (BATCH, SRC, attention.key_dim)
    for a, b in zip(attention(state, outputs, mask), attention(state, outputs, mask, keys)):
        assert torch.allclose(a, b)
    assert isinstance(attention, Attention)
    with pytest.raises(ValueError, match="keys must be"):
        attention(state, outputs, mask, keys[..., :2])


def test_general_computes_w_h_once_per_sentence_not_per_step():
    attention = GeneralAttention(DIM + 2, DIM).double()
    state, outputs, mask = inputs(encoder_dim=DIM + 2)
    keys = attention.project_keys(outputs)
    assert torch.allclose(keys, outputs @ attention.W.weight.T)
    calls = []
    attention.W.register_forward_hook(lambda *args: calls.append(1))
    for _ in range(4):  # four decoder steps
        attention.attend(state, outputs, keys, mask)
    assert calls == []  # the steps never touch W


def test_dimension_rules_are_stated_and_checked():
    with pytest.raises(ValueError, match="decoder_dim must equal encoder_dim; got 4 and 8"):
        DotAttention(8, 4)
    with pytest.raises(ValueError, match="give the decoder a state of 2h, or use 'general'"):
        make_attention("scaled_dot", 8, 4)
    assert GeneralAttention(8, 4).key_dim == 4  # general maps between any two sizes
    with pytest.raises(ValueError, match="score must be one of"):
        make_attention("cosine", 8, 8)
    with pytest.raises(ValueError, match="needs attention_dim"):
        make_attention("additive", 8, 8)
    with pytest.raises(ValueError, match="encoder_dim must be a positive int"):
        GeneralAttention(0, 4)
    state, outputs, mask = inputs()
    with pytest.raises(ValueError, match="decoder_state must be"):
        DotAttention(DIM, DIM)(state[:, :3], outputs, mask)


def test_dot_products_grow_with_the_dimension_and_scaling_undoes_it():
    # the next day's argument: for unit-variance coordinates s^T h has variance d
    generator = torch.Generator().manual_seed(0)
    spread = {}
    for d in (16, 256):
        s = torch.randn(2000, d, generator=generator)
        h = torch.randn(2000, d, generator=generator)
        dot = (s * h).sum(-1)
        spread[d] = (dot.std().item(), (dot / math.sqrt(d)).std().item())
    assert spread[256][0] > 3 * spread[16][0]  # sqrt(256 / 16) = 4 times wider
    assert all(abs(scaled - 1) < 0.1 for _, scaled in spread.values())
