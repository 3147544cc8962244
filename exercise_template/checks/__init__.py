"""Checks for exercise E10.N: the runner-up position (a template for a new exercise).

Copy this folder to ``course_utils/checks/e10_n/`` and rename ``E10.N`` everywhere (ARCHITECTURE.md,
"How to add an exercise"). Students write ``runner_up(weights)``: in each row of an attention
matrix ``(tgt_len, src_len)``, the position, counted from 1, of the second-largest weight. The
check runs it on a fixed matrix whose answer is written here by hand and, where the grader's
answers are (:mod:`.hidden`, which no handout carries), on a fresh random one in every graded
run; a function that calls the grader's answers earns nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from course_utils.checks.calling import CheckFailed, call_student
from course_utils.checks.framework import Exercise
from course_utils.checks.probes import fresh_seed, said_when_graded
from course_utils.checks.registry import load_hidden

__all__ = ["EXERCISE", "FIXED", "check_runner_up"]

EXERCISE = Exercise("E10.N", "The runner-up position")
#: The grader's answers for fresh inputs (:mod:`.hidden`); ``None`` in a student's handout.
HIDDEN = load_hidden(EXERCISE.id)

#: A fixed matrix and its answer, written by hand (rows: output steps).
FIXED = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3], [0.2, 0.3, 0.5]])
FIXED_ANSWER = (3, 3, 2)


def _positions(got: object, rows: int, where: str) -> list[int]:
    positions = np.asarray(got)
    if positions.shape != (rows,) or positions.dtype.kind not in "iu":
        raise CheckFailed(f"runner_up must return one whole number per row, shape ({rows},); "
                          f"got {type(got).__name__} of shape {positions.shape} on {where}")
    return [int(p) for p in positions]


@EXERCISE.check("runner_up", points=2, target="runner_up",
                own_work=(HIDDEN.__name__,) if HIDDEN else ())
def check_runner_up(runner_up: Callable) -> str:
    """``runner_up(weights)`` -> ``(tgt_len,)``: each row's second-largest weight's position."""
    cases = [("the fixed matrix", FIXED)]
    if HIDDEN is not None:
        rng = np.random.default_rng(fresh_seed(9))
        cases.append(("a fresh matrix", rng.dirichlet(np.ones(6), size=4)))
    for where, weights in cases:
        got = _positions(call_student(runner_up, weights.copy(), given=where), len(weights),
                         where)
        # the expected answer, only once the student's function has returned
        expected = list(FIXED_ANSWER) if HIDDEN is None or weights is FIXED else \
            HIDDEN.runner_up(weights)
        if got == [p - 1 for p in expected]:
            raise CheckFailed(f"on {where}, positions are counted from 1, as in h_1, h_2, ...")
        wrong = [row for row, (g, e) in enumerate(zip(got, expected), start=1) if g != e]
        if wrong:
            raise CheckFailed(f"on {where}, row {wrong[0]} is off: the position of its "
                              "second-largest weight, not its largest")
    done = "the runner-up of every row"
    return said_when_graded(done, HIDDEN, "matrices")


EXERCISE.manual_question("why", points=1, prompt=(
    "When is the runner-up position worth reading beside the arg max? One sentence."))
