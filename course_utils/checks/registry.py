"""The course's exercises, registered in one place: their file names.

An exercise is a folder of checks and two notebooks that share its id (``E10.1``), and nothing
else lists it:

- ``course_utils/checks/e10_1/``, its checks: ``__init__.py`` defines ``EXERCISE`` (a
  :class:`~course_utils.checks.framework.Exercise` with that id) and registers its parts; the
  exercise's own helpers sit beside it, and ``hidden.py``, where there is one, holds the
  grader's answers for fresh inputs, which no handout carries (:func:`load_hidden`), and
  ``known.json`` the answers of its fixed examples, which every copy carries
  (:func:`known_answers`);
- ``solutions/E10.1-<slug>.ipynb``, the worked solution, the single source of the notebook;
- ``exercises/E10.1-<slug>.ipynb``, the student version ``course-exercises`` makes from it.

The grader, the handout, the answer search, the benchmarks and the tests find exercises here
(ARCHITECTURE.md, "How to add an exercise").
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from types import ModuleType

__all__ = ["HIDDEN_FILES", "KNOWN_FILE", "exercise_ids", "hidden_module_of", "known_answers",
           "load_hidden", "module_of", "notebook_of"]

_CHECKS = Path(__file__).resolve().parent
_PACKAGE = "course_utils.checks"
_MODULE = re.compile(r"^e(\d+)_(\d+)$")
#: The grader's answers, as paths end (:meth:`pathlib.PurePath.match`): ``hidden.py`` in an
#: exercise's folder. No handout carries them (:func:`course_utils.tools.solutions.ships`).
HIDDEN_FILES = ("checks/e*_*/hidden.py",)
#: The answers an exercise's checks store for their fixed examples, beside its checks
#: (:func:`known_answers`).
KNOWN_FILE = "known.json"


def _is_exercise(path: Path) -> bool:
    return (path / "__init__.py").is_file()


def exercise_ids() -> list[str]:
    """Every exercise with checks, in the course's order: ``["E10.1", "E10.2", ...]``."""
    found = [m.groups()[:2] for p in _CHECKS.iterdir()
             if (m := _MODULE.match(p.name)) and _is_exercise(p)]
    return [f"E{day}.{n}" for day, n in sorted(found, key=lambda g: (int(g[0]), int(g[1])))]


def _name(exercise_id: str) -> str:
    if exercise_id not in exercise_ids():
        raise ValueError(f"unknown exercise {exercise_id!r}; expected one of: "
                         f"{', '.join(exercise_ids())}")
    day, n = exercise_id[1:].split(".")
    return f"e{day}_{n}"


def module_of(exercise_id: str) -> str:
    """The module of ``exercise_id``'s checks: ``E10.1`` -> ``course_utils.checks.e10_1``."""
    return f"{_PACKAGE}.{_name(exercise_id)}"


def hidden_module_of(exercise_id: str) -> str:
    """The module of ``exercise_id``'s hidden answers, whether or not this copy of the course has
    it: ``course_utils.checks.e10_2.hidden``."""
    return f"{_PACKAGE}.{_name(exercise_id)}.hidden"


def load_hidden(exercise_id: str) -> ModuleType | None:
    """``exercise_id``'s hidden answers, the grader's; ``None`` where this copy of the course has
    none (a student's handout). A check computes an answer for fresh inputs with it, and without
    it checks the fixed examples whose answers it stores."""
    name = hidden_module_of(exercise_id)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name:
            raise  # the module is there, and something it imports is not
        return None


def known_answers(exercise_id: str) -> dict:
    """The answers ``exercise_id``'s checks store for their fixed examples, where a handout has
    no hidden answers to compute them: its folder's ``known.json`` (package data, which every
    copy carries), every key written as a whole number read back as one."""
    def keys(pairs: list[tuple[str, object]]) -> dict:
        return {int(key) if key.isdigit() else key: value for key, value in pairs}

    path = _CHECKS / _name(exercise_id) / KNOWN_FILE
    return json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=keys)


def notebook_of(exercise_id: str, folder: str | Path) -> Path:
    """``exercise_id``'s notebook in ``folder`` (``solutions/`` or ``exercises/``): the one file
    named ``<id>-<slug>.ipynb``."""
    found = sorted(Path(folder).glob(f"{exercise_id}-*.ipynb"))
    if len(found) != 1:
        raise ValueError(f"expected one notebook {exercise_id}-<name>.ipynb in {folder}; "
                         f"found {len(found)}: {[p.name for p in found]}")
    return found[0]
