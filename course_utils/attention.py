"""Additive (Bahdanau) attention: a NumPy reference and a PyTorch module.

Taught in notebook 1, sections 2 to 4 (the NumPy reference, worked by hand: energies, weights,
context), and notebook 2, sections 3 to 6 (the PyTorch module the student writes and checks
against it: padding masks, the keys computed once).

Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly Learning to Align
and Translate" (ICLR 2015, arXiv:1409.0473), section 3.1 and appendix A.1.2.
For decoder step i and source position j:

    e_ij     = v^T tanh(W_s s_{i-1} + W_h h_j)        energies
    alpha_ij = exp(e_ij) / sum_k exp(e_ik)              weights
    c_i      = sum_j alpha_ij h_j                       context

``s_{i-1}`` is the previous decoder state (the *query*), ``h_j`` the encoder
outputs, ``W_h h_j`` the *keys*. The paper calls ``W_s`` and ``W_h`` "W_a" and
"U_a"; the course uses names that say which state each matrix projects.

The NumPy function :func:`additive_attention` handles one decoder state and is the
oracle the tests compare everything else against. :class:`BahdanauAttention` is the
batched PyTorch module the models use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = [
    "Attention",
    "AttentionResult",
    "BahdanauAttention",
    "additive_attention",
    "check_mask",
    "entropy",
    "softmax",
    "zero_padding",
]


# --------------------------------------------------------------------------- NumPy


def softmax(energies: np.ndarray, temperature: float = 1.0, axis: int = -1) -> np.ndarray:
    """Softmax of ``energies / temperature`` along ``axis``.

    The maximum is subtracted first: softmax is unchanged by adding a constant to every
    energy, and the shift keeps ``exp`` from overflowing on large energies.
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0; got {temperature}")
    scaled = np.asarray(energies, dtype=float) / temperature
    shifted = scaled - scaled.max(axis=axis, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=axis, keepdims=True)


def entropy(weights: np.ndarray, axis: int = -1) -> np.ndarray:
    """Entropy ``-sum_j alpha_j log alpha_j`` in nats (with ``0 log 0 = 0``).

    0 for attention on a single position; ``log(src_len)`` for uniform attention.
    """
    weights = np.asarray(weights, dtype=float)
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative (a probability distribution)")
    logs = np.log(np.where(weights > 0, weights, 1.0))
    return -(weights * logs).sum(axis=axis)


@dataclass(frozen=True)
class AttentionResult:
    """Every intermediate of one attention step, named as in the lesson."""

    query: np.ndarray  # W_s s_{i-1}                 (attn_dim,)
    keys: np.ndarray  # W_h h_j for every j           (src_len, attn_dim)
    energies: np.ndarray  # e_ij                      (src_len,)
    weights: np.ndarray  # alpha_ij                   (src_len,)
    context: np.ndarray  # c_i                        (enc_dim,)


def _shape_error(name: str, expected: str, given: tuple[int, ...]) -> ValueError:
    return ValueError(f"{name} must be {expected}; got {tuple(given)}")


