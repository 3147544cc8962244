"""Tokenization, BLEU against sacreBLEU on known strings, length buckets, and beam search."""

import pytest
import sacrebleu
import torch

from course_utils.data import collate
from course_utils.decoding import beam_search, greedy_decode_pairs, translate_ids
from course_utils.metrics import bleu_by_length, corpus_bleu
from course_utils.models import ModelConfig, build_model
from course_utils.reversal import make_reversal_pairs, reversal_vocab
from course_utils.text import Tokenizer, build_translation_data


def test_moses_splits_punctuation_and_detokenizes_back():
    english = Tokenizer("en", lowercase=False)
    assert english("A dog's ball, red.") == ["A", "dog", "'s", "ball", ",", "red", "."]
    assert english.detokenize(english("A dog's ball, red.")) == "A dog's ball, red."
    german = Tokenizer("de")
    assert german("Zwei Männer stehen am Herd.") == ["zwei", "männer", "stehen", "am", "herd", "."]
    with pytest.raises(ValueError, match="lang must be 'en' or 'de'"):
        Tokenizer("fr")


def test_corpus_bleu_equals_sacrebleu():
    hyps = ["the cat sat on the mat", "a dog runs in the park"]
    refs = ["the cat sat on the mat", "a dog is running in the park"]
    ours = corpus_bleu(hyps, refs)
    assert ours.score == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert ours.n == 2 and "nrefs:1" in ours.signature and "case:mixed" in ours.signature
    assert corpus_bleu(["The Cat Sat On The Mat"], ["the cat sat on the mat"],
                       lowercase=True).score == pytest.approx(100.0)
    assert "case:lc" in corpus_bleu(["a"], ["a"], lowercase=True).signature


def test_bleu_buckets_use_the_lesson_boundaries():
    lengths = [9, 10, 20, 21, 3]
    hyps = ["x y z w"] * 5
    result = bleu_by_length(hyps, hyps, lengths)
    assert list(result) == ["< 10", "10-20", "> 20"]
    assert [result[b].n for b in result] == [2, 2, 1]
    assert bleu_by_length(hyps[:1], hyps[:1], [5])["> 20"] is None
    with pytest.raises(ValueError, match="same length"):
        bleu_by_length(hyps, hyps, [1])


def test_vocabularies_come_from_the_training_split_only():
    raw = {"train": [("A dog.", "Ein Hund."), ("A cat.", "Eine Katze.")],
           "test": [("A horse.", "Ein Pferd.")]}
    data = build_translation_data(raw, min_freq=1)
    assert "horse" not in data.src_vocab.stoi and "dog" in data.src_vocab.stoi
    assert data.pairs["test"][0][0][1] == data.src_vocab.unk_id


VOCAB = reversal_vocab(10)


def trained_model(attention=True):
    from course_utils.training import TrainConfig, seed_everything, train

    seed_everything(0)
    model = build_model(ModelConfig(len(VOCAB), len(VOCAB), embed_dim=16, hidden_dim=32, attention_dim=32, attention=attention))
    train(model, make_reversal_pairs(1500, 2, 6, VOCAB, seed=1),
          make_reversal_pairs(50, 2, 6, VOCAB, seed=2), TrainConfig(epochs=3), progress=False)
    return model.eval()


def log_probability(model, source, output):
    """log p(output + EOS | source), by teacher forcing: independent of the beam code."""
    batch = collate([(source, output)])
    with torch.no_grad():
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
    return float(logits.log_softmax(-1)[0].gather(1, batch.tgt_out[0][:, None]).sum())


@pytest.mark.parametrize("attention", [True, False])
def test_beam_of_one_is_greedy(attention):
    model = trained_model(attention)
    pairs = make_reversal_pairs(30, 2, 6, VOCAB, seed=3)
    greedy = greedy_decode_pairs(model, pairs, max_len=12)
    for (source, _), expected in zip(pairs, greedy.tokens):
        assert beam_search(model, source, beam_size=1, max_len=12).tokens == expected


def test_beam_scores_are_the_model_log_probabilities_and_attention_is_kept():
    model = trained_model()
    pairs = make_reversal_pairs(20, 2, 6, VOCAB, seed=4)
    for source, _ in pairs:
        result = beam_search(model, source, beam_size=4)
        assert result.score == pytest.approx(log_probability(model, source, result.tokens),
                                             abs=1e-4)
        assert result.attention.shape == (len(result.tokens) + 1, len(source))
        torch.testing.assert_close(result.attention.sum(-1), torch.ones(len(result.tokens) + 1))
    decoded = translate_ids(model, [s for s, _ in pairs[:5]], beam_size=3)
    assert len(decoded.tokens) == 5 and len(decoded.attention) == 5
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        beam_search(model, [4, 5], beam_size=0)


def test_quick_translation_round_trip_gives_text_attention_and_bleu():
    from course_utils.training import seed_everything
    from course_utils.translation import evaluate_bleu, translate
    from course_utils.translation_setup import QUICK, prepare_data

    data = prepare_data(QUICK, splits=("train", "test_2016_flickr"))
    assert len(data.pairs["train"]) == QUICK.max_train
    assert len(data.raw["test_2016_flickr"]) == QUICK.max_eval
    seed_everything(0)
    model = build_model(QUICK.model_config(data.src_vocab, data.tgt_vocab, attention=True))
    [result] = translate(model, data, ["A dog runs on the beach."], beam_size=2)
    assert result.source_tokens == ["a", "dog", "runs", "on", "the", "beach", "."]
    rows = len(result.output_tokens)
    assert result.attention.shape in ((rows + 1, 7), (rows, 7))  # with or without the EOS step
    evaluation = evaluate_bleu(model, data, "test_2016_flickr")
    assert evaluation.bleu.n == QUICK.max_eval and 0 <= evaluation.bleu.score <= 100
    assert sum(b.n for b in evaluation.by_length.values() if b) == QUICK.max_eval
    with pytest.raises(ValueError, match=r"sentences \[0\] have no tokens"):
        translate(model, data, ["   "])
