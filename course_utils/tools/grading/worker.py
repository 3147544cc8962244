"""What runs inside the worker process: one submission's notebook, in a fresh kernel.

    python -m course_utils.tools.grading.worker \
        NOTEBOOK EXERCISE CELL_SECONDS PARTS_JSON [HIDE_JSON] REPORT_FD

The grader (:func:`course_utils.tools.grading.supervise.grade_one`) starts it in a private
temporary folder, in a sandbox where there is one (then ``HIDE_JSON`` lists the folders to
hide), and tells it the run's seed on its stdin. The worker reads the notebook, shuts itself in
(:func:`course_utils.tools.grading.sandbox.enter`), runs the student's cells (errors do not
stop them), then one probe cell per part (:func:`_grading_cell`), each tagged with a nonce drawn
here (``PARTS_JSON``: each part's name and the function it checks, from the grader, so that
this process imports neither the checks nor PyTorch: only the kernel does). It reports on the
pipe ``REPORT_FD``, which it keeps from the kernel: each part's raw
results as soon as its probe cell has run (a :data:`PART` line), and last the run's status and
notes (one JSON line). It judges nothing: the grader does (:mod:`.judge`).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from course_utils.checks.cells import cell_digest
from course_utils.tools.grading.intake import read_notebook
from course_utils.tools.grading.limits import GRADER_KERNEL, grader_kernelspec
from course_utils.tools.grading.results import MARKER, NO_KERNEL, NOTES, PART, PROBE_BYTES

__all__ = ["STARTUP_SECONDS", "NotebookRun", "exercise_parts", "main", "run_notebook"]


def _grading_cell(exercise_id: str, check: str, seed: int, nonce: str,
                  cells: list[str] | None = None) -> str:
    """The probe cell for one part: one cell per part, so that each part has its own time limit
    and a function that hangs under its check costs that part only. It prints the probe's raw
    data (:meth:`Check.probe`) once, tagged with ``nonce``: both ``seed`` (the fresh inputs)
    and ``nonce`` reach the kernel only with this cell, after the student's cells ran;
    ``cells``, the digests of the notebook's code cells, say which code the student wrote."""
    return (
        "import builtins as _b, json as _j\n"
        "from course_utils.checks import get_exercise as _g\n"
        "from course_utils.checks.cells import notebook_cells as _n\n"
        f"_c = _g({exercise_id!r}).checks[{check!r}]\n"
        f"with _n({cells!r}):\n"
        f"    _b.print({MARKER!r} + {nonce!r} + _j.dumps(_c.probe(globals().get(_c.target), "
        f"{seed!r})))\n"
    )


def exercise_parts(exercise_id: str) -> list[tuple[str, str]]:
    """Each part of ``exercise_id`` and the function or class it checks, in order; the grader
    passes them to the worker (``PARTS_JSON``)."""
    from course_utils.checks import get_exercise

    return [(name, check.target) for name, check in get_exercise(exercise_id).checks.items()]


def _kernel_here(folder: Path) -> str:
    """The kernelspec of the grader's own Python, in ``folder``, made the one this process's
    Jupyter finds first; returns its name."""
    os.environ["JUPYTER_PATH"] = str(grader_kernelspec(folder).parent)
    return GRADER_KERNEL


def _few(notes: list[str]) -> list[str]:
    """At most :data:`NOTES` notes, the last (why the run ended) always among them."""
    if len(notes) <= NOTES:
        return notes
    return [*notes[:NOTES - 2], f"... and {len(notes) - NOTES + 1:,} more notes like these",
            notes[-1]]


#: Seconds a kernel may take to start, at least (the cell limit where that is longer).
STARTUP_SECONDS = 120


