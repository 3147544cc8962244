"""Notebook 4's bookkeeping: what it prints about its data, saves of its models and prints of
their scores. The cells call these in one line, so what each must say is stated here."""

from types import SimpleNamespace

import matplotlib.pyplot as plt
import pytest
import torch

from course_utils.checkpoints import MULTI30K_RUN, load_checkpoint
from course_utils.metrics import BleuResult
from course_utils.models import ModelConfig, build_model
from course_utils.text import build_translation_data
from course_utils.training import History
from course_utils.translation_setup import QUICK
from course_utils.views.translation import (
    bleu_table,
    describe_lengths,
    describe_splits,
    describe_vocabularies,
    plot_sentence_lengths,
    save_final_checkpoints,
    side_by_side,
    start_epoch_checkpoints,
)

RAW = {
    "train": [("A dog runs.", "Ein Hund rennt."), ("A cat sleeps.", "Eine Katze schläft."),
              ("A dog sleeps.", "Ein Hund schläft."), ("Two cats run.", "Zwei Katzen rennen.")],
    "val": [("A cat runs.", "Eine Katze rennt.")],
}


@pytest.fixture
def data():
    return build_translation_data(RAW, min_freq=1)


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Notebook 4's run folder in a temporary place, at real scale."""
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    return tmp_path


