"""E10.3 reads the student's own model: the one E10.2 saved beside the exercise, and notebook
4's only as a fallback that says so."""

from pathlib import Path

import pytest
import torch

from course_utils import translation_setup
from course_utils.checkpoints import E10_2_RUN, MULTI30K_RUN, load_checkpoint, save_checkpoint
from course_utils.models import ModelConfig, build_model
from course_utils.reversal import reversal_vocab
from course_utils.translation_setup import QUICK, find_or_train_exercise_checkpoint

VOCAB = reversal_vocab(6)
CONFIG = ModelConfig(len(VOCAB), len(VOCAB), embed_dim=8, hidden_dim=12, attention_dim=10, attention=True)


def tiny_checkpoint(path: Path, seed: int = 0) -> Path:
    """A library-compatible attention checkpoint of a few hundred weights."""
    torch.manual_seed(seed)
    return save_checkpoint(path, build_model(CONFIG), VOCAB, VOCAB, extra={"seed": seed})


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A student's copy of the course, run from ``exercises/`` at real scale."""
    for name in ("COURSE_QUICK", "COURSE_RUNS_DIR"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "exercises").mkdir()
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "exercises")
    return tmp_path


def notebook_4_run(course: Path, epochs: int) -> Path:
    """Notebook 4's attention run, complete: after each epoch and the final model."""
    run = course / "notebooks" / "runs" / "multi30k"
    for epoch in range(epochs + 1):
        tiny_checkpoint(run / "epochs" / f"attention-epoch{epoch}.pt", seed=epoch)
    tiny_checkpoint(run / "attention.pt", seed=epochs)
    return run


def must_not_train(*args, **kwargs):
    raise AssertionError("looked for (or trained) notebook 4's model though E10.2's is there")


def test_the_students_own_model_is_chosen_when_e10_2_saved_it(course, monkeypatch, capsys):
    notebook_4_run(course, QUICK.train.epochs)
    saved = tiny_checkpoint(E10_2_RUN.checkpoint("attention"), seed=7)
    assert saved == course / "exercises" / "runs" / "e10.2" / "attention.pt"
    monkeypatch.setattr(translation_setup, "find_or_train_attention_checkpoints", must_not_train)

    chosen = find_or_train_exercise_checkpoint(QUICK)
    assert chosen.is_yours and chosen.whose == "E10.2" and chosen.path == saved
    assert load_checkpoint(chosen.path).extra == {"seed": 7}
    printed = capsys.readouterr().out
    assert "your model from E10.2 (runs/e10.2/attention.pt)" in printed
    assert "not yours" not in printed


def test_notebook_4s_model_is_a_fallback_that_says_whose_it_is(course, capsys):
    run = notebook_4_run(course, QUICK.train.epochs)

    chosen = find_or_train_exercise_checkpoint(QUICK)
    assert not chosen.is_yours and chosen.whose == "notebook 4"
    assert chosen.path == run / "epochs" / f"attention-epoch{QUICK.train.epochs}.pt"  # its final model
    assert chosen.looked_for == course / "exercises" / "runs" / "e10.2" / "attention.pt"
    printed = capsys.readouterr().out
    assert "notebook 4's model, not yours" in printed
    assert "Your E10.2 model was not found at runs/e10.2/attention.pt" in printed
    assert "your written answers must be about your own model: run E10.2 first" in printed


def test_without_either_model_the_small_stand_in_is_trained_and_labelled(course, monkeypatch,
                                                                          capsys):
    asked = []

    def trains_small(config, device="cpu"):
        asked.append((config, device))
        small = course / "exercises" / "runs" / "multi30k-small" / "epochs"
        return {epoch: small / f"attention-epoch{epoch}.pt" for epoch in (0, 1, 2)}

    monkeypatch.setattr(translation_setup, "find_or_train_attention_checkpoints", trains_small)
    chosen = find_or_train_exercise_checkpoint(QUICK, "cpu")
    assert asked == [(QUICK, "cpu")]
    assert chosen.whose == "small" and chosen.path.name == "attention-epoch2.pt"
    printed = capsys.readouterr().out
    assert "a small stand-in for notebook 4's model" in printed and "run E10.2 first" in printed


def test_a_file_that_is_not_a_checkpoint_is_not_mistaken_for_one(course, monkeypatch):
    E10_2_RUN.checkpoint("attention").mkdir(parents=True)  # a folder named attention.pt
    notebook_4_run(course, QUICK.train.epochs)
    assert find_or_train_exercise_checkpoint(QUICK).whose == "notebook 4"


def test_quick_runs_and_the_grader_read_only_their_own_runs_folder(course, monkeypatch):
    """A smoke-test run reads the E10.2 model of a smoke-test run (runs/quick/), never a real
    one; under the grader (COURSE_RUNS_DIR is its sandbox) nothing from the student's folder
    is read, and the fallback still gives a model."""
    tiny_checkpoint(E10_2_RUN.checkpoint("attention"))  # a real-scale E10.2 model
    monkeypatch.setenv("COURSE_QUICK", "1")
    sandbox = course / "sandbox"
    fallback = {0: sandbox / "quick" / "multi30k-small" / "epochs" / "attention-epoch0.pt"}
    monkeypatch.setattr(translation_setup, "find_or_train_attention_checkpoints",
                        lambda config, device="cpu": fallback)
    assert find_or_train_exercise_checkpoint(QUICK).whose == "small"  # not the real one

    quick_model = tiny_checkpoint(E10_2_RUN.checkpoint("attention"))
    assert quick_model == course / "exercises" / "runs" / "quick" / "e10.2" / "attention.pt"
    assert find_or_train_exercise_checkpoint(QUICK).path == quick_model

    monkeypatch.setenv("COURSE_RUNS_DIR", str(sandbox))
    chosen = find_or_train_exercise_checkpoint(QUICK)
    assert chosen.whose == "small" and chosen.path == fallback[0]
    assert chosen.looked_for == sandbox / "quick" / "e10.2" / "attention.pt"
    assert MULTI30K_RUN.located().path == sandbox / "quick" / "multi30k"
