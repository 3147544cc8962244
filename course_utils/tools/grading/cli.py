"""Grade a folder of submitted notebooks with the checks students already ran.

    course-grade E10.1 submissions/ --out grades/ [--jobs 2] [--only alice bob] [--no-reuse]
    course-grade E10.1 submissions/ --shard 3/8 --out grades-3/    # one job of a batch engine
    course-grade merge grades-*/ --out grades/                     # one gradebook from them all
    course-grade export grades/ --roster roster.csv --format canvas --out canvas.csv

The ``course-grade`` command (also ``python -m course_utils.tools.grading``): its arguments (each
limit's default and help text come from :class:`.limits.GradingLimits`), the sandbox this machine
offers, the calibration of the time limits, and what it says once the batch is graded
(:func:`.reports.summary`, the limits that applied, the sandbox and the memory limit it ran under,
what it ignored, what it wrote; the written answers' marks, :mod:`.marks`). Ctrl-C and SIGTERM
stop it cleanly (:mod:`.stopping`): exit status 130 or 143, nothing left behind, the earlier
gradebook as it was. ``export`` writes the gradebook for an LMS (:mod:`.export`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_utils.files import write_text_atomically
from course_utils.tools.grading.batch import JOBS, grade_folder
from course_utils.tools.grading.export import (
    FORMATS,
    PLAIN_ID,
    export_grades,
    gradebook_of,
    read_roster,
)
from course_utils.tools.grading.intake import collect
from course_utils.tools.grading.limits import MEMORY_ENFORCEMENT, Calibration, GradingLimits
from course_utils.tools.grading.marks import CHANGED, MARKS, MarksError
from course_utils.tools.grading.reports import marks_summary, summary
from course_utils.tools.grading.shards import MergeError, merge, parse_shard, read_record
from course_utils.tools.grading.stopping import Interrupted, on_signals
from course_utils.tools.grading.supervise import hidden_folders

__all__ = ["export_main", "main", "merge_main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course-grade",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("exercise", help="exercise id, e.g. E10.1")
    parser.add_argument("submissions", type=Path,
                        help="folder with one notebook per student (or one subfolder each)")
    parser.add_argument("--out", type=Path, default=Path("grades"), help="default: grades/")
    parser.add_argument("--jobs", type=int, default=JOBS,
                        help=f"notebooks graded at once, sharing the cores; default: {JOBS}")
    parser.add_argument("--only", nargs="+", metavar="STUDENT", help="regrade only these")
    parser.add_argument("--no-reuse", action="store_true", help="regrade unchanged ones too")
    for option, keywords in GradingLimits.options():
        parser.add_argument(option, **keywords)
    parser.add_argument("--no-calibrate", dest="calibrate", action="store_false",
                        help="apply the time limits as given, not stretched by how busy this "
                             "machine is at the start (by default one bare kernel is timed "
                             "first, a few seconds)")
    parser.add_argument("--sandbox", choices=("auto", "unshare", "none"), default="auto",
                        help="isolate each submission (default: the best this machine offers)")
    parser.add_argument("--shard", metavar="K/N",
                        help="grade only the K-th of N shares of the folder (1 <= K <= N), "
                             "then `course-grade merge` the N output folders")
    parser.add_argument("--marks", type=Path, metavar="PATH",
                        help="the written answers' marks (default: OUT/marks.csv), which a run "
                             "creates and completes; a shard only reads it (give the merge's, "
                             "e.g. grades/all/marks.csv)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _command(name: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``course-grade NAME``."""
    return argparse.ArgumentParser(prog=f"course-grade {name}", description=description)


def _merge_parser() -> argparse.ArgumentParser:
    parser = _command("merge", "One gradebook, feedback, histogram and class report from the "
                               "output folders of the N shards of one grading (course-grade "
                               "--shard K/N)")
    parser.add_argument("shards", nargs="+", type=Path, help="the shards' output folders")
    parser.add_argument("--out", type=Path, required=True, help="the merged output folder")
    parser.add_argument("--marks", type=Path, metavar="PATH",
                        help="the written answers' marks (default: OUT/marks.csv), which the "
                             "merge creates and completes as an unsharded run does")
    return parser


