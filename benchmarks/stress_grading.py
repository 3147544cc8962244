"""Stress: every exercise's worked solution graded many times over, each run on fresh inputs.

    python benchmarks/stress_grading.py                   # 40 solutions + 4 untouched per exercise
    python benchmarks/stress_grading.py --copies 3 --untouched 1 --out /tmp/s.md   # a smoke run

An honest student must never lose a point. ``course-grade`` draws a fresh seed for every
submission, so each copy of a solution is checked on inputs of its own; copies are graded
``--jobs`` at a time, as an instructor grades a class, so judges run side by side in one process.
Every copy of a solution must score full marks and every untouched student version 0, on
whatever PyTorch this Python has: run it once in the course's pinned environment and once in an
environment with the newest PyTorch the README's command installs. Each run's counts are kept
beside the report in ``grading_stress.json`` (``docs/``: one entry per PyTorch version) and the
table of all of them is written to its section of the report (``docs/benchmarks.md``). One copy
of each shortcut a student would try (:func:`course_utils.tools.solutions.shortcuts`) is
graded beside them. Exits 1 when any
honest run lost a point, any untouched exercise scored, or any shortcut scored on a part it took.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import torch

from course_utils.checks import exercise_ids, get_exercise, notebook_of
from course_utils.files import update_section, write_text_atomically
from course_utils.tools.grading import GradingLimits, grade_folder
from course_utils.tools.solutions import shortcuts

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = {name: notebook_of(name, ROOT / "solutions").name for name in exercise_ids()}


def stress(exercise_id: str, copies: int, untouched: int, jobs: int, folder: Path) -> dict:
    """Grade ``copies`` solutions, ``untouched`` student versions of one exercise and one copy
    of each of its shortcuts (:func:`course_utils.tools.solutions.shortcuts`)."""
    exercise = get_exercise(exercise_id)
    submissions = folder / exercise_id
    submissions.mkdir()
    tricks = shortcuts(exercise_id)
    for kind, (notebook, _) in tricks.items():
        nbformat.write(notebook, submissions / f"shortcut-{kind}.ipynb")
    for i in range(copies):
        shutil.copy(ROOT / "solutions" / EXERCISES[exercise_id],
                    submissions / f"honest-{i:03d}.ipynb")
    for i in range(untouched):
        shutil.copy(ROOT / "exercises" / EXERCISES[exercise_id],
                    submissions / f"untouched-{i:03d}.ipynb")
    start = time.perf_counter()
    results = grade_folder(exercise_id, submissions, folder / f"{exercise_id}-grades", jobs=jobs,
                           reuse=False, limits=GradingLimits(), progress=True)
    wall = time.perf_counter() - start
    honest = [r for r in results if r.student.startswith("honest")]
    blank = [r for r in results if r.student.startswith("untouched")]
    lost = [{"student": r.student, "status": r.status,
             "parts": {name: r.messages.get(name, "") for name, check in exercise.checks.items()
                       if r.points.get(name, 0.0) < check.points}}
            for r in honest if r.status != "graded" or r.total() < exercise.auto_points]
    scored = [r for r in blank if r.total() > 0]
    by_name = {r.student: r for r in results}
    cheats = {kind: {part: by_name[f"shortcut-{kind}"].points.get(part, 0.0) for part in parts}
              for kind, (_, parts) in tricks.items()}
    return {"honest": len(honest), "full_marks": len(honest) - len(lost),
            "untouched": len(blank), "untouched_zero": len(blank) - len(scored),
            "shortcuts": cheats,
            "shortcuts_zero": sum(not any(points.values()) for points in cheats.values()),
            "max_points": exercise.auto_points, "lost": lost[:10],
            "untouched_scored": [{"student": r.student, "points": r.total()} for r in scored],
            "seconds": round(wall, 1)}


def table(runs: dict) -> str:
    lines = ["| PyTorch | exercise | honest runs | full marks | untouched runs | scored 0 | "
             "shortcuts tried: scored 0 on the parts they take | seconds (batch) |",
             "|---|---|---|---|---|---|---|---|"]
    for version, run in sorted(runs.items()):
        for exercise_id, row in run["exercises"].items():
            tried = row.get("shortcuts")
            cheats = "not run" if tried is None else ", ".join(
                f"{kind} ({len(parts)} part{'s' * (len(parts) != 1)}): "
                + ("yes" if not any(parts.values()) else
                   "NO: " + ", ".join(p for p, v in parts.items() if v))
                for kind, parts in tried.items()) or "none applies"
            lines.append(f"| {version} | {exercise_id} | {row['honest']} | {row['full_marks']} | "
                         f"{row['untouched']} | {row['untouched_zero']} | {cheats} | "
                         f"{row['seconds']} |")
    return "\n".join(lines)


def projection(run: dict, class_size: int = 10_000, machines: tuple[int, ...] = (1, 20, 100)
               ) -> str:
    """Wall time for ``class_size`` submissions of each exercise, from this run's measured
    cost per submission (a batch's seconds over its submissions, ``jobs`` at a time on this
    machine), on job arrays of ``machines`` such machines (``--shard K/N``, then one merge)."""
    lines = ["| exercise | measured s per submission | "
             + " | ".join(f"{m} machine{'s' * (m > 1)}" for m in machines) + " |",
             "|---|---|" + "---|" * len(machines)]
    for exercise_id, row in run["exercises"].items():
        per = row["seconds"] / (row["honest"] + row["untouched"] + len(row.get("shortcuts", {})))
        cells = []
        for m in machines:
            minutes = per * class_size / m / 60
            cells.append(f"{minutes / 60:.1f} h" if minutes >= 90 else f"{minutes:.0f} min")
        lines.append(f"| {exercise_id} | {per:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=40, help="solutions per exercise")
    parser.add_argument("--copies-for", nargs="+", default=[], metavar="EXERCISE=N",
                        help="another number of solutions for some exercises, e.g. E10.2=10 "
                             "(its notebook trains two small models)")
    parser.add_argument("--untouched", type=int, default=4, help="student versions per exercise")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--exercises", nargs="+", default=list(EXERCISES), choices=EXERCISES)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    if args.copies < 1 or args.untouched < 0 or args.jobs < 1:
        parser.error("--copies and --jobs must be at least 1, --untouched at least 0")
    copies = dict.fromkeys(args.exercises, args.copies)
    for item in args.copies_for:
        name, _, number = item.partition("=")
        if name not in EXERCISES or not number.isdigit() or int(number) < 1:
            parser.error(f"--copies-for takes EXERCISE=N with N >= 1; got {item!r}")
        copies[name] = int(number)
    os.environ.setdefault("COURSE_QUICK", "1")  # as course-grade runs submissions anyway

    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for exercise_id in args.exercises:
            results[exercise_id] = stress(exercise_id, copies[exercise_id], args.untouched,
                                          args.jobs, Path(folder))
            row = results[exercise_id]
            print(f"{exercise_id}: {row['full_marks']} of {row['honest']} honest runs full "
                  f"marks; {row['untouched_zero']} of {row['untouched']} untouched scored 0; "
                  f"{row['shortcuts_zero']} of {len(row['shortcuts'])} shortcuts scored 0 "
                  f"({row['seconds']} s)", flush=True)
    store = args.out.with_name("grading_stress.json")  # beside the report: one entry a PyTorch
    runs = json.loads(store.read_text()) if store.exists() else {}
    runs[torch.__version__] = {
        "date": dt.date.today().isoformat(), "jobs": args.jobs,
        "command": "python benchmarks/stress_grading.py " + " ".join(argv or sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "exercises": results}
    rows = [row for run in runs.values() for row in run["exercises"].values()]
    honest, full, blank, zero = (sum(row[key] for row in rows) for key in (
        "honest", "full_marks", "untouched", "untouched_zero"))
    text = "\n".join([
        "## Grading stress: an honest answer never loses a point",
        "",
        "`benchmarks/stress_grading.py` grades many copies of each exercise's worked solution "
        "and a few untouched student versions with `course-grade`, two at a time, each "
        "submission on fresh inputs drawn from its own seed; once per PyTorch version. "
        + "; ".join(f"PyTorch {v}: `{r['command'].strip()}` on {r['date']} ({r['machine']})"
                    for v, r in sorted(runs.items())) + ".",
        "",
        table(runs),
        "",
        f"In all: **{full} of {honest}** honest runs scored full marks and **{zero} of {blank}** "
        "untouched exercises scored 0. Shortcuts, one copy each: every cell that defines a "
        "graded function replaced by `exec` of its own text (code no cell defines, as "
        "`exec(inspect.getsource(...))` of a copy runs it), or by an import of the library's "
        "object of the same name where there is one; the parts a shortcut takes must score 0.",
        "",
        "### 10,000 submissions per exercise",
        "",
        f"Projected from the PyTorch {torch.__version__} run above: its cost per submission "
        f"(the batch's wall time over its submissions, {args.jobs} at a time on "
        f"{os.cpu_count()} cores) times 10,000, divided over a job array of such machines "
        "(`course-grade --shard K/N`, one per array task; the merge takes seconds). A "
        "projection, not a measurement: it assumes the tasks do not share cores and the "
        "scheduler starts them at once.",
        "",
        projection(runs[torch.__version__]),
    ])
    write_text_atomically(store, json.dumps(runs, indent=1) + "\n")
    update_section(args.out, "grading-stress", text, title="Benchmarks")
    print(text)
    failed = any(r["full_marks"] < r["honest"] or r["untouched_zero"] < r["untouched"]
                 or r["shortcuts_zero"] < len(r["shortcuts"]) for r in results.values())
    for exercise_id, row in results.items():
        for lost in row["lost"]:
            print(f"LOST POINTS {exercise_id} {lost}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
