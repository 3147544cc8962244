"""Decoding a trained seq2seq model: greedy over a whole dataset, and beam search.

Taught in notebook 3, sections 4 and 7 (greedy decoding of held-out sequences) and notebook 4,
section 5 ("Beam search").

:func:`greedy_decode` decodes one padded batch, one hypothesis per sentence, into a
:class:`Decoded`; :func:`greedy_decode_pairs` decodes many sources with it, in batches of
similar length. :func:`beam_search` keeps the
``beam_size`` best partial outputs at every step and returns the best finished one, its score
divided by ``length ** length_penalty`` so that short outputs are not unfairly favoured; with
``beam_size=1`` it returns exactly what greedy decoding returns. Both keep the attention of
the chosen output. :func:`translate_ids` picks one of the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from course_utils.data import Pair, Vocab
from course_utils.models import Seq2Seq
from course_utils.tensors import eval_mode

__all__ = [
    "BeamResult",
    "Decoded",
    "beam_search",
    "greedy_decode",
    "greedy_decode_pairs",
    "pad_sources",
    "translate_ids",
]


def _check_max_len(max_len: int | None) -> None:
    if max_len is not None and int(max_len) < 1:
        raise ValueError(f"max_len must be at least 1 (or None for the default); got {max_len}")


def pad_sources(sources: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Source id lists as one batch: ``(src (batch, longest), src_lengths (batch,))``, padded
    with ``<pad>`` on the right, as :func:`course_utils.data.collate` pads them; the model
    derives the mask from the lengths (``Seq2Seq.encode``)."""
    if not sources:
        raise ValueError("cannot make a batch from no sources")
    if not all(sources):
        raise ValueError("every source must have at least one token")
    width = max(map(len, sources))
    src = torch.tensor([[*s, *[Vocab.pad_id] * (width - len(s))] for s in sources],
                       dtype=torch.long)
    return src, torch.tensor([len(s) for s in sources], dtype=torch.long)


@dataclass
class Decoded:
    """Greedy decoding of a batch, trimmed per sequence."""

    tokens: list[list[int]]  # output ids per sequence, without EOS
    lengths: torch.Tensor  # (batch,) output lengths (EOS excluded)
    # per sequence (out_len + 1, src_len): one row per output token plus the step that
    # produced EOS (out_len rows if it never did); None for the vanilla model
    attention: list[torch.Tensor] | None


@torch.no_grad()
def greedy_decode(
    model: Seq2Seq, src: torch.Tensor, src_lengths: torch.Tensor, max_len: int | None = None
) -> Decoded:
    """Decode a padded batch greedily, in eval mode; each sequence stops at its own EOS.

    ``src`` (batch, src_len) and ``src_lengths`` (batch,) as :func:`pad_sources` makes them.
    ``max_len`` (at least 1) defaults to twice the longest source plus 10 tokens.
    """
    if max_len is None:
        max_len = 2 * int(src_lengths.max()) + 10
    _check_max_len(max_len)
    with eval_mode(model):
        return _greedy(model, src, src_lengths, int(max_len))


def _greedy(model: Seq2Seq, src: torch.Tensor, src_lengths: torch.Tensor,
            max_len: int) -> Decoded:
    batch, src_len = src.shape
    encoder_outputs, summary, mask = model.encode(src, src_lengths)
    decoder = model.decoder
    memory = decoder.prepare(encoder_outputs, summary, mask)
    state = decoder.initial_state(summary)  # (active, hidden_dim)
    token = torch.full((batch,), Vocab.bos_id, dtype=torch.long, device=src.device)
    active = torch.arange(batch, device=src.device)  # rows still decoding
    tokens = torch.full((batch, max_len), Vocab.eos_id, dtype=torch.long, device=src.device)
    # attention weights per step, only for a model that has them
    weights = (torch.zeros(batch, max_len, src_len, device=src.device)
               if model.uses_attention else None)
    lengths = torch.full((batch,), max_len, dtype=torch.long, device=src.device)
    for i in range(max_len):
        embedded = decoder.embedding(token)  # (active, embed_dim)
        state, context, step_weights = decoder.step(embedded, state, memory)
        token = decoder.predict(state, context, embedded).argmax(dim=-1)  # (active,)
        tokens[active, i] = token
        if weights is not None and step_weights is not None:
            weights[active, i] = step_weights.float()
        done = token == Vocab.eos_id
        if bool(done.any()):  # finished rows leave the batch: no work spent on them
            lengths[active[done]] = i
            keep = ~done
            active, state, token = active[keep], state[keep], token[keep]
            memory = memory.select(keep)
            if active.numel() == 0:
                break
    lengths_list = lengths.tolist()
    source_lengths = src_lengths.tolist()
    rows = tokens.cpu().tolist()
    result = [row[:n] for row, n in zip(rows, lengths_list)]
    attention = None
    if weights is not None:
        weights = weights.cpu()
        # keep the step that produced EOS: it shows where the model looked to stop
        attention = [
            weights[b, : min(n + 1, max_len), : source_lengths[b]]
            for b, n in enumerate(lengths_list)
        ]
    return Decoded(result, torch.tensor(lengths_list), attention)


def greedy_decode_pairs(
    model: Seq2Seq,
    pairs: Sequence[Pair],
    device: torch.device | str = "cpu",
    batch_size: int = 256,
    max_len: int | None = None,
) -> Decoded:
    """Greedy outputs for every pair's source, in the order of ``pairs``.

    Sources are decoded in batches of similar length (little padding); results are put back
    in the original order. Targets are not read.
    """
    if not pairs:
        raise ValueError("no pairs to decode")
    return _greedy_decode_sources(model, [source for source, _ in pairs], device, batch_size,
                                  max_len)


