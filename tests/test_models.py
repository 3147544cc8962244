"""Models: shapes, masking, EOS handling, checkpoints, and the fast path equal to the
per-step reference."""

import sys

import pytest
import torch
from helpers import ROOT

from course_utils.checkpoints import load_checkpoint, save_checkpoint
from course_utils.data import Vocab, collate
from course_utils.decoding import greedy_decode, greedy_decode_pairs
from course_utils.models import DeepOutput, ModelConfig, build_model
from course_utils.reversal import make_reversal_pairs, reversal_vocab
from course_utils.training import sequence_loss

sys.path.insert(0, str(ROOT / "benchmarks"))
from reference_seq2seq import reference_loss, reference_translate  # noqa: E402

VOCAB = reversal_vocab(12)


def model_for(attention=True, seed=0, **sizes):
    torch.manual_seed(seed)
    config = ModelConfig(len(VOCAB), len(VOCAB), embed_dim=16, hidden_dim=24, attention_dim=20,
                         attention=attention, **sizes)
    return build_model(config)


def batch_of(n=6, seed=0, min_len=2, max_len=9):
    return collate(make_reversal_pairs(n, min_len, max_len, VOCAB, seed=seed))


@pytest.mark.parametrize("attention", [True, False])
def test_teacher_forced_shapes(attention):
    model, batch = model_for(attention), batch_of()
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert logits.shape == (*batch.tgt_in.shape, len(VOCAB))
    if attention:
        assert weights.shape == (*batch.tgt_in.shape, batch.src.shape[1])
        torch.testing.assert_close(weights.sum(-1), torch.ones(batch.tgt_in.shape))
    else:
        assert weights is None


def test_padding_gets_zero_attention_in_the_decoder():
    model, batch = model_for(), batch_of()
    _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    padded = batch.src == Vocab.pad_id  # (batch, src_len)
    assert padded.any()
    assert torch.all(weights.masked_select(padded[:, None, :].expand_as(weights)) == 0)


@pytest.mark.parametrize("maxout_dim", [0, 8])
@pytest.mark.parametrize("attention", [True, False])
def test_fast_path_equals_per_step_reference_loss_and_gradients(attention, maxout_dim):
    """Same math: the fast path and the per-step reference agree to 1e-5 in fp32."""
    fast = model_for(attention, maxout_dim=maxout_dim)
    slow = model_for(attention, maxout_dim=maxout_dim)
    slow.load_state_dict(fast.state_dict())
    batch = batch_of(n=8, seed=3)
    fast_loss = sequence_loss(fast(batch.src, batch.src_lengths, batch.tgt_in)[0], batch.tgt_out)
    slow_loss = reference_loss(slow, batch)
    fast_loss.backward()
    slow_loss.backward()
    torch.testing.assert_close(fast_loss, slow_loss, rtol=1e-5, atol=1e-5)
    for (name, p), q in zip(fast.named_parameters(), slow.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-5, msg=name)


def test_padded_batch_loss_equals_the_per_sentence_average():
    """Packing and masking make padding invisible: batch loss = token-weighted mean of the
    losses of each sentence decoded alone."""
    model = model_for()
    pairs = make_reversal_pairs(5, 1, 9, VOCAB, seed=4)
    with torch.no_grad():
        batch = collate(pairs)
        batched = sequence_loss(model(batch.src, batch.src_lengths, batch.tgt_in)[0],
                                batch.tgt_out)
        total, tokens = 0.0, 0
        for pair in pairs:
            alone = collate([pair])
            loss = sequence_loss(model(alone.src, alone.src_lengths, alone.tgt_in)[0],
                                 alone.tgt_out)
            total += float(loss) * alone.n_tokens
            tokens += alone.n_tokens
    assert float(batched) == pytest.approx(total / tokens, abs=1e-5)


