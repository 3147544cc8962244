"""Grades an LMS imports: ``course-grade export``.

The gradebook is keyed by file name (``alice.ipynb`` is ``alice``); an LMS knows its students by
its own ids. A **roster**, a CSV the instructor writes (most easily from the LMS's own export,
with one column added), maps one to the other: a column ``submission`` with the grader's id
(:data:`ROSTER_ID`; not ``student``, which Canvas's export uses for the student's name), and the
LMS's identity columns, named as the LMS names them. :func:`export_grades` writes each
student's total (automatic and written points, :mod:`.marks`) in the import format of

- **Canvas** (Gradebook, Import): the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login
  ID``, ``Section`` (:data:`CANVAS_IDENTITY`; Canvas matches a row by ``ID``, ``SIS User ID`` or
  ``SIS Login ID``), then one column per assignment, ``Name (assignment id)`` when the id is
  known (a new assignment is created when no name matches), and an optional second row,
  ``Points Possible``, which Canvas's own export writes;
- **Moodle** (Grades, Import, CSV file): a column that identifies the user, mapped in the
  import dialog to its user field (``ID number``, ``Username`` or ``Email address``), beside
  ``First name`` and ``Last name`` where the roster has them (:data:`MOODLE_IDENTITY`), and a
  grade column mapped to the grade item;
- **plain**: ``student,score``, the LMS's id (a roster column, ``Email address`` unless told)
  and the total, which Gradescope and most others take.

Nobody is dropped silently (:class:`Export`): a graded student without a roster row, a roster
row without a gradebook row, and a student whose written answers are not all marked are each
listed and left out of the file (the last are exported with their points so far when
``partial``). A student left out keeps what the LMS has: an empty score would not (Moodle's
import reads an empty grade as "no grade" and clears one given before).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_utils.checks import get_exercise
from course_utils.tools.grading.marks import (
    CHANGED,
    MARKS,
    NEEDS_MARKING,
    Marking,
    read_marks,
    reconcile,
)
from course_utils.tools.grading.results import GradeResult
from course_utils.tools.grading.shards import read_record

__all__ = ["CANVAS_IDENTITY", "FORMATS", "MOODLE_IDENTITY", "PLAIN_ID", "ROSTER_ID", "Export",
           "ExportError", "Roster", "export_grades", "gradebook_of", "read_roster"]

FORMATS = ("canvas", "moodle", "plain")
#: Canvas's gradebook CSV: its first five columns, as its own export writes them.
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_MATCHED = ("ID", "SIS User ID", "SIS Login ID")
#: The second row of Canvas's export (optional on import): each assignment's maximum.
POINTS_POSSIBLE = "    Points Possible"
#: Moodle's user columns, as its grade export names them; the import maps one of the last three.
MOODLE_IDENTITY = ("First name", "Last name", "ID number", "Username", "Email address")
MOODLE_MATCHED = ("ID number", "Username", "Email address")
#: The roster's column that holds the grader's id: the notebook's name without ``.ipynb``.
ROSTER_ID = "submission"
#: The plain export's id column, unless ``id_column`` names another.
PLAIN_ID = "Email address"


class ExportError(ValueError):
    """A roster or request that cannot make an import file; says the file, row and column."""


@dataclass(frozen=True)
class Roster:
    """The instructor's roster: each grader's id -> its LMS columns (lower-cased names)."""

    path: Path
    columns: dict[str, str]  # lower-cased name -> as written
    students: dict[str, dict[str, str]]  # in the roster's order
    row_of: dict[str, int]  # student -> the row a spreadsheet shows (the header is row 1)


def read_roster(path: Path) -> Roster:
    """The roster at ``path``: a CSV with a :data:`ROSTER_ID` column (the grader's id, the
    notebook's file name without ``.ipynb``) and the LMS's columns."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise ExportError(f"{path}: cannot be read ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise ExportError(f"{path}: not UTF-8 text (byte {error.start}); save it as "
                          "\"CSV UTF-8\"") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise ExportError(f"{path}: empty; a roster has a header row with a column "
                          f"{ROSTER_ID!r}")
    columns = {name.strip().lower(): name.strip() for name in rows[0]}
    if ROSTER_ID not in columns:
        raise ExportError(f"{path}, row 1: no column {ROSTER_ID!r} (the grader's id: the "
                          f"notebook's file name without .ipynb); the columns are "
                          f"{', '.join(rows[0])}")
    header = [name.strip().lower() for name in rows[0]]
    students: dict[str, dict[str, str]] = {}
    row_of: dict[str, int] = {}
    for number, cells in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in cells):
            continue
        values = {name: (cells[i].strip() if i < len(cells) else "")
                  for i, name in enumerate(header)}
        student = values[ROSTER_ID]
        if not student:
            raise ExportError(f"{path}, row {number}, column {ROSTER_ID}: empty")
        if student in students:
            raise ExportError(f"{path}, row {number}, column {ROSTER_ID}: {student!r} again "
                              f"(first in row {row_of[student]})")
        students[student], row_of[student] = values, number
    return Roster(path, columns, students, row_of)


