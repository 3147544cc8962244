"""Generate the student exercise notebooks from the worked solutions.

The solution notebook in ``solutions/`` is the single source of an exercise. Solution
code sits between two marker lines::

    def softmax(energies):
        ### BEGIN SOLUTION
        shifted = energies - energies.max()
        ...
        ### END SOLUTION

In the student version each region becomes ``raise NotImplementedError`` (at the
indentation of the ``BEGIN`` marker) in code cells, and a prompt for an answer in Markdown
cells. Outputs and execution counts are cleared. Markers must come in ``BEGIN``/``END``
pairs, unnested, exactly as written above; anything else is refused with the cell and line,
including near-misses (``###BEGIN SOLUTION``, ``### begin solution``, ``## BEGIN SOLUTION``)
and markers in raw cells, so that a typo can never copy a solution into a student notebook.

Command line (installed as ``course-exercises``)::

    course-exercises            # regenerate exercises/ from solutions/
    course-exercises --check    # exit 1 if exercises/ is out of date
    course-exercises --nbgrader OUT   # nbgrader source notebooks (course_utils.tools.nbgrader)
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

from course_utils.files import write_text_atomically
from course_utils.tools.execute import drop_build_record

__all__ = [
    "ExerciseFormatError",
    "build_all",
    "make_exercise",
    "render_exercise",
    "strip_solutions",
    "write_notebook",
]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
CODE_STUB = "raise NotImplementedError  # your code here"
ANSWER_STUB = "_Write your answer here._"
NBFORMAT_VERSION = 4


#: Anything that looks like a marker: a comment or heading of "begin/end solution" in any
#: case or spacing. A line that matches this but is not exactly a marker is refused, so a
#: typo (``###BEGIN SOLUTION``, ``## Begin solution``) can never leak a solution to students.
NEAR_MARKER = re.compile(r"(#|^\s*)\s*(begin|end)[\s_-]*solutions?\b", re.IGNORECASE)


class ExerciseFormatError(ValueError):
    """The solution notebook's markers cannot be turned into an exercise."""


def _strip_source(source: str, stub: str, where: str) -> tuple[str, int]:
    """Replace every marked region of one cell's source; returns (new source, regions)."""
    out: list[str] = []
    regions = 0
    begin_line: int | None = None
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if begin_line is not None:
                raise ExerciseFormatError(
                    f"{where}, line {number}: {BEGIN!r} inside the region opened on line "
                    f"{begin_line}; close it with {END!r} first"
                )
            begin_line = number
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + stub)
            regions += 1
        elif marker == END:
            if begin_line is None:
                raise ExerciseFormatError(f"{where}, line {number}: {END!r} without {BEGIN!r}")
            begin_line = None
        elif marker.startswith("#") and NEAR_MARKER.search(marker):
            raise ExerciseFormatError(
                f"{where}, line {number}: {marker!r} looks like a solution marker but is "
                f"not one; write exactly {BEGIN!r} or {END!r} on a line of its own"
            )
        elif BEGIN in line or END in line:
            raise ExerciseFormatError(
                f"{where}, line {number}: a marker must stand alone on its line; got {line!r}"
            )
        elif NEAR_MARKER.search(line):
            raise ExerciseFormatError(
                f"{where}, line {number}: {marker!r} looks like a solution marker but is "
                f"not one; write exactly {BEGIN!r} or {END!r} on a line of its own"
            )
        elif begin_line is None:
            out.append(line)
    if begin_line is not None:
        raise ExerciseFormatError(f"{where}, line {begin_line}: {BEGIN!r} is never closed")
    return "\n".join(out), regions