def tiny_model(data, attention: bool, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(ModelConfig(len(data.src_vocab), len(data.tgt_vocab), embed_dim=8, hidden_dim=12, attention_dim=10,
                                   attention=attention))


def test_describe_splits_counts_every_split_and_quotes_the_first_training_pairs(data):
    text = describe_splits(data, examples=2)
    lines = text.splitlines()
    assert lines[:3] == [f"{'split':18s}{'sentences':>10s}", f"{'train':18s}{4:10,d}",
                         f"{'val':18s}{1:10,d}"]
    assert lines[3:] == ["", "EN: A dog runs.", "DE: Ein Hund rennt.",
                         "", "EN: A cat sleeps.", "DE: Eine Katze schläft."]


def test_the_untrained_attention_model_is_saved_as_epoch_0_and_each_epoch_after(data, runs):
    model = tiny_model(data, attention=True)
    save_epoch = start_epoch_checkpoints(model, data, QUICK)
    assert MULTI30K_RUN.epoch_checkpoints() == {0: runs / "multi30k" / "epochs" /
                                                "attention-epoch0.pt"}
    save_epoch(1, model, History([1], [2.0], [2.5], seconds=[3.0]))
    saved = load_checkpoint(MULTI30K_RUN.epoch_checkpoint(1))
    assert saved.history.epoch == [1] and saved.extra == {"config": "quick"}
    assert saved.tokenizers == data.tokenizer_settings()


def test_both_final_models_are_saved_where_notebook_5_reads_them_and_summed_up(data, runs):
    models = {"attention": tiny_model(data, True), "vanilla": tiny_model(data, False, seed=1)}
    histories = {"attention": History([1, 2], [3.0, 2.0], [2.9, 1.716], seconds=[200.0, 450.0]),
                 "vanilla": History([1, 2], [3.1, 2.4], [3.0, 2.162], seconds=[180.0, 366.0])}
    summary = save_final_checkpoints(models, histories, data, QUICK)
    assert summary.splitlines() == [
        "attention: trained in 7.5 min, final validation loss 1.716",
        "vanilla  : trained in 6.1 min, final validation loss 2.162",
        f"both models: 13.6 min on cpu; saved in {runs / 'multi30k'}",
    ]
    for name in models:
        restored = load_checkpoint(MULTI30K_RUN.checkpoint(name))
        assert restored.model.config.attention == (name == "attention")
        assert restored.history.val_loss == histories[name].val_loss
        assert torch.equal(restored.model.decoder.embedding.weight,
                           models[name].decoder.embedding.weight)
    with pytest.raises(ValueError, match="need a trained history per model"):
        save_final_checkpoints(models, {"attention": histories["attention"]}, data, QUICK)


def scored(score: float, n: int = 3, hypotheses=(), lengths=()):
    return SimpleNamespace(bleu=BleuResult(score, f"nrefs:1|score:{score}", n),
                           hypotheses=list(hypotheses), references=[f"ref {k}" for k in range(n)],
                           source_lengths=list(lengths))


def test_the_bleu_table_puts_the_baseline_first_and_each_gain_over_it_last():
    evaluations = {("attention", "test_a"): scored(28.5, 1000), ("attention", "test_b"): scored(16.5, 461),
                   ("vanilla", "test_a"): scored(19.8, 1000), ("vanilla", "test_b"): scored(10.6, 461)}
    lines = bleu_table(evaluations).splitlines()
    assert lines[0] == "test set           sentences  vanilla  attention   gain"
    assert lines[1] == "test_a                  1000     19.8       28.5   +8.7"
    assert lines[2] == "test_b                   461     10.6       16.5   +5.9"
    assert lines[-1] == "sacreBLEU signature: nrefs:1|score:28.5"
    with pytest.raises(ValueError, match="missing"):
        bleu_table({k: v for k, v in evaluations.items() if k != ("vanilla", "test_b")})
    with pytest.raises(ValueError, match="baseline 'vanilla'"):
        bleu_table({k: v for k, v in evaluations.items() if k[0] == "attention"})


def test_side_by_side_shows_the_sentence_nearest_each_length_with_every_models_output():
    sources = ["one two", "one two three four five six seven", "a b c d e f g h i j k l m n"]
    lengths = [2, 7, 14]
    evaluations = {"vanilla": scored(1.0, 3, ["v0", "v1", "v2"], lengths),
                   "attention": scored(2.0, 3, ["a0", "a1", "a2"], lengths)}
    blocks = side_by_side(sources, evaluations, near_lengths=(6, 20)).split("\n\n")
    assert blocks[0].splitlines() == [f"source (7 tokens): {sources[1]}", "  reference: ref 1",
                                      "  vanilla:   v1", "  attention: a1"]
    assert blocks[1].splitlines()[0] == f"source (14 tokens): {sources[2]}"
    with pytest.raises(ValueError, match="one output per source sentence"):
        side_by_side(sources[:2], evaluations)


def test_describe_vocabularies_shows_one_pairs_tokens_the_sizes_and_the_unknown_share(data):
    lines = describe_vocabularies(data, QUICK, example=2).splitlines()
    assert lines[:2] == ["EN tokens: ['a', 'dog', 'sleeps', '.']",
                         "DE tokens: ['ein', 'hund', 'schläft', '.']"]
    assert lines[3] == (f"vocabulary: {len(data.src_vocab):,} English and {len(data.tgt_vocab):,} "
                        f"German tokens (min_freq {QUICK.min_freq}, 4 special tokens each)")
    # validation "a cat runs ." / "eine katze rennt .": every word was seen in training
    assert lines[4:] == ["English validation tokens that are <unk>: 0.0%",
                         "German validation tokens that are <unk>: 0.0%"]


def test_describe_lengths_gives_the_mean_lengths_and_each_buckets_share():
    raw = {"train": [(" ".join(["w"] * n), "v " * (n - 1) + "v") for n in (5, 12, 15, 25)]}
    lines = describe_lengths(build_translation_data(raw, min_freq=1)).splitlines()
    assert lines == ["mean length: English 14.2 tokens, German 14.2 tokens",
                     "source length < 10  :  25.0% of training sentences",
                     "source length 10-20 :  50.0% of training sentences",
                     "source length > 20  :  25.0% of training sentences"]


def test_the_length_histogram_counts_every_training_sentence_and_marks_the_buckets(data):
    fig = plot_sentence_lengths(data)
    [ax] = fig.axes
    english, german = ax.containers  # one bar container per language
    assert sum(p.get_height() for p in english) == len(data.pairs["train"])
    assert sum(p.get_height() for p in german) == len(data.pairs["train"])
    edges = sorted(line.get_xdata()[0] for line in ax.get_lines())
    assert edges == [9.5, 20.5]  # between < 10 and 10-20, between 10-20 and > 20
    assert "< 10 / 10-20 / > 20" in ax.get_title()
    # side by side, not overlaid: no English bar overlaps a German one, both opaque
    for a, b in zip(english, german):
        assert a.get_x() + a.get_width() <= b.get_x() + 1e-9
    assert {p.get_alpha() for p in [*english, *german]} <= {None, 1.0}
    assert english[0].get_facecolor() != german[0].get_facecolor()
    plt.close(fig)
    with pytest.raises(ValueError, match="no training pairs"):
        describe_lengths(build_translation_data({"train": []}, min_freq=1))
