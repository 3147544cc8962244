"""Metrics on hand-made outputs, and the training loop's promises."""

import dataclasses
import sys

import numpy as np
import pytest
import torch
from helpers import ROOT

from course_utils.data import collate
from course_utils.decoding import Decoded
from course_utils.metrics import accuracy_by_length, exact_match
from course_utils.models import ModelConfig, ModelSizes, build_model
from course_utils.reversal import (
    QUICK,
    REVERSAL,
    alignment_score,
    make_reversal_pairs,
    reversal_alignment,
    reversal_config,
    reversal_vocab,
)
from course_utils.training import (
    History,
    RunConfig,
    TrainConfig,
    seed_everything,
    sequence_loss,
    train,
    training_step,
)

VOCAB = reversal_vocab(8)
TRAIN_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}


def test_perfect_anti_diagonal_scores_one_and_uniform_scores_one_over_n():
    n = 5
    anti_diagonal = np.fliplr(np.eye(n))
    assert alignment_score(anti_diagonal, reversal_alignment(n)) == 1.0
    assert alignment_score(np.full((n, n), 1 / n), reversal_alignment(n)) == pytest.approx(1 / n)
    assert alignment_score(np.eye(n), reversal_alignment(n)) == pytest.approx(1 / n)  # centre only


def test_alignment_score_ignores_the_extra_eos_row_and_checks_input():
    with_eos = np.vstack([np.fliplr(np.eye(3)), [[1.0, 0.0, 0.0]]])
    assert alignment_score(with_eos, reversal_alignment(3)) == 1.0
    with pytest.raises(ValueError, match=r"must be \(out_len, src_len\)"):
        alignment_score(np.ones(3), [0])
    with pytest.raises(ValueError, match=r"must lie in \[0, 3\)"):
        alignment_score(np.ones((2, 3)), [0, 3])


def test_exact_match_and_accuracy_by_length():
    pairs = [([4], [4]), ([4, 5], [5, 4]), ([5, 6], [6, 5]), ([4, 5, 6], [6, 5, 4])]
    decoded = Decoded([[4], [5, 4], [6, 6], [6, 5]], torch.tensor([1, 2, 2, 2]), None)
    assert exact_match(decoded, pairs) == 0.5
    assert accuracy_by_length(decoded, pairs) == {1: 1.0, 2: 0.5, 3: 0.0}


def test_loss_counts_real_tokens_only():
    batch = collate([([4, 5, 6], [6, 5, 4]), ([7], [7])])
    logits = torch.randn(*batch.tgt_out.shape, len(VOCAB))
    garbage = logits.clone()
    garbage[batch.tgt_out == 0] = 100.0  # change only the padded positions
    assert torch.equal(sequence_loss(logits, batch.tgt_out), sequence_loss(garbage, batch.tgt_out))


def tiny_run(epochs=2, **kwargs):
    """A small reversal run; ``kwargs`` are TrainConfig fields or train()'s own arguments."""
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in TRAIN_FIELDS}
    seed_everything(0)
    model = build_model(ModelConfig(len(VOCAB), len(VOCAB), embed_dim=16, hidden_dim=32,
                                    attention_dim=32))
    train_pairs = make_reversal_pairs(400, 2, 6, VOCAB, seed=1)
    val_pairs = make_reversal_pairs(50, 2, 6, VOCAB, seed=2)
    config = TrainConfig(epochs=epochs, batch_size=32, **options)
    return train(model, train_pairs, val_pairs, config, progress=False, **kwargs), val_pairs


def test_training_lowers_the_loss_and_records_every_epoch():
    history, _ = tiny_run(epochs=3)
    assert history.epoch == [1, 2, 3]
    assert history.val_loss[-1] < history.val_loss[0]
    assert len(history.train_loss) == len(history.val_exact_match) == len(history.seconds) == 3
    assert history.seconds == sorted(history.seconds)


