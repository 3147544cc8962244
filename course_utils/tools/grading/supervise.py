"""Running one submission (:func:`grade_one`): a worker process (:mod:`.worker`) in a private
temporary folder, in its own process group, under the time and memory limits (:mod:`.limits`),
in the sandbox where there is one; its report read from a pipe of its own to the end, then
judged here (:mod:`.judge`). On Ctrl-C, :func:`stop_all` kills every running worker."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from course_utils.tools.grading.cache import PACKAGE_DIR, key_folder
from course_utils.tools.grading.judge import add_parts, saved_records
from course_utils.tools.grading.limits import (
    GradingLimits,
    limit_memory,
    memory_cgroup,
    minimal_env,
)
from course_utils.tools.grading.memcg import MemoryCgroup
from course_utils.tools.grading.results import PART, REPORT_BYTES, GradeResult, cut
from course_utils.tools.grading.worker import exercise_parts

__all__ = ["WORKER", "clear_stop", "drain", "grade_one", "hidden_folders", "kill_group",
           "stop_all", "worker_command"]

#: The module the worker process runs (:mod:`course_utils.tools.grading.worker`).
WORKER = "course_utils.tools.grading.worker"

_running: set[subprocess.Popen] = set()  # workers now running, for Ctrl-C
_running_lock = threading.Lock()
_stopping = threading.Event()


def hidden_folders(submissions: Path, out: Path, *also: Path) -> list[str]:
    """What the sandbox hides from every submission: the submissions (classmates' work), the
    output folder (gradebook, cache), the key that signs the cache, the folders in ``also``
    (the marks file's, where it lies elsewhere) unless they hold the notebooks' temporary
    copies, and the instructor's home; the last two unless Python or the course live inside
    them (then they stay visible, read-only like everything else)."""
    hide = [submissions.resolve(), out.resolve(), key_folder().resolve()]
    needed = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), PACKAGE_DIR]
    copies = Path(tempfile.gettempdir()).resolve()  # where each notebook's copy is made
    for folder, keep in [*((Path(f).resolve(), [*needed, copies]) for f in also),
                         (Path.home().resolve(), needed)]:
        if folder not in hide and not any(p == folder or folder in p.parents for p in keep):
            hide.append(folder)
    return [str(p) for p in hide]


def worker_command(notebook: Path, exercise_id: str, limits: GradingLimits,
                   sandbox: str | None = None, hide: list[str] | None = None) -> list[str]:
    """The worker's command line, less the report pipe's descriptor (its last argument)."""
    command = [sys.executable, "-m", WORKER, str(notebook), exercise_id,
               str(limits.cell_seconds), json.dumps(exercise_parts(exercise_id))]
    if sandbox is not None:
        from course_utils.tools.grading.sandbox import wrap

        command = wrap([*command, json.dumps(hide or [])])
    return command


def grade_one(path: Path, exercise_id: str, limits: GradingLimits,
              sandbox: str | None = None, hide: list[str] | None = None,
              threads: int = 1) -> GradeResult:
    """Grade one submission in a fresh kernel, in a private temporary folder; with ``sandbox``
    (``"unshare"``) inside its own namespaces, with the folders in ``hide`` out of sight."""
    student = path.stem
    start = time.perf_counter()
    if _stopping.is_set():
        raise KeyboardInterrupt
    records = saved_records(path, exercise_id)  # as handed in, before anything of it runs
    with tempfile.TemporaryDirectory(prefix="course-grade-") as folder:
        copy = Path(folder) / "submission.ipynb"
        shutil.copyfile(path, copy)
        process, read_end, cgroup = _start(
            worker_command(copy, exercise_id, limits, sandbox, hide), folder, limits, threads)
        with _running_lock:
            _running.add(process)
        if _stopping.is_set():  # Ctrl-C came while it started: stop_all may not have seen it
            _clean_up(process, cgroup)
            os.close(read_end)
            raise KeyboardInterrupt
        seed = secrets.randbits(62)  # this run's fresh inputs, told to the worker alone
        _tell_seed(process, seed)
        chunks: list[bytes] = []
        reader = threading.Thread(target=drain, args=(read_end, chunks, REPORT_BYTES),
                                  daemon=True)
        reader.start()
        oom_kills = 0
        try:
            process.wait(timeout=limits.total_seconds)
        except subprocess.TimeoutExpired:
            kill_group(process)
            reader.join(timeout=10)
            out = b"".join(chunks)  # what the worker said before it was stopped
            return _past_total_limit(student, exercise_id, limits, out, seed,
                                     time.perf_counter() - start, records)
        finally:
            oom_kills = _clean_up(process, cgroup)
        reader.join(timeout=10)
        out = b"".join(chunks)
    if _stopping.is_set():
        raise KeyboardInterrupt
    seconds = time.perf_counter() - start
    lines = out.decode(errors="replace").strip().splitlines()
    report = _final_report(lines, process.returncode, limits.memory_mb)
    result = GradeResult(student, str(report.get("status")), seconds=seconds,
                         notes=[cut(n) for n in report.get("notes", [])])
    if oom_kills:  # the cgroup's verdict: it counted what the rlimit cannot see
        result.status = "memory"
        result.notes.append(f"the submission's processes together passed the memory limit of "
                            f"{limits.memory_mb} MB (shared memory counted) and "
                            f"{oom_kills} of them {'was' if oom_kills == 1 else 'were'} killed")
    add_parts(result, exercise_id, lines, seed, records)
    return result


def _start(command: list[str], folder: str, limits: GradingLimits, threads: int
           ) -> tuple[subprocess.Popen, int, MemoryCgroup | None]:
    """Start the worker in a session of its own, under the memory limits, with a minimal
    environment; returns it, the read end of its report pipe, and its memory cgroup, if any."""
    # The worker reports on a pipe of its own, which it keeps from the kernel: the
    # student's code can write to the worker's stdout (fd 1), not to this channel.
    cgroup = memory_cgroup(limits.memory_mb)
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [*command, str(write_end)], cwd=folder, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, stdin=subprocess.PIPE, env=minimal_env(threads),
            start_new_session=True, pass_fds=(write_end,),
            preexec_fn=limit_memory(limits.memory_mb, cgroup) if os.name == "posix"
            else None,
        )
    except BaseException:
        os.close(read_end)
        if cgroup is not None:
            cgroup.remove()
        raise
    finally:
        os.close(write_end)
    return process, read_end, cgroup


def _tell_seed(process: subprocess.Popen, seed: int) -> None:
    """Tell the worker the run's seed, on its stdin: no other process sees it."""
    try:
        assert process.stdin is not None
        process.stdin.write(f"{seed}\n".encode())
        process.stdin.close()
    except OSError:
        pass  # the worker is already gone: its (missing) report says so


def _clean_up(process: subprocess.Popen, cgroup: MemoryCgroup | None) -> int:
    """Kill the worker and its kernel, whatever happened, and anything that left their process
    group (with the cgroup); returns how many processes the cgroup's memory limit killed."""
    kill_group(process)
    oom_kills = 0
    if cgroup is not None:
        oom_kills = cgroup.oom_kills()
        cgroup.remove()
    with _running_lock:
        _running.discard(process)
    return oom_kills


def _past_total_limit(student: str, exercise_id: str, limits: GradingLimits, out: bytes,
                      seed: int, seconds: float, records: dict[str, object]) -> GradeResult:
    """The result of a worker stopped at the total time limit: the parts it reported before
    keep their points."""
    result = GradeResult(student, "timeout", notes=[
        f"the notebook ran longer than {limits.total_seconds:g} s in total and was "
        "stopped" + (": the parts checked before that keep their points"
                     if PART.encode() in out else "")],
        seconds=seconds)
    add_parts(result, exercise_id, out.decode(errors="replace").splitlines(), seed, records)
    return result


def _final_report(lines: list[str], returncode: int | None, memory_mb: int) -> dict:
    """The worker's report (its last line), or, when it left none, what its end tells."""
    try:
        report = json.loads(lines[-1])
        if not isinstance(report, dict):
            raise ValueError("not a report")
    except (ValueError, IndexError):
        if returncode in (-signal.SIGKILL, -signal.SIGSEGV):
            report = {"status": "memory", "notes": [
                f"the grading process was killed (code {returncode}), most likely by "
                f"the memory limit of {memory_mb} MB"]}
        else:
            report = {"status": "grader error", "notes": [
                f"the grading process ended with code {returncode} and no result"]}
    return report


def drain(fd: int, chunks: list[bytes], limit: int) -> None:
    """Read the worker's report pipe until every writer has closed it (the worker is gone),
    keeping at most ``limit`` bytes of it (the worker caps what it reports far below that)."""
    kept = 0
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read1(65536):
            if kept < limit:
                chunks.append(chunk[:limit - kept])
                kept += len(chunks[-1])


def clear_stop() -> None:
    """Let workers start again, at the beginning of a batch."""
    _stopping.clear()


def stop_all() -> None:
    """Ctrl-C: start nothing new and kill every running worker with its kernel."""
    _stopping.set()
    with _running_lock:
        running = list(_running)
    for process in running:
        kill_group(process)


def kill_group(process: subprocess.Popen) -> None:
    """Kill the worker and everything it started (its process group); where process groups
    cannot be signalled (no ``os.killpg``, e.g. Windows), at least the worker itself."""
    killpg = getattr(os, "killpg", None)
    try:
        if killpg is not None:
            killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass  # already gone
    except PermissionError:
        process.kill()
    process.wait()
