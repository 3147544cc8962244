"""No graded answer where a student can read it: the worked code of every automatically graded
part is in nothing the handout ships (the library and its checks included), and no worked
written answer repeats a lecture notebook (:mod:`course_utils.tools.answer_search`)."""

import shutil

import nbformat
import pytest
from helpers import ROOT

from course_utils.tools import answer_search
from course_utils.tools.answer_search import (
    code_tokens,
    exercise_ids,
    find_code_leaks,
    find_written_leaks,
    worked_code,
    worked_written,
)

EXERCISES = exercise_ids()


def test_every_exercise_with_a_solution_is_searched():
    assert EXERCISES == ["E10.1", "E10.2", "E10.3", "E10.4"]
    for exercise in EXERCISES:
        parts = worked_code(exercise)
        assert parts and all(parts.values()), f"{exercise}: a graded part with no worked code"


@pytest.mark.parametrize("exercise", EXERCISES)
def test_no_graded_parts_worked_code_ships_in_the_handout(exercise):
    leaks = find_code_leaks(exercise)
    assert not leaks, "\n".join(f"{f.part}: {f.where}: {f.text}" for f in leaks)


@pytest.mark.parametrize("exercise", EXERCISES)
def test_no_worked_written_answer_repeats_a_lecture_notebook(exercise):
    leaks = find_written_leaks(exercise)
    assert not leaks, "\n".join(f"{f.part}: {f.where}: “{f.text}”" for f in leaks)


def test_names_layout_and_comments_do_not_hide_a_copy():
    original = "shifted = energies - np.max(energies)\nexps = np.exp(shifted)\nreturn exps / exps.sum()"
    retyped = ("z = e-np.max(e)   # stable\n\n"
               "t = np.exp(\n    z)\nreturn t/t.sum()")
    assert code_tokens(original) == code_tokens(retyped)
    assert code_tokens("return x.sum()") != code_tokens("return x.mean()")  # the answer counts
    assert code_tokens("return np.exp(x)") != code_tokens("return torch.exp(x)")


@pytest.fixture
def course(tmp_path):
    """A copy of the course's library beside its notebooks and solutions (linked, unchanged)."""
    shutil.copytree(ROOT / "course_utils", tmp_path / "course_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for folder in ("notebooks", "exercises", "solutions"):
        (tmp_path / folder).symlink_to(ROOT / folder)
    return tmp_path


def test_a_worked_part_pasted_into_the_library_is_found_even_retyped(course):
    part, regions = next((p, r) for p, r in worked_code("E10.1").items() if p == "softmax")
    retyped = "\n".join(line.replace("shifted", "s").replace("exps", "ex") + "  # mine"
                        for line in regions[0].splitlines())
    with open(course / "course_utils" / "attention.py", "a") as module:
        module.write("\n\ndef helper(energies):\n" + retyped + "\n")
    found = find_code_leaks("E10.1", course)
    assert [(f.part, f.where) for f in found] == [("softmax", "course_utils/attention.py")]


def test_a_worked_written_answer_copied_into_a_lecture_is_found(course, tmp_path):
    cell, answer = next(iter(worked_written("E10.1").items()))
    (course / "notebooks").unlink()
    (course / "notebooks").mkdir()
    lecture = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "As we saw: " + answer.replace("\n", " ").upper())])
    nbformat.write(lecture, course / "notebooks" / "99_copy.ipynb")
    found = find_written_leaks("E10.1", course)
    assert [(f.part, f.where) for f in found] == [(cell, "notebooks/99_copy.ipynb")]


def test_the_command_line_reports_and_fails_on_a_finding(capsys, monkeypatch):
    monkeypatch.setattr(answer_search, "find_code_leaks", lambda name: [
        answer_search.Finding(name, "softmax", "course_utils/x.py", "exps = np.exp(shifted)")])
    monkeypatch.setattr(answer_search, "find_written_leaks", lambda name: [])
    assert answer_search.main(["E10.1"]) == 1
    assert "E10.1 softmax: in course_utils/x.py" in capsys.readouterr().out
