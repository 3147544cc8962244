"""Training seq2seq models: seeding, the loss, the loop, its history and snapshots.

Taught in notebook 3, section 3 ("Training"); notebook 4, section 2, notebook 6 and exercise
E10.2 train with the same loop.

:func:`train` is the loop every notebook uses, and it takes the run's configuration whole: a
:class:`TrainConfig` says how to train (every field documented where it is declared), and a
task's :class:`RunConfig` (its name, a :class:`course_utils.models.ModelSizes` and a
:class:`TrainConfig`) carries one. It trains on length-bucketed batches with Adam, a
warm-up-then-cosine learning-rate schedule and gradient clipping; on CUDA it uses pinned
memory and non-blocking copies, and mixed precision when asked (bfloat16 on a CPU and on
recent GPUs, float16 with loss scaling on a T4: :mod:`course_utils.precision`). After every
epoch it records validation loss, token accuracy and (unless asked not to) greedy exact-match
accuracy in a :class:`History`, and at chosen epochs it keeps the attention of fixed examples,
so notebooks can show attention emerging. Checkpoints are in :mod:`course_utils.checkpoints`.
"""

from __future__ import annotations

import dataclasses
import math
import random
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Self

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from course_utils.config import TEXT_WIDTH, quick_mode
from course_utils.data import SORT_KEYS, Batch, Pair, Vocab, iterate_batches, make_batches
from course_utils.decoding import greedy_decode_pairs
from course_utils.metrics import exact_match
from course_utils.models import ModelConfig, ModelSizes, Seq2Seq
from course_utils.precision import Precision, choose_precision
from course_utils.tensors import eval_mode, to_numpy

