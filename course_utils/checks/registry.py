"""The course's exercises, registered in one place: their file names.

An exercise is three files that share its id (``E10.1``), and nothing else lists it:

- ``course_utils/checks/e10_1.py``, its checks, which defines ``EXERCISE``
  (a :class:`~course_utils.checks.framework.Exercise` with that id);
- ``solutions/E10.1-<slug>.ipynb``, the worked solution, the single source of the notebook;
- ``exercises/E10.1-<slug>.ipynb``, the student version ``course-exercises`` makes from it.

The grader, the handout, the answer search, the benchmarks and the tests find exercises here
(ARCHITECTURE.md, "How to add an exercise").
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["exercise_ids", "module_of", "notebook_of"]

_CHECKS = Path(__file__).resolve().parent
_MODULE = re.compile(r"^e(\d+)_(\d+)\.py$")


def exercise_ids() -> list[str]:
    """Every exercise with a check module, in the course's order: ``["E10.1", "E10.2", ...]``."""
    found = [m.groups() for p in _CHECKS.iterdir() if (m := _MODULE.match(p.name))]
    return [f"E{day}.{n}" for day, n in sorted(found, key=lambda g: (int(g[0]), int(g[1])))]


def module_of(exercise_id: str) -> str:
    """The module of ``exercise_id``'s checks: ``E10.1`` -> ``course_utils.checks.e10_1``."""
    if exercise_id not in exercise_ids():
        raise ValueError(f"unknown exercise {exercise_id!r}; expected one of: "
                         f"{', '.join(exercise_ids())}")
    day, n = exercise_id[1:].split(".")
    return f"course_utils.checks.e{day}_{n}"


def notebook_of(exercise_id: str, folder: str | Path) -> Path:
    """``exercise_id``'s notebook in ``folder`` (``solutions/`` or ``exercises/``): the one file
    named ``<id>-<slug>.ipynb``."""
    found = sorted(Path(folder).glob(f"{exercise_id}-*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"expected one notebook {exercise_id}-<name>.ipynb in {folder}; "
                         f"found {len(found)}: {[p.name for p in found]}")
    return found[0]