def test_skipping_the_padding_changes_neither_the_loss_nor_the_step():
    """training_step, train()'s step: the output layer run only at real target positions gives
    the loss and the update of running it everywhere, padding included."""
    batch = collate(make_reversal_pairs(16, 2, 9, VOCAB, seed=3))
    assert (batch.tgt_out == 0).any()  # lengths differ, so the batch has padding
    models, losses = [], []
    for skip in (True, False):
        seed_everything(0)
        model = build_model(ModelConfig(len(VOCAB), len(VOCAB), embed_dim=8, hidden_dim=16,
                                        attention_dim=16, maxout_dim=4))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        before = [p.detach().clone() for p in model.parameters()]
        losses.append(training_step(model, batch, optimizer, clip=1.0, skip_padding=skip))
        assert not losses[-1].requires_grad
        assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
        models.append(model)
    torch.testing.assert_close(losses[0], losses[1])
    for a, b in zip(*(m.parameters() for m in models)):
        torch.testing.assert_close(a, b)


def test_cpu_training_is_reproducible_with_a_seed():
    assert tiny_run()[0].val_loss == tiny_run()[0].val_loss


def test_bf16_autocast_trains_on_the_cpu_too():
    """bf16=True autocasts on a CPU as on CUDA (it used to be ignored off CUDA): the run differs
    from float32's, still learns, and repeats exactly with its seed."""
    fp32, _ = tiny_run(epochs=3)
    bf16, _ = tiny_run(epochs=3, bf16=True)
    assert bf16.val_loss != fp32.val_loss  # autocast changed the arithmetic
    assert bf16.val_loss[-1] < bf16.val_loss[0]
    assert abs(bf16.val_loss[-1] - fp32.val_loss[-1]) < 0.25 * fp32.val_loss[-1]
    assert tiny_run(epochs=3, bf16=True)[0].val_loss == bf16.val_loss


def test_cpu_bf16_follows_the_cpu_and_can_be_forced(monkeypatch):
    from course_utils.config import cpu_bf16

    monkeypatch.delenv("COURSE_CPU_BF16", raising=False)
    assert cpu_bf16() is bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    monkeypatch.setenv("COURSE_CPU_BF16", "0")
    assert cpu_bf16() is False
    monkeypatch.setenv("COURSE_CPU_BF16", "yes")
    assert cpu_bf16() is True
    monkeypatch.setenv("COURSE_CPU_BF16", "sometimes")
    with pytest.raises(ValueError, match="COURSE_CPU_BF16 must be one of 1/0"):
        cpu_bf16()


def test_snapshots_hold_one_trimmed_matrix_per_example_at_the_chosen_epochs():
    watch = make_reversal_pairs(3, 2, 6, VOCAB, seed=9)
    history, _ = tiny_run(epochs=2, snapshot_pairs=watch, snapshot_epochs=(0, 2))
    assert sorted(history.snapshots) == [0, 2]
    for matrix, (source, _) in zip(history.snapshots[2], watch):
        assert matrix.shape[1] == len(source)
        np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-5)


def test_on_epoch_end_sees_each_epoch_after_its_measurements(tmp_path):
    seen, models = [], []

    def record(epoch, model, history):
        seen.append((epoch, len(history.epoch), history.val_loss[-1]))
        models.append(model)
        torch.save(model.state_dict(), tmp_path / f"epoch{epoch}.pt")

    history, _ = tiny_run(epochs=2, on_epoch_end=record)
    model = models[-1]
    assert [(e, n) for e, n, _ in seen] == [(1, 1), (2, 2)]
    assert [loss for *_, loss in seen] == history.val_loss
    final = torch.load(tmp_path / "epoch2.pt")
    assert all(torch.equal(final[k], v) for k, v in model.state_dict().items())
    first = torch.load(tmp_path / "epoch1.pt")
    assert not all(torch.equal(first[k], v) for k, v in model.state_dict().items())


def test_training_stops_at_the_target_exact_match():
    history, _ = tiny_run(epochs=5, target_exact_match=0.0)
    assert history.epoch == [1]


