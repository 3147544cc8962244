"""Checkpoints are data, not code: safe loading, one clear error for every damaged or
mismatched file, run folders named in one place."""

import os
import pickle
from dataclasses import replace

import pytest
import torch

from course_utils.checkpoints import (
    E10_2_RUN,
    MULTI30K_RUN,
    REVERSAL_RUN,
    CheckpointError,
    EpochSaver,
    RunFolder,
    display_path,
    load_checkpoint,
    save_checkpoint,
)
from course_utils.models import ModelConfig, build_model
from course_utils.reversal import reversal_vocab
from course_utils.training import History

VOCAB = reversal_vocab(6)
CONFIG = ModelConfig(len(VOCAB), len(VOCAB), embed_dim=8, hidden_dim=12, attention_dim=10, attention=True)


@pytest.fixture
def saved(tmp_path):
    torch.manual_seed(0)
    model = build_model(CONFIG)
    history = History(epoch=[1], train_loss=[1.0], val_loss=[1.1], val_token_accuracy=[0.5],
                      val_exact_match=[], seconds=[2.0])
    path = save_checkpoint(tmp_path / "model.pt", model, VOCAB, VOCAB, history,
                           extra={"config": "cpu"})
    return path, model


class Exploit:
    """Unpickling this would call os.system: what a hostile .pt file does."""

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_pickle_runs_nothing_on_load(tmp_path):
    marker = tmp_path / "pwned"
    Exploit.marker = marker
    path = tmp_path / "shared.pt"
    torch.save({"format": 2, "config": Exploit()}, path)
    with pytest.raises(CheckpointError, match="could run code"):
        load_checkpoint(path)
    assert not marker.exists()
    with open(tmp_path / "plain.pt", "wb") as handle:  # a bare pickle, not a torch zip file
        pickle.dump(Exploit(), handle)
    with pytest.raises(CheckpointError, match="plain.pt"):
        load_checkpoint(tmp_path / "plain.pt")
    assert not marker.exists()


def test_round_trip_keeps_weights_history_tokenizers_and_extras(tmp_path, saved):
    path, model = saved
    restored = load_checkpoint(path, expect=CONFIG)
    assert restored.path == path and restored.model.config == CONFIG
    assert not restored.model.training
    for (name, a), b in zip(model.state_dict().items(), restored.model.state_dict().values()):
        assert torch.equal(a, b), name
    assert restored.history.val_loss == [1.1] and restored.extra == {"config": "cpu"}
    assert restored.tokenizers is None
    tokenizers = {"source": {"lang": "en", "lowercase": True},
                  "target": {"lang": "de", "lowercase": True}}
    again = save_checkpoint(tmp_path / "t.pt", model, VOCAB, VOCAB, tokenizers=tokenizers)
    assert load_checkpoint(again).tokenizers == tokenizers