class NotebookRun:
    """One notebook's run: the probe cells appended to it (one per part, each with a tag drawn
    here, which the kernel cannot know), and what its cells showed, turned into notes, a status
    and the parts, each reported as soon as it is known (:meth:`on_cell_executed` is nbclient's
    hook, called after every cell)."""

    def __init__(self, notebook: Any, exercise_id: str, cell_seconds: float, seed: int,
                 notes: list[str], report: Callable[[str], None],
                 parts: list[tuple[str, str]] | None = None) -> None:
        import nbformat

        self.cell_seconds = cell_seconds
        self.notes = notes
        self.report = report
        self.status = "graded"
        self.cells_run = 0  # cells the kernel ran: none means it never started
        self.parts: list[dict] = []
        # id of each probe cell -> (its part, the function it checks, its tag)
        self.probes: dict[int, tuple[str, str, str]] = {}
        notebook.cells = [c for c in notebook.cells if c.cell_type in ("code", "markdown", "raw")]
        cells = sorted({cell_digest(c.source) for c in notebook.cells if c.cell_type == "code"})
        for name, target in parts if parts is not None else exercise_parts(exercise_id):
            nonce = secrets.token_hex(16)  # drawn here, in the worker: the kernel cannot know it
            cell = nbformat.v4.new_code_cell(_grading_cell(exercise_id, name, seed, nonce,
                                                           cells))
            self.probes[id(cell)] = (name, target, MARKER + nonce)
            notebook.cells.append(cell)

    def on_cell_executed(self, cell: Any, cell_index: int, execute_reply: Any) -> None:
        self.cells_run += 1
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        probe = self.probes.get(id(cell))
        if probe is not None:
            self.on_probe_cell(cell, *probe, errors)
        else:
            self.on_student_cell(cell, cell_index, errors)
        cell.outputs = []  # keep memory flat whatever the student prints

    def on_probe_cell(self, cell: Any, part: str, target: str, tag: str,
                      errors: list[dict]) -> None:
        """Report the part's raw results: the one line its probe printed with its tag."""
        text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream")
        lines = [line for line in text.splitlines() if line.startswith(tag)]
        if len(lines) == 1 and len(lines[0]) > PROBE_BYTES:
            self.notes.append(f"part {part!r}: `{target}` returned results of "
                              f"{len(lines[0]) / 1e6:.0f} MB, more than the "
                              f"{PROBE_BYTES / 1e6:.0f} MB a part may report: it scores 0")
            self._send(part, None)
        elif len(lines) == 1:  # a second line with the tag was printed by the student's code
            try:
                raw = json.loads(lines[0][len(tag):])
            except ValueError:
                raw = None
            self._send(part, raw)
            if "KeyboardInterrupt" in lines[0] or "time limit" in lines[0]:
                self.notes.append(f"part {part!r}: `{target}` ran longer than "
                                  f"{self.cell_seconds:g} s under its check: this part scores "
                                  "0, the others were graded")
        elif lines:
            self.notes.append(f"part {part!r}: more than one result was printed for it (the "
                              "student's code printed one): it scores 0")
            self._send(part, None)
        elif errors:
            self.notes.append(f"part {part!r}: its check could not run "
                              f"({errors[0].get('ename', '')}: "
                              f"{errors[0].get('evalue', '')})"[:300])

    def _send(self, part: str, probe: Any) -> None:
        """Report one part now: it is kept even if a later part hangs."""
        self.parts.append({"name": part, "probe": probe})
        self.report(PART + json.dumps(self.parts[-1]))

    def on_student_cell(self, cell: Any, cell_index: int, errors: list[dict]) -> None:
        """A note for each error the cell raised; an interrupt or a MemoryError sets the
        status."""
        first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
        where = f"cell {cell_index} (`{first[:50]}`)"
        for error in errors:
            name = error.get("ename", "")
            if name == "KeyboardInterrupt":
                self.status = "timeout"
                self.notes.append(f"{where} ran longer than {self.cell_seconds:g} s and was "
                                  "interrupted")
            elif name.endswith("MemoryError"):  # MemoryError, NumPy's _ArrayMemoryError
                self.status = "memory"
                self.notes.append(f"{where} ran out of memory (MemoryError)")
            else:
                self.notes.append(f"{where} raised {name}: {error.get('evalue', '')}"[:300])

    def result(self) -> dict:
        """The run's report once every cell has run (the parts went out one by one, before)."""
        if self.parts:
            return {"status": self.status, "notes": _few(self.notes)}
        if self.status in ("memory", "timeout"):  # the limit that was hit explains the rest
            return {"status": self.status, "notes": _few([
                *self.notes, f"after that ({self.status} limit), the checks could not run in "
                "this kernel"])}
        return {"status": "crashed", "notes": _few([
            *self.notes, "the checks could not run in this notebook's kernel"])}

    def died(self) -> dict:
        """The run's report when the kernel died: a limit that was hit first explains the
        death; otherwise the kernel crashed."""
        return {"status": self.status if self.status in ("memory", "timeout") else "crashed",
                "notes": _few([*self.notes, "the kernel died (os._exit, a crash, or the memory "
                               "limit) before grading finished"])}

    def failed(self, error: Exception) -> dict:
        """The run's report when running the notebook failed with ``error``. Before its first
        cell that is the grader's fault, not the submission's (the kernel it starts did not come
        up: a machine too busy, a broken environment): a grader error, retried by the next run."""
        if not self.cells_run:
            return {"status": "grader error", "notes": _few([
                *self.notes, f"{NO_KERNEL}, so nothing of this notebook ran "
                f"({type(error).__name__}: {error})"[:300], "grade it again: this result is "
                "not kept"])}
        return {"status": "crashed",
                "notes": _few([*self.notes, f"{type(error).__name__}: {error}"[:300]])}


