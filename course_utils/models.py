"""GRU encoder-decoder models: with Bahdanau attention, and the fixed-context "vanilla" one.

Taught in notebook 3, section 2 ("The model: the library's encoder, your decoder"); trained in
notebook 4, section 2 ("Two models, one budget"), and in notebook 6.

Bahdanau, Cho & Bengio (2014), arXiv:1409.0473, section 3 and appendix A:

- the encoder is a bidirectional GRU; ``h_j = [forward h_j; backward h_j]``;
- the attention decoder computes ``c_i`` from the previous state ``s_{i-1}``, updates
  ``s_i = GRU(s_{i-1}, [y_{i-1}; c_i])`` and predicts ``y_i`` from ``[s_i; c_i; y_{i-1}]``
  through the paper's *deep output* layer (appendix A.2.2, :class:`DeepOutput`): a
  ``2l``-wide ``t~_i = U_o s_i + V_o E y_{i-1} + C_o c_i``, a maxout over pairs down to
  width ``l``, then the projection ``W_o t_i`` onto the vocabulary;
- the vanilla decoder (Cho et al. 2014, Day 7) is the same decoder with one context
  vector, the encoder's final states, fed at every step. The two differ only in attention.

Three things make training fast without changing the math: the keys ``W_h h_j`` are
projected once per batch, the output layer runs once over all time steps after the recurrent
loop (as in d2l.ai), and in training only at real (non-padding) target positions.
``benchmarks/reference_seq2seq.py`` holds the plain per-step version that the tests prove
equal to this one.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, asdict, dataclass, fields, replace
from typing import Any, Literal

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course_utils.attention import Attention, check_mask, zero_padding
from course_utils.data import Vocab
from course_utils.scores import SCORES, make_attention

#: The two orders of a decoding step: Bahdanau's (attend, then update) and Luong's (update,
#: then attend, with input feeding).
ORDERS = ("bahdanau", "luong")

__all__ = [
    "ORDERS",
    "AttentionDecoder",
    "DecoderMemory",
    "DeepOutput",
    "Encoder",
    "GRUDecoder",
    "LuongDecoder",
    "ModelConfig",
    "ModelSizes",
    "Seq2Seq",
    "VanillaDecoder",
    "build_model",
]


class Encoder(nn.Module):
    """Bidirectional GRU over a padded batch (``bidirectional=False``: forward only).

    Notebook 3, section 2 uses it as given (a diagram and an interface); notebooks 4-6 train it.

    ``forward(src, src_lengths)`` returns

    - ``encoder_outputs``: ``(batch, src_len, 2 * hidden_dim)``, zeros at padded positions;
    - ``summary``: ``(batch, 2 * hidden_dim)``, the final forward and backward states.

    (``hidden_dim`` instead of ``2 * hidden_dim`` for a forward-only encoder.)
    """

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, dropout: float = 0.0,
                 bidirectional: bool = True):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=Vocab.pad_id)
        self.dropout = nn.Dropout(dropout)
        # bidirectional=False: the ablation that tests why attention reads a two-cell band
        self.rnn = nn.GRU(embed_dim, hidden_dim, batch_first=True, bidirectional=bidirectional)
        self.output_dim = (2 if bidirectional else 1) * hidden_dim

    def forward(
        self, src: torch.Tensor, src_lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if src.dim() != 2 or src_lengths.shape != (src.shape[0],):
            raise ValueError(
                f"src must be (batch, src_len) and src_lengths (batch,); "
                f"got {tuple(src.shape)} and {tuple(src_lengths.shape)}"
            )
        embedded = self.dropout(self.embedding(src))  # (batch, src_len, embed_dim)
        # Packing runs each sentence only over its real tokens; lengths must be on the CPU.
        packed = pack_padded_sequence(
            embedded, src_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        outputs, final = self.rnn(packed)  # final: (2, batch, hidden_dim)
        encoder_outputs, _ = pad_packed_sequence(
            outputs, batch_first=True, total_length=src.shape[1]
        )  # (batch, src_len, 2 * hidden_dim)
        summary = torch.cat(list(final), dim=-1)  # (batch, 2 * hidden_dim): [forward; backward]
        return encoder_outputs, summary


@dataclass(frozen=True)
class DecoderMemory:
    """What a decoder computes once per batch, before its first step, and reads at every step.

    - ``encoder_outputs``: ``(batch, src_len, encoder_dim)``, the ``h_j``, zeros at padding;
    - ``summary``: ``(batch, encoder_dim)``, the final forward and backward states;
    - ``mask``: bool ``(batch, src_len)``, True for real source tokens;
    - ``keys``: ``(batch, src_len, attention_dim)``, ``W_h h_j`` (None without attention).
    """

    encoder_outputs: torch.Tensor
    summary: torch.Tensor
    mask: torch.Tensor
    keys: torch.Tensor | None = None

    def select(self, rows: torch.Tensor) -> DecoderMemory:
        """The memory of the batch rows ``rows`` (a bool mask or indices), e.g. the sentences
        still decoding, or one sentence repeated for each beam."""
        return DecoderMemory(self.encoder_outputs[rows], self.summary[rows], self.mask[rows],
                             None if self.keys is None else self.keys[rows])


class DeepOutput(nn.Module):
    """The paper's deep output layer (appendix A.2.2): ``[s_i; c_i; y_{i-1}]`` to logits.

    ``t~_i = U_o s_i + V_o E y_{i-1} + C_o c_i`` is one linear layer on the concatenation
    (width ``2 * maxout_dim``); the maxout ``t_{i,j} = max(t~_{i,2j-1}, t~_{i,2j})`` keeps
    the larger of each pair (width ``maxout_dim``, the paper's ``l``); the logits are
    ``W_o t_i`` (notebook 3, section 2 calls it through ``predict``; notebook 4, section 10
    measures what it saves). With ``maxout_dim=0`` the logits come straight from the
    concatenation (one linear layer), the shallow output most tutorials use.

    The vocabulary projection is the largest matrix product of a training step, so a small
    ``l`` makes every step cheaper: from ``d -> V`` (``d`` the input width, ``V`` the
    vocabulary) to ``d -> 2l`` plus ``l -> V``.
    """

    def __init__(self, input_dim: int, maxout_dim: int, vocab_size: int):
        super().__init__()
        if maxout_dim < 0:
            raise ValueError(f"maxout_dim must be >= 0 (0: no deep output); got {maxout_dim}")
        self.maxout_dim = maxout_dim
        self.pre = nn.Linear(input_dim, 2 * maxout_dim) if maxout_dim else None  # U_o, V_o, C_o
        self.proj = nn.Linear(maxout_dim or input_dim, vocab_size)  # W_o
        self.vocab_size = vocab_size

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """``features`` (..., input_dim) -> logits (..., vocab_size)."""
        if self.pre is None:
            return self.proj(features)
        t = self.pre(features)  # (..., 2l): t~_i
        t = t.unflatten(-1, (self.maxout_dim, 2)).amax(-1)  # (..., l): max over each pair
        return self.proj(t)  # W_o t_i


def _select(positions: torch.Tensor, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Each of ``tensors`` ``(batch, tgt_len, ...)`` at the True entries of ``positions``:
    ``(n, ...)``."""
    return tuple(tensor[positions] for tensor in tensors)


class GRUDecoder(nn.Module):
    """What every decoder shares: embedding, initial state, GRU cell, deep output layer, and
    the teacher-forced loop (:meth:`forward`) over its steps.

    Subclasses define where the context of each step comes from: :meth:`prepare` (the per-batch
    :class:`DecoderMemory`, e.g. the attention keys) and :meth:`context` (one step's context
    and attention weights); :class:`LuongDecoder` overrides :meth:`step` as well.
    """

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden_dim: int, encoder_dim: int,
        dropout: float = 0.0, maxout_dim: int = 0,
    ):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=Vocab.pad_id)
        self.dropout = nn.Dropout(dropout)
        self.bridge = nn.Linear(encoder_dim, hidden_dim)  # s_0 = tanh(W [h_fwd; h_bwd])
        self.cell = nn.GRUCell(embed_dim + encoder_dim, hidden_dim)
        self.out = DeepOutput(hidden_dim + encoder_dim + embed_dim, maxout_dim, vocab_size)

    def initial_state(self, summary: torch.Tensor) -> torch.Tensor:
        """The bridge, ``s_0 = tanh(W [h_fwd_T; h_bwd_1])``: ``(batch, encoder_dim)`` ->
        ``(batch, hidden_dim)``. Notebook 3, section 2: the first state of the teacher-forcing
        pass."""
        return torch.tanh(self.bridge(summary))  # (batch, hidden_dim)

    def prepare(
        self, encoder_outputs: torch.Tensor, summary: torch.Tensor, mask: torch.Tensor
    ) -> DecoderMemory:
        """Per-batch work done once, before the first step: the steps' :class:`DecoderMemory`
        (notebook 3, section 2: the teacher-forcing pass calls it first).

        Padded positions of ``encoder_outputs`` are set to zero here, so that whatever the
        encoder left there (even NaN or inf) contributes nothing to any context.
        """
        check_mask(mask, *encoder_outputs.shape[:2])  # once, not every step
        encoder_outputs = zero_padding(encoder_outputs, mask)
        return DecoderMemory(encoder_outputs, summary, mask)

    def context(
        self, state: torch.Tensor, memory: DecoderMemory
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(context (batch, encoder_dim), weights (batch, src_len) or None)`` for one step."""
        raise NotImplementedError

    def step(
        self, embedded: torch.Tensor, state: torch.Tensor, memory: DecoderMemory
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """One decoder step from ``s_{i-1}`` and embedded ``y_{i-1}`` (batch, embed_dim).

        Returns ``(s_i, c_i, weights)``.
        """
        context, weights = self.context(state, memory)  # c_i from s_{i-1}
        state = self.cell(torch.cat([embedded, context], dim=-1), state)  # s_i
        return state, context, weights

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """``E y``: the embedded target tokens, ``(batch, ...)`` -> ``(batch, ..., embed_dim)``
        (with dropout in training). Notebook 3, section 2: the teacher-forcing pass calls it."""
        return self.dropout(self.embedding(tokens))

    def predict(
        self, states: torch.Tensor, contexts: torch.Tensor, embedded: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits from ``[s_i; c_i; y_{i-1}]`` through the deep output layer; works on one
        step ``(batch, ...)`` or on all steps at once ``(batch, tgt_len, ...)``.

        ``positions`` (bool, ``(batch, tgt_len)``, with all steps at once) keeps only the steps
        where it is True: the logits are then ``(positions.sum(), vocab)`` in row-major order.
        Training passes the real (non-padding) target positions, so no arithmetic is spent on
        padding. Notebook 3, section 2: the last line of the teacher-forcing pass."""
        if positions is not None:
            states, contexts, embedded = _select(positions, states, contexts, embedded)
        return self.out(self.dropout(torch.cat([states, contexts, embedded], dim=-1)))

    def forward(
        self,
        tgt_in: torch.Tensor,
        encoder_outputs: torch.Tensor,
        summary: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher-forced decoding of ``tgt_in`` (batch, tgt_len).

        Returns ``logits`` (batch, tgt_len, vocab) and attention weights
        (batch, tgt_len, src_len), or ``None`` for the vanilla decoder. With ``positions``
        (bool, (batch, tgt_len)) the output layer runs only where it is True and the logits
        are ``(positions.sum(), vocab)``, in row-major order: training passes the real
        (non-padding) target positions, so no arithmetic is spent on padding.
        """
        memory = self.prepare(encoder_outputs, summary, mask)  # once per batch
        embedded = self.embed(tgt_in)  # (batch, tgt_len, embed_dim)
        state = self.initial_state(summary)  # (batch, hidden_dim)
        states, contexts, weights = [], [], []
        for i in range(tgt_in.shape[1]):
            state, context, step_weights = self.step(embedded[:, i], state, memory)
            states.append(state)
            contexts.append(context)
            if step_weights is not None:
                weights.append(step_weights)
        if positions is not None and (positions.shape != tgt_in.shape
                                      or positions.dtype != torch.bool):
            raise ValueError(f"positions must be a bool tensor shaped like tgt_in "
                             f"{tuple(tgt_in.shape)}; got {positions.dtype} "
                             f"{tuple(positions.shape)}")
        # The output layer once, over all steps: (batch, tgt_len, vocab)
        logits = self.predict(torch.stack(states, 1), torch.stack(contexts, 1), embedded,
                              positions)
        attention = torch.stack(weights, 1) if weights else None
        return logits, attention


class AttentionDecoder(GRUDecoder):
    """GRU decoder with Bahdanau attention over the encoder outputs."""

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden_dim: int, encoder_dim: int,
        attention_dim: int, dropout: float = 0.0, maxout_dim: int = 0, score: str = "additive",
    ):
        super().__init__(vocab_size, embed_dim, hidden_dim, encoder_dim, dropout, maxout_dim)
        # additive (the paper's) by default; any score of course_utils.scores fits
        self.attention: Attention = make_attention(score, encoder_dim, hidden_dim, attention_dim)

    def prepare(
        self, encoder_outputs: torch.Tensor, summary: torch.Tensor, mask: torch.Tensor
    ) -> DecoderMemory:
        memory = super().prepare(encoder_outputs, summary, mask)
        keys = self.attention.project_keys(memory.encoder_outputs)  # (batch, src_len, attn_dim)
        return replace(memory, keys=keys)

    def context(
        self, state: torch.Tensor, memory: DecoderMemory
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        assert memory.keys is not None, "prepare() computes the keys"
        return self.attention.attend(state, memory.encoder_outputs, memory.keys, memory.mask)


class LuongDecoder(GRUDecoder):
    """The other order of a decoding step (Luong, Pham & Manning 2015, with input feeding).

    Bahdanau's decoder attends with the *previous* state and feeds the context into the GRU.
    Luong's updates the state first, then attends with the *new* one and combines the two:

    - ``s_i = GRU(s_{i-1}, [E y_{i-1}; h~_{i-1}])``: input feeding, the previous attentional
      vector goes in with the previous word;
    - ``c_i = attention(s_i, h)``, then the attentional vector ``h~_i = tanh(W_c [c_i; s_i])``;
    - the output layer predicts ``y_i`` from ``h~_i`` alone.

    The recurrent state carried from step to step is ``[s_i; h~_i]`` (``2 * hidden_dim``), so
    greedy decoding and beam search handle it like any other state.
    """

    def __init__(
        self, vocab_size: int, embed_dim: int, hidden_dim: int, encoder_dim: int,
        attention_dim: int, dropout: float = 0.0, maxout_dim: int = 0, score: str = "general",
    ):
        super().__init__(vocab_size, embed_dim, hidden_dim, encoder_dim, dropout, maxout_dim)
        self.hidden_dim = hidden_dim
        self.cell = nn.GRUCell(embed_dim + hidden_dim, hidden_dim)  # [E y_(i-1); h~_(i-1)]
        self.combine = nn.Linear(encoder_dim + hidden_dim, hidden_dim, bias=False)  # W_c
        self.out = DeepOutput(hidden_dim, maxout_dim, vocab_size)  # from h~_i
        self.attention: Attention = make_attention(score, encoder_dim, hidden_dim, attention_dim)

    def initial_state(self, summary: torch.Tensor) -> torch.Tensor:
        s0 = torch.tanh(self.bridge(summary))
        return torch.cat([s0, torch.zeros_like(s0)], dim=-1)  # [s_0; h~_0 = 0]

    def prepare(
        self, encoder_outputs: torch.Tensor, summary: torch.Tensor, mask: torch.Tensor
    ) -> DecoderMemory:
        memory = super().prepare(encoder_outputs, summary, mask)
        return replace(memory, keys=self.attention.project_keys(memory.encoder_outputs))

    def step(
        self, embedded: torch.Tensor, state: torch.Tensor, memory: DecoderMemory
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        assert memory.keys is not None, "prepare() computes the keys"
        previous, attentional = state.split(self.hidden_dim, dim=-1)
        new = self.cell(torch.cat([embedded, attentional], dim=-1), previous)  # s_i
        context, weights = self.attention.attend(new, memory.encoder_outputs, memory.keys,
                                                 memory.mask)  # c_i from s_i
        attentional = torch.tanh(self.combine(torch.cat([context, new], dim=-1)))  # h~_i
        return torch.cat([new, attentional], dim=-1), context, weights

    def predict(
        self, states: torch.Tensor, contexts: torch.Tensor, embedded: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits from the attentional vector ``h~_i`` (the second half of the state)."""
        if positions is not None:
            states = states[positions]
        return self.out(self.dropout(states[..., self.hidden_dim:]))


class VanillaDecoder(GRUDecoder):
    """The fixed-context decoder: the encoder's final states are the context of every step."""

    def context(
        self, state: torch.Tensor, memory: DecoderMemory
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return memory.summary, None  # (batch, encoder_dim), whatever the step


@dataclass(frozen=True, kw_only=True)
class ModelSizes:
    """A model's sizes, in the paper's letters; the one place their defaults are declared.

    :class:`ModelConfig` (one model) is built on it, and a task's run
    (:class:`course_utils.training.RunConfig`) holds one as its ``model``; a task's presets set
    their own values.
    """

    embed_dim: int = 64  # m, the size of a word embedding (620 in the paper)
    hidden_dim: int = 128  # n, the GRU state of each encoder direction and of the decoder (1000)
    attention_dim: int = 128  # n', the width of the additive score's hidden layer
    # l, the deep output layer's maxout (500); 0: logits straight from [s; c; y]
    maxout_dim: int = 64
    dropout: float = 0.0  # on embeddings and the output layer's input, while training

    @property
    def model_sizes(self) -> dict[str, Any]:
        """These fields as keyword arguments (for :class:`ModelConfig`)."""
        return {f.name: getattr(self, f.name) for f in fields(ModelSizes)}


@dataclass(frozen=True)
class ModelConfig(ModelSizes):
    """Everything needed to rebuild a model (saved in checkpoints): the vocabularies' sizes,
    the :class:`ModelSizes` (keyword only), and the architecture's choices."""

    src_vocab_size: int
    tgt_vocab_size: int
    _: KW_ONLY  # the rest by name only: ModelConfig(n_src, n_tgt, attention=False, ...)
    attention: bool = True
    score: str = "additive"  # the attention score (course_utils.scores.SCORES)
    # the decoder's state size; None: hidden_dim; "encoder": the encoder's outputs' size
    # (2 * hidden_dim bidirectional), which a dot score needs, as it compares the two
    decoder_dim: int | Literal["encoder"] | None = None
    bidirectional: bool = True  # False: a forward-only encoder (notebook 6's ablation)
    order: str = "bahdanau"  # "bahdanau": attend with s_(i-1); "luong": with s_i (LuongDecoder)

    def __post_init__(self) -> None:
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {list(SCORES)}; got {self.score!r}")
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {list(ORDERS)}; got {self.order!r}")
        if isinstance(self.decoder_dim, str) and self.decoder_dim != "encoder":
            raise ValueError(f'decoder_dim must be a size, None or "encoder"; got '
                             f"{self.decoder_dim!r}")

    def to_dict(self) -> dict:
        return asdict(self)


class Seq2Seq(nn.Module):
    """Encoder plus decoder, run with teacher forcing (decoding: :mod:`course_utils.decoding`)."""

    def __init__(self, encoder: Encoder, decoder: GRUDecoder, config: ModelConfig | None = None):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.config = config

    @property
    def uses_attention(self) -> bool:
        return isinstance(self.decoder, (AttentionDecoder, LuongDecoder))

    def encode(
        self, src: torch.Tensor, src_lengths: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(encoder_outputs, summary, mask)`` for a padded batch."""
        encoder_outputs, summary = self.encoder(src, src_lengths)
        mask = torch.arange(src.shape[1], device=src.device)[None, :] < src_lengths.to(
            src.device
        )[:, None]  # (batch, src_len), True for real tokens
        return encoder_outputs, summary, mask

    def forward(
        self, src: torch.Tensor, src_lengths: torch.Tensor, tgt_in: torch.Tensor,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher forcing: ``(logits (batch, tgt_len, vocab), attention or None)``; with
        ``positions`` (bool, like ``tgt_in``) logits only there, ``(n, vocab)``."""
        encoder_outputs, summary, mask = self.encode(src, src_lengths)
        return self.decoder(tgt_in, encoder_outputs, summary, mask, positions)

def build_model(config: ModelConfig, decoder_class: type[GRUDecoder] | None = None) -> Seq2Seq:
    """A fresh model for ``config``: attention or vanilla, same sizes otherwise.

    ``decoder_class`` swaps in your own decoder: a subclass of :class:`VanillaDecoder` (or of
    :class:`AttentionDecoder` when ``config.attention``) that overrides ``context`` and/or
    ``step`` and keeps the layers, so a library model's weights load into it unchanged.
    Exercise E10.2 trains a model built this way with the student's fixed-context decoder.
    """
    base: type[GRUDecoder] = VanillaDecoder
    if config.attention:
        base = LuongDecoder if config.order == "luong" else AttentionDecoder
    if decoder_class is None:
        decoder_class = base
    elif not (isinstance(decoder_class, type) and issubclass(decoder_class, base)):
        kind = (f"with attention ({config.order} order)" if config.attention
                else "without attention (vanilla)")
        raise TypeError(f"decoder_class must be a subclass of {base.__name__} for a model "
                        f"{kind}; got {decoder_class!r}")
    encoder = Encoder(config.src_vocab_size, config.embed_dim, config.hidden_dim, config.dropout,
                      bidirectional=config.bidirectional)
    decoder_dim = (encoder.output_dim if config.decoder_dim == "encoder"
                   else config.decoder_dim or config.hidden_dim)
    args = (config.tgt_vocab_size, config.embed_dim, decoder_dim, encoder.output_dim)
    make: Any = decoder_class  # the constructor of the base class it subclasses
    decoder: GRUDecoder
    if config.attention:
        decoder = make(*args, config.attention_dim, dropout=config.dropout,
                       maxout_dim=config.maxout_dim, score=config.score)
    else:
        decoder = make(*args, dropout=config.dropout, maxout_dim=config.maxout_dim)
    return Seq2Seq(encoder, decoder, config)
