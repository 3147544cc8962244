"""The NumPy reference states the lesson's formulas; E10.1 is checked against closed forms."""

import numpy as np
import pytest

from course_utils.attention import additive_attention, entropy, softmax
from course_utils.checks.e10_1 import INPUTS


def e10_1():
    """E10.1's inputs are a batch of one sentence; the reference takes that sentence."""
    return additive_attention(
        INPUTS["decoder_states"][0], INPUTS["encoder_states"][0], INPUTS["W_s"], INPUTS["W_h"],
        INPUTS["v"],
    )


def random_case(seed=0, dec_dim=3, enc_dim=5, attn_dim=4, src_len=6):
    rng = np.random.default_rng(seed)
    return dict(
        decoder_state=rng.normal(size=dec_dim),
        encoder_outputs=rng.normal(size=(src_len, enc_dim)),
        W_s=rng.normal(size=(attn_dim, dec_dim)),
        W_h=rng.normal(size=(attn_dim, enc_dim)),
        v=rng.normal(size=attn_dim),
    )


def test_e10_1_energies_match_the_hand_calculation():
    # W_s s0 = [0.5, 0.5]; h1 and h2 add 1 to one coordinate, h3 to both.
    expected = [np.tanh(1.5) + np.tanh(0.5), np.tanh(0.5) + np.tanh(1.5), 2 * np.tanh(1.5)]
    np.testing.assert_allclose(e10_1().energies, expected, atol=1e-12)


def test_e10_1_h3_gets_the_most_attention():
    result = e10_1()
    assert np.argmax(result.weights) == 2
    assert result.weights[0] == pytest.approx(result.weights[1])  # h1 and h2 tie by symmetry


def test_e10_1_context_is_the_weighted_sum():
    result = e10_1()
    a1, a2, a3 = result.weights
    np.testing.assert_allclose(result.context, [a1 + a3, a2 + a3], atol=1e-12)


def test_weights_sum_to_one_and_are_positive():
    result = additive_attention(**random_case())
    assert result.weights.sum() == pytest.approx(1.0)
    assert np.all(result.weights > 0)


def test_context_is_a_convex_combination():
    case = random_case(seed=3)
    result = additive_attention(**case)
    H = case["encoder_outputs"]
    assert np.all(result.context <= H.max(axis=0) + 1e-12)
    assert np.all(result.context >= H.min(axis=0) - 1e-12)


def test_masked_positions_get_zero_weight():
    case = random_case(seed=1)
    mask = np.array([True, True, True, False, False, True])
    result = additive_attention(**case, mask=mask)
    assert np.all(result.weights[~mask] == 0.0)
    assert result.weights.sum() == pytest.approx(1.0)


def test_mask_hiding_everything_is_an_error():
    with pytest.raises(ValueError, match="every source position"):
        additive_attention(**random_case(), mask=np.zeros(6, dtype=bool))


def test_softmax_is_shift_invariant_and_does_not_overflow():
    energies = np.array([0.3, -1.2, 2.5])
    np.testing.assert_allclose(softmax(energies), softmax(energies + 1000.0))
    assert np.all(np.isfinite(softmax(np.array([1000.0, 1001.0]))))


def test_low_temperature_sharpens_and_high_temperature_flattens():
    energies = np.array([0.8, 2.8, 1.5, 0.3])
    sharp, plain, flat = (softmax(energies, temperature=t) for t in (0.3, 1.0, 3.0))
    assert sharp.max() > plain.max() > flat.max()
    assert entropy(sharp) < entropy(plain) < entropy(flat) < np.log(len(energies))


def test_entropy_is_zero_for_one_hot_and_log_n_for_uniform():
    assert entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    assert entropy(np.full(5, 0.2)) == pytest.approx(np.log(5))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(decoder_state=np.zeros((3, 1))), r"decoder_state must be \(dec_dim,\); got \(3, 1\)"),
        (dict(encoder_outputs=np.zeros(5)), r"encoder_outputs must be \(src_len, enc_dim\)"),
        (dict(W_s=np.zeros((4, 4))), r"W_s must be \(attn_dim, dec_dim\) = \(4, 3\); got \(4, 4\)"),
        (dict(W_h=np.zeros((3, 5))), r"W_h must be \(attn_dim, enc_dim\) = \(4, 5\); got \(3, 5\)"),
        (dict(v=np.zeros((4, 1))), r"v must be \(attn_dim,\); got \(4, 1\)"),
    ],
)
def test_bad_shapes_name_expected_and_given(change, message):
    with pytest.raises(ValueError, match=message):
        additive_attention(**{**random_case(), **change})


def test_softmax_rejects_non_positive_temperature():
    with pytest.raises(ValueError, match="temperature must be > 0"):
        softmax(np.array([1.0, 2.0]), temperature=0)
