"""The grader judges: each part's points, decided in the grader's own process from the raw
results the kernel reported, never from points the kernel claims.

``course-grade --jobs N`` supervises N submissions in threads of one process, and each thread
judges its own submission. A judge runs the check's body again, and with it library code that
is not written for threads (PyTorch's global generator, matplotlib's figures): judges take turns
(:data:`JUDGING`). Each is short beside the notebook run it follows.

A part judged on a record of the student's own run (:mod:`course_utils.checks.records`: a
trained model the grader never has) is judged on the record saved in the submitted file, read
by :func:`saved_records` before the notebook runs again; the re-run's own records are never
read."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

from course_utils.checks import get_exercise
from course_utils.checks.records import records_in, submitted
from course_utils.tools.grading.results import PART, GradeResult, cut

__all__ = ["JUDGING", "add_parts", "handed_in", "saved_records"]

#: Held while a part is judged: one judge at a time in the grader's process.
JUDGING = threading.Lock()


def saved_records(path: Path, exercise_id: str) -> dict[str, object]:
    """The records of ``exercise_id``'s parts saved in the submitted notebook at ``path``
    (:func:`~course_utils.checks.records.records_in`); none when it cannot be read."""
    try:
        notebook = json.loads(Path(path).read_bytes().decode("utf-8-sig"))
    except (OSError, ValueError):
        return {}
    return records_in(notebook, exercise_id)


def handed_in(records: dict[str, object]) -> dict[str, str]:
    """Each record in a line for the instructor's page: ``sentence -> German`` (a record of a
    translation), or that it cannot be read."""
    lines = {}
    for part, record in records.items():
        sentence = record.get("sentence") if isinstance(record, dict) else None
        german = record.get("output_tokens") if isinstance(record, dict) else None
        if isinstance(sentence, str) and isinstance(german, list) and all(
                isinstance(word, str) for word in german):
            lines[part] = cut(f"{sentence} -> {' '.join(german)}")
        else:
            lines[part] = "(a record that cannot be read)"
    return lines


def add_parts(result: GradeResult, exercise_id: str, lines: list[str],
              seed: int | None = None, records: dict[str, object] | None = None) -> None:
    """Each part's points, decided here in the grader from the raw results the kernel
    reported (:meth:`Check.judge`): the expected answers are computed in this process, on the
    inputs of ``seed``, and a part judged on a record reads it from ``records`` (those saved in
    the submission: :func:`saved_records`); a part this exercise does not have is ignored, the
    first report of a part is the only one read, and points are clamped to [0, the part's
    maximum]."""
    exercise = get_exercise(exercise_id)
    for line in lines:
        if not line.startswith(PART):
            continue
        try:
            part = json.loads(line[len(PART):])
            name = str(part["name"])
        except (ValueError, KeyError, TypeError):
            continue
        check = exercise.checks.get(name)
        if check is None or name in result.points:
            continue
        try:
            with JUDGING, submitted(records or {}):
                judged = check.judge(part.get("probe"), seed)
            points = float(judged.points)
            message = judged.message
        except Exception as error:  # a record the judge cannot read: no points
            points, message = 0.0, f"the kernel's report could not be judged: {error!r}"
        result.points[name] = min(max(points, 0.0), check.points) if math.isfinite(points) \
            else 0.0
        result.messages[name] = cut(message)
