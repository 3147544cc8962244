"""Run notebooks top to bottom and save them with their outputs, as committed notebooks are.

    course-execute notebooks/04_multi30k_vanilla_vs_attention.ipynb [more.ipynb ...]

Each notebook runs in a fresh kernel (the course kernel its metadata names) with its own
folder as the working directory, no time limit per cell, and ``COURSE_QUICK`` as set in the
environment (unset it for a real run). Stream outputs are coalesced the way JupyterLab shows
them, so a progress bar is stored as its final line rather than as every update; the live bar
is unchanged. The file is replaced atomically, and only when every cell ran: a failure leaves
the committed notebook as it was and names the cell that failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from course_utils.files import write_text_atomically

__all__ = ["Run", "execute_notebook", "main", "run_notebook"]


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
    seconds = time.perf_counter() - start
    if save:
        text = nbformat.writes(notebook)
        write_text_atomically(path, text if text.endswith("\n") else text + "\n")
    return Run(notebook, seconds, cell_seconds)


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
        print(f"ran {path} in {seconds / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
