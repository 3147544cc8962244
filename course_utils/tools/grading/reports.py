"""What the grader writes, atomically: the gradebook (``grades.csv``), one feedback file per
student (Markdown and HTML), the histogram of the points; and the summary it prints. Text that
quotes a student (ids, messages, errors) or the instructor (comments) can make no formula,
HTML, link or table cell. The written answers' marks come from ``marks.csv`` (:mod:`.marks`)."""

from __future__ import annotations

import csv
import html
import io
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from course_utils.checks import get_exercise
from course_utils.files import atomic_path, write_text_atomically
from course_utils.tools.grading.marks import CHANGED, NEEDS_MARKING, Marking
from course_utils.tools.grading.results import GradeResult
from course_utils.tools.grading.spreadsheet import spreadsheet_text

__all__ = ["gradebook_status", "marks_summary", "spreadsheet_text", "summary", "write_feedback",
           "write_gradebook", "write_histogram"]


def gradebook_status(result: GradeResult, marking: Marking) -> str:
    """The gradebook's status: the run's (``graded``, ``timeout``, ...), except that a graded
    notebook with written answers not marked yet is ``needs marking``."""
    if result.status == "graded" and marking.in_state(result.student, NEEDS_MARKING):
        return NEEDS_MARKING
    return result.status


def write_gradebook(path: Path, exercise: Any, results: list[GradeResult],
                    marking: Marking | None = None) -> None:
    """One row per submission: student id, one column per check, one per written question
    (its mark from ``marking``, empty until marked), total (both kinds of points), maximum,
    status (:func:`gradebook_status`), the written answers' state (``marked``, or which
    need marking or changed since marked), notes."""
    marking = marking or Marking.unmarked(exercise)
    checks, manual = list(exercise.checks), list(exercise.manual)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", *checks, *(f"{m} (manual)" for m in manual), "total",
                     "max", "status", "written", "notes"])
    for r in results:
        given = [marking.mark(r.student, m).points for m in manual]
        writer.writerow([spreadsheet_text(r.student), *(f"{r.points.get(c, 0):g}" for c in checks),
                         *("" if p is None else f"{p:g}" for p in given),
                         f"{marking.total(r):g}", f"{exercise.max_points:g}",
                         gradebook_status(r, marking), marking.summary_of(r.student),
                         spreadsheet_text(" | ".join(r.notes))])
    write_text_atomically(path, buffer.getvalue())


_MARKDOWN_SPECIAL = re.compile(r"([\\\[\]|])")


def _md(text: str) -> str:
    """Text that may quote the student (ids, messages, errors) on one Markdown line: no HTML,
    links, images or table cells can come out of it (code spans and emphasis may). ``&``,
    ``<`` and ``>`` become entities, which every Markdown renderer shows as text (a backslash
    before ``<`` is not an escape in all of them); ``\\ [ ] |`` get a backslash; line breaks
    fold into spaces, so a message stays in its table row."""
    escaped = html.escape(" ".join(str(text).split()), quote=False)
    return _MARKDOWN_SPECIAL.sub(r"\\\1", escaped)


def _feedback_items(exercise: Any, result: GradeResult, marking: Marking
                    ) -> list[tuple[str, str, str]]:
    items = []
    for name, check in exercise.checks.items():
        points = result.points.get(name, 0)
        message = result.messages.get(name) or "not graded: the notebook did not run to the checks"
        items.append((name, f"{points:g} / {check.points:g}", message))
    for name, question in exercise.manual.items():
        mark = marking.mark(result.student, name)
        if mark.points is None:
            items.append((name, f"- / {question.points:g}", "not marked yet (graded by your "
                          "instructor): " + question.prompt))
            continue
        when = ", before your answer last changed" if mark.state == CHANGED else ""
        items.append((name, f"{mark.points:g} / {question.points:g}",
                      f"marked by your instructor{when}: " + (mark.comment or "no comment")))
    return items


def _points_lines(exercise: Any, result: GradeResult, marking: Marking
                  ) -> list[tuple[str, str]]:
    """The points in words: automatic, written (how many marked), total."""
    left = len(marking.in_state(result.student, NEEDS_MARKING))
    count = len(exercise.manual)
    return [("Automatic points", f"{result.total():g} / {exercise.auto_points:g}"),
            ("Written answers", f"{marking.written(result.student):g} / "
             f"{exercise.max_points - exercise.auto_points:g} ({count - left} of {count} marked"
             + (", the others not yet" if left else "") + ")"),
            ("Total", f"{marking.total(result):g} / {exercise.max_points:g}"
             + (" so far" if left else ""))]


