"""Benchmark: grade copies of the E10.1 solution with and without the sandbox, against the
cost of a bare kernel.

    python benchmarks/bench_grading.py    # 2 x 50 copies; writes its section of docs/benchmarks.md
    python benchmarks/bench_grading.py --copies 4 --out /tmp/b.md   # a smoke run

The reference, measured in the same run, is what any grader must pay per notebook: start a
fresh kernel, import what the notebook imports (NumPy and ``course_utils``), shut it down.
If the grader's time per submission is close to that, kernel start-up dominates, not the grader.
The batches with and without the sandbox alternate in halves, so that a slow spell of the
machine falls on both.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from report_page import publish

from course_utils.tools.grading import GradingLimits, grade_folder
from course_utils.tools.grading.limits import bare_kernel_seconds
from course_utils.tools.grading.sandbox import detect

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)

    sandbox = detect()
    modes = [None, sandbox] if sandbox else [None]
    walls = {mode: 0.0 for mode in modes}
    latencies: dict[str | None, list[float]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as folder:
        data = SOLUTION.read_bytes()
        for half in range(2):
            for mode in modes:
                submissions = Path(folder) / f"submissions-{mode}-{half}"
                submissions.mkdir()
                for i in range(args.copies // 2):
                    (submissions / f"student{i:03d}.ipynb").write_bytes(data)
                start = time.perf_counter()
                results = grade_folder("E10.1", submissions, Path(folder) / f"grades-{mode}",
                                       jobs=args.jobs, reuse=False, limits=GradingLimits(),
                                       progress=False, sandbox=mode)
                walls[mode] += time.perf_counter() - start
                assert all(r.status == "graded" and r.total() == 8 for r in results), \
                    f"a copy lost points (sandbox {mode})"
                latencies[mode] += [r.seconds for r in results]
    copies = 2 * (args.copies // 2)
    bare = bare_kernel_seconds(3)
    name = {None: "no sandbox", sandbox: f"sandbox ({sandbox})"}
    lines = [
        "## Grading submissions",
        "",
        f"Measured {dt.date.today().isoformat()} with `python benchmarks/bench_grading.py "
        f"--copies {args.copies} --jobs {args.jobs}` on {platform.machine()} with "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        f"`course-grade E10.1` on {copies} copies of the E10.1 solution ({args.jobs} at a "
        "time, no reuse), "
        + ("with and without the sandbox, in alternating halves; " if sandbox else
           "without a sandbox (none is available on this machine); ")
        + "every copy scored full marks.",
        "",
        "| measure | " + " | ".join(name[m] for m in modes) + " |",
        "|---|" + "---|" * len(modes),
        "| whole batch (s) | " + " | ".join(f"{walls[m]:.1f}" for m in modes) + " |",
        f"| wall time per submission (batch / {copies}) (s) | "
        + " | ".join(f"{walls[m] / copies:.2f}" for m in modes) + " |",
        "| one submission, start to finish, median (s) | "
        + " | ".join(f"{statistics.median(latencies[m]):.2f}" for m in modes) + " |",
        "| per submission against a bare kernel | "
        + " | ".join(f"{walls[m] / copies / bare:.2f}x" for m in modes) + " |",
        "",
        f"Reference: a bare kernel's start, imports and shutdown take {bare:.2f} s (median of 3).",
    ]
    if sandbox:
        extra = walls[sandbox] / walls[None] - 1
        lines += ["", f"The sandbox adds {extra:+.0%} to the batch (target: under +20%: "
                  + ("reached)." if extra < 0.20 else "**not reached**).")]
    return publish(args.out, "grading", "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
