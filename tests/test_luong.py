"""The other order of a decoding step (Luong et al. 2015, input feeding): its formulas written
out by hand, decoding, beam search and checkpoints, and the configuration that selects it."""

import pytest
import torch
from helpers import ROOT  # noqa: F401  (puts benchmarks/ on the path for the other tests)

from course_utils.checkpoints import load_checkpoint, save_checkpoint
from course_utils.data import Vocab, collate
from course_utils.decoding import beam_search, greedy_decode_pairs
from course_utils.models import LuongDecoder, ModelConfig, build_model
from course_utils.reversal import make_reversal_pairs, reversal_vocab
from course_utils.training import TrainConfig, train

VOCAB = reversal_vocab(12)


def luong(score="general", seed=0, **sizes):
    torch.manual_seed(seed)
    return build_model(ModelConfig(len(VOCAB), len(VOCAB), embed_dim=16, hidden_dim=24,
                                   attention_dim=20, order="luong", score=score, **sizes))


def by_hand(model, src, lengths, tgt_in):
    """Teacher-forced logits from the formulas, one sentence and one step at a time."""
    decoder = model.decoder
    out = []
    for b in range(src.shape[0]):
        n = int(lengths[b])
        h, summary = model.encoder(src[b:b + 1, :n], lengths[b:b + 1])
        h = h[0]  # (n, 2 * hidden)
        s = torch.tanh(decoder.bridge(summary))[0]
        attentional = torch.zeros_like(s)  # h~_0
        rows = []
        for i in range(tgt_in.shape[1]):
            y = decoder.embedding(tgt_in[b, i])
            s = decoder.cell(torch.cat([y, attentional])[None], s[None])[0]  # input feeding
            keys = decoder.attention.project_keys(h[None])[0]
            energies = keys @ s  # general: s^T W h_j
            alpha = torch.softmax(energies, -1)
            c = alpha @ h
            attentional = torch.tanh(decoder.combine(torch.cat([c, s])))
            rows.append(decoder.out(attentional))
        out.append(torch.stack(rows))
    return torch.stack(out)


def test_a_luong_step_is_update_then_attend_then_combine():
    model = luong(maxout_dim=8).eval()
    batch = collate(make_reversal_pairs(4, 2, 7, VOCAB, seed=1))
    with torch.no_grad():
        logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
        want = by_hand(model, batch.src, batch.src_lengths, batch.tgt_in)
    assert torch.allclose(logits, want, atol=1e-5)
    assert weights.shape == (*batch.tgt_in.shape, batch.src.shape[1])
    real = batch.src != Vocab.pad_id
    assert (weights.masked_select(~real[:, None, :].expand_as(weights)) == 0).all()


def test_the_luong_decoder_learns_decodes_and_round_trips(tmp_path):
    model = luong(seed=2)
    pairs = make_reversal_pairs(300, 2, 6, VOCAB, seed=3)
    history = train(model, pairs, pairs[:40], TrainConfig(epochs=3, batch_size=32, lr=5e-3),
                    progress=False)
    assert history.train_loss[-1] < history.train_loss[0]
    decoded = greedy_decode_pairs(model, pairs[:10], batch_size=4, max_len=10)
    assert decoded.attention is not None and len(decoded.tokens) == 10
    beam = beam_search(model, pairs[0][0], beam_size=3, max_len=10)
    assert beam.attention is not None
    path = save_checkpoint(tmp_path / "luong.pt", model, VOCAB, VOCAB)
    restored = load_checkpoint(path)
    assert restored.model.config.order == "luong" and isinstance(restored.model.decoder,
                                                                  LuongDecoder)
    again = greedy_decode_pairs(restored.model, pairs[:10], batch_size=4, max_len=10)
    assert again.tokens == decoded.tokens


@pytest.mark.parametrize("score", ["additive", "general"])
def test_either_order_takes_any_score_that_fits_the_sizes(score):
    for order in ("bahdanau", "luong"):
        torch.manual_seed(0)
        model = build_model(ModelConfig(len(VOCAB), len(VOCAB), embed_dim=8, hidden_dim=12,
                                        attention_dim=10, order=order, score=score))
        batch = collate(make_reversal_pairs(3, 2, 5, VOCAB, seed=0))
        logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
        assert logits.shape[:2] == batch.tgt_in.shape and weights is not None


def test_bad_orders_and_scores_are_clear_errors():
    with pytest.raises(ValueError, match="order must be one of"):
        ModelConfig(10, 10, order="sideways")
    with pytest.raises(ValueError, match="score must be one of"):
        ModelConfig(10, 10, score="cosine")
    # dot compares s (hidden_dim) with h_j (2 * hidden_dim, bidirectional): sizes must agree
    with pytest.raises(ValueError, match="decoder_dim must equal encoder_dim; got 12 and 24"):
        build_model(ModelConfig(10, 10, hidden_dim=12, score="dot"))
    # the course's way: a decoder state as wide as the encoder's outputs, by name or by size
    for order in ("bahdanau", "luong"):
        for width in ("encoder", 24):
            model = build_model(ModelConfig(10, 10, hidden_dim=12, decoder_dim=width,
                                            score="dot", order=order))
            assert model.decoder.attention.key_dim == 24
    forward_only = build_model(ModelConfig(10, 10, hidden_dim=12, decoder_dim="encoder",
                                           score="dot", bidirectional=False))
    assert forward_only.decoder.attention.key_dim == 12
    with pytest.raises(ValueError, match='decoder_dim must be a size, None or "encoder"'):
        ModelConfig(10, 10, decoder_dim="double")


def test_a_forward_only_encoder_reads_each_position_up_to_there():
    # notebook 6's ablation: without the backward direction, h_j has seen only tokens 1..j
    torch.manual_seed(0)
    config = ModelConfig(len(VOCAB), len(VOCAB), embed_dim=8, hidden_dim=12, attention_dim=10,
                         bidirectional=False)
    model = build_model(config)
    assert model.encoder.output_dim == 12
    src = torch.tensor([[5, 6, 7, 8]])
    changed = src.clone()
    changed[0, 3] = 9  # a different last token
    a, summary = model.encoder(src, torch.tensor([4]))
    b, _ = model.encoder(changed, torch.tensor([4]))
    assert torch.allclose(a[0, :3], b[0, :3]) and not torch.allclose(a[0, 3], b[0, 3])
    assert torch.allclose(summary[0], a[0, 3])  # the summary is the last state
    batch = collate(make_reversal_pairs(3, 2, 5, VOCAB, seed=0))
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert weights is not None and logits.shape[:2] == batch.tgt_in.shape