@pytest.mark.parametrize("attention", [True, False])
def test_batched_greedy_equals_one_at_a_time(attention):
    model = model_for(attention, seed=1)
    pairs = make_reversal_pairs(20, 1, 9, VOCAB, seed=5)
    decoded = greedy_decode_pairs(model, pairs, batch_size=7, max_len=12)
    for out, (source, _) in zip(decoded.tokens, pairs):
        assert out == reference_translate(model, source, "cpu", max_len=12)


def test_greedy_stops_each_sequence_at_its_own_eos_and_trims_attention():
    model = model_for(seed=2)
    # Make the model emit EOS at step 3 for everyone, by biasing the output layer after
    # two steps: easiest is to force EOS through the bias once tokens are being produced.
    with torch.no_grad():
        model.decoder.out.proj.bias.fill_(-10.0)
        model.decoder.out.proj.bias[VOCAB.stoi["a"]] = 10.0
    pairs = make_reversal_pairs(4, 2, 6, VOCAB, seed=6)
    decoded = greedy_decode_pairs(model, pairs, max_len=5)
    assert all(out == [VOCAB.stoi["a"]] * 5 for out in decoded.tokens)  # never EOS: max_len
    with torch.no_grad():
        model.decoder.out.proj.bias[Vocab.eos_id] = 20.0
    decoded = greedy_decode_pairs(model, pairs, max_len=5)
    assert decoded.tokens == [[]] * 4 and decoded.lengths.tolist() == [0] * 4
    for attention, (source, _) in zip(decoded.attention, pairs):
        assert attention.shape == (1, len(source))  # the EOS step, real source positions


def test_sequences_finishing_at_different_steps_are_trimmed_separately():
    model = model_for(seed=3)
    pairs = make_reversal_pairs(30, 1, 9, VOCAB, seed=7)
    decoded = greedy_decode_pairs(model, pairs, max_len=10)
    for tokens, length, attention, (source, _) in zip(
        decoded.tokens, decoded.lengths, decoded.attention, pairs
    ):
        assert len(tokens) == int(length)
        assert Vocab.eos_id not in tokens
        assert attention.shape[1] == len(source)
        assert attention.shape[0] in (len(tokens), len(tokens) + 1)


@pytest.mark.parametrize("attention", [True, False])
def test_checkpoint_round_trip_gives_identical_outputs(tmp_path, attention):
    model = model_for(attention, seed=4)
    batch = batch_of(seed=8)
    path = save_checkpoint(tmp_path / "run" / "model.pt", model, VOCAB, VOCAB, extra={"n": 1})
    restored = load_checkpoint(path)
    assert restored.src_vocab == VOCAB and restored.extra == {"n": 1}
    assert restored.model.config == model.config
    model.eval()
    with torch.no_grad():
        for a, b in zip(model(batch.src, batch.src_lengths, batch.tgt_in),
                        restored.model(batch.src, batch.src_lengths, batch.tgt_in)):
            assert (a is None and b is None) or torch.equal(a, b)
    assert [p.name for p in (tmp_path / "run").iterdir()] == ["model.pt"]  # no temp left


def test_loading_something_else_is_a_clear_error(tmp_path):
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a course checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")


def test_bad_encoder_input_is_a_clear_error():
    model = model_for()
    with pytest.raises(ValueError, match=r"src must be \(batch, src_len\)"):
        model(torch.zeros(5, dtype=torch.long), torch.tensor([5]), torch.zeros(1, 3).long())


@pytest.mark.parametrize("attention", [True, False])
def test_non_finite_encoder_padding_leaves_every_output_finite(attention):
    model = model_for(attention).eval()
    batch = batch_of(seed=11)
    encoder_outputs, summary, mask = model.encode(batch.src, batch.src_lengths)
    assert not mask.all()  # the batch has padding
    clean, _ = model.decoder(batch.tgt_in, encoder_outputs, summary, mask)
    poisoned = encoder_outputs.masked_fill(~mask[..., None], float("nan"))
    logits, weights = model.decoder(batch.tgt_in, poisoned, summary, mask)
    assert torch.isfinite(logits).all()
    torch.testing.assert_close(logits, clean)
    if attention:
        assert (weights.masked_select(~mask[:, None, :]) == 0).all()


