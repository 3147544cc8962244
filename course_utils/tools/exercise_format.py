"""The exercise format: how a worked solution marks what students write.

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

Both the exercise generator (:mod:`course_utils.tools.exercises`) and the nbgrader export
(:mod:`course_utils.tools.nbgrader`) read solutions through this module.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

from course_utils.files import write_text_atomically
from course_utils.tools.execute import drop_build_record
from course_utils.tools.figures import drop_figure_alt

__all__ = [
    "ANSWER_STUB",
    "BEGIN",
    "CODE_STUB",
    "END",
    "NBFORMAT_VERSION",
    "ExerciseFormatError",
    "notebook_text",
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
        # a figure's description tells what the worked run drew (its translations, its
        # numbers); the student's copy has no figure yet, and the description could give answers
        drop_figure_alt(cell)
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
