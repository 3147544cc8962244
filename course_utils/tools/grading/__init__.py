"""Grade a folder of submitted notebooks with the checks students already ran.

    course-grade E10.1 submissions/ --out grades/ [--jobs 2] [--only alice bob] [--no-reuse]

Each submission runs in a fresh kernel inside its own temporary folder that holds a copy of
that notebook only, under a per-cell time limit, a total time limit and a memory limit, so one
submission can neither stall the batch nor touch another submission or the gradebook. After the
student's cells have run (errors do not stop them), one probe cell per part calls the student's
functions on inputs drawn for this run and reports only their raw results (see
:mod:`course_utils.checks.probes`); this process, the grader, then judges them itself
(:meth:`Check.judge <course_utils.checks.Check.judge>`). Notebooks run at smoke-test scale
(``COURSE_QUICK=1``, checkpoints in the temporary folder): the checks need the student's
functions, not a full-size training run.

Writes, atomically: ``grades.csv`` (one row per file: student id from the file name, one column
per check, empty columns for manually graded questions, total, maximum, status), one feedback
file per student in ``feedback/`` (Markdown and HTML), and ``histogram.png``. Results of
unchanged submissions are reused from ``.cache/`` unless ``--no-reuse`` is given.

Statuses: ``graded``; ``timeout`` (a cell or the whole notebook ran past its limit);
``memory`` (the memory limit was hit); ``crashed`` (the kernel died, e.g. ``os._exit``);
``not a notebook`` (unreadable or not nbformat JSON); ``grader error``.

The limits protect a batch against accidents (endless loops, runaway memory, a dying kernel).
On Linux, where user namespaces are allowed, each worker also runs in a sandbox
(:mod:`course_utils.tools.grading.sandbox`: own PID and network namespaces, read-only files, a
private ``/tmp``, the submissions, the output folder and the cache key hidden). Kernels see a
minimal environment (no instructor variables) and start from the grader's own Python.

The kernel computes; the grader judges. The run's seed reaches the worker on its stdin and the
kernel only with each probe cell, together with a tag the worker drew for that cell; a part
whose tag is printed twice scores 0. The worker forwards each probe's raw data on its private
pipe, which this process reads to the end (until the worker's whole process tree is gone)
before any part is judged. The judge recomputes every expected answer here, with the course's
reference code, on the same inputs; decodes results strictly; never takes points from the
kernel; clamps; ignores unknown parts. Parts whose input is the student's class (E10.2's
decoder, E10.4's scores) are no exception: their ``adapt`` runs the class in the kernel on the
run's inputs and reports plain arrays, judged here like any function's results.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import hmac
import html
import io
import json
import math
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from course_utils.checks import get_exercise
from course_utils.files import atomic_path, write_text_atomically
from course_utils.tools.grading.memcg import MemoryCgroup

__all__ = ["GradeResult", "GradingLimits", "grade_folder", "main"]

MARKER = "@@COURSE-GRADE@@"
STATUSES = ("graded", "timeout", "memory", "crashed", "not a notebook", "grader error")


@dataclass(frozen=True)
class GradingLimits:
    cell_seconds: float = 60.0
    total_seconds: float = 300.0
    memory_mb: int = 4096


@dataclass
class GradeResult:
    student: str
    status: str
    points: dict[str, float] = field(default_factory=dict)  # check name -> points
    messages: dict[str, str] = field(default_factory=dict)  # check name -> feedback
    notes: list[str] = field(default_factory=list)  # cell errors, limits hit
    seconds: float = 0.0

    def total(self) -> float:
        return sum(self.points.values())


# ------------------------------------------------------------------------------ the worker


PART = "@@COURSE-GRADE-PART@@"  # the worker streams each part's result as soon as it has it


def _grading_cell(exercise_id: str, check: str, seed: int, nonce: str) -> str:
    """The probe cell for one part: one cell per part, so that each part has its own time limit
    and a function that hangs under its check costs that part only. It prints the probe's raw
    data (:meth:`Check.probe`) once, tagged with ``nonce``: both ``seed`` (the fresh inputs)
    and ``nonce`` reach the kernel only with this cell, after the student's cells ran."""
    return (
        "import builtins as _b, json as _j\n"
        "from course_utils.checks import get_exercise as _g\n"
        f"_c = _g({exercise_id!r}).checks[{check!r}]\n"
        f"_b.print({MARKER!r} + {nonce!r} + _j.dumps(_c.probe(globals().get(_c.target), "
        f"{seed!r})))\n"
    )