def test_max_len_zero_is_an_error_not_no_limit():
    from course_utils.decoding import beam_search

    model = model_for()
    pairs = make_reversal_pairs(3, 2, 5, VOCAB, seed=1)
    batch = collate(pairs)
    for call in (lambda: greedy_decode(model, batch.src, batch.src_lengths, max_len=0),
                 lambda: greedy_decode_pairs(model, pairs, max_len=0),
                 lambda: beam_search(model, pairs[0][0], beam_size=2, max_len=0)):
        with pytest.raises(ValueError, match="max_len must be at least 1"):
            call()
    assert all(len(t) <= 1 for t in greedy_decode_pairs(model, pairs, max_len=1).tokens)


def test_the_decoder_memory_is_a_typed_record_that_selects_rows():
    from course_utils.models import DecoderMemory

    model = model_for()
    batch = batch_of(n=5, seed=3)
    memory = model.decoder.prepare(*model.encode(batch.src, batch.src_lengths))
    assert isinstance(memory, DecoderMemory) and memory.keys is not None
    rows = torch.tensor([True, False, True, False, True])
    chosen = memory.select(rows)
    assert chosen.encoder_outputs.shape[0] == chosen.keys.shape[0] == chosen.mask.shape[0] == 3
    torch.testing.assert_close(chosen.summary, memory.summary[rows])
    vanilla = model_for(attention=False)
    assert vanilla.decoder.prepare(*vanilla.encode(batch.src, batch.src_lengths)).keys is None


def test_decoding_restores_the_training_mode_even_after_an_error():
    model = model_for()
    model.train()
    pairs = make_reversal_pairs(3, 2, 5, VOCAB, seed=1)
    greedy_decode_pairs(model, pairs)
    assert model.training
    batch = collate(pairs)
    with pytest.raises(ValueError):
        greedy_decode(model, batch.src, batch.src_lengths[:2])  # lengths of the wrong size
    assert model.training


# --- the paper's deep output layer (appendix A.2.2) -------------------------------------

def test_deep_output_is_the_papers_maxout_then_projection():
    """t~ = U_o s + C_o c + V_o E y (one linear on [s; c; y]); t_j = max(t~_{2j-1}, t~_{2j});
    logits = W_o t. Written out by hand, with the weight matrix cut into U_o, C_o, V_o."""
    torch.manual_seed(0)
    hidden, encoder, embed, l, vocab = 5, 6, 4, 3, 11
    layer = DeepOutput(hidden + encoder + embed, l, vocab)
    s, c, y = torch.randn(7, hidden), torch.randn(7, encoder), torch.randn(7, embed)
    weight, bias = layer.pre.weight, layer.pre.bias  # (2l, hidden + encoder + embed)
    u_o, c_o, v_o = weight.split([hidden, encoder, embed], dim=1)
    t_tilde = s @ u_o.T + c @ c_o.T + y @ v_o.T + bias  # (7, 2l)
    t = torch.stack([torch.maximum(t_tilde[:, 2 * j], t_tilde[:, 2 * j + 1])
                     for j in range(l)], dim=1)  # (7, l)
    expected = t @ layer.proj.weight.T + layer.proj.bias
    torch.testing.assert_close(layer(torch.cat([s, c, y], -1)), expected)
    assert layer(torch.randn(2, 9, hidden + encoder + embed)).shape == (2, 9, vocab)


def test_maxout_dim_zero_is_one_linear_layer_and_negative_is_refused():
    layer = DeepOutput(10, 0, 7)
    assert layer.pre is None and layer.proj.in_features == 10
    x = torch.randn(3, 10)
    torch.testing.assert_close(layer(x), x @ layer.proj.weight.T + layer.proj.bias)
    with pytest.raises(ValueError, match="maxout_dim must be >= 0"):
        DeepOutput(10, -1, 7)


