"""Naming a student's mistake: a wrong result compared with the results of known wrong answers.

A check that finds a result wrong tries the formulas students are known to write by mistake
(a missing transpose, the halves of a vector swapped, the mask applied after the softmax) on
the same inputs, and when the result equals one of them says which, instead of only "wrong".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from course_utils.checks.calling import CheckFailed

__all__ = ["named_mistake", "raise_named"]


def named_mistake(got: object, mistakes: Iterable[tuple[object, str]],
                  close: Callable[[Any, Any], bool]) -> str | None:
    """The hint of the first ``(wrong result, hint)`` of ``mistakes`` that ``got`` is
    ``close`` to, or ``None``. A wrong result of ``None`` (that mistake cannot happen on these
    inputs) is skipped; ``mistakes`` may be a generator, so later ones are computed only when
    needed."""
    for wrong, hint in mistakes:
        if wrong is not None and close(got, wrong):
            return hint
    return None


def raise_named(got: object, mistakes: Iterable[tuple[object, str]],
                close: Callable[[Any, Any], bool]) -> None:
    """Fail with the hint of the first known mistake that ``got`` equals, if any."""
    hint = named_mistake(got, mistakes, close)
    if hint is not None:
        raise CheckFailed(hint)


def raise_explained(hints: Iterable[str]) -> None:
    """Fail naming every known mistake that explains the answers, if any: the one, or each of
    several that the answers cannot tell apart (a position of the largest value, say, is the
    same for two formulas that differ by a monotone function), for the student to check."""
    found = list(dict.fromkeys(hints))
    if len(found) == 1:
        raise CheckFailed(found[0])
    if found:
        raise CheckFailed(f"your answers fit {len(found)} known mistakes, and they alone cannot "
                          "tell them apart: " + " OR ".join(f"({k}) {hint}"
                                                             for k, hint in enumerate(found, 1)))
