"""The worked solutions, read in one place: their markers, their graded cells, and what ships.

A worked solution, ``solutions/E10.1-<slug>.ipynb``, is the single source of an exercise. What
the student writes sits between two marker lines, in a code cell or a Markdown cell::

    def softmax(energies):
        ### BEGIN SOLUTION
        shifted = energies - energies.max()
        ...
        ### END SOLUTION

This module is the one reader of that format, for every tool that needs it:

- **the markers** (:data:`BEGIN`, :data:`END`) and a cell's **marked regions**
  (:func:`split_cell`, :func:`regions`, :func:`without_markers`), read strictly: markers come in
  pairs, unnested, each alone on its line, and a near-miss (``###BEGIN SOLUTION``, ``## begin
  solution``) is an :class:`ExerciseFormatError` naming the cell and the line, so that a typo
  can never let a solution through;
- **the course's folders** (:data:`SOLUTIONS`, :data:`EXERCISES`, :data:`NOTEBOOKS`, beside
  the package in :data:`course_utils.files.COURSE_FOLDER`) and an exercise's solution
  (:func:`solution_of`);
- **the graded cells**: the cells that define each graded part's function or class
  (:func:`defining_cells`), their worked code (:func:`worked_code`), the worked written answers
  (:func:`worked_written`), and the solution with those cells turned into the shortcuts a
  student would try (:func:`shortcuts`);
- **what a handout ships** (:func:`ships`): the package whole, but for the grader's hidden
  answers (:data:`course_utils.checks.registry.HIDDEN_FILES`), and no runs or caches.

Its readers: the student version and the nbgrader export (:mod:`.exercise_format`), the
handout (:mod:`.handout`), the one search for leaked answers (:mod:`.answer_search`), the site
(:func:`.book.answers_as_boxes`), the written answers' page (:mod:`.grading.answers`), the
stress benchmark and the tests.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import NamedTuple

import nbformat

from course_utils.checks.framework import get_exercise
from course_utils.checks.registry import HIDDEN_FILES, exercise_ids, notebook_of
from course_utils.files import COURSE_FOLDER

__all__ = ["BEGIN", "END", "EXERCISES", "NEAR_MARKER", "NOTEBOOKS",
           "NOT_SHIPPED", "SAMPLE", "SOLUTIONS", "ExerciseFormatError", "Region",
           "defining_cells", "left_out", "library_names", "regions", "shipped_modules", "ships",
           "shortcuts", "solution_of", "solved_exercises", "split_cell", "without_markers",
           "worked_code", "worked_written"]

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
#: Anything that looks like a marker: a comment or heading of "begin/end solution" in any
#: case or spacing. A line that matches this but is not exactly a marker is refused.
NEAR_MARKER = re.compile(r"(#|^\s*)\s*(begin|end)[\s_-]*solutions?\b", re.IGNORECASE)

#: The course's folders, beside the package: the worked solutions, the student versions made
#: from them, the lecture notebooks.
SOLUTIONS, EXERCISES, NOTEBOOKS = "solutions", "exercises", "notebooks"
#: Never shipped: runs, checkpoints, data files and caches, wherever they are (file or folder
#: names)...
NOT_SHIPPED = ("runs", "checkpoints", "*.pt", "*.gz", "__pycache__", "*.py[cod]",
               ".ipynb_checkpoints", "*.egg-info")
#: ... but for the package's Multi30k sample, package data that smoke-scale runs read.
SAMPLE = Path("course_utils", "multi30k_sample")


class ExerciseFormatError(ValueError):
    """A worked solution's markers cannot be read: the message names the cell and the line."""


class Region(NamedTuple):
    """One marked region of a cell: the line of its ``BEGIN`` marker (from 1), that marker's
    indentation, and the lines between the two markers."""

    line: int
    indent: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _near_miss(where: str, number: int, marker: str) -> ExerciseFormatError:
    return ExerciseFormatError(
        f"{where}, line {number}: {marker!r} looks like a solution marker but is not one; "
        f"write exactly {BEGIN!r} or {END!r} on a line of its own")


def split_cell(source: str, where: str = "the cell") -> list[str | Region]:
    """A cell's source in order: each line outside the marked regions (a string) and each
    region (a :class:`Region`). Raises :class:`ExerciseFormatError`, naming ``where`` and the
    line, for a marker out of place or a near-miss."""
    pieces: list[str | Region] = []
    opened: tuple[int, str] | None = None  # the open region's BEGIN line and indentation
    inside: list[str] = []
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if opened is not None:
                raise ExerciseFormatError(
                    f"{where}, line {number}: {BEGIN!r} inside the region opened on line "
                    f"{opened[0]}; close it with {END!r} first")
            opened, inside = (number, line[: len(line) - len(line.lstrip())]), []
        elif marker == END:
            if opened is None:
                raise ExerciseFormatError(f"{where}, line {number}: {END!r} without {BEGIN!r}")
            pieces.append(Region(opened[0], opened[1], tuple(inside)))
            opened = None
        elif marker.startswith("#") and NEAR_MARKER.search(marker):
            raise _near_miss(where, number, marker)
        elif BEGIN in line or END in line:
            raise ExerciseFormatError(
                f"{where}, line {number}: a marker must stand alone on its line; got {line!r}")
        elif NEAR_MARKER.search(line):
            raise _near_miss(where, number, marker)
        elif opened is None:
            pieces.append(line)
        else:
            inside.append(line)
    if opened is not None:
        raise ExerciseFormatError(f"{where}, line {opened[0]}: {BEGIN!r} is never closed")
    return pieces


