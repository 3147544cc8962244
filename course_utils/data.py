"""Token data for the seq2seq notebooks: vocabularies and padded, length-bucketed batches.

Taught in notebook 3, section 1 ("The task": a vocabulary, length-bucketed padded batches);
notebook 4, section 1 reads Multi30k into the same batches.

A *pair* is ``(source_ids, target_ids)``: two lists of token ids without BOS/EOS.
:func:`make_batches` groups pairs of similar length into padded :class:`Batch`es (length
bucketing: little padding, so little wasted work), in a fresh order every epoch.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

__all__ = [
    "Batch",
    "Vocab",
    "collate",
    "make_batches",
]

Pair = tuple[list[int], list[int]]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)


class Vocab:
    """Token <-> id map. Ids 0-3 are ``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self.itos: list[str] = list(SPECIALS)
        for token in tokens:
            if token not in SPECIALS:
                self.itos.append(token)
        self.stoi = {token: i for i, token in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("vocabulary tokens must be unique")

    pad_id, bos_id, eos_id, unk_id = 0, 1, 2, 3

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]], min_freq: int = 1) -> Vocab:
        """Tokens seen at least ``min_freq`` times, most frequent first (ties alphabetically)."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1; got {min_freq}")
        counts = Counter(token for sentence in sentences for token in sentence)
        kept = [t for t, n in counts.items() if n >= min_freq]
        return cls(sorted(kept, key=lambda t: (-counts[t], t)))

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi.get(token, self.unk_id) for token in tokens]

    def decode(self, ids: Iterable[int], strip: bool = True) -> list[str]:
        """Tokens for ``ids``; with ``strip``, stop at EOS and drop BOS and padding."""
        tokens = []
        for i in ids:
            i = int(i)
            if strip and i == self.eos_id:
                break
            if strip and i in (self.pad_id, self.bos_id):
                continue
            tokens.append(self.itos[i])
        return tokens

    def to_dict(self) -> dict:
        return {"itos": list(self.itos)}

    @classmethod
    def from_dict(cls, data: dict) -> Vocab:
        itos = data["itos"]
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(f"a saved vocabulary must start with {SPECIALS}; got {itos[:4]}")
        return cls(itos[len(SPECIALS) :])


# ------------------------------------------------------------------------------ batches


@dataclass
class Batch:
    """A padded batch. Targets are split for teacher forcing:
    ``tgt_in = [BOS, y_1 .. y_n]`` and ``tgt_out = [y_1 .. y_n, EOS]``."""

    src: torch.Tensor  # (batch, src_len) token ids, padded with 0
    src_lengths: torch.Tensor  # (batch,) on the CPU, as pack_padded_sequence requires
    tgt_in: torch.Tensor  # (batch, tgt_len)
    tgt_out: torch.Tensor  # (batch, tgt_len)

    @property
    def n_tokens(self) -> int:
        """Real target tokens (EOS included): what the loss averages over."""
        return int((self.tgt_out != Vocab.pad_id).sum())

    def __len__(self) -> int:
        return self.src.shape[0]

    def pin_memory(self) -> Batch:
        return Batch(self.src.pin_memory(), self.src_lengths, self.tgt_in.pin_memory(),
                     self.tgt_out.pin_memory())

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """Tensors on ``device``; ``src_lengths`` stays on the CPU."""
        return Batch(
            self.src.to(device, non_blocking=non_blocking),
            self.src_lengths,
            self.tgt_in.to(device, non_blocking=non_blocking),
            self.tgt_out.to(device, non_blocking=non_blocking),
        )


def _pad(sequences: list[list[int]]) -> torch.Tensor:
    """``(len(sequences), longest)`` ids, padded with ``<pad>`` on the right."""
    width = max(map(len, sequences))
    return torch.tensor([[*s, *[Vocab.pad_id] * (width - len(s))] for s in sequences],
                        dtype=torch.long)


def collate(pairs: Sequence[Pair]) -> Batch:
    """Pad a list of pairs into one :class:`Batch`."""
    if not pairs:
        raise ValueError("cannot make a batch from no pairs")
    for source, _ in pairs:
        if not source:
            raise ValueError("every source must have at least one token")
    sources = [list(s) for s, _ in pairs]
    return Batch(
        src=_pad(sources),
        src_lengths=torch.tensor([len(s) for s in sources], dtype=torch.long),
        tgt_in=_pad([[Vocab.bos_id, *t] for _, t in pairs]),
        tgt_out=_pad([[*t, Vocab.eos_id] for _, t in pairs]),
    )


#: How :func:`make_batches` orders a pool of pairs before cutting it into batches.
SORT_KEYS: dict[str, Callable[[Pair], tuple[int, ...]]] = {
    "target": lambda pair: (len(pair[1]), len(pair[0])),
    "source": lambda pair: (len(pair[0]),),
}


def make_batches(
    pairs: Sequence[Pair],
    batch_size: int,
    shuffle: bool = True,
    seed: int = 0,
    bucket_factor: int = 50,
    sort_by: str = "source",
) -> list[Batch]:
    """Length-bucketed batches.

    Pairs are shuffled, cut into pools of ``batch_size * bucket_factor``, each pool sorted by
    length and cut into batches, and the batches shuffled: batches hold sentences of similar
    length (little padding) but still differ from epoch to epoch (pass the epoch as ``seed``).
    ``shuffle=False`` keeps a deterministic, fully length-sorted order.

    ``sort_by`` says which length: ``"source"`` (the default) or ``"target"`` (then source). The
    decoder runs one step per target slot up to the longest target in the batch, padding
    included, while the encoder packs its input and skips the source's padding: on Multi30k's
    training set in batches of 64, sorting by source length leaves 31% of the decoder's slots
    padding, by target length 3%. On the course's 2-core CPU that pays only in larger batches:
    1.28x the tokens per second of source buckets in batches of 128, but 0.98x in batches of 64
    (``benchmarks/bench_training_levers.py``), so the course, which trains in 64s, keeps
    ``"source"``. Where both lengths are equal (the reversal task) the two orders are the same.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    if sort_by not in SORT_KEYS:
        raise ValueError(f"sort_by must be one of {list(SORT_KEYS)}; got {sort_by!r}")
    length = SORT_KEYS[sort_by]
    order = list(range(len(pairs)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(order)
        pool = batch_size * bucket_factor
    else:
        pool = len(order) or 1
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start : start + pool], key=lambda i: length(pairs[i]))
        for b in range(0, len(chunk), batch_size):
            batches.append(collate([pairs[i] for i in chunk[b : b + batch_size]]))
    if shuffle:
        rng.shuffle(batches)
    return batches


def iterate_batches(batches: list[Batch], device: torch.device) -> Iterator[Batch]:
    """Batches moved to ``device``; on CUDA from pinned memory with non-blocking copies."""
    cuda = device.type == "cuda"
    for batch in batches:
        yield batch.pin_memory().to(device, non_blocking=True) if cuda else batch.to(device)
