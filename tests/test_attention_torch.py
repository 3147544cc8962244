"""BahdanauAttention equals the NumPy reference and keeps the lesson's promises."""

import numpy as np
import pytest
import torch

from course_utils.attention import BahdanauAttention, additive_attention

BATCH, SRC_LEN, ENC, DEC, ATT = 4, 7, 6, 5, 3


@pytest.fixture
def module():
    torch.manual_seed(0)
    return BahdanauAttention(encoder_dim=ENC, decoder_dim=DEC, attention_dim=ATT).double()


@pytest.fixture
def inputs():
    generator = torch.Generator().manual_seed(1)
    decoder_state = torch.randn(BATCH, DEC, generator=generator, dtype=torch.float64)
    encoder_outputs = torch.randn(BATCH, SRC_LEN, ENC, generator=generator, dtype=torch.float64)
    return decoder_state, encoder_outputs


def reference(module, decoder_state, encoder_outputs, mask=None):
    weights = dict(
        W_s=module.W_s.weight.detach().numpy(),
        W_h=module.W_h.weight.detach().numpy(),
        v=module.v.weight.detach().numpy()[0],
    )
    return [
        additive_attention(
            decoder_state[b].numpy(), encoder_outputs[b].numpy(), **weights,
            mask=None if mask is None else mask[b].numpy(),
        )
        for b in range(decoder_state.shape[0])
    ]


def test_matches_numpy_reference(module, inputs):
    context, weights = module(*inputs)
    for b, expected in enumerate(reference(module, *inputs)):
        np.testing.assert_allclose(weights[b].detach().numpy(), expected.weights, atol=1e-6)
        np.testing.assert_allclose(context[b].detach().numpy(), expected.context, atol=1e-6)


def test_matches_numpy_reference_in_float32(inputs):
    torch.manual_seed(0)
    module = BahdanauAttention(ENC, DEC, ATT)
    decoder_state, encoder_outputs = (x.float() for x in inputs)
    context, weights = module(decoder_state, encoder_outputs)
    for b, expected in enumerate(reference(module, decoder_state, encoder_outputs)):
        np.testing.assert_allclose(weights[b].detach().numpy(), expected.weights, atol=1e-6)
        np.testing.assert_allclose(context[b].detach().numpy(), expected.context, atol=1e-6)


def test_output_shapes(module, inputs):
    context, weights = module(*inputs)
    assert context.shape == (BATCH, ENC)
    assert weights.shape == (BATCH, SRC_LEN)


def test_weights_sum_to_one(module, inputs):
    _, weights = module(*inputs)
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(BATCH, dtype=torch.float64))


def padding_mask():
    lengths = torch.tensor([7, 5, 3, 1])
    return torch.arange(SRC_LEN)[None, :] < lengths[:, None]  # (batch, src_len)


def test_padding_gets_zero_weight(module, inputs):
    mask = padding_mask()
    _, weights = module(*inputs, mask=mask)
    assert torch.all(weights[~mask] == 0.0)
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(BATCH, dtype=torch.float64))


def test_padding_does_not_change_the_result(module, inputs):
    """A padded sentence gets the same context as the same sentence without padding."""
    decoder_state, encoder_outputs = inputs
    mask = padding_mask()
    context, weights = module(decoder_state, encoder_outputs, mask=mask)
    for b, length in enumerate(mask.sum(dim=1).tolist()):
        alone_context, alone_weights = module(
            decoder_state[b : b + 1], encoder_outputs[b : b + 1, :length]
        )
        torch.testing.assert_close(context[b], alone_context[0])
        torch.testing.assert_close(weights[b, :length], alone_weights[0])


def test_masked_result_matches_numpy_reference(module, inputs):
    mask = padding_mask()
    _, weights = module(*inputs, mask=mask)
    for b, expected in enumerate(reference(module, *inputs, mask=mask)):
        np.testing.assert_allclose(weights[b].detach().numpy(), expected.weights, atol=1e-6)