def additive_attention(
    decoder_state: np.ndarray,
    encoder_outputs: np.ndarray,
    W_s: np.ndarray,
    W_h: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None = None,
) -> AttentionResult:
    """Additive attention for one decoder state, in plain NumPy.

    Args:
        decoder_state: ``s_{i-1}``, shape ``(dec_dim,)``.
        encoder_outputs: ``h_1 .. h_T`` as rows, shape ``(src_len, enc_dim)``.
        W_s: projects the decoder state, shape ``(attn_dim, dec_dim)``.
        W_h: projects each encoder output, shape ``(attn_dim, enc_dim)``.
        v: reduces the alignment space to one energy, shape ``(attn_dim,)``.
        mask: optional, shape ``(src_len,)``, ``True`` for real tokens; padding gets weight 0.

    Returns:
        :class:`AttentionResult` with query, keys, energies, weights and context.
    """
    s = np.asarray(decoder_state, dtype=float)
    H = np.asarray(encoder_outputs, dtype=float)
    W_s, W_h, v = (np.asarray(a, dtype=float) for a in (W_s, W_h, v))
    if s.ndim != 1:
        raise _shape_error("decoder_state", "(dec_dim,)", s.shape)
    if H.ndim != 2 or H.shape[0] == 0:
        raise _shape_error("encoder_outputs", "(src_len, enc_dim) with src_len >= 1", H.shape)
    if v.ndim != 1:
        raise _shape_error("v", "(attn_dim,)", v.shape)
    attn_dim = v.shape[0]
    if W_s.shape != (attn_dim, s.shape[0]):
        raise _shape_error("W_s", f"(attn_dim, dec_dim) = {(attn_dim, s.shape[0])}", W_s.shape)
    if W_h.shape != (attn_dim, H.shape[1]):
        raise _shape_error("W_h", f"(attn_dim, enc_dim) = {(attn_dim, H.shape[1])}", W_h.shape)

    query = W_s @ s  # (attn_dim,)
    keys = H @ W_h.T  # (src_len, attn_dim)
    energies = np.tanh(query + keys) @ v  # (src_len,)
    if mask is None:
        weights = softmax(energies)  # (src_len,)
    else:
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != energies.shape:
            raise _shape_error("mask", f"(src_len,) = {energies.shape}", mask.shape)
        if not mask.any():
            raise ValueError("mask hides every source position: nothing to attend to")
        weights = np.zeros_like(energies)
        weights[mask] = softmax(energies[mask])
    context = weights @ H  # (enc_dim,)
    return AttentionResult(query, keys, energies, weights, context)


# ------------------------------------------------------------------------- PyTorch


def check_mask(mask: torch.Tensor, batch: int, src_len: int) -> None:
    """Raise ValueError unless ``mask`` is bool ``(batch, src_len)``, a real token per row.

    :meth:`Attention.forward` checks its mask with it at every call; a decoder checks the
    batch's mask once, before its first step, and then calls :meth:`Attention.attend`.
    """
    if mask.shape != (batch, src_len) or mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a bool tensor of shape (batch, src_len) = {(batch, src_len)}; "
            f"got {mask.dtype} {tuple(mask.shape)}"
        )
    empty = ~mask.any(dim=1)
    if empty.any():
        rows = empty.nonzero().flatten().tolist()
        raise ValueError(f"mask hides every source position in batch rows {rows}")


