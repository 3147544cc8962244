"""The written answers' marks: ``marks.csv``, the one place where they live.

The checks grade code; the written questions (a third of the course's points) are marked by the
instructor. ``course-grade`` keeps one row per student and written question in ``marks.csv``
beside the gradebook (:data:`COLUMNS`): it creates the file, adds the rows of new students and
questions, and keeps three cells of its own up to date (``max``; ``fingerprint``, a short
SHA-256 of the answer as it was when marked; ``flag``). The instructor types ``points`` and
``comment``, in any spreadsheet, and adds columns of their own if they like: those cells are
never changed, nor is any byte of the file the grader has no reason to touch
(:mod:`.spreadsheet`). Every run reads the file (:func:`read_marks`) before it grades and again
before it writes, and a file that is not right (points above the maximum, negative or not a
number, an unknown student or question, a row given twice) stops it with the file, row and
column named, before anything is written.

:func:`reconcile` then sets each answer's state (:data:`MARKED`, :data:`NEEDS_MARKING`, or
:data:`CHANGED` when the student's answer differs from the one marked: the mark is kept and
flagged), and gives the file's new text. The :class:`Marking` it returns is what the gradebook,
feedback, answers page and LMS export read: a total with the written points in it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course_utils.files import atomic_path
from course_utils.tools.grading.results import GradeResult
from course_utils.tools.grading.spreadsheet import (
    Row,
    Sheet,
    SheetError,
    from_spreadsheet_text,
    parse,
    spreadsheet_text,
)

__all__ = ["CHANGED", "COLUMNS", "MARKED", "MARKS", "NEEDS_MARKING", "NO_ANSWER",
           "NO_SUBMISSION", "Mark", "Marking", "MarksError", "MarksFile", "MarksSource",
           "fingerprint", "read_marks", "reconcile", "save_marks"]

#: The marks file's name in an output folder (``course-grade --marks`` names another).
MARKS = "marks.csv"
#: Its columns, in the order the grader writes them; any order, and more, are read.
COLUMNS = ("student", "question", "points", "max", "comment", "fingerprint", "flag")

MARKED = "marked"
NEEDS_MARKING = "needs marking"
CHANGED = "answer changed since marked"
#: The flag on the rows of a student whose submission is gone: the rows are kept.
NO_SUBMISSION = "no submission"
#: The fingerprint of an empty answer (the stub left as it was, or no notebook).
NO_ANSWER = "(no answer)"


class MarksError(ValueError):
    """A marks file that is not right; the message names the file, row and column."""


def fingerprint(answer: str) -> str:
    """A short SHA-256 of ``answer`` with its whitespace runs folded (re-wrapping a line does
    not change it), or :data:`NO_ANSWER`. It starts with letters, so no spreadsheet takes it for
    a number."""
    words = " ".join(unicodedata.normalize("NFC", answer).split())
    if not words:
        return NO_ANSWER
    return "sha256:" + hashlib.sha256(words.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Mark:
    """One written answer's mark: the points (``None``: not marked yet), the instructor's
    comment, and its state (:data:`MARKED`, :data:`NEEDS_MARKING` or :data:`CHANGED`)."""

    points: float | None = None
    comment: str = ""
    state: str = NEEDS_MARKING


@dataclass(frozen=True)
class Marking:
    """The marks of one gradebook's students: ``(student, question) -> Mark``."""

    questions: dict[str, float]  # each written question -> its maximum
    marks: dict[tuple[str, str], Mark] = field(default_factory=dict)
    file: str = MARKS
    absent: tuple[str, ...] = ()  # students with rows in the file but no submission

    @classmethod
    def unmarked(cls, exercise: Any) -> Marking:
        """No marks at all (no marks file was read)."""
        return cls({name: q.points for name, q in exercise.manual.items()})

    def mark(self, student: str, question: str) -> Mark:
        return self.marks.get((student, question), Mark())

    def written(self, student: str) -> float:
        """The written points ``student`` has been given so far."""
        return sum(self.mark(student, q).points or 0.0 for q in self.questions)

    def total(self, result: GradeResult) -> float:
        """Automatic and written points together."""
        return result.total() + self.written(result.student)

    def in_state(self, student: str, state: str) -> list[str]:
        return [q for q in self.questions if self.mark(student, q).state == state]

    def summary_of(self, student: str) -> str:
        """``marked``, or what is left: ``needs marking: why``, ``answer changed since
        marked: predict`` (both, separated by ``;``)."""
        parts = [f"{state}: {', '.join(names)}" for state in (NEEDS_MARKING, CHANGED)
                 if (names := self.in_state(student, state))]
        return "; ".join(parts) or (MARKED if self.questions else "")

    def as_record(self, students: list[str]) -> dict:
        """What ``results.json`` keeps of the marking (:func:`.reports.marks_summary` says
        it)."""
        return {"file": self.file, "answers": len(students) * len(self.questions),
                "marked": sum(self.mark(s, q).state != NEEDS_MARKING
                              for s in students for q in self.questions),
                **{key: {s: names for s in students if (names := self.in_state(s, state))}
                   for key, state in (("needs_marking", NEEDS_MARKING), ("changed", CHANGED))},
                "no_submission": list(self.absent)}


