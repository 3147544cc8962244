"""Checkpoints: a trained model saved with everything needed to use it again, as data.

A checkpoint file holds the weights, the :class:`~course_utils.models.ModelConfig`, both
vocabularies, the tokenizer settings (for translation models), the training history and a
few plain extras, written atomically. It holds tensors and plain containers only, and is read
with ``torch.load(..., weights_only=True)``: a checkpoint someone shared or that was
downloaded can never run code when it is loaded. A damaged file, a file that is not a course
checkpoint, or one saved for another configuration raises :class:`CheckpointError`, naming the
file and what is wrong.

This module is also the one place that names run folders and checkpoint files::

    runs_dir()/reversal/attention.pt                 notebook 3
    runs_dir()/multi30k/{attention,vanilla}.pt       notebook 4 (read by notebook 5, E10.2, E10.3)
    runs_dir()/multi30k/epochs/attention-epoch3.pt   notebook 4, after epoch 3 (0 = untrained)
    runs_dir()/multi30k-small/...                    the smaller fallback model of notebook 5
    runs_dir()/e10.2/{attention,vanilla}.pt          the student's E10.2 models (E10.3 reads them)

``runs_dir()`` is ``runs/`` beside the notebook being run (its ``quick/`` folder under
``COURSE_QUICK``, so smoke tests never overwrite a real run). A notebook that reads another's
run (an exercise reading notebook 4's models) finds it with :meth:`RunFolder.located`, which
also looks in the course's ``notebooks/runs``.
"""

from __future__ import annotations

import pickle
import warnings
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

import torch

from course_utils.config import lecture_runs_dirs, runs_dir
from course_utils.data import Vocab
from course_utils.files import COURSE_FOLDER, atomic_path
from course_utils.models import ModelConfig, Seq2Seq, build_model
from course_utils.training import History

__all__ = [
    "CHECKPOINT_FORMAT",
    "MULTI30K_RUN",
    "MULTI30K_SMALL_RUN",
    "REVERSAL_RUN",
    "Checkpoint",
    "CheckpointError",
    "E10_2_RUN",
    "EpochSaver",
    "RunFolder",
    "display_path",
    "load_checkpoint",
    "save_checkpoint",
]

#: Version of the file layout; files of another version are refused with a clear message.
CHECKPOINT_FORMAT = 3  # 3: the deep output layer (ModelConfig.maxout_dim)
_REQUIRED = ("format", "config", "state_dict", "src_vocab", "tgt_vocab")
_KNOWN = (*_REQUIRED, "history", "tokenizers", "extra")


class CheckpointError(ValueError):
    """A file could not be used as a course checkpoint; the message names it and says why."""


# ----------------------------------------------------------------------------- run folders


@dataclass(frozen=True)
class RunFolder:
    """Where one task's checkpoints live: ``root / name``, by default ``runs_dir() / name``
    (resolved at each use, so ``COURSE_QUICK`` and ``COURSE_RUNS_DIR`` are honoured)."""

    name: str
    root: Path | None = None

    @property
    def path(self) -> Path:
        """Where this run is saved (and read, unless :meth:`located` finds it elsewhere)."""
        return (self.root if self.root is not None else runs_dir()) / self.name

    def located(self, model: str = "attention") -> RunFolder:
        """This run where it was saved: the first of :func:`~course_utils.config.lecture_runs_dirs`
        that holds ``model``'s checkpoint (e.g. notebook 4's models, read from ``exercises/``);
        itself when none does (or when ``root`` is given)."""
        if self.root is not None:
            return self
        for root in lecture_runs_dirs():
            if (root / self.name / f"{model}.pt").exists():
                return RunFolder(self.name, root)
        return self

    def checkpoint(self, model: str = "attention") -> Path:
        """The final checkpoint of ``model`` (``"attention"`` or ``"vanilla"``)."""
        return self.path / f"{model}.pt"

    def epoch_checkpoint(self, epoch: int, model: str = "attention") -> Path:
        """The checkpoint of ``model`` after ``epoch`` (0 = before training)."""
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0; got {epoch}")
        return self.path / "epochs" / f"{model}-epoch{epoch}.pt"

    def epoch_checkpoints(self, model: str = "attention") -> dict[int, Path]:
        """``{epoch: path}`` of the per-epoch checkpoints saved so far, by epoch."""
        found = {}
        for path in (self.path / "epochs").glob(f"{model}-epoch*.pt"):
            suffix = path.stem.removeprefix(f"{model}-epoch")
            if suffix.isdigit():
                found[int(suffix)] = path
        return dict(sorted(found.items()))


