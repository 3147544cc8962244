"""A new exercise is its files and nothing else (ARCHITECTURE.md, "How to add an exercise"): a
throwaway E10.9, made from ``exercise_template/`` in a copy of the course, is registered, graded by
``course-grade`` (its worked solution full marks, its untouched student version 0, the exec
shortcut 0), handed out without its hidden answers, and searched for leaks.

Everything runs in a fresh Python whose ``course_utils`` is the copy's (``PYTHONPATH``), the
grader's worker and kernel included: in the copy, and only there, the grader passes
``PYTHONPATH`` on to them."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT

from course_utils import multi30k
from course_utils.tools.solutions import left_out

TEMPLATE = ROOT / "exercise_template"
NEW, MODULE = "E10.9", "e10_9"


def fill(text: str) -> str:
    return text.replace("E10.N", NEW).replace("e10_n", MODULE)


def run_in(course: Path, script: str, timeout: float = 900) -> str:
    """Run ``script`` with the copy's ``course_utils`` (not the installed one); its stdout."""
    env = {**os.environ, "PYTHONPATH": str(course), "COURSE_QUICK": "1"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=course.parent,
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return done.stdout


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A copy of the course with E10.9 added from the template, its student version made."""
    course = tmp_path_factory.mktemp("new-exercise") / "course"
    course.mkdir()
    for name in ("README.md", "course.py", "pyproject.toml", "environment.yml", ".gitignore",
                 "postBuild", "docs/day_plan.md"):
        if (ROOT / name).is_file():
            (course / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, course / name)
    for folder in ("notebooks", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, course / folder, ignore=left_out(ROOT))
    shutil.copytree(ROOT / "course_utils", course / "course_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / multi30k.CHECKOUT_SAMPLE, course / multi30k.CHECKOUT_SAMPLE)
    limits = course / "course_utils" / "tools" / "grading" / "limits.py"
    limits.write_text(limits.read_text().replace('PASSED_ON = ("PATH",',
                                                 'PASSED_ON = ("PYTHONPATH", "PATH",'))
    checks = course / "course_utils" / "checks" / MODULE
    checks.mkdir()
    for name in ("__init__.py", "hidden.py"):
        (checks / name).write_text(fill((TEMPLATE / "checks" / name).read_text()))
    (course / "solutions" / f"{NEW}-runner-up.ipynb").write_text(
        fill((TEMPLATE / "solution.ipynb").read_text()))
    run_in(course, f"""
        from pathlib import Path
        from course_utils.tools.exercises import build_all
        build_all(Path({str(course / "solutions")!r}), Path({str(course / "exercises")!r}))
    """)
    return course


def test_the_new_exercise_is_registered_by_its_files(course):
    out = run_in(course, f"""
        import json
        import course_utils
        from course_utils.checks import exercise_ids, get_exercise
        from course_utils.checks.registry import load_hidden
        exercise = get_exercise({NEW!r})
        print(json.dumps([course_utils.__file__, exercise_ids(), sorted(exercise.checks),
                          sorted(exercise.manual), load_hidden({NEW!r}).__name__]))
    """)
    where, ids, parts, questions, hidden = json.loads(out)
    assert where == str(course / "course_utils" / "__init__.py")
    assert ids[-1] == NEW and parts == ["runner_up"] and questions == ["why"]
    assert hidden == f"course_utils.checks.{MODULE}.hidden"
    assert (course / "exercises" / f"{NEW}-runner-up.ipynb").is_file()


def test_the_new_exercise_is_graded(course, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(course / "solutions" / f"{NEW}-runner-up.ipynb", subs / "honest.ipynb")
    shutil.copy(course / "exercises" / f"{NEW}-runner-up.ipynb", subs / "untouched.ipynb")
    out = run_in(course, f"""
        import json
        from pathlib import Path
        import nbformat
        from course_utils.tools.grading import GradingLimits, grade_folder
        from course_utils.tools.solutions import shortcuts
        subs = Path({str(subs)!r})
        nbformat.write(shortcuts({NEW!r})["exec"][0], subs / "shortcut.ipynb")
        results = grade_folder({NEW!r}, subs, Path({str(tmp_path / "out")!r}), progress=False,
                               limits=GradingLimits(cell_seconds=300, total_seconds=900))
        print(json.dumps({{r.student: [r.status, r.points, r.messages] for r in results}}))
    """)
    results = json.loads(out)
    assert results["honest"][:2] == ["graded", {"runner_up": 2}], results["honest"]
    assert "fresh" not in results["honest"][2]["runner_up"]  # graded: fresh matrices too
    assert results["untouched"][1] == {"runner_up": 0}
    assert "not implemented" in results["untouched"][2]["runner_up"]
    assert results["shortcut"][1] == {"runner_up": 0}
    assert "written in this notebook's cells" in results["shortcut"][2]["runner_up"]


def test_the_new_exercise_is_handed_out_without_its_hidden_answers(course, tmp_path):
    made = tmp_path / "handout"
    run_in(course, f"""
        from course_utils.tools.handout import make_handout
        make_handout({str(made)!r}, course={str(course)!r})
    """)
    checks = made / "course_utils" / "checks" / MODULE
    assert (checks / "__init__.py").is_file() and not (checks / "hidden.py").exists()
    assert (made / "exercises" / f"{NEW}-runner-up.ipynb").is_file()
    out = run_in(made, f"""
        import numpy as np
        from course_utils.checks import {MODULE}
        assert {MODULE}.HIDDEN is None
        print({MODULE}.check_runner_up(lambda w: np.argsort(w, axis=1)[:, -2] + 1))
    """)
    assert "PASS" in out and "when graded, it also runs on fresh matrices" in out


def test_the_new_exercise_is_searched_for_leaks(course, tmp_path):
    """Nothing of E10.9 where a student reads; its worked code pasted into a lecture notebook,
    and its hidden answer into a module that ships, are both found."""
    readable = tmp_path / "readable"
    (readable / "course_utils").mkdir(parents=True)
    (readable / "notebooks").mkdir()
    out = run_in(course, f"""
        import json, textwrap
        from pathlib import Path
        import nbformat
        from course_utils.tools.answer_search import find_code_leaks, find_leaks, hidden_code
        from course_utils.tools.solutions import worked_code
        course, readable = Path({str(course)!r}), Path({str(readable)!r})
        before = [f for f in find_leaks(course) if f.exercise == {NEW!r}]
        (body,) = hidden_code({NEW!r}, course)["hidden answers, runner_up"]
        (readable / "course_utils" / "helpers.py").write_text(
            "def helper(weights):\\n" + textwrap.indent(body, "    ") + "\\n")
        (code,) = worked_code({NEW!r}, course)["runner_up"]
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
            "def second(w):\\n" + code.replace("weights", "w"))]), readable / "notebooks" / "99.ipynb")
        after = find_code_leaks({NEW!r}, course, readable)
        print(json.dumps([before, sorted((f.part, f.where) for f in after)]))
    """)
    before, after = json.loads(out)
    assert before == []
    assert after == [["hidden answers, runner_up", "course_utils/helpers.py"],
                     ["runner_up", "notebooks/99.ipynb, cell 0"]]