def _export_parser() -> argparse.ArgumentParser:
    parser = _command("export", "The gradebook of a course-grade run (or merge), written and "
                                "automatic points together, as a file an LMS imports")
    parser.add_argument("grades", type=Path, help="the output folder of course-grade (or merge)")
    parser.add_argument("--roster", type=Path, required=True,
                        help="CSV: a column 'submission' (the notebook's file name without "
                             ".ipynb) and the LMS's identity columns, named as the LMS names "
                             "them")
    parser.add_argument("--format", choices=FORMATS, required=True, dest="fmt")
    parser.add_argument("--out", type=Path, required=True, help="the file to write")
    parser.add_argument("--marks", type=Path, metavar="PATH",
                        help="the written answers' marks (default: GRADES/marks.csv)")
    parser.add_argument("--assignment", help="the grade column's name (default: the exercise)")
    parser.add_argument("--assignment-id", help="Canvas: the assignment's id, written as "
                        "'NAME (ID)' so that Canvas finds it whatever its name")
    parser.add_argument("--id-column", help=f"plain: the roster column written as 'student' "
                        f"(default: {PLAIN_ID})")
    parser.add_argument("--partial", action="store_true",
                        help="export the points so far of students whose written answers are "
                             "not all marked (by default they are left out, and listed)")
    return parser


def _fail(error: Exception) -> int:
    """Print an error, one ``error:`` line per line of it; exit status 2."""
    for line in str(error).splitlines():
        print(f"error: {line}", file=sys.stderr)
    if isinstance(error, MarksError):
        print("nothing was written: correct the marks file, then run again", file=sys.stderr)
    return 2


def export_main(argv: list[str]) -> int:
    """``course-grade export GRADES --roster R --format F --out FILE``: exit status 1 when a
    graded student has no roster row (listed; not in the file), 2 on an error (nothing
    written)."""
    args = _export_parser().parse_args(argv)
    try:
        exercise, results, marking = gradebook_of(args.grades, args.marks)
        made = export_grades(exercise, results, marking, read_roster(args.roster), args.fmt,
                             assignment=args.assignment, assignment_id=args.assignment_id,
                             partial=args.partial, id_column=args.id_column)
    except (ValueError, KeyError) as error:
        return _fail(error)
    write_text_atomically(args.out, made.text)
    print(f"wrote {args.out}: {len(made.exported)} students, {args.fmt} import format")
    for names, what in (
            (made.not_in_roster, "in the gradebook but not in the roster, so NOT in the file: "
                                 "add them to the roster and export again"),
            (made.no_submission, "in the roster but not in the gradebook (no submission), "
                                 "not in the file"),
            (made.unmarked, "written answers not all marked: " + (
                "exported with the points so far" if args.partial else
                "NOT in the file (--partial exports the points so far)")),
            (made.changed, f"{CHANGED}, exported with the mark kept")):
        if names:
            print(f"{what}: {', '.join(names)}", file=sys.stderr)
    return 1 if made.not_in_roster else 0