__all__ = [
    "History",
    "RunConfig",
    "TrainConfig",
    "evaluate_loss",
    "seed_everything",
    "sequence_loss",
    "train",
    "training_step",
]


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """How :func:`train` trains: every setting of a run's optimisation, with its default."""

    epochs: int = 5  # passes over the training set
    batch_size: int = 64  # sentence pairs per step, length-bucketed (course_utils.data)
    lr: float = 3e-3  # Adam's peak learning rate: warm-up over 5% of the steps, cosine to 5%
    clip: float = 1.0  # the gradients' largest total norm
    # 16-bit mixed precision for the forward pass; the loss stays in float32. bfloat16 autocast
    # on a CPU and on a GPU with bfloat16 tensor cores (A100, L4, H100); float16 autocast with
    # loss scaling on older GPUs such as Colab's T4 (course_utils.precision); ignored elsewhere.
    # The GPU presets use it; on a CPU it needs native bf16 (config.cpu_bf16) to pay
    bf16: bool = False
    # seeds dropout and each epoch's batch order (seed + epoch); the caller seeds the weights
    seed: int = 0
    # greedy-decode the validation set after every epoch and record the share of outputs equal
    # to their target: meaningful with one right answer (reversal), not for translation, where
    # it costs a decoding of the validation set per epoch for a number near 0
    measure_exact_match: bool = True
    target_exact_match: float | None = None  # stop once exact match reaches this fraction
    # run the output layer only at real target positions (the loss ignores padding either way,
    # so the loss and gradients are the same); False runs it at every slot, as the course did
    # before (benchmarks/bench_multi30k_budget.py measures the difference)
    skip_padding: bool = True
    # the length batches are bucketed by (course_utils.data.make_batches): "source", or
    # "target" (the decoder then steps through little padding: faster in batches of 128, not 64)
    bucket_by: str = "source"

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1; got {self.epochs}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got {self.batch_size}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0; got {self.lr}")
        if not self.clip > 0:
            raise ValueError(f"clip must be > 0 (the largest gradient norm); got {self.clip}")
        if self.target_exact_match is not None and not 0 <= self.target_exact_match <= 1:
            raise ValueError("target_exact_match must be a fraction between 0 and 1; got "
                             f"{self.target_exact_match}")
        if self.bucket_by not in SORT_KEYS:
            raise ValueError(f"bucket_by must be one of {list(SORT_KEYS)}; got {self.bucket_by!r}")
        if self.target_exact_match is not None and not self.measure_exact_match:
            raise ValueError("target_exact_match needs measure_exact_match=True")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One run of a task, passed whole, made of its parts: its ``name``, its model's sizes
    (``model``, a :class:`ModelSizes`) and how it is trained (``train``, a
    :class:`TrainConfig`). Each task's configuration adds its data settings
    (:class:`course_utils.reversal.ReversalConfig`,
    :class:`course_utils.translation_setup.Multi30kConfig`) and its own defaults for the parts.

    Read a setting from the part that owns it (``cfg.model.hidden_dim``, ``cfg.train.epochs``);
    change any with :meth:`replace`, which finds the part: ``cfg.replace(epochs=3)``.
    """

    name: str = "cpu"  # the preset: "quick", "cpu", "gpu", or a budget derived from one
    model: ModelSizes = ModelSizes()
    train: TrainConfig = TrainConfig()

    def __post_init__(self) -> None:
        for part, kind in (("model", ModelSizes), ("train", TrainConfig)):
            value = getattr(self, part)
            if type(value) is not kind:
                raise TypeError(f"{part} must be a {kind.__name__}, such as {kind.__name__}(); "
                                f"got {type(value).__name__}")

    def __str__(self) -> str:
        """The settings a part per line, as a notebook prints them: ``print(cfg)``."""
        def settings(obj: Any, names: Sequence[str]) -> str:
            return ", ".join(f"{name}={getattr(obj, name)!r}" for name in names)

        data = [f.name for f in fields(self) if f.name not in ("name", "model", "train")]
        rows = [("model", settings(self.model, [f.name for f in fields(self.model)])),
                ("train", settings(self.train, [f.name for f in fields(self.train)]))]
        if data:
            rows.append(("data", settings(self, data)))
        lines = [f"{type(self).__name__} {self.name!r}"]
        for label, text in rows:
            lines += textwrap.wrap(text, TEXT_WIDTH, initial_indent=f"  {label + ':':<7}",
                                   subsequent_indent=" " * 9)
        return "\n".join(lines)

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, each given to the part that owns it: a model size
        (``hidden_dim=64``), a training setting (``epochs=3``) or the task's own
        (``name``, a data setting)."""
        parts: dict[str, dict[str, Any]] = {"model": {}, "train": {}}
        own: dict[str, Any] = {}
        owned = {f.name: part for part, kind in (("model", ModelSizes), ("train", TrainConfig))
                 for f in fields(kind)}
        mine = {f.name for f in fields(self)} - set(parts)
        for key, value in changes.items():
            if key in owned:
                parts[owned[key]][key] = value
            elif key in mine:
                own[key] = value
            else:
                raise TypeError(f"{type(self).__name__} has no setting {key!r}; its settings are "
                                f"{sorted(mine | set(owned))}")
        return dataclasses.replace(
            self, **own, **{part: dataclasses.replace(getattr(self, part), **values)
                            for part, values in parts.items() if values})

    def model_config(self, src_vocab: Vocab, tgt_vocab: Vocab, attention: bool = True,
                     **choices: Any) -> ModelConfig:
        """The :class:`ModelConfig` of this run's attention (or vanilla) model, with the
        architecture's ``choices`` (``score="dot"``, ``decoder_dim="encoder"``, ...) and any
        size given here in place of the run's (``hidden_dim=...``)."""
        return ModelConfig(len(src_vocab), len(tgt_vocab), attention=attention,
                           **{**self.model.model_sizes, **choices})


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch, so CPU runs repeat exactly."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def sequence_loss(logits: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """Cross-entropy averaged over real target tokens; padding does not count.

    logits: (batch, tgt_len, vocab); tgt_out: (batch, tgt_len).
    """
    return F.cross_entropy(
        logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=Vocab.pad_id
    )


@dataclass
class History:
    """Per-epoch measurements, plus attention snapshots ``{epoch: [matrix, ...]}``."""

    epoch: list[int] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_token_accuracy: list[float] = field(default_factory=list)
    val_exact_match: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # wall time since training started
    snapshots: dict[int, list[np.ndarray]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["snapshots"] = {k: [m.tolist() for m in v] for k, v in self.snapshots.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> History:
        data = dict(data)
        snapshots = {int(k): [np.asarray(m) for m in v] for k, v in data.pop("snapshots").items()}
        return cls(**data, snapshots=snapshots)


def _warmup_cosine(
    total_steps: int, warmup_fraction: float = 0.05, floor: float = 0.05
) -> Callable[[int], float]:
    warmup = max(1, int(total_steps * warmup_fraction))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


@torch.no_grad()
def evaluate_loss(
    model: Seq2Seq, batches: Sequence[Batch], device: torch.device
) -> tuple[float, float]:
    """Teacher-forced ``(loss, token accuracy)`` over real target tokens."""
    total_loss, correct, tokens = 0.0, 0, 0
    with eval_mode(model):
        for batch in iterate_batches(list(batches), device):
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
            real = batch.tgt_out != Vocab.pad_id
            n = int(real.sum())
            total_loss += float(sequence_loss(logits, batch.tgt_out)) * n
            correct += int(((logits.argmax(-1) == batch.tgt_out) & real).sum())
            tokens += n
    return total_loss / tokens, correct / tokens


def _snapshot(
    model: Seq2Seq, pairs: Sequence[Pair], device: torch.device, batch_size: int
) -> list[np.ndarray]:
    decoded = greedy_decode_pairs(model, pairs, device=device, batch_size=batch_size)
    if decoded.attention is None:
        return []
    return [to_numpy(a) for a in decoded.attention]


def training_step(
    model: Seq2Seq, batch: Batch, optimizer: torch.optim.Optimizer, *, clip: float,
    bf16: bool = False, skip_padding: bool = True, precision: Precision | None = None,
    scaler: torch.amp.GradScaler | None = None,
) -> torch.Tensor:
    """One step of :func:`train` on ``batch`` (already on the model's device): the
    teacher-forced forward pass (in mixed precision with ``bf16``: see
    :func:`course_utils.precision.choose_precision`), the mean cross-entropy over the real
    target tokens (in float32), the backward pass, the gradients' total norm clipped to
    ``clip``, and ``optimizer``'s step. Returns the loss, detached.

    ``precision`` overrides what ``bf16`` chooses for the batch's device. Where it scales the
    loss (float16), pass the run's ``scaler`` (:meth:`Precision.scaler`), which keeps its scale
    from step to step; without one, the step makes its own.

    With ``skip_padding`` the output layer runs only at the real target positions (the same loss,
    less arithmetic); without, over every position, padding included, and the loss ignores
    padding. The benchmarks time this same step."""
    precision = precision or choose_precision(batch.src.device, bf16)
    autocast = precision.autocast()
    if skip_padding:
        real = batch.tgt_out != Vocab.pad_id  # the output layer runs only here
        with autocast:
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in, positions=real)
        loss = F.cross_entropy(logits.float(), batch.tgt_out[real])
    else:
        with autocast:
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = sequence_loss(logits, batch.tgt_out)
    optimizer.zero_grad(set_to_none=True)
    if precision.scaled:  # float16: scale the loss, unscale the gradients before clipping
        scaler = scaler or precision.scaler()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.step(optimizer)  # skipped when a gradient overflowed
        scaler.update()
        return loss.detach()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.detach()


def train(
    model: Seq2Seq,
    train_pairs: Sequence[Pair],
    val_pairs: Sequence[Pair],
    config: TrainConfig | RunConfig | None = None,
    *,
    device: torch.device | str = "cpu",
    snapshot_pairs: Sequence[Pair] = (),
    snapshot_epochs: Sequence[int] = (),
    progress: bool | None = None,
    description: str = "training",
    on_epoch_end: Callable[[int, Seq2Seq, History], object] | None = None,
    **settings: object,
) -> History:
    """Train ``model`` in place as ``config`` says, and return its :class:`History`.

    ``config`` is the run's :class:`TrainConfig`, or a task's :class:`RunConfig` passed whole
    (its ``train`` part is used); change a setting with ``cfg.replace(epochs=3)``. The other
    arguments say where the run happens and what it shows, not how it trains.

    Args:
        device: where to train; the model is moved there.
        snapshot_epochs: epochs after which to store the attention of ``snapshot_pairs``
            (epoch 0 = before training).
        progress: show a progress bar; by default yes, except under ``COURSE_QUICK``.
        description: the progress bar's label.
        on_epoch_end: called as ``on_epoch_end(epoch, model, history)`` after each epoch's
            measurements are recorded, such as to save a checkpoint per epoch.
    """
    if settings:  # the keywords train() took before it took a configuration
        named = ", ".join(f"{k}={v!r}" for k, v in settings.items())
        raise TypeError(f"train() takes the run's settings as one configuration, not as keywords "
                        f"({', '.join(settings)}): pass train(model, train_pairs, val_pairs, "
                        f"TrainConfig({named})), or your task's configuration (cfg) whole")
    if isinstance(config, RunConfig):
        config = config.train
    if not isinstance(config, TrainConfig):
        raise TypeError("config must be a TrainConfig, such as TrainConfig(epochs=3), or a "
                        f"task's RunConfig (cfg); got {type(config).__name__}")
    if not train_pairs or not val_pairs:
        raise ValueError("need at least one training pair and one validation pair")
    device = torch.device(device)
    model.to(device)
    seed_everything(config.seed)
    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, _warmup_cosine(config.epochs * steps_per_epoch)
    )
    val_batches = make_batches(val_pairs, config.batch_size * 2, shuffle=False,
                               sort_by=config.bucket_by)
    history = History()
    precision = choose_precision(device, config.bf16)
    # float16 only: the loss scaler, which keeps its scale across the run's steps
    scaler = precision.scaler() if precision.scaled else None
    if 0 in snapshot_epochs and snapshot_pairs:
        history.snapshots[0] = _snapshot(model, snapshot_pairs, device, config.batch_size)

    show = (not quick_mode()) if progress is None else progress
    bar = tqdm(total=config.epochs * steps_per_epoch, desc=description, disable=not show,
               mininterval=1.0, unit="batch")
    start = time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        model.train()
        running, seen = torch.zeros((), device=device), 0  # summed on the device, read per epoch
        batches = make_batches(train_pairs, config.batch_size, seed=config.seed + epoch,
                               sort_by=config.bucket_by)
        for batch in iterate_batches(batches, device):
            loss = training_step(model, batch, optimizer, clip=config.clip,
                                 skip_padding=config.skip_padding, precision=precision,
                                 scaler=scaler)
            schedule.step()
            running += loss * len(batch)
            seen += len(batch)
            bar.update()
        val_loss, token_accuracy = evaluate_loss(model, val_batches, device)
        history.epoch.append(epoch)
        history.train_loss.append(float(running) / seen)
        history.val_loss.append(val_loss)
        history.val_token_accuracy.append(token_accuracy)
        shown = dict(epoch=epoch, train=f"{history.train_loss[-1]:.3f}", val=f"{val_loss:.3f}")
        exact = None
        if config.measure_exact_match:
            exact = exact_match(greedy_decode_pairs(model, val_pairs, device=device,
                                                    batch_size=config.batch_size * 2), val_pairs)
            history.val_exact_match.append(exact)
            shown["exact"] = f"{exact:.1%}"
        history.seconds.append(time.perf_counter() - start)
        bar.set_postfix(shown)
        if epoch in snapshot_epochs and snapshot_pairs:
            history.snapshots[epoch] = _snapshot(model, snapshot_pairs, device, config.batch_size)
        if on_epoch_end is not None:
            on_epoch_end(epoch, model, history)
        target = config.target_exact_match
        if target is not None and exact is not None and exact >= target:
            break
    bar.close()
    return history
