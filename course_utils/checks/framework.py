"""The checks framework: a part, its result, an exercise, and finding one by id.

A :class:`Check` is one automatically graded part. In the notebook, calling it runs its body
on the student's function and returns a :class:`CheckResult`. Under ``course-grade`` it runs in
two halves (:mod:`course_utils.checks.probes`): :meth:`Check.probe` in the student's kernel
returns only raw results, and :meth:`Check.judge` in the grader's process decides the points.
Both start the same way (:meth:`Check._opening`: a missing name, something not callable, a
class ``adapt`` refuses, a function that uses the reference), so a part earns the same in the
notebook and under the grader.

A part about the student's own trained model, which the grader never has, is judged on a
*record* (:mod:`course_utils.checks.records`): its check cell makes one from the student's run
(``record=``), shows it in the cell's output, where it is saved with the notebook, and judges
it; the grader judges the record saved in the submitted file.

An :class:`Exercise` registers its checks and its manually graded questions;
:func:`get_exercise` finds one by id (``"E10.1"``); :func:`nbgrader_points` runs one part in an
nbgrader test cell (see :mod:`course_utils.tools.nbgrader`).
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from course_utils.checks.calling import NOT_IMPLEMENTED, CheckFailed, CheckPending
from course_utils.checks.own_work import copied_from, module_files, references_to, watch_calls
from course_utils.checks.probes import recording, replaying, run_seed
from course_utils.checks.provenance import Origins, not_written_in_cells, watch_origins
from course_utils.checks.registry import module_of

__all__ = ["Check", "CheckResult", "Exercise", "ManualQuestion", "get_exercise",
           "nbgrader_points"]


#: The keys of a probe's data that say the body did not run: the name is not defined, the
#: class was refused, the code was not written in the notebook, or it used the reference.
_STOPS = ("defined", "refused", "not_written", "own_work")


def _entered(entered: list[str], origins: list[Origins | None]) -> dict:
    """What :meth:`Check._watched` saw, as the probe reports it: the first call into the
    reference, if any, and the first code run that was neither the notebook's nor an installed
    library's (:func:`~course_utils.checks.provenance.watch_origins`), if any."""
    foreign = next((seen.foreign for seen in origins if seen is not None and seen.foreign), None)
    return {"own_work": f"calls `{entered[0]}`"[:300] if entered else None,
            "not_written": foreign[:300] if foreign else None}