@dataclass(frozen=True)
class Export:
    """An import file's text and who is not in it, or not with a final score."""

    text: str
    exported: list[str]  # the grader's ids, in the roster's order
    not_in_roster: list[str] = field(default_factory=list)  # graded: no LMS id, not exported
    no_submission: list[str] = field(default_factory=list)  # in the roster only, not exported
    unmarked: list[str] = field(default_factory=list)  # not all marked: out unless partial
    changed: list[str] = field(default_factory=list)  # exported with a mark kept, flagged


def gradebook_of(folder: Path, marks: Path | None = None
                 ) -> tuple[Any, list[GradeResult], Marking]:
    """The exercise, results and marks of the gradebook in ``folder`` (an unsharded run's or a
    merge's output folder), with the marks as ``marks`` (default ``folder/marks.csv``) holds
    them now: marks typed since the last run count, the file is not changed."""
    record = read_record(Path(folder))
    if record.get("shard"):
        raise ExportError(f"{folder} holds shard {record['shard'][0]}/{record['shard'][1]} "
                          "only: export the folder `course-grade merge` wrote")
    exercise = get_exercise(str(record["exercise"]))
    try:
        results = [GradeResult(**data) for data in record["results"]]
    except (TypeError, KeyError):
        raise ExportError(f"{folder}/results.json holds results that are not ones") from None
    path = Path(marks) if marks is not None else Path(folder) / MARKS
    found = read_marks(path, exercise, {r.student for r in results})
    return exercise, results, reconcile(found, exercise, results)[0]


def _identity(roster: Roster, fmt: str, id_column: str | None) -> tuple[list[str], list[str]]:
    """The LMS columns the file carries (as the roster writes them) and those that identify a
    student (one must be filled in each row)."""
    if fmt == "canvas":
        carried, matched = list(CANVAS_IDENTITY), list(CANVAS_MATCHED)
    elif fmt == "moodle":
        carried = [c for c in MOODLE_IDENTITY if c.lower() in roster.columns]
        matched = [c for c in MOODLE_MATCHED if c.lower() in roster.columns][:1]
    else:
        wanted = id_column or PLAIN_ID
        if wanted.lower() not in roster.columns:
            raise ExportError(f"{roster.path}, row 1: no column {wanted!r} for the plain "
                              "export's student column; name one with --id-column (the roster "
                              f"has {', '.join(roster.columns.values())})")
        carried = matched = [roster.columns[wanted.lower()]]
    if not any(c.lower() in roster.columns for c in matched):
        raise ExportError(f"{roster.path}, row 1: a {fmt} import needs a column that "
                          f"identifies the student, one of {', '.join(matched or MOODLE_MATCHED)}"
                          f"; the roster has {', '.join(roster.columns.values())}")
    return carried, matched


def export_grades(exercise: Any, results: list[GradeResult], marking: Marking, roster: Roster,
                  fmt: str, *, assignment: str | None = None, assignment_id: str | None = None,
                  partial: bool = False, id_column: str | None = None) -> Export:
    """The import file, in ``fmt`` (one of :data:`FORMATS`), of ``results``' totals with the
    written marks of ``marking``, for the students of ``roster``. The grade column is named
    ``assignment`` (default: the exercise's id), with `` (assignment_id)`` for Canvas."""
    if fmt not in FORMATS:
        raise ExportError(f"the format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    carried, matched = _identity(roster, fmt, id_column)
    column = assignment or exercise.id
    if fmt == "canvas" and assignment_id:
        column += f" ({assignment_id})"
    by_student = {r.student: r for r in results}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(["student", "score"] if fmt == "plain" else [*carried, column])
    if fmt == "canvas":
        writer.writerow([POINTS_POSSIBLE, *[""] * (len(carried) - 1),
                         f"{exercise.max_points:g}"])
    exported: list[str] = []
    unmarked: list[str] = []
    changed: list[str] = []
    seen: dict[tuple[str, ...], str] = {}
    for student, values in roster.students.items():
        result = by_student.get(student)
        if result is None:
            continue
        key = tuple(values.get(c.lower(), "") for c in matched)
        where = f"{roster.path}, row {roster.row_of[student]}"
        if not any(key):
            raise ExportError(f"{where}: {student!r} has no {' or '.join(matched)}, by which "
                              f"{fmt} finds the student")
        if key in seen:
            raise ExportError(f"{where}: {student!r} has the same {' / '.join(matched)} as "
                              f"{seen[key]!r}")
        seen[key] = student
        left = marking.in_state(student, NEEDS_MARKING)
        unmarked += [student] if left else []
        changed += [student] if marking.in_state(student, CHANGED) else []
        if left and not partial:
            continue
        writer.writerow([*(values.get(c.lower(), "") for c in carried),
                         f"{marking.total(result):g}"])
        exported.append(student)
    return Export(buffer.getvalue(), exported,
                  not_in_roster=sorted(set(by_student) - set(roster.students)),
                  no_submission=[s for s in roster.students if s not in by_student],
                  unmarked=unmarked, changed=changed)