def _greedy_decode_sources(
    model: Seq2Seq,
    sources: Sequence[Sequence[int]],
    device: torch.device | str,
    batch_size: int,
    max_len: int | None,
) -> Decoded:
    if not sources:
        raise ValueError("no sources to decode")
    _check_max_len(max_len)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    tokens: list[list[int]] = [[] for _ in sources]
    lengths = [0] * len(sources)
    attention: list[torch.Tensor] | None = [] if model.uses_attention else None
    by_position: dict[int, torch.Tensor] = {}
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        src, src_lengths = pad_sources([sources[i] for i in chunk])
        decoded = greedy_decode(model, src.to(device), src_lengths, max_len)
        batch_lengths = decoded.lengths.tolist()
        for k, i in enumerate(chunk):
            tokens[i] = decoded.tokens[k]
            lengths[i] = batch_lengths[k]
            if decoded.attention is not None:
                by_position[i] = decoded.attention[k]
    if attention is not None:
        attention = [by_position[i] for i in range(len(sources))]
    return Decoded(tokens, torch.tensor(lengths), attention)


@dataclass
class BeamResult:
    tokens: list[int]  # without BOS and EOS
    # (len(tokens) + 1, src_len) with the EOS step last; len(tokens) rows if no hypothesis
    # ended within max_len; None for the vanilla model
    attention: torch.Tensor | None
    score: float  # sum of log-probabilities (EOS included)


@torch.no_grad()
def beam_search(
    model: Seq2Seq,
    source: Sequence[int],
    beam_size: int = 5,
    max_len: int | None = None,
    length_penalty: float = 1.0,
    device: torch.device | str = "cpu",
) -> BeamResult:
    """Beam search for one source sentence (a list of token ids)."""
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1; got {beam_size}")
    if not source:
        raise ValueError("source must have at least one token")
    _check_max_len(max_len)
    with eval_mode(model):
        return _beam_search(model, source, beam_size,
                            2 * len(source) + 10 if max_len is None else int(max_len),
                            length_penalty, torch.device(device))


def _beam_search(model: Seq2Seq, source: Sequence[int], beam_size: int, max_len: int,
                 length_penalty: float, device: torch.device) -> BeamResult:
    src = torch.tensor([list(source)], device=device)
    encoder_outputs, summary, mask = model.encode(src, torch.tensor([len(source)]))
    decoder = model.decoder
    memory = decoder.prepare(encoder_outputs, summary, mask)
    state = decoder.initial_state(summary)  # (beams, hidden)
    tokens = torch.full((1, 1), Vocab.bos_id, dtype=torch.long, device=device)  # (beams, t)
    scores = torch.zeros(1, device=device)  # (beams,)
    history = torch.zeros(1, 0, len(source), device=device)  # (beams, t, src_len)
    finished: list[tuple[float, BeamResult]] = []
    for _ in range(max_len):
        embedded = decoder.embedding(tokens[:, -1])
        state, context, weights = decoder.step(embedded, state, memory)
        log_probs = decoder.predict(state, context, embedded).float().log_softmax(-1)  # (b, V)
        if weights is not None:
            history = torch.cat([history, weights.float()[:, None, :]], dim=1)
        candidates = (scores[:, None] + log_probs).flatten()  # (beams * vocab,)
        top_scores, top = candidates.topk(min(2 * beam_size, candidates.numel()))
        vocab = log_probs.shape[1]
        keep_rows: list[int] = []
        keep_tokens: list[int] = []
        keep_scores: list[float] = []
        for rank, (score, index) in enumerate(zip(top_scores.tolist(), top.tolist())):
            row, token = divmod(index, vocab)
            if token == Vocab.eos_id:
                if rank >= beam_size:  # only hypotheses inside the beam may finish
                    continue
                output = tokens[row, 1:].tolist()
                attention = history[row] if weights is not None else None
                normalised = score / (len(output) + 1) ** length_penalty
                finished.append((normalised, BeamResult(output, attention, score)))
            elif len(keep_rows) < beam_size:
                keep_rows.append(row)
                keep_tokens.append(token)
                keep_scores.append(score)
            if len(keep_rows) == beam_size and len(finished) >= beam_size:
                break
        if len(finished) >= beam_size or not keep_rows:
            break
        rows = torch.tensor(keep_rows, device=device)
        tokens = torch.cat([tokens[rows], torch.tensor(keep_tokens, device=device)[:, None]], 1)
        scores = torch.tensor(keep_scores, device=device)
        state = state[rows]
        history = history[rows]
        memory = memory.select(torch.zeros_like(rows))  # one sentence, one copy per beam
    if not finished:  # no hypothesis ended within max_len: take the best unfinished one
        output = tokens[0, 1:].tolist()
        attention = history[0] if model.uses_attention else None
        finished.append((0.0, BeamResult(output, attention, float(scores[0]))))
    return max(finished, key=lambda item: item[0])[1]


def translate_ids(
    model: Seq2Seq,
    sources: Sequence[Sequence[int]],
    beam_size: int = 1,
    device: torch.device | str = "cpu",
    batch_size: int = 256,
    max_len: int | None = None,
) -> Decoded:
    """Outputs for many sources: batched greedy when ``beam_size == 1``, else beam search."""
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1; got {beam_size}")
    if beam_size == 1:
        return _greedy_decode_sources(model, sources, device, batch_size, max_len)
    results = [beam_search(model, s, beam_size, max_len, device=device) for s in sources]
    attention = (None if not model.uses_attention
                 else [r.attention.cpu() for r in results if r.attention is not None])
    lengths = torch.tensor([len(r.tokens) for r in results])
    return Decoded([r.tokens for r in results], lengths, attention)
