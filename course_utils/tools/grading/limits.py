"""The limits one submission runs under, and the environment its kernel starts in: time per cell
and in total, memory (a per-process rlimit and, where the grader may create one, a memory cgroup
for the whole process tree), the cores, and no instructor variables."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from course_utils.tools.grading.memcg import MemoryCgroup

__all__ = ["DEFAULT_LIMITS", "PASSED_ON", "GradingLimits", "bare_kernel_seconds", "kernel_threads",
           "limit_memory",
           "memory_cgroup", "minimal_env"]


@dataclass(frozen=True)
class GradingLimits:
    """Seconds per cell, seconds per notebook, and memory (MB) per notebook."""

    cell_seconds: float = 60.0
    total_seconds: float = 300.0
    memory_mb: int = 4096

    def __post_init__(self) -> None:
        for name in ("cell_seconds", "total_seconds", "memory_mb"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
                    0 < value < float("inf")):
                raise ValueError(f"{name} must be a positive number; got {value!r}")


#: The limits :func:`course_utils.tools.grading.batch.grade_folder` grades under by default.
DEFAULT_LIMITS = GradingLimits()

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


def bare_kernel_seconds(repeats: int = 1) -> float:
    """Median seconds to start a kernel, import what a graded notebook imports (NumPy and the
    checks) and shut it down: what any grader pays per notebook before grading anything, and a
    measure of how busy the machine is right now."""
    import statistics
    import time

    from jupyter_client.manager import start_new_kernel

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        manager, client = start_new_kernel(kernel_name="python3")
        try:
            client.execute_interactive("import numpy\nfrom course_utils.checks import e10_1",
                                       timeout=300)
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