def test_row_with_every_position_masked_is_an_error_not_nan(module, inputs):
    mask = padding_mask()
    mask[2] = False
    with pytest.raises(ValueError, match=r"every source position in batch rows \[2\]"):
        module(*inputs, mask=mask)


def test_precomputed_keys_give_identical_results(module, inputs):
    decoder_state, encoder_outputs = inputs
    keys = module.project_keys(encoder_outputs)
    assert keys.shape == (BATCH, SRC_LEN, ATT)
    plain = module(decoder_state, encoder_outputs, mask=padding_mask())
    reused = module(decoder_state, encoder_outputs, mask=padding_mask(), keys=keys)
    for a, b in zip(plain, reused):
        assert torch.equal(a, b)


def test_gradients_reach_W_s_W_h_and_v(module, inputs):
    context, _ = module(*inputs)
    context.pow(2).sum().backward()
    for name in ("W_s", "W_h", "v"):
        grad = getattr(module, name).weight.grad
        assert grad is not None and grad.abs().sum() > 0, f"no gradient reached {name}"


def test_gradients_reach_the_encoder_outputs_through_keys(module, inputs):
    decoder_state, encoder_outputs = inputs
    encoder_outputs = encoder_outputs.clone().requires_grad_()
    keys = module.project_keys(encoder_outputs)
    context, _ = module(decoder_state, encoder_outputs, keys=keys)
    context.sum().backward()
    assert encoder_outputs.grad.abs().sum() > 0


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda s, h: (s[:, :-1], h), r"decoder_state must be \(batch, decoder_dim\) = \(4, 5\); got \(4, 4\)"),
        (lambda s, h: (s, h[0]), r"encoder_outputs must be \(batch, src_len, encoder_dim=6\); got \(7, 6\)"),
        (lambda s, h: (s, h[..., :-1]), r"encoder_outputs must be .*encoder_dim=6.*got \(4, 7, 5\)"),
        (lambda s, h: (s[:2], h), r"decoder_state must be \(batch, decoder_dim\) = \(4, 5\); got \(2, 5\)"),
        (lambda s, h: (s, h[:, :0]), r"src_len 0"),
    ],
)
def test_bad_shapes_raise_with_expected_and_given(module, inputs, make, message):
    with pytest.raises(ValueError, match=message):
        module(*make(*inputs))


def test_bad_keys_and_mask_raise(module, inputs):
    decoder_state, encoder_outputs = inputs
    with pytest.raises(ValueError, match=r"keys must be .* = \(4, 7, 3\); got \(4, 7, 6\)"):
        module(decoder_state, encoder_outputs, keys=encoder_outputs)
    with pytest.raises(ValueError, match=r"mask must be a bool tensor of shape .* = \(4, 7\)"):
        module(decoder_state, encoder_outputs, mask=torch.ones(BATCH, SRC_LEN))


def test_bad_dimensions_raise():
    with pytest.raises(ValueError, match="attention_dim must be a positive int; got 0"):
        BahdanauAttention(4, 4, 0)


@pytest.mark.parametrize("poison", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_padding_gets_weight_zero_and_leaves_the_context_finite(module, inputs, poison):
    decoder_state, encoder_outputs = inputs
    mask = torch.ones(BATCH, SRC_LEN, dtype=torch.bool)
    mask[0, 4:] = False
    mask[2, 1:] = False
    clean_context, clean_weights = module(decoder_state, encoder_outputs, mask=mask)
    poisoned = encoder_outputs.clone()
    poisoned[~mask] = poison  # whatever an encoder leaves at padded positions
    context, weights = module(decoder_state, poisoned, mask=mask)
    assert torch.isfinite(context).all() and torch.isfinite(weights).all()
    assert (weights[~mask] == 0).all()
    torch.testing.assert_close(context, clean_context)
    torch.testing.assert_close(weights, clean_weights)
    # precomputed keys that hold the poison give the same answer
    context, _ = module(decoder_state, poisoned, mask=mask, keys=module.W_h(poisoned))
    torch.testing.assert_close(context, clean_context)
