"""E10.N's checks (a template: copy to tests/test_checks_e10_n.py): the worked answer passes,
the usual mistake is named, and what the grader adds runs only where its answers are."""

import numpy as np

from course_utils.checks import e10_n


def runner_up(weights):
    return np.argsort(weights, axis=1)[:, -2] + 1


def test_the_worked_answer_passes():
    assert e10_n.check_runner_up(runner_up).passed


def test_positions_counted_from_0_are_named():
    result = e10_n.check_runner_up(lambda weights: runner_up(weights) - 1)
    assert result.points == 0 and "counted from 1" in result.message