def zero_padding(encoder_outputs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``encoder_outputs`` with the masked (padded) positions set to 0.

    A weight of exactly 0 times a NaN or inf is still NaN, so padding must hold finite
    values for the context to stay finite; a decoder calls this once per batch.
    """
    return encoder_outputs.masked_fill(~mask.unsqueeze(-1), 0.0)  # (batch, src_len, enc)


class Attention(nn.Module):
    """What every score function shares: checks, masking, softmax and the context.

    A subclass defines how the source is turned into keys once per batch
    (:meth:`project_keys`, ``(batch, src_len, key_dim)``) and how a decoder state scores them
    (:meth:`energies`, ``(batch, src_len)``); everything after the energies is the same for
    additive (Bahdanau), dot, general and scaled dot-product attention:
    ``alpha = softmax(e)`` over the real source positions, ``c = sum_j alpha_j h_j``.
    """

    encoder_dim: int
    decoder_dim: int
    key_dim: int  # the last dimension of the keys

    def _check_encoder_outputs(self, encoder_outputs: torch.Tensor) -> None:
        if encoder_outputs.dim() != 3 or encoder_outputs.shape[-1] != self.encoder_dim:
            raise _shape_error(
                "encoder_outputs",
                f"(batch, src_len, encoder_dim={self.encoder_dim})",
                tuple(encoder_outputs.shape),
            )
        if encoder_outputs.shape[1] == 0:
            raise ValueError("encoder_outputs has src_len 0: nothing to attend to")

    def project_keys(self, encoder_outputs: torch.Tensor) -> torch.Tensor:
        """The keys of every source position, computed once per batch."""
        raise NotImplementedError

    def energies(self, decoder_state: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """One energy per source position: ``(batch, src_len)``."""
        raise NotImplementedError

    def forward(
        self,
        decoder_state: torch.Tensor,
        encoder_outputs: torch.Tensor,
        mask: torch.Tensor | None = None,
        keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One attention step for a batch.

        Args:
            decoder_state: ``(batch, decoder_dim)``.
            encoder_outputs: ``(batch, src_len, encoder_dim)``.
            mask: optional bool ``(batch, src_len)``, ``True`` for real tokens. Masked
                positions get weight exactly 0; a row with no real token is an error.
            keys: optional ``project_keys(encoder_outputs)``, reused across decoder steps.

        Returns:
            ``(context, weights)``: ``(batch, encoder_dim)`` and ``(batch, src_len)``.
        """
        self._check_encoder_outputs(encoder_outputs)
        batch, src_len, _ = encoder_outputs.shape
        if decoder_state.shape != (batch, self.decoder_dim):
            raise _shape_error(
                "decoder_state",
                f"(batch, decoder_dim) = {(batch, self.decoder_dim)}",
                tuple(decoder_state.shape),
            )
        if mask is not None:
            check_mask(mask, batch, src_len)
            # padding contributes nothing, even if the encoder left NaN or inf there
            encoder_outputs = zero_padding(encoder_outputs, mask)
        if keys is None:
            keys = self.project_keys(encoder_outputs)  # (batch, src_len, key_dim)
        elif keys.shape != (batch, src_len, self.key_dim):
            raise _shape_error(
                "keys",
                f"(batch, src_len, key_dim) = {(batch, src_len, self.key_dim)}",
                tuple(keys.shape),
            )
        return self.attend(decoder_state, encoder_outputs, keys, mask)

    def attend(
        self,
        decoder_state: torch.Tensor,
        encoder_outputs: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The computation of :meth:`forward` without its checks, for a decoder's inner loop.

        The caller validates shapes and the mask once per batch (:func:`check_mask`) and zeroes
        the padded encoder outputs (:func:`zero_padding`); checking the mask at every step would
        make the GPU wait for the CPU at every step.
        """
        energies = self.energies(decoder_state, keys)  # (batch, src_len)
        if mask is not None:
            energies = energies.masked_fill(~mask, float("-inf"))  # exp(-inf) = 0 exactly
        weights = torch.softmax(energies, dim=-1)  # (batch, src_len)
        context = torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1)  # (batch, enc_dim)
        return context, weights


class BahdanauAttention(Attention):
    """Additive attention over a batch of padded source sentences (batch-first).

    ``forward(decoder_state, encoder_outputs)`` returns ``(context, weights)``:

    - ``decoder_state``: ``s_{i-1}``, shape ``(batch, decoder_dim)``
    - ``encoder_outputs``: ``h``, shape ``(batch, src_len, encoder_dim)``
    - ``context``: ``c_i``, shape ``(batch, encoder_dim)``
    - ``weights``: ``alpha_i``, shape ``(batch, src_len)``, each row sums to 1

    The keys ``W_h h`` do not depend on the decoder step. A decoder computes them once
    per batch with :meth:`project_keys` and passes them to every step as ``keys=``;
    nothing is cached inside the module.
    """

    def __init__(self, encoder_dim: int, decoder_dim: int, attention_dim: int) -> None:
        super().__init__()
        for name, dim in (
            ("encoder_dim", encoder_dim),
            ("decoder_dim", decoder_dim),
            ("attention_dim", attention_dim),
        ):
            if not isinstance(dim, int) or dim < 1:
                raise ValueError(f"{name} must be a positive int; got {dim!r}")
        self.encoder_dim = encoder_dim
        self.decoder_dim = decoder_dim
        self.attention_dim = attention_dim
        self.key_dim = attention_dim
        # No biases, as in the paper's alignment model.
        self.W_s = nn.Linear(decoder_dim, attention_dim, bias=False)
        self.W_h = nn.Linear(encoder_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    def extra_repr(self) -> str:
        return (
            f"encoder_dim={self.encoder_dim}, decoder_dim={self.decoder_dim}, "
            f"attention_dim={self.attention_dim}"
        )

    def project_keys(self, encoder_outputs: torch.Tensor) -> torch.Tensor:
        """Keys ``W_h h_j`` for every source position: ``(batch, src_len, attention_dim)``."""
        self._check_encoder_outputs(encoder_outputs)
        return self.W_h(encoder_outputs)

    def energies(self, decoder_state: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """``e = v^T tanh(W_s s + keys)``: ``(batch, src_len)``."""
        query = self.W_s(decoder_state).unsqueeze(1)  # (batch, 1, attn_dim)
        return self.v(torch.tanh(query + keys)).squeeze(-1)  # (batch, src_len)
