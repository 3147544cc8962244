"""Peak memory of every notebook's run: what a 2 GB machine (e.g. mybinder.org) can hold.

    MULTI30K_DIR=... python benchmarks/peak_memory.py       # real configuration, ~20 min on 2 cores
    python benchmarks/peak_memory.py --quick --out /tmp/m.md  # smoke-test scale, a minute

Each notebook runs top to bottom in a fresh kernel (nothing is saved back), inside a child
process whose peak resident memory is read when it ends: on Linux that peak covers the kernel
too (the largest of the process and the descendants it waited for). The figures go to the
``peak-memory`` section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from day_plan import NOTEBOOKS  # noqa: E402
from report_page import publish  # noqa: E402

RUNNER = ("import sys\nfrom course_utils.tools.execute import run_notebook\n"
          "run = run_notebook(sys.argv[1], save=False)\nprint(f'{run.seconds:.1f}')\n")
BINDER_MB = 2048  # mybinder.org's guaranteed memory (its documentation says 1-2 GB)


def peak_mb(notebook: str, env: dict[str, str]) -> tuple[float, float]:
    """``(peak MB, seconds)`` of running ``notebook`` in a fresh child and kernel."""
    code = ("import resource, subprocess, sys\n"
            f"done = subprocess.run([sys.executable, '-c', {RUNNER!r}, sys.argv[1]],\n"
            "                      capture_output=True, text=True)\n"
            "if done.returncode:\n"
            "    sys.exit(done.stderr[-2000:])\n"
            "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
            "print(peak, done.stdout.split()[-1])\n")
    out = subprocess.run([sys.executable, "-c", code, notebook], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[-2]), float(out[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke-test scale (a minute)")
    parser.add_argument("notebooks", nargs="*", default=NOTEBOOKS)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args(argv)
    env = dict(os.environ)
    if args.quick:
        env["COURSE_QUICK"] = "1"
    else:
        env.pop("COURSE_QUICK", None)
    rows = []
    for notebook in args.notebooks:
        mb, seconds = peak_mb(notebook, env)
        rows.append((notebook, mb, seconds))
        print(f"{notebook}: peak {mb:.0f} MB ({seconds / 60:.1f} min)", flush=True)
    scale = "smoke-test scale (`--quick`)" if args.quick else "real configuration"
    lines = [
        "## Peak memory of each notebook",
        "",
        f"Measured {dt.date.today().isoformat()} with `python benchmarks/peak_memory.py"
        f"{' --quick' if args.quick else ''}` ({scale}) on {platform.machine()} with "
        f"{os.cpu_count()} cores, no GPU, Python {platform.python_version()}: each notebook in a "
        "fresh kernel; the peak resident memory of the kernel and the process running it.",
        "",
        f"| notebook | peak memory (MB) | run (min) | fits {BINDER_MB / 1024:.0f} GB (Binder) |",
        "|---|---|---|---|",
        *[f"| `{nb}` | {mb:.0f} | {s / 60:.1f} | {'yes' if mb < 0.8 * BINDER_MB else 'no'} |"
          for nb, mb, s in rows],
        "",
        "\"Fits\" leaves a fifth of the memory for JupyterLab and the other open kernels. The run "
        "times are for orientation only (other work may share the cores); the timed runs are in "
        "[`day_plan.md`](day_plan.md).",
    ]
    return publish(args.out, "peak-memory", "\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