MESSAGE_CHARS = 400  # a check's message or a note, at most: a 5 MB exception makes no 5 MB file
PROBE_BYTES = 4_000_000  # one part's raw results, at most: more is not an answer to any check
NOTES = 30  # notes kept per submission (a notebook of 10,000 failing cells makes no 10,000)
REPORT_BYTES = 64_000_000  # all a worker may report; the rest is read and dropped
_EXERCISE_TITLE = re.compile(r"#\s*Exercise\s+(E\d+\.\d+)")


def _read_notebook(raw: bytes, exercise_id: str) -> tuple[Any, list[str]]:
    """The notebook in ``raw``, read as forgivingly as Jupyter opens it, and notes on what was
    repaired; raises ``ValueError`` when it is not a notebook at all."""
    import nbformat

    notes: list[str] = []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]  # a UTF-8 byte-order mark, as some editors write: Jupyter ignores it
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"not JSON: {type(error).__name__}: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("JSON, but not a notebook (no list of cells)")
    notebook = nbformat.reads(json.dumps(data), as_version=4)
    try:
        nbformat.validate(notebook)
    except nbformat.ValidationError as error:
        for cell in notebook.cells:  # what Jupyter fills in when it opens such a file
            cell.setdefault("metadata", {})
            cell.setdefault("source", "")
            if cell.get("cell_type") == "code":
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
        notes.append(f"warning: the file does not follow the notebook format "
                     f"({str(error).splitlines()[0][:120]}); graded as Jupyter would open it")
    for cell in notebook.cells:
        if cell.get("cell_type") == "markdown":
            match = _EXERCISE_TITLE.search(str(cell.get("source", "")))
            if match and match.group(1) != exercise_id:
                notes.append(f"warning: this looks like a submission for {match.group(1)}, "
                             f"graded here as {exercise_id}")
            break
    return notebook, notes


def _kernel_here(folder: Path) -> str:
    """A kernelspec in ``folder`` that starts this very Python (the grader's), whatever other
    ``python3`` kernels ``JUPYTER_PATH`` offers; returns its name."""
    spec = folder / "jupyter" / "kernels" / "course-grader"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "course-grade", "language": "python"}))
    os.environ["JUPYTER_PATH"] = str(folder / "jupyter")
    return "course-grader"


