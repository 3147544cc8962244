"""Beam search for the seq2seq models, keeping the attention of the chosen output.

Greedy decoding (``Seq2Seq.greedy_decode``) keeps one hypothesis; beam search keeps the
``beam_size`` best partial outputs at every step and returns the best finished one, its score
divided by ``length ** length_penalty`` so that short outputs are not unfairly favoured.
With ``beam_size=1`` it returns exactly what greedy decoding returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from course_utils.data import Vocab
from course_utils.models import Decoded, Seq2Seq

__all__ = ["BeamResult", "beam_search", "translate_ids"]


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
    was_training = model.training
    model.eval()
    max_len = max_len or 2 * len(source) + 10
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
        keep_rows, keep_tokens, keep_scores = [], [], []
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
        memory = decoder.select_rows(memory, torch.zeros_like(rows))  # one sentence, k beams
    if not finished:  # no hypothesis ended within max_len: take the best unfinished one
        output = tokens[0, 1:].tolist()
        attention = history[0] if model.uses_attention else None
        finished.append((0.0, BeamResult(output, attention, float(scores[0]))))
    model.train(was_training)
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
    from course_utils.metrics import greedy_decode_pairs

    if beam_size == 1:
        return greedy_decode_pairs(model, [(list(s), []) for s in sources], device=device,
                                   batch_size=batch_size, max_len=max_len)
    results = [beam_search(model, s, beam_size, max_len, device=device) for s in sources]
    attention = None if not model.uses_attention else [r.attention.cpu() for r in results]
    lengths = torch.tensor([len(r.tokens) for r in results])
    return Decoded([r.tokens for r in results], lengths, attention)