def merge_main(argv: list[str]) -> int:
    """``course-grade merge SHARD_FOLDER... --out OUT``."""
    args = _merge_parser().parse_args(argv)
    try:
        with on_signals():
            results = merge(args.shards, args.out, args.marks)
    except (MergeError, MarksError) as error:
        return _fail(error)
    except Interrupted as stop:
        print(f"\n{stop.name}: " + ("the merged outputs were finished first" if
              stop.outputs_written else f"nothing written; {args.out} is as it was"),
              file=sys.stderr)
        return stop.exit_code
    record = read_record(args.out)
    for warning in record.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    print(summary(str(record["exercise"]), results))
    for line in marks_summary(record.get("marks")):
        print(line)
    _describe_limits(record)
    protection = record.get("protection")
    print(f"sandbox {protection['sandbox']}, memory by {protection['memory']}, in every shard"
          if protection else "sandbox and memory enforcement differ between the shards (see "
          "the warning above)")
    print(f"merged {len(args.shards)} shards; wrote {args.out / 'grades.csv'}, "
          f"{args.out / 'feedback'}/, {args.out / 'histogram.png'}, "
          f"{args.out / 'mistakes.html'}, {args.marks or args.out / MARKS}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    if argv[:1] == ["export"]:
        return export_main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        shard = parse_shard(args.shard) if args.shard is not None else None
        limits = GradingLimits.from_options(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
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
        with on_signals():  # a scheduler's SIGTERM is handled as Ctrl-C is
            intake = collect(args.submissions)  # read once: graded, and its ignored files listed
            results = grade_folder(
                args.exercise, intake, args.out, jobs=args.jobs, only=args.only,
                reuse=not args.no_reuse, progress=not args.quiet, sandbox=sandbox,
                limits=limits, shard=shard, calibrate=args.calibrate, marks=args.marks,
            )
    except (ValueError, FileNotFoundError) as error:
        return _fail(error)
    except Interrupted as stop:
        if stop.outputs_written:
            print(f"\n{stop.name} once the outputs were being written: they were finished "
                  f"first, {args.out} holds this run's grades", file=sys.stderr)
        else:
            print(f"\ninterrupted ({stop.name}): running notebooks stopped, their temporary "
                  "copies and memory cgroups removed, nothing written; the earlier gradebook "
                  f"in {args.out} is unchanged", file=sys.stderr)
        return stop.exit_code
    print(summary(args.exercise, results))
    record = read_record(args.out)
    for line in marks_summary(record.get("marks")):
        print(line)
    _describe_limits(record)
    _describe_protection(args, record)
    for path, why in intake.ignored:
        print(f"ignored: {path}: {why}")
    marks = args.marks or args.out / MARKS
    print(f"wrote {args.out / 'grades.csv'}, {args.out / 'feedback'}/, "
          f"{args.out / 'histogram.png'}, {args.out / 'mistakes.html'} (what the class got "
          "wrong)" + (f"; shard {shard[0]}/{shard[1]}: merge the {shard[1]} output folders "
                      f"with `course-grade merge` (read {marks}, never written by a shard)"
                      if shard else f", {marks} (type the written answers' marks there)"))
    return 0


def _describe_limits(record: dict) -> None:
    """Print the time limits that applied (a merge: the range of its shards')."""
    given = record["limits"]
    line = (f"time limits: {given['cell_seconds']:g} s per cell, {given['total_seconds']:g} s "
            "per notebook")
    shards = record.get("shards")
    if shards is not None:
        factors = sorted(float((s.get("calibration") or {}).get("factor", 1.0)) for s in shards)
        line += (" on a quiet machine, stretched by each shard's calibration "
                 f"(x{factors[0]:.2f} to x{factors[-1]:.2f})"
                 if any(s.get("calibration") for s in shards) else ", as given, in every shard")
    elif record.get("calibration"):
        applied = record["applied_limits"]
        line += (f" on a quiet machine, {Calibration(**record['calibration']).describe()}: "
                 f"{applied['cell_seconds']:g} s and {applied['total_seconds']:g} s applied")
    else:
        line += ", as given (not calibrated)"
    print(line)


def _describe_protection(args: argparse.Namespace, record: dict) -> None:
    """Print the sandbox and the memory limit the submissions ran under, as recorded."""
    protection = record.get("protection") or {}
    if protection.get("sandbox") == "unshare":
        hidden = hidden_folders(args.submissions, args.out)
        home = "home hidden" if str(Path.home().resolve()) in hidden else \
            "home visible read-only (Python or the course lives there)"
        print("sandbox: unshare (own PID and network namespaces, every file read-only, a "
              f"private /tmp; submissions and output folder hidden, {home})")
    else:
        print("sandbox: none")
    memory = str(protection.get("memory"))
    print(f"memory: {record['limits']['memory_mb']} MB per notebook, by "
          + MEMORY_ENFORCEMENT.get(memory, f"{memory} (see the merge's warning)"))


if __name__ == "__main__":
    raise SystemExit(main())