def _run_worker(notebook_path: str, exercise_id: str, cell_seconds: float,
                hide: list[str] | None = None, report: Any = print,
                seed: int | None = None) -> dict:
    """Execute one notebook and return its result as a dict. With ``hide`` (the sandbox), this
    process is the first of fresh namespaces: it reads the notebook, then shuts itself in
    (:func:`course_utils.tools.grading.sandbox.enter`) before running any of it."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    raw = Path(notebook_path).read_bytes()
    if hide is not None:
        from course_utils.tools.grading.sandbox import enter

        os.chdir(enter(hide))
    folder = Path.cwd()
    for name, sub in [("HOME", "home"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                      ("MPLCONFIGDIR", "matplotlib"), ("IPYTHONDIR", "ipython")]:
        (folder / sub).mkdir(exist_ok=True)
        os.environ[name] = str(folder / sub)
    os.environ["COURSE_RUNS_DIR"] = str(folder / "runs")  # what a notebook saves stays here
    try:
        notebook, notes = _read_notebook(raw, exercise_id)
    except Exception as error:  # not JSON, not a notebook, empty file...
        return {"status": "not a notebook", "notes": [f"could not read the notebook: "
                                                     f"{error}"[:300]]}
    (folder / "submission.ipynb").write_bytes(raw)  # the notebook's own folder, as in Jupyter
    from course_utils.checks import get_exercise

    exercise = get_exercise(exercise_id)
    grading = {}  # id of each appended cell -> (part, the function it checks, its tag)
    notebook.cells = [c for c in notebook.cells if c.cell_type in ("code", "markdown", "raw")]
    for name, check in exercise.checks.items():
        nonce = secrets.token_hex(16)  # drawn here, in the worker: the kernel cannot know it
        cell = nbformat.v4.new_code_cell(_grading_cell(exercise_id, name, seed or 0, nonce))
        grading[id(cell)] = (name, check.target, MARKER + nonce)
        notebook.cells.append(cell)
    parts: list[dict] = []
    status = "graded"

    def on_cell_executed(cell, cell_index, execute_reply):
        nonlocal status
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if id(cell) in grading:
            part, target, tag = grading[id(cell)]
            text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                           if o.get("output_type") == "stream")
            lines = [line for line in text.splitlines() if line.startswith(tag)]
            if len(lines) == 1 and len(lines[0]) > PROBE_BYTES:
                notes.append(f"part {part!r}: `{target}` returned results of "
                             f"{len(lines[0]) / 1e6:.0f} MB, more than the "
                             f"{PROBE_BYTES / 1e6:.0f} MB a part may report: it scores 0")
                parts.append({"name": part, "probe": None})
                report(PART + json.dumps(parts[-1]))
            elif len(lines) == 1:  # a second line with the tag was printed by the student's code
                try:
                    raw = json.loads(lines[0][len(tag):])
                except ValueError:
                    raw = None
                parts.append({"name": part, "probe": raw})
                report(PART + json.dumps(parts[-1]))  # kept even if a later part hangs
                if "KeyboardInterrupt" in lines[0] or "time limit" in lines[0]:
                    notes.append(f"part {part!r}: `{target}` ran longer than {cell_seconds:g} s "
                                 "under its check: this part scores 0, the others were graded")
            elif lines:
                notes.append(f"part {part!r}: more than one result was printed for it (the "
                             "student's code printed one): it scores 0")
                parts.append({"name": part, "probe": None})
                report(PART + json.dumps(parts[-1]))
            elif errors:
                notes.append(f"part {part!r}: its check could not run "
                             f"({errors[0].get('ename', '')}: "
                             f"{errors[0].get('evalue', '')})"[:300])
            cell.outputs = []
            return
        cell.outputs = []  # keep memory flat whatever the student prints
        first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
        where = f"cell {cell_index} (`{first[:50]}`)"
        for error in errors:
            name = error.get("ename", "")
            if name == "KeyboardInterrupt":
                status = "timeout"
                notes.append(f"{where} ran longer than {cell_seconds:g} s and was interrupted")
            elif name.endswith("MemoryError"):  # MemoryError, NumPy's _ArrayMemoryError
                status = "memory"
                notes.append(f"{where} ran out of memory (MemoryError)")
            else:
                notes.append(f"{where} raised {name}: {error.get('evalue', '')}"[:300])

    client = NotebookClient(
        notebook, timeout=cell_seconds, interrupt_on_timeout=True, allow_errors=True,
        kernel_name=_kernel_here(folder), resources={"metadata": {"path": str(folder)}},
        on_cell_executed=on_cell_executed,
    )
    try:
        client.execute()
    except DeadKernelError:
        # a limit that was hit first explains the death; otherwise the kernel crashed
        return {"status": status if status in ("memory", "timeout") else "crashed",
                "notes": _few([*notes, "the kernel died (os._exit, a crash, or the memory "
                               "limit) before grading finished"])}
    except Exception as error:
        return {"status": "crashed",
                "notes": _few([*notes, f"{type(error).__name__}: {error}"[:300]])}
    if not parts:
        if status in ("memory", "timeout"):  # the limit that was hit explains the rest
            return {"status": status, "notes": _few([*notes, f"after that ({status} limit), "
                                                     "the checks could not run in this kernel"])}
        return {"status": "crashed", "notes": _few([*notes, "the checks could not run in this "
                                                    "notebook's kernel"])}
    return {"status": status, "notes": _few(notes)}  # the parts went out one by one, above


def _few(notes: list[str]) -> list[str]:
    """At most :data:`NOTES` notes, the last (why the run ended) always among them."""
    if len(notes) <= NOTES:
        return notes
    return [*notes[:NOTES - 2], f"... and {len(notes) - NOTES + 1:,} more notes like these",
            notes[-1]]


def _limit_memory(memory_mb: int, cgroup: MemoryCgroup | None = None):
    def apply():
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


# ------------------------------------------------------------------------------ the parent


#: The package whose code a grading run executes: the checks, and everything they call.
PACKAGE_DIR = Path(__file__).resolve().parents[2]

#: Statuses whose results are reused by a later run; a timeout or a crash is always retried.
REUSED = ("graded", "not a notebook")


def _digest(path: Path, exercise_id: str, limits: GradingLimits | None = None,
            sandbox: str | None = None) -> str:
    """The key for reusing a grade: changes when the submission changes, any code of the
    course package does (the checks call into other modules, such as ``alignment.py``), or
    the limits or the sandbox under which it was graded."""
    digest = hashlib.sha256(path.read_bytes())
    digest.update(exercise_id.encode())
    digest.update(repr((limits, sandbox)).encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(source.relative_to(PACKAGE_DIR)).encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def _key_folder() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "course-grade"


def _cache_key() -> bytes:
    """The secret that signs cache entries, kept outside the output folder (in the grader's
    own configuration folder, which the sandbox hides), so that a forged entry is regraded."""
    folder = _key_folder()
    key_file = folder / "cache-key"
    if not key_file.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(key_file) as tmp:
            tmp.write_bytes(secrets.token_bytes(32))
            tmp.chmod(0o600)
    return key_file.read_bytes()


def _signature(key: bytes, digest: str, result: dict) -> str:
    payload = json.dumps({"digest": digest, "result": result}, sort_keys=True).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def _reused(cached: Path, digest: str, key: bytes) -> GradeResult | None:
    """The cached result, if it is for this digest, signed by us, and worth reusing."""
    try:
        data = json.loads(cached.read_text())
        if data.get("digest") != digest or not hmac.compare_digest(
                str(data.get("signature", "")), _signature(key, digest, data["result"])):
            return None
        result = GradeResult(**data["result"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return result if result.status in REUSED else None


# ------------------------------------------------------------------------------- intake


@dataclass(frozen=True)
class Intake:
    """What a submissions folder holds: one notebook per student, and what was left aside."""

    submissions: dict[str, Path]  # student id -> notebook
    ignored: list[tuple[Path, str]]  # file or folder -> why it is not graded


def collect(folder: Path) -> Intake:
    """Every ``*.ipynb`` in ``folder`` (student id: the file name) or in a per-student
    subfolder one level down, as course platforms export them (student id: the folder name).
    Other files are listed as ignored; two notebooks for one student id are an error."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no submissions folder at {folder}")
    found: dict[str, list[Path]] = {}
    ignored: list[tuple[Path, str]] = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            notebooks = sorted(p for p in entry.iterdir()
                               if p.is_file() and p.suffix == ".ipynb"
                               and not p.name.startswith("."))
            for other in sorted(entry.iterdir()):
                if other not in notebooks and not other.name.startswith("."):
                    ignored.append((other, "not a notebook (*.ipynb)"))
            if len(notebooks) > 1:
                ignored.append((entry, f"{len(notebooks)} notebooks in one student's folder "
                                       f"({', '.join(p.name for p in notebooks)}): keep one"))
            elif notebooks:
                found.setdefault(entry.name, []).append(notebooks[0])
            elif not any(entry.iterdir()):
                ignored.append((entry, "empty folder"))
        elif entry.suffix == ".ipynb":
            found.setdefault(entry.stem, []).append(entry)
        else:
            ignored.append((entry, "not a notebook (*.ipynb)"))
    clashes = {s: paths for s, paths in found.items() if len(paths) > 1}
    if clashes:
        listed = "; ".join(f"{s}: {', '.join(str(p.relative_to(folder)) for p in paths)}"
                           for s, paths in clashes.items())
        raise ValueError(f"two notebooks give the same student id ({listed}); keep one")
    if not found:
        raise ValueError(f"no notebooks (*.ipynb) in {folder}, nor in its subfolders"
                         + (f" ({len(ignored)} other entries ignored)" if ignored else ""))
    return Intake({s: paths[0] for s, paths in sorted(found.items())}, ignored)


