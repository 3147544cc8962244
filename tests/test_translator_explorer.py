"""Translating with a checkpoint, teacher-forced attention, heatmaps, and the explorer.

A tiny English-German model trained in seconds on a generated corpus stands in for the
notebook-4 checkpoint.
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from course_utils.checkpoints import CheckpointError, save_checkpoint
from course_utils.explorer import (
    AttentionExplorer,
    describe_steps,
    explore,
    plot_decoding,
    widgets_available,
)
from course_utils.models import ModelConfig, build_model
from course_utils.plotting import plot_attention, plot_attention_grid
from course_utils.text import build_translation_data
from course_utils.training import TrainConfig, seed_everything, train
from course_utils.translation import Translation, Translator

ADJECTIVES = {"red": "rote", "big": "große", "small": "kleine", "old": "alte"}
NOUNS = {"dog": "hund", "man": "mann", "child": "kind", "cat": "katze"}
VERBS = {"runs": "läuft", "sleeps": "schläft", "plays": "spielt", "sings": "singt"}


def corpus():
    pairs = []
    for (a, a_de), (n, n_de), (v, v_de) in itertools.product(
            ADJECTIVES.items(), NOUNS.items(), VERBS.items()):
        pairs.append((f"A {a} {n} {v}.", f"Ein {a_de} {n_de} {v_de}."))
        pairs.append((f"The {n} {v} today.", f"Heute {v_de} der {n_de}."))  # verb second
    return pairs


@pytest.fixture(scope="module")
def setup():
    pairs = corpus()
    data = build_translation_data({"train": pairs * 4, "val": pairs[:20]}, min_freq=1)
    seed_everything(0)
    config = ModelConfig(len(data.src_vocab), len(data.tgt_vocab), embed_dim=24, hidden_dim=48, attention_dim=48, attention=True)
    model = build_model(config)
    train(model, data.pairs["train"], data.pairs["val"],
          TrainConfig(epochs=6, batch_size=32, lr=5e-3), progress=False)
    return data, model.eval()


@pytest.fixture(scope="module")
def translator(setup):
    data, model = setup
    return Translator.from_data(model, data)


def test_a_checkpoint_translates_exactly_like_the_model_it_saved(setup, translator, tmp_path):
    data, model = setup
    path = save_checkpoint(tmp_path / "model.pt", model, data.src_vocab, data.tgt_vocab,
                           tokenizers=data.tokenizer_settings(), extra={"config": "cpu"})
    restored = Translator.from_checkpoint(path)
    assert restored.src_tokenizer.lowercase and restored.tgt_tokenizer.lang == "de"
    sentences = ["A red dog runs.", "The cat sings today.", "A big child sleeps."]
    for ours, theirs in zip(translator.translate(sentences), restored.translate(sentences)):
        assert ours.output_tokens == theirs.output_tokens and ours.text == theirs.text
        torch.testing.assert_close(ours.attention, theirs.attention)
    first = translator.translate(sentences[:1])[0]
    assert first.text == "ein rote hund läuft."  # the model learned the toy language


def test_tokenizer_settings_come_from_the_checkpoint_never_a_guess(setup, tmp_path):
    data, model = setup
    cased = {"source": {"lang": "en", "lowercase": False},
             "target": {"lang": "de", "lowercase": False}}
    path = save_checkpoint(tmp_path / "m.pt", model, data.src_vocab, data.tgt_vocab,
                           tokenizers=cased)
    restored = Translator.from_checkpoint(path)
    assert not restored.src_tokenizer.lowercase and not restored.tgt_tokenizer.lowercase
    assert restored.translate(["A RED dog runs."])[0].source_tokens[1] == "RED"
    bare = save_checkpoint(tmp_path / "m2.pt", model, data.src_vocab, data.tgt_vocab)
    with pytest.raises(ValueError, match="no tokenizer settings: it is not a translation"):
        Translator.from_checkpoint(bare)
    broken = save_checkpoint(tmp_path / "m3.pt", model, data.src_vocab, data.tgt_vocab,
                             tokenizers={"source": {"lang": "fr", "lowercase": True},
                                         "target": {"lang": "de", "lowercase": True}})
    with pytest.raises(ValueError, match="m3.pt: its tokenizer settings are damaged"):
        Translator.from_checkpoint(broken)
    with pytest.raises(CheckpointError, match="empty"):
        (tmp_path / "empty.pt").write_bytes(b"")
        Translator.from_checkpoint(tmp_path / "empty.pt")


def test_each_translation_lines_up_tokens_rows_and_attention(translator):
    for beam in (1, 3):
        for result in translator.translate(["A small cat plays.", "The man runs today."],
                                           beam_size=beam):
            assert isinstance(result, Translation)
            assert result.attention.shape == (len(result.row_labels), len(result.source_tokens))
            assert result.word_attention.shape == (len(result.output_tokens),
                                                   len(result.source_tokens))
            assert result.finished and result.row_labels[-1] == "<eos>"
            np.testing.assert_allclose(result.attention.sum(-1).numpy(), 1.0, atol=1e-5)


def test_teacher_forcing_the_greedy_output_reproduces_its_attention(translator):
    sentences = ["A old man sings.", "The dog sleeps today.", "A red cat runs."]
    greedy = translator.translate(sentences)
    forced = translator.force(sentences, [g.text for g in greedy])
    for g, f in zip(greedy, forced):
        assert f.output_tokens == g.output_tokens and f.finished
        torch.testing.assert_close(f.attention, g.attention, atol=1e-5, rtol=1e-4)


def test_unknown_words_are_reported_and_bad_input_is_a_clear_error(setup, translator):
    [result] = translator.translate(["A purple dog runs."])
    assert result.unknown == ["purple"]
    with pytest.raises(TypeError, match="list of strings; got one string"):
        translator.translate("A dog runs.")
    with pytest.raises(ValueError, match=r"sentences \[1\] have no tokens"):
        translator.translate(["A dog runs.", "  "])
    with pytest.raises(ValueError, match="beam_size must be >= 1"):
        translator.translate(["A dog runs."], beam_size=0)
    with pytest.raises(ValueError, match="one reference per sentence; got 2 references for 1"):
        translator.force(["A dog runs."], ["x", "y"])
    data, _ = setup
    vanilla = build_model(ModelConfig(len(data.src_vocab), len(data.tgt_vocab), embed_dim=8, hidden_dim=8, attention_dim=8,
                                      attention=False))
    plain = Translator.from_data(vanilla, data)
    with pytest.raises(ValueError, match="no attention"):
        plain.force(["A dog runs."], ["ein hund läuft."])
    with pytest.raises(ValueError, match="no attention"):
        _ = plain.translate(["A dog runs."])[0].word_attention
    with pytest.raises(ValueError, match="vanilla seq2seq"):
        AttentionExplorer(plain, "A dog runs.")


# ----------------------------------------------------------------------------- plots


def _overlaps(labels) -> int:
    boxes = [label.get_window_extent() for label in labels if label.get_text()]
    return sum(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))


def test_heatmap_labels_do_not_collide_at_sentence_length_30():
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(30) * 0.3, size=30)
    source = [f"englishword{j}" for j in range(30)]
    target = [f"deutscheswort{i}" for i in range(30)]
    fig = plot_attention(weights, source, target, mark_alignment=True)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert len(ax.get_xticklabels()) == 30 and len(ax.get_yticklabels()) == 30
    assert _overlaps(ax.get_xticklabels()) == 0 and _overlaps(ax.get_yticklabels()) == 0
    # the hard alignment: one dot per row, on that row's largest weight
    [dots] = ax.collections[1:]
    np.testing.assert_array_equal(dots.get_offsets()[:, 0] - 0.5, weights.argmax(axis=1))
    np.testing.assert_array_equal(dots.get_offsets()[:, 1] - 0.5, np.arange(30))
    plt.close(fig)


def test_highlights_outline_the_asked_rows_and_cells():
    fig = plot_attention(np.eye(4), highlight_rows=[2], highlight_cells=[(0, 1)])
    patches = [p for p in fig.axes[0].patches if p.get_edgecolor()[:3] != (1, 1, 1)]
    assert sorted((p.get_xy(), p.get_width()) for p in patches) == [((0, 2), 4), ((1, 0), 1)]
    with pytest.raises(ValueError, match=r"outside the 4 x 4 matrix: \[4\]"):
        plot_attention(np.eye(4), highlight_rows=[4])
    plt.close("all")


def test_a_grid_shows_each_sentence_with_one_shared_colour_scale(translator):
    results = translator.translate(["A red dog runs.", "The cat sings today.",
                                    "A big child sleeps."])
    fig = plot_attention_grid(results, titles=["one", "two", "three"], ncols=2,
                              mark_alignment=True)
    heatmaps = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in heatmaps] == ["one", "two", "three"]
    assert [t.get_text() for t in heatmaps[1].get_yticklabels()] == results[1].row_labels
    assert len([ax for ax in fig.axes if ax.get_label() == "<colorbar>"]) == 1
    # three maps asked for in two columns come out as one column: no empty fourth slot
    assert len(fig.axes) == 4 and all(ax.get_visible() for ax in fig.axes)
    plt.close(fig)
    tuple_fig = plot_attention_grid([(np.eye(2), ["a", "b"], ["x", "y"])])
    assert tuple_fig.axes[0].get_title() == "sentence 1"
    plt.close(tuple_fig)
    with pytest.raises(ValueError, match="items is empty"):
        plot_attention_grid([])
    with pytest.raises(ValueError, match=r"titles must have one entry per item \(1\); got 2"):
        plot_attention_grid([(np.eye(2), ["a", "b"], ["x", "y"])], titles=["a", "b"])
    with pytest.raises(TypeError, match="Translation or a"):
        plot_attention_grid([np.eye(2)])


# ----------------------------------------------------------------------------- explorer


def test_static_explorer_shows_the_figure_and_a_line_per_step(translator, capsys, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    monkeypatch.setenv("COURSE_QUICK", "1")
    assert widgets_available() == (False, "COURSE_QUICK is set (smoke-test run)")
    assert explore(translator, "A small dog plays.") is None
    text = capsys.readouterr().out
    assert "Static view (COURSE_QUICK is set" in text and "DE: ein kleine hund spielt." in text
    [result] = translator.translate(["A small dog plays."])
    assert describe_steps(result)[2] in text  # one line per step, as describe_steps says
    assert len(shown) == 1 and shown[0].axes[0].get_title() == "“ein kleine hund spielt.”"
    with pytest.raises(RuntimeError, match="not available here: COURSE_QUICK"):
        explore(translator, "A dog runs.", interactive=True)
    with pytest.raises(TypeError, match="sentence must be a string"):
        explore(translator, ["A dog runs."])


def test_describe_steps_names_the_most_read_words(translator):
    [result] = translator.translate(["The cat sings today."])
    lines = describe_steps(result, top=1)
    assert len(lines) == len(result.row_labels)
    weights = result.attention.numpy()
    for line, row in zip(lines, weights):
        assert line.endswith(f"{result.source_tokens[row.argmax()]} {row.max():.2f}")


def test_plot_decoding_outlines_the_step_and_plots_its_weights(translator):
    [result] = translator.translate(["A old cat sleeps."])
    fig = plot_decoding(result, step=2)
    bars = next(ax for ax in fig.axes if ax.get_title().startswith("step"))
    heights = [p.get_height() for p in bars.patches]
    np.testing.assert_allclose(heights, result.attention[2].numpy(), atol=1e-6)
    assert "step 3" in bars.get_title()
    with pytest.raises(ValueError, match=r"step must be in \[0, "):
        plot_decoding(result, step=99)
    plt.close("all")


def test_the_widget_explorer_steps_through_decoding(translator):
    explorer = AttentionExplorer(translator, "A red dog runs.")
    rows = explorer.translation.attention.shape[0]
    assert explorer.slider.max == rows and explorer.step == 0
    assert explorer.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    first_image = explorer.image.value
    explorer.step = 2
    assert "<u" not in explorer.sentence_html.value  # marked with style, not tags
    assert 'text-decoration: underline">hund</b>' in explorer.sentence_html.value
    assert explorer.image.value != first_image
    weight = explorer.translation.attention[2, 2].item()  # "hund" reading "dog"
    assert f'title="{weight:.2f}"' in explorer.sentence_html.value
    explorer.set_sentence("The man sings today.")
    assert explorer.text.value == "The man sings today." and explorer.step == 0
    assert explorer.translation.text == "heute singt der mann."
    explorer.search.value = 5  # beam search
    assert explorer.translation.text == "heute singt der mann."
    explorer.set_sentence("A blue dog runs.")
    assert "blue" in explorer.status.value
    explorer.set_sentence("   ")
    assert "Type an English sentence" in explorer.status.value
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    # where the widget cannot render (kernel not running, notebook not trusted): what to do
    assert "run this cell" in bundle["text/plain"] and "trust the notebook" in bundle["text/plain"]


# ----------------------------------------------------------------------------- checkpoints


def test_notebook_4_checkpoints_are_found_by_epoch(tmp_path, monkeypatch):
    from course_utils.checkpoints import MULTI30K_RUN
    from course_utils.translation_setup import CPU, find_or_train_attention_checkpoints

    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    monkeypatch.delenv("COURSE_QUICK", raising=False)
    folder = tmp_path / "multi30k"
    (folder / "epochs").mkdir(parents=True)
    for epoch in range(CPU.train.epochs + 1):
        (folder / "epochs" / f"attention-epoch{epoch}.pt").write_bytes(b"")
    (folder / "attention.pt").write_bytes(b"")
    (folder / "epochs" / "attention-epochX.pt").write_bytes(b"")  # not an epoch: ignored
    paths = find_or_train_attention_checkpoints(CPU)
    assert list(paths) == list(range(CPU.train.epochs + 1))
    assert paths[2] == folder / "epochs" / "attention-epoch2.pt" == MULTI30K_RUN.epoch_checkpoint(2)


def test_missing_checkpoints_train_a_small_model_once(tmp_path, monkeypatch, capsys):
    from course_utils.translation_setup import (
        QUICK,
        find_or_train_attention_checkpoints,
        small_config,
    )

    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_QUICK", "1")
    monkeypatch.delenv("MULTI30K_DIR", raising=False)  # the committed sample is enough
    small = small_config(QUICK)
    assert small.train.epochs == 1 and small.max_train == QUICK.max_train
    paths = find_or_train_attention_checkpoints(QUICK)
    out = capsys.readouterr().out
    assert "not in" in out and "run notebook 4" in out and "Training it now" in out
    assert list(paths) == [0, 1]
    assert all(p.parent == tmp_path / "quick" / "multi30k-small" / "epochs"
               for p in paths.values())
    translator = Translator.from_checkpoint(paths[1])
    assert translator.translate(["A dog runs."])[0].attention is not None
    again = find_or_train_attention_checkpoints(QUICK)
    assert again == paths and "Found it from an earlier run" in capsys.readouterr().out


def test_the_results_report_measures_the_alignment_at_every_epoch(setup, tmp_path):
    import sys
    from types import SimpleNamespace

    from helpers import ROOT

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from multi30k_results import alignment_section

    from course_utils.checkpoints import EpochSaver, RunFolder

    data, model = setup
    run = RunFolder("multi30k", tmp_path)
    assert alignment_section(run, data, "cpu")[-1].startswith("No per-epoch checkpoints")
    save = EpochSaver(run, data.src_vocab, data.tgt_vocab, tokenizers=data.tokenizer_settings())
    for epoch in (0, 1):
        assert save(epoch, model, None) == tmp_path / "multi30k" / "epochs" / f"attention-epoch{epoch}.pt"
    pairs = corpus()[:12]
    lines = alignment_section(run, SimpleNamespace(raw={"test_2016_flickr": pairs}), "cpu")
    text = "\n".join(lines)
    assert "## Attention as alignment" in text and "| content |" in text
    rows = [line for line in lines if line.startswith(("| 0 |", "| 1 |"))]
    assert len(rows) == 2 and rows[0][5:] == rows[1][5:]  # same weights twice: same figures