def test_exact_match_can_be_skipped_where_it_means_nothing():
    measured, _ = tiny_run(epochs=2)
    skipped, _ = tiny_run(epochs=2, measure_exact_match=False)
    assert len(measured.val_exact_match) == 2 and skipped.val_exact_match == []
    assert skipped.val_loss == measured.val_loss  # the training itself is the same
    with pytest.raises(ValueError, match="target_exact_match needs measure_exact_match"):
        tiny_run(epochs=1, target_exact_match=0.5, measure_exact_match=False)


def test_translation_configurations_skip_exact_match_and_share_the_run_shape():
    from dataclasses import fields

    from course_utils.reversal import ReversalConfig
    from course_utils.translation_setup import CPU, Multi30kConfig

    assert CPU.train.measure_exact_match is False and REVERSAL.train.measure_exact_match is True
    shared = {f.name for f in fields(RunConfig)}
    for config in (ReversalConfig, Multi30kConfig):
        assert issubclass(config, RunConfig) and shared <= {f.name for f in fields(config)}
        # a run holds its parts; it is neither of them
        assert not issubclass(config, TrainConfig) and not issubclass(config, ModelSizes)
        assert isinstance(config().model, ModelSizes) and isinstance(config().train, TrainConfig)
    model_config = REVERSAL.model_config(VOCAB, VOCAB, attention=False)
    assert not model_config.attention and model_config.hidden_dim == REVERSAL.model.hidden_dim
    wide = REVERSAL.model_config(VOCAB, VOCAB, score="dot", decoder_dim="encoder")
    assert wide.score == "dot" and wide.decoder_dim == "encoder"


def test_a_run_configuration_changes_each_setting_in_the_part_that_owns_it():
    changed = REVERSAL.replace(name="mine", epochs=2, hidden_dim=8, n_train=50)
    assert (changed.name, changed.train.epochs, changed.model.hidden_dim, changed.n_train) == (
        "mine", 2, 8, 50)
    assert changed.train.lr == REVERSAL.train.lr and changed.model.embed_dim == REVERSAL.model.embed_dim
    assert REVERSAL.train.epochs != 2  # the preset itself is untouched
    with pytest.raises(TypeError, match="no setting 'hiden_dim'.*hidden_dim"):
        REVERSAL.replace(hiden_dim=8)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        REVERSAL.replace(epochs=0)
    with pytest.raises(TypeError, match="train must be a TrainConfig"):
        RunConfig(train=ModelSizes())


def test_a_run_configuration_prints_a_part_per_line_within_the_text_width():
    from course_utils.config import TEXT_WIDTH
    from course_utils.translation_setup import GPU

    text = str(GPU)
    assert text.splitlines()[0] == "Multi30kConfig 'gpu'"
    assert [line.split(":")[0].strip() for line in text.splitlines() if line[2] != " "][1:] == [
        "model", "train", "data"]
    assert "hidden_dim=512" in text and "bf16=True" in text and "min_freq=2" in text
    assert max(map(len, text.splitlines())) <= TEXT_WIDTH


def test_train_takes_a_task_configuration_whole_or_its_training_part():
    pairs = make_reversal_pairs(40, 3, 5, VOCAB, seed=0)
    run = REVERSAL.replace(epochs=1, hidden_dim=8, embed_dim=4, attention_dim=8, maxout_dim=4)
    histories = []
    for config in (run, run.train):
        seed_everything(0)
        model = build_model(run.model_config(VOCAB, VOCAB))
        histories.append(train(model, pairs, pairs[:8], config, progress=False))
    assert histories[0].val_loss == histories[1].val_loss
    with pytest.raises(TypeError, match="TrainConfig"):
        train(build_model(run.model_config(VOCAB, VOCAB)), pairs, pairs, run.model)


def test_history_round_trips_through_a_dict():
    history = History(epoch=[1], train_loss=[1.0], val_loss=[0.5], val_token_accuracy=[0.9],
                      val_exact_match=[0.1], seconds=[2.0], snapshots={1: [np.eye(2)]})
    again = History.from_dict(history.to_dict())
    assert again.val_loss == [0.5] and np.array_equal(again.snapshots[1][0], np.eye(2))