REVERSAL_RUN = RunFolder("reversal")
MULTI30K_RUN = RunFolder("multi30k")
MULTI30K_SMALL_RUN = RunFolder("multi30k-small")
E10_2_RUN = RunFolder("e10.2")


def display_path(path: str | Path) -> str:
    """``path`` relative to the course folder when it lies inside it, else relative to the
    current folder (a student's own copy), else as given: notebook outputs are shared, so they
    never print a machine's absolute path when a relative one exists."""
    resolved = Path(path).resolve()
    for base in (COURSE_FOLDER, Path.cwd().resolve()):
        try:
            return str(resolved.relative_to(base))
        except ValueError:
            continue
    return str(path)


# ---------------------------------------------------------------------------- save / load


@dataclass
class Checkpoint:
    """What :func:`load_checkpoint` returns: the model (in eval mode) and what goes with it."""

    path: Path
    model: Seq2Seq
    src_vocab: Vocab
    tgt_vocab: Vocab
    history: History | None
    #: ``{"source": {...}, "target": {...}}`` tokenizer settings, or None (reversal task)
    tokenizers: dict[str, dict[str, Any]] | None
    extra: dict[str, Any]


def save_checkpoint(
    path: str | Path,
    model: Seq2Seq,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    history: History | None = None,
    *,
    tokenizers: Mapping[str, Mapping[str, Any]] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Save ``model`` with its config, vocabularies, tokenizer settings and history,
    atomically (a failure leaves any earlier file at ``path`` as it was)."""
    if model.config is None:
        raise ValueError("the model has no ModelConfig; build it with build_model(config)")
    if tokenizers is not None and set(tokenizers) != {"source", "target"}:
        raise ValueError(f"tokenizers must have keys 'source' and 'target'; got {set(tokenizers)}")
    payload = {
        "format": CHECKPOINT_FORMAT,
        "config": model.config.to_dict(),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "src_vocab": src_vocab.to_dict(),
        "tgt_vocab": tgt_vocab.to_dict(),
        "history": history.to_dict() if history is not None else None,
        "tokenizers": {k: dict(v) for k, v in tokenizers.items()} if tokenizers else None,
        "extra": dict(extra or {}),
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)
    return Path(path)


def _read(path: Path) -> dict[str, Any]:
    try:
        with warnings.catch_warnings():  # e.g. "pickle protocol 4": the error below says more
            warnings.simplefilter("ignore", UserWarning)
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        if "weights_only" in str(error) or "Unsupported global" in str(error):
            raise CheckpointError(
                f"{path} holds Python objects, not only tensors and plain data, so it was not "
                "loaded (loading it could run code). Course checkpoints never contain such "
                "objects: use a checkpoint saved by course_utils.checkpoints.save_checkpoint."
            ) from None
        raise CheckpointError(f"{path} is not a checkpoint file ({error})") from None
    except Exception as error:  # noqa: BLE001 - any failure to parse is "not a checkpoint"
        size = path.stat().st_size
        what = "is empty" if size == 0 else f"cannot be read ({size:,} bytes: truncated or " \
            f"not a PyTorch file)"
        detail = str(error).splitlines()[0][:160] if str(error) else type(error).__name__
        raise CheckpointError(f"{path} {what}: {detail}") from None
    if not isinstance(payload, dict) or "format" not in payload:
        raise CheckpointError(f"{path} is a PyTorch file but not a course checkpoint; save "
                              "one with course_utils.checkpoints.save_checkpoint")
    if payload["format"] != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"{path} was saved in checkpoint format {payload['format']!r}; this version of the "
            f"course reads format {CHECKPOINT_FORMAT}. Re-run the notebook that saved it.")
    missing = [key for key in _REQUIRED if key not in payload]
    unknown = sorted(set(payload) - set(_KNOWN))
    if missing or unknown:
        raise CheckpointError(f"{path}: a course checkpoint needs {', '.join(_REQUIRED)}; "
                              f"missing: {missing or 'none'}; unknown keys: {unknown or 'none'}")
    return payload


def _config(path: Path, saved: Any, expect: ModelConfig | None) -> ModelConfig:
    names = {f.name for f in fields(ModelConfig)}
    if not isinstance(saved, dict):
        raise CheckpointError(f"{path}: its model config is not a mapping")
    required = [f.name for f in fields(ModelConfig) if f.default is MISSING]
    unknown = sorted(set(saved) - names)
    missing = [name for name in required if name not in saved]
    if unknown or missing:
        raise CheckpointError(f"{path}: its model config has unknown fields {unknown or 'none'}"
                              f" and lacks {missing or 'none'} (saved by another version?)")
    config = ModelConfig(**saved)
    if expect is not None and config != expect:
        differences = [f"{f.name} {getattr(config, f.name)!r} (expected "
                       f"{getattr(expect, f.name)!r})" for f in fields(ModelConfig)
                       if getattr(config, f.name) != getattr(expect, f.name)]
        raise CheckpointError(f"{path} was saved for another configuration: "
                              + ", ".join(differences))
    return config


def _load_weights(path: Path, model: Seq2Seq, state: Any) -> None:
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: its weights are not a state dict")
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    wrong = [f"{k} {tuple(state[k].shape)} (model has {tuple(own[k].shape)})"
             for k in own if k in state and (not isinstance(state[k], torch.Tensor)
                                             or state[k].shape != own[k].shape)]
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing weights {', '.join(missing[:4])}"
                         + (f" and {len(missing) - 4} more" if len(missing) > 4 else ""))
        if unexpected:
            parts.append(f"unexpected weights {', '.join(unexpected[:4])}"
                         + (f" and {len(unexpected) - 4} more" if len(unexpected) > 4 else ""))
        if wrong:
            parts.append(f"other shapes: {'; '.join(wrong[:3])}")
        raise CheckpointError(f"{path}: its weights do not fit the model its config describes: "
                              + "; ".join(parts))
    model.load_state_dict(state)


def load_checkpoint(
    path: str | Path,
    device: torch.device | str = "cpu",
    *,
    expect: ModelConfig | None = None,
) -> Checkpoint:
    """Rebuild the model saved by :func:`save_checkpoint`, in eval mode on ``device``.

    ``expect``: the :class:`ModelConfig` the caller needs; a checkpoint saved for another one
    (sizes, vocabularies, attention or not) raises :class:`CheckpointError` listing the
    differences. Raises ``FileNotFoundError`` if there is no file at ``path``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder, not a checkpoint file")
    payload = _read(path)
    config = _config(path, payload["config"], expect)
    try:
        src_vocab = Vocab.from_dict(payload["src_vocab"])
        tgt_vocab = Vocab.from_dict(payload["tgt_vocab"])
        history = (History.from_dict(payload["history"]) if payload.get("history") is not None
                   else None)
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: its vocabularies or history are damaged ({error})") \
            from None
    if (len(src_vocab), len(tgt_vocab)) != (config.src_vocab_size, config.tgt_vocab_size):
        raise CheckpointError(
            f"{path}: vocabularies of {len(src_vocab)} and {len(tgt_vocab)} tokens do not match "
            f"the config's {config.src_vocab_size} and {config.tgt_vocab_size}")
    model = build_model(config)
    _load_weights(path, model, payload["state_dict"])
    model.to(device).eval()
    return Checkpoint(path, model, src_vocab, tgt_vocab, history, payload.get("tokenizers"),
                      dict(payload.get("extra") or {}))


class EpochSaver:
    """An ``on_epoch_end`` callback for :func:`course_utils.training.train` that saves the
    model after every epoch in ``run``'s ``epochs/`` folder; call it with epoch 0 before
    training to keep the untrained model too."""

    def __init__(
        self,
        run: RunFolder,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        *,
        model_name: str = "attention",
        tokenizers: Mapping[str, Mapping[str, Any]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.run, self.model_name = run, model_name
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.tokenizers, self.extra = tokenizers, extra

    def __call__(self, epoch: int, model: Seq2Seq, history: History | None) -> Path:
        return save_checkpoint(self.run.epoch_checkpoint(epoch, self.model_name), model,
                               self.src_vocab, self.tgt_vocab, history,
                               tokenizers=self.tokenizers, extra=self.extra)
