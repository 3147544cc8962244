"""Run-time configuration shared by every notebook: scale, device, and the width of its text.

``COURSE_QUICK=1`` switches every notebook to smoke-test scale (CI sets it). Without it,
notebooks run their real configuration: GPU-sized when a GPU is present, CPU-sized otherwise.
"""

from __future__ import annotations

import os
import platform
import textwrap
from pathlib import Path
from typing import TypeVar

import torch

__all__ = ["TEXT_WIDTH", "cpu_bf16", "get_device", "lecture_runs_dirs", "quick_mode", "runs_dir",
           "scaled", "wrap_text"]

T = TypeVar("T")

#: Characters per line of the text a notebook prints (a check's verdict, a hint): JupyterLab
#: breaks a longer output line anywhere, even inside a word, at the width of the notebook.
TEXT_WIDTH = 88

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def quick_mode() -> bool:
    """True when ``COURSE_QUICK`` asks for smoke-test scale."""
    raw = os.environ.get("COURSE_QUICK", "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ValueError(f"COURSE_QUICK must be one of 1/0, true/false, yes/no, on/off; got {raw!r}")


def _flag(name: str) -> bool | None:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return None
    if raw in _TRUE:
        return True
    if raw in _FALSE - {""}:
        return False
    raise ValueError(f"{name} must be one of 1/0, true/false, yes/no, on/off; got {raw!r}")


def cpu_bf16() -> bool:
    """Whether this CPU does bf16 arithmetic natively: AVX-512 BF16 or AMX on x86, and on other
    architectures (Arm) what oneDNN reports. Elsewhere bf16 is emulated and slower than float32.

    No course preset turns bf16 on for a CPU: on the course's 2-core machine, which has native
    bf16, it made a training step 1.21x faster (``benchmarks/bench_training_levers.py``), far
    from notebook 4's 8-minute target, and it would change every number the translation
    notebooks print. The benchmarks use this to decide whether bf16 is worth measuring;
    ``COURSE_CPU_BF16=0`` or ``=1`` overrides it.
    """
    forced = _flag("COURSE_CPU_BF16")
    if forced is not None:
        return forced
    try:
        if platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86"):
            return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # an older PyTorch, or a build without oneDNN
        return False


def get_device(prefer: str | None = None) -> torch.device:
    """The device to train on: CUDA, then Apple's MPS, then the CPU.

    ``prefer`` (or the ``COURSE_DEVICE`` variable) forces one, e.g. ``"cpu"``.
    """
    prefer = prefer or os.environ.get("COURSE_DEVICE")
    if prefer:
        device = torch.device(prefer)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {prefer!r} requested but CUDA is not available")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def scaled(*, quick: T, cpu: T, gpu: T | None = None, device: torch.device | None = None) -> T:
    """Pick the value for the current scale: ``quick`` under COURSE_QUICK, else by device.

    >>> n_samples = scaled(quick=200, cpu=20_000, gpu=200_000)
    """
    if quick_mode():
        return quick
    device = device or get_device()
    if gpu is not None and device.type == "cuda":
        return gpu
    return cpu


def runs_dir() -> Path:
    """Where a notebook saves its runs (checkpoints, results): ``COURSE_RUNS_DIR``, else the
    folder ``runs/`` beside the notebook being run (Jupyter runs a notebook in its own folder),
    so that a student's checkpoints land in the student's own copy of the course, never in the
    checkout the package was installed from. Under ``COURSE_QUICK`` the ``quick/`` folder inside
    it, so smoke tests never overwrite the checkpoints of a real run."""
    configured = os.environ.get("COURSE_RUNS_DIR")
    base = Path(configured) if configured else Path.cwd() / "runs"
    return base / "quick" if quick_mode() else base


def lecture_runs_dirs() -> list[Path]:
    """Where to *look* for runs another notebook saved, first match wins: :func:`runs_dir`, then
    (without ``COURSE_RUNS_DIR``) the ``notebooks/runs`` of the same copy of the course, seen
    from a sibling folder such as ``exercises/`` or from the course folder itself. Notebook 4
    saves its models in ``notebooks/runs``; E10.2 and E10.3 read them from ``exercises/``."""
    found = [runs_dir()]
    if os.environ.get("COURSE_RUNS_DIR"):
        return found
    here = Path.cwd()
    for notebooks in (here.parent / "notebooks", here / "notebooks"):
        candidate = notebooks / "runs"
        if quick_mode():
            candidate = candidate / "quick"
        if candidate.resolve() != found[0].resolve() and candidate not in found:
            found.append(candidate)
    return found


def wrap_text(text: str, indent: str = "") -> str:
    """``text`` with each of its lines broken between words (never inside one) at
    :data:`TEXT_WIDTH` characters; ``indent`` starts each continuation line."""
    return "\n".join(textwrap.fill(line, TEXT_WIDTH, break_long_words=False,
                                   break_on_hyphens=False, subsequent_indent=indent)
                     for line in text.splitlines())