def test_bad_training_arguments_are_clear_errors():
    model = build_model(ModelConfig(len(VOCAB), len(VOCAB), embed_dim=8, hidden_dim=8,
                                    attention_dim=8))
    with pytest.raises(ValueError, match="epochs must be >= 1; got 0"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="batch_size must be >= 1; got 0"):
        TrainConfig(batch_size=0)
    with pytest.raises(ValueError, match="lr must be > 0; got -0.1"):
        TrainConfig(lr=-0.1)
    with pytest.raises(ValueError, match="at least one training pair"):
        train(model, [], [([4], [4])], TrainConfig(epochs=1))
    with pytest.raises(TypeError, match=r"config must be a TrainConfig.* got dict"):
        train(model, [([4], [4])], [([4], [4])], {"epochs": 1})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="clip must be > 0"):
        TrainConfig(clip=0)
    with pytest.raises(ValueError, match="target_exact_match must be a fraction between 0 and 1"):
        TrainConfig(target_exact_match=99)
    with pytest.raises(TypeError, match=r"config must be a TrainConfig.* got NoneType"):
        train(model, [([4], [4])], [([4], [4])])
    # the keywords of the old signature get told what to write instead
    with pytest.raises(TypeError, match=r"not as keywords \(epochs, lr\): pass .*"
                                        r"TrainConfig\(epochs=3, lr=0.01\)"):
        train(model, [([4], [4])], [([4], [4])], epochs=3, lr=0.01)


def test_reversal_configuration_follows_course_quick(monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "1")
    assert reversal_config() == QUICK
    monkeypatch.setenv("COURSE_QUICK", "0")
    monkeypatch.setenv("COURSE_DEVICE", "cpu")
    assert reversal_config() == REVERSAL


def quick_report(name, tmp_path, *args):
    """Run ``benchmarks/<name>.py --quick`` (its ``main``) into a temporary report; its text."""
    import importlib

    sys.path.insert(0, str(ROOT / "benchmarks"))
    out = tmp_path / "benchmarks.md"
    assert importlib.import_module(name).main(["--quick", *args, "--out", str(out)]) == 0
    return out.read_text()


def test_benchmark_script_runs_and_writes_its_report(tmp_path):
    report = quick_report("bench_seq2seq", tmp_path, "--device", "cpu")
    for heading in ("Training throughput", "Greedy decoding", "time to 99%", "## GPU"):
        assert heading in report


