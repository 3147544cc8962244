"""The straightforward per-step seq2seq computation, in the style of the seed notebook.

This is the *reference* the fast path in ``course_utils.models`` is measured and tested
against. It uses the same parameters (it takes a ``course_utils`` model) but computes
everything one decoder step at a time, as most tutorials do:

- the attention module is called with the raw encoder outputs at every step, so the keys
  ``W_h h_j`` are recomputed (and the mask re-checked) at every step;
- the output layer runs inside the loop, and logits are written into a preallocated tensor;
- batches are drawn at random (no length bucketing), so short sentences carry padding;
- greedy decoding for evaluation runs one sentence at a time.

Equal math, slower code: ``tests/test_models.py`` proves the loss and gradients agree, and
``benchmarks/bench_seq2seq.py`` measures the difference in speed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch
from torch import nn

from course_utils.data import Pair, Vocab, collate
from course_utils.models import Seq2Seq


def reference_forward(model: Seq2Seq, src, src_lengths, tgt_in) -> torch.Tensor:
    """Teacher-forced logits (batch, tgt_len, vocab), one step at a time."""
    encoder_outputs, summary = model.encoder(src, src_lengths)
    mask = src != Vocab.pad_id  # (batch, src_len)
    decoder = model.decoder
    hidden = decoder.initial_state(summary)
    batch, tgt_len = tgt_in.shape
    outputs = torch.zeros(batch, tgt_len, decoder.out.vocab_size, device=src.device)
    for t in range(tgt_len):
        embedded = decoder.dropout(decoder.embedding(tgt_in[:, t]))
        if model.uses_attention:
            context, _ = decoder.attention(hidden, encoder_outputs, mask=mask)
        else:
            context = summary
        hidden = decoder.cell(torch.cat([embedded, context], dim=-1), hidden)
        outputs[:, t] = decoder.out(decoder.dropout(torch.cat([hidden, context, embedded], -1)))
    return outputs


def reference_loss(model: Seq2Seq, batch) -> torch.Tensor:
    outputs = reference_forward(model, batch.src, batch.src_lengths, batch.tgt_in)
    criterion = nn.CrossEntropyLoss(ignore_index=Vocab.pad_id)
    return criterion(outputs.reshape(-1, outputs.size(-1)), batch.tgt_out.reshape(-1))


def reference_train_epoch(
    model: Seq2Seq, pairs: Sequence[Pair], optimizer, batch_size: int, device, seed: int = 0
) -> float:
    """One epoch on randomly drawn batches; returns the mean batch loss."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    model.train()
    total = 0.0
    for start in range(0, len(order), batch_size):
        batch = collate([pairs[i] for i in order[start : start + batch_size]]).to(device)
        optimizer.zero_grad()
        loss = reference_loss(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        total += loss.item()
    return total / max(1, -(-len(order) // batch_size))


@torch.no_grad()
def reference_translate(model: Seq2Seq, source: list[int], device, max_len: int) -> list[int]:
    """Greedy decoding of one sentence, the way the seed notebook's accuracy loop does it."""
    model.eval()
    src = torch.tensor([source], device=device)
    encoder_outputs, summary = model.encoder(src, torch.tensor([len(source)]))
    mask = src != Vocab.pad_id
    decoder = model.decoder
    hidden = decoder.initial_state(summary)
    token = torch.tensor([Vocab.bos_id], device=device)
    output = []
    for _ in range(max_len):
        embedded = decoder.embedding(token)
        if model.uses_attention:
            context, _ = decoder.attention(hidden, encoder_outputs, mask=mask)
        else:
            context = summary
        hidden = decoder.cell(torch.cat([embedded, context], dim=-1), hidden)
        token = decoder.out(torch.cat([hidden, context, embedded], dim=-1)).argmax(dim=-1)
        if token.item() == Vocab.eos_id:
            break
        output.append(token.item())
    return output