def regions(source: str, where: str = "the cell") -> list[Region]:
    """The marked regions of a cell's source (:func:`split_cell`)."""
    return [piece for piece in split_cell(source, where) if isinstance(piece, Region)]


def without_markers(source: str) -> str:
    """``source`` with its marker lines left out and everything else kept, the regions' text
    included: what a reader of the worked solution reads. Never raises: any text is read."""
    return "\n".join(line for line in source.splitlines() if line.strip() not in (BEGIN, END))


def solution_of(exercise_id: str, course: Path = COURSE_FOLDER) -> Path:
    """The worked solution of ``exercise_id`` in ``course``."""
    return notebook_of(exercise_id, course / SOLUTIONS)


def solved_exercises(course: Path = COURSE_FOLDER) -> list[str]:
    """The registered exercises whose worked solution ``course`` holds, in the course's order."""
    held = {path.name.split("-", 1)[0] for path in (course / SOLUTIONS).glob("*.ipynb")}
    return [exercise_id for exercise_id in exercise_ids() if exercise_id in held]


def defining_cells(notebook: nbformat.NotebookNode, target: str
                   ) -> list[nbformat.NotebookNode]:
    """The code cells of ``notebook`` that define the function or class ``target`` (a ``def`` or
    ``class`` statement of that name, at any indentation)."""
    defines = re.compile(rf"^\s*(def|class)\s+{re.escape(target)}\b", re.M)
    return [cell for cell in notebook.cells
            if cell.cell_type == "code" and defines.search(cell.source)]


def worked_code(exercise_id: str, course: Path = COURSE_FOLDER) -> dict[str, list[str]]:
    """Each automatically graded part's worked code: the text of every marked region of the
    cells that define the function or class the part checks."""
    notebook = nbformat.read(solution_of(exercise_id, course), as_version=4)
    return {name: [region.text for cell in defining_cells(notebook, check.target)
                   for region in regions(cell.source) if region.lines]
            for name, check in get_exercise(exercise_id).checks.items()}


def worked_written(exercise_id: str, course: Path = COURSE_FOLDER) -> dict[str, str]:
    """The solution's worked written answers (its Markdown cells' marked regions), by cell."""
    cells = nbformat.read(solution_of(exercise_id, course), as_version=4).cells
    return {f"cell {index}": "\n".join(region.text for region in regions(cell.source))
            for index, cell in enumerate(cells)
            if cell.cell_type == "markdown" and regions(cell.source)}


def _module_name(path: Path, course: Path) -> str:
    parts = list(path.relative_to(course).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def library_names(course: Path = COURSE_FOLDER) -> dict[str, str]:
    """Every top-level function and class of the package (the library, its checks and tools,
    the hidden answers included) -> the module that defines it: what a lazy student would
    import."""
    names: dict[str, str] = {}
    for path in sorted((course / "course_utils").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                names.setdefault(node.name, _module_name(path, course))
    return names


def shortcuts(exercise_id: str, course: Path = COURSE_FOLDER
              ) -> dict[str, tuple[nbformat.NotebookNode, list[str]]]:
    """The shortcuts a student would try, each as ``(notebook, the parts it takes)``, made from
    the worked solution: every cell that defines a graded function or class replaced by

    - ``exec``: ``exec`` of that cell's own (correct) text, as ``exec(inspect.getsource(...))``
      of a library's copy would run it: code no cell of the notebook defines;
    - ``library``: an import of the library's object of the same name, where one exists.

    The parts a shortcut takes must score 0; the rest of the notebook is the honest solution."""
    exercise = get_exercise(exercise_id)
    library = library_names(course)
    made = {}
    for kind in ("exec", "library"):
        notebook = nbformat.read(solution_of(exercise_id, course), as_version=4)
        taken = []
        for name, check in exercise.checks.items():
            for cell in defining_cells(notebook, check.target):
                if kind == "exec":
                    cell.source = f"exec({cell.source!r})"
                elif check.target in library:
                    cell.source = f"from {library[check.target]} import {check.target}"
                else:
                    continue
                taken.append(name)
        if taken:
            made[kind] = (notebook, sorted(set(taken)))
    return made


def ships(relative: Path) -> bool:
    """Whether a handout carries this file or folder, given relative to the course folder:
    nothing of the grader's hidden answers (:data:`~course_utils.checks.registry.HIDDEN_FILES`)
    and no runs, checkpoints, data or caches (:data:`NOT_SHIPPED`), but the Multi30k sample
    (:data:`SAMPLE`). The handout copies by it and the answer search reads by it."""
    relative = Path(relative)
    if any(relative.match(pattern) for pattern in HIDDEN_FILES):
        return False
    if relative.parent == SAMPLE:
        return True
    return not any(fnmatch(part, pattern) for part in relative.parts for pattern in NOT_SHIPPED)


def left_out(course: Path) -> Callable[[str, list[str]], set[str]]:
    """The ``ignore`` of :func:`shutil.copytree` for a folder of ``course``: what does not
    ship (:func:`ships`)."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve().relative_to(Path(course).resolve())
        return {name for name in names if not ships(here / name)}

    return ignore


def shipped_modules(course: Path = COURSE_FOLDER) -> Iterator[Path]:
    """The package's modules that a handout of ``course`` carries (:func:`ships`)."""
    for path in sorted((course / "course_utils").rglob("*.py")):
        if ships(path.relative_to(course)):
            yield path
