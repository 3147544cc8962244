"""What the class got wrong: per part, how many students made each mistake, with one example.

The checks already name the mistakes students make ("you scaled the weights, after the
softmax", "the product runs over the wrong axis"). Over a whole class those messages say what
to re-teach the next day. :func:`class_mistakes` groups every part that lost points by its
message, with the numbers of this run's inputs (shapes, sizes, values) folded away so that the
same mistake on other inputs counts once, and the student's own words after "raised
SomeError" left out. :func:`write_class_report` writes it beside the histogram as
``mistakes.csv`` and ``mistakes.html``; students are counted, never named: each row's example is
one student's message, without their id. Beside them, for grading the written questions by hand,
``answers.html`` (:mod:`.answers`) sets every student's answers side by side.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course_utils.files import write_text_atomically
from course_utils.tools.grading.answers import write_answers_page
from course_utils.tools.grading.marks import Marking
from course_utils.tools.grading.results import GradeResult, cut
from course_utils.tools.grading.spreadsheet import spreadsheet_text

__all__ = ["Mistake", "class_mistakes", "mistake_of", "write_class_report"]

#: A part a notebook never reached: it is counted too, under this name.
NOT_REACHED = "not graded: the notebook did not run to the checks"

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_RAISED = re.compile(r"^(.*?\braised \w+(?:Error|Exception|Exit|Interrupt)?)")


def mistake_of(message: str) -> str:
    """The mistake a check's message names, the same for every student who made it: numbers
    become ``#``, and after "raised SomeError" the error's own text is dropped."""
    text = " ".join(str(message).split())
    raised = _RAISED.match(text)
    if raised:
        text = raised.group(1) + ": ..."
    return cut(_NUMBER.sub("#", text), 300)


@dataclass(frozen=True)
class Mistake:
    """One named mistake of one part: how many students made it, of how many graded."""

    part: str
    mistake: str
    students: int
    graded: int
    example: str  # one student's message, as they saw it (no id; at most MESSAGE_CHARS)

    @property
    def share(self) -> float:
        return self.students / self.graded if self.graded else 0.0


def class_mistakes(exercise: Any, results: list[GradeResult]) -> list[Mistake]:
    """Every mistake of every automatically graded part, most frequent first within a part
    (parts in the exercise's order). A submission counts once per part; "graded" counts the
    submissions that reached the checks (status ``graded``)."""
    graded = [r for r in results if r.status == "graded"]
    by_student = sorted(results, key=lambda r: r.student)  # the example: the first by id
    rows: list[Mistake] = []
    for name, check in exercise.checks.items():
        groups: dict[str, list[str]] = defaultdict(list)
        for result in by_student:
            if result.points.get(name, 0.0) >= check.points:
                continue
            message = result.messages.get(name) or NOT_REACHED
            groups[mistake_of(message)].append(message)
        for mistake, messages in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            rows.append(Mistake(name, mistake, len(messages), len(graded),
                                messages[0]))
    return rows


def write_class_report(out: Path, exercise: Any, results: list[GradeResult],
                       marking: Marking | None = None) -> list[Mistake]:
    """``out/mistakes.csv`` and ``out/mistakes.html``, atomically, and ``out/answers.html``
    (:func:`.answers.write_answers_page`, with the marks of ``marking``); returns the
    mistakes' rows."""
    rows = class_mistakes(exercise, results)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["part", "mistake", "students", "of graded", "share", "example"])
    for row in rows:
        writer.writerow([row.part, spreadsheet_text(row.mistake), row.students, row.graded,
                         f"{row.share:.2f}", spreadsheet_text(row.example)])
    write_text_atomically(Path(out) / "mistakes.csv", buffer.getvalue())
    write_text_atomically(Path(out) / "mistakes.html", _page(exercise, results, rows))
    if exercise.manual:  # and the written answers, side by side (they name the students)
        write_answers_page(Path(out), exercise, results, marking=marking)
    return rows


def _page(exercise: Any, results: list[GradeResult], rows: list[Mistake]) -> str:
    e = html.escape
    graded = sum(r.status == "graded" for r in results)
    parts = []
    for name, check in exercise.checks.items():
        mine = [row for row in rows if row.part == name]
        full = sum(r.points.get(name, 0.0) >= check.points for r in results)
        body = "".join(
            f"<tr><td>{e(row.mistake)}</td><td class='n'>{row.students}</td>"
            f"<td class='n'>{row.share:.0%}</td><td>{e(row.example)}</td></tr>" for row in mine)
        parts.append(
            f"<h2>{e(name)} ({check.points:g} points)</h2>"
            f"<p>{full} of {len(results)} submissions scored full marks on this part.</p>"
            + (f"<table><caption>Mistakes in part {e(name)}, most frequent first</caption>"
               "<tr><th scope='col'>mistake</th><th scope='col'>students</th>"
               "<th scope='col'>share of graded</th><th scope='col'>one example</th></tr>"
               f"{body}</table>" if mine else "<p>No mistakes.</p>"))
    return ("<!doctype html><html lang='en'><meta charset='utf-8'>"
            f"<title>{e(exercise.id)}: what the class got wrong</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}"
            "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top;text-align:left}"
            "td.n{text-align:right}table{border-collapse:collapse}"
            "caption{text-align:left;font-style:italic}</style>"
            f"<h1>{e(exercise.id)}: what the class got wrong</h1>"
            f"<p>{len(results)} submissions, {graded} of them graded. Each part's mistakes are "
            "grouped by the check's message (numbers folded away); students are counted, not "
            "named.</p>" + "".join(parts))
