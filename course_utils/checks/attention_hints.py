"""The wrong formulas students write for Bahdanau attention, each with the hint that names it.

A check that finds a student's attention wrong computes, on the same inputs, what each known
mistake would have given, and names the mistake whose result the student's equals (see
:func:`course_utils.checks.hints.named_mistake`). The mistakes live here, in one place, for
every check of the additive step: the in-notebook checks of notebooks 2 and 3 (which E10.2
runs again on the attention model the student pastes in).

Two plain functions, on torch tensors, for a batch (batch-first, as everywhere in the course):

- :func:`attention_mistakes` yields ``((context, weights), hint)`` for one attention step
  (the energies ``e_ij = v^T tanh(W_s s_{i-1} + W_h h_j)``, the masked softmax, the context);
- :func:`step_mistakes` yields ``((state, context), hint)`` for one decoder step (attend with
  ``s_{i-1}``, then ``s_i = GRU(s_{i-1}, [E y_{i-1}; c_i])``).

:func:`additive_attention` is the right step, written out here so that a check can compare
with it, or stand it in for a student's attention, without calling the library's module.

``W_s``, ``W_h`` and ``v`` may be ``nn.Linear`` layers (as in
:class:`course_utils.attention.BahdanauAttention`) or their weight matrices, ``(out, in)``
like ``nn.Linear.weight``. The hints speak to the student: they name the mistake and the
direction of the fix, never the code. A wrong result of ``None`` means that mistake cannot be
told apart on these inputs (the caller skips it); everything is computed without gradients.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["additive_attention", "attention_mistakes", "step_mistakes"]

Pair = tuple[torch.Tensor, torch.Tensor]

QUERY_AFTER_UPDATE = (
    "you attend with the new state s_i: Bahdanau's decoder attends with the previous state "
    "s_(i-1) (the state the step was given), and only then updates the state from the context")
MASK_AFTER_SOFTMAX = (
    "the mask is applied after the softmax: the real positions' weights then no longer sum to "
    "1. Hide the padded positions in the energies, before the softmax, so that they get weight "
    "exactly 0 and the rest still sum to 1")
MASK_MISSING = (
    "padded positions get attention weight: apply the mask (True at real tokens) to the "
    "energies before the softmax, so that padding gets weight exactly 0")
MASK_WITH_ZERO = (
    "the padded energies are set to 0 before the softmax, but exp(0) = 1 still gives padding "
    "weight: give them an energy that the softmax turns into exactly 0 (minus infinity)")
WRONG_AXIS = (
    "the softmax runs over the wrong axis (over the sentences of the batch?): each sentence's "
    "weights must sum to 1 over its source positions, the last axis of the (batch, src_len) "
    "energies")
SINGLETON_AXIS = (
    "every weight is 1: the softmax ran over an axis of size 1. `v` gives energies of shape "
    "(batch, src_len, 1): drop that last axis, then take the softmax over the source positions")
NO_SOFTMAX = (
    "the weights are the raw energies: they can be negative and do not sum to 1, so the "
    "context is not a weighted average of the encoder outputs. Turn the energies into weights "
    "with a (masked) softmax")
NOT_NORMALISED = (
    "the weights are exp(energies) without dividing by their sum: the context must be a convex "
    "combination of the encoder outputs (weights >= 0 that sum to 1 over the real positions)")
NO_TANH = (
    "the energies miss the tanh: e_ij = v^T tanh(W_s s_(i-1) + W_h h_j), the nonlinearity "
    "between the sum of the two projections and v")
CONTEXT_FROM_KEYS = (
    "the context averages the keys W_h h_j: it is the weighted sum of the encoder outputs h_j "
    "themselves")
KEYS_RECOMPUTED = (
    "your step computes the keys W_h h_j again: they do not depend on the decoder step, so "
    "`prepare` computes them once per batch and every step reads them from `memory.keys`")
SWAPPED_INPUT = (
    "wrong concatenation order: the GRU cell's weights read [E y_(i-1); c_i], the embedded "
    "previous word first, then the context")
STATE_UNCHANGED = (
    "the state never changes: the GRU cell's output is the new state s_i that the step returns")
CONTEXT_OF_NEW_STATE = (
    "the state is right, but the context you return was computed from the new state s_i: "
    "return the context c_i that went into the GRU cell, computed from s_(i-1)")


def _apply(weight: nn.Module | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``W x`` for an ``nn.Linear`` or its ``(out, in)`` weight matrix, on the last axis."""
    if isinstance(weight, torch.Tensor):
        return x @ weight.T
    return weight(x)


def _energies(W_s, W_h, v, query: torch.Tensor, keys: torch.Tensor,
              tanh: bool = True) -> torch.Tensor:
    """``v^T tanh(W_s s + keys)``: ``(batch, src_len)``."""
    summed = _apply(W_s, query).unsqueeze(1) + keys  # (batch, src_len, attn_dim)
    return _apply(v, torch.tanh(summed) if tanh else summed).squeeze(-1)  # (batch, src_len)


