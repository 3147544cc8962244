"""A sandbox for one graded submission, from what Linux ships: namespaces through ``unshare``.

``course-grade`` runs each submission's worker (and so its kernel and anything the student's
code starts) as ``unshare --user --map-root-user --pid --fork --mount-proc --net --mount``:

- **its own PID namespace:** the worker is process 1 there; when it ends, the kernel and every
  process the student started (detached, ``setsid``, ignoring signals) end with it;
- **no network:** a network namespace with only a loopback interface (which the kernel's
  messages need);
- **its own view of the files** (:func:`enter`, run by the worker before anything else): every
  mount read-only, a private empty ``/tmp`` that is the only writable place, and the folders
  named in ``hide`` (the submissions, the gradebook and its cache) replaced by an empty,
  read-only folder.

Nothing here needs root or a setuid helper: user namespaces let an ordinary user do this where
the kernel allows it (most Linux distributions; some disable unprivileged user namespaces).
:func:`detect` tries it once and says which sandbox is available, if any. Memory is limited by
``RLIMIT_DATA`` (set by the grader), which does not count shared memory, and, where the grader may
create one, by a memory cgroup per submission (:mod:`course_utils.tools.grading.memcg`), which does.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import os
import shutil
import socket
import struct
import subprocess
from collections.abc import Iterable
from pathlib import Path

__all__ = ["SandboxError", "detect", "enter", "wrap"]

UNSHARE_FLAGS = ("--user", "--map-root-user", "--pid", "--fork", "--mount-proc", "--net",
                 "--mount")

# mount(2) flags (linux/mount.h); the statvfs flags use the same bits for the ones copied over
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
_KEPT = 2 | 4 | 8 | 1024 | 2048 | 4096  # nosuid, nodev, noexec, noatime, nodiratime, relatime


class SandboxError(RuntimeError):
    """The sandbox could not be set up; grading must not go on without it."""


@functools.cache
def detect() -> str | None:
    """``"unshare"`` when this machine lets us create the namespaces, else ``None``."""
    unshare = shutil.which("unshare")
    if unshare is None or not Path("/proc/self/mountinfo").exists():
        return None
    try:
        done = subprocess.run([unshare, *UNSHARE_FLAGS, "true"], capture_output=True,
                              timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return "unshare" if done.returncode == 0 else None


def wrap(command: list[str]) -> list[str]:
    """``command`` run inside fresh namespaces (call :func:`enter` first thing inside)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise SandboxError("`unshare` (util-linux) is not installed")
    return [unshare, *UNSHARE_FLAGS, "--", *command]


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:
    def encode(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {target}: {os.strerror(error)}")


def _loopback_up() -> None:
    """Bring ``lo`` up in the new network namespace (SIOCSIFFLAGS: up, loopback, running)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH", b"lo", 0x1 | 0x8 | 0x40))


def kept_under_tmp(paths: Iterable[str | Path], tmp: str | Path = "/tmp") -> list[Path]:
    """The outermost of ``paths`` that lie inside ``tmp``: the folders the new, empty ``/tmp``
    would otherwise hide although a kernel needs them (a course or a virtual environment
    checked out under ``/tmp``). They are put back read-only."""
    base = Path(tmp).resolve()
    found = sorted({q for q in (Path(p).resolve() for p in paths)
                    if q != base and q.is_relative_to(base) and q.is_dir()})
    return [q for q in found if not any(q != r and q.is_relative_to(r) for r in found)]


def _needed() -> list[Path]:
    """What a kernel started from this Python needs to read: the course and the Python."""
    import sys

    return [Path(__file__).resolve().parents[3], Path(sys.prefix), Path(sys.exec_prefix),
            Path(sys.base_prefix), Path(sys.executable).resolve().parent]


def enter(hide: Iterable[str | Path]) -> Path:
    """Inside the namespaces of :func:`wrap`: make every mount read-only, give this process a
    private writable ``/tmp``, hide the folders in ``hide``, bring the loopback up. Returns an
    empty working folder in the new ``/tmp``. Raises :class:`SandboxError` if any step fails,
    so a submission is never run half-protected."""
    if os.getpid() != 1:
        raise SandboxError("enter() must run as process 1 of a new PID namespace (see wrap)")
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing here propagates back out
        targets = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text()
                   .splitlines()]
        for target in targets:
            if target.startswith(("/proc", "/sys", "/dev")):
                continue
            target = target.encode().decode("unicode_escape")  # mountinfo escapes spaces
            try:
                kept = os.statvfs(target).f_flag & _KEPT  # locked flags must be kept
            except OSError:
                continue  # hidden under another mount
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        # folders under /tmp that the kernel needs (the course, its Python) are held open,
        # then bound back read-only on top of the new, empty /tmp
        held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY),
                 os.statvfs(path).f_flag & _KEPT) for path in kept_under_tmp(_needed())]
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1g,mode=0700")
        for path, fd, kept in held:
            path.mkdir(parents=True, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", str(path), None, MS_BIND | MS_REC)
            _mount(None, str(path), None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
            os.close(fd)
        for folder in hide:
            if Path(folder).is_dir():
                _mount("tmpfs", str(folder), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                       "size=4k,mode=0500")
        _loopback_up()
    except OSError as error:
        raise SandboxError(f"could not set up the sandbox: {error}") from None
    work = Path("/tmp/work")
    work.mkdir()
    return work
