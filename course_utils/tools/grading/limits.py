"""The limits one submission runs under, and the environment its kernel starts in: time per cell
and in total, memory (a per-process rlimit and, where the grader may create one, a memory cgroup
for the whole process tree), the cores, and no instructor variables.

Each limit's default is declared once, with its help text, in :class:`GradingLimits`
(``course-grade``'s options are made from it). The time limits are stated for a quiet machine:
``course-grade`` measures how busy this one is at the start of the run (:func:`calibrate`, one
bare kernel started and timed) and stretches them by that factor (:meth:`GradingLimits.scaled`),
so that an honest notebook is not stopped because other work shares the cores.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from course_utils.tools.grading.memcg import MemoryCgroup

__all__ = ["DEFAULT_LIMITS", "GRADER_KERNEL", "MEMORY_ENFORCEMENT", "PASSED_ON",
           "QUIET_KERNEL_SECONDS", "Calibration", "GradingLimits", "Protection",
           "bare_kernel_seconds", "calibrate", "grader_kernelspec",
           "kernel_threads", "limit_memory", "memory_cgroup", "memory_enforcement", "minimal_env"]


@dataclass(frozen=True)
class GradingLimits:
    """Seconds per cell, seconds per notebook, and memory (MB) per notebook. Each field's
    ``metadata`` holds its ``course-grade`` option and help text."""

    cell_seconds: float = field(default=60.0, metadata={
        "option": "--cell-timeout", "type": float, "metavar": "SECONDS",
        "help": "seconds one cell may run on a quiet machine, stretched by the calibration "
                "(a cell past it is interrupted: status timeout)"})
    total_seconds: float = field(default=300.0, metadata={
        "option": "--total-timeout", "type": float, "metavar": "SECONDS",
        "help": "seconds a whole notebook may run on a quiet machine, stretched by the "
                "calibration (the parts checked before it keep their points)"})
    memory_mb: int = field(default=4096, metadata={
        "option": "--memory-mb", "type": int, "metavar": "MB",
        "help": "memory per notebook, MB (per process, and for all its processes together "
                "where a memory cgroup can be made)"})

    def __post_init__(self) -> None:
        for name in ("cell_seconds", "total_seconds", "memory_mb"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                    0 < value < float("inf")):
                raise ValueError(f"{name} must be a positive number; got {value!r}")

    def scaled(self, factor: float) -> GradingLimits:
        """The time limits stretched by ``factor`` (at least 1); the memory limit as it is."""
        if not factor >= 1:
            raise ValueError(f"a calibration factor stretches limits: >= 1; got {factor!r}")
        return replace(self, cell_seconds=round(self.cell_seconds * factor, 1),
                       total_seconds=round(self.total_seconds * factor, 1))

    @staticmethod
    def options() -> list[tuple[str, dict]]:
        """Each limit's command-line option and its ``argparse`` keywords (``dest``, ``type``,
        ``default``, ``metavar``, ``help``): declared here once."""
        return [(f.metadata["option"], {
            "dest": f.name, "type": f.metadata["type"], "metavar": f.metadata["metavar"],
            "default": f.default, "help": f"{f.metadata['help']}; default: {f.default:g}"})
            for f in fields(GradingLimits)]

    @classmethod
    def from_options(cls, values: object) -> GradingLimits:
        """The limits that :meth:`options` parsed into ``values`` (argparse's namespace), each
        read by its field's name."""
        return cls(**{f.name: getattr(values, f.name) for f in fields(cls)})


#: The limits :func:`course_utils.tools.grading.batch.grade_folder` grades under by default.
DEFAULT_LIMITS = GradingLimits()

#: Seconds a bare kernel takes to start, import NumPy and the checks, and shut down on a quiet
#: 2-core machine of the course's kind (docs/benchmarks.md: 1.5 to 2.4 s): what
#: :func:`calibrate` compares this machine with, now.
QUIET_KERNEL_SECONDS = 2.0


@dataclass(frozen=True)
class Calibration:
    """How busy the machine was at the start of a run: a bare kernel took ``kernel_seconds``
    against :data:`QUIET_KERNEL_SECONDS`; the time limits were stretched by ``factor``.
    ``failed``: why the bare kernel could not be timed (the limits then apply as given)."""

    kernel_seconds: float
    factor: float
    failed: str | None = None

    def describe(self) -> str:
        if self.failed:
            return (f"x{self.factor:.2f}: the calibration failed ({self.failed}), so the "
                    "limits apply as given")
        return (f"x{self.factor:.2f} for this machine's load (a bare kernel took "
                f"{self.kernel_seconds:.1f} s at the start, {QUIET_KERNEL_SECONDS:g} s on a "
                "quiet machine)")


def calibrate() -> Calibration:
    """Time one bare kernel now (:func:`bare_kernel_seconds`): the factor, at least 1, by which
    a quiet machine's time limits are stretched on this one. A calibration that fails never
    stops grading: its factor is 1 (the limits as given), and it says why."""
    try:
        seconds = bare_kernel_seconds()
    except KeyboardInterrupt:
        raise
    except Exception as error:
        first = (str(error).splitlines() or [""])[0]
        return Calibration(0.0, 1.0, f"{type(error).__name__}: {first}"[:200])
    return Calibration(round(seconds, 2), round(max(1.0, seconds / QUIET_KERNEL_SECONDS), 2))


#: The memory enforcements a run may have (:class:`Protection`), and what each counts.
MEMORY_ENFORCEMENT = {
    "cgroup": "a memory cgroup per submission, for all its processes together, shared memory "
              "counted, and the per-process rlimit",
    "rlimit": "the per-process rlimit only, as no memory cgroup could be made: shared memory "
              "is not counted",
}


@dataclass(frozen=True)
class Protection:
    """What a run's submissions were graded under: ``sandbox`` (``"unshare"`` or ``"none"``)
    and ``memory``: ``"cgroup"`` (all of a submission's processes together, shared memory
    counted, and the per-process rlimit) or ``"rlimit"`` (the per-process limit only)."""

    sandbox: str
    memory: str


#: Variables a submission's kernel sees: no instructor variables (tokens, keys, paths).
PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


def minimal_env(threads: int = 1) -> dict[str, str]:
    """The environment of a worker and its kernel: :data:`PASSED_ON` and the grader's own."""
    env = {k: v for k, v in os.environ.items() if k in PASSED_ON}
    env.update(MPLBACKEND="Agg", PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1",
               # Smoke-test scale: the checks call the student's functions on their own
               # inputs, so a notebook's training (E10.2 trains two models) need not run at
               # full size.
               COURSE_QUICK="1",
               # The cores shared between the notebooks graded at once: kernels that each
               # start a thread per core slow each other down many times over (OpenMP
               # threads wait for cores another kernel holds).
               OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    return env


def kernel_threads(jobs: int) -> int:
    """Threads per kernel when ``jobs`` notebooks are graded at once: the cores, shared."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def memory_cgroup(memory_mb: int) -> MemoryCgroup | None:
    """A memory cgroup of ``memory_mb`` for one submission, on Linux where the grader may make
    one (:mod:`course_utils.tools.grading.memcg`); ``None`` elsewhere, and the rlimit alone
    applies."""
    if not sys.platform.startswith("linux"):
        return None
    return MemoryCgroup.create(memory_mb * 1024 * 1024)


def memory_enforcement(memory_mb: int) -> str:
    """``"cgroup"`` where the grader may make a memory cgroup of ``memory_mb`` now (one is made
    and removed), else ``"rlimit"``: what :class:`Protection` records."""
    probe = memory_cgroup(memory_mb)
    if probe is None:
        return "rlimit"
    probe.remove()
    return "cgroup"


def limit_memory(memory_mb: int, cgroup: MemoryCgroup | None = None) -> Callable[[], None]:
    """What the worker runs before it starts (``preexec_fn``): join ``cgroup``, if any, and
    limit its own memory to ``memory_mb``."""
    def apply() -> None:
        import resource

        if cgroup is not None:  # the whole process tree, shared memory included
            try:
                cgroup.join()
            except OSError:
                pass  # the rlimit below still holds

        limit = memory_mb * 1024 * 1024
        # RLIMIT_DATA (heap and private memory, which is what a runaway student allocation
        # takes) rather than RLIMIT_AS: the address space also counts every shared library
        # mapped, and a CUDA build of PyTorch maps more than the limit before any work starts.
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return apply


#: The kernelspec a graded notebook's kernel starts from (:func:`grader_kernelspec`).
GRADER_KERNEL = "course-grader"


def grader_kernelspec(folder: Path) -> Path:
    """Write, under ``folder``, the kernelspec every kernel of the grader starts from: this very
    Python (the grader's), whatever ``python3`` kernels the instructor's ``JUPYTER_PATH`` or
    ``~/.local/share/jupyter`` offer (an Anaconda install adds one). Returns the folder of
    kernelspecs to look in (``folder/jupyter/kernels``); the kernel's name is
    :data:`GRADER_KERNEL`."""
    kernels = Path(folder) / "jupyter" / "kernels"
    spec = kernels / GRADER_KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "course-grade", "language": "python"}))
    return kernels


def bare_kernel_seconds(repeats: int = 1) -> float:
    """Median seconds to start a kernel, import what a graded notebook imports (NumPy and the
    checks) and shut it down: what any grader pays per notebook before grading anything, and a
    measure of how busy the machine is right now. The kernel starts exactly as a graded
    notebook's does: from :func:`grader_kernelspec` (the grader's own Python), in the
    environment of :func:`minimal_env`, in a temporary folder. It is shut down whatever happens
    (a Ctrl-C or SIGTERM while it starts included)."""
    import statistics
    import subprocess
    import tempfile
    import time

    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="course-grade-calibration-") as folder:
            _time_one_kernel(KernelManager(
                kernel_name=GRADER_KERNEL, kernel_spec_manager=KernelSpecManager(
                    kernel_dirs=[str(grader_kernelspec(Path(folder)))])), folder,
                subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _time_one_kernel(manager: Any, folder: str, devnull: int) -> None:
    """Start ``manager``'s kernel in ``folder``, import NumPy and the checks, shut it down."""
    env = {**minimal_env(), "HOME": folder, "JUPYTER_RUNTIME_DIR": folder,
           "MPLCONFIGDIR": folder, "IPYTHONDIR": folder}
    try:
        manager.start_kernel(stdout=devnull, stderr=devnull, env=env, cwd=folder)
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=300)
            reply = client.execute_interactive(
                "import numpy\nfrom course_utils.checks import e10_1", timeout=300,
                output_hook=lambda message: None)  # what it prints is not the grader's to show
            if reply["content"].get("status") != "ok":
                raise RuntimeError(f"the bare kernel could not import the checks: "
                                   f"{reply['content'].get('ename')}")
        finally:
            client.stop_channels()
    finally:
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