def _context(weights: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return torch.bmm(weights.unsqueeze(1), values).squeeze(1)  # (batch, dim)


def _masked_softmax(energies: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is not None:
        energies = energies.masked_fill(~mask, float("-inf"))  # exp(-inf) = 0 exactly
    return torch.softmax(energies, dim=-1)  # (batch, src_len)


def additive_attention(W_s, W_h, v, query: torch.Tensor, encoder_outputs: torch.Tensor,
                       mask: torch.Tensor | None = None,
                       keys: torch.Tensor | None = None) -> Pair:
    """The right step: ``(context (batch, encoder_dim), weights (batch, src_len))``.

    Args:
        W_s, W_h, v: the three projections (layers or weight matrices).
        query: ``s_{i-1}``, ``(batch, decoder_dim)``.
        encoder_outputs: ``h``, ``(batch, src_len, encoder_dim)``, zeros at padding.
        mask: optional bool ``(batch, src_len)``, True at real tokens.
        keys: optional ``W_h h``, ``(batch, src_len, attention_dim)``; computed if not given.
    """
    with torch.no_grad():
        if keys is None:
            keys = _apply(W_h, encoder_outputs)  # (batch, src_len, attn_dim)
        weights = _masked_softmax(_energies(W_s, W_h, v, query, keys), mask)
        return _context(weights, encoder_outputs), weights


@torch.no_grad()  # per next(): a `with` block would outlive a yield and leak no_grad
def attention_mistakes(W_s, W_h, v, query: torch.Tensor, encoder_outputs: torch.Tensor,
                       mask: torch.Tensor | None = None,
                       ) -> Iterator[tuple[Pair | None, str]]:
    """``((context, weights), hint)`` for each known mistake of one attention step.

    Same arguments as :func:`additive_attention`. Compare a student's ``(context, weights)``
    with each wrong pair (e.g. with :func:`course_utils.checks.hints.raise_named`); the
    mistakes are computed lazily, one at a time. Those about the mask need a ``mask`` that
    hides at least one position. A softmax over the wrong axis gives NaN where a column of the
    batch is all padding: compare with NaN equal to NaN.
    """
    keys = _apply(W_h, encoder_outputs)  # (batch, src_len, attn_dim)
    energies = _energies(W_s, W_h, v, query, keys)  # (batch, src_len)
    masks = mask is not None and not bool(mask.all())
    real = mask.float() if mask is not None else torch.ones_like(energies)

    def pair(weights: torch.Tensor, values: torch.Tensor = encoder_outputs) -> Pair:
        return _context(weights, values), weights

    if masks:
        assert mask is not None
        yield pair(torch.softmax(energies, -1) * real), MASK_AFTER_SOFTMAX
        yield pair(torch.softmax(energies, -1)), MASK_MISSING
        yield pair(torch.softmax(energies.masked_fill(~mask, 0.0), -1)), MASK_WITH_ZERO
    if energies.shape[0] > 1:  # over the batch: each position's weights sum to 1
        hidden = energies if mask is None else energies.masked_fill(~mask, float("-inf"))
        yield pair(torch.softmax(hidden, dim=0)), WRONG_AXIS
        if masks:
            yield pair(torch.softmax(energies, dim=0) * real), WRONG_AXIS
            yield pair(torch.softmax(energies, dim=0)), WRONG_AXIS
    yield pair(real.clone()), SINGLETON_AXIS
    yield pair(torch.ones_like(energies)), SINGLETON_AXIS
    yield pair(energies * real), NO_SOFTMAX
    yield pair(energies), NO_SOFTMAX
    yield pair(torch.exp(energies) * real), NOT_NORMALISED
    yield pair(torch.exp(energies)), NOT_NORMALISED
    yield pair(_masked_softmax(_energies(W_s, W_h, v, query, keys, tanh=False), mask)), \
        NO_TANH
    right = _masked_softmax(energies, mask)
    yield (pair(right, keys) if keys.shape == encoder_outputs.shape else None), \
        CONTEXT_FROM_KEYS


@torch.no_grad()  # per next(): a `with` block would outlive a yield and leak no_grad
def step_mistakes(cell: nn.GRUCell, attention: nn.Module, embedded: torch.Tensor,
                  state: torch.Tensor, encoder_outputs: torch.Tensor, keys: torch.Tensor,
                  mask: torch.Tensor | None = None) -> Iterator[tuple[Pair | None, str]]:
    """``((state, context), hint)`` for each known mistake of one Bahdanau decoder step.

    Args:
        cell: the decoder's ``nn.GRUCell``, input ``[embedded; context]``.
        attention: a module holding ``W_s``, ``W_h`` and ``v`` (the student's or the
            library's: only those three are read; its methods are never called).
        embedded: ``E y_{i-1}``, ``(batch, embed_dim)``.
        state: ``s_{i-1}``, ``(batch, hidden_dim)``.
        encoder_outputs: ``(batch, src_len, encoder_dim)``, zeros at padding.
        keys: what the step finds in ``memory.keys``. To tell "keys recomputed at every
            step" apart, hand the step keys that differ from ``W_h h`` (e.g. ``W_h h`` plus
            noise) and pass the same keys here: the right step uses them as given.
        mask: bool ``(batch, src_len)``, True at real tokens.
    """
    W_s, W_h, v = attention.W_s, attention.W_h, attention.v

    def attend(query: torch.Tensor, with_keys: torch.Tensor | None = keys) -> torch.Tensor:
        return additive_attention(W_s, W_h, v, query, encoder_outputs, mask, with_keys)[0]

    context = attend(state)  # c_i from s_(i-1)
    new_state = cell(torch.cat([embedded, context], -1), state)  # s_i
    # attending after the update: the context that goes in comes from a first update
    first = cell(torch.cat([embedded, torch.zeros_like(context)], -1), state)
    late = attend(first)
    yield (cell(torch.cat([embedded, late], -1), state), late), QUERY_AFTER_UPDATE
    yield (first, attend(first)), QUERY_AFTER_UPDATE
    yield (new_state, attend(new_state)), CONTEXT_OF_NEW_STATE
    yield (cell(torch.cat([context, embedded], -1), state), context), SWAPPED_INPUT
    own_keys = _apply(W_h, encoder_outputs)
    if not torch.allclose(own_keys, keys):
        again = attend(state, own_keys)
        yield (cell(torch.cat([embedded, again], -1), state), again), KEYS_RECOMPUTED
    yield (state, context), STATE_UNCHANGED