def test_deep_output_cuts_the_output_layers_arithmetic_at_multi30k_size():
    """The lesson's claim: with the CPU configuration's sizes and a ~7,800-word vocabulary the
    deep output needs at least 4x fewer multiply-adds per target token than the shallow one."""
    from course_utils.translation_setup import CPU
    d = CPU.model.hidden_dim + 2 * CPU.model.hidden_dim + CPU.model.embed_dim
    shallow = DeepOutput(d, 0, 7_800)
    deep = DeepOutput(d, CPU.model.maxout_dim, 7_800)
    weights = lambda m: sum(p.numel() for n, p in m.named_parameters() if n.endswith("weight"))  # noqa: E731
    assert weights(shallow) >= 4 * weights(deep)


@pytest.mark.parametrize("attention", [True, False])
def test_logits_at_chosen_positions_equal_the_full_logits_there(attention):
    model, batch = model_for(attention), batch_of(n=7, seed=8)
    model.eval()
    real = batch.tgt_out != Vocab.pad_id
    assert not real.all()  # the batch has padding
    full, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
    some, _ = model(batch.src, batch.src_lengths, batch.tgt_in, positions=real)
    assert some.shape == (int(real.sum()), len(VOCAB))
    torch.testing.assert_close(some, full[real])
    with pytest.raises(ValueError, match="positions must be a bool tensor shaped like tgt_in"):
        model(batch.src, batch.src_lengths, batch.tgt_in, positions=real.long())


def test_skipping_padding_gives_the_same_loss_and_gradients():
    """train() runs the output layer only at real positions: same loss, same gradients."""
    full_model, real_model = model_for(), model_for()
    batch = batch_of(n=8, seed=9)
    real = batch.tgt_out != Vocab.pad_id
    full = sequence_loss(full_model(batch.src, batch.src_lengths, batch.tgt_in)[0], batch.tgt_out)
    logits, _ = real_model(batch.src, batch.src_lengths, batch.tgt_in, positions=real)
    skipped = torch.nn.functional.cross_entropy(logits, batch.tgt_out[real])
    full.backward()
    skipped.backward()
    torch.testing.assert_close(full, skipped)
    for (name, p), q in zip(full_model.named_parameters(), real_model.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)


def test_the_encoder_summary_is_forward_at_the_last_real_token_and_backward_at_the_first():
    # E10.2's lesson: the fixed context can be read off the encoder outputs.
    torch.manual_seed(0)
    model = build_model(ModelConfig(11, 9, embed_dim=5, hidden_dim=4, attention=False))
    lengths = torch.tensor([6, 2, 4])
    src = torch.randint(4, 11, (3, 6))
    src[torch.arange(6)[None, :] >= lengths[:, None]] = Vocab.pad_id
    outputs, summary, _ = model.encode(src, lengths)
    forward = outputs[torch.arange(3), lengths - 1, :4]
    backward = outputs[:, 0, 4:]
    assert torch.allclose(summary, torch.cat([forward, backward], -1), atol=1e-6)
    assert not torch.allclose(summary, outputs[:, -1])  # the last column is padding


def test_a_decoder_class_of_ones_own_takes_the_library_weights():
    from course_utils.models import AttentionDecoder, VanillaDecoder

    class Mine(VanillaDecoder):
        def context(self, state, memory):
            return memory.summary * 1.0, None

    config = ModelConfig(11, 9, embed_dim=5, hidden_dim=4, attention=False)
    torch.manual_seed(0)
    library = build_model(config).eval()
    mine = build_model(config, decoder_class=Mine).eval()
    mine.load_state_dict(library.state_dict())
    assert type(mine.decoder) is Mine
    src, lengths = torch.randint(4, 11, (2, 5)), torch.tensor([5, 5])
    tgt = torch.randint(4, 9, (2, 3))
    assert torch.allclose(mine(src, lengths, tgt)[0], library(src, lengths, tgt)[0])
    with pytest.raises(TypeError, match="subclass of VanillaDecoder .* without attention"):
        build_model(config, decoder_class=AttentionDecoder)
    with pytest.raises(TypeError, match="subclass of AttentionDecoder"):
        build_model(ModelConfig(11, 9, attention=True), decoder_class=Mine)