@dataclass(frozen=True)
class CheckResult:
    exercise: str
    name: str
    points: float
    max_points: float
    message: str
    #: Not decided here: a record was kept for the grader, who decides (:class:`CheckPending`).
    pending: bool = False

    @property
    def passed(self) -> bool:
        return self.points >= self.max_points

    def __str__(self) -> str:
        mark = "RECORDED" if self.pending else "PASS" if self.passed else "FAIL"
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
            "pending": self.pending,
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
    #: What the student writes the part with, named when the part is refused as not own work.
    write_with: str = "NumPy"
    #: For a part judged on a record of the student's own run (:mod:`.records`):
    #: ``record(student_fn)`` makes it and shows it in the check cell's output, where it is saved
    #: with the notebook. Only the check cell makes one (:meth:`__call__`); the body reads it
    #: with :func:`.records.current`, and under the grader the one saved in the submission.
    record: Callable[[Callable], None] | None = None

    def _result(self, points: float, message: str, pending: bool = False) -> CheckResult:
        return CheckResult(self.exercise, self.name, points, self.points, message, pending)

    def _opening(self, student_fn: object) -> Callable | dict:
        """Before the body runs: the function to check, or why there is none as plain data (the
        name is missing or not callable, its code was not written in a cell of the notebook
        (:func:`~course_utils.checks.provenance.not_written_in_cells`), ``adapt`` refused the
        class, the function uses the reference). One opening for the notebook, the grader's
        kernel and its judge."""
        if student_fn is None:
            return {"defined": "missing"}
        if not callable(student_fn):
            return {"defined": "not callable", "type": type(student_fn).__name__[:80]}
        outside = not_written_in_cells(student_fn)
        if outside:
            return {"not_written": outside[:300]}
        if self.adapt is not None:
            try:
                return self.adapt(student_fn)
            except CheckFailed as failed:
                return {"refused": str(failed.message)[:1000]}
        if self.own_work:
            used = references_to(student_fn, self.own_work)
            if used:
                return {"own_work": str(used[0])[:300]}
            copied = copied_from(student_fn, self.own_work)
            if copied:
                return {"own_work": f"is a copy of `{copied}`"[:300]}
        return student_fn

    def _stopped(self, why: Mapping) -> CheckResult:
        """0 points, and why: for a part whose body did not run (:meth:`_opening`'s data) or
        whose function called the reference while it ran."""
        if why.get("defined") == "missing":
            return self._result(0.0, f"`{self.target}` is not defined: run its cell first")
        if why.get("defined") == "not callable":
            return self._result(0.0, f"expected the function `{self.target}`; got a "
                                     f"{str(why.get('type', 'value'))[:80]}")
        if why.get("refused"):  # the class could not be used: only ever 0 points
            return self._result(0.0, str(why["refused"])[:1000])
        if why.get("not_written"):
            return self._result(0.0, (
                f"`{self.target}` {str(why['not_written'])[:300]}: graded code must be written "
                "in this notebook's cells (not made by exec, eval or compile of text from "
                "elsewhere, nor imported from a file), so this part earns no points"))
        if why.get("own_work"):
            return self._result(0.0, self._not_own_work(str(why["own_work"])[:300]))
        return self._result(0.0, "the kernel reported no result for this part")

    def __call__(self, student_fn: object) -> CheckResult:
        """In the notebook's check cell: the part's result for the student's function (or
        class); a part judged on a record makes it first (``record``)."""
        function = self._opening(student_fn)
        if isinstance(function, dict):
            return self._stopped(function)
        if self.record is not None:
            try:
                self.record(function)
            except Exception as error:  # never raise: the body then says what is missing
                print(f"No record was made: {type(error).__name__}: {error}")
        return self._verdict(function)

    def verdict(self, student_fn: object) -> CheckResult:
        """The part's result, making no record: what :meth:`Exercise.grade` reports."""
        function = self._opening(student_fn)
        if isinstance(function, dict):
            return self._stopped(function)
        return self._verdict(function)

    def _verdict(self, function: Callable) -> CheckResult:
        entered: list[str] = []
        origins: list[Origins | None] = []
        points, message, pending = self._run_body(self._watched(function, entered, origins))
        seen = _entered(entered, origins)
        if any(seen.values()):
            return self._stopped(seen)
        return self._result(points, message, pending)

    # ------------------------------------------------ under the grader: probe, then judge

    def probe(self, student_fn: object, seed: int | None) -> dict:
        """Kernel side: run the body on this run's inputs (from ``seed``) with ``student_fn``
        recorded, and return only raw data: what was defined, whether it was written in one of
        the notebook's cells and whether it used the reference, and each call's result. Never
        a verdict: no points, no message."""
        function = self._opening(student_fn)
        if isinstance(function, dict):
            return function
        calls: list[dict] = []
        entered: list[str] = []
        origins: list[Origins | None] = []
        with run_seed(seed):
            self._run_body(self._watched(recording(function, calls), entered, origins))
        return {"calls": calls, **_entered(entered, origins)}

    def judge(self, raw: object, seed: int | None) -> CheckResult:
        """Grader side: the points for a probe's raw data, decided here. The body runs again
        on the same inputs, computing the expected answers with the course's reference code
        in this process; the student's function is replaced by the kernel's recorded results.
        Nothing the kernel computed is trusted but those results, decoded strictly."""
        if not isinstance(raw, dict) or any(raw.get(key) for key in _STOPS):
            return self._stopped(raw if isinstance(raw, dict) else {})
        problems: list[str] = []
        with run_seed(seed):
            points, message, _ = self._run_body(replaying(raw.get("calls", []), self.target,
                                                          problems))
        if problems:
            return self._result(0.0, problems[0])
        return self._result(min(max(float(points), 0.0), self.points), message)

    def _run_body(self, student_fn: Callable) -> tuple[float, str, bool]:
        """The body's points and message, and whether it left the decision to the grader."""
        try:
            message = self.body(student_fn)
        except NotImplementedError:
            return 0.0, NOT_IMPLEMENTED, False
        except CheckPending as pending:
            return 0.0, pending.message, True
        except CheckFailed as failed:
            return min(failed.points, self.points), failed.message, False
        except KeyboardInterrupt:  # the grader's time limit for this part (or Ctrl-C / Stop)
            return 0.0, (f"`{self.target}` was interrupted while being checked: under the "
                         "grader, it ran past this part's time limit"), False
        except BaseException as error:  # the student's code crashed or exited: never raise
            return 0.0, f"`{self.target}` raised {type(error).__name__}: {error}", False
        return self.points, message or "correct", False

    def _watched(self, student_fn: Callable, entered: list[str],
                 origins: list[Origins | None]) -> Callable:
        """``student_fn``, recording into ``entered`` each call it makes into ``own_work``,
        and into ``origins`` where the code it runs comes from (every part, every exercise:
        the notebook's cells or installed libraries, nothing ``exec``'d)."""
        files = module_files(self.own_work) if self.own_work else {}

        def watched(*args: object, **kwargs: object) -> object:
            with watch_origins() as seen, watch_calls(files) as calls:
                try:
                    return student_fn(*args, **kwargs)
                finally:
                    entered.extend(calls)
                    origins.append(seen)

        return watched

    def _not_own_work(self, what: str) -> str:
        return (
            f"`{self.target}` {what}: that is the course's own code (its library, or the "
            f"check's answers), so this part earns no points. Write it yourself with "
            f"{self.write_with}"
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
              adapt: Callable[[object], Callable] | None = None, write_with: str = "NumPy",
              record: Callable[[Callable], None] | None = None):
        """Decorator registering a check body under ``name``; returns the runnable Check."""

        def register(body: Callable[[Callable], str | None]) -> Check:
            if name in self.checks or name in self.manual:
                raise ValueError(f"{self.id} already has a part named {name!r}")
            check = Check(self.id, name, points, target, body, own_work, adapt, write_with,
                          record)
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
        """Run every check on the functions a notebook defined (e.g. its ``globals()``); a part
        judged on a record reads the one its check cell made, and makes none."""
        return [check.verdict(namespace.get(check.target)) for check in self.checks.values()]

    @property
    def recorded(self) -> list[str]:
        """The parts judged on a record of the student's own run (:mod:`.records`)."""
        return [name for name, check in self.checks.items() if check.record is not None]


def get_exercise(exercise_id: str) -> Exercise:
    """The :class:`Exercise` with this id, e.g. ``get_exercise("E10.1")``; the exercises are
    registered by their modules' file names (:mod:`course_utils.checks.registry`)."""
    return importlib.import_module(module_of(exercise_id)).EXERCISE


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
    if check.record is not None:  # judged on the student's own run, which nbgrader never has
        print(f"{exercise_id} {part}: not graded here. This part is judged on the record of the "
              "student's own model saved in the notebook they handed in; nbgrader clears it and "
              "re-runs the notebook without that model. Grade it with course-grade, which "
              "reads the saved record, or by hand from the student's notebook.")
        return 0.0
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(sys.stdout):
        warnings.simplefilter("always")
        result = check(namespace.get(check.target))
    for warning in caught[:3]:
        print(f"(while checking: {warning.category.__name__}: {warning.message})")
    print(result)
    return float(result.points)
