"""Exercise checks: what students call in their notebooks and instructors grade with.

A check takes the student's *function* (not a number), runs it on the exercise's inputs
and on fresh ones, and returns a :class:`CheckResult` with points and a message that
says what is wrong (shape, sum, which entry) without printing the answer.

Checks never raise: an untouched exercise (``raise NotImplementedError``), a crash inside
the student's code, or a missing function all give 0 points and a message.

Each exercise is an :class:`Exercise` that registers its checks and its manually graded
questions; :func:`get_exercise` finds it by id (``"E10.1"``), and
:meth:`Exercise.grade` runs every check against a notebook's namespace.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Check",
    "CheckFailed",
    "CheckResult",
    "Exercise",
    "ManualQuestion",
    "get_exercise",
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
    """One automatically graded part: ``body(student_fn)`` raises CheckFailed or returns."""

    exercise: str
    name: str
    points: float
    target: str  # the name of the student's function in the notebook
    body: Callable[[Callable], str | None]

    def __call__(self, student_fn: object) -> CheckResult:
        def result(points: float, message: str) -> CheckResult:
            return CheckResult(self.exercise, self.name, points, self.points, message)

        if student_fn is None:
            return result(0.0, f"`{self.target}` is not defined: run its cell first")
        if not callable(student_fn):
            return result(
                0.0,
                f"expected the function `{self.target}`; got a {type(student_fn).__name__}",
            )
        try:
            message = self.body(student_fn)
        except NotImplementedError:
            return result(0.0, NOT_IMPLEMENTED)
        except CheckFailed as failed:
            return result(min(failed.points, self.points), failed.message)
        except Exception as error:  # the student's code crashed: report, never raise
            return result(0.0, f"`{self.target}` raised {type(error).__name__}: {error}")
        return result(self.points, message or "correct")


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

    def check(self, name: str, *, points: float, target: str):
        """Decorator registering a check body under ``name``; returns the runnable Check."""

        def register(body: Callable[[Callable], str | None]) -> Check:
            if name in self.checks or name in self.manual:
                raise ValueError(f"{self.id} already has a part named {name!r}")
            check = Check(self.id, name, points, target, body)
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
}


def get_exercise(exercise_id: str) -> Exercise:
    """The :class:`Exercise` with this id, e.g. ``get_exercise("E10.1")``."""
    if exercise_id not in _MODULES:
        known = ", ".join(sorted(_MODULES))
        raise ValueError(f"unknown exercise {exercise_id!r}; expected one of: {known}")
    return importlib.import_module(_MODULES[exercise_id]).EXERCISE
