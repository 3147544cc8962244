"""The score functions of the attention literature behind one interface.

Taught in notebook 6, sections 1 and 2 ("Four ways to score a query against a key", "Why dot
products grow with the dimension"), and compared there in sections 5 and 7.

Every module here is an :class:`~course_utils.attention.Attention`: it turns the source into
keys once per batch (:meth:`project_keys`) and scores a decoder state against them
(:meth:`energies`); masking, the softmax and the context are shared, so two models that differ
in their score differ in nothing else. For a decoder state ``s`` (``decoder_dim``) and encoder
outputs ``h_j`` (``encoder_dim``):

==============  =================================  =====================================
score           energy ``e_j``                      keys, computed once per sentence
==============  =================================  =====================================
``additive``    ``v^T tanh(W_s s + W_h h_j)``       ``W_h h_j``  (Bahdanau et al. 2014;
                                                     Luong et al. 2015's "concat")
``dot``         ``s^T h_j``                         ``h_j`` themselves
``general``     ``s^T W h_j``                       ``W h_j``    (Luong et al. 2015)
``scaled_dot``  ``s^T h_j / sqrt(d)``               ``h_j``, ``d = encoder_dim``
                                                     (Vaswani et al. 2017, the next day's)
==============  =================================  =====================================

**Dimensions.** ``additive`` and ``general`` map between any two sizes. ``dot`` and
``scaled_dot`` compare ``s`` with ``h_j`` coordinate by coordinate, so they need
``decoder_dim == encoder_dim``. The course's encoder is bidirectional (``h_j`` has ``2h``
numbers) and its decoder state has ``h``: a model with a dot score must therefore give its
decoder a state of ``2h`` (``ModelConfig(decoder_dim="encoder")``; :class:`DotAttention`
refuses unequal sizes and says so), rather than hide a projection inside "dot", which would make
it "general".
"""

from __future__ import annotations

import math

import torch
from torch import nn

from course_utils.attention import Attention, BahdanauAttention

__all__ = [
    "SCORES",
    "DotAttention",
    "GeneralAttention",
    "ScaledDotAttention",
    "make_attention",
]


def _positive(**dims: int) -> None:
    for name, dim in dims.items():
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"{name} must be a positive int; got {dim!r}")


class DotAttention(Attention):
    """``e_j = s^T h_j``: no parameters; the keys are the encoder outputs."""

    def __init__(self, encoder_dim: int, decoder_dim: int) -> None:
        super().__init__()
        _positive(encoder_dim=encoder_dim, decoder_dim=decoder_dim)
        if encoder_dim != decoder_dim:
            raise ValueError(
                f"a {type(self).__name__} compares the decoder state with each encoder output "
                f"coordinate by coordinate, so decoder_dim must equal encoder_dim; got "
                f"{decoder_dim} and {encoder_dim}. With the course's bidirectional encoder "
                f"(2h), give the decoder a state of 2h, or use 'general', whose W maps "
                f"between the two sizes")
        self.encoder_dim = self.decoder_dim = self.key_dim = encoder_dim

    def extra_repr(self) -> str:
        return f"dim={self.encoder_dim}"

    def project_keys(self, encoder_outputs: torch.Tensor) -> torch.Tensor:
        self._check_encoder_outputs(encoder_outputs)
        return encoder_outputs

    def energies(self, decoder_state: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """``s^T h_j`` for every j, one batched matrix product: ``(batch, src_len)``."""
        return torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)


class ScaledDotAttention(DotAttention):
    """``e_j = s^T h_j / sqrt(d)``: the dot score divided by the square root of the size.

    For random vectors of ``d`` independent unit-variance coordinates, ``s^T h`` has variance
    ``d``: the larger the state, the larger the energies and the closer the softmax comes to a
    one-hot choice, with vanishing gradients. Dividing by ``sqrt(d)`` keeps the variance at 1.
    """

    def energies(self, decoder_state: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return super().energies(decoder_state, keys) / math.sqrt(self.key_dim)


class GeneralAttention(Attention):
    """``e_j = s^T W h_j`` (Luong et al. 2015): a learned bilinear form; ``W h_j`` are the keys,
    computed once per sentence, so each step costs one batched matrix product, as for dot."""

    def __init__(self, encoder_dim: int, decoder_dim: int) -> None:
        super().__init__()
        _positive(encoder_dim=encoder_dim, decoder_dim=decoder_dim)
        self.encoder_dim, self.decoder_dim, self.key_dim = encoder_dim, decoder_dim, decoder_dim
        self.W = nn.Linear(encoder_dim, decoder_dim, bias=False)  # h_j -> W h_j

    def extra_repr(self) -> str:
        return f"encoder_dim={self.encoder_dim}, decoder_dim={self.decoder_dim}"

    def project_keys(self, encoder_outputs: torch.Tensor) -> torch.Tensor:
        self._check_encoder_outputs(encoder_outputs)
        return self.W(encoder_outputs)  # (batch, src_len, decoder_dim)

    def energies(self, decoder_state: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        return torch.bmm(keys, decoder_state.unsqueeze(-1)).squeeze(-1)


#: The score names :func:`make_attention` knows.
SCORES = ("additive", "dot", "general", "scaled_dot")


def make_attention(score: str, encoder_dim: int, decoder_dim: int,
                   attention_dim: int | None = None) -> Attention:
    """The attention module for ``score`` (one of :data:`SCORES`); ``attention_dim`` is the
    additive score's alignment space (the others have none)."""
    if score == "additive":
        if attention_dim is None:
            raise ValueError("the additive score needs attention_dim (its alignment space)")
        return BahdanauAttention(encoder_dim, decoder_dim, attention_dim)
    if score == "dot":
        return DotAttention(encoder_dim, decoder_dim)
    if score == "scaled_dot":
        return ScaledDotAttention(encoder_dim, decoder_dim)
    if score == "general":
        return GeneralAttention(encoder_dim, decoder_dim)
    raise ValueError(f"score must be one of {list(SCORES)}; got {score!r}")
