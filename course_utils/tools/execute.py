"""Run notebooks top to bottom and save them with their outputs, as committed notebooks are.

    course-execute notebooks/04_multi30k_vanilla_vs_attention.ipynb [more.ipynb ...]

Each notebook runs in a fresh kernel (the course kernel its metadata names) with its own
folder as the working directory, no time limit per cell, and ``COURSE_QUICK`` as set in the
environment (unset it for a real run). Stream outputs are coalesced the way JupyterLab shows
them, so a progress bar is stored as its final line rather than as every update; the live bar
is unchanged. The file is replaced atomically, and only when every cell ran: a failure leaves
the committed notebook as it was and names the cell that failed.

A saved notebook records what built its outputs in its metadata, under ``course.built_with``:
the PyTorch, NumPy and Python of the kernel that ran it (asked of the kernel itself, after the
last cell), the device it found, the scale (``real`` or ``quick``) and the date. The course site
shows it under each notebook; :func:`built_with` reads it back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from course_utils.files import write_text_atomically

__all__ = ["BUILT_WITH_KEYS", "Run", "built_with", "describe_build", "drop_build_record",
           "execute_notebook", "main", "run_notebook"]

#: What ``course.built_with`` holds, the date and the scale included.
BUILT_WITH_KEYS = ("torch", "cuda", "device", "numpy", "python", "scale", "date")

#: Asked of the kernel after the notebook's last cell, in a cell that is removed again before
#: saving: it prints one JSON line of what the kernel runs on.
_PROBE = """\
def _course_built_with():
    import json, platform
    info = {"python": platform.python_version(), "torch": None, "cuda": None,
            "device": "cpu", "numpy": None}
    try:
        import numpy
        info["numpy"] = numpy.__version__
    except ImportError:
        pass
    try:
        import torch
    except ImportError:
        pass
    else:
        info["torch"] = torch.__version__
        info["cuda"] = torch.version.cuda
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name(0)
        elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            info["device"] = "mps"
    print("COURSE-BUILT-WITH " + json.dumps(info))
_course_built_with()
del _course_built_with
"""
_MARK = "COURSE-BUILT-WITH "


@dataclass
class Run:
    """One top-to-bottom run: the executed notebook, seconds in all and per cell."""

    notebook: nbformat.NotebookNode
    seconds: float
    cell_seconds: list[float]


def run_notebook(path: str | Path, timeout: float | None = None, save: bool = True) -> Run:
    """Run ``path`` in a fresh kernel, timing every cell; with ``save``, replace the file with
    the executed notebook (atomically, only once every cell ran). Raises on the first failing
    cell without touching the file."""
    path = Path(path)
    notebook = nbformat.read(path, as_version=4)
    cells = len(notebook.cells)
    notebook.cells.append(nbformat.v4.new_code_cell(_PROBE))
    started: dict[int, float] = {}
    cell_seconds = [0.0] * len(notebook.cells)

    def on_start(cell: object, cell_index: int, **_: object) -> None:
        started[cell_index] = time.perf_counter()

    def on_done(cell: object, cell_index: int, **_: object) -> None:
        cell_seconds[cell_index] = time.perf_counter() - started.get(cell_index,
                                                                     time.perf_counter())

    client = NotebookClient(notebook, timeout=timeout, coalesce_streams=True,
                            resources={"metadata": {"path": str(path.parent)}},
                            on_cell_start=on_start, on_cell_executed=on_done)
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start - cell_seconds[-1]
    probe = notebook.cells.pop()
    del cell_seconds[cells:]
    notebook.metadata.setdefault("course", {})["built_with"] = _read_probe(probe)
    if save:
        text = nbformat.writes(notebook)
        write_text_atomically(path, text if text.endswith("\n") else text + "\n")
    return Run(notebook, seconds, cell_seconds)


def _read_probe(cell: nbformat.NotebookNode) -> dict[str, object]:
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    line = next((x for x in text.splitlines() if x.startswith(_MARK)), None)
    if line is None:
        raise RuntimeError(f"the kernel did not say what it runs on; it printed {text!r}")
    info: dict[str, object] = json.loads(line[len(_MARK):])
    from course_utils.config import quick_mode  # imports torch: only once a notebook has run

    # the kernel runs with this process's environment, so its scale is this one's
    info["scale"] = "quick" if quick_mode() else "real"
    info["date"] = dt.datetime.now(dt.UTC).date().isoformat()
    return {key: info.get(key) for key in BUILT_WITH_KEYS}


def built_with(notebook: nbformat.NotebookNode) -> dict[str, object] | None:
    """What built a notebook's saved outputs (``course.built_with``), or None if not recorded."""
    record = notebook.metadata.get("course", {}).get("built_with")
    return dict(record) if record else None


def drop_build_record(notebook: nbformat.NotebookNode) -> None:
    """Remove ``course.built_with`` (and ``course`` if nothing else is left in it): for a copy
    without outputs, which nothing built."""
    course = notebook.metadata.get("course")
    if isinstance(course, dict):
        course.pop("built_with", None)
        if not course:
            notebook.metadata.pop("course")


def describe_build(record: dict[str, object]) -> str:
    """One sentence for readers: "Outputs from a real-configuration run on 2026-11-23 with
    PyTorch 2.13.0+cpu on the CPU (NumPy 2.3.1, Python 3.11.7)." """
    device = record.get("device") or "cpu"
    where = "on the CPU" if device == "cpu" else f"on {device}"
    torch = f"PyTorch {record['torch']}" if record.get("torch") else "no PyTorch"
    extras = ", ".join(f"{name} {record[key]}" for key, name in
                       (("numpy", "NumPy"), ("python", "Python")) if record.get(key))
    scale = "smoke-test" if record.get("scale") == "quick" else "real-configuration"
    return (f"Outputs from a {scale} run on {record.get('date', 'an unrecorded date')} with "
            f"{torch} {where}" + (f" ({extras})." if extras else "."))


def execute_notebook(path: str | Path, timeout: float | None = None) -> float:
    """Run ``path`` in place; returns the seconds it took. Raises on the first failing cell
    without touching the file."""
    return run_notebook(path, timeout).seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="course-execute", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds allowed per cell (default: no limit)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if not path.is_file():
            print(f"error: no notebook at {path}", file=sys.stderr)
            return 2
        try:
            seconds = execute_notebook(path, args.timeout)
        except CellExecutionError as error:
            print(f"error: {path} stopped at a failing cell; the file is unchanged.\n{error}",
                  file=sys.stderr)
            return 1
        except RuntimeError as error:  # a dead kernel, or a record of the build it could not give
            print(f"error: {path}: {error}; the file is unchanged", file=sys.stderr)
            return 1
        print(f"ran {path} in {seconds / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
