"""Mixed precision on the device at hand, and the device described in words.

A run's configuration asks for 16-bit mixed precision with ``bf16=True`` (the GPU presets do;
:class:`course_utils.training.TrainConfig`). What that means depends on the hardware, which
:func:`choose_precision` reads once per run:

- **bfloat16 autocast** on a GPU with bfloat16 tensor cores (CUDA compute capability 8.0 and
  later: A100, A10, L4, RTX 30xx, H100) and on a CPU. bfloat16 has float32's range, so the loss
  needs no scaling.
- **float16 autocast with loss scaling** on an older GPU (compute capability 7.x: Colab's T4,
  V100), which has float16 tensor cores but no bfloat16 ones: PyTorch would emulate bfloat16
  there, slower than float32. float16's narrow range lets small gradients underflow to zero, so
  a :class:`torch.amp.GradScaler` multiplies the loss before the backward pass and divides the
  gradients again before the optimizer's step (skipping a step whose gradients overflowed).
- **float32** otherwise: when not asked, and on Apple's MPS.

The loss itself is always computed in float32 (:func:`course_utils.training.training_step`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import torch

__all__ = ["Precision", "choose_precision", "describe_device", "has_bf16_tensor_cores"]


@dataclass(frozen=True)
class Precision:
    """How a run computes: the device type, the autocast dtype (None: float32 throughout) and
    whether the loss is scaled (float16)."""

    device_type: str
    dtype: torch.dtype | None = None
    scaled: bool = False

    @property
    def name(self) -> str:
        """In words: ``"float32"``, ``"bfloat16 mixed precision"``, ``"float16 mixed precision
        with loss scaling"``."""
        if self.dtype is None:
            return "float32"
        name = str(self.dtype).removeprefix("torch.")
        return f"{name} mixed precision" + (" with loss scaling" if self.scaled else "")

    def autocast(self) -> AbstractContextManager[object]:
        """The forward pass's context: autocast to :attr:`dtype`, or nothing for float32."""
        if self.dtype is None:
            return nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def scaler(self) -> torch.amp.GradScaler:
        """A loss scaler for one run: active for float16, a pass-through otherwise."""
        return torch.amp.GradScaler(self.device_type, enabled=self.scaled)


def has_bf16_tensor_cores(device: torch.device | str) -> bool:
    """Whether the CUDA ``device`` computes in bfloat16 natively (compute capability 8.0 or
    later); a T4 (7.5) or a V100 (7.0) does not."""
    major, _ = torch.cuda.get_device_capability(torch.device(device))
    return major >= 8


def choose_precision(device: torch.device | str, mixed: bool) -> Precision:
    """The :class:`Precision` of a run on ``device`` whose configuration asks for mixed
    precision (``mixed``, a configuration's ``bf16``) or not; see the module's docstring."""
    device = torch.device(device)
    if not mixed or device.type not in ("cuda", "cpu"):
        return Precision(device.type)
    if device.type == "cuda" and not has_bf16_tensor_cores(device):
        return Precision("cuda", torch.float16, scaled=True)
    return Precision(device.type, torch.bfloat16)


def describe_device(device: torch.device | str, mixed: bool = True) -> str:
    """The device in a line: a GPU's name, memory and compute capability, and the precision a
    run that asks for mixed precision gets there, e.g. ``"cuda (Tesla T4, 15.6 GB, compute
    capability 7.5: float16 mixed precision with loss scaling)"``."""
    device = torch.device(device)
    if device.type != "cuda":
        return device.type
    properties = torch.cuda.get_device_properties(device)
    major, minor = torch.cuda.get_device_capability(device)
    return (f"cuda ({properties.name}, {properties.total_memory / 1e9:.1f} GB, compute "
            f"capability {major}.{minor}: {choose_precision(device, mixed).name})")
