"""Generate the student exercise notebooks from the worked solutions.

Each solution notebook in ``solutions/`` becomes ``exercises/`` notebook of the same name, with
every marked solution region replaced (:mod:`course_utils.tools.exercise_format`; the markers,
and what is refused, are :mod:`course_utils.tools.solutions`').

Command line (installed as ``course-exercises``)::

    course-exercises            # regenerate exercises/ from solutions/
    course-exercises --check    # exit 1 if exercises/ is out of date
    course-exercises --nbgrader OUT   # nbgrader source notebooks (course_utils.tools.nbgrader)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from course_utils.files import write_text_atomically
from course_utils.tools.exercise_format import NBFORMAT_VERSION, notebook_text, strip_solutions
from course_utils.tools.solutions import ExerciseFormatError

__all__ = ["build_all", "main", "make_exercise", "render_exercise"]


def render_exercise(solution_path: Path) -> str:
    """The student notebook, as text, generated from ``solution_path``."""
    solution_path = Path(solution_path)
    notebook = nbformat.read(solution_path, as_version=NBFORMAT_VERSION)
    return notebook_text(strip_solutions(notebook, name=solution_path.name))


def make_exercise(solution_path: Path, exercise_path: Path) -> None:
    """Generate the student notebook ``exercise_path`` from ``solution_path``."""
    write_text_atomically(exercise_path, render_exercise(solution_path))


def build_all(solutions: Path, exercises: Path, check: bool = False) -> list[Path]:
    """Generate (or with ``check``, compare) one exercise per solution notebook.

    Returns the exercise paths that were written, or with ``check`` that are out of date.
    """
    solution_paths = sorted(Path(solutions).glob("*.ipynb"))
    if not solution_paths:
        raise FileNotFoundError(f"no solution notebooks (*.ipynb) in {solutions}")
    changed = []
    for solution in solution_paths:
        target = Path(exercises) / solution.name
        if check:
            current = target.read_text(encoding="utf-8") if target.exists() else None
            if current != render_exercise(solution):
                changed.append(target)
        else:
            make_exercise(solution, target)
            changed.append(target)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="course-exercises", description="Generate exercises/ from solutions/."
    )
    parser.add_argument("--solutions", type=Path, default=Path("solutions"))
    parser.add_argument("--exercises", type=Path, default=Path("exercises"))
    parser.add_argument(
        "--check", action="store_true", help="only report exercises that are out of date"
    )
    parser.add_argument(
        "--nbgrader", type=Path, metavar="OUT",
        help="instead, write nbgrader source notebooks into the new folder OUT",
    )
    args = parser.parse_args(argv)
    if args.nbgrader is not None:
        return _export_nbgrader(args.solutions, args.nbgrader)
    try:
        paths = build_all(args.solutions, args.exercises, check=args.check)
    except (ExerciseFormatError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        for path in paths:
            print(f"out of date: {path} (run course-exercises)")
        return 1 if paths else 0
    for path in paths:
        print(f"wrote {path}")
    return 0


def _export_nbgrader(solutions: Path, out: Path) -> int:
    from course_utils.tools.nbgrader import export_nbgrader  # imports the checks (and PyTorch)

    try:
        paths = export_nbgrader(solutions, out)
    except (ValueError, OSError) as error:  # ExerciseFormatError, an unknown exercise, OUT
        print(f"error: {error}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    print(f"wrote {out / 'nbgrader_config.py'}; next: cd {out} && nbgrader generate_assignment "
          "E10.1 (see the README, 'If your course runs nbgrader')")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
