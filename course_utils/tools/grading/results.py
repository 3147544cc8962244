"""What every module of the grader shares: a submission's result, its statuses, the markers of
the worker's report, and the caps on what a submission may make the grader keep."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["MARKER", "MESSAGE_CHARS", "NO_KERNEL", "NOTES", "PART", "PROBE_BYTES", "REPORT_BYTES",
           "STATUSES", "GradeResult", "cut"]

MARKER = "@@COURSE-GRADE@@"  # a probe cell's output line, followed by that cell's tag
PART = "@@COURSE-GRADE-PART@@"  # the worker streams each part's result as soon as it has it
#: How a report begins the note that its kernel never started: a grader error, graded once more.
NO_KERNEL = "the kernel did not start"
STATUSES = ("graded", "timeout", "memory", "crashed", "not a notebook", "grader error")

MESSAGE_CHARS = 400  # a check's message or a note, at most: a 5 MB exception makes no 5 MB file
PROBE_BYTES = 4_000_000  # one part's raw results, at most: more is not an answer to any check
NOTES = 30  # notes kept per submission (a notebook of 10,000 failing cells makes no 10,000)
REPORT_BYTES = 64_000_000  # all a worker may report; the rest is read and dropped


@dataclass
class GradeResult:
    student: str
    status: str
    points: dict[str, float] = field(default_factory=dict)  # check name -> points
    messages: dict[str, str] = field(default_factory=dict)  # check name -> feedback
    notes: list[str] = field(default_factory=list)  # cell errors, limits hit
    seconds: float = 0.0
    answers: dict[str, str] = field(default_factory=dict)  # written question -> its text
    #: written question -> the fingerprint of its whole answer (:func:`.marks.fingerprint`)
    fingerprints: dict[str, str] = field(default_factory=dict)
    #: part judged on a record of the student's own run -> what the record holds, in a line
    #: (:func:`.judge.handed_in`)
    picks: dict[str, str] = field(default_factory=dict)

    def total(self) -> float:
        """The automatic points (:meth:`.marks.Marking.total` adds the written ones)."""
        return sum(self.points.values())


def cut(text: object, limit: int = MESSAGE_CHARS) -> str:
    """``text`` as a string of at most ``limit`` characters, saying how long it was."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 30] + f"... ({len(text):,} characters)"