def write_feedback(folder: Path, exercise: Any, result: GradeResult,
                   marking: Marking | None = None) -> None:
    """``folder/<student>.md`` and ``folder/<student>.html``: the points and message of each
    part, each written answer's mark and the instructor's comment (or "not marked yet"), and
    the notes from running the notebook."""
    marking = marking or Marking.unmarked(exercise)
    items = _feedback_items(exercise, result, marking)
    points = _points_lines(exercise, result, marking)
    md = [f"# {exercise.id}: {exercise.title}", "", f"Student: {_md(result.student)}  ",
          f"Status: **{result.status}**  ", *(f"{what}: **{value}**  " for what, value in points),
          "", "| part | points | feedback |", "|---|---|---|"]
    md += [f"| {n} | {p} | {_md(m)} |" for n, p, m in items]
    if result.notes:
        md += ["", "## While running your notebook", ""] + [f"- {_md(note)}"
                                                             for note in result.notes]
    write_text_atomically(folder / f"{result.student}.md", "\n".join(md) + "\n")
    rows = "".join(f"<tr><td>{html.escape(n)}</td><td>{html.escape(p)}</td>"
                   f"<td>{html.escape(m)}</td></tr>" for n, p, m in items)
    notes = "".join(f"<li>{html.escape(note)}</li>" for note in result.notes)
    said = "".join(f"<br>{what}: <b>{html.escape(value)}</b>" for what, value in points)
    page = (f"<!doctype html><meta charset='utf-8'><title>{html.escape(exercise.id)} "
            f"feedback: {html.escape(result.student)}</title>"
            "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto}"
            "td,th{border:1px solid #ccc;padding:.3em .6em;vertical-align:top}"
            "table{border-collapse:collapse}</style>"
            f"<h1>{html.escape(exercise.id)}: {html.escape(exercise.title)}</h1>"
            f"<p>Student: <code>{html.escape(result.student)}</code><br>"
            f"Status: <b>{html.escape(result.status)}</b>{said}</p>"
            f"<table><tr><th>part</th><th>points</th><th>feedback</th></tr>{rows}</table>"
            + (f"<h2>While running your notebook</h2><ul>{notes}</ul>" if notes else ""))
    write_text_atomically(folder / f"{result.student}.html", page)


def write_histogram(path: Path, exercise: Any, results: list[GradeResult]) -> None:
    """A PNG histogram of the automatic points."""
    # a Figure of its own, not pyplot: no backend switch and no global state in the caller's
    # process (an instructor may grade from a notebook that shows its own plots)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.4), layout="constrained")
    ax = fig.subplots()
    totals = [r.total() for r in results]
    ax.hist(totals, bins=[x - 0.5 for x in range(int(exercise.auto_points) + 2)],
            color="tab:blue", edgecolor="white")
    ax.set(xlabel=f"automatic points (of {exercise.auto_points:g})", ylabel="students",
           title=f"{exercise.id}: {len(results)} submissions")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)


def summary(exercise_id: str, results: list[GradeResult]) -> str:
    """What ``course-grade`` prints: the points' spread and the notebooks that did not run
    cleanly."""
    exercise = get_exercise(exercise_id)
    totals = [r.total() for r in results]
    statuses = Counter(r.status for r in results)
    failed = sum(n for s, n in statuses.items() if s != "graded")
    lines = [f"{len(results)} submissions graded for {exercise_id} "
             f"(automatic points out of {exercise.auto_points:g})"]
    if totals:
        lines.append(f"mean {statistics.mean(totals):.2f}, median {statistics.median(totals):g}, "
                     f"min {min(totals):g}, max {max(totals):g}")
        lines.append("distribution: " + ", ".join(
            f"{points:g}: {n}" for points, n in sorted(Counter(totals).items())))
    problems = ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items()) if s != "graded")
    lines.append(f"did not run cleanly: {failed}" + (f" ({problems})" if failed else ""))
    errors = sum(1 for r in results if r.status == "graded"
                 and any(" raised " in note for note in r.notes))
    if errors:
        lines.append(f"graded, but with cells that raised an error: {errors} (see the notes "
                     "column and the feedback)")
    return "\n".join(lines)


def marks_summary(record: dict | None) -> list[str]:
    """What ``course-grade`` says of the written answers' marks, from the record's
    ``marks`` (:meth:`.marks.Marking.as_record`)."""
    if not record:
        return []

    def listed(by_student: dict[str, list[str]]) -> str:
        names = [f"{s} ({', '.join(q)})" for s, q in sorted(by_student.items())]
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    lines = [f"written answers: {record['marked']} of {record['answers']} marked in "
             f"{record['file']}" + (f"; to mark: {listed(record['needs_marking'])}"
                                    if record["needs_marking"] else "")]
    if record["changed"]:
        count = sum(map(len, record["changed"].values()))
        lines.append(f"{CHANGED}: {count} ({listed(record['changed'])}); the marks are kept: "
                     "re-read the answers, then empty their fingerprint cells")
    if record["no_submission"]:
        lines.append(f"kept the marks of students with no submission: "
                     f"{', '.join(record['no_submission'])}")
    return lines