def test_budget_benchmark_compares_both_configurations_and_writes_its_report(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_multi30k_budget

    configs = bench_multi30k_budget.configurations(quick=False)
    before, after = configs["before"], configs["after"]
    assert before.model.maxout_dim == 0 and after.model.maxout_dim > 0  # shallow against deep output
    assert before.train.measure_exact_match and not before.train.skip_padding
    assert not after.train.measure_exact_match and after.train.skip_padding
    report = quick_report("bench_multi30k_budget", tmp_path)
    assert "## Notebook 4's training budget" in report
    assert "| before | attention |" in report and "| after | vanilla |" in report
    assert "the wall time" in report and "at least 28 BLEU" in report


def test_training_levers_benchmark_writes_its_table(tmp_path):
    report = quick_report("bench_training_levers", tmp_path)
    assert "## Levers on notebook 4's training time" in report
    assert "| attention, 2 threads, by source, float32, batch 64 |" in report
    assert "| attention, 1 thread, by target, float32, batch 64 |" in report
    assert "both at once, one thread each" in report and "target of 8 minutes" in report


def test_output_layer_benchmark_writes_its_table(tmp_path):
    report = quick_report("bench_output_layer", tmp_path)
    assert "## The output layer's share of a training step" in report
    assert "| 0 | every slot | fp32 |" in report and "| bf16 |" in report


def test_day_plan_splits_a_notebook_into_timed_sections():
    import nbformat.v4 as nbf

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import day_plan

    figure = nbf.new_output("display_data", data={"image/png": "iVBOR"})
    notebook = nbf.new_notebook(cells=[
        nbf.new_markdown_cell("# Title\n\n" + "word " * 118),  # 120 words
        nbf.new_code_cell("import numpy as np\n# a comment\n\nx = 1"),  # 2 code lines
        nbf.new_markdown_cell("## 1. First part\n" + "word " * 236),  # 240 words
        nbf.new_code_cell("x = 2"),
        nbf.new_markdown_cell("Closing words of part one.\n\n## 2. Second part\nsix words of part two"),
        nbf.new_code_cell("plot()", outputs=[figure]),
        nbf.new_code_cell("def f():\n    ### BEGIN SOLUTION\n    a = 1\n    return a\n"
                          "    ### END SOLUTION"),
        nbf.new_markdown_cell("### BEGIN SOLUTION\n" + "answer " * 30 + "\n### END SOLUTION"),
    ])
    sections = day_plan.sections_of(notebook, [0.0, 6.0, 0.0, 1.0, 0.0, 30.0, 0.0, 0.0])
    assert [s.title for s in sections] == ["(header and set-up)", "1. First part",
                                           "2. Second part"]
    header, first, part = sections
    # a heading in the middle of a cell: the words before it belong to the previous section
    assert first.words == 240 + 5 and first.code_lines == 1 and first.seconds == 1.0
    assert part.words == 4 + 5  # "## 2. Second part" and "six words of part two"
    assert header.words == 120 and header.code_lines == 2 and header.seconds == 6.0
    assert part.figures == 1 and part.seconds == 30.0
    assert part.solution_code_lines == 2 and part.solution_words == 30  # the student's work
    assert part.code_lines == 2  # "plot()" and "def f():", not the solution's lines
    assert header.reading_minutes == pytest.approx(
        120 / day_plan.WORDS_PER_MINUTE + 2 / day_plan.CODE_LINES_PER_MINUTE)
    assert part.minutes == pytest.approx(
        part.reading_minutes + 2 * day_plan.WRITE_CODE_MINUTES
        + 30 / day_plan.WRITING_WORDS_PER_MINUTE + 0.5)


def test_day_plan_reads_a_formula_symbol_by_symbol_and_knows_extensions():
    import nbformat.v4 as nbf

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import day_plan

    # the energy as a formula is 16 symbols, though it has only 5 spaces' worth of "words"
    assert day_plan._words(r"$v^\top \tanh(W_s s_{i-1} + W_h h_j)$") == 16
    assert day_plan._words("the energy $$e_{ij}$$ of step $i$") == 4 + 2 + 1  # e, ij; i
    notebook = nbf.new_notebook(cells=[nbf.new_markdown_cell(
        "## 1. Core\nwords\n## 2. More (extension)\nwords\n## 3. Also core\nwords")])
    timed = day_plan.Timed("notebooks/x.ipynb", day_plan.sections_of(notebook, [0.0]))
    assert [timed.is_extension(s) for s in timed.sections] == [False, True, False]


def test_day_plan_counts_a_your_turn_cells_worked_piece_as_code_to_write():
    import nbformat.v4 as nbf

    from course_utils.checks.worked import WORKED

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import day_plan

    turn_cell = nbf.new_code_cell("class Mine:\n    def forward(self, x):\n"
                                  "        raise NotImplementedError")
    turn_cell.metadata["tags"] = [day_plan.YOUR_TURN_TAG]
    turn_cell.metadata["course"] = {"worked": "attention"}
    notebook = nbf.new_notebook(cells=[nbf.new_markdown_cell("## 3. Your turn"), turn_cell])
    (turn,) = day_plan.sections_of(notebook, [0.0, 2.0])
    assert turn.code_lines == 3  # the skeleton is read
    body = [line for line in WORKED["attention"].code.splitlines()[1:]
            if line.strip() and not line.strip().startswith("#")]
    assert turn.solution_code_lines == len(body) == 9  # the body is written, not the signature
    assert turn.seconds == 2.0


def test_day_plan_names_a_missing_notebook(monkeypatch, capsys):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import day_plan

    monkeypatch.setenv("COURSE_QUICK", "1")
    assert day_plan.main(["--quick", "notebooks/nope.ipynb"]) == 2
    assert "no notebook at notebooks/nope.ipynb" in capsys.readouterr().err