#: Variables a submission's kernel sees: no instructor variables (tokens, keys, paths).
_PASSED_ON = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")

_running: set[subprocess.Popen] = set()  # workers now running, for Ctrl-C
_running_lock = threading.Lock()
_stopping = threading.Event()


def _minimal_env(threads: int = 1) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _PASSED_ON}
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


def hidden_folders(submissions: Path, out: Path) -> list[str]:
    """What the sandbox hides from every submission: the submissions (classmates' work), the
    output folder (gradebook, cache), the key that signs the cache, and the instructor's home
    unless Python or the course live inside it (then it stays visible, read-only like
    everything else)."""
    hide = [submissions.resolve(), out.resolve(), _key_folder().resolve()]
    home = Path.home().resolve()
    needed = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), PACKAGE_DIR]
    if not any(p == home or home in p.parents for p in needed):
        hide.append(home)
    return [str(p) for p in hide]


def grade_one(path: Path, exercise_id: str, limits: GradingLimits,
              sandbox: str | None = None, hide: list[str] | None = None,
              threads: int = 1) -> GradeResult:
    """Grade one submission in a fresh kernel, in a private temporary folder; with ``sandbox``
    (``"unshare"``) inside its own namespaces, with the folders in ``hide`` out of sight."""
    student = path.stem
    start = time.perf_counter()
    if _stopping.is_set():
        raise KeyboardInterrupt
    with tempfile.TemporaryDirectory(prefix="course-grade-") as folder:
        copy = Path(folder) / "submission.ipynb"
        shutil.copyfile(path, copy)
        command = [sys.executable, "-m", "course_utils.tools.grading", "--worker", str(copy),
                   exercise_id, str(limits.cell_seconds)]
        if sandbox is not None:
            from course_utils.tools.grading.sandbox import wrap

            command = wrap([*command, json.dumps(hide or [])])
        # The worker reports on a pipe of its own, which it keeps from the kernel: the
        # student's code can write to the worker's stdout (fd 1), not to this channel.
        cgroup = memory_cgroup(limits.memory_mb)
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                [*command, str(write_end)], cwd=folder, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, stdin=subprocess.PIPE, env=_minimal_env(threads),
                start_new_session=True, pass_fds=(write_end,),
                preexec_fn=_limit_memory(limits.memory_mb, cgroup) if os.name == "posix"
                else None,
            )
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            os.close(write_end)
        seed = secrets.randbits(62)  # this run's fresh inputs, told to the worker alone
        try:
            assert process.stdin is not None
            process.stdin.write(f"{seed}\n".encode())
            process.stdin.close()
        except OSError:
            pass  # the worker is already gone: its (missing) report says so
        chunks: list[bytes] = []
        reader = threading.Thread(target=_drain, args=(read_end, chunks, REPORT_BYTES),
                                  daemon=True)
        reader.start()
        with _running_lock:
            _running.add(process)
        oom_kills = 0
        try:
            process.wait(timeout=limits.total_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            reader.join(timeout=10)
            out = b"".join(chunks)  # what the worker said before it was stopped
            result = GradeResult(student, "timeout", notes=[
                f"the notebook ran longer than {limits.total_seconds:g} s in total and was "
                "stopped" + (": the parts checked before that keep their points"
                             if PART.encode() in out else "")],
                seconds=time.perf_counter() - start)
            _add_parts(result, exercise_id, out.decode(errors="replace").splitlines(), seed)
            return result
        finally:
            _kill_group(process)  # the kernel too, whatever happened
            if cgroup is not None:  # and anything that left the process group
                oom_kills = cgroup.oom_kills()
                cgroup.remove()
            with _running_lock:
                _running.discard(process)
        reader.join(timeout=10)
        out = b"".join(chunks)
    if _stopping.is_set():
        raise KeyboardInterrupt
    seconds = time.perf_counter() - start
    lines = out.decode(errors="replace").strip().splitlines()
    try:
        report = json.loads(lines[-1])
        if not isinstance(report, dict):
            raise ValueError("not a report")
    except (ValueError, IndexError):
        if process.returncode in (-signal.SIGKILL, -signal.SIGSEGV):
            report = {"status": "memory", "notes": [
                f"the grading process was killed (code {process.returncode}), most likely by "
                f"the memory limit of {limits.memory_mb} MB"]}
        else:
            report = {"status": "grader error", "notes": [
                f"the grading process ended with code {process.returncode} and no result"]}
    result = GradeResult(student, str(report.get("status")), seconds=seconds,
                         notes=[_cut(n) for n in report.get("notes", [])])
    if oom_kills:  # the cgroup's verdict: it counted what the rlimit cannot see
        result.status = "memory"
        result.notes.append(f"the submission's processes together passed the memory limit of "
                            f"{limits.memory_mb} MB (shared memory counted) and "
                            f"{oom_kills} of them {'was' if oom_kills == 1 else 'were'} killed")
    _add_parts(result, exercise_id, lines, seed)
    return result


def memory_cgroup(memory_mb: int) -> MemoryCgroup | None:
    """A memory cgroup of ``memory_mb`` for one submission, on Linux where the grader may make
    one (:mod:`course_utils.tools.grading.memcg`); ``None`` elsewhere, and the rlimit alone
    applies."""
    if not sys.platform.startswith("linux"):
        return None
    return MemoryCgroup.create(memory_mb * 1024 * 1024)


def _add_parts(result: GradeResult, exercise_id: str, lines: list[str],
               seed: int | None = None) -> None:
    """Each part's points, decided here in the grader from the raw results the kernel
    reported (:meth:`Check.judge`): the expected answers are computed in this process, on the
    inputs of ``seed``; a part this exercise does not have is ignored, the first report of a
    part is the only one read, and points are clamped to [0, the part's maximum]."""
    exercise = get_exercise(exercise_id)
    for line in lines:
        if not line.startswith(PART):
            continue
        try:
            part = json.loads(line[len(PART):])
            name = str(part["name"])
        except (ValueError, KeyError, TypeError):
            continue
        check = exercise.checks.get(name)
        if check is None or name in result.points:
            continue
        try:
            judged = check.judge(part.get("probe"), seed)
            points = float(judged.points)
            message = judged.message
        except Exception as error:  # a record the judge cannot read: no points
            points, message = 0.0, f"the kernel's report could not be judged: {error!r}"
        result.points[name] = min(max(points, 0.0), check.points) if math.isfinite(points) \
            else 0.0
        result.messages[name] = _cut(message)


def _drain(fd: int, chunks: list[bytes], limit: int) -> None:
    """Read the worker's report pipe until every writer has closed it (the worker is gone),
    keeping at most ``limit`` bytes of it (the worker caps what it reports far below that)."""
    kept = 0
    with os.fdopen(fd, "rb") as pipe:
        while chunk := pipe.read1(65536):
            if kept < limit:
                chunks.append(chunk[:limit - kept])
                kept += len(chunks[-1])


def _cut(text: object, limit: int = MESSAGE_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 30] + f"... ({len(text):,} characters)"


def _stop_all() -> None:
    """Ctrl-C: start nothing new and kill every running worker with its kernel."""
    _stopping.set()
    with _running_lock:
        running = list(_running)
    for process in running:
        _kill_group(process)


def _kill_group(process: subprocess.Popen) -> None:
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


def grade_folder(
    exercise_id: str,
    submissions: Path,
    out: Path,
    *,
    jobs: int = 2,
    only: list[str] | None = None,
    reuse: bool = True,
    limits: GradingLimits = GradingLimits(),
    progress: bool = True,
    sandbox: str | None = None,
) -> list[GradeResult]:
    """Grade every notebook in ``submissions``; write the gradebook, feedback and histogram.

    ``sandbox``: ``"unshare"`` (see :mod:`course_utils.tools.grading.sandbox`) or ``None``. On
    Ctrl-C the running workers are killed, nothing new starts, and nothing is written: the earlier
    gradebook stays as it was.
    """
    exercise = get_exercise(exercise_id)
    submissions, out = Path(submissions), Path(out)
    intake = collect(submissions)
    unknown = sorted(set(only or []) - set(intake.submissions))
    if unknown:
        raise ValueError(f"--only names students with no submission: {unknown}")
    cache = out / ".cache"
    cache.mkdir(parents=True, exist_ok=True)
    key = _cache_key()
    hide = hidden_folders(submissions, out) if sandbox else None

    results: dict[str, GradeResult] = {}
    to_grade: list[tuple[str, Path, str]] = []
    for student, path in intake.submissions.items():
        digest = _digest(path, exercise_id, limits, sandbox)
        forced = only is not None and student in only
        reused = _reused(cache / f"{student}.json", digest, key) if reuse and not forced \
            else None
        if reused is not None:
            results[student] = reused
        else:
            to_grade.append((student, path, digest))

    from tqdm import tqdm

    _stopping.clear()
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    threads = kernel_threads(min(jobs, len(to_grade)))
    try:
        futures = {pool.submit(grade_one, path, exercise_id, limits, sandbox, hide, threads):
                   (student, digest) for student, path, digest in to_grade}
        for future in tqdm(as_completed(futures), total=len(futures), disable=not progress,
                           desc=f"grading {exercise_id}", unit="notebook"):
            student, digest = futures[future]
            try:
                result = future.result()
            except KeyboardInterrupt:
                raise
            except Exception as error:  # never lose a row
                result = GradeResult(student, "grader error", notes=[_cut(repr(error))])
            result.student = student  # the id from the file or its folder
            results[student] = result
            record = asdict(result)
            write_text_atomically(cache / f"{student}.json", json.dumps(
                {"digest": digest, "result": record,
                 "signature": _signature(key, digest, record)}))
    except KeyboardInterrupt:
        _stop_all()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)

    ordered = [results[s] for s in intake.submissions]
    _write_gradebook(out / "grades.csv", exercise, ordered)
    for result in ordered:
        _write_feedback(out / "feedback", exercise, result)
    _write_histogram(out / "histogram.png", exercise, ordered)
    return ordered


