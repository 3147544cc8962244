"""Grade a folder of submitted notebooks with the checks students already ran.

    course-grade E10.1 submissions/ --out grades/ [--jobs 2] [--only alice bob] [--no-reuse]

Each submission runs in a fresh kernel inside its own temporary folder that holds a copy of
that notebook only, under a per-cell time limit, a total time limit and a memory limit, so one
submission can neither stall the batch nor touch another submission or the gradebook. After the
student's cells have run (errors do not stop them), the exercise's checks are called in the
same kernel, on the functions the student's code defined. Notebooks run at smoke-test scale
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
They are not a security boundary: student code runs as you, and can read any file you can. For
untrusted cohorts, run this command inside a container.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import html
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course_utils.checks import get_exercise
from course_utils.files import atomic_path, write_text_atomically

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


def _grading_cell(exercise_id: str) -> str:
    return (
        "import builtins as _b, json as _j\n"
        "from course_utils.checks import get_exercise as _g\n"
        f"_r = _g({exercise_id!r}).grade(globals())\n"
        f"_b.print({MARKER!r} + _j.dumps([x.to_dict() for x in _r]))\n"
    )


def _run_worker(notebook_path: str, exercise_id: str, cell_seconds: float) -> dict:
    """Execute one notebook (in the current folder) and return its result as a dict."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    try:
        notebook = nbformat.read(notebook_path, as_version=4)
        nbformat.validate(notebook)
    except Exception as error:  # not JSON, not a notebook, empty file...
        return {"status": "not a notebook", "notes": [f"could not read the notebook: "
                                                     f"{type(error).__name__}: {error}"[:300]]}
    grading = nbformat.v4.new_code_cell(_grading_cell(exercise_id))
    notebook.cells = [c for c in notebook.cells if c.cell_type in ("code", "markdown", "raw")]
    notebook.cells.append(grading)
    notes: list[str] = []
    status = "graded"

    def on_cell_executed(cell, cell_index, execute_reply):
        nonlocal status
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if cell is not grading:
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
        kernel_name="python3", resources={"metadata": {"path": os.getcwd()}},
        on_cell_executed=on_cell_executed,
    )
    try:
        client.execute()
    except DeadKernelError:
        # a limit that was hit first explains the death; otherwise the kernel crashed
        return {"status": status if status in ("memory", "timeout") else "crashed",
                "notes": [*notes, "the kernel died (os._exit, a crash, or the memory limit) "
                          "before grading finished"]}
    except Exception as error:
        return {"status": "crashed", "notes": [*notes, f"{type(error).__name__}: {error}"[:300]]}
    text = "".join(o.get("text", "") for o in grading.outputs if o.get("output_type") == "stream")
    lines = [line for line in text.splitlines() if line.startswith(MARKER)]
    if not lines:
        if status in ("memory", "timeout"):  # the limit that was hit explains the rest
            return {"status": status, "notes": [*notes, f"after that ({status} limit), the "
                                                "checks could not run in this kernel"]}
        return {"status": "crashed", "notes": [*notes, "the checks could not run in this "
                                               "notebook's kernel"]}
    checks = json.loads(lines[-1][len(MARKER):])
    return {"status": status, "notes": notes, "checks": checks}


def _limit_memory(memory_mb: int):
    def apply():
        import resource

        limit = memory_mb * 1024 * 1024
        # RLIMIT_DATA (heap and private memory, which is what a runaway student allocation
        # takes) rather than RLIMIT_AS: the address space also counts every shared library
        # mapped, and a CUDA build of PyTorch maps more than the limit before any work starts.
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return apply


# ------------------------------------------------------------------------------ the parent


#: The package whose code a grading run executes: the checks, and everything they call.
PACKAGE_DIR = Path(__file__).resolve().parent


