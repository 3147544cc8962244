"""A memory cgroup per graded submission, where the grader may create one.

``RLIMIT_DATA``, which the grader sets on every worker, counts a process's private memory
only: a student's shared ``mmap`` of several gigabytes passes under it. A memory cgroup counts
everything the submission's processes touch (shared memory and ``/tmp`` files included) across
its whole process tree, and the kernel's OOM killer enforces it. Creating one needs write access
to a cgroup folder, which a grader run as root or under a systemd user slice with delegation has,
and an ordinary user usually has not; :meth:`MemoryCgroup.create` returns ``None`` then, and the
rlimit alone applies (the summary and the README say which).

Both cgroup layouts are handled: v2 (``memory.max``, ``memory.events``) and v1
(``memory.limit_in_bytes``, ``memory.oom_control``). The group is made under the grader's own
cgroup, joined by the worker before it starts (:meth:`MemoryCgroup.join`, from ``preexec_fn``),
and removed once every process in it is gone (:meth:`MemoryCgroup.remove`, which kills what is
left).
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

__all__ = ["MemoryCgroup", "own_memory_cgroup"]

ROOT = Path("/sys/fs/cgroup")


def own_memory_cgroup(root: Path = ROOT, proc: Path = Path("/proc/self/cgroup")
                      ) -> tuple[Path, str] | None:
    """This process's memory cgroup folder and its layout (``"v2"`` or ``"v1"``), or ``None``
    where there is none to be found."""
    try:
        lines = proc.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = (line.split(":", 2) + ["", ""])[:3]
        if "memory" in names.split(","):
            folder = root / "memory" / path.lstrip("/")
            if (folder / "memory.limit_in_bytes").exists():
                return folder, "v1"
    for line in lines:
        if line.startswith("0::"):
            folder = root / line[3:].lstrip("/")
            available = folder / "cgroup.controllers"
            if available.exists() and "memory" in available.read_text().split():
                return folder, "v2"
    return None


class MemoryCgroup:
    """One submission's memory cgroup: ``limit_bytes`` for all its processes together."""

    def __init__(self, folder: Path, layout: str) -> None:
        self.folder, self.layout = folder, layout
        self._procs = os.fsencode(folder / "cgroup.procs")

    @classmethod
    def create(cls, limit_bytes: int, parent: tuple[Path, str] | None = None
               ) -> MemoryCgroup | None:
        """A fresh group under ``parent`` (default: this process's memory cgroup) holding
        ``limit_bytes``, or ``None`` where one cannot be made (no cgroup, no permission, no
        memory controller below it)."""
        if limit_bytes < 1:
            raise ValueError(f"the memory limit must be positive; got {limit_bytes} bytes")
        found = parent or own_memory_cgroup()
        if found is None:
            return None
        base, layout = found
        folder = base / f"course-grade-{secrets.token_hex(6)}"
        try:
            folder.mkdir()
        except OSError:
            return None
        group = cls(folder, layout)
        try:
            if layout == "v2":
                (folder / "memory.max").write_text(str(limit_bytes))
                swap = folder / "memory.swap.max"
                if swap.exists():
                    swap.write_text("0")
            else:
                (folder / "memory.limit_in_bytes").write_text(str(limit_bytes))
                swap = folder / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    try:  # memory and swap together: the same limit, so no swapping past it
                        swap.write_text(str(limit_bytes))
                    except OSError:
                        pass
        except OSError:
            group.remove()
            return None
        return group

    def join(self) -> None:
        """Put the calling process in the group (for ``preexec_fn``: after ``fork``, before
        ``exec``; its children follow). Only ``os`` calls, safe in a forked child."""
        fd = os.open(self._procs, os.O_WRONLY)
        try:
            os.write(fd, b"0")  # "0": the writing process itself
        finally:
            os.close(fd)

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.folder / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this group for passing the limit."""
        name = "memory.events" if self.layout == "v2" else "memory.oom_control"
        try:
            for line in (self.folder / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":  # kernels before 4.13 (v1) do not count: 0 then
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self, wait: float = 5.0) -> None:
        """Kill whatever still runs in the group and remove it."""
        deadline = time.monotonic() + wait
        while True:
            for pid in self.pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.folder.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # left for the system; its processes were sent SIGKILL
                time.sleep(0.05)