# ------------------------------------------------------------------------------- outputs


def _write_gradebook(path: Path, exercise, results: list[GradeResult]) -> None:
    checks, manual = list(exercise.checks), list(exercise.manual)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", *checks, *(f"{m} (manual)" for m in manual), "total",
                     "max", "status", "notes"])
    for r in results:
        writer.writerow([_cell_text(r.student), *(f"{r.points.get(c, 0):g}" for c in checks),
                         *([""] * len(manual)), f"{r.total():g}", f"{exercise.max_points:g}",
                         r.status, _cell_text(" | ".join(r.notes))])
    write_text_atomically(path, buffer.getvalue())


def _cell_text(text: str) -> str:
    """Text a spreadsheet shows as text: one starting with ``=``, ``+``, ``-``, ``@`` (or a tab
    or carriage return) would be read as a formula, so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


_MARKDOWN_SPECIAL = re.compile(r"([\\<>\[\]|])")


def _md(text: str) -> str:
    """Text that may quote the student (ids, messages, errors) on one Markdown line: no HTML,
    links, images or table cells can come out of it (code spans and emphasis may)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join(str(text).split()))


def _feedback_items(exercise, result: GradeResult) -> list[tuple[str, str, str]]:
    items = []
    for name, check in exercise.checks.items():
        points = result.points.get(name, 0)
        message = result.messages.get(name) or "not graded: the notebook did not run to the checks"
        items.append((name, f"{points:g} / {check.points:g}", message))
    for name, question in exercise.manual.items():
        items.append((name, f"? / {question.points:g}", "graded by your instructor: "
                      + question.prompt))
    return items