def _digest(path: Path, exercise_id: str) -> str:
    """The key for reusing a grade: changes when the submission changes, or any code of the
    course package does (the checks call into other modules, such as ``alignment.py``)."""
    digest = hashlib.sha256(path.read_bytes())
    digest.update(exercise_id.encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(source.relative_to(PACKAGE_DIR)).encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def grade_one(path: Path, exercise_id: str, limits: GradingLimits) -> GradeResult:
    """Grade one submission in a fresh kernel, in a private temporary folder."""
    student = path.stem
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="course-grade-") as folder:
        copy = Path(folder) / "submission.ipynb"
        shutil.copyfile(path, copy)
        command = [sys.executable, "-m", "course_utils.grading", "--worker", str(copy),
                   exercise_id, str(limits.cell_seconds)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_GRADE")}
        env["MPLBACKEND"] = "Agg"
        # Smoke-test scale: the checks call the student's functions on their own inputs, so
        # the notebook's training (E10.2 trains two models) need not run at full size; and
        # anything a notebook saves goes to this submission's temporary folder.
        env["COURSE_QUICK"] = "1"
        env["COURSE_RUNS_DIR"] = str(Path(folder) / "runs")
        process = subprocess.Popen(
            command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            preexec_fn=_limit_memory(limits.memory_mb) if os.name == "posix" else None,
        )
        try:
            out, _ = process.communicate(timeout=limits.total_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return GradeResult(student, "timeout", notes=[
                f"the notebook ran longer than {limits.total_seconds:g} s in total and was "
                "stopped"], seconds=time.perf_counter() - start)
        finally:
            _kill_group(process)  # the kernel too, whatever happened
    seconds = time.perf_counter() - start
    try:
        report = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        if process.returncode in (-signal.SIGKILL, -signal.SIGSEGV):
            return GradeResult(student, "memory", notes=[
                f"the grading process was killed (code {process.returncode}), most likely by "
                f"the memory limit of {limits.memory_mb} MB"], seconds=seconds)
        return GradeResult(student, "grader error", notes=[
            f"the grading process ended with code {process.returncode} and no result"],
            seconds=seconds)
    result = GradeResult(student, report["status"], notes=report.get("notes", []),
                         seconds=seconds)
    for check in report.get("checks", []):
        result.points[check["name"]] = check["points"]
        result.messages[check["name"]] = check["message"]
    return result


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
) -> list[GradeResult]:
    """Grade every file in ``submissions``; write the gradebook, feedback and histogram."""
    exercise = get_exercise(exercise_id)
    submissions, out = Path(submissions), Path(out)
    if not submissions.is_dir():
        raise FileNotFoundError(f"no submissions folder at {submissions}")
    paths = sorted(p for p in submissions.iterdir() if p.is_file() and not p.name.startswith("."))
    stems = Counter(p.stem for p in paths)
    clashes = [s for s, n in stems.items() if n > 1]
    if clashes:
        raise ValueError(f"two files give the same student id: {clashes}; rename them")
    unknown = sorted(set(only or []) - set(stems))
    if unknown:
        raise ValueError(f"--only names students with no submission: {unknown}")
    cache = out / ".cache"
    cache.mkdir(parents=True, exist_ok=True)

    results: dict[str, GradeResult] = {}
    to_grade: list[tuple[Path, str]] = []
    for path in paths:
        digest = _digest(path, exercise_id)
        cached = cache / f"{path.stem}.json"
        forced = only is not None and path.stem in only
        if reuse and not forced and cached.exists():
            data = json.loads(cached.read_text())
            if data.get("digest") == digest:
                results[path.stem] = GradeResult(**data["result"])
                continue
        to_grade.append((path, digest))

    from tqdm import tqdm

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(grade_one, path, exercise_id, limits): (path, digest)
                   for path, digest in to_grade}
        for future in tqdm(as_completed(futures), total=len(futures), disable=not progress,
                           desc=f"grading {exercise_id}", unit="notebook"):
            path, digest = futures[future]
            try:
                result = future.result()
            except Exception as error:  # never lose a row
                result = GradeResult(path.stem, "grader error", notes=[repr(error)[:300]])
            results[path.stem] = result
            write_text_atomically(cache / f"{path.stem}.json",
                                  json.dumps({"digest": digest, "result": asdict(result)}))

    ordered = [results[p.stem] for p in paths]
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
        writer.writerow([r.student, *(f"{r.points.get(c, 0):g}" for c in checks),
                         *([""] * len(manual)), f"{r.total():g}", f"{exercise.max_points:g}",
                         r.status, " | ".join(r.notes)])
    write_text_atomically(path, buffer.getvalue())


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
    md = [f"# {exercise.id}: {exercise.title}", "", f"Student: `{result.student}`  ",
          f"Status: **{result.status}**  ",
          f"Automatic points: **{result.total():g} / {auto:g}** (written answers are graded "
          "separately)", "", "| part | points | feedback |", "|---|---|---|"]
    md += [f"| {n} | {p} | {m.replace('|', '/')} |" for n, p, m in items]
    if result.notes:
        md += ["", "## While running your notebook", ""] + [f"- {note}" for note in result.notes]
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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        _, notebook, exercise_id, cell_seconds = argv
        print(json.dumps(_run_worker(notebook, exercise_id, float(cell_seconds))))
        return 0
    parser = argparse.ArgumentParser(prog="course-grade", description=__doc__.splitlines()[0])
    parser.add_argument("exercise", help="exercise id, e.g. E10.1")
    parser.add_argument("submissions", type=Path, help="folder with one notebook per student")
    parser.add_argument("--out", type=Path, default=Path("grades"), help="default: grades/")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks graded at once")
    parser.add_argument("--only", nargs="+", metavar="STUDENT", help="regrade only these")
    parser.add_argument("--no-reuse", action="store_true", help="regrade unchanged ones too")
    parser.add_argument("--cell-timeout", type=float, default=60.0, help="seconds per cell")
    parser.add_argument("--total-timeout", type=float, default=300.0,
                        help="seconds per notebook")
    parser.add_argument("--memory-mb", type=int, default=4096, help="memory per notebook")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        results = grade_folder(
            args.exercise, args.submissions, args.out, jobs=args.jobs, only=args.only,
            reuse=not args.no_reuse, progress=not args.quiet,
            limits=GradingLimits(args.cell_timeout, args.total_timeout, args.memory_mb),
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(summary(args.exercise, results))
    print(f"wrote {args.out / 'grades.csv'}, {args.out / 'feedback'}/, "
          f"{args.out / 'histogram.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
