"""Vocabulary, reversal data and length-bucketed batches."""

import random

import pytest
import torch

from course_utils.data import Vocab, collate, make_batches
from course_utils.reversal import make_reversal_pairs, reversal_vocab


def test_vocab_keeps_frequent_tokens_most_frequent_first():
    vocab = Vocab.build([["b", "a", "b"], ["c", "b", "a"], ["d"]], min_freq=2)
    assert vocab.itos == ["<pad>", "<bos>", "<eos>", "<unk>", "b", "a"]
    assert vocab.encode(["a", "zebra"]) == [5, Vocab.unk_id]


def test_decode_stops_at_eos_and_drops_bos_and_padding():
    vocab = reversal_vocab(3)
    ids = [Vocab.bos_id, 4, 5, Vocab.eos_id, 6, Vocab.pad_id]
    assert vocab.decode(ids) == ["a", "b"]
    assert vocab.decode(ids, strip=False) == ["<bos>", "a", "b", "<eos>", "c", "<pad>"]


def test_vocab_round_trips_through_a_dict():
    vocab = reversal_vocab(30)
    assert Vocab.from_dict(vocab.to_dict()) == vocab
    with pytest.raises(ValueError, match="must start with"):
        Vocab.from_dict({"itos": ["a", "b"]})
    with pytest.raises(ValueError, match="min_freq must be >= 1"):
        Vocab.build([["a"]], min_freq=0)


def test_reversal_pairs_are_reversed_deterministic_and_in_range():
    vocab = reversal_vocab(10)
    pairs = make_reversal_pairs(200, 3, 7, vocab, seed=5)
    assert pairs == make_reversal_pairs(200, 3, 7, vocab, seed=5)
    assert pairs != make_reversal_pairs(200, 3, 7, vocab, seed=6)
    for source, target in pairs:
        assert 3 <= len(source) <= 7 and target == source[::-1]
        assert all(4 <= t < len(vocab) for t in source)  # no special tokens
    with pytest.raises(ValueError, match="min_len <= max_len"):
        make_reversal_pairs(1, 5, 2, vocab)


def test_collate_pads_and_shifts_targets_for_teacher_forcing():
    batch = collate([([4, 5, 6], [6, 5, 4]), ([7], [7])])
    assert batch.src.tolist() == [[4, 5, 6], [7, 0, 0]]
    assert batch.src_lengths.tolist() == [3, 1]
    assert batch.tgt_in.tolist() == [[1, 6, 5, 4], [1, 7, 0, 0]]
    assert batch.tgt_out.tolist() == [[6, 5, 4, 2], [7, 2, 0, 0]]
    assert batch.n_tokens == 6
    with pytest.raises(ValueError, match="at least one token"):
        collate([([], [1])])


def padding_fraction(batches):
    real = sum(int(b.src_lengths.sum()) for b in batches)
    return 1 - real / sum(b.src.numel() for b in batches)


def test_bucketed_batches_cover_every_pair_once_with_little_padding():
    pairs = make_reversal_pairs(2000, 1, 40, reversal_vocab(10), seed=1)
    batches = make_batches(pairs, 32, seed=0)
    seen = sorted(tuple(row[:n]) for b in batches
                  for row, n in zip(b.src.tolist(), b.src_lengths.tolist()))
    assert seen == sorted(tuple(s) for s, _ in pairs)
    unbucketed = [collate(pairs[i : i + 32]) for i in range(0, len(pairs), 32)]
    assert padding_fraction(batches) < 0.1 < 0.3 < padding_fraction(unbucketed)


def test_buckets_by_target_length_leave_the_decoder_little_padding():
    """The decoder runs every slot up to its batch's longest target, padding included (the encoder
    packs its input): sorted by target length, with source and target lengths unrelated, little
    of the targets' slots are padding, though much of the sources' are."""
    rng = random.Random(3)
    pairs = [([4] * rng.randint(1, 40), [5] * rng.randint(1, 40)) for _ in range(3000)]
    batches = make_batches(pairs, 32, seed=0, sort_by="target")
    target_slots = sum(b.tgt_out.numel() for b in batches)
    target_real = sum(len(t) + 1 for _, t in pairs)  # + EOS
    assert 1 - target_real / target_slots < 0.05
    assert padding_fraction(batches) > 0.3  # the sources: the packed encoder skips these
    ordered = make_batches(pairs, 32, shuffle=False, sort_by="target")
    lengths = [int(n) for b in ordered for n in (b.tgt_out != Vocab.pad_id).sum(dim=1)]
    assert lengths == sorted(lengths)
    by_source = make_batches(pairs, 32, seed=0)  # the default: the sources' padding is small
    assert padding_fraction(by_source) < 0.05
    with pytest.raises(ValueError, match=r"sort_by must be one of \['target', 'source'\]"):
        make_batches(pairs, 32, sort_by="length")


def test_batch_order_changes_with_the_epoch_seed():
    pairs = make_reversal_pairs(500, 1, 20, reversal_vocab(10), seed=1)
    first = [b.src.tolist() for b in make_batches(pairs, 16, seed=1)]
    second = [b.src.tolist() for b in make_batches(pairs, 16, seed=2)]
    assert first != second
    ordered = make_batches(pairs, 16, shuffle=False)
    lengths = [n for b in ordered for n in b.src_lengths.tolist()]
    assert lengths == sorted(lengths)


def test_batch_moves_to_a_device_but_lengths_stay_on_the_cpu():
    batch = collate([([4, 5], [5, 4])]).to("cpu")
    assert batch.src_lengths.device == torch.device("cpu")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        make_batches([([4], [4])], 0)
