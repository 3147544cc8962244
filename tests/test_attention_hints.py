"""The known wrong formulas of the additive step: each differs from the right one, and a
student who writes it is told which mistake it is."""

import torch
from torch import nn

from course_utils.attention import BahdanauAttention
from course_utils.checks.attention_hints import (
    KEYS_RECOMPUTED,
    MASK_AFTER_SOFTMAX,
    MASK_MISSING,
    NO_SOFTMAX,
    NOT_NORMALISED,
    QUERY_AFTER_UPDATE,
    SINGLETON_AXIS,
    SWAPPED_INPUT,
    WRONG_AXIS,
    additive_attention,
    attention_mistakes,
    step_mistakes,
)
from course_utils.checks.hints import named_mistake


def same(a, b) -> bool:
    return all(x.shape == y.shape and torch.allclose(x, y, atol=1e-6, equal_nan=True)
               for x, y in zip(a, b))


def inputs(seed=0):
    torch.manual_seed(seed)
    attention = BahdanauAttention(encoder_dim=6, decoder_dim=5, attention_dim=4)
    outputs = torch.randn(3, 7, 6)
    mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 2])[:, None]
    outputs = outputs.masked_fill(~mask.unsqueeze(-1), 0.0)
    return attention, torch.randn(3, 5), outputs, mask


def test_the_right_step_equals_the_library_module():
    attention, query, outputs, mask = inputs()
    got = additive_attention(attention.W_s, attention.W_h, attention.v, query, outputs, mask)
    assert same(got, attention(query, outputs, mask))
    weights_only = additive_attention(attention.W_s.weight, attention.W_h.weight,
                                      attention.v.weight, query, outputs, mask)
    assert same(weights_only, got)


def test_no_mistake_equals_the_right_answer():
    attention, query, outputs, mask = inputs()
    right = attention(query, outputs, mask)
    for wrong, hint in attention_mistakes(attention.W_s, attention.W_h, attention.v, query,
                                          outputs, mask):
        assert wrong is None or not same(wrong, right), hint


def mistaken(kind):
    """A student's attention step with one mistake."""
    def attend(attention, query, outputs, mask):
        keys = attention.W_h(outputs)
        energies = attention.v(torch.tanh(attention.W_s(query).unsqueeze(1) + keys))
        if kind == "singleton axis":
            weights = torch.softmax(energies.masked_fill(~mask.unsqueeze(-1), -1e9), -1)
            weights = weights.squeeze(-1)
        else:
            energies = energies.squeeze(-1)
            if kind == "mask after softmax":
                weights = torch.softmax(energies, -1) * mask
            elif kind == "no mask":
                weights = torch.softmax(energies, -1)
            elif kind == "wrong axis":
                weights = torch.softmax(energies.masked_fill(~mask, float("-inf")), 0)
            elif kind == "energies":
                weights = energies.masked_fill(~mask, 0.0)
            elif kind == "exp":
                weights = torch.exp(energies) * mask
        return torch.bmm(weights.unsqueeze(1), outputs).squeeze(1), weights
    return attend


def test_each_mistake_is_named():
    attention, query, outputs, mask = inputs()
    for kind, hint in [("mask after softmax", MASK_AFTER_SOFTMAX), ("no mask", MASK_MISSING),
                       ("wrong axis", WRONG_AXIS), ("singleton axis", SINGLETON_AXIS),
                       ("energies", NO_SOFTMAX), ("exp", NOT_NORMALISED)]:
        with torch.no_grad():
            got = mistaken(kind)(attention, query, outputs, mask)
        mistakes = attention_mistakes(attention.W_s, attention.W_h, attention.v, query,
                                      outputs, mask)
        assert named_mistake(got, mistakes, same) == hint, kind


def test_step_mistakes_are_named():
    attention, state, outputs, mask = inputs()
    cell = nn.GRUCell(3 + 6, 5)
    embedded = torch.randn(3, 3)
    keys = attention.W_h(outputs).detach() + 0.5  # not W_h h: recomputing them shows
    with torch.no_grad():
        context, _ = attention.attend(state, outputs, keys, mask)
        new = cell(torch.cat([embedded, context], -1), state)
        swapped = cell(torch.cat([context, embedded], -1), state)
        recomputed, _ = attention.attend(state, outputs, attention.W_h(outputs), mask)
        late, _ = attention.attend(new, outputs, keys, mask)
    cases = [((swapped, context), SWAPPED_INPUT),
             ((cell(torch.cat([embedded, recomputed], -1), state).detach(), recomputed),
              KEYS_RECOMPUTED)]
    for got, hint in cases:
        found = named_mistake(got, step_mistakes(cell, attention, embedded, state, outputs,
                                                 keys, mask), same)
        assert found == hint
    found = named_mistake((new, late), step_mistakes(cell, attention, embedded, state, outputs,
                                                     keys, mask), same)
    assert found is not None and "s_(i-1)" in found
    assert QUERY_AFTER_UPDATE  # named for the checks that attend twice