def _write_feedback(folder: Path, exercise, result: GradeResult) -> None:
    items = _feedback_items(exercise, result)
    auto = exercise.auto_points
    md = [f"# {exercise.id}: {exercise.title}", "", f"Student: {_md(result.student)}  ",
          f"Status: **{result.status}**  ",
          f"Automatic points: **{result.total():g} / {auto:g}** (written answers are graded "
          "separately)", "", "| part | points | feedback |", "|---|---|---|"]
    md += [f"| {n} | {p} | {_md(m)} |" for n, p, m in items]
    if result.notes:
        md += ["", "## While running your notebook", ""] + [f"- {_md(note)}"
                                                             for note in result.notes]
    write_text_atomically(folder / f"{result.student}.md", "\n".join(md) + "\n")
    rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(p)}</td>"
                   f"<td>{html.escape(m)}</td></tr>" for n, p, m in items)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in result.notes)
    page = (f"<!doctype html><meta charset='utf-8'><title>{html.escape(exercise.id)} "
            f"feedback: {html.escape(result.student)}</title>"
            "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto}"
            "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}"
            "table{border-collapse:collapse}</style>"
            f"<h1>{html.escape(exercise.id)}: {html.escape(exercise.title)}</h1>"
            f"<p>Student: <code>{html.escape(result.student)}</code><br>"
            f"Status: <b>{html.escape(result.status)}</b><br>"
            f"Automatic points: <b>{result.total():g} / {auto:g}</b></p>"
            f"<table><tr><th>part</th><th>points</th><th>feedback</th></tr>{rows}</table>"
            + (f"<h2>While running your notebook</h2><ul>{notes}</ul>" if notes else ""))
    write_text_atomically(folder / f"{result.student}.html", page)