@pytest.mark.parametrize("damage, message", [
    (lambda data: b"", r"is empty"),
    (lambda data: data[: len(data) // 2], r"cannot be read .*truncated or not a PyTorch file"),
    (lambda data: b"just some text\n" * 10, r"model.pt"),
])
def test_damaged_files_name_the_file_and_the_problem(saved, damage, message):
    path, _ = saved
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(CheckpointError, match=message) as error:
        load_checkpoint(path)
    assert str(path) in str(error.value)


def test_other_pytorch_files_and_old_formats_are_refused_clearly(tmp_path, saved):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="PyTorch file but not a course checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    torch.save(torch.zeros(3), tmp_path / "tensor.pt")
    with pytest.raises(CheckpointError, match="not a course checkpoint"):
        load_checkpoint(tmp_path / "tensor.pt")
    path, _ = saved
    payload = torch.load(path, weights_only=True)
    torch.save({**payload, "format": 2}, tmp_path / "old.pt")  # before the deep output layer
    with pytest.raises(CheckpointError, match="format 2.*reads format 3.*Re-run"):
        load_checkpoint(tmp_path / "old.pt")
    torch.save({**payload, "surprise": 1}, tmp_path / "keys.pt")
    with pytest.raises(CheckpointError, match=r"unknown keys: \['surprise'\]"):
        load_checkpoint(tmp_path / "keys.pt")
    with pytest.raises(CheckpointError, match="is a folder"):
        load_checkpoint(tmp_path)
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")


def test_a_checkpoint_for_another_configuration_says_what_differs(tmp_path, saved):
    path, _ = saved
    with pytest.raises(CheckpointError, match=r"another configuration: hidden_dim 12 \(expected 16\)"):
        load_checkpoint(path, expect=replace(CONFIG, hidden_dim=16))
    with pytest.raises(CheckpointError, match=r"attention True \(expected False\)"):
        load_checkpoint(path, expect=replace(CONFIG, attention=False))
    payload = torch.load(path, weights_only=True)
    bad = {**payload, "config": {**payload["config"], "hidden_dim": 16}}  # weights say 12
    torch.save(bad, tmp_path / "sizes.pt")
    with pytest.raises(CheckpointError, match=r"weights do not fit .*other shapes"):
        load_checkpoint(tmp_path / "sizes.pt")
    flipped = {**payload, "config": {**payload["config"], "attention": False}}
    torch.save(flipped, tmp_path / "flag.pt")
    with pytest.raises(CheckpointError, match=r"unexpected weights decoder.attention"):
        load_checkpoint(tmp_path / "flag.pt")
    unknown = {**payload, "config": {**payload["config"], "heads": 4}}
    torch.save(unknown, tmp_path / "field.pt")
    with pytest.raises(CheckpointError, match=r"unknown fields \['heads'\]"):
        load_checkpoint(tmp_path / "field.pt")
    vocab = {**payload, "src_vocab": {"itos": payload["src_vocab"]["itos"][:-1]}}
    torch.save(vocab, tmp_path / "vocab.pt")
    with pytest.raises(CheckpointError, match="do not match the config"):
        load_checkpoint(tmp_path / "vocab.pt")


def test_a_failed_save_keeps_the_earlier_checkpoint(saved, monkeypatch):
    path, model = saved
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(path, model, VOCAB, VOCAB)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]


def test_run_folders_are_named_in_one_place_and_quick_runs_stay_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_QUICK", "0")
    assert REVERSAL_RUN.checkpoint() == tmp_path / "reversal" / "attention.pt"
    assert MULTI30K_RUN.checkpoint("vanilla") == tmp_path / "multi30k" / "vanilla.pt"
    assert MULTI30K_RUN.epoch_checkpoint(3) == tmp_path / "multi30k/epochs/attention-epoch3.pt"
    monkeypatch.setenv("COURSE_QUICK", "1")
    assert REVERSAL_RUN.checkpoint() == tmp_path / "quick" / "reversal" / "attention.pt"
    with pytest.raises(ValueError, match="epoch must be >= 0"):
        MULTI30K_RUN.epoch_checkpoint(-1)


def test_epoch_saver_keeps_every_epoch(tmp_path, saved):
    _, model = saved
    run = RunFolder("task", tmp_path)
    save = EpochSaver(run, VOCAB, VOCAB, extra={"config": "quick"})
    for epoch in (0, 1, 2):
        save(epoch, model, None)
    assert list(run.epoch_checkpoints()) == [0, 1, 2]
    assert load_checkpoint(run.epoch_checkpoints()[2]).extra == {"config": "quick"}


def test_display_path_is_relative_to_the_course_folder(root, tmp_path):
    assert display_path(root / "notebooks" / "runs" / "x.pt") == "notebooks/runs/x.pt"
    assert display_path(tmp_path / "x.pt") == str(tmp_path / "x.pt")


def test_a_students_runs_land_beside_the_notebook_they_run(tmp_path, monkeypatch):
    # a student's copy of the course: notebook 4 saved its models, E10.2 is run from exercises/
    monkeypatch.delenv("COURSE_RUNS_DIR", raising=False)
    monkeypatch.setenv("COURSE_QUICK", "0")
    course = tmp_path / "my-course"
    (course / "exercises").mkdir(parents=True)
    saved_by_notebook_4 = course / "notebooks" / "runs" / "multi30k" / "attention.pt"
    saved_by_notebook_4.parent.mkdir(parents=True)
    saved_by_notebook_4.write_bytes(b"")
    monkeypatch.chdir(course / "exercises")
    assert E10_2_RUN.checkpoint() == course / "exercises" / "runs" / "e10.2" / "attention.pt"
    assert MULTI30K_RUN.located().checkpoint() == saved_by_notebook_4
    assert MULTI30K_RUN.located("vanilla").path == course / "exercises" / "runs" / "multi30k"
    assert display_path(E10_2_RUN.checkpoint()) == "runs/e10.2/attention.pt"
    monkeypatch.chdir(course / "notebooks")
    assert MULTI30K_RUN.located().checkpoint() == saved_by_notebook_4
    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path / "elsewhere"))  # the grader's sandbox
    assert MULTI30K_RUN.located().path == tmp_path / "elsewhere" / "multi30k"
