"""Benchmark: grade 50 copies of the E10.1 solution, against the cost of a bare kernel.

    python benchmarks/bench_grading.py    # 50 copies; writes its section of docs/benchmarks.md
    python benchmarks/bench_grading.py --copies 4 --out /tmp/b.md   # a smoke run

The reference, measured in the same run, is what any grader must pay per notebook: start a
fresh kernel, import what the notebook imports (NumPy and ``course_utils``), shut it down.
If the grader's time per submission is close to that, kernel start-up dominates, not the grader.
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

from jupyter_client.manager import start_new_kernel

from course_utils.files import update_section
from course_utils.grading import GradingLimits, grade_folder

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "E10.1-attention-by-hand.ipynb"


def bare_kernel_seconds(repeats: int) -> float:
    """Median seconds to start a kernel, import the notebook's modules and shut it down."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        manager, client = start_new_kernel(kernel_name="python3")
        client.execute_interactive("import numpy\nfrom course_utils.checks import e10_1",
                                   timeout=120)
        client.stop_channels()
        manager.shutdown_kernel(now=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as folder:
        submissions = Path(folder) / "submissions"
        submissions.mkdir()
        data = SOLUTION.read_bytes()
        for i in range(args.copies):
            (submissions / f"student{i:03d}.ipynb").write_bytes(data)
        start = time.perf_counter()
        results = grade_folder("E10.1", submissions, Path(folder) / "grades", jobs=args.jobs,
                               reuse=False, limits=GradingLimits(), progress=False)
        wall = time.perf_counter() - start
    assert all(r.status == "graded" and r.total() == 8 for r in results), "a copy lost points"
    latency = statistics.median(r.seconds for r in results)
    bare = bare_kernel_seconds(3)
    text = "\n".join([
        "## Grading submissions",
        "",
        f"Measured {dt.date.today().isoformat()} with `python benchmarks/bench_grading.py "
        f"--copies {args.copies} --jobs {args.jobs}` on {platform.machine()} with "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        f"`course-grade E10.1` on {args.copies} copies of the E10.1 solution ({args.jobs} at a "
        "time, no reuse); every copy scored full marks.",
        "",
        "| measure | seconds |",
        "|---|---|",
        f"| whole batch | {wall:.1f} |",
        f"| wall time per submission (batch / {args.copies}) | {wall / args.copies:.2f} |",
        f"| one submission, start to finish (median) | {latency:.2f} |",
        f"| reference: bare kernel start, imports, shutdown (median of 3) | {bare:.2f} |",
        "",
        f"With {args.jobs} submissions graded at a time, the batch costs "
        f"{wall / args.copies / bare:.2f}x a bare kernel per submission"
        + (": kernel start-up and imports dominate; the grader adds little. "
           if wall / args.copies / bare < 1.5 else
           ": the grader adds a noticeable share on top of the kernel. ")
        + f"(One submission alone takes {latency / bare:.2f}x a bare kernel, sharing the cores "
          "with the other submissions being graded.)",
    ])
    print(text)
    update_section(args.out, "grading", text, title="Benchmarks")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
