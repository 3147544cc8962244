"""An honest answer never loses a point because the grader judged others at the same time.

``course-grade --jobs 2`` supervises submissions in threads of one process, and each thread
judges its submission's parts there (:func:`course_utils.tools.grading.judge.add_parts`). A
judge draws the run's inputs again from the run's seed: if one thread's seed, or the global
random generator one check seeds to build a model, could leak into another thread's judge, an
honest record would no longer match its inputs and lose the part ("the kernel did not report
... for this run's inputs"), at random: once in 14 E10.4 solutions on a newer PyTorch.
"""

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import ROOT, notebook_functions

from course_utils.checks import get_exercise
from course_utils.checks.probes import fresh_seed, run_seed
from course_utils.tools.grading import GradeResult
from course_utils.tools.grading.judge import add_parts
from course_utils.tools.grading.results import PART


def test_each_thread_draws_from_its_own_seed():
    """Two threads set their seeds, then both draw: each gets its own seed's inputs."""
    both_set = threading.Barrier(2, timeout=10)
    drawn: dict[int, int] = {}

    def draw(seed: int) -> None:
        with run_seed(seed):
            both_set.wait()
            drawn[seed] = fresh_seed(1)
            both_set.wait()

    threads = [threading.Thread(target=draw, args=(seed,)) for seed in (11, 22)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for seed in (11, 22):
        with run_seed(seed):
            assert drawn[seed] == fresh_seed(1)
    assert fresh_seed(1) == 1  # outside any run: the inputs students see


def part_lines(exercise_id: str, namespace: dict, seed: int) -> list[str]:
    """What a worker reports for a notebook defining ``namespace``: one PART line per part."""
    lines = []
    for name, check in get_exercise(exercise_id).checks.items():
        if check.target in namespace:
            probe = json.loads(json.dumps(check.probe(namespace[check.target], seed)))
            lines.append(PART + json.dumps({"name": name, "probe": probe}))
    return lines


@pytest.mark.parametrize("exercise_id, solution, parts", [
    ("E10.4", "E10.4-dot-and-general-scores.ipynb", {"dot", "scaled_dot", "general",
                                                     "additive", "low_rank"}),
    ("E10.2", "E10.2-vanilla-vs-attention.ipynb", {"vanilla_context"}),
    ("E10.1", "E10.1-attention-by-hand.ipynb", {"energies", "softmax", "context"}),
])
def test_solutions_judged_many_at_once_all_score_full_marks(exercise_id, solution, parts):
    namespace = notebook_functions(ROOT / "solutions" / solution)
    seeds = list(range(1000, 1012))
    reports = {seed: [line for line in part_lines(exercise_id, namespace, seed)
                      if json.loads(line[len(PART):])["name"] in parts] for seed in seeds}
    assert all(len(lines) == len(parts) for lines in reports.values())

    def judged(seed: int) -> GradeResult:
        result = GradeResult(f"student-{seed}", "graded")
        add_parts(result, exercise_id, reports[seed], seed)
        return result

    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(judged, seeds * 2))
    exercise = get_exercise(exercise_id)
    for result in results:
        lost = {name: result.messages.get(name) for name in parts
                if result.points.get(name) != exercise.checks[name].points}
        assert not lost, f"{result.student} lost points judged beside others: {lost}"


def test_a_checks_fresh_model_has_its_seeds_weights_whatever_runs_beside_it():
    """E10.2's checks build the library's model from a seed through PyTorch's global generator:
    built in threads at once, each model still has its own seed's weights, and the global
    generator is left as it was."""
    import torch

    from course_utils.checks.decoders import fresh_model

    def weights(seed: int) -> list:
        return [p.detach().clone() for p in fresh_model(seed)[0].parameters()]

    alone = {seed: weights(seed) for seed in range(8)}
    torch.manual_seed(0)
    expected_draw = torch.rand(3)
    torch.manual_seed(0)
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = dict(zip(range(8), pool.map(weights, range(8))))
    assert torch.equal(torch.rand(3), expected_draw), "the global generator was moved"
    for seed in alone:
        assert all(torch.equal(a, b) for a, b in zip(alone[seed], together[seed])), seed