@dataclass(frozen=True)
class MarksSource:
    """Where a run's marks come from: the file, the students with a submission (the whole
    folder's, for a shard), and whether this run writes the file (a shard only reads it)."""

    path: Path
    present: frozenset[str]
    writable: bool = True


@dataclass(frozen=True)
class MarksFile:
    """A marks file as read and found good: its text, and each row's mark by key."""

    path: Path
    sheet: Sheet
    column: dict[str, int]  # column name -> index
    rows: dict[tuple[str, str], Row]
    points: dict[tuple[str, str], float | None]
    present: frozenset[str]
    original: str = ""  # the file's text as read ('' when there was none)


def _recorded(folder: Path) -> set[str]:
    """The students of the last gradebook written in ``folder`` (its ``results.json``)."""
    try:
        record = json.loads((folder / "results.json").read_text())
        return {str(r["student"]) for r in record["results"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def _points(text: str, maximum: float, question: str) -> tuple[float | None, str | None]:
    """The points in a cell (``None`` when empty), or why they are not right."""
    if not text:
        return None, None
    try:
        value = float(text.replace(",", ".") if text.count(",") == 1 and "." not in text
                      else text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        return None, (f"{text!r} is not a number (write the points, e.g. 1 or 1.5, or leave "
                      "the cell empty until you mark the answer)")
    if value < 0:
        return None, f"{text} is negative; the points run from 0 to {maximum:g}"
    if value > maximum:
        return None, f"{text} is above the maximum {maximum:g} for {question!r}"
    return value, None


def read_marks(path: Path, exercise: Any, present: Iterable[str]) -> MarksFile:
    """``path`` read and checked against ``exercise`` and the students with a submission
    (``present``; with those of the last gradebook beside the file, and rows the grader flagged
    :data:`NO_SUBMISSION`, a student is known); no file is an empty one. Raises
    :class:`MarksError` naming every row and column that is not right."""
    path, present = Path(path), frozenset(present)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = b""
    except OSError as error:
        raise MarksError(f"{path}: cannot be read ({error.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MarksError(f"{path}: not UTF-8 text (byte {error.start}); save it as "
                         "\"CSV UTF-8\"") from None
    try:
        sheet = parse(text if text.lstrip("\ufeff").strip() else "", COLUMNS[:2])
    except SheetError as error:
        raise MarksError(f"{path}, {error}") from None
    if not sheet.rows:
        return MarksFile(path, sheet, {c: i for i, c in enumerate(COLUMNS)}, {}, {}, present,
                         text)
    header = sheet.header
    missing = [c for c in COLUMNS if c not in header]
    twice = sorted({c for c in COLUMNS if header.count(c) > 1})
    if missing or twice:
        raise MarksError(f"{path}, row 1: the header must name each of the columns "
                         f"{', '.join(COLUMNS)} once (other columns are kept as they are); "
                         + (f"missing {', '.join(missing)}" if missing else
                            f"given twice: {', '.join(twice)}"))
    column = {c: header.index(c) for c in COLUMNS}
    flagged = {from_spreadsheet_text(r.cell(column["student"]).strip()) for r in sheet.rows[1:]
               if r.cell(column["flag"]).strip() == NO_SUBMISSION}
    known = present | _recorded(path.parent) | flagged
    errors: list[str] = []
    rows: dict[tuple[str, str], Row] = {}
    points: dict[tuple[str, str], float | None] = {}
    for row in sheet.rows[1:]:
        where = f"{path}, row {row.number}, column"
        student = from_spreadsheet_text(row.cell(column["student"]).strip())
        question = row.cell(column["question"]).strip()
        if not (student or question or row.cell(column["points"]).strip()):
            continue  # an empty row, or a note of the instructor's in a column of their own
        if question not in exercise.manual:
            errors.append(f"{where} question: {question!r} is not a written question of "
                          f"{exercise.id} ({', '.join(exercise.manual)})")
            continue
        if not student:
            errors.append(f"{where} student: empty (whose answer is this row's?)")
            continue
        if student not in known:
            close = difflib.get_close_matches(student, sorted(present), n=1)
            errors.append(f"{where} student: {student!r} has no submission"
                          + (f" (did you mean {close[0]!r}?)" if close else ""))
            continue
        if (student, question) in rows:
            errors.append(f"{where} question: a second row for {student!r} and {question!r} "
                          f"(the first is row {rows[student, question].number}); keep one")
            continue
        value, why = _points(row.cell(column["points"]).strip(),
                             exercise.manual[question].points, question)
        if why:
            errors.append(f"{where} points: {why}")
        rows[student, question], points[student, question] = row, value
    if errors:
        raise MarksError("\n".join(errors))
    return MarksFile(path, sheet, column, rows, points, present, text)


def reconcile(file: MarksFile, exercise: Any, results: list[GradeResult]
              ) -> tuple[Marking, str]:
    """The marks of ``results``' written answers, and the marks file's new text: a row added
    for each student and question it lacks, and the grader's own cells (``max``,
    ``fingerprint``, ``flag``) brought up to date; every other byte as it was. An answer
    marked (``points`` given) whose fingerprint differs from the student's answer now keeps
    its mark and is flagged :data:`CHANGED`; until it is marked, a row's fingerprint follows
    the answer; an empty fingerprint cell beside a mark takes the answer's."""
    column = file.column
    cells: dict[tuple[int, int], str] = {}
    new_rows: list[list[str]] = []
    marks: dict[tuple[str, str], Mark] = {}
    width = len(file.sheet.header) or len(COLUMNS)

    def keep(row: Row, name: str, value: str) -> None:
        if row.cell(column[name]).strip() != value:
            cells[row.number, column[name]] = value

    for result in results:
        for name, question in exercise.manual.items():
            key = (result.student, name)
            now = result.fingerprints.get(name) or fingerprint(result.answers.get(name, ""))
            row = file.rows.get(key)
            if row is None:
                cells_of = [""] * width
                for column_name, value in (("student", spreadsheet_text(result.student)),
                                           ("question", name), ("max", f"{question.points:g}"),
                                           ("fingerprint", now)):
                    cells_of[column[column_name]] = value
                new_rows.append(cells_of)
                marks[key] = Mark()
                continue
            points, marked = file.points[key], row.cell(column["fingerprint"]).strip()
            state = (NEEDS_MARKING if points is None else
                     MARKED if marked in ("", now) else CHANGED)
            marks[key] = Mark(points, row.cell(column["comment"]).strip(), state)
            keep(row, "max", f"{question.points:g}")
            keep(row, "flag", CHANGED if state == CHANGED else "")
            if state != CHANGED:
                keep(row, "fingerprint", now)
    absent = sorted({student for student, _ in file.rows} - file.present)
    for (student, _), row in file.rows.items():
        if student in absent:
            keep(row, "flag", NO_SUBMISSION)
    if not file.sheet.rows:
        new_rows.insert(0, list(COLUMNS))
    marking = Marking({name: q.points for name, q in exercise.manual.items()}, marks,
                      str(file.path), tuple(absent))
    return marking, file.sheet.edited(cells, new_rows)


def save_marks(file: MarksFile, text: str) -> None:
    """Write ``text`` over the marks file atomically (a spreadsheet that has it open reads
    either the old file or the new one), unless it is what the file holds. A file saved by
    someone else since it was read is left as it is, and :class:`MarksError` says so."""
    if text == file.original:
        return
    with atomic_path(file.path) as tmp:
        tmp.write_bytes(text.encode("utf-8"))
        try:
            now = file.path.read_bytes()
        except FileNotFoundError:
            now = b""
        if now != file.original.encode("utf-8"):
            raise MarksError(f"{file.path} was changed while the grader was about to update it "
                             "(saved from a spreadsheet?); nothing was written: run again")
