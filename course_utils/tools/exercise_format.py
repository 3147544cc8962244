"""The student version of a worked solution: each marked region replaced, outputs cleared.

The markers and the regions are read by :mod:`course_utils.tools.solutions`, strictly (a marker
out of place or a near-miss is refused with the cell and line, so that a typo can never copy a
solution into a student notebook). In the student version each region becomes ``raise
NotImplementedError`` (at the indentation of the ``BEGIN`` marker) in code cells, and a prompt
for an answer in Markdown cells; a raw cell with a marker is refused (it would be copied as it
is). Outputs and execution counts are cleared.

Both the exercise generator (:mod:`course_utils.tools.exercises`) and the nbgrader export
(:mod:`course_utils.tools.nbgrader`) make student versions through this module.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from course_utils.files import write_text_atomically
from course_utils.tools.execute import drop_build_record
from course_utils.tools.figures import drop_figure_alt
from course_utils.tools.solutions import (
    BEGIN,
    END,
    NEAR_MARKER,
    ExerciseFormatError,
    Region,
    split_cell,
)

__all__ = [
    "ANSWER_STUB",
    "CODE_STUB",
    "NBFORMAT_VERSION",
    "notebook_text",
    "strip_solutions",
    "write_notebook",
]

CODE_STUB = "raise NotImplementedError  # your code here"
ANSWER_STUB = "_Write your answer here._"
NBFORMAT_VERSION = 4


def _stubbed(source: str, stub: str, where: str) -> tuple[str, int]:
    """One cell's source with every marked region replaced by ``stub``; and how many."""
    pieces = split_cell(source, where)
    lines = [piece if isinstance(piece, str) else piece.indent + stub for piece in pieces]
    return "\n".join(lines), sum(isinstance(piece, Region) for piece in pieces)


def strip_solutions(
    notebook: nbformat.NotebookNode, name: str = "notebook"
) -> nbformat.NotebookNode:
    """Return a student copy of ``notebook``: solutions replaced, outputs cleared."""
    student = copy.deepcopy(notebook)
    total = 0
    for index, cell in enumerate(student.cells):
        where = f"{name}, cell {index}"
        if cell.cell_type == "code":
            cell.source, regions = _stubbed(cell.source, CODE_STUB, where)
            cell.outputs = []
            cell.execution_count = None
        elif cell.cell_type == "markdown":
            cell.source, regions = _stubbed(cell.source, ANSWER_STUB, where)
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
