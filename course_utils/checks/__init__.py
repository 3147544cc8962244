"""Exercise checks: what students call in their notebooks and instructors grade with.

A check takes the student's *function* (not a number), runs it on the exercise's inputs
and on fresh ones, and returns a :class:`CheckResult` with points and a message that
says what is wrong (shape, sum, which entry) without printing the answer.

Checks never raise: an untouched exercise (``raise NotImplementedError``), a crash inside
the student's code, or a missing function all give 0 points and a message.

A check can also insist on the student's own work (``own_work=``): a function that uses the
library modules holding the answer gets 0 points and is told to write it itself (see
:mod:`course_utils.checks.own_work`). :func:`try_run` lets a notebook show what a student's
function returns on the exercise's inputs without stopping at a part that is not done yet, so
that Run All reaches every check and the score.

Under ``course-grade`` a check runs in two halves (:mod:`course_utils.checks.probes`):
:meth:`Check.probe` in the student's kernel records the raw results of the student's function
on this run's inputs, and :meth:`Check.judge` in the grader's process runs the same body on
those recorded results, computing the expected answers itself. A check body therefore calls the
student's function only through the function it is given, draws random inputs with
:func:`~course_utils.checks.probes.fresh_seed`, and computes an expected answer only after the
student's function has returned it.

A part whose input is the student's *class* rather than a function (E10.2's decoder, E10.4's
rank-limited score) names an ``adapt``: in the kernel it turns the class into a function of
plain data (sizes and arrays in, arrays out) that builds and runs the student's module, and the
body is written against that function, so that it too is judged in the grader.

Each exercise is an :class:`Exercise` that registers its checks and its manually graded
questions; :func:`get_exercise` finds it by id (``"E10.1"``), and
:meth:`Exercise.grade` runs every check against a notebook's namespace.
:func:`nbgrader_points` runs one part's check in an nbgrader test cell (see
:mod:`course_utils.tools.nbgrader`).

Where things are: :mod:`~course_utils.checks.framework` (``Check``, ``Exercise``, finding an
exercise), :mod:`~course_utils.checks.calling` (calling the student's code, ``CheckFailed``),
:mod:`~course_utils.checks.probes` (the kernel's and the grader's halves),
:mod:`~course_utils.checks.own_work` (spotting the reference in a student's function),
:mod:`~course_utils.checks.hints` (naming a known mistake), and one folder per exercise
(``e10_1/`` ... ``e10_4/``: its checks in ``__init__``, its own helpers beside them, and the
grader's ``hidden`` answers, which no handout carries), registered by their names
(:mod:`~course_utils.checks.registry`: ``exercise_ids``, ``notebook_of``, ``load_hidden``).
This file only gathers their public names.
"""

from course_utils.checks.calling import (
    NOT_IMPLEMENTED,
    CheckFailed,
    call_student,
    student_line,
    try_run,
)
from course_utils.checks.framework import (
    Check,
    CheckResult,
    Exercise,
    ManualQuestion,
    get_exercise,
    nbgrader_points,
)
from course_utils.checks.registry import exercise_ids, notebook_of

__all__ = [
    "NOT_IMPLEMENTED",
    "Check",
    "CheckFailed",
    "CheckResult",
    "Exercise",
    "ManualQuestion",
    "call_student",
    "exercise_ids",
    "get_exercise",
    "nbgrader_points",
    "notebook_of",
    "student_line",
    "try_run",
]