def _private_folders() -> Path:
    """The working folder, made the place of everything the kernel writes: its home, Jupyter's
    runtime files, matplotlib's and IPython's settings, and what the notebook saves."""
    folder = Path.cwd()
    for name, sub in [("HOME", "home"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                      ("MPLCONFIGDIR", "matplotlib"), ("IPYTHONDIR", "ipython")]:
        (folder / sub).mkdir(exist_ok=True)
        os.environ[name] = str(folder / sub)
    os.environ["COURSE_RUNS_DIR"] = str(folder / "runs")  # what a notebook saves stays here
    return folder


def run_notebook(notebook_path: str, exercise_id: str, cell_seconds: float,
                 hide: list[str] | None = None, report: Callable[[str], None] = print,
                 seed: int | None = None, parts: list[tuple[str, str]] | None = None) -> dict:
    """Execute one notebook and return its result as a dict. With ``hide`` (the sandbox), this
    process is the first of fresh namespaces: it reads the notebook, then shuts itself in
    (:func:`course_utils.tools.grading.sandbox.enter`) before running any of it."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    # nbclient counts a cell's time in whole seconds: a limit of 2.5 s is 3 s (and never 0)
    cell_seconds = max(1, math.ceil(cell_seconds))
    raw = Path(notebook_path).read_bytes()
    if hide is not None:
        from course_utils.tools.grading.sandbox import enter

        os.chdir(enter(hide))
    folder = _private_folders()
    try:
        notebook, notes = read_notebook(raw, exercise_id)
    except Exception as error:  # not JSON, not a notebook, empty file...
        return {"status": "not a notebook", "notes": [f"could not read the notebook: "
                                                     f"{error}"[:300]]}
    (folder / "submission.ipynb").write_bytes(raw)  # the notebook's own folder, as in Jupyter
    run = NotebookRun(notebook, exercise_id, cell_seconds, seed or 0, notes, report, parts)
    client = NotebookClient(
        notebook, timeout=cell_seconds, interrupt_on_timeout=True, allow_errors=True,
        # a kernel's start is no student's code, but on a busy machine with a cold disk (a fresh
        # environment's first PyTorch import) it can take longer than nbclient's 60 s
        startup_timeout=max(STARTUP_SECONDS, cell_seconds),
        kernel_name=_kernel_here(folder), resources={"metadata": {"path": str(folder)}},
        on_cell_executed=run.on_cell_executed,
    )
    try:
        client.execute()
    except DeadKernelError:
        return run.died()
    except Exception as error:
        return run.failed(error)
    return run.result()


def main(argv: list[str] | None = None) -> int:
    """The worker: ``NOTEBOOK EXERCISE CELL_SECONDS PARTS_JSON [HIDE_JSON] REPORT_FD``, the
    run's seed on stdin; reports on ``REPORT_FD``, a pipe the kernel and the student's processes
    never get."""
    argv = list(sys.argv[1:] if argv is None else argv)
    notebook, exercise_id, cell_seconds, parts_json, *rest = argv
    parts = [(name, target) for name, target in json.loads(parts_json)]
    fd = int(rest[-1])
    hide = json.loads(rest[0]) if len(rest) == 2 else None
    seed = int(sys.stdin.readline() or 0)  # this run's inputs: from the grader, unseen
    os.set_inheritable(fd, False)  # the kernel and the student's processes never get it
    with os.fdopen(fd, "w", buffering=1) as channel:
        def report(line: str) -> None:
            channel.write(line + "\n")
            channel.flush()

        report(json.dumps(run_notebook(notebook, exercise_id, float(cell_seconds), hide,
                                       report, seed, parts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
