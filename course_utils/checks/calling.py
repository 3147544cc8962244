"""Calling the student's code from a check: what it raised, and where in their code.

A check body calls the student's function through :func:`call_student` (an error names the
input and the student's own line) and fails with :class:`CheckFailed`; a part whose ``adapt``
runs the student's class reads what it reported through :func:`reported`. A notebook cell that
only shows a result uses :func:`try_run`, so that an unfinished part never stops Run All.
"""

from __future__ import annotations

import inspect
import os
import sysconfig
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["NOT_IMPLEMENTED", "CheckFailed", "CheckPending", "call_student", "reported",
           "student_line", "try_run"]

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` with your code"


class CheckFailed(Exception):
    """Raised inside a check body: ``message`` for the student, ``points`` awarded anyway."""

    def __init__(self, message: str, points: float = 0.0) -> None:
        super().__init__(message)
        self.message = message
        self.points = points


class CheckPending(CheckFailed):
    """Raised inside a check body that cannot decide here (a student's copy of the course
    lacks the grader's criteria) but has kept what the grader will judge: no points yet, and
    ``message`` says when they are decided."""


# ------------------------------------------------------------------ where the student erred

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


def reported(out: object, name: str) -> dict:
    """What a part's adapted function (the student's class run on plain data, see
    :class:`~course_utils.checks.framework.Check`'s ``adapt``) reported: its dict, once it is
    one; an error it reported (``"error"``) as a failed check; ``"not_implemented"`` as the part
    not written yet. ``name`` is what the student wrote, for the message."""
    if not isinstance(out, dict):
        raise CheckFailed(f"{name} reported no result")
    if out.get("not_implemented"):
        raise NotImplementedError
    if out.get("error"):
        raise CheckFailed(str(out["error"])[:1000])
    return out


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
