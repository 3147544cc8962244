"""Exposure bias, as notebook 4 measures it: the same model teacher-forced and free-running.

The claims: fed its own outputs, a model agrees with teacher forcing until its first mistake;
a model that is right whenever it is fed the reference is right free-running too; one early
mistake that teacher forcing hides spoils everything after it when the model is fed its own
words.
"""

import numpy as np
import pytest
import torch

from course_utils.data import Vocab, collate
from course_utils.decoding import greedy_decode_pairs
from course_utils.exposure_bias import (
    accuracy_by_position,
    compare_positions,
    teacher_forced_predictions,
)
from course_utils.models import ModelConfig, build_model

VOCAB_SIZE = 12  # <pad> <bos> <eos> <unk>, then tokens 4..11
FIRST = 5  # every reference counts up from here: 5, 6, 7, ... then <eos>


def successor_model(first_word: int) -> torch.nn.Module:
    """A model that writes ``first_word`` after ``<bos>``, then the successor of whatever it
    is fed (k -> k + 1), and ``<eos>`` after 9: the next word depends only on the previous
    one, through a one-hot embedding and a hand-set output layer."""
    config = ModelConfig(src_vocab_size=VOCAB_SIZE, tgt_vocab_size=VOCAB_SIZE,
                         embed_dim=VOCAB_SIZE, hidden_dim=4, attention=False, maxout_dim=0)
    model = build_model(config)
    successor = {Vocab.bos_id: first_word, 9: Vocab.eos_id,
                 **{k: k + 1 for k in range(4, 9)}, 10: 11, 11: 4}
    with torch.no_grad():
        model.decoder.embedding.weight.copy_(torch.eye(VOCAB_SIZE))
        weight = model.decoder.out.proj.weight  # (vocab, [s_i; c_i; y_(i-1)])
        weight.zero_()
        model.decoder.out.proj.bias.zero_()
        for previous, word in successor.items():
            weight[word, weight.shape[1] - VOCAB_SIZE + previous] = 20.0
    return model.eval()


def counting_pairs():
    """References 5, 6, ..., 9 (five words) for sources of several lengths."""
    return [([4] * n, list(range(FIRST, 10))) for n in (3, 5, 8)]


def test_a_model_right_under_teacher_forcing_is_right_free_running():
    accuracy = accuracy_by_position(successor_model(FIRST), counting_pairs())
    assert np.all(accuracy.teacher_forced == 1.0)
    assert np.all(accuracy.free_running == 1.0)
    assert accuracy.sentences.tolist() == [3] * 6  # five words and <eos>


def test_one_early_mistake_spoils_every_later_word_only_when_fed_its_own_words():
    accuracy = accuracy_by_position(successor_model(FIRST - 1), counting_pairs())
    # teacher forcing: wrong at position 1 only, since every later step is fed the reference
    assert accuracy.teacher_forced.tolist() == [0.0, 1, 1, 1, 1, 1]
    # free running: 4, 5, 6, ... one step behind the reference from the first word on
    assert accuracy.free_running.tolist() == [0.0] * 6
    forced, free = accuracy.pooled(2, 6)
    assert (forced, free) == (1.0, 0.0)


def test_free_running_agrees_with_teacher_forcing_until_its_first_mistake():
    torch.manual_seed(0)
    model = build_model(ModelConfig(src_vocab_size=VOCAB_SIZE, tgt_vocab_size=VOCAB_SIZE,
                                    embed_dim=8, hidden_dim=8, attention_dim=8)).eval()
    generator = torch.Generator().manual_seed(1)
    pairs = [(torch.randint(4, VOCAB_SIZE, (n,), generator=generator).tolist(),
              torch.randint(4, VOCAB_SIZE, (m,), generator=generator).tolist())
             for n, m in [(3, 4), (6, 5), (9, 7), (4, 9)] * 3]
    forced = teacher_forced_predictions(model, pairs, batch_size=5)
    free = greedy_decode_pairs(model, pairs, max_len=12).tokens
    compared = 0
    for f, g, (_, target) in zip(forced, free, pairs):
        reference = [*target, Vocab.eos_id]
        g = [*g, Vocab.eos_id]
        for k, token in enumerate(reference):
            assert f[k] == g[k], "fed the same prefix, both ways must predict the same word"
            compared += 1
            if g[k] != token:  # the first mistake: from here the prefixes differ
                break
    assert compared >= len(pairs)


def test_teacher_forcing_predicts_one_word_per_reference_position():
    model = successor_model(FIRST)
    pairs = counting_pairs()
    predictions = teacher_forced_predictions(model, pairs)
    assert predictions == [[FIRST, 6, 7, 8, 9, Vocab.eos_id]] * 3
    batch = collate(pairs)  # the same predictions as one forward pass, read by hand
    logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert logits.argmax(-1).tolist() == predictions


def test_short_outputs_are_wrong_where_they_never_reached():
    accuracy = compare_positions(teacher_forced=[[5, 6, Vocab.eos_id]],
                                 free_running=[[5]],
                                 references=[[5, 6, Vocab.eos_id]])
    assert accuracy.free_running.tolist() == [1.0, 0.0, 0.0]
    assert accuracy.teacher_forced.tolist() == [1.0, 1.0, 1.0]
    assert "positions     1: teacher-forced 100%, free-running 100%" in accuracy.summary([(1, 1)])


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="one sequence per sentence"):
        compare_positions([[1]], [], [[2]])
    with pytest.raises(ValueError, match="one token per reference position"):
        compare_positions([[1, 2]], [[1]], [[2]])
    with pytest.raises(ValueError, match="at least <eos>"):
        compare_positions([[]], [[]], [[]])
    accuracy = compare_positions([[2]], [[2]], [[2]])
    with pytest.raises(ValueError, match="no references reach position 3"):
        accuracy.pooled(3, 4)
