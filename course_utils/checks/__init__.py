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
scores) names an ``adapt``: in the kernel it turns the class into a function of plain data
(sizes and arrays in, arrays out) that builds and runs the student's module, and the body is
written against that function, so that it too is judged in the grader.

Each exercise is an :class:`Exercise` that registers its checks and its manually graded
questions; :func:`get_exercise` finds it by id (``"E10.1"``), and
:meth:`Exercise.grade` runs every check against a notebook's namespace.
:func:`nbgrader_points` runs one part's check in an nbgrader test cell (see
:mod:`course_utils.tools.nbgrader`).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from course_utils.checks.own_work import module_files, references_to, watch_calls

__all__ = [
    "Check",
    "CheckFailed",
    "CheckResult",
    "Exercise",
    "ManualQuestion",
    "call_student",
    "get_exercise",
    "nbgrader_points",
    "student_line",
    "try_run",
]

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` with your code"


class CheckFailed(Exception):
    """Raised inside a check body: ``message`` for the student, ``points`` awarded anyway."""

    def __init__(self, message: str, points: float = 0.0) -> None:
        super().__init__(message)
        self.message = message
        self.points = points


@dataclass(frozen=True)
class CheckResult:
    exercise: str
    name: str
    points: float
    max_points: float
    message: str

    @property
    def passed(self) -> bool:
        return self.points >= self.max_points

    def __str__(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return (
            f"[{mark}] {self.exercise} {self.name}: "
            f"{self.points:g}/{self.max_points:g} points. {self.message}"
        )

    __repr__ = __str__

    def to_dict(self) -> dict:
        return {
            "exercise": self.exercise,
            "name": self.name,
            "points": self.points,
            "max_points": self.max_points,
            "passed": self.passed,
            "message": self.message,
        }


@dataclass(frozen=True)
class Check:
    """One automatically graded part: ``body(student_fn)`` raises CheckFailed or returns.

    ``own_work`` names library modules that hold the answer (``"course_utils.attention"``):
    a student function that uses them, directly or through a helper, earns 0 points.
    """

    exercise: str
    name: str
    points: float
    target: str  # the name of the student's function in the notebook
    body: Callable[[Callable], str | None]
    own_work: tuple[str, ...] = ()
    #: For a part whose input is the student's class: ``adapt(cls)`` returns a function of
    #: plain data (numbers and arrays in; arrays, numbers, strings, dicts of them out) that
    #: builds and runs the student's module; the body calls that function. ``adapt`` raises
    #: :class:`CheckFailed` when the class cannot be used at all (the part then scores 0).
    #: The adapted function runs in the kernel; its results are judged like any function's.
    adapt: Callable[[object], Callable] | None = None

    def _result(self, points: float, message: str) -> CheckResult:
        return CheckResult(self.exercise, self.name, points, self.points, message)

    def __call__(self, student_fn: object) -> CheckResult:
        result = self._result
        if student_fn is None:
            return result(0.0, f"`{self.target}` is not defined: run its cell first")
        if not callable(student_fn):
            return result(
                0.0,
                f"expected the function `{self.target}`; got a {type(student_fn).__name__}",
            )
        if self.adapt is not None:
            try:
                student_fn = self.adapt(student_fn)
            except CheckFailed as failed:
                return result(0.0, failed.message)
        elif self.own_work:
            used = references_to(student_fn, self.own_work)
            if used:
                return result(0.0, self._not_own_work(used[0]))
        entered: list[str] = []
        points, message = self._run_body(self._watched(student_fn, entered))
        if entered:
            return result(0.0, self._not_own_work(f"calls `{entered[0]}`"))
        return result(points, message)

    # ------------------------------------------------ under the grader: probe, then judge

    def probe(self, student_fn: object, seed: int | None) -> dict:
        """Kernel side: run the body on this run's inputs (from ``seed``) with ``student_fn``
        recorded, and return only raw data: what was defined, whether the function used the
        reference, and each call's result. Never a verdict: no points, no message."""
        from course_utils.checks.probes import recording, run_seed

        if student_fn is None:
            return {"defined": "missing"}
        if not callable(student_fn):
            return {"defined": "not callable", "type": type(student_fn).__name__[:80]}
        if self.adapt is not None:
            try:
                student_fn = self.adapt(student_fn)
            except CheckFailed as failed:
                return {"refused": str(failed.message)[:1000]}
        elif self.own_work:
            used = references_to(student_fn, self.own_work)
            if used:
                return {"own_work": str(used[0])[:300]}
        calls: list[dict] = []
        entered: list[str] = []
        with run_seed(seed):
            self._run_body(self._watched(recording(student_fn, calls), entered))
        return {"calls": calls, "own_work": f"calls `{entered[0]}`"[:300] if entered else None}

    def judge(self, raw: object, seed: int | None) -> CheckResult:
        """Grader side: the points for a probe's raw data, decided here. The body runs again
        on the same inputs, computing the expected answers with the course's reference code
        in this process; the student's function is replaced by the kernel's recorded results.
        Nothing the kernel computed is trusted but those results, decoded strictly."""
        from course_utils.checks.probes import replaying, run_seed

        if not isinstance(raw, dict):
            return self._result(0.0, "the kernel reported no result for this part")
        if raw.get("defined") == "missing":
            return self(None)
        if raw.get("defined") == "not callable":
            return self._result(0.0, f"expected the function `{self.target}`; got a "
                                     f"{str(raw.get('type', 'value'))[:80]}")
        if raw.get("refused"):  # the class could not be used: only ever 0 points
            return self._result(0.0, str(raw["refused"])[:1000])
        if raw.get("own_work"):
            return self._result(0.0, self._not_own_work(str(raw["own_work"])[:300]))
        problems: list[str] = []
        with run_seed(seed):
            points, message = self._run_body(replaying(raw.get("calls", []), self.target,
                                                       problems))
        if problems:
            return self._result(0.0, problems[0])
        return self._result(min(max(float(points), 0.0), self.points), message)

    def _run_body(self, student_fn: Callable) -> tuple[float, str]:
        try:
            message = self.body(student_fn)
        except NotImplementedError:
            return 0.0, NOT_IMPLEMENTED
        except CheckFailed as failed:
            return min(failed.points, self.points), failed.message
        except KeyboardInterrupt:  # the grader's time limit for this part (or Ctrl-C / Stop)
            return 0.0, (f"`{self.target}` was interrupted while being checked: under the "
                         "grader, it ran past this part's time limit")
        except BaseException as error:  # the student's code crashed or exited: never raise
            return 0.0, f"`{self.target}` raised {type(error).__name__}: {error}"
        return self.points, message or "correct"

    def _watched(self, student_fn: Callable, entered: list[str]) -> Callable:
        """``student_fn``, recording into ``entered`` each call it makes into ``own_work``."""
        if not self.own_work:
            return student_fn
        files = module_files(self.own_work)

        def watched(*args: object, **kwargs: object) -> object:
            with watch_calls(files) as calls:
                try:
                    return student_fn(*args, **kwargs)
                finally:
                    entered.extend(calls)

        return watched

    def _not_own_work(self, what: str) -> str:
        return (
            f"`{self.target}` {what}: that is the course's reference implementation, which "
            "this check compares against, so this part earns no points. Write it yourself "
            "in NumPy"
        )


@dataclass(frozen=True)
class ManualQuestion:
    """A written answer the instructor grades by hand."""

    exercise: str
    name: str
    points: float
    prompt: str


@dataclass
class Exercise:
    id: str
    title: str
    checks: dict[str, Check] = field(default_factory=dict)
    manual: dict[str, ManualQuestion] = field(default_factory=dict)

    def check(self, name: str, *, points: float, target: str, own_work: tuple[str, ...] = (),
              adapt: Callable[[object], Callable] | None = None):
        """Decorator registering a check body under ``name``; returns the runnable Check."""

        def register(body: Callable[[Callable], str | None]) -> Check:
            if name in self.checks or name in self.manual:
                raise ValueError(f"{self.id} already has a part named {name!r}")
            check = Check(self.id, name, points, target, body, own_work, adapt)
            self.checks[name] = check
            return check

        return register

    def manual_question(self, name: str, *, points: float, prompt: str) -> ManualQuestion:
        if name in self.checks or name in self.manual:
            raise ValueError(f"{self.id} already has a part named {name!r}")
        question = ManualQuestion(self.id, name, points, prompt)
        self.manual[name] = question
        return question

    @property
    def auto_points(self) -> float:
        return sum(check.points for check in self.checks.values())

    @property
    def max_points(self) -> float:
        return self.auto_points + sum(q.points for q in self.manual.values())

    def grade(self, namespace: Mapping[str, object]) -> list[CheckResult]:
        """Run every check on the functions a notebook defined (e.g. its ``globals()``)."""
        return [check(namespace.get(check.target)) for check in self.checks.values()]


# Exercise ids and the modules that define them; imported on first use.
_MODULES = {
    "E10.1": "course_utils.checks.e10_1",
    "E10.2": "course_utils.checks.e10_2",
    "E10.3": "course_utils.checks.e10_3",
    "E10.4": "course_utils.checks.e10_4",
}


def get_exercise(exercise_id: str) -> Exercise:
    """The :class:`Exercise` with this id, e.g. ``get_exercise("E10.1")``."""
    if exercise_id not in _MODULES:
        known = ", ".join(sorted(_MODULES))
        raise ValueError(f"unknown exercise {exercise_id!r}; expected one of: {known}")
    return importlib.import_module(_MODULES[exercise_id]).EXERCISE


def nbgrader_points(exercise_id: str, part: str, namespace: Mapping[str, object]) -> float:
    """One part's check, run as an nbgrader autograded test cell: the points it gives.

    Calls the same check as the student's check cell and ``course-grade`` (on the function the
    part names, taken from ``namespace``, the notebook's ``globals()``), prints its result line,
    and returns its points as the cell's value: nbgrader (0.6 and later) scores a test cell whose
    value is a number with that number, so a part earns here exactly what the course's grader
    gives it, partial credit included. It never raises, so Run All reaches every cell as in the
    course's own notebooks. Warnings and anything written to stderr while the check runs are
    printed to stdout instead: nbgrader scores a test cell that writes to stderr 0.
    """
    check = get_exercise(exercise_id).checks[part]
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(sys.stdout):
        warnings.simplefilter("always")
        result = check(namespace.get(check.target))
    for warning in caught[:3]:
        print(f"(while checking: {warning.category.__name__}: {warning.message})")
    print(result)
    return float(result.points)


# ------------------------------------------------------------------ showing a part's result

#: Folders of installed code (the standard library, NumPy, ...) and of this package: a
#: traceback's last frame outside them is the student's own line.
_LIBRARY_FOLDERS = tuple(
    {os.path.dirname(os.path.dirname(__file__))}
    | {path for key, path in sysconfig.get_paths().items() if key in ("stdlib", "purelib",
                                                                       "platlib")}
)


def student_line(error: BaseException) -> str:
    """`` (in `f`, at `the line`)``: where in the student's code ``error`` was raised."""
    recorded = getattr(error, "course_student_line", None)  # an error replayed by the grader
    if isinstance(recorded, str):
        return recorded
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith(_LIBRARY_FOLDERS)]
    if not frames or not frames[-1].line:
        return ""
    return f" (in `{frames[-1].name}`, at `{frames[-1].line.strip()}`)"


def call_student(function: Callable, *args: object, given: str) -> Any:
    """``function(*args)`` for a check; if the student's code raises, a failed check that names
    the input it was given (``given``) and the student's line, instead of a bare traceback.

    ``NotImplementedError`` passes through (the part is not written yet), so does
    :class:`CheckFailed`. Errors in the check's own handling of a result are not caught here:
    each check converts results itself and says what it expected.
    """
    try:
        return function(*args)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as error:
        raise CheckFailed(f"your function raised {type(error).__name__}: {error}"
                          f"{student_line(error)} when given {given}") from None


def try_run(function: object, *args: object) -> Any:
    """``function(*args)``, or ``None`` with a one-line explanation instead of an error.

    For the notebook cells that show what a student's function returns: a part that is not
    written yet (``raise NotImplementedError``), an argument that is ``None`` because an
    earlier part is not done, or a crash, prints why and lets the next cells run, so Run All
    still reaches every check and the score.
    """
    name = getattr(function, "__name__", None) or type(function).__name__  # a module: its class
    if not callable(function):
        print(f"`{name}` is not a function (got a {type(function).__name__}): "
              "run the cell that defines it")
        return None
    missing = [index for index, arg in enumerate(args) if arg is None]
    if missing:
        try:
            names = list(inspect.signature(function).parameters)
            what = f"its argument `{names[missing[0]]}` is"
        except (TypeError, ValueError, IndexError):
            what = "an argument is"
        print(f"`{name}` not run here: {what} None, as the part that computes it is not done "
              "yet. Its own check above tests it anyway")
        return None
    try:
        return function(*args)
    except NotImplementedError:
        print(f"`{name}` is not written yet, so there is nothing to show: write it, "
              "then run its check")
    except Exception as error:
        print(f"`{name}` raised {type(error).__name__}: {error}{student_line(error)}")
    return None
