"""The grader judges: each part's points, decided in the grader's own process from the raw
results the kernel reported, never from points the kernel claims.

``course-grade --jobs N`` supervises N submissions in threads of one process, and each thread
judges its own submission. A judge runs the check's body again, and with it library code that
is not written for threads (PyTorch's global generator, matplotlib's figures): judges take turns
(:data:`JUDGING`). Each is short beside the notebook run it follows."""

from __future__ import annotations

import json
import math
import threading

from course_utils.checks import get_exercise
from course_utils.tools.grading.results import PART, GradeResult, cut

__all__ = ["JUDGING", "add_parts"]

#: Held while a part is judged: one judge at a time in the grader's process.
JUDGING = threading.Lock()


def add_parts(result: GradeResult, exercise_id: str, lines: list[str],
              seed: int | None = None) -> None:
    """Each part's points, decided here in the grader from the raw results the kernel
    reported (:meth:`Check.judge`): the expected answers are computed in this process, on the
    inputs of ``seed``; a part this exercise does not have is ignored, the first report of a
    part is the only one read, and points are clamped to [0, the part's maximum]."""
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
            with JUDGING:
                judged = check.judge(part.get("probe"), seed)
            points = float(judged.points)
            message = judged.message
        except Exception as error:  # a record the judge cannot read: no points
            points, message = 0.0, f"the kernel's report could not be judged: {error!r}"
        result.points[name] = min(max(points, 0.0), check.points) if math.isfinite(points) \
            else 0.0
        result.messages[name] = cut(message)