def strip_solutions(
    notebook: nbformat.NotebookNode, name: str = "notebook"
) -> nbformat.NotebookNode:
    """Return a student copy of ``notebook``: solutions replaced, outputs cleared."""
    student = copy.deepcopy(notebook)
    total = 0
    for index, cell in enumerate(student.cells):
        where = f"{name}, cell {index}"
        if cell.cell_type == "code":
            cell.source, regions = _strip_source(cell.source, CODE_STUB, where)
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown":
            cell.source, regions = _strip_source(cell.source, ANSWER_STUB, where)
        else:  # raw cells are copied as they are: they must not hold a solution
            for number, line in enumerate(cell.source.splitlines(), start=1):
                if BEGIN in line or END in line or NEAR_MARKER.search(line):
                    raise ExerciseFormatError(
                        f"{where} ({cell.cell_type} cell), line {number}: solution markers work "
                        "only in code and Markdown cells; this cell would be copied to "
                        "students unchanged"
                    )
            regions = 0
        for key in ("execution", "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
        total += regions
    if total == 0:
        raise ExerciseFormatError(f"{name}: no {BEGIN!r} regions found; nothing to hide")
    student.metadata.pop("widgets", None)
    drop_build_record(student)  # no outputs: nothing built the student's copy
    return student


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    """Validated nbformat-4 JSON text of ``notebook``, ending in a newline."""
    nbformat.validate(notebook)
    text = nbformat.writes(notebook, version=NBFORMAT_VERSION)
    return text if text.endswith("\n") else text + "\n"


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Validate and write ``notebook`` atomically."""
    write_text_atomically(path, notebook_text(notebook))


def render_exercise(solution_path: Path) -> str:
    """The student notebook, as text, generated from ``solution_path``."""
    solution_path = Path(solution_path)
    notebook = nbformat.read(solution_path, as_version=NBFORMAT_VERSION)
    return notebook_text(strip_solutions(notebook, name=solution_path.name))


def make_exercise(solution_path: Path, exercise_path: Path) -> None:
    """Generate the student notebook ``exercise_path`` from ``solution_path``."""
    write_text_atomically(exercise_path, render_exercise(solution_path))


def build_all(solutions: Path, exercises: Path, check: bool = False) -> list[Path]:
    """Generate (or with ``check``, compare) one exercise per solution notebook.

    Returns the exercise paths that were written, or with ``check`` that are out of date.
    """
    solution_paths = sorted(Path(solutions).glob("*.ipynb"))
    if not solution_paths:
        raise FileNotFoundError(f"no solution notebooks (*.ipynb) in {solutions}")
    changed = []
    for solution in solution_paths:
        target = Path(exercises) / solution.name
        if check:
            current = target.read_text(encoding="utf-8") if target.exists() else None
            if current != render_exercise(solution):
                changed.append(target)
        else:
            make_exercise(solution, target)
            changed.append(target)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="course-exercises", description="Generate exercises/ from solutions/."
    )
    parser.add_argument("--solutions", type=Path, default=Path("solutions"))
    parser.add_argument("--exercises", type=Path, default=Path("exercises"))
    parser.add_argument(
        "--check", action="store_true", help="only report exercises that are out of date"
    )
    parser.add_argument(
        "--nbgrader", type=Path, metavar="OUT",
        help="instead, write nbgrader source notebooks into the new folder OUT",
    )
    args = parser.parse_args(argv)
    if args.nbgrader is not None:
        return _export_nbgrader(args.solutions, args.nbgrader)
    try:
        paths = build_all(args.solutions, args.exercises, check=args.check)
    except (ExerciseFormatError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        for path in paths:
            print(f"out of date: {path} (run course-exercises)")
        return 1 if paths else 0
    for path in paths:
        print(f"wrote {path}")
    return 0


def _export_nbgrader(solutions: Path, out: Path) -> int:
    from course_utils.tools.nbgrader import export_nbgrader  # imports the checks (and PyTorch)

    try:
        paths = export_nbgrader(solutions, out)
    except (ValueError, OSError) as error:  # ExerciseFormatError, an unknown exercise, OUT
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    print(f"wrote {out / 'nbgrader_config.py'}; next: cd {out} && nbgrader generate_assignment "
          "E10.1 (see the README, 'If your course runs nbgrader')")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