def _write_histogram(path: Path, exercise, results: list[GradeResult]) -> None:
    # a Figure of its own, not pyplot: no backend switch and no global state in the caller's
    # process (an instructor may grade from a notebook that shows its own plots)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.4), layout="constrained")
    ax = fig.subplots()
    totals = [r.total() for r in results]
    ax.hist(totals, bins=[x - 0.5 for x in range(int(exercise.auto_points) + 2)],
            color="tab:blue", edgecolor="white")
    ax.set(xlabel=f"automatic points (of {exercise.auto_points:g})", ylabel="students",
           title=f"{exercise.id}: {len(results)} submissions")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def summary(exercise_id: str, results: list[GradeResult]) -> str:
    exercise = get_exercise(exercise_id)
    totals = [r.total() for r in results]
    statuses = Counter(r.status for r in results)
    failed = sum(n for s, n in statuses.items() if s != "graded")
    lines = [f"{len(results)} submissions graded for {exercise_id} "
             f"(automatic points out of {exercise.auto_points:g})"]
    if totals:
        lines.append(f"mean {statistics.mean(totals):.2f}, median {statistics.median(totals):g}, "
                     f"min {min(totals):g}, max {max(totals):g}")
        lines.append("distribution: " + ", ".join(
            f"{points:g}: {n}" for points, n in sorted(Counter(totals).items())))
    problems = ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items()) if s != "graded")
    lines.append(f"did not run cleanly: {failed}" + (f" ({problems})" if failed else ""))
    errors = sum(1 for r in results if r.status == "graded"
                 and any(" raised " in note for note in r.notes))
    if errors:
        lines.append(f"graded, but with cells that raised an error: {errors} (see the notes "
                     "column and the feedback)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        # --worker NOTEBOOK EXERCISE CELL_SECONDS [HIDE_JSON] REPORT_FD
        notebook, exercise_id, cell_seconds, *rest = argv[1:]
        fd = int(rest[-1])
        hide = json.loads(rest[0]) if len(rest) == 2 else None
        seed = int(sys.stdin.readline() or 0)  # this run's inputs: from the grader, unseen
        os.set_inheritable(fd, False)  # the kernel and the student's processes never get it
        with os.fdopen(fd, "w", buffering=1) as channel:
            def report(line: str) -> None:
                channel.write(line + "\n")
                channel.flush()

            report(json.dumps(_run_worker(notebook, exercise_id, float(cell_seconds), hide,
                                          report, seed)))
        return 0
    parser = argparse.ArgumentParser(prog="course-grade", description=__doc__.splitlines()[0])
    parser.add_argument("exercise", help="exercise id, e.g. E10.1")
    parser.add_argument("submissions", type=Path,
                        help="folder with one notebook per student (or one subfolder each)")
    parser.add_argument("--out", type=Path, default=Path("grades"), help="default: grades/")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks graded at once")
    parser.add_argument("--only", nargs="+", metavar="STUDENT", help="regrade only these")
    parser.add_argument("--no-reuse", action="store_true", help="regrade unchanged ones too")
    parser.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell")
    parser.add_argument("--total-timeout", type=float, default=300.0,
                        help="seconds per notebook")
    parser.add_argument("--memory-mb", type=int, default=4096, help="memory per notebook")
    parser.add_argument("--sandbox", choices=("auto", "unshare", "none"), default="auto",
                        help="isolate each submission (default: the best this machine offers)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    from course_utils.tools.grading.sandbox import detect

    available = detect()
    if args.sandbox == "unshare" and available is None:
        print("error: --sandbox unshare: this machine does not allow user namespaces "
              "(or `unshare` is missing); use --sandbox none to grade without one",
              file=sys.stderr)
        return 2
    sandbox = None if args.sandbox == "none" else available
    if sandbox is None:
        print("warning: grading WITHOUT a sandbox"
              + (" (none is available here)" if args.sandbox == "auto" else "")
              + ": student code runs as you, can read and change your files (other "
              "submissions, the gradebook, its cache), reach the network, and leave "
              "processes running", file=sys.stderr)
    try:
        intake = collect(args.submissions)
        results = grade_folder(
            args.exercise, args.submissions, args.out, jobs=args.jobs, only=args.only,
            reuse=not args.no_reuse, progress=not args.quiet, sandbox=sandbox,
            limits=GradingLimits(args.cell_timeout, args.total_timeout, args.memory_mb),
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: running notebooks stopped, nothing written; the earlier "
              f"gradebook in {args.out} is unchanged", file=sys.stderr)
        return 130
    print(summary(args.exercise, results))
    if sandbox:
        hidden = hidden_folders(args.submissions, args.out)
        home = "home hidden" if str(Path.home().resolve()) in hidden else \
            "home visible read-only (Python or the course lives there)"
        print("sandbox: unshare (own PID and network namespaces, every file read-only, a "
              f"private /tmp; submissions and output folder hidden, {home})")
    else:
        print("sandbox: none")
    probe = memory_cgroup(args.memory_mb)
    if probe is not None:
        probe.remove()
        print(f"memory: a cgroup per submission, {args.memory_mb} MB for all its processes, "
              "shared memory counted (and the per-process rlimit)")
    else:
        print(f"memory: the per-process rlimit of {args.memory_mb} MB only (no cgroup could be "
              "created here): shared memory is not counted")
    for path, why in intake.ignored:
        print(f"ignored: {path}: {why}")
    print(f"wrote {args.out / 'grades.csv'}, {args.out / 'feedback'}/, "
          f"{args.out / 'histogram.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
