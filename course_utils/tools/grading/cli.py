"""Grade a folder of submitted notebooks with the checks students already ran.

    course-grade E10.1 submissions/ --out grades/ [--jobs 2] [--only alice bob] [--no-reuse]
    course-grade E10.1 submissions/ --shard 3/8 --out grades-3/    # one job of a batch engine
    course-grade merge grades-*/ --out grades/                     # one gradebook from them all

The ``course-grade`` command (also ``python -m course_utils.tools.grading``): its arguments, the
sandbox this machine offers, and what it says once the batch is graded (:func:`.reports.summary`,
the sandbox and the memory limit it ran under, what it ignored, what it wrote).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_utils.tools.grading.batch import grade_folder
from course_utils.tools.grading.intake import collect
from course_utils.tools.grading.limits import GradingLimits, memory_cgroup
from course_utils.tools.grading.reports import summary
from course_utils.tools.grading.shards import MergeError, merge, parse_shard, read_record
from course_utils.tools.grading.supervise import hidden_folders

__all__ = ["main", "merge_main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course-grade",
                                     description=(__doc__ or "").splitlines()[0])
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
    parser.add_argument("--shard", metavar="K/N",
                        help="grade only the K-th of N shares of the folder (1 <= K <= N), "
                             "then `course-grade merge` the N output folders")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _merge_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course-grade merge",
        description="One gradebook, feedback, histogram and class report from the output "
                    "folders of the N shards of one grading (course-grade --shard K/N)")
    parser.add_argument("shards", nargs="+", type=Path, help="the shards' output folders")
    parser.add_argument("--out", type=Path, required=True, help="the merged output folder")
    return parser


def merge_main(argv: list[str]) -> int:
    """``course-grade merge SHARD_FOLDER... --out OUT``."""
    args = _merge_parser().parse_args(argv)
    try:
        results = merge(args.shards, args.out)
    except MergeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(summary(str(read_record(args.out)["exercise"]), results))
    print(f"merged {len(args.shards)} shards; wrote {args.out / 'grades.csv'}, "
          f"{args.out / 'feedback'}/, {args.out / 'histogram.png'}, "
          f"{args.out / 'mistakes.html'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        shard = parse_shard(args.shard) if args.shard is not None else None
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
        intake = collect(args.submissions)
        results = grade_folder(
            args.exercise, args.submissions, args.out, jobs=args.jobs, only=args.only,
            reuse=not args.no_reuse, progress=not args.quiet, sandbox=sandbox,
            limits=GradingLimits(args.cell_timeout, args.total_timeout, args.memory_mb),
            shard=shard,
        )
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: running notebooks stopped, nothing written; the earlier "
              f"gradebook in {args.out} is unchanged", file=sys.stderr)
        return 130
    print(summary(args.exercise, results))
    _describe_protection(args, sandbox)
    for path, why in intake.ignored:
        print(f"ignored: {path}: {why}")
    print(f"wrote {args.out / 'grades.csv'}, {args.out / 'feedback'}/, "
          f"{args.out / 'histogram.png'}, {args.out / 'mistakes.html'} (what the class got "
          "wrong)" + (f"; shard {shard[0]}/{shard[1]}: merge the {shard[1]} output folders "
                      "with `course-grade merge`" if shard else ""))
    return 0


def _describe_protection(args: argparse.Namespace, sandbox: str | None) -> None:
    """Print the sandbox and the memory limit the submissions ran under."""
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


if __name__ == "__main__":
    raise SystemExit(main())
